/*
 * Hostile clients (DESIGN.md §6, §7.2, §7.4, §7.5): random bytes, frames of invalid msgpack,
 * lying lengths, a length of 4 GiB, a million tiny requests, a slowloris, disconnects in the
 * middle of a frame and of a dispatch, descriptors that are not sealed memfds, another user's
 * handles guessed or replayed, admin operations from another user, and replies requested faster
 * than they are read. Each gets its error code or is closed, the daemon gives back every
 * descriptor and buffer it held for it, and a crowd of well-behaved clients on the same daemon
 * keeps getting correct results throughout.
 *
 * The daemon suite already covers the single cases of a stall without bytes, a flood without
 * reading, half a frame, and a disconnect with requests in flight (tests/daemon/test_clients.c,
 * test_limits.c); the cases here add the concurrent crowd and the resource accounting.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rel.h"

TestSuite(hostile_clients, .fini = rel_fini, .timeout = 240);

static const char base_config[] = "[limits]\ndispatch_timeout_ms = 5000\n";

/* A frame around `len` payload bytes, written to `out` (len + 4 bytes). */
static void frame_of(const void *payload, uint32_t len, uint8_t *out)
{
	out[0] = (uint8_t)(len >> 24);
	out[1] = (uint8_t)(len >> 16);
	out[2] = (uint8_t)(len >> 8);
	out[3] = (uint8_t)len;
	memcpy(out + 4, payload, len);
}

/* The replies a connection gets until the daemon closes it: their codes in codes[] (0 for a
 * success). Returns the number of replies, or -1 when the connection was not closed in time or
 * a reply did not decode. */
static int replies_until_closed(struct tc *c, int *codes, int cap, int timeout_ms)
{
	int n = 0;
	for (;;) {
		struct tc_reply r;
		int rc = tc_recv(c, &r, timeout_ms);
		if (rc == -EPIPE) {
			return n;
		}
		if (rc != 0) {
			tc_reply_free(&r);
			return -1;
		}
		if (n < cap) {
			codes[n] = tc_code(&r);
		}
		n++;
		tc_reply_free(&r);
	}
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Descriptors of the daemon once its crowd and the test's connection are in place. */
static int settled_fds(struct rel_scene *s)
{
	usleep(200000);
	return rel_fd_count(s->d.pid);
}

/* Wait until the daemon holds only the crowd's and the test's connections again, then expect
 * its descriptors back at `baseline`. */
static void expect_released(struct rel_scene *s, int baseline)
{
	uint64_t want = (uint64_t)s->crowd->n + 1;
	uint64_t clients = rel_wait_stat(&s->c, "clients.count", want, 20000);
	cr_expect_eq(clients, want, "%lu connections remain", (unsigned long)clients);
	int fds = rel_wait_fds(s->d.pid, baseline, 10000);
	cr_expect_eq(fds, baseline, "the daemon holds %d descriptors, %d before", fds, baseline);
}

Test(hostile_clients, random_bytes_get_an_error_or_a_close)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	int baseline = settled_fds(&s);
	uint64_t seed = 0x5eed5eed5eedull;
	for (int i = 0; i < 48; i++) {
		struct tc c;
		cr_assert_eq(tc_connect(&c, s.d.sock), 0);
		if (i % 2 == 0) {
			cr_assert_eq(tc_hello(&c, "noise"), 0);
		}
		uint8_t bytes[4096];
		size_t len = 1 + next_rand(&seed) % sizeof(bytes);
		for (size_t k = 0; k < len; k++) {
			bytes[k] = (uint8_t)next_rand(&seed);
		}
		if (i % 3 == 0 && len > 8) {
			/* A plausible length, so that the payload reaches the decoder. */
			uint32_t n = (uint32_t)(len - 4);
			bytes[0] = (uint8_t)(n >> 24);
			bytes[1] = (uint8_t)(n >> 16);
			bytes[2] = (uint8_t)(n >> 8);
			bytes[3] = (uint8_t)n;
			bytes[4] = 0x80 | (bytes[4] & 0x0f);
		}
		cr_assert_eq(tc_send_raw(&c, bytes, len), 0);
		shutdown(c.fd, SHUT_WR);
		int codes[8];
		int n = replies_until_closed(&c, codes, 8, 20000);
		cr_expect_geq(n, 0, "stream %d: not closed, or a reply that does not decode", i);
		for (int k = 0; k < n && k < 8; k++) {
			cr_expect(codes[k] == VY_E_BAD_FRAME || codes[k] == VY_E_BAD_REQUEST ||
					  codes[k] == VY_E_INVALID_PROGRAM,
				"stream %d: reply %d is %s", i, k,
				codes[k] ? vy_err_name(codes[k]) : "a success");
		}
		tc_close(&c);
	}
	expect_released(&s, baseline);
	rel_scene_close(&s);
}

Test(hostile_clients, frames_of_invalid_msgpack_get_bad_frame_and_a_close)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	int baseline = settled_fds(&s);
	/* Payloads that are not one msgpack map: BAD_FRAME, and the stream is closed. */
	static const struct {
		const char *what;
		uint8_t bytes[16];
		uint32_t len;
	} payloads[] = {
		{"a reserved type byte", {0xc1}, 1},
		{"a map of 2^32 - 1 entries", {0xdf, 0xff, 0xff, 0xff, 0xff, 0xa2, 'i', 'd', 1}, 9},
		{"a key of 4 GiB", {0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 'o', 'p'}, 8},
		{"a bin of 4 GiB",
			{0x82, 0xa2, 'i', 'd', 1, 0xa4, 'd', 'a', 't', 'a', 0xc6, 0xff, 0xff, 0xff,
				0xff, 0},
			16},
		{"a truncated map", {0x83, 0xa2, 'i', 'd', 0x07, 0xa2, 'o'}, 7},
		{"a nil", {0xc0}, 1},
	};
	for (size_t i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++) {
		struct tc c;
		tc_open(&c, s.d.sock, "garbage");
		uint8_t frame[32];
		frame_of(payloads[i].bytes, payloads[i].len, frame);
		cr_assert_eq(tc_send_raw(&c, frame, payloads[i].len + 4), 0);
		int codes[4] = {0};
		int n = replies_until_closed(&c, codes, 4, 20000);
		cr_expect_eq(n, 1, "%s: %d replies before the close", payloads[i].what, n);
		cr_expect_eq(codes[0], VY_E_BAD_FRAME, "%s: %s", payloads[i].what,
			codes[0] ? vy_err_name(codes[0]) : "a success");
		tc_close(&c);
	}
	/* Well-formed msgpack of the wrong shape (an extension as the id, 300,000 nested arrays as
	 * the op): BAD_REQUEST, and the connection stays usable. */
	static const uint8_t ext[] = {
		0x82, 0xa2, 'i', 'd', 0xd4, 0x01, 0x02, 0xa2, 'o', 'p', 0xa4, 'p', 'i', 'n', 'g'};
	uint8_t small[32];
	frame_of(ext, sizeof(ext), small);
	struct tc c;
	tc_open(&c, s.d.sock, "extension");
	cr_assert_eq(tc_send_raw(&c, small, sizeof(ext) + 4), 0);
	struct tc_reply r;
	cr_assert_eq(tc_recv(&c, &r, 20000), 0);
	rel_expect_error(&r, VY_E_BAD_REQUEST, NULL);
	tc_reply_free(&r);
	cr_expect_eq(t_simple(&c, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
	tc_close(&c);
	size_t deep = 300000;
	uint8_t *nested = malloc(deep + 16);
	static const uint8_t head[] = {0x82, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p'};
	memcpy(nested, head, sizeof(head));
	memset(nested + sizeof(head), 0x91, deep);
	nested[sizeof(head) + deep] = 0xc0;
	uint32_t len = (uint32_t)(sizeof(head) + deep + 1);
	uint8_t *frame = malloc(len + 4);
	frame_of(nested, len, frame);
	tc_open(&c, s.d.sock, "nested");
	cr_assert_eq(tc_send_raw(&c, frame, len + 4), 0);
	cr_assert_eq(tc_recv(&c, &r, 20000), 0);
	rel_expect_error(&r, VY_E_BAD_REQUEST, NULL);
	tc_reply_free(&r);
	cr_expect_eq(t_simple(&c, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
	tc_close(&c);
	free(frame);
	free(nested);
	expect_released(&s, baseline);
	rel_scene_close(&s);
}

/* The bytes of a ping request frame with id `id`. */
static size_t ping_frame(uint64_t id, uint8_t *out, size_t cap)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	vy_frame_begin(&sb);
	vy_request_pack_head(&pk, id, VY_OP_PING, 0);
	vy_frame_end(&sb, 0);
	cr_assert_leq(sb.size, cap);
	memcpy(out, sb.data, sb.size);
	size_t n = sb.size;
	msgpack_sbuffer_destroy(&sb);
	return n;
}

static void set_length(uint8_t *frame, uint32_t len)
{
	frame[0] = (uint8_t)(len >> 24);
	frame[1] = (uint8_t)(len >> 16);
	frame[2] = (uint8_t)(len >> 8);
	frame[3] = (uint8_t)len;
}

/*
 * Send the first `sent` bytes of the two pings in `two` (`total` bytes) with the first frame's
 * length set to `length`, half-closing the stream when `shut`; expect `replies` answers (each
 * BAD_FRAME) before the daemon closes the connection.
 */
static void send_lying(struct rel_scene *s, const char *name, const uint8_t *two, size_t total,
	uint32_t length, size_t sent, bool shut, int replies)
{
	struct tc c;
	tc_open(&c, s->d.sock, name);
	uint8_t buf[128];
	memcpy(buf, two, total);
	set_length(buf, length);
	cr_assert_eq(tc_send_raw(&c, buf, sent), 0);
	if (shut) {
		shutdown(c.fd, SHUT_WR);
	}
	int codes[4];
	cr_expect_eq(replies_until_closed(&c, codes, 4, 20000), replies, "%s", name);
	for (int i = 0; i < replies; i++) {
		cr_expect_eq(codes[i], VY_E_BAD_FRAME, "%s", name);
	}
	tc_close(&c);
}

Test(hostile_clients, lying_lengths_are_caught)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	int baseline = settled_fds(&s);
	uint8_t two[128];
	size_t one = ping_frame(41, two, 64);
	size_t total = one + ping_frame(42, two + one, 64);

	/* Shorter than the map: the payload is a truncated map. */
	send_lying(&s, "short", two, total, (uint32_t)(one - 4 - 3), total, false, 1);
	/* Longer than the map: it swallows the next frame, which becomes trailing bytes. */
	send_lying(&s, "long", two, total, (uint32_t)(total - 4), total, false, 1);
	/* Longer than what is ever sent: no reply, the connection ends with the stream. */
	send_lying(&s, "never", two, total, 1000, one, true, 0);
	expect_released(&s, baseline);
	rel_scene_close(&s);
}

Test(hostile_clients, a_four_gib_length_costs_only_what_arrives)
{
	struct rel_scene s;
	rel_lean_asan();
	/* The largest max_frame the daemon accepts, so that 4 GiB - 1 passes the length check,
	 * and inbound bounds that admit it. */
	rel_scene_open(&s,
		"[limits]\nmax_frame = 4294967295\ninbound_quota = 4G\ninbound_total = 4G\n", 4);
	struct tc c;
	tc_open(&c, s.d.sock, "huge");
	long before = rel_rss_kib(s.d.pid);
	size_t chunk = (size_t)1 << 20;
	uint8_t *data = calloc(1, chunk);
	set_length(data, 0xFFFFFFFFu);
	size_t sent = 0;
	for (int i = 0; i < 24; i++) {
		cr_assert_eq(tc_send_raw(&c, data, chunk), 0);
		sent += chunk;
	}
	usleep(300000);
	long during = rel_rss_kib(s.d.pid);
	long grown = during - before;
	/* The buffer follows the bytes (at most doubling), never the announced 4 GiB. */
	cr_expect_lt(grown, (long)(3 * sent / 1024) + 32 * 1024,
		"announcing 4 GiB and sending %zu MiB grew the daemon by %ld KiB", sent >> 20,
		grown);
	tc_close(&c);
	free(data);

	/* Under the default max_frame the same length is refused at its fourth byte. */
	rel_scene_close(&s);
	rel_scene_open(&s, base_config, 4);
	tc_open(&c, s.d.sock, "huge-default");
	static const uint8_t four_gib[4] = {0xff, 0xff, 0xff, 0xff};
	cr_assert_eq(tc_send_raw(&c, four_gib, 4), 0);
	int codes[2] = {0};
	cr_expect_eq(replies_until_closed(&c, codes, 2, 20000), 1);
	cr_expect_eq(codes[0], VY_E_BAD_FRAME);
	tc_close(&c);
	rel_scene_close(&s);
}

struct pinger {
	struct tc *c;
	size_t count;
	uint64_t first;
	int rc;
};

static void *send_pings(void *arg)
{
	struct pinger *p = arg;
	enum { BATCH = 4096 };
	uint8_t *buf = malloc(BATCH * 32);
	size_t done = 0;
	while (done < p->count && p->rc == 0) {
		size_t len = 0;
		size_t n = p->count - done < BATCH ? p->count - done : BATCH;
		for (size_t i = 0; i < n; i++) {
			len += ping_frame(p->first + done + i, buf + len, 32);
		}
		p->rc = tc_send_raw(p->c, buf, len);
		done += n;
	}
	free(buf);
	return NULL;
}

/* VYRED_REL_PINGS requests (default 200,000; the long run of docs/security.md sends a
 * million). */
static size_t ping_count(void)
{
	const char *v = getenv("VYRED_REL_PINGS");
	return v && *v ? (size_t)strtoull(v, NULL, 10) : 200000;
}

Test(hostile_clients, a_flood_of_tiny_requests_is_answered_once_each)
{
	struct rel_scene s;
	rel_lean_asan();
	rel_scene_open(&s, "[limits]\nwrite_high_water = 4M\nwrite_low_water = 1M\n", 4);
	struct tc c;
	tc_open(&c, s.d.sock, "million");
	/* The crowd's own first requests settle first (on Vulkan they load shaders). */
	sleep(1);
	long before = rel_rss_kib(s.d.pid);
	struct pinger p = {&c, ping_count(), 1000, 0};
	pthread_t writer;
	long t0 = rel_now_ms();
	cr_assert_eq(pthread_create(&writer, NULL, send_pings, &p), 0);
	size_t answered = 0;
	size_t out_of_order = 0;
	size_t failed = 0;
	while (answered < p.count) {
		struct tc_reply r;
		int rc = tc_recv(&c, &r, 60000);
		if (rc != 0) {
			cr_log_error("reply %zu of %zu: %s", answered, p.count, strerror(-rc));
			break;
		}
		/* Pings are answered at once, so their replies come back in order. */
		out_of_order += r.r.id != p.first + answered;
		failed += !r.r.ok;
		answered++;
		tc_reply_free(&r);
	}
	pthread_join(writer, NULL);
	long took = rel_now_ms() - t0;
	cr_expect_eq(p.rc, 0);
	cr_expect_eq(answered, p.count, "%zu of %zu answered", answered, p.count);
	cr_expect_eq(out_of_order, 0);
	cr_expect_eq(failed, 0);
	struct tc_reply r;
	cr_expect_eq(t_simple(&c, VY_OP_PING, &r), 0, "no reply beyond the last one");
	tc_reply_free(&r);
	long after = rel_rss_kib(s.d.pid);
	fprintf(stderr,
		"flood: %zu pings answered in %ld ms; daemon RSS %ld KiB before, %ld after\n",
		answered, took, before, after);
	/* What it may hold: write_high_water (4 MiB) of pending replies, plus the replies of the
	 * one read that crossed it, plus ASan's quarantine; not memory in proportion to the
	 * million. */
	cr_expect_lt(after - before, 96 * 1024, "the daemon grew by %ld KiB", after - before);
	tc_close(&c);
	rel_scene_close(&s);
}

Test(hostile_clients, a_slowloris_is_closed_by_the_frame_deadline)
{
	struct rel_scene s;
	rel_scene_open(&s, "[limits]\nstall_timeout_ms = 2000\n", 4);
	int baseline = settled_fds(&s);
	/* A fast client whose frame arrives in two parts well within the deadline stays. */
	struct tc fast;
	tc_open(&fast, s.d.sock, "fast");
	uint8_t frame[64];
	size_t len = ping_frame(5, frame, sizeof(frame));
	cr_assert_eq(tc_send_raw(&fast, frame, 6), 0);
	usleep(400000);
	cr_assert_eq(tc_send_raw(&fast, frame + 6, len - 6), 0);
	struct tc_reply r;
	cr_expect_eq(tc_recv(&fast, &r, 10000), 0);
	cr_expect(r.r.ok);
	tc_reply_free(&r);

	/* One byte a second: every byte is progress, yet the frame never completes in time. */
	struct tc slow;
	tc_open(&slow, s.d.sock, "slowloris");
	long t0 = rel_now_ms();
	bool closed = false;
	for (size_t i = 0; i < len && !closed; i++) {
		if (tc_send_raw(&slow, frame + i, 1) != 0) {
			closed = true;
			break;
		}
		closed = tc_wait_eof(&slow, 1000);
	}
	long took = rel_now_ms() - t0;
	cr_expect(closed, "a frame sent at one byte a second was never cut off");
	cr_expect(took >= 1800 && took < 5000, "closed after %ld ms (stall_timeout_ms 2000)", took);
	cr_expect_eq(t_stat(&s.c, "daemon.connections_stalled"), 1);
	tc_close(&slow);
	cr_expect_eq(t_simple(&fast, VY_OP_PING, &r), 0, "the fast client is still served");
	tc_reply_free(&r);
	tc_close(&fast);
	expect_released(&s, baseline);
	rel_scene_close(&s);
}

/* A sealed memfd of `size` bytes (zeros). */
static int sealed_memfd(size_t size)
{
	int fd = memfd_create("rel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	return fd;
}

/* One rude client: it allocates, attaches, queues work and leaves in the middle. */
static void rude_client(
	const char *sock, const struct vy_program *p, const struct t_inputs *in, int round)
{
	struct tc c;
	tc_open(&c, sock, "rude");
	uint64_t h = 0;
	cr_assert_eq(rel_alloc(&c, 65536, NULL, &h), 0);
	uint8_t zeros[4096] = {0};
	int code = rel_upload(&c, h, 0, zeros, sizeof(zeros));
	cr_assert_eq(code, 0, "round %d: upload answered %d", round, code);
	int fd = sealed_memfd(65536);
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, 65536);
	struct tc_reply r;
	cr_assert_eq(tc_send(&c, &m, fd), 0);
	close(fd);
	cr_assert_eq(tc_recv(&c, &r, 30000), 0);
	cr_assert(r.r.ok, "%s", r.r.error.message);
	tc_reply_free(&r);
	for (int i = 0; i < 4; i++) {
		tc_begin(&c, &m, VY_OP_DISPATCH, 2);
		t_pack_program(&m.pk, p);
		t_pack_inputs(&m.pk, in);
		cr_assert_eq(tc_send(&c, &m, -1), 0);
	}
	tc_begin(&c, &m, VY_OP_DOWNLOAD, 1);
	vy_pack_cstr(&m.pk, "handle");
	msgpack_pack_uint64(&m.pk, h);
	cr_assert_eq(tc_send(&c, &m, -1), 0);
	if (round % 2) {
		/* Half a frame, then gone. */
		static const uint8_t half[] = {0, 0, 1, 0, 0x83, 0xa2, 'i', 'd'};
		tc_send_raw(&c, half, sizeof(half));
	}
	if (round % 3 == 0) {
		/* Reset instead of an orderly close. */
		struct linger lg = {1, 0};
		setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	tc_close(&c);
}

Test(hostile_clients, disconnects_mid_frame_and_mid_dispatch_free_everything)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	int baseline = settled_fds(&s);
	uint64_t crowd_buffers = rel_wait_stat(&s.c, "resident.buffers", 4, 10000);
	struct vy_program *p = tc_program("vector_add");
	struct t_inputs in;
	t_inputs_make(p, 0, 61, &in);
	for (int round = 0; round < 30; round++) {
		rude_client(s.d.sock, p, &in, round);
	}
	expect_released(&s, baseline);
	cr_expect_eq(rel_wait_stat(&s.c, "resident.buffers", crowd_buffers, 10000), crowd_buffers,
		"the rude clients' buffers are freed");
	cr_expect_eq(t_stat(&s.c, "resident.shm_regions"), 0, "their regions are detached");
	t_inputs_free(&in);
	vy_program_destroy(p);
	rel_scene_close(&s);
}

static int attach_fd(struct tc *c, int fd, uint64_t size, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	cr_assert_eq(tc_send(c, &m, fd), 0);
	cr_assert_eq(tc_recv(c, r, 30000), 0);
	return tc_code(r);
}

/* Send one ping frame with `n` descriptors attached in the same sendmsg. */
static int ping_with_fds(struct tc *c, const int *fds, int n)
{
	uint8_t frame[64];
	size_t len = ping_frame(c->next_id++, frame, sizeof(frame));
	struct iovec iov = {frame, len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * 253)];
		struct cmsghdr align;
	} control;
	memset(&control, 0, sizeof(control));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	msg.msg_control = control.buf;
	msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
	return sendmsg(c->fd, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

Test(hostile_clients, descriptors_that_are_not_sealed_memfds_are_refused_and_closed)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	int baseline = settled_fds(&s);
	struct tc c;
	tc_open(&c, s.d.sock, "descriptors");
	int pair[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
	char tmpl[] = "/tmp/vyred-rel-XXXXXX";
	int file = mkstemp(tmpl);
	cr_assert_geq(file, 0);
	unlink(tmpl);
	cr_assert_eq(ftruncate(file, 4096), 0);
	int unsealable = memfd_create("rel", MFD_CLOEXEC);
	cr_assert_eq(ftruncate(unsealable, 4096), 0);
	int grow_only = memfd_create("rel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_eq(ftruncate(grow_only, 4096), 0);
	cr_assert_eq(fcntl(grow_only, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SEAL), 0);
	const struct {
		const char *what;
		int fd;
	} bad[] = {
		{"a socket", pair[0]},
		{"a regular file", file},
		{"/dev/null", open("/dev/null", O_RDONLY | O_CLOEXEC)},
		{"a directory", open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)},
		{"an eventfd", eventfd(0, EFD_CLOEXEC)},
		{"a memfd that cannot be sealed", unsealable},
		{"a memfd sealed against growing only", grow_only},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_geq(bad[i].fd, 0, "%s", bad[i].what);
		struct tc_reply r;
		attach_fd(&c, bad[i].fd, 4096, &r);
		rel_expect_error(&r, VY_E_BAD_REQUEST, NULL);
		cr_expect(strstr(r.r.error.fix, "memfd") || strstr(r.r.error.fix, "F_SEAL"),
			"%s: fix %s", bad[i].what, r.r.error.fix);
		tc_reply_free(&r);
	}
	/* Descriptors that ride along with frames that do not take one are closed. */
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(ping_with_fds(&c, &bad[i % 7].fd, 1), 0);
		struct tc_reply r;
		cr_assert_eq(tc_recv(&c, &r, 10000), 0);
		cr_expect(r.r.ok);
		tc_reply_free(&r);
	}
	cr_expect_eq(rel_wait_fds(s.d.pid, baseline + 1, 5000), baseline + 1,
		"only the connection itself is held");
	/* 250 descriptors at once: whether the connection stays or goes, none of them stays. */
	struct tc flood;
	tc_open(&flood, s.d.sock, "fd-flood");
	int many[250];
	for (int i = 0; i < 250; i++) {
		many[i] = bad[i % 7].fd;
	}
	cr_assert_eq(ping_with_fds(&flood, many, 250), 0);
	struct tc_reply fr;
	int rc = tc_recv(&flood, &fr, 20000);
	cr_expect(rc == 0 || rc == -EPIPE, "250 descriptors: answered or closed, not %d", rc);
	tc_reply_free(&fr);
	tc_close(&flood);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		close(bad[i].fd);
	}
	close(pair[1]);
	struct tc_reply r;
	cr_expect_eq(t_simple(&c, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
	tc_close(&c);
	expect_released(&s, baseline);
	rel_scene_close(&s);
}

/* Whether the daemon's log holds a byte below 0x20 other than the line ends, or 0x7f, or a
 * line that claims priority 0 (emergency, which vyred never uses). */
static bool log_is_clean(const char *path)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s", path);
	bool clean = true;
	bool line_start = true;
	int ch;
	int prev = 0;
	while ((ch = fgetc(f)) != EOF) {
		if ((ch < 0x20 && ch != '\n') || ch == 0x7f) {
			clean = false;
		}
		if (line_start && ch == '<') {
			int level = fgetc(f);
			clean = clean && level != '0';
		}
		line_start = ch == '\n';
		prev = ch;
	}
	fclose(f);
	return clean && (prev == '\n' || prev == 0);
}

Test(hostile_clients, client_text_cannot_forge_or_garble_log_lines)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	/* A client name and an operation name full of line breaks, a fake priority and terminal
	 * escapes; the daemon logs both (its log level is debug under the harness). */
	static const char forged[] = "x\n<0>vyred: forged emergency\r\x1b[2J\x1b]0;owned\x07\x7f";
	struct tc c;
	cr_assert_eq(tc_connect(&c, s.d.sock), 0);
	cr_assert_eq(tc_hello(&c, forged), 0);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	vy_frame_begin(&sb);
	msgpack_pack_map(&pk, 2);
	vy_pack_cstr(&pk, "id");
	msgpack_pack_uint64(&pk, 9);
	vy_pack_cstr(&pk, "op");
	vy_pack_cstr(&pk, forged);
	vy_frame_end(&sb, 0);
	cr_assert_eq(tc_send_raw(&c, sb.data, sb.size), 0);
	msgpack_sbuffer_destroy(&sb);
	struct tc_reply r;
	cr_assert_eq(tc_recv(&c, &r, 20000), 0);
	rel_expect_error(&r, VY_E_BAD_REQUEST, NULL);
	tc_reply_free(&r);
	/* A bad frame closes the connection, which logs the client's name at info. */
	static const uint8_t zero[4] = {0, 0, 0, 0};
	cr_assert_eq(tc_send_raw(&c, zero, sizeof(zero)), 0);
	cr_expect(tc_wait_eof(&c, 20000));
	tc_close(&c);
	cr_assert(rel_wait_stat(&s.c, "clients.count", 5, 20000) == 5);
	cr_expect(vyd_log_has(&s.d, "forged emergency"), "the name was logged");
	cr_expect(log_is_clean(s.d.log), "a client's control characters reached the log");
	rel_scene_close(&s);
}

struct intruder {
	const char *sock;
	uint64_t unnamed;
	uint64_t named;
	const char *name;
	uint64_t region;
	const struct vy_program *program;
};

/* The message of a NOT_FOUND for `h` with the number taken out, to compare two of them. */
static void masked(const struct tc_reply *r, uint64_t h, char *out, size_t size)
{
	char num[32];
	snprintf(num, sizeof(num), "%llu", (unsigned long long)h);
	const char *at = strstr(r->r.error.message, num);
	if (!at) {
		snprintf(out, size, "%s|%s|%s", r->r.error.message, r->r.error.fix, r->r.error.at);
		return;
	}
	snprintf(out, size, "%.*s#%s|%s|%s", (int)(at - r->r.error.message), r->r.error.message,
		at + strlen(num), r->r.error.fix, r->r.error.at);
}

/* Every operation on `h`; 0 when each is NOT_FOUND, and the masked download error in `shape`. */
static int all_not_found(
	struct tc *c, const struct vy_program *p, uint64_t h, char *shape, size_t size)
{
	uint8_t buf[16] = {0};
	if (rel_upload(c, h, 0, buf, sizeof(buf)) != VY_E_NOT_FOUND ||
		rel_free(c, h) != VY_E_NOT_FOUND) {
		return 1;
	}
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DOWNLOAD, 1);
	vy_pack_cstr(&m.pk, "handle");
	msgpack_pack_uint64(&m.pk, h);
	struct tc_reply r;
	if (tc_call(c, &m, &r) != 0 || tc_code(&r) != VY_E_NOT_FOUND) {
		tc_reply_free(&r);
		return 2;
	}
	masked(&r, h, shape, size);
	tc_reply_free(&r);
	uint64_t handles[1] = {h};
	if (rel_dispatch(c, p, 1, handles, NULL, 0, NULL, &r) != VY_E_NOT_FOUND) {
		tc_reply_free(&r);
		return 3;
	}
	tc_reply_free(&r);
	uint32_t mine[4] = {0};
	struct vy_bytes bytes[1] = {{(const uint8_t *)mine, sizeof(mine)}};
	if (rel_dispatch(c, p, 1, NULL, bytes, 1, handles, &r) != VY_E_NOT_FOUND) {
		tc_reply_free(&r);
		return 4;
	}
	tc_reply_free(&r);
	return 0;
}

static int intrude(void *arg)
{
	const struct intruder *in = arg;
	struct tc c;
	if (tc_connect(&c, in->sock) != 0 || tc_hello(&c, "intruder") != 0) {
		return 1;
	}
	char replayed[1024];
	char never[1024];
	/* Replayed handles, learned out of band. */
	if (all_not_found(&c, in->program, in->unnamed, replayed, sizeof(replayed)) != 0 ||
		all_not_found(&c, in->program, in->named, never, sizeof(never)) != 0) {
		return 2;
	}
	/* Guessed handles, near the real ones and at random: the same answer, word for word. */
	uint64_t seed = 0xfeedbeefull;
	for (int i = 0; i < 300; i++) {
		uint64_t guess = i < 4 ? in->unnamed + (uint64_t)(i - 2) : next_rand(&seed);
		if (guess == in->unnamed || guess == in->named || guess == 0) {
			continue;
		}
		if (all_not_found(&c, in->program, guess, never, sizeof(never)) != 0) {
			return 3;
		}
		if (strcmp(replayed, never) != 0) {
			fprintf(stderr, "replayed: %s\nnever existed: %s\n", replayed, never);
			return 4;
		}
	}
	/* The other user's name gives this user a buffer of its own. */
	uint64_t mine = 0;
	if (rel_alloc(&c, 64, in->name, &mine) != 0 || mine == in->named || mine == 0) {
		return 5;
	}
	/* Another connection's shared memory region does not exist here. */
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_SHM_DETACH, 1);
	vy_pack_cstr(&m.pk, "region");
	msgpack_pack_uint64(&m.pk, in->region);
	struct tc_reply r;
	if (tc_call(&c, &m, &r) != 0 || tc_code(&r) != VY_E_NOT_FOUND) {
		return 6;
	}
	tc_reply_free(&r);
	tc_close(&c);
	return 0;
}

Test(hostile_clients, another_users_handles_are_not_found_whether_guessed_or_replayed)
{
	struct rel_scene s;
	rel_scene_open(
		&s, "[daemon]\nsocket_mode = 0666\n[limits]\ndispatch_timeout_ms = 5000\n", 4);
	uint8_t pattern[64];
	for (int i = 0; i < 64; i++) {
		pattern[i] = (uint8_t)(0xA0 ^ i);
	}
	struct intruder in = {.sock = s.d.sock, .name = "owned-by-root"};
	cr_assert_eq(rel_alloc(&s.c, 64, NULL, &in.unnamed), 0);
	cr_assert_eq(rel_alloc(&s.c, 64, in.name, &in.named), 0);
	cr_assert_eq(rel_upload(&s.c, in.unnamed, 0, pattern, 64), 0);
	cr_assert_eq(rel_upload(&s.c, in.named, 0, pattern, 64), 0);
	int fd = sealed_memfd(4096);
	struct tc_reply r;
	cr_assert_eq(attach_fd(&s.c, fd, 4096, &r), 0);
	cr_assert(tc_u64(&r, "region", &in.region));
	tc_reply_free(&r);
	close(fd);
	struct vy_program *p = vy_program_create("copy", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 16);
	vy_program_set_entry(p,
		vy_ir_seq(p,
			vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_load(p, "a", vy_ir_gid(p, 0))),
			NULL));
	in.program = p;
	int rc = rel_as_nobody(intrude, &in);
	cr_expect_eq(rc, 0, "the intruder's check %d failed", rc);
	uint8_t back[64];
	cr_expect_eq(rel_download(&s.c, in.unnamed, 0, 64, back), 0);
	cr_expect_eq(memcmp(back, pattern, 64), 0, "the unnamed buffer is untouched");
	cr_expect_eq(rel_download(&s.c, in.named, 0, 64, back), 0);
	cr_expect_eq(memcmp(back, pattern, 64), 0, "the named buffer is untouched");
	cr_expect_eq(rel_free(&s.c, in.unnamed), 0);
	cr_expect_eq(rel_free(&s.c, in.named), 0);
	vy_program_destroy(p);
	rel_scene_close(&s);
}

static int act_as_non_admin(void *arg)
{
	const char *sock = arg;
	struct tc c;
	if (tc_connect(&c, sock) != 0 || tc_hello(&c, "not-an-admin") != 0) {
		return 1;
	}
	struct tc_reply r;
	if (t_simple(&c, VY_OP_CACHE_CLEAR, &r) != VY_E_PERMISSION_DENIED ||
		!strstr(r.r.error.fix, "admin")) {
		return 2;
	}
	tc_reply_free(&r);
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_INJECT_FAULT, 1);
	vy_pack_cstr(&m.pk, "fault");
	vy_pack_cstr(&m.pk, "device_lost");
	if (tc_call(&c, &m, &r) != 0 || tc_code(&r) != VY_E_PERMISSION_DENIED) {
		return 3;
	}
	tc_reply_free(&r);
	/* The tables show this user's own rows only. */
	t_simple(&c, VY_OP_CLIENTS, &r);
	int rows = tc_array_len(&r, "clients");
	tc_reply_free(&r);
	if (rows != 1) {
		return 4;
	}
	t_simple(&c, VY_OP_BUFFERS, &r);
	rows = tc_array_len(&r, "buffers");
	tc_reply_free(&r);
	if (rows != 0) {
		return 5;
	}
	t_simple(&c, VY_OP_STATS, &r);
	rows = tc_array_len(&r, "clients.list");
	tc_reply_free(&r);
	if (rows != 1) {
		return 6;
	}
	tc_close(&c);
	return 0;
}

Test(hostile_clients, admin_operations_from_another_user_are_denied)
{
	struct rel_scene s;
	rel_scene_open(&s, "[daemon]\nsocket_mode = 0666\n[debug]\nfault_injection = true\n", 4);
	struct vy_program *p = tc_program_renamed("vector_add", "admin-kept");
	struct tc_msg m;
	tc_begin(&s.c, &m, VY_OP_COMPILE, 1);
	t_pack_program(&m.pk, p);
	struct tc_reply r;
	cr_assert_eq(tc_call(&s.c, &m, &r), 0);
	cr_assert(r.r.ok, "%s", r.r.error.message);
	tc_reply_free(&r);
	int rc = rel_as_nobody(act_as_non_admin, (void *)s.d.sock);
	cr_expect_eq(rc, 0, "the non-admin's check %d failed", rc);
	/* Nothing the non-admin asked for happened. */
	cr_expect_geq(t_stat(&s.c, "pipeline_cache.entries"), 1, "the cache was cleared");
	tc_begin(&s.c, &m, VY_OP_COMPILE, 1);
	t_pack_program(&m.pk, p);
	cr_assert_eq(tc_call(&s.c, &m, &r), 0);
	char cache[16] = "";
	tc_str(&r, "cache", cache, sizeof(cache));
	cr_expect_str_eq(cache, "hit");
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&s.c, VY_OP_STATS, &r), 0);
	uint64_t lost = 9;
	cr_expect(tc_row_u64(&r, "devices", "index", 0, "lost", &lost) && lost == 0,
		"the device was not lost: %lu", (unsigned long)lost);
	tc_reply_free(&r);
	vy_program_destroy(p);
	rel_scene_close(&s);
}

/*
 * Send `all` (n requests) in one write and read nothing for 3 s: the daemon may grow by less
 * than `most_mib`. Then every request gets its one answer, ok or (where `busy_ok`) BUSY.
 */
static void unread_requests_stay_bounded(
	struct rel_scene *s, struct tc *c, msgpack_sbuffer *all, int n, long most_mib, bool busy_ok)
{
	long before = rel_rss_kib(s->d.pid);
	cr_assert_eq(tc_send_raw(c, all->data, all->size), 0);
	long peak = before;
	for (int i = 0; i < 30; i++) {
		usleep(100000);
		long now = rel_rss_kib(s->d.pid);
		peak = now > peak ? now : peak;
	}
	long grown = peak - before;
	cr_log_info("%d requests unread: the daemon grew by %ld MiB", n, grown / 1024);
	cr_expect_lt(grown, most_mib * 1024,
		"a client that does not read made the daemon hold %ld MiB (write_high_water 4M)",
		grown / 1024);
	int answered = 0;
	while (answered < n) {
		struct tc_reply r;
		if (tc_recv(c, &r, 60000) != 0) {
			break;
		}
		cr_expect(r.r.ok || (busy_ok && tc_code(&r) == VY_E_BUSY), "%s", r.r.error.message);
		answered++;
		tc_reply_free(&r);
	}
	cr_expect_eq(answered, n);
}

/* A scene with small reply marks, lean ASan, and the connection of a client that will not read. */
static void open_greedy(struct rel_scene *s, struct tc *c)
{
	rel_lean_asan();
	rel_scene_open(s,
		"[limits]\nwrite_high_water = 4M\nwrite_low_water = 1M\nresident_quota = 24M\n", 4);
	tc_open(c, s->d.sock, "greedy");
}

Test(hostile_clients, replies_in_preparation_are_bounded_by_backpressure)
{
	struct rel_scene s;
	struct tc c;
	open_greedy(&s, &c);
	uint64_t h = 0;
	cr_assert_eq(rel_alloc(&c, 16u << 20, NULL, &h), 0);
	/* 48 downloads of 16 MiB in one write, and no read: 768 MiB if nothing holds them back. */
	msgpack_sbuffer all;
	msgpack_sbuffer_init(&all);
	for (int i = 0; i < 48; i++) {
		struct tc_msg m;
		tc_begin(&c, &m, VY_OP_DOWNLOAD, 1);
		vy_pack_cstr(&m.pk, "handle");
		msgpack_pack_uint64(&m.pk, h);
		vy_frame_end(&m.sb, 0);
		msgpack_sbuffer_write(&all, m.sb.data, m.sb.size);
		msgpack_sbuffer_destroy(&m.sb);
	}
	unread_requests_stay_bounded(&s, &c, &all, 48, 160, true);
	msgpack_sbuffer_destroy(&all);
	tc_close(&c);
	rel_scene_close(&s);
}

/* The program, the whole of shared region `region` (`len` bytes) as its one input, and one
 * workgroup: the program writes one element, the reply carries them all. */
static void pack_touch(
	msgpack_packer *pk, const struct vy_program *p, uint64_t region, uint64_t len)
{
	t_pack_program(pk, p);
	vy_pack_cstr(pk, "config");
	msgpack_pack_map(pk, 1);
	vy_pack_cstr(pk, "grid");
	msgpack_pack_array(pk, 3);
	for (int k = 0; k < 3; k++) {
		msgpack_pack_uint32(pk, 1);
	}
	vy_pack_cstr(pk, "inputs");
	msgpack_pack_array(pk, 1);
	msgpack_pack_map(pk, 1);
	vy_pack_cstr(pk, "shm");
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, region);
	msgpack_pack_uint64(pk, 0);
	msgpack_pack_uint64(pk, len);
}

Test(hostile_clients, dispatch_outputs_in_preparation_are_bounded_by_backpressure)
{
	struct rel_scene s;
	struct tc c;
	open_greedy(&s, &c);
	/* One shared region of 4 MiB; a read_write buffer takes it and comes back whole. */
	enum { BYTES = 4 << 20 };
	int fd = memfd_create("rel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_eq(ftruncate(fd, BYTES), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	struct tc_reply r;
	cr_assert_eq(attach_fd(&c, fd, BYTES, &r), 0, "%s", r.r.error.message);
	close(fd);
	uint64_t region = 0;
	cr_assert(tc_u64(&r, "region", &region));
	tc_reply_free(&r);
	struct vy_program *p = vy_program_create("touch", 1, 1, 1);
	vy_program_add_buffer(p, "data", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_store(p, "data", vy_ir_u32(p, 0), vy_ir_u32(p, 7)), NULL));
	/* Once while reading: the pipeline is built (and the device's memory warm) before the
	 * daemon's size is taken. */
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DISPATCH, 3);
	pack_touch(&m.pk, p, region, BYTES);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_assert(r.r.ok, "%s", r.r.error.message);
	tc_reply_free(&r);
	/* 48 dispatches with 4 MiB of outputs each, in one write of small frames, and no read:
	 * 192 MiB of replies, and as much again of device buffers, if nothing holds them back. */
	msgpack_sbuffer all;
	msgpack_sbuffer_init(&all);
	for (int i = 0; i < 48; i++) {
		tc_begin(&c, &m, VY_OP_DISPATCH, 3);
		pack_touch(&m.pk, p, region, BYTES);
		vy_frame_end(&m.sb, 0);
		msgpack_sbuffer_write(&all, m.sb.data, m.sb.size);
		msgpack_sbuffer_destroy(&m.sb);
	}
	unread_requests_stay_bounded(&s, &c, &all, 48, 160, false);
	/* Again, and the client vanishes with its dispatches held back: they are dropped, and the
	 * region goes with the connection once the one that ran is done. */
	cr_assert_eq(tc_send_raw(&c, all.data, all.size), 0);
	msgpack_sbuffer_destroy(&all);
	usleep(200000);
	tc_close(&c);
	cr_expect_eq(rel_wait_stat(&s.c, "resident.shm_regions", 0, 10000), 0,
		"the vanished client's region is detached");
	vy_program_destroy(p);
	rel_scene_close(&s);
}
