/*
 * Load and soak (DESIGN.md §7.2): 256 clients for a bounded time, each running a mix of every
 * operation (dispatches of bytes, by program id, on resident buffers and from shared memory;
 * compiles; named and unnamed buffers; the tables; requests that must fail; reconnects), with
 * every result checked against the reference backend. The daemon's RSS (VmRSS) and descriptor
 * count are sampled four times a second; the last window must not have grown beyond a stated
 * bound over the first, and once the clients are gone every descriptor, buffer and region must
 * be back.
 *
 * VYRED_SOAK_SECONDS sets the duration (default 20). The figures are printed to stderr.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rel.h"

#define CLIENTS 256
#define MAX_SAMPLES 20000

TestSuite(soak, .fini = rel_fini, .timeout = 0);

struct fixture {
	struct vy_program *vadd;
	struct t_inputs vadd_in[REL_SETS];
	struct vy_outputs vadd_want[REL_SETS];
	struct vy_program *saxpy;
	struct t_inputs saxpy_in;
	struct vy_outputs saxpy_want;
	struct vy_program *trap;
	struct vy_program *invalid;
	char vadd_id[64];
};

static struct fixture fx;
static const char *sock_path;
static atomic_bool stop_all;

struct soaker {
	int index;
	struct tc c;
	bool open;
	uint64_t seed;
	int shm_fd;
	uint64_t ops;
	uint64_t by_kind[16];
	uint64_t failures;
	char failure[320];
};

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool fail(struct soaker *w, const char *what, int code, const struct tc_reply *r)
{
	if (!w->failure[0]) {
		snprintf(w->failure, sizeof(w->failure), "client %d, %s: %s%s%.200s", w->index,
			what,
			code < -1000 ? vy_err_name(code)
			: code       ? "connection lost"
				     : "wrong result",
			r && code < -1000 ? ": " : "", r && code < -1000 ? r->r.error.message : "");
	}
	w->failures++;
	return false;
}

static bool op_dispatch(struct soaker *w, bool by_id)
{
	int set = (int)(next_rand(&w->seed) % REL_SETS);
	struct tc_msg m;
	tc_begin(&w->c, &m, VY_OP_DISPATCH, 2);
	if (by_id) {
		vy_pack_cstr(&m.pk, "program_id");
		vy_pack_cstr(&m.pk, fx.vadd_id);
	} else {
		t_pack_program(&m.pk, fx.vadd);
	}
	t_pack_inputs(&m.pk, &fx.vadd_in[set]);
	struct tc_reply r;
	memset(&r, 0, sizeof(r));
	int code = tc_call(&w->c, &m, &r);
	code = code ? code : tc_code(&r);
	bool ok = code == 0 && tc_outputs_equal(&r, &fx.vadd_want[set]);
	if (!ok) {
		fail(w, by_id ? "dispatch by id" : "dispatch", code, &r);
	}
	tc_reply_free(&r);
	return ok;
}

/* saxpy on resident x and y with the output sent to y, then y read back. */
static bool op_resident(struct soaker *w)
{
	const struct t_inputs *in = &fx.saxpy_in;
	uint64_t x = 0;
	uint64_t y = 0;
	int code = rel_alloc(&w->c, in->in[1].len, NULL, &x);
	code = code ? code : rel_alloc(&w->c, in->in[2].len, NULL, &y);
	code = code ? code : rel_upload(&w->c, x, 0, in->in[1].data, in->in[1].len);
	code = code ? code : rel_upload(&w->c, y, 0, in->in[2].data, in->in[2].len);
	bool ok = code == 0;
	if (ok) {
		uint64_t handles[3] = {0, x, y};
		uint64_t to[1] = {y};
		struct tc_reply r;
		code = rel_dispatch(&w->c, fx.saxpy, 3, handles, in->in, 1, to, &r);
		tc_reply_free(&r);
		ok = code == 0;
	}
	uint8_t back[4096];
	if (ok) {
		size_t len = fx.saxpy_want.items[0].len;
		code = rel_download(&w->c, y, 0, len, back);
		ok = code == 0 && memcmp(back, fx.saxpy_want.items[0].data, len) == 0;
	}
	if (x && rel_free(&w->c, x) != 0) {
		ok = false;
	}
	if (y && rel_free(&w->c, y) != 0) {
		ok = false;
	}
	return ok || fail(w, "resident chain", code, NULL);
}

static void pack_shm(msgpack_packer *pk, uint64_t region, uint64_t offset, uint64_t len)
{
	msgpack_pack_map(pk, 1);
	vy_pack_cstr(pk, "shm");
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, region);
	msgpack_pack_uint64(pk, offset);
	msgpack_pack_uint64(pk, len);
}

/* vector_add of set 0 read in place from a memfd attached for this one dispatch. */
static bool op_shm(struct soaker *w)
{
	const struct t_inputs *in = &fx.vadd_in[0];
	struct tc_msg m;
	tc_begin(&w->c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, in->in[0].len + in->in[1].len);
	struct tc_reply r;
	memset(&r, 0, sizeof(r));
	int code = tc_send(&w->c, &m, w->shm_fd);
	code = code ? code : tc_recv(&w->c, &r, 60000);
	code = code ? code : tc_code(&r);
	uint64_t region = 0;
	if (code == 0 && !tc_u64(&r, "region", &region)) {
		code = VY_E_INTERNAL;
	}
	tc_reply_free(&r);
	if (code) {
		return fail(w, "shm_attach", code, NULL);
	}
	tc_begin(&w->c, &m, VY_OP_DISPATCH, 2);
	t_pack_program(&m.pk, fx.vadd);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 2);
	pack_shm(&m.pk, region, 0, in->in[0].len);
	pack_shm(&m.pk, region, in->in[0].len, in->in[1].len);
	code = tc_call(&w->c, &m, &r);
	code = code ? code : tc_code(&r);
	bool ok = code == 0 && tc_outputs_equal(&r, &fx.vadd_want[0]);
	tc_reply_free(&r);
	tc_begin(&w->c, &m, VY_OP_SHM_DETACH, 1);
	vy_pack_cstr(&m.pk, "region");
	msgpack_pack_uint64(&m.pk, region);
	int detach = tc_call(&w->c, &m, &r);
	detach = detach ? detach : tc_code(&r);
	tc_reply_free(&r);
	return (ok && detach == 0) || fail(w, "shm dispatch", code ? code : detach, NULL);
}

static bool op_named(struct soaker *w)
{
	char name[32];
	snprintf(name, sizeof(name), "soak-%d", w->index);
	uint64_t h = 0;
	uint32_t words[64];
	for (int i = 0; i < 64; i++) {
		words[i] = (uint32_t)next_rand(&w->seed);
	}
	uint32_t back[64];
	int code = rel_alloc(&w->c, sizeof(words), name, &h);
	code = code ? code : rel_upload(&w->c, h, 0, words, sizeof(words));
	code = code ? code : rel_download(&w->c, h, 0, sizeof(back), back);
	bool ok = code == 0 && memcmp(words, back, sizeof(back)) == 0;
	if (h && rel_free(&w->c, h) != 0) {
		ok = false;
	}
	return ok || fail(w, "named buffer", code, NULL);
}

static bool op_simple(struct soaker *w, enum vy_op op, const char *field)
{
	struct tc_msg m;
	tc_begin(&w->c, &m, op, 0);
	struct tc_reply r;
	memset(&r, 0, sizeof(r));
	int code = tc_call(&w->c, &m, &r);
	code = code ? code : tc_code(&r);
	struct vy_mp_reader rd;
	bool ok = code == 0 && (!field || tc_field(&r, field, &rd));
	if (!ok) {
		fail(w, vy_op_name(op), code, &r);
	}
	tc_reply_free(&r);
	return ok;
}

static bool op_compile(struct soaker *w)
{
	struct tc_msg m;
	tc_begin(&w->c, &m, VY_OP_COMPILE, 1);
	t_pack_program(&m.pk, fx.vadd);
	struct tc_reply r;
	memset(&r, 0, sizeof(r));
	int code = tc_call(&w->c, &m, &r);
	code = code ? code : tc_code(&r);
	char id[64] = "";
	bool ok = code == 0 && tc_str(&r, "program_id", id, sizeof(id)) &&
		  strcmp(id, fx.vadd_id) == 0;
	if (!ok) {
		fail(w, "compile", code, &r);
	}
	tc_reply_free(&r);
	return ok;
}

/* Requests that must fail, each with its own code. */
static bool op_errors(struct soaker *w)
{
	int which = (int)(next_rand(&w->seed) % 3);
	struct tc_reply r;
	memset(&r, 0, sizeof(r));
	int code;
	int want;
	if (which == 0) {
		struct t_inputs none = {0};
		code = t_dispatch(&w->c, fx.invalid, &none, &r);
		want = VY_E_INVALID_PROGRAM;
	} else if (which == 1) {
		code = t_dispatch(&w->c, fx.trap, &fx.vadd_in[0], &r);
		want = VY_E_TRAP;
	} else {
		uint8_t b[4];
		code = rel_download(&w->c, 0x5eed0000u + (uint64_t)w->index, 0, 4, b);
		want = VY_E_NOT_FOUND;
	}
	code = code ? code : tc_code(&r);
	tc_reply_free(&r);
	return code == want || fail(w, "a request that must fail", code, NULL);
}

static bool connect_worker(struct soaker *w)
{
	if (tc_connect(&w->c, sock_path) != 0 || tc_hello(&w->c, "soak") != 0) {
		tc_close(&w->c);
		w->open = false;
		return fail(w, "reconnect", -EPIPE, NULL);
	}
	w->open = true;
	return true;
}

static void *run_soaker(void *arg)
{
	struct soaker *w = arg;
	while (!atomic_load(&stop_all) && w->failures < 8) {
		if (!w->open && !connect_worker(w)) {
			usleep(100000);
			continue;
		}
		unsigned kind = (unsigned)(next_rand(&w->seed) % 100);
		bool ok;
		unsigned k;
		if (kind < 28) {
			k = 0, ok = op_dispatch(w, false);
		} else if (kind < 38) {
			k = 1, ok = op_dispatch(w, true);
		} else if (kind < 48) {
			k = 2, ok = op_resident(w);
		} else if (kind < 56) {
			k = 3, ok = op_shm(w);
		} else if (kind < 62) {
			k = 4, ok = op_named(w);
		} else if (kind < 67) {
			k = 5, ok = op_compile(w);
		} else if (kind < 74) {
			k = 6, ok = op_errors(w);
		} else if (kind < 80) {
			k = 7, ok = op_simple(w, VY_OP_STATS, "daemon.uptime_ms");
		} else if (kind < 84) {
			k = 8, ok = op_simple(w, VY_OP_CLIENTS, "clients");
		} else if (kind < 88) {
			k = 9, ok = op_simple(w, VY_OP_BUFFERS, "buffers");
		} else if (kind < 91) {
			k = 10, ok = op_simple(w, VY_OP_CACHE_LIST, "pipelines");
		} else if (kind < 99) {
			k = 11, ok = op_simple(w, VY_OP_PING, NULL);
		} else {
			/* Leave and come back: a new connection, its descriptors and table rows. */
			k = 12;
			tc_close(&w->c);
			ok = connect_worker(w);
		}
		w->ops += ok;
		w->by_kind[k] += ok;
	}
	if (w->open) {
		tc_close(&w->c);
		w->open = false;
	}
	return NULL;
}

struct sample {
	long at_ms;
	long rss_kib;
	int fds;
};

struct sampler {
	pid_t pid;
	long start_ms;
	size_t n;
	struct sample samples[MAX_SAMPLES];
};

static void *run_sampler(void *arg)
{
	struct sampler *s = arg;
	while (!atomic_load(&stop_all) && s->n < MAX_SAMPLES) {
		struct sample *x = &s->samples[s->n];
		x->at_ms = rel_now_ms() - s->start_ms;
		x->rss_kib = rel_rss_kib(s->pid);
		x->fds = rel_fd_count(s->pid);
		s->n++;
		usleep(250000);
	}
	return NULL;
}

/* The largest RSS and descriptor count among samples taken in [from, to) ms. */
static void window_max(const struct sampler *s, long from, long to, long *rss, int *fds)
{
	*rss = 0;
	*fds = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct sample *x = &s->samples[i];
		if (x->at_ms >= from && x->at_ms < to) {
			*rss = x->rss_kib > *rss ? x->rss_kib : *rss;
			*fds = x->fds > *fds ? x->fds : *fds;
		}
	}
}

static long soak_seconds(void)
{
	const char *v = getenv("VYRED_SOAK_SECONDS");
	long n = v && *v ? strtol(v, NULL, 10) : 20;
	return n < 8 ? 8 : n;
}

static void fixture_make(void)
{
	fx.vadd = tc_program("vector_add");
	for (int s = 0; s < REL_SETS; s++) {
		t_inputs_make(fx.vadd, 0, (uint64_t)(300 + s), &fx.vadd_in[s]);
		cr_assert_eq(t_reference(fx.vadd, &fx.vadd_in[s], NULL, &fx.vadd_want[s]), 0);
	}
	fx.saxpy = tc_program("saxpy");
	t_inputs_make(fx.saxpy, 256, 301, &fx.saxpy_in);
	cr_assert_eq(t_reference(fx.saxpy, &fx.saxpy_in, NULL, &fx.saxpy_want), 0);
	cr_assert_leq(fx.saxpy_want.items[0].len, 4096);
	fx.trap = vy_program_create("soak-trap", 64, 1, 1);
	vy_program_add_buffer(fx.trap, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_I32, 1024);
	vy_program_add_buffer(fx.trap, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_I32, 1024);
	vy_program_add_buffer(fx.trap, "out", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_I32, 1024);
	struct vy_expr *q = vy_ir_binary(fx.trap, VY_BIN_DIV,
		vy_ir_load(fx.trap, "a", vy_ir_gid(fx.trap, 0)), vy_ir_i32(fx.trap, 0));
	vy_program_set_entry(fx.trap,
		vy_ir_seq(fx.trap, vy_ir_store(fx.trap, "out", vy_ir_gid(fx.trap, 0), q), NULL));
	fx.invalid = t_invalid_program();
}

static void fixture_free(void)
{
	for (int s = 0; s < REL_SETS; s++) {
		t_inputs_free(&fx.vadd_in[s]);
		vy_outputs_finish(&fx.vadd_want[s]);
	}
	t_inputs_free(&fx.saxpy_in);
	vy_outputs_finish(&fx.saxpy_want);
	vy_program_destroy(fx.vadd);
	vy_program_destroy(fx.saxpy);
	vy_program_destroy(fx.trap);
	vy_program_destroy(fx.invalid);
}

static int shm_for_worker(void)
{
	const struct t_inputs *in = &fx.vadd_in[0];
	size_t len = in->in[0].len + in->in[1].len;
	int fd = memfd_create("soak", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)len), 0);
	cr_assert_eq(pwrite(fd, in->in[0].data, in->in[0].len, 0), (ssize_t)in->in[0].len);
	cr_assert_eq(pwrite(fd, in->in[1].data, in->in[1].len, (off_t)in->in[0].len),
		(ssize_t)in->in[1].len);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	return fd;
}

Test(soak, clients_256_keep_results_right_and_resources_flat)
{
	rel_lean_asan();
	long seconds = soak_seconds();
	fixture_make();
	struct vyd d;
	t_start(&d, "[limits]\nresident_quota = 4G\ndispatch_timeout_ms = 20000\n");
	sock_path = d.sock;
	struct tc observer;
	tc_open(&observer, d.sock, "observer");
	struct tc_msg m;
	tc_begin(&observer, &m, VY_OP_COMPILE, 1);
	t_pack_program(&m.pk, fx.vadd);
	struct tc_reply r;
	cr_assert_eq(tc_call(&observer, &m, &r), 0);
	cr_assert(tc_str(&r, "program_id", fx.vadd_id, sizeof(fx.vadd_id)));
	tc_reply_free(&r);
	usleep(200000);
	int baseline_fds = rel_fd_count(d.pid);
	long baseline_rss = rel_rss_kib(d.pid);

	static struct soaker workers[CLIENTS];
	static struct sampler sampler;
	memset(workers, 0, sizeof(workers));
	memset(&sampler, 0, sizeof(sampler));
	atomic_store(&stop_all, false);
	for (int i = 0; i < CLIENTS; i++) {
		workers[i].index = i;
		workers[i].seed = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
		workers[i].shm_fd = shm_for_worker();
		cr_assert(connect_worker(&workers[i]), "client %d did not connect", i);
	}
	sampler.pid = d.pid;
	sampler.start_ms = rel_now_ms();
	pthread_t threads[CLIENTS];
	pthread_t sampling;
	cr_assert_eq(pthread_create(&sampling, NULL, run_sampler, &sampler), 0);
	for (int i = 0; i < CLIENTS; i++) {
		cr_assert_eq(pthread_create(&threads[i], NULL, run_soaker, &workers[i]), 0);
	}
	sleep((unsigned)seconds);
	atomic_store(&stop_all, true);
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(threads[i], NULL);
	}
	pthread_join(sampling, NULL);
	long elapsed = rel_now_ms() - sampler.start_ms;

	uint64_t ops = 0;
	uint64_t failures = 0;
	uint64_t kinds[16] = {0};
	for (int i = 0; i < CLIENTS; i++) {
		struct soaker *w = &workers[i];
		cr_expect_eq(w->failures, 0, "%s", w->failure);
		cr_expect_gt(w->ops, 0, "client %d did nothing", i);
		ops += w->ops;
		failures += w->failures;
		for (int k = 0; k < 16; k++) {
			kinds[k] += w->by_kind[k];
		}
		close(w->shm_fd);
	}
	for (int k = 0; k <= 12; k++) {
		cr_expect_gt(kinds[k], 0, "operation kind %d never completed", k);
	}

	/* Windows: after a warm-up, the first and the last stretch of the run (a minute each in
	 * long runs). */
	long total_ms = seconds * 1000;
	long warm = total_ms * 15 / 100 < 60000 ? total_ms * 15 / 100 : 60000;
	long span = total_ms / 4 < 60000 ? total_ms / 4 : 60000;
	long first_rss;
	long last_rss;
	int first_fds;
	int last_fds;
	window_max(&sampler, warm, warm + span, &first_rss, &first_fds);
	window_max(&sampler, total_ms - span, total_ms + 1000, &last_rss, &last_fds);
	/* RSS may settle a little as caches and allocator pools fill; a leak of even a few bytes
	 * per request (several hundred thousand requests) would pass this bound. */
	long rss_bound = first_rss + first_rss / 10 + 16 * 1024;
	cr_expect_gt(first_rss, 0);
	cr_expect_leq(last_rss, rss_bound, "RSS grew from %ld KiB to %ld KiB", first_rss, last_rss);
	/* Clients in the middle of a reconnect account for a few descriptors either way. */
	cr_expect_leq(
		last_fds, first_fds + 16, "descriptors grew from %d to %d", first_fds, last_fds);

	/* Everything comes back once the clients are gone. */
	uint64_t clients = rel_wait_stat(&observer, "clients.count", 1, 20000);
	cr_expect_eq(clients, 1, "%lu connections remain", (unsigned long)clients);
	int after_fds = rel_wait_fds(d.pid, baseline_fds, 10000);
	cr_expect_eq(after_fds, baseline_fds, "the daemon holds %d descriptors, %d before",
		after_fds, baseline_fds);
	cr_expect_eq(t_stat(&observer, "resident.buffers"), 0);
	cr_expect_eq(t_stat(&observer, "resident.shm_regions"), 0);
	long after_rss = rel_rss_kib(d.pid);
	fprintf(stderr,
		"soak: %d clients for %ld s: %lu operations checked (%.0f/s), %lu failures\n"
		"soak: daemon RSS %ld KiB before, max %ld KiB in the first window [%ld s, %ld s), "
		"max %ld KiB in the last [%ld s, %ld s), %ld KiB after (bound %ld KiB)\n"
		"soak: daemon descriptors %d before, max %d first window, max %d last window, %d "
		"after\n",
		CLIENTS, elapsed / 1000, (unsigned long)ops, ops * 1000.0 / (double)elapsed,
		(unsigned long)failures, baseline_rss, first_rss, warm / 1000, (warm + span) / 1000,
		last_rss, (total_ms - span) / 1000, total_ms / 1000, after_rss, rss_bound,
		baseline_fds, first_fds, last_fds, after_fds);
	/* The course of the run: the largest figures of each tenth of it. */
	for (int k = 0; k < 10; k++) {
		long rss;
		int fds;
		window_max(&sampler, total_ms * k / 10, total_ms * (k + 1) / 10, &rss, &fds);
		fprintf(stderr, "soak: [%4ld s, %4ld s): RSS %ld KiB, %d descriptors\n",
			total_ms * k / 10000, total_ms * (k + 1) / 10000, rss, fds);
	}
	cr_log_info("soak: %lu requests; RSS first %ld KiB, last %ld KiB; fds first %d, last %d",
		(unsigned long)ops, first_rss, last_rss, first_fds, last_fds);
	tc_close(&observer);
	t_stop(&d);
	fixture_free();
}
