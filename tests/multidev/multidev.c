/*
 * multidev: the checks of a vyred that runs several devices (docs/operations.md, "Several GPUs"),
 * made against a daemon that is already running with fault_injection = true, by a peer that is
 * its admin. CI starts one on several reference and lavapipe instances (test_multidev.sh), and
 * tools/gpu-multi.sh one on every GPU of a machine. Each check prints "ok" or "FAIL" and what it
 * saw.
 *
 *   pinned     a compile and a dispatch with config.device run on that device, and only there
 *              (the devices' dispatch counters), with right outputs; an index hello did not list
 *              is BAD_REQUEST
 *   resident   a buffer allocated on a device stays there: an unpinned dispatch that reads it runs
 *              there, one pinned elsewhere or mixing buffers of two devices is BAD_REQUEST naming
 *              the device; a graph that binds it is made on its device
 *   least      with device 0 busy (slow dispatches queued on it), an unpinned request goes to
 *              another device
 *   fault      while a client dispatches on device 0 in a loop, a device loss injected on the
 *              fault device (--fault-device, default 1) fails the request that met it with
 *              DEVICE_LOST naming the device and the request; that device recovers and serves
 *              again; its buffers and graphs answer NOT_FOUND naming the loss, device 0's
 *              buffers keep their bytes, the stats count one loss on that device and none
 *              elsewhere, and the client on device 0 saw no error and went on completing work
 *
 *   multidev --socket PATH [--devices N] [--fault-device K] [--slow-ms MS]
 *
 * Exit status: 0 when every check passed, 1 when one failed, 2 for bad usage or no daemon, 77 when
 * the daemon runs fewer than two devices (nothing to check).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vy/vyre.h>

#define N 64u
#define MAX_DEVICES 16u
#define CALL_TIMEOUT_MS 120000
#define WAIT_MS 30000
#define SLOW_JOBS 3

struct run {
	const char *sock;
	uint32_t n;         /* devices hello listed */
	uint32_t fault_dev; /* where the loss is injected */
	uint32_t slow_ms;   /* how long one slow dispatch should take */
	int checks;
	int failures;
	struct vy_client *c; /* the main connection */
	struct vy_program *tiny;
	char tiny_id[VY_PROGRAM_ID_CHARS];
};

static void check(struct run *r, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(struct run *r, bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s - ", ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	fflush(stdout);
	r->checks++;
	r->failures += !ok;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return (uint32_t)x;
}

/* The error's name and message (the message ends in the daemon's Fix line). */
static const char *text(const struct vy_error *e)
{
	static _Thread_local char buf[VY_ERROR_NAME_MAX + VY_ERROR_MESSAGE_MAX + 8];
	snprintf(buf, sizeof(buf), "%s: %s", e->name, e->message);
	return buf;
}

/* What a check saw: the error when the call failed, else `yes` or `no` as the outcome was. */
static const char *saw(int rc, const struct vy_error *e, bool good, const char *yes, const char *no)
{
	return rc ? text(e) : good ? yes : no;
}

static struct vy_client *connect_as(struct run *r, const char *name)
{
	struct vy_client *c = NULL;
	struct vy_error e;
	if (vy_client_connect(r->sock, name, &c, &e) != 0) {
		fprintf(stderr, "multidev: connect %s: %s\n", r->sock, text(&e));
		exit(2);
	}
	vy_client_set_timeout(c, CALL_TIMEOUT_MS);
	return c;
}

static struct vy_dispatch_options on_device(uint32_t d)
{
	return (struct vy_dispatch_options){.has_device = true, .device = d};
}

/* --- programs -------------------------------------------------------------------------- */

/* y[i] = x[i] + add over N u32. */
static struct vy_program *tiny_program(const char *name, uint32_t add)
{
	struct vy_error e;
	struct vy_program *p = vy_program_new(name, N, 1, 1);
	if (vy_program_buffer(p, "x", 0, "read_only", "u32", N, 0, &e) ||
		vy_program_buffer(p, "y", 1, "write_only", "u32", N, VY_BUFFER_OUTPUT, &e)) {
		fprintf(stderr, "multidev: %s\n", text(&e));
		exit(2);
	}
	struct vy_expr *i = vy_expr_gid(p, 0);
	struct vy_node *body[] = {vy_node_store(p, "y", i,
		vy_expr_binary(
			p, "add", vy_expr_load(p, "x", vy_expr_gid(p, 0)), vy_expr_u32(p, add)))};
	if (vy_program_entry(p, body, 1, &e) != 0 || vy_program_check(p, &e) != 0) {
		fprintf(stderr, "multidev: %s\n", text(&e));
		exit(2);
	}
	return p;
}

/* A loop of `n` (a spec constant) steps of a nonlinear recurrence per invocation, each
 * invocation's result added atomically into one word: work no compiler folds or skips, scaled by
 * the grid. */
static struct vy_program *slow_program(void)
{
	struct vy_error e;
	struct vy_program *p = vy_program_new("multidev_slow", 64, 1, 1);
	if (vy_program_buffer(p, "out", 0, "read_write", "u32", 1, VY_BUFFER_OUTPUT, &e)) {
		fprintf(stderr, "multidev: %s\n", text(&e));
		exit(2);
	}
	struct vy_expr *next = vy_expr_binary(p, "add",
		vy_expr_binary(p, "mul",
			vy_expr_binary(p, "bit_xor", vy_expr_var(p, "acc"), vy_expr_var(p, "k")),
			vy_expr_u32(p, 2654435761u)),
		vy_expr_u32(p, 1013904223u));
	struct vy_node *loop_body[] = {vy_node_assign(p, "acc", next)};
	struct vy_node *body[] = {
		vy_node_let(p, "acc", vy_expr_gid(p, 0)),
		vy_node_loop(p, "k", vy_expr_u32(p, 0), vy_expr_spec(p, "n", vy_expr_u32(p, 1000)),
			loop_body, 1),
		vy_node_let(p, "old",
			vy_expr_atomic(p, "add", "out", vy_expr_u32(p, 0), vy_expr_var(p, "acc"))),
	};
	if (vy_program_entry(p, body, 3, &e) != 0 || vy_program_check(p, &e) != 0) {
		fprintf(stderr, "multidev: %s\n", text(&e));
		exit(2);
	}
	return p;
}

/* --- requests -------------------------------------------------------------------------- */

static void fill(uint32_t *x, uint64_t seed)
{
	for (uint32_t i = 0; i < N; i++) {
		x[i] = mix(seed * N + i);
	}
}

/* Whether output 0 of `rep` is x + add. */
static bool outputs_right(const struct vy_reply *rep, const uint32_t *x, uint32_t add)
{
	size_t len = 0;
	const uint32_t *y = vy_reply_output(rep, 0, &len);
	if (!y || len != N * 4) {
		return false;
	}
	for (uint32_t i = 0; i < N; i++) {
		if (y[i] != x[i] + add) {
			return false;
		}
	}
	return true;
}

/* The tiny dispatch on fresh input, pinned to `device` (-1: unpinned), its outputs checked (a
 * wrong output is VY_ERROR_BAD_REPLY). The request's id goes to *id (may be NULL). */
static int dispatch_tiny(struct vy_client *c, const char *id, int device, uint64_t seed,
	uint64_t *req_id, struct vy_error *e)
{
	uint32_t x[N];
	fill(x, seed);
	struct vy_dispatch_input in = vy_input_bytes(x, sizeof(x));
	struct vy_dispatch_options opt = on_device(device < 0 ? 0 : (uint32_t)device);
	struct vy_dispatch_args a = {.program_id = id,
		.inputs = &in,
		.n_inputs = 1,
		.options = device < 0 ? NULL : &opt};
	uint64_t rid = 0;
	int rc = vy_dispatch_start(c, &a, NULL, NULL, &rid, e);
	if (req_id) {
		*req_id = rid;
	}
	struct vy_reply *rep = NULL;
	if (rc == 0) {
		rc = vy_client_wait(c, rid, CALL_TIMEOUT_MS, &rep, e);
	}
	if (rc == 0 && !outputs_right(rep, x, 1)) {
		vy_error_clear(e);
		e->code = rc = VY_ERROR_BAD_REPLY;
		snprintf(e->message, sizeof(e->message), "the outputs are not x + 1");
	}
	vy_reply_destroy(rep);
	return rc;
}

/* Field `field` of every device of a stats reply, into out[index]. */
static void device_stats(struct run *r, const char *field, uint64_t *out)
{
	struct vy_reply *st = NULL;
	struct vy_error e;
	memset(out, 0, sizeof(*out) * MAX_DEVICES);
	if (vy_stats(r->c, &st, &e) != 0) {
		fprintf(stderr, "multidev: stats: %s\n", text(&e));
		exit(2);
	}
	const struct vy_value *devs = vy_reply_get(st, "devices");
	for (size_t i = 0; i < vy_value_len(devs); i++) {
		const struct vy_value *d = vy_value_item(devs, i);
		uint64_t index = vy_value_get_u64(d, "index", UINT64_MAX);
		if (index < MAX_DEVICES) {
			out[index] = vy_value_get_u64(d, field, 0);
		}
	}
	vy_reply_destroy(st);
}

/* The device a row of table `table` ("buffers", "graphs") with `key` == `handle` names. */
static int64_t table_device(struct run *r, const char *table, const char *key, uint64_t handle)
{
	struct vy_reply *rep = NULL;
	struct vy_error e;
	int rc = strcmp(table, "buffers") == 0 ? vy_buffers(r->c, &rep, &e)
					       : vy_graphs(r->c, &rep, &e);
	int64_t device = -1;
	const struct vy_value *rows = rc == 0 ? vy_reply_get(rep, table) : NULL;
	for (size_t i = 0; i < vy_value_len(rows); i++) {
		const struct vy_value *row = vy_value_item(rows, i);
		if (vy_value_get_u64(row, key, 0) == handle) {
			device = (int64_t)vy_value_get_u64(row, "device", UINT64_MAX);
		}
	}
	vy_reply_destroy(rep);
	return device;
}

/* A buffer of N u32 on `device` holding fill(seed); 0 when that failed (reported). */
static uint64_t buffer_on(struct run *r, struct vy_client *c, uint32_t device, uint64_t seed)
{
	uint32_t x[N];
	fill(x, seed);
	struct vy_dispatch_options opt = on_device(device);
	uint64_t h = 0;
	struct vy_error e;
	int rc = vy_buffer_alloc_on(c, sizeof(x), NULL, &opt, &h, &e);
	if (rc == 0) {
		rc = vy_buffer_upload(c, h, 0, x, sizeof(x), &e);
	}
	if (rc != 0) {
		check(r, false, "a buffer on device %u: %s", device, text(&e));
		return 0;
	}
	return h;
}

static bool has(const struct vy_error *e, const char *words)
{
	return strstr(e->message, words) != NULL;
}

/* --- the checks ------------------------------------------------------------------------ */

static void check_pinned(struct run *r)
{
	for (uint32_t d = 0; d < r->n; d++) {
		struct vy_dispatch_options opt = on_device(d);
		struct vy_compile_result res;
		struct vy_error e;
		int rc = vy_compile(r->c, r->tiny, &opt, &res, &e);
		check(r, rc == 0 && res.device == d,
			"pinned: compile with config.device %u ran on %s", d,
			saw(rc, &e, res.device == d, "it", "another device"));
	}
	for (uint32_t d = 0; d < r->n; d++) {
		uint64_t before[MAX_DEVICES], after[MAX_DEVICES];
		device_stats(r, "dispatches", before);
		struct vy_error e;
		int rc = dispatch_tiny(r->c, r->tiny_id, (int)d, 100 + d, NULL, &e);
		device_stats(r, "dispatches", after);
		bool only = true;
		for (uint32_t k = 0; k < r->n; k++) {
			only = only && after[k] - before[k] == (k == d ? 1u : 0u);
		}
		check(r, rc == 0 && only,
			"pinned: a dispatch with config.device %u is right (%s) and ran there "
			"alone "
			"(device %u counted %" PRIu64 ")",
			d, rc ? text(&e) : "x + 1", d, after[d] - before[d]);
	}
	struct vy_error e;
	int rc = dispatch_tiny(r->c, r->tiny_id, (int)r->n, 7, NULL, &e);
	check(r, rc == VY_ERROR_BAD_REQUEST && has(&e, "does not exist"),
		"pinned: config.device %u (not listed) is BAD_REQUEST: %s", r->n, text(&e));
}

/* The tiny dispatch reading resident `x`, optionally pinned and writing output 0 to `to`. */
static int dispatch_resident(struct run *r, uint64_t x, int device, uint64_t to,
	struct vy_reply **rep, struct vy_error *e)
{
	struct vy_dispatch_input in = vy_input_resident(x);
	struct vy_dispatch_options opt = on_device(device < 0 ? 0 : (uint32_t)device);
	struct vy_dispatch_args a = {.program_id = r->tiny_id,
		.inputs = &in,
		.n_inputs = 1,
		.outputs_to = to ? &to : NULL,
		.n_outputs_to = to ? 1 : 0,
		.options = device < 0 ? NULL : &opt};
	return vy_dispatch(r->c, &a, rep, e);
}

static uint64_t check_resident(struct run *r, uint64_t *graph)
{
	uint32_t f = r->fault_dev;
	uint64_t h[MAX_DEVICES] = {0};
	for (uint32_t d = 0; d < r->n; d++) {
		h[d] = buffer_on(r, r->c, d, 200 + d);
		int64_t where = h[d] ? table_device(r, "buffers", "handle", h[d]) : -2;
		check(r, where == (int64_t)d,
			"resident: a buffer allocated on device %u lives there "
			"(the buffers table says %" PRId64 ")",
			d, where);
	}
	uint64_t before[MAX_DEVICES], after[MAX_DEVICES];
	uint32_t x[N];
	fill(x, 200 + f);
	device_stats(r, "dispatches", before);
	struct vy_reply *rep = NULL;
	struct vy_error e;
	int rc = dispatch_resident(r, h[f], -1, 0, &rep, &e);
	device_stats(r, "dispatches", after);
	bool right = rc == 0 && outputs_right(rep, x, 1);
	vy_reply_destroy(rep);
	check(r, right && after[f] - before[f] == 1,
		"resident: an unpinned dispatch of a buffer on device %u runs there (%s; device %u "
		"counted %" PRIu64 ")",
		f, saw(rc, &e, right, "x + 1", "wrong outputs"), f, after[f] - before[f]);
	uint32_t other = f == 0 ? 1 : 0;
	char words[32];
	snprintf(words, sizeof(words), "device %u", f);
	rc = dispatch_resident(r, h[f], (int)other, 0, NULL, &e);
	check(r, rc == VY_ERROR_BAD_REQUEST && has(&e, words) && strcmp(e.at, "config.device") == 0,
		"resident: pinned to device %u, a dispatch of a buffer on device %u is BAD_REQUEST "
		"at config.device naming its device: %s",
		other, f, text(&e));
	rc = dispatch_resident(r, h[other], -1, h[f], NULL, &e);
	check(r, rc == VY_ERROR_BAD_REQUEST && has(&e, "lives on device"),
		"resident: buffers of devices %u and %u in one dispatch are BAD_REQUEST: %s", other,
		f, text(&e));

	struct vy_graph_bind binds[] = {vy_bind_resident("x", h[f]), vy_bind_output("y", 0)};
	struct vy_graph_step step = {.program_id = r->tiny_id, .binds = binds, .n_binds = 2};
	struct vy_graph_info info = {0};
	rc = vy_graph_create(r->c, &step, 1, "multidev", &info, &e);
	int64_t where = rc == 0 ? table_device(r, "graphs", "graph", info.graph) : -2;
	check(r, rc == 0 && where == (int64_t)f,
		"resident: a graph that binds a buffer of device %u is made there (%s)", f,
		saw(rc, &e, where == (int64_t)f, "the graphs table says so", "it is not"));
	rc = rc ? rc : vy_graph_run(r->c, info.graph, NULL, 0, NULL, &rep, &e);
	right = rc == 0 && outputs_right(rep, x, 1);
	vy_reply_destroy(rep);
	check(r, right, "resident: the graph on device %u runs right (%s)", f,
		saw(rc, &e, right, "x + 1", "wrong outputs"));
	*graph = info.graph;
	for (uint32_t d = 0; d < r->n; d++) {
		if (d != f && h[d]) {
			vy_buffer_free(r->c, h[d], NULL);
		}
	}
	return h[f];
}

struct slow {
	uint32_t n;    /* loop steps per invocation */
	uint32_t grid; /* workgroups */
};

static int dispatch_slow_start(
	struct vy_client *c, const char *id, struct slow s, uint64_t *req, struct vy_error *e)
{
	struct vy_spec_arg spec = {.name = "n", .type = VY_SPEC_TYPE_U32, .v.u32 = s.n};
	struct vy_dispatch_options opt = on_device(0);
	opt.spec = &spec;
	opt.n_spec = 1;
	opt.grid[0] = s.grid;
	opt.grid[1] = 1;
	opt.grid[2] = 1;
	struct vy_dispatch_args a = {.program_id = id, .options = &opt};
	return vy_dispatch_start(c, &a, NULL, NULL, req, e);
}

static int dispatch_slow(struct vy_client *c, const char *id, struct slow s, struct vy_error *e)
{
	uint64_t req = 0;
	int rc = dispatch_slow_start(c, id, s, &req, e);
	return rc ? rc : vy_client_wait(c, req, CALL_TIMEOUT_MS, NULL, e);
}

static void check_least_loaded(struct run *r)
{
	struct vy_client *busy = connect_as(r, "multidev-busy");
	struct vy_program *p = slow_program();
	char id[VY_PROGRAM_ID_CHARS];
	struct vy_compile_result res;
	struct vy_error e;
	struct vy_dispatch_options pin = on_device(0);
	int rc = vy_compile(busy, p, &pin, &res, &e);
	/* The count stays far below the 65,535 loop passes lavapipe allows one invocation; the
	 * grid grows until one dispatch takes slow_ms on device 0 (grids past a device's limit
	 * per dimension fold into y and z). */
	struct slow s = {4000, 1};
	uint64_t took = 0;
	if (rc == 0) {
		memcpy(id, res.program_id, sizeof(id));
		rc = dispatch_slow(busy, id, s, &e);
	}
	while (rc == 0 && took < r->slow_ms && s.grid < (UINT32_C(1) << 24)) {
		s.grid *= 2;
		uint64_t t0 = now_ms();
		rc = dispatch_slow(busy, id, s, &e);
		took = now_ms() - t0;
	}
	if (rc != 0) {
		check(r, false, "least: the slow program on device 0: %s", text(&e));
		vy_client_close(busy);
		vy_program_free(p);
		return;
	}
	uint64_t reqs[SLOW_JOBS];
	for (int i = 0; i < SLOW_JOBS && rc == 0; i++) {
		rc = dispatch_slow_start(busy, id, s, &reqs[i], &e);
	}
	/* Wait until device 0 holds them, then route. */
	uint64_t depth[MAX_DEVICES], running[MAX_DEVICES];
	uint64_t t0 = now_ms();
	do {
		device_stats(r, "queue_depth", depth);
		device_stats(r, "running", running);
	} while (rc == 0 && depth[0] + running[0] == 0 && now_ms() - t0 < WAIT_MS);
	struct vy_program *fresh = tiny_program("multidev_routed", 2);
	struct vy_compile_result routed = {0};
	if (rc == 0) {
		rc = vy_compile(r->c, fresh, NULL, &routed, &e);
	}
	check(r, rc == 0 && routed.device != 0,
		"least: with device 0 busy (%u slow dispatches of %" PRIu64 " ms queued), an "
		"unpinned compile went to device %u (%s)",
		SLOW_JOBS, took, routed.device, saw(rc, &e, routed.device != 0, "not 0", "0"));
	for (int i = 0; i < SLOW_JOBS && rc == 0; i++) {
		int wrc = vy_client_wait(busy, reqs[i], CALL_TIMEOUT_MS, NULL, &e);
		if (wrc != 0) {
			check(r, false, "least: slow dispatch %d: %s", i, text(&e));
		}
	}
	vy_program_free(fresh);
	vy_client_close(busy);
	vy_program_free(p);
}

/* A client dispatching on device 0 in a loop until told to stop. */
struct steady {
	struct run *r;
	struct vy_client *c;
	atomic_bool stop;
	atomic_uint_fast64_t done;
	atomic_uint_fast64_t errors;
	struct vy_error first; /* the first error, read after the join */
	pthread_t thread;
};

static void *steady_loop(void *arg)
{
	struct steady *s = arg;
	for (uint64_t seed = 1000; !atomic_load(&s->stop); seed++) {
		struct vy_error e;
		if (dispatch_tiny(s->c, s->r->tiny_id, 0, seed, NULL, &e) == 0) {
			atomic_fetch_add(&s->done, 1);
		} else if (atomic_fetch_add(&s->errors, 1) == 0) {
			s->first = e;
		}
	}
	return NULL;
}

/* Wait until the steady client completed `more` dispatches beyond `from` (or WAIT_MS). */
static uint64_t steady_wait(struct steady *s, uint64_t from, uint64_t more)
{
	uint64_t t0 = now_ms();
	while (atomic_load(&s->done) < from + more && now_ms() - t0 < WAIT_MS) {
		usleep(1000);
	}
	return atomic_load(&s->done);
}

static void check_fault(struct run *r, uint64_t hf, uint64_t graph)
{
	uint32_t f = r->fault_dev;
	uint32_t x0[N], back[N];
	fill(x0, 300);
	uint64_t h0 = buffer_on(r, r->c, 0, 300);
	struct steady s = {.r = r, .c = connect_as(r, "multidev-steady")};
	atomic_init(&s.stop, false);
	atomic_init(&s.done, 0);
	atomic_init(&s.errors, 0);
	if (pthread_create(&s.thread, NULL, steady_loop, &s) != 0) {
		fprintf(stderr, "multidev: cannot start a thread\n");
		exit(2);
	}
	uint64_t warm = steady_wait(&s, 0, 5);

	struct vy_dispatch_options opt = on_device(f);
	struct vy_reply *rep = NULL;
	struct vy_error e;
	int rc = vy_inject_fault(r->c, "device_lost", &opt, &rep, &e);
	uint64_t where = UINT64_MAX;
	vy_value_u64(vy_reply_get(rep, "device"), &where);
	vy_reply_destroy(rep);
	check(r, rc == 0 && where == f, "fault: a device loss injected on device %u (%s)", f,
		saw(rc, &e, where == f, "the reply names it", "the reply names another"));
	uint64_t at_loss = atomic_load(&s.done);

	uint64_t req = 0;
	rc = dispatch_tiny(r->c, r->tiny_id, (int)f, 400, &req, &e);
	char dev_words[32], req_words[48];
	snprintf(dev_words, sizeof(dev_words), "device %u (", f);
	snprintf(req_words, sizeof(req_words), "request %" PRIu64, req);
	check(r, rc == VY_ERROR_DEVICE_LOST && has(&e, dev_words) && has(&e, req_words),
		"fault: the request on device %u that met the loss is DEVICE_LOST naming the "
		"device "
		"and the request: %s",
		f, text(&e));
	rc = dispatch_tiny(r->c, r->tiny_id, (int)f, 401, NULL, &e);
	check(r, rc == 0, "fault: device %u recovered: the next dispatch there is right (%s)", f,
		rc ? text(&e) : "x + 1");

	snprintf(dev_words, sizeof(dev_words), "lost with device %u", f);
	rc = vy_buffer_download(r->c, hf, 0, back, sizeof(back), &e);
	check(r, rc == VY_ERROR_NOT_FOUND && has(&e, dev_words),
		"fault: a buffer of device %u is NOT_FOUND, lost with it: %s", f, text(&e));
	rc = vy_graph_run(r->c, graph, NULL, 0, NULL, NULL, &e);
	check(r, rc == VY_ERROR_NOT_FOUND && has(&e, dev_words),
		"fault: a graph of device %u is NOT_FOUND, lost with it: %s", f, text(&e));
	rc = h0 ? vy_buffer_download(r->c, h0, 0, back, sizeof(back), &e) : -1;
	check(r, rc == 0 && memcmp(back, x0, sizeof(back)) == 0,
		"fault: a buffer of device 0 keeps its bytes (%s)",
		saw(rc, &e, memcmp(back, x0, sizeof(back)), "they changed", "they are equal"));

	uint64_t lost[MAX_DEVICES];
	device_stats(r, "lost", lost);
	bool counted = true;
	for (uint32_t d = 0; d < r->n; d++) {
		counted = counted && lost[d] == (d == f ? 1u : 0u);
	}
	check(r, counted,
		"fault: the stats count one loss on device %u and none elsewhere (%" PRIu64
		" on device %u, %" PRIu64 " on device 0)",
		f, lost[f], f, lost[0]);

	uint64_t h = buffer_on(r, r->c, f, 500);
	uint32_t x[N];
	fill(x, 500);
	rep = NULL;
	rc = h ? dispatch_resident(r, h, -1, 0, &rep, &e) : -1;
	bool right = rc == 0 && outputs_right(rep, x, 1);
	vy_reply_destroy(rep);
	check(r, right,
		"fault: device %u serves again: a new buffer there and a dispatch of it (%s)", f,
		saw(rc, &e, right, "x + 1", "wrong outputs"));

	uint64_t end = steady_wait(&s, atomic_load(&s.done), 5);
	atomic_store(&s.stop, true);
	pthread_join(s.thread, NULL);
	uint64_t errors = atomic_load(&s.errors);
	check(r, errors == 0 && warm >= 5 && end > at_loss,
		"fault: device 0 served throughout: %" PRIu64
		" dispatches before the loss, %" PRIu64 " after it, %" PRIu64 " errors%s%s",
		at_loss, end - at_loss, errors, errors ? ", the first: " : "",
		errors ? text(&s.first) : "");
	vy_client_close(s.c);
	if (h) {
		vy_buffer_free(r->c, h, NULL);
	}
	if (h0) {
		vy_buffer_free(r->c, h0, NULL);
	}
	vy_buffer_free(r->c, hf, NULL);
	vy_graph_free(r->c, graph, NULL);
}

static int usage(FILE *out, int status)
{
	fprintf(out, "usage: multidev --socket PATH [--devices N] [--fault-device K] "
		     "[--slow-ms MS]\n");
	return status;
}

int main(int argc, char **argv)
{
	struct run r = {.fault_dev = 1, .slow_ms = 200};
	long want = -1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			return usage(stdout, 0);
		}
		if (i + 1 >= argc) {
			return usage(stderr, 2);
		}
		const char *v = argv[++i];
		if (strcmp(argv[i - 1], "--socket") == 0) {
			r.sock = v;
		} else if (strcmp(argv[i - 1], "--devices") == 0) {
			want = strtol(v, NULL, 10);
		} else if (strcmp(argv[i - 1], "--fault-device") == 0) {
			r.fault_dev = (uint32_t)strtoul(v, NULL, 10);
		} else if (strcmp(argv[i - 1], "--slow-ms") == 0) {
			r.slow_ms = (uint32_t)strtoul(v, NULL, 10);
		} else {
			return usage(stderr, 2);
		}
	}
	if (!r.sock) {
		return usage(stderr, 2);
	}
	r.c = connect_as(&r, "multidev");
	const struct vy_value *devs = vy_value_get(vy_client_hello(r.c), "devices");
	r.n = (uint32_t)vy_value_len(devs);
	for (uint32_t d = 0; d < r.n; d++) {
		const struct vy_value *dv = vy_value_item(devs, d);
		printf("# device %u: %s, %s\n", d, vy_value_get_str(dv, "backend", "?"),
			vy_value_get_str(dv, "name", "?"));
	}
	if (want >= 0) {
		check(&r, r.n == (uint32_t)want, "devices: hello lists %u devices, %ld expected",
			r.n, want);
	}
	if (r.n < 2 || r.n > MAX_DEVICES || r.fault_dev == 0 || r.fault_dev >= r.n) {
		fprintf(stderr,
			"multidev: the daemon runs %u device(s); the checks need 2 to %u, and a "
			"fault device from 1 to %u. Fix: start vyred with devices = all on a "
			"machine with several GPUs, or devices = 0,1 with backend = reference\n",
			r.n, MAX_DEVICES, r.n ? r.n - 1 : 0);
		vy_client_close(r.c);
		return r.failures ? 1 : 77;
	}
	r.tiny = tiny_program("multidev_tiny", 1);
	struct vy_compile_result res;
	struct vy_error e;
	if (vy_compile(r.c, r.tiny, NULL, &res, &e) != 0) {
		fprintf(stderr, "multidev: compile: %s\n", text(&e));
		return 2;
	}
	memcpy(r.tiny_id, res.program_id, sizeof(r.tiny_id));

	check_pinned(&r);
	uint64_t graph = 0;
	uint64_t hf = check_resident(&r, &graph);
	check_least_loaded(&r);
	check_fault(&r, hf, graph);

	vy_program_free(r.tiny);
	vy_client_close(r.c);
	printf("# %d checks, %d failed\n", r.checks, r.failures);
	return r.failures ? 1 : 0;
}
