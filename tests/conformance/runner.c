/*
 * The conformance runner (DESIGN.md §9; the case format is in README.md beside this file). It
 * loads every case of a corpus directory, runs it on the reference backend (the oracle, at the
 * subgroup size the case assumes) and on every other compiled-in backend that opens, checks the
 * reference's results against the outputs or error written in the case, compares every other
 * backend's results with the reference's byte for byte, and measures the ULP error of the lowered
 * math functions against libm in double precision. A case without subgroup operations also runs
 * on the reference at a second subgroup size, which must not change its results.
 *
 *   conformance [--backend ID]... [--shard K/N] CORPUS_DIR [FILTER]...
 *
 * FILTERs select the cases whose name contains one of them. --backend limits the backends
 * compared with the reference to those named (the reference always runs). --shard K/N runs the
 * K-th of N shares of the selected cases, taken in turn in name order (the test suite runs the
 * corpus as N tests side by side, the costly lowered functions spread over all of them). One line
 * is printed per case and backend, then the ULP table and a summary; the exit status is 0 when
 * every run passed, 1 when any failed (or no case matched), 2 for a usage error.
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
#include "case.h"
#include "err.h"
#include "ir.h"
#include "reference/reference.h"
#include "registry.h"

#define MAX_ORACLES 8
#define MAX_ULP_ROWS 64
#define MAX_FILTERS 32
#define MAX_SKIPS 64
/* The reference also runs every case without subgroup operations at this size (NVIDIA's), to
 * check that the simulated size changes nothing there. */
#define OTHER_SUBGROUP_SIZE 32u

/* ---- Backends and results ---- */

struct target {
	struct vy_backend *backend; /* owned */
	char label[48];
	uint32_t subgroup_size;
	double seconds; /* spent in dispatches, over the corpus */
};

struct ulp_row {
	char op[16];
	double worst;
	float worst_at;
	double max;
	uint64_t points;
};

struct runner {
	uint32_t shard;    /* 0-based share of the selected cases this run takes */
	uint32_t n_shards; /* 1: every selected case */
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
	const struct vy_test_result *res, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* One line per case and backend; `res` gives the run time, NULL when nothing ran. */
static void report(struct runner *r, const char *status, const char *name, const char *label,
	const struct vy_test_result *res, const char *fmt, ...)
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
		vy_test_why(why, "too many subgroup sizes in one corpus (at most %d)", MAX_ORACLES);
		return NULL;
	}
	struct vy_registry_options opts = {.subgroup_size = subgroup_size};
	struct vy_err err = {0};
	struct target *t = &r->oracles[r->n_oracles];
	if (vy_registry_open(VY_REFERENCE_ID, &opts, &t->backend, &err)) {
		vy_test_why(why, "cannot open the reference at subgroup size %" PRIu32 ": %s",
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

static void run_case(struct runner *r, const struct vy_test_case *k, struct target *t,
	struct vy_test_result *res)
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

/* The reference's result against the case's written expectation. */
static bool check_expectation(
	struct runner *r, const struct vy_test_case *k, const struct vy_test_result *res, char *why)
{
	char err_text[VY_ERR_MESSAGE_MAX + VY_ERR_AT_MAX + 64];
	if (k->expect_code) {
		if (res->rc == 0) {
			vy_test_why(why, "expected %s%s%s, but the dispatch succeeded",
				vy_err_name(k->expect_code), k->expect_trap ? " " : "",
				k->expect_trap ? k->expect_trap : "");
			return false;
		}
		vy_test_describe_error(res, err_text, sizeof(err_text));
		if (res->rc != k->expect_code ||
			(k->expect_trap && !strstr(res->err.message, k->expect_trap)) ||
			(k->expect_at && strcmp(res->err.at, k->expect_at) != 0)) {
			vy_test_why(why, "expected %s%s%s%s%s, got %s", vy_err_name(k->expect_code),
				k->expect_trap ? " " : "", k->expect_trap ? k->expect_trap : "",
				k->expect_at ? " at " : "", k->expect_at ? k->expect_at : "",
				err_text);
			return false;
		}
		r->checked_errors++;
		vy_test_why(why, "%s as expected", err_text);
		return true;
	}
	if (res->rc) {
		vy_test_describe_error(res, err_text, sizeof(err_text));
		vy_test_why(why, "%s", err_text);
		return false;
	}
	if (res->outputs.len != k->plan->n_outputs) {
		vy_test_why(why, "%zu outputs, the program has %" PRIu32, res->outputs.len,
			k->plan->n_outputs);
		return false;
	}
	if (!k->expect_outputs) {
		vy_test_why(why, "ran (no written expectation)");
		return true;
	}
	size_t n_checked = 0, words = 0;
	for (size_t o = 0; o < k->plan->n_outputs; o++) {
		json_object *e = json_object_array_get_idx(k->expect_outputs, o);
		if (!e) {
			continue;
		}
		struct vy_test_words want = {0};
		char inner[VY_TEST_WHY_MAX];
		if (vy_test_gen_eval(e, vy_test_case_output(k, o)->type, &want, inner)) {
			vy_test_why(why, "expect.outputs[%zu]: %s", o, inner);
			vy_test_words_finish(&want);
			return false;
		}
		bool same = vy_test_same_words(k, o, res->outputs.items[o].data,
			res->outputs.items[o].len, want.v, want.len, "got", "expected", why);
		words += want.len;
		vy_test_words_finish(&want);
		if (!same) {
			return false;
		}
		n_checked++;
	}
	r->checked_outputs++;
	vy_test_why(why, "%zu of %" PRIu32 " outputs match the expectation (%zu values)", n_checked,
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
	struct runner *r, const struct vy_test_case *k, const struct vy_test_result *res, char *why)
{
	bool ok = true;
	char line[VY_TEST_WHY_MAX] = "";
	size_t used = 0;
	for (size_t c = 0; c < k->n_ulp; c++) {
		const struct vy_test_ulp_check *u = &k->ulp[c];
		const struct vy_test_words *in = &k->inputs[u->input];
		const struct vy_test_words *in2 = &k->inputs[u->input2];
		const struct vy_output *out = &res->outputs.items[u->output];
		struct ulp_row *row = ulp_row(r, u->op, u->max);
		double worst = 0;
		float worst_at = 0;
		uint64_t points = 0;
		for (size_t i = 0; i < in->len && 4 * i + 4 <= out->len; i++) {
			float x = vy_test_f32_loaded(vy_test_word_at((const uint8_t *)&in->v[i]));
			float y = i < in2->len ? vy_test_f32_loaded(vy_test_word_at(
							 (const uint8_t *)&in2->v[i]))
					       : 0.0f;
			if (!(x >= u->lo && x <= u->hi) ||
				(u->fn2 && !(y >= u->lo && y <= u->hi && i < in2->len))) {
				continue;
			}
			double exact = u->fn2 ? u->fn2((double)x, (double)y) : u->fn((double)x);
			/* Results beyond the f32 range, or in the flushed subnormal range, have no
			 * meaningful ULP error. */
			if (!isfinite(exact) || fabs(exact) > FLT_MAX ||
				(exact != 0 && fabs(exact) < FLT_MIN)) {
				continue;
			}
			double e = ulp_error(
				vy_test_f32_of(vy_test_word_at(out->data + 4 * i)), exact);
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
	vy_test_why(why, "%s%s", ok ? "" : "over the maximum: ", line);
	return ok;
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
	char path[4096], why[VY_TEST_WHY_MAX] = "";
	struct vy_test_case k = {0};
	snprintf(k.name, sizeof(k.name), "%.*s", (int)(strlen(file) - 5), file);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	r->cases++;
	vy_spec_map_init(&k.spec);
	if (vy_test_case_load(&k, path, why)) {
		r->broken_cases++;
		report(r, "FAIL", k.name, "(case)", NULL, "%s", why);
		vy_test_case_finish(&k);
		return;
	}
	uint32_t sg = k.subgroup_size ? k.subgroup_size : VY_REFERENCE_DEFAULT_SUBGROUP_SIZE;
	struct target *oracle = oracle_for(r, sg, why);
	if (!oracle) {
		report(r, "FAIL", k.name, "reference", NULL, "%s", why);
		vy_test_case_finish(&k);
		return;
	}
	struct vy_test_result ref;
	run_case(r, &k, oracle, &ref);
	bool ok = check_expectation(r, &k, &ref, why);
	if (ok && k.n_ulp && ref.rc == 0) {
		char detail[VY_TEST_WHY_MAX];
		memcpy(detail, why, sizeof(detail));
		ok = check_ulp(r, &k, &ref, why);
		if (ok) {
			char both[VY_TEST_WHY_MAX];
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
			struct vy_test_result res;
			run_case(r, &k, alt, &res);
			bool same = vy_test_same_as_reference(&k, &ref, &res, alt->label, why);
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
		struct vy_test_result res;
		run_case(r, &k, t, &res);
		if (res.rc == VY_E_UNSUPPORTED_FEATURE && ref.rc == 0) {
			report(r, "SKIP", k.name, t->label, &res, "unsupported: %s",
				res.err.message);
		} else {
			bool same = vy_test_same_as_reference(&k, &ref, &res, t->label, why);
			report(r, same ? "PASS" : "FAIL", k.name, t->label, &res, "%s", why);
		}
		vy_outputs_finish(&res.outputs);
	}
	vy_outputs_finish(&ref.outputs);
	vy_test_case_finish(&k);
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
	char **names = vy_test_xcalloc(cap, sizeof(*names));
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
	fprintf(stderr,
		"usage: conformance [--backend ID]... [--shard K/N] CORPUS_DIR [FILTER]...\n");
}

/* "K/N" with 1 <= K <= N <= 64. */
static bool parse_shard(const char *text, struct runner *r)
{
	unsigned k = 0, n = 0;
	char end = 0;
	if (sscanf(text, "%u/%u%c", &k, &n, &end) != 2 || k < 1 || k > n || n > 64) {
		fprintf(stderr,
			"conformance: --shard wants K/N with 1 <= K <= N <= 64, got \"%s\"\n"
			"Fix: pass for example --shard 2/3 for the second of three shares\n",
			text);
		return false;
	}
	r->shard = k - 1;
	r->n_shards = n;
	return true;
}

int main(int argc, char **argv)
{
	static struct runner r = {.n_shards = 1};
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
		} else if (strcmp(argv[i], "--shard") == 0 && i + 1 < argc) {
			if (!parse_shard(argv[++i], &r)) {
				return 2;
			}
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
	size_t turn = 0;
	for (size_t i = 0; i < n_files; i++) {
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(strlen(files[i]) - 5), files[i]);
		if (selected(&r, name) && turn++ % r.n_shards == r.shard) {
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
	int validation = vy_test_vulkan_validation_check();
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
