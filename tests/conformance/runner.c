/*
 * The conformance runner (DESIGN.md §9; the case format is in README.md beside this file). It
 * loads every case of a corpus directory, runs it on the reference backend (the oracle, at the
 * subgroup size the case assumes) and on every other compiled-in backend that opens, checks the
 * reference's results against the outputs or error written in the case, compares every other
 * backend's results with the reference's byte for byte, and measures the ULP error of the lowered
 * math functions against libm in double precision. A case without subgroup operations also runs
 * on the reference at a second subgroup size, which must not change its results.
 *
 *   conformance [--backend ID]... CORPUS_DIR [FILTER]...
 *
 * FILTERs select the cases whose name contains one of them. --backend limits the backends
 * compared with the reference to those named (the reference always runs). One line is printed
 * per case and backend, then the ULP table and a summary; the exit status is 0 when every run
 * passed, 1 when any failed (or no case matched), 2 for a usage error.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "binding.h"
#include "codec.h"
#include "err.h"
#include "ir.h"
#include "json.h"
#include "launch.h"
#include "node_path.h"
#include "reference/reference.h"
#include "registry.h"
#include "vk_keep.h"
#ifdef VY_HAVE_VULKAN
#include "vulkan/vulkan.h"
#endif
#include "spec.h"
#include "validate.h"

#define MAX_GEN_DEPTH 16
#define MAX_GEN_WORDS (UINT32_C(1) << 24)
#define MAX_ORACLES 8
#define MAX_ULP_ROWS 64
#define MAX_FILTERS 32
#define WHY_MAX 512
#define MAX_SKIPS 64
/* The reference also runs every case without subgroup operations at this size (NVIDIA's), to
 * check that the simulated size changes nothing there. */
#define OTHER_SUBGROUP_SIZE 32u

/* ---- Small utilities ---- */

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		fprintf(stderr, "conformance: out of memory\n");
		abort();
	}
	return p;
}

struct words {
	uint32_t *v;
	size_t len;
	size_t cap;
};

static void words_push(struct words *w, uint32_t x)
{
	if (w->len == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->v = realloc(w->v, w->cap * sizeof(*w->v));
		if (!w->v) {
			fprintf(stderr, "conformance: out of memory\n");
			abort();
		}
	}
	w->v[w->len++] = x;
}

static void words_finish(struct words *w)
{
	free(w->v);
	memset(w, 0, sizeof(*w));
}

static float f32_of(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

static uint32_t bits_of(float f)
{
	uint32_t bits;
	memcpy(&bits, &f, sizeof(bits));
	return bits;
}

/* The f32 value a load gives: NaN canonical, subnormals flushed to a signed zero. */
static float f32_loaded(uint32_t bits)
{
	if ((bits & 0x7F800000u) == 0) {
		bits &= 0x80000000u;
	}
	return f32_of(bits);
}

static uint32_t word_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* "0x3f800000 (1)" for a word of the given type. */
static void show_word(uint32_t w, enum vy_type type, char *buf, size_t size)
{
	switch (type) {
	case VY_TYPE_U32:
		snprintf(buf, size, "0x%08" PRIx32 " (%" PRIu32 ")", w, w);
		break;
	case VY_TYPE_I32:
		snprintf(buf, size, "0x%08" PRIx32 " (%" PRId32 ")", w,
			w < 0x80000000u ? (int32_t)w : (int32_t)(w - 0x80000000u) + INT32_MIN);
		break;
	case VY_TYPE_F32:
		snprintf(buf, size, "0x%08" PRIx32 " (%.9g)", w, (double)f32_of(w));
		break;
	default:
		snprintf(buf, size, "0x%08" PRIx32 " (%s)", w, w ? "true" : "false");
		break;
	}
}

static void set_why(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_why(char *why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, WHY_MAX, fmt, ap);
	va_end(ap);
}

/* Fail when `obj` has a key outside the NULL-terminated `allowed` list. */
static int check_keys(json_object *obj, const char *const *allowed, const char *where, char *why)
{
	json_object_object_foreach(obj, key, val)
	{
		(void)val;
		bool ok = false;
		for (size_t i = 0; allowed[i]; i++) {
			ok = ok || strcmp(key, allowed[i]) == 0;
		}
		if (!ok) {
			set_why(why, "%s: unknown field '%s'", where, key);
			return -1;
		}
	}
	return 0;
}

static bool get_int(json_object *obj, int64_t lo, int64_t hi, int64_t *out)
{
	if (!obj || !json_object_is_type(obj, json_type_int)) {
		return false;
	}
	errno = 0;
	int64_t v = json_object_get_int64(obj);
	if (errno != 0 || v < lo || v > hi) {
		return false;
	}
	*out = v;
	return true;
}

static bool get_number(json_object *obj, double *out)
{
	if (obj && json_object_is_type(obj, json_type_double)) {
		*out = json_object_get_double(obj);
		return true;
	}
	int64_t i;
	if (get_int(obj, INT64_MIN, INT64_MAX, &i)) {
		*out = (double)i;
		return true;
	}
	return false;
}

/* ---- Values and generators (README.md, "Inputs") ---- */

static const uint32_t witness_u32[] = {0, 1, 2, 3, 7, 31, 32, 33, 0xFFFF, 0x10000, 0x12345678,
	0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF};
static const uint32_t witness_i32[] = {0, 1, 0xFFFFFFFF, 2, 0xFFFFFFFE, 3, 0xFFFFFFFD, 7, 31, 32,
	0xFFFFFFE0, 0x12345678, 0x7FFFFFFF, 0x7FFFFFFE, 0x80000000, 0x80000001};
static const uint32_t witness_f32[] = {0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000,
	0xBF000000, 0x3FC00000, 0xC0200000, 0x40400000, 0x3DCCCCCD, 0x4B800000, 0x4F000000,
	0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x80800000, 0x00000001, 0x007FFFFF, 0x80000001,
	0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00000};
static const uint32_t witness_bool[] = {0, 1, 2, 0xFFFFFFFF};

struct witness {
	const uint32_t *v;
	size_t n;
};

static struct witness witness_of(enum vy_type t)
{
	switch (t) {
	case VY_TYPE_U32:
		return (struct witness){witness_u32, sizeof(witness_u32) / sizeof(uint32_t)};
	case VY_TYPE_I32:
		return (struct witness){witness_i32, sizeof(witness_i32) / sizeof(uint32_t)};
	case VY_TYPE_F32:
		return (struct witness){witness_f32, sizeof(witness_f32) / sizeof(uint32_t)};
	default:
		return (struct witness){witness_bool, sizeof(witness_bool) / sizeof(uint32_t)};
	}
}

/* SplitMix64: small, well known, and easy to reproduce in any language. */
static uint64_t splitmix_next(uint64_t *state)
{
	*state += UINT64_C(0x9E3779B97F4A7C15);
	uint64_t z = *state;
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* One literal value of the case format as a word of type `t`. */
static int value_word(json_object *v, enum vy_type t, uint32_t *out, char *why)
{
	int64_t i;
	double d;
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2] && strlen(s) <= 10) {
			char *end;
			unsigned long x = strtoul(s + 2, &end, 16);
			if (*end == '\0') {
				*out = (uint32_t)x;
				return 0;
			}
		}
		if (t == VY_TYPE_F32) {
			static const struct {
				const char *name;
				uint32_t bits;
			} named[] = {{"nan", 0x7FC00000}, {"inf", 0x7F800000}, {"-inf", 0xFF800000},
				{"-0", 0x80000000}};
			for (size_t k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
				if (strcmp(s, named[k].name) == 0) {
					*out = named[k].bits;
					return 0;
				}
			}
		}
		set_why(why, "value \"%s\" is not a %s (write \"0x\" and up to 8 hex digits%s)", s,
			vy_type_name(t),
			t == VY_TYPE_F32 ? ", \"nan\", \"inf\", \"-inf\" or \"-0\"" : "");
		return -1;
	}
	if (json_object_is_type(v, json_type_boolean)) {
		if (t != VY_TYPE_BOOL) {
			set_why(why, "true/false given for a %s value", vy_type_name(t));
			return -1;
		}
		*out = json_object_get_boolean(v) ? 1 : 0;
		return 0;
	}
	switch (t) {
	case VY_TYPE_U32:
	case VY_TYPE_BOOL:
		if (get_int(v, 0, UINT32_MAX, &i)) {
			*out = (uint32_t)i;
			return 0;
		}
		break;
	case VY_TYPE_I32:
		if (get_int(v, INT32_MIN, INT32_MAX, &i)) {
			*out = (uint32_t)i;
			return 0;
		}
		break;
	default:
		if (get_number(v, &d)) {
			*out = bits_of((float)d);
			return 0;
		}
		break;
	}
	set_why(why, "value %s is not a %s", json_object_to_json_string(v), vy_type_name(t));
	return -1;
}

static int gen_eval(json_object *g, enum vy_type t, struct words *out, int depth, char *why);

static int gen_values(json_object *list, enum vy_type t, struct words *out, char *why)
{
	size_t n = json_object_array_length(list);
	for (size_t k = 0; k < n; k++) {
		uint32_t w;
		if (value_word(json_object_array_get_idx(list, k), t, &w, why)) {
			return -1;
		}
		words_push(out, w);
	}
	return 0;
}

/* The type a generator names must be the type of the buffer it fills. */
static int gen_type(json_object *name, enum vy_type t, const char *kind, char *why)
{
	const char *s =
		json_object_is_type(name, json_type_string) ? json_object_get_string(name) : "";
	int named = vy_type_from_name(s, strlen(s));
	if (named < 0) {
		set_why(why, "%s: unknown type %s", kind, json_object_to_json_string(name));
		return -1;
	}
	if ((enum vy_type)named != t) {
		set_why(why, "%s generates %s values for a %s buffer", kind, s, vy_type_name(t));
		return -1;
	}
	return 0;
}

static int gen_count(json_object *g, const char *key, const char *kind, int64_t *n, char *why)
{
	json_object *c = NULL;
	json_object_object_get_ex(g, key, &c);
	if (!get_int(c, 0, MAX_GEN_WORDS, n)) {
		set_why(why, "%s: '%s' must be an integer from 0 to %" PRIu32, kind, key,
			MAX_GEN_WORDS);
		return -1;
	}
	return 0;
}

static int gen_random(json_object *g, enum vy_type t, struct words *out, char *why)
{
	static const char *const keys[] = {"random", "count", "seed", "min", "max", NULL};
	json_object *seed = NULL, *lo = NULL, *hi = NULL;
	int64_t n, s;
	if (check_keys(g, keys, "random", why) || gen_count(g, "count", "random", &n, why)) {
		return -1;
	}
	json_object_object_get_ex(g, "seed", &seed);
	json_object_object_get_ex(g, "min", &lo);
	json_object_object_get_ex(g, "max", &hi);
	if (!get_int(seed, 0, INT64_MAX, &s)) {
		set_why(why, "random: 'seed' must be a non-negative integer");
		return -1;
	}
	if (!lo != !hi || (lo && t == VY_TYPE_BOOL)) {
		set_why(why, "random: give both 'min' and 'max' (not for bool), or neither");
		return -1;
	}
	uint64_t state = (uint64_t)s;
	double dlo = 0, dhi = 0;
	int64_t ilo = 0, ihi = 0;
	if (lo && t == VY_TYPE_F32 &&
		!(get_number(lo, &dlo) && get_number(hi, &dhi) && dlo <= dhi)) {
		set_why(why, "random: 'min' and 'max' must be numbers with min <= max");
		return -1;
	}
	if (lo && t != VY_TYPE_F32) {
		int64_t tlo = t == VY_TYPE_I32 ? INT32_MIN : 0;
		int64_t thi = t == VY_TYPE_I32 ? INT32_MAX : UINT32_MAX;
		if (!get_int(lo, tlo, thi, &ilo) || !get_int(hi, tlo, thi, &ihi) || ilo > ihi) {
			set_why(why, "random: 'min' and 'max' must be %s values with min <= max",
				vy_type_name(t));
			return -1;
		}
	}
	for (int64_t k = 0; k < n; k++) {
		uint64_t r = splitmix_next(&state);
		if (t == VY_TYPE_BOOL) {
			words_push(out, (uint32_t)(r >> 63));
		} else if (lo && t == VY_TYPE_F32) {
			double u = (double)(r >> 40) / 16777216.0;
			words_push(out, bits_of((float)(dlo + (dhi - dlo) * u)));
		} else if (lo) {
			uint64_t span = (uint64_t)(ihi - ilo) + 1;
			words_push(out, (uint32_t)(ilo + (int64_t)((r >> 32) % span)));
		} else {
			words_push(out, (uint32_t)(r >> 32));
		}
	}
	return 0;
}

static int gen_iota(json_object *g, enum vy_type t, struct words *out, char *why)
{
	static const char *const keys[] = {"iota", "count", "start", "step", NULL};
	json_object *start = NULL, *step = NULL;
	int64_t n;
	if (check_keys(g, keys, "iota", why) || gen_count(g, "count", "iota", &n, why)) {
		return -1;
	}
	json_object_object_get_ex(g, "start", &start);
	json_object_object_get_ex(g, "step", &step);
	if (t == VY_TYPE_F32) {
		double d0 = 0, ds = 1;
		if ((start && !get_number(start, &d0)) || (step && !get_number(step, &ds))) {
			set_why(why, "iota: 'start' and 'step' must be numbers");
			return -1;
		}
		for (int64_t k = 0; k < n; k++) {
			words_push(out, bits_of((float)(d0 + (double)k * ds)));
		}
		return 0;
	}
	int64_t i0 = 0, is = 1;
	if ((start && !get_int(start, INT32_MIN, UINT32_MAX, &i0)) ||
		(step && !get_int(step, INT32_MIN, UINT32_MAX, &is))) {
		set_why(why, "iota: 'start' and 'step' must be 32-bit integers");
		return -1;
	}
	for (int64_t k = 0; k < n; k++) {
		words_push(out, (uint32_t)(uint64_t)(i0 + k * is));
	}
	return 0;
}

/* repeat (the whole sequence `times` times) and stretch (each word `times` times). */
static int gen_times(
	json_object *g, const char *kind, enum vy_type t, struct words *out, int depth, char *why)
{
	const char *const keys[] = {kind, "times", NULL};
	int64_t times;
	if (check_keys(g, keys, kind, why) || gen_count(g, "times", kind, &times, why)) {
		return -1;
	}
	struct words inner = {0};
	json_object *sub = NULL;
	json_object_object_get_ex(g, kind, &sub);
	if (gen_eval(sub, t, &inner, depth + 1, why)) {
		words_finish(&inner);
		return -1;
	}
	if ((uint64_t)inner.len * (uint64_t)times > MAX_GEN_WORDS) {
		words_finish(&inner);
		set_why(why, "%s: more than %" PRIu32 " values", kind, MAX_GEN_WORDS);
		return -1;
	}
	bool stretch = strcmp(kind, "stretch") == 0;
	size_t outer = stretch ? inner.len : (size_t)times;
	size_t each = stretch ? (size_t)times : inner.len;
	for (size_t a = 0; a < outer; a++) {
		for (size_t b = 0; b < each; b++) {
			words_push(out, inner.v[stretch ? a : b]);
		}
	}
	words_finish(&inner);
	return 0;
}

static int gen_eval(json_object *g, enum vy_type t, struct words *out, int depth, char *why)
{
	if (depth > MAX_GEN_DEPTH) {
		set_why(why, "generators nested deeper than %d", MAX_GEN_DEPTH);
		return -1;
	}
	if (json_object_is_type(g, json_type_array)) {
		return gen_values(g, t, out, why);
	}
	if (!json_object_is_type(g, json_type_object)) {
		set_why(why, "a generator is an array of values or an object, not %s",
			json_object_to_json_string(g));
		return -1;
	}
	json_object *v = NULL;
	if (json_object_object_get_ex(g, "values", &v)) {
		static const char *const keys[] = {"values", NULL};
		if (check_keys(g, keys, "values", why)) {
			return -1;
		}
		if (!json_object_is_type(v, json_type_array)) {
			set_why(why, "values: expected an array");
			return -1;
		}
		return gen_values(v, t, out, why);
	}
	if (json_object_object_get_ex(g, "witness", &v)) {
		static const char *const keys[] = {"witness", NULL};
		if (check_keys(g, keys, "witness", why) || gen_type(v, t, "witness", why)) {
			return -1;
		}
		struct witness w = witness_of(t);
		for (size_t k = 0; k < w.n; k++) {
			words_push(out, w.v[k]);
		}
		return 0;
	}
	if (json_object_object_get_ex(g, "fill", &v)) {
		static const char *const keys[] = {"fill", "count", NULL};
		int64_t n;
		uint32_t w;
		if (check_keys(g, keys, "fill", why) || gen_count(g, "count", "fill", &n, why) ||
			value_word(v, t, &w, why)) {
			return -1;
		}
		for (int64_t k = 0; k < n; k++) {
			words_push(out, w);
		}
		return 0;
	}
	if (json_object_object_get_ex(g, "iota", &v)) {
		return gen_type(v, t, "iota", why) ? -1 : gen_iota(g, t, out, why);
	}
	if (json_object_object_get_ex(g, "random", &v)) {
		return gen_type(v, t, "random", why) ? -1 : gen_random(g, t, out, why);
	}
	if (json_object_object_get_ex(g, "concat", &v)) {
		static const char *const keys[] = {"concat", NULL};
		if (check_keys(g, keys, "concat", why)) {
			return -1;
		}
		if (!json_object_is_type(v, json_type_array)) {
			set_why(why, "concat: expected an array of generators");
			return -1;
		}
		for (size_t k = 0; k < json_object_array_length(v); k++) {
			if (gen_eval(json_object_array_get_idx(v, k), t, out, depth + 1, why)) {
				return -1;
			}
			if (out->len > MAX_GEN_WORDS) {
				set_why(why, "concat: more than %" PRIu32 " values", MAX_GEN_WORDS);
				return -1;
			}
		}
		return 0;
	}
	if (json_object_object_get_ex(g, "repeat", &v)) {
		return gen_times(g, "repeat", t, out, depth, why);
	}
	if (json_object_object_get_ex(g, "stretch", &v)) {
		return gen_times(g, "stretch", t, out, depth, why);
	}
	set_why(why, "unknown generator %s", json_object_to_json_string(g));
	return -1;
}

/* ---- Cases ---- */

struct ulp_check {
	char op[16];
	double (*fn)(double);
	uint32_t input, output;
	double lo, hi, max;
};

struct corpus_case {
	char name[256];
	json_object *root; /* owned */
	struct vy_program *program;
	struct vy_binding_plan *plan;
	unsigned features;
	uint32_t subgroup_size; /* 0: the program uses no subgroup operation */
	struct words *inputs;   /* plan->n_inputs of them */
	struct vy_bytes *views;
	struct vy_spec_map spec;
	struct vy_dispatch_config config;
	json_object *expect_outputs; /* borrowed from root, or NULL */
	int expect_code;             /* expected error, or 0 */
	const char *expect_trap;     /* borrowed, or NULL */
	const char *expect_at;       /* borrowed, or NULL */
	struct ulp_check ulp[16];
	size_t n_ulp;
};

static void case_finish(struct corpus_case *k)
{
	if (k->inputs) {
		for (uint32_t i = 0; k->plan && i < k->plan->n_inputs; i++) {
			words_finish(&k->inputs[i]);
		}
	}
	free(k->inputs);
	free(k->views);
	vy_spec_map_finish(&k->spec);
	vy_binding_plan_destroy(k->plan);
	vy_program_destroy(k->program);
	json_object_put(k->root);
	memset(k, 0, sizeof(*k));
}

static const struct vy_buffer *output_buffer(const struct corpus_case *k, size_t o)
{
	return &k->program->buffers[k->plan->output_indices[o]];
}

static const struct vy_buffer *input_buffer(const struct corpus_case *k, size_t i)
{
	return &k->program->buffers[k->plan->input_indices[i]];
}

static int program_from_json(json_object *obj, struct vy_program **out, char *why)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	vy_json_pack(obj, &pk);
	struct vy_err err = {0};
	int rc = vy_program_decode(sb.data, sb.size, out, &err);
	msgpack_sbuffer_destroy(&sb);
	if (rc) {
		char buf[VY_ERR_MESSAGE_MAX + VY_ERR_FIX_MAX + VY_ERR_AT_MAX + 32];
		set_why(why, "program: %s", vy_err_format(&err, buf, sizeof(buf)));
		return -1;
	}
	return 0;
}

static bool find_spec_expr(const struct vy_expr *e, const char *name, enum vy_type *type)
{
	if (!e) {
		return false;
	}
	if (e->kind == VY_EXPR_SPEC && strcmp(e->name, name) == 0) {
		*type = e->type;
		return true;
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		if (find_spec_expr(e->args[i], name, type)) {
			return true;
		}
	}
	return false;
}

static bool find_spec(const struct vy_block *b, const char *name, enum vy_type *type)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		if (find_spec_expr(n->args[0], name, type) ||
			find_spec_expr(n->args[1], name, type) || find_spec(&n->body, name, type) ||
			find_spec(&n->orelse, name, type)) {
			return true;
		}
	}
	return false;
}

static int parse_axes(json_object *v, const char *what, uint32_t out[3], char *why)
{
	int64_t a[3];
	if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 3 ||
		!get_int(json_object_array_get_idx(v, 0), 1, UINT32_MAX, &a[0]) ||
		!get_int(json_object_array_get_idx(v, 1), 1, UINT32_MAX, &a[1]) ||
		!get_int(json_object_array_get_idx(v, 2), 1, UINT32_MAX, &a[2])) {
		set_why(why, "config.%s: expected three integers >= 1", what);
		return -1;
	}
	for (int i = 0; i < 3; i++) {
		out[i] = (uint32_t)a[i];
	}
	return 0;
}

static int parse_config(struct corpus_case *k, json_object *cfg, char *why)
{
	static const char *const keys[] = {
		"grid", "workgroup_size", "spec", "max_loop_iterations", NULL};
	if (!json_object_is_type(cfg, json_type_object)) {
		set_why(why, "config: expected an object");
		return -1;
	}
	if (check_keys(cfg, keys, "config", why)) {
		return -1;
	}
	json_object *v = NULL;
	if (json_object_object_get_ex(cfg, "grid", &v) &&
		parse_axes(v, "grid", k->config.grid, why)) {
		return -1;
	}
	if (json_object_object_get_ex(cfg, "workgroup_size", &v) &&
		parse_axes(v, "workgroup_size", k->config.workgroup_size, why)) {
		return -1;
	}
	if (json_object_object_get_ex(cfg, "max_loop_iterations", &v)) {
		int64_t n;
		if (!get_int(v, 1, INT64_MAX, &n)) {
			set_why(why, "config.max_loop_iterations: expected an integer >= 1");
			return -1;
		}
		k->config.max_loop_iterations = (uint64_t)n;
	}
	if (json_object_object_get_ex(cfg, "spec", &v)) {
		if (!json_object_is_type(v, json_type_object)) {
			set_why(why, "config.spec: expected an object of name: value");
			return -1;
		}
		json_object_object_foreach(v, name, val)
		{
			enum vy_type type;
			uint32_t w;
			if (!find_spec(&k->program->entry, name, &type)) {
				set_why(why, "config.spec: the program has no spec constant '%s'",
					name);
				return -1;
			}
			if (value_word(val, type, &w, why)) {
				return -1;
			}
			struct vy_spec_value sv = type == VY_TYPE_U32   ? vy_spec_u32(w)
						  : type == VY_TYPE_I32 ? vy_spec_i32((int32_t)w)
						  : type == VY_TYPE_F32 ? vy_spec_f32(f32_of(w))
									: vy_spec_bool(w != 0);
			vy_spec_map_insert(&k->spec, name, sv);
		}
		k->config.spec = &k->spec;
	}
	return 0;
}

static int parse_inputs(struct corpus_case *k, json_object *inputs, char *why)
{
	uint32_t n = k->plan->n_inputs;
	if (inputs && !json_object_is_type(inputs, json_type_array)) {
		set_why(why, "inputs: expected an array of generators");
		return -1;
	}
	size_t given = inputs ? json_object_array_length(inputs) : 0;
	if (given != n) {
		set_why(why, "inputs: the program takes %" PRIu32 " inputs, the case gives %zu", n,
			given);
		return -1;
	}
	k->inputs = xcalloc(n, sizeof(*k->inputs));
	k->views = xcalloc(n, sizeof(*k->views));
	for (uint32_t i = 0; i < n; i++) {
		const struct vy_buffer *b = input_buffer(k, i);
		char inner[WHY_MAX];
		if (gen_eval(json_object_array_get_idx(inputs, i), b->type, &k->inputs[i], 0,
			    inner)) {
			set_why(why, "inputs[%" PRIu32 "] (%s): %s", i, b->name, inner);
			return -1;
		}
		if (b->count != 0 && k->inputs[i].len != b->count) {
			set_why(why,
				"inputs[%" PRIu32 "] (%s): %zu values for a buffer of %" PRIu32, i,
				b->name, k->inputs[i].len, b->count);
			return -1;
		}
		/* Buffers are little-endian words; convert in place on a big-endian host. */
		for (size_t w = 0; w < k->inputs[i].len; w++) {
			uint32_t x = k->inputs[i].v[w];
			uint8_t *p = (uint8_t *)&k->inputs[i].v[w];
			p[0] = (uint8_t)x;
			p[1] = (uint8_t)(x >> 8);
			p[2] = (uint8_t)(x >> 16);
			p[3] = (uint8_t)(x >> 24);
		}
		k->views[i] =
			(struct vy_bytes){(const uint8_t *)k->inputs[i].v, k->inputs[i].len * 4};
	}
	return 0;
}

static double recip(double x)
{
	return 1.0 / x;
}

static double rsqrt(double x)
{
	return 1.0 / sqrt(x);
}

static const struct {
	const char *op;
	double (*fn)(double);
} libm_fns[] = {{"exp", exp}, {"exp2", exp2}, {"log", log}, {"log2", log2}, {"sin", sin},
	{"cos", cos}, {"tan", tan}, {"asin", asin}, {"acos", acos}, {"atan", atan}, {"sinh", sinh},
	{"cosh", cosh}, {"tanh", tanh}, {"reciprocal", recip}, {"inverse_sqrt", rsqrt}};

static int parse_ulp(struct corpus_case *k, json_object *list, char *why)
{
	static const char *const keys[] = {"op", "input", "output", "domain", "max", NULL};
	size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
	if (n == 0 || n > sizeof(k->ulp) / sizeof(k->ulp[0])) {
		set_why(why, "ulp: expected an array of 1 to 16 checks");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i), *v = NULL;
		struct ulp_check *u = &k->ulp[k->n_ulp++];
		int64_t in, out;
		if (!json_object_is_type(c, json_type_object) || check_keys(c, keys, "ulp", why)) {
			if (!why[0]) {
				set_why(why, "ulp[%zu]: expected an object", i);
			}
			return -1;
		}
		json_object_object_get_ex(c, "op", &v);
		const char *op = v && json_object_is_type(v, json_type_string)
					 ? json_object_get_string(v)
					 : "";
		for (size_t f = 0; f < sizeof(libm_fns) / sizeof(libm_fns[0]); f++) {
			if (strcmp(op, libm_fns[f].op) == 0) {
				u->fn = libm_fns[f].fn;
				snprintf(u->op, sizeof(u->op), "%s", op);
			}
		}
		json_object *in_o = NULL, *out_o = NULL, *dom = NULL, *max = NULL;
		json_object_object_get_ex(c, "input", &in_o);
		json_object_object_get_ex(c, "output", &out_o);
		json_object_object_get_ex(c, "domain", &dom);
		json_object_object_get_ex(c, "max", &max);
		if (!u->fn || !get_int(in_o, 0, (int64_t)k->plan->n_inputs - 1, &in) ||
			!get_int(out_o, 0, (int64_t)k->plan->n_outputs - 1, &out) ||
			!json_object_is_type(dom, json_type_array) ||
			json_object_array_length(dom) != 2 ||
			!get_number(json_object_array_get_idx(dom, 0), &u->lo) ||
			!get_number(json_object_array_get_idx(dom, 1), &u->hi) ||
			!get_number(max, &u->max)) {
			set_why(why,
				"ulp[%zu]: needs a known op, an input and an output index of the "
				"program, a domain [lo, hi] and a max",
				i);
			return -1;
		}
		u->input = (uint32_t)in;
		u->output = (uint32_t)out;
		if (input_buffer(k, u->input)->type != VY_TYPE_F32 ||
			output_buffer(k, u->output)->type != VY_TYPE_F32) {
			set_why(why, "ulp[%zu]: input and output must be f32 buffers", i);
			return -1;
		}
	}
	return 0;
}

static int parse_expect(struct corpus_case *k, json_object *e, char *why)
{
	static const char *const out_keys[] = {"outputs", "source", NULL};
	static const char *const err_keys[] = {"error", "trap", "at", NULL};
	json_object *v = NULL;
	if (!json_object_is_type(e, json_type_object)) {
		set_why(why, "expect: expected an object");
		return -1;
	}
	if (json_object_object_get_ex(e, "error", &v)) {
		if (check_keys(e, err_keys, "expect", why)) {
			return -1;
		}
		const char *name =
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		k->expect_code = vy_err_from_name(name);
		if (k->expect_code == 0) {
			set_why(why, "expect.error: unknown error code %s",
				json_object_to_json_string(v));
			return -1;
		}
		if (json_object_object_get_ex(e, "trap", &v)) {
			k->expect_trap = json_object_get_string(v);
		}
		if (json_object_object_get_ex(e, "at", &v)) {
			k->expect_at = json_object_get_string(v);
		}
		return 0;
	}
	if (check_keys(e, out_keys, "expect", why)) {
		return -1;
	}
	if (!json_object_object_get_ex(e, "outputs", &v) ||
		!json_object_is_type(v, json_type_array) ||
		json_object_array_length(v) != k->plan->n_outputs) {
		set_why(why,
			"expect.outputs: expected an array of %" PRIu32 " outputs (null for one "
			"that is not checked)",
			k->plan->n_outputs);
		return -1;
	}
	k->expect_outputs = v;
	return 0;
}

/* Parse a JSON file; on failure `why` names the line and column of the syntax error. */
static json_object *parse_file(const char *path, char *why)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		set_why(why, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	char *text = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			text = realloc(text, cap);
			if (!text) {
				fprintf(stderr, "conformance: out of memory\n");
				abort();
			}
		}
		size_t n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			break;
		}
	}
	bool failed = ferror(f) != 0;
	fclose(f);
	if (failed) {
		free(text);
		set_why(why, "cannot read %s", path);
		return NULL;
	}
	struct json_tokener *tok = json_tokener_new();
	json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	while (end < len && isspace((unsigned char)text[end])) {
		end++;
	}
	if (!obj || jerr != json_tokener_success || end != len) {
		size_t line = 1, col = 1;
		for (size_t i = 0; i < end && i < len; i++) {
			line += text[i] == '\n';
			col = text[i] == '\n' ? 1 : col + 1;
		}
		set_why(why, "JSON syntax error at line %zu, column %zu: %s", line, col,
			jerr == json_tokener_continue || jerr == json_tokener_success
				? "the document is incomplete or followed by more text"
				: json_tokener_error_desc(jerr));
		json_object_put(obj);
		obj = NULL;
	}
	json_tokener_free(tok);
	free(text);
	return obj;
}

/* Load and check one case file; on failure `why` says what is wrong with it. */
static int case_load(struct corpus_case *k, const char *path, char *why)
{
	static const char *const keys[] = {
		"notes", "subgroup_size", "program", "config", "inputs", "expect", "ulp", NULL};
	k->root = parse_file(path, why);
	if (!k->root) {
		return -1;
	}
	if (!json_object_is_type(k->root, json_type_object) ||
		check_keys(k->root, keys, "case", why)) {
		if (!why[0]) {
			set_why(why, "a case is a JSON object");
		}
		return -1;
	}
	json_object *v = NULL;
	if (!json_object_object_get_ex(k->root, "notes", &v) ||
		!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) {
		set_why(why, "notes: say what the case checks");
		return -1;
	}
	if (!json_object_object_get_ex(k->root, "program", &v) ||
		program_from_json(v, &k->program, why)) {
		if (!why[0]) {
			set_why(why, "program: missing");
		}
		return -1;
	}
	struct vy_err err = {0};
	char buf[VY_ERR_MESSAGE_MAX + VY_ERR_FIX_MAX + VY_ERR_AT_MAX + 32];
	if (vy_validate_first(k->program, NULL, &err) ||
		vy_binding_plan_build(k->program, &k->plan, &err)) {
		set_why(why, "program: %s", vy_err_format(&err, buf, sizeof(buf)));
		return -1;
	}
	k->features = vy_launch_features_scan(k->program);
	bool subgroups = (k->features & VY_LAUNCH_USES_SUBGROUPS) != 0;
	if (json_object_object_get_ex(k->root, "subgroup_size", &v)) {
		int64_t s;
		if (!get_int(v, 1, 128, &s) || (s & (s - 1)) != 0) {
			set_why(why, "subgroup_size: expected a power of two from 1 to 128");
			return -1;
		}
		k->subgroup_size = (uint32_t)s;
	}
	if (subgroups != (k->subgroup_size != 0)) {
		set_why(why, subgroups ? "the program uses subgroup operations: name the subgroup "
					 "size its results assume (subgroup_size)"
				       : "subgroup_size given, but the program uses no subgroup "
					 "operation");
		return -1;
	}
	if (json_object_object_get_ex(k->root, "config", &v) && parse_config(k, v, why)) {
		return -1;
	}
	v = NULL;
	json_object_object_get_ex(k->root, "inputs", &v);
	if (parse_inputs(k, v, why)) {
		return -1;
	}
	if (json_object_object_get_ex(k->root, "expect", &v) && parse_expect(k, v, why)) {
		return -1;
	}
	if (json_object_object_get_ex(k->root, "ulp", &v) && parse_ulp(k, v, why)) {
		return -1;
	}
	return 0;
}

/* ---- Backends and results ---- */

struct target {
	struct vy_backend *backend; /* owned */
	char label[48];
	uint32_t subgroup_size;
	double seconds; /* spent in dispatches, over the corpus */
};

struct result {
	int rc;
	struct vy_err err;
	struct vy_outputs outputs;
	double ms; /* wall time of the dispatch */
};

struct ulp_row {
	char op[16];
	double worst;
	float worst_at;
	double max;
	uint64_t points;
};

struct runner {
	size_t n_filters;
	const char *filters[MAX_FILTERS];
	size_t n_only;
	const char *only[VY_REGISTRY_MAX];
	struct target oracles[MAX_ORACLES];
	size_t n_oracles;
	struct target others[VY_REGISTRY_MAX];
	size_t n_others;
	struct ulp_row ulp[MAX_ULP_ROWS];
	size_t n_ulp;
	size_t cases, runs, passed, failed, skipped;
	size_t checked_outputs, checked_errors, broken_cases;
	char skips[MAX_SKIPS][160]; /* "case on backend: why", printed again in the summary */
};

static void report(struct runner *r, const char *status, const char *name, const char *label,
	const struct result *res, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* One line per case and backend; `res` gives the run time, NULL when nothing ran. */
static void report(struct runner *r, const char *status, const char *name, const char *label,
	const struct result *res, const char *fmt, ...)
{
	char detail[2048], took[32] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (res) {
		snprintf(took, sizeof(took), "%.1f ms", res->ms);
	}
	printf("%-4s  %-40s %-16s %10s  %s\n", status, name, label, took, detail);
	fflush(stdout);
	if (strcmp(status, "PASS") == 0) {
		r->passed++;
	} else if (strcmp(status, "SKIP") == 0) {
		if (r->skipped < MAX_SKIPS) {
			snprintf(r->skips[r->skipped], sizeof(r->skips[0]), "%.48s on %.24s: %.80s",
				name, label, detail);
		}
		r->skipped++;
	} else {
		r->failed++;
	}
}

/* The reference at this subgroup size, opened through the registry on first use. */
static struct target *oracle_for(struct runner *r, uint32_t subgroup_size, char *why)
{
	for (size_t i = 0; i < r->n_oracles; i++) {
		if (r->oracles[i].subgroup_size == subgroup_size) {
			return &r->oracles[i];
		}
	}
	if (r->n_oracles == MAX_ORACLES) {
		set_why(why, "too many subgroup sizes in one corpus (at most %d)", MAX_ORACLES);
		return NULL;
	}
	struct vy_registry_options opts = {.subgroup_size = subgroup_size};
	struct vy_err err = {0};
	struct target *t = &r->oracles[r->n_oracles];
	if (vy_registry_open(VY_REFERENCE_ID, &opts, &t->backend, &err)) {
		set_why(why, "cannot open the reference at subgroup size %" PRIu32 ": %s",
			subgroup_size, err.message);
		return NULL;
	}
	t->subgroup_size = subgroup_size;
	snprintf(t->label, sizeof(t->label), "reference/sg%" PRIu32, subgroup_size);
	r->n_oracles++;
	return t;
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_case(
	struct runner *r, const struct corpus_case *k, struct target *t, struct result *res)
{
	vy_outputs_init(&res->outputs);
	memset(&res->err, 0, sizeof(res->err));
	double start = now_seconds();
	res->rc = vy_backend_dispatch(t->backend, k->program, k->views, k->plan->n_inputs,
		&k->config, &res->outputs, &res->err);
	double took = now_seconds() - start;
	res->ms = took * 1000.0;
	t->seconds += took;
	r->runs++;
}

/* The trap kind a TRAP message names, or "". */
static const char *trap_kind_in(const char *message)
{
	for (int i = 0; i < VY_TRAP_KIND_COUNT; i++) {
		const char *kind = vy_trap_kind_name((enum vy_trap_kind)i);
		if (strstr(message, kind)) {
			return kind;
		}
	}
	return "";
}

static void describe_error(const struct result *res, char *buf, size_t size)
{
	snprintf(buf, size, "%s: %s%s%s%s", vy_err_name(res->rc), res->err.message,
		res->err.at[0] ? " (at " : "", res->err.at, res->err.at[0] ? ")" : "");
}

/* Compare one output's bytes with expected words; describe the first difference in `why`. */
static bool same_words(const struct corpus_case *k, size_t o, const uint8_t *got, size_t got_len,
	const uint32_t *want, size_t want_len, const char *got_name, const char *want_name,
	char *why)
{
	const struct vy_buffer *b = output_buffer(k, o);
	if (got_len != want_len * 4) {
		set_why(why, "output %zu (%s): %s has %zu bytes, %s %zu", o, b->name, got_name,
			got_len, want_name, want_len * 4);
		return false;
	}
	for (size_t i = 0; i < want_len; i++) {
		uint32_t g = word_at(got + 4 * i);
		if (g != want[i]) {
			char gs[64], ws[64];
			show_word(g, b->type, gs, sizeof(gs));
			show_word(want[i], b->type, ws, sizeof(ws));
			set_why(why, "output %zu (%s, %s) element %zu: %s %s, %s %s", o, b->name,
				vy_type_name(b->type), i, got_name, gs, want_name, ws);
			return false;
		}
	}
	return true;
}

/* The reference's result against the case's written expectation. */
static bool check_expectation(
	struct runner *r, const struct corpus_case *k, const struct result *res, char *why)
{
	char err_text[VY_ERR_MESSAGE_MAX + VY_ERR_AT_MAX + 64];
	if (k->expect_code) {
		if (res->rc == 0) {
			set_why(why, "expected %s%s%s, but the dispatch succeeded",
				vy_err_name(k->expect_code), k->expect_trap ? " " : "",
				k->expect_trap ? k->expect_trap : "");
			return false;
		}
		describe_error(res, err_text, sizeof(err_text));
		if (res->rc != k->expect_code ||
			(k->expect_trap && !strstr(res->err.message, k->expect_trap)) ||
			(k->expect_at && strcmp(res->err.at, k->expect_at) != 0)) {
			set_why(why, "expected %s%s%s%s%s, got %s", vy_err_name(k->expect_code),
				k->expect_trap ? " " : "", k->expect_trap ? k->expect_trap : "",
				k->expect_at ? " at " : "", k->expect_at ? k->expect_at : "",
				err_text);
			return false;
		}
		r->checked_errors++;
		set_why(why, "%s as expected", err_text);
		return true;
	}
	if (res->rc) {
		describe_error(res, err_text, sizeof(err_text));
		set_why(why, "%s", err_text);
		return false;
	}
	if (res->outputs.len != k->plan->n_outputs) {
		set_why(why, "%zu outputs, the program has %" PRIu32, res->outputs.len,
			k->plan->n_outputs);
		return false;
	}
	if (!k->expect_outputs) {
		set_why(why, "ran (no written expectation)");
		return true;
	}
	size_t n_checked = 0, words = 0;
	for (size_t o = 0; o < k->plan->n_outputs; o++) {
		json_object *e = json_object_array_get_idx(k->expect_outputs, o);
		if (!e) {
			continue;
		}
		struct words want = {0};
		char inner[WHY_MAX];
		if (gen_eval(e, output_buffer(k, o)->type, &want, 0, inner)) {
			set_why(why, "expect.outputs[%zu]: %s", o, inner);
			words_finish(&want);
			return false;
		}
		bool same = same_words(k, o, res->outputs.items[o].data, res->outputs.items[o].len,
			want.v, want.len, "got", "expected", why);
		words += want.len;
		words_finish(&want);
		if (!same) {
			return false;
		}
		n_checked++;
	}
	r->checked_outputs++;
	set_why(why, "%zu of %" PRIu32 " outputs match the expectation (%zu values)", n_checked,
		k->plan->n_outputs, words);
	return true;
}

static struct ulp_row *ulp_row(struct runner *r, const char *op, double max)
{
	for (size_t i = 0; i < r->n_ulp; i++) {
		if (strcmp(r->ulp[i].op, op) == 0) {
			return &r->ulp[i];
		}
	}
	if (r->n_ulp == MAX_ULP_ROWS) {
		return NULL;
	}
	struct ulp_row *row = &r->ulp[r->n_ulp++];
	memset(row, 0, sizeof(*row));
	snprintf(row->op, sizeof(row->op), "%s", op);
	row->max = max;
	return row;
}

/*
 * Error of one f32 result against the exact value, in units of the f32 spacing at the exact
 * value (2^(e - 23) with e its binary exponent, at least -126).
 */
static double ulp_error(float got, double exact)
{
	if (isnan(got)) {
		return INFINITY;
	}
	int e = exact == 0 ? -126 : ilogb(exact);
	double unit = ldexp(1.0, (e < -126 ? -126 : e) - 23);
	return fabs((double)got - exact) / unit;
}

/* Measure the lowered functions of the case; false when one exceeds its maximum. */
static bool check_ulp(
	struct runner *r, const struct corpus_case *k, const struct result *res, char *why)
{
	bool ok = true;
	char line[WHY_MAX] = "";
	size_t used = 0;
	for (size_t c = 0; c < k->n_ulp; c++) {
		const struct ulp_check *u = &k->ulp[c];
		const struct words *in = &k->inputs[u->input];
		const struct vy_output *out = &res->outputs.items[u->output];
		struct ulp_row *row = ulp_row(r, u->op, u->max);
		double worst = 0;
		float worst_at = 0;
		uint64_t points = 0;
		for (size_t i = 0; i < in->len && 4 * i + 4 <= out->len; i++) {
			float x = f32_loaded(word_at((const uint8_t *)&in->v[i]));
			if (!(x >= u->lo && x <= u->hi)) {
				continue;
			}
			double exact = u->fn((double)x);
			/* Results beyond the f32 range, or in the flushed subnormal range, have no
			 * meaningful ULP error. */
			if (!isfinite(exact) || fabs(exact) > FLT_MAX ||
				(exact != 0 && fabs(exact) < FLT_MIN)) {
				continue;
			}
			double e = ulp_error(f32_of(word_at(out->data + 4 * i)), exact);
			points++;
			if (e > worst || (isinf(e) && !isinf(worst))) {
				worst = e;
				worst_at = x;
			}
		}
		if (row) {
			row->points += points;
			if (worst > row->worst) {
				row->worst = worst;
				row->worst_at = worst_at;
			}
		}
		if (worst > u->max) {
			ok = false;
		}
		if (used < sizeof(line)) {
			int n = snprintf(line + used, sizeof(line) - used, "%s%s %.2f ulp",
				c ? ", " : "", u->op, worst);
			used += n > 0 ? (size_t)n : 0;
		}
	}
	set_why(why, "%s%s", ok ? "" : "over the maximum: ", line);
	return ok;
}

/* Another backend's result against the reference's, byte for byte (or the same error). */
static bool same_as_reference(const struct corpus_case *k, const struct result *ref,
	const struct result *res, const char *label, char *why)
{
	char a[VY_ERR_MESSAGE_MAX + VY_ERR_AT_MAX + 64], b[VY_ERR_MESSAGE_MAX + VY_ERR_AT_MAX + 64];
	if (ref->rc || res->rc) {
		if (ref->rc == 0 || res->rc == 0) {
			describe_error(ref->rc ? ref : res, a, sizeof(a));
			set_why(why, "%s failed and %s succeeded: %s",
				ref->rc ? "reference" : label, ref->rc ? label : "reference", a);
			return false;
		}
		describe_error(ref, a, sizeof(a));
		describe_error(res, b, sizeof(b));
		if (ref->rc != res->rc || strcmp(ref->err.at, res->err.at) != 0 ||
			strcmp(trap_kind_in(ref->err.message), trap_kind_in(res->err.message)) !=
				0) {
			set_why(why, "reference %s; %s %s", a, label, b);
			return false;
		}
		set_why(why, "same error as the reference: %s", b);
		return true;
	}
	if (res->outputs.len != ref->outputs.len) {
		set_why(why, "%zu outputs, the reference %zu", res->outputs.len, ref->outputs.len);
		return false;
	}
	for (size_t o = 0; o < ref->outputs.len; o++) {
		const struct vy_output *ro = &ref->outputs.items[o];
		struct words want = {0};
		for (size_t i = 0; i + 4 <= ro->len; i += 4) {
			words_push(&want, word_at(ro->data + i));
		}
		bool same = same_words(k, o, res->outputs.items[o].data, res->outputs.items[o].len,
			want.v, want.len, label, "reference", why);
		words_finish(&want);
		if (!same) {
			return false;
		}
	}
	set_why(why, "identical to the reference (%zu outputs)", ref->outputs.len);
	return true;
}

static bool selected(const struct runner *r, const char *name)
{
	if (r->n_filters == 0) {
		return true;
	}
	for (size_t i = 0; i < r->n_filters; i++) {
		if (strstr(name, r->filters[i])) {
			return true;
		}
	}
	return false;
}

static void run_one(struct runner *r, const char *dir, const char *file)
{
	char path[4096], why[WHY_MAX] = "";
	struct corpus_case k = {0};
	snprintf(k.name, sizeof(k.name), "%.*s", (int)(strlen(file) - 5), file);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	r->cases++;
	vy_spec_map_init(&k.spec);
	if (case_load(&k, path, why)) {
		r->broken_cases++;
		report(r, "FAIL", k.name, "(case)", NULL, "%s", why);
		case_finish(&k);
		return;
	}
	uint32_t sg = k.subgroup_size ? k.subgroup_size : VY_REFERENCE_DEFAULT_SUBGROUP_SIZE;
	struct target *oracle = oracle_for(r, sg, why);
	if (!oracle) {
		report(r, "FAIL", k.name, "reference", NULL, "%s", why);
		case_finish(&k);
		return;
	}
	struct result ref;
	run_case(r, &k, oracle, &ref);
	bool ok = check_expectation(r, &k, &ref, why);
	if (ok && k.n_ulp && ref.rc == 0) {
		char detail[WHY_MAX];
		memcpy(detail, why, sizeof(detail));
		ok = check_ulp(r, &k, &ref, why);
		if (ok) {
			char both[WHY_MAX];
			snprintf(both, sizeof(both), "%.200s; %.300s", detail, why);
			memcpy(why, both, sizeof(both));
		}
	}
	report(r, ok ? "PASS" : "FAIL", k.name, oracle->label, &ref, "%s", why);
	if (!ok) {
		json_object *notes = NULL;
		json_object_object_get_ex(k.root, "notes", &notes);
		printf("      the case checks: %s\n", json_object_get_string(notes));
	}
	if (!k.subgroup_size) {
		/* Without subgroup operations the simulated subgroup size must not matter. */
		struct target *alt = oracle_for(r, OTHER_SUBGROUP_SIZE, why);
		if (!alt) {
			report(r, "FAIL", k.name, "reference", NULL, "%s", why);
		} else {
			struct result res;
			run_case(r, &k, alt, &res);
			bool same = same_as_reference(&k, &ref, &res, alt->label, why);
			report(r, same ? "PASS" : "FAIL", k.name, alt->label, &res, "%s", why);
			vy_outputs_finish(&res.outputs);
		}
	}
	for (size_t i = 0; i < r->n_others; i++) {
		struct target *t = &r->others[i];
		if (k.subgroup_size && t->subgroup_size != k.subgroup_size) {
			report(r, "SKIP", k.name, t->label, NULL,
				"assumes subgroup size %" PRIu32 ", the backend has %" PRIu32,
				k.subgroup_size, t->subgroup_size);
			continue;
		}
		struct result res;
		run_case(r, &k, t, &res);
		if (res.rc == VY_E_UNSUPPORTED_FEATURE && ref.rc == 0) {
			report(r, "SKIP", k.name, t->label, &res, "unsupported: %s",
				res.err.message);
		} else {
			bool same = same_as_reference(&k, &ref, &res, t->label, why);
			report(r, same ? "PASS" : "FAIL", k.name, t->label, &res, "%s", why);
		}
		vy_outputs_finish(&res.outputs);
	}
	vy_outputs_finish(&ref.outputs);
	case_finish(&k);
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.json files of `dir`, sorted; the caller frees each name and the list. */
static char **list_cases(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d) {
		return NULL;
	}
	size_t cap = 128;
	char **names = xcalloc(cap, sizeof(*names));
	*n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0) {
			continue;
		}
		if (*n == cap) {
			cap *= 2;
			names = realloc(names, cap * sizeof(*names));
			if (!names) {
				fprintf(stderr, "conformance: out of memory\n");
				abort();
			}
		}
		names[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, *n, sizeof(*names), compare_names);
	return names;
}

/* Open the backends to compare with the reference: every compiled-in one but the reference. */
static void open_others(struct runner *r)
{
	struct vy_registry_set set;
	vy_registry_open_all(NULL, &set);
	vy_test_keep_vulkan_drivers();
	for (size_t i = 0; i < set.len; i++) {
		struct vy_registry_opened *o = &set.items[i];
		bool wanted = r->n_only == 0;
		for (size_t j = 0; j < r->n_only; j++) {
			wanted = wanted || strcmp(r->only[j], o->entry->id) == 0;
		}
		if (strcmp(o->entry->id, VY_REFERENCE_ID) == 0 || !wanted) {
			continue;
		}
		if (!o->backend) {
			printf("note: backend %s is compiled in but did not open: %s\n",
				o->entry->id, o->err.message);
			continue;
		}
		struct target *t = &r->others[r->n_others++];
		t->backend = o->backend;
		o->backend = NULL;
		t->subgroup_size = vy_backend_subgroup_size(t->backend);
		snprintf(t->label, sizeof(t->label), "%s", o->entry->id);
	}
	vy_registry_set_finish(&set);
}

/*
 * With VYRED_VULKAN_VALIDATION=1 the Vulkan backend runs under VK_LAYER_KHRONOS_validation and
 * checks every generated module with spirv-val; any message it collected fails the run.
 */
static int check_validation(void)
{
#ifdef VY_HAVE_VULKAN
	char text[4096];
	uint64_t n = vy_vulkan_validation_messages(text, sizeof(text));
	const char *on = getenv("VYRED_VULKAN_VALIDATION");
	printf("vulkan validation: %s, %" PRIu64 " message%s\n",
		on && strcmp(on, "1") == 0 ? "on" : "off", n, n == 1 ? "" : "s");
	if (n) {
		printf("%s\n", text);
		return 1;
	}
#endif
	return 0;
}

/*
 * The backend compared with the reference must have opened: VYRED_TEST_EXPECT_BACKEND names it
 * ("vulkan" when unset; "reference" on a machine known to have no other). Without it the run
 * would check the reference against itself alone and still pass.
 */
static int check_expected_backend(const struct runner *r)
{
	const char *want = getenv("VYRED_TEST_EXPECT_BACKEND");
	want = want && *want ? want : "vulkan";
	if (strcmp(want, VY_REFERENCE_ID) == 0) {
		if (r->n_others == 0) {
			printf("note: no backend was compared with the reference "
			       "(VYRED_TEST_EXPECT_BACKEND=reference)\n");
		}
		return 0;
	}
	bool wanted = r->n_only == 0;
	for (size_t j = 0; j < r->n_only; j++) {
		wanted = wanted || strcmp(r->only[j], want) == 0;
	}
	for (size_t i = 0; i < r->n_others; i++) {
		if (strcmp(r->others[i].label, want) == 0) {
			return 0;
		}
	}
	if (!wanted) {
		return 0;
	}
	printf("FAIL  the %s backend did not open, so no case was compared with the reference. "
	       "Fix: install a driver for it (mesa-vulkan-drivers gives lavapipe), or set "
	       "VYRED_TEST_EXPECT_BACKEND=reference on a machine that has none\n",
		want);
	return 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: conformance [--backend ID]... CORPUS_DIR [FILTER]...\n");
}

int main(int argc, char **argv)
{
	static struct runner r;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
			if (!vy_registry_find(argv[i + 1])) {
				fprintf(stderr, "conformance: no backend '%s' in this build\n",
					argv[i + 1]);
				return 2;
			}
			if (r.n_only < VY_REGISTRY_MAX) {
				r.only[r.n_only++] = argv[i + 1];
			}
			i++;
		} else if (argv[i][0] == '-') {
			usage();
			return 2;
		} else if (!dir) {
			dir = argv[i];
		} else if (r.n_filters < MAX_FILTERS) {
			r.filters[r.n_filters++] = argv[i];
		}
	}
	if (!dir) {
		usage();
		return 2;
	}
	size_t n_files = 0;
	char **files = list_cases(dir, &n_files);
	if (!files) {
		fprintf(stderr, "conformance: cannot read %s: %s\n", dir, strerror(errno));
		return 2;
	}
	open_others(&r);
	for (size_t i = 0; i < n_files; i++) {
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(strlen(files[i]) - 5), files[i]);
		if (selected(&r, name)) {
			run_one(&r, dir, files[i]);
		}
		free(files[i]);
	}
	free(files);

	if (r.n_ulp) {
		printf("\nworst ULP error of the lowered functions against libm (double):\n");
		printf("  %-14s %10s %16s %8s %6s\n", "op", "worst", "at", "points", "max");
		for (size_t i = 0; i < r.n_ulp; i++) {
			struct ulp_row *row = &r.ulp[i];
			printf("  %-14s %10.3f %16.9g %8" PRIu64 " %6.1f%s\n", row->op, row->worst,
				(double)row->worst_at, row->points, row->max,
				row->worst > row->max ? "  OVER" : "");
		}
	}
	printf("\nconformance: %zu cases (%zu unreadable), %zu runs: %zu passed, %zu failed, "
	       "%zu skipped; %zu cases checked against written outputs, %zu against written "
	       "errors; backends:",
		r.cases, r.broken_cases, r.runs, r.passed, r.failed, r.skipped, r.checked_outputs,
		r.checked_errors);
	for (size_t i = 0; i < r.n_oracles; i++) {
		printf(" %s (%.2f s)", r.oracles[i].label, r.oracles[i].seconds);
	}
	for (size_t i = 0; i < r.n_others; i++) {
		printf(" %s (%.2f s)", r.others[i].label, r.others[i].seconds);
	}
	printf("\n");
	/* Every run that did not happen, by name: a skip is never hidden inside the OK. */
	for (size_t i = 0; i < r.skipped && i < MAX_SKIPS; i++) {
		printf("skipped: %s\n", r.skips[i]);
	}
	int missing = check_expected_backend(&r);
	int validation = check_validation();
	for (size_t i = 0; i < r.n_oracles; i++) {
		vy_backend_destroy(r.oracles[i].backend);
	}
	for (size_t i = 0; i < r.n_others; i++) {
		vy_backend_destroy(r.others[i].backend);
	}
	if (r.cases == 0) {
		fprintf(stderr, "conformance: no case in %s matches the filters\n", dir);
		return 1;
	}
	return r.failed || validation || missing ? 1 : 0;
}
