/*
 * Counters of the daemon (DESIGN.md §7.6), and its latency histograms (hist.h).
 *
 * Thread-safety: none; every histogram and counter here is written and read on the loop thread.
 */
#ifndef VY_DAEMON_STATS_H
#define VY_DAEMON_STATS_H

#include <stdint.h>

#include "envelope.h"
#include "hist.h"

/* The index of an error code in the tables below (its row of VY_ERR_MAP). */
#define VY_ERR_COUNT 17
int vy_err_index(int code);
/* The code of row `index` of VY_ERR_MAP. */
int vy_err_at_index(int index);

struct vy_stats {
	uint64_t by_op[VY_OP_COUNT];
	uint64_t by_error[VY_ERR_COUNT];
	struct vy_hist latency[VY_OP_COUNT]; /* decode to reply, per operation */
	struct vy_hist queue_wait;           /* enqueue to start on a device, every job */
	uint64_t connections_accepted;
	uint64_t connections_refused; /* beyond max_clients or max_clients_per_user */
	uint64_t connections_stalled; /* closed by stall_timeout_ms */
	uint64_t connections_idle;    /* closed by idle_timeout_ms */
	uint64_t inbound_waits;       /* times a connection waited for inbound room */
	uint64_t frames_reused;       /* frames read into the buffer their connection kept */
	uint64_t frames_imported;     /* frame buffers a device imported to read large inputs */
	uint64_t reply_waits;         /* dispatches that waited for reply room */
	uint64_t bad_frames;
	uint64_t bytes_in;
	uint64_t bytes_out;
	uint64_t backpressure_pauses;
};

#endif
