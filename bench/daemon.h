/*
 * The vyred that vybench measures: started from a binary path in a temporary folder of its own
 * (socket, disk cache, systemd notification socket), its log appended to a file the caller names,
 * and stopped and started again on the same cache for the restart figure.
 *
 * Readiness is systemd's: the daemon runs with NOTIFY_SOCKET pointing at a datagram socket of
 * ours, and start returns once READY=1 arrives. The daemon gets PR_SET_PDEATHSIG, so it never
 * outlives a crashed vybench.
 *
 * Errors: INTERNAL when the folder or sockets cannot be made or the binary does not start,
 * TIMEOUT when it does not become ready (its log names why).
 *
 * Thread-safety: belongs to the thread that created it (the death signal follows that thread).
 */
#ifndef VY_BENCH_DAEMON_H
#define VY_BENCH_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define VY_BENCH_DAEMON_ARGS_MAX 64

struct vy_bench_daemon {
	const char *bin; /* borrowed */
	const char *log; /* borrowed: the file its stderr is appended to */
	char dir[64];    /* the temporary folder, removed by finish */
	char sock[96];
	char cache[96];
	char notify[96];
	/* Extra arguments after --socket and --cache-dir (borrowed strings). */
	const char *args[VY_BENCH_DAEMON_ARGS_MAX];
	size_t n_args;
	pid_t pid;         /* 0 when not running */
	uint64_t ready_ns; /* how long the last start took to READY=1 */
};

/* Make the temporary folder; `bin` and `log` must outlive the daemon. */
int vy_bench_daemon_init(
	struct vy_bench_daemon *d, const char *bin, const char *log, struct vy_err *err);
/* Add an argument for the next starts. Returns false when the list is full. */
bool vy_bench_daemon_arg(struct vy_bench_daemon *d, const char *arg);
/* The arguments of every daemon vybench measures: `devices` (the devices key), the Vulkan
 * backend, log level notice, room for the large inputs and buffers of the data figures, then
 * the `n_sets` KEY=VALUE settings (borrowed, as `devices`). Returns false when the list is full. */
bool vy_bench_daemon_args(
	struct vy_bench_daemon *d, const char *devices, const char *const *sets, size_t n_sets);
/* Start it and wait for READY=1 (up to two minutes). */
int vy_bench_daemon_start(struct vy_bench_daemon *d, struct vy_err *err);
/* SIGTERM and wait (up to a minute, then SIGKILL); an exit status other than 0 is INTERNAL. */
int vy_bench_daemon_stop(struct vy_bench_daemon *d, struct vy_err *err);
/* Kill a daemon still running and remove the temporary folder. */
void vy_bench_daemon_finish(struct vy_bench_daemon *d);

#endif
