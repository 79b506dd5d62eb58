/*
 * vyrectl's private declarations, shared by its source files: exit codes, the global options,
 * the commands, and the helpers for talking to the daemon, printing tables and writing JSON.
 *
 * Two families of headers meet in vyrectl and never in one file: the commands that talk to the
 * daemon see only <vy/vyre.h> (libvyre), while check.c and layout.c read programs with the
 * protocol and planner modules. This header includes neither, so both sides can use it.
 *
 * Thread-safety: vyrectl is single-threaded.
 */
#ifndef VY_CLIENT_VYRECTL_VYRECTL_H
#define VY_CLIENT_VYRECTL_VYRECTL_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses, documented in `vyrectl --help`. */
enum {
	CTL_EXIT_OK = 0,
	CTL_EXIT_DAEMON = 1,  /* the daemon answered an error */
	CTL_EXIT_USAGE = 2,   /* bad command line */
	CTL_EXIT_INVALID = 3, /* the program failed the local check */
	CTL_EXIT_FILE = 4,    /* a file could not be read or written */
	CTL_EXIT_CONNECT = 5, /* no daemon could be reached */
};

/* Options every command accepts. */
struct ctl {
	const char *socket; /* --socket, or NULL: $VYRED_SOCKET, else the default */
	bool json;          /* --json */
	int timeout_ms;     /* --timeout in milliseconds; -1 waits forever */
	const struct ctl_cmd *cmd;
};

struct ctl_cmd {
	const char *name;
	const char *synopsis; /* arguments after the name */
	const char *summary;  /* one line for the command list */
	const char *help;     /* the rest of `vyrectl NAME --help` */
	bool json;            /* accepts --json */
	int (*run)(struct ctl *ctl, int argc, char **argv);
};

/*
 * Command-line parsing: getopt_long over `argv` (argv[0] is the command name) with the
 * command's options plus --socket, --timeout and --json, which are handled here (main answers
 * --help before the command runs).
 * Returns the next option of the command's own (its `val`), -1 at the end, or '?' after printing
 * a usage error. Call it in a loop; positional arguments are left at argv[optind...]. Before a
 * command is chosen (ctl->cmd NULL) parsing stops at the first argument that is no option.
 */
int ctl_getopt(struct ctl *ctl, int argc, char **argv, const char *shortopts,
	const struct option *longopts);
/* Print `vyrectl NAME --help` to `out`. */
void ctl_cmd_help(const struct ctl_cmd *cmd, FILE *out);
/* Print "vyrectl NAME: <message>. Fix: see vyrectl NAME --help." and return CTL_EXIT_USAGE. */
int ctl_usage_error(const struct ctl *ctl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Check that exactly `n` positional arguments remain; otherwise report and return false. */
bool ctl_want_args(const struct ctl *ctl, int argc, char **argv, int n);
/* The socket path vyrectl connects to (for messages). */
const char *ctl_socket_path(const struct ctl *ctl);

/* realloc that aborts with a message when memory runs out (size 0 allocates 1 byte). */
void *ctl_realloc(void *p, size_t size);

/* The largest file vyrectl reads (a program, or the bytes of an input). */
#define CTL_MAX_FILE ((size_t)1 << 30)

/* Read a whole file ("-" is standard input) into a malloc'd buffer with a NUL after the bytes.
 * NULL (errno set) when it cannot be read. */
char *ctl_read_file(const char *path, size_t *len);

/* The commands (commands.c, run.c, check.c). */
int ctl_cmd_status(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_stats(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_clients(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_buffers(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_graphs(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_devices(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_cache(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_ping(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_run(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_compile(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_check(struct ctl *ctl, int argc, char **argv);
int ctl_cmd_graph(struct ctl *ctl, int argc, char **argv);

/* --- programs read locally (check.c) --- */

#define CTL_LAYOUT_MAX 32

/* A buffer of a program as `run` needs it. */
struct ctl_slot {
	char name[72];
	char type[8];   /* "u32", "i32", "f32" or "bool" */
	uint32_t count; /* declared elements; 0: sized by its input */
};

/* A program's inputs and outputs, in the order a dispatch takes and returns them. */
struct ctl_layout {
	char program_name[72];
	size_t n_inputs;
	struct ctl_slot inputs[CTL_LAYOUT_MAX];
	size_t n_outputs;
	struct ctl_slot outputs[CTL_LAYOUT_MAX];
};

/*
 * Read the program at `path`, decode and validate it as the daemon will, and fill `out` from its
 * binding plan. On success returns 0 with the file's text in *text (malloc'd and NUL-terminated,
 * the caller frees it) and its length in *len. On failure prints what failed (every validation
 * error with its Fix) and returns CTL_EXIT_FILE or CTL_EXIT_INVALID, with *text NULL.
 */
int ctl_layout_load(
	const struct ctl *ctl, const char *path, struct ctl_layout *out, char **text, size_t *len);

struct json_object;

/* Shared with graph.c (run.c): the bytes of input DATA for a buffer like `slot` (an exit
 * status; *p malloc'd), and one output printed in the slot's type, or added to the JSON array
 * `into` when it is not NULL. */
int ctl_slot_input(const struct ctl *ctl, const struct ctl_slot *slot, const char *data,
	uint8_t **p, size_t *len);
void ctl_slot_print(const struct ctl *ctl, const struct ctl_slot *slot, const uint8_t *p,
	size_t len, struct json_object *into);

/* --- human output (table.c) --- */

#define CTL_TABLE_COLS 16

/* A table printed with aligned columns; cells are copied. Columns whose header starts with '>'
 * are right-aligned (the '>' is not printed). */
struct ctl_table {
	size_t n_cols;
	const char *headers[CTL_TABLE_COLS];
	size_t n_rows;
	size_t cap;
	char **cells; /* owned: n_rows * n_cols strings */
};

void ctl_table_init(struct ctl_table *t, size_t n_cols, const char *const *headers);
/* Add a row of n_cols cells (NULL cells print as "-"). */
void ctl_table_row(struct ctl_table *t, const char *const *cells);
void ctl_table_print(const struct ctl_table *t, FILE *out);
void ctl_table_finish(struct ctl_table *t);

/* Human renderings into `buf` (returned): "1.5 KiB", "12.3 µs", "2h 03m 05s". */
#define CTL_FMT_MAX 48
char *ctl_fmt_bytes(uint64_t bytes, char *buf);
char *ctl_fmt_ns(uint64_t ns, char *buf);
char *ctl_fmt_uptime(uint64_t ms, char *buf);
char *ctl_fmt_u64(uint64_t v, char *buf);

#endif
