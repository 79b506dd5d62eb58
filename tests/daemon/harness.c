/*
 * Starting and stopping vyred for the tests. The daemon inherits the test's sanitizer options, so
 * a leak or an error inside it makes its exit status non-zero, which vyd_stop reports.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *vyd_bin(void)
{
	const char *b = getenv("VYRED_BIN");
	return b ? b : "vyred";
}

const char *vyd_backend(void)
{
	const char *b = getenv("VYRED_TEST_BACKEND");
	return b && *b && strcmp(b, "default") != 0 ? b : NULL;
}

const char *vyd_expected_backend(void)
{
	const char *b = getenv("VYRED_TEST_EXPECT_BACKEND");
	return vyd_backend() ? vyd_backend() : b && *b ? b : "vulkan";
}

/* Whether the options choose the backend themselves (then the daemon runs on that one). */
static bool chooses_backend(const struct vyd_opts *o)
{
	for (size_t i = 0; o->args && o->args[i]; i++) {
		if (strcmp(o->args[i], "--backend") == 0 || strcmp(o->args[i], "-b") == 0) {
			return true;
		}
	}
	const char *c = o->config;
	return c && (strncmp(c, "backend", 7) == 0 || strstr(c, "\nbackend") != NULL);
}

/* The daemon logs "device N: ID backend, ..." for each device it opened: the first must be of
 * the backend the suite runs on, so that a daemon that fell back to the reference fails. */
static int check_backend(const struct vyd *d)
{
	const char *want = vyd_expected_backend();
	char line[64];
	snprintf(line, sizeof(line), "device 0: %.32s backend,", want);
	if (vyd_log_has(d, line)) {
		return 0;
	}
	fprintf(stderr,
		"vyred did not open a %s device as its device 0 (its log has no \"%s\"). Fix: "
		"install a Vulkan driver (mesa-vulkan-drivers gives lavapipe), or set "
		"VYRED_TEST_EXPECT_BACKEND to the backend this machine has (vulkan or "
		"reference)\n",
		want, line);
	vyd_dump_log(d);
	return -1;
}

const char *vyd_shared_socket(void)
{
	return getenv("VYRED_TEST_SOCKET");
}

/*
 * The daemon's environment, made before the fork: this process has other threads, and one of
 * them may hold the allocator's lock at fork(), so the child allocates nothing before exec. It
 * only writes its pid into `watchdog_pid`.
 */
struct daemon_env {
	char **envp;
	char notify[sizeof(((struct vyd *)0)->notify) + 16];
	char watchdog_pid[40];
};

static bool env_dropped(const char *var)
{
	static const char *const names[] = {
		"NOTIFY_SOCKET=", "WATCHDOG_USEC=", "WATCHDOG_PID=", "LISTEN_FDS=", "LISTEN_PID="};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strncmp(var, names[i], strlen(names[i])) == 0) {
			return true;
		}
	}
	return false;
}

static bool daemon_env_make(struct daemon_env *e, const struct vyd *d, bool watchdog)
{
	extern char **environ;
	size_t n = 0;
	while (environ[n]) {
		n++;
	}
	e->envp = calloc(n + 4, sizeof(*e->envp));
	if (!e->envp) {
		return false;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!env_dropped(environ[i])) {
			e->envp[k++] = environ[i];
		}
	}
	snprintf(e->notify, sizeof(e->notify), "NOTIFY_SOCKET=%s", d->notify);
	e->envp[k++] = e->notify;
	if (watchdog) {
		e->envp[k++] = "WATCHDOG_USEC=400000";
		e->envp[k++] = e->watchdog_pid;
	}
	return true;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *read_notes(void *arg)
{
	struct vyd *d = arg;
	for (;;) {
		char buf[1024];
		ssize_t n = recv(d->notify_fd, buf, sizeof(buf) - 1, 0);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return NULL;
		}
		buf[n] = '\0';
		pthread_mutex_lock(&d->lock);
		/* Watchdog pings repeat; keep room for the notifications that matter. */
		bool repeat = strcmp(buf, "WATCHDOG=1") == 0 && strstr(d->notes, "WATCHDOG=1\n");
		size_t room = sizeof(d->notes) - d->notes_len - 2;
		size_t k = (size_t)n < room ? (size_t)n : room;
		if (!repeat && k) {
			memcpy(d->notes + d->notes_len, buf, k);
			d->notes_len += k;
			d->notes[d->notes_len++] = '\n';
			d->notes[d->notes_len] = '\0';
		}
		pthread_mutex_unlock(&d->lock);
	}
}

bool vyd_note_prefix(struct vyd *d, const char *prefix)
{
	pthread_mutex_lock(&d->lock);
	bool found = false;
	for (const char *p = d->notes; !found && (p = strstr(p, prefix)) != NULL; p++) {
		found = p == d->notes || p[-1] == '\n';
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

bool vyd_note(struct vyd *d, const char *note, int timeout_ms)
{
	long end = now_ms() + timeout_ms;
	for (;;) {
		bool found = false;
		pthread_mutex_lock(&d->lock);
		/* Notes are separated by newlines; match whole lines. */
		for (const char *p = d->notes; !found && (p = strstr(p, note)) != NULL; p++) {
			bool start = p == d->notes || p[-1] == '\n';
			char after = p[strlen(note)];
			found = start && (after == '\n' || after == '\0');
		}
		pthread_mutex_unlock(&d->lock);
		if (found) {
			return true;
		}
		if (now_ms() >= end) {
			return false;
		}
		usleep(10000);
	}
}

int vyd_start(struct vyd *d, const struct vyd_opts *o)
{
	static const struct vyd_opts none;
	o = o ? o : &none;
	memset(d, 0, sizeof(*d));
	d->notify_fd = -1;
	snprintf(d->dir, sizeof(d->dir), "/tmp/vyred-test-XXXXXX");
	if (!mkdtemp(d->dir)) {
		return -1;
	}
	/* Tests that connect as another user must reach the socket inside. */
	chmod(d->dir, 0755);
	snprintf(d->sock, sizeof(d->sock), "%s/vyred.sock", d->dir);
	snprintf(d->conf, sizeof(d->conf), "%s/vyred.conf", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/vyred.log", d->dir);
	snprintf(d->notify, sizeof(d->notify), "%s/notify", d->dir);
	if (o->cache) {
		snprintf(d->cache, sizeof(d->cache), "%s", o->cache);
	} else {
		snprintf(d->cache, sizeof(d->cache), "%s/cache", d->dir);
		d->own_cache = true;
	}
	FILE *f = fopen(d->conf, "w");
	if (!f) {
		return -1;
	}
	fputs(o->config ? o->config : "", f);
	fclose(f);
	d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%.100s", d->notify);
	if (bind(d->notify_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		return -1;
	}
	pthread_mutex_init(&d->lock, NULL);
	d->reader_started = !o->deaf && pthread_create(&d->reader, NULL, read_notes, d) == 0;
	const char *argv[48];
	int n = 0;
	if (o->activation) {
		argv[n++] = "systemd-socket-activate";
		argv[n++] = "-l";
		argv[n++] = d->sock;
		argv[n++] = "-E";
		argv[n++] = "NOTIFY_SOCKET";
		argv[n++] = "-E";
		argv[n++] = "ASAN_OPTIONS";
		argv[n++] = "-E";
		argv[n++] = "UBSAN_OPTIONS";
		argv[n++] = "-E";
		argv[n++] = "LSAN_OPTIONS";
	}
	argv[n++] = vyd_bin();
	argv[n++] = "--config";
	argv[n++] = d->conf;
	if (!o->activation) {
		argv[n++] = "--socket";
		argv[n++] = d->sock;
	}
	argv[n++] = "--cache-dir";
	argv[n++] = d->cache;
	argv[n++] = "--log-level";
	argv[n++] = "debug";
	if (vyd_backend()) {
		argv[n++] = "--backend";
		argv[n++] = vyd_backend();
	}
	for (size_t i = 0; o->args && o->args[i] && n < 46; i++) {
		argv[n++] = o->args[i];
	}
	argv[n] = NULL;
	struct daemon_env env;
	if (!daemon_env_make(&env, d, o->watchdog)) {
		return -1;
	}
	d->pid = fork();
	if (d->pid == 0) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		dup2(fd, STDERR_FILENO);
		dup2(fd, STDOUT_FILENO);
		snprintf(env.watchdog_pid, sizeof(env.watchdog_pid), "WATCHDOG_PID=%d",
			(int)getpid());
		execvpe(argv[0], (char *const *)argv, env.envp);
		char failed[400];
		int len = snprintf(failed, sizeof(failed), "exec %s: errno %d\n", argv[0], errno);
		size_t told_len = len < 0                        ? 0
				  : (size_t)len < sizeof(failed) ? (size_t)len
								 : sizeof(failed) - 1;
		ssize_t told = write(STDERR_FILENO, failed, told_len);
		_exit(told < 0 ? 126 : 127);
	}
	free(env.envp);
	if (d->pid < 0) {
		return -1;
	}
	if (o->no_wait || o->activation) {
		return 0;
	}
	if (!vyd_note(d, "READY=1", 120000)) {
		fprintf(stderr, "vyred did not become ready\n");
		vyd_dump_log(d);
		return -1;
	}
	return chooses_backend(o) ? 0 : check_backend(d);
}

int vyd_wait(struct vyd *d, int timeout_ms)
{
	long end = now_ms() + timeout_ms;
	int status = 0;
	for (;;) {
		pid_t r = waitpid(d->pid, &status, WNOHANG);
		if (r == d->pid) {
			break;
		}
		if (now_ms() > end) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &status, 0);
			d->pid = 0;
			return -1;
		}
		usleep(10000);
	}
	d->pid = 0;
	if (WIFEXITED(status)) {
		return WEXITSTATUS(status);
	}
	return 128 + WTERMSIG(status);
}

int vyd_stop(struct vyd *d)
{
	if (d->pid <= 0) {
		return -1;
	}
	kill(d->pid, SIGTERM);
	return vyd_wait(d, 120000);
}

void vyd_dump_log(const struct vyd *d)
{
	FILE *f = fopen(d->log, "r");
	if (!f) {
		return;
	}
	char line[1024];
	fprintf(stderr, "---- vyred log (%s) ----\n", d->log);
	while (fgets(line, sizeof(line), f)) {
		fputs(line, stderr);
	}
	fprintf(stderr, "---- end of log ----\n");
	fclose(f);
}

bool vyd_log_has(const struct vyd *d, const char *text)
{
	FILE *f = fopen(d->log, "r");
	if (!f) {
		return false;
	}
	char line[2048];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		found = strstr(line, text) != NULL;
	}
	fclose(f);
	return found;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void remove_tree(const char *path)
{
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

void vyd_cleanup(struct vyd *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
	if (d->reader_started) {
		/* shutdown wakes the reader's recv; then the socket can go. */
		shutdown(d->notify_fd, SHUT_RDWR);
		pthread_join(d->reader, NULL);
		d->reader_started = false;
		pthread_mutex_destroy(&d->lock);
	}
	if (d->notify_fd >= 0) {
		close(d->notify_fd);
		d->notify_fd = -1;
	}
	/* A reused cache lives in another daemon's folder and goes with that one. */
	remove_tree(d->dir);
}
