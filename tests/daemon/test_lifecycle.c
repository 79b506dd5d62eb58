/*
 * Life of the daemon: restart with a warm disk cache, systemd notifications, socket activation,
 * the socket file (live and stale), SIGHUP reload, --check, configuration errors, --help and
 * --version.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

TestSuite(lifecycle, .timeout = 240);

static int dispatch_cache(struct tc *c, const struct vy_program *p, char *cache, size_t size)
{
	struct t_inputs in;
	t_inputs_make(p, 0, 3, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	struct tc_reply r;
	cr_assert_eq(t_dispatch(c, p, &in, &r), 0);
	int code = tc_code(&r);
	if (code == 0) {
		cr_expect(t_outputs_equal(&r, &want));
		tc_str(&r, "cache", cache, size);
	} else {
		cr_log_error("dispatch: %s", r.r.error.message);
	}
	tc_reply_free(&r);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	return code;
}

/*
 * Dispatch a program, restart the daemon on the same cache with `config`, and dispatch the
 * program again (sent whole): its pipeline was built before that dispatch (`warm`: at the
 * daemon's start) or by it, from the disk cache either way, which the first dispatch after the
 * restart reports ("disk"); then the stats count one restored program and one pipeline built
 * from the disk cache.
 */
static void restart_dispatch(const char *name, const char *config, bool warm)
{
	struct vyd before;
	t_start(&before, "");
	struct tc c;
	tc_open(&c, before.sock, "before");
	struct vy_program *p = tc_program_renamed("vector_add", name);
	char cache[16] = "";
	cr_assert_eq(dispatch_cache(&c, p, cache, sizeof(cache)), 0);
	cr_expect_str_eq(cache, "miss");
	tc_close(&c);
	cr_assert_eq(vyd_stop(&before), 0);

	struct vyd after;
	struct vyd_opts o = {.cache = before.cache, .config = config};
	cr_assert_eq(vyd_start(&after, &o), 0);
	tc_open(&c, after.sock, "after");
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	uint64_t built = 0;
	cr_expect(tc_u64(&r, "pipeline_cache.compiles", &built) && built == (warm ? 1 : 0),
		"%lu pipelines built before the first request", (unsigned long)built);
	tc_reply_free(&r);
	cr_assert_eq(dispatch_cache(&c, p, cache, sizeof(cache)), 0);
	cr_expect_str_eq(cache, "disk", "the first dispatch after a restart");
	cr_assert_eq(dispatch_cache(&c, p, cache, sizeof(cache)), 0);
	cr_expect_str_eq(cache, "hit");
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	uint64_t restored = 0;
	uint64_t disk = 0;
	uint64_t compiles = 0;
	cr_expect(tc_u64(&r, "program_cache.restored", &restored) && restored == 1);
	cr_expect(tc_u64(&r, "pipeline_cache.disk_hits", &disk) && disk == 1);
	cr_expect(tc_u64(&r, "pipeline_cache.compiles", &compiles) && compiles == 1);
	tc_reply_free(&r);
	tc_close(&c);
	vy_program_destroy(p);
	t_stop(&after);
	vyd_cleanup(&before);
}

Test(lifecycle, a_restart_builds_known_pipelines_from_disk_before_it_is_ready)
{
	restart_dispatch("warm", "", true);
}

Test(lifecycle, a_restart_without_warm_pipelines_serves_known_programs_from_disk)
{
	restart_dispatch("restart", "[cache]\nwarm_pipelines = 0\n", false);
}

Test(lifecycle, systemd_hears_ready_watchdog_and_stopping)
{
	struct vyd d;
	struct vyd_opts o = {.watchdog = true};
	cr_assert_eq(vyd_start(&d, &o), 0);
	cr_expect(vyd_note(&d, "READY=1", 0));
	cr_expect(vyd_note(&d, "WATCHDOG=1", 5000), "a watchdog ping within 5 s");
	bool status_line = vyd_note_prefix(&d, "STATUS=");
	for (int i = 0; i < 100 && !status_line; i++) {
		usleep(50000);
		status_line = vyd_note_prefix(&d, "STATUS=");
	}
	cr_expect(status_line, "a STATUS line within 5 s");
	kill(d.pid, SIGTERM);
	cr_expect(vyd_note(&d, "STOPPING=1", 30000));
	int status = vyd_wait(&d, 120000);
	cr_expect_eq(status, 0);
	vyd_cleanup(&d);
}

Test(lifecycle, a_service_manager_that_stops_reading_does_not_stop_the_daemon)
{
	/* Watchdog pings every 200 ms into a notify socket nobody reads: its queue (ten
	 * datagrams on Linux by default) is full within about two seconds. */
	struct vyd d;
	struct vyd_opts o = {.watchdog = true, .deaf = true, .no_wait = true};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	int rc = -1;
	for (int i = 0; i < 200 && rc != 0; i++) {
		usleep(50000);
		rc = tc_connect(&c, d.sock);
	}
	cr_assert_eq(rc, 0, "the daemon never listened");
	cr_assert_eq(tc_hello(&c, "deaf-manager"), 0);
	for (int i = 0; i < 8; i++) {
		sleep(1);
		struct tc_reply r;
		cr_assert_eq(t_simple(&c, VY_OP_PING, &r), 0, "no answer after %d s", i + 1);
		cr_expect(r.r.ok);
		tc_reply_free(&r);
	}
	tc_close(&c);
	/* STOPPING=1 would wait on the full queue: the manager is gone, so is the daemon. */
	kill(d.pid, SIGKILL);
	vyd_wait(&d, 10000);
	vyd_cleanup(&d);
}

Test(lifecycle, socket_activation_hands_over_the_listening_socket)
{
	if (system("command -v systemd-socket-activate >/dev/null 2>&1") != 0) {
		cr_skip_test("systemd-socket-activate is not installed");
	}
	struct vyd d;
	struct vyd_opts o = {.activation = true};
	cr_assert_eq(vyd_start(&d, &o), 0);
	/* systemd-socket-activate binds the socket at once and starts vyred on the first
	 * connection, which then waits in the backlog until vyred accepts it. */
	struct tc c;
	int rc = -1;
	for (int i = 0; i < 200 && rc != 0; i++) {
		rc = tc_connect(&c, d.sock);
		if (rc) {
			usleep(20000);
		}
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(tc_hello(&c, "activated"), 0);
	cr_expect(vyd_note(&d, "READY=1", 60000));
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	char socket[64] = "";
	cr_expect(tc_str(&r, "daemon.socket", socket, sizeof(socket)));
	cr_expect_str_eq(socket, "(socket activation)");
	tc_reply_free(&r);
	tc_close(&c);
	int status = vyd_stop(&d);
	if (status) {
		vyd_dump_log(&d);
	}
	cr_expect_eq(status, 0);
	vyd_cleanup(&d);
}

Test(lifecycle, a_live_socket_is_never_stolen)
{
	struct vyd d;
	t_start(&d, "");
	/* The second daemon runs in its own folder, pointed at the first one's socket. */
	struct vyd intruder;
	const char *args[] = {"--socket", d.sock, NULL};
	struct vyd_opts o2 = {.no_wait = true, .args = args};
	cr_assert_eq(vyd_start(&intruder, &o2), 0);
	int status = vyd_wait(&intruder, 120000);
	cr_expect_eq(status, 1, "the second daemon refuses to start");
	cr_expect(vyd_log_has(&intruder, "another daemon is listening"));
	vyd_cleanup(&intruder);
	struct tc c;
	tc_open(&c, d.sock, "still-served");
	tc_close(&c);
	t_stop(&d);
}

Test(lifecycle, a_stale_socket_is_replaced)
{
	char dir[] = "/tmp/vyred-stale-XXXXXX";
	cr_assert(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/stale.sock", dir);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%.100s", path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	close(fd);
	const char *args[] = {"--socket", path, NULL};
	struct vyd d;
	struct vyd_opts o = {.args = args};
	cr_assert_eq(vyd_start(&d, &o), 0);
	cr_expect(vyd_log_has(&d, "stale socket"));
	struct tc c;
	tc_open(&c, path, "after-stale");
	tc_close(&c);
	t_stop(&d);
	cr_expect_neq(access(path, F_OK), 0, "the socket file is removed at exit");
	rmdir(dir);
}

Test(lifecycle, sighup_reloads_limits)
{
	struct vyd d;
	t_start(&d, "[limits]\nmax_inflight = 64\n");
	FILE *f = fopen(d.conf, "w");
	fputs("[limits]\nmax_inflight = 7\n[daemon]\nsocket_mode = 0600\n", f);
	fclose(f);
	kill(d.pid, SIGHUP);
	cr_expect(vyd_note(&d, "RELOADING=1", 30000));
	struct tc c;
	uint64_t limit = 0;
	for (int i = 0; i < 100 && limit != 7; i++) {
		usleep(20000);
		cr_assert_eq(tc_connect(&c, d.sock), 0);
		struct tc_msg m;
		tc_begin(&c, &m, VY_OP_HELLO, 1);
		vy_pack_cstr(&m.pk, "protocol");
		msgpack_pack_uint32(&m.pk, 1);
		struct tc_reply r;
		cr_assert_eq(tc_call(&c, &m, &r), 0);
		tc_u64(&r, "limits.max_inflight", &limit);
		tc_reply_free(&r);
		tc_close(&c);
	}
	cr_expect_eq(limit, 7);
	cr_expect(vyd_log_has(&d, "socket_mode changed"), "a key that needs a restart is named");

	/* A broken file is reported and the running configuration stays. */
	f = fopen(d.conf, "w");
	fputs("[limits]\nmax_inflight = many\n", f);
	fclose(f);
	kill(d.pid, SIGHUP);
	bool reported = false;
	for (int i = 0; i < 200 && !reported; i++) {
		usleep(20000);
		reported = vyd_log_has(&d, "was not reloaded");
	}
	cr_expect(reported);
	tc_open(&c, d.sock, "after-bad-reload");
	tc_close(&c);
	t_stop(&d);
}

static int run_capture(const char *const *argv, char *out, size_t size)
{
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	size_t n = 0;
	ssize_t k;
	while (n < size - 1 && (k = read(pipefd[0], out + n, size - 1 - n)) > 0) {
		n += (size_t)k;
	}
	out[n] = '\0';
	close(pipefd[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Test(lifecycle, check_prints_named_checks_with_fixes)
{
	char dir[] = "/tmp/vyred-check-XXXXXX";
	cr_assert(mkdtemp(dir));
	char sock[128];
	char cache[128];
	char missing[128];
	snprintf(sock, sizeof(sock), "%s/vyred.sock", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(missing, sizeof(missing), "%s/no/such/dir/vyred.sock", dir);
	const char *backend = vyd_backend() ? vyd_backend() : "auto";
	static char out[16384];
	const char *ok[] = {vyd_bin(), "--check", "--config", "/dev/null", "--socket", sock,
		"--cache-dir", cache, "--backend", backend, NULL};
	int status = run_capture(ok, out, sizeof(out));
	cr_expect_eq(status, 0, "%s", out);
	static const char *const names[] = {
		"configuration", "vulkan loader", "device", "shaderc", "socket dir", "cache dir"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cr_expect(strstr(out, names[i]), "no check named %s in:\n%s", names[i], out);
	}
	const char *bad[] = {vyd_bin(), "--check", "--config", "/dev/null", "--socket", missing,
		"--cache-dir", cache, "--backend", backend, NULL};
	status = run_capture(bad, out, sizeof(out));
	cr_expect_eq(status, 1, "%s", out);
	cr_expect(strstr(out, "FAIL") && strstr(out, "Fix: "), "%s", out);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(lifecycle, configuration_errors_name_the_line)
{
	struct vyd d;
	struct vyd_opts o = {
		.config = "[limits]\nmax_inflight = 4\nmax_inflihgt = 5\n", .no_wait = true};
	cr_assert_eq(vyd_start(&d, &o), 0);
	int status = vyd_wait(&d, 60000);
	cr_expect_eq(status, 1);
	cr_expect(vyd_log_has(&d, "vyred.conf:3"), "the log names the file and line");
	cr_expect(vyd_log_has(&d, "max_inflihgt"));
	cr_expect(vyd_log_has(&d, "Fix: "));
	vyd_cleanup(&d);
}

Test(lifecycle, help_and_version)
{
	static char out[32768];
	const char *help[] = {vyd_bin(), "--help", NULL};
	cr_expect_eq(run_capture(help, out, sizeof(out)), 0);
	cr_expect(strstr(out, "max_inflight") && strstr(out, "--socket"), "%s", out);
	const char *version[] = {vyd_bin(), "--version", NULL};
	cr_expect_eq(run_capture(version, out, sizeof(out)), 0);
	cr_expect(strncmp(out, "vyred ", 6) == 0, "%s", out);
	const char *wrong[] = {vyd_bin(), "--no-such-flag", NULL};
	cr_expect_eq(run_capture(wrong, out, sizeof(out)), 2);
}
