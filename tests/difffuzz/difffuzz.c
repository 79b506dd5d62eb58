/*
 * The differential fuzzer (docs/semantics.md §10): random, well-typed, race-free vyre programs,
 * each run on the reference backend and on every other compiled-in backend that opens, their
 * outputs (or errors, with trap kind and location) compared byte for byte. Each program is built
 * as a conformance case (tests/conformance/README.md) in JSON text and loaded through the
 * project's decoder and validator (tests/support/case.h), so the case printed for a mismatch is
 * exactly what ran. A mismatch is shrunk (nodes deleted, subtrees replaced by simpler ones) while
 * it persists, and the smallest program is printed as a ready conformance case.
 *
 *   difffuzz [--seed S|random] [--from I] [--count N] [--jobs N] [--backend ID]...
 *            [--require-coverage]
 *            [--coverage] [--self-test] [--reference-only] [--dump-glsl] [--verbose]
 *
 * `--seed random` draws the run's seed from the clock and prints it. Program i of a run is
 * generated from its own seed, a function of the run's seed and i alone (the first program uses
 * the run's seed), printed with each failure: `--seed THAT --count 1` replays it alone;
 * `--from I` starts the run at program I of the seed (programs I to I + N - 1).
 * `--staged` runs the Vulkan backend with every buffer in device-local memory behind staging
 * copies (none in host memory that the device reaches over the bus); `--discrete` makes it take
 * a discrete GPU's memory paths on a unified-memory device; `--kernel-cache N` sets how
 * many compiled programs it keeps (default KERNEL_CACHE_ENTRIES): two ways to narrow down a
 * difference that depends on the run. `--queued` starts each dispatch on the backends under test
 * with vy_backend_dispatch_async and then waits for it, so that the programs of concurrent
 * workers share batches, as a daemon's queued dispatches do (on a discrete GPU their copies back
 * then run in one tail after the batch). `--coarse` runs every 1-D launch of an elementwise
 * program coarse however small (vk_coarse.c), where a GPU does it only for large launches and
 * lavapipe never. `--no-shrink` reports each mismatch as it is found,
 * without running it again or shrinking it: for a first look on a shared device.
 * A device loss stops the run: it is reported once, with the programs in flight then.
 * `--jobs N` (default: the online CPUs) runs N worker threads, each taking the next program
 * index; the programs, their seeds and their results do not depend on N, only the order of the
 * lines does, and each report is printed whole. Every construct the generator emits has a
 * counter, summed at the end (`--coverage` prints each); `--require-coverage` fails the run when
 * one was never reached. `--self-test` checks the fuzzer itself: the reference against the
 * reference run on the program with every bit_xor turned into bit_or, until the first mismatch,
 * which must shrink to at most SELF_TEST_MAX_NODES nodes. `--reference-only` runs each program on
 * the reference twice and compares (no device: checks the generator, its coverage and the
 * reference's determinism at the reference's speed).
 *
 * SIGINT or SIGTERM stops the run after the programs in hand (a mismatch found then is reported
 * as shrunk so far) and prints the totals; each mismatch is named on a line of its own as soon
 * as it is found, before its shrinking. A second signal ends the process at once.
 *
 * A program that the validator refuses is a generator bug and fails the run like a mismatch.
 * Exit status: 0 when every program matched, 1 on a mismatch, a generator bug, missing coverage
 * or a failed self-test, 2 for a usage error or when no backend besides the reference opened
 * while a Vulkan device exists.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "case.h"
#include "err.h"
#include "reference/reference.h"
#include "registry.h"
#ifdef VY_HAVE_VULKAN
#include "vk_backend.h"
#include "vk_codegen.h"
#include "vmath.h"
#else
/* Without the Vulkan backend --staged and --discrete are refused (open_test_mode). */
#define VY__VK_TEST_STAGING 1u
#define VY__VK_TEST_COPY_ALL 1u
#define VY__VK_TEST_COARSE_ALL 1u
#endif

#define MAX_VARS 256
#define MAX_TARGETS VY_REGISTRY_MAX
/* Valid candidates run while shrinking one mismatch; each costs one dispatch per backend. */
#define SHRINK_BUDGET 400
/* A program's run, its pipeline's build included: lavapipe under ASan and the validation layers
 * takes over 20 s to build a program with a few pow, erf or atan2 expansions on a cold cache. */
#define RUN_TIMEOUT_MS 60000
#define SHRINK_TIMEOUT_MS 2000
/* Runs of a mismatching program, before its shrinking, that tell a deterministic difference
 * from one that depends on the run (concurrent jobs, the device). */
#define RERUNS 3
/* Most worker threads. */
#define MAX_JOBS 256
/* Compiled programs the Vulkan backend keeps: programs are never reused, only shrinking repeats. */
#define KERNEL_CACHE_ENTRIES 8
/* Percent of programs with up to 5 statements and expressions 3 deep; of those with up to 11,
 * 4 deep; the rest have up to 23 statements, expressions 5 deep. */
#define SMALL_PERCENT 60
#define MEDIUM_PERCENT 30

/* ---- Random numbers ---- */

static uint64_t mix(uint64_t *state)
{
	*state += UINT64_C(0x9E3779B97F4A7C15);
	uint64_t z = *state;
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* ---- JSON building ---- */

static json_object *arr(const char *kind)
{
	json_object *a = json_object_new_array();
	if (kind) {
		json_object_array_add(a, json_object_new_string(kind));
	}
	return a;
}

static json_object *add(json_object *a, json_object *x)
{
	json_object_array_add(a, x);
	return a;
}

static json_object *str(const char *s)
{
	return json_object_new_string(s);
}

static json_object *op1(const char *kind, json_object *x)
{
	return add(arr(kind), x);
}

static json_object *op2(const char *kind, json_object *x, json_object *y)
{
	return add(add(arr(kind), x), y);
}

static json_object *op3(const char *kind, json_object *x, json_object *y, json_object *z)
{
	return add(op2(kind, x, y), z);
}

/* Insert x (whose reference the array takes) at position i of a, moving the rest up. */
static void insert_at(json_object *a, size_t i, json_object *x)
{
	size_t n = json_object_array_length(a);
	json_object_array_add(a, NULL);
	for (size_t j = n; j > i; j--) {
		json_object_array_put_idx(
			a, j, json_object_get(json_object_array_get_idx(a, j - 1)));
	}
	json_object_array_put_idx(a, i, x);
}

/* ---- The generator ---- */

enum ty { T_U, T_I, T_F, T_B, T_COUNT };

static const char *const ty_name[T_COUNT] = {"u32", "i32", "f32", "bool"};
static const char *const in_buf[T_COUNT] = {"in_u", "in_i", "in_f", "in_b"};
static const char *const out_buf[T_COUNT] = {"o_u", "o_i", "o_f", "o_b"};

/* Words that break arithmetic: the witnesses of the case format and a few more. */
static const uint32_t wit_u[] = {0, 1, 2, 3, 7, 31, 32, 33, 0xFFFF, 0x10000, 0x12345678, 0x7FFFFFFF,
	0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF};
static const uint32_t wit_i[] = {0, 1, 0xFFFFFFFF, 2, 0xFFFFFFFE, 3, 0xFFFFFFFD, 7, 31, 32,
	0xFFFFFFE0, 0x12345678, 0x7FFFFFFF, 0x7FFFFFFE, 0x80000000, 0x80000001};
static const uint32_t wit_f[] = {0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000,
	0xBF000000, 0x3FC00000, 0xC0200000, 0x40400000, 0x3DCCCCCD, 0x4B800000, 0x4F000000,
	0x4F800000, 0xCF000000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x80800000, 0x00000001,
	0x007FFFFF, 0x80000001, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00000,
	0x7FC12345, 0xFFFFFFFF, 0x40490FDB, 0x3FB504F3};
static const uint32_t wit_b[] = {0, 1, 2, 0xFFFFFFFF};

struct var {
	char name[16];
	enum ty t;
	bool assignable;
};

/* How a phase or section may touch a buffer that other invocations also touch. */
enum share { SH_NONE, SH_OWN, SH_FROZEN };

struct gen {
	uint64_t rng;
	uint32_t n, wg; /* elements per buffer, invocations per workgroup */
	struct var vars[MAX_VARS];
	uint32_t n_vars;
	uint32_t next_name;
	char own[16]; /* the variable holding gid 0 in this phase */
	enum share rw, tile;
	bool allow_return;
	bool use_tiles, use_par;
	/* Every buffer it writes touched at gid.x alone, and nothing that lets invocations meet
	 * or tells workgroups apart: the programs the Vulkan backend runs coarse. */
	bool elementwise;
	int nodes; /* statements left */
	uint32_t spec[T_COUNT];
	bool spec_used[T_COUNT];
	int max_depth;    /* deepest expression level */
	uint64_t *counts; /* coverage: one counter per entry of cov_names, or NULL */
};

static uint32_t rnd(struct gen *g, uint32_t n)
{
	return (uint32_t)(mix(&g->rng) >> 32) % n;
}

static bool chance(struct gen *g, uint32_t percent)
{
	return rnd(g, 100) < percent;
}

static uint32_t word_of(struct gen *g, enum ty t)
{
	if (chance(g, 35)) {
		return (uint32_t)(mix(&g->rng) >> 32);
	}
	switch (t) {
	case T_U:
		return wit_u[rnd(g, sizeof(wit_u) / 4)];
	case T_I:
		return wit_i[rnd(g, sizeof(wit_i) / 4)];
	case T_F:
		return wit_f[rnd(g, sizeof(wit_f) / 4)];
	default:
		return wit_b[rnd(g, sizeof(wit_b) / 4)];
	}
}

static json_object *hex_word(uint32_t w)
{
	char buf[16];
	snprintf(buf, sizeof(buf), "0x%08" PRIx32, w);
	return str(buf);
}

/* A literal of type t holding the word w, as the IR writes it. */
static json_object *literal(enum ty t, uint32_t w)
{
	json_object *a = arr(ty_name[t]);
	switch (t) {
	case T_U:
		return add(a, json_object_new_int64(w));
	case T_I:
		return add(a, json_object_new_int64((int32_t)w));
	case T_B:
		return add(a, json_object_new_boolean(w != 0));
	default: {
		float f;
		memcpy(&f, &w, sizeof(f));
		if (isnan(f)) {
			return add(a, str("nan"));
		}
		if (isinf(f)) {
			return add(a, str(f > 0 ? "inf" : "-inf"));
		}
		return add(a, json_object_new_double((double)f));
	}
	}
}

static void cov(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static json_object *var_ref(const char *name)
{
	return op1("var", str(name));
}

static json_object *own_index(struct gen *g)
{
	return chance(g, 80) ? var_ref(g->own) : op1("gid", json_object_new_int(0));
}

/* A literal of type t drawn from the witnesses or random bits. */
static json_object *some_literal(struct gen *g, enum ty t)
{
	cov(g, "literal:%s", ty_name[t]);
	return literal(t, word_of(g, t));
}

static json_object *expr(struct gen *g, enum ty t, int depth);

/* An index for a buffer every invocation may read anywhere: in range, past the end, or any. */
static json_object *any_index(struct gen *g, int depth)
{
	switch (rnd(g, 6)) {
	case 0:
		return own_index(g);
	case 1:
		return literal(T_U, rnd(g, g->n + 3));
	case 2:
		return op2("add", own_index(g), literal(T_U, 1 + rnd(g, 3)));
	case 3:
		cov(g, "index:far_out_of_range");
		return literal(T_U, 0xFFFFFFFFu - rnd(g, 2));
	case 4:
		return op2("sub", own_index(g), literal(T_U, 1));
	default:
		return expr(g, T_U, depth + 1);
	}
}

/* An index only this invocation uses: its own element, or one past the end of every buffer. */
static json_object *private_index(struct gen *g, const char *buf)
{
	if (g->elementwise || chance(g, 85)) {
		return own_index(g);
	}
	cov(g, "index:past_end");
	return op2("add", own_index(g), op1("len", str(buf)));
}

static json_object *leaf(struct gen *g, enum ty t, int depth)
{
	for (;;) {
		switch (rnd(g, 8)) {
		case 0:
		case 1:
			return some_literal(g, t);
		case 2:
		case 3: {
			uint32_t start = rnd(g, g->n_vars ? g->n_vars : 1);
			for (uint32_t k = 0; k < g->n_vars; k++) {
				struct var *v = &g->vars[(start + k) % g->n_vars];
				if (v->t == t) {
					cov(g, "var");
					return var_ref(v->name);
				}
			}
			break;
		}
		case 4:
			cov(g, "load:%s", in_buf[t]);
			return op2("load", str(in_buf[t]), any_index(g, depth));
		case 5:
			/* A buffer that other invocations also touch: a workgroup buffer (half
			 * the time where the phase has them), a read_write one, the uniform one. */
			if ((t == T_U || t == T_F) && g->tile != SH_NONE &&
				(chance(g, 50) || g->rw == SH_NONE)) {
				const char *tb = t == T_U ? "tile_u" : "tile_f";
				cov(g, "load:%s:%s", tb, g->tile == SH_OWN ? "own" : "any");
				return op2("load", str(tb),
					g->tile == SH_OWN ? op1("lid", json_object_new_int(0))
							  : any_index(g, depth));
			}
			if ((t == T_U || t == T_F) && g->rw != SH_NONE) {
				cov(g, "load:rw_%c:%s", t == T_U ? 'u' : 'f',
					g->rw == SH_OWN ? "own" : "any");
			}
			if (t == T_U && g->rw != SH_NONE) {
				return op2("load", str("rw_u"),
					g->rw == SH_OWN ? private_index(g, "rw_u")
							: any_index(g, depth));
			}
			if (t == T_F && g->rw != SH_NONE) {
				return op2("load", str("rw_f"),
					g->rw == SH_OWN ? private_index(g, "rw_f")
							: any_index(g, depth));
			}
			if (t == T_I && g->use_par) {
				cov(g, "load:par");
				return op2("load", str("par"), any_index(g, depth));
			}
			break;
		case 6: {
			static const char *const names[T_COUNT] = {"sp_u", "sp_i", "sp_f", "sp_b"};
			g->spec_used[t] = true;
			cov(g, "spec:%s", ty_name[t]);
			json_object *s = arr("spec");
			add(s, str(names[t]));
			add(s, str(ty_name[t]));
			return add(s, literal(t, g->spec[t]));
		}
		default:
			if (t == T_U) {
				static const char *const ids[] = {"gid", "lid", "wgid"};
				if (chance(g, 30)) {
					static const char *const lens[] = {
						"in_u", "o_f", "rw_u", "acc"};
					cov(g, "len");
					return op1("len", str(lens[rnd(g, 4)]));
				}
				const char *id = ids[rnd(g, g->elementwise ? 2 : 3)];
				cov(g, "%s", id);
				bool x = rnd(g, 10) < 8 || (g->elementwise && id[0] == 'g');
				return op1(id, json_object_new_int(x ? 0 : 1));
			}
			break;
		}
	}
}

/* The result type of an operation: its operand's, or a fixed one whatever the operand. */
enum result { R_SAME, R_BOOL, R_U32 };

struct opdef {
	const char *name;
	unsigned types; /* bit per enum ty: operand types accepted */
	enum result result;
};

/* Bits of enum ty in opdef.types. */
#define UI 3u   /* u32, i32 */
#define UIF 7u  /* u32, i32, f32 */
#define UIB 11u /* u32, i32, bool */
#define ALL 15u

static const struct opdef binops[] = {{"add", UIF, R_SAME}, {"sub", UIF, R_SAME},
	{"mul", UIF, R_SAME}, {"div", UIF, R_SAME}, {"mod", UIF, R_SAME}, {"bit_and", UI, R_SAME},
	{"bit_or", UI, R_SAME}, {"bit_xor", UI, R_SAME}, {"shl", UI, R_SAME}, {"shr", UI, R_SAME},
	{"rotl", UI, R_SAME}, {"rotr", UI, R_SAME}, {"eq", ALL, R_BOOL}, {"ne", ALL, R_BOOL},
	{"lt", UIF, R_BOOL}, {"le", UIF, R_BOOL}, {"gt", UIF, R_BOOL}, {"ge", UIF, R_BOOL},
	{"and", UIB, R_SAME}, {"or", UIB, R_SAME}, {"min", UIF, R_SAME}, {"max", UIF, R_SAME},
	{"abs_diff", UI, R_U32}, {"sat_add", UI, R_SAME}, {"sat_sub", UI, R_SAME},
	{"sat_mul", 1, R_SAME}, {"mul_high", UI, R_SAME}, {"hypot", 4, R_SAME},
	{"atan2", 4, R_SAME}, {"pow", 4, R_SAME}};

static const struct opdef unops[] = {{"neg", UIF, R_SAME}, {"bit_not", 3, R_SAME},
	{"not", UIB, R_SAME}, {"popcount", 3, R_SAME}, {"clz", 3, R_SAME}, {"ctz", 3, R_SAME},
	{"reverse_bits", 3, R_SAME}, {"abs", 6, R_SAME}, {"sign", 6, R_SAME}, {"floor", 4, R_SAME},
	{"ceil", 4, R_SAME}, {"round", 4, R_SAME}, {"trunc", 4, R_SAME}, {"sqrt", 4, R_SAME},
	{"inverse_sqrt", 4, R_SAME}, {"reciprocal", 4, R_SAME}, {"exp", 4, R_SAME},
	{"exp2", 4, R_SAME}, {"exp10", 4, R_SAME}, {"expm1", 4, R_SAME}, {"log", 4, R_SAME},
	{"log2", 4, R_SAME}, {"log10", 4, R_SAME}, {"log1p", 4, R_SAME}, {"cbrt", 4, R_SAME},
	{"sin", 4, R_SAME}, {"cos", 4, R_SAME}, {"tan", 4, R_SAME}, {"asin", 4, R_SAME},
	{"acos", 4, R_SAME}, {"atan", 4, R_SAME}, {"sinh", 4, R_SAME}, {"cosh", 4, R_SAME},
	{"tanh", 4, R_SAME}, {"erf", 4, R_SAME}, {"erfc", 4, R_SAME}, {"is_nan", 4, R_BOOL},
	{"is_inf", 4, R_BOOL}, {"is_finite", 4, R_BOOL}, {"unpack4_low", 1, R_SAME},
	{"unpack4_high", 1, R_SAME}, {"unpack8_low", 1, R_SAME}, {"unpack8_high", 1, R_SAME},
	{"exp_cr", 4, R_SAME}, {"exp2_cr", 4, R_SAME}, {"log_cr", 4, R_SAME},
	{"log2_cr", 4, R_SAME}};

/* ---- Coverage: a counter per construct, so that a run shows the generator reached each ---- */

#define COV_NAME_MAX 40
#define COV_MAX 400

static char cov_names[COV_MAX][COV_NAME_MAX]; /* sorted; read-only once cov_init returned */
static size_t n_cov;

static void cov_name_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void cov_name_add(const char *fmt, ...)
{
	if (n_cov == COV_MAX) {
		fprintf(stderr, "difffuzz: more than %d coverage names\n", COV_MAX);
		abort();
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cov_names[n_cov++], COV_NAME_MAX, fmt, ap);
	va_end(ap);
}

static int cov_compare(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void cov_ops(const struct opdef *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (int t = 0; t < T_COUNT; t++) {
			if (ops[i].types & (1u << t)) {
				cov_name_add("%s:%s", ops[i].name, ty_name[t]);
			}
		}
	}
}

/*
 * Every construct that the generator can emit, each of which a long enough run must reach: each
 * operation on each operand type it accepts, each cast, statement, buffer access, atomic, id,
 * barrier and config field.
 */
static void cov_init(void)
{
	cov_ops(binops, sizeof(binops) / sizeof(binops[0]));
	cov_ops(unops, sizeof(unops) / sizeof(unops[0]));
	for (int t = 0; t < T_COUNT; t++) {
		for (int f = 0; f < T_COUNT; f++) {
			cov_name_add("cast:%s>%s", ty_name[f], ty_name[t]);
		}
		if (t != T_B) {
			for (int f = 0; f < T_B; f++) {
				cov_name_add("bitcast:%s>%s", ty_name[f], ty_name[t]);
			}
		}
		cov_name_add("select:%s", ty_name[t]);
		cov_name_add("literal:%s", ty_name[t]);
		cov_name_add("spec:%s", ty_name[t]);
		cov_name_add("config.spec:%s", ty_name[t]);
		cov_name_add("load:%s", in_buf[t]);
		cov_name_add("store:%s", out_buf[t]);
	}
	static const char *const fixed[] = {"var", "index:far_out_of_range", "index:past_end",
		"load:rw_u:own", "load:rw_u:any", "load:rw_f:own", "load:rw_f:any",
		"load:tile_u:own", "load:tile_u:any", "load:tile_f:own", "load:tile_f:any",
		"load:par", "len", "gid", "lid", "wgid", "fma", "atomic_own:add", "atomic_own:and",
		"atomic_own:or", "atomic_own:xor", "atomic_own:min", "atomic_own:max",
		"atomic_own:exchange", "atomic_own:compare_exchange", "atomic_shared:add",
		"atomic_shared:and", "atomic_shared:or", "atomic_shared:xor", "atomic_shared:min",
		"atomic_shared:max", "let", "assign", "store:rw_u", "store:rw_f", "store:tile_u",
		"store:tile_f", "if", "if_else", "loop", "block", "region", "return",
		"barrier:seq_cst", "barrier:acq_rel", "input:count_0", "grid_sync",
		"grid_sync_in_region", "config.max_loop_iterations", "cond:u32", "cond:i32",
		"loop:dynamic_bound", "shape:elementwise"};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		cov_name_add("%s", fixed[i]);
	}
	qsort(cov_names, n_cov, COV_NAME_MAX, cov_compare);
}

static void cov(struct gen *g, const char *fmt, ...)
{
	if (!g->counts) {
		return;
	}
	char name[COV_NAME_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	char(*hit)[COV_NAME_MAX] = bsearch(name, cov_names, n_cov, COV_NAME_MAX, cov_compare);
	if (!hit) {
		fprintf(stderr, "difffuzz: the construct %s is missing from cov_init\n", name);
		abort();
	}
	g->counts[hit - cov_names]++;
}

static bool is_shift(const char *op)
{
	return strcmp(op, "shl") == 0 || strcmp(op, "shr") == 0 || strcmp(op, "rotl") == 0 ||
	       strcmp(op, "rotr") == 0;
}

/* A random operation from `ops` that gives type t; false when none does. */
static bool pick(struct gen *g, const struct opdef *ops, size_t n, enum ty t, const char **name,
	enum ty *operand)
{
	for (int tries = 0; tries < 40; tries++) {
		const struct opdef *o = &ops[rnd(g, (uint32_t)n)];
		if (o->result != R_SAME) {
			if (t != (o->result == R_BOOL ? T_B : T_U)) {
				continue;
			}
			/* One of the operand types it accepts, each as likely. */
			uint32_t k = rnd(g, (uint32_t)__builtin_popcount(o->types));
			int ot = 0;
			while (!(o->types & (1u << ot)) || k-- > 0) {
				ot++;
			}
			*name = o->name;
			*operand = (enum ty)ot;
			return true;
		} else if (o->types & (1u << t)) {
			*name = o->name;
			*operand = t;
			return true;
		}
	}
	return false;
}

/* A condition: mostly a bool, else a u32 or an i32 (true when nonzero). */
static json_object *cond(struct gen *g, int depth)
{
	if (chance(g, 80)) {
		return expr(g, T_B, depth);
	}
	enum ty t = chance(g, 50) ? T_U : T_I;
	cov(g, "cond:%s", ty_name[t]);
	return expr(g, t, depth);
}

static json_object *expr(struct gen *g, enum ty t, int depth)
{
	if (depth >= g->max_depth || chance(g, depth == 0 ? 15 : 35)) {
		return leaf(g, t, depth);
	}
	const char *name;
	enum ty ot;
	switch (rnd(g, 10)) {
	case 0:
	case 1:
	case 2:
		if (pick(g, binops, sizeof(binops) / sizeof(binops[0]), t, &name, &ot)) {
			cov(g, "%s:%s", name, ty_name[ot]);
			json_object *a = expr(g, ot, depth + 1);
			json_object *b = expr(g, is_shift(name) ? T_U : ot, depth + 1);
			if (ot == T_I && (strcmp(name, "div") == 0 || strcmp(name, "mod") == 0) &&
				chance(g, 80)) {
				/* Mostly keep i32 division from trapping, so it computes. */
				b = op2("bit_or", b, literal(T_I, 1));
			}
			return op2(name, a, b);
		}
		break;
	case 3:
	case 4:
		if (pick(g, unops, sizeof(unops) / sizeof(unops[0]), t, &name, &ot)) {
			cov(g, "%s:%s", name, ty_name[ot]);
			return op1(name, expr(g, ot, depth + 1));
		}
		break;
	case 5:
		cov(g, "select:%s", ty_name[t]);
		return add(op2("select", cond(g, depth + 1), expr(g, t, depth + 1)),
			expr(g, t, depth + 1));
	case 6: {
		enum ty from = (enum ty)rnd(g, T_COUNT);
		cov(g, "cast:%s>%s", ty_name[from], ty_name[t]);
		return op2("cast", str(ty_name[t]), expr(g, from, depth + 1));
	}
	case 7:
		if (t == T_F) {
			cov(g, "fma");
			return add(op2("fma", expr(g, T_F, depth + 1), expr(g, T_F, depth + 1)),
				expr(g, T_F, depth + 1));
		}
		break;
	case 9:
		if (t != T_B) {
			enum ty from = (enum ty)rnd(g, T_B);
			cov(g, "bitcast:%s>%s", ty_name[from], ty_name[t]);
			return op2("bitcast", str(ty_name[t]), expr(g, from, depth + 1));
		}
		break;
	case 8:
		if (t == T_U && g->rw == SH_OWN && !g->elementwise) {
			/* An atomic on this invocation's own element: its old value is defined. */
			static const char *const aops[] = {
				"add", "and", "or", "xor", "min", "max", "exchange"};
			json_object *a = arr("atomic");
			if (chance(g, 20)) {
				cov(g, "atomic_own:compare_exchange");
				add(a, str("compare_exchange"));
				add(a, str("rw_u"));
				add(a, private_index(g, "rw_u"));
				add(a, expr(g, T_U, depth + 1));
				return add(a, expr(g, T_U, depth + 1));
			}
			const char *aop = aops[rnd(g, 7)];
			cov(g, "atomic_own:%s", aop);
			add(a, str(aop));
			add(a, str("rw_u"));
			add(a, private_index(g, "rw_u"));
			return add(a, expr(g, T_U, depth + 1));
		}
		break;
	default:
		break;
	}
	return leaf(g, t, depth);
}

static const char *fresh(struct gen *g, char *buf)
{
	snprintf(buf, 16, "v%" PRIu32, g->next_name++);
	return buf;
}

static void declare(struct gen *g, const char *name, enum ty t, bool assignable)
{
	if (g->n_vars < MAX_VARS) {
		struct var *v = &g->vars[g->n_vars++];
		snprintf(v->name, sizeof(v->name), "%s", name);
		v->t = t;
		v->assignable = assignable;
	}
}

static json_object *block(struct gen *g, int depth, int len);

/* One statement of a section, appended to `list`. */
static void statement(struct gen *g, json_object *list, int depth)
{
	char name[16];
	g->nodes--;
	uint32_t k = rnd(g, 100);
	if (k < 28) {
		enum ty t = (enum ty)rnd(g, T_COUNT);
		json_object *value = expr(g, t, 0);
		cov(g, "let");
		add(list, op2("let", str(fresh(g, name)), value));
		declare(g, name, t, true);
	} else if (k < 36) {
		for (uint32_t tries = 0; tries < 8 && g->n_vars; tries++) {
			struct var *v = &g->vars[rnd(g, g->n_vars)];
			if (v->assignable) {
				cov(g, "assign");
				add(list, op2("assign", str(v->name), expr(g, v->t, 0)));
				return;
			}
		}
	} else if (k < 62) {
		enum ty t = (enum ty)rnd(g, T_COUNT);
		if (g->rw == SH_OWN && chance(g, 30)) {
			bool f = chance(g, 50);
			const char *b = f ? "rw_f" : "rw_u";
			cov(g, "store:%s", b);
			add(list, op3("store", str(b), private_index(g, b),
					  expr(g, f ? T_F : T_U, 0)));
		} else if (g->tile == SH_OWN && chance(g, 30)) {
			bool f = chance(g, 50);
			cov(g, "store:%s", f ? "tile_f" : "tile_u");
			add(list, op3("store", str(f ? "tile_f" : "tile_u"),
					  op1("lid", json_object_new_int(0)),
					  expr(g, f ? T_F : T_U, 0)));
		} else {
			cov(g, "store:%s", out_buf[t]);
			add(list, op3("store", str(out_buf[t]), private_index(g, out_buf[t]),
					  expr(g, t, 0)));
		}
	} else if (k < 72 && depth < 3) {
		json_object *c = cond(g, 0);
		json_object *then = block(g, depth + 1, 1 + (int)rnd(g, 3));
		bool has_else = chance(g, 50);
		cov(g, "%s", has_else ? "if_else" : "if");
		json_object *orelse =
			has_else ? block(g, depth + 1, 1 + (int)rnd(g, 2)) : arr(NULL);
		add(list, add(op2("if", c, then), orelse));
	} else if (k < 79 && depth < 3) {
		json_object *from = chance(g, 50)
					    ? literal(T_U, rnd(g, 3))
					    : op2("bit_and", expr(g, T_U, 2), literal(T_U, 3));
		/* A bound that is not a literal, now and then: a device whose driver ends long
		 * loops then gets the program's innermost loops as copies of their body. */
		json_object *to = NULL;
		if (chance(g, 20)) {
			cov(g, "loop:dynamic_bound");
			to = op2("bit_and", expr(g, T_U, 2), literal(T_U, 7));
		} else {
			to = literal(T_U, rnd(g, 6));
		}
		cov(g, "loop");
		json_object *l = arr("loop");
		add(l, str(fresh(g, name)));
		add(l, from);
		add(l, to);
		uint32_t mark = g->n_vars;
		declare(g, name, T_U, false);
		json_object *body = block(g, depth + 1, 1 + (int)rnd(g, 3));
		g->n_vars = mark;
		add(list, add(l, body));
	} else if (k < 84 && depth < 3) {
		bool plain = chance(g, 50);
		cov(g, "%s", plain ? "block" : "region");
		if (plain) {
			add(list, op1("block", block(g, depth + 1, 1 + (int)rnd(g, 3))));
		} else {
			add(list, op2("region", str("difffuzz"),
					  block(g, depth + 1, 1 + (int)rnd(g, 3))));
		}
	} else if (k < 92 && !g->elementwise) {
		/* An atomic on a shared element whose final value does not depend on the order:
		 * element e always takes the operation aops[e], and the old value is never read. */
		static const char *const aops[] = {"add", "and", "or", "xor", "min", "max"};
		uint32_t e = rnd(g, 7);
		json_object *a = arr("atomic");
		cov(g, "atomic_shared:%s", e < 6 ? aops[e] : "add");
		add(a, str(e < 6 ? aops[e] : "add"));
		add(a, str("acc"));
		add(a, literal(T_U, e == 6 ? 8 + rnd(g, 2) : e));
		add(a, expr(g, T_U, 1));
		add(list, op2("let", str(fresh(g, name)), a));
	} else if (k < 95 && g->allow_return) {
		cov(g, "return");
		add(list, op3("if", cond(g, 0), add(arr(NULL), arr("return")), arr(NULL)));
	} else {
		enum ty t = (enum ty)rnd(g, T_COUNT);
		cov(g, "store:%s", out_buf[t]);
		add(list,
			op3("store", str(out_buf[t]), private_index(g, out_buf[t]), expr(g, t, 0)));
	}
}

static json_object *block(struct gen *g, int depth, int len)
{
	json_object *list = arr(NULL);
	uint32_t mark = g->n_vars;
	for (int i = 0; i < len && g->nodes > 0; i++) {
		statement(g, list, depth);
	}
	g->n_vars = mark;
	return list;
}

/* One phase: its own index, then sections separated by workgroup barriers. */
static json_object *phase(struct gen *g, bool last)
{
	json_object *list = arr(NULL);
	uint32_t mark = g->n_vars;
	char name[16];
	snprintf(g->own, sizeof(g->own), "%s", fresh(g, name));
	add(list, op2("let", str(g->own), op1("gid", json_object_new_int(0))));
	declare(g, g->own, T_U, false);
	g->rw = (enum share)(1 + rnd(g, 2));
	uint32_t sections = g->use_tiles ? 1 + rnd(g, 3) : 1;
	for (uint32_t s = 0; s < sections; s++) {
		if (s > 0) {
			bool seq = chance(g, 70);
			cov(g, "barrier:%s", seq ? "seq_cst" : "acq_rel");
			add(list, seq ? arr("barrier") : op1("barrier", str("acq_rel")));
		}
		g->tile = g->use_tiles ? (s % 2 == 0 ? SH_OWN : SH_FROZEN) : SH_NONE;
		g->allow_return = last && s + 1 == sections;
		int len = 1 + (int)rnd(g, 6);
		for (int i = 0; i < len && g->nodes > 0; i++) {
			statement(g, list, 0);
		}
	}
	g->n_vars = mark;
	return list;
}

static json_object *buffer(const char *name, uint32_t binding, const char *access, enum ty t,
	uint32_t count, bool output)
{
	json_object *b = json_object_new_object();
	json_object_object_add(b, "name", str(name));
	json_object_object_add(b, "binding", json_object_new_int64(binding));
	json_object_object_add(b, "access", str(access));
	json_object_object_add(b, "type", str(ty_name[t]));
	json_object_object_add(b, "count", json_object_new_int64(count));
	if (output) {
		json_object_object_add(b, "output", json_object_new_boolean(true));
	}
	return b;
}

static json_object *input_words(struct gen *g, enum ty t, uint32_t count)
{
	json_object *a = arr(NULL);
	for (uint32_t i = 0; i < count; i++) {
		add(a, hex_word(word_of(g, t)));
	}
	return a;
}

/*
 * The case of program `seed`: buffers, entry, config and inputs. Each construct it emits adds one
 * to its counter in `counts` (NULL: none).
 */
static json_object *generate(uint64_t seed, uint64_t *counts)
{
	struct gen g = {.rng = seed, .counts = counts};
	static const uint32_t wgs[] = {1, 2, 4, 8, 16, 64};
	g.wg = wgs[rnd(&g, 6)];
	g.n = 1 + rnd(&g, 12);
	g.elementwise = chance(&g, 30);
	if (g.elementwise) {
		cov(&g, "shape:elementwise");
	}
	g.use_tiles = !g.elementwise && g.wg > 1 && chance(&g, 40);
	g.use_par = chance(&g, 30);
	/* Sizes: shader compilation time grows faster than the program, and most bugs need only a
	 * few nodes, so most programs are small and one in ten is as large as before. */
	uint32_t size = rnd(&g, 100);
	if (size < SMALL_PERCENT) {
		g.nodes = 2 + (int)rnd(&g, 4);
		g.max_depth = 3;
	} else if (size < SMALL_PERCENT + MEDIUM_PERCENT) {
		g.nodes = 4 + (int)rnd(&g, 8);
		g.max_depth = 4;
	} else {
		g.nodes = 4 + (int)rnd(&g, 20);
		g.max_depth = 5;
	}
	for (int t = 0; t < T_COUNT; t++) {
		g.spec[t] = word_of(&g, (enum ty)t);
	}
	uint32_t in_u_len = chance(&g, 25) ? rnd(&g, g.n + 3) : g.n;
	if (in_u_len != g.n) {
		cov(&g, "input:count_0");
	}

	json_object *buffers = arr(NULL);
	json_object *inputs = arr(NULL);
	uint32_t binding = 0;
	for (int t = 0; t < T_COUNT; t++) {
		uint32_t count = t == T_U && in_u_len != g.n ? 0 : g.n;
		add(buffers, buffer(in_buf[t], binding++, "read_only", (enum ty)t, count, false));
		add(inputs, input_words(&g, (enum ty)t, t == T_U ? in_u_len : g.n));
	}
	if (g.use_par) {
		add(buffers, buffer("par", binding++, "uniform", T_I, 4, false));
		add(inputs, input_words(&g, T_I, 4));
	}
	add(buffers, buffer("rw_u", binding++, "read_write", T_U, g.n, false));
	add(inputs, input_words(&g, T_U, g.n));
	add(buffers, buffer("rw_f", binding++, "read_write", T_F, g.n, false));
	add(inputs, input_words(&g, T_F, g.n));
	add(buffers, buffer("acc", binding++, "read_write", T_U, 8, true));
	for (int t = 0; t < T_COUNT; t++) {
		add(buffers, buffer(out_buf[t], binding++, "write_only", (enum ty)t, g.n, false));
	}
	if (g.use_tiles) {
		add(buffers, buffer("tile_u", binding++, "workgroup", T_U, g.wg, false));
		add(buffers, buffer("tile_f", binding++, "workgroup", T_F, g.wg, false));
	}

	json_object *entry = arr(NULL);
	uint32_t phases = !g.elementwise && chance(&g, 15) ? 2 + rnd(&g, 2) : 1;
	for (uint32_t p = 0; p < phases; p++) {
		if (p > 0) {
			cov(&g, "grid_sync");
			add(entry, op1("barrier", str("grid_sync")));
		}
		json_object *body = phase(&g, p + 1 == phases);
		if (phases == 1 && chance(&g, 50)) {
			json_object_put(entry);
			entry = body;
		} else {
			add(entry, op1("block", body));
		}
	}
	if (phases > 1 && chance(&g, 30)) {
		cov(&g, "grid_sync_in_region");
		entry = add(arr(NULL), op2("region", str("difffuzz"), entry));
	}

	json_object *program = json_object_new_object();
	json_object_object_add(program, "vyre", json_object_new_int(1));
	json_object *wg = arr(NULL);
	add(add(add(wg, json_object_new_int64(g.wg)), json_object_new_int(1)),
		json_object_new_int(1));
	json_object_object_add(program, "workgroup_size", wg);
	json_object_object_add(program, "buffers", buffers);
	json_object_object_add(program, "entry", entry);

	json_object *root = json_object_new_object();
	char notes[160];
	snprintf(notes, sizeof(notes),
		"difffuzz program %016" PRIx64
		": the Vulkan backend must give the reference's bytes",
		seed);
	json_object_object_add(root, "notes", str(notes));
	json_object_object_add(root, "program", program);
	json_object *config = json_object_new_object();
	static const char *const names[T_COUNT] = {"sp_u", "sp_i", "sp_f", "sp_b"};
	json_object *spec = json_object_new_object();
	for (int t = 0; t < T_COUNT; t++) {
		if (g.spec_used[t] && chance(&g, 50)) {
			cov(&g, "config.spec:%s", ty_name[t]);
			json_object_object_add(spec, names[t], hex_word(word_of(&g, (enum ty)t)));
		}
	}
	if (json_object_object_length(spec)) {
		json_object_object_add(config, "spec", spec);
	} else {
		json_object_put(spec);
	}
	if (chance(&g, 10)) {
		cov(&g, "config.max_loop_iterations");
		json_object_object_add(
			config, "max_loop_iterations", json_object_new_int64(1 + rnd(&g, 6)));
	}
	if (json_object_object_length(config)) {
		json_object_object_add(root, "config", config);
	} else {
		json_object_put(config);
	}
	json_object_object_add(root, "inputs", inputs);
	return root;
}

/* ---- Running ---- */

/* The self-test's wrong backend: the reference, run on the program with this edit. */
#define WRONG_FROM "\"bit_xor\""
#define WRONG_TO "\"bit_or\""
/* The most IR nodes a self-test mismatch may keep after shrinking. Over seeds 1 to 8 the first
 * mismatch shrinks to 5 to 9 nodes (with 229 constructs; the programs change with the list). */
#define SELF_TEST_MAX_NODES 12

struct target {
	struct vy_backend *backend; /* owned */
	char label[48];
	struct vy_backend *oracle; /* owned: the reference at this backend's subgroup size */
	bool wrong;                /* the self-test's target: runs the program edited */
};

struct run {
	struct target targets[MAX_TARGETS];
	size_t n_targets;
	bool dump_glsl, verbose, self_test, reference_only;
	bool no_shrink; /* --no-shrink: report each mismatch as found, without reruns or shrinking
			 */
	bool queued;    /* --queued: every backend but the reference dispatches asynchronously */
	/* --staged or --discrete: the Vulkan backend's test flags (0: neither) and its label */
	unsigned vk_test_flags;
	const char *vk_test_label;
	uint32_t kernel_cache; /* --kernel-cache: compiled programs the Vulkan backend keeps */
	uint64_t seed, count;
	uint64_t first;            /* --from: the index of the run's first program */
	atomic_uint_fast64_t next; /* the next program index a worker takes */
	/* Per worker: 1 + the index of the program it runs, 0 between programs. */
	atomic_uint_fast64_t in_flight[MAX_JOBS];
	atomic_uint workers;       /* worker numbers handed out */
	atomic_bool lost;          /* a device was lost: reported once */
	atomic_uint_fast64_t done; /* programs finished */
	atomic_uint_fast64_t mismatches, refused;
	atomic_uint_fast64_t slow_then_clean; /* timeouts that ran clean when run again */
	atomic_bool stop;         /* the self-test found its mismatch, or a signal asked to stop */
	atomic_int self_test_rc;  /* 0 once the self-test's shrunk case was small enough */
	pthread_mutex_t out_lock; /* whole reports on stdout */
	pthread_mutex_t cov_lock;
	uint64_t counts[COV_MAX]; /* under cov_lock */
};

/* SLOW: a run reached the dispatch timeout (SHRINK_TIMEOUT_MS while shrinking, RUN_TIMEOUT_MS
 * otherwise); a program the generator made is then run again, and reported as a mismatch unless
 * every rerun finishes with the reference's result (slow_then_clean); a shrinking candidate is
 * not kept, so that no edit can hold the shared device for long. */
/* LOST: the backend's device was lost: the run stops, naming the programs then in flight. */
enum outcome { SAME, DIFFERENT, REFUSED, SLOW, LOST };

/* Program i's own seed, the same for every --jobs: the first is the run's seed itself, so that
 * `--seed THAT --count 1` replays any program. */
static uint64_t program_seed(uint64_t seed, uint64_t i)
{
	if (i == 0) {
		return seed;
	}
	uint64_t state = seed + i * UINT64_C(0x9E3779B97F4A7C15);
	return mix(&state);
}

/* Run `k` on `b`; `queued`: started with vy_backend_dispatch_async and then waited for, so that
 * the jobs of concurrent workers share batches (and a discrete GPU's batch tails). */
static void dispatch(
	struct vy_backend *b, const struct vy_test_case *k, bool queued, struct vy_test_result *r)
{
	vy_outputs_init(&r->outputs);
	memset(&r->err, 0, sizeof(r->err));
	if (!queued) {
		r->rc = vy_backend_dispatch(b, k->program, k->views, k->plan->n_inputs, &k->config,
			&r->outputs, &r->err);
		return;
	}
	struct vy_pending *p = NULL;
	r->rc = vy_backend_dispatch_async(
		b, k->program, k->views, k->plan->n_inputs, &k->config, &p, &r->err);
	if (r->rc == 0) {
		r->rc = vy_pending_wait(p, &r->outputs, &r->err);
	}
}

/* `text` with every WRONG_FROM replaced by WRONG_TO (malloc'd). */
static char *wrong_text(const char *text)
{
	size_t n = strlen(text);
	char *out = malloc(n + 1);
	if (!out) {
		fprintf(stderr, "difffuzz: out of memory\n");
		abort();
	}
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (strncmp(text + i, WRONG_FROM, strlen(WRONG_FROM)) == 0) {
			memcpy(out + o, WRONG_TO, strlen(WRONG_TO));
			o += strlen(WRONG_TO);
			i += strlen(WRONG_FROM);
		} else {
			out[o++] = text[i++];
		}
	}
	out[o] = '\0';
	return out;
}

static int load_case(struct vy_test_case *k, const char *text, char *why)
{
	memset(k, 0, sizeof(*k));
	vy_spec_map_init(&k->spec);
	json_object *root = json_tokener_parse(text);
	if (!root) {
		vy_test_why(why, "the generated text does not parse as JSON");
		return -1;
	}
	return vy_test_case_load_json(k, root, why);
}

/* Every word of each output in which `res` differs from `ref`, both ways, for a report: a
 * difference that depends on the run shows its whole pattern there, not only its first word. */
static void dump_outputs(
	FILE *f, const struct vy_test_result *ref, const struct vy_test_result *res)
{
	for (size_t o = 0; o < ref->outputs.len && o < res->outputs.len; o++) {
		const struct vy_output *a = &res->outputs.items[o];
		const struct vy_output *b = &ref->outputs.items[o];
		if (a->len == b->len && memcmp(a->data, b->data, a->len) == 0) {
			continue;
		}
		const struct vy_output *both[2] = {a, b};
		for (int w = 0; w < 2; w++) {
			fprintf(f, "  output %zu, %s:", o, w == 0 ? "backend  " : "reference");
			for (size_t i = 0; i + 4 <= both[w]->len; i += 4) {
				uint32_t word;
				memcpy(&word, both[w]->data + i, sizeof(word));
				fprintf(f, " %08" PRIx32, word);
			}
			fprintf(f, "\n");
		}
	}
}

/*
 * Load the case from its JSON text, as a file would be, and run it everywhere. SAME when every
 * backend gave the reference's result; `why` describes the first difference or the refusal.
 * With `dump`, outputs that differ are written there whole (dump_outputs).
 */
static enum outcome try_case(
	struct run *run, const char *text, uint32_t timeout_ms, char *why, FILE *dump)
{
	struct vy_test_case k;
	if (load_case(&k, text, why)) {
		vy_test_case_finish(&k);
		return REFUSED;
	}
	if (k.config.timeout_ms == 0) {
		k.config.timeout_ms = timeout_ms;
	}
	enum outcome out = SAME;
	for (size_t i = 0; i < run->n_targets && out == SAME; i++) {
		struct target *t = &run->targets[i];
		struct vy_test_result ref, res;
		dispatch(t->oracle, &k, false, &ref);
		if (t->wrong) {
			char *edited = wrong_text(text);
			struct vy_test_case w;
			char wwhy[VY_TEST_WHY_MAX];
			if (load_case(&w, edited, wwhy)) {
				fprintf(stderr, "difffuzz: the self-test's edit was refused: %s\n",
					wwhy);
				abort();
			}
			w.config.timeout_ms = k.config.timeout_ms;
			dispatch(t->backend, &w, run->queued, &res);
			vy_test_case_finish(&w);
			free(edited);
		} else {
			dispatch(t->backend, &k, run->queued, &res);
		}
		char detail[VY_TEST_WHY_MAX];
		if (res.rc == VY_E_DEVICE_LOST) {
			vy_test_why(why, "%s: %s", t->label, res.err.message);
			out = LOST;
		} else if (ref.rc == VY_E_TIMEOUT || res.rc == VY_E_TIMEOUT) {
			vy_test_why(why, "%s: timed out after %" PRIu32 " ms (%s)", t->label,
				k.config.timeout_ms,
				ref.rc == VY_E_TIMEOUT ? "the reference" : "the backend");
			out = SLOW;
		} else if (!vy_test_same_as_reference(&k, &ref, &res, t->label, detail)) {
			vy_test_why(why, "%s: %s", t->label, detail);
			out = DIFFERENT;
			if (dump && ref.rc == 0 && res.rc == 0) {
				dump_outputs(dump, &ref, &res);
			}
		}
		vy_outputs_finish(&ref.outputs);
		vy_outputs_finish(&res.outputs);
	}
	vy_test_case_finish(&k);
	return out;
}

static char *text_of(json_object *root)
{
	char *s = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
	if (!s) {
		fprintf(stderr, "difffuzz: out of memory\n");
		abort();
	}
	return s;
}

/* IR nodes below `node`: the arrays of the entry, each one expression or statement. */
static size_t count_nodes(json_object *node)
{
	if (!json_object_is_type(node, json_type_array)) {
		return 0;
	}
	size_t n = json_object_array_length(node);
	bool is_node =
		n > 0 && json_object_is_type(json_object_array_get_idx(node, 0), json_type_string);
	size_t total = is_node ? 1 : 0;
	for (size_t i = 0; i < n; i++) {
		total += count_nodes(json_object_array_get_idx(node, i));
	}
	return total;
}

/* Every replacement of one subtree that shrinking tries, smallest first. */
static const char *const simple[] = {"[\"u32\", 0]", "[\"i32\", 0]", "[\"f32\", 0.0]",
	"[\"bool\", false]", "[\"u32\", 1]", "[\"i32\", 1]", "[\"f32\", 1.0]", "[\"bool\", true]",
	"[\"u32\", 4294967295]", "[\"i32\", -1]", "[\"f32\", -0.0]"};

/*
 * Shrinking state: the case being shrunk, the last difference seen, and how many more valid
 * candidates may run. An edit is kept while the mismatch remains.
 */
struct shrink {
	struct run *run;
	json_object *root;
	char why[VY_TEST_WHY_MAX];
	int budget;
};

/* Delete the config's spec values whose constant the program no longer names: a value for an
 * absent constant makes the case invalid, so an edit that removes a constant's last use could
 * otherwise never be kept. */
static void prune_spec(json_object *root)
{
	json_object *spec = json_object_object_get(json_object_object_get(root, "config"), "spec");
	if (!spec) {
		return;
	}
	const char *entry = json_object_to_json_string_ext(
		json_object_object_get(json_object_object_get(root, "program"), "entry"),
		JSON_C_TO_STRING_PLAIN);
	char *text = strdup(entry);
	bool again = text != NULL;
	while (again) {
		again = false;
		json_object_object_foreach(spec, key, value)
		{
			(void)value;
			char quoted[80];
			snprintf(quoted, sizeof(quoted), "\"%s\"", key);
			if (!strstr(text, quoted)) {
				json_object_object_del(spec, key);
				again = true;
				break;
			}
		}
	}
	free(text);
}

static bool keeps(struct shrink *s)
{
	if (s->budget <= 0 || (atomic_load(&s->run->stop) && !s->run->self_test)) {
		return false;
	}
	json_object *tried = NULL;
	if (json_object_deep_copy(s->root, &tried, NULL) != 0) {
		return false;
	}
	prune_spec(tried);
	char *text = text_of(tried);
	json_object_put(tried);
	char why[VY_TEST_WHY_MAX] = "";
	enum outcome o = try_case(s->run, text, SHRINK_TIMEOUT_MS, why, NULL);
	free(text);
	if (o != REFUSED) {
		s->budget--;
	}
	if (o == DIFFERENT) {
		prune_spec(s->root);
		memcpy(s->why, why, sizeof(why));
		return true;
	}
	return false;
}

/*
 * One pass of shrinking over the arrays below `a`: delete an element of a statement list,
 * replace an expression by one of its operands or by a simple literal. Returns true when an edit
 * was kept.
 */
/* Whether `node` is a literal, ["u32", 7] and the like: what nothing replaces. */
static bool is_literal(json_object *node)
{
	const char *kind = json_object_get_string(json_object_array_get_idx(node, 0));
	for (int t = 0; t < T_COUNT && kind; t++) {
		if (strcmp(kind, ty_name[t]) == 0) {
			return true;
		}
	}
	return false;
}

/*
 * Replace the statement a[i] (a block, region, if or loop) by the statements of one of its bodies.
 * Returns true when that kept the mismatch.
 */
static bool splice_body(struct shrink *s, json_object *a, size_t i)
{
	json_object *child = json_object_array_get_idx(a, i);
	const char *kind = json_object_get_string(json_object_array_get_idx(child, 0));
	static const struct {
		const char *kind;
		size_t bodies[2]; /* indices of the statement lists; 0: none */
	} shapes[] = {{"block", {1, 0}}, {"region", {2, 0}}, {"if", {2, 3}}, {"loop", {4, 0}}};
	for (size_t k = 0; kind && k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		if (strcmp(kind, shapes[k].kind) != 0) {
			continue;
		}
		for (size_t b = 0; b < 2 && shapes[k].bodies[b]; b++) {
			json_object *body = json_object_array_get_idx(child, shapes[k].bodies[b]);
			size_t len = json_object_array_length(body);
			json_object_get(child);
			json_object_array_del_idx(a, i, 1);
			for (size_t j = 0; j < len; j++) {
				insert_at(a, i + j,
					json_object_get(json_object_array_get_idx(body, j)));
			}
			if (keeps(s)) {
				json_object_put(child);
				return true;
			}
			if (len) {
				json_object_array_del_idx(a, i, len);
			}
			insert_at(a, i, child);
		}
	}
	return false;
}

static bool shrink_in(struct shrink *s, json_object *a)
{
	if (!json_object_is_type(a, json_type_array)) {
		return false;
	}
	bool changed = false;
	size_t n = json_object_array_length(a);
	bool statements =
		n == 0 || json_object_is_type(json_object_array_get_idx(a, 0), json_type_array);
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *child = json_object_array_get_idx(a, i);
		if (!json_object_is_type(child, json_type_array)) {
			continue;
		}
		json_object_get(child);
		if (statements) {
			json_object_array_del_idx(a, i, 1);
			if (keeps(s)) {
				json_object_put(child);
				changed = true;
				i--;
				continue;
			}
			insert_at(a, i, child);
			/* Kept: hoist a body in its place, or shrink inside it. */
			if (splice_body(s, a, i)) {
				changed = true;
				i--;
				continue;
			}
			changed = shrink_in(s, child) || changed;
			continue;
		}
		bool replaced = false;
		/* An expression: try each of its array operands in its place, then literals. */
		size_t m = json_object_array_length(child);
		for (size_t j = 1; j < m && !replaced; j++) {
			json_object *sub = json_object_array_get_idx(child, j);
			if (!json_object_is_type(sub, json_type_array) ||
				(json_object_array_length(sub) > 0 &&
					json_object_is_type(json_object_array_get_idx(sub, 0),
						json_type_array))) {
				continue;
			}
			json_object_get(sub);
			json_object_array_put_idx(a, i, sub);
			if (keeps(s)) {
				replaced = true;
			} else {
				json_object_get(child);
				json_object_array_put_idx(a, i, child);
			}
		}
		for (size_t j = 0; j < sizeof(simple) / sizeof(simple[0]) && !replaced; j++) {
			const char *old =
				json_object_to_json_string_ext(child, JSON_C_TO_STRING_PLAIN);
			if (strcmp(old, simple[j]) == 0 || is_literal(child)) {
				break;
			}
			json_object_array_put_idx(a, i, json_tokener_parse(simple[j]));
			if (keeps(s)) {
				replaced = true;
			} else {
				json_object_get(child);
				json_object_array_put_idx(a, i, child);
			}
		}
		if (replaced) {
			changed = true;
			json_object_put(child);
			i--;
			continue;
		}
		json_object_put(child);
		changed = shrink_in(s, child) || changed;
	}
	return changed;
}

/* Drop the buffers (and their inputs) that the shrunk program no longer names. */
static void drop_unused_buffers(struct shrink *s)
{
	json_object *program = json_object_object_get(s->root, "program");
	json_object *buffers = json_object_object_get(program, "buffers");
	json_object *inputs = json_object_object_get(s->root, "inputs");
	const char *entry = json_object_to_json_string_ext(
		json_object_object_get(program, "entry"), JSON_C_TO_STRING_PLAIN);
	char *text = strdup(entry);
	size_t input_at = 0;
	for (size_t i = 0; i < json_object_array_length(buffers);) {
		json_object *b = json_object_array_get_idx(buffers, i);
		const char *name = json_object_get_string(json_object_object_get(b, "name"));
		const char *access = json_object_get_string(json_object_object_get(b, "access"));
		bool takes_input =
			(strcmp(access, "read_only") == 0 || strcmp(access, "uniform") == 0 ||
				strcmp(access, "read_write") == 0) &&
			!json_object_object_get(b, "output");
		char quoted[40];
		snprintf(quoted, sizeof(quoted), "\"%s\"", name);
		if (strstr(text, quoted)) {
			input_at += takes_input;
			i++;
			continue;
		}
		json_object *saved_b = json_object_get(b);
		json_object *saved_in =
			takes_input ? json_object_get(json_object_array_get_idx(inputs, input_at))
				    : NULL;
		json_object_array_del_idx(buffers, i, 1);
		if (takes_input) {
			json_object_array_del_idx(inputs, input_at, 1);
		}
		s->budget++;
		if (keeps(s)) {
			json_object_put(saved_b);
			json_object_put(saved_in);
			continue;
		}
		insert_at(buffers, i, saved_b);
		if (takes_input) {
			insert_at(inputs, input_at, saved_in);
			input_at++;
		}
		i++;
	}
	free(text);
}

/* Drop the case's config if the mismatch remains without it; returns true when it did. */
static bool drop_config(struct shrink *s)
{
	json_object *config = json_object_object_get(s->root, "config");
	if (!config) {
		return false;
	}
	json_object_get(config);
	json_object_object_del(s->root, "config");
	if (!keeps(s)) {
		json_object_object_add(s->root, "config", config);
		return false;
	}
	json_object_put(config);
	return true;
}

/*
 * A run of program `seed` that reached its timeout is run again RERUNS times: when every rerun
 * finishes with the reference's result, the first run was slow, not wrong (on a machine loaded by
 * other work lavapipe's shaders can take many times their usual time), and this says so in `out`
 * and returns true. A device that hung, or a program that loops, times out again.
 */
static bool slow_then_clean(
	struct run *run, FILE *out, uint64_t i, uint64_t seed, const char *text, const char *why)
{
	for (int r = 0; r < RERUNS; r++) {
		char rwhy[VY_TEST_WHY_MAX] = "";
		if (try_case(run, text, RUN_TIMEOUT_MS, rwhy, NULL) != SAME) {
			return false;
		}
	}
	fprintf(out,
		"SLOW program %016" PRIx64 " (number %" PRIu64
		" of the run): %s; run again %d times, it finished each time with the reference's "
		"result (not counted as a mismatch)\n",
		seed, i, why, RERUNS);
	return true;
}

/*
 * Shrink the mismatch of program `seed` (number i of the run) and write the report to `out`;
 * returns the shrunk program's node count.
 */
static size_t report_mismatch(
	struct run *run, FILE *out, uint64_t i, uint64_t seed, const char *text, const char *why)
{
	fprintf(out, "MISMATCH program %016" PRIx64 " (number %" PRIu64 " of the run): %s\n", seed,
		i, why);
	if (run->no_shrink) {
		fprintf(out,
			"  not run again nor shrunk (--no-shrink); as a conformance case:\n%s\n",
			text);
		return 0;
	}
	/* The same program again: a difference that comes and goes depends on the run. */
	int again = 0;
	for (int r = 0; r < RERUNS; r++) {
		char rwhy[VY_TEST_WHY_MAX] = "";
		again += try_case(run, text, RUN_TIMEOUT_MS, rwhy, out) != SAME;
	}
	fprintf(out, "  run again %d times: %d differed%s\n", RERUNS, again,
		again < RERUNS ? " (the difference depends on the run, not only on the program)"
			       : "");
	/* Said at once as well: shrinking can take minutes, and a run stopped meanwhile must
	 * still name the program. */
	pthread_mutex_lock(&run->out_lock);
	printf("difffuzz: program %016" PRIx64 " (number %" PRIu64 ") differs; shrinking it\n",
		seed, i);
	fflush(stdout);
	pthread_mutex_unlock(&run->out_lock);
	struct shrink s = {.run = run, .root = json_tokener_parse(text), .budget = SHRINK_BUDGET};
	memcpy(s.why, why, VY_TEST_WHY_MAX);
	json_object *program = json_object_object_get(s.root, "program");
	size_t before = count_nodes(json_object_object_get(program, "entry"));
	/* The config goes first where it can (a spec value the config names keeps its spec
	 * expression from being deleted), and is tried again once the program is small; when it
	 * goes then, the statements it kept are tried again. */
	drop_config(&s);
	do {
		while (shrink_in(&s, json_object_object_get(program, "entry"))) {
		}
	} while (drop_config(&s));
	drop_unused_buffers(&s);
	size_t after = count_nodes(json_object_object_get(program, "entry"));
	fprintf(out,
		"  shrunk from %zu to %zu IR nodes (%d of %d runs left%s): %s\n"
		"  as a conformance case:\n%s\n",
		before, after, s.budget, SHRINK_BUDGET,
		atomic_load(&run->stop) && !run->self_test ? ", stopped by a signal" : "", s.why,
		json_object_to_json_string_ext(
			s.root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(s.root);
	return after;
}

#ifdef VY_HAVE_VULKAN
/* The GLSL that the Vulkan backend generates for the program of `text` (exact math assumed). */
static void dump_glsl(FILE *out, const char *text)
{
	struct vy_test_case k = {0};
	char why[VY_TEST_WHY_MAX];
	vy_spec_map_init(&k.spec);
	if (vy_test_case_load_json(&k, json_tokener_parse(text), why) == 0) {
		struct vy_err err = {0};
		struct vy_vk_codegen_options opts = {.math = {.fma_fused = true,
							     .div_exact = true,
							     .sqrt_exact = true,
							     .fold_exact = true,
							     .select_exact = true}};
		char *glsl = NULL;
		struct vy_vk_shader_layout layout;
		if (vy_vmath_lower(k.program, &err) == 0 &&
			vy_vk_codegen(k.program, &opts, &glsl, &layout, &err) == 0) {
			fprintf(out, "%s\n", glsl);
		} else {
			fprintf(out, "no GLSL: %s\n", err.message);
		}
		free(glsl);
	}
	vy_test_case_finish(&k);
}
#endif

/* A stream in memory, so that a report reaches stdout whole. */
struct buf {
	char *data;
	size_t len;
	FILE *f;
};

static void buf_open(struct buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->f = open_memstream(&b->data, &b->len);
	if (!b->f) {
		fprintf(stderr, "difffuzz: out of memory\n");
		abort();
	}
}

static void buf_flush(struct run *run, struct buf *b)
{
	fclose(b->f);
	if (b->len) {
		pthread_mutex_lock(&run->out_lock);
		fwrite(b->data, 1, b->len, stdout);
		fflush(stdout);
		pthread_mutex_unlock(&run->out_lock);
	}
	free(b->data);
}

/*
 * The first device loss: the program that saw it and every program in flight then (one of
 * them made the device fail, or the device failed on its own), each to replay alone with
 * `--seed S --count 1 --jobs 1`.
 */
static void report_lost(struct run *run, FILE *out, uint64_t i, uint64_t seed, const char *why)
{
	fprintf(out,
		"DEVICE LOST during program %016" PRIx64 " (number %" PRIu64 " of the run): %s\n"
		"  programs in flight then (replay each alone):",
		seed, i, why);
	unsigned n = atomic_load(&run->workers);
	for (unsigned w = 0; w < n && w < MAX_JOBS; w++) {
		uint64_t f = atomic_load(&run->in_flight[w]);
		if (f) {
			fprintf(out, " %016" PRIx64, program_seed(run->seed, f - 1));
		}
	}
	fprintf(out, "\n");
}

static void run_program(struct run *run, uint64_t i, uint64_t *counts)
{
	uint64_t ps = program_seed(run->seed, i);
	json_object *root = generate(ps, counts);
	char *text = text_of(root);
	json_object_put(root);
	struct buf b;
	buf_open(&b);
	if (run->verbose) {
		fprintf(b.f, "program %016" PRIx64 ": %s\n", ps, text);
	}
#ifdef VY_HAVE_VULKAN
	if (run->dump_glsl) {
		dump_glsl(b.f, text);
	}
#endif
	char why[VY_TEST_WHY_MAX] = "";
	enum outcome o = try_case(run, text, RUN_TIMEOUT_MS, why, b.f);
	if (o == LOST && !atomic_exchange(&run->lost, true)) {
		atomic_store(&run->stop, true);
		report_lost(run, b.f, i, ps, why);
	}
	if (o == REFUSED) {
		atomic_fetch_add(&run->refused, 1);
		fprintf(b.f, "GENERATOR BUG program %016" PRIx64 ": %s\n%s\n", ps, why, text);
	} else if (o == SLOW && !run->no_shrink && !run->self_test &&
		   slow_then_clean(run, b.f, i, ps, text, why)) {
		atomic_fetch_add(&run->slow_then_clean, 1);
	} else if (o == DIFFERENT || o == SLOW) {
		atomic_fetch_add(&run->mismatches, 1);
		size_t nodes = report_mismatch(run, b.f, i, ps, text, why);
		if (run->self_test) {
			/* The self-test ends at its first mismatch, judged by the shrunk size. */
			atomic_store(&run->stop, true);
			if (nodes <= SELF_TEST_MAX_NODES && strstr(text, WRONG_FROM)) {
				atomic_store(&run->self_test_rc, 0);
			}
			fprintf(b.f,
				"difffuzz: self-test: the mismatch of program %" PRIu64
				" shrank to %zu IR nodes (at most %d expected)\n",
				i, nodes, SELF_TEST_MAX_NODES);
		}
	}
	free(text);
	uint64_t done = atomic_fetch_add(&run->done, 1) + 1;
	if (done % 100 == 0) {
		fprintf(b.f, "difffuzz: %" PRIu64 " programs, %" PRIu64 " mismatches\n", done,
			(uint64_t)atomic_load(&run->mismatches));
	}
	buf_flush(run, &b);
}

static void *worker(void *arg)
{
	struct run *run = arg;
	uint64_t *counts = calloc(COV_MAX, sizeof(*counts));
	if (!counts) {
		fprintf(stderr, "difffuzz: out of memory\n");
		abort();
	}
	unsigned w = atomic_fetch_add(&run->workers, 1);
	for (;;) {
		uint64_t i = atomic_fetch_add(&run->next, 1);
		if (i >= run->first + run->count || atomic_load(&run->stop)) {
			break;
		}
		atomic_store(&run->in_flight[w], i + 1);
		run_program(run, i, counts);
		atomic_store(&run->in_flight[w], 0);
	}
	pthread_mutex_lock(&run->cov_lock);
	for (size_t c = 0; c < n_cov; c++) {
		run->counts[c] += counts[c];
	}
	pthread_mutex_unlock(&run->cov_lock);
	free(counts);
	return NULL;
}

/*
 * The coverage line: how many constructs the run reached and the rarest ones; every counter with
 * `all`. Returns the number of constructs never reached.
 */
static size_t print_coverage(const struct run *run, bool all)
{
	size_t missing = 0;
	uint64_t least = UINT64_MAX;
	for (size_t c = 0; c < n_cov; c++) {
		missing += run->counts[c] == 0;
		least = run->counts[c] < least ? run->counts[c] : least;
	}
	printf("difffuzz: coverage: %zu of %zu constructs reached", n_cov - missing, n_cov);
	if (missing) {
		printf("; never:");
		for (size_t c = 0; c < n_cov; c++) {
			if (run->counts[c] == 0) {
				printf(" %s", cov_names[c]);
			}
		}
	} else {
		printf("; the rarest (%" PRIu64 " times):", least);
		for (size_t c = 0; c < n_cov; c++) {
			if (run->counts[c] == least) {
				printf(" %s", cov_names[c]);
			}
		}
	}
	printf("\n");
	if (all) {
		for (size_t c = 0; c < n_cov; c++) {
			printf("  %-36s %" PRIu64 "\n", cov_names[c], run->counts[c]);
		}
	}
	return missing;
}

static int add_reference_pair(struct run *run, const char *label, uint32_t subgroup_size)
{
	struct target *t = &run->targets[run->n_targets++];
	snprintf(t->label, sizeof(t->label), "%s", label);
	struct vy_registry_options opts = {.subgroup_size = subgroup_size};
	struct vy_err err = {0};
	if (vy_registry_open(VY_REFERENCE_ID, &opts, &t->oracle, &err) ||
		(!t->backend && vy_registry_open(VY_REFERENCE_ID, &opts, &t->backend, &err))) {
		printf("difffuzz: the reference did not open: %s\n", err.message);
		return 2;
	}
	return 0;
}

/*
 * The Vulkan backend in one of its test modes (vk_backend.h), in place of the plain one:
 * --staged puts every buffer in device-local memory behind staging copies, none read or written
 * by the shaders in host memory, to tell whether a difference comes from buffers the device
 * reaches over the bus; --discrete makes a unified-memory device (lavapipe) take a discrete
 * GPU's paths, small buffers in host-visible memory and large ones staged, to look on lavapipe
 * for what only a GPU showed.
 */
static int open_test_mode(struct run *run)
{
#ifndef VY_HAVE_VULKAN
	printf("difffuzz: --%s needs the Vulkan backend, which this build lacks\n",
		run->vk_test_label + strlen("vulkan-"));
	return 2;
#else
	struct vy_vulkan_options opts = {.kernel_cache_entries = run->kernel_cache};
	struct vy_backend *b = NULL;
	struct vy_err err = {0};
	int rc = vy__vk_backend_create_for_test(&opts, run->vk_test_flags, &b, &err);
	if (rc) {
		printf("difffuzz: the %s backend did not open: %s\n", run->vk_test_label,
			err.message);
		return 2;
	}
	run->targets[run->n_targets].backend = b;
	return add_reference_pair(run, run->vk_test_label, vy_backend_subgroup_size(b)) ? 2 : 0;
#endif
}

static int open_targets(struct run *run, const char **only, size_t n_only)
{
	if (run->self_test) {
		int rc = add_reference_pair(run, "wrong-reference", 0);
		run->targets[0].wrong = true;
		return rc;
	}
	if (run->reference_only) {
		return add_reference_pair(run, "reference-again", 0);
	}
	/* Every program is new, so a compiled program is never reused: no disk cache (it is off
	 * without a key), and few compiled programs kept in memory. */
	struct vy_registry_options vk_opts = {.kernel_cache_entries = run->kernel_cache};
	struct vy_registry_set set;
	vy_registry_open_all(&vk_opts, &set);
	int rc = 0;
	for (size_t i = 0; i < set.len; i++) {
		struct vy_registry_opened *o = &set.items[i];
		bool wanted = n_only == 0;
		for (size_t j = 0; j < n_only; j++) {
			wanted = wanted || strcmp(only[j], o->entry->id) == 0;
		}
		if (strcmp(o->entry->id, VY_REFERENCE_ID) == 0 || !wanted ||
			(run->vk_test_flags && strcmp(o->entry->id, VY_VULKAN_BACKEND_ID) == 0)) {
			continue;
		}
		if (!o->backend) {
			bool no_device = strstr(o->err.message, "no Vulkan device") != NULL;
			printf("difffuzz: backend %s did not open: %s\n", o->entry->id,
				o->err.message);
			if (!no_device) {
				rc = 2;
			}
			continue;
		}
		run->targets[run->n_targets].backend = o->backend;
		o->backend = NULL;
		if (add_reference_pair(run, o->entry->id,
			    vy_backend_subgroup_size(run->targets[run->n_targets].backend))) {
			rc = 2;
		}
	}
	vy_registry_set_finish(&set);
	if (run->vk_test_flags) {
		rc = rc ? rc : open_test_mode(run);
	}
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: difffuzz [--seed S|random] [--from I] [--count N] [--jobs N] [--backend "
		"ID]... [--staged|--discrete|--coarse] [--queued] [--kernel-cache N] [--no-shrink] "
		"[--require-coverage] [--coverage] [--self-test] [--reference-only] [--dump-glsl] "
		"[--verbose]\n");
}

static struct run *signalled_run;

/* SIGINT or SIGTERM (`timeout`): finish the programs in hand, print what was found and the
 * totals; a second signal ends the process at once. */
static void on_stop_signal(int sig)
{
	if (atomic_exchange(&signalled_run->stop, true)) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

int main(int argc, char **argv)
{
	static struct run run;
	signalled_run = &run;
	run.kernel_cache = KERNEL_CACHE_ENTRIES;
	run.seed = 1;
	run.count = 100;
	long jobs = sysconf(_SC_NPROCESSORS_ONLN);
	bool require_coverage = false, show_coverage = false;
	const char *only[VY_REGISTRY_MAX];
	size_t n_only = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "random") == 0) {
				/* A new seed per run, printed below so that a failure can be
				 * replayed. */
				struct timespec now;
				clock_gettime(CLOCK_REALTIME, &now);
				uint64_t mixed = (uint64_t)now.tv_sec * 1000000007u ^
						 (uint64_t)now.tv_nsec ^ (uint64_t)getpid() << 32;
				run.seed = mix(&mixed) >> 1;
			} else {
				run.seed = strtoull(argv[i], NULL, 0);
			}
		} else if (strcmp(argv[i], "--staged") == 0) {
			run.vk_test_flags = VY__VK_TEST_STAGING | VY__VK_TEST_COPY_ALL;
			run.vk_test_label = "vulkan-staged";
		} else if (strcmp(argv[i], "--no-shrink") == 0) {
			run.no_shrink = true;
		} else if (strcmp(argv[i], "--queued") == 0) {
			run.queued = true;
		} else if (strcmp(argv[i], "--discrete") == 0) {
			run.vk_test_flags = VY__VK_TEST_STAGING;
			run.vk_test_label = "vulkan-discrete";
		} else if (strcmp(argv[i], "--coarse") == 0) {
			run.vk_test_flags = VY__VK_TEST_COARSE_ALL;
			run.vk_test_label = "vulkan-coarse";
		} else if (strcmp(argv[i], "--kernel-cache") == 0 && i + 1 < argc) {
			run.kernel_cache = (uint32_t)strtoul(argv[++i], NULL, 0);
		} else if (strcmp(argv[i], "--from") == 0 && i + 1 < argc) {
			run.first = strtoull(argv[++i], NULL, 0);
		} else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
			run.count = strtoull(argv[++i], NULL, 0);
		} else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) {
			jobs = strtol(argv[++i], NULL, 0);
			if (jobs < 1 || jobs > MAX_JOBS) {
				fprintf(stderr, "difffuzz: --jobs takes 1 to %d\n", MAX_JOBS);
				return 2;
			}
		} else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc &&
			   n_only < VY_REGISTRY_MAX) {
			only[n_only++] = argv[++i];
		} else if (strcmp(argv[i], "--require-coverage") == 0) {
			require_coverage = true;
		} else if (strcmp(argv[i], "--coverage") == 0) {
			show_coverage = true;
		} else if (strcmp(argv[i], "--self-test") == 0) {
			run.self_test = true;
		} else if (strcmp(argv[i], "--reference-only") == 0) {
			run.reference_only = true;
		} else if (strcmp(argv[i], "--dump-glsl") == 0) {
			run.dump_glsl = true;
		} else if (strcmp(argv[i], "--verbose") == 0) {
			run.verbose = true;
		} else {
			usage();
			return 2;
		}
	}
	if (jobs < 1 || run.self_test) {
		/* The self-test judges its first mismatch, the same one every time. */
		jobs = 1;
	}
	jobs = jobs > MAX_JOBS ? MAX_JOBS : jobs;
	cov_init();
	pthread_mutex_init(&run.out_lock, NULL);
	pthread_mutex_init(&run.cov_lock, NULL);
	atomic_store(&run.self_test_rc, 1);
	int rc = open_targets(&run, only, n_only);
	if (rc == 0 && run.n_targets == 0) {
		printf("difffuzz: no Vulkan device: only the reference is compiled in or opens, "
		       "nothing to compare\n");
	}
	printf("difffuzz: seed %" PRIu64 ", %" PRIu64 " programs, %ld jobs, backends:", run.seed,
		run.count, jobs);
	for (size_t i = 0; i < run.n_targets; i++) {
		printf(" %s", run.targets[i].label);
	}
	printf("\n");
	fflush(stdout);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	atomic_store(&run.next, run.first);
	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (rc != 2) {
		pthread_t threads[MAX_JOBS];
		for (long j = 0; j < jobs; j++) {
			if (pthread_create(&threads[j], NULL, worker, &run)) {
				fprintf(stderr, "difffuzz: cannot start a thread\n");
				abort();
			}
		}
		for (long j = 0; j < jobs; j++) {
			pthread_join(threads[j], NULL);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	uint64_t done = atomic_load(&run.done);
	printf("difffuzz: %" PRIu64 " programs in %.1f s (%.1f programs/s), %" PRIu64
	       " mismatches, %" PRIu64 " refused by the validator (generator bugs)\n",
		done, secs, secs > 0 ? (double)done / secs : 0.0,
		(uint64_t)atomic_load(&run.mismatches), (uint64_t)atomic_load(&run.refused));
	if (atomic_load(&run.slow_then_clean)) {
		printf("difffuzz: %" PRIu64 " runs reached the timeout and then ran clean %d times "
		       "(SLOW above; not mismatches)\n",
			(uint64_t)atomic_load(&run.slow_then_clean), RERUNS);
	}
	size_t missing = print_coverage(&run, show_coverage);
	int validation = vy_test_vulkan_validation_check();
	for (size_t i = 0; i < run.n_targets; i++) {
		vy_backend_destroy(run.targets[i].backend);
		vy_backend_destroy(run.targets[i].oracle);
	}
	pthread_mutex_destroy(&run.out_lock);
	pthread_mutex_destroy(&run.cov_lock);
	if (rc) {
		return rc;
	}
	if (require_coverage && missing) {
		printf("difffuzz: %zu constructs were never generated (--require-coverage). Fix: "
		       "repair the generator, or run more programs\n",
			missing);
		return 1;
	}
	if (run.self_test) {
		if (atomic_load(&run.self_test_rc)) {
			printf("difffuzz: self-test failed: %s. Fix: repair the shrinker or the "
			       "comparison\n",
				atomic_load(&run.mismatches)
					? "the mismatch did not shrink to a small case"
					: "the wrong backend was never caught");
		}
		return atomic_load(&run.self_test_rc) || atomic_load(&run.refused) ? 1 : 0;
	}
	if (atomic_load(&run.lost)) {
		printf("difffuzz: the device was lost (DEVICE LOST above); the run stopped there. "
		       "Fix: "
		       "replay the programs in flight one by one to find the one that fails the "
		       "device\n");
		return 1;
	}
	return atomic_load(&run.mismatches) || atomic_load(&run.refused) || validation ? 1 : 0;
}
