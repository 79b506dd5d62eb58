/*
 * Running a real vyred for the end-to-end tests: a temporary folder holds its socket, disk cache,
 * configuration, log and a datagram socket that plays systemd's NOTIFY_SOCKET and records every
 * notification (READY=1, WATCHDOG=1, STOPPING=1, STATUS=...).
 *
 * The binary comes from VYRED_BIN; VYRED_TEST_BACKEND picks the backend ("reference", or unset
 * for the daemon's default: Vulkan where a device opens, else reference), so one suite runs on
 * each backend. A daemon started without a backend of the test's choosing must have opened the
 * backend the suite runs on as its device 0, else vyd_start fails: VYRED_TEST_BACKEND when set,
 * else VYRED_TEST_EXPECT_BACKEND, else "vulkan". A default run therefore fails on a machine where
 * the daemon fell back to the reference, unless the environment says that is expected.
 *
 * Thread-safety: a struct vyd belongs to one thread.
 */
#ifndef VY_TESTS_DAEMON_HARNESS_H
#define VY_TESTS_DAEMON_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct vyd {
	pid_t pid;
	char dir[256];
	char sock[320];
	char cache[320];
	char conf[320];
	char log[320];
	char notify[320];
	int notify_fd;
	/* A thread reads notifications as they come, as systemd does: sd_notify blocks on a full
	 * socket queue. */
	pthread_t reader;
	bool reader_started;
	pthread_mutex_t lock;
	char notes[16384]; /* guarded by lock */
	size_t notes_len;
	bool own_cache;
};

struct vyd_opts {
	const char *config;      /* INI text written to the config file (may be NULL) */
	const char *cache;       /* an existing cache folder to reuse; NULL: a fresh one */
	bool watchdog;           /* set WATCHDOG_USEC so the daemon pings */
	bool activation;         /* run under systemd-socket-activate */
	const char *const *args; /* extra arguments, NULL-terminated */
	bool no_wait;            /* do not wait for READY=1 */
	bool deaf;               /* nobody reads the notify socket (a stuck service manager) */
};

/* Start a daemon; returns 0 once it has sent READY=1, or -1 (its log is printed). */
int vyd_start(struct vyd *d, const struct vyd_opts *o);
/* SIGTERM and wait; returns the exit status (or 128 + signal, or -1 on a timeout). */
int vyd_stop(struct vyd *d);
/* Wait for the daemon to exit by itself; as vyd_stop. */
int vyd_wait(struct vyd *d, int timeout_ms);
/* Whether notification `note` ("READY=1") has arrived, waiting up to timeout_ms. */
bool vyd_note(struct vyd *d, const char *note, int timeout_ms);
/* Whether a notification starting with `prefix` ("STATUS=") has arrived. */
bool vyd_note_prefix(struct vyd *d, const char *prefix);
/* Remove the temporary folder (keeping a reused cache). */
void vyd_cleanup(struct vyd *d);
/* Print the daemon's log to stderr (for failures). */
void vyd_dump_log(const struct vyd *d);
/* Whether the log contains `text`. */
bool vyd_log_has(const struct vyd *d, const char *text);

const char *vyd_bin(void);
/* "reference" or NULL (default). */
const char *vyd_backend(void);
/* The backend every daemon of the run must use when the test does not choose one. */
const char *vyd_expected_backend(void);
/* The shared daemon's socket (started by main for the whole suite). */
const char *vyd_shared_socket(void);

#endif
