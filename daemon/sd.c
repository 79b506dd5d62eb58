/*
 * systemd integration through libsystemd (sd-daemon(3)): socket activation, readiness and status
 * notifications and the watchdog. Every call is a no-op outside systemd (no LISTEN_FDS, no
 * NOTIFY_SOCKET), so the daemon runs the same way by hand.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

uint64_t vy_sd_watchdog_usec(void)
{
	uint64_t usec = 0;
	return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}
