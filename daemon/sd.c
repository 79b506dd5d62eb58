/*
 * systemd integration through libsystemd (sd-daemon(3)): socket activation, readiness and status
 * notifications and the watchdog. Every call is a no-op outside systemd (no LISTEN_FDS, no
 * NOTIFY_SOCKET), so the daemon runs the same way by hand.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "vyred.h"

int vy_sd_listen_fd(int *fd, struct vy_err *err)
{
	*fd = -1;
	int n = sd_listen_fds(1);
	if (n < 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"check LISTEN_FDS and LISTEN_PID in the service's environment",
			"reading the sockets systemd passed failed: %s", strerror(-n));
	}
	if (n == 0) {
		return 0;
	}
	if (n > 1) {
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
			"give vyred.socket exactly one ListenStream= line",
			"systemd passed %d sockets; vyred listens on one", n);
	}
	if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
			"make vyred.socket a ListenStream= on a file system path",
			"the socket systemd passed is not a listening Unix stream socket");
	}
	*fd = SD_LISTEN_FDS_START;
	return 0;
}

void vy_sd_notify(const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	sd_notify(0, text);
}

/*
 * The periodic notifications, STATUS= lines and watchdog pings, go out from one thread of their
 * own: sd_notify sends a datagram and waits while the receiver's queue is full (ten datagrams by
 * default), so a service manager that stops reading would otherwise stop the event loop with
 * it. The loop only leaves the latest status and a ping here; the thread sends what it finds,
 * and when it is stuck the loop goes on and later statuses replace the waiting one.
 */
static pthread_mutex_t periodic_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t periodic_cond = PTHREAD_COND_INITIALIZER;
static char periodic_status[512];
static bool periodic_ping;
static bool periodic_started;

static void *periodic_sender(void *arg)
{
	(void)arg;
	for (;;) {
		char text[sizeof(periodic_status) + 16];
		pthread_mutex_lock(&periodic_lock);
		while (!periodic_ping && periodic_status[0] == '\0') {
			pthread_cond_wait(&periodic_cond, &periodic_lock);
		}
		snprintf(text, sizeof(text), "%s%s%s", periodic_ping ? "WATCHDOG=1" : "",
			periodic_ping && periodic_status[0] ? "\n" : "", periodic_status);
		periodic_ping = false;
		periodic_status[0] = '\0';
		pthread_mutex_unlock(&periodic_lock);
		sd_notify(0, text);
	}
	return NULL;
}

void vy_sd_notify_periodic(bool ping, const char *fmt, ...)
{
	if (!getenv("NOTIFY_SOCKET")) {
		return;
	}
	pthread_mutex_lock(&periodic_lock);
	if (!periodic_started) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		periodic_started = pthread_create(&t, &attr, periodic_sender, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!periodic_started) {
		/* No thread: the loop keeps its statuses rather than risk waiting on the send. */
		pthread_mutex_unlock(&periodic_lock);
		return;
	}
	periodic_ping = periodic_ping || ping;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(periodic_status, sizeof(periodic_status), fmt, ap);
		va_end(ap);
	}
	pthread_cond_signal(&periodic_cond);
	pthread_mutex_unlock(&periodic_lock);
}

uint64_t vy_sd_watchdog_usec(void)
{
	uint64_t usec = 0;
	return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}
