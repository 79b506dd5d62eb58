/*
 * Helpers of the reliability suite (rel.h): the crowd of well-behaved clients, /proc figures,
 * checks as another user, and request builders that return error codes instead of asserting.
 */
#include "rel.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mp.h"

#define PATTERN_BYTES 4096

void rel_asan_quarantine(int mb)
{
	const char *now = getenv("ASAN_OPTIONS");
	if (now && strstr(now, "quarantine_size_mb")) {
		return;
	}
	char opts[1024];
	snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=%d", now ? now : "",
		now && *now ? ":" : "", mb);
	setenv("ASAN_OPTIONS", opts, 1);
}

void rel_lean_asan(void)
{
	rel_asan_quarantine(16);
}

long rel_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- requests that never assert ------------------------------------------------------- */

static int finish_call(struct tc *c, struct tc_msg *m, struct tc_reply *r)
{
	/* tc_call leaves the reply untouched when the send fails. */
	memset(r, 0, sizeof(*r));
	int rc = tc_call(c, m, r);
	return rc ? rc : tc_code(r);
}

int rel_alloc(struct tc *c, uint64_t size, const char *name, uint64_t *handle)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_ALLOC, name ? 2 : 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	if (name) {
		vy_pack_cstr(&m.pk, "name");
		vy_pack_cstr(&m.pk, name);
	}
	struct tc_reply r;
	int code = finish_call(c, &m, &r);
	*handle = 0;
	if (code == 0 && !tc_u64(&r, "handle", handle)) {
		code = VY_E_INTERNAL;
	}
	tc_reply_free(&r);
	return code;
}

int rel_upload(struct tc *c, uint64_t handle, uint64_t offset, const void *data, size_t len)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_UPLOAD, 3);
	vy_pack_cstr(&m.pk, "handle");
	msgpack_pack_uint64(&m.pk, handle);
	vy_pack_cstr(&m.pk, "offset");
	msgpack_pack_uint64(&m.pk, offset);
	vy_pack_cstr(&m.pk, "data");
	msgpack_pack_bin(&m.pk, len);
	msgpack_pack_bin_body(&m.pk, data, len);
	struct tc_reply r;
	int code = finish_call(c, &m, &r);
	tc_reply_free(&r);
	return code;
}

int rel_download(struct tc *c, uint64_t handle, uint64_t offset, uint64_t len, void *out)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DOWNLOAD, 3);
	vy_pack_cstr(&m.pk, "handle");
	msgpack_pack_uint64(&m.pk, handle);
	vy_pack_cstr(&m.pk, "offset");
	msgpack_pack_uint64(&m.pk, offset);
	vy_pack_cstr(&m.pk, "length");
	msgpack_pack_uint64(&m.pk, len);
	struct tc_reply r;
	int code = finish_call(c, &m, &r);
	if (code == 0) {
		struct vy_mp_reader rd;
		struct vy_mp_obj o;
		if (!tc_field(&r, "data", &rd) || vy_mp_read(&rd, &o) != VY_MP_OK ||
			o.type != VY_MP_BIN || o.len != len) {
			code = VY_E_INTERNAL;
		} else {
			memcpy(out, o.data, len);
		}
	}
	tc_reply_free(&r);
	return code;
}

int rel_free(struct tc *c, uint64_t handle)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_FREE, 1);
	vy_pack_cstr(&m.pk, "handle");
	msgpack_pack_uint64(&m.pk, handle);
	struct tc_reply r;
	int code = finish_call(c, &m, &r);
	tc_reply_free(&r);
	return code;
}

int rel_dispatch(struct tc *c, const struct vy_program *p, uint32_t n_inputs,
	const uint64_t *handles, const struct vy_bytes *bytes, uint32_t n_outputs_to,
	const uint64_t *outputs_to, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DISPATCH, outputs_to ? 3 : 2);
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, n_inputs);
	for (uint32_t i = 0; i < n_inputs; i++) {
		if (handles && handles[i]) {
			msgpack_pack_map(&m.pk, 1);
			vy_pack_cstr(&m.pk, "resident");
			msgpack_pack_uint64(&m.pk, handles[i]);
		} else {
			msgpack_pack_bin(&m.pk, bytes[i].len);
			msgpack_pack_bin_body(&m.pk, bytes[i].data, bytes[i].len);
		}
	}
	if (outputs_to) {
		vy_pack_cstr(&m.pk, "outputs_to");
		msgpack_pack_array(&m.pk, n_outputs_to);
		for (uint32_t o = 0; o < n_outputs_to; o++) {
			if (outputs_to[o]) {
				msgpack_pack_uint64(&m.pk, outputs_to[o]);
			} else {
				msgpack_pack_nil(&m.pk);
			}
		}
	}
	return finish_call(c, &m, r);
}

int rel_dispatch_grid(struct tc *c, const struct vy_program *p, const uint32_t *grid,
	uint64_t max_loop, struct tc_reply *r)
{
	struct tc_msg m;
	uint32_t nconfig = (grid != NULL) + (max_loop != 0);
	tc_begin(c, &m, VY_OP_DISPATCH, nconfig ? 3 : 2);
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 0);
	if (nconfig) {
		vy_pack_cstr(&m.pk, "config");
		msgpack_pack_map(&m.pk, nconfig);
		if (grid) {
			vy_pack_cstr(&m.pk, "grid");
			msgpack_pack_array(&m.pk, 3);
			for (int k = 0; k < 3; k++) {
				msgpack_pack_uint32(&m.pk, grid[k]);
			}
		}
		if (max_loop) {
			vy_pack_cstr(&m.pk, "max_loop_iterations");
			msgpack_pack_uint64(&m.pk, max_loop);
		}
	}
	return finish_call(c, &m, r);
}

/* --- the crowd ------------------------------------------------------------------------ */

static bool tolerated(const struct rel_crowd *cr, int code)
{
	for (const int *t = cr->tolerate; t && *t; t++) {
		if (*t == code) {
			return true;
		}
	}
	return false;
}

/* 0: the round was correct; 1: an error the crowd tolerates; -1: a failure (described). */
static int judge(struct rel_member *m, int code, const char *what, const char *message)
{
	if (code == 0) {
		return 0;
	}
	/* Error codes of the protocol lie below -1000; above are -errno values of the socket. */
	bool wire = code > -1000;
	if (wire || !tolerated(m->crowd, code)) {
		if (!m->failure[0]) {
			snprintf(m->failure, sizeof(m->failure), "client %d, %s: %s (%d): %.200s",
				m->index, what, wire ? strerror(-code) : vy_err_name(code), code,
				message ? message : "");
		}
		m->failures++;
		return -1;
	}
	m->tolerated++;
	return 1;
}

static int round_once(struct rel_member *m)
{
	struct rel_crowd *cr = m->crowd;
	int set = (int)((m->rounds + (uint64_t)m->index) % REL_SETS);
	long t0 = rel_now_ms();
	struct tc_reply r;
	int code = rel_dispatch(
		&m->c, cr->program, (uint32_t)cr->in[set].n, NULL, cr->in[set].in, 0, NULL, &r);
	int verdict = judge(m, code, "dispatch", code < -1000 ? r.r.error.message : NULL);
	if (verdict == 0 && !tc_outputs_equal(&r, &cr->want[set])) {
		verdict = judge(m, VY_E_INTERNAL, "dispatch", "outputs differ from the reference");
	}
	tc_reply_free(&r);
	if (verdict) {
		return verdict;
	}
	if (!m->handle) {
		code = rel_alloc(&m->c, PATTERN_BYTES, NULL, &m->handle);
		verdict = judge(m, code, "alloc", NULL);
		if (verdict) {
			return verdict;
		}
	}
	uint32_t pattern[PATTERN_BYTES / 4];
	uint32_t back[PATTERN_BYTES / 4];
	for (uint32_t i = 0; i < PATTERN_BYTES / 4; i++) {
		pattern[i] = (uint32_t)m->index << 24 ^ (uint32_t)m->rounds * 2654435761u ^ i;
	}
	code = rel_upload(&m->c, m->handle, 0, pattern, sizeof(pattern));
	if (code == 0) {
		code = rel_download(&m->c, m->handle, 0, sizeof(back), back);
	}
	if (code == VY_E_NOT_FOUND) {
		/* Lost with its device (the crowd tolerates it only then): allocate again. */
		m->handle = 0;
	}
	verdict = judge(m, code, "resident round trip", NULL);
	if (verdict == 0 && memcmp(pattern, back, sizeof(back)) != 0) {
		verdict = judge(m, VY_E_INTERNAL, "resident round trip",
			"the bytes read back differ from those written");
	}
	if (verdict) {
		return verdict;
	}
	long took = rel_now_ms() - t0;
	if ((uint64_t)took > m->slowest_ms) {
		m->slowest_ms = (uint64_t)took;
	}
	m->rounds++;
	return 0;
}

static void *run_member(void *arg)
{
	struct rel_member *m = arg;
	while (!atomic_load(&m->crowd->stop)) {
		round_once(m);
		if (m->failures > 4) {
			return NULL;
		}
		usleep(2000);
	}
	/* The attack is over: one more round must pass cleanly (a few tries let a client whose
	 * buffer went with a lost device allocate a new one). */
	for (int attempt = 0; attempt < 3 && !m->final_round_ok; attempt++) {
		m->final_round_ok = round_once(m) == 0;
	}
	return NULL;
}

/* Crowds started and not yet stopped, for rel_fini. */
static struct rel_crowd *crowds;

struct rel_crowd *rel_crowd_start(const char *sock, int n, const int *tolerate)
{
	cr_assert_leq(n, REL_MAX_CROWD);
	struct rel_crowd *cr = calloc(1, sizeof(*cr));
	cr_assert(cr);
	cr->next = crowds;
	crowds = cr;
	cr->n = n;
	cr->tolerate = tolerate;
	atomic_init(&cr->stop, false);
	cr->program = tc_program("vector_add");
	for (int s = 0; s < REL_SETS; s++) {
		t_inputs_make(cr->program, 0, (uint64_t)(900 + s), &cr->in[s]);
		cr_assert_eq(t_reference(cr->program, &cr->in[s], NULL, &cr->want[s]), 0);
	}
	for (int i = 0; i < n; i++) {
		struct rel_member *m = &cr->members[i];
		m->crowd = cr;
		m->index = i;
		char name[32];
		snprintf(name, sizeof(name), "crowd-%d", i);
		tc_open(&m->c, sock, name);
		m->connected = true;
	}
	/* A first round before the threads start: the crowd's program is cached and its buffers
	 * exist before the test measures anything. */
	for (int i = 0; i < n; i++) {
		struct rel_member *m = &cr->members[i];
		cr_assert_eq(round_once(m), 0, "the crowd's first round failed: %s", m->failure);
	}
	for (int i = 0; i < n; i++) {
		cr_assert_eq(pthread_create(&cr->threads[i], NULL, run_member, &cr->members[i]), 0);
		cr->started = i + 1;
	}
	return cr;
}

/* Join the crowd's threads, close its connections, free it. */
static void crowd_free(struct rel_crowd *cr)
{
	atomic_store(&cr->stop, true);
	for (int i = 0; i < cr->started; i++) {
		pthread_join(cr->threads[i], NULL);
	}
	for (int i = 0; i < cr->n; i++) {
		if (cr->members[i].connected) {
			tc_close(&cr->members[i].c);
		}
	}
	for (int s = 0; s < REL_SETS; s++) {
		t_inputs_free(&cr->in[s]);
		vy_outputs_finish(&cr->want[s]);
	}
	vy_program_destroy(cr->program);
	for (struct rel_crowd **l = &crowds; *l; l = &(*l)->next) {
		if (*l == cr) {
			*l = cr->next;
			break;
		}
	}
	free(cr);
}

bool rel_crowd_stop(struct rel_crowd *cr, uint64_t min_rounds, uint64_t *tolerated)
{
	atomic_store(&cr->stop, true);
	bool ok = true;
	for (int i = 0; i < cr->started; i++) {
		pthread_join(cr->threads[i], NULL);
	}
	cr->started = 0;
	uint64_t sum = 0;
	uint64_t rounds = 0;
	uint64_t slowest = 0;
	for (int i = 0; i < cr->n; i++) {
		struct rel_member *m = &cr->members[i];
		cr_expect_eq(m->failures, 0, "a well-behaved client failed: %s", m->failure);
		cr_expect(m->final_round_ok, "client %d: no clean round after the attack (%s)", i,
			m->failure[0] ? m->failure : "no failure recorded");
		cr_expect_geq(m->rounds, min_rounds, "client %d completed %lu rounds", i,
			(unsigned long)m->rounds);
		ok = ok && m->failures == 0 && m->final_round_ok && m->rounds >= min_rounds;
		sum += m->tolerated;
		rounds += m->rounds;
		slowest = m->slowest_ms > slowest ? m->slowest_ms : slowest;
	}
	cr_log_info("crowd: %d clients, %lu correct rounds, the slowest took %lu ms", cr->n,
		(unsigned long)rounds, (unsigned long)slowest);
	if (tolerated) {
		*tolerated = sum;
	}
	crowd_free(cr);
	return ok;
}

void rel_fini(void)
{
	/* Daemons first: their end closes the crowd's connections, which unblocks its threads. */
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		char path[300];
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f) {
			continue;
		}
		int pid = 0;
		int ppid = 0;
		char state;
		if (fscanf(f, "%d %*s %c %d", &pid, &state, &ppid) == 3 && ppid == getpid()) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		fclose(f);
	}
	if (d) {
		closedir(d);
	}
	while (crowds) {
		crowd_free(crowds);
	}
	/* The small file systems of the cache cases (test_recovery.c), this process's only: another
	 * run of the suite beside this one keeps its own. */
	char own[64];
	snprintf(own, sizeof(own), REL_FS_PREFIX "%ld-", (long)getpid());
	FILE *mounts = fopen("/proc/self/mounts", "r");
	char line[1024];
	while (mounts && fgets(line, sizeof(line), mounts)) {
		char dir[512];
		if (sscanf(line, "%*s %511s", dir) == 1 && strncmp(dir, own, strlen(own)) == 0) {
			umount2(dir, MNT_DETACH);
			rmdir(dir);
		}
	}
	if (mounts) {
		fclose(mounts);
	}
}

void rel_stop(struct vyd *d, bool clean)
{
	if (clean) {
		t_stop(d);
		return;
	}
	/* A daemon that let its other clients down may also be stuck: kill it, keep its log. */
	vyd_dump_log(d);
	vyd_cleanup(d);
}

void rel_scene_open(struct rel_scene *s, const char *config, int crowd)
{
	t_start(&s->d, config);
	tc_open(&s->c, s->d.sock, "test");
	s->vulkan = rel_on_vulkan(&s->c);
	s->crowd = rel_crowd_start(s->d.sock, crowd, NULL);
}

void rel_scene_close(struct rel_scene *s)
{
	tc_close(&s->c);
	bool ok = rel_crowd_stop(s->crowd, 2, NULL);
	s->crowd = NULL;
	rel_stop(&s->d, ok);
}

void rel_expect_error(const struct tc_reply *r, int code, const char *words)
{
	int got = tc_code(r);
	cr_expect_eq(got, code, "error %s, expected %s: %s", got ? vy_err_name(got) : "none",
		vy_err_name(code), r->r.error.message);
	if (got) {
		cr_expect_neq(r->r.error.fix[0], '\0', "no Fix line: %s", r->r.error.message);
	}
	if (got && words) {
		cr_expect(strstr(r->r.error.message, words) != NULL, "\"%s\" not in: %s", words,
			r->r.error.message);
	}
}

/* --- the daemon's resources ----------------------------------------------------------- */

long rel_rss_kib(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f) {
		return -1;
	}
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) {
			break;
		}
	}
	fclose(f);
	return kib;
}

int rel_fd_count(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d) {
		return -1;
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		n += e->d_name[0] != '.';
	}
	closedir(d);
	return n;
}

int rel_wait_fds(pid_t pid, int most, int timeout_ms)
{
	long end = rel_now_ms() + timeout_ms;
	int n = rel_fd_count(pid);
	while (n > most && rel_now_ms() < end) {
		usleep(20000);
		n = rel_fd_count(pid);
	}
	return n;
}

uint64_t rel_wait_stat(struct tc *c, const char *path, uint64_t want, int timeout_ms)
{
	long end = rel_now_ms() + timeout_ms;
	uint64_t v = t_stat(c, path);
	while (v != want && rel_now_ms() < end) {
		usleep(20000);
		v = t_stat(c, path);
	}
	return v;
}

/* The u64 `name` of the first device of a stats reply. */
uint64_t rel_device_stat(struct tc *c, const char *name)
{
	struct tc_reply r;
	cr_assert_eq(t_simple(c, VY_OP_STATS, &r), 0);
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	cr_assert(tc_field(&r, "devices", &rd));
	cr_assert(vy_mp_read(&rd, &o) == VY_MP_OK && o.type == VY_MP_ARRAY && o.len > 0);
	cr_assert(vy_mp_read(&rd, &o) == VY_MP_OK && o.type == VY_MP_MAP);
	uint64_t value = UINT64_MAX;
	for (uint32_t k = 0; k < o.len && value == UINT64_MAX; k++) {
		struct vy_mp_obj key;
		cr_assert(vy_mp_read(&rd, &key) == VY_MP_OK && key.type == VY_MP_STR);
		if (key.len == strlen(name) && memcmp(key.data, name, key.len) == 0) {
			struct vy_mp_obj v;
			cr_assert(vy_mp_read(&rd, &v) == VY_MP_OK && v.type == VY_MP_UINT);
			value = v.u;
		} else {
			cr_assert(vy_mp_skip(&rd) == VY_MP_OK);
		}
	}
	tc_reply_free(&r);
	cr_assert_neq(value, UINT64_MAX, "no devices.0.%s in the stats", name);
	return value;
}

bool rel_on_vulkan(struct tc *c)
{
	struct tc_reply r;
	cr_assert_eq(t_simple(c, VY_OP_STATS, &r), 0);
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	bool vulkan = false;
	if (tc_field(&r, "devices", &rd) && vy_mp_read(&rd, &o) == VY_MP_OK &&
		o.type == VY_MP_ARRAY && o.len > 0 && vy_mp_read(&rd, &o) == VY_MP_OK &&
		o.type == VY_MP_MAP) {
		uint32_t fields = o.len;
		for (uint32_t k = 0; k < fields; k++) {
			struct vy_mp_obj key;
			if (vy_mp_read(&rd, &key) != VY_MP_OK) {
				break;
			}
			if (vy_mp_str_eq(&key, "backend")) {
				struct vy_mp_obj v;
				vulkan = vy_mp_read(&rd, &v) == VY_MP_OK &&
					 vy_mp_str_eq(&v, "vulkan");
				break;
			}
			if (vy_mp_skip(&rd) != VY_MP_OK) {
				break;
			}
		}
	}
	tc_reply_free(&r);
	return vulkan;
}

/* --- another user --------------------------------------------------------------------- */

struct t_user *rel_spawn_as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	if (getuid() != 0) {
		const char *allow = getenv("VYRED_TEST_ALLOW_NO_ROOT");
		if (allow && strcmp(allow, "1") == 0) {
			cr_skip_test("needs root to run a client as another user "
				     "(VYRED_TEST_ALLOW_NO_ROOT=1)");
		}
		cr_assert_fail("a cross-user case needs root to run a client as another user. Fix: "
			       "run the suite as root (sudo ./dev.sh test), or set "
			       "VYRED_TEST_ALLOW_NO_ROOT=1 to skip the cross-user cases knowingly");
	}
	struct t_user *u = t_user_start(uid, gid, fn, arg);
	cr_assert(u, "cannot start a client as uid %u: %s", (unsigned)uid, strerror(errno));
	return u;
}

int rel_reap(struct t_user *u)
{
	return t_user_wait(u);
}

int rel_as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	return rel_reap(rel_spawn_as_user(uid, gid, fn, arg));
}

int rel_as_nobody(int (*fn)(void *), void *arg)
{
	return rel_as_user(65534, 65534, fn, arg);
}
