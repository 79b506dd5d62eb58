/*
 * Program codec. The decoder is a recursive descent over the bounded msgpack reader that builds
 * the IR in the program's arena while keeping a location path for its errors; recursion depth is
 * bounded by the IR nesting and expression-depth limits, checked before each descent. The encoder
 * walks the IR and writes the canonical form with msgpack-c's packer.
 */
#include "codec.h"

#include "arena.h"
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define NAME_MAX_BYTES VY_IR_MAX_NAME
#define LABEL_MAX_BYTES 256

struct dec {
	struct vy_mp_reader *r;
	struct vy_program *p;
	struct vy_err *err;
	uint32_t nodes;
	size_t plen;
	char path[VY_ERR_AT_MAX];
};

static const char program_fix_fields[] =
	"use only the fields vyre, name, workgroup_size, buffers and entry";
static const char buffer_fix_fields[] =
	"use only the buffer fields name, binding, access, type, count, output, live_out and hints";

static int fail(struct dec *d, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct dec *d, const char *fix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vy_err_setv(d->err, VY_E_INVALID_PROGRAM, d->path, fix, fmt, ap);
	va_end(ap);
	return VY_E_INVALID_PROGRAM;
}

/*
 * The location path grows by one step per field and element decoded, so it is built by plain
 * appends: it is written for every node of every program, and read only when one fails.
 */
static void append(struct dec *d, const char *s, size_t n)
{
	size_t room = sizeof(d->path) - 1 - d->plen;
	n = n < room ? n : room;
	memcpy(d->path + d->plen, s, n);
	d->plen += n;
	d->path[d->plen] = '\0';
}

/* Append ".name" (at most `n` bytes of the name); returns the mark to pop back to. */
static size_t push_name(struct dec *d, const char *name, size_t n)
{
	size_t mark = d->plen;
	append(d, ".", 1);
	append(d, name, n);
	return mark;
}

static size_t push_field(struct dec *d, const char *name)
{
	return push_name(d, name, strlen(name));
}

/* Append "[i]". */
static size_t push_index(struct dec *d, uint32_t i)
{
	size_t mark = d->plen;
	char room[VY_PATH_INDEX_ROOM];
	size_t len;
	const char *text = vy_path_index(i, room, &len);
	append(d, text, len);
	return mark;
}

static void pop(struct dec *d, size_t mark)
{
	d->plen = mark;
	d->path[mark] = '\0';
}

static int rd(struct dec *d, struct vy_mp_obj *o)
{
	int rc = vy_mp_read(d->r, o);
	if (rc != VY_MP_OK) {
		return fail(d, "send a complete, well-formed msgpack document",
			"malformed msgpack at byte %zu: %s", vy_mp_offset(d->r),
			vy_mp_strerror(rc));
	}
	return 0;
}

static int rd_type(struct dec *d, struct vy_mp_obj *o, enum vy_mp_type type, const char *what)
{
	int rc = rd(d, o);
	if (rc == 0 && o->type != type) {
		return fail(d, "write the value with the type the IR reference gives (docs/ir.md)",
			"%s must be %s, found %s", what, vy_mp_type_name(type),
			vy_mp_type_name(o->type));
	}
	return rc;
}

static int rd_u32(struct dec *d, uint32_t *out, const char *what)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_UINT, what);
	if (rc) {
		return rc;
	}
	if (o.u > UINT32_MAX) {
		return fail(d, "use a value that fits in 32 bits",
			"%s is %" PRIu64 ", more than 4294967295", what, o.u);
	}
	*out = (uint32_t)o.u;
	return 0;
}

static int rd_bool(struct dec *d, bool *out, const char *what)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_BOOL, what);
	if (rc == 0) {
		*out = o.b;
	}
	return rc;
}

static int check_text(struct dec *d, const struct vy_mp_obj *o, size_t max, const char *what)
{
	if (o->len > max) {
		return fail(d, "shorten the name", "%s is %" PRIu32 " bytes long, more than %zu",
			what, o->len, max);
	}
	if (memchr(o->data, '\0', o->len)) {
		return fail(d, "remove the NUL byte from the name", "%s contains a NUL byte", what);
	}
	return 0;
}

/* A string field copied into the arena. */
static int rd_name(struct dec *d, const char **out, size_t max, const char *what)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_STR, what);
	if (rc == 0) {
		rc = check_text(d, &o, max, what);
	}
	if (rc == 0) {
		*out = vy_arena_strndup(d->p->arena, (const char *)o.data, o.len);
	}
	return rc;
}

typedef int (*lookup_fn)(const char *name, size_t len);

static int rd_enum(struct dec *d, lookup_fn lookup, const char *what, const char *fix, int *out)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_STR, what);
	if (rc) {
		return rc;
	}
	int v = lookup((const char *)o.data, o.len);
	if (v < 0) {
		return fail(d, fix, "unknown %s \"%.*s\"", what, (int)(o.len > 64 ? 64 : o.len),
			(const char *)o.data);
	}
	*out = v;
	return 0;
}

/* Read an array header and check its length against [min, max]. */
static int rd_tuple(struct dec *d, uint32_t min, uint32_t max, const char *what, uint32_t *len)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_ARRAY, what);
	if (rc) {
		return rc;
	}
	if (o.len < min || o.len > max) {
		if (min == max) {
			return fail(d, "write the form the IR reference gives (docs/ir.md)",
				"%s takes %" PRIu32 " elements, found %" PRIu32, what, min, o.len);
		}
		return fail(d, "write the form the IR reference gives (docs/ir.md)",
			"%s takes %" PRIu32 " to %" PRIu32 " elements, found %" PRIu32, what, min,
			max, o.len);
	}
	*len = o.len;
	return 0;
}

/* --- expressions --------------------------------------------------------------------------- */

static int rd_expr(struct dec *d, struct vy_expr **out, unsigned depth);

/* Every NaN literal is the canonical NaN (DESIGN.md §4.2): one program, one encoding, one id. */
static uint32_t canonical_nan(uint32_t bits)
{
	return (bits & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : bits;
}

static int rd_lit_value(struct dec *d, enum vy_type type, uint32_t *bits)
{
	struct vy_mp_obj o;
	int rc = rd(d, &o);
	if (rc) {
		return rc;
	}
	const char *fix = "write the literal as [type, value] with a value of that type";
	switch (type) {
	case VY_TYPE_U32:
		if (o.type != VY_MP_UINT || o.u > UINT32_MAX) {
			return fail(d, fix, "a u32 literal needs an integer in 0..4294967295");
		}
		*bits = (uint32_t)o.u;
		return 0;
	case VY_TYPE_I32: {
		int64_t v;
		if (o.type == VY_MP_UINT && o.u <= INT32_MAX) {
			v = (int64_t)o.u;
		} else if (o.type == VY_MP_INT && o.i >= INT32_MIN) {
			v = o.i;
		} else {
			return fail(d, fix,
				"an i32 literal needs an integer in -2147483648..2147483647");
		}
		int32_t v32 = (int32_t)v;
		memcpy(bits, &v32, sizeof(*bits));
		return 0;
	}
	case VY_TYPE_F32: {
		float f;
		if (o.type == VY_MP_FLOAT) {
			f = o.is_f32 ? o.f32 : (float)o.f;
		} else if (o.type == VY_MP_UINT) {
			f = (float)o.u;
		} else if (o.type == VY_MP_INT) {
			f = (float)o.i;
		} else if (vy_mp_str_eq(&o, "nan")) {
			*bits = 0x7fc00000u;
			return 0;
		} else if (vy_mp_str_eq(&o, "inf")) {
			*bits = 0x7f800000u;
			return 0;
		} else if (vy_mp_str_eq(&o, "-inf")) {
			*bits = 0xff800000u;
			return 0;
		} else {
			return fail(d,
				"write an f32 literal as a number, or as \"nan\", \"inf\" or "
				"\"-inf\"",
				"an f32 literal needs a number, found %s", vy_mp_type_name(o.type));
		}
		memcpy(bits, &f, sizeof(*bits));
		*bits = canonical_nan(*bits);
		return 0;
	}
	case VY_TYPE_BOOL:
		if (o.type != VY_MP_BOOL) {
			return fail(d, fix, "a bool literal needs true or false");
		}
		*bits = o.b ? 1u : 0u;
		return 0;
	default:
		break;
	}
	return fail(d, fix, "unknown literal type");
}

static const char *const arg_names_binary[] = {"a", "b"};
static const char *const arg_names_unary[] = {"a"};
static const char *const arg_names_select[] = {"cond", "a", "b"};
static const char *const arg_names_value[] = {"value"};
static const char *const arg_names_fma[] = {"a", "b", "c"};
static const char *const arg_names_index[] = {"index"};
static const char *const arg_names_atomic[] = {"index", "value"};
static const char *const arg_names_cas[] = {"index", "expected", "value"};
static const char *const arg_names_shuffle[] = {"value", "lane"};
static const char *const arg_names_cond[] = {"cond"};

/* Argument names used in location paths (docs/ir.md); NULL for kinds without arguments. */
static const char *const *arg_names(const struct vy_expr *e)
{
	switch (e->kind) {
	case VY_EXPR_BINARY:
		return arg_names_binary;
	case VY_EXPR_UNARY:
		return arg_names_unary;
	case VY_EXPR_SELECT:
		return arg_names_select;
	case VY_EXPR_CAST:
	case VY_EXPR_BITCAST:
	case VY_EXPR_SUBGROUP_REDUCE:
		return arg_names_value;
	case VY_EXPR_FMA:
		return arg_names_fma;
	case VY_EXPR_LOAD:
		return arg_names_index;
	case VY_EXPR_ATOMIC:
		return e->op == VY_ATOMIC_COMPARE_EXCHANGE ? arg_names_cas : arg_names_atomic;
	case VY_EXPR_SUBGROUP_SHUFFLE:
		return arg_names_shuffle;
	case VY_EXPR_SUBGROUP_BALLOT:
		return arg_names_cond;
	default:
		return NULL;
	}
}

/* The name of an expression as written first in its array. */
static const char *expr_head(const struct vy_expr *e)
{
	switch (e->kind) {
	case VY_EXPR_LIT:
		return vy_type_name(e->type);
	case VY_EXPR_BINARY:
		return vy_binop_name(e->op);
	case VY_EXPR_UNARY:
		return vy_unop_name(e->op);
	default:
		return vy_expr_kind_name(e->kind);
	}
}

/* Read e->nargs argument expressions into e->args, each under its path segment. */
static int rd_args(struct dec *d, struct vy_expr *e, unsigned depth)
{
	const char *const *names = arg_names(e);
	for (uint32_t i = 0; i < e->nargs; i++) {
		size_t mark = push_field(d, names[i]);
		int rc = rd_expr(d, &e->args[i], depth + 1);
		if (rc) {
			return rc;
		}
		pop(d, mark);
	}
	return 0;
}

static const char expr_form_fix[] =
	"write the expression as the IR reference gives it (docs/ir.md)";

static int rd_expr_body(struct dec *d, struct vy_expr *e, uint32_t len,
	const struct vy_mp_obj *head, unsigned depth)
{
	const char *h = (const char *)head->data;
	size_t hl = head->len;
	int t;
	int rc;
	/* want: the number of array elements the form takes (head included) */
	uint32_t want;
	if ((t = vy_type_from_name(h, hl)) >= 0) {
		e->kind = VY_EXPR_LIT;
		e->type = (enum vy_type)t;
		want = 2;
	} else if (vy_mp_str_eq(head, "var") || vy_mp_str_eq(head, "len")) {
		e->kind = vy_mp_str_eq(head, "var") ? VY_EXPR_VAR : VY_EXPR_LEN;
		want = 2;
	} else if (vy_mp_str_eq(head, "load")) {
		e->kind = VY_EXPR_LOAD;
		e->nargs = 1;
		want = 3;
	} else if (vy_mp_str_eq(head, "gid") || vy_mp_str_eq(head, "lid") ||
		   vy_mp_str_eq(head, "wgid")) {
		e->kind = h[0] == 'g' ? VY_EXPR_GID : h[0] == 'l' ? VY_EXPR_LID : VY_EXPR_WGID;
		want = 2;
	} else if (vy_mp_str_eq(head, "select")) {
		e->kind = VY_EXPR_SELECT;
		e->nargs = 3;
		want = 4;
	} else if (vy_mp_str_eq(head, "cast") || vy_mp_str_eq(head, "bitcast")) {
		e->kind = h[0] == 'c' ? VY_EXPR_CAST : VY_EXPR_BITCAST;
		e->nargs = 1;
		want = 3;
	} else if (vy_mp_str_eq(head, "fma")) {
		e->kind = VY_EXPR_FMA;
		e->nargs = 3;
		want = 4;
	} else if (vy_mp_str_eq(head, "atomic")) {
		e->kind = VY_EXPR_ATOMIC;
		want = len == 6 ? 6 : 5;
	} else if (vy_mp_str_eq(head, "spec")) {
		e->kind = VY_EXPR_SPEC;
		want = 4;
	} else if (vy_mp_str_eq(head, "subgroup_reduce")) {
		e->kind = VY_EXPR_SUBGROUP_REDUCE;
		e->nargs = 1;
		want = 3;
	} else if (vy_mp_str_eq(head, "subgroup_shuffle")) {
		e->kind = VY_EXPR_SUBGROUP_SHUFFLE;
		e->nargs = 2;
		want = 3;
	} else if (vy_mp_str_eq(head, "subgroup_ballot")) {
		e->kind = VY_EXPR_SUBGROUP_BALLOT;
		e->nargs = 1;
		want = 2;
	} else if (vy_mp_str_eq(head, "subgroup_lane") || vy_mp_str_eq(head, "subgroup_size")) {
		e->kind = vy_mp_str_eq(head, "subgroup_lane") ? VY_EXPR_SUBGROUP_LANE
							      : VY_EXPR_SUBGROUP_SIZE;
		want = 1;
	} else if ((t = vy_binop_from_name(h, hl)) >= 0) {
		e->kind = VY_EXPR_BINARY;
		e->op = (uint32_t)t;
		e->nargs = 2;
		want = 3;
	} else if ((t = vy_unop_from_name(h, hl)) >= 0) {
		e->kind = VY_EXPR_UNARY;
		e->op = (uint32_t)t;
		e->nargs = 1;
		want = 2;
	} else {
		return fail(d, "use an expression kind listed in docs/ir.md",
			"unknown expression \"%.*s\"", (int)(hl > 64 ? 64 : hl), h);
	}
	if (len != want) {
		return fail(d, expr_form_fix, "%.*s takes %" PRIu32 " elements, found %" PRIu32,
			(int)hl, h, want, len);
	}
	switch (e->kind) {
	case VY_EXPR_LIT:
		return rd_lit_value(d, e->type, &e->bits);
	case VY_EXPR_VAR:
	case VY_EXPR_LEN:
		return rd_name(d, &e->name, NAME_MAX_BYTES, "the name");
	case VY_EXPR_LOAD:
		rc = rd_name(d, &e->name, NAME_MAX_BYTES, "the buffer name");
		return rc ? rc : rd_args(d, e, depth);
	case VY_EXPR_GID:
	case VY_EXPR_LID:
	case VY_EXPR_WGID:
		return rd_u32(d, &e->bits, "the axis");
	case VY_EXPR_CAST:
		rc = rd_enum(d, vy_type_from_name, "cast target type",
			"cast to one of u32, i32, f32 or bool", &t);
		e->type = (enum vy_type)t;
		return rc ? rc : rd_args(d, e, depth);
	case VY_EXPR_BITCAST:
		rc = rd_enum(d, vy_type_from_name, "bitcast target type",
			"bitcast to one of u32, i32 or f32", &t);
		e->type = (enum vy_type)t;
		return rc ? rc : rd_args(d, e, depth);
	case VY_EXPR_ATOMIC:
		rc = rd_enum(d, vy_atomic_from_name, "atomic operation",
			"use add, and, or, xor, min, max, exchange or compare_exchange", &t);
		if (rc) {
			return rc;
		}
		e->op = (uint32_t)t;
		if ((e->op == VY_ATOMIC_COMPARE_EXCHANGE) != (len == 6)) {
			return fail(d, expr_form_fix, "atomic %s takes %d elements, found %" PRIu32,
				vy_atomic_name(e->op), e->op == VY_ATOMIC_COMPARE_EXCHANGE ? 6 : 5,
				len);
		}
		e->nargs = len - 3;
		rc = rd_name(d, &e->name, NAME_MAX_BYTES, "the buffer name");
		return rc ? rc : rd_args(d, e, depth);
	case VY_EXPR_SPEC: {
		rc = rd_name(d, &e->name, NAME_MAX_BYTES, "the spec name");
		if (rc == 0) {
			rc = rd_enum(d, vy_type_from_name, "spec type",
				"give the spec constant one of the types u32, i32, f32 or bool",
				&t);
		}
		if (rc) {
			return rc;
		}
		e->type = (enum vy_type)t;
		size_t mark = push_field(d, "default");
		struct vy_expr *lit = NULL;
		rc = rd_expr(d, &lit, depth + 1);
		if (rc) {
			return rc;
		}
		if (lit->kind != VY_EXPR_LIT || lit->type != e->type) {
			return fail(d, "give the spec constant a default literal of its own type",
				"the default of spec \"%s\" must be a %s literal", e->name,
				vy_type_name(e->type));
		}
		pop(d, mark);
		e->bits = lit->bits;
		return 0;
	}
	case VY_EXPR_SUBGROUP_REDUCE:
		rc = rd_enum(d, vy_reduce_from_name, "subgroup reduction",
			"use add, mul, min, max, and, or or xor", &t);
		e->op = (uint32_t)t;
		return rc ? rc : rd_args(d, e, depth);
	default:
		return rd_args(d, e, depth);
	}
}

static int rd_expr(struct dec *d, struct vy_expr **out, unsigned depth)
{
	if (depth > VY_IR_MAX_EXPR_DEPTH) {
		return fail(d, "split the expression with let variables",
			"expression nesting exceeds %d levels", VY_IR_MAX_EXPR_DEPTH);
	}
	uint32_t len = 0;
	int rc = rd_tuple(d, 1, 6, "an expression", &len);
	if (rc) {
		return rc;
	}
	struct vy_mp_obj head;
	rc = rd_type(d, &head, VY_MP_STR, "the first element of an expression");
	if (rc) {
		return rc;
	}
	struct vy_expr *e = vy_arena_alloc(d->p->arena, sizeof(*e));
	e->type = VY_TYPE_NONE;
	size_t mark = push_name(d, (const char *)head.data, head.len > 32 ? 32 : head.len);
	rc = rd_expr_body(d, e, len, &head, depth);
	if (rc) {
		return rc;
	}
	pop(d, mark);
	*out = e;
	return 0;
}

/* --- nodes --------------------------------------------------------------------------------- */

static int rd_block(struct dec *d, struct vy_block *out, unsigned depth);

static int rd_body(struct dec *d, const char *field, struct vy_block *out, unsigned depth)
{
	size_t mark = push_field(d, field);
	if (depth + 1 > VY_IR_MAX_NESTING) {
		return fail(d, "flatten the program or move work into separate dispatches",
			"nesting exceeds %d levels", VY_IR_MAX_NESTING);
	}
	int rc = rd_block(d, out, depth + 1);
	if (rc == 0) {
		pop(d, mark);
	}
	return rc;
}

static int rd_slot(struct dec *d, const char *field, struct vy_expr **out)
{
	size_t mark = push_field(d, field);
	int rc = rd_expr(d, out, 1);
	if (rc == 0) {
		pop(d, mark);
	}
	return rc;
}

static int rd_node_body(struct dec *d, struct vy_node *n, uint32_t len, unsigned depth)
{
	static const uint8_t want[VY_NODE_KIND_COUNT] = {
		[VY_NODE_LET] = 3,
		[VY_NODE_ASSIGN] = 3,
		[VY_NODE_STORE] = 4,
		[VY_NODE_IF] = 4,
		[VY_NODE_LOOP] = 5,
		[VY_NODE_RETURN] = 1,
		[VY_NODE_BLOCK] = 2,
		[VY_NODE_REGION] = 3,
		[VY_NODE_BARRIER] = 1,
	};
	const char *kind = vy_node_kind_name(n->kind);
	bool ok = len == want[n->kind] || (n->kind == VY_NODE_BARRIER && len == 2);
	if (!ok) {
		return fail(d, "write the node as the IR reference gives it (docs/ir.md)",
			"%s takes %u elements, found %" PRIu32, kind, want[n->kind], len);
	}
	int rc;
	int t;
	switch (n->kind) {
	case VY_NODE_LET:
	case VY_NODE_ASSIGN:
		rc = rd_name(d, &n->name, NAME_MAX_BYTES, "the variable name");
		return rc ? rc : rd_slot(d, "value", &n->args[0]);
	case VY_NODE_STORE:
		rc = rd_name(d, &n->name, NAME_MAX_BYTES, "the buffer name");
		if (rc == 0) {
			rc = rd_slot(d, "index", &n->args[0]);
		}
		return rc ? rc : rd_slot(d, "value", &n->args[1]);
	case VY_NODE_IF:
		rc = rd_slot(d, "cond", &n->args[0]);
		if (rc == 0) {
			rc = rd_body(d, "then", &n->body, depth);
		}
		return rc ? rc : rd_body(d, "else", &n->orelse, depth);
	case VY_NODE_LOOP:
		rc = rd_name(d, &n->name, NAME_MAX_BYTES, "the loop variable");
		if (rc == 0) {
			rc = rd_slot(d, "from", &n->args[0]);
		}
		if (rc == 0) {
			rc = rd_slot(d, "to", &n->args[1]);
		}
		return rc ? rc : rd_body(d, "body", &n->body, depth);
	case VY_NODE_BLOCK:
		return rd_body(d, "body", &n->body, depth);
	case VY_NODE_REGION:
		rc = rd_name(d, &n->name, LABEL_MAX_BYTES, "the generator name");
		return rc ? rc : rd_body(d, "body", &n->body, depth);
	case VY_NODE_BARRIER:
		if (len == 2) {
			rc = rd_enum(d, vy_order_from_name, "barrier ordering",
				"use acquire, release, acq_rel, seq_cst or grid_sync", &t);
			n->order = (enum vy_order)t;
			return rc;
		}
		return 0;
	default:
		return 0;
	}
}

static int rd_node(struct dec *d, struct vy_node **out, unsigned depth)
{
	uint32_t len = 0;
	int rc = rd_tuple(d, 1, 5, "a node", &len);
	if (rc) {
		return rc;
	}
	struct vy_mp_obj head;
	rc = rd_type(d, &head, VY_MP_STR, "the first element of a node");
	if (rc) {
		return rc;
	}
	int kind = -1;
	for (int k = 0; k < VY_NODE_KIND_COUNT; k++) {
		if (vy_mp_str_eq(&head, vy_node_kind_name((enum vy_node_kind)k))) {
			kind = k;
		}
	}
	if (kind < 0) {
		return fail(d,
			"use one of the nodes let, assign, store, if, loop, return, block, region "
			"or barrier",
			"unknown node \"%.*s\"", (int)(head.len > 64 ? 64 : head.len),
			(const char *)head.data);
	}
	struct vy_node *n = vy_arena_alloc(d->p->arena, sizeof(*n));
	n->kind = (enum vy_node_kind)kind;
	n->order = VY_ORDER_SEQ_CST;
	size_t mark = push_field(d, vy_node_kind_name(n->kind));
	rc = rd_node_body(d, n, len, depth);
	if (rc) {
		return rc;
	}
	pop(d, mark);
	*out = n;
	return 0;
}

static int rd_block(struct dec *d, struct vy_block *out, unsigned depth)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_ARRAY, "a node list");
	if (rc) {
		return rc;
	}
	if (o.len > VY_IR_MAX_NODES - d->nodes) {
		return fail(d, "split the program into several dispatches",
			"the program has more than %d nodes", VY_IR_MAX_NODES);
	}
	d->nodes += o.len;
	out->len = o.len;
	out->items = vy_arena_calloc(d->p->arena, o.len, sizeof(*out->items));
	for (uint32_t i = 0; i < o.len; i++) {
		size_t mark = push_index(d, i);
		rc = rd_node(d, &out->items[i], depth);
		if (rc) {
			return rc;
		}
		pop(d, mark);
	}
	return 0;
}

/* --- buffers and the program map ----------------------------------------------------------- */

static int rd_hints(struct dec *d, struct vy_hints *h)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_MAP, "hints");
	for (uint32_t i = 0; rc == 0 && i < o.len; i++) {
		struct vy_mp_obj key;
		rc = rd_type(d, &key, VY_MP_STR, "a hints key");
		if (rc) {
			break;
		}
		size_t mark = push_name(d, (const char *)key.data, key.len > 32 ? 32 : key.len);
		if (vy_mp_str_eq(&key, "alignment")) {
			rc = rd_u32(d, &h->alignment, "alignment");
		} else if (vy_mp_str_eq(&key, "coalesce_axis")) {
			struct vy_mp_obj v;
			rc = rd(d, &v);
			if (rc == 0 && v.type == VY_MP_NIL) {
				h->coalesce_axis = -1;
			} else if (rc == 0 && v.type == VY_MP_UINT && v.u <= 2) {
				h->coalesce_axis = (int32_t)v.u;
			} else if (rc == 0) {
				rc = fail(d, "use 0, 1, 2 or null",
					"coalesce_axis must be an axis 0..2 or null");
			}
		} else if (vy_mp_str_eq(&key, "locality")) {
			int t;
			rc = rd_enum(d, vy_locality_from_name, "locality",
				"use temporal, streaming or random", &t);
			h->locality = (enum vy_locality)t;
		} else {
			rc = fail(d,
				"use only the hint fields alignment, coalesce_axis and locality",
				"unknown hints field \"%.*s\"", (int)(key.len > 64 ? 64 : key.len),
				(const char *)key.data);
		}
		if (rc == 0) {
			pop(d, mark);
		}
	}
	return rc;
}

enum {
	F_NAME = 1,
	F_BINDING = 2,
	F_ACCESS = 4,
	F_TYPE = 8,
	F_COUNT = 16,
	F_OUTPUT = 32,
	F_LIVE_OUT = 64,
	F_HINTS = 128
};

static int rd_buffer_field(
	struct dec *d, struct vy_buffer *b, const struct vy_mp_obj *key, unsigned *seen)
{
	static const char *const names[] = {
		"name", "binding", "access", "type", "count", "output", "live_out", "hints"};
	int field = -1;
	for (int i = 0; i < 8; i++) {
		if (vy_mp_str_eq(key, names[i])) {
			field = i;
		}
	}
	if (field < 0) {
		return fail(d, buffer_fix_fields, "unknown buffer field \"%.*s\"",
			(int)(key->len > 64 ? 64 : key->len), (const char *)key->data);
	}
	if (*seen & (1u << field)) {
		return fail(
			d, "write each field once", "buffer field %s appears twice", names[field]);
	}
	*seen |= 1u << field;
	int t;
	int rc;
	switch (1u << field) {
	case F_NAME:
		return rd_name(d, &b->name, NAME_MAX_BYTES, "the buffer name");
	case F_BINDING:
		return rd_u32(d, &b->binding, "binding");
	case F_ACCESS:
		rc = rd_enum(d, vy_access_from_name, "access",
			"use read_only, read_write, write_only, uniform or workgroup", &t);
		b->access = (enum vy_access)t;
		return rc;
	case F_TYPE:
		rc = rd_enum(d, vy_type_from_name, "element type", "use u32, i32, f32 or bool", &t);
		b->type = (enum vy_type)t;
		return rc;
	case F_COUNT:
		return rd_u32(d, &b->count, "count");
	case F_OUTPUT:
		return rd_bool(d, &b->output, "output");
	case F_LIVE_OUT:
		return rd_bool(d, &b->live_out, "live_out");
	default:
		b->has_hints = true;
		return rd_hints(d, &b->hints);
	}
}

static int rd_buffer(struct dec *d, struct vy_buffer *b)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_MAP, "a buffer");
	if (rc) {
		return rc;
	}
	b->hints.coalesce_axis = -1;
	b->hints.locality = VY_LOCALITY_TEMPORAL;
	unsigned seen = 0;
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj key;
		rc = rd_type(d, &key, VY_MP_STR, "a buffer field name");
		if (rc) {
			return rc;
		}
		size_t mark = push_name(d, (const char *)key.data, key.len > 32 ? 32 : key.len);
		rc = rd_buffer_field(d, b, &key, &seen);
		if (rc) {
			return rc;
		}
		pop(d, mark);
	}
	const unsigned required = F_NAME | F_BINDING | F_ACCESS | F_TYPE | F_COUNT;
	if ((seen & required) != required) {
		return fail(d, "give every buffer name, binding, access, type and count",
			"the buffer lacks %s",
			!(seen & F_NAME)      ? "a name"
			: !(seen & F_BINDING) ? "a binding"
			: !(seen & F_ACCESS)  ? "an access"
			: !(seen & F_TYPE)    ? "a type"
					      : "a count");
	}
	return 0;
}

static int rd_buffers(struct dec *d)
{
	struct vy_mp_obj o;
	int rc = rd_type(d, &o, VY_MP_ARRAY, "buffers");
	if (rc) {
		return rc;
	}
	if (o.len > VY_IR_MAX_BUFFERS) {
		return fail(d, "use at most 32 buffers, packing small ones together",
			"the program declares %" PRIu32 " buffers, more than %d", o.len,
			VY_IR_MAX_BUFFERS);
	}
	for (uint32_t i = 0; i < o.len; i++) {
		size_t mark = push_index(d, i);
		rc = rd_buffer(d, &d->p->buffers[i]);
		if (rc) {
			return rc;
		}
		d->p->n_buffers = i + 1;
		pop(d, mark);
	}
	return 0;
}

static int rd_workgroup(struct dec *d)
{
	uint32_t len = 0;
	int rc = rd_tuple(d, 3, 3, "workgroup_size", &len);
	for (uint32_t i = 0; rc == 0 && i < 3; i++) {
		size_t mark = push_index(d, i);
		rc = rd_u32(d, &d->p->workgroup_size[i], "a workgroup size");
		if (rc == 0) {
			pop(d, mark);
		}
	}
	return rc;
}

static int rd_program_field(struct dec *d, const struct vy_mp_obj *key, unsigned *seen)
{
	static const char *const names[] = {"vyre", "name", "workgroup_size", "buffers", "entry"};
	int field = -1;
	for (int i = 0; i < 5; i++) {
		if (vy_mp_str_eq(key, names[i])) {
			field = i;
		}
	}
	if (field < 0) {
		return fail(d, program_fix_fields, "unknown program field \"%.*s\"",
			(int)(key->len > 64 ? 64 : key->len), (const char *)key->data);
	}
	if (*seen & (1u << field)) {
		return fail(
			d, "write each field once", "program field %s appears twice", names[field]);
	}
	*seen |= 1u << field;
	switch (field) {
	case 0:
		return rd_u32(d, &d->p->version, "vyre");
	case 1:
		return rd_name(d, &d->p->name, LABEL_MAX_BYTES, "the program name");
	case 2:
		return rd_workgroup(d);
	case 3:
		return rd_buffers(d);
	default:
		return rd_block(d, &d->p->entry, 0);
	}
}

int vy_program_read(
	struct vy_mp_reader *r, const char *at_prefix, struct vy_program **out, struct vy_err *err)
{
	struct dec d = {.r = r, .err = err};
	d.p = vy_program_create(NULL, 0, 0, 0);
	d.p->version = 0;
	if (at_prefix) {
		append(&d, at_prefix, strlen(at_prefix));
	}
	size_t root = d.plen;
	struct vy_mp_obj o;
	int rc = rd_type(&d, &o, VY_MP_MAP, "a program");
	unsigned seen = 0;
	for (uint32_t i = 0; rc == 0 && i < o.len; i++) {
		struct vy_mp_obj key;
		rc = rd_type(&d, &key, VY_MP_STR, "a program field name");
		if (rc) {
			break;
		}
		if (root) {
			append(&d, ".", 1);
		}
		append(&d, (const char *)key.data, key.len > 32 ? 32 : key.len);
		rc = rd_program_field(&d, &key, &seen);
		if (rc == 0) {
			pop(&d, root);
		}
	}
	if (rc == 0 && (seen & 0x1d) != 0x1d) {
		rc = fail(&d, "give the program the fields vyre, workgroup_size, buffers and entry",
			"the program lacks the field %s",
			!(seen & 1)   ? "vyre"
			: !(seen & 4) ? "workgroup_size"
			: !(seen & 8) ? "buffers"
				      : "entry");
	}
	if (rc) {
		vy_program_destroy(d.p);
		return rc;
	}
	*out = d.p;
	return 0;
}

int vy_program_decode(const void *data, size_t len, struct vy_program **out, struct vy_err *err)
{
	if (len > VY_IR_MAX_DOCUMENT) {
		return vy_err_set(err, VY_E_INVALID_PROGRAM, NULL,
			"keep the program under 16 MiB; move data into input buffers",
			"the program document is %zu bytes, more than %zu", len,
			VY_IR_MAX_DOCUMENT);
	}
	struct vy_mp_reader r;
	vy_mp_reader_init(&r, data, len);
	int rc = vy_program_read(&r, NULL, out, err);
	if (rc) {
		return rc;
	}
	if (vy_mp_offset(&r) != len) {
		vy_program_destroy(*out);
		*out = NULL;
		return vy_err_set(err, VY_E_INVALID_PROGRAM, NULL,
			"send exactly one msgpack map per program", "%zu bytes follow the program",
			len - vy_mp_offset(&r));
	}
	return 0;
}

/* --- encoding ------------------------------------------------------------------------------ */

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void pack_expr(msgpack_packer *pk, const struct vy_expr *e);

static void pack_lit(msgpack_packer *pk, enum vy_type type, uint32_t bits)
{
	msgpack_pack_array(pk, 2);
	pack_str(pk, vy_type_name(type));
	switch (type) {
	case VY_TYPE_I32: {
		int32_t v;
		memcpy(&v, &bits, sizeof(v));
		msgpack_pack_int32(pk, v);
		break;
	}
	case VY_TYPE_F32: {
		float f;
		bits = canonical_nan(bits);
		memcpy(&f, &bits, sizeof(f));
		msgpack_pack_float(pk, f);
		break;
	}
	case VY_TYPE_BOOL:
		if (bits) {
			msgpack_pack_true(pk);
		} else {
			msgpack_pack_false(pk);
		}
		break;
	default:
		msgpack_pack_uint32(pk, bits);
		break;
	}
}

static void pack_expr(msgpack_packer *pk, const struct vy_expr *e)
{
	if (e->kind == VY_EXPR_LIT) {
		pack_lit(pk, e->type, e->bits);
		return;
	}
	uint32_t extra = 0;
	switch (e->kind) {
	case VY_EXPR_VAR:
	case VY_EXPR_LEN:
	case VY_EXPR_GID:
	case VY_EXPR_LID:
	case VY_EXPR_WGID:
	case VY_EXPR_LOAD:
	case VY_EXPR_CAST:
	case VY_EXPR_BITCAST:
	case VY_EXPR_SUBGROUP_REDUCE:
		extra = 1;
		break;
	case VY_EXPR_ATOMIC:
		extra = 2;
		break;
	case VY_EXPR_SPEC:
		extra = 3;
		break;
	default:
		break;
	}
	msgpack_pack_array(pk, 1 + extra + e->nargs);
	pack_str(pk, expr_head(e));
	switch (e->kind) {
	case VY_EXPR_VAR:
	case VY_EXPR_LEN:
	case VY_EXPR_LOAD:
		pack_str(pk, e->name);
		break;
	case VY_EXPR_GID:
	case VY_EXPR_LID:
	case VY_EXPR_WGID:
		msgpack_pack_uint32(pk, e->bits);
		break;
	case VY_EXPR_CAST:
	case VY_EXPR_BITCAST:
		pack_str(pk, vy_type_name(e->type));
		break;
	case VY_EXPR_SUBGROUP_REDUCE:
		pack_str(pk, vy_reduce_name(e->op));
		break;
	case VY_EXPR_ATOMIC:
		pack_str(pk, vy_atomic_name(e->op));
		pack_str(pk, e->name);
		break;
	case VY_EXPR_SPEC:
		pack_str(pk, e->name);
		pack_str(pk, vy_type_name(e->type));
		pack_lit(pk, e->type, e->bits);
		break;
	default:
		break;
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		pack_expr(pk, e->args[i]);
	}
}

static void pack_block(msgpack_packer *pk, const struct vy_block *b);

static void pack_node(msgpack_packer *pk, const struct vy_node *n)
{
	const char *kind = vy_node_kind_name(n->kind);
	switch (n->kind) {
	case VY_NODE_LET:
	case VY_NODE_ASSIGN:
		msgpack_pack_array(pk, 3);
		pack_str(pk, kind);
		pack_str(pk, n->name);
		pack_expr(pk, n->args[0]);
		break;
	case VY_NODE_STORE:
		msgpack_pack_array(pk, 4);
		pack_str(pk, kind);
		pack_str(pk, n->name);
		pack_expr(pk, n->args[0]);
		pack_expr(pk, n->args[1]);
		break;
	case VY_NODE_IF:
		msgpack_pack_array(pk, 4);
		pack_str(pk, kind);
		pack_expr(pk, n->args[0]);
		pack_block(pk, &n->body);
		pack_block(pk, &n->orelse);
		break;
	case VY_NODE_LOOP:
		msgpack_pack_array(pk, 5);
		pack_str(pk, kind);
		pack_str(pk, n->name);
		pack_expr(pk, n->args[0]);
		pack_expr(pk, n->args[1]);
		pack_block(pk, &n->body);
		break;
	case VY_NODE_BLOCK:
		msgpack_pack_array(pk, 2);
		pack_str(pk, kind);
		pack_block(pk, &n->body);
		break;
	case VY_NODE_REGION:
		msgpack_pack_array(pk, 3);
		pack_str(pk, kind);
		pack_str(pk, n->name);
		pack_block(pk, &n->body);
		break;
	case VY_NODE_BARRIER:
		msgpack_pack_array(pk, n->order == VY_ORDER_SEQ_CST ? 1 : 2);
		pack_str(pk, kind);
		if (n->order != VY_ORDER_SEQ_CST) {
			pack_str(pk, vy_order_name(n->order));
		}
		break;
	default:
		msgpack_pack_array(pk, 1);
		pack_str(pk, kind);
		break;
	}
}

static void pack_block(msgpack_packer *pk, const struct vy_block *b)
{
	msgpack_pack_array(pk, b->len);
	for (uint32_t i = 0; i < b->len; i++) {
		pack_node(pk, b->items[i]);
	}
}

static void pack_buffer(msgpack_packer *pk, const struct vy_buffer *b)
{
	msgpack_pack_map(pk, 5 + (uint32_t)b->output + b->live_out + b->has_hints);
	pack_str(pk, "name");
	pack_str(pk, b->name);
	pack_str(pk, "binding");
	msgpack_pack_uint32(pk, b->binding);
	pack_str(pk, "access");
	pack_str(pk, vy_access_name(b->access));
	pack_str(pk, "type");
	pack_str(pk, vy_type_name(b->type));
	pack_str(pk, "count");
	msgpack_pack_uint32(pk, b->count);
	if (b->output) {
		pack_str(pk, "output");
		msgpack_pack_true(pk);
	}
	if (b->live_out) {
		pack_str(pk, "live_out");
		msgpack_pack_true(pk);
	}
	if (b->has_hints) {
		pack_str(pk, "hints");
		msgpack_pack_map(pk, 3);
		pack_str(pk, "alignment");
		msgpack_pack_uint32(pk, b->hints.alignment);
		pack_str(pk, "coalesce_axis");
		if (b->hints.coalesce_axis < 0) {
			msgpack_pack_nil(pk);
		} else {
			msgpack_pack_uint32(pk, (uint32_t)b->hints.coalesce_axis);
		}
		pack_str(pk, "locality");
		pack_str(pk, vy_locality_name(b->hints.locality));
	}
}

static int buffer_order(const void *a, const void *b)
{
	const struct vy_buffer *x = *(const struct vy_buffer *const *)a;
	const struct vy_buffer *y = *(const struct vy_buffer *const *)b;
	if (x->binding != y->binding) {
		return x->binding < y->binding ? -1 : 1;
	}
	return strcmp(x->name, y->name);
}

void vy_program_pack(const struct vy_program *program, msgpack_packer *pk)
{
	const struct vy_buffer *sorted[VY_IR_MAX_BUFFERS];
	uint32_t n = program->n_buffers;
	for (uint32_t i = 0; i < n; i++) {
		sorted[i] = &program->buffers[i];
	}
	qsort(sorted, n, sizeof(sorted[0]), buffer_order);

	msgpack_pack_map(pk, program->name ? 5 : 4);
	pack_str(pk, "vyre");
	msgpack_pack_uint32(pk, program->version);
	if (program->name) {
		pack_str(pk, "name");
		pack_str(pk, program->name);
	}
	pack_str(pk, "workgroup_size");
	msgpack_pack_array(pk, 3);
	for (int i = 0; i < 3; i++) {
		msgpack_pack_uint32(pk, program->workgroup_size[i]);
	}
	pack_str(pk, "buffers");
	msgpack_pack_array(pk, n);
	for (uint32_t i = 0; i < n; i++) {
		pack_buffer(pk, sorted[i]);
	}
	pack_str(pk, "entry");
	pack_block(pk, &program->entry);
}

void vy_program_encode(const struct vy_program *program, msgpack_sbuffer *out)
{
	msgpack_sbuffer_init(out);
	msgpack_packer pk;
	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	vy_program_pack(program, &pk);
}

/* --- JSON ---------------------------------------------------------------------------------- */

int vy_program_from_json(const char *text, size_t len, struct vy_program **out, struct vy_err *err)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	int rc = vy_json_to_msgpack(text, len, VY_E_INVALID_PROGRAM, &pk, err);
	if (rc == 0) {
		rc = vy_program_decode(sb.data, sb.size, out, err);
	}
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

char *vy_program_to_json(const struct vy_program *program, bool pretty)
{
	msgpack_sbuffer sb;
	vy_program_encode(program, &sb);
	struct json_object *obj = NULL;
	int rc = vy_msgpack_to_json(sb.data, sb.size, &obj, NULL);
	msgpack_sbuffer_destroy(&sb);
	if (rc != 0) {
		fprintf(stderr, "vyred: the canonical encoder wrote msgpack its reader rejects\n");
		abort();
	}
	char *text = vy_json_text(obj, pretty);
	json_object_put(obj);
	return text;
}

/* --- program id ---------------------------------------------------------------------------- */

void vy_program_id_compute(const void *canonical, size_t len, struct vy_program_id *id)
{
	XXH128_hash_t h = XXH3_128bits(canonical, len);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, h);
	memcpy(id->bytes, c.digest, sizeof(id->bytes));
}

void vy_program_id_of(
	const struct vy_program *program, msgpack_sbuffer *canonical, struct vy_program_id *id)
{
	vy_program_encode(program, canonical);
	vy_program_id_compute(canonical->data, canonical->size, id);
}

void vy_program_id_hex(const struct vy_program_id *id, char out[VY_PROGRAM_ID_HEX])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		out[2 * i] = digits[id->bytes[i] >> 4];
		out[2 * i + 1] = digits[id->bytes[i] & 15];
	}
	out[32] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

int vy_program_id_parse(const char *hex, size_t len, struct vy_program_id *id, struct vy_err *err)
{
	if (len != 32) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "program_id",
			"pass the 32 hex digits that compile returned",
			"a program id has 32 hex digits, this one has %zu characters", len);
	}
	for (int i = 0; i < 16; i++) {
		int hi = hexval(hex[2 * i]);
		int lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "program_id",
				"pass the 32 hex digits that compile returned",
				"the program id holds a character that is not a hex digit");
		}
		id->bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
