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
 *
 * Each case prints its figures on a line that starts with "isolation:".
 */
#include <criterion/criterion.h>
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

/* Figures a child running as another user hands back (a shared mapping survives the fork). */
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
	pid_t attacker = rel_spawn_as_user(ATTACKER, ATTACKER, hold_share, &p);
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
	pid_t attacker = rel_spawn_as_user(ATTACKER, ATTACKER, attacker_four, &in);
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
	uint64_t refused = rel_stat(&s.c, "daemon.connections_refused");
	cr_expect_eq(refused, (uint64_t)rf.f->count[0], "connections_refused is %" PRIu64, refused);
	munmap(rf.f, sizeof(*rf.f));
	rel_scene_close(&s);
}
