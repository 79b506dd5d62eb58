/*
 * Starting, stopping and restarting the vyred under measurement (daemon.h). The notification
 * socket is closed once READY=1 has arrived: later notifications then fail at once in the daemon
 * instead of filling a queue nobody reads.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define READY_TIMEOUT_MS 120000
#define STOP_TIMEOUT_MS 60000

int vy_bench_daemon_init(
	struct vy_bench_daemon *d, const char *bin, const char *log, struct vy_err *err)
{
	memset(d, 0, sizeof(*d));
	d->bin = bin;
	d->log = log;
	snprintf(d->dir, sizeof(d->dir), "/tmp/vybench-XXXXXX");
	if (!mkdtemp(d->dir)) {
		d->dir[0] = '\0';
		return vy_err_set(err, VY_E_INTERNAL, "/tmp", "make /tmp writable", "mkdtemp: %s",
			strerror(errno));
	}
	snprintf(d->sock, sizeof(d->sock), "%s/vyred.sock", d->dir);
	snprintf(d->cache, sizeof(d->cache), "%s/cache", d->dir);
	snprintf(d->notify, sizeof(d->notify), "%s/notify", d->dir);
	return 0;
}

bool vy_bench_daemon_arg(struct vy_bench_daemon *d, const char *arg)
{
	if (d->n_args >= VY_BENCH_DAEMON_ARGS_MAX) {
		return false;
	}
	d->args[d->n_args++] = arg;
	return true;
}

bool vy_bench_daemon_args(
	struct vy_bench_daemon *d, const char *devices, const char *const *sets, size_t n_sets)
{
	/* Room for the transfer and stream figures' large inputs and buffers. */
	const char *args[] = {"--device", devices, "--backend", "vulkan", "--log-level", "notice",
		"--set", "max_frame=1G", "--set", "resident_quota=8G"};
	bool ok = true;
	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		ok = ok && vy_bench_daemon_arg(d, args[i]);
	}
	for (size_t i = 0; i < n_sets; i++) {
		ok = ok && vy_bench_daemon_arg(d, "--set") && vy_bench_daemon_arg(d, sets[i]);
	}
	return ok;
}

static int notify_open(const struct vy_bench_daemon *d, struct vy_err *err)
{
	unlink(d->notify);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", d->notify);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		int e = errno;
		if (fd >= 0) {
			close(fd);
		}
		return vy_err_set(err, VY_E_INTERNAL, d->notify, "make /tmp writable",
			"notification socket: %s", strerror(e));
	}
	return fd;
}

/* In the child: log to the file, learn of our death, and become vyred. */
static void exec_daemon(const struct vy_bench_daemon *d)
{
	int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		dup2(fd, STDERR_FILENO);
		dup2(fd, STDOUT_FILENO);
	}
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	setenv("NOTIFY_SOCKET", d->notify, 1);
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("WATCHDOG_USEC");
	const char *argv[VY_BENCH_DAEMON_ARGS_MAX + 8];
	size_t n = 0;
	argv[n++] = d->bin;
	argv[n++] = "--socket";
	argv[n++] = d->sock;
	argv[n++] = "--cache-dir";
	argv[n++] = d->cache;
	for (size_t i = 0; i < d->n_args; i++) {
		argv[n++] = d->args[i];
	}
	argv[n] = NULL;
	execv(d->bin, (char *const *)argv);
	fprintf(stderr, "vybench: exec %s: %s\n", d->bin, strerror(errno));
	_exit(127);
}

/* Wait for READY=1 on `fd` while the daemon lives. */
static int wait_ready(struct vy_bench_daemon *d, int fd, struct vy_err *err)
{
	uint64_t start = vy_bench_now_ns();
	for (;;) {
		int status;
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			d->pid = 0;
			return vy_err_set(err, VY_E_INTERNAL, d->bin,
				"read the daemon's log and fix what it names",
				"vyred exited (status %d) before it was ready; its log is %s",
				WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
				d->log);
		}
		uint64_t waited = (vy_bench_now_ns() - start) / 1000000;
		if (waited > READY_TIMEOUT_MS) {
			return vy_err_set(err, VY_E_TIMEOUT, d->bin,
				"read the daemon's log and fix what it names",
				"vyred sent no READY=1 within %d s; its log is %s",
				READY_TIMEOUT_MS / 1000, d->log);
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0) {
			continue;
		}
		char buf[4096];
		ssize_t len = recv(fd, buf, sizeof(buf) - 1, 0);
		if (len <= 0) {
			continue;
		}
		buf[len] = '\0';
		/* One datagram may hold several newline-separated assignments. */
		char *save = NULL;
		for (char *line = strtok_r(buf, "\n", &save); line;
			line = strtok_r(NULL, "\n", &save)) {
			if (strcmp(line, "READY=1") == 0) {
				d->ready_ns = vy_bench_now_ns() - start;
				return 0;
			}
		}
	}
}

int vy_bench_daemon_start(struct vy_bench_daemon *d, struct vy_err *err)
{
	int fd = notify_open(d, err);
	if (fd < 0) {
		return fd;
	}
	d->pid = fork();
	if (d->pid < 0) {
		int e = errno;
		d->pid = 0;
		close(fd);
		return vy_err_set(err, VY_E_INTERNAL, NULL, "raise the process limit", "fork: %s",
			strerror(e));
	}
	if (d->pid == 0) {
		exec_daemon(d);
	}
	int rc = wait_ready(d, fd, err);
	close(fd);
	unlink(d->notify);
	return rc;
}

int vy_bench_daemon_stop(struct vy_bench_daemon *d, struct vy_err *err)
{
	if (d->pid <= 0) {
		return 0;
	}
	kill(d->pid, SIGTERM);
	uint64_t start = vy_bench_now_ns();
	int status = 0;
	while (waitpid(d->pid, &status, WNOHANG) != d->pid) {
		if ((vy_bench_now_ns() - start) / 1000000 > STOP_TIMEOUT_MS) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &status, 0);
			d->pid = 0;
			return vy_err_set(err, VY_E_TIMEOUT, d->bin,
				"read the daemon's log for what kept it from stopping",
				"vyred did not stop within %d s of SIGTERM; its log is %s",
				STOP_TIMEOUT_MS / 1000, d->log);
		}
		usleep(10000);
	}
	d->pid = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		return vy_err_set(err, VY_E_INTERNAL, d->bin,
			"read the daemon's log for why it failed to stop cleanly",
			"vyred stopped with status %d; its log is %s",
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), d->log);
	}
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

void vy_bench_daemon_finish(struct vy_bench_daemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
	if (d->dir[0]) {
		nftw(d->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
		d->dir[0] = '\0';
	}
}
