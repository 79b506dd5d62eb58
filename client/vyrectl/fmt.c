/*
 * Short human renderings of vyrectl's figures: byte counts in binary units, nanoseconds in the
 * largest unit that keeps them above 1, and uptimes in days, hours, minutes and seconds. Apart
 * from the tables so that the suite can test them at their edges.
 */
#include <inttypes.h>
#include <stdio.h>

#include "vyrectl.h"

char *ctl_fmt_bytes(uint64_t bytes, char *buf)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (bytes < 1024) {
		snprintf(buf, CTL_FMT_MAX, "%" PRIu64 " B", bytes);
		return buf;
	}
	double v = (double)bytes;
	size_t u = 0;
	for (v /= 1024.0; v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0]); v /= 1024.0) {
		u++;
	}
	snprintf(buf, CTL_FMT_MAX,
		v < 10.0    ? "%.2f %s"
		: v < 100.0 ? "%.1f %s"
			    : "%.0f %s",
		v, units[u]);
	return buf;
}

char *ctl_fmt_ns(uint64_t ns, char *buf)
{
	double v = (double)ns;
	if (ns < 1000) {
		snprintf(buf, CTL_FMT_MAX, "%" PRIu64 " ns", ns);
	} else if (ns < 1000000) {
		snprintf(buf, CTL_FMT_MAX, "%.1f \xc2\xb5s", v / 1e3);
	} else if (ns < UINT64_C(1000000000)) {
		snprintf(buf, CTL_FMT_MAX, "%.2f ms", v / 1e6);
	} else {
		snprintf(buf, CTL_FMT_MAX, "%.3f s", v / 1e9);
	}
	return buf;
}

char *ctl_fmt_uptime(uint64_t ms, char *buf)
{
	uint64_t s = ms / 1000;
	uint64_t d = s / 86400;
	uint64_t h = s / 3600 % 24;
	uint64_t m = s / 60 % 60;
	if (d) {
		snprintf(buf, CTL_FMT_MAX, "%" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m", d, h, m);
	} else if (h) {
		snprintf(buf, CTL_FMT_MAX, "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", h, m,
			s % 60);
	} else if (m) {
		snprintf(buf, CTL_FMT_MAX, "%" PRIu64 "m %02" PRIu64 "s", m, s % 60);
	} else {
		snprintf(buf, CTL_FMT_MAX, "%" PRIu64 ".%03" PRIu64 "s", s, ms % 1000);
	}
	return buf;
}

char *ctl_fmt_u64(uint64_t v, char *buf)
{
	snprintf(buf, CTL_FMT_MAX, "%" PRIu64, v);
	return buf;
}
