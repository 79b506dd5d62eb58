/*
 * The daemon's configuration (DESIGN.md §7.7). Every key is described once, as data, in
 * VY_CONFIG_MAP: its section of the INI file, its type, its default, whether SIGHUP can change it
 * while the daemon runs, and one line of help. The effective value of a key comes from, in
 * increasing precedence: the default, the INI file (/etc/vyred/vyred.conf unless --config or
 * VYRED_CONFIG names another), the environment (VYRED_ followed by the key in capitals, such as
 * VYRED_MAX_INFLIGHT), and the command line (--socket, --backend, ..., or --set key=value).
 *
 * An unknown key, a key in the wrong section or a value that does not parse is an error naming
 * the file and line (or the variable), so a typo never passes silently.
 *
 * Thread-safety: a struct vy_config belongs to the loop thread; other threads receive copies of
 * the values they need.
 */
#ifndef VY_DAEMON_CONFIG_H
#define VY_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The build sets it from its sysconfdir, so a daemon installed under /usr/local reads
 * /usr/local/etc/vyred/vyred.conf. */
#ifndef VY_CONFIG_DEFAULT_PATH
#define VY_CONFIG_DEFAULT_PATH "/etc/vyred/vyred.conf"
#endif

/* X(field, section, type, default, reloadable, help) */
#define VY_CONFIG_MAP(X)                                                                           \
	X(socket_path, "daemon", STR, "/run/vyred/vyred.sock", false,                              \
		"path of the listening Unix socket (ignored under socket activation)")             \
	X(socket_mode, "daemon", MODE, "0660", false, "permission bits of the socket file")        \
	X(socket_group, "daemon", STR, "", false,                                                  \
		"group that owns the socket file; empty keeps the daemon's group")                 \
	X(admin_group, "daemon", STR, "", true,                                                    \
		"members may clear caches and see every user's clients and buffers")               \
	X(log_level, "daemon", LEVEL, "info", true, "err, warning, notice, info or debug")         \
	X(backend, "devices", STR, "auto", false,                                                  \
		"auto (vulkan when a device opens, else reference), vulkan or reference")          \
	X(devices, "devices", STR, "all", false,                                                   \
		"all, or a comma-separated list of device indices to open")                        \
	X(vulkan_validation, "devices", BOOL, "false", false,                                      \
		"run the Vulkan backend under the Khronos validation layer")                       \
	X(reference_subgroup_size, "devices", U64, "0", false,                                     \
		"subgroup width the reference backend simulates; 0 for its default (8)")           \
	X(batch_max, "devices", U64, "64", true, "most jobs a submit thread takes per wake-up")    \
	X(batch_cost_us, "devices", U64, "2000", true,                                             \
		"expected device time of one batch in microseconds; a job expected to take "       \
		"longer runs alone")                                                               \
	X(spin, "devices", STR, "auto", false,                                                     \
		"poll for work and completions instead of sleeping while a device is busy: auto "  \
		"(on GPUs, not on CPU devices), on or off")                                        \
	X(cache_dir, "cache", STR, "/var/cache/vyred", false,                                      \
		"folder of the disk cache (programs, SPIR-V, pipeline cache)")                     \
	X(disk_cache, "cache", BOOL, "true", false, "keep programs and pipelines on disk")         \
	X(disk_cache_bytes, "cache", SIZE, "1G", false,                                            \
		"bytes of the disk cache's files; the least recently used go first")               \
	X(program_cache_entries, "cache", U64, "4096", true, "programs kept in memory")            \
	X(program_cache_bytes, "cache", SIZE, "256M", true,                                        \
		"canonical program bytes kept in memory")                                          \
	X(pipeline_cache_entries, "cache", U64, "1024", true, "compiled pipelines kept in memory") \
	X(pipeline_cache_bytes, "cache", SIZE, "512M", true,                                       \
		"estimated bytes of compiled pipelines kept in memory")                            \
	X(compile_threads, "cache", U64, "4", false,                                               \
		"threads that validate and compile programs (the size of libuv's pool)")           \
	X(compile_per_user, "cache", U64, "2", true,                                               \
		"validations and compiles of one user running at once; the rest wait their turn")  \
	X(warm_pipelines, "cache", U64, "32", false,                                               \
		"pipelines of the most recently used programs on disk built at start, before the " \
		"daemon reports ready; 0 for none")                                                \
	X(max_frame, "limits", SIZE, "256M", true, "largest frame a client may send")              \
	X(max_inflight, "limits", U64, "64", true,                                                 \
		"requests one connection may have in flight; beyond it: BUSY")                     \
	X(resident_quota, "limits", SIZE, "1G", true,                                              \
		"resident buffer bytes one user may hold; beyond it: QUOTA_EXCEEDED")              \
	X(resident_total, "limits", SIZE, "4G", true,                                              \
		"resident buffer bytes all users together may hold; beyond it: QUOTA_EXCEEDED")    \
	X(max_clients, "limits", U64, "4096", true, "connections held at once")                    \
	X(max_clients_per_user, "limits", U64, "1024", true,                                       \
		"connections one user may hold at once; beyond it: QUOTA_EXCEEDED, then close")    \
	X(idle_timeout_ms, "limits", U64, "300000", true,                                          \
		"close a connection idle this long (nothing in flight or unsent, no buffer or "    \
		"region); 0 never")                                                                \
	X(max_inflight_per_user, "limits", U64, "1024", true,                                      \
		"requests one user may have in flight over all connections; beyond it: BUSY")      \
	X(max_inflight_total, "limits", U64, "4096", true,                                         \
		"requests all users together may have in flight; beyond it: BUSY")                 \
	X(inbound_quota, "limits", SIZE, "512M", true,                                             \
		"bytes of frames one user may have arriving or waiting for their answers")         \
	X(inbound_total, "limits", SIZE, "2G", true,                                               \
		"bytes of frames all users together may have arriving or waiting")                 \
	X(max_output, "limits", SIZE, "1G", true,                                                  \
		"output bytes one dispatch may return or allocate; beyond it: QUOTA_EXCEEDED")     \
	X(reply_quota, "limits", SIZE, "1G", true,                                                 \
		"reply bytes one user may have in preparation or unsent; beyond it dispatches "    \
		"wait and downloads get BUSY")                                                     \
	X(reply_total, "limits", SIZE, "4G", true,                                                 \
		"reply bytes all users together may have in preparation or unsent")                \
	X(max_shm_regions, "limits", U64, "64", true, "shared memory regions per connection")      \
	X(max_graph_steps, "limits", U64, "1024", true, "steps one graph may hold (at most 4096)") \
	X(max_graphs, "limits", U64, "256", true, "graphs one connection may hold at once")        \
	X(shm_quota, "limits", SIZE, "64G", true,                                                  \
		"shared memory bytes one user may have attached at once; beyond it: "              \
		"QUOTA_EXCEEDED")                                                                  \
	X(shm_total, "limits", SIZE, "256G", true,                                                 \
		"shared memory bytes all users together may have attached; beyond it: "            \
		"QUOTA_EXCEEDED")                                                                  \
	X(max_loop_iterations, "limits", U64, "16777216", true,                                    \
		"cap on the loop iterations of one invocation (config.max_loop_iterations)")       \
	X(dispatch_timeout_ms, "limits", U64, "30000", true,                                       \
		"cap on the run time of one dispatch (config.timeout_ms)")                         \
	X(write_high_water, "limits", SIZE, "64M", true,                                           \
		"unsent reply bytes at which a connection stops being read")                       \
	X(write_low_water, "limits", SIZE, "16M", true,                                            \
		"unsent reply bytes below which reading resumes")                                  \
	X(stall_timeout_ms, "limits", U64, "60000", true,                                          \
		"a frame not complete this long after its first byte closes the connection; 0 "    \
		"never")                                                                           \
	X(drain_timeout_ms, "limits", U64, "10000", true,                                          \
		"how long SIGTERM waits for requests in flight")                                   \
	X(fault_injection, "debug", BOOL, "false", false,                                          \
		"accept inject_fault from admin peers, to test failure handling; never in "        \
		"production")

#define VY__CONF_CTYPE_STR char *
#define VY__CONF_CTYPE_BOOL bool
#define VY__CONF_CTYPE_U64 uint64_t
#define VY__CONF_CTYPE_SIZE uint64_t
#define VY__CONF_CTYPE_MODE uint32_t
#define VY__CONF_CTYPE_LEVEL int

struct vy_config {
#define VY__CONF_FIELD(field, section, type, def, reload, help) VY__CONF_CTYPE_##type field;
	VY_CONFIG_MAP(VY__CONF_FIELD)
#undef VY__CONF_FIELD
	char *file; /* owned: the INI file that was read, or NULL when none was */
};

#define VY_CONFIG_MAX_SETS 32

/* What the command line asked for, kept to apply again on SIGHUP. Strings are borrowed (argv). */
struct vy_config_args {
	const char *file; /* --config; NULL: VYRED_CONFIG or the default path */
	size_t n_sets;
	const char *keys[VY_CONFIG_MAX_SETS];
	const char *values[VY_CONFIG_MAX_SETS];
};

/* Fill `c` with every default. */
void vy_config_init(struct vy_config *c);
/* Free the strings of `c`. NULL is accepted. */
void vy_config_finish(struct vy_config *c);

/* Parse `value` for `key` and store it. Errors: BAD_REQUEST naming the key and the value. */
int vy_config_set(struct vy_config *c, const char *key, const char *value, struct vy_err *err);

/*
 * Build the effective configuration: defaults, the INI file, VYRED_* variables, then `args`, and
 * check the result as a whole. A missing default file is not an error; a missing file named by
 * --config or VYRED_CONFIG is. On failure `c` holds defaults and `err` says what to change.
 */
int vy_config_build(struct vy_config *c, const struct vy_config_args *args, struct vy_err *err);

/* Whether SIGHUP may change `key` (the help and logs say which keys need a restart). */
bool vy_config_reloadable(const char *key);

/*
 * Copy the reloadable values of `fresh` into `live` and log each change; log a warning for each
 * key that changed but needs a restart. Returns the number of values changed.
 */
int vy_config_apply_reload(struct vy_config *live, const struct vy_config *fresh);

/* The value of `key` in `c` as text (for --check and logs) into buf; NULL for an unknown key. */
const char *vy_config_value_text(
	const struct vy_config *c, const char *key, char *buf, size_t size);

/* Key names in table order, NULL-terminated. */
extern const char *const vy_config_keys[];

#endif
