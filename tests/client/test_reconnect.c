/*
 * A daemon that goes away: requests in flight fail with DISCONNECTED, later calls too, and
 * vy_client_reconnect brings the client back once a daemon listens again, with its regions
 * re-attached and its old resident handles gone. The restarted daemon listens on a new folder, so
 * the client connects through a symbolic link that the test points at whichever daemon runs.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lv.h"

#define N 256

static void start(struct vyd *d, const char *config)
{
	struct vyd_opts o = {.config = config};
	int rc = vyd_start(d, &o);
	if (rc != 0) {
		vyd_cleanup(d);
	}
	cr_assert_eq(rc, 0, "vyred did not start");
}

static void stop(struct vyd *d)
{
	int status = vyd_stop(d);
	if (status != 0) {
		vyd_dump_log(d);
	}
	vyd_cleanup(d);
	cr_assert_eq(status, 0, "vyred exited with status %d", status);
}

static void point(const char *link, const char *target)
{
	unlink(link);
	cr_assert_eq(symlink(target, link), 0);
}

static void saxpy_on_region(struct vy_client *c, struct vy_region *r)
{
	struct vy_program *p = lv_program("saxpy");
	float alpha = 2.0f;
	struct vy_dispatch_input in[] = {
		vy_input_bytes(&alpha, sizeof(alpha)),
		vy_input_shm(r, 0, N * sizeof(float)),
		vy_input_shm(r, N * sizeof(float), N * sizeof(float)),
	};
	struct vy_dispatch_args args = {.program = p, .inputs = in, .n_inputs = 3};
	struct vy_reply *rep = NULL;
	struct vy_error err;
	lv_ok(vy_dispatch(c, &args, &rep, &err), &err);
	const float *y = vy_reply_output(rep, 0, NULL);
	for (int k = 0; k < N; k++) {
		cr_assert_float_eq(y[k], 2.0f * (float)k + 1.0f, 0.0f);
	}
	vy_reply_destroy(rep);
	vy_program_free(p);
}

Test(reconnect, after_a_daemon_restart)
{
	char dir[] = "/tmp/vyre-link-XXXXXX";
	cr_assert(mkdtemp(dir));
	char link[128];
	snprintf(link, sizeof(link), "%s/vyred.sock", dir);
	struct vyd first;
	start(&first, NULL);
	point(link, first.sock);

	struct vy_client *c = NULL;
	struct vy_error err;
	lv_ok(vy_client_connect(link, "lv-reconnect", &c, &err), &err);
	uint64_t pid_before = 0;
	struct vy_reply *stats = NULL;
	lv_ok(vy_stats(c, &stats, &err), &err);
	pid_before = vy_value_get_u64(vy_reply_value(stats), "daemon.pid", 0);
	vy_reply_destroy(stats);
	uint64_t h = 0;
	lv_ok(vy_buffer_alloc(c, 64, NULL, &h, &err), &err);
	struct vy_region *r = NULL;
	lv_ok(vy_region_attach(c, 2 * N * sizeof(float), &r, &err), &err);
	float *mem = vy_region_data(r);
	for (int k = 0; k < N; k++) {
		mem[k] = (float)k;
		mem[N + k] = 1.0f;
	}
	saxpy_on_region(c, r);

	stop(&first);
	cr_assert_eq(vy_ping(c, &err), VY_ERROR_DISCONNECTED);
	cr_assert_str_eq(err.name, "DISCONNECTED");
	cr_assert_str_eq(err.retry, "reconnect");
	cr_assert(strstr(err.fix, "vy_client_reconnect"), "%s", err.fix);
	cr_assert_not(vy_client_connected(c));
	cr_assert_eq(vy_ping(c, &err), VY_ERROR_DISCONNECTED, "calls keep failing until reconnect");
	/* Nobody listens yet. */
	cr_assert_eq(vy_client_reconnect(c, &err), VY_ERROR_CONNECT_FAILED);
	cr_assert(strstr(err.message, link), "%s", err.message);

	struct vyd second;
	start(&second, NULL);
	point(link, second.sock);
	lv_ok(vy_client_reconnect(c, &err), &err);
	cr_assert(vy_client_connected(c));
	lv_ok(vy_ping(c, &err), &err);
	lv_ok(vy_stats(c, &stats, &err), &err);
	cr_assert_neq(vy_value_get_u64(vy_reply_value(stats), "daemon.pid", 0), pid_before);
	vy_reply_destroy(stats);
	cr_assert_eq(vy_value_get_u64(vy_client_hello(c), "protocol", 0), 1);
	/* Resident buffers did not survive; the region did, with the same memory. */
	char back[64];
	cr_assert_eq(vy_buffer_download(c, h, 0, back, sizeof(back), &err), VY_ERROR_NOT_FOUND);
	cr_assert(err.fix[0]);
	saxpy_on_region(c, r);
	lv_ok(vy_region_detach(c, r, &err), &err);
	vy_client_close(c);
	stop(&second);
	unlink(link);
	rmdir(dir);
}

static void count_failure(struct vy_client *c, uint64_t id, struct vy_reply *reply,
	const struct vy_error *error, void *user)
{
	int *failures = user;
	if (!reply && error->code == VY_ERROR_DISCONNECTED) {
		(*failures)++;
	}
	vy_reply_destroy(reply);
}

Test(reconnect, requests_in_flight_fail_when_the_daemon_hangs_up)
{
	struct lv_fake f;
	lv_fake_start(&f);
	struct vy_client *c = lv_fake_connect(&f);
	struct vy_error err;
	int failures = 0;
	uint64_t kept = 0;
	lv_ok(vy_call_start(c, "ping", count_failure, &failures, NULL, &err), &err);
	lv_ok(vy_call_start(c, "stats", count_failure, &failures, NULL, &err), &err);
	lv_ok(vy_call_start(c, "ping", NULL, NULL, &kept, &err), &err);
	for (int k = 0; k < 3; k++) {
		lv_fake_request(&f, NULL, 0);
	}
	lv_fake_hang_up(&f);
	struct pollfd pfd = {vy_client_fd(c), POLLIN, 0};
	cr_assert_gt(poll(&pfd, 1, 5000), 0);
	cr_assert_eq(vy_client_process(c, &err), VY_ERROR_DISCONNECTED);
	cr_assert_eq(failures, 2);
	cr_assert_eq(vy_client_wait(c, kept, 0, NULL, &err), VY_ERROR_DISCONNECTED);
	cr_assert_eq(vy_client_pending(c), 0);
	cr_assert_eq(vy_client_fd(c), -1);
	vy_client_close(c);
	lv_fake_stop(&f);
}

Test(reconnect, refuses_a_request_above_the_daemons_frame_limit)
{
	struct vyd d;
	start(&d, "[limits]\nmax_frame = 64K\n");
	struct vy_client *c = NULL;
	struct vy_error err;
	lv_ok(vy_client_connect(d.sock, "lv-frame", &c, &err), &err);
	cr_assert_eq(vy_value_get_u64(vy_client_hello(c), "limits.max_frame", 0), 65536);
	uint64_t h = 0;
	lv_ok(vy_buffer_alloc(c, 128 * 1024, NULL, &h, &err), &err);
	char *big = calloc(1, 128 * 1024);
	cr_assert_eq(vy_buffer_upload(c, h, 0, big, 128 * 1024, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert(strstr(err.message, "max_frame"), "%s", err.message);
	cr_assert(strstr(err.fix, "shared-memory"), "%s", err.fix);
	lv_ok(vy_buffer_upload(c, h, 0, big, 32 * 1024, &err), &err);
	lv_ok(vy_ping(c, &err), &err);
	free(big);
	vy_client_close(c);
	stop(&d);
}
