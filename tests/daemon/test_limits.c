/*
 * Limits and whole-daemon behaviour that needs a daemon of its own: BUSY beyond max_inflight,
 * the stall timeout, max_clients, the shm region limit and quota, cache_clear, several devices with
 * config.device and least-loaded routing, resident buffers placed on a device, and the drain on
 * SIGTERM (SHUTTING_DOWN).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

TestSuite(limits, .timeout = 180);

Test(limits, busy_beyond_max_inflight)
{
	struct vyd d;
	t_start(&d, "[limits]\nmax_inflight = 2\n");
	struct tc c;
	tc_open(&c, d.sock, "busy");
	struct vy_program *p = t_slow_program("busy-slow");
	struct t_slow slow = t_slow_calibrate(&c, p, -1, 200);
	/* Six requests in one write: the daemon decodes them in one go, before any can finish. */
	msgpack_sbuffer all;
	msgpack_sbuffer_init(&all);
	for (int i = 0; i < 6; i++) {
		struct tc_msg m;
		t_pack_slow(&c, &m, p, slow, -1, 0);
		vy_frame_end(&m.sb, 0);
		msgpack_sbuffer_write(&all, m.sb.data, m.sb.size);
		msgpack_sbuffer_destroy(&m.sb);
	}
	cr_assert_eq(tc_send_raw(&c, all.data, all.size), 0);
	msgpack_sbuffer_destroy(&all);
	int ok = 0;
	int busy = 0;
	for (int i = 0; i < 6; i++) {
		struct tc_reply r;
		cr_assert_eq(tc_recv(&c, &r, 120000), 0);
		ok += r.r.ok;
		if (tc_code(&r) == VY_E_BUSY) {
			busy++;
			cr_expect(strstr(r.r.error.fix, "max_inflight"), "fix: %s", r.r.error.fix);
		}
		tc_reply_free(&r);
	}
	cr_expect_eq(ok, 2, "%d answered", ok);
	cr_expect_eq(busy, 4, "%d BUSY", busy);
	struct tc_reply r;
	cr_expect_eq(t_simple(&c, VY_OP_PING, &r), 0, "below the limit again");
	tc_reply_free(&r);
	tc_close(&c);
	vy_program_destroy(p);
	t_stop(&d);
}

Test(limits, a_client_stalled_inside_a_frame_is_closed)
{
	struct vyd d;
	t_start(&d, "[limits]\nstall_timeout_ms = 300\n");
	struct tc c;
	tc_open(&c, d.sock, "staller");
	static const uint8_t half[] = {0, 0, 0, 100, 0x82, 0xa2, 'i', 'd'};
	cr_assert_eq(tc_send_raw(&c, half, sizeof(half)), 0);
	cr_expect(tc_wait_eof(&c, 20000), "the daemon closes the stalled connection");
	tc_close(&c);
	struct tc o;
	tc_open(&o, d.sock, "observer");
	struct tc_reply r;
	cr_assert_eq(t_simple(&o, VY_OP_STATS, &r), 0);
	uint64_t stalled = 0;
	cr_expect(tc_u64(&r, "daemon.connections_stalled", &stalled) && stalled == 1);
	tc_reply_free(&r);
	tc_close(&o);
	t_stop(&d);
}

Test(limits, connections_beyond_max_clients_are_refused)
{
	struct vyd d;
	t_start(&d, "[limits]\nmax_clients = 2\n");
	struct tc a;
	struct tc b;
	struct tc extra;
	tc_open(&a, d.sock, "a");
	tc_open(&b, d.sock, "b");
	cr_assert_eq(tc_connect(&extra, d.sock), 0);
	cr_expect(tc_wait_eof(&extra, 20000), "the third connection is closed at once");
	tc_close(&extra);
	struct tc_reply r;
	cr_expect_eq(t_simple(&a, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
	tc_close(&a);
	tc_close(&b);
	t_stop(&d);
}

/* Attach a sealed, sparse memfd of `size` bytes; the reply's code, and its region in *region. */
static int attach_sparse(struct tc *c, uint64_t size, uint64_t *region)
{
	int fd = memfd_create("vyred-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	cr_assert_eq(tc_send(c, &m, fd), 0);
	close(fd);
	struct tc_reply r;
	cr_assert_eq(tc_recv(c, &r, 30000), 0);
	int code = tc_code(&r);
	*region = 0;
	if (code == 0) {
		tc_u64(&r, "region", region);
	} else {
		cr_expect_str_eq(r.r.error.at, "size");
		cr_expect(strstr(r.r.error.fix,
				  code == VY_E_QUOTA_EXCEEDED &&
						  strstr(r.r.error.message, "shared memory")
					  ? "shm_quota"
					  : "max_shm_regions"),
			"fix: %s", r.r.error.fix);
	}
	tc_reply_free(&r);
	return code;
}

Test(limits, shm_regions_per_connection_are_bounded)
{
	struct vyd d;
	t_start(&d, "[limits]\nmax_shm_regions = 1\n");
	struct tc c;
	tc_open(&c, d.sock, "regions");
	uint64_t region;
	cr_expect_eq(attach_sparse(&c, 4096, &region), 0);
	cr_expect_eq(attach_sparse(&c, 4096, &region), VY_E_QUOTA_EXCEEDED);
	tc_close(&c);
	t_stop(&d);
}

Test(limits, shm_bytes_per_user_are_bounded)
{
	struct vyd d;
	t_start(&d, "[limits]\nshm_quota = 1G\n");
	struct tc a, b;
	tc_open(&a, d.sock, "quota-a");
	tc_open(&b, d.sock, "quota-b");
	/* Sparse regions: the quota counts what is mapped, not what is touched. */
	uint64_t first, second, third;
	cr_expect_eq(attach_sparse(&a, 512u << 20, &first), 0);
	cr_expect_eq(attach_sparse(&a, 256u << 20, &second), 0);
	/* The same user on another connection shares the quota. */
	cr_expect_eq(attach_sparse(&b, 512u << 20, &third), VY_E_QUOTA_EXCEEDED);
	cr_expect_eq(attach_sparse(&b, (uint64_t)1 << 40, &third), VY_E_QUOTA_EXCEEDED);
	cr_expect_eq(attach_sparse(&b, 256u << 20, &third), 0);
	cr_expect_eq(attach_sparse(&b, 4096, &third), VY_E_QUOTA_EXCEEDED);
	/* Detaching gives the bytes back, and so does a connection that closes. */
	struct tc_msg m;
	tc_begin(&a, &m, VY_OP_SHM_DETACH, 1);
	vy_pack_cstr(&m.pk, "region");
	msgpack_pack_uint64(&m.pk, first);
	struct tc_reply r;
	cr_assert_eq(tc_call(&a, &m, &r), 0);
	cr_expect(r.r.ok, "%s", r.r.error.message);
	tc_reply_free(&r);
	cr_expect_eq(attach_sparse(&b, 512u << 20, &third), 0);
	tc_close(&a);
	/* The daemon learns of the close on its own time. */
	int code = VY_E_QUOTA_EXCEEDED;
	for (int i = 0; i < 250 && code == VY_E_QUOTA_EXCEEDED; i++) {
		code = attach_sparse(&b, 256u << 20, &third);
		if (code) {
			usleep(20000);
		}
	}
	cr_expect_eq(code, 0, "a closed connection's regions no longer count");
	tc_close(&b);
	t_stop(&d);
}

static int compile_name(
	struct tc *c, const char *name, char *cache, size_t size, int device, uint64_t *on_device)
{
	struct vy_program *p = tc_program_renamed("vector_add", name);
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_COMPILE, device >= 0 ? 2 : 1);
	t_pack_program(&m.pk, p);
	if (device >= 0) {
		vy_pack_cstr(&m.pk, "config");
		msgpack_pack_map(&m.pk, 1);
		vy_pack_cstr(&m.pk, "device");
		msgpack_pack_uint32(&m.pk, (uint32_t)device);
	}
	struct tc_reply r;
	cr_assert_eq(tc_call(c, &m, &r), 0);
	int code = tc_code(&r);
	if (code == 0) {
		tc_str(&r, "cache", cache, size);
		tc_u64(&r, "device", on_device);
	}
	tc_reply_free(&r);
	vy_program_destroy(p);
	return code;
}

Test(limits, cache_clear_empties_the_caches)
{
	struct vyd d;
	t_start(&d, "");
	struct tc c;
	tc_open(&c, d.sock, "clear");
	char cache[16];
	uint64_t dev;
	cr_assert_eq(compile_name(&c, "cleared", cache, sizeof(cache), -1, &dev), 0);
	cr_expect_str_neq(cache, "hit");
	cr_assert_eq(compile_name(&c, "cleared", cache, sizeof(cache), -1, &dev), 0);
	cr_expect_str_eq(cache, "hit");
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_CACHE_CLEAR, &r), 0, "%s", r.r.error.message);
	uint64_t pipes = 0;
	uint64_t progs = 0;
	cr_expect(tc_u64(&r, "pipelines", &pipes) && pipes == 1);
	cr_expect(tc_u64(&r, "programs", &progs) && progs == 1);
	tc_reply_free(&r);
	cr_assert_eq(compile_name(&c, "cleared", cache, sizeof(cache), -1, &dev), 0);
	cr_expect_str_neq(cache, "hit");
	tc_close(&c);
	t_stop(&d);
}

Test(limits, caches_evict_the_least_recently_used)
{
	struct vyd d;
	t_start(&d, "[cache]\npipeline_cache_entries = 2\nprogram_cache_entries = 2\n");
	struct tc c;
	tc_open(&c, d.sock, "evict");
	char cache[16];
	uint64_t dev;
	cr_assert_eq(compile_name(&c, "first", cache, sizeof(cache), -1, &dev), 0);
	cr_assert_eq(compile_name(&c, "second", cache, sizeof(cache), -1, &dev), 0);
	cr_assert_eq(compile_name(&c, "third", cache, sizeof(cache), -1, &dev), 0);
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	uint64_t entries = 0;
	uint64_t evictions = 0;
	cr_expect(tc_u64(&r, "pipeline_cache.entries", &entries) && entries == 2);
	cr_expect(tc_u64(&r, "pipeline_cache.evictions", &evictions) && evictions == 1);
	cr_expect(tc_u64(&r, "program_cache.evictions", &evictions) && evictions == 1);
	tc_reply_free(&r);
	cr_assert_eq(compile_name(&c, "third", cache, sizeof(cache), -1, &dev), 0);
	cr_expect_str_eq(cache, "hit", "the most recent entry stays");
	cr_assert_eq(compile_name(&c, "first", cache, sizeof(cache), -1, &dev), 0);
	cr_expect_str_neq(cache, "hit", "the least recently used entry went first");
	tc_close(&c);
	t_stop(&d);
}

Test(limits, requests_route_to_the_named_or_least_loaded_device)
{
	struct vyd d;
	t_start(&d, "[devices]\ndevices = 0,0\n");
	struct tc c;
	tc_open(&c, d.sock, "router");
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	cr_assert_eq(tc_array_len(&r, "devices"), 2);
	tc_reply_free(&r);
	char cache[16];
	uint64_t dev = 9;
	cr_assert_eq(compile_name(&c, "routed", cache, sizeof(cache), 1, &dev), 0);
	cr_expect_eq(dev, 1, "config.device picks the device");
	cr_expect_eq(compile_name(&c, "routed", cache, sizeof(cache), 5, &dev), VY_E_BAD_REQUEST);

	/* Keep device 0 busy; an unpinned request then goes to device 1. The calibration compiles
	 * the slow program there, so the dispatches below go straight to device 0's queue. */
	struct vy_program *slow = t_slow_program("route-slow");
	struct tc busy;
	tc_open(&busy, d.sock, "busy");
	struct t_slow s = t_slow_calibrate(&busy, slow, 0, 300);
	for (int i = 0; i < 3; i++) {
		struct tc_msg m;
		t_pack_slow(&busy, &m, slow, s, 0, 0);
		cr_assert_eq(tc_send(&busy, &m, -1), 0);
	}
	usleep(50000);
	cr_assert_eq(compile_name(&c, "routed-least", cache, sizeof(cache), -1, &dev), 0);
	cr_expect_eq(dev, 1, "the least-loaded device is chosen (got %lu)", (unsigned long)dev);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(tc_recv(&busy, &r, 120000), 0);
		cr_expect(r.r.ok, "%s", r.r.error.message);
		tc_reply_free(&r);
	}
	tc_close(&busy);
	tc_close(&c);
	vy_program_destroy(slow);
	t_stop(&d);
}

/* An alloc of `size` bytes, named or not, with config.device `device` (-1: none). */
static int alloc_on(struct tc *c, uint64_t size, const char *name, int device, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_ALLOC, 1 + (name != NULL) + (device >= 0));
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	if (name) {
		vy_pack_cstr(&m.pk, "name");
		vy_pack_cstr(&m.pk, name);
	}
	if (device >= 0) {
		vy_pack_cstr(&m.pk, "config");
		msgpack_pack_map(&m.pk, 1);
		vy_pack_cstr(&m.pk, "device");
		msgpack_pack_uint32(&m.pk, (uint32_t)device);
	}
	cr_assert_eq(tc_call(c, &m, r), 0);
	return tc_code(r);
}

Test(limits, a_buffer_lives_on_the_device_its_alloc_names)
{
	struct vyd d;
	t_start(&d, "[devices]\ndevices = 0,0\n");
	struct tc c;
	tc_open(&c, d.sock, "placer");
	struct tc_reply r;
	uint64_t h = 0, dev = 9, attached = 9;
	cr_assert_eq(alloc_on(&c, 256, NULL, 1, &r), 0, "%s", r.r.error.message);
	cr_expect(tc_u64(&r, "handle", &h) && h != 0);
	cr_expect(tc_u64(&r, "device", &dev) && dev == 1, "alloc answers device %lu",
		(unsigned long)dev);
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&c, VY_OP_BUFFERS, &r), 0);
	dev = 9;
	cr_expect(tc_row_u64(&r, "buffers", "handle", h, "device", &dev) && dev == 1,
		"the buffers table puts it on device %lu", (unsigned long)dev);
	tc_reply_free(&r);
	cr_expect_eq(alloc_on(&c, 256, NULL, 2, &r), VY_E_BAD_REQUEST);
	cr_expect_str_eq(r.r.error.at, "config.device");
	tc_reply_free(&r);

	/* A named buffer is attached where it lives; config.device may not move it. */
	cr_assert_eq(alloc_on(&c, 64, "placed", 1, &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	cr_expect_eq(alloc_on(&c, 64, "placed", 0, &r), VY_E_BAD_REQUEST);
	cr_expect(strstr(r.r.error.message, "lives on device 1") != NULL, "%s", r.r.error.message);
	tc_reply_free(&r);
	cr_expect_eq(alloc_on(&c, 64, "placed", -1, &r), 0, "%s", r.r.error.message);
	cr_expect(tc_u64(&r, "attached", &attached) && attached == 1);
	cr_expect(tc_u64(&r, "device", &dev) && dev == 1);
	tc_reply_free(&r);
	tc_close(&c);
	t_stop(&d);
}

Test(limits, sigterm_drains_requests_in_flight)
{
	struct vyd d;
	t_start(&d, "");
	struct tc c;
	tc_open(&c, d.sock, "drained");
	struct vy_program *slow = t_slow_program("drain-slow");
	struct t_slow s = t_slow_calibrate(&c, slow, -1, 300);
	struct tc_msg m;
	t_pack_slow(&c, &m, slow, s, -1, 0);
	uint64_t slow_id = m.id;
	cr_assert_eq(tc_send(&c, &m, -1), 0);
	usleep(20000);
	kill(d.pid, SIGTERM);
	cr_assert(vyd_note(&d, "STOPPING=1", 30000));
	tc_begin(&c, &m, VY_OP_PING, 0);
	uint64_t ping_id = m.id;
	cr_assert_eq(tc_send(&c, &m, -1), 0);
	bool slow_ok = false;
	bool ping_refused = false;
	for (int i = 0; i < 2; i++) {
		struct tc_reply r;
		cr_assert_eq(tc_recv(&c, &r, 120000), 0);
		if (r.r.id == slow_id) {
			slow_ok = r.r.ok;
		} else if (r.r.id == ping_id) {
			ping_refused = tc_code(&r) == VY_E_SHUTTING_DOWN;
		}
		tc_reply_free(&r);
	}
	cr_expect(slow_ok, "the dispatch in flight finishes");
	cr_expect(ping_refused, "a new request gets SHUTTING_DOWN");
	struct tc late;
	cr_expect_neq(tc_connect(&late, d.sock), 0, "no new connections while draining");
	tc_close(&c);
	vy_program_destroy(slow);
	int status = vyd_wait(&d, 120000);
	if (status) {
		vyd_dump_log(&d);
	}
	cr_expect_eq(status, 0);
	vyd_cleanup(&d);
}

/* out = in over `n` u32 elements: a program whose input is as large as the test needs. */
static struct vy_program *copy_program(const char *name, uint32_t n)
{
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "in", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, n);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, n);
	vy_program_set_entry(p, vy_ir_seq(p,
					vy_ir_store(p, "out", vy_ir_gid(p, 0),
						vy_ir_load(p, "in", vy_ir_gid(p, 0))),
					NULL));
	return p;
}

/* A dispatch of `p` with `in` as one whole frame (length prefix included). */
static void dispatch_frame(
	struct tc *c, const struct vy_program *p, const struct t_inputs *in, msgpack_sbuffer *out)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DISPATCH, 2);
	t_pack_program(&m.pk, p);
	t_pack_inputs(&m.pk, in);
	vy_frame_end(&m.sb, 0);
	*out = m.sb;
}

/* Expect the one reply on `c` to be a success with the reference's outputs. */
static void expect_reference_reply(struct tc *c, const struct vy_outputs *want, const char *what)
{
	struct tc_reply r;
	cr_assert_eq(tc_recv(c, &r, 60000), 0, "%s: no reply", what);
	cr_expect(r.r.ok, "%s: %s", what, r.r.error.message);
	if (r.r.ok) {
		cr_expect(t_outputs_equal(&r, want), "%s: wrong outputs", what);
	}
	tc_reply_free(&r);
}

/* A copy program of `n` words, its inputs, the reference's outputs and its dispatch as one whole
 * frame (length prefix included). The frame's size does not depend on the daemon. */
struct frame_case {
	struct vy_program *p;
	struct t_inputs in;
	struct vy_outputs want;
	msgpack_sbuffer frame;
};

static void frame_case_make(struct frame_case *fc, const char *name, uint32_t n, uint64_t seed)
{
	fc->p = copy_program(name, n);
	t_inputs_make(fc->p, 0, seed, &fc->in);
	cr_assert_eq(t_reference(fc->p, &fc->in, NULL, &fc->want), 0);
	struct tc scratch = {.next_id = 1};
	dispatch_frame(&scratch, fc->p, &fc->in, &fc->frame);
}

static void frame_case_free(struct frame_case *fc)
{
	msgpack_sbuffer_destroy(&fc->frame);
	vy_outputs_finish(&fc->want);
	t_inputs_free(&fc->in);
	vy_program_destroy(fc->p);
}

/*
 * A frame exactly as large as inbound_quota fits: while another frame of the same user holds part
 * of the quota it waits for room, and then runs; it is not refused as too large.
 */
Test(limits, a_frame_of_exactly_the_inbound_quota_waits_for_room_and_runs)
{
	/* A big frame (64 KiB, which the socket buffers whole) and a tiny one. */
	struct frame_case big;
	struct frame_case small;
	frame_case_make(&big, "exact-big", 16 * 1024, 3);
	frame_case_make(&small, "exact-small", 16, 4);
	uint64_t quota = big.frame.size - 4; /* what the length prefix announces */
	char config[128];
	snprintf(config, sizeof(config), "[limits]\ninbound_quota = %" PRIu64 "\n", quota);
	bool waited = false;
	/* The big frame must be read while the small one holds its bytes; a daemon slow to read it
	 * gets more time on the next attempt. */
	for (int attempt = 0; attempt < 3 && !waited; attempt++) {
		struct vyd d;
		t_start(&d, config);
		struct tc a;
		struct tc b;
		struct tc watch;
		tc_open(&a, d.sock, "holder");
		tc_open(&b, d.sock, "exact");
		tc_open(&watch, d.sock, "watch");
		cr_assert_eq(tc_send_raw(&a, small.frame.data, small.frame.size - 1), 0);
		/* The holder's frame is counted once its length prefix has been read. */
		uint64_t held = 0;
		for (int i = 0; i < 500 && held < small.frame.size - 4; i++) {
			usleep(10000);
			held = t_stat(&watch, "daemon.inbound_bytes");
		}
		cr_assert_geq(held, small.frame.size - 4, "the holder's frame was never counted");
		tc_close(&watch);
		cr_assert_eq(tc_send_raw(&b, big.frame.data, big.frame.size), 0);
		usleep(300000u << attempt);
		cr_assert_eq(tc_send_raw(&a, small.frame.data + small.frame.size - 1, 1), 0);
		expect_reference_reply(&a, &small.want, "the holder's frame");
		expect_reference_reply(&b, &big.want, "the frame of exactly inbound_quota");
		waited = t_stat(&a, "daemon.inbound_waits") > 0;
		tc_close(&a);
		tc_close(&b);
		t_stop(&d);
	}
	cr_expect(
		waited, "the big frame never had to wait (the daemon read it too late each time)");
	frame_case_free(&big);
	frame_case_free(&small);
}

/* Send `frame` on `c` and expect the reference's outputs back. */
static void round_trip(
	struct tc *c, const msgpack_sbuffer *frame, const struct vy_outputs *want, const char *what)
{
	cr_assert_eq(tc_send_raw(c, frame->data, frame->size), 0, "%s", what);
	expect_reference_reply(c, want, what);
}

/*
 * A connection reads its next large frame into the buffer of its last one. Kept buffers never
 * make a frame wait: with inbound_quota = 3M, another connection's frame of 2.5 MiB is admitted
 * at once and the kept 2 MiB is freed, so that frames and kept buffers stay within the quota.
 * A kept buffer is freed after a second of disuse.
 */
Test(limits, a_connection_reads_its_next_large_frame_into_the_buffer_it_kept)
{
	struct frame_case c2;
	struct frame_case c25;
	frame_case_make(&c2, "kept-2m", 512 * 1024, 5);
	frame_case_make(&c25, "kept-2.5m", 640 * 1024, 6);
	struct vyd d;
	t_start(&d, "[limits]\ninbound_quota = 3M\n");
	struct tc a;
	struct tc b;
	struct tc watch;
	tc_open(&a, d.sock, "sender");
	tc_open(&b, d.sock, "other");
	tc_open(&watch, d.sock, "watch");
	round_trip(&a, &c2.frame, &c2.want, "the first frame");
	cr_expect_eq(t_stat(&watch, "daemon.inbound_kept_bytes"), c2.frame.size - 4);
	cr_expect_eq(t_stat(&watch, "daemon.frames_reused"), 0);
	round_trip(&a, &c2.frame, &c2.want, "the frame read into the kept buffer");
	cr_expect_eq(t_stat(&watch, "daemon.frames_reused"), 1);
	cr_expect_eq(t_stat(&watch, "daemon.inbound_kept_bytes"), c2.frame.size - 4);
	/* 2.5 MiB beside a kept 2 MiB is more than the quota: the kept buffer gives way. */
	round_trip(&b, &c25.frame, &c25.want, "the other connection's frame");
	cr_expect_eq(t_stat(&watch, "daemon.inbound_waits"), 0);
	cr_expect_eq(t_stat(&watch, "daemon.inbound_kept_bytes"), c25.frame.size - 4);
	round_trip(&a, &c2.frame, &c2.want, "a frame after the kept buffer was freed");
	cr_expect_eq(t_stat(&watch, "daemon.frames_reused"), 1);
	cr_expect_leq(t_stat(&watch, "daemon.inbound_kept_bytes"), 3u << 20);
	usleep(1600000);
	cr_expect_eq(t_stat(&watch, "daemon.inbound_kept_bytes"), 0);
	tc_close(&a);
	tc_close(&b);
	tc_close(&watch);
	t_stop(&d);
	frame_case_free(&c2);
	frame_case_free(&c25);
}

/*
 * Six connections of one user each send a 1.5 MiB frame under inbound_quota = 4M: every frame is
 * admitted at once, and the buffers they leave kept never hold more than the quota beside the
 * frame in flight (two of them at most), the oldest given up first.
 */
Test(limits, kept_buffers_of_many_connections_stay_within_the_inbound_quota)
{
	struct frame_case fc;
	frame_case_make(&fc, "kept-many", 384 * 1024, 8);
	uint64_t frame = fc.frame.size - 4;
	struct vyd d;
	t_start(&d, "[limits]\ninbound_quota = 4M\n");
	struct tc watch;
	tc_open(&watch, d.sock, "watch");
	struct tc conns[6];
	for (int i = 0; i < 6; i++) {
		tc_open(&conns[i], d.sock, "sender");
		round_trip(&conns[i], &fc.frame, &fc.want, "a frame of one of six connections");
		uint64_t kept = t_stat(&watch, "daemon.inbound_kept_bytes");
		cr_expect_leq(
			kept, 4u << 20, "after connection %d: %" PRIu64 " bytes kept", i, kept);
		cr_expect_eq(kept, (i == 0 ? 1 : 2) * frame, "after connection %d", i);
	}
	cr_expect_eq(t_stat(&watch, "daemon.inbound_waits"), 0);
	cr_expect_eq(t_stat(&watch, "daemon.frames_reused"), 0);
	for (int i = 0; i < 6; i++) {
		tc_close(&conns[i]);
	}
	/* A closed connection frees its buffer. */
	for (int i = 0; i < 100 && t_stat(&watch, "daemon.inbound_kept_bytes") != 0; i++) {
		usleep(10000);
	}
	cr_expect_eq(t_stat(&watch, "daemon.inbound_kept_bytes"), 0);
	tc_close(&watch);
	t_stop(&d);
	frame_case_free(&fc);
}

/*
 * A large input sent in the frame is read by a Vulkan device from the frame's own pages, imported
 * once and kept with the buffer the connection keeps: two dispatches, one import, both inputs
 * copied from it, the reference's bytes. The reference backend imports nothing.
 */
Test(limits, a_large_input_is_read_by_the_device_from_the_frame_it_came_in)
{
	struct frame_case fc;
	frame_case_make(&fc, "frame-import", 512 * 1024, 7);
	struct vyd d;
	t_start(&d, NULL);
	struct tc a;
	struct tc watch;
	tc_open(&a, d.sock, "sender");
	tc_open(&watch, d.sock, "watch");
	uint64_t before = t_stat(&watch, "resident.shm_import_inputs");
	round_trip(&a, &fc.frame, &fc.want, "the first frame");
	round_trip(&a, &fc.frame, &fc.want, "the second frame, in the kept buffer");
	uint64_t inputs = t_stat(&watch, "resident.shm_import_inputs") - before;
	uint64_t imports = t_stat(&watch, "daemon.frames_imported");
	cr_expect_eq(t_stat(&watch, "daemon.frames_reused"), 1);
	if (vyd_backend()) {
		cr_expect_eq(imports, 0, "the reference backend imports nothing");
		cr_expect_eq(inputs, 0);
	} else {
		cr_expect_eq(imports, 1, "the kept buffer keeps its import");
		cr_expect_eq(inputs, 2, "both dispatches copy their input from the import");
	}
	tc_close(&a);
	tc_close(&watch);
	t_stop(&d);
	frame_case_free(&fc);
}

/*
 * Byte bounds at their edge: a resident allocation that brings the user exactly to
 * resident_quota succeeds and one byte more does not; a reply larger than write_high_water runs
 * when nothing else is unsent (one request alone always fits).
 */
Test(limits, resident_quota_and_write_high_water_admit_their_bound)
{
	struct vyd d;
	t_start(&d,
		"[limits]\nresident_quota = 64K\nwrite_high_water = 64K\nwrite_low_water = 16K\n");
	struct tc c;
	tc_open(&c, d.sock, "edges");
	struct tc_msg m;
	struct tc_reply r;
	uint64_t sizes[3] = {65536, 1, 65537};
	int want[3] = {0, VY_E_QUOTA_EXCEEDED, VY_E_QUOTA_EXCEEDED};
	uint64_t first = 0;
	for (int i = 0; i < 3; i++) {
		tc_begin(&c, &m, VY_OP_ALLOC, 1);
		vy_pack_cstr(&m.pk, "size");
		msgpack_pack_uint64(&m.pk, sizes[i]);
		cr_assert_eq(tc_call(&c, &m, &r), 0);
		cr_expect_eq(tc_code(&r), want[i], "alloc of %" PRIu64 " bytes: %s", sizes[i],
			r.r.error.message);
		if (i == 0 && r.r.ok) {
			cr_assert(tc_u64(&r, "handle", &first));
		}
		tc_reply_free(&r);
		if (i == 1 && first) {
			/* Free the first, so the third asks for one byte more than the whole quota.
			 */
			tc_begin(&c, &m, VY_OP_FREE, 1);
			vy_pack_cstr(&m.pk, "handle");
			msgpack_pack_uint64(&m.pk, first);
			cr_assert_eq(tc_call(&c, &m, &r), 0);
			cr_expect(r.r.ok, "%s", r.r.error.message);
			tc_reply_free(&r);
		}
	}
	struct vy_program *p = copy_program("past-high-water", 65536);
	struct t_inputs in;
	t_inputs_make(p, 0, 5, &in); /* a 256 KiB output, four times write_high_water */
	struct vy_outputs out;
	cr_assert_eq(t_reference(p, &in, NULL, &out), 0);
	msgpack_sbuffer frame;
	dispatch_frame(&c, p, &in, &frame);
	cr_assert_eq(tc_send_raw(&c, frame.data, frame.size), 0);
	expect_reference_reply(&c, &out, "a reply larger than write_high_water");
	msgpack_sbuffer_destroy(&frame);
	vy_outputs_finish(&out);
	t_inputs_free(&in);
	vy_program_destroy(p);
	tc_close(&c);
	t_stop(&d);
}
