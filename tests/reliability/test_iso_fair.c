/*
 * Fair sharing against one hostile user (docs/security.md): a user who keeps heavy dispatches in
 * flight, on one connection or several, delays another user's tiny dispatch by about one of the
 * heavy dispatches; a user who queues many large compiles delays another user's small compile by
 * about one compile; and a connection that pipelines hundreds of jobs delays another connection's
 * single job by about one round.
 *
 * Each case starts a daemon of its own, with a socket open to all, and runs the attacker (uid
 * 61001) and the victim (uid 61002) as clients of those users (rel_spawn_as_user); bounds are
 * stated against figures measured in the same run, and each case prints them on an `isolation:`
 * line.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rel.h"

#define ATTACKER 61001
#define VICTIM 61002

#define CONFIG_OPEN "[daemon]\nsocket_mode = 0666\n[limits]\nmax_inflight = 1024\n"

/* Figures and phases the test shares with its users' clients. */
struct board {
	_Atomic int phase;
	_Atomic long alone_us;  /* one attacker dispatch or compile, alone */
	_Atomic long quiet_p50; /* the victim's requests before the attack, in us */
	_Atomic long quiet_p99;
	_Atomic long flood_p50; /* the victim's requests under the attack */
	_Atomic long flood_p99;
	_Atomic long flood_n;
	_Atomic long extra; /* case-specific */
	_Atomic long extra2;
	_Atomic long mark_us; /* when the victim sent its request under the attack (now_us) */
	_Atomic int failed;   /* the check a client failed at, 0 while none did */
};

enum {
	PHASE_START,
	PHASE_QUIET_DONE, /* the victim measured its quiet figures */
	PHASE_FLOODING,   /* the attacker measured alone and keeps the daemon busy */
	PHASE_MEASURED,   /* the victim measured under the attack */
	PHASE_STOP,       /* the attacker drains and leaves */
};

static struct board *board_new(void)
{
	struct board *b =
		mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(b, MAP_FAILED);
	memset(b, 0, sizeof(*b));
	return b;
}

static long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* A client's failed check: noted on the board, so that no one waits for it. */
static int fail(struct board *b, int check)
{
	b->failed = check;
	return check;
}

/* Wait for the board to reach `phase`; false after `timeout_ms` or once a client failed. */
static bool await_phase(struct board *b, int phase, int timeout_ms)
{
	long until = rel_now_ms() + timeout_ms;
	while (b->phase < phase) {
		if (rel_now_ms() > until || b->failed) {
			return false;
		}
		usleep(2000);
	}
	return true;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a;
	long y = *(const long *)b;
	return (x > y) - (x < y);
}

/* The q-quantile (nearest rank) of n values; sorts them. */
static long quantile(long *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_long);
	int k = (int)(q * n + 0.999999) - 1;
	return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* --- a tiny dispatch, timed ------------------------------------------------------------ */

/* out[gid] = gid * k + salt: a small program of its own for each (k, salt). */
static struct vy_program *small_program(uint32_t k, uint32_t salt)
{
	char name[64];
	snprintf(name, sizeof(name), "small-%d-%u-%u", (int)getpid(), k, salt);
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_expr *v = vy_ir_binary(p, VY_BIN_ADD,
		vy_ir_binary(p, VY_BIN_MUL, vy_ir_gid(p, 0), vy_ir_u32(p, k)), vy_ir_u32(p, salt));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), v), NULL));
	return p;
}

/* The latency of one tiny dispatch of `p` (a program without inputs) in us, or -1 when it
 * failed; the time it waited for the device, as the daemon reports it, into *queue_us. */
static long tiny_once(struct tc *c, const struct vy_program *p, long *queue_us)
{
	struct tc_reply r;
	long t0 = now_us();
	int rc = rel_dispatch_grid(c, p, NULL, 0, &r);
	long took = now_us() - t0;
	uint64_t queue_ns = 0;
	tc_u64(&r, "timing.queue_ns", &queue_ns);
	*queue_us = (long)(queue_ns / 1000);
	tc_reply_free(&r);
	return rc == 0 ? took : -1;
}

/* The u64 at `path` of a stats reply, or -1; safe in a client of another user (asserts nothing). */
static long stat_of(struct tc *c, const char *path)
{
	struct tc_msg m;
	struct tc_reply r;
	tc_begin(c, &m, VY_OP_STATS, 0);
	if (tc_call(c, &m, &r) != 0) {
		return -1;
	}
	uint64_t v = 0;
	bool ok = tc_u64(&r, path, &v);
	tc_reply_free(&r);
	return ok ? (long)v : -1;
}

/* Poll the stats value at `path` until it reaches `want`, for `timeout_ms` at most; returns the
 * last value read. */
static long stat_await(struct tc *c, const char *path, long want, int timeout_ms)
{
	long until = rel_now_ms() + timeout_ms;
	long v = stat_of(c, path);
	while (v >= 0 && v < want && rel_now_ms() < until) {
		usleep(2000);
		v = stat_of(c, path);
	}
	return v;
}

/* A dispatch of `p` (or of the program `id`, hex, when not NULL) with the loop count and grid
 * of `slow`, asking for device timing when `timing`. */
static int slow_send(
	struct tc *c, const struct vy_program *p, const char *id, struct t_slow slow, bool timing)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DISPATCH, 3);
	if (id) {
		vy_pack_cstr(&m.pk, "program_id");
		vy_pack_cstr(&m.pk, id);
	} else {
		t_pack_program(&m.pk, p);
	}
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 0);
	vy_pack_cstr(&m.pk, "config");
	msgpack_pack_map(&m.pk, timing ? 3 : 2);
	vy_pack_cstr(&m.pk, "spec");
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, "n");
	msgpack_pack_uint32(&m.pk, slow.n);
	vy_pack_cstr(&m.pk, "grid");
	msgpack_pack_array(&m.pk, 3);
	msgpack_pack_uint32(&m.pk, slow.grid);
	msgpack_pack_uint32(&m.pk, 1);
	msgpack_pack_uint32(&m.pk, 1);
	if (timing) {
		vy_pack_cstr(&m.pk, "timing");
		msgpack_pack_true(&m.pk);
	}
	return tc_send(c, &m, -1);
}

/* The next reply's error code (0 when ok, -1 when none came); its device time in us into
 * *device_us (0 when it reported none) when not NULL. */
static int reply_recv(struct tc *c, long *device_us)
{
	struct tc_reply r;
	if (tc_recv(c, &r, 120000) != 0) {
		return -1;
	}
	int code = tc_code(&r);
	uint64_t ns = 0;
	if (device_us) {
		*device_us = tc_u64(&r, "timing.device_ns", &ns) ? (long)(ns / 1000) : 0;
	}
	tc_reply_free(&r);
	return code;
}

/*
 * A loop count and grid for `p` (a t_slow_program) that make one dispatch take about
 * `target_us` of device time on the daemon behind `c`: the work (count x grid) is scaled by
 * what was measured, five times. Each loop count is a pipeline, compiled on its first use.
 */
static struct t_slow calibrate(struct tc *c, const struct vy_program *p, long target_us)
{
	struct t_slow slow = {4096, 1};
	for (int k = 0; k < 5; k++) {
		/* The least of three device times: the host is shared, so more is noise. */
		long took = 0;
		for (int i = 0; i < 3; i++) {
			long dev = 0;
			long t0 = now_us();
			cr_assert_eq(slow_send(c, p, NULL, slow, true), 0);
			cr_assert_eq(reply_recv(c, &dev), 0);
			dev = dev ? dev : now_us() - t0;
			took = i == 0 || dev < took ? dev : took;
		}
		double work =
			(double)slow.n * slow.grid * (double)target_us / (took > 1 ? took : 1);
		/* On Vulkan the count stays below 65,536 (llvmpipe ends longer loops early). */
		if (work <= 60000) {
			slow.n = work < 16 ? 16 : (uint32_t)work;
			slow.grid = 1;
		} else {
			slow.n = 60000;
			slow.grid = work / 60000 > 65535 ? 65535 : (uint32_t)(work / 60000 + 0.5);
		}
	}
	return slow;
}

/*
 * A daemon of the test's own with `config`, and a slow program named after `what` with the loop
 * count and grid that make one of its dispatches take about `target_us` of device time there.
 */
struct slow_daemon {
	struct vyd d;
	bool vulkan;
	struct vy_program *p;
	struct t_slow slow;
};

static void slow_daemon_start(
	struct slow_daemon *s, const char *config, const char *what, long target_us)
{
	t_start(&s->d, config);
	struct tc c;
	tc_open(&c, s->d.sock, "test");
	s->vulkan = rel_on_vulkan(&c);
	char name[64];
	t_unique(name, sizeof(name), what);
	s->p = t_slow_program(name);
	s->slow = calibrate(&c, s->p, target_us);
	tc_close(&c);
}

/* --- heavy dispatches kept in flight --------------------------------------------------- */

#define MAX_CONNS 4

struct heavy_attack {
	const char *sock;
	struct board *b;
	const struct vy_program *p;
	struct t_slow slow;
	int conns;
	int per_conn; /* dispatches each connection keeps in flight */
};

/* The attacker asks for device timing, so that the time of each of its dispatches under the
 * attack is known (a timed dispatch runs through the same batches as others). */
static int heavy_send(struct tc *c, const struct heavy_attack *a)
{
	return slow_send(c, a->p, NULL, a->slow, true);
}

static int heavy_recv(struct tc *c)
{
	return reply_recv(c, NULL);
}

static int heavy_attacker(void *arg)
{
	struct heavy_attack *a = arg;
	struct tc c[MAX_CONNS];
	for (int i = 0; i < a->conns; i++) {
		if (tc_connect(&c[i], a->sock) != 0 || tc_hello(&c[i], "attacker") != 0) {
			return fail(a->b, 1);
		}
	}
	/* One dispatch alone, the median of three. */
	long alone[3];
	for (int k = 0; k < 3; k++) {
		long t0 = now_us();
		if (heavy_send(&c[0], a) != 0 || heavy_recv(&c[0]) != 0) {
			return fail(a->b, 2);
		}
		alone[k] = now_us() - t0;
	}
	a->b->alone_us = quantile(alone, 3, 0.5);
	for (int i = 0; i < a->conns; i++) {
		for (int k = 0; k < a->per_conn; k++) {
			if (heavy_send(&c[i], a) != 0) {
				return fail(a->b, 3);
			}
		}
	}
	a->b->phase = PHASE_FLOODING;
	/* Each reply is answered with the next dispatch until the victim has measured. The device
	 * time of the dispatches under the attack is kept too: on a shared host it may be above
	 * the time alone. */
	static long dev[4096];
	int done = 0;
	while (a->b->phase < PHASE_STOP) {
		for (int i = 0; i < a->conns && a->b->phase < PHASE_STOP; i++) {
			if (reply_recv(&c[i], &dev[done < 4095 ? done : 4095]) != 0 ||
				heavy_send(&c[i], a) != 0) {
				return fail(a->b, 4);
			}
			done += done < 4095;
		}
	}
	a->b->extra = done ? quantile(dev, done, 0.99) : 0;
	for (int i = 0; i < a->conns; i++) {
		for (int k = 0; k < a->per_conn; k++) {
			if (heavy_recv(&c[i]) != 0) {
				return fail(a->b, 5);
			}
		}
		tc_close(&c[i]);
	}
	return fail(a->b, 0);
}

struct victim {
	const char *sock;
	struct board *b;
	const struct vy_program *p; /* the victim's tiny program, made before the clients start */
	int quiet;                  /* dispatches measured before the attack */
	int flood;                  /* dispatches measured under it at most */
	long budget_ms;             /* ... and for this long at most */
	long settle_ms;             /* wait after the attack began before measuring */
	bool wait_alone;            /* and also one attacker dispatch (alone) */
};

static int tiny_victim(void *arg)
{
	struct victim *v = arg;
	struct board *b = v->b;
	struct tc c;
	if (tc_connect(&c, v->sock) != 0 || tc_hello(&c, "victim") != 0) {
		return fail(b, 1);
	}
	long lat[256];
	long queued[256];
	for (int k = 0; k < 5; k++) {
		if (tiny_once(&c, v->p, &queued[0]) < 0) {
			return fail(b, 2);
		}
	}
	for (int k = 0; k < v->quiet; k++) {
		if ((lat[k] = tiny_once(&c, v->p, &queued[k])) < 0) {
			return fail(b, 3);
		}
	}
	b->quiet_p50 = quantile(lat, v->quiet, 0.5);
	b->quiet_p99 = quantile(lat, v->quiet, 0.99);
	b->phase = PHASE_QUIET_DONE;
	if (!await_phase(b, PHASE_FLOODING, 60000)) {
		return fail(b, 4);
	}
	usleep((useconds_t)(v->settle_ms * 1000 + (v->wait_alone ? b->alone_us : 0)));
	int n = 0;
	long until = rel_now_ms() + v->budget_ms;
	while (n < v->flood && (n < 5 || rel_now_ms() < until)) {
		if ((lat[n] = tiny_once(&c, v->p, &queued[n])) < 0) {
			return fail(b, 5);
		}
		n++;
	}
	b->flood_n = n;
	b->flood_p50 = quantile(lat, n, 0.5);
	b->flood_p99 = quantile(lat, n, 0.99);
	b->extra2 = quantile(queued, n, 0.99);
	b->phase = PHASE_MEASURED;
	tc_close(&c);
	return 0;
}

static void heavy_case(int conns, int per_conn)
{
	struct slow_daemon sd;
	slow_daemon_start(&sd, CONFIG_OPEN, "heavy", 100000);
	struct vyd d = sd.d;
	bool vulkan = sd.vulkan;
	struct vy_program *p = sd.p;
	struct t_slow slow = sd.slow;

	struct board *b = board_new();
	struct vy_program *tiny = small_program(3, 5);
	struct victim v = {d.sock, b, tiny, 40, 30, 8000, 50, true};
	struct t_user *victim = rel_spawn_as_user(VICTIM, VICTIM, tiny_victim, &v);
	cr_assert(await_phase(b, PHASE_QUIET_DONE, 60000), "the victim did not start");
	struct heavy_attack a = {d.sock, b, p, slow, conns, per_conn};
	struct t_user *attacker = rel_spawn_as_user(ATTACKER, ATTACKER, heavy_attacker, &a);
	/* The victim measures at most v.flood dispatches within v.budget_ms (at least five), each
	 * bounded by about two heavy dispatches of 0.1 s (below): a fair daemon lets it finish in
	 * about 10 s, and one that starves it fails here after 30 s, not at the suite's limit. */
	bool measured = await_phase(b, PHASE_MEASURED, 30000);
	b->phase = PHASE_STOP;
	int vrc = rel_reap(victim);
	int arc = rel_reap(attacker);
	cr_assert(measured, "the victim did not finish measuring");
	cr_assert_eq(vrc, 0, "the victim failed at check %d", vrc);
	cr_assert_eq(arc, 0, "the attacker failed at check %d", arc);

	/* The victim's job may arrive just after one heavy dispatch started: it waits for that one
	 * and runs; twice that, plus the quiet tail and scheduling noise, is the bound. One
	 * dispatch is the larger of its time alone and the p99 device time of the attacker's
	 * dispatches during the attack (the host is shared, and may be busier meanwhile). */
	long one = b->alone_us > b->extra ? b->alone_us : b->extra;
	long bound = 2 * one + b->quiet_p99 + 50000;
	printf("isolation: victim tiny dispatch, attacker keeps %d heavy dispatches in flight on "
	       "%d "
	       "connection%s (%s): quiet p50/p99 %.2f/%.2f ms, under attack p50/p99 %.1f/%.1f ms "
	       "(%ld dispatches, p99 %.1f ms queued); one attacker dispatch alone %.1f ms, p99 "
	       "%.1f "
	       "ms of device time under the attack; bound p99 <= %.1f ms\n",
		conns * per_conn, conns, conns > 1 ? "s" : "", vulkan ? "vulkan" : "reference",
		b->quiet_p50 / 1e3, b->quiet_p99 / 1e3, b->flood_p50 / 1e3, b->flood_p99 / 1e3,
		(long)b->flood_n, b->extra2 / 1e3, b->alone_us / 1e3, b->extra / 1e3, bound / 1e3);
	fflush(stdout);
	cr_expect_leq(b->flood_p99, bound,
		"victim p99 %.1f ms under the attack, above 2 x %.1f ms (one attacker dispatch) + "
		"%.1f ms",
		b->flood_p99 / 1e3, one / 1e3, (b->quiet_p99 + 50000) / 1e3);
	vy_program_destroy(tiny);
	vy_program_destroy(p);
	munmap(b, sizeof(*b));
	rel_stop(&d, true);
}

Test(isolation, heavy_dispatches_in_flight_delay_another_user_by_about_one_dispatch)
{
	heavy_case(1, 8);
}

Test(isolation, heavy_dispatches_on_several_connections_delay_another_user_by_about_one)
{
	heavy_case(MAX_CONNS, 4);
}

/* --- a flood of large compiles --------------------------------------------------------- */

#define LARGE_STEPS 1500
#define LARGE_MS 300
#define FLOOD_COMPILES 16

/* acc = gid; then `steps` times acc = (acc ^ c1) * c2 + i; out[gid] = acc. The constants
 * come from `salt`, so each salt is a program of its own (nothing is cached). */
static struct vy_program *large_program(uint32_t salt, uint32_t steps)
{
	char name[64];
	snprintf(name, sizeof(name), "large-%d-%u", (int)getpid(), salt);
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_node **nodes = calloc(steps + 2, sizeof(*nodes));
	cr_assert_not_null(nodes);
	nodes[0] = vy_ir_let(p, "acc", vy_ir_gid(p, 0));
	uint32_t x = salt * 2654435761u + 1;
	for (uint32_t i = 0; i < steps; i++) {
		x = x * 1664525u + 1013904223u;
		struct vy_expr *e =
			vy_ir_binary(p, VY_BIN_BIT_XOR, vy_ir_var(p, "acc"), vy_ir_u32(p, x));
		e = vy_ir_binary(p, VY_BIN_MUL, e, vy_ir_u32(p, x | 1));
		e = vy_ir_binary(p, VY_BIN_ADD, e, vy_ir_u32(p, i));
		nodes[i + 1] = vy_ir_assign(p, "acc", e);
	}
	nodes[steps + 1] = vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_var(p, "acc"));
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, steps + 2));
	free(nodes);
	return p;
}

static int compile_send(struct tc *c, const struct vy_program *p)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_COMPILE, 1);
	t_pack_program(&m.pk, p);
	return tc_send(c, &m, -1);
}

/* Compile `p` and wait for the reply; its time in us, or -1. */
static long compile_timed(struct tc *c, const struct vy_program *p)
{
	long t0 = now_us();
	if (compile_send(c, p) != 0 || heavy_recv(c) != 0) {
		return -1;
	}
	return now_us() - t0;
}

struct compile_attack {
	const char *sock;
	struct board *b;
	uint32_t salt;
	uint32_t steps; /* the size of each large program */
};

static int compile_attacker(void *arg)
{
	struct compile_attack *a = arg;
	struct tc c;
	if (tc_connect(&c, a->sock) != 0 || tc_hello(&c, "attacker") != 0) {
		return fail(a->b, 1);
	}
	/* One large compile alone, the larger of two distinct programs. */
	long alone[2];
	for (int k = 0; k < 2; k++) {
		struct vy_program *p = large_program(a->salt + (uint32_t)k, a->steps);
		alone[k] = compile_timed(&c, p);
		vy_program_destroy(p);
		if (alone[k] < 0) {
			return fail(a->b, 2);
		}
	}
	a->b->alone_us = quantile(alone, 2, 1.0);
	struct vy_program *progs[FLOOD_COMPILES];
	for (int k = 0; k < FLOOD_COMPILES; k++) {
		progs[k] = large_program(a->salt + 100 + (uint32_t)k, a->steps);
	}
	struct tc watch;
	if (tc_connect(&watch, a->sock) != 0 || tc_hello(&watch, "watch") != 0) {
		return fail(a->b, 3);
	}
	long misses = stat_of(&watch, "program_cache.misses");
	long t0 = now_us();
	for (int k = 0; k < FLOOD_COMPILES; k++) {
		if (compile_send(&c, progs[k]) != 0) {
			return fail(a->b, 3);
		}
	}
	/* Queued: the daemon has read every request and holds its program (a request reads as
	 * fast as the loop decodes it, in arrival order; what is measured here is the pool). */
	if (misses < 0 || stat_await(&watch, "program_cache.misses", misses + FLOOD_COMPILES,
				  30000) < misses + FLOOD_COMPILES) {
		return fail(a->b, 6);
	}
	tc_close(&watch);
	a->b->phase = PHASE_FLOODING;
	/* Replies until the victim's compile came back; the rest are left to the daemon, which
	 * drops the queued work of a closed connection. */
	int got = 0;
	long overtaking = 0; /* replies that came after the victim sent its compile */
	while (got < FLOOD_COMPILES && a->b->phase < PHASE_MEASURED) {
		struct tc_reply r;
		int rc = tc_recv(&c, &r, 20);
		if (rc == -ETIMEDOUT) {
			continue;
		}
		if (rc != 0 || tc_code(&r) != 0) {
			return fail(a->b, 4);
		}
		tc_reply_free(&r);
		got++;
		long mark = a->b->mark_us;
		overtaking += mark != 0 && now_us() > mark;
	}
	a->b->extra = overtaking;
	a->b->extra2 = now_us() - t0;
	for (int k = 0; k < FLOOD_COMPILES; k++) {
		vy_program_destroy(progs[k]);
	}
	tc_close(&c);
	return fail(a->b, 0);
}

static int compile_victim(void *arg)
{
	struct victim *v = arg;
	struct tc c;
	if (tc_connect(&c, v->sock) != 0 || tc_hello(&c, "victim") != 0) {
		return fail(v->b, 1);
	}
	long lat[4];
	for (int k = 0; k < 4; k++) {
		struct vy_program *p = small_program((uint32_t)k + 2, 7);
		lat[k] = compile_timed(&c, p);
		vy_program_destroy(p);
		if (lat[k] < 0) {
			return fail(v->b, 2);
		}
	}
	v->b->quiet_p50 = quantile(lat, 4, 0.5);
	v->b->quiet_p99 = quantile(lat, 4, 1.0);
	v->b->phase = PHASE_QUIET_DONE;
	if (!await_phase(v->b, PHASE_FLOODING, 60000)) {
		return fail(v->b, 3);
	}
	usleep((useconds_t)v->settle_ms * 1000);
	struct vy_program *p = small_program(99, 11);
	v->b->mark_us = now_us();
	long wait = compile_timed(&c, p);
	vy_program_destroy(p);
	if (wait < 0) {
		return fail(v->b, 4);
	}
	v->b->flood_p50 = wait;
	v->b->flood_p99 = wait;
	v->b->phase = PHASE_MEASURED;
	tc_close(&c);
	return fail(v->b, 0);
}

Test(isolation, large_compiles_of_one_user_delay_another_users_compile_by_about_one)
{
	struct vyd d;
	t_start(&d, CONFIG_OPEN);
	struct tc c;
	tc_open(&c, d.sock, "test");
	bool vulkan = rel_on_vulkan(&c);
	/* Large: about LARGE_MS to validate and compile here (code generation costs far more on
	 * Vulkan than on the reference backend), at most LARGE_STEPS steps. */
	uint32_t salt = (uint32_t)getpid() * 1000u;
	struct vy_program *probe = large_program(salt + 999, 100);
	long took = compile_timed(&c, probe);
	vy_program_destroy(probe);
	cr_assert_gt(took, 0);
	double steps = 100.0 * LARGE_MS * 1000.0 / (double)took;
	tc_close(&c);
	struct board *b = board_new();
	struct victim v = {d.sock, b, NULL, 0, 0, 0, 20, false};
	struct t_user *victim = rel_spawn_as_user(VICTIM, VICTIM, compile_victim, &v);
	cr_assert(await_phase(b, PHASE_QUIET_DONE, 60000), "the victim did not start");
	struct compile_attack a = {d.sock, b, salt,
		steps < 50            ? 50
		: steps > LARGE_STEPS ? LARGE_STEPS
				      : (uint32_t)steps};
	struct t_user *attacker = rel_spawn_as_user(ATTACKER, ATTACKER, compile_attacker, &a);
	int arc = rel_reap(attacker);
	int vrc = rel_reap(victim);
	cr_assert_eq(arc, 0, "the attacker failed at check %d", arc);
	cr_assert_eq(vrc, 0, "the victim failed at check %d", vrc);

	long bound = 2 * b->alone_us + b->quiet_p99 + 50000;
	printf("isolation: victim small compile behind %d large compiles (%u steps) of another "
	       "user "
	       "(%s): quiet %.1f ms (max %.1f), under the flood %.1f ms, after %ld of the large "
	       "ones answered since it was sent; one large compile alone %.1f ms; bound <= %.1f "
	       "ms\n",
		FLOOD_COMPILES, a.steps, vulkan ? "vulkan" : "reference", b->quiet_p50 / 1e3,
		b->quiet_p99 / 1e3, b->flood_p99 / 1e3, (long)b->extra, b->alone_us / 1e3,
		bound / 1e3);
	fflush(stdout);
	cr_expect_leq(b->flood_p99, bound,
		"the victim's compile took %.1f ms behind the flood, above 2 x %.1f ms (one large "
		"compile) + %.1f ms",
		b->flood_p99 / 1e3, b->alone_us / 1e3, (b->quiet_p99 + 50000) / 1e3);
	/* In turn with the attacker, the victim's compile is behind the few large ones running
	 * when it came (compile_per_user, 2), not behind the queue. */
	cr_expect_leq(b->extra, FLOOD_COMPILES / 4,
		"%ld of the %d large compiles were answered between the victim's request and its "
		"reply: it waited behind the queue",
		(long)b->extra, FLOOD_COMPILES);
	munmap(b, sizeof(*b));
	rel_stop(&d, true);
}

/* --- hundreds of pipelined jobs beside a single one ------------------------------------ */

#define PIPELINED 200

struct pipeline_attack {
	const char *sock;
	struct board *b;
	const struct vy_program *p;
	struct t_slow slow;
};

struct reader {
	struct tc *c;
	long at[PIPELINED]; /* when each reply came, in us */
	int rc;
};

/* Read the pipelined replies as they come. */
static void *read_replies(void *arg)
{
	struct reader *r = arg;
	for (int k = 0; k < PIPELINED; k++) {
		int code = heavy_recv(r->c);
		r->at[k] = now_us();
		if (code != 0) {
			r->rc = 5;
			return NULL;
		}
	}
	return NULL;
}

/*
 * One connection pipelines PIPELINED dispatches; once the device's queue holds many of them, a
 * second connection of the same user sends one. Figures: the single one's latency (flood_p99),
 * the queue depth it was sent at (flood_n), the pipelined replies that came after it (extra),
 * the pipelined run's time (extra2).
 */
static int pipeline_user(void *arg)
{
	struct pipeline_attack *a = arg;
	struct tc many;
	struct tc one;
	if (tc_connect(&many, a->sock) != 0 || tc_hello(&many, "pipeline") != 0 ||
		tc_connect(&one, a->sock) != 0 || tc_hello(&one, "single") != 0) {
		return 1;
	}
	/* Both connections have run a dispatch of this kind: the pipeline is compiled, and each
	 * connection's jobs are known to be alike. */
	struct tc_msg m;
	struct tc_reply r;
	char id[64] = "";
	tc_begin(&many, &m, VY_OP_COMPILE, 1);
	t_pack_program(&m.pk, a->p);
	if (tc_call(&many, &m, &r) != 0 || tc_code(&r) != 0 ||
		!tc_str(&r, "program_id", id, sizeof(id))) {
		return 2;
	}
	tc_reply_free(&r);
	if (slow_send(&many, NULL, id, a->slow, false) != 0 || heavy_recv(&many) != 0 ||
		slow_send(&one, NULL, id, a->slow, false) != 0 || heavy_recv(&one) != 0) {
		return 2;
	}
	static struct reader rd;
	rd = (struct reader){.c = &many};
	pthread_t reader;
	if (pthread_create(&reader, NULL, read_replies, &rd) != 0) {
		return 3;
	}
	long t0 = now_us();
	for (int k = 0; k < PIPELINED; k++) {
		if (slow_send(&many, NULL, id, a->slow, false) != 0) {
			return 4;
		}
	}
	long depth = stat_await(&one, "queue.depth", PIPELINED / 2, 10000);
	long t1 = now_us();
	int rc = slow_send(&one, NULL, id, a->slow, false) != 0 || heavy_recv(&one) != 0;
	long t2 = now_us();
	pthread_join(reader, NULL);
	if (rc || rd.rc) {
		return rc ? 6 : rd.rc;
	}
	long after = 0;
	long last = t0;
	for (int k = 0; k < PIPELINED; k++) {
		after += rd.at[k] > t2;
		last = rd.at[k] > last ? rd.at[k] : last;
	}
	a->b->flood_p99 = t2 - t1;
	a->b->flood_n = depth;
	a->b->extra = after;
	a->b->extra2 = last - t0;
	tc_close(&many);
	tc_close(&one);
	return 0;
}

Test(isolation, a_pipelining_connection_delays_a_single_job_by_about_one_round)
{
	struct slow_daemon sd;
	/* Jobs of about 10 ms: PIPELINED of them keep the device busy for seconds. */
	slow_daemon_start(&sd, CONFIG_OPEN, "round", 10000);
	struct vyd d = sd.d;
	bool vulkan = sd.vulkan;
	struct vy_program *p = sd.p;
	struct t_slow slow = sd.slow;
	struct board *b = board_new();
	struct pipeline_attack a = {d.sock, b, p, slow};
	int rc = rel_as_user(ATTACKER, ATTACKER, pipeline_user, &a);
	cr_assert_eq(rc, 0, "the client failed at check %d", rc);
	double per_job = (double)b->extra2 / (PIPELINED + 1);
	/* One round: the job running when the single one came, one of the pipelined connection
	 * (served before the newcomer, in turn), then the single one. Twice that round, and the
	 * noise of a shared host. */
	double bound = 2 * 3 * per_job + 100000;
	printf("isolation: one connection pipelines %d dispatches of %.1f ms, another of the same "
	       "user sends one while %ld wait (%s): it waited %.1f ms, %ld pipelined replies came "
	       "after it; bound <= %.1f ms\n",
		PIPELINED, per_job / 1e3, (long)b->flood_n, vulkan ? "vulkan" : "reference",
		b->flood_p99 / 1e3, (long)b->extra, bound / 1e3);
	fflush(stdout);
	cr_assert_geq(b->flood_n, 50, "the device's queue never held the pipelined jobs");
	cr_expect_leq(b->flood_p99, bound, "the single job waited %.1f ms behind %ld queued jobs",
		b->flood_p99 / 1e3, (long)b->flood_n);
	/* Served in turn, the single job ends while almost every queued job still waits. */
	cr_expect_geq(b->extra, b->flood_n / 2,
		"only %ld of the %ld queued jobs ran after the single one: its connection was not "
		"served in turn",
		(long)b->extra, (long)b->flood_n);
	vy_program_destroy(p);
	munmap(b, sizeof(*b));
	rel_stop(&d, true);
}

/* --- a newcomer gets no credit for the time before it came ------------------------------ */

#define OLD_IN_FLIGHT 16
#define OLD_WARM 100 /* jobs the incumbent runs before the newcomer comes */
#define OLD_MAX 4096
#define NEW_JOBS 60
#define NEW_WINDOW 40 /* the newcomer's replies over which the incumbent's are counted */

struct credit_board {
	_Atomic int phase; /* 0 warming, 1 the newcomer may come, 2 it is done, 3 stop */
	_Atomic int failed;
	_Atomic int old_n;
	long old_at[OLD_MAX]; /* when each of the incumbent's replies came (now_us) */
	long new_sent;        /* when the newcomer sent its jobs */
	long new_at[NEW_JOBS];
};

struct credit_run {
	const char *sock;
	struct credit_board *b;
	const struct vy_program *p;
	struct t_slow slow;
};

/* The incumbent keeps OLD_IN_FLIGHT dispatches in flight, each reply answered by the next,
 * until told to stop. */
static int incumbent(void *arg)
{
	struct credit_run *r = arg;
	struct credit_board *b = r->b;
	struct tc c;
	if (tc_connect(&c, r->sock) != 0 || tc_hello(&c, "incumbent") != 0) {
		return b->failed = 1;
	}
	for (int k = 0; k < OLD_IN_FLIGHT; k++) {
		if (slow_send(&c, r->p, NULL, r->slow, false) != 0) {
			return b->failed = 2;
		}
	}
	while (b->phase < 3 && !b->failed) {
		if (heavy_recv(&c) != 0) {
			return b->failed = 3;
		}
		int n = b->old_n;
		b->old_at[n < OLD_MAX ? n : OLD_MAX - 1] = now_us();
		b->old_n = n + 1;
		if (slow_send(&c, r->p, NULL, r->slow, false) != 0) {
			return b->failed = 4;
		}
	}
	for (int k = 0; k < OLD_IN_FLIGHT; k++) {
		if (heavy_recv(&c) != 0) {
			return b->failed = 5;
		}
	}
	tc_close(&c);
	return 0;
}

/* The newcomer comes once the incumbent has run OLD_WARM jobs and pipelines NEW_JOBS. */
static int newcomer(void *arg)
{
	struct credit_run *r = arg;
	struct credit_board *b = r->b;
	long until = rel_now_ms() + 120000;
	while (b->phase < 1) {
		if (b->failed || rel_now_ms() > until) {
			return 1;
		}
		usleep(2000);
	}
	struct tc c;
	if (tc_connect(&c, r->sock) != 0 || tc_hello(&c, "newcomer") != 0) {
		return 2;
	}
	b->new_sent = now_us();
	for (int k = 0; k < NEW_JOBS; k++) {
		if (slow_send(&c, r->p, NULL, r->slow, false) != 0) {
			return 3;
		}
	}
	for (int k = 0; k < NEW_JOBS; k++) {
		if (heavy_recv(&c) != 0) {
			return 4;
		}
		b->new_at[k] = now_us();
	}
	b->phase = 2;
	tc_close(&c);
	return 0;
}

/*
 * A user who comes while another has kept the device busy for a second starts level with it,
 * not a second ahead: from its first job on the two users alternate, so the incumbent's jobs go
 * on running while the newcomer's queue drains (fair queueing gives no credit for idle time).
 */
Test(isolation, a_newcomer_gets_no_credit_for_the_time_before_it_came)
{
	struct slow_daemon sd;
	slow_daemon_start(&sd, CONFIG_OPEN, "credit", 10000);
	struct vyd d = sd.d;
	bool vulkan = sd.vulkan;
	struct vy_program *p = sd.p;
	struct t_slow slow = sd.slow;
	struct credit_board *b =
		mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(b, MAP_FAILED);
	memset(b, 0, sizeof(*b));
	struct credit_run run = {d.sock, b, p, slow};
	struct t_user *old = rel_spawn_as_user(ATTACKER, ATTACKER, incumbent, &run);
	struct t_user *fresh = rel_spawn_as_user(VICTIM, VICTIM, newcomer, &run);
	long until = rel_now_ms() + 120000;
	while (b->old_n < OLD_WARM && !b->failed && rel_now_ms() < until) {
		usleep(2000);
	}
	long warm_ms = b->old_n >= OLD_WARM ? (b->old_at[OLD_WARM - 1] - b->old_at[0]) / 1000 : 0;
	b->phase = 1;
	while (b->phase < 2 && !b->failed && rel_now_ms() < until) {
		usleep(2000);
	}
	b->phase = 3;
	int frc = rel_reap(fresh);
	int orc = rel_reap(old);
	cr_assert_eq(orc, 0, "the incumbent failed at check %d", orc);
	cr_assert_eq(frc, 0, "the newcomer failed at check %d", frc);

	long end = b->new_at[NEW_WINDOW - 1];
	int n = b->old_n < OLD_MAX ? b->old_n : OLD_MAX;
	int between = 0;
	for (int k = 0; k < n; k++) {
		between += b->old_at[k] > b->new_sent && b->old_at[k] <= end;
	}
	printf("isolation: a newcomer pipelines %d jobs of about 10 ms after another user ran %d "
	       "in %ld ms (%s): %d of the incumbent's jobs ended during the newcomer's first %d\n",
		NEW_JOBS, OLD_WARM, warm_ms, vulkan ? "vulkan" : "reference", between, NEW_WINDOW);
	fflush(stdout);
	/* In turn, about NEW_WINDOW of the incumbent's jobs end meanwhile; with a second of credit
	 * the newcomer would run all of its jobs first and none would. */
	cr_expect_geq(between, NEW_WINDOW / 4,
		"only %d of the incumbent's jobs ended during the newcomer's first %d: the "
		"newcomer "
		"was served as if it had been waiting all along",
		between, NEW_WINDOW);
	vy_program_destroy(p);
	munmap(b, sizeof(*b));
	rel_stop(&d, true);
}

/* --- a batch closes before a job would carry it past batch_cost_us ---------------------- */

#define BATCH_JOBS 40

/*
 * One user on two connections: one pipelines tiny jobs, the other heavy ones (about 10 ms, far
 * above batch_cost_us, 2 ms). Taken in turn, a batch that holds a tiny job closes before the
 * heavy one that would carry it past batch_cost_us, and a heavy job runs alone: every job is a
 * batch of its own. A heavy job riding in a tiny job's batch would make about half as many.
 */
Test(isolation, a_batch_closes_before_a_job_would_carry_it_past_batch_cost)
{
	struct slow_daemon sd;
	slow_daemon_start(&sd, CONFIG_OPEN "[devices]\nbatch_cost_us = 2000\n", "batch", 10000);
	struct vyd d = sd.d;
	bool vulkan = sd.vulkan;
	struct vy_program *p = sd.p;
	struct t_slow heavy = sd.slow;
	struct tc c;
	tc_open(&c, d.sock, "test");
	struct t_slow tiny = {16, 1};
	struct tc h;
	struct tc t;
	tc_open(&h, d.sock, "heavy");
	tc_open(&t, d.sock, "tiny");
	/* The tiny connection first, until its expected cost is its own (a connection starts from
	 * its user's, and moves an eighth of the way down per job); then one heavy job. */
	for (int k = 0; k < 24; k++) {
		cr_assert_eq(slow_send(&t, p, NULL, tiny, false), 0);
		cr_assert_eq(reply_recv(&t, NULL), 0);
	}
	cr_assert_eq(slow_send(&h, p, NULL, heavy, false), 0);
	cr_assert_eq(reply_recv(&h, NULL), 0);
	uint64_t before = rel_device_stat(&c, "batches");
	for (int k = 0; k < BATCH_JOBS; k++) {
		cr_assert_eq(slow_send(&h, p, NULL, heavy, false), 0);
	}
	for (int k = 0; k < BATCH_JOBS; k++) {
		cr_assert_eq(slow_send(&t, p, NULL, tiny, false), 0);
	}
	for (int k = 0; k < BATCH_JOBS; k++) {
		cr_assert_eq(reply_recv(&t, NULL), 0);
	}
	for (int k = 0; k < BATCH_JOBS; k++) {
		cr_assert_eq(reply_recv(&h, NULL), 0);
	}
	uint64_t batches = rel_device_stat(&c, "batches") - before;
	printf("isolation: %d heavy and %d tiny jobs of one user on two connections (%s), "
	       "batch_cost_us 2000: %" PRIu64 " batches\n",
		BATCH_JOBS, BATCH_JOBS, vulkan ? "vulkan" : "reference", batches);
	fflush(stdout);
	cr_expect_geq(batches, 2 * BATCH_JOBS - 4,
		"%" PRIu64 " batches for %d jobs: heavy jobs rode in tiny jobs' batches past "
		"batch_cost_us",
		batches, 2 * BATCH_JOBS);
	tc_close(&h);
	tc_close(&t);
	tc_close(&c);
	vy_program_destroy(p);
	rel_stop(&d, true);
}
