/*
 * Helpers of the reliability suite: a crowd of well-behaved clients that keeps doing checked
 * work on a daemon while a test attacks it, the daemon's resource figures read from /proc,
 * checks run as another user, and small request builders the hostile cases share.
 *
 * Everything here builds on the end-to-end suite's harness (tests/daemon): struct vyd starts the
 * daemon, struct tc talks to it, util.h computes reference outputs.
 *
 * Thread-safety: a crowd is started and stopped by one thread; its members run on their own
 * threads and touch only their own member. The other functions belong to the calling thread.
 */
#ifndef VY_TESTS_RELIABILITY_REL_H
#define VY_TESTS_RELIABILITY_REL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "users.h"
#include "util.h"

#define REL_MAX_CROWD 16
/* Where the cases that need a small file system mount one, followed by the test process's pid
 * (rel_fini unmounts what that process left). */
#define REL_FS_PREFIX "/tmp/vyred-rel-fs-"
#define REL_SETS 4

struct rel_crowd;

/* One well-behaved client: each round dispatches vector_add and compares the outputs with the
 * reference backend's, then writes a fresh pattern to its resident buffer and reads it back. */
struct rel_member {
	struct rel_crowd *crowd;
	int index;
	struct tc c;
	bool connected;
	uint64_t handle;    /* its resident buffer, 0 when it has none */
	uint64_t rounds;    /* rounds whose every result was correct */
	uint64_t tolerated; /* errors the crowd was told to accept */
	uint64_t failures;  /* wrong outputs, other errors, a lost connection */
	uint64_t slowest_ms;
	bool final_round_ok; /* the round after rel_crowd_stop was asked for succeeded */
	char failure[320];   /* the first failure */
};

struct rel_crowd {
	struct rel_crowd *next; /* in the list rel_fini walks */
	int n;
	const int *tolerate; /* error codes to accept (0-terminated), or NULL */
	atomic_bool stop;
	int started; /* threads running */
	pthread_t threads[REL_MAX_CROWD];
	struct rel_member members[REL_MAX_CROWD];
	struct vy_program *program;
	struct t_inputs in[REL_SETS];
	struct vy_outputs want[REL_SETS];
};

/*
 * Connect `n` (at most REL_MAX_CROWD) clients to `sock`, run one round of each, then start their
 * rounds on threads. Errors whose code is in `tolerate` (0-terminated; NULL for none) are
 * counted, not failures: a client whose resident buffer went with a lost device allocates a new
 * one. Asserts that every client connected and passed its first round. The crowd lives on the
 * heap until rel_crowd_stop (or rel_fini, after a failed assertion).
 */
struct rel_crowd *rel_crowd_start(const char *sock, int n, const int *tolerate);
/*
 * Let each client finish one more full round, stop them, and expect that every client finished
 * that last round correctly, completed at least `min_rounds` rounds in all and never saw a wrong
 * result or an error outside `tolerate`. Frees the crowd; stores in *tolerated (may be NULL) the
 * number of tolerated errors. Returns whether all of that held.
 */
bool rel_crowd_stop(struct rel_crowd *cr, uint64_t min_rounds, uint64_t *tolerated);
/*
 * The suites' .fini: after a test whose assertion failed half way, kill the daemons it left
 * running (every child process of this one), stop and free its crowds, and unmount its file
 * systems.
 */
void rel_fini(void);
/* Stop a daemon started with t_start: with `clean`, SIGTERM and expect exit status 0 (no leak);
 * otherwise (its clients were let down already) print its log and kill it. */
void rel_stop(struct vyd *d, bool clean);

/* A daemon of its own for one test, a crowd of `crowd` clients on it, and one more connection
 * (c) for the test's own requests. */
struct rel_scene {
	struct vyd d;
	struct rel_crowd *crowd;
	struct tc c;
	bool vulkan; /* the daemon's first device runs the Vulkan backend */
};

/* Start the daemon with `config`, connect c, start the crowd (tolerating nothing). */
void rel_scene_open(struct rel_scene *s, const char *config, int crowd);
/* Close c, stop the crowd (at least 2 rounds each) and the daemon (rel_stop). */
void rel_scene_close(struct rel_scene *s);
/* Expect error `code` with a Fix line, and `words` (may be NULL) in its message. */
void rel_expect_error(const struct tc_reply *r, int code, const char *words);

/* Daemons started from now on by this test process keep a small AddressSanitizer quarantine
 * (16 MiB instead of 256; rel_asan_quarantine: `mb`), so that their RSS shows what they hold
 * rather than what ASan keeps of freed memory. Without ASan the variable is ignored. */
void rel_lean_asan(void);
void rel_asan_quarantine(int mb);

/* Milliseconds of CLOCK_MONOTONIC. */
long rel_now_ms(void);
/* VmRSS of `pid` in KiB; -1 when it cannot be read. */
long rel_rss_kib(pid_t pid);
/* Open descriptors of `pid`; -1 when they cannot be counted. */
int rel_fd_count(pid_t pid);
/* Wait until `pid` holds at most `most` descriptors; returns the last count. */
int rel_wait_fds(pid_t pid, int most, int timeout_ms);

/* Wait until the stats value at `path` equals `want`; returns the last value read. */
uint64_t rel_wait_stat(struct tc *c, const char *path, uint64_t want, int timeout_ms);
/* The u64 `name` of the first device in a stats reply on `c`; asserts that it exists. */
uint64_t rel_device_stat(struct tc *c, const char *name);
/* Whether the daemon behind `c` runs its first device on the Vulkan backend. */
bool rel_on_vulkan(struct tc *c);

/*
 * Run `fn(arg)` as nobody (uid and gid 65534) in a thread of that identity (tests/daemon/users.h)
 * and return what it returns (0 when its checks passed, otherwise the number of the check that
 * failed, which `fn` also prints), or -1 when the thread could not change user. `fn` must not
 * assert (see the requests below); it shares the test's memory. It needs root: run by another
 * user the test fails, with a Fix, unless VYRED_TEST_ALLOW_NO_ROOT=1 says the cross-user cases
 * may be skipped (they then skip, and Criterion lists them as skipped).
 */
int rel_as_nobody(int (*fn)(void *), void *arg);
/* As rel_as_nobody, as the user `uid` and group `gid` (no supplementary groups); the user need
 * not exist in /etc/passwd, since the daemon knows its peers by SO_PEERCRED alone. */
int rel_as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg);
/* Start `fn(arg)` as `uid`/`gid` and return once it runs (the test goes on beside it, as
 * another user's victim); rel_reap waits for it and returns what rel_as_user would. Needs root,
 * as rel_as_nobody. */
struct t_user *rel_spawn_as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg);
int rel_reap(struct t_user *u);

/* Requests that return the reply's error code (0 when ok) and never assert, so that they also
 * serve in threads and in clients running as another user. */
int rel_alloc(struct tc *c, uint64_t size, const char *name, uint64_t *handle);
int rel_upload(struct tc *c, uint64_t handle, uint64_t offset, const void *data, size_t len);
/* Download `len` bytes at `offset` into `out` (which receives exactly len bytes when ok). */
int rel_download(struct tc *c, uint64_t handle, uint64_t offset, uint64_t len, void *out);
int rel_free(struct tc *c, uint64_t handle);
/* A dispatch of `p` with one input per entry of `inputs`: a non-zero handle is a resident input,
 * a zero handle takes the bytes of `bytes[i]`; `outputs_to` (may be NULL) sends the outputs to
 * resident buffers. The reply is left in *r (free it). */
int rel_dispatch(struct tc *c, const struct vy_program *p, uint32_t n_inputs,
	const uint64_t *handles, const struct vy_bytes *bytes, uint32_t n_outputs_to,
	const uint64_t *outputs_to, struct tc_reply *r);
/* A dispatch of `p` with no inputs and config.grid `grid` (NULL: none) and
 * config.max_loop_iterations `max_loop` (0: none). The reply's error code; the reply in *r. */
int rel_dispatch_grid(struct tc *c, const struct vy_program *p, const uint32_t *grid,
	uint64_t max_loop, struct tc_reply *r);

#endif
