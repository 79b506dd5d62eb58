/*
 * Test support: the cases of the conformance corpus (tests/conformance/README.md gives the format)
 * and the comparison of a backend's results with the reference's. The conformance runner loads
 * its corpus with it, and the differential fuzzer (tests/difffuzz) runs each program it generates
 * as a case built in memory, so the case it prints for a mismatch is exactly what ran.
 */
#include "case.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "json.h"
#include "launch.h"
#include "node_path.h"
#include "validate.h"
#ifdef VY_HAVE_VULKAN
#include "vulkan/vulkan.h"
#endif

#define MAX_GEN_DEPTH 16
#define MAX_GEN_WORDS (UINT32_C(1) << 24)

/* ---- Small utilities ---- */

void *vy_test_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		fprintf(stderr, "tests: out of memory\n");
		abort();
	}
	return p;
}

void vy_test_words_push(struct vy_test_words *w, uint32_t x)
{
	if (w->len == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->v = realloc(w->v, w->cap * sizeof(*w->v));
		if (!w->v) {
			fprintf(stderr, "tests: out of memory\n");
			abort();
		}
	}
	w->v[w->len++] = x;
}

void vy_test_words_finish(struct vy_test_words *w)
{
	free(w->v);
	memset(w, 0, sizeof(*w));
}

float vy_test_f32_of(uint32_t bits)
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
float vy_test_f32_loaded(uint32_t bits)
{
	if ((bits & 0x7F800000u) == 0) {
		bits &= 0x80000000u;
	}
	return vy_test_f32_of(bits);
}

uint32_t vy_test_word_at(const uint8_t *p)
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
		snprintf(buf, size, "0x%08" PRIx32 " (%.9g)", w, (double)vy_test_f32_of(w));
		break;
	default:
		snprintf(buf, size, "0x%08" PRIx32 " (%s)", w, w ? "true" : "false");
		break;
	}
}

void vy_test_why(char *why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, VY_TEST_WHY_MAX, fmt, ap);
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
			vy_test_why(why, "%s: unknown field '%s'", where, key);
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
		vy_test_why(why, "value \"%s\" is not a %s (write \"0x\" and up to 8 hex digits%s)",
			s, vy_type_name(t),
			t == VY_TYPE_F32 ? ", \"nan\", \"inf\", \"-inf\" or \"-0\"" : "");
		return -1;
	}
	if (json_object_is_type(v, json_type_boolean)) {
		if (t != VY_TYPE_BOOL) {
			vy_test_why(why, "true/false given for a %s value", vy_type_name(t));
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
	vy_test_why(why, "value %s is not a %s", json_object_to_json_string(v), vy_type_name(t));
	return -1;
}

static int gen_eval(
	json_object *g, enum vy_type t, struct vy_test_words *out, int depth, char *why);

static int gen_values(json_object *list, enum vy_type t, struct vy_test_words *out, char *why)
{
	size_t n = json_object_array_length(list);
	for (size_t k = 0; k < n; k++) {
		uint32_t w;
		if (value_word(json_object_array_get_idx(list, k), t, &w, why)) {
			return -1;
		}
		vy_test_words_push(out, w);
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
		vy_test_why(why, "%s: unknown type %s", kind, json_object_to_json_string(name));
		return -1;
	}
	if ((enum vy_type)named != t) {
		vy_test_why(
			why, "%s generates %s values for a %s buffer", kind, s, vy_type_name(t));
		return -1;
	}
	return 0;
}

static int gen_count(json_object *g, const char *key, const char *kind, int64_t *n, char *why)
{
	json_object *c = NULL;
	json_object_object_get_ex(g, key, &c);
	if (!get_int(c, 0, MAX_GEN_WORDS, n)) {
		vy_test_why(why, "%s: '%s' must be an integer from 0 to %" PRIu32, kind, key,
			MAX_GEN_WORDS);
		return -1;
	}
	return 0;
}

static int gen_random(json_object *g, enum vy_type t, struct vy_test_words *out, char *why)
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
		vy_test_why(why, "random: 'seed' must be a non-negative integer");
		return -1;
	}
	if (!lo != !hi || (lo && t == VY_TYPE_BOOL)) {
		vy_test_why(why, "random: give both 'min' and 'max' (not for bool), or neither");
		return -1;
	}
	uint64_t state = (uint64_t)s;
	double dlo = 0, dhi = 0;
	int64_t ilo = 0, ihi = 0;
	if (lo && t == VY_TYPE_F32 &&
		!(get_number(lo, &dlo) && get_number(hi, &dhi) && dlo <= dhi)) {
		vy_test_why(why, "random: 'min' and 'max' must be numbers with min <= max");
		return -1;
	}
	if (lo && t != VY_TYPE_F32) {
		int64_t tlo = t == VY_TYPE_I32 ? INT32_MIN : 0;
		int64_t thi = t == VY_TYPE_I32 ? INT32_MAX : UINT32_MAX;
		if (!get_int(lo, tlo, thi, &ilo) || !get_int(hi, tlo, thi, &ihi) || ilo > ihi) {
			vy_test_why(why,
				"random: 'min' and 'max' must be %s values with min <= max",
				vy_type_name(t));
			return -1;
		}
	}
	for (int64_t k = 0; k < n; k++) {
		uint64_t r = splitmix_next(&state);
		if (t == VY_TYPE_BOOL) {
			vy_test_words_push(out, (uint32_t)(r >> 63));
		} else if (lo && t == VY_TYPE_F32) {
			double u = (double)(r >> 40) / 16777216.0;
			vy_test_words_push(out, bits_of((float)(dlo + (dhi - dlo) * u)));
		} else if (lo) {
			uint64_t span = (uint64_t)(ihi - ilo) + 1;
			vy_test_words_push(out, (uint32_t)(ilo + (int64_t)((r >> 32) % span)));
		} else {
			vy_test_words_push(out, (uint32_t)(r >> 32));
		}
	}
	return 0;
}

static int gen_iota(json_object *g, enum vy_type t, struct vy_test_words *out, char *why)
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
			vy_test_why(why, "iota: 'start' and 'step' must be numbers");
			return -1;
		}
		for (int64_t k = 0; k < n; k++) {
			vy_test_words_push(out, bits_of((float)(d0 + (double)k * ds)));
		}
		return 0;
	}
	int64_t i0 = 0, is = 1;
	if ((start && !get_int(start, INT32_MIN, UINT32_MAX, &i0)) ||
		(step && !get_int(step, INT32_MIN, UINT32_MAX, &is))) {
		vy_test_why(why, "iota: 'start' and 'step' must be 32-bit integers");
		return -1;
	}
	for (int64_t k = 0; k < n; k++) {
		vy_test_words_push(out, (uint32_t)(uint64_t)(i0 + k * is));
	}
	return 0;
}

/* repeat (the whole sequence `times` times) and stretch (each word `times` times). */
static int gen_times(json_object *g, const char *kind, enum vy_type t, struct vy_test_words *out,
	int depth, char *why)
{
	const char *const keys[] = {kind, "times", NULL};
	int64_t times;
	if (check_keys(g, keys, kind, why) || gen_count(g, "times", kind, &times, why)) {
		return -1;
	}
	struct vy_test_words inner = {0};
	json_object *sub = NULL;
	json_object_object_get_ex(g, kind, &sub);
	if (gen_eval(sub, t, &inner, depth + 1, why)) {
		vy_test_words_finish(&inner);
		return -1;
	}
	if ((uint64_t)inner.len * (uint64_t)times > MAX_GEN_WORDS) {
		vy_test_words_finish(&inner);
		vy_test_why(why, "%s: more than %" PRIu32 " values", kind, MAX_GEN_WORDS);
		return -1;
	}
	bool stretch = strcmp(kind, "stretch") == 0;
	size_t outer = stretch ? inner.len : (size_t)times;
	size_t each = stretch ? (size_t)times : inner.len;
	for (size_t a = 0; a < outer; a++) {
		for (size_t b = 0; b < each; b++) {
			vy_test_words_push(out, inner.v[stretch ? a : b]);
		}
	}
	vy_test_words_finish(&inner);
	return 0;
}

static int gen_eval(json_object *g, enum vy_type t, struct vy_test_words *out, int depth, char *why)
{
	if (depth > MAX_GEN_DEPTH) {
		vy_test_why(why, "generators nested deeper than %d", MAX_GEN_DEPTH);
		return -1;
	}
	if (json_object_is_type(g, json_type_array)) {
		return gen_values(g, t, out, why);
	}
	if (!json_object_is_type(g, json_type_object)) {
		vy_test_why(why, "a generator is an array of values or an object, not %s",
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
			vy_test_why(why, "values: expected an array");
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
			vy_test_words_push(out, w.v[k]);
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
			vy_test_words_push(out, w);
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
			vy_test_why(why, "concat: expected an array of generators");
			return -1;
		}
		for (size_t k = 0; k < json_object_array_length(v); k++) {
			if (gen_eval(json_object_array_get_idx(v, k), t, out, depth + 1, why)) {
				return -1;
			}
			if (out->len > MAX_GEN_WORDS) {
				vy_test_why(
					why, "concat: more than %" PRIu32 " values", MAX_GEN_WORDS);
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
	vy_test_why(why, "unknown generator %s", json_object_to_json_string(g));
	return -1;
}

/* ---- Cases ---- */

void vy_test_case_finish(struct vy_test_case *k)
{
	if (k->inputs) {
		for (uint32_t i = 0; k->plan && i < k->plan->n_inputs; i++) {
			vy_test_words_finish(&k->inputs[i]);
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

const struct vy_buffer *vy_test_case_output(const struct vy_test_case *k, size_t o)
{
	return &k->program->buffers[k->plan->output_indices[o]];
}

const struct vy_buffer *vy_test_case_input(const struct vy_test_case *k, size_t i)
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
		vy_test_why(why, "program: %s", vy_err_format(&err, buf, sizeof(buf)));
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
		vy_test_why(why, "config.%s: expected three integers >= 1", what);
		return -1;
	}
	for (int i = 0; i < 3; i++) {
		out[i] = (uint32_t)a[i];
	}
	return 0;
}

static int parse_config(struct vy_test_case *k, json_object *cfg, char *why)
{
	static const char *const keys[] = {
		"grid", "workgroup_size", "spec", "max_loop_iterations", NULL};
	if (!json_object_is_type(cfg, json_type_object)) {
		vy_test_why(why, "config: expected an object");
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
			vy_test_why(why, "config.max_loop_iterations: expected an integer >= 1");
			return -1;
		}
		k->config.max_loop_iterations = (uint64_t)n;
	}
	if (json_object_object_get_ex(cfg, "spec", &v)) {
		if (!json_object_is_type(v, json_type_object)) {
			vy_test_why(why, "config.spec: expected an object of name: value");
			return -1;
		}
		json_object_object_foreach(v, name, val)
		{
			enum vy_type type;
			uint32_t w;
			if (!find_spec(&k->program->entry, name, &type)) {
				vy_test_why(why,
					"config.spec: the program has no spec constant '%s'", name);
				return -1;
			}
			if (value_word(val, type, &w, why)) {
				return -1;
			}
			struct vy_spec_value sv = type == VY_TYPE_U32   ? vy_spec_u32(w)
						  : type == VY_TYPE_I32 ? vy_spec_i32((int32_t)w)
						  : type == VY_TYPE_F32
							  ? vy_spec_f32(vy_test_f32_of(w))
							  : vy_spec_bool(w != 0);
			vy_spec_map_insert(&k->spec, name, sv);
		}
		k->config.spec = &k->spec;
	}
	return 0;
}

static int parse_inputs(struct vy_test_case *k, json_object *inputs, char *why)
{
	uint32_t n = k->plan->n_inputs;
	if (inputs && !json_object_is_type(inputs, json_type_array)) {
		vy_test_why(why, "inputs: expected an array of generators");
		return -1;
	}
	size_t given = inputs ? json_object_array_length(inputs) : 0;
	if (given != n) {
		vy_test_why(why, "inputs: the program takes %" PRIu32 " inputs, the case gives %zu",
			n, given);
		return -1;
	}
	k->inputs = vy_test_xcalloc(n, sizeof(*k->inputs));
	k->views = vy_test_xcalloc(n, sizeof(*k->views));
	for (uint32_t i = 0; i < n; i++) {
		const struct vy_buffer *b = vy_test_case_input(k, i);
		char inner[VY_TEST_WHY_MAX];
		if (gen_eval(json_object_array_get_idx(inputs, i), b->type, &k->inputs[i], 0,
			    inner)) {
			vy_test_why(why, "inputs[%" PRIu32 "] (%s): %s", i, b->name, inner);
			return -1;
		}
		if (b->count != 0 && k->inputs[i].len != b->count) {
			vy_test_why(why,
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
} libm_fns[] = {{"exp", exp}, {"exp2", exp2}, {"exp10", exp10}, {"expm1", expm1}, {"log", log},
	{"log2", log2}, {"log10", log10}, {"log1p", log1p}, {"cbrt", cbrt}, {"sin", sin},
	{"cos", cos}, {"tan", tan}, {"asin", asin}, {"acos", acos}, {"atan", atan}, {"sinh", sinh},
	{"cosh", cosh}, {"tanh", tanh}, {"erf", erf}, {"erfc", erfc}, {"reciprocal", recip},
	{"inverse_sqrt", rsqrt}};

static const struct {
	const char *op;
	double (*fn)(double, double);
} libm_fns2[] = {{"hypot", hypot}, {"atan2", atan2}, {"pow", pow}};

static int parse_ulp(struct vy_test_case *k, json_object *list, char *why)
{
	static const char *const keys[] = {
		"op", "input", "input2", "output", "domain", "max", NULL};
	size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
	if (n == 0 || n > sizeof(k->ulp) / sizeof(k->ulp[0])) {
		vy_test_why(why, "ulp: expected an array of 1 to 16 checks");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i), *v = NULL;
		struct vy_test_ulp_check *u = &k->ulp[k->n_ulp++];
		int64_t in, out;
		if (!json_object_is_type(c, json_type_object) || check_keys(c, keys, "ulp", why)) {
			if (!why[0]) {
				vy_test_why(why, "ulp[%zu]: expected an object", i);
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
		for (size_t f = 0; f < sizeof(libm_fns2) / sizeof(libm_fns2[0]); f++) {
			if (strcmp(op, libm_fns2[f].op) == 0) {
				u->fn2 = libm_fns2[f].fn;
				snprintf(u->op, sizeof(u->op), "%s", op);
			}
		}
		json_object *in_o = NULL, *in2_o = NULL, *out_o = NULL, *dom = NULL, *max = NULL;
		json_object_object_get_ex(c, "input", &in_o);
		bool has_in2 = json_object_object_get_ex(c, "input2", &in2_o);
		int64_t in2 = 0;
		if (has_in2 != (u->fn2 != NULL) ||
			(has_in2 && !get_int(in2_o, 0, (int64_t)k->plan->n_inputs - 1, &in2))) {
			vy_test_why(why,
				"ulp[%zu]: a function of two operands takes input2 (an input "
				"index), one "
				"of one operand none",
				i);
			return -1;
		}
		u->input2 = (uint32_t)in2;
		json_object_object_get_ex(c, "output", &out_o);
		json_object_object_get_ex(c, "domain", &dom);
		json_object_object_get_ex(c, "max", &max);
		if (!(u->fn || u->fn2) || !get_int(in_o, 0, (int64_t)k->plan->n_inputs - 1, &in) ||
			!get_int(out_o, 0, (int64_t)k->plan->n_outputs - 1, &out) ||
			!json_object_is_type(dom, json_type_array) ||
			json_object_array_length(dom) != 2 ||
			!get_number(json_object_array_get_idx(dom, 0), &u->lo) ||
			!get_number(json_object_array_get_idx(dom, 1), &u->hi) ||
			!get_number(max, &u->max)) {
			vy_test_why(why,
				"ulp[%zu]: needs a known op, an input and an output index of the "
				"program, a domain [lo, hi] and a max",
				i);
			return -1;
		}
		u->input = (uint32_t)in;
		u->output = (uint32_t)out;
		if (vy_test_case_input(k, u->input)->type != VY_TYPE_F32 ||
			vy_test_case_input(k, u->input2)->type != VY_TYPE_F32 ||
			vy_test_case_output(k, u->output)->type != VY_TYPE_F32) {
			vy_test_why(why, "ulp[%zu]: input and output must be f32 buffers", i);
			return -1;
		}
	}
	return 0;
}

static int parse_expect(struct vy_test_case *k, json_object *e, char *why)
{
	static const char *const out_keys[] = {"outputs", "source", NULL};
	static const char *const err_keys[] = {"error", "trap", "at", NULL};
	json_object *v = NULL;
	if (!json_object_is_type(e, json_type_object)) {
		vy_test_why(why, "expect: expected an object");
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
			vy_test_why(why, "expect.error: unknown error code %s",
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
		vy_test_why(why,
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
		vy_test_why(why, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	char *text = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			text = realloc(text, cap);
			if (!text) {
				fprintf(stderr, "tests: out of memory\n");
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
		vy_test_why(why, "cannot read %s", path);
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
		vy_test_why(why, "JSON syntax error at line %zu, column %zu: %s", line, col,
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

int vy_test_gen_eval(json_object *g, enum vy_type t, struct vy_test_words *out, char *why)
{
	return gen_eval(g, t, out, 0, why);
}

int vy_test_case_load(struct vy_test_case *k, const char *path, char *why)
{
	json_object *root = parse_file(path, why);
	if (!root) {
		return -1;
	}
	return vy_test_case_load_json(k, root, why);
}

int vy_test_case_load_json(struct vy_test_case *k, json_object *root, char *why)
{
	static const char *const keys[] = {
		"notes", "subgroup_size", "program", "config", "inputs", "expect", "ulp", NULL};
	k->root = root;
	if (!json_object_is_type(k->root, json_type_object) ||
		check_keys(k->root, keys, "case", why)) {
		if (!why[0]) {
			vy_test_why(why, "a case is a JSON object");
		}
		return -1;
	}
	json_object *v = NULL;
	if (!json_object_object_get_ex(k->root, "notes", &v) ||
		!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) {
		vy_test_why(why, "notes: say what the case checks");
		return -1;
	}
	if (!json_object_object_get_ex(k->root, "program", &v) ||
		program_from_json(v, &k->program, why)) {
		if (!why[0]) {
			vy_test_why(why, "program: missing");
		}
		k->program_refused = true;
		return -1;
	}
	struct vy_err err = {0};
	char buf[VY_ERR_MESSAGE_MAX + VY_ERR_FIX_MAX + VY_ERR_AT_MAX + 32];
	if (vy_validate_first(k->program, NULL, &err)) {
		vy_test_why(why, "program: %s", vy_err_format(&err, buf, sizeof(buf)));
		k->program_refused = true;
		return -1;
	}
	if (vy_binding_plan_build(k->program, &k->plan, &err)) {
		vy_test_why(why, "program: %s", vy_err_format(&err, buf, sizeof(buf)));
		return -1;
	}
	k->features = vy_launch_features_scan(k->program);
	bool subgroups = (k->features & VY_LAUNCH_USES_SUBGROUPS) != 0;
	if (json_object_object_get_ex(k->root, "subgroup_size", &v)) {
		int64_t s;
		if (!get_int(v, 1, 128, &s) || (s & (s - 1)) != 0) {
			vy_test_why(why, "subgroup_size: expected a power of two from 1 to 128");
			return -1;
		}
		k->subgroup_size = (uint32_t)s;
	}
	if (subgroups != (k->subgroup_size != 0)) {
		vy_test_why(
			why, subgroups ? "the program uses subgroup operations: name the subgroup "
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

/* The trap kind a TRAP message names, or "". */
const char *vy_test_trap_kind_in(const char *message)
{
	for (int i = 0; i < VY_TRAP_KIND_COUNT; i++) {
		const char *kind = vy_trap_kind_name((enum vy_trap_kind)i);
		if (strstr(message, kind)) {
			return kind;
		}
	}
	return "";
}

void vy_test_describe_error(const struct vy_test_result *res, char *buf, size_t size)
{
	snprintf(buf, size, "%s: %s%s%s%s", vy_err_name(res->rc), res->err.message,
		res->err.at[0] ? " (at " : "", res->err.at, res->err.at[0] ? ")" : "");
}

/* Compare one output's bytes with expected words; describe the first difference in `why`. */
bool vy_test_same_words(const struct vy_test_case *k, size_t o, const uint8_t *got, size_t got_len,
	const uint32_t *want, size_t want_len, const char *got_name, const char *want_name,
	char *why)
{
	const struct vy_buffer *b = vy_test_case_output(k, o);
	if (got_len != want_len * 4) {
		vy_test_why(why, "output %zu (%s): %s has %zu bytes, %s %zu", o, b->name, got_name,
			got_len, want_name, want_len * 4);
		return false;
	}
	for (size_t i = 0; i < want_len; i++) {
		uint32_t g = vy_test_word_at(got + 4 * i);
		if (g != want[i]) {
			char gs[64], ws[64];
			show_word(g, b->type, gs, sizeof(gs));
			show_word(want[i], b->type, ws, sizeof(ws));
			vy_test_why(why, "output %zu (%s, %s) element %zu: %s %s, %s %s", o,
				b->name, vy_type_name(b->type), i, got_name, gs, want_name, ws);
			return false;
		}
	}
	return true;
}

/* Another backend's result against the reference's, byte for byte (or the same error). */
bool vy_test_same_as_reference(const struct vy_test_case *k, const struct vy_test_result *ref,
	const struct vy_test_result *res, const char *label, char *why)
{
	char a[VY_ERR_MESSAGE_MAX + VY_ERR_AT_MAX + 64], b[VY_ERR_MESSAGE_MAX + VY_ERR_AT_MAX + 64];
	if (ref->rc || res->rc) {
		if (ref->rc == 0 || res->rc == 0) {
			vy_test_describe_error(ref->rc ? ref : res, a, sizeof(a));
			vy_test_why(why, "%s failed and %s succeeded: %s",
				ref->rc ? "reference" : label, ref->rc ? label : "reference", a);
			return false;
		}
		vy_test_describe_error(ref, a, sizeof(a));
		vy_test_describe_error(res, b, sizeof(b));
		if (ref->rc != res->rc || strcmp(ref->err.at, res->err.at) != 0 ||
			strcmp(vy_test_trap_kind_in(ref->err.message),
				vy_test_trap_kind_in(res->err.message)) != 0) {
			vy_test_why(why, "reference %s; %s %s", a, label, b);
			return false;
		}
		vy_test_why(why, "same error as the reference: %s", b);
		return true;
	}
	if (res->outputs.len != ref->outputs.len) {
		vy_test_why(
			why, "%zu outputs, the reference %zu", res->outputs.len, ref->outputs.len);
		return false;
	}
	for (size_t o = 0; o < ref->outputs.len; o++) {
		const struct vy_output *ro = &ref->outputs.items[o];
		struct vy_test_words want = {0};
		for (size_t i = 0; i + 4 <= ro->len; i += 4) {
			vy_test_words_push(&want, vy_test_word_at(ro->data + i));
		}
		bool same = vy_test_same_words(k, o, res->outputs.items[o].data,
			res->outputs.items[o].len, want.v, want.len, label, "reference", why);
		vy_test_words_finish(&want);
		if (!same) {
			return false;
		}
	}
	vy_test_why(why, "identical to the reference (%zu outputs)", ref->outputs.len);
	return true;
}

/*
 * With VYRED_VULKAN_VALIDATION=1 the Vulkan backend runs under VK_LAYER_KHRONOS_validation and
 * checks every generated module with spirv-val; any message it collected fails the run.
 */
int vy_test_vulkan_validation_check(void)
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
