/*
 * Log lines for journald or a terminal. Each line is formatted into a local buffer and written
 * with a single write(2), which keeps lines whole when several threads log at once.
 */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int max_level = VY_LOG_INFO;
static bool plain_output;

static const char *const level_names[] = {
	[VY_LOG_ERR] = "err",
	[VY_LOG_WARNING] = "warning",
	[VY_LOG_NOTICE] = "notice",
	[VY_LOG_INFO] = "info",
	[VY_LOG_DEBUG] = "debug",
};

void vy_log_setup(enum vy_log_level level, bool plain)
{
	atomic_store(&max_level, (int)level);
	plain_output = plain;
}

void vy_log_set_level(enum vy_log_level level)
{
	atomic_store(&max_level, (int)level);
}

enum vy_log_level vy_log_get_level(void)
{
	return (enum vy_log_level)atomic_load(&max_level);
}

int vy_log_level_parse(const char *name)
{
	for (int i = VY_LOG_ERR; i <= VY_LOG_DEBUG; i++) {
		if (strcmp(level_names[i], name) == 0) {
			return i;
		}
	}
	return -1;
}

const char *vy_log_level_name(enum vy_log_level level)
{
	return level >= VY_LOG_ERR && level <= VY_LOG_DEBUG ? level_names[level] : "?";
}

static void emit(enum vy_log_level level, const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void emit(enum vy_log_level level, const char *prefix, const char *fmt, va_list ap)
{
	char line[2048];
	size_t n;
	if (plain_output) {
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n = strftime(line, sizeof(line), "%H:%M:%S", &tm);
		n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ld vyred %s: %s",
			ts.tv_nsec / 1000000, vy_log_level_name(level), prefix);
	} else {
		n = (size_t)snprintf(line, sizeof(line), "<%d>%s", (int)level, prefix);
	}
	if (n < sizeof(line)) {
		int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		n = m < 0 ? n : n + (size_t)m;
	}
	if (n > sizeof(line) - 2) {
		n = sizeof(line) - 2;
	}
	/* Messages carry what clients sent (names, labels, fields). A newline would start a line
	 * that journald reads with a priority the client chose, and other control characters
	 * (carriage returns, terminal escapes) would rewrite what an operator sees: every one
	 * becomes a space. */
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)line[i];
		if (ch < 0x20 || ch == 0x7f) {
			line[i] = ' ';
		}
	}
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, n);
	(void)w;
}

void vy_log(enum vy_log_level level, const char *fmt, ...)
{
	if ((int)level > atomic_load(&max_level)) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	emit(level, "", fmt, ap);
	va_end(ap);
}

void vy_log_err(enum vy_log_level level, const struct vy_err *err, const char *fmt, ...)
{
	if ((int)level > atomic_load(&max_level)) {
		return;
	}
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	char text[VY_ERR_MESSAGE_MAX + VY_ERR_FIX_MAX + VY_ERR_AT_MAX + 32];
	vy_log(level, "%s: %s", what, vy_err_format(err, text, sizeof(text)));
}
