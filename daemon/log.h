/*
 * The daemon's log: one line per event on stderr, each starting with the syslog priority in
 * angle brackets ("<4>"), which journald reads as the line's level (sd-daemon(3)). Run in the
 * foreground on a terminal (--foreground), lines carry a time stamp and the level's name instead.
 *
 * Thread-safety: every function may be called from any thread; one line is one write(2), so the
 * lines of different threads never interleave.
 */
#ifndef VY_DAEMON_LOG_H
#define VY_DAEMON_LOG_H

#include <stdbool.h>

#include "err.h"

enum vy_log_level {
	VY_LOG_ERR = 3,
	VY_LOG_WARNING = 4,
	VY_LOG_NOTICE = 5,
	VY_LOG_INFO = 6,
	VY_LOG_DEBUG = 7,
};

/* Log lines up to `level`; `plain` writes time stamps and level names instead of <N>. */
void vy_log_setup(enum vy_log_level level, bool plain);
void vy_log_set_level(enum vy_log_level level);
enum vy_log_level vy_log_get_level(void);

/* The level named "err", "warning", "notice", "info" or "debug", or -1. */
int vy_log_level_parse(const char *name);
const char *vy_log_level_name(enum vy_log_level level);

void vy_log(enum vy_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "<what>: <message> (at <at>). Fix: <fix>" for an error a user can act on. */
void vy_log_err(enum vy_log_level level, const struct vy_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
