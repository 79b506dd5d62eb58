/*
 * Clients that misbehave: one that disconnects with requests in flight, one that sends half a
 * frame and stalls, one that floods without reading its replies. None may disturb a well-behaved
 * client, and each one's resources are freed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

TestSuite(clients, .timeout = 180);

/* A well-behaved client checks a dispatch against the reference. */
static void behave(struct tc *c, uint64_t seed)
{
	struct vy_program *p = tc_program("vector_add");
	struct t_inputs in;
	t_inputs_make(p, 0, seed, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	struct tc_reply r;
	cr_assert_eq(t_dispatch(c, p, &in, &r), 0);
	cr_expect(r.r.ok, "%s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want));
	tc_reply_free(&r);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	vy_program_destroy(p);
}

/* Wait until client `id` has left the daemon's tables. */
static bool gone(struct tc *observer, uint64_t id, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 50) {
		struct tc_reply r;
		cr_assert_eq(t_simple(observer, VY_OP_CLIENTS, &r), 0);
		uint64_t v;
		bool present = tc_row_u64(&r, "clients", "id", id, "id", &v);
		tc_reply_free(&r);
		if (!present) {
			return true;
		}
		usleep(50000);
	}
	return false;
}

static bool has_buffer(struct tc *observer, uint64_t handle)
{
	struct tc_reply r;
	cr_assert_eq(t_simple(observer, VY_OP_BUFFERS, &r), 0);
	uint64_t v;
	bool present = tc_row_u64(&r, "buffers", "handle", handle, "handle", &v);
	tc_reply_free(&r);
	return present;
}

Test(clients, disconnecting_with_requests_in_flight_frees_everything)
{
	struct tc good;
	tc_open(&good, vyd_shared_socket(), "good");
	struct tc rude;
	tc_open(&rude, vyd_shared_socket(), "rude");
	uint64_t rude_id = t_client_id(&rude);
	struct tc_msg m;
	tc_begin(&rude, &m, VY_OP_ALLOC, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, 4096);
	struct tc_reply r;
	cr_assert_eq(tc_call(&rude, &m, &r), 0);
	uint64_t handle = 0;
	cr_assert(tc_u64(&r, "handle", &handle));
	tc_reply_free(&r);
	struct vy_program *slow = t_slow_program("rude-slow");
	struct t_slow s = t_slow_calibrate(&rude, slow, -1, 100);
	for (int i = 0; i < 8; i++) {
		t_pack_slow(&rude, &m, slow, s, -1, 0);
		cr_assert_eq(tc_send(&rude, &m, -1), 0);
	}
	tc_close(&rude);
	behave(&good, 31);
	cr_expect(gone(&good, rude_id, 60000), "the closed client leaves the tables");
	cr_expect(!has_buffer(&good, handle), "its resident buffer is freed");
	behave(&good, 32);
	tc_close(&good);
	vy_program_destroy(slow);
}

Test(clients, a_half_frame_stalls_only_its_sender)
{
	struct tc good;
	tc_open(&good, vyd_shared_socket(), "good");
	struct tc staller;
	tc_open(&staller, vyd_shared_socket(), "staller");
	uint64_t id = t_client_id(&staller);
	static const uint8_t half[] = {0, 0, 0x10, 0, 0x83, 0xa2, 'i', 'd', 0x07, 0xa2};
	cr_assert_eq(tc_send_raw(&staller, half, sizeof(half)), 0);
	behave(&good, 41);
	struct tc_reply r;
	cr_assert_eq(t_simple(&good, VY_OP_STATS, &r), 0);
	uint64_t in = 0;
	cr_expect(t_client_stat(&r, id, "bytes_in", &in) && in > sizeof(half), "bytes_in %lu",
		(unsigned long)in);
	tc_reply_free(&r);
	tc_close(&staller);
	cr_expect(gone(&good, id, 60000), "the staller is freed when it goes");
	behave(&good, 42);
	tc_close(&good);
}

/* out[gid] = gid over 65536 u32: a reply of 256 KiB for a request of a few hundred bytes. */
static struct vy_program *fill_program(void)
{
	struct vy_program *p = vy_program_create("fill", 256, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 65536);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_gid(p, 0)), NULL));
	return p;
}

Test(clients, a_flood_without_reading_is_paused_not_buffered)
{
	struct vyd d;
	t_start(&d, "[limits]\nwrite_high_water = 512K\nwrite_low_water = 128K\n");
	struct tc good;
	tc_open(&good, d.sock, "good");
	struct tc flood;
	tc_open(&flood, d.sock, "flood");
	uint64_t id = t_client_id(&flood);
	struct vy_program *p = fill_program();
	struct tc_msg m;
	tc_begin(&flood, &m, VY_OP_DISPATCH, 2);
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 0);
	vy_frame_end(&m.sb, 0);
	int fl = fcntl(flood.fd, F_GETFL);
	fcntl(flood.fd, F_SETFL, fl | O_NONBLOCK);
	/* Send the same request (ids repeat; replies are only counted) until the daemon stops
	 * reading and the socket is full. */
	size_t sent = 0;
	size_t frames = 0;
	time_t start = time(NULL);
	bool blocked = false;
	while (!blocked && time(NULL) - start < 60) {
		ssize_t w = send(flood.fd, m.sb.data + sent, m.sb.size - sent, MSG_NOSIGNAL);
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {flood.fd, POLLOUT, 0};
			blocked = poll(&pf, 1, 2000) == 0;
			continue;
		}
		cr_assert_geq(w, 0);
		sent += (size_t)w;
		if (sent == m.sb.size) {
			sent = 0;
			frames++;
		}
	}
	cr_assert(
		blocked, "the daemon kept reading a client that never reads (%zu frames)", frames);
	behave(&good, 51);
	struct tc_reply r;
	cr_assert_eq(t_simple(&good, VY_OP_STATS, &r), 0);
	uint64_t paused = 0;
	uint64_t unsent = 0;
	cr_expect(t_client_stat(&r, id, "paused", &paused) && paused == 1);
	cr_expect(t_client_stat(&r, id, "unsent_bytes", &unsent) && unsent > 512 * 1024,
		"unsent %lu", (unsigned long)unsent);
	cr_expect(unsent < 64ull << 20, "the daemon holds a bounded amount: %lu",
		(unsigned long)unsent);
	tc_reply_free(&r);

	/* Reading again resumes the flooder: every request it sent gets its one answer. */
	fcntl(flood.fd, F_SETFL, fl);
	if (sent) {
		cr_assert_eq(tc_send_raw(&flood, m.sb.data + sent, m.sb.size - sent), 0);
		frames++;
	}
	msgpack_sbuffer_destroy(&m.sb);
	size_t answered = 0;
	size_t outputs = 0;
	while (answered < frames) {
		cr_assert_eq(
			tc_recv(&flood, &r, 120000), 0, "%zu of %zu answered", answered, frames);
		cr_expect(r.r.ok || tc_code(&r) == VY_E_BUSY, "%s", r.r.error.message);
		outputs += r.r.ok;
		answered++;
		tc_reply_free(&r);
	}
	cr_expect_gt(outputs, 0);
	cr_assert_eq(t_simple(&good, VY_OP_STATS, &r), 0);
	cr_expect(t_client_stat(&r, id, "paused", &paused) && paused == 0, "reading resumed");
	tc_reply_free(&r);
	tc_close(&flood);
	cr_expect(gone(&good, id, 60000), "the flooder is freed when it goes");
	behave(&good, 52);
	tc_close(&good);
	vy_program_destroy(p);
	t_stop(&d);
}
