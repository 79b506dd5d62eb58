/*
 * Devices and their submit threads (DESIGN.md §7.1, §7.2, §7.8).
 *
 * Each opened backend instance is a device with one submit thread. Jobs wait in per-connection
 * queues, and the device is shared between users by weighted fair queueing on device time, as
 * GPU schedulers do: each user has a virtual time, charged with the device time its jobs took;
 * the thread serves the active user with the least, round-robin among that user's connections,
 * in arrival order within a connection. A user that becomes active starts no earlier than the
 * virtual time of the work last served (the device's virtual clock), so idle time is not banked
 * to be spent later in one burst.
 *
 * A wake-up takes a batch of up to batch_max jobs, picking the least-charged user again for each
 * job (charged with the job's expected cost as it is taken, corrected by what it measured when it
 * ends), and closes the batch before its expected device time passes batch_cost_us: tiny
 * dispatches of many clients still share one submit, while a job expected to take longer runs in
 * a batch of its own. So a job that arrives while another user's heavy work runs waits for about
 * one of that user's dispatches. The expected cost of a job is its connection's estimate: the
 * device time its last job took when that was more, else an average that moves an eighth of the
 * way per job (a connection that turns heavy is treated as heavy at once; one that turns light
 * is believed slowly). A new connection starts from its user's estimate, a new user from
 * batch_cost_us (its first job runs alone).
 *
 * Plain dispatches of a batch are started together with vy_pipeline_dispatch_async (the Vulkan
 * backend records them into shared submits), and so are its graph runs that bind no resident
 * buffer (vy_backend_graph_start: each run's recording queued behind the one before); a lone
 * dispatch with nothing in flight runs through its compiled pipeline. Started jobs stay in
 * flight while the thread takes the next batch and starts it behind them, and are taken back
 * before that batch's successor is taken: the device has the next batch queued while the thread
 * answers the one before. Each job goes back to the loop (the done list and the device's
 * uv_async) as soon as it is taken back. The thread's busy time is divided among the jobs in
 * the order they end: each is charged the time since the previous one ended.
 *
 * Jobs of one connection on one device run in the order they arrived, so an upload followed by
 * a dispatch that reads the buffer sees the upload.
 *
 * Device loss: when a job reports DEVICE_LOST, the thread starts nothing new, takes back what
 * is in flight, calls vy_backend_try_recover and carries on; every job that failed with it is
 * answered DEVICE_LOST naming its own request, and the loop drops the device's pipelines and
 * marks its resident buffers lost. The jobs that end after the loss are handed to the loop only
 * after the recovery, so that the loop drops those caches before it answers them.
 */
#include <assert.h>
#include <ctype.h>
#include <dlfcn.h>
#include <link.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"
#include "launch.h"
#include "log.h"
#include "registry.h"
#include "vyred.h"

#ifdef VY_HAVE_VULKAN
#include "vulkan/vulkan.h"
#endif

#define MAX_BATCH 256

/* --- the submit thread ----------------------------------------------------------------- */

static int run_resident(struct vy_device *d, struct vy_job *j)
{
	struct vy_backend *b = d->backend;
	struct vy_resource binds[VY_IR_MAX_BUFFERS];
	bool owned[VY_IR_MAX_BUFFERS] = {0};
	int rc = 0;
	for (uint32_t i = 0; i < j->n_srcs && rc == 0; i++) {
		struct vy_bind_src *src = &j->srcs[i];
		if (src->temp) {
			rc = vy_backend_resident_alloc(b, src->temp_len, &src->res, &j->err);
			owned[i] = rc == 0;
		}
		if (rc == 0 && src->has_copy) {
			uint8_t *tmp = malloc(src->copy_from.len ? src->copy_from.len : 1);
			if (!tmp) {
				rc = vy_err_set(&j->err, VY_E_OUT_OF_MEMORY, NULL,
					"retry with a smaller buffer",
					"no memory to copy a resident buffer of %zu bytes",
					src->copy_from.len);
			} else {
				rc = vy_backend_resident_download(
					b, &src->copy_from, 0, tmp, src->copy_from.len, &j->err);
				if (rc == 0) {
					rc = vy_backend_resident_upload(b, &src->res, 0,
						(struct vy_bytes){tmp, src->copy_from.len},
						&j->err);
				}
				free(tmp);
			}
		}
		if (rc == 0 && src->data_len) {
			rc = vy_backend_resident_upload(b, &src->res, 0,
				(struct vy_bytes){src->data, src->data_len}, &j->err);
		}
		binds[i] = src->res;
	}
	if (rc == 0) {
		j->timing.device_ns = VY_TIMING_NONE;
		rc = vy_backend_resident_dispatch(
			b, j->program, binds, j->n_srcs, &j->cfg, &j->timing, &j->err);
	}
	if (rc == 0) {
		uint8_t *outs[VY_IR_MAX_BUFFERS] = {0};
		size_t lens[VY_IR_MAX_BUFFERS] = {0};
		for (uint32_t i = 0; i < j->n_srcs && rc == 0; i++) {
			struct vy_bind_src *src = &j->srcs[i];
			if (!src->to_reply) {
				continue;
			}
			uint8_t *buf = malloc(src->out_len ? src->out_len : 1);
			if (!buf) {
				rc = vy_err_set(&j->err, VY_E_OUT_OF_MEMORY, NULL,
					"retry with smaller outputs",
					"no memory for an output of %zu bytes", src->out_len);
				break;
			}
			rc = vy_backend_resident_download(
				b, &src->res, 0, buf, src->out_len, &j->err);
			outs[src->output_index] = buf;
			lens[src->output_index] = src->out_len;
		}
		for (uint32_t o = 0; o < j->n_outputs; o++) {
			if (rc == 0) {
				vy_outputs_push(&j->outputs, outs[o], lens[o]);
			} else {
				free(outs[o]);
			}
		}
	}
	for (uint32_t i = 0; i < j->n_srcs; i++) {
		if (owned[i]) {
			vy_backend_resident_free(b, j->srcs[i].res, NULL);
		}
	}
	return rc;
}

static void run_one(struct vy_device *d, struct vy_job *j)
{
	struct vy_backend *b = d->backend;
	j->timing.device_ns = VY_TIMING_NONE;
	switch (j->kind) {
	case VY_JOB_DISPATCH:
		if (j->cfg.timing) {
			j->rc = vy_backend_dispatch_timed(b, j->program, j->inputs, j->n_inputs,
				&j->cfg, &j->outputs, &j->timing, &j->err);
		} else {
			j->rc = vy_pipeline_dispatch(
				j->pl, j->inputs, j->n_inputs, &j->cfg, &j->outputs, &j->err);
		}
		break;
	case VY_JOB_RESIDENT_DISPATCH:
		j->rc = run_resident(d, j);
		break;
	case VY_JOB_ALLOC:
		j->rc = vy_backend_resident_alloc(b, j->len, &j->res, &j->err);
		break;
	case VY_JOB_UPLOAD:
		j->rc = vy_backend_resident_upload(
			b, &j->res, j->offset, (struct vy_bytes){j->data, j->len}, &j->err);
		break;
	case VY_JOB_DOWNLOAD:
		j->rc = vy_backend_resident_download(
			b, &j->res, j->offset, j->out, j->len, &j->err);
		break;
	case VY_JOB_GRAPH:
		j->rc = vy_graph_job_run(j);
		break;
	}
	j->t_end = vy_now_ns();
}

static bool is_dispatch(const struct vy_job *j)
{
	return j->kind == VY_JOB_DISPATCH || j->kind == VY_JOB_RESIDENT_DISPATCH ||
	       j->kind == VY_JOB_GRAPH;
}

/* --- fair sharing ---------------------------------------------------------------------- */

/* The next expected cost: what a job took when that is more, else an eighth of the way to it. */
static uint64_t estimate_next(uint64_t est, uint64_t took)
{
	return took >= est ? took : est - (est - took) / 8;
}

/* The record of `uid` on the device, made on first use. Lock held. */
static struct vy_fair_user *user_get(struct vy_device *d, uid_t uid)
{
	for (struct vy_link *l = d->users.next; l != &d->users; l = l->next) {
		struct vy_fair_user *u = VY_CONTAINER_OF(l, struct vy_fair_user, link);
		if (u->uid == uid) {
			return u;
		}
	}
	struct vy_fair_user *u = calloc(1, sizeof(*u));
	if (!u) {
		fprintf(stderr, "vyred: out of memory for a user's device share\n");
		abort();
	}
	u->uid = uid;
	/* Nothing is known of its jobs yet: the first one runs in a batch of its own. */
	u->est_ns = d->batch_cost_ns;
	vy_list_init(&u->active);
	vy_list_init(&u->ring);
	vy_list_insert_tail(&d->users, &u->link);
	return u;
}

/* Lock held. */
static void user_unref(struct vy_fair_user *u)
{
	assert(u->refs > 0);
	if (--u->refs == 0) {
		assert(!vy_link_linked(&u->active) && vy_list_empty(&u->ring));
		vy_list_remove(&u->link);
		free(u);
	}
}

/* The active user charged the least so far. Lock held; some user is active. */
static struct vy_fair_user *least_charged(struct vy_device *d)
{
	struct vy_fair_user *best = NULL;
	for (struct vy_link *l = d->active.next; l != &d->active; l = l->next) {
		struct vy_fair_user *u = VY_CONTAINER_OF(l, struct vy_fair_user, active);
		if (!best || u->vtime < best->vtime) {
			best = u;
		}
	}
	return best;
}

/*
 * Take up to `max` jobs: each from the least-charged user, from its connections in turn, until
 * the next one would carry the batch's expected device time past batch_cost_ns. Lock held.
 */
static uint32_t take_batch(struct vy_device *d, struct vy_job **batch, uint32_t max)
{
	uint32_t n = 0;
	uint64_t cost = 0;
	while (n < max && !vy_list_empty(&d->active)) {
		struct vy_fair_user *u = least_charged(d);
		struct vy_cqueue *q = VY_CONTAINER_OF(u->ring.next, struct vy_cqueue, ring);
		uint64_t est = q->est_ns;
		if (n > 0 && cost + est > d->batch_cost_ns) {
			break;
		}
		struct vy_link *l = q->jobs.next;
		vy_list_remove(l);
		struct vy_job *j = VY_CONTAINER_OF(l, struct vy_job, link);
		if (u->vtime > d->vclock) {
			d->vclock = u->vtime;
		}
		u->vtime += est;
		u->refs++;
		j->user = u;
		j->cost_ns = est;
		cost += est;
		batch[n++] = j;
		vy_list_remove(&q->ring);
		if (!vy_list_empty(&q->jobs)) {
			vy_list_insert_tail(&u->ring, &q->ring);
		} else if (vy_list_empty(&u->ring)) {
			vy_list_remove(&u->active);
		}
	}
	d->depth -= n;
	return n;
}

/* Charge the job's user what it took instead of what was expected. Lock held. */
static void charge(struct vy_device *d, struct vy_job *j, uint64_t took)
{
	struct vy_fair_user *u = j->user;
	struct vy_cqueue *q = &j->req->conn->queues[d->index];
	u->vtime = u->vtime - j->cost_ns + took;
	q->est_ns = estimate_next(q->est_ns, took);
	u->est_ns = estimate_next(u->est_ns, took);
	j->user = NULL;
	user_unref(u);
}

/* --- the batch ------------------------------------------------------------------------- */

/* Name the job's request in its DEVICE_LOST error. */
static void name_lost(struct vy_device *d, struct vy_job *j)
{
	char cause[VY_ERR_MESSAGE_MAX];
	snprintf(cause, sizeof(cause), "%s", j->err.message);
	vy_err_set(&j->err, VY_E_DEVICE_LOST, NULL,
		"send the request again; resident buffers of this device must be allocated and "
		"uploaded again",
		"device %u (%s) was lost while running request %" PRIu64 "%s%s%s: %.200s", d->index,
		d->profile.name, j->req->r.id, j->cfg.label ? " (" : "",
		j->cfg.label ? j->cfg.label : "", j->cfg.label ? ")" : "", cause);
}

/*
 * Hand a finished job to the loop, charging its user `took`. Once on the done list the job
 * belongs to the loop, which may free it (and its connection).
 */
static void hand_over(struct vy_device *d, struct vy_job *j, uint64_t took)
{
	if (j->rc == VY_E_DEVICE_LOST) {
		name_lost(d, j);
	}
	pthread_mutex_lock(&d->lock);
	charge(d, j, took);
	d->running--;
	d->jobs_done++;
	d->dispatches += is_dispatch(j);
	d->timeouts += j->rc == VY_E_TIMEOUT;
	vy_list_insert_tail(&d->done, &j->link);
	pthread_mutex_unlock(&d->lock);
	uv_async_send(&d->async);
}

/* Jobs started and not yet taken back, oldest first: at most two batches'. */
#define MAX_FLIGHT (2 * MAX_BATCH)

/* What the submit thread carries from one batch to the next. */
struct run {
	uint64_t mark; /* when the previous job ended (or the thread began waiting for work) */
	bool lost;     /* a job failed with DEVICE_LOST: held jobs wait for the recovery */
	uint32_t n_held;
	struct vy_job *held[MAX_FLIGHT];
	uint64_t took[MAX_FLIGHT];
	/* Started jobs in flight, in the order they were started, and the batch of each. */
	uint32_t n_flight;
	struct vy_job *flight[MAX_FLIGHT];
	struct vy_pending *pend[MAX_FLIGHT];
	uint64_t serial[MAX_FLIGHT];
};

/*
 * A job ended: it goes to the loop at once, charged the wall time since the previous job ended,
 * so the jobs share the thread's busy time in the order they end. Once the device is lost,
 * jobs are held until it is recovered: the loop then drops the device's caches before it answers
 * them, so no client retries against stale pipelines.
 */
static void job_ended(struct vy_device *d, struct run *r, struct vy_job *j)
{
	uint64_t now = vy_now_ns();
	uint64_t took = now - r->mark;
	r->mark = now;
	r->lost = r->lost || j->rc == VY_E_DEVICE_LOST;
	if (r->lost) {
		r->held[r->n_held] = j;
		r->took[r->n_held++] = took;
		return;
	}
	hand_over(d, j, took);
}

static void recover(struct vy_device *d)
{
	struct vy_err err = {0};
	/* Recovery closes the Vulkan instance, which would unload its driver. */
	vy_devices_pin_libraries();
	int rc = vy_backend_try_recover(d->backend, &err);
	if (rc) {
		vy_log_err(VY_LOG_ERR, &err, "device %u was lost and did not recover", d->index);
	} else {
		vy_log(VY_LOG_WARNING, "device %u (%s) was lost and has been recovered", d->index,
			d->profile.name);
	}
	pthread_mutex_lock(&d->lock);
	d->lost_count++;
	d->generation++;
	d->reset_pending = true;
	pthread_mutex_unlock(&d->lock);
	uv_async_send(&d->async);
}

/* Take back in-flight job `k` (its handle NULL: it failed to start) and drop it from the list. */
static void collect(struct vy_device *d, struct run *r, uint32_t k)
{
	struct vy_job *j = r->flight[k];
	if (r->pend[k]) {
		j->rc = vy_pending_wait(r->pend[k], &j->outputs, &j->err);
	}
	j->t_end = vy_now_ns();
	r->n_flight--;
	memmove(&r->flight[k], &r->flight[k + 1], (r->n_flight - k) * sizeof(r->flight[0]));
	memmove(&r->pend[k], &r->pend[k + 1], (r->n_flight - k) * sizeof(r->pend[0]));
	memmove(&r->serial[k], &r->serial[k + 1], (r->n_flight - k) * sizeof(r->serial[0]));
	job_ended(d, r, j);
}

/* Take back, oldest first, the jobs in flight that came in a batch before `serial`. */
static void collect_before(struct vy_device *d, struct run *r, uint64_t serial)
{
	while (r->n_flight && r->serial[0] < serial) {
		collect(d, r, 0);
	}
}

/* Whether a run of graph `g` is in flight. */
static bool graph_in_flight(const struct run *r, const struct vy_graph *g)
{
	for (uint32_t k = 0; k < r->n_flight; k++) {
		if (r->flight[k]->kind == VY_JOB_GRAPH && r->flight[k]->graph == g) {
			return true;
		}
	}
	return false;
}

/*
 * Run batch `serial`; returns how many of its jobs were started and left in flight.
 *
 * Plain dispatches, and graph runs that bind no resident buffer, never touch resident buffers,
 * so they may run beside resident operations in any order: they are started (queued on the
 * device one behind the other) and left in flight, to be taken back as they end, while the
 * batch's other jobs run one by one. A lone startable job with nothing in flight runs alone, the
 * shortest path for one waiting client. A graph with a run in flight waits for that run, whose
 * recording it replays.
 */
static uint32_t run_batch(
	struct vy_device *d, struct run *r, struct vy_job **batch, uint32_t n, uint64_t serial)
{
	bool startable[MAX_BATCH] = {0};
	uint32_t n_startable = 0;
	uint64_t now = vy_now_ns();
	for (uint32_t i = 0; i < n; i++) {
		struct vy_job *j = batch[i];
		j->t_start = now;
		startable[i] = (j->kind == VY_JOB_DISPATCH && !j->cfg.timing) ||
			       (j->kind == VY_JOB_GRAPH && vy_graph_job_startable(j));
		n_startable += startable[i];
	}
	bool start = n_startable >= 2 || r->n_flight > 0;
	uint32_t started = 0;
	for (uint32_t i = 0; start && i < n; i++) {
		struct vy_job *j = batch[i];
		struct vy_pending *p = NULL;
		if (!startable[i]) {
			continue;
		}
		if (j->kind == VY_JOB_DISPATCH) {
			j->timing.device_ns = VY_TIMING_NONE;
			j->rc = vy_pipeline_dispatch_async(
				j->pl, j->inputs, j->n_inputs, &j->cfg, &p, &j->err);
		} else if (graph_in_flight(r, j->graph)) {
			startable[i] = false;
			continue;
		} else {
			j->rc = vy_graph_job_start(j, &p);
		}
		r->flight[r->n_flight] = j;
		r->pend[r->n_flight] = p;
		r->serial[r->n_flight++] = serial;
		started++;
	}
	if (started && r->pend[r->n_flight - 1]) {
		/* Polling the newest handle puts everything started on the queue. */
		(void)vy_pending_is_ready(r->pend[r->n_flight - 1]);
	}
	for (uint32_t i = 0; i < n; i++) {
		if (start && startable[i]) {
			continue;
		}
		/* Started jobs that ended meanwhile go back before this job runs, and so do the
		 * runs of this job's graph. */
		const struct vy_graph *g = batch[i]->kind == VY_JOB_GRAPH ? batch[i]->graph : NULL;
		for (uint32_t k = 0; k < r->n_flight;) {
			struct vy_job *f = r->flight[k];
			bool same = g && f->kind == VY_JOB_GRAPH && f->graph == g;
			if (same || !r->pend[k] || vy_pending_is_ready(r->pend[k])) {
				collect(d, r, k);
			} else {
				k++;
			}
		}
		run_one(d, batch[i]);
		job_ended(d, r, batch[i]);
	}
	return started;
}

/* After a loss, once nothing is in flight: recover, then answer the jobs held meanwhile. */
static void settle_loss(struct vy_device *d, struct run *r)
{
	if (r->n_flight || !(r->lost || vy_backend_device_lost(d->backend))) {
		return;
	}
	recover(d);
	for (uint32_t i = 0; i < r->n_held; i++) {
		hand_over(d, r->held[i], r->took[i]);
	}
	r->n_held = 0;
	r->lost = false;
}

/* How long a GPU's submit thread polls an empty queue before it sleeps. */
#define SUBMIT_SPIN_NS 100000u

/* Poll for new work for a while (lock released meanwhile); true when some arrived. */
static bool spin_for_work(struct vy_device *d)
{
	uint64_t seen = atomic_load_explicit(&d->submitted, memory_order_relaxed);
	pthread_mutex_unlock(&d->lock);
	uint64_t start = vy_now_ns();
	bool more = false;
	while (!more && vy_now_ns() - start < SUBMIT_SPIN_NS) {
		more = atomic_load_explicit(&d->submitted, memory_order_acquire) != seen;
	}
	pthread_mutex_lock(&d->lock);
	return more;
}

/*
 * The submit thread. While a batch is in flight the next one is taken and started behind it
 * before the first is taken back, so the device runs one batch while the thread answers the
 * one before and records the one after. With nothing queued it takes back what is in flight;
 * with nothing in flight either it polls a GPU's queue briefly, then sleeps.
 */
static void *submit_thread(void *arg)
{
	struct vy_device *d = arg;
	char name[16];
	snprintf(name, sizeof(name), "vyred-dev%u", d->index);
	pthread_setname_np(pthread_self(), name);
	struct vy_job *batch[MAX_BATCH];
	struct run *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "vyred: out of memory for device %u's submit thread\n", d->index);
		abort();
	}
	uint64_t serial = 0;
	pthread_mutex_lock(&d->lock);
	for (;;) {
		if (r->n_flight == 0) {
			if (d->spin && !d->stop && vy_list_empty(&d->active)) {
				spin_for_work(d);
			}
			while (!d->stop && vy_list_empty(&d->active)) {
				pthread_cond_wait(&d->cond, &d->lock);
			}
			if (d->stop) {
				break;
			}
			r->mark = vy_now_ns();
		}
		/* After a loss nothing new starts until what is in flight is back. */
		bool take = !d->stop && !r->lost && !vy_list_empty(&d->active);
		uint32_t n = take ? take_batch(d, batch, d->batch_max) : 0;
		d->running += n;
		if (n > d->largest_batch) {
			d->largest_batch = n;
		}
		bool overlapped = n && r->n_flight;
		pthread_mutex_unlock(&d->lock);
		uint64_t t0 = vy_now_ns();
		uint32_t together = 0;
		if (n) {
			together = run_batch(d, r, batch, n, ++serial);
			collect_before(d, r, serial);
		} else {
			collect_before(d, r, serial + 1);
		}
		settle_loss(d, r);
		uint64_t t1 = vy_now_ns();
		pthread_mutex_lock(&d->lock);
		d->started_together += together;
		d->batches += n > 0;
		d->batches_overlapped += overlapped;
		d->busy_ns += t1 - t0;
		assert(r->n_flight || r->n_held || d->running == 0);
	}
	pthread_mutex_unlock(&d->lock);
	assert(r->n_flight == 0 && r->n_held == 0);
	free(r);
	return NULL;
}

/* --- the loop side --------------------------------------------------------------------- */

/* How long the loop keeps polling after a GPU's last job came back: a client that answers a
 * reply with its next request finds the loop awake. */
#define LOOP_LINGER_NS 200000u

static void on_idle(uv_idle_t *idle)
{
	struct vy_device *d = idle->data;
	if (d->loop_jobs == 0 && vy_now_ns() >= d->idle_until_ns) {
		uv_idle_stop(idle);
	}
}

/* Count a job leaving the loop's hands; after the last one the loop polls a little longer, then
 * sleeps again. */
static void loop_job_done(struct vy_device *d)
{
	assert(d->loop_jobs > 0);
	if (--d->loop_jobs == 0) {
		d->idle_until_ns = vy_now_ns() + LOOP_LINGER_NS;
	}
}

static void complete_done(struct vy_device *d)
{
	struct vy_link done;
	vy_list_init(&done);
	pthread_mutex_lock(&d->lock);
	vy_list_splice(&done, &d->done);
	bool reset = d->reset_pending;
	d->reset_pending = false;
	pthread_mutex_unlock(&d->lock);
	if (reset) {
		vy_caches_drop_device(d->srv, d);
		vy_resident_device_lost(d->srv, d);
	}
	uint64_t now = vy_now_ns();
	while (!vy_list_empty(&done)) {
		struct vy_job *j = VY_CONTAINER_OF(done.next, struct vy_job, link);
		vy_list_remove(&j->link);
		j->t_loop = now;
		loop_job_done(d);
		vy_ops_on_job(j);
	}
}

static void on_async(uv_async_t *async)
{
	struct vy_device *d = async->data;
	vy_replies_cork(d->srv);
	complete_done(d);
	vy_replies_uncork(d->srv);
	vy_server_poke(d->srv);
}

void vy_device_submit(struct vy_job *job)
{
	struct vy_device *d = job->dev;
	struct vy_conn *c = job->req->conn;
	struct vy_cqueue *q = &c->queues[d->index];
	job->t_enqueue = vy_now_ns();
	pthread_mutex_lock(&d->lock);
	if (!q->user) {
		q->user = user_get(d, c->uid);
		q->user->refs++;
		q->est_ns = q->user->est_ns;
	}
	vy_list_insert_tail(&q->jobs, &job->link);
	if (!vy_link_linked(&q->ring)) {
		struct vy_fair_user *u = q->user;
		if (!vy_link_linked(&u->active)) {
			/* No credit for the time it was idle. */
			if (u->vtime < d->vclock) {
				u->vtime = d->vclock;
			}
			vy_list_insert_tail(&d->active, &u->active);
		}
		vy_list_insert_tail(&u->ring, &q->ring);
	}
	d->depth++;
	atomic_fetch_add_explicit(&d->submitted, 1, memory_order_release);
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	/* An active idle handle makes the loop poll without blocking until the job is back. */
	if (d->loop_jobs++ == 0 && d->idle_open) {
		uv_idle_start(&d->idle, on_idle);
	}
}

void vy_device_cancel_conn(struct vy_server *s, struct vy_conn *c)
{
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_device *d = &s->devices[i];
		struct vy_cqueue *q = &c->queues[i];
		struct vy_link jobs;
		vy_list_init(&jobs);
		pthread_mutex_lock(&d->lock);
		uint32_t n = 0;
		for (struct vy_link *l = q->jobs.next; l != &q->jobs; l = l->next) {
			n++;
		}
		vy_list_splice(&jobs, &q->jobs);
		if (vy_link_linked(&q->ring)) {
			vy_list_remove(&q->ring);
			if (vy_list_empty(&q->user->ring)) {
				vy_list_remove(&q->user->active);
			}
		}
		d->depth -= n;
		pthread_mutex_unlock(&d->lock);
		while (!vy_list_empty(&jobs)) {
			struct vy_job *j = VY_CONTAINER_OF(jobs.next, struct vy_job, link);
			vy_list_remove(&j->link);
			j->canceled = true;
			loop_job_done(d);
			vy_ops_on_job(j);
		}
	}
}

void vy_device_conn_finish(struct vy_server *s, struct vy_conn *c)
{
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_device *d = &s->devices[i];
		struct vy_cqueue *q = &c->queues[i];
		if (!q->user) {
			continue;
		}
		pthread_mutex_lock(&d->lock);
		assert(vy_list_empty(&q->jobs) && !vy_link_linked(&q->ring));
		user_unref(q->user);
		q->user = NULL;
		pthread_mutex_unlock(&d->lock);
	}
}

uint64_t vy_device_generation(struct vy_device *d)
{
	pthread_mutex_lock(&d->lock);
	uint64_t generation = d->generation;
	pthread_mutex_unlock(&d->lock);
	return generation;
}

void vy_devices_import_counts(struct vy_server *s, uint64_t *inputs, uint64_t *bytes)
{
	*inputs = 0;
	*bytes = 0;
#ifdef VY_HAVE_VULKAN
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_vulkan_stats st;
		if (s->devices[i].vulkan && vy_vulkan_stats(s->devices[i].backend, &st)) {
			*inputs += st.host_import_inputs;
			*bytes += st.host_import_bytes;
		}
	}
#endif
}

uint32_t vy_device_load(struct vy_device *d)
{
	pthread_mutex_lock(&d->lock);
	uint32_t load = d->depth + d->running;
	pthread_mutex_unlock(&d->lock);
	return load;
}

bool vy_devices_idle(struct vy_server *s)
{
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_device *d = &s->devices[i];
		pthread_mutex_lock(&d->lock);
		bool busy = d->depth || d->running || !vy_list_empty(&d->done);
		pthread_mutex_unlock(&d->lock);
		if (busy) {
			return false;
		}
	}
	return true;
}

static const char *backend_of(enum vy_backend_choice choice)
{
	switch (choice) {
	case VY_BACKEND_VULKAN:
		return "vulkan";
	case VY_BACKEND_REFERENCE:
		return "reference";
	case VY_BACKEND_ANY:
		break;
	}
	return NULL;
}

struct vy_device *vy_device_pick(struct vy_server *s, const struct vy_request_config *c,
	unsigned features, struct vy_err *err)
{
	const char *want = backend_of(c->backend);
	bool subgroups = features & VY_LAUNCH_USES_SUBGROUPS;
	if (c->device >= 0) {
		if ((uint32_t)c->device >= s->n_devices) {
			vy_err_set(err, VY_E_BAD_REQUEST, "config.device",
				"use a device index that hello listed",
				"device %" PRId32 " does not exist; this daemon has %u", c->device,
				s->n_devices);
			return NULL;
		}
		struct vy_device *d = &s->devices[c->device];
		if (want && strcmp(d->backend->id, want) != 0) {
			vy_err_set(err, VY_E_BAD_REQUEST, "config.backend",
				"drop config.backend or name a device of that backend",
				"device %" PRId32 " runs the %s backend, not %s", c->device,
				d->backend->id, want);
			return NULL;
		}
		return d;
	}
	struct vy_device *best = NULL;
	uint32_t best_load = UINT32_MAX;
	bool any_backend = false;
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_device *d = &s->devices[i];
		if (want && strcmp(d->backend->id, want) != 0) {
			continue;
		}
		any_backend = true;
		if (subgroups && !d->caps.subgroups) {
			continue;
		}
		uint32_t load = vy_device_load(d);
		if (load < best_load) {
			best = d;
			best_load = load;
		}
	}
	if (!best && !any_backend) {
		char fix[VY_ERR_FIX_MAX];
		snprintf(fix, sizeof(fix), "drop config.backend, or start vyred with backend = %s",
			want);
		vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, "config.backend", fix,
			"no device of the %s backend is open in this daemon", want);
	} else if (!best) {
		vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"avoid subgroup operations, or run vyred on a device that has them",
			"the program uses subgroup operations and no open device supports them");
	}
	return best;
}

/* --- opening and closing --------------------------------------------------------------- */

static uint64_t fingerprint_of(const struct vy_device_profile *p, uint32_t index)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	const unsigned char *id = (const unsigned char *)p->backend;
	while (id && *id) {
		h = (h ^ *id++) * UINT64_C(0x100000001b3);
	}
	uint32_t words[] = {p->vendor_id, p->device_id, p->driver_version, index};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		for (int k = 0; k < 4; k++) {
			h = (h ^ ((words[i] >> (8 * k)) & 0xff)) * UINT64_C(0x100000001b3);
		}
	}
	for (int k = 0; k < 16; k++) {
		h = (h ^ p->pipeline_cache_uuid[k]) * UINT64_C(0x100000001b3);
	}
	return h;
}

/* The daemon's own program of the warm-up dispatch: y[i] = x[i] + 1 over 64 words. */
static const char warm_program[] =
	"{\"vyre\": 1, \"name\": \"vyred_warm_up\", \"workgroup_size\": [64, 1, 1],"
	" \"buffers\": ["
	"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"u32\","
	" \"count\": 64},"
	" {\"name\": \"y\", \"binding\": 1, \"access\": \"write_only\", \"type\": \"u32\","
	" \"count\": 64}],"
	" \"entry\": [[\"let\", \"i\", [\"gid\", 0]], [\"store\", \"y\", [\"var\", \"i\"],"
	" [\"add\", [\"load\", \"x\", [\"var\", \"i\"]], [\"u32\", 1]]]]}";

#define WARM_WORDS 64u

static int warm_run(struct vy_device *d, struct vy_program *program, struct vy_err *err)
{
	struct vy_err_list errs;
	vy_err_list_init(&errs);
	int rc = vy_validate(program, &d->caps, &errs);
	if (rc) {
		*err = errs.items[0];
	}
	vy_err_list_finish(&errs);
	struct vy_spec_map none;
	vy_spec_map_init(&none);
	struct vy_dispatch_config cfg = {.spec = &none};
	struct vy_pipeline *pl = NULL;
	if (rc == 0) {
		rc = vy_backend_compile_native(d->backend, program, &cfg, &pl, err);
	}
	uint32_t x[WARM_WORDS];
	for (uint32_t i = 0; i < WARM_WORDS; i++) {
		x[i] = i * 0x9E3779B9u;
	}
	struct vy_bytes input = {(const uint8_t *)x, sizeof(x)};
	struct vy_outputs outputs;
	vy_outputs_init(&outputs);
	if (rc == 0) {
		rc = vy_pipeline_dispatch(pl, &input, 1, &cfg, &outputs, err);
	}
	for (uint32_t i = 0; rc == 0 && i < WARM_WORDS; i++) {
		uint32_t y = 0;
		if (outputs.len == 1 && outputs.items[0].len == sizeof(x)) {
			memcpy(&y, outputs.items[0].data + 4 * i, 4);
		}
		if (y != x[i] + 1) {
			rc = vy_err_set(err, VY_E_INTERNAL, NULL,
				"run vyred --check and look for the device's faults",
				"word %u of the warm-up dispatch is 0x%08" PRIX32
				", not 0x%08" PRIX32,
				i, y, x[i] + 1);
		}
	}
	vy_outputs_finish(&outputs);
	vy_pipeline_destroy(pl);
	vy_spec_map_finish(&none);
	return rc;
}

void vy_device_warm(struct vy_device *d)
{
	struct vy_program *program = NULL;
	struct vy_err err = {0};
	int rc = vy_program_from_json(warm_program, sizeof(warm_program) - 1, &program, &err);
	if (rc == 0) {
		rc = warm_run(d, program, &err);
	}
	vy_program_destroy(program);
	if (rc) {
		vy_log_err(
			VY_LOG_WARNING, &err, "device %u: the warm-up dispatch failed", d->index);
	}
}

static int add_device(struct vy_server *s, struct vy_backend *b, struct vy_err *err)
{
	if (s->n_devices == VY_MAX_DEVICES) {
		vy_backend_destroy(b);
		return vy_err_set(err, VY_E_BAD_REQUEST, "devices", "list at most 16 devices",
			"more than %d devices requested", VY_MAX_DEVICES);
	}
	int rc = vy_backend_prepare(b, err);
	if (rc) {
		vy_backend_destroy(b);
		return rc;
	}
	struct vy_device *d = &s->devices[s->n_devices];
	memset(d, 0, sizeof(*d));
	d->srv = s;
	d->index = s->n_devices;
	d->backend = b;
	d->vulkan = strcmp(b->id, "vulkan") == 0;
	d->batch_max = (uint32_t)s->cfg.batch_max;
	d->batch_cost_ns = s->cfg.batch_cost_us * 1000;
	vy_backend_device_profile(b, &d->profile);
	d->caps.subgroups = d->profile.supports_subgroup_ops;
	d->caps.max_workgroup_invocations = d->profile.max_workgroup_invocations;
	memcpy(d->caps.max_workgroup_size, d->profile.max_workgroup_size,
		sizeof(d->caps.max_workgroup_size));
	d->caps.max_shared_bytes = d->profile.max_shared_bytes > UINT32_MAX
					   ? UINT32_MAX
					   : (uint32_t)d->profile.max_shared_bytes;
	d->fingerprint = fingerprint_of(&d->profile, d->index);
	vy_list_init(&d->users);
	vy_list_init(&d->active);
	vy_list_init(&d->done);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	uv_async_init(&s->loop, &d->async, on_async);
	d->async.data = d;
	d->async_open = true;
	const char *spin = s->cfg.spin;
	d->spin = strcmp(spin, "on") == 0 || (strcmp(spin, "auto") == 0 && !d->profile.cpu_device);
	if (d->spin) {
		uv_idle_init(&s->loop, &d->idle);
		d->idle.data = d;
		d->idle_open = true;
	}
	s->n_devices++;
	if (pthread_create(&d->thread, NULL, submit_thread, d) != 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL, "raise the process's thread limit",
			"cannot start the submit thread of device %u", d->index);
	}
	d->thread_started = true;
	vy_log(VY_LOG_INFO, "device %u: %s backend, %s (%s), subgroup size %u%s", d->index, b->id,
		d->profile.name,
		d->profile.driver_info[0] ? d->profile.driver_info : "no driver info",
		d->profile.subgroup_size, d->caps.subgroups ? "" : ", no subgroup operations");
	return 0;
}

/* Parse "all" or "0,1,3" into indices; `all` set for "all". */
static size_t parse_devices(const char *list, uint32_t *out, size_t cap, bool *all)
{
	*all = strcmp(list, "all") == 0;
	size_t n = 0;
	for (const char *p = list; !*all && *p && n < cap;) {
		while (*p == ' ' || *p == ',') {
			p++;
		}
		if (!isdigit((unsigned char)*p)) {
			break;
		}
		out[n++] = (uint32_t)strtoul(p, (char **)&p, 10);
	}
	return n;
}

#ifdef VY_HAVE_VULKAN
/*
 * Whether the enumerated device i is a GPU listed before it (device 0, opened already, or an
 * earlier entry): a driver listed by two manifests shows each GPU twice, and `devices = all`
 * opens every GPU once. A list that names one index twice (`devices = 0,0`) is taken as written.
 */
static bool seen_before(
	const struct vy_server *s, const struct vy_vulkan_device_info *info, uint32_t i)
{
	static const uint8_t none[16];
	if (memcmp(info[i].uuid, none, sizeof(none)) == 0) {
		return false;
	}
	for (uint32_t k = 0; k < i; k++) {
		bool opened = k == 0 && s->n_devices > 0 && s->devices[0].profile.has_device_uuid &&
			      memcmp(s->devices[0].profile.device_uuid, info[i].uuid, 16) == 0;
		bool listed =
			k > 0 && info[k].usable && memcmp(info[k].uuid, info[i].uuid, 16) == 0;
		if (opened || listed) {
			vy_log(VY_LOG_NOTICE,
				"vulkan device %u (%s) is device %u again (the same device UUID): "
				"not opened twice",
				i, info[i].name, k);
			return true;
		}
	}
	return false;
}
#endif

static int open_backend(struct vy_server *s, const char *id, struct vy_err *err)
{
	struct vy_registry_options opts = {
		.subgroup_size = (uint32_t)s->cfg.reference_subgroup_size,
		.cache_dir = s->backend_dir,
		.cache_key = s->backend_dir ? s->disk_key : NULL,
		.enable_validation = s->cfg.vulkan_validation,
		.disk_quota = s->disk_budget ? &s->disk_budget->quota : NULL,
		/* The daemon's pipeline cache holds what it uses; the backend keeps no more. */
		.kernel_cache_entries = s->cfg.pipeline_cache_entries < UINT32_MAX
						? (uint32_t)s->cfg.pipeline_cache_entries
						: UINT32_MAX,
	};
	uint32_t indices[VY_MAX_DEVICES];
	bool all;
	size_t n = parse_devices(s->cfg.devices, indices, VY_MAX_DEVICES, &all);
	if (all) {
		n = 1;
		indices[0] = 0;
	}
	int first_rc = 0;
#ifdef VY_HAVE_VULKAN
	if (all && strcmp(id, "vulkan") == 0) {
		/* Open device 0 before enumerating: the enumeration's short-lived instance then
		 * finds the driver already loaded and does not unload it again (see
		 * vy_devices_pin_libraries). */
		struct vy_backend *b = NULL;
		struct vy_err e = {0};
		opts.device_index = 0;
		first_rc = vy_registry_open(id, &opts, &b, &e);
		if (first_rc == 0) {
			first_rc = add_device(s, b, &e);
		}
		if (first_rc) {
			vy_log_err(VY_LOG_WARNING, &e, "vulkan device 0 did not open");
			if (err) {
				*err = e;
			}
		}
		struct vy_vulkan_device_info info[VY_MAX_DEVICES];
		uint32_t total = 0;
		n = 0;
		if (vy_vulkan_devices_enumerate(
			    info, VY_MAX_DEVICES, &total, s->n_devices ? NULL : err) != 0) {
			return s->n_devices ? 0 : (err ? err->code : VY_E_UNSUPPORTED_FEATURE);
		}
		for (uint32_t i = 0; i < total && i < VY_MAX_DEVICES; i++) {
			if (info[i].usable && info[i].index != 0 && !seen_before(s, info, i)) {
				indices[n++] = info[i].index;
			}
		}
	}
#endif
	for (size_t i = 0; i < n; i++) {
		opts.device_index = indices[i];
		struct vy_backend *b = NULL;
		struct vy_err e = {0};
		int rc = vy_registry_open(id, &opts, &b, &e);
		if (rc == 0) {
			rc = add_device(s, b, &e);
		}
		if (rc && !all) {
			if (err) {
				*err = e;
			}
			return rc;
		}
		if (rc) {
			vy_log_err(VY_LOG_WARNING, &e, "%s device %u did not open", id, indices[i]);
			if (!first_rc && err) {
				*err = e;
			}
			first_rc = first_rc ? first_rc : rc;
		}
	}
	if (s->n_devices == 0) {
		if (!first_rc) {
			return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
				"install a Vulkan driver (mesa-vulkan-drivers gives lavapipe) or "
				"set "
				"backend = reference",
				"no usable %s device was found", id);
		}
		return first_rc;
	}
	return 0;
}

int vy_devices_open(struct vy_server *s, struct vy_err *err)
{
	const char *backend = s->cfg.backend;
	if (strcmp(backend, "auto") != 0) {
		return open_backend(s, backend, err);
	}
	if (vy_registry_find("vulkan")) {
		struct vy_err e = {0};
		int rc = open_backend(s, "vulkan", &e);
		if (rc == 0 || s->n_devices > 0) {
			if (rc && err) {
				*err = e;
			}
			return rc;
		}
		vy_log_err(
			VY_LOG_NOTICE, &e, "no Vulkan device opened; using the reference backend");
	}
	return open_backend(s, "reference", err);
}

void vy_devices_stop(struct vy_server *s)
{
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_device *d = &s->devices[i];
		if (!d->thread_started) {
			continue;
		}
		pthread_mutex_lock(&d->lock);
		d->stop = true;
		pthread_cond_signal(&d->cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
		d->thread_started = false;
	}
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_device *d = &s->devices[i];
		/* Every connection is closed by now, so no job is queued: only finished ones wait.
		 */
		complete_done(d);
		if (d->async_open) {
			uv_close((uv_handle_t *)&d->async, NULL);
			d->async_open = false;
		}
		if (d->idle_open) {
			uv_close((uv_handle_t *)&d->idle, NULL);
			d->idle_open = false;
		}
	}
}

static int pin_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (info->dlpi_name && info->dlpi_name[0]) {
		dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	}
	return 0;
}

/*
 * Keep every library loaded so far mapped until the process exits. Destroying a Vulkan instance
 * unloads its driver (the ICD); memory the driver's globals still point to would then look
 * leaked to LeakSanitizer, which checks after the driver is gone. The daemon is exiting, so
 * unloading saves nothing.
 */
void vy_devices_pin_libraries(void)
{
	dl_iterate_phdr(pin_one, NULL);
}

void vy_devices_destroy(struct vy_server *s)
{
	if (s->n_devices) {
		vy_devices_pin_libraries();
	}
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_device *d = &s->devices[i];
		assert(!d->thread_started);
		/* Every connection released its share when it closed. */
		assert(vy_list_empty(&d->users));
		struct vy_err err = {0};
		if (vy_backend_flush(d->backend, &err) != 0) {
			vy_log_err(VY_LOG_WARNING, &err,
				"device %u: saving the pipeline cache failed", d->index);
		}
		if (vy_backend_shutdown(d->backend, &err) != 0) {
			vy_log_err(VY_LOG_WARNING, &err, "device %u: shutdown", d->index);
		}
		vy_backend_destroy(d->backend);
		d->backend = NULL;
		pthread_mutex_destroy(&d->lock);
		pthread_cond_destroy(&d->cond);
	}
	s->n_devices = 0;
}

static void pack_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	vy_pack_cstr(pk, key);
	msgpack_pack_uint64(pk, v);
}

static void pack_bool(msgpack_packer *pk, const char *key, bool v)
{
	vy_pack_cstr(pk, key);
	if (v) {
		msgpack_pack_true(pk);
	} else {
		msgpack_pack_false(pk);
	}
}

void vy_devices_pack(struct vy_server *s, msgpack_packer *pk, bool brief)
{
	msgpack_pack_array(pk, s->n_devices);
	for (uint32_t i = 0; i < s->n_devices; i++) {
		struct vy_device *d = &s->devices[i];
		struct vy_device_profile p;
		vy_backend_device_profile(d->backend, &p);
		uint64_t total = 0;
		uint64_t used = 0;
		for (uint32_t h = 0; h < p.n_heaps; h++) {
			if (p.heaps[h].device_local) {
				total += p.heaps[h].total_bytes;
				used += p.heaps[h].used_bytes;
			}
		}
		msgpack_pack_map(pk, brief ? 17 : 31);
		pack_u64(pk, "index", d->index);
		vy_pack_cstr(pk, "backend");
		vy_pack_cstr(pk, d->backend->id);
		vy_pack_cstr(pk, "name");
		vy_pack_cstr(pk, p.name);
		vy_pack_cstr(pk, "uuid");
		if (p.has_device_uuid) {
			char hex[33];
			for (int k = 0; k < 16; k++) {
				snprintf(hex + 2 * k, 3, "%02x", p.device_uuid[k]);
			}
			vy_pack_cstr(pk, hex);
		} else {
			msgpack_pack_nil(pk);
		}
		vy_pack_cstr(pk, "driver");
		vy_pack_cstr(pk, p.driver_info);
		vy_pack_cstr(pk, "version");
		vy_pack_cstr(pk, vy_backend_version(d->backend));
		pack_u64(pk, "vendor_id", p.vendor_id);
		pack_u64(pk, "device_id", p.device_id);
		pack_bool(pk, "subgroup_ops", p.supports_subgroup_ops);
		pack_u64(pk, "subgroup_size", p.subgroup_size);
		vy_pack_cstr(pk, "max_workgroup_size");
		msgpack_pack_array(pk, 3);
		for (int k = 0; k < 3; k++) {
			msgpack_pack_uint32(pk, p.max_workgroup_size[k]);
		}
		pack_u64(pk, "max_workgroup_invocations", p.max_workgroup_invocations);
		pack_u64(pk, "max_storage_buffer_bytes", p.max_storage_buffer_bytes);
		pack_u64(pk, "memory_total", total);
		pack_u64(pk, "memory_used", used);
		vy_pack_cstr(pk, "float");
		msgpack_pack_map(pk, 6);
		pack_bool(pk, "fma_fused", p.fma_fused);
		pack_bool(pk, "div_exact", p.div_exact);
		pack_bool(pk, "sqrt_exact", p.sqrt_exact);
		pack_bool(pk, "keeps_subnormals", p.keeps_subnormals);
		pack_bool(pk, "fold_exact", p.fold_exact);
		pack_bool(pk, "select_exact", p.select_exact);
		pack_u64(pk, "loop_passes", p.loop_passes);
		if (brief) {
			continue;
		}
		pthread_mutex_lock(&d->lock);
		uint64_t dispatches = d->dispatches;
		uint64_t busy = d->busy_ns;
		uint64_t batches = d->batches;
		uint64_t jobs = d->jobs_done;
		uint32_t largest = d->largest_batch;
		uint64_t together = d->started_together;
		uint64_t overlapped = d->batches_overlapped;
		uint64_t lost = d->lost_count;
		uint64_t timeouts = d->timeouts;
		uint32_t depth = d->depth;
		uint32_t running = d->running;
		pthread_mutex_unlock(&d->lock);
		pack_u64(pk, "dispatches", dispatches);
		pack_u64(pk, "busy_ns", busy);
		pack_u64(pk, "batches", batches);
		pack_u64(pk, "jobs", jobs);
		pack_u64(pk, "largest_batch", largest);
		pack_u64(pk, "started_together", together);
		pack_u64(pk, "batches_overlapped", overlapped);
		pack_u64(pk, "queue_depth", depth);
		pack_u64(pk, "running", running);
		pack_u64(pk, "lost", lost);
		pack_u64(pk, "timeouts", timeouts);
		/* Files of the backend's disk cache that failed their MAC or another check, and
		 * SPIR-V modules among them that spirv-val refused before the driver saw them. */
		uint64_t rejected = 0;
		uint64_t invalid = 0;
#ifdef VY_HAVE_VULKAN
		struct vy_vulkan_stats vs;
		if (d->vulkan && vy_vulkan_stats(d->backend, &vs)) {
			rejected = vs.disk_rejected;
			invalid = vs.spirv_disk_invalid;
		}
#endif
		pack_u64(pk, "disk_rejected", rejected);
		pack_u64(pk, "spirv_invalid", invalid);
		struct vy_pipeline_cache_stats pc = {0};
		bool has = vy_backend_pipeline_cache_stats(d->backend, &pc);
		vy_pack_cstr(pk, "backend_cache");
		if (has) {
			msgpack_pack_map(pk, 5);
			pack_u64(pk, "entries", pc.entries);
			pack_u64(pk, "bytes", pc.bytes);
			pack_u64(pk, "hits", pc.hits);
			pack_u64(pk, "misses", pc.misses);
			pack_u64(pk, "evictions", pc.evictions);
		} else {
			msgpack_pack_nil(pk);
		}
	}
}
