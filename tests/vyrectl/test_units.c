/*
 * vyrectl's renderings on their own, at their edges: the human formats of byte counts,
 * durations and uptimes (fmt.c), and the Prometheus text of a stats tree built here (prometheus.c)
 * with figures in every form a daemon may send them, integers and floats. A running daemon's
 * figures are whatever its timing gives and come as integers, so only this test can pin them.
 * test_vyrectl.sh runs it first.
 */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "session.h"
#include "vyrectl.h"

/* vyrectl's allocator lives in main.c, which this test does not link; the same contract. */
void *ctl_realloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);
	cr_assert(q, "out of memory");
	return q;
}

Test(fmt, byte_counts_switch_unit_at_1024)
{
	static const struct {
		uint64_t bytes;
		const char *want;
	} cases[] = {
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1.00 KiB"},
		{1536, "1.50 KiB"},
		{10 * 1024, "10.0 KiB"},
		{100 * 1024, "100 KiB"},
		{1048575, "1024 KiB"},
		{1048576, "1.00 MiB"},
		{UINT64_C(5) << 30, "5.00 GiB"},
		{UINT64_MAX, "16.0 EiB"},
	};
	char buf[CTL_FMT_MAX];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_str_eq(ctl_fmt_bytes(cases[i].bytes, buf), cases[i].want, "%llu bytes",
			(unsigned long long)cases[i].bytes);
	}
}

Test(fmt, durations_switch_unit_at_each_thousand)
{
	static const struct {
		uint64_t ns;
		const char *want;
	} cases[] = {
		{0, "0 ns"},
		{999, "999 ns"},
		{1000, "1.0 \xc2\xb5s"},
		{12345, "12.3 \xc2\xb5s"},
		{1000000, "1.00 ms"},
		{1234567, "1.23 ms"},
		{1000000000, "1.000 s"},
		{61500000000, "61.500 s"},
	};
	char buf[CTL_FMT_MAX];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_str_eq(ctl_fmt_ns(cases[i].ns, buf), cases[i].want, "%llu ns",
			(unsigned long long)cases[i].ns);
	}
}

Test(fmt, uptimes_at_the_minute_hour_and_day)
{
	static const struct {
		uint64_t ms;
		const char *want;
	} cases[] = {
		{0, "0.000s"},
		{5250, "5.250s"},
		{59000, "59.000s"},
		{59999, "59.999s"},
		{60000, "1m 00s"},
		{61000, "1m 01s"},
		{3599999, "59m 59s"},
		{3600000, "1h 00m 00s"},
		{3605000, "1h 00m 05s"},
		{3725000, "1h 02m 05s"},
		{86399000, "23h 59m 59s"},
		{86400000, "1d 00h 00m"},
		{90061000, "1d 01h 01m"},
	};
	char buf[CTL_FMT_MAX];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_str_eq(ctl_fmt_uptime(cases[i].ms, buf), cases[i].want, "%llu ms",
			(unsigned long long)cases[i].ms);
	}
	cr_expect_str_eq(ctl_fmt_u64(UINT64_MAX, buf), "18446744073709551615");
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

/* The Prometheus text of a stats reply whose latency and uptime figures are floats when
 * `floats`, else integers. */
static char *prometheus_of(bool floats)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	pack_str(&pk, "id");
	msgpack_pack_uint64(&pk, 7);
	pack_str(&pk, "ok");
	msgpack_pack_true(&pk);
	pack_str(&pk, "daemon");
	msgpack_pack_map(&pk, 1);
	pack_str(&pk, "uptime_ms");
	floats ? msgpack_pack_double(&pk, 61500.0) : msgpack_pack_uint64(&pk, 61500);
	pack_str(&pk, "latency");
	msgpack_pack_map(&pk, 1);
	pack_str(&pk, "dispatch");
	msgpack_pack_map(&pk, 5);
	static const char *const keys[] = {"count", "sum_ns", "p50_ns", "p99_ns", "max_ns"};
	static const uint64_t values[] = {2, 4000000, 1500000, 2500000, 3000000};
	for (int i = 0; i < 5; i++) {
		pack_str(&pk, keys[i]);
		if (floats && i > 0) {
			msgpack_pack_double(&pk, (double)values[i]);
		} else {
			msgpack_pack_uint64(&pk, values[i]);
		}
	}
	size_t len = sb.size;
	struct vy_reply *r = vy__reply_decode((uint8_t *)msgpack_sbuffer_release(&sb), len);
	cr_assert(r, "the reply does not decode");
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	cr_assert(out);
	ctl_prometheus_write(vy_reply_value(r), out);
	fclose(out);
	vy_reply_destroy(r);
	return text;
}

/* The value of the sample `name` (with its labels) in Prometheus text, or -1 when absent. */
static double sample(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *line = text; line && *line; line = strchr(line, '\n')) {
		line += *line == '\n';
		if (strncmp(line, name, n) == 0 && line[n] == ' ') {
			return strtod(line + n + 1, NULL);
		}
	}
	return -1.0;
}

Test(prometheus, durations_are_seconds_whether_sent_as_integers_or_floats)
{
	static const struct {
		const char *name;
		double want;
	} samples[] = {
		{"vyred_daemon_uptime_seconds", 61.5},
		{"vyred_request_duration_seconds{op=\"dispatch\",quantile=\"0.5\"}", 0.0015},
		{"vyred_request_duration_seconds{op=\"dispatch\",quantile=\"0.99\"}", 0.0025},
		{"vyred_request_duration_seconds_sum{op=\"dispatch\"}", 0.004},
		{"vyred_request_duration_seconds_count{op=\"dispatch\"}", 2},
		{"vyred_request_duration_max_seconds{op=\"dispatch\"}", 0.003},
	};
	for (int floats = 0; floats < 2; floats++) {
		char *text = prometheus_of(floats);
		for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
			double got = sample(text, samples[i].name);
			cr_expect_eq(got, samples[i].want, "%s: %s is %.17g, not %.17g in\n%s",
				floats ? "floats" : "integers", samples[i].name, got,
				samples[i].want, text);
		}
		/* Integers are written as exact decimals. */
		if (!floats) {
			cr_expect(strstr(text, "\nvyred_request_duration_seconds{op=\"dispatch\","
					       "quantile=\"0.99\"} 0.0025\n"),
				"%s", text);
		}
		free(text);
	}
}
