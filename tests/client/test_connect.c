/*
 * Connecting, hello, the operations without fields (ping, stats and the operator tables), reply
 * values and error objects. The last group runs against a fake daemon, to check the client's side
 * of what a real one rarely does: late, reordered, malformed and unknown answers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lv.h"

Test(connect, reaches_the_daemon_and_keeps_its_hello)
{
	struct vy_client *c = lv_connect("lv-hello");
	const struct vy_value *h = vy_client_hello(c);
	cr_assert(vy_client_connected(c));
	cr_assert_str_eq(vy_client_path(c), lv_socket());
	cr_assert(strncmp(vy_value_get_str(h, "server", ""), "vyred", 5) == 0);
	cr_assert_eq(vy_value_get_u64(h, "protocol", 0), 1);
	cr_assert_geq(vy_value_len(vy_value_get(h, "devices")), 1);
	cr_assert_gt(vy_value_get_u64(h, "limits.max_inflight", 0), 0);
	cr_assert_geq(vy_client_fd(c), 0);
	cr_assert_eq(vy_client_pending(c), 0);
	vy_client_close(c);
}

Test(connect, takes_the_socket_from_the_environment)
{
	setenv("VYRED_SOCKET", lv_socket(), 1);
	struct vy_client *c = NULL;
	struct vy_error err;
	int rc = vy_client_connect(NULL, NULL, &c, &err);
	unsetenv("VYRED_SOCKET");
	lv_ok(rc, &err);
	cr_assert_str_eq(vy_client_path(c), lv_socket());
	struct vy_reply *r = NULL;
	lv_ok(vy_clients(c, &r, &err), &err);
	/* Without a name the client is named after the program. */
	bool named = false;
	const struct vy_value *rows = vy_reply_get(r, "clients");
	for (size_t i = 0; i < vy_value_len(rows); i++) {
		const struct vy_value *row = vy_value_item(rows, i);
		bool self = false;
		vy_value_bool(vy_value_get(row, "self"), &self);
		named = named || (self && strcmp(vy_value_get_str(row, "name", ""),
						  program_invocation_short_name) == 0);
	}
	cr_assert(named, "no row of this client named %s", program_invocation_short_name);
	vy_reply_destroy(r);
	vy_client_close(c);
}

Test(connect, defaults_to_the_system_socket)
{
	unsetenv("VYRED_SOCKET");
	struct vy_client *c = NULL;
	struct vy_error err;
	int rc = vy_client_connect(NULL, "lv-default", &c, &err);
	if (rc == 0) {
		cr_assert_str_eq(vy_client_path(c), VY_DEFAULT_SOCKET);
		vy_client_close(c);
		return;
	}
	cr_assert_eq(rc, VY_ERROR_CONNECT_FAILED);
	cr_assert(strstr(err.message, VY_DEFAULT_SOCKET), "%s", err.message);
}

Test(connect, explains_a_missing_daemon)
{
	struct vy_client *c = (struct vy_client *)1;
	struct vy_error err;
	int rc = vy_client_connect("/tmp/vyre-no-such-dir/vyred.sock", "lv", &c, &err);
	cr_assert_eq(rc, VY_ERROR_CONNECT_FAILED);
	cr_assert_null(c);
	cr_assert_eq(err.code, VY_ERROR_CONNECT_FAILED);
	cr_assert_eq(err.num, 2001);
	cr_assert_str_eq(err.name, "CONNECT_FAILED");
	cr_assert_str_eq(err.retry, "later");
	cr_assert(strstr(err.message, "/tmp/vyre-no-such-dir/vyred.sock"), "%s", err.message);
	cr_assert(strstr(err.message, "ENOENT"), "%s", err.message);
	cr_assert(strstr(err.fix, "VYRED_SOCKET"), "%s", err.fix);
	char text[1200];
	vy_error_text(&err, text, sizeof(text));
	cr_assert(strstr(text, "CONNECT_FAILED: ") == text, "%s", text);
	cr_assert(strstr(text, ". Fix: start vyred"), "%s", text);
}

Test(connect, refuses_a_path_too_long_for_a_socket)
{
	char path[200];
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	struct vy_client *c = NULL;
	struct vy_error err;
	cr_assert_eq(vy_client_connect(path, "lv", &c, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert(err.fix[0]);
}

Test(connect, pings_and_reads_the_stats_tree)
{
	struct vy_client *c = lv_connect("lv-stats");
	struct vy_error err;
	lv_ok(vy_ping(c, &err), &err);
	struct vy_reply *r = NULL;
	lv_ok(vy_stats(c, &r, &err), &err);
	const struct vy_value *root = vy_reply_value(r);
	cr_assert_eq(vy_value_kind(root), VY_KIND_MAP);
	cr_assert_eq(vy_value_get_u64(root, "daemon.protocol", 0), 1);
	cr_assert_gt(vy_value_get_u64(root, "daemon.pid", 0), 0);
	cr_assert_gt(vy_value_get_u64(root, "requests.by_op.ping", 0), 0);
	cr_assert_str_neq(vy_value_get_str(root, "devices.0.name", ""), "");
	cr_assert_null(vy_value_get(root, "id"), "the envelope's id is not a result field");
	cr_assert_null(vy_value_get(root, "ok"));
	cr_assert_gt(vy_reply_id(r), 0);
	vy_reply_destroy(r);
	vy_client_close(c);
}

Test(connect, lists_clients_buffers_and_cache)
{
	struct vy_client *c = lv_connect("lv-tables");
	struct vy_error err;
	uint64_t h = 0;
	lv_ok(vy_buffer_alloc(c, 256, NULL, &h, &err), &err);
	struct vy_program *p = lv_program("vector_add");
	struct vy_compile_result compiled;
	lv_ok(vy_compile(c, p, NULL, &compiled, &err), &err);

	struct vy_reply *r = NULL;
	lv_ok(vy_clients(c, &r, &err), &err);
	bool me = false;
	const struct vy_value *rows = vy_reply_get(r, "clients");
	for (size_t i = 0; i < vy_value_len(rows); i++) {
		me = me ||
		     strcmp(vy_value_get_str(vy_value_item(rows, i), "name", ""), "lv-tables") == 0;
	}
	cr_assert(me);
	vy_reply_destroy(r);

	lv_ok(vy_buffers(c, &r, &err), &err);
	bool found = false;
	rows = vy_reply_get(r, "buffers");
	for (size_t i = 0; i < vy_value_len(rows); i++) {
		found = found || vy_value_get_u64(vy_value_item(rows, i), "handle", 0) == h;
	}
	cr_assert(found, "buffer %llu is not listed", (unsigned long long)h);
	vy_reply_destroy(r);

	lv_ok(vy_cache_list(c, &r, &err), &err);
	found = false;
	rows = vy_reply_get(r, "programs");
	for (size_t i = 0; i < vy_value_len(rows); i++) {
		found = found || strcmp(vy_value_get_str(vy_value_item(rows, i), "program_id", ""),
					 compiled.program_id) == 0;
	}
	cr_assert(found, "program %s is not listed", compiled.program_id);
	vy_reply_destroy(r);

	/* cache_clear is for admins: root runs the suite in CI, anyone else gets the Fix. */
	int rc = vy_cache_clear(c, &r, &err);
	if (getuid() == 0) {
		lv_ok(rc, &err);
		cr_assert_eq(vy_value_kind(vy_reply_get(r, "pipelines")), VY_KIND_UINT);
		vy_reply_destroy(r);
	} else {
		cr_assert_eq(rc, VY_ERROR_PERMISSION_DENIED);
		cr_assert(err.fix[0]);
	}
	lv_ok(vy_buffer_free(c, h, &err), &err);
	vy_program_free(p);
	vy_client_close(c);
}

Test(connect, refuses_a_generic_call_of_an_operation_with_fields)
{
	struct vy_client *c = lv_connect("lv-call");
	struct vy_error err;
	struct vy_reply *r = (struct vy_reply *)1;
	cr_assert_eq(vy_call(c, "dispatch", &r, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert_null(r);
	cr_assert(strstr(err.message, "dispatch"));
	cr_assert_eq(vy_call(c, "no_such_op", NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	lv_ok(vy_call(c, "ping", NULL, &err), &err);
	vy_client_close(c);
}

Test(values, read_every_kind_by_path)
{
	struct vy_client *c = lv_connect("lv-values");
	const struct vy_value *h = vy_client_hello(c);
	cr_assert_eq(vy_value_kind(h), VY_KIND_MAP);
	cr_assert_eq(vy_value_kind(vy_value_get(h, "server")), VY_KIND_STR);
	cr_assert_eq(vy_value_kind(vy_value_get(h, "protocols")), VY_KIND_ARRAY);
	cr_assert_eq(vy_value_kind(vy_value_get(h, "devices.0.subgroup_ops")), VY_KIND_BOOL);
	cr_assert_eq(vy_value_kind(vy_value_get(h, "devices.7")), VY_KIND_MISSING);
	cr_assert_eq(vy_value_kind(vy_value_get(h, "devices.x")), VY_KIND_MISSING);
	cr_assert_eq(vy_value_kind(vy_value_get(h, "server.deeper")), VY_KIND_MISSING);
	cr_assert_eq(vy_value_get(h, ""), h);
	cr_assert_str_eq(vy_kind_name(VY_KIND_MAP), "map");
	cr_assert_str_eq(vy_kind_name(VY_KIND_MISSING), "missing");

	uint64_t u = 0;
	int64_t i = 0;
	double f = 0;
	bool b = false;
	cr_assert(vy_value_u64(vy_value_get(h, "protocols.0"), &u));
	cr_assert_eq(u, 1);
	cr_assert(vy_value_i64(vy_value_get(h, "protocol"), &i));
	cr_assert_eq(i, 1);
	cr_assert(vy_value_f64(vy_value_get(h, "protocol"), &f));
	cr_assert_float_eq(f, 1.0, 0);
	cr_assert(vy_value_bool(vy_value_get(h, "devices.0.subgroup_ops"), &b));
	cr_assert_not(vy_value_u64(vy_value_get(h, "server"), &u));
	cr_assert_not(vy_value_bool(vy_value_get(h, "protocol"), &b));
	cr_assert_null(vy_value_str(vy_value_get(h, "protocol")));
	cr_assert_null(vy_value_bin(vy_value_get(h, "protocol"), NULL));
	cr_assert_eq(vy_value_get_u64(h, "nothing", 42), 42);
	cr_assert_str_eq(vy_value_get_str(h, "nothing", "dflt"), "dflt");

	/* Iterate a map: keys in the daemon's order, values by index. */
	const struct vy_value *limits = vy_value_get(h, "limits");
	bool saw_max_frame = false;
	for (size_t k = 0; k < vy_value_len(limits); k++) {
		const char *key = vy_value_key(limits, k);
		cr_assert_not_null(key);
		if (strcmp(key, "max_frame") == 0) {
			saw_max_frame = vy_value_u64(vy_value_item(limits, k), &u) && u > 0;
		}
	}
	cr_assert(saw_max_frame);
	cr_assert_null(vy_value_key(limits, vy_value_len(limits)));
	cr_assert_null(vy_value_item(limits, vy_value_len(limits)));
	cr_assert_null(vy_value_key(vy_value_get(h, "protocols"), 0));
	cr_assert_eq(
		vy_value_len(vy_value_get(h, "server")), strlen(vy_value_get_str(h, "server", "")));

	/* NULL is a missing value everywhere. */
	cr_assert_eq(vy_value_kind(NULL), VY_KIND_MISSING);
	cr_assert_eq(vy_value_len(NULL), 0);
	cr_assert_null(vy_value_get(NULL, "a"));
	cr_assert_null(vy_value_json(NULL, false));

	char *json = vy_value_json(vy_value_get(h, "limits"), false);
	cr_assert(json && strstr(json, "\"max_frame\":"), "%s", json);
	free(json);
	json = vy_value_json(h, true);
	cr_assert(json && strstr(json, "\"server\": \"vyred"), "%s", json);
	cr_assert_null(strstr(json, "\"ok\""), "the envelope stays out of the JSON: %s", json);
	free(json);
	vy_client_close(c);
}

Test(errors, name_codes_and_clear)
{
	cr_assert_str_eq(vy_error_name(VY_ERROR_INVALID_PROGRAM), "INVALID_PROGRAM");
	cr_assert_str_eq(vy_error_name(VY_ERROR_DISCONNECTED), "DISCONNECTED");
	cr_assert_str_eq(vy_error_name(VY_ERROR_NO_REPLY), "NO_REPLY");
	cr_assert_str_eq(vy_error_name(-7), "UNKNOWN");
	cr_assert_str_eq(vy_version(), "1.0.0");
	struct vy_error err;
	memset(&err, 0x5a, sizeof(err));
	vy_error_clear(&err);
	cr_assert_eq(err.code, 0);
	cr_assert_eq(err.message[0], '\0');
	vy_error_clear(NULL);
	char text[64];
	cr_assert_str_eq(vy_error_text(&err, text, sizeof(text)), "no error");
}

/* --- against a fake daemon --- */

/* Start op on the client and take its request off the fake daemon's socket. */
static uint64_t call_seen(struct lv_fake *f, struct vy_client *c, const char *op)
{
	struct vy_error err;
	uint64_t id = 0;
	lv_ok(vy_call_start(c, op, NULL, NULL, &id, &err), &err);
	lv_fake_request(f, NULL, 0);
	return id;
}

/* A failed reply to request id, up to its "error" key: the caller packs the error map. */
static void begin_failure(msgpack_sbuffer *sb, msgpack_packer *pk, uint64_t id)
{
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(pk, 3);
	msgpack_pack_str_with_body(pk, "id", 2);
	msgpack_pack_uint64(pk, id);
	msgpack_pack_str_with_body(pk, "ok", 2);
	msgpack_pack_false(pk);
	msgpack_pack_str_with_body(pk, "error", 5);
}

Test(fake, waits_with_a_timeout_and_matches_replies_by_id)
{
	struct lv_fake f;
	lv_fake_start(&f);
	struct vy_client *c = lv_fake_connect(&f);
	struct vy_error err;
	uint64_t a = 0;
	uint64_t b = 0;
	lv_ok(vy_call_start(c, "ping", NULL, NULL, &a, &err), &err);
	lv_ok(vy_call_start(c, "stats", NULL, NULL, &b, &err), &err);
	cr_assert_neq(a, b);
	cr_assert_eq(vy_client_pending(c), 2);
	char op[32];
	cr_assert_eq(lv_fake_request(&f, op, sizeof(op)), a);
	cr_assert_str_eq(op, "ping");
	cr_assert_eq(lv_fake_request(&f, op, sizeof(op)), b);
	cr_assert_str_eq(op, "stats");

	struct vy_reply *r = (struct vy_reply *)1;
	cr_assert_eq(vy_client_wait(c, a, 50, &r, &err), VY_ERROR_NO_REPLY);
	cr_assert_null(r);
	cr_assert_str_eq(err.name, "NO_REPLY");
	/* Answer out of order: b first. */
	lv_fake_ok(&f, b);
	lv_fake_ok(&f, a);
	lv_ok(vy_client_wait(c, a, 5000, &r, &err), &err);
	cr_assert_eq(vy_reply_id(r), a);
	vy_reply_destroy(r);
	lv_ok(vy_client_wait(c, b, 5000, &r, &err), &err);
	cr_assert_eq(vy_reply_id(r), b);
	vy_reply_destroy(r);
	cr_assert_eq(vy_client_pending(c), 0);
	cr_assert_eq(vy_client_wait(c, a, 0, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	vy_client_close(c);
	lv_fake_stop(&f);
}

Test(fake, drops_the_late_reply_of_a_call_that_timed_out)
{
	struct lv_fake f;
	lv_fake_start(&f);
	struct vy_client *c = lv_fake_connect(&f);
	struct vy_error err;
	vy_client_set_timeout(c, 30);
	cr_assert_eq(vy_ping(c, &err), VY_ERROR_NO_REPLY);
	uint64_t late = lv_fake_request(&f, NULL, 0);
	cr_assert_eq(vy_client_pending(c), 1);
	lv_fake_ok(&f, late);
	vy_client_set_timeout(c, -1);
	uint64_t id = 0;
	lv_ok(vy_call_start(c, "ping", NULL, NULL, &id, &err), &err);
	cr_assert_eq(lv_fake_request(&f, NULL, 0), id);
	lv_fake_ok(&f, id);
	lv_ok(vy_client_wait(c, id, 5000, NULL, &err), &err);
	cr_assert_eq(vy_client_pending(c), 0, "the late reply was kept");
	vy_client_close(c);
	lv_fake_stop(&f);
}

/* CPU time this thread spent in one call that gets no reply within 50 ms. */
static double cpu_ms_of_unanswered_ping(struct vy_client *c)
{
	struct vy_error err;
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	cr_assert_eq(vy_ping(c, &err), VY_ERROR_NO_REPLY);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

Test(fake, busy_poll_spins_before_it_sleeps_and_still_reads_replies)
{
	/* 40 ms of busy-poll in a 50 ms wait keeps the thread on the CPU; without it the wait
	 * sleeps. VYRE_BUSY_POLL_US sets it at connect, vy_client_set_busy_poll afterwards. */
	struct lv_fake f;
	lv_fake_start(&f);
	setenv("VYRE_BUSY_POLL_US", "40000", 1);
	struct vy_client *c = lv_fake_connect(&f);
	unsetenv("VYRE_BUSY_POLL_US");
	vy_client_set_timeout(c, 50);
	double spun = cpu_ms_of_unanswered_ping(c);
	cr_assert_geq(spun, 10.0, "%.1f ms of CPU while busy-polling", spun);
	vy_client_set_busy_poll(c, 0);
	double slept = cpu_ms_of_unanswered_ping(c);
	cr_assert_lt(slept, 5.0, "%.1f ms of CPU while sleeping", slept);
	/* A reply that comes while the call spins is read. */
	vy_client_set_busy_poll(c, 40000);
	vy_client_set_timeout(c, -1);
	struct vy_error err;
	uint64_t id = 0;
	lv_ok(vy_call_start(c, "ping", NULL, NULL, &id, &err), &err);
	for (int i = 0; i < 2; i++) {
		lv_fake_request(&f, NULL, 0); /* the two pings that timed out */
	}
	cr_assert_eq(lv_fake_request(&f, NULL, 0), id);
	lv_fake_ok(&f, id);
	lv_ok(vy_client_wait(c, id, -1, NULL, &err), &err);
	vy_client_close(c);
	lv_fake_stop(&f);
}

Test(fake, surfaces_an_unknown_error_code_unchanged)
{
	struct lv_fake f;
	lv_fake_start(&f);
	struct vy_client *c = lv_fake_connect(&f);
	struct vy_error err;
	uint64_t id = call_seen(&f, c, "stats");

	msgpack_sbuffer sb;
	msgpack_packer pk;
	begin_failure(&sb, &pk, id);
	msgpack_pack_map(&pk, 7);
	msgpack_pack_str_with_body(&pk, "code", 4);
	msgpack_pack_str_with_body(&pk, "NEWER_CODE", 10);
	msgpack_pack_str_with_body(&pk, "num", 3);
	msgpack_pack_uint32(&pk, 1500);
	msgpack_pack_str_with_body(&pk, "message", 7);
	msgpack_pack_str_with_body(&pk, "a newer daemon said no", 22);
	msgpack_pack_str_with_body(&pk, "fix", 3);
	msgpack_pack_str_with_body(&pk, "upgrade libvyre", 15);
	msgpack_pack_str_with_body(&pk, "retry", 5);
	msgpack_pack_str_with_body(&pk, "after_fix", 9);
	msgpack_pack_str_with_body(&pk, "at", 2);
	msgpack_pack_str_with_body(&pk, "op", 2);
	msgpack_pack_str_with_body(&pk, "errors", 6);
	msgpack_pack_array(&pk, 10);
	for (int i = 0; i < 10; i++) {
		msgpack_pack_map(&pk, 3);
		msgpack_pack_str_with_body(&pk, "code", 4);
		msgpack_pack_str_with_body(&pk, "INVALID_PROGRAM", 15);
		msgpack_pack_str_with_body(&pk, "message", 7);
		msgpack_pack_str_with_body(&pk, "item", 4);
		msgpack_pack_str_with_body(&pk, "fix", 3);
		msgpack_pack_str_with_body(&pk, "fix it", 6);
	}
	lv_fake_send(&f, &sb);
	msgpack_sbuffer_destroy(&sb);

	cr_assert_eq(vy_client_wait(c, id, 5000, NULL, &err), -1500);
	cr_assert_eq(err.code, -1500);
	cr_assert_eq(err.num, 1500);
	cr_assert_str_eq(err.name, "NEWER_CODE");
	cr_assert_str_eq(err.message, "a newer daemon said no");
	cr_assert_str_eq(err.fix, "upgrade libvyre");
	cr_assert_str_eq(err.retry, "after_fix");
	cr_assert_str_eq(err.at, "op");
	cr_assert_eq(err.n_errors, 10);
	cr_assert_eq(err.errors[VY_ERROR_ITEMS_MAX - 1].code, VY_ERROR_INVALID_PROGRAM);
	cr_assert_str_eq(err.errors[VY_ERROR_ITEMS_MAX - 1].fix, "fix it");
	vy_client_close(c);
	lv_fake_stop(&f);
}

Test(fake, a_malformed_reply_ends_the_connection)
{
	struct lv_fake f;
	lv_fake_start(&f);
	struct vy_client *c = lv_fake_connect(&f);
	struct vy_error err;
	uint64_t id = call_seen(&f, c, "ping");
	/* One frame of 3 bytes that is an array, not a response map. */
	static const uint8_t junk[] = {0, 0, 0, 3, 0x92, 0x01, 0x02};
	lv_fake_send_raw(&f, junk, sizeof(junk));
	cr_assert_eq(vy_client_wait(c, id, 5000, NULL, &err), VY_ERROR_DISCONNECTED);
	cr_assert(strstr(err.message, "did not decode"), "%s", err.message);
	cr_assert_not(vy_client_connected(c));
	cr_assert_eq(vy_client_fd(c), -1);
	cr_assert_eq(vy_ping(c, &err), VY_ERROR_DISCONNECTED);
	cr_assert_str_eq(err.retry, "reconnect");
	cr_assert(strstr(err.fix, "vy_client_reconnect"), "%s", err.fix);
	vy_client_close(c);
	lv_fake_stop(&f);
}

Test(fake, reports_the_last_words_of_a_daemon_that_hangs_up)
{
	struct lv_fake f;
	lv_fake_start(&f);
	struct vy_client *c = lv_fake_connect(&f);
	struct vy_error err;
	uint64_t id = call_seen(&f, c, "ping");
	msgpack_sbuffer sb;
	msgpack_packer pk;
	begin_failure(&sb, &pk, 0);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "code", 4);
	msgpack_pack_str_with_body(&pk, "BAD_FRAME", 9);
	msgpack_pack_str_with_body(&pk, "message", 7);
	msgpack_pack_str_with_body(&pk, "frame too long", 14);
	lv_fake_send(&f, &sb);
	msgpack_sbuffer_destroy(&sb);
	lv_fake_hang_up(&f);
	cr_assert_eq(vy_client_wait(c, id, 5000, NULL, &err), VY_ERROR_DISCONNECTED);
	cr_assert(strstr(err.message, "BAD_FRAME: frame too long"), "%s", err.message);
	vy_client_close(c);
	lv_fake_stop(&f);
}
