/*
 * The daemon's objects and the calls between its files (DESIGN.md §7). One libuv loop thread owns
 * every object here except what a device's lock guards; the thread pool runs validation and
 * compilation on objects that no one else touches until their work completes; one submit thread
 * per device runs jobs.
 *
 *   server     the loop, the listening socket, signals, timers, caches, devices, connections
 *   conn       one client connection: its peer credentials, framing, replies, per-device queues
 *   req        one request from decoding to its reply, with its job when it runs on a device
 *   device     one opened backend with its submit thread, queues and completion async
 *   prog       a program cache entry: canonical bytes, the validated program, its plan
 *   pipe       a pipeline cache entry: (program, spec values, workgroup size, device) compiled
 *   resident   a resident buffer of a client; shm: an attached shared memory region
 *
 * Lifetimes: connections and requests are freed at safe points (close callbacks, write
 * callbacks), never inside the callback of the object being freed. Cache entries, resident
 * buffers and shm regions are reference-counted on the loop thread: a table holds one
 * reference, each request using one holds another, so a free or an eviction never pulls memory
 * from under a running job.
 */
#ifndef VY_DAEMON_VYRED_H
#define VY_DAEMON_VYRED_H

#include <msgpack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "backend.h"
#include "binding.h"
#include "codec.h"
#include "config.h"
#include "envelope.h"
#include "frame.h"
#include "htable.h"
#include "list.h"
#include "spec.h"
#include "stats.h"
#include "validate.h"

#define VY_DAEMON_VERSION "0.1.0"
#define VY_MAX_DEVICES 16
#define VY_READ_CHUNK ((size_t)256 * 1024)
/* A frame with at least this much payload still to come is read into place, this much at most
 * per read; smaller ones go through the shared read buffer, several frames per read. */
#define VY_READ_DIRECT ((size_t)8 * 1024 * 1024)
/* A frame buffer of at least this size is kept for its connection's next frame, for up to
 * VY_KEEP_IDLE_NS (conn.c). */
#define VY_KEEP_MIN ((size_t)1024 * 1024)
#define VY_KEEP_IDLE_NS UINT64_C(1000000000)
/* Replies up to this size are gathered per connection and written together (conn.c). */
#define VY_CORK_MAX ((size_t)64 * 1024)
/* Descriptors a peer may send ahead of the shm_attach frames that consume them. */
#define VY_MAX_PENDING_FDS 8

struct vy_server;
struct vy_conn;
struct vy_req;

/* --- devices and jobs ---------------------------------------------------------------------- */

/*
 * One user's share of one device (device.c): the device time charged to the user, in virtual
 * nanoseconds, and its connections' queues that hold jobs. Guarded by the device lock; held by
 * each queue bound to it and by each of its jobs being run.
 */
struct vy_fair_user {
	struct vy_link link;   /* in the device's users */
	struct vy_link active; /* in the device's active users while one of its queues holds jobs */
	struct vy_link ring;   /* vy_cqueue.ring: its queues holding jobs, served round-robin */
	uid_t uid;
	uint32_t refs;
	uint64_t vtime;  /* device time charged so far, from the device's virtual clock */
	uint64_t est_ns; /* expected device time of a job of a new connection of the user */
};

/* One connection's queue of jobs for one device; in its user's ring while it holds jobs. */
struct vy_cqueue {
	struct vy_link jobs; /* guarded by the device lock */
	struct vy_link ring; /* guarded by the device lock */
	struct vy_conn *conn;
	struct vy_fair_user *user; /* a reference, from the first job on; guarded by the lock */
	uint64_t est_ns;           /* expected device time of its next job; guarded by the lock */
};

struct vy_device {
	struct vy_server *srv;
	uint32_t index;
	struct vy_backend *backend; /* owned */
	struct vy_device_profile profile;
	struct vy_caps caps;
	uint64_t fingerprint;
	bool vulkan; /* the backend reports disk-cache hits through vy_vulkan_stats */
	/* A GPU: with work in flight, the submit thread polls its queue and the loop polls for
	 * completions instead of sleeping, so neither pays a wake-up per dispatch. Never on a CPU
	 * device, whose work needs the cores. */
	bool spin;
	uv_async_t async;
	bool async_open;
	uv_idle_t idle; /* active while the loop polls; loop thread */
	bool idle_open;
	uint32_t loop_jobs;     /* jobs submitted and not yet completed on the loop; loop thread */
	uint64_t idle_until_ns; /* the loop keeps polling until then after the last completion */
	_Atomic uint64_t submitted; /* jobs ever queued: read by the spinning submit thread */
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Guarded by lock. */
	struct vy_link done; /* finished jobs, handed to the loop by the async */
	uint32_t depth;      /* jobs queued */
	uint32_t running;    /* jobs of the batch in progress not yet handed to the loop */
	bool stop;
	uint32_t batch_max; /* from the configuration; changed by SIGHUP */
	bool reset_pending; /* the device was lost and recovered; the loop drops its caches */

	/* The fair scheduler (device.c); guarded by lock. */
	struct vy_link users;   /* vy_fair_user.link: every user with a queue bound to the device */
	struct vy_link active;  /* vy_fair_user.active: users with queued jobs */
	uint64_t vclock;        /* virtual time: the charge of the user last served, when it was */
	uint64_t batch_cost_ns; /* expected device time one batch may hold; changed by SIGHUP */

	uint64_t generation;
	uint64_t dispatches;
	uint64_t busy_ns;
	uint64_t batches;
	uint64_t jobs_done;
	uint32_t largest_batch;
	uint64_t started_together;   /* jobs started and left in flight (run_batch) */
	uint64_t batches_overlapped; /* batches started while an earlier one was in flight */
	uint64_t lost_count;
	uint64_t timeouts; /* dispatches ended by their timeout (and stopped on the device) */
};

enum vy_job_kind {
	VY_JOB_DISPATCH,          /* bytes and shm inputs, outputs in the reply */
	VY_JOB_RESIDENT_DISPATCH, /* some buffer bound to a resident buffer */
	VY_JOB_ALLOC,
	VY_JOB_UPLOAD,
	VY_JOB_DOWNLOAD,
	VY_JOB_GRAPH, /* one run of a graph: all its steps, one timeout */
};

struct vy_graph;

/* How one non-workgroup buffer of a resident dispatch is bound. */
struct vy_bind_src {
	struct vy_resource res; /* the bound resource (a temporary is made on the device thread) */
	bool temp;              /* allocated for this job, freed after it */
	size_t temp_len;
	const uint8_t *data; /* bytes to upload first (borrowed from the frame or a region) */
	size_t data_len;
	bool has_copy; /* copy this resource's bytes in first (a read_write input kept intact) */
	struct vy_resource copy_from;
	bool to_reply; /* read back into the reply's outputs */
	uint32_t output_index;
	size_t out_len; /* bytes read back */
};

struct vy_job {
	struct vy_link link; /* in a cqueue, then in the device's done list */
	enum vy_job_kind kind;
	struct vy_req *req;
	struct vy_device *dev;
	struct vy_fair_user *user; /* a reference while the submit thread runs it */
	uint64_t cost_ns;          /* expected device time, charged to the user when taken */
	bool canceled;
	/* The stages of the dispatch path (CLOCK_MONOTONIC ns): handed to the device, taken by its
	 * submit thread, back from the backend, and taken back by the event loop. */
	uint64_t t_enqueue;
	uint64_t t_start;
	uint64_t t_end;
	uint64_t t_loop;
	int rc;
	struct vy_err err;
	/* dispatches */
	const struct vy_program *program; /* borrowed from the request's program entry */
	struct vy_pipeline *pl;           /* borrowed from the request's pipeline entry */
	uint32_t n_inputs;
	struct vy_bytes inputs[VY_MAX_INPUTS];
	struct vy_host_ref imports[VY_MAX_INPUTS]; /* shm inputs' place in their region's import */
	struct vy_dispatch_config cfg;
	uint32_t n_outputs;
	struct vy_outputs outputs;
	bool out_nil[VY_IR_MAX_BUFFERS]; /* output sent to a resident buffer: nil in the reply */
	struct vy_timing timing;
	uint32_t n_srcs;
	struct vy_bind_src srcs[VY_IR_MAX_BUFFERS];
	/* resident operations */
	struct vy_resource res;
	size_t offset;
	size_t len;
	const uint8_t *data; /* upload: borrowed from the frame */
	uint8_t *out;        /* download: owned */
	/* graph runs */
	struct vy_graph *graph;        /* borrowed from the request's reference */
	struct vy_resource *graph_res; /* owned: per slot, the resident buffers' resources */
	uint64_t *step_ns;             /* owned: per step, when timing was asked */
};

/* --- caches -------------------------------------------------------------------------------- */

struct vy_spec_decl {
	const char *name; /* borrowed from the entry's program */
	enum vy_type type;
	uint32_t bits; /* the default */
};

enum vy_entry_state { VY_ENTRY_PENDING, VY_ENTRY_READY };

/*
 * The users of a cache entry: a program's are the users who sent its bytes (the only ones its
 * id works for), a pipeline's those who used it; cache_list shows each user only entries they
 * use, with their own figures.
 */
struct vy_cache_use {
	uid_t uid;
	uint64_t hits;
	uint64_t first_ns;
	uint64_t last_ns;
};

struct vy_cache_users {
	struct vy_cache_use *items; /* owned */
	uint32_t len;
	uint32_t cap;
};

struct vy_pool_user;

/* Validation or a compile for the thread pool, queued per user until the pool takes it
 * (cache.c). */
struct vy_pool_item {
	struct vy_link link; /* in its user's queue until it starts */
	struct vy_server *srv;
	struct vy_pool_user *user; /* borrowed: a user lives while it has items */
	struct vy_link *waiters;   /* the entry's requests (vy_req.wait) */
	uv_work_t work;
	uv_work_cb run;
	uv_after_work_cb after;
};

struct vy_prog {
	struct vy_server *srv;
	struct vy_hlink link; /* in the program cache's index, hashed by id */
	struct vy_link lru;
	struct vy_program_id id;
	uint8_t *canonical; /* owned */
	size_t canonical_len;
	struct vy_program *program; /* owned; validated (read-only) once ready */
	enum vy_entry_state state;
	struct vy_link waiters; /* requests, by vy_req.wait */
	uint32_t refs;
	bool in_table;
	bool from_disk;               /* restored from the program files at start-up */
	bool disk_written;            /* saved to (or found in) the program files */
	bool disk_keeping;            /* a work item is saving it */
	bool disk_kept;               /* saved or its use recorded, once per entry */
	struct vy_binding_plan *plan; /* owned, built without inputs */
	unsigned features;
	uint32_t n_specs;
	struct vy_spec_decl *specs; /* owned */
	uint64_t hits;
	uint64_t last_use_ns;
	struct vy_cache_users users; /* who sent its bytes; none for one restored from disk */
	struct vy_pool_item work;
	int rc;
	struct vy_err err;
	struct vy_err_list errs;
};

struct vy_progcache {
	struct vy_htable index;
	size_t count;
	uint64_t bytes;
	struct vy_link lru; /* most recent first */
	uint64_t hits;
	uint64_t hits_by_bytes; /* of hits: programs sent whole, found without decoding them */
	uint64_t misses;
	uint64_t evictions;
	uint64_t restored;
	uint64_t disk_writes;
	uint64_t disk_rejected;
};

struct vy_pipe {
	struct vy_server *srv;
	struct vy_hlink link; /* in the pipeline cache's index */
	struct vy_link lru;
	struct vy_prog *prog; /* a reference */
	struct vy_device *dev;
	uint64_t fingerprint;
	struct vy_spec_map spec; /* owned */
	uint32_t workgroup_size[3];
	struct vy_pipeline *pl; /* owned */
	enum vy_entry_state state;
	struct vy_link waiters;
	uint32_t refs;
	bool in_table;
	const char *outcome; /* "miss" or "disk": how the compile was served */
	bool warm_unserved;  /* built at start (vy_caches_warm) and not yet used by a request */
	uint64_t compile_ns;
	uint64_t bytes;
	uint64_t hits;
	uint64_t created_ns;
	uint64_t last_use_ns;
	struct vy_cache_users users;
	struct vy_pool_item work;
	int rc;
	struct vy_err err;
	struct vy_err_list errs;
};

struct vy_pcache {
	struct vy_htable index;
	size_t count;
	uint64_t bytes;
	struct vy_link lru;
	uint64_t hits;
	uint64_t misses;
	uint64_t disk_hits;
	uint64_t evictions;
	uint64_t coalesced; /* requests that waited on a compile already running */
	uint64_t spec_entries;
	uint64_t spec_hits;
	uint64_t spec_misses;
	struct vy_hist compile_ns;
};

/* --- resident buffers and shared memory ---------------------------------------------------- */

struct vy_resident {
	uint64_t handle;
	struct vy_hlink link; /* in the resident table's index, hashed by handle */
	struct vy_link owner; /* in the owning connection's list (unnamed) or the named list */
	struct vy_device *dev;
	uint64_t generation; /* the device generation it was allocated in */
	struct vy_resource res;
	uint64_t size;
	uid_t uid;
	pid_t pid;
	uint64_t conn_id;
	struct vy_conn *conn; /* the owner; NULL once a named buffer's creator is gone */
	char name[VY_IR_MAX_NAME + 1];
	bool named;
	bool in_table;
	bool lost;
	uint32_t refs;
	uint64_t created_ns;
	uint64_t last_use_ns;
};

struct vy_uid_usage {
	uid_t uid;
	uint64_t bytes;     /* allocated and reserved */
	uint64_t shm_bytes; /* shared memory regions mapped (attached, or still read by work) */
};

struct vy_resident_table {
	struct vy_htable index;
	size_t count;
	uint64_t bytes;
	uint64_t reserved;  /* vy_uid_usage.bytes over every user (resident_total) */
	uint64_t shm_bytes; /* vy_uid_usage.shm_bytes over every user (shm_total) */
	struct vy_link named;
	struct vy_uid_usage *usage;
	size_t n_usage;
	size_t cap_usage;
	uint64_t allocs;
	uint64_t frees;
	uint64_t lost;
};

/* A region's mapping as one device imported it (vy_backend_host_import), made on first use. */
struct vy_shm_import {
	uint64_t id;         /* the backend's import; 0 where the device did not import it */
	uint64_t generation; /* the device generation it was made (or refused) in */
	bool tried;
};

struct vy_shm {
	uint64_t id;
	struct vy_link link; /* in the connection's list */
	struct vy_server *srv;
	struct vy_conn *conn;
	uid_t uid;          /* whose shm_quota the mapping counts against */
	const uint8_t *map; /* MAP_SHARED; the daemon only reads it */
	size_t size;
	uint32_t refs;
	bool attached;
	/* Mapped writable too, as drivers need to import it (a write-sealed memfd is not). */
	bool importable;
	bool guarded; /* the mapping is in the SIGBUS guard's registry, at guard_slot */
	uint32_t guard_slot;
	struct vy_shm_import imports[VY_MAX_DEVICES]; /* by device index */
};

/* --- graphs ------------------------------------------------------------------------------- */

struct vy_graph_plan;
struct vy_graph_step_run;

/* One step of a graph: its program entry and how it runs. */
struct vy_graph_step_entry {
	struct vy_prog *prog; /* a reference */
	struct vy_spec_map spec;
};

/* A graph (graph.c, docs/graphs.md): owned by the connection that made it, like an unnamed
 * resident buffer; runs on one device. */
struct vy_graph {
	uint64_t handle;
	struct vy_hlink hlink; /* in srv->graph_index while in the table, hashed by handle */
	struct vy_link link;   /* in srv->graphs while in the table */
	struct vy_link owner;  /* in conn->graphs while in the table */
	struct vy_conn *conn;
	uid_t uid;
	pid_t pid;
	char name[VY_IR_MAX_NAME + 1];
	struct vy_device *dev;
	uint64_t generation;        /* the device generation it was made in */
	struct vy_graph_plan *plan; /* owned */
	uint32_t n_steps;
	struct vy_graph_step_entry *steps; /* owned */
	struct vy_graph_step_run *runs;    /* owned: each step's program and dispatch config */
	uint64_t *handles;                 /* owned: per slot, the resident handle (0: none) */
	/* owned: the backend's recording of the graph (graph_run.h), made and used by its runs on
	 * the device's thread; NULL until the first run, and on backends without recordings */
	struct vy_graph_recording *rec;
	uint32_t refs;
	bool in_table;
	uint64_t created_ns;
	uint64_t runs_done;
	uint64_t last_run_ns;
};

/* A graph_create request between its steps' program lookups (graph.c). */
struct vy_graph_build {
	uint32_t next;   /* the step whose program is being looked up */
	bool in_acquire; /* inside vy_prog_acquire: its answer is handled when it returns */
	bool settled;    /* the lookup of `next` answered */
	bool dead;       /* the connection went away meanwhile */
	int rc;          /* its answer */
	struct vy_err err;
	struct vy_prog **progs; /* owned array of references, one per step found so far */
};

/* --- connections and requests -------------------------------------------------------------- */

/* A frame buffer's pages as one device imported them (conn.c), or id 0. */
struct vy_frame_import {
	uint64_t id;
	struct vy_device *dev;
	uint64_t generation; /* vy_device_generation when it was made */
};

/* What one user holds over all its connections (conn.c), kept while it has a connection. */
struct vy_user {
	struct vy_link link; /* in srv->users */
	uid_t uid;
	uint32_t conns;     /* connections open (max_clients_per_user) */
	uint32_t in_flight; /* requests received and not answered (max_inflight_per_user) */
	uint64_t inbound;   /* frame bytes counted and not yet freed (inbound_quota) */
	uint64_t held;      /* of which bytes of frames that wait for room */
	uint64_t kept;      /* bytes of frame buffers its connections keep (not in inbound) */
	uint64_t replies;   /* out_pending + preparing over its connections (reply_quota) */
};

enum vy_conn_state {
	VY_CONN_OPEN,
	VY_CONN_EOF,     /* the peer finished sending; replies still go out */
	VY_CONN_CLOSING, /* dropping everything; closed when nothing is in flight */
	VY_CONN_CLOSED,  /* uv_close called */
};

struct vy_conn {
	uv_pipe_t pipe; /* pipe.data = this */
	struct vy_server *srv;
	struct vy_link link; /* in srv->conns */
	uint64_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int admin; /* -1 until asked */
	bool hello;
	char name[VY_MAX_LABEL + 1];
	enum vy_conn_state state;
	bool reading;
	bool paused; /* backpressure */
	bool in_read_cb;
	bool close_after_write;
	struct vy_frame_reader reader;
	struct vy_user *user; /* borrowed from srv->users; counts this connection */
	/* Inbound bytes (conn.c): what the frame in progress is counted for, its whole length
	 * once admitted, else the bytes it holds while the connection waits for room. */
	uint64_t frame_charge;
	bool frame_admitted;
	bool starved;               /* not read until its user or the daemon has inbound room */
	struct vy_link starve_link; /* in srv->starved while starved */
	uint64_t active_ns;         /* the last byte read or reply written (idle_timeout_ms) */
	/* The buffer of its last large frame, kept for the next one (conn.c), and when it was. */
	uint8_t *kept;
	size_t kept_len;
	uint64_t kept_ns;
	struct vy_link kept_link;              /* in srv->kept while kept */
	struct vy_frame_import kept_import;    /* of the kept buffer */
	struct vy_frame_import reading_import; /* of the kept buffer the frame in progress took */
	uint32_t in_flight;
	uint32_t writes;
	/* Reply bytes handed to uv_write (or corked) and not yet written, with the bookkeeping
	 * each pending reply holds. */
	uint64_t out_pending;
	uint64_t preparing; /* reply bytes of downloads and dispatches accepted, not answered */
	bool reply_waiting; /* in srv->reply_waiters: a deferred dispatch waits for reply room */
	struct vy_link reply_link;
	/* Small replies of the current loop callback, written together when it ends (one write
	 * call for many replies, and one wake-up of the client). */
	msgpack_sbuffer cork;
	uint64_t cork_bytes;
	bool corked; /* in srv->corked */
	struct vy_link cork_link;
	uint64_t progress_ns; /* when the frame in progress began to arrive, or reading resumed */
	struct vy_cqueue queues[VY_MAX_DEVICES];
	struct vy_link residents; /* unnamed resident buffers it owns */
	/* Dispatches ready to run, waiting (by vy_req.wait) while the connection holds
	 * write_high_water of replies; in arrival order. */
	struct vy_link deferred;
	struct vy_link shms;
	uint32_t n_shms;
	struct vy_link graphs; /* vy_graph.owner */
	uint32_t n_graphs;
	uint64_t connected_ns;
	uint64_t requests;
	uint64_t bytes_in;
	uint64_t bytes_out;
	uint64_t errors;
	uint64_t busy;
	struct vy_hist wait;
};

struct vy_req {
	struct vy_link wait; /* in a cache entry's waiters while it waits */
	struct vy_conn *conn;
	uint8_t *frame;   /* owned: the decoded request borrows it */
	size_t frame_cap; /* the bytes allocated for it */
	/* Its pages as its device imported them for a large input (vy_conn_frame_import). */
	struct vy_frame_import frame_import;
	struct vy_request r;
	bool decoded;
	uint64_t t_start;
	struct vy_device *dev;
	struct vy_prog *prog; /* a reference */
	struct vy_pipe *pipe; /* a reference */
	struct vy_spec_map spec;
	uint32_t workgroup_size[3];
	const char *cache;
	uint64_t compile_ns;
	uint32_t n_res;
	struct vy_resident *res[VY_MAX_INPUTS + VY_IR_MAX_BUFFERS]; /* references */
	struct vy_resident *in_res[VY_MAX_INPUTS];      /* resident input i, or NULL (borrowed) */
	struct vy_resident *out_res[VY_IR_MAX_BUFFERS]; /* outputs_to target o, or NULL */
	uint32_t n_shm;
	struct vy_shm *shm[VY_MAX_INPUTS]; /* references */
	uint64_t reserved;                 /* quota reserved by an alloc */
	uint64_t preparing;                /* its share of conn->preparing */
	uint64_t reply_bytes;              /* a dispatch's outputs sent in the reply */
	uint64_t inbound;                  /* frame bytes counted against the user, freed with it */
	struct vy_graph_build *build;      /* owned: graph_create between lookups */
	struct vy_graph *graph;            /* a reference: graph_run */
	struct vy_job job;
};

/* A reply under construction: msgpack bytes plus large binaries written in place. */
#define VY_REPLY_MAX_SEGS (VY_IR_MAX_BUFFERS + 2)
#define VY_REPLY_INLINE_BIN 4096

struct vy_reply {
	uv_write_t wr;
	struct vy_conn *conn;
	struct vy_req *req; /* owned: freed once the bytes are written */
	msgpack_sbuffer sb;
	msgpack_packer pk;
	uint32_t n_segs;
	struct {
		size_t sb_end; /* the sbuffer bytes before this binary */
		const void *data;
		size_t len;
	} segs[VY_REPLY_MAX_SEGS];
	uint64_t bytes;
	uv_buf_t bufs[2 * VY_REPLY_MAX_SEGS + 1];
};

/* --- the server ---------------------------------------------------------------------------- */

enum vy_server_state {
	VY_SERVER_STARTING,
	VY_SERVER_RUNNING,
	VY_SERVER_DRAINING,
	VY_SERVER_STOPPING
};

struct vy_server {
	uv_loop_t loop;
	bool loop_open;
	struct vy_config cfg;
	const struct vy_config_args *args;
	uv_pipe_t listener;
	bool listener_open;
	bool activated;    /* the socket came from systemd */
	bool socket_bound; /* we created the socket file and remove it at exit */
	uv_signal_t sig_term;
	uv_signal_t sig_int;
	uv_signal_t sig_hup;
	bool signals_open;
	uv_timer_t tick;
	bool tick_open;
	enum vy_server_state state;
	uint64_t start_ns;
	uint64_t drain_deadline_ns;
	uint64_t watchdog_usec;
	uint64_t last_watchdog_ns;
	uint64_t last_sweep_ns;
	uint64_t last_status_ns;
	uint32_t n_devices;
	struct vy_device devices[VY_MAX_DEVICES];
	struct vy_progcache progs;
	struct vy_pcache pipes;
	struct vy_resident_table res;
	struct vy_link graphs;        /* vy_graph.link */
	struct vy_htable graph_index; /* vy_graph.hlink, by handle */
	uint64_t n_graphs;
	uint64_t graphs_created;
	uint64_t graph_runs;
	uint64_t graph_steps; /* steps run by graph runs */
	struct vy_link conns;
	uint32_t n_conns;
	uint32_t in_flight;     /* requests in flight over every connection (max_inflight_total) */
	uint64_t refused_ns;    /* when the last refused connection was logged */
	uint64_t refused_quiet; /* refused connections not logged since (one line a second) */
	struct vy_link users;   /* vy_user.link */
	uint64_t inbound;       /* frame bytes counted over every user (inbound_total) */
	uint64_t inbound_held;  /* of which bytes of frames that wait for room */
	struct vy_link starved; /* vy_conn.starve_link, in the order they began to wait */
	struct vy_link kept;    /* vy_conn.kept_link, the oldest first */
	uint64_t kept_bytes;    /* vy_user.kept over every user */
	uint64_t replies;       /* vy_user.replies over every user (reply_total) */
	struct vy_link reply_waiters; /* vy_conn.reply_link, in the order they began to wait */
	bool resuming;                /* in vy_ops_resume_waiters */
	bool resume_again;            /* reply room was freed while it ran */
	uint64_t next_conn_id;
	struct vy_stats stats;
	uint8_t *read_buf;    /* owned, VY_READ_CHUNK bytes shared by every read */
	uint32_t works;       /* thread-pool work items not yet completed */
	uv_work_t pool_start; /* the empty item that starts libuv's pool threads at start-up */
	char *programs_dir;   /* owned: <cache_dir>/programs, NULL when the disk cache is off */
	char *backend_dir;    /* owned: <cache_dir>/vulkan, NULL when the disk cache is off */
	/* The disk cache's MAC key (disk.h), when programs_dir is set. */
	uint8_t disk_key[32];
	struct vy_disk_budget *disk_budget; /* owned: bounds both folders, NULL when off */
	uid_t uid;
	int exit_code;
	uint32_t corking;      /* nesting of vy_replies_cork; loop thread */
	struct vy_link corked; /* vy_conn.cork_link: connections holding corked replies */

	/* The thread pool shared per user (cache.c). */
	struct vy_link pool_users; /* vy_pool_user.link: users with pool work queued or running */
	uint32_t pool_running;     /* pool work items handed to libuv's pool */
	uint64_t pool_served;      /* pool work items started so far */
};

static inline void vy_pack_kv_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	vy_pack_cstr(pk, key);
	msgpack_pack_uint64(pk, v);
}

static inline void vy_pack_kv_str(msgpack_packer *pk, const char *key, const char *v)
{
	vy_pack_cstr(pk, key);
	vy_pack_cstr(pk, v);
}

static inline void vy_pack_kv_bool(msgpack_packer *pk, const char *key, bool v)
{
	vy_pack_cstr(pk, key);
	if (v) {
		msgpack_pack_true(pk);
	} else {
		msgpack_pack_false(pk);
	}
}

/* Monotonic time in nanoseconds. */
uint64_t vy_now_ns(void);
/* 64 unpredictable bits (getrandom); never 0. */
uint64_t vy_random_u64(void);

/* server.c */
/*
 * Build the configuration from `args` (borrowed for the server's life: SIGHUP applies it again),
 * take or bind the socket, open the devices and restore the disk cache. On failure `err` says
 * why; call vy_server_finish in either case.
 */
int vy_server_init(struct vy_server *s, const struct vy_config_args *args, struct vy_err *err);
/* Tell systemd READY=1 and run the loop until SIGTERM has drained it; the exit status. */
int vy_server_run(struct vy_server *s);
/* Close what is left, save the pipeline caches, free everything; uv_loop_close must succeed
 * (otherwise s->exit_code becomes 1). */
void vy_server_finish(struct vy_server *s);
/* Re-check whether a drain is complete (after any request or work finishes). */
void vy_server_poke(struct vy_server *s);
/* Whether `c` may run admin operations (uid 0, the daemon's uid, or the admin group). */
bool vy_server_is_admin(struct vy_server *s, struct vy_conn *c);

/* conn.c */
void vy_conn_on_connection(uv_stream_t *listener, int status);
/* Begin a success reply with `nfields` result fields; pack them into rp->pk. */
struct vy_reply *vy_reply_begin(struct vy_req *req, uint32_t nfields);
/* Pack a bin whose bytes stay where they are until the write completes (they must live as long
 * as the request). */
void vy_reply_bin(struct vy_reply *rp, const void *data, size_t len);
/* Frame and write the reply; the request is answered and freed after the write. */
void vy_reply_send(struct vy_reply *rp);
/*
 * Between cork and uncork, small replies are gathered per connection and written together by
 * the outermost uncork: a callback that completes many requests makes one write per client.
 */
void vy_replies_cork(struct vy_server *s);
void vy_replies_uncork(struct vy_server *s);
/* Answer `req` with an error, and the validator's list when `errs` holds more than one. */
void vy_reply_error(struct vy_req *req, const struct vy_err *err, const struct vy_err_list *errs);
/* Answer `req` with the error in `code` and message; a convenience over vy_reply_error. */
void vy_reply_fail(struct vy_req *req, int code, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Drop a request without a reply (its connection is going away). */
void vy_req_drop(struct vy_req *req);
/* Whether replies to `c` are still wanted. */
bool vy_conn_alive(const struct vy_conn *c);
/* Take the next descriptor the peer sent with SCM_RIGHTS, or -1. */
int vy_conn_take_fd(struct vy_conn *c);
/* Close every connection (shutdown): queued jobs are canceled, running ones finish unanswered. */
void vy_conn_close_all(struct vy_server *s);
/* Close connections stalled inside a frame for longer than stall_timeout_ms. */
void vy_conn_sweep(struct vy_server *s, uint64_t now);
/* Re-read limits that SIGHUP may have changed. */
void vy_conn_apply_config(struct vy_server *s);
/*
 * The request's frame imported into its device (made on first use, kept with the frame's buffer
 * while its connection keeps that): the id, and in *base the address its offsets count from; 0
 * where the device does not import it.
 */
uint64_t vy_conn_frame_import(struct vy_req *req, const uint8_t **base);

/* ops.c */
/* Handle a decoded request: every path ends in one reply, or vy_req_drop. */
void vy_ops_start(struct vy_req *req);
/* Continuations: the request's program entry, pipeline entry or job is settled. */
void vy_ops_on_prog(
	struct vy_req *req, int rc, const struct vy_err *err, const struct vy_err_list *errs);
void vy_ops_on_pipe(
	struct vy_req *req, int rc, const struct vy_err *err, const struct vy_err_list *errs);
void vy_ops_on_job(struct vy_job *job);
/* Point job.inputs[i] at input i's bytes (a frame's, or an shm region's, which the request then
 * holds); `import` also names the region's import, or for a large input the frame's
 * (vy_conn_frame_import), for the device. Errors: NOT_FOUND, BAD_REQUEST
 * naming inputs[i]. */
int vy_ops_input_bytes(struct vy_req *req, uint32_t i, bool import, struct vy_err *err);
/* Submit req->job, whose reply will carry req->reply_bytes: QUOTA_EXCEEDED past max_output,
 * else it waits for reply room or goes to its device. */
void vy_ops_submit_sized(struct vy_req *req);
/* Start the connection's deferred dispatches that its replies now leave room for. */
void vy_ops_resume_deferred(struct vy_conn *c);
/* Start the deferred dispatches of every waiting connection that reply room now lets run: the
 * room a connection waits for may be its user's or the daemon's, freed by another connection. */
void vy_ops_resume_waiters(struct vy_server *s);
/* Count `bytes` more (add) or fewer reply bytes of `c` against its user and the daemon. */
void vy_conn_replies_add(struct vy_conn *c, uint64_t bytes);
void vy_conn_replies_sub(struct vy_conn *c, uint64_t bytes);

/* cache.c */
void vy_caches_init(struct vy_server *s);
void vy_caches_finish(struct vy_server *s);
/* Find or create the program entry of req->r.program or req->r.program_id; then
 * vy_ops_on_prog (at once or after validation). */
void vy_prog_acquire(struct vy_req *req);
/* Find or compile the pipeline of (req->prog, req->spec, req->workgroup_size, req->dev); then
 * vy_ops_on_pipe. */
void vy_pipe_acquire(struct vy_req *req);
void vy_prog_unref(struct vy_prog *p);
/* A request using the program succeeded: keep it in the program files (once per entry). */
void vy_prog_keep(struct vy_server *s, struct vy_prog *p);
void vy_pipe_unref(struct vy_pipe *p);
/* Resolve the request's config.spec against the program's declarations. BAD_REQUEST for an
 * unknown name or a value of the wrong type. */
int vy_spec_resolve(const struct vy_prog *p, const struct vy_request_config *c,
	struct vy_spec_map *out, struct vy_err *err);
/* Take every settled entry out of both caches (entries in use die with their last reference);
 * `disk` also deletes the program files. */
void vy_caches_clear(struct vy_server *s, bool disk);
/* Forget the pipelines of a device that was lost and recovered. */
void vy_caches_drop_device(struct vy_server *s, struct vy_device *d);
/* Evict down to the configured bounds (after SIGHUP). */
void vy_caches_trim(struct vy_server *s);
/* Load the programs the disk cache holds (at start-up). */
void vy_caches_restore(struct vy_server *s);
/* At start-up, before the daemon reports ready: build on every device the pipelines of the
 * warm_pipelines most recently used restored programs (for at most two seconds), then run one
 * dispatch of the daemon's own on each device (vy_device_warm). Failures are only counted. */
void vy_caches_warm(struct vy_server *s);
/* The pipeline_cache, spec_cache and program_cache fields of the stats reply. */
void vy_caches_pack_stats(struct vy_server *s, msgpack_packer *pk);
/* The pipelines and programs fields of the cache_list reply: every row for an admin, otherwise
 * the rows `viewer` uses, with the viewer's own hits and times. */
void vy_caches_pack_list(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk);

/* device.c */
/* Open the configured backend's devices (devices = all or a list) and start their submit
 * threads. Errors: the registry's, naming the device that did not open. */
int vy_devices_open(struct vy_server *s, struct vy_err *err);
/* Join the submit threads after the running batches, complete their finished jobs and close the
 * asyncs. Call once every connection is closed (no job is queued then). */
void vy_devices_stop(struct vy_server *s);
/* Save each backend's pipeline cache, shut the backends down and destroy them. */
void vy_devices_destroy(struct vy_server *s);
/* Keep every library loaded so far mapped until exit (see device.c). */
void vy_devices_pin_libraries(void);
/* One small dispatch of the daemon's own program on `d`, through the path of a compiled
 * program's dispatch, so that the first request does not pay for what the backend makes on its
 * first use. A failure is logged, not fatal: requests will meet it themselves. */
void vy_device_warm(struct vy_device *d);
/* The device for a request: config.device, or the least-loaded device of the chosen backend
 * that supports `features`. */
struct vy_device *vy_device_pick(struct vy_server *s, const struct vy_request_config *c,
	unsigned features, struct vy_err *err);
/* Queue a job on job->dev, behind the jobs of the same connection. */
void vy_device_submit(struct vy_job *job);
/* Take every queued job of `c` off the devices and complete them as canceled. */
void vy_device_cancel_conn(struct vy_server *s, struct vy_conn *c);
/* Release the devices' records of `c`, which is being freed (no job of it queued or running). */
void vy_device_conn_finish(struct vy_server *s, struct vy_conn *c);
/* Queued plus running jobs of the device. */
uint32_t vy_device_load(struct vy_device *d);
/* No job queued, running or waiting for the loop on any device. */
bool vy_devices_idle(struct vy_server *s);
/* The array of device descriptions: profiles (hello, `brief`) or profiles and counters (stats). */
void vy_devices_pack(struct vy_server *s, msgpack_packer *pk, bool brief);
/* Dispatch inputs the devices copied from host imports (shm regions), and their bytes, summed. */
void vy_devices_import_counts(struct vy_server *s, uint64_t *inputs, uint64_t *bytes);
/* The device's generation (bumped by each recovery from a lost device). */
uint64_t vy_device_generation(struct vy_device *d);

/* graph.c */
/* graph_create, graph_run, graph_free and graphs. */
void vy_graph_op(struct vy_req *req);
/* graph_create's continuation: the program entry of its current step is settled. */
void vy_graph_on_prog(
	struct vy_req *req, int rc, const struct vy_err *err, const struct vy_err_list *errs);
/* Run a graph run's job on its device (the submit thread); its result code. */
int vy_graph_job_run(struct vy_job *j);
/*
 * Whether the graph run `j` may start beside other jobs of its batch (vy_graph_job_start): it
 * binds no resident buffer, whose other users of the batch it would have to wait for, and asks
 * for no step times.
 */
bool vy_graph_job_startable(const struct vy_job *j);
/* Start the graph run `j` on the device (graph_run.h, vy_backend_graph_start). */
int vy_graph_job_start(struct vy_job *j, struct vy_pending **out);
/* A graph run's job ended: answer it. */
void vy_graph_on_job(struct vy_req *req);
/* Release what a request holds of graphs (from its free). */
void vy_graph_req_free(struct vy_req *req);
/* Free the graphs of a closing connection. */
void vy_graph_conn_closed(struct vy_server *s, struct vy_conn *c);
/* Free every graph (shutdown). */
void vy_graph_finish(struct vy_server *s);
/* The graphs field of the stats reply. */
void vy_graph_pack_stats(struct vy_server *s, msgpack_packer *pk);

/* resident.c */
void vy_resident_init(struct vy_server *s);
void vy_resident_finish(struct vy_server *s);
/* The buffer `handle` if `c` may see it (lost ones included), or NULL (NOT_FOUND in err). */
struct vy_resident *vy_resident_find(
	struct vy_server *s, struct vy_conn *c, uint64_t handle, struct vy_err *err);
/* As vy_resident_find, and a buffer lost with its device is NOT_FOUND too (telling the client to
 * upload again). */
struct vy_resident *vy_resident_get(
	struct vy_server *s, struct vy_conn *c, uint64_t handle, struct vy_err *err);
struct vy_resident *vy_resident_find_named(struct vy_server *s, uid_t uid, const char *name);
/* Count `bytes` against the user's resident_quota. Errors: QUOTA_EXCEEDED. */
int vy_resident_reserve(struct vy_server *s, uid_t uid, uint64_t bytes, struct vy_err *err);
void vy_resident_unreserve(struct vy_server *s, uid_t uid, uint64_t bytes);
/* Enter a freshly allocated buffer (its bytes already reserved) into the table. */
struct vy_resident *vy_resident_add(struct vy_server *s, struct vy_conn *c, struct vy_device *d,
	const struct vy_resource *res, uint64_t size, const char *name);
void vy_resident_ref(struct vy_resident *r);
void vy_resident_unref(struct vy_server *s, struct vy_resident *r);
/* Take the buffer out of the table (free); it dies with its last reference. */
void vy_resident_remove(struct vy_server *s, struct vy_resident *r);
/* Free the unnamed buffers of a closing connection; its named ones stay with the user. */
void vy_resident_conn_closed(struct vy_server *s, struct vy_conn *c);
/* Mark the device's buffers lost (NOT_FOUND from now on) and release their quota. */
void vy_resident_device_lost(struct vy_server *s, struct vy_device *d);
/* The buffers table (the viewer's user's buffers, or every buffer for an admin). */
void vy_resident_pack_table(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk);
/* The resident field of the stats reply. */
void vy_resident_pack_stats(struct vy_server *s, msgpack_packer *pk);
/* Attach the memfd `fd` (always consumed) of at least `size` bytes as a region of `c` (mapped
 * writable where the memfd allows, for imports, but only ever read).
 * Errors: BAD_REQUEST (not a sealable memfd, no F_SEAL_SHRINK, smaller than announced, on
 * hugetlbfs or any file system but shmem), OUT_OF_MEMORY (the mapping failed, or the SIGBUS
 * guard's registry is full). */
int vy_shm_attach(struct vy_conn *c, int fd, uint64_t size, uint64_t *id, struct vy_err *err);
/* The region `id` of `c`, or NULL. */
struct vy_shm *vy_shm_get(struct vy_conn *c, uint64_t id);
void vy_shm_ref(struct vy_shm *m);
void vy_shm_unref(struct vy_shm *m);
/* Take the region out of its connection; the mapping goes with its last reference (after its
 * imports are released on their devices). */
void vy_shm_detach(struct vy_shm *m);
/*
 * The id of the region's import on device `d`, for dispatch inputs read from the region: made on
 * the region's first use on the device, and again after the device was lost and recovered. 0
 * where the region is not importable or the device does not import it (the dispatch then reads
 * the mapping in place).
 */
uint64_t vy_shm_import(struct vy_shm *m, struct vy_device *d);
/* Whether a read of the region faulted (its pages vanished; the SIGBUS guard put zeros there):
 * fills err for the request that used it as input `at`. The region stays so until detached. */
int vy_shm_check_faulted(const struct vy_shm *m, const char *at, struct vy_err *err);
void vy_shm_conn_closed(struct vy_conn *c);

/* stats.c: the stats reply is VY_STATS_FIELDS result fields */
#define VY_STATS_FIELDS 11
/* The stats tree as result fields; per-client rows as the viewer may see them. */
void vy_stats_pack(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk);
/* The clients field of the clients reply. */
void vy_stats_pack_clients(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk);

/* sd.c: systemd glue */
/* The listening socket systemd passed (socket activation) into *fd, -1 when none. Errors:
 * INTERNAL or BAD_REQUEST when the passed descriptors are unusable. */
int vy_sd_listen_fd(int *fd, struct vy_err *err);
/* Send one notification (READY=1, STATUS=..., ...) to systemd; nothing outside systemd. */
void vy_sd_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A watchdog ping (`ping`) and/or a STATUS= line (`fmt`, NULL: none), sent by a thread of their
 * own so that a service manager that stops reading never stops the event loop; a newer status
 * replaces one still waiting. */
void vy_sd_notify_periodic(bool ping, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The watchdog interval systemd asks for, in microseconds; 0 when none. */
uint64_t vy_sd_watchdog_usec(void);

/* check.c: print the --check table; 0 when no check failed. `config_error` is the reason the
 * configuration did not build, or NULL. */
int vy_check_run(const struct vy_config *cfg, const char *config_error);

/* emit.c: --emit-glsl. Print the code the Vulkan backend runs for the program in the JSON file
 * `path` ("-": standard input) under float profile `profile` (vulkan.h), its SPIR-V disassembled
 * when `spirv`; `device` is the device index of the "device" profile, NULL for 0. Returns the exit
 * status of vyred(8): 0, 1 the generator or the device failed, 2 usage, 3 the program is invalid
 * or needs what the profile lacks, 4 the file cannot be read. */
enum { VY_EMIT_OK, VY_EMIT_FAILED, VY_EMIT_USAGE, VY_EMIT_INVALID, VY_EMIT_FILE };
int vy_emit_run(const char *path, const char *profile, const char *device, bool spirv);

#endif
