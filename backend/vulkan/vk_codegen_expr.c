/*
 * Expressions of generated shaders. An expression becomes GLSL statements that compute each of
 * its operations into a fresh temporary, operands first and left to right, so every operation
 * runs exactly once and in the reference's order: a load that follows an atomic in the program
 * reads after it, both arms of a select are computed, and an i32 division that traps ends the
 * invocation before anything after it happens. Literals, variables, ids and buffer lengths have
 * no effect and are used in place.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "node_path.h"
#include "vk_codegen_internal.h"
#include "vmath.h"

#define SIGN_BIT "0x80000000u"

const char *vy__vk_glsl_type(enum vy_type t)
{
	return t == VY_TYPE_BOOL ? "bool" : "uint";
}

void vy__vk_cond_text(const struct vy__vk_val *v, char *buf, size_t size)
{
	if (v->type == VY_TYPE_BOOL) {
		snprintf(buf, size, "%s", v->text);
	} else {
		snprintf(buf, size, "(%s != 0u)", v->text);
	}
}

static void set(struct vy__vk_val *out, enum vy_type type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set(struct vy__vk_val *out, enum vy_type type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out->text, sizeof(out->text), fmt, ap);
	va_end(ap);
	assert(n > 0 && (size_t)n < sizeof(out->text));
	out->type = type;
	/* Until its producer says otherwise, an f32 may be loose: a producer that is left out
	 * costs a canonicalization, never a wrong word. */
	out->loose = type == VY_TYPE_F32;
}

/* Declare a temporary of `type` holding the GLSL expression built from fmt; `out` names it. */
static void temp(struct vy__vk_gen *g, struct vy__vk_val *out, enum vy_type type, const char *fmt,
	...) __attribute__((format(printf, 4, 5)));

static void temp(
	struct vy__vk_gen *g, struct vy__vk_val *out, enum vy_type type, const char *fmt, ...)
{
	char rhs[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(rhs, sizeof(rhs), fmt, ap);
	va_end(ap);
	assert(n > 0 && (size_t)n < sizeof(rhs));
	uint32_t id = g->next_temp++;
	vy__vk_line(g, "%s t%u = %s;", vy__vk_glsl_type(type), id, rhs);
	set(out, type, "t%u", id);
}

static void use(struct vy__vk_gen *g, uint64_t bits)
{
	g->uses |= bits;
}

void vy__vk_opaque(struct vy__vk_gen *g, struct vy__vk_val *v)
{
	if (g->opts->math.select_exact || v->type == VY_TYPE_BOOL) {
		return;
	}
	struct vy__vk_val x = *v;
	temp(g, v, x.type, "%s + (%s & vy_z)", x.text, x.text);
	v->loose = x.loose;
}

void vy__vk_seen(struct vy__vk_gen *g, const struct vy__vk_val *v, char *buf, size_t size)
{
	if (v->type == VY_TYPE_F32 && v->loose) {
		use(g, VY__VK_USE(CANON));
		snprintf(buf, size, "vy_canon(%s)", v->text);
	} else if (v->type == VY_TYPE_BOOL) {
		snprintf(buf, size, "%s ? 1u : 0u", v->text);
	} else {
		snprintf(buf, size, "%s", v->text);
	}
}

void vy__vk_index(struct vy__vk_gen *g, struct vy__vk_val *idx)
{
	if (idx->text[0] >= '0' && idx->text[0] <= '9') {
		struct vy__vk_val lit = *idx;
		temp(g, idx, VY_TYPE_U32, "%s", lit.text);
	}
}

/* The canonical form of f32 bits, as the reference's ref_canon. */
static uint32_t canon_bits(uint32_t bits)
{
	uint32_t exp = bits & 0x7F800000u;
	if (exp == 0x7F800000u) {
		return (bits & 0x007FFFFFu) ? 0x7FC00000u : bits;
	}
	if (exp == 0) {
		return bits & 0x80000000u;
	}
	return bits;
}

static void literal(const struct vy_expr *e, struct vy__vk_val *out)
{
	switch (e->type) {
	case VY_TYPE_BOOL:
		set(out, VY_TYPE_BOOL, "%s", e->bits ? "true" : "false");
		break;
	case VY_TYPE_U32:
		set(out, VY_TYPE_U32, "%uu", e->bits);
		break;
	case VY_TYPE_I32:
		set(out, VY_TYPE_I32, "0x%08Xu", e->bits);
		break;
	case VY_TYPE_F32:
		set(out, VY_TYPE_F32, "0x%08Xu", canon_bits(e->bits));
		out->loose = false;
		break;
	default:
		assert(!"literal of no type");
		break;
	}
}

static int unsupported_subgroups(struct vy__vk_gen *g)
{
	return vy__vk_fail(g, VY_E_UNSUPPORTED_FEATURE,
		"run the program on a device with subgroup support, or remove its subgroup_* "
		"expressions",
		"subgroup operations are not supported on this device");
}

/* `known`: no operand is varying (vk_facts.c), so a compiler may fold the operation. */
static void f32_binary(struct vy__vk_gen *g, enum vy_binop op, const struct vy__vk_val *a,
	const struct vy__vk_val *b, bool known, struct vy__vk_val *out)
{
	/* The device's flush cannot be relied on where the driver folds the operation itself. */
	bool flush = known && g->opts->math.flushes_subnormals;
	const char *fn = NULL;
	uint64_t lib = 0;
	enum vy_type rt = VY_TYPE_F32;
	bool swap = false;
	bool negate = false;
	switch (op) {
	case VY_BIN_ADD:
		fn = flush ? "vy_faddk" : "vy_fadd";
		lib = flush ? VY__VK_USE(FADDK) : VY__VK_USE(FADD);
		break;
	case VY_BIN_SUB:
		fn = flush ? "vy_fsubk" : "vy_fsub";
		lib = flush ? VY__VK_USE(FSUBK) : VY__VK_USE(FSUB);
		break;
	case VY_BIN_MUL:
		if (g->speculating && !flush) {
			/* the first run of a speculated loop (loop() in vk_codegen.c) */
			use(g, VY__VK_USE(FMULQ));
			temp(g, out, VY_TYPE_F32, "vy_fmulq(%s, %s, t%u)", a->text, b->text,
				g->hazard);
			out->loose = true;
			return;
		}
		fn = flush ? "vy_fmulk" : "vy_fmul";
		lib = flush ? VY__VK_USE(FMULK) : VY__VK_USE(FMUL);
		break;
	case VY_BIN_DIV:
		fn = "vy_fdiv";
		lib = VY__VK_USE(FDIV);
		break;
	case VY_BIN_MOD:
		fn = "vy_fmod";
		lib = VY__VK_USE(FMOD);
		break;
	case VY_BIN_MIN:
		fn = "vy_fmin";
		lib = VY__VK_USE(FMIN);
		break;
	case VY_BIN_MAX:
		fn = "vy_fmax";
		lib = VY__VK_USE(FMAX);
		break;
	case VY_BIN_EQ:
	case VY_BIN_NE:
		fn = "vy_feq";
		negate = op == VY_BIN_NE;
		break;
	case VY_BIN_LT:
	case VY_BIN_GT:
		fn = "vy_flt";
		swap = op == VY_BIN_GT;
		break;
	case VY_BIN_LE:
	case VY_BIN_GE:
		fn = "vy_fle";
		swap = op == VY_BIN_GE;
		break;
	default:
		assert(!"not an f32 binary operation");
		return;
	}
	if (!lib) {
		lib = VY__VK_USE(FCMP);
		rt = VY_TYPE_BOOL;
	}
	struct vy__vk_val x = *a;
	struct vy__vk_val y = *b;
	if (known && (op == VY_BIN_MIN || op == VY_BIN_MAX)) {
		/* min and max return one of their operands from branches, which the driver merges
		 * into a select between the two once they are constants (vy__vk_opaque) */
		vy__vk_opaque(g, &x);
		vy__vk_opaque(g, &y);
	}
	use(g, lib);
	temp(g, out, rt, "%s%s(%s, %s)", negate ? "!" : "", fn, swap ? y.text : x.text,
		swap ? x.text : y.text);
	/* add, sub and mul leave a NaN as the device gives it; min and max pass an operand on,
	 * a NaN when both are (vk_codegen_lib.c) */
	out->loose = op == VY_BIN_ADD || op == VY_BIN_SUB || op == VY_BIN_MUL ||
		     ((op == VY_BIN_MIN || op == VY_BIN_MAX) && (a->loose || b->loose));
}

/* i32 division and remainder: the traps first, in the reference's order, then the magnitudes. */
static void i32_divide(struct vy__vk_gen *g, bool rem, const struct vy__vk_val *a,
	const struct vy__vk_val *b, struct vy__vk_val *out)
{
	char cond[256];
	snprintf(cond, sizeof(cond), "%s == 0u", b->text);
	vy__vk_trap_if(g, cond, VY_TRAP_INT_DIV_ZERO);
	snprintf(cond, sizeof(cond), "%s == " SIGN_BIT " && %s == 0xFFFFFFFFu", a->text, b->text);
	vy__vk_trap_if(g, cond, VY_TRAP_INT_OVERFLOW_DIV);
	use(g, rem ? VY__VK_USE(SMOD) : VY__VK_USE(SDIV));
	temp(g, out, VY_TYPE_I32, "%s(%s, %s)", rem ? "vy_smod" : "vy_sdiv", a->text, b->text);
}

static void int_binary(struct vy__vk_gen *g, enum vy_binop op, enum vy_type t,
	const struct vy__vk_val *a, const struct vy__vk_val *b, struct vy__vk_val *out)
{
	const char *x = a->text;
	const char *y = b->text;
	bool s = t == VY_TYPE_I32;
	switch (op) {
	case VY_BIN_ADD:
		temp(g, out, t, "%s + %s", x, y);
		break;
	case VY_BIN_SUB:
		temp(g, out, t, "%s - %s", x, y);
		break;
	case VY_BIN_MUL:
		temp(g, out, t, "%s * %s", x, y);
		break;
	case VY_BIN_DIV:
		if (s) {
			i32_divide(g, false, a, b, out);
		} else {
			/* The divisor is never zero, even on the branch that the select drops. */
			temp(g, out, t, "%s == 0u ? 0xFFFFFFFFu : %s / max(%s, 1u)", y, x, y);
		}
		break;
	case VY_BIN_MOD:
		if (s) {
			i32_divide(g, true, a, b, out);
		} else {
			temp(g, out, t, "%s == 0u ? 0u : %s %% max(%s, 1u)", y, x, y);
		}
		break;
	case VY_BIN_BIT_AND:
		temp(g, out, t, "%s & %s", x, y);
		break;
	case VY_BIN_BIT_OR:
		temp(g, out, t, "%s | %s", x, y);
		break;
	case VY_BIN_BIT_XOR:
		temp(g, out, t, "%s ^ %s", x, y);
		break;
	case VY_BIN_SHL:
		temp(g, out, t, "%s << (%s & 31u)", x, y);
		break;
	case VY_BIN_SHR:
		if (s) {
			temp(g, out, t, "uint(int(%s) >> (%s & 31u))", x, y);
		} else {
			temp(g, out, t, "%s >> (%s & 31u)", x, y);
		}
		break;
	case VY_BIN_ROTL:
	case VY_BIN_ROTR:
		use(g, VY__VK_USE(ROT));
		temp(g, out, t, "%s(%s, %s)", op == VY_BIN_ROTL ? "vy_rotl" : "vy_rotr", x, y);
		break;
	case VY_BIN_EQ:
		temp(g, out, VY_TYPE_BOOL, "%s == %s", x, y);
		break;
	case VY_BIN_NE:
		temp(g, out, VY_TYPE_BOOL, "%s != %s", x, y);
		break;
	case VY_BIN_LT:
	case VY_BIN_LE:
	case VY_BIN_GT:
	case VY_BIN_GE: {
		static const char *const ops[] = {"<", "<=", ">", ">="};
		const char *o = ops[op - VY_BIN_LT];
		if (s) {
			temp(g, out, VY_TYPE_BOOL, "int(%s) %s int(%s)", x, o, y);
		} else {
			temp(g, out, VY_TYPE_BOOL, "%s %s %s", x, o, y);
		}
		break;
	}
	case VY_BIN_AND:
	case VY_BIN_OR: {
		const char *o = op == VY_BIN_AND ? "&&" : "||";
		if (t == VY_TYPE_BOOL) {
			temp(g, out, t, "%s %s %s", x, o, y);
		} else {
			temp(g, out, t, "(%s != 0u %s %s != 0u) ? 1u : 0u", x, o, y);
		}
		break;
	}
	case VY_BIN_MIN:
	case VY_BIN_MAX: {
		const char *fn = op == VY_BIN_MIN ? "min" : "max";
		if (s) {
			temp(g, out, t, "uint(%s(int(%s), int(%s)))", fn, x, y);
		} else {
			temp(g, out, t, "%s(%s, %s)", fn, x, y);
		}
		break;
	}
	case VY_BIN_ABS_DIFF:
		/* A u32 for both operand types: the exact distance always fits one. */
		if (s) {
			temp(g, out, VY_TYPE_U32, "int(%s) >= int(%s) ? %s - %s : %s - %s", x, y, x,
				y, y, x);
		} else {
			temp(g, out, t, "%s >= %s ? %s - %s : %s - %s", x, y, x, y, y, x);
		}
		break;
	case VY_BIN_SAT_ADD:
		if (s) {
			use(g, VY__VK_USE(SAT_I32));
			temp(g, out, t, "vy_sat_add_i(%s, %s)", x, y);
		} else {
			temp(g, out, t, "%s + %s < %s ? 0xFFFFFFFFu : %s + %s", x, y, x, x, y);
		}
		break;
	case VY_BIN_SAT_SUB:
		if (s) {
			use(g, VY__VK_USE(SAT_I32));
			temp(g, out, t, "vy_sat_sub_i(%s, %s)", x, y);
		} else {
			temp(g, out, t, "%s < %s ? 0u : %s - %s", x, y, x, y);
		}
		break;
	case VY_BIN_SAT_MUL:
		use(g, VY__VK_USE(WIDE));
		temp(g, out, t, "vy_sat_mul(%s, %s)", x, y);
		break;
	case VY_BIN_MUL_HIGH:
		use(g, VY__VK_USE(WIDE));
		temp(g, out, t, "%s(%s, %s)", s ? "vy_mulhi_i" : "vy_mulhi_u", x, y);
		break;
	case VY_BIN_HYPOT: /* f32 only, and lowered (binary) */
	case VY_BIN_ATAN2:
	case VY_BIN_POW:
	case VY_BINOP_COUNT:
		assert(!"not an integer binary operation");
		break;
	}
}

static void binary(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	struct vy__vk_val a, b;
	vy__vk_expr(g, e->args[0], &a);
	vy__vk_expr(g, e->args[1], &b);
	if (g->rc) {
		set(out, e->type, "%s", e->type == VY_TYPE_BOOL ? "false" : "0u");
		return;
	}
	enum vy_binop op = (enum vy_binop)e->op;
	if (vy_vmath_lowers_binary(op)) {
		vy__vk_fail(g, VY_E_INTERNAL,
			"lower the program with vy_vmath_lower before generating code",
			"%s reached code generation unlowered", vy_binop_name(op));
		set(out, e->type, "0u");
	} else if (a.type == VY_TYPE_F32) {
		f32_binary(g, op, &a, &b,
			!vy__vk_varying(g, e->args[0]) && !vy__vk_varying(g, e->args[1]), out);
	} else if (a.type == VY_TYPE_BOOL) {
		/* eq, ne, and, or: the only operations on bool. */
		static const char *const ops[VY_BINOP_COUNT] = {[VY_BIN_EQ] = "==",
			[VY_BIN_NE] = "!=",
			[VY_BIN_AND] = "&&",
			[VY_BIN_OR] = "||"};
		assert(ops[op]);
		temp(g, out, VY_TYPE_BOOL, "%s %s %s", a.text, ops[op], b.text);
	} else {
		int_binary(g, op, a.type, &a, &b, out);
	}
}

static void f32_unary(
	struct vy__vk_gen *g, enum vy_unop op, const struct vy__vk_val *a, struct vy__vk_val *out)
{
	const char *x = a->text;
	switch (op) {
	case VY_UN_NEG:
		/* the sign of a NaN is loose too */
		temp(g, out, VY_TYPE_F32, "%s ^ " SIGN_BIT, x);
		out->loose = true;
		return;
	case VY_UN_ABS:
		temp(g, out, VY_TYPE_F32, "%s & 0x7FFFFFFFu", x);
		out->loose = a->loose;
		return;
	case VY_UN_SIGN:
		use(g, VY__VK_USE(FSIGN));
		temp(g, out, VY_TYPE_F32, "vy_fsign(%s)", x);
		out->loose = false;
		return;
	case VY_UN_FLOOR:
		use(g, VY__VK_USE(FFLOOR));
		temp(g, out, VY_TYPE_F32, "vy_ffloor(%s)", x);
		out->loose = a->loose; /* a NaN passes through */
		return;
	case VY_UN_CEIL:
		use(g, VY__VK_USE(FCEIL));
		temp(g, out, VY_TYPE_F32, "vy_fceil(%s)", x);
		out->loose = a->loose; /* a NaN passes through */
		return;
	case VY_UN_ROUND:
		use(g, VY__VK_USE(FROUND));
		temp(g, out, VY_TYPE_F32, "vy_fround(%s)", x);
		out->loose = a->loose; /* a NaN passes through */
		return;
	case VY_UN_TRUNC:
		use(g, VY__VK_USE(FTRUNC));
		temp(g, out, VY_TYPE_F32, "vy_ftrunc(%s)", x);
		out->loose = a->loose; /* a NaN passes through */
		return;
	case VY_UN_SQRT:
		use(g, VY__VK_USE(FSQRT));
		temp(g, out, VY_TYPE_F32, "vy_fsqrt(%s)", x);
		out->loose = false;
		return;
	case VY_UN_IS_NAN:
		use(g, VY__VK_USE(ISNAN));
		temp(g, out, VY_TYPE_BOOL, "vy_isnan(%s)", x);
		return;
	case VY_UN_IS_INF:
		temp(g, out, VY_TYPE_BOOL, "(%s & 0x7FFFFFFFu) == 0x7F800000u", x);
		return;
	case VY_UN_IS_FINITE:
		temp(g, out, VY_TYPE_BOOL, "(%s & 0x7F800000u) != 0x7F800000u", x);
		return;
	default:
		assert(!"not an f32 unary operation");
		return;
	}
}

static void int_unary(struct vy__vk_gen *g, enum vy_unop op, enum vy_type t,
	const struct vy__vk_val *a, struct vy__vk_val *out)
{
	const char *x = a->text;
	switch (op) {
	case VY_UN_NEG:
		temp(g, out, t, "0u - %s", x);
		break;
	case VY_UN_BIT_NOT:
		temp(g, out, t, "~%s", x);
		break;
	case VY_UN_NOT:
		temp(g, out, t, "%s == 0u ? 1u : 0u", x);
		break;
	case VY_UN_POPCOUNT:
		temp(g, out, t, "uint(bitCount(%s))", x);
		break;
	case VY_UN_CLZ:
	case VY_UN_CTZ:
		use(g, VY__VK_USE(BITS));
		temp(g, out, t, "%s(%s)", op == VY_UN_CLZ ? "vy_clz" : "vy_ctz", x);
		break;
	case VY_UN_REVERSE_BITS:
		temp(g, out, t, "bitfieldReverse(%s)", x);
		break;
	case VY_UN_ABS:
		/* abs(INT_MIN) wraps back to INT_MIN. */
		temp(g, out, t, "(%s & " SIGN_BIT ") != 0u ? 0u - %s : %s", x, x, x);
		break;
	case VY_UN_SIGN:
		temp(g, out, t, "%s == 0u ? 0u : ((%s & " SIGN_BIT ") != 0u ? 0xFFFFFFFFu : 1u)", x,
			x);
		break;
	case VY_UN_UNPACK4_LOW:
		temp(g, out, t, "%s & 0xFu", x);
		break;
	case VY_UN_UNPACK4_HIGH:
		temp(g, out, t, "%s >> 28u", x);
		break;
	case VY_UN_UNPACK8_LOW:
		temp(g, out, t, "%s & 0xFFu", x);
		break;
	case VY_UN_UNPACK8_HIGH:
		temp(g, out, t, "%s >> 24u", x);
		break;
	default:
		assert(!"not an integer unary operation");
		break;
	}
}

static void unary(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	enum vy_unop op = (enum vy_unop)e->op;
	struct vy__vk_val a;
	vy__vk_expr(g, e->args[0], &a);
	if (!g->rc && vy_vmath_lowers(op)) {
		vy__vk_fail(g, VY_E_INTERNAL,
			"lower the program with vy_vmath_lower before generating code",
			"%s reached code generation unlowered", vy_unop_name(op));
	}
	if (g->rc) {
		set(out, e->type, "%s", e->type == VY_TYPE_BOOL ? "false" : "0u");
		return;
	}
	if (a.type == VY_TYPE_F32) {
		f32_unary(g, op, &a, out);
	} else if (a.type == VY_TYPE_BOOL) {
		assert(op == VY_UN_NOT);
		temp(g, out, VY_TYPE_BOOL, "!%s", a.text);
	} else {
		int_unary(g, op, a.type, &a, out);
	}
}

static void cast(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	struct vy__vk_val a;
	vy__vk_expr(g, e->args[0], &a);
	enum vy_type to = e->type;
	if (g->rc) {
		set(out, to, "%s", to == VY_TYPE_BOOL ? "false" : "0u");
		return;
	}
	enum vy_type from = a.type;
	bool ints = from != VY_TYPE_F32 && from != VY_TYPE_BOOL && to != VY_TYPE_F32 &&
		    to != VY_TYPE_BOOL;
	if (from == to || ints) {
		/* u32 <-> i32 keep their bits; an f32 cast to f32 keeps a loose NaN loose. */
		set(out, to, "%s", a.text);
		out->loose = a.loose;
		return;
	}
	switch (to) {
	case VY_TYPE_BOOL:
		if (from == VY_TYPE_F32) {
			temp(g, out, to, "(%s & 0x7FFFFFFFu) != 0u", a.text);
		} else {
			temp(g, out, to, "%s != 0u", a.text);
		}
		return;
	case VY_TYPE_F32:
		if (from == VY_TYPE_BOOL) {
			temp(g, out, to, "%s ? 0x3F800000u : 0u", a.text);
		} else if (from == VY_TYPE_I32) {
			use(g, VY__VK_USE(I2F));
			temp(g, out, to, "vy_i2f(%s)", a.text);
		} else {
			use(g, VY__VK_USE(U2F));
			temp(g, out, to, "vy_u2f(%s)", a.text);
		}
		out->loose = false;
		return;
	case VY_TYPE_U32:
	case VY_TYPE_I32:
		if (from == VY_TYPE_BOOL) {
			temp(g, out, to, "%s ? 1u : 0u", a.text);
		} else if (to == VY_TYPE_U32) {
			use(g, VY__VK_USE(F2U));
			temp(g, out, to, "vy_f2u(%s)", a.text);
		} else {
			use(g, VY__VK_USE(F2I));
			temp(g, out, to, "vy_f2i(%s)", a.text);
		}
		return;
	default:
		assert(!"cast to a type outside the enum");
		return;
	}
}

/* Values travel as their 32-bit words, so a bitcast changes only the type, except that a word read
 * as f32 is canonicalized as a load canonicalizes it (docs/semantics.md section 3.1). */
static void bitcast(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	struct vy__vk_val a;
	vy__vk_expr(g, e->args[0], &a);
	enum vy_type to = e->type;
	if (g->rc) {
		set(out, to, "0u");
		return;
	}
	if (to == VY_TYPE_F32 && a.type != VY_TYPE_F32) {
		use(g, VY__VK_USE(CANON));
		temp(g, out, to, "vy_canon(%s)", a.text);
		out->loose = false;
		return;
	}
	if (a.type == VY_TYPE_F32 && to != VY_TYPE_F32 && a.loose) {
		/* the bits are seen: a loose NaN becomes the canonical one */
		char word[160];
		vy__vk_seen(g, &a, word, sizeof(word));
		temp(g, out, to, "%s", word);
		return;
	}
	set(out, to, "%s", a.text);
	out->loose = a.loose;
}

/* The value of type t that a loaded word `src` holds, as GLSL text: f32 canonical, bool
 * nonzero. */
static void word_value(
	struct vy__vk_gen *g, enum vy_type t, const char *src, char *buf, size_t size)
{
	if (t == VY_TYPE_F32) {
		use(g, VY__VK_USE(CANON));
	}
	snprintf(buf, size,
		t == VY_TYPE_F32    ? "vy_canon(%s)"
		: t == VY_TYPE_BOOL ? "%s != 0u"
				    : "%s",
		src);
}

static void load(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	struct vy__vk_val idx;
	vy__vk_expr(g, e->args[0], &idx);
	uint32_t b = vy__vk_buffer_find(g, e->name);
	enum vy_type t = g->p->buffers[b].type;
	if (g->rc) {
		set(out, t, "%s", t == VY_TYPE_BOOL ? "false" : "0u");
		return;
	}
	char word[400], value[420];
	if ((g->coarse.reg & (UINT32_C(1) << b)) && vy__vk_coarse_gid_index(g, e->args[0])) {
		/* The element's register (vk_coarse.c): 0 out of range, as the load gives. */
		snprintf(word, sizeof(word), "vy_r%u", b);
		word_value(g, t, word, value, sizeof(value));
		temp(g, out, t, "%s", value);
		out->loose = false;
		return;
	}
	char arr[160], len[160];
	vy__vk_buffer_array(g, b, arr, sizeof(arr));
	vy__vk_buffer_len(g, b, len, sizeof(len));
	vy__vk_index(g, &idx);
	temp(g, out, t, "%s", t == VY_TYPE_BOOL ? "false" : "0u");
	bool shared = g->p->buffers[b].access == VY_ACCESS_WORKGROUP;
	bool within = shared && vy__vk_index_within(g, e->args[0], g->p->buffers[b].count);
	vy__vk_line(g, "if (%s%s < %s) {", within ? "vy_wg_own || " : "", idx.text, len);
	snprintf(word, sizeof(word), "%s[%s]", arr, idx.text);
	if (shared && t == VY_TYPE_F32) {
		/* Workgroup memory holds only what stores put there, canonical f32 words (a
		 * workgroup buffer has one type), and zeros. */
		snprintf(value, sizeof(value), "%s", word);
	} else {
		word_value(g, t, word, value, sizeof(value));
	}
	vy__vk_line(g, "\t%s = %s;", out->text, value);
	vy__vk_line(g, "}");
	out->loose = false;
}

static void atomic(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	static const char *const fns[VY_ATOMIC_COUNT] = {
		[VY_ATOMIC_ADD] = "atomicAdd",
		[VY_ATOMIC_AND] = "atomicAnd",
		[VY_ATOMIC_OR] = "atomicOr",
		[VY_ATOMIC_XOR] = "atomicXor",
		[VY_ATOMIC_MIN] = "atomicMin",
		[VY_ATOMIC_MAX] = "atomicMax",
		[VY_ATOMIC_EXCHANGE] = "atomicExchange",
		[VY_ATOMIC_COMPARE_EXCHANGE] = "atomicCompSwap",
	};
	struct vy__vk_val idx, expected, value;
	bool cas = e->op == VY_ATOMIC_COMPARE_EXCHANGE;
	vy__vk_expr(g, e->args[0], &idx);
	if (cas) {
		vy__vk_expr(g, e->args[1], &expected);
	}
	vy__vk_expr(g, e->args[cas ? 2 : 1], &value);
	if (g->rc) {
		set(out, VY_TYPE_U32, "0u");
		return;
	}
	assert(e->op < VY_ATOMIC_COUNT);
	uint32_t b = vy__vk_buffer_find(g, e->name);
	char arr[160], len[160];
	vy__vk_buffer_array(g, b, arr, sizeof(arr));
	vy__vk_buffer_len(g, b, len, sizeof(len));
	vy__vk_index(g, &idx);
	temp(g, out, VY_TYPE_U32, "0u");
	vy__vk_line(g, "if (%s < %s) {", idx.text, len);
	if (cas) {
		vy__vk_line(g, "\t%s = %s(%s[%s], %s, %s);", out->text, fns[e->op], arr, idx.text,
			expected.text, value.text);
	} else {
		vy__vk_line(g, "\t%s = %s(%s[%s], %s);", out->text, fns[e->op], arr, idx.text,
			value.text);
	}
	vy__vk_line(g, "}");
}

static void spec(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	char id[160];
	vy__vk_spec_ident(g, e->name, id, sizeof(id));
	switch (e->type) {
	case VY_TYPE_F32:
		/* The runtime may pass any bits. */
		use(g, VY__VK_USE(CANON));
		temp(g, out, VY_TYPE_F32, "vy_canon(%s)", id);
		out->loose = false;
		break;
	case VY_TYPE_BOOL:
		set(out, VY_TYPE_BOOL, "(%s != 0u)", id);
		break;
	default:
		set(out, e->type, "%s", id);
		break;
	}
}

static void subgroup_reduce(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	struct vy__vk_val a;
	vy__vk_expr(g, e->args[0], &a);
	if (g->rc) {
		set(out, e->type, "0u");
		return;
	}
	const char *x = a.text;
	enum vy_reduce_op op = (enum vy_reduce_op)e->op;
	if (a.type == VY_TYPE_F32) {
		switch (op) {
		case VY_REDUCE_ADD:
		case VY_REDUCE_MUL:
			use(g, op == VY_REDUCE_ADD ? VY__VK_USE(SG_FADD) : VY__VK_USE(SG_FMUL));
			g->subgroup_features |= VY_VK_SUBGROUP_BALLOT | VY_VK_SUBGROUP_SHUFFLE;
			temp(g, out, VY_TYPE_F32, "%s(%s)",
				op == VY_REDUCE_ADD ? "vy_sg_fadd" : "vy_sg_fmul", x);
			out->loose = true;
			return;
		case VY_REDUCE_MIN:
		case VY_REDUCE_MAX:
			use(g, VY__VK_USE(SG_FMINMAX));
			g->subgroup_features |= VY_VK_SUBGROUP_ARITHMETIC;
			temp(g, out, VY_TYPE_F32, "%s(%s)",
				op == VY_REDUCE_MIN ? "vy_sg_fmin" : "vy_sg_fmax", x);
			out->loose = false;
			return;
		default:
			assert(!"bitwise reduction of f32");
			return;
		}
	}
	static const char *const fns[VY_REDUCE_COUNT] = {
		[VY_REDUCE_ADD] = "subgroupAdd",
		[VY_REDUCE_MUL] = "subgroupMul",
		[VY_REDUCE_MIN] = "subgroupMin",
		[VY_REDUCE_MAX] = "subgroupMax",
		[VY_REDUCE_AND] = "subgroupAnd",
		[VY_REDUCE_OR] = "subgroupOr",
		[VY_REDUCE_XOR] = "subgroupXor",
	};
	assert(op < VY_REDUCE_COUNT);
	g->subgroup_features |= VY_VK_SUBGROUP_ARITHMETIC;
	if (a.type == VY_TYPE_I32 && (op == VY_REDUCE_MIN || op == VY_REDUCE_MAX)) {
		temp(g, out, a.type, "uint(%s(int(%s)))", fns[op], x);
	} else {
		/* Wrapping sums and products have the same bits signed or not. */
		temp(g, out, a.type, "%s(%s)", fns[op], x);
	}
}

static void subgroup(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	if (!g->opts->subgroups) {
		unsupported_subgroups(g);
		set(out, e->type, "%s", e->type == VY_TYPE_BOOL ? "false" : "0u");
		return;
	}
	g->subgroup_features |= VY_VK_SUBGROUP_BASIC;
	struct vy__vk_val a, b;
	char cond[192];
	switch (e->kind) {
	case VY_EXPR_SUBGROUP_REDUCE:
		subgroup_reduce(g, e, out);
		return;
	case VY_EXPR_SUBGROUP_SHUFFLE:
		vy__vk_expr(g, e->args[0], &a);
		vy__vk_expr(g, e->args[1], &b);
		if (g->rc) {
			set(out, e->type, "%s", e->type == VY_TYPE_BOOL ? "false" : "0u");
			return;
		}
		use(g, VY__VK_USE(SG_SHUFFLE));
		g->subgroup_features |= VY_VK_SUBGROUP_BALLOT | VY_VK_SUBGROUP_SHUFFLE;
		temp(g, out, a.type, "%s(%s, %s)",
			a.type == VY_TYPE_BOOL ? "vy_sg_shuffle_b" : "vy_sg_shuffle", a.text,
			b.text);
		out->loose = a.loose;
		return;
	case VY_EXPR_SUBGROUP_BALLOT:
		vy__vk_expr(g, e->args[0], &a);
		if (g->rc) {
			set(out, VY_TYPE_U32, "0u");
			return;
		}
		g->subgroup_features |= VY_VK_SUBGROUP_BALLOT;
		vy__vk_cond_text(&a, cond, sizeof(cond));
		temp(g, out, VY_TYPE_U32, "subgroupBallot(%s).x", cond);
		return;
	case VY_EXPR_SUBGROUP_LANE:
		set(out, VY_TYPE_U32, "gl_SubgroupInvocationID");
		return;
	case VY_EXPR_SUBGROUP_SIZE:
		set(out, VY_TYPE_U32, "gl_SubgroupSize");
		return;
	default:
		assert(!"not a subgroup expression");
		return;
	}
}

void vy__vk_expr(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out)
{
	static const char axes[] = "xyz";
	struct vy__vk_val a, b, c;
	char cond[192];
	char text[160];
	switch (e->kind) {
	case VY_EXPR_LIT:
		literal(e, out);
		return;
	case VY_EXPR_VAR:
		vy__vk_var_ident(g, e->name, text, sizeof(text));
		set(out, e->type, "%s", text);
		out->loose = vy__vk_var_loose(g, e->name);
		return;
	case VY_EXPR_LOAD:
		load(g, e, out);
		return;
	case VY_EXPR_LEN:
		vy__vk_buffer_len(g, vy__vk_buffer_find(g, e->name), text, sizeof(text));
		set(out, VY_TYPE_U32, "%s", text);
		return;
	case VY_EXPR_GID:
		assert(e->bits < 3);
		set(out, VY_TYPE_U32, "vy_gid.%c", axes[e->bits]);
		return;
	case VY_EXPR_LID:
		assert(e->bits < 3);
		set(out, VY_TYPE_U32, "gl_LocalInvocationID.%c", axes[e->bits]);
		return;
	case VY_EXPR_WGID:
		assert(e->bits < 3);
		set(out, VY_TYPE_U32, "vy_wg.%c", axes[e->bits]);
		return;
	case VY_EXPR_BINARY:
		binary(g, e, out);
		return;
	case VY_EXPR_UNARY:
		unary(g, e, out);
		return;
	case VY_EXPR_SELECT:
		vy__vk_expr(g, e->args[0], &c);
		vy__vk_expr(g, e->args[1], &a);
		vy__vk_expr(g, e->args[2], &b);
		if (g->rc) {
			set(out, e->type, "%s", e->type == VY_TYPE_BOOL ? "false" : "0u");
			return;
		}
		vy__vk_cond_text(&c, cond, sizeof(cond));
		vy__vk_opaque(g, &a);
		vy__vk_opaque(g, &b);
		temp(g, out, a.type, "%s ? %s : %s", cond, a.text, b.text);
		out->loose = a.loose || b.loose;
		return;
	case VY_EXPR_CAST:
		cast(g, e, out);
		return;
	case VY_EXPR_BITCAST:
		bitcast(g, e, out);
		return;
	case VY_EXPR_FMA:
		vy__vk_expr(g, e->args[0], &a);
		vy__vk_expr(g, e->args[1], &b);
		vy__vk_expr(g, e->args[2], &c);
		if (g->rc) {
			set(out, VY_TYPE_F32, "0u");
			return;
		}
		if (g->speculating) {
			/* the first run of a speculated loop or run (vk_codegen.c) */
			use(g, VY__VK_USE(FFMAQ));
			temp(g, out, VY_TYPE_F32, "vy_ffmaq(%s, %s, %s, t%u)", a.text, b.text,
				c.text, g->hazard);
			out->loose = true;
			return;
		}
		use(g, VY__VK_USE(FFMA));
		temp(g, out, VY_TYPE_F32, "vy_ffma(%s, %s, %s)", a.text, b.text, c.text);
		out->loose = vy__vk_lib_fma_loose(&g->opts->math);
		return;
	case VY_EXPR_ATOMIC:
		atomic(g, e, out);
		return;
	case VY_EXPR_SPEC:
		spec(g, e, out);
		return;
	case VY_EXPR_SUBGROUP_REDUCE:
	case VY_EXPR_SUBGROUP_SHUFFLE:
	case VY_EXPR_SUBGROUP_BALLOT:
	case VY_EXPR_SUBGROUP_LANE:
	case VY_EXPR_SUBGROUP_SIZE:
		subgroup(g, e, out);
		return;
	case VY_EXPR_KIND_COUNT:
		break;
	}
	assert(!"expression kind outside the enum");
}
