/*
 * Global bounds (docs/security.md): a per-user quota stops one user, a global one stops users
 * together. One unprivileged user (uid 61001) holds its share, another (uid 61002) takes the rest
 * up to the global bound, and one step past it is refused with an error naming the key:
 *
 *   - resident bytes: resident_total;
 *   - attached shared memory: shm_total;
 *   - requests in flight: max_inflight_total;
 *   - connections beyond max_clients get an error frame (id 0) naming the key, then the close, and
 *     a connect loop costs one warning line a second in the log, not one per connection.
 *   - reply bytes in preparation or unsent: one user dispatching large outputs on several
 *     connections without reading holds at most reply_quota (its dispatches wait, and all are
 *     answered once it reads, while another user is served); two users together, reply_total.
 *
 * Each case prints its figures on a line that starts with "isolation:".
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rel.h"

#define ATTACKER 61001
#define VICTIM 61002

/* Figures a client running as another user hands back. */
struct figures {
	long ms[4];
	long count[4];
	char note[2][512];
};

static struct figures *figures_new(void)
{
	struct figures *f =
		mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(f, MAP_FAILED);
	memset(f, 0, sizeof(*f));
	return f;
}

/* Whether `r` is error `code` with a Fix line that names `key`. */
static bool error_names(const struct tc_reply *r, int code, const char *key)
{
	if (tc_code(r) != code || r->r.error.fix[0] == '\0' || !strstr(r->r.error.fix, key)) {
		fprintf(stderr, "expected %s naming %s: %s (Fix: %s)\n", vy_err_name(code), key,
			r->r.ok ? "ok" : r->r.error.message, r->r.ok ? "" : r->r.error.fix);
		return false;
	}
	return true;
}

/* Attach a sealed, sparse memfd of `size` bytes: the reply's code, or -1 without a reply. */
static int attach(struct tc *c, uint64_t size, struct tc_reply *r)
{
	int fd = memfd_create("vyred-iso-global", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0 ||
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
		return -1;
	}
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	int rc = tc_send(c, &m, fd);
	close(fd);
	if (rc != 0 || tc_recv(c, r, 30000) != 0) {
		tc_reply_free(r);
		return -1;
	}
	return tc_code(r);
}

/* --- resident bytes and shared memory: two users against one global bound ---------------- */

enum held { HELD_RESIDENT, HELD_SHM };

struct pair {
	const char *sock;
	enum held what;
	uint64_t share;  /* what the attacker holds: its whole quota */
	uint64_t rest;   /* what the victim takes: the global bound less the attacker's share */
	const char *key; /* the global key the step past must name */
	int ready[2];    /* the attacker holds its share */
	int released[2]; /* the victim is done: the attacker lets go */
	struct figures *f;
};

/* One request taking `size` bytes of `what`: the reply's code (0 ok), the reply in *r. */
static int take(struct tc *c, enum held what, uint64_t size, struct tc_reply *r)
{
	if (what == HELD_SHM) {
		return attach(c, size, r);
	}
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_ALLOC, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	if (tc_call(c, &m, r) != 0) {
		tc_reply_free(r);
		return -1;
	}
	return tc_code(r);
}

/* The attacker takes its whole per-user quota, then holds it until the victim is done. */
static int hold_share(void *arg)
{
	struct pair *p = arg;
	struct tc c;
	if (tc_connect(&c, p->sock) != 0 || tc_hello(&c, "share") != 0) {
		return 1;
	}
	struct tc_reply r;
	if (take(&c, p->what, p->share, &r) != 0) {
		fprintf(stderr, "the attacker's share: %s\n", r.r.ok ? "?" : r.r.error.message);
		return 2;
	}
	tc_reply_free(&r);
	char b = 1;
	if (write(p->ready[1], &b, 1) != 1 || read(p->released[0], &b, 1) != 1) {
		return 3;
	}
	tc_close(&c);
	return 0;
}

/* The victim takes the rest up to the global bound (at the limit: ok), then 4 bytes more (one
 * past: QUOTA_EXCEEDED naming the global key); once the attacker has let go, the 4 bytes fit. */
static int take_rest(void *arg)
{
	struct pair *p = arg;
	char b;
	if (read(p->ready[0], &b, 1) != 1) {
		return 1;
	}
	struct tc c;
	if (tc_connect(&c, p->sock) != 0 || tc_hello(&c, "rest") != 0) {
		return 2;
	}
	struct tc_reply r;
	if (take(&c, p->what, p->rest, &r) != 0) {
		fprintf(stderr, "the victim's rest at the limit: %s\n",
			r.r.ok ? "?" : r.r.error.message);
		return 3;
	}
	tc_reply_free(&r);
	if (take(&c, p->what, 4096, &r) != VY_E_QUOTA_EXCEEDED ||
		!error_names(&r, VY_E_QUOTA_EXCEEDED, p->key)) {
		return 4;
	}
	snprintf(p->f->note[0], sizeof(p->f->note[0]), "%s", r.r.error.message);
	tc_reply_free(&r);
	if (write(p->released[1], &b, 1) != 1) {
		return 5;
	}
	/* The attacker's connection closes on its own time: retry until its share is freed. */
	long t0 = rel_now_ms();
	int code;
	while ((code = take(&c, p->what, 4096, &r)) == VY_E_QUOTA_EXCEEDED &&
		rel_now_ms() - t0 < 10000) {
		tc_reply_free(&r);
		usleep(20000);
	}
	tc_reply_free(&r);
	p->f->ms[0] = rel_now_ms() - t0;
	tc_close(&c);
	return code == 0 ? 0 : 6;
}

static void two_users(const char *config, enum held what, uint64_t share, uint64_t rest,
	const char *key, const char *label)
{
	struct rel_scene s;
	rel_scene_open(&s, config, 0);
	struct pair p = {s.d.sock, what, share, rest, key, {-1, -1}, {-1, -1}, figures_new()};
	cr_assert_eq(pipe(p.ready), 0);
	cr_assert_eq(pipe(p.released), 0);
	struct t_user *attacker = rel_spawn_as_user(ATTACKER, ATTACKER, hold_share, &p);
	int rc = rel_as_user(VICTIM, VICTIM, take_rest, &p);
	if (rc != 0) {
		/* Let the attacker go whatever happened to the victim. */
		char b = 1;
		cr_expect_eq(write(p.released[1], &b, 1), 1);
	}
	int arc = rel_reap(attacker);
	fprintf(stderr,
		"isolation: %s: uid %d holds %" PRIu64 " bytes, uid %d %" PRIu64
		" (the sum at %s), 4096 more refused: \"%s\"; served %ld ms after the first "
		"let go\n",
		label, ATTACKER, share, VICTIM, rest, key, p.f->note[0], p.f->ms[0]);
	cr_expect_eq(arc, 0, "the attacker failed at check %d", arc);
	cr_expect_eq(rc, 0, "the victim failed at check %d", rc);
	uint64_t held = rel_wait_stat(
		&s.c, what == HELD_SHM ? "resident.shm_bytes" : "resident.bytes", 0, 10000);
	cr_expect_eq(held, 0, "%" PRIu64 " bytes still held once both users closed", held);
	for (int i = 0; i < 2; i++) {
		close(p.ready[i]);
		close(p.released[i]);
	}
	munmap(p.f, sizeof(*p.f));
	rel_scene_close(&s);
}

Test(isolation, resident_total_bounds_users_together)
{
	two_users("[daemon]\nsocket_mode = 0666\n[limits]\nresident_quota = 1M\n"
		  "resident_total = 1536K\n",
		HELD_RESIDENT, 1 << 20, 512 << 10, "resident_total", "resident bytes");
}

Test(isolation, shm_total_bounds_users_together)
{
	two_users("[daemon]\nsocket_mode = 0666\n[limits]\nshm_quota = 64M\nshm_total = 96M\n",
		HELD_SHM, 64 << 20, 32 << 20, "shm_total", "attached shared memory");
}

/* --- requests in flight of two users -------------------------------------------------------- */

struct inflight {
	const char *sock;
	const struct vy_program *p;
	struct t_slow slow;
	int ready[2];
	struct figures *f;
};

/* Four requests in flight on one connection: a slow dispatch and three quick ones behind it. */
static int send_four(struct tc *c, const struct inflight *in)
{
	struct tc_msg m;
	struct t_slow quick = {1, 1};
	for (int i = 0; i < 4; i++) {
		t_pack_slow(c, &m, in->p, i == 0 ? in->slow : quick, -1, 0);
		if (tc_send(c, &m, -1) != 0) {
			return -1;
		}
	}
	return 0;
}

static int recv_four(struct tc *c)
{
	for (int i = 0; i < 4; i++) {
		struct tc_reply r;
		if (tc_recv(c, &r, 30000) != 0 || !r.r.ok) {
			fprintf(stderr, "request %d: %s\n", i,
				r.r.ok ? "no reply" : r.r.error.message);
			tc_reply_free(&r);
			return -1;
		}
		tc_reply_free(&r);
	}
	return 0;
}

static int attacker_four(void *arg)
{
	struct inflight *in = arg;
	struct tc c;
	if (tc_connect(&c, in->sock) != 0 || tc_hello(&c, "four") != 0 || send_four(&c, in) != 0) {
		return 1;
	}
	char b = 1;
	if (write(in->ready[1], &b, 1) != 1) {
		return 2;
	}
	if (recv_four(&c) != 0) {
		return 3;
	}
	tc_close(&c);
	return 0;
}

/* With the attacker's four in flight, four more of the victim reach max_inflight_total (8): all
 * are served. A ninth on another connection: BUSY naming max_inflight_total. Once the victim's
 * four are answered, it is served again. */
static int victim_five(void *arg)
{
	struct inflight *in = arg;
	char b;
	struct tc a;
	struct tc c;
	if (read(in->ready[0], &b, 1) != 1 || tc_connect(&a, in->sock) != 0 ||
		tc_hello(&a, "victim-a") != 0 || tc_connect(&c, in->sock) != 0 ||
		tc_hello(&c, "victim-b") != 0) {
		return 1;
	}
	/* The attacker's dispatches reached the daemon before it said ready; its slow one runs. */
	if (send_four(&a, in) != 0) {
		return 2;
	}
	usleep(100000);
	struct tc_msg m;
	struct tc_reply r;
	tc_begin(&c, &m, VY_OP_PING, 0);
	if (tc_call(&c, &m, &r) != 0 || !error_names(&r, VY_E_BUSY, "max_inflight_total")) {
		tc_reply_free(&r);
		return 3;
	}
	snprintf(in->f->note[0], sizeof(in->f->note[0]), "%s", r.r.error.message);
	tc_reply_free(&r);
	if (recv_four(&a) != 0) {
		return 4;
	}
	tc_begin(&c, &m, VY_OP_PING, 0);
	if (tc_call(&c, &m, &r) != 0 || !r.r.ok) {
		tc_reply_free(&r);
		return 5;
	}
	tc_reply_free(&r);
	tc_close(&a);
	tc_close(&c);
	return 0;
}

Test(isolation, max_inflight_total_bounds_users_together)
{
	struct rel_scene s;
	rel_scene_open(&s,
		"[daemon]\nsocket_mode = 0666\n[limits]\nmax_inflight_total = 8\n"
		"dispatch_timeout_ms = 20000\n",
		0);
	char name[64];
	t_unique(name, sizeof(name), "iso-global-inflight");
	struct vy_program *p = t_slow_program(name);
	struct t_slow slow = t_slow_calibrate(&s.c, p, -1, 1500);
	struct inflight in = {s.d.sock, p, slow, {-1, -1}, figures_new()};
	cr_assert_eq(pipe(in.ready), 0);
	struct t_user *attacker = rel_spawn_as_user(ATTACKER, ATTACKER, attacker_four, &in);
	int rc = rel_as_user(VICTIM, VICTIM, victim_five, &in);
	int arc = rel_reap(attacker);
	fprintf(stderr,
		"isolation: requests in flight: 4 of uid %d and 4 of uid %d served at "
		"max_inflight_total 8, the 9th refused: \"%s\"\n",
		ATTACKER, VICTIM, in.f->note[0]);
	cr_expect_eq(arc, 0, "the attacker failed at check %d", arc);
	cr_expect_eq(rc, 0, "the victim failed at check %d", rc);
	close(in.ready[0]);
	close(in.ready[1]);
	munmap(in.f, sizeof(*in.f));
	vy_program_destroy(p);
	rel_scene_close(&s);
}

/* --- connections beyond max_clients ---------------------------------------------------------- */

struct refused {
	const char *sock;
	long for_ms;
	struct figures *f;
};

/* With the test's own connection open and max_clients 3: two more are served (at the limit);
 * each connection past it, in a loop for `for_ms`, reads one error frame of id 0, BUSY naming
 * max_clients, then the close. */
static int connect_past(void *arg)
{
	struct refused *rf = arg;
	struct tc a;
	struct tc b;
	struct tc_reply r;
	struct tc_msg m;
	if (tc_connect(&a, rf->sock) != 0 || tc_hello(&a, "a") != 0 ||
		tc_connect(&b, rf->sock) != 0 || tc_hello(&b, "b") != 0) {
		return 1;
	}
	long t0 = rel_now_ms();
	for (long i = 0; rel_now_ms() - t0 < rf->for_ms; i++) {
		struct tc x;
		if (tc_connect(&x, rf->sock) != 0) {
			return 2;
		}
		if (tc_recv(&x, &r, 10000) != 0 || r.r.id != 0 ||
			!error_names(&r, VY_E_BUSY, "max_clients")) {
			tc_reply_free(&r);
			return 3;
		}
		if (i == 0) {
			snprintf(rf->f->note[0], sizeof(rf->f->note[0]), "%s", r.r.error.message);
		}
		tc_reply_free(&r);
		if (!tc_wait_eof(&x, 10000)) {
			return 4;
		}
		tc_close(&x);
		rf->f->count[0]++;
	}
	rf->f->ms[0] = rel_now_ms() - t0;
	tc_begin(&a, &m, VY_OP_PING, 0);
	if (tc_call(&a, &m, &r) != 0 || !r.r.ok) {
		tc_reply_free(&r);
		return 5;
	}
	tc_reply_free(&r);
	tc_close(&a);
	tc_close(&b);
	return 0;
}

/* Lines of the daemon's log that contain `text`. */
static int log_lines(const struct vyd *d, const char *text)
{
	FILE *fp = fopen(d->log, "r");
	cr_assert_not_null(fp, "cannot read %s", d->log);
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof(line), fp)) {
		n += strstr(line, text) != NULL;
	}
	fclose(fp);
	return n;
}

Test(isolation, connections_past_max_clients_are_answered_and_logged_once_a_second)
{
	struct rel_scene s;
	rel_scene_open(&s, "[daemon]\nsocket_mode = 0666\n[limits]\nmax_clients = 3\n", 0);
	struct refused rf = {s.d.sock, 2500, figures_new()};
	int rc = rel_as_user(ATTACKER, ATTACKER, connect_past, &rf);
	int lines = log_lines(&s.d, "refusing a connection");
	int summed = log_lines(&s.d, "more refused since the last such line");
	long most = rf.f->ms[0] / 1000 + 2;
	fprintf(stderr,
		"isolation: max_clients 3: 2 connections of uid %d served, %ld past it refused in "
		"%ld ms, each with BUSY id 0 then the close (\"%s\"); %d warning lines logged "
		"(bound %ld), %d of them counting the lines not logged\n",
		ATTACKER, rf.f->count[0], rf.f->ms[0], rf.f->note[0], lines, most, summed);
	cr_expect_eq(rc, 0, "the client failed at check %d", rc);
	cr_expect_geq(lines, 2, "%d refusal lines in %ld ms", lines, rf.f->ms[0]);
	cr_expect_geq(summed, 1, "no line counts the refusals not logged");
	cr_expect_leq(lines, most, "%d refusal lines in %ld ms", lines, rf.f->ms[0]);
	uint64_t refused = t_stat(&s.c, "daemon.connections_refused");
	cr_expect_eq(refused, (uint64_t)rf.f->count[0], "connections_refused is %" PRIu64, refused);
	munmap(rf.f, sizeof(*rf.f));
	rel_scene_close(&s);
}

/* --- replies in preparation and unsent ------------------------------------------------------ */

#define OUT_WORDS (1u << 20) /* 4 MiB of output per dispatch */
/* Two and three such outputs: a reply frame holds its output and some bytes of framing (its id,
 * code, output's length...), counted too once the reply is written: 64 KiB covers them. */
#define QUOTA "8256K"
#define QUOTA_BYTES ((8u << 20) + (64u << 10))
#define TOTAL "12352K"

static struct vy_program *output_program(void)
{
	char name[64];
	t_unique(name, sizeof(name), "iso-global-output");
	struct vy_program *p = vy_program_create(name, 256, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, OUT_WORDS);
	/* One word of every 4 KiB page (1024 invocations): the whole output is resident memory
	 * wherever the daemon holds it, as real results would be. */
	struct vy_expr *at = vy_ir_binary(p, VY_BIN_MUL, vy_ir_gid(p, 0), vy_ir_u32(p, 1024));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "out", at, vy_ir_u32(p, 7)), NULL));
	return p;
}

/* Send a dispatch of `p` (4 workgroups) without waiting for its reply. */
static int send_output(struct tc *c, const struct vy_program *p)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DISPATCH, 3);
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 0);
	vy_pack_cstr(&m.pk, "config");
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, "grid");
	msgpack_pack_array(&m.pk, 3);
	for (int k = 0; k < 3; k++) {
		msgpack_pack_uint32(&m.pk, k == 0 ? OUT_WORDS / 1024 / 256 : 1);
	}
	return tc_send(c, &m, -1);
}

/* Whether `r` is a dispatch's whole 4 MiB output, its first word 7. */
static bool whole_output(const struct tc_reply *r)
{
	const uint8_t *data[1];
	size_t lens[1];
	bool nil[1];
	if (!r->r.ok || tc_outputs(r, data, lens, nil, 1) != 1 || lens[0] != OUT_WORDS * 4 ||
		data[0][0] != 7) {
		fprintf(stderr, "expected a 4 MiB output: %s\n",
			r->r.ok ? "other" : r->r.error.message);
		return false;
	}
	return true;
}

/* Read `want[i]` replies on each of `n` connections, whichever comes first (a reply held back
 * for reply room comes once another is read): the number read, all of them whole outputs. */
static int read_all(struct tc *cs, const int *want, int n, int timeout_ms)
{
	int got[16] = {0};
	int done = 0;
	int total = 0;
	for (int i = 0; i < n; i++) {
		total += want[i];
	}
	long t0 = rel_now_ms();
	while (done < total && rel_now_ms() - t0 < timeout_ms) {
		for (int i = 0; i < n; i++) {
			if (got[i] == want[i]) {
				continue;
			}
			struct tc_reply r;
			int rc = tc_recv(&cs[i], &r, 10);
			if (rc == 0) {
				bool ok = whole_output(&r);
				tc_reply_free(&r);
				if (!ok) {
					return -1;
				}
				got[i]++;
				done++;
			} else if (rc != -ETIMEDOUT) {
				tc_reply_free(&r);
				return -1;
			}
		}
	}
	return done;
}

struct flood_replies {
	const char *sock;
	const struct vy_program *p;
	int conns;
	int each;
	int ready[2];   /* the attacker sent everything */
	int go_read[2]; /* the test measured: the attacker reads */
	struct figures *f;
};

/* `conns` connections of one user, each sending `each` dispatches of 4 MiB outputs without
 * reading; once told, it reads them all, every one whole. */
static int flood_replies(void *arg)
{
	struct flood_replies *fr = arg;
	struct tc cs[16];
	int want[16];
	for (int i = 0; i < fr->conns; i++) {
		if (tc_connect(&cs[i], fr->sock) != 0 || tc_hello(&cs[i], "replies") != 0) {
			return 1;
		}
		want[i] = fr->each;
	}
	for (int k = 0; k < fr->each; k++) {
		for (int i = 0; i < fr->conns; i++) {
			if (send_output(&cs[i], fr->p) != 0) {
				return 2;
			}
		}
	}
	char b = 1;
	if (write(fr->ready[1], &b, 1) != 1 || read(fr->go_read[0], &b, 1) != 1) {
		return 3;
	}
	long t0 = rel_now_ms();
	int n = read_all(cs, want, fr->conns, 60000);
	fr->f->ms[1] = rel_now_ms() - t0;
	fr->f->count[1] = n;
	if (n != fr->conns * fr->each) {
		fprintf(stderr, "%d of %d replies read\n", n, fr->conns * fr->each);
		return 4;
	}
	for (int i = 0; i < fr->conns; i++) {
		tc_close(&cs[i]);
	}
	return 0;
}

/* One dispatch of a 4 MiB output, read at once: its time in the figures' ms[2]. */
static int one_output(void *arg)
{
	struct flood_replies *fr = arg;
	struct tc c;
	if (tc_connect(&c, fr->sock) != 0 || tc_hello(&c, "victim") != 0) {
		return 1;
	}
	long t0 = rel_now_ms();
	int want = 1;
	if (send_output(&c, fr->p) != 0 || read_all(&c, &want, 1, 30000) != 1) {
		return 2;
	}
	fr->f->ms[2] = rel_now_ms() - t0;
	tc_close(&c);
	return 0;
}

/* The daemon's RSS once two readings half a second apart are within 1 MiB (or after 5 s). */
static long settled_rss(pid_t pid)
{
	long last = rel_rss_kib(pid);
	for (int i = 0; i < 10; i++) {
		usleep(500000);
		long now = rel_rss_kib(pid);
		if (labs(now - last) < 1024) {
			return now;
		}
		last = now;
	}
	return last;
}

Test(isolation, replies_of_one_user_are_bounded_over_its_connections)
{
	rel_lean_asan();
	struct rel_scene s;
	rel_scene_open(&s,
		"[daemon]\nsocket_mode = 0666\n[limits]\nmax_output = 4M\nreply_quota = " QUOTA "\n"
		"reply_total = 64M\n",
		0);
	struct vy_program *p = output_program();
	struct flood_replies fr = {s.d.sock, p, 4, 3, {-1, -1}, {-1, -1}, figures_new()};
	cr_assert_eq(pipe(fr.ready), 0);
	cr_assert_eq(pipe(fr.go_read), 0);
	/* Warm up (the program compiled, the allocator grown for one reply), then the baseline. */
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(rel_as_user(VICTIM, VICTIM, one_output, &fr), 0);
	}
	long alone_ms = fr.f->ms[2];
	long base = settled_rss(s.d.pid);
	struct t_user *attacker = rel_spawn_as_user(ATTACKER, ATTACKER, flood_replies, &fr);
	char b = 1;
	cr_assert_eq(read(fr.ready[0], &b, 1), 1);
	/* Everything the daemon will prepare before the attacker reads. */
	uint64_t waits = rel_wait_stat(&s.c, "daemon.reply_waits", 1u << 30, 3000);
	long held = settled_rss(s.d.pid);
	uint64_t reply_bytes = t_stat(&s.c, "daemon.reply_bytes");
	/* Another user is served meanwhile. */
	int vrc = rel_as_user(VICTIM, VICTIM, one_output, &fr);
	cr_assert_eq(write(fr.go_read[1], &b, 1), 1);
	int arc = rel_reap(attacker);
	long grown = (held - base) / 1024;
	long bound = 8 + 16 + 8; /* reply_quota, the ASan quarantine, the rest */
	fprintf(stderr,
		"isolation: replies: uid %d on %d connections sent %d dispatches of 4 MiB outputs "
		"without reading (%d MiB), reply_quota 8M + 64K: daemon RSS +%ld MiB (bound %ld "
		"MiB), "
		"reply_bytes %" PRIu64 " MiB, %" PRIu64 " waits; victim uid %d served in %ld ms "
		"(alone %ld ms); all %ld answered once read, in %ld ms\n",
		ATTACKER, fr.conns, fr.conns * fr.each, fr.conns * fr.each * 4, grown, bound,
		reply_bytes >> 20, waits, VICTIM, fr.f->ms[2], alone_ms, fr.f->count[1],
		fr.f->ms[1]);
	cr_expect_eq(arc, 0, "the attacker failed at check %d", arc);
	cr_expect_eq(vrc, 0, "the victim failed at check %d", vrc);
	cr_expect_leq(reply_bytes, QUOTA_BYTES, "%" PRIu64 " reply bytes held", reply_bytes);
	cr_expect_leq(grown, bound, "the daemon grew %ld MiB", grown);
	cr_expect_eq(rel_wait_stat(&s.c, "daemon.reply_bytes", 0, 5000), 0);
	for (int i = 0; i < 2; i++) {
		close(fr.ready[i]);
		close(fr.go_read[i]);
	}
	munmap(fr.f, sizeof(*fr.f));
	vy_program_destroy(p);
	rel_scene_close(&s);
}

/* The victim's two dispatches on two connections, sent without reading while the attacker holds
 * its reply_quota (8M) unread and reply_total is 12M: the first brings the sum to the limit and is
 * answered; the second waits until that reply is read. */
static int victim_two(void *arg)
{
	struct flood_replies *fr = arg;
	struct tc cs[2];
	for (int i = 0; i < 2; i++) {
		if (tc_connect(&cs[i], fr->sock) != 0 || tc_hello(&cs[i], "victim") != 0) {
			return 1;
		}
	}
	if (send_output(&cs[0], fr->p) != 0 || send_output(&cs[1], fr->p) != 0) {
		return 2;
	}
	/* One comes; the other waits for room, which reading the first frees. */
	int first = -1;
	long t0 = rel_now_ms();
	while (first < 0 && rel_now_ms() - t0 < 20000) {
		for (int i = 0; i < 2 && first < 0; i++) {
			struct tc_reply r;
			int rc = tc_recv(&cs[i], &r, 10);
			if (rc == 0) {
				bool ok = whole_output(&r);
				tc_reply_free(&r);
				if (!ok) {
					return 3;
				}
				first = i;
				fr->f->ms[0] = rel_now_ms() - t0;
			} else if (rc != -ETIMEDOUT) {
				return 5;
			}
		}
	}
	if (first < 0) {
		return 6;
	}
	int want = 1;
	t0 = rel_now_ms();
	if (read_all(&cs[1 - first], &want, 1, 30000) != 1) {
		return 7;
	}
	fr->f->ms[2] = rel_now_ms() - t0;
	tc_close(&cs[0]);
	tc_close(&cs[1]);
	return 0;
}

Test(isolation, reply_total_bounds_users_together)
{
	struct rel_scene s;
	rel_scene_open(&s,
		"[daemon]\nsocket_mode = 0666\n[limits]\nmax_output = 4M\nreply_quota = " QUOTA "\n"
		"reply_total = " TOTAL "\n",
		0);
	struct vy_program *p = output_program();
	struct flood_replies fr = {s.d.sock, p, 1, 2, {-1, -1}, {-1, -1}, figures_new()};
	cr_assert_eq(pipe(fr.ready), 0);
	cr_assert_eq(pipe(fr.go_read), 0);
	struct t_user *attacker = rel_spawn_as_user(ATTACKER, ATTACKER, flood_replies, &fr);
	char b = 1;
	cr_assert_eq(read(fr.ready[0], &b, 1), 1);
	/* Its two outputs in preparation or unsent (the first may be partly in the socket). */
	uint64_t held = 0;
	for (long t0 = rel_now_ms();
		held < (8u << 20) - (512u << 10) && rel_now_ms() - t0 < 20000;) {
		usleep(20000);
		held = t_stat(&s.c, "daemon.reply_bytes");
	}
	uint64_t waits = t_stat(&s.c, "daemon.reply_waits");
	int vrc = rel_as_user(VICTIM, VICTIM, victim_two, &fr);
	uint64_t waited = t_stat(&s.c, "daemon.reply_waits") - waits;
	cr_assert_eq(write(fr.go_read[1], &b, 1), 1);
	int arc = rel_reap(attacker);
	fprintf(stderr,
		"isolation: reply_total 12M + 64K: uid %d holds %" PRIu64
		" MiB unread (its reply_quota), "
		"uid %d's first 4 MiB output answered in %ld ms (the sum at the limit), its second "
		"waited (%" PRIu64 " waits) and came %ld ms after the first was read (it is "
		"written once read); the "
		"attacker's %ld read in %ld ms\n",
		ATTACKER, held >> 20, VICTIM, fr.f->ms[0], waited, fr.f->ms[2], fr.f->count[1],
		fr.f->ms[1]);
	cr_expect_geq(held, (8u << 20) - (512u << 10), "%" PRIu64 " reply bytes held", held);
	cr_expect_eq(vrc, 0, "the victim failed at check %d", vrc);
	cr_expect_eq(arc, 0, "the attacker failed at check %d", arc);
	cr_expect_geq(waited, 1, "the victim's second dispatch did not wait");
	for (int i = 0; i < 2; i++) {
		close(fr.ready[i]);
		close(fr.go_read[i]);
	}
	munmap(fr.f, sizeof(*fr.f));
	vy_program_destroy(p);
	rel_scene_close(&s);
}
