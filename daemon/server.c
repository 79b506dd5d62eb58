/*
 * The server: start-up, the listening socket, signals, the housekeeping timer, reload, drain and
 * shutdown (DESIGN.md §7.7).
 *
 * Start-up order: bind (or take systemd's socket) and listen first, so that a second daemon on
 * the same path fails at once and clients that connect early wait in the backlog; then open the
 * devices and restore the disk cache; then run the loop and tell systemd READY=1.
 *
 * Socket file: an existing path is probed with connect(). A live daemon answers and is never
 * stolen from; a socket nobody listens on is stale and removed; anything that is not a socket is
 * left alone. The socket is created with socket_mode (umask set around bind, so there is no
 * window with looser bits) and chowned to socket_group. If the socket file vanishes while the
 * daemon runs, the housekeeping timer creates it (and its folder) again.
 *
 * SIGTERM or SIGINT: STOPPING=1, stop accepting, answer new requests SHUTTING_DOWN, let requests
 * in flight finish (at most drain_timeout_ms), then close every connection, stop the submit
 * threads, save the backends' pipeline caches, close every handle; uv_loop_close must succeed.
 * A second signal cuts the drain short. SIGHUP re-reads the configuration and applies what can
 * change at run time.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "disk.h"
#include "log.h"
#include "vyred.h"

#define TICK_MS 100

uint64_t vy_now_ns(void)
{
	return uv_hrtime();
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (!p) {
		abort();
	}
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* --- the socket ------------------------------------------------------------------------ */

/* 1 when a daemon answers on `path`, 0 when nobody does, -1 when the path is not a socket. */
static int probe_socket(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		return 0;
	}
	if (!S_ISSOCK(st.st_mode)) {
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return 0;
	}
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	int rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	close(fd);
	return rc == 0 ? 1 : 0;
}

static int bind_socket(struct vy_server *s, struct vy_err *err)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(path, sizeof(path), "%s", s->cfg.socket_path);
	int live = probe_socket(path);
	if (live > 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "socket_path",
			"stop the other vyred, or give this one another socket_path",
			"another daemon is listening on %s", path);
	}
	if (live < 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "socket_path",
			"remove the file or choose another socket_path",
			"%s exists and is not a socket; refusing to replace it", path);
	}
	struct stat st;
	if (lstat(path, &st) == 0) {
		vy_log(VY_LOG_NOTICE, "removing the stale socket %s (nobody listens on it)", path);
		unlink(path);
	}
	uv_pipe_init(&s->loop, &s->listener, 0);
	s->listener.data = s;
	s->listener_open = true;
	mode_t old = umask((mode_t)(~s->cfg.socket_mode & 0777));
	int rc = uv_pipe_bind(&s->listener, path);
	umask(old);
	if (rc) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "socket_path",
			"create the folder (systemd-tmpfiles does it for /run/vyred) or set "
			"socket_path",
			"bind %s: %s (%s)", path, uv_strerror(rc), uv_err_name(rc));
	}
	s->socket_bound = true;
	if (chmod(path, s->cfg.socket_mode) != 0) {
		return vy_err_set(err, VY_E_INTERNAL, "socket_mode", "check the socket folder",
			"chmod %s: %s", path, strerror(errno));
	}
	if (s->cfg.socket_group[0]) {
		struct group gr;
		struct group *found = NULL;
		char buf[4096];
		getgrnam_r(s->cfg.socket_group, &gr, buf, sizeof(buf), &found);
		if (!found) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "socket_group",
				"create the group (systemd-sysusers does it) or set socket_group",
				"group \"%s\" does not exist", s->cfg.socket_group);
		}
		if (chown(path, (uid_t)-1, found->gr_gid) != 0) {
			return vy_err_set(err, VY_E_INTERNAL, "socket_group",
				"run vyred as root or as a member of the group",
				"chown %s to group %s: %s", path, s->cfg.socket_group,
				strerror(errno));
		}
	}
	return 0;
}

static int open_listener(struct vy_server *s, struct vy_err *err)
{
	int fd;
	int rc = vy_sd_listen_fd(&fd, err);
	if (rc) {
		return rc;
	}
	if (fd >= 0) {
		uv_pipe_init(&s->loop, &s->listener, 0);
		s->listener.data = s;
		s->listener_open = true;
		rc = uv_pipe_open(&s->listener, fd);
		if (rc) {
			return vy_err_set(err, VY_E_INTERNAL, NULL, "check vyred.socket",
				"the socket from systemd cannot be used: %s", uv_strerror(rc));
		}
		s->activated = true;
	} else {
		rc = bind_socket(s, err);
		if (rc) {
			return rc;
		}
	}
	rc = uv_listen((uv_stream_t *)&s->listener, 511, vy_conn_on_connection);
	if (rc) {
		return vy_err_set(err, VY_E_INTERNAL, NULL, "check the socket path and its folder",
			"listen: %s", uv_strerror(rc));
	}
	return 0;
}

static void close_listener(struct vy_server *s)
{
	if (!s->listener_open) {
		return;
	}
	uv_close((uv_handle_t *)&s->listener, NULL);
	s->listener_open = false;
	if (s->socket_bound) {
		unlink(s->cfg.socket_path);
		s->socket_bound = false;
	}
}

/* --- a vanished socket ----------------------------------------------------------------- */

/*
 * A socket file that disappears while the daemon runs (its folder removed by hand or by a
 * cleaner of /run) would leave a healthy daemon that nobody can reach. The housekeeping timer
 * notices, closes the listener and, once libuv has released the handle, creates the folder
 * again (0755: the socket file's own mode decides who may connect) and binds the same path.
 * Established connections are not affected. A socket from systemd belongs to systemd and is
 * left alone. Between the close and its callback the handle cannot be initialized again; the
 * callback marks it free by clearing its data pointer, which bind_socket sets again.
 */
static void on_listener_released(uv_handle_t *handle)
{
	handle->data = NULL;
}

static int make_socket_dir(const char *path, struct vy_err *err)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir) {
		return 0;
	}
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0') {
			continue;
		}
		char c = *p;
		*p = '\0';
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			return vy_err_set(err, VY_E_INTERNAL, "socket_path",
				"give the daemon's user write access to the socket's parent folder",
				"cannot create %s: %s", dir, strerror(errno));
		}
		*p = c;
		if (c == '\0') {
			return 0;
		}
	}
}

static void listen_again(struct vy_server *s)
{
	struct vy_err err = {0};
	int rc = make_socket_dir(s->cfg.socket_path, &err);
	if (rc == 0) {
		rc = bind_socket(s, &err);
	}
	if (rc == 0) {
		rc = uv_listen((uv_stream_t *)&s->listener, 511, vy_conn_on_connection);
		if (rc) {
			rc = vy_err_set(&err, VY_E_INTERNAL, NULL,
				"check the socket path and its folder", "listen: %s",
				uv_strerror(rc));
		}
	}
	if (rc == 0) {
		vy_log(VY_LOG_NOTICE, "listening on %s again", s->cfg.socket_path);
		return;
	}
	vy_log_err(VY_LOG_ERR, &err, "the socket could not be created again (retrying)");
	if (s->listener_open) {
		s->listener_open = false;
		s->socket_bound = false;
		uv_close((uv_handle_t *)&s->listener, on_listener_released);
	}
}

static void check_socket(struct vy_server *s)
{
	if (s->state != VY_SERVER_RUNNING || s->activated) {
		return;
	}
	if (!s->listener_open) {
		if (s->listener.data == NULL) {
			listen_again(s);
		}
		return;
	}
	struct stat st;
	if (!s->socket_bound || lstat(s->cfg.socket_path, &st) == 0 || errno != ENOENT) {
		return;
	}
	vy_log(VY_LOG_WARNING, "the socket %s vanished; creating it again", s->cfg.socket_path);
	s->listener_open = false;
	s->socket_bound = false;
	uv_close((uv_handle_t *)&s->listener, on_listener_released);
}

/* --- admin peers ----------------------------------------------------------------------- */

static bool in_admin_group(struct vy_server *s, struct vy_conn *c)
{
	if (!s->cfg.admin_group[0]) {
		return false;
	}
	char buf[8192];
	struct group gr;
	struct group *g = NULL;
	getgrnam_r(s->cfg.admin_group, &gr, buf, sizeof(buf), &g);
	if (!g) {
		return false;
	}
	gid_t admin = g->gr_gid;
	if (c->gid == admin) {
		return true;
	}
	struct passwd pw;
	struct passwd *p = NULL;
	getpwuid_r(c->uid, &pw, buf, sizeof(buf), &p);
	if (!p) {
		return false;
	}
	gid_t groups[256];
	int n = 256;
	if (getgrouplist(p->pw_name, p->pw_gid, groups, &n) < 0) {
		n = 256;
	}
	for (int i = 0; i < n; i++) {
		if (groups[i] == admin) {
			return true;
		}
	}
	return false;
}

bool vy_server_is_admin(struct vy_server *s, struct vy_conn *c)
{
	if (c->admin < 0) {
		c->admin = c->uid == 0 || c->uid == s->uid || in_admin_group(s, c);
	}
	return c->admin == 1;
}

/* --- lifecycle ------------------------------------------------------------------------- */

static void status_line(struct vy_server *s)
{
	uint32_t in_flight = 0;
	for (struct vy_link *l = s->conns.next; l != &s->conns; l = l->next) {
		in_flight += VY_CONTAINER_OF(l, struct vy_conn, link)->in_flight;
	}
	vy_sd_notify_periodic(false,
		"STATUS=%s: %u clients, %u requests in flight, %zu pipelines cached",
		s->state == VY_SERVER_RUNNING ? "serving" : "draining", s->n_conns, in_flight,
		s->pipes.count);
}

static void stop(struct vy_server *s)
{
	if (s->state == VY_SERVER_STOPPING) {
		return;
	}
	s->state = VY_SERVER_STOPPING;
	vy_log(VY_LOG_INFO, "stopping: closing %u connections", s->n_conns);
	close_listener(s);
	vy_conn_close_all(s);
	vy_devices_stop(s);
	if (s->tick_open) {
		uv_close((uv_handle_t *)&s->tick, NULL);
		s->tick_open = false;
	}
	if (s->signals_open) {
		uv_close((uv_handle_t *)&s->sig_term, NULL);
		uv_close((uv_handle_t *)&s->sig_int, NULL);
		uv_close((uv_handle_t *)&s->sig_hup, NULL);
		s->signals_open = false;
	}
}

static bool drained(struct vy_server *s)
{
	if (s->works || !vy_devices_idle(s)) {
		return false;
	}
	for (struct vy_link *l = s->conns.next; l != &s->conns; l = l->next) {
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, link);
		if (c->in_flight || c->writes || c->corked) {
			return false;
		}
	}
	return true;
}

void vy_server_poke(struct vy_server *s)
{
	if (s->state != VY_SERVER_DRAINING) {
		return;
	}
	if (drained(s)) {
		vy_log(VY_LOG_INFO, "drain complete");
		stop(s);
	} else if (vy_now_ns() >= s->drain_deadline_ns) {
		vy_log(VY_LOG_WARNING, "drain_timeout_ms passed with requests in flight; stopping");
		stop(s);
	}
}

static void begin_drain(struct vy_server *s, const char *why)
{
	if (s->state == VY_SERVER_DRAINING) {
		vy_log(VY_LOG_NOTICE, "%s again: stopping without waiting", why);
		s->drain_deadline_ns = 0;
		vy_server_poke(s);
		return;
	}
	if (s->state != VY_SERVER_RUNNING) {
		return;
	}
	s->state = VY_SERVER_DRAINING;
	s->drain_deadline_ns = vy_now_ns() + s->cfg.drain_timeout_ms * 1000000;
	vy_sd_notify("STOPPING=1");
	vy_log(VY_LOG_NOTICE, "%s: draining (at most %" PRIu64 " ms), no new connections", why,
		s->cfg.drain_timeout_ms);
	close_listener(s);
	status_line(s);
	vy_server_poke(s);
}

static void reload(struct vy_server *s)
{
	vy_sd_notify("RELOADING=1");
	struct vy_config fresh;
	struct vy_err err = {0};
	if (vy_config_build(&fresh, s->args, &err) != 0) {
		vy_log_err(VY_LOG_ERR, &err, "SIGHUP: the configuration was not reloaded");
	} else {
		int n = vy_config_apply_reload(&s->cfg, &fresh);
		vy_log_set_level((enum vy_log_level)s->cfg.log_level);
		for (uint32_t i = 0; i < s->n_devices; i++) {
			struct vy_device *d = &s->devices[i];
			pthread_mutex_lock(&d->lock);
			d->batch_max = (uint32_t)s->cfg.batch_max;
			d->batch_cost_ns = s->cfg.batch_cost_us * 1000;
			pthread_mutex_unlock(&d->lock);
		}
		vy_conn_apply_config(s);
		vy_caches_trim(s);
		vy_log(VY_LOG_NOTICE, "SIGHUP: configuration reloaded, %d values changed", n);
	}
	vy_config_finish(&fresh);
	vy_sd_notify("READY=1");
	status_line(s);
}

static void on_signal(uv_signal_t *sig, int signum)
{
	struct vy_server *s = sig->data;
	if (signum == SIGHUP) {
		reload(s);
	} else {
		begin_drain(s, signum == SIGTERM ? "SIGTERM" : "SIGINT");
	}
}

static void on_tick(uv_timer_t *timer)
{
	struct vy_server *s = timer->data;
	uint64_t now = vy_now_ns();
	if (s->watchdog_usec && now - s->last_watchdog_ns >= s->watchdog_usec * 500) {
		vy_sd_notify_periodic(true, NULL);
		s->last_watchdog_ns = now;
	}
	if (now - s->last_sweep_ns >= 250000000) {
		s->last_sweep_ns = now;
		vy_conn_sweep(s, now);
		check_socket(s);
	}
	if (now - s->last_status_ns >= 10000000000ull) {
		s->last_status_ns = now;
		status_line(s);
	}
	vy_server_poke(s);
}

int vy_server_init(struct vy_server *s, const struct vy_config_args *args, struct vy_err *err)
{
	memset(s, 0, sizeof(*s));
	s->args = args;
	s->state = VY_SERVER_STARTING;
	s->start_ns = vy_now_ns();
	s->uid = getuid();
	vy_list_init(&s->conns);
	vy_list_init(&s->corked);
	vy_list_init(&s->users);
	vy_list_init(&s->starved);
	vy_list_init(&s->kept);
	vy_list_init(&s->reply_waiters);
	vy_list_init(&s->graphs);
	vy_caches_init(s);
	vy_resident_init(s);
	int rc = vy_config_build(&s->cfg, args, err);
	if (rc) {
		return rc;
	}
	vy_log_set_level((enum vy_log_level)s->cfg.log_level);
	/* libuv sizes its pool from this variable when the pool is first used, which is later;
	 * no other thread runs yet. */
	char threads[24];
	snprintf(threads, sizeof(threads), "%" PRIu64, s->cfg.compile_threads);
	setenv("UV_THREADPOOL_SIZE", threads, 1);
	rc = uv_loop_init(&s->loop);
	if (rc) {
		return vy_err_set(err, VY_E_INTERNAL, NULL, "check the process limits",
			"uv_loop_init: %s", uv_strerror(rc));
	}
	s->loop_open = true;
	s->read_buf = malloc(VY_READ_CHUNK);
	if (!s->read_buf) {
		abort();
	}
	rc = open_listener(s, err);
	if (rc) {
		return rc;
	}
	if (s->cfg.disk_cache) {
		/* A folder others can write is never read nor written: the daemon serves on without
		 * a disk cache, as ssh's StrictModes ignores an unsafe authorized_keys. */
		struct vy_err derr = {0};
		char *programs = join(s->cfg.cache_dir, "programs");
		char *backend = join(s->cfg.cache_dir, "vulkan");
		if (vy_disk_dir_check(s->cfg.cache_dir, &derr) == 0 &&
			vy_disk_mkdirs(programs, &derr) == 0 &&
			vy_disk_mkdirs(backend, &derr) == 0 &&
			vy_disk_key_load(s->cfg.cache_dir, true, s->disk_key, &derr) == 0) {
			s->programs_dir = programs;
			s->backend_dir = backend;
			s->disk_budget = calloc(1, sizeof(*s->disk_budget));
			if (!s->disk_budget) {
				abort();
			}
			vy_disk_budget_init(
				s->disk_budget, s->cfg.disk_cache_bytes, programs, backend);
		} else {
			vy_log_err(VY_LOG_ERR, &derr,
				"disk cache disabled: nothing is read from or written to "
				"cache_dir");
			free(programs);
			free(backend);
		}
	}
	rc = vy_devices_open(s, err);
	if (rc) {
		return rc;
	}
	vy_caches_restore(s);
	vy_caches_warm(s);
	uv_signal_init(&s->loop, &s->sig_term);
	uv_signal_init(&s->loop, &s->sig_int);
	uv_signal_init(&s->loop, &s->sig_hup);
	s->sig_term.data = s->sig_int.data = s->sig_hup.data = s;
	uv_signal_start(&s->sig_term, on_signal, SIGTERM);
	uv_signal_start(&s->sig_int, on_signal, SIGINT);
	uv_signal_start(&s->sig_hup, on_signal, SIGHUP);
	s->signals_open = true;
	uv_timer_init(&s->loop, &s->tick);
	s->tick.data = s;
	s->tick_open = true;
	s->watchdog_usec = vy_sd_watchdog_usec();
	uv_timer_start(&s->tick, on_tick, TICK_MS, TICK_MS);
	s->state = VY_SERVER_RUNNING;
	return 0;
}

int vy_server_run(struct vy_server *s)
{
	vy_log(VY_LOG_NOTICE, "vyred %s ready on %s with %u device%s (pid %d)", VY_DAEMON_VERSION,
		s->activated ? "the socket from systemd" : s->cfg.socket_path, s->n_devices,
		s->n_devices == 1 ? "" : "s", (int)getpid());
	vy_sd_notify("READY=1\nMAINPID=%d", (int)getpid());
	if (s->watchdog_usec) {
		vy_sd_notify("WATCHDOG=1");
		s->last_watchdog_ns = vy_now_ns();
	}
	status_line(s);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	return s->exit_code;
}

static void close_any(uv_handle_t *handle, void *arg)
{
	if (!uv_is_closing(handle)) {
		vy_log(VY_LOG_WARNING, "closing a %s handle left open at exit",
			uv_handle_type_name(uv_handle_get_type(handle)));
		uv_close(handle, NULL);
	}
}

void vy_server_finish(struct vy_server *s)
{
	if (s->loop_open) {
		/* A start-up that failed half way leaves handles open; close them here. */
		if (s->state != VY_SERVER_STOPPING) {
			s->state = VY_SERVER_STOPPING;
			close_listener(s);
			vy_devices_stop(s);
			if (s->tick_open) {
				uv_close((uv_handle_t *)&s->tick, NULL);
			}
			if (s->signals_open) {
				uv_close((uv_handle_t *)&s->sig_term, NULL);
				uv_close((uv_handle_t *)&s->sig_int, NULL);
				uv_close((uv_handle_t *)&s->sig_hup, NULL);
			}
		}
		uv_walk(&s->loop, close_any, NULL);
		uv_run(&s->loop, UV_RUN_DEFAULT);
	}
	vy_graph_finish(s);
	vy_caches_finish(s);
	vy_resident_finish(s);
	vy_devices_destroy(s);
	if (s->loop_open) {
		int rc = uv_loop_close(&s->loop);
		if (rc) {
			vy_log(VY_LOG_ERR, "uv_loop_close: %s; handles were left open",
				uv_strerror(rc));
			s->exit_code = 1;
		}
	}
	free(s->read_buf);
	free(s->programs_dir);
	free(s->backend_dir);
	if (s->disk_budget) {
		vy_disk_budget_finish(s->disk_budget);
		free(s->disk_budget);
	}
	vy_config_finish(&s->cfg);
}
