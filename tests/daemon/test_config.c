/*
 * The daemon's configuration (daemon/config.c) alone: every value type parses exactly the forms
 * etc/vyred.conf documents and refuses the rest with the key named and a Fix line; the INI file,
 * the environment and the command line apply in that order; and each whole-configuration check
 * admits its bound and refuses one past it.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static struct vy_config cfg;

static void cfg_init(void)
{
	unsetenv("VYRED_CONFIG");
	unsetenv("VYRED_MAX_INFLIGHT");
	unsetenv("VYRED_MAX_FRAME");
	vy_config_init(&cfg);
}

static void cfg_finish(void)
{
	vy_config_finish(&cfg);
}

TestSuite(config, .init = cfg_init, .fini = cfg_finish, .timeout = 30);

/* The value of `key` after setting it to `text`; fails the test when the text is refused. */
static uint64_t size_of(const char *key, const char *text)
{
	struct vy_err err = {0};
	cr_assert_eq(vy_config_set(&cfg, key, text, &err), 0, "%s = %s is accepted (%s)", key, text,
		err.message);
	char buf[64];
	cr_assert_not_null(vy_config_value_text(&cfg, key, buf, sizeof(buf)));
	return strtoull(buf, NULL, 10);
}

static void refused(const char *key, const char *text)
{
	struct vy_err err = {0};
	cr_assert_eq(vy_config_set(&cfg, key, text, &err), VY_E_BAD_REQUEST, "%s = %s is refused",
		key, text);
	cr_assert_str_eq(err.at, key, "the error names the key");
	cr_assert_neq(err.fix[0], '\0', "the error has a Fix line");
}

Test(config, sizes_take_each_documented_suffix)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} cases[] = {
		{"0", 0},
		{"4096", 4096},
		{"7B", 7},
		{"3K", UINT64_C(3) << 10},
		{"3KiB", UINT64_C(3) << 10},
		{"5M", UINT64_C(5) << 20},
		{"5MiB", UINT64_C(5) << 20},
		{"5mib", UINT64_C(5) << 20},
		{"2G", UINT64_C(2) << 30},
		{"2GiB", UINT64_C(2) << 30},
		{"9T", UINT64_C(9) << 40},
		{"9TiB", UINT64_C(9) << 40},
		{"18446744073709551615", UINT64_MAX},
		/* the largest count of each unit that still fits in 64 bits */
		{"18014398509481983K", UINT64_MAX >> 10 << 10},
		{"17592186044415M", UINT64_MAX >> 20 << 20},
		{"17179869183G", UINT64_MAX >> 30 << 30},
		{"16777215T", UINT64_MAX >> 40 << 40},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(size_of("resident_quota", cases[i].text), cases[i].bytes,
			"resident_quota = %s is %" PRIu64 " bytes", cases[i].text, cases[i].bytes);
	}
}

Test(config, sizes_past_64_bits_or_malformed_are_refused)
{
	static const char *const bad[] = {"18014398509481984K", "17592186044416M", "17179869184G",
		"16777216T", "18446744073709551616", "", "-1", "1.5G", "1Q", "G", " 1", "1 G"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		refused("resident_quota", bad[i]);
	}
}

Test(config, counts_and_booleans_take_their_forms)
{
	cr_assert_eq(size_of("max_inflight", "18446744073709551615"), UINT64_MAX);
	refused("max_inflight", "18446744073709551616");
	refused("max_inflight", "1K");
	refused("max_inflight", "-3");
	char buf[16];
	static const char *const yes[] = {"true", "YES", "on", "1"};
	static const char *const no[] = {"false", "No", "OFF", "0"};
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(vy_config_set(&cfg, "disk_cache", no[i], NULL), 0);
		cr_assert_str_eq(
			vy_config_value_text(&cfg, "disk_cache", buf, sizeof(buf)), "false");
		cr_assert_eq(vy_config_set(&cfg, "disk_cache", yes[i], NULL), 0);
		cr_assert_str_eq(
			vy_config_value_text(&cfg, "disk_cache", buf, sizeof(buf)), "true");
	}
	refused("disk_cache", "2");
	refused("disk_cache", "enabled");
}

Test(config, socket_modes_are_octal_permission_bits_only)
{
	char buf[16];
	cr_assert_eq(vy_config_set(&cfg, "socket_mode", "0777", NULL), 0);
	cr_assert_str_eq(vy_config_value_text(&cfg, "socket_mode", buf, sizeof(buf)), "0777");
	cr_assert_eq(vy_config_set(&cfg, "socket_mode", "600", NULL), 0);
	cr_assert_str_eq(vy_config_value_text(&cfg, "socket_mode", buf, sizeof(buf)), "0600");
	refused("socket_mode", "1777");
	refused("socket_mode", "04660");
	refused("socket_mode", "0680");
	refused("socket_mode", "");
}

Test(config, every_default_prints_back_to_itself)
{
	for (size_t i = 0; vy_config_keys[i]; i++) {
		char before[512];
		char after[512];
		const char *key = vy_config_keys[i];
		cr_assert_not_null(vy_config_value_text(&cfg, key, before, sizeof(before)));
		cr_assert_eq(
			vy_config_set(&cfg, key, before, NULL), 0, "%s = %s parses", key, before);
		vy_config_value_text(&cfg, key, after, sizeof(after));
		cr_assert_str_eq(after, before, "%s keeps its value", key);
	}
	char buf[16];
	cr_assert_null(vy_config_value_text(&cfg, "no_such_key", buf, sizeof(buf)));
	struct vy_err err = {0};
	cr_assert_eq(vy_config_set(&cfg, "no_such_key", "1", &err), VY_E_BAD_REQUEST);
	cr_assert_neq(err.fix[0], '\0');
}

/* A configuration file holding `text`; its path goes into `path`. */
static void write_file(char *path, size_t size, const char *text)
{
	snprintf(path, size, "/tmp/vyred-config-test-%d-XXXXXX", (int)getpid());
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	size_t n = strlen(text);
	cr_assert_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
}

Test(config, the_command_line_beats_the_environment_which_beats_the_file)
{
	char path[64];
	write_file(path, sizeof(path),
		"[limits]\nmax_inflight = 7\nmax_frame = 1M\nmax_clients = 9\n");
	setenv("VYRED_MAX_INFLIGHT", "8", 1);
	setenv("VYRED_MAX_FRAME", "2M", 1);
	struct vy_config_args args = {.file = path, .n_sets = 1};
	args.keys[0] = "max_frame";
	args.values[0] = "3M";
	struct vy_config c;
	struct vy_err err = {0};
	int rc = vy_config_build(&c, &args, &err);
	unlink(path);
	cr_assert_eq(rc, 0, "%s", err.message);
	cr_assert_eq(c.max_clients, 9, "the file sets what nothing else does");
	cr_assert_eq(c.max_inflight, 8, "the environment beats the file");
	cr_assert_eq(c.max_frame, UINT64_C(3) << 20, "the command line beats both");
	cr_assert_str_eq(c.file, path);
	vy_config_finish(&c);
}

Test(config, a_file_error_names_its_line_and_section)
{
	char path[64];
	write_file(path, sizeof(path), "[limits]\nmax_clients = 9\nsocket_path = /tmp/x\n");
	struct vy_config_args args = {.file = path};
	struct vy_config c;
	struct vy_err err = {0};
	int rc = vy_config_build(&c, &args, &err);
	char at[80];
	snprintf(at, sizeof(at), "%s:3", path);
	unlink(path);
	cr_assert_eq(rc, VY_E_BAD_REQUEST);
	cr_assert_str_eq(err.at, at, "the error names the file and line");
	cr_assert_str_eq(err.fix, "move socket_path under [daemon]");
	cr_assert_eq(c.max_clients, 4096, "a failed build leaves the defaults");
	vy_config_finish(&c);
}

/* Build with `key` = `value` on the command line: 0 or the error code. */
static int build_with(const char *key, const char *value, struct vy_err *err)
{
	struct vy_config_args args = {.file = "/dev/null", .n_sets = 1};
	args.keys[0] = key;
	args.values[0] = value;
	struct vy_config c;
	int rc = vy_config_build(&c, &args, err);
	vy_config_finish(&c);
	return rc;
}

Test(config, each_checked_bound_admits_its_edge_and_refuses_one_past)
{
	static const struct {
		const char *key;
		const char *ok;
		const char *bad;
	} edges[] = {
		{"max_frame", "16", "15"},
		{"max_frame", "4294967295", "4294967296"},
		{"max_inflight", "1", "0"},
		{"max_inflight", "1048576", "1048577"},
		{"batch_max", "1", "0"},
		{"batch_max", "256", "257"},
		{"batch_cost_us", "60000000", "60000001"},
		{"compile_threads", "1", "0"},
		{"compile_threads", "1024", "1025"},
		{"compile_per_user", "1", "0"},
		{"max_clients", "1", "0"},
		{"max_clients_per_user", "1", "0"},
		{"max_inflight_per_user", "1", "0"},
		{"max_inflight_total", "1", "0"},
		{"inbound_quota", "16", "15"},
		{"inbound_total", "16", "15"},
		{"max_output", "1G", "1073741825"},
		{"reply_quota", "1G", "1073741823"},
		{"reply_total", "1G", "1073741823"},
		{"write_low_water", "67108863", "64M"},
		{"max_loop_iterations", "1", "0"},
		{"dispatch_timeout_ms", "1", "0"},
		{"dispatch_timeout_ms", "4294967295", "4294967296"},
		{"program_cache_entries", "1", "0"},
		{"pipeline_cache_entries", "1", "0"},
		{"socket_path", "/tmp/s", ""},
		{"devices", "0, 2", "0,,2"},
		{"backend", "reference", "cuda"},
		{"spin", "off", "always"},
	};
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		struct vy_err err = {0};
		cr_assert_eq(build_with(edges[i].key, edges[i].ok, &err), 0,
			"%s = %s is admitted (%s)", edges[i].key, edges[i].ok, err.message);
		err = (struct vy_err){0};
		cr_assert_eq(build_with(edges[i].key, edges[i].bad, &err), VY_E_BAD_REQUEST,
			"%s = %s is refused", edges[i].key, edges[i].bad);
		cr_assert_neq(err.fix[0], '\0', "%s = %s: the error has a Fix line", edges[i].key,
			edges[i].bad);
	}
}
