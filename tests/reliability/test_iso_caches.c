/*
 * The caches against one hostile user (docs/security.md): a flood of distinct programs must leave
 * the daemon's memory flat once its caches are full, requests whose programs fail must leave
 * nothing on disk, and the disk stores must stay under disk_cache_bytes, dropping the least
 * recently used files first, so that a program in use survives a restart.
 *
 * Every attack runs as uid 61001 against a daemon of its own whose socket is open to all.
 *
 * By hand: VYRED_ISO_FLOOD_MS lengthens the flood of distinct programs (14000 by default) and
 * VYRED_ISO_TRACE=1 prints its RSS curve, to measure what a change costs per program.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel.h"

#define ATTACKER 61001

/* out[gid] = gid * k + salt: each (k, salt) is a program of its own. */
static struct vy_program *distinct_program(uint32_t k, uint32_t salt)
{
	char name[48];
	snprintf(name, sizeof(name), "distinct-%u-%u", k, salt);
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_expr *v = vy_ir_binary(p, VY_BIN_ADD,
		vy_ir_binary(p, VY_BIN_MUL, vy_ir_gid(p, 0), vy_ir_u32(p, k)), vy_ir_u32(p, salt));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), v), NULL));
	return p;
}

static int send_program(struct tc *c, enum vy_op op, const struct vy_program *p)
{
	struct tc_msg m;
	tc_begin(c, &m, op, op == VY_OP_DISPATCH ? 2 : 1);
	t_pack_program(&m.pk, p);
	if (op == VY_OP_DISPATCH) {
		vy_pack_cstr(&m.pk, "inputs");
		msgpack_pack_array(&m.pk, 0);
	}
	return tc_send(c, &m, -1);
}

/* Bytes of the regular files under `dir` (0 when it does not exist). */
static _Thread_local uint64_t tree_total;

static int tree_add(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (type == FTW_F && S_ISREG(st->st_mode)) {
		tree_total += (uint64_t)st->st_size;
	}
	return 0;
}

static uint64_t tree_bytes(const char *dir)
{
	tree_total = 0;
	nftw(dir, tree_add, 16, FTW_PHYS);
	return tree_total;
}

static int tree_rm(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* --- a flood of distinct programs ------------------------------------------------------ */

struct flood {
	const char *sock;
	long deadline_ms;         /* CLOCK_MONOTONIC */
	uint32_t max;             /* programs at most */
	_Atomic uint64_t *done;   /* shared with the test: programs answered so far */
	_Atomic uint64_t *failed; /* shared: the first failure's code, 0 when none */
};

/* Compile distinct programs, four in flight, until the deadline or `max`. Compiles alone: with
 * nothing dispatched, nothing but the daemon makes the driver free the pipelines it evicts. */
static int flood_run(void *arg)
{
	struct flood *f = arg;
	struct tc c;
	if (tc_connect(&c, f->sock) != 0 || tc_hello(&c, "flood") != 0) {
		return 1;
	}
	uint32_t sent = 0;
	uint32_t answered = 0;
	while (answered < sent || (sent < f->max && rel_now_ms() < f->deadline_ms)) {
		while (sent < f->max && sent - answered < 4 && rel_now_ms() < f->deadline_ms) {
			struct vy_program *p = distinct_program(sent + 2, 0x5eed);
			int rc = send_program(&c, VY_OP_COMPILE, p);
			vy_program_destroy(p);
			if (rc != 0) {
				return 2;
			}
			sent++;
		}
		struct tc_reply r;
		if (tc_recv(&c, &r, 60000) != 0) {
			return 3;
		}
		int code = tc_code(&r);
		tc_reply_free(&r);
		if (code != 0) {
			uint64_t none = 0;
			atomic_compare_exchange_strong(f->failed, &none, (uint64_t)-code);
			return 4;
		}
		answered++;
		atomic_store(f->done, answered);
	}
	tc_close(&c);
	return 0;
}

struct sample {
	uint64_t done;
	long rss_kib;
};

static int by_rss(const void *a, const void *b)
{
	long x = *(const long *)a;
	long y = *(const long *)b;
	return (x > y) - (x < y);
}

/* The median RSS of the samples taken while `done` was in [lo, hi). */
static long window_rss(const struct sample *s, size_t n, uint64_t lo, uint64_t hi, size_t *count)
{
	long *v = calloc(n ? n : 1, sizeof(*v));
	cr_assert_not_null(v);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i].done >= lo && s[i].done < hi && s[i].rss_kib > 0) {
			v[k++] = s[i].rss_kib;
		}
	}
	*count = k;
	long median = -1;
	if (k) {
		qsort(v, k, sizeof(*v), by_rss);
		median = v[k / 2];
	}
	free(v);
	return median;
}

/*
 * Bounds of 8 programs and 8 pipelines fill within a dozen programs; the window "full" is taken
 * after FLOOD_FULL programs (the allocator's arenas and ASan's 16 MiB quarantine have settled by
 * then), each window over a sixth of the programs sent (lavapipe under ASan compiles only a few
 * per second). The bound: the last window at most 16 MiB above the first, which 300 KiB per
 * program (what the unbounded caches cost on lavapipe) passes within 55 programs.
 */
#define FLOOD_ENTRIES 8
#define FLOOD_FULL (4 * FLOOD_ENTRIES)
#define FLOOD_MARGIN_KIB (16 * 1024)

Test(isolation, distinct_programs_keep_memory_flat_once_the_caches_are_full)
{
	/*
	 * Under ASan, two things of ASan's own would read as growth here. Its quarantine holds
	 * freed memory before reuse: rel_lean_asan's 16 MiB takes some 60 of lavapipe's compiles
	 * to fill (about 250 KiB of frees each), more than this flood gets through under ASan; 1
	 * MiB fills within the first programs. And it keeps the stack of every allocation site it
	 * has seen, never freed: LLVM's compiles keep finding new ones (about 100 KiB per program),
	 * so this daemon records none. Without ASan the settings are ignored.
	 */
	const char *asan = getenv("ASAN_OPTIONS");
	char *asan_saved = asan ? strdup(asan) : NULL;
	if (!asan || !strstr(asan, "quarantine_size_mb")) {
		char opts[1024];
		snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=1:malloc_context_size=0",
			asan ? asan : "", asan && *asan ? ":" : "");
		setenv("ASAN_OPTIONS", opts, 1);
	}
	rel_lean_asan();
	/* Vulkan's validation layer keeps state for every shader it has seen (about 100 KiB per
	 * program on lavapipe): memory of the layer, not of vyred, so this daemon runs without. */
	const char *validation = getenv("VYRED_VULKAN_VALIDATION");
	char *saved = validation ? strdup(validation) : NULL;
	setenv("VYRED_VULKAN_VALIDATION", "0", 1);
	char config[512];
	snprintf(config, sizeof(config),
		"[daemon]\nsocket_mode = 0666\n[cache]\nprogram_cache_entries = %d\n"
		"pipeline_cache_entries = %d\n",
		FLOOD_ENTRIES, FLOOD_ENTRIES);
	struct vyd d;
	t_start(&d, config);
	if (asan_saved) {
		setenv("ASAN_OPTIONS", asan_saved, 1);
		free(asan_saved);
	} else {
		unsetenv("ASAN_OPTIONS");
	}
	if (saved) {
		setenv("VYRED_VULKAN_VALIDATION", saved, 1);
		free(saved);
	} else {
		unsetenv("VYRED_VULKAN_VALIDATION");
	}
	struct tc c;
	tc_open(&c, d.sock, "watch");
	bool vulkan = rel_on_vulkan(&c);
	_Atomic uint64_t *shared =
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(shared, MAP_FAILED);
	atomic_init(&shared[0], 0);
	atomic_init(&shared[1], 0);
	long t0 = rel_now_ms();
	long rss0 = rel_rss_kib(d.pid);
	/* VYRED_ISO_FLOOD_MS lengthens the flood for a measurement by hand. */
	const char *flood_ms = getenv("VYRED_ISO_FLOOD_MS");
	long budget = flood_ms ? atol(flood_ms) : 14000;
	struct flood f = {d.sock, t0 + budget, flood_ms ? 1000000 : 6000, &shared[0], &shared[1]};
	struct t_user *attacker = rel_spawn_as_user(ATTACKER, ATTACKER, flood_run, &f);
	size_t cap = 1 << 16;
	size_t n = 0;
	struct sample *s = calloc(cap, sizeof(*s));
	cr_assert_not_null(s);
	while (!t_user_ended(attacker)) {
		if (n < cap) {
			s[n].done = atomic_load(&shared[0]);
			s[n].rss_kib = rel_rss_kib(d.pid);
			n++;
		}
		poll(NULL, 0, 20);
	}
	int rc = rel_reap(attacker);
	uint64_t done = atomic_load(&shared[0]);
	cr_assert_eq(rc, 0, "the attacker's client failed at step %d (error %s) after %lu programs",
		rc, shared[1] ? vy_err_name(-(int)shared[1]) : "none", (unsigned long)done);
	long seconds_ms = rel_now_ms() - t0;
	uint64_t entries = t_stat(&c, "pipeline_cache.entries");
	uint64_t evictions = t_stat(&c, "pipeline_cache.evictions");
	uint64_t window = done / 6 > 12 ? done / 6 : 12;
	cr_assert_geq(done, FLOOD_FULL + 3 * window,
		"only %lu programs in %ld ms: too few to see the memory settle",
		(unsigned long)done, seconds_ms);
	if (getenv("VYRED_ISO_TRACE")) {
		for (size_t i = 0; i < n; i += 25) {
			printf("trace: %lu programs, RSS %ld KiB\n", (unsigned long)s[i].done,
				s[i].rss_kib);
		}
	}
	size_t n_full;
	size_t n_last;
	long full = window_rss(s, n, FLOOD_FULL, FLOOD_FULL + window, &n_full);
	long last = window_rss(s, n, done - window, done + 1, &n_last);
	free(s);
	munmap(shared, 4096);
	printf("isolation: %s: %lu distinct programs in %ld ms, caches of %d entries (pipelines "
	       "%lu, evicted %lu): RSS %ld MiB at start, %ld MiB once full (after %d), %ld MiB "
	       "over the last %lu (%+.1f KiB per program; bound: full + %d MiB)\n",
		vulkan ? "vulkan" : "reference", (unsigned long)done, seconds_ms, FLOOD_ENTRIES,
		(unsigned long)entries, (unsigned long)evictions, rss0 / 1024, full / 1024,
		FLOOD_FULL, last / 1024, (unsigned long)window,
		(double)(last - full) / (double)(done - FLOOD_FULL - window),
		FLOOD_MARGIN_KIB / 1024);
	cr_expect(
		n_full > 0 && n_last > 0, "no RSS samples in a window (%zu, %zu)", n_full, n_last);
	cr_expect_leq(entries, FLOOD_ENTRIES);
	cr_expect_gt(evictions, 0);
	cr_expect_leq(last, full + FLOOD_MARGIN_KIB,
		"RSS grew from %ld KiB once the caches were full to %ld KiB after %lu programs",
		full, last, (unsigned long)done);
	tc_close(&c);
	rel_stop(&d, true);
}

/* --- requests whose programs fail ------------------------------------------------------ */

/*
 * A program of 40 statements, made to fail: kind 0 asks for 2048
 * invocations per workgroup (valid in itself, above every device's limit: it fails when its
 * pipeline is built), kind 1 reads a variable it never declares (fails validation), kind 2
 * divides by zero (its pipeline builds; each dispatch traps).
 */
static struct vy_program *failing_program(int kind, uint32_t salt)
{
	char name[48];
	snprintf(name, sizeof(name), "failing-%d-%u", kind, salt);
	struct vy_program *p = vy_program_create(name, kind == 0 ? 2048 : 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_I32, 64);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_I32, 64);
	struct vy_node *nodes[41];
	uint32_t n = 0;
	uint32_t len = kind == 2 ? 1 : 40;
	for (uint32_t j = 0; j < len; j++) {
		struct vy_expr *a = vy_ir_load(p, "a", vy_ir_gid(p, 0));
		struct vy_expr *v =
			vy_ir_binary(p, VY_BIN_ADD, a, vy_ir_i32(p, (int32_t)(salt + j)));
		if (kind == 2) {
			v = vy_ir_binary(p, VY_BIN_DIV, v, vy_ir_i32(p, 0));
		}
		nodes[n++] = vy_ir_store(p, "out", vy_ir_gid(p, 0), v);
	}
	if (kind == 1) {
		nodes[n++] = vy_ir_let(p, "x", vy_ir_var(p, "undeclared"));
	}
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, n));
	return p;
}

struct failing {
	const char *sock;
	int first;
	int count;
	uint32_t salt;
	bool control; /* a well-formed program last, which is stored */
};

static const int failing_codes[3] = {VY_E_UNSUPPORTED_FEATURE, VY_E_INVALID_PROGRAM, VY_E_TRAP};

static int failing_run(void *arg)
{
	struct failing *f = arg;
	struct tc c;
	if (tc_connect(&c, f->sock) != 0 || tc_hello(&c, "failing") != 0) {
		return 1;
	}
	for (int i = f->first; i < f->first + f->count; i++) {
		int kind = i % 4 == 3 ? 2 : i % 4 == 2 ? 1 : 0;
		struct vy_program *p = failing_program(kind, f->salt + (uint32_t)i * 1000);
		struct tc_msg m;
		tc_begin(&c, &m, kind == 0 ? VY_OP_COMPILE : VY_OP_DISPATCH, kind == 0 ? 1 : 2);
		t_pack_program(&m.pk, p);
		if (kind != 0) {
			static const int32_t a[64];
			vy_pack_cstr(&m.pk, "inputs");
			msgpack_pack_array(&m.pk, 1);
			msgpack_pack_bin(&m.pk, sizeof(a));
			msgpack_pack_bin_body(&m.pk, a, sizeof(a));
		}
		int rc = tc_send(&c, &m, -1);
		vy_program_destroy(p);
		struct tc_reply r;
		if (rc != 0 || tc_recv(&c, &r, 60000) != 0) {
			return 2;
		}
		int code = tc_code(&r);
		tc_reply_free(&r);
		if (code != failing_codes[kind]) {
			fprintf(stderr, "request %d (kind %d): error %s, expected %s\n", i, kind,
				code ? vy_err_name(code) : "none",
				vy_err_name(failing_codes[kind]));
			return 3;
		}
	}
	if (f->control) {
		struct vy_program *p = distinct_program(3, f->salt);
		int rc = send_program(&c, VY_OP_COMPILE, p);
		vy_program_destroy(p);
		struct tc_reply r;
		if (rc != 0 || tc_recv(&c, &r, 60000) != 0 || tc_code(&r) != 0) {
			return 4;
		}
		tc_reply_free(&r);
	}
	tc_close(&c);
	return 0;
}

Test(isolation, failed_programs_store_nothing_on_disk)
{
	struct vyd d;
	t_start(&d, "[daemon]\nsocket_mode = 0666\n");
	struct tc c;
	tc_open(&c, d.sock, "watch");
	bool vulkan = rel_on_vulkan(&c);
	char programs[400];
	snprintf(programs, sizeof(programs), "%s/programs", d.cache);
	uint64_t before = tree_bytes(d.cache);
	uint64_t before_programs = tree_bytes(programs);
	long t0 = rel_now_ms();
	/* 40 requests: 20 whose pipeline cannot be built, 10 invalid, 10 that trap. */
	struct failing f = {d.sock, 0, 40, 77, false};
	cr_assert_eq(rel_as_user(ATTACKER, ATTACKER, failing_run, &f), 0);
	long ms = rel_now_ms() - t0;
	uint64_t after = tree_bytes(d.cache);
	uint64_t after_programs = tree_bytes(programs);
	/* The same user's well-formed program is stored: the measure sees a write. The write
	 * follows the reply, so the count of writes says when it landed; it is the only one. */
	uint64_t writes = t_stat(&c, "program_cache.disk_writes");
	struct failing ok = {d.sock, 0, 0, 5, true};
	cr_assert_eq(rel_as_user(ATTACKER, ATTACKER, failing_run, &ok), 0);
	cr_expect_eq(rel_wait_stat(&c, "program_cache.disk_writes", writes + 1, 10000), writes + 1,
		"the good program is written once, and nothing else is");
	uint64_t control = tree_bytes(programs);
	printf("isolation: %s: 40 requests whose programs fail in %ld ms: cache folder %lu -> %lu "
	       "bytes, program store %lu -> %lu bytes (bound: unchanged; one good program then "
	       "adds %lu bytes)\n",
		vulkan ? "vulkan" : "reference", ms, (unsigned long)before, (unsigned long)after,
		(unsigned long)before_programs, (unsigned long)after_programs,
		(unsigned long)(control - after_programs));
	cr_expect_eq(after_programs, before_programs, "the program store grew by %lu bytes",
		(unsigned long)(after_programs - before_programs));
	/* Traps fail after the pipeline was built, so its SPIR-V may stay; nothing else may. */
	uint64_t spirv_of_traps = 0;
	if (vulkan) {
		char spirv[400];
		snprintf(spirv, sizeof(spirv), "%s/vulkan/spirv", d.cache);
		spirv_of_traps = tree_bytes(spirv);
	}
	cr_expect_leq(after, before + spirv_of_traps, "the cache folder grew by %lu bytes",
		(unsigned long)(after - before));
	cr_expect_gt(control, after_programs, "a good program was not stored");
	tc_close(&c);
	rel_stop(&d, true);
}

/* --- the disk stores under their cap --------------------------------------------------- */

/* Caps of about six programs' files: a SPIR-V module and a program file each on Vulkan (3.4 KB),
 * a program file alone on the reference backend (250 bytes). */
#define DISK_CAP_VULKAN (24 * 1024)
#define DISK_CAP_REFERENCE (1536)
#define DISK_PROGRAMS 24
#define DISK_REUSE 10

struct disk_flood {
	const char *sock;
	int phase;            /* 0: the flood; 1: after the restart */
	char outcome_kept[8]; /* "cache" of the program kept in use, after the restart */
	char outcome_old[8];  /* of the program used once, first */
};

static int compile_outcome(struct tc *c, const struct vy_program *p, char *outcome, size_t size)
{
	struct tc_reply r;
	if (send_program(c, VY_OP_COMPILE, p) != 0 || tc_recv(c, &r, 60000) != 0) {
		return -1;
	}
	int code = tc_code(&r);
	if (code == 0 && outcome && !tc_str(&r, "cache", outcome, size)) {
		code = -1;
	}
	tc_reply_free(&r);
	return code;
}

/* Phase 0: the old program once, then DISK_PROGRAMS distinct ones with the kept program every
 * DISK_REUSE (the memory caches hold 8, so each use finds it evicted and goes to disk), the
 * kept program last. Phase 1: compile both again and note where they came from. */
static int disk_run(void *arg)
{
	struct disk_flood *f = arg;
	struct tc c;
	if (tc_connect(&c, f->sock) != 0 || tc_hello(&c, "disk") != 0) {
		return 1;
	}
	struct vy_program *kept = distinct_program(1000003, 11);
	struct vy_program *old = distinct_program(1000005, 11);
	int rc = 0;
	if (f->phase == 1) {
		rc = compile_outcome(&c, kept, f->outcome_kept, sizeof(f->outcome_kept)) ? 2 : 0;
		if (rc == 0 && compile_outcome(&c, old, f->outcome_old, sizeof(f->outcome_old))) {
			rc = 3;
		}
	} else {
		rc = compile_outcome(&c, old, NULL, 0) ? 4 : 0;
		for (uint32_t i = 0; i < DISK_PROGRAMS && rc == 0; i++) {
			struct vy_program *p =
				i % DISK_REUSE == 0 ? kept : distinct_program(i + 2, 13);
			rc = compile_outcome(&c, p, NULL, 0) ? 5 : 0;
			if (p != kept) {
				vy_program_destroy(p);
			}
		}
		/* A program still held in memory is not touched on disk when it is used again, so
		 * the kept program's last use comes once the memory caches have let it go; and file
		 * times are as coarse as the kernel's clock tick, so it comes a tick after the
		 * others' writes (the trim orders equal times by name). */
		for (uint32_t i = 0; i < 8 && rc == 0; i++) {
			struct vy_program *p = distinct_program(i + 200, 13);
			rc = compile_outcome(&c, p, NULL, 0) ? 5 : 0;
			vy_program_destroy(p);
		}
		usleep(50000);
		if (rc == 0 && compile_outcome(&c, kept, NULL, 0)) {
			rc = 6;
		}
	}
	vy_program_destroy(kept);
	vy_program_destroy(old);
	tc_close(&c);
	return rc;
}

Test(isolation, disk_stores_stay_under_their_cap_least_recently_used_first)
{
	/* The default backend is Vulkan where the suite runs (lavapipe). */
	const int cap = vyd_backend() ? DISK_CAP_REFERENCE : DISK_CAP_VULKAN;
	char cache[] = "/tmp/vyred-iso-disk-XXXXXX";
	cr_assert_not_null(mkdtemp(cache));
	char config[512];
	snprintf(config, sizeof(config),
		"[daemon]\nsocket_mode = 0666\n[cache]\nprogram_cache_entries = 8\n"
		"pipeline_cache_entries = 8\ndisk_cache_bytes = %d\n",
		cap);
	struct vyd d;
	struct vyd_opts o = {.config = config, .cache = cache};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "watch");
	bool vulkan = rel_on_vulkan(&c);
	tc_close(&c);
	struct disk_flood *shared = mmap(NULL, sizeof(struct disk_flood), PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(shared, MAP_FAILED);
	struct disk_flood f = {d.sock, 0, "", ""};
	long t0 = rel_now_ms();
	struct t_user *client = rel_spawn_as_user(ATTACKER, ATTACKER, disk_run, &f);
	uint64_t most = 0;
	int samples = 0;
	while (!t_user_ended(client)) {
		uint64_t now = tree_bytes(cache);
		most = now > most ? now : most;
		samples++;
		poll(NULL, 0, 5);
	}
	int failed = rel_reap(client);
	cr_assert_eq(failed, 0, "the client failed: %d", failed);
	long ms = rel_now_ms() - t0;
	cr_assert_eq(vyd_stop(&d), 0);
	uint64_t stopped = tree_bytes(cache);
	most = stopped > most ? stopped : most;
	vyd_cleanup(&d);

	/* Started again, the kept program comes back from disk and the old one is gone. */
	cr_assert_eq(vyd_start(&d, &o), 0);
	*shared = (struct disk_flood){d.sock, 1, "", ""};
	int rc = rel_as_user(ATTACKER, ATTACKER, disk_run, shared);
	f = *shared;
	munmap(shared, sizeof(*shared));
	cr_assert_eq(vyd_stop(&d), 0);
	vyd_cleanup(&d);
	/* Started with half the cap, it trims at start. */
	snprintf(config, sizeof(config),
		"[daemon]\nsocket_mode = 0666\n[cache]\nprogram_cache_entries = 8\n"
		"pipeline_cache_entries = 8\ndisk_cache_bytes = %d\n",
		cap / 2);
	cr_assert_eq(vyd_start(&d, &o), 0);
	uint64_t restarted = tree_bytes(cache);
	cr_assert_eq(vyd_stop(&d), 0);
	vyd_cleanup(&d);
	printf("isolation: %s: %d programs with disk_cache_bytes = %d in %ld ms: the store peaked "
	       "at %lu bytes over %d samples, %lu at stop; after a restart the program in use came "
	       "back "
	       "from \"%s\", the one used once first from \"%s\"; restarted with half the cap: %lu "
	       "bytes\n",
		vulkan ? "vulkan" : "reference", DISK_PROGRAMS + 2, cap, ms, (unsigned long)most,
		samples, (unsigned long)stopped, f.outcome_kept, f.outcome_old,
		(unsigned long)restarted);
	nftw(cache, tree_rm, 16, FTW_DEPTH | FTW_PHYS);
	cr_assert_eq(rc, 0, "the client failed after the restart: %d", rc);
	cr_expect_leq(most, (uint64_t)cap);
	cr_expect_leq(restarted, (uint64_t)cap / 2);
	cr_expect_str_eq(f.outcome_kept, "disk");
	cr_expect_str_eq(f.outcome_old, "miss");
}
