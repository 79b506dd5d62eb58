/*
 * vyred: the command line. Parses flags into configuration overrides, answers --help, --version,
 * --check and --emit-glsl, and otherwise runs the server until SIGTERM.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "sigbus.h"
#include "vyred.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: vyred [OPTION]...\n"
		"The vyre GPU dispatch daemon: clients send vyre IR programs and buffers over a "
		"Unix\n"
		"socket (protocol 1) and get their outputs back.\n"
		"\n"
		"  -c, --config FILE      read FILE instead of %s\n"
		"  -s, --socket PATH      listen on PATH (socket_path)\n"
		"  -b, --backend ID       auto, vulkan or reference (backend)\n"
		"  -d, --device LIST      all, or device indices such as 0,1 (devices)\n"
		"  -C, --cache-dir DIR    disk cache folder (cache_dir)\n"
		"  -l, --log-level LEVEL  err, warning, notice, info or debug (log_level)\n"
		"  -o, --set KEY=VALUE    set any configuration key\n"
		"      --check            run the self-checks and exit (0 when all pass)\n"
		"      --emit-glsl PROGRAM.json\n"
		"                         print the GLSL the Vulkan backend generates for the\n"
		"                         program (\"-\": standard input) and exit; no server,\n"
		"                         no GPU needed (exit status: see vyred(8))\n"
		"      --profile NAME     the float profile --emit-glsl generates for: lavapipe\n"
		"                         (default), nvidia (H100, H200), or device (opens\n"
		"                         device 0, or the one index --device names)\n"
		"      --spirv            with --emit-glsl: the SPIR-V the backend compiles from\n"
		"                         it, disassembled, instead of the GLSL\n"
		"  -f, --foreground       log for a terminal: time stamps and level names instead "
		"of\n"
		"                         the <N> priority prefixes journald reads (vyred never "
		"forks)\n"
		"  -h, --help             show this help and exit\n"
		"  -V, --version          show the version and exit\n"
		"\n"
		"Configuration keys (INI sections in brackets; environment: VYRED_<KEY>, and\n"
		"VYRED_CONFIG for the file; precedence: flags, environment, file, defaults;\n"
		"* marks keys that SIGHUP reloads):\n",
		VY_CONFIG_DEFAULT_PATH);
#define VY__CONF_HELP(field, section, type, def, reload, help)                                     \
	fprintf(f, "  [%s] %s%s = %s\n      %s\n", section, #field, reload ? "*" : "", def, help);
	VY_CONFIG_MAP(VY__CONF_HELP)
#undef VY__CONF_HELP
}

static int add_set(struct vy_config_args *args, const char *key, const char *value)
{
	if (args->n_sets == VY_CONFIG_MAX_SETS) {
		fprintf(stderr, "vyred: too many settings on the command line\n");
		return -1;
	}
	args->keys[args->n_sets] = key;
	args->values[args->n_sets] = value;
	args->n_sets++;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{"config", required_argument, NULL, 'c'},
		{"socket", required_argument, NULL, 's'},
		{"backend", required_argument, NULL, 'b'},
		{"device", required_argument, NULL, 'd'},
		{"cache-dir", required_argument, NULL, 'C'},
		{"log-level", required_argument, NULL, 'l'},
		{"set", required_argument, NULL, 'o'},
		{"check", no_argument, NULL, 'K'},
		{"emit-glsl", required_argument, NULL, 'E'},
		{"profile", required_argument, NULL, 'P'},
		{"spirv", no_argument, NULL, 'S'},
		{"foreground", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct vy_config_args args = {0};
	bool check = false;
	const char *emit = NULL;
	const char *profile = NULL;
	const char *device = NULL;
	bool spirv = false;
	bool foreground = false;
	/* Keys named by --set are split in place; argv outlives the server. */
	int opt;
	while ((opt = getopt_long(argc, argv, "c:s:b:d:C:l:o:fhV", options, NULL)) != -1) {
		int rc = 0;
		switch (opt) {
		case 'c':
			args.file = optarg;
			break;
		case 's':
			rc = add_set(&args, "socket_path", optarg);
			break;
		case 'b':
			rc = add_set(&args, "backend", optarg);
			break;
		case 'd':
			device = optarg;
			rc = add_set(&args, "devices", optarg);
			break;
		case 'C':
			rc = add_set(&args, "cache_dir", optarg);
			break;
		case 'l':
			rc = add_set(&args, "log_level", optarg);
			break;
		case 'o': {
			char *eq = strchr(optarg, '=');
			if (!eq) {
				fprintf(stderr, "vyred: --set needs KEY=VALUE, got \"%s\"\n",
					optarg);
				return 2;
			}
			*eq = '\0';
			rc = add_set(&args, optarg, eq + 1);
			break;
		}
		case 'K':
			check = true;
			break;
		case 'E':
			emit = optarg;
			break;
		case 'P':
			profile = optarg;
			break;
		case 'S':
			spirv = true;
			break;
		case 'f':
			foreground = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("vyred %s (protocol %d)\n", VY_DAEMON_VERSION, VY_PROTOCOL_VERSION);
			return 0;
		default:
			fprintf(stderr, "Try 'vyred --help'.\n");
			return 2;
		}
		if (rc) {
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vyred: unexpected argument \"%s\"\nTry 'vyred --help'.\n",
			argv[optind]);
		return 2;
	}
	if (!emit && (profile || spirv)) {
		fprintf(stderr, "vyred: --profile and --spirv go with --emit-glsl\nTry 'vyred "
				"--help'.\n");
		return 2;
	}
	if (emit) {
		return vy_emit_run(emit, profile ? profile : "lavapipe", device, spirv);
	}
	/* A client that disconnects must not kill the daemon with SIGPIPE; writes report EPIPE. */
	signal(SIGPIPE, SIG_IGN);
	/* Every client holds a descriptor: take all the kernel allows, so that max_clients and not
	 * a soft limit of 1024 decides how many are served. */
	struct rlimit files;
	if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
		files.rlim_cur = files.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &files);
	}
	vy_log_setup(VY_LOG_INFO, foreground && isatty(STDERR_FILENO));

	if (check) {
		struct vy_config cfg;
		struct vy_err err = {0};
		char text[VY_ERR_MESSAGE_MAX + VY_ERR_FIX_MAX + VY_ERR_AT_MAX + 32];
		int rc = vy_config_build(&cfg, &args, &err);
		if (rc) {
			snprintf(text, sizeof(text), "%s%s%s", err.at[0] ? err.at : "",
				err.at[0] ? ": " : "", err.message);
		}
		int status = vy_check_run(&cfg, rc ? text : NULL);
		vy_config_finish(&cfg);
		return status;
	}

	/* Before any thread starts: a client's shared memory that loses its pages fails that
	 * client's request instead of killing the daemon (sigbus.h). */
	if (vy_sigbus_guard_install() != 0) {
		vy_log(VY_LOG_WARNING, "the SIGBUS guard could not be installed; a shared memory "
				       "region that loses "
				       "its pages will stop the daemon");
	}
	struct vy_server *s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "vyred: out of memory\n");
		return 1;
	}
	struct vy_err err = {0};
	int status = 1;
	if (vy_server_init(s, &args, &err) != 0) {
		vy_log_err(VY_LOG_ERR, &err, "cannot start");
	} else {
		status = vy_server_run(s);
		vy_log(VY_LOG_NOTICE, "stopped");
	}
	vy_server_finish(s);
	vy_sigbus_guard_remove();
	if (s->exit_code) {
		status = s->exit_code;
	}
	free(s);
	return status;
}
