/*
 * vyrectl: the command-line tool of vyred. This file holds the command table (each command's
 * synopsis and help are data here, so `vyrectl help`, `vyrectl NAME --help` and the usage errors
 * all come from one place), the global options and the exit statuses.
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <vy/vyre.h>

#include "vyrectl.h"

/* getopt values of the options every command takes; above any character. */
enum { OPT_SOCKET = 0x100, OPT_TIMEOUT, OPT_JSON };

static const struct ctl_cmd commands[] = {
	{
		.name = "status",
		.synopsis = "",
		.summary = "one screen: daemon, devices, clients, cache, queue",
		.help = "Asks the daemon for hello and stats and prints its version, pid and\n"
			"uptime, its devices (name, backend, memory), the number of clients,\n"
			"the pipeline cache hit rate and the queue depth.\n",
		.json = true,
		.run = ctl_cmd_status,
	},
	{
		.name = "stats",
		.synopsis = "[--prometheus]",
		.summary = "every statistic of the daemon",
		.help = "Prints the daemon's statistics tree as tables.\n"
			"  --json        the tree as the daemon sent it, in JSON\n"
			"  --prometheus  Prometheus text exposition format 0.0.4: every number\n"
			"                of the tree as a vyred_* metric in base units\n"
			"                (seconds, bytes, _total counters), labelled by\n"
			"                device, client, operation and error code\n",
		.json = true,
		.run = ctl_cmd_stats,
	},
	{
		.name = "devices",
		.synopsis = "",
		.summary = "devices: profile, float behaviour, work",
		.help = "Lists every device the daemon opened: backend, driver, memory,\n"
			"subgroup and workgroup limits, what its self-test found about float\n"
			"operations (fused fma, exact div and sqrt, subnormals), and its\n"
			"dispatch and busy-time counters.\n",
		.json = true,
		.run = ctl_cmd_devices,
	},
	{
		.name = "clients",
		.synopsis = "",
		.summary = "connected clients",
		.help = "Lists the connected clients: id, pid, uid, name, state, requests,\n"
			"errors, bytes in and out, resident bytes. The row marked * is vyrectl\n"
			"itself. Clients of other users are shown to admin peers only.\n",
		.json = true,
		.run = ctl_cmd_clients,
	},
	{
		.name = "buffers",
		.synopsis = "",
		.summary = "resident buffers",
		.help = "Lists resident buffers: handle, size, name, owner, device, age and\n"
			"idle time. Buffers of other users are shown to admin peers only.\n",
		.json = true,
		.run = ctl_cmd_buffers,
	},
	{
		.name = "graphs",
		.synopsis = "",
		.summary = "graphs of dispatches",
		.help = "Lists the graphs made with graph_create: handle, name, steps, inputs,\n"
			"outputs, barriers, temp bytes, owner, device, runs and age. Graphs of\n"
			"other users are shown to admin peers only.\n",
		.json = true,
		.run = ctl_cmd_graphs,
	},
	{
		.name = "cache",
		.synopsis = "list | clear",
		.summary = "cached pipelines and programs; empty the caches",
		.help = "  list   the pipelines (program, device, workgroup size, spec\n"
			"         constants, hits, compile time) and the programs the daemon\n"
			"         holds in memory\n"
			"  clear  drop every cached pipeline and program from memory, and\n"
			"         the programs of the disk cache (admin peers only)\n",
		.json = true,
		.run = ctl_cmd_cache,
	},
	{
		.name = "ping",
		.synopsis = "[--count N]",
		.summary = "round-trip latency to the daemon",
		.help = "Sends N pings one after another and prints the minimum, median\n"
			"(p50), p99 and maximum round-trip time in microseconds.\n"
			"  -n, --count N  number of pings, 1 to 1000000 (default 10)\n",
		.json = true,
		.run = ctl_cmd_ping,
	},
	{
		.name = "run",
		.synopsis = "PROGRAM.json --input NAME=DATA... [OPTIONS]",
		.summary = "dispatch a program, print its outputs",
		.help = "Reads a program in its JSON form, checks it, sends it with one input\n"
			"per input buffer and prints each output by name. Timing and the cache\n"
			"outcome go to stderr (or into the JSON with --json).\n"
			"  -i, --input NAME=DATA  the contents of input buffer NAME; every\n"
			"                         input buffer needs one (`vyrectl check`\n"
			"                         lists them). DATA is one of:\n"
			"                           @FILE         raw little-endian bytes\n"
			"                                         (@- reads standard input)\n"
			"                           hex:0a0b0c0d  bytes in hex\n"
			"                           u32:1,2,0x10  i32:-1,2  f32:1.5,-0,nan\n"
			"                           1,2,3         a list in the buffer's type\n"
			"  -g, --grid X[,Y[,Z]]   workgroups to launch (default: from the\n"
			"                         outputs)\n"
			"  -f, --format FMT       how outputs print: u32, i32, f32, hex, or\n"
			"                         raw (bytes to stdout); default: their type\n"
			"      --backend ID       run on the vulkan or the reference backend\n"
			"      --device N         run on device N (see `vyrectl devices`)\n"
			"      --timing           ask for the device's own timing (device_ns)\n",
		.json = true,
		.run = ctl_cmd_run,
	},
	{
		.name = "compile",
		.synopsis = "PROGRAM.json [--backend ID] [--device N]",
		.summary = "compile a program on the daemon",
		.help = "Reads a program in its JSON form, checks it, and has the daemon\n"
			"validate, plan and compile it; prints the program id, the cache\n"
			"outcome (hit, disk or miss), the compile time and the device.\n"
			"      --backend ID  compile for the vulkan or the reference backend\n"
			"      --device N    compile for device N\n",
		.json = true,
		.run = ctl_cmd_compile,
	},
	{
		.name = "graph",
		.synopsis = "run GRAPH.json --input K=DATA... [--timing]",
		.summary = "make a graph of steps, run it once, print its outputs",
		.help = "Reads a graph file: {\"name\": ..., \"steps\": [{\"program\": FILE,\n"
			"\"bind\": {BUFFER: {\"input\": K} | {\"output\": J} | {\"temp\": NAME}\n"
			"| {\"resident\": HANDLE}}, \"grid\": [X, Y, Z]}, ...]}, with program\n"
			"files relative to the graph file's folder. Checks every program\n"
			"locally, makes the graph (graph_create), runs it once with one input\n"
			"per graph input, prints each output as \"output J\" in the type of the\n"
			"buffer that writes it, and frees the graph.\n"
			"  -i, --input K=DATA  graph input K, DATA as for `vyrectl run`, in the\n"
			"                      type of the buffer bound to it\n"
			"      --timing        ask for each step's device time\n",
		.json = true,
		.run = ctl_cmd_graph,
	},
	{
		.name = "check",
		.synopsis = "PROGRAM.json",
		.summary = "decode and validate a program locally",
		.help = "Decodes and validates a program (\"-\" reads standard input) without a\n"
			"daemon, and prints its id, buffers, binding roles and input/output\n"
			"order, and every error with its location and Fix line.\n"
			"The GLSL or SPIR-V the Vulkan backend generates for it, for\n"
			"lavapipe or NVIDIA: vyred --emit-glsl PROGRAM.json [--profile\n"
			"lavapipe|nvidia|device] [--spirv] (no daemon needed; vyred(8)).\n",
		.json = false,
		.run = ctl_cmd_check,
	},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: vyrectl [--socket PATH] [--timeout SEC] [--json] COMMAND [ARGS]\n"
		     "\n"
		     "Inspect and drive vyred, the vyre GPU dispatch daemon.\n"
		     "\n"
		     "commands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++) {
		char head[64];
		snprintf(head, sizeof(head), "%s %s", commands[i].name,
			strlen(commands[i].synopsis) < 20 ? commands[i].synopsis : "...");
		fprintf(out, "  %-28s %s\n", head, commands[i].summary);
	}
	fprintf(out,
		"  %-28s %s\n"
		"\n"
		"options of every command (before or after its name):\n"
		"  -s, --socket PATH   the daemon's socket (default: $VYRED_SOCKET, else\n"
		"                      " VY_DEFAULT_SOCKET ")\n"
		"  -t, --timeout SEC   give up on a reply after SEC seconds (default: wait)\n"
		"  -j, --json          JSON on stdout instead of tables (every command but check)\n"
		"  -h, --help          this text; `vyrectl COMMAND --help` for one command\n"
		"  -V, --version       the version of vyrectl and libvyre\n"
		"\n"
		"exit status:\n"
		"  0  success\n"
		"  1  the daemon answered an error (its message and Fix line go to stderr)\n"
		"  2  usage error (unknown command or option, bad argument)\n"
		"  3  the program is invalid (found by the local check before sending)\n"
		"  4  a file could not be read\n"
		"  5  no daemon answered at the socket (not running, wrong path, no permission)\n",
		"help [COMMAND]", "this text, or a command's");
}

void ctl_cmd_help(const struct ctl_cmd *cmd, FILE *out)
{
	fprintf(out, "usage: vyrectl %s%s%s\n\n%s\n", cmd->name, cmd->synopsis[0] ? " " : "",
		cmd->synopsis, cmd->help);
	fprintf(out, "Also: --socket PATH, --timeout SEC%s. Exit statuses: vyrectl --help.\n",
		cmd->json ? ", --json" : "");
}

int ctl_usage_error(const struct ctl *ctl, const char *fmt, ...)
{
	const char *name = ctl->cmd ? ctl->cmd->name : NULL;
	fprintf(stderr, "vyrectl%s%s: ", name ? " " : "", name ? name : "");
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ". Fix: see vyrectl%s%s --help.\n", name ? " " : "", name ? name : "");
	return CTL_EXIT_USAGE;
}

bool ctl_want_args(const struct ctl *ctl, int argc, char **argv, int n)
{
	int have = argc - optind;
	if (have < n) {
		ctl_usage_error(ctl, "missing argument (usage: vyrectl %s %s)", ctl->cmd->name,
			ctl->cmd->synopsis);
		return false;
	}
	if (have > n) {
		ctl_usage_error(ctl, "unexpected argument \"%s\"", argv[optind + n]);
		return false;
	}
	return true;
}

const char *ctl_socket_path(const struct ctl *ctl)
{
	if (ctl->socket) {
		return ctl->socket;
	}
	const char *env = getenv("VYRED_SOCKET");
	return env && env[0] ? env : VY_DEFAULT_SOCKET;
}

void *ctl_realloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);
	if (!q) {
		fprintf(stderr, "vyrectl: out of memory\n");
		abort();
	}
	return q;
}

static int parse_timeout(struct ctl *ctl, const char *arg)
{
	char *end = NULL;
	errno = 0;
	double sec = strtod(arg, &end);
	if (errno || end == arg || *end || !(sec > 0) || sec > 86400) {
		return ctl_usage_error(
			ctl, "--timeout takes seconds between 0 and 86400, not \"%s\"", arg);
	}
	ctl->timeout_ms = (int)(sec * 1000.0 + 0.5);
	if (ctl->timeout_ms < 1) {
		ctl->timeout_ms = 1;
	}
	return 0;
}

/* One of the options every command takes; 0 when handled, else an exit status. */
static int common_option(struct ctl *ctl, int opt, const char *arg)
{
	switch (opt) {
	case OPT_SOCKET:
		if (!arg[0]) {
			return ctl_usage_error(ctl, "--socket needs a path");
		}
		ctl->socket = arg;
		return 0;
	case OPT_TIMEOUT:
		return parse_timeout(ctl, arg);
	case OPT_JSON:
		if (ctl->cmd && !ctl->cmd->json) {
			return ctl_usage_error(ctl, "--json is not available for this command");
		}
		ctl->json = true;
		return 0;
	default:
		return CTL_EXIT_USAGE;
	}
}

static const struct option common_longopts[] = {
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"json", no_argument, NULL, OPT_JSON},
};

#define N_COMMON (sizeof(common_longopts) / sizeof(common_longopts[0]))
#define MAX_LONGOPTS 32

int ctl_getopt(struct ctl *ctl, int argc, char **argv, const char *shortopts,
	const struct option *longopts)
{
	struct option all[MAX_LONGOPTS + N_COMMON + 1];
	size_t n = 0;
	for (; longopts && longopts[n].name; n++) {
		assert(n < MAX_LONGOPTS);
		all[n] = longopts[n];
	}
	memcpy(all + n, common_longopts, sizeof(common_longopts));
	memset(&all[n + N_COMMON], 0, sizeof(all[0]));
	/* Before the command (no ctl->cmd yet), stop at the first argument that is no option. */
	char shorts[64];
	snprintf(shorts, sizeof(shorts), "%s:s:t:j%s", ctl->cmd ? "" : "+", shortopts);
	for (;;) {
		int prev = optind;
		int opt = getopt_long(argc, argv, shorts, all, NULL);
		switch (opt) {
		case 's':
			opt = OPT_SOCKET;
			break;
		case 't':
			opt = OPT_TIMEOUT;
			break;
		case 'j':
			opt = OPT_JSON;
			break;
		case OPT_SOCKET:
		case OPT_TIMEOUT:
		case OPT_JSON:
			break;
		case ':':
			ctl_usage_error(ctl, "option %s needs a value", argv[optind - 1]);
			return '?';
		case '?':
			if (optopt) {
				ctl_usage_error(ctl, "unknown option -%c", optopt);
			} else {
				ctl_usage_error(ctl, "unknown option %s",
					argv[optind - 1 >= prev ? optind - 1 : prev]);
			}
			return '?';
		default:
			return opt;
		}
		if (common_option(ctl, opt, optarg) != 0) {
			return '?';
		}
	}
}

char *ctl_read_file(const char *path, size_t *len)
{
	bool is_stdin = strcmp(path, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	if (!f) {
		return NULL;
	}
	size_t cap = 1 << 16;
	size_t n = 0;
	char *buf = ctl_realloc(NULL, cap + 1);
	for (;;) {
		n += fread(buf + n, 1, cap - n, f);
		int e = errno;
		if (n < cap && ferror(f)) {
			free(buf);
			buf = NULL;
			errno = e ? e : EIO;
		} else if (n == cap && cap >= CTL_MAX_FILE) {
			free(buf);
			buf = NULL;
			errno = EFBIG;
		} else if (n == cap) {
			cap *= 2;
			buf = ctl_realloc(buf, cap + 1);
			continue;
		}
		break;
	}
	if (!is_stdin) {
		fclose(f);
	}
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

static const struct ctl_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (strcmp(commands[i].name, name) == 0) {
			return &commands[i];
		}
	}
	return NULL;
}

/* Whether the command's arguments ask for help (before a "--"). */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			break;
		}
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			return true;
		}
	}
	return false;
}

static int cmd_help(struct ctl *ctl, int argc, char **argv)
{
	if (argc <= 1) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	const struct ctl_cmd *cmd = find_command(argv[1]);
	if (!cmd || argc > 2) {
		return ctl_usage_error(ctl, "no command \"%s\"", argv[1]);
	}
	ctl_cmd_help(cmd, stdout);
	return CTL_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct ctl ctl = {.timeout_ms = -1};
	/* Options before the command: the common ones, --help and --version. */
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int opt;
	while ((opt = ctl_getopt(&ctl, argc, argv, "hV", opts)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return CTL_EXIT_OK;
		case 'V':
			printf("vyrectl %s (libvyre %s, protocol %d)\n", vy_version(), vy_version(),
				VY_CLIENT_PROTOCOL);
			return CTL_EXIT_OK;
		default:
			return CTL_EXIT_USAGE;
		}
	}
	int i = optind;
	if (i >= argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	if (strcmp(argv[i], "help") == 0) {
		return cmd_help(&ctl, argc - i, argv + i);
	}
	ctl.cmd = find_command(argv[i]);
	if (!ctl.cmd) {
		return ctl_usage_error(&ctl, "unknown command \"%s\"", argv[i]);
	}
	if (wants_help(argc - i, argv + i)) {
		ctl_cmd_help(ctl.cmd, stdout);
		return CTL_EXIT_OK;
	}
	if (ctl.json && !ctl.cmd->json) {
		return ctl_usage_error(&ctl, "--json is not available for this command");
	}
	/* Restart getopt for the command's own arguments. */
	optind = 0;
	return ctl.cmd->run(&ctl, argc - i, argv + i);
}
