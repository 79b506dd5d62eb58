/*
 * vybench: the benchmark suite of DESIGN.md §10 in one program. It opens the hand-written Vulkan
 * anchor (raw_vulkan.c) and vyred's backend (inproc.c) in its own process, starts a vyred of its
 * own on a temporary socket and cache, runs each figure group through libvyre, asks PyTorch for
 * its numbers where it and CUDA are present, and prints one table: figure, value, anchor measured
 * in the same run, ratio, target and pass/miss. The same rows go to DIR/bench.json and the tiny
 * dispatch latencies to DIR/latency.dat (bench/plot.gp draws them).
 *
 * Figures are never asserted on: a miss is printed, not failed. The run fails (exit 1) only when
 * a figure group could not be measured or a kernel computed a wrong result; bench/README.md says
 * what each figure means.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "daemon.h"
#include "inproc.h"
#include "raw_vulkan.h"
#include "report.h"

#define SETS_MAX 24
#define CAPTURE_MAX (1u << 20)

struct options {
	const char *vyred;
	const char *out;
	const char *torch_script;
	uint32_t device;
	const char *all_devices;
	const char *groups; /* --groups LIST; NULL: every group */
	bool quick;
	const char *sets[SETS_MAX];
	size_t n_sets;
};

static const struct vy_bench_sizes gpu_sizes = {
	.tiny_iterations = 10000,
	.send_iterations = 2000,
	.clients_seconds = 2.0,
	.clients_window = 16,
	.stream_elements = UINT64_C(64) << 20,
	.runs = 20,
	.transfer_bytes = UINT64_C(256) << 20,
	.transfer_runs = 10,
	.reduce_elements = UINT64_C(64) << 20,
	.matmul_n = 2048,
	.math_elements = UINT64_C(64) << 20,
	.cold_compiles = 9,
	.lookups = 2000,
	.restarts = 3,
	.connections = 1024,
};

/* Lavapipe runs kernels on the CPU cores the daemon and the clients also need. */
static const struct vy_bench_sizes cpu_sizes = {
	.tiny_iterations = 2000,
	.send_iterations = 500,
	.clients_seconds = 1.0,
	.clients_window = 16,
	.stream_elements = UINT64_C(1) << 20,
	.runs = 10,
	.transfer_bytes = UINT64_C(64) << 20,
	.transfer_runs = 10,
	.reduce_elements = UINT64_C(4) << 20,
	.matmul_n = 128,
	.math_elements = UINT64_C(256) << 10,
	.cold_compiles = 3,
	.lookups = 500,
	.restarts = 2,
	.connections = 1024,
};

/* --quick: every path once at a small size, to check that the suite works. */
static const struct vy_bench_sizes quick_sizes = {
	.tiny_iterations = 200,
	.send_iterations = 50,
	.clients_seconds = 0.3,
	.clients_window = 8,
	.stream_elements = UINT64_C(256) << 10,
	.runs = 5,
	.transfer_bytes = UINT64_C(8) << 20,
	.transfer_runs = 3,
	.reduce_elements = UINT64_C(1) << 20,
	.matmul_n = 64,
	.math_elements = UINT64_C(64) << 10,
	.cold_compiles = 2,
	.lookups = 100,
	.restarts = 1,
	.connections = 1024,
};

static int usage(FILE *out, int status)
{
	fprintf(out,
		"usage: vybench --out DIR [--vyred PATH] [--device I] [--all-devices LIST] "
		"[--torch-script PATH] [--groups LIST] [--quick] [-o KEY=VALUE]...\n"
		"  --out DIR            write bench.json, latency.dat and vyred.log there\n"
		"  --vyred PATH         the daemon to measure (default: $VYRED_BIN)\n"
		"  --device I           Vulkan device index for the anchors and the daemon (0)\n"
		"  --all-devices LIST   devices of the daemon of the every-device figures (all)\n"
		"  --torch-script PATH  bench/torch_anchor.py, run with python3 where it exists\n"
		"  --groups LIST        only these figure groups, comma-separated (and the groups\n"
		"                       whose figures they take as anchors): tiny, graph,\n"
		"                       throughput, stream, all, transfer, reduce, matmul, math,\n"
		"                       cache, connections; default: all of them\n"
		"  --quick              small sizes: check that every figure runs\n"
		"  -o KEY=VALUE         a vyred configuration key (vyred --help lists them)\n");
	return status;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	*o = (struct options){.vyred = getenv("VYRED_BIN"), .all_devices = "all"};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			exit(usage(stdout, 0));
		}
		if (strcmp(a, "--quick") == 0) {
			o->quick = true;
			continue;
		}
		if (i + 1 >= argc) {
			return usage(stderr, 2);
		}
		const char *v = argv[++i];
		char *end = NULL;
		if (strcmp(a, "--out") == 0) {
			o->out = v;
		} else if (strcmp(a, "--vyred") == 0) {
			o->vyred = v;
		} else if (strcmp(a, "--all-devices") == 0 && *v) {
			o->all_devices = v;
		} else if (strcmp(a, "--groups") == 0 && *v) {
			o->groups = v;
		} else if (strcmp(a, "--torch-script") == 0) {
			o->torch_script = v;
		} else if (strcmp(a, "--device") == 0) {
			unsigned long d = strtoul(v, &end, 10);
			if (!*v || *end || d > 63) {
				return usage(stderr, 2);
			}
			o->device = (uint32_t)d;
		} else if (strcmp(a, "-o") == 0 && strchr(v, '=') && o->n_sets < SETS_MAX) {
			o->sets[o->n_sets++] = v;
		} else {
			return usage(stderr, 2);
		}
	}
	if (!o->out || !o->vyred) {
		fprintf(stderr, "vybench: %s is required\n",
			o->out ? "--vyred (or VYRED_BIN)" : "--out");
		return usage(stderr, 2);
	}
	return 0;
}

/* 1000+ connections need as many descriptors, here and in the daemon, which inherits these. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max < 65536 ? rl.rlim_max : 65536;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void print_err(const char *what, const struct vy_err *err)
{
	fprintf(stderr, "vybench: %s: %s", what, err->message);
	if (err->fix[0]) {
		fprintf(stderr, ". Fix: %s", err->fix);
	}
	fputc('\n', stderr);
}

/* Run argv with stdout captured into *out (malloc'd, NUL-terminated); the exit status, or -1. */
static int capture(char *const argv[], char **out)
{
	*out = NULL;
	int fds[2];
	if (pipe(fds) != 0) {
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	size_t len = 0;
	char *buf = malloc(CAPTURE_MAX + 1);
	ssize_t n = 1;
	while (buf && len < CAPTURE_MAX && n > 0) {
		n = read(fds[0], buf + len, CAPTURE_MAX - len);
		if (n > 0) {
			len += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			n = 1;
		}
	}
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (buf) {
		buf[len] = '\0';
	}
	*out = buf;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct group {
	const char *key;
	const char *name;
	int (*run)(struct vy_bench_ctx *ctx, struct vy_err *err);
	/* The groups whose figures this one's rows take as anchors, comma-separated: they run
	 * whenever it runs. */
	const char *needs;
	/* The parts of torch_anchor.py that the PyTorch rows of its figures need (--parts). */
	const char *torch;
};

/* The cache group restarts the daemon, so the connections figure then meets a fresh one. */
static const struct group groups[] = {
	{"tiny", "tiny dispatch", vy_bench_tiny_run, NULL, "tiny_sync,tiny_roundtrip"},
	{"graph", "graphs", vy_bench_graph_run, "tiny", NULL},
	{"throughput", "dispatch rate", vy_bench_throughput_run, NULL, NULL},
	{"stream", "elementwise f32", vy_bench_stream_run, NULL, "elementwise"},
	{"all", "every device", vy_bench_all_run, "throughput,stream", "elementwise_all"},
	{"transfer", "input transfer", vy_bench_transfer_run, NULL, NULL},
	{"reduce", "reduction", vy_bench_reduce_run, NULL, NULL},
	{"matmul", "matmul", vy_bench_matmul_run, NULL, NULL},
	{"math", "math functions", vy_bench_math_run, NULL, "math"},
	{"cache", "compile and restart", vy_bench_cache_run, "tiny", NULL},
	{"connections", "connections held", vy_bench_clients_run, NULL, NULL},
};

#define GROUPS (sizeof(groups) / sizeof(groups[0]))

/* Whether `word` is one of the comma-separated words of `list` (NULL: none). */
static bool listed(const char *list, const char *word)
{
	size_t len = strlen(word);
	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == len && strncmp(p, word, len) == 0) {
			return true;
		}
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* The groups to run: those `list` names (NULL: all) and the groups they need. */
static int select_groups(const char *list, bool selected[GROUPS])
{
	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		bool known = false;
		for (size_t i = 0; i < GROUPS; i++) {
			known = known ||
				(strlen(groups[i].key) == n && strncmp(p, groups[i].key, n) == 0);
		}
		if (!known) {
			fprintf(stderr, "vybench: --groups: unknown group '%.*s'\n", (int)n, p);
			return usage(stderr, 2);
		}
		p = end ? end + 1 : NULL;
	}
	for (size_t i = 0; i < GROUPS; i++) {
		selected[i] = !list || listed(list, groups[i].key);
	}
	for (bool more = true; more;) {
		more = false;
		for (size_t i = 0; i < GROUPS; i++) {
			for (size_t j = 0; selected[i] && j < GROUPS; j++) {
				if (!selected[j] && listed(groups[i].needs, groups[j].key)) {
					selected[j] = more = true;
				}
			}
		}
	}
	return 0;
}

static json_object *absent(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_object *absent(const char *fmt, ...)
{
	char reason[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	json_object *j = json_object_new_object();
	json_object_object_add(j, "status", json_object_new_string("absent"));
	json_object_object_add(j, "reason", json_object_new_string(reason));
	return j;
}

/* PyTorch's figures from torch_anchor.py (the parts the selected groups need), or an "absent"
 * object saying why there are none. */
static json_object *torch_anchor(
	const struct options *o, const struct vy_bench_ctx *ctx, const bool selected[GROUPS])
{
	char parts[256] = "";
	size_t len = 0;
	for (size_t i = 0; i < GROUPS && len < sizeof(parts); i++) {
		if (selected[i] && groups[i].torch) {
			len += (size_t)snprintf(parts + len, sizeof(parts) - len, "%s%s",
				len ? "," : "", groups[i].torch);
		}
	}
	if (!len) {
		return absent("no selected group has a PyTorch figure");
	}
	if (!o->torch_script) {
		return absent("no --torch-script given");
	}
	char elements[32], iterations[32], runs[32], math[32];
	snprintf(
		elements, sizeof(elements), "%llu", (unsigned long long)ctx->sizes.stream_elements);
	snprintf(iterations, sizeof(iterations), "%u", ctx->sizes.tiny_iterations);
	snprintf(runs, sizeof(runs), "%u", ctx->sizes.runs);
	snprintf(math, sizeof(math), "%llu", (unsigned long long)ctx->sizes.math_elements);
	char *argv[] = {"python3", (char *)o->torch_script, "--elements", elements, "--iterations",
		iterations, "--runs", runs, "--math-elements", math, "--parts", parts, NULL};
	char *text = NULL;
	int status = capture(argv, &text);
	json_object *j = text && status == 0 ? json_tokener_parse(text) : NULL;
	free(text);
	if (status == 127) {
		return absent("python3 could not be run");
	}
	if (!j || !json_object_is_type(j, json_type_object)) {
		json_object_put(j);
		return absent(
			"%s exited with status %d without a JSON object", o->torch_script, status);
	}
	return j;
}

static double jget(json_object *j, const char *a, const char *b)
{
	json_object *x = NULL, *y = NULL;
	if (!json_object_object_get_ex(j, a, &x) || !json_object_object_get_ex(x, b, &y)) {
		return NAN;
	}
	return json_object_get_double(y);
}

static void torch_rows(struct vy_bench_ctx *ctx, json_object *torch)
{
	json_object *status = NULL, *reason = NULL;
	json_object_object_get_ex(torch, "status", &status);
	json_object_object_get_ex(torch, "reason", &reason);
	if (status && strcmp(json_object_get_string(status), "wrong") == 0) {
		struct vy_err err;
		vy_bench_wrong(&err, "PyTorch", "%s", json_object_get_string(reason));
		vy_bench_report_fail(ctx->report, "torch", "PyTorch anchor", &err);
		return;
	}
	if (!status || strcmp(json_object_get_string(status), "present") != 0) {
		return;
	}
	/* Rows of the figures measured in this run (--groups may have left some out). */
	struct vy_bench_report *r = ctx->report;
	if (!isnan(ctx->tiny_p50_us)) {
		vy_bench_report_add(r, "torch_tiny_sync", "tiny dispatch p50 vs PyTorch", "us",
			ctx->tiny_p50_us, "PyTorch op+sync", jget(torch, "tiny_sync", "p50_us"),
			VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_report_add(r, "torch_tiny_roundtrip",
			"tiny dispatch p50 vs PyTorch copies", "us", ctx->tiny_p50_us,
			"PyTorch in-op-out", jget(torch, "tiny_roundtrip", "p50_us"),
			VY_BENCH_GOAL_NONE, 0, NULL);
	}
	if (!isnan(ctx->stream_gbps)) {
		vy_bench_report_add(r, "torch_elementwise", "elementwise f32 vs PyTorch", "GB/s",
			ctx->stream_gbps, "PyTorch add_", jget(torch, "elementwise", "gbps"),
			VY_BENCH_GOAL_NONE, 0, NULL);
	}
	double all = jget(torch, "elementwise_all", "gbps");
	if (isnan(all) || isnan(ctx->stream_all_gbps)) {
		return;
	}
	/* How far PyTorch's own kernel scales on this machine: the floor of stream_bandwidth_all.
	 */
	struct vy_bench_figure *f = vy_bench_report_add(r, "torch_elementwise_all",
		"elementwise f32 on every device vs PyTorch", "GB/s", ctx->stream_all_gbps,
		"PyTorch add_ on every device", all, VY_BENCH_GOAL_NONE, 0, NULL);
	json_object *x = NULL, *per = NULL;
	json_object_object_get_ex(torch, "elementwise_all", &x);
	json_object_object_get_ex(x, "gbps_by_device", &per);
	char by[256] = "";
	size_t len = 0;
	size_t n = per ? json_object_array_length(per) : 0;
	for (size_t i = 0; i < n && len < sizeof(by); i++) {
		len += (size_t)snprintf(by + len, sizeof(by) - len, "%s%zu: %.4g", i ? ", " : "", i,
			json_object_get_double(json_object_array_get_idx(per, i)));
	}
	vy_bench_figure_note(f,
		"PyTorch on %zu devices at once: GB/s by device %s, sum %.4g, %.3g times its one "
		"device (%.4g GB/s)",
		n, by, all, all / jget(torch, "elementwise", "gbps"),
		jget(torch, "elementwise", "gbps"));
}

static json_object *sizes_json(const struct vy_bench_sizes *s)
{
	json_object *j = json_object_new_object();
	json_object_object_add(j, "tiny_iterations", json_object_new_int64(s->tiny_iterations));
	json_object_object_add(j, "send_iterations", json_object_new_int64(s->send_iterations));
	json_object_object_add(j, "clients_seconds", json_object_new_double(s->clients_seconds));
	json_object_object_add(j, "clients_window", json_object_new_int64(s->clients_window));
	json_object_object_add(
		j, "stream_elements", json_object_new_int64((int64_t)s->stream_elements));
	json_object_object_add(j, "runs", json_object_new_int64(s->runs));
	json_object_object_add(
		j, "transfer_bytes", json_object_new_int64((int64_t)s->transfer_bytes));
	json_object_object_add(j, "transfer_runs", json_object_new_int64(s->transfer_runs));
	json_object_object_add(
		j, "reduce_elements", json_object_new_int64((int64_t)s->reduce_elements));
	json_object_object_add(j, "matmul_n", json_object_new_int64(s->matmul_n));
	json_object_object_add(
		j, "math_elements", json_object_new_int64((int64_t)s->math_elements));
	json_object_object_add(j, "cold_compiles", json_object_new_int64(s->cold_compiles));
	json_object_object_add(j, "lookups", json_object_new_int64(s->lookups));
	json_object_object_add(j, "restarts", json_object_new_int64(s->restarts));
	json_object_object_add(j, "connections", json_object_new_int64(s->connections));
	return j;
}

static int write_json(const struct options *o, const struct vy_bench_ctx *ctx, json_object *torch,
	double elapsed_s)
{
	json_object *root = json_object_new_object();
	char when[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	struct utsname un;
	json_object_object_add(root, "bench", json_object_new_string("vybench"));
	json_object_object_add(root, "format", json_object_new_int(1));
	json_object_object_add(root, "date", json_object_new_string(when));
	json_object_object_add(
		root, "host", json_object_new_string(uname(&un) == 0 ? un.nodename : "?"));
	json_object *dev = json_object_new_object();
	json_object_object_add(dev, "index", json_object_new_int64(ctx->device));
	json_object_object_add(
		dev, "name", json_object_new_string(vy_raw_vk_device_name(ctx->raw)));
	json_object_object_add(dev, "kind", json_object_new_string(ctx->cpu ? "cpu" : "gpu"));
	json_object_object_add(root, "device", dev);
	json_object_object_add(root, "vyred", json_object_new_string(o->vyred));
	json_object_object_add(root, "quick", json_object_new_boolean(o->quick));
	json_object_object_add(root, "sizes", sizes_json(&ctx->sizes));
	char elapsed[32];
	snprintf(elapsed, sizeof(elapsed), "%.1f", elapsed_s);
	json_object_object_add(root, "elapsed_s", json_object_new_double_s(elapsed_s, elapsed));
	json_object_object_add(root, "latency_samples", json_object_new_string("latency.dat"));
	json_object_object_add(root, "torch", json_object_get(torch));
	json_object_object_add(root, "figures", vy_bench_report_json(ctx->report));
	char path[4096];
	snprintf(path, sizeof(path), "%s/bench.json", o->out);
	int rc = json_object_to_file_ext(path, root, JSON_C_TO_STRING_PRETTY);
	json_object_put(root);
	if (rc) {
		fprintf(stderr, "vybench: cannot write %s: %s\n", path, json_util_get_last_err());
		return 1;
	}
	printf("\nresults: %s\n", path);
	return 0;
}

static int start_daemon(const struct options *o, struct vy_bench_daemon *d, char *log, char *device,
	struct vy_err *err)
{
	FILE *f = fopen(log, "w");
	if (f) {
		fclose(f);
	}
	int rc = vy_bench_daemon_init(d, o->vyred, log, err);
	if (rc) {
		return rc;
	}
	if (!vy_bench_daemon_args(d, device, o->sets, o->n_sets)) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "-o", "give fewer -o settings",
			"too many daemon arguments");
	}
	return vy_bench_daemon_start(d, err);
}

static int run(const struct options *o, const bool selected[GROUPS], struct vy_bench_ctx *ctx,
	struct vy_bench_daemon *d)
{
	uint64_t t0 = vy_bench_now_ns();
	struct vy_err err = {0};
	if (vy_raw_vk_create(o->device, &ctx->raw, &err)) {
		print_err("raw Vulkan", &err);
		return 1;
	}
	ctx->cpu = vy_raw_vk_is_cpu(ctx->raw);
	ctx->sizes = o->quick ? quick_sizes : ctx->cpu ? cpu_sizes : gpu_sizes;
	if (vy_bench_inproc_create(o->device, &ctx->inproc, &err)) {
		print_err("the Vulkan backend in-process", &err);
		return 1;
	}
	char log[4096], device[16];
	snprintf(log, sizeof(log), "%s/vyred.log", o->out);
	snprintf(device, sizeof(device), "%u", o->device);
	if (start_daemon(o, d, log, device, &err)) {
		print_err("starting vyred", &err);
		return 1;
	}
	printf("vybench: device %u: %s (%s sizes%s); vyred %s\n\n", o->device,
		vy_raw_vk_device_name(ctx->raw), ctx->cpu ? "CPU" : "GPU",
		o->quick ? ", quick" : "", o->vyred);
	fflush(stdout);
	for (size_t i = 0; i < GROUPS; i++) {
		if (!selected[i]) {
			continue;
		}
		uint64_t g0 = vy_bench_now_ns();
		fprintf(stderr, "vybench: %s...", groups[i].name);
		vy_err_clear(&err);
		int rc = groups[i].run(ctx, &err);
		fprintf(stderr, " %.1f s%s\n", (double)(vy_bench_now_ns() - g0) / 1e9,
			rc ? " (failed)" : "");
		if (rc) {
			vy_bench_report_fail(ctx->report, groups[i].key, groups[i].name, &err);
		}
	}
	fprintf(stderr, "vybench: PyTorch anchor...");
	uint64_t g0 = vy_bench_now_ns();
	json_object *torch = torch_anchor(o, ctx, selected);
	json_object *reason = NULL;
	json_object_object_get_ex(torch, "reason", &reason);
	fprintf(stderr, " %.1f s%s%s\n", (double)(vy_bench_now_ns() - g0) / 1e9,
		reason ? ": absent, " : "", reason ? json_object_get_string(reason) : "");
	torch_rows(ctx, torch);
	vy_bench_math_anchor(ctx, torch);
	vy_err_clear(&err);
	if (vy_bench_daemon_stop(d, &err)) {
		vy_bench_report_fail(ctx->report, "shutdown", "vyred shutdown", &err);
	}
	vy_bench_report_print(ctx->report, stdout);
	int rc = write_json(o, ctx, torch, (double)(vy_bench_now_ns() - t0) / 1e9);
	json_object_put(torch);
	return rc || vy_bench_report_failed(ctx->report) ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct options o;
	bool selected[GROUPS];
	if (parse_args(argc, argv, &o) || select_groups(o.groups, selected)) {
		return 2;
	}
	if (mkdir(o.out, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "vybench: cannot make %s: %s\n", o.out, strerror(errno));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	struct vy_bench_report *report = calloc(1, sizeof(*report));
	struct vy_bench_daemon daemon;
	memset(&daemon, 0, sizeof(daemon));
	struct vy_bench_ctx ctx = {
		.device = o.device,
		.out_dir = o.out,
		.daemon = &daemon,
		.report = report,
		.all_devices = o.all_devices,
		.sets = o.sets,
		.n_sets = o.n_sets,
		.tiny_p50_us = NAN,
		.stream_gbps = NAN,
		.rate16_per_s = NAN,
		.stream_all_gbps = NAN,
	};
	int rc = report ? run(&o, selected, &ctx, &daemon) : 1;
	vy_bench_daemon_finish(&daemon);
	vy_bench_inproc_destroy(ctx.inproc);
	vy_raw_vk_destroy(ctx.raw);
	free(report);
	return rc;
}
