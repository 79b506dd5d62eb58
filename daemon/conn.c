/*
 * Client connections (DESIGN.md §6, §7.2, §7.5): accepting with peer credentials, reading frames,
 * writing replies without copying large binaries, backpressure, and closing at safe points.
 *
 * Each connection is a libuv pipe opened in IPC mode, so that libuv reads with recvmsg and keeps
 * the descriptors a peer sends with SCM_RIGHTS (shm_attach) in order beside the bytes they came
 * with; vy_conn_take_fd takes the next one while the frame that needs it is handled. Frames that
 * do not consume a descriptor leave it pending, and pending descriptors are closed once no frame
 * is in progress, so a peer cannot pile them up.
 *
 * Slow senders: a frame must arrive whole within stall_timeout_ms of its first byte (or of the
 * moment reading resumed after backpressure). Measuring from the last byte instead would let a
 * peer that sends one byte a second hold its connection, and its share of max_clients, forever.
 * c->progress_ns holds that starting time.
 *
 * Lifetime: a connection is freed in the close callback of its pipe, after every request it had
 * in flight has been answered or dropped (requests point at it) and after libuv has called every
 * write callback. A peer that half-closes (EOF) still gets its replies; a read error, a bad frame
 * (after its error reply), a stall in the middle of a frame, or a failed write closes it, which
 * cancels its queued jobs and frees its unnamed resident buffers and shared memory regions.
 *
 * Backpressure: the memory of replies handed to libuv and not yet written (their bytes and their
 * bookkeeping), plus the reply bytes of downloads and dispatches accepted and not yet answered,
 * is counted per connection; above write_high_water the connection is no longer
 * read, below write_low_water reading resumes. A client that never reads its replies thus stops
 * being served instead of growing the daemon's memory, and the limit on requests in flight bounds
 * what it can queue before that. The check runs between reads, so one read (VY_READ_CHUNK bytes
 * of requests) may still add its replies beyond the mark.
 *
 * Inbound bytes: every frame is counted against its user's inbound_quota and the daemon's
 * inbound_total from its length prefix until its request is freed, so that neither queued
 * requests nor half-sent frames hold more than those bounds. A frame that does not fit waits: the
 * connection is not read until room is freed (inbound_wake). Each read is sized to the room left
 * (and to the rest of an admitted frame), so the bytes already in hand past a prefix that must
 * wait fit the room too; they are kept and counted, and the frame cannot be complete. A frame
 * larger than the quota can never fit and is refused (QUOTA_EXCEEDED, then close); one that waits
 * for room only frames of waiting connections hold is refused BUSY by the sweep, so waiting
 * never deadlocks.
 *
 * Users: connections are counted per uid (max_clients_per_user, refused with an error reply of id
 * 0 beyond it), as are requests in flight (max_inflight_per_user, ops.c). A connection with
 * nothing in flight, nothing unsent, no partial frame and no unnamed resident buffer or shm
 * region is idle; idle_timeout_ms after its last byte in or out it is closed. Buffers and regions
 * keep a connection, since closing it would free them under a client that means to come back.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "vyred.h"

static void conn_close(struct vy_conn *c, const char *why);
static void maybe_free(struct vy_conn *c);
static void start_reading(struct vy_conn *c);

bool vy_conn_alive(const struct vy_conn *c)
{
	return c->state == VY_CONN_OPEN || c->state == VY_CONN_EOF;
}

/* --- users and inbound bytes --------------------------------------------------------------- */

static struct vy_user *user_get(struct vy_server *s, uid_t uid)
{
	for (struct vy_link *l = s->users.next; l != &s->users; l = l->next) {
		struct vy_user *u = VY_CONTAINER_OF(l, struct vy_user, link);
		if (u->uid == uid) {
			return u;
		}
	}
	struct vy_user *u = calloc(1, sizeof(*u));
	if (!u) {
		fprintf(stderr, "vyred: out of memory for a user\n");
		abort();
	}
	u->uid = uid;
	vy_list_insert_tail(&s->users, &u->link);
	return u;
}

/* Forget a user that holds nothing any more. */
static void user_put(struct vy_user *u)
{
	if (u->conns == 0 && u->in_flight == 0 && u->inbound == 0) {
		assert(u->held == 0 && u->replies == 0);
		vy_list_remove(&u->link);
		free(u);
	}
}

void vy_conn_replies_add(struct vy_conn *c, uint64_t bytes)
{
	c->out_pending += bytes;
	c->user->replies += bytes;
	c->srv->replies += bytes;
}

/* Fewer reply bytes held: room that a deferred dispatch of any connection may wait for. */
void vy_conn_replies_sub(struct vy_conn *c, uint64_t bytes)
{
	c->out_pending -= bytes;
	c->user->replies -= bytes;
	c->srv->replies -= bytes;
}

static void inflight_add(struct vy_conn *c)
{
	c->in_flight++;
	c->user->in_flight++;
	c->srv->in_flight++;
}

/* Inbound bytes `c` may still be given: its user's and the daemon's, whichever is smaller. */
static uint64_t inbound_room(const struct vy_conn *c)
{
	const struct vy_server *s = c->srv;
	uint64_t user = c->user->inbound < s->cfg.inbound_quota
				? s->cfg.inbound_quota - c->user->inbound
				: 0;
	uint64_t all = s->inbound < s->cfg.inbound_total ? s->cfg.inbound_total - s->inbound : 0;
	return user < all ? user : all;
}

/*
 * Kept frame buffers: the buffer of a large frame (VY_KEEP_MIN or more) goes back to its
 * connection when its request is freed, and that connection's next large frame is read into it
 * (resized in place where it can be), so a client that sends large inputs does not pay the
 * kernel for fresh pages on every frame. Only the connection that sent it reads into it again.
 * Kept bytes are not frame bytes, so they never make a frame wait; they fit beside the inbound
 * bytes within both bounds, and whatever inbound bytes are added next frees the oldest kept
 * buffers until they fit again. A buffer not used again within VY_KEEP_IDLE_NS is freed by the
 * sweep, and with its connection.
 */
static void import_release(struct vy_frame_import *fi)
{
	if (fi->id) {
		vy_backend_host_release(fi->dev->backend, fi->id);
	}
	*fi = (struct vy_frame_import){0};
}

static void kept_detach(struct vy_conn *c)
{
	struct vy_server *s = c->srv;
	vy_list_remove(&c->kept_link);
	s->kept_bytes -= c->kept_len;
	c->user->kept -= c->kept_len;
	c->kept = NULL;
	c->kept_len = 0;
}

static void kept_drop(struct vy_conn *c)
{
	if (c->kept) {
		uint8_t *buf = c->kept;
		kept_detach(c);
		import_release(&c->kept_import);
		free(buf);
	}
}

/* Free kept buffers, the oldest first, until they fit beside the inbound bytes within
 * inbound_total, and within inbound_quota for `u` (NULL: every user). */
static void kept_trim(struct vy_server *s, const struct vy_user *u)
{
	struct vy_link *l;
	struct vy_link *t;
	VY_LIST_FOR_EACH_SAFE(l, t, &s->kept)
	{
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, kept_link);
		const struct vy_user *o = c->user;
		if (s->inbound + s->kept_bytes > s->cfg.inbound_total ||
			((!u || o == u) && o->inbound + o->kept > s->cfg.inbound_quota)) {
			kept_drop(c);
		}
	}
}

/* The request's frame is done with: keep its buffer (and its import) for the connection's next
 * large frame where it is large and fits, else free it. */
static void kept_offer(struct vy_conn *c, struct vy_req *req)
{
	struct vy_server *s = c->srv;
	uint8_t *buf = req->frame;
	size_t len = req->frame_cap;
	req->frame = NULL;
	bool keep = buf && len >= VY_KEEP_MIN && c->state == VY_CONN_OPEN && c->user;
	if (keep) {
		kept_drop(c);
		keep = s->inbound + s->kept_bytes + len <= s->cfg.inbound_total &&
		       c->user->inbound + c->user->kept + len <= s->cfg.inbound_quota;
	}
	if (!keep) {
		import_release(&req->frame_import);
		free(buf);
		return;
	}
	c->kept_import = req->frame_import;
	req->frame_import = (struct vy_frame_import){0};
	c->kept = buf;
	c->kept_len = len;
	c->kept_ns = vy_now_ns();
	vy_list_insert_tail(&s->kept, &c->kept_link);
	s->kept_bytes += len;
	c->user->kept += len;
}

/* The frame whose prefix was just admitted is large: read it into the kept buffer. */
static void kept_use(struct vy_conn *c)
{
	size_t want = c->reader.len;
	if (!c->kept || want < VY_KEEP_MIN) {
		return;
	}
	uint8_t *buf = c->kept;
	size_t len = c->kept_len;
	kept_detach(c);
	/* Pages imported from the buffer go before a resize may move them. */
	struct vy_frame_import fi = c->kept_import;
	c->kept_import = (struct vy_frame_import){0};
	if (len != want) {
		import_release(&fi);
	}
	uint8_t *fit = len == want ? buf : realloc(buf, want);
	if (!fit) {
		free(buf);
		return;
	}
	if (vy_frame_reader_give(&c->reader, fit, want)) {
		c->srv->stats.frames_reused++;
		c->reading_import = fi;
	} else {
		import_release(&fi);
		free(fit);
	}
}

uint64_t vy_conn_frame_import(struct vy_req *req, const uint8_t **base)
{
	/* Whole pages around the frame: what lies beyond its ends on them is never read (the
	 * backend copies only an input's own bytes from an import). */
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)req->frame & ~(page - 1);
	uintptr_t hi = ((uintptr_t)req->frame + req->frame_cap + page - 1) & ~(page - 1);
	*base = (const uint8_t *)lo;
	struct vy_frame_import *fi = &req->frame_import;
	uint64_t generation = vy_device_generation(req->dev);
	if (fi->id && fi->dev == req->dev && fi->generation == generation) {
		return fi->id;
	}
	import_release(fi);
	uint64_t id = 0;
	if (vy_backend_host_import(req->dev->backend, (const void *)lo, hi - lo, &id, NULL) == 0) {
		*fi = (struct vy_frame_import){id, req->dev, generation};
		req->conn->srv->stats.frames_imported++;
	}
	return fi->id;
}

static void inbound_add(struct vy_conn *c, uint64_t n)
{
	c->user->inbound += n;
	c->srv->inbound += n;
	if (c->srv->kept_bytes) {
		kept_trim(c->srv, c->user);
	}
}

static void inbound_wake(struct vy_server *s);

static void inbound_sub(struct vy_server *s, struct vy_user *u, uint64_t n)
{
	assert(u->inbound >= n && s->inbound >= n);
	u->inbound -= n;
	s->inbound -= n;
	if (n && !vy_list_empty(&s->starved)) {
		inbound_wake(s);
	}
}

/* The bytes a frame that waits for room holds are counted apart too, to tell room that will be
 * freed from room that only waiting frames hold. */
static void held_set(struct vy_conn *c, uint64_t held)
{
	struct vy_server *s = c->srv;
	uint64_t old = c->frame_admitted ? 0 : c->frame_charge;
	c->user->held = c->user->held - old + held;
	s->inbound_held = s->inbound_held - old + held;
}

static void starve(struct vy_conn *c)
{
	struct vy_server *s = c->srv;
	if (!c->starved) {
		c->starved = true;
		vy_list_insert_tail(&s->starved, &c->starve_link);
		s->stats.inbound_waits++;
	}
	if (c->reading) {
		uv_read_stop((uv_stream_t *)&c->pipe);
		c->reading = false;
	}
}

static void unstarve(struct vy_conn *c)
{
	if (c->starved) {
		vy_list_remove(&c->starve_link);
		c->starved = false;
	}
}

/* Whether the frame whose prefix has arrived waits for room (it is not admitted yet). */
static bool frame_waits(const struct vy_conn *c)
{
	return c->reader.header_have == VY_FRAME_HEADER && !c->frame_admitted;
}

/* Count the whole frame whose prefix has arrived; false when there is no room for it yet. */
static bool frame_admit(struct vy_conn *c)
{
	uint64_t need = c->reader.len - c->frame_charge;
	if (need > inbound_room(c)) {
		return false;
	}
	held_set(c, 0);
	/* The kept buffer becomes the frame's before the frame's bytes push kept ones out. */
	kept_use(c);
	inbound_add(c, need);
	c->frame_charge = c->reader.len;
	c->frame_admitted = true;
	c->reader.exact = false;
	return true;
}

/* Give waiting connections the room that was freed, in the order they began to wait. */
static void inbound_wake(struct vy_server *s)
{
	struct vy_link *l;
	struct vy_link *t;
	VY_LIST_FOR_EACH_SAFE(l, t, &s->starved)
	{
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, starve_link);
		if (c->in_read_cb || c->state != VY_CONN_OPEN) {
			continue;
		}
		if (frame_waits(c) ? !frame_admit(c) : inbound_room(c) == 0) {
			continue;
		}
		unstarve(c);
		start_reading(c);
	}
}

/* --- requests -------------------------------------------------------------------------- */

static void req_free(struct vy_req *req)
{
	struct vy_server *s = req->conn->srv;
	if (req->inbound) {
		inbound_sub(s, req->conn->user, req->inbound);
		req->inbound = 0;
	}
	vy_pipe_unref(req->pipe);
	vy_prog_unref(req->prog);
	for (uint32_t i = 0; i < req->n_res; i++) {
		vy_resident_unref(s, req->res[i]);
	}
	for (uint32_t i = 0; i < req->n_shm; i++) {
		vy_shm_unref(req->shm[i]);
	}
	vy_spec_map_finish(&req->spec);
	vy_outputs_finish(&req->job.outputs);
	free(req->job.out);
	vy_graph_req_free(req);
	if (req->decoded) {
		vy_request_finish(&req->r);
	}
	kept_offer(req->conn, req);
	free(req);
}

/* The request has its answer (or none is wanted): count it and release its slot. */
static void req_settle(struct vy_req *req, int code)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	if (req->decoded) {
		vy_hist_add(&s->stats.latency[req->r.op], vy_now_ns() - req->t_start);
	}
	if (code) {
		s->stats.by_error[vy_err_index(code)]++;
		c->errors++;
	}
	c->in_flight--;
	c->user->in_flight--;
	s->in_flight--;
}

void vy_req_drop(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	req_settle(req, 0);
	req_free(req);
	maybe_free(c);
	vy_server_poke(c->srv);
}

/* --- replies --------------------------------------------------------------------------- */

static void update_flow(struct vy_conn *c);

/* What follows every completed write: errors, a close that waited for it, flow control. */
static void after_write(struct vy_conn *c, int status)
{
	c->active_ns = vy_now_ns();
	if (status < 0 && status != UV_ECANCELED) {
		conn_close(c, uv_strerror(status));
	} else if (c->close_after_write && c->writes == 0) {
		conn_close(c, "after its error reply");
	}
	update_flow(c);
	maybe_free(c);
	vy_server_poke(c->srv);
}

static void on_written(uv_write_t *wr, int status)
{
	struct vy_reply *rp = VY_CONTAINER_OF(wr, struct vy_reply, wr);
	struct vy_conn *c = rp->conn;
	c->writes--;
	vy_conn_replies_sub(c, rp->bytes);
	if (rp->req) {
		req_free(rp->req);
	}
	msgpack_sbuffer_destroy(&rp->sb);
	free(rp);
	after_write(c, status);
}

/* --- corked replies --------------------------------------------------------------------- */

struct cork_write {
	uv_write_t wr;
	struct vy_conn *conn;
	char *data; /* owned */
	uint64_t bytes;
};

static void on_cork_written(uv_write_t *wr, int status)
{
	struct cork_write *w = VY_CONTAINER_OF(wr, struct cork_write, wr);
	struct vy_conn *c = w->conn;
	c->writes--;
	vy_conn_replies_sub(c, w->bytes);
	free(w->data);
	free(w);
	after_write(c, status);
}

/* Take the connection off the corked list; false when it held no corked replies. */
static bool cork_unlink(struct vy_conn *c)
{
	if (!c->corked) {
		return false;
	}
	vy_list_remove(&c->cork_link);
	c->corked = false;
	return true;
}

/* Forget the corked replies of a connection that is going away. */
static void cork_drop(struct vy_conn *c)
{
	if (!cork_unlink(c)) {
		return;
	}
	vy_conn_replies_sub(c, c->cork_bytes);
	c->cork_bytes = 0;
	msgpack_sbuffer_destroy(&c->cork);
	msgpack_sbuffer_init(&c->cork);
}

static void cork_flush(struct vy_conn *c)
{
	if (!cork_unlink(c)) {
		return;
	}
	struct cork_write *w = malloc(sizeof(*w));
	if (!w) {
		fprintf(stderr, "vyred: out of memory writing replies\n");
		abort();
	}
	w->conn = c;
	w->bytes = c->cork_bytes;
	uv_buf_t buf = uv_buf_init(c->cork.data, (unsigned)c->cork.size);
	w->data = msgpack_sbuffer_release(&c->cork);
	c->cork_bytes = 0;
	int rc = uv_write(&w->wr, (uv_stream_t *)&c->pipe, &buf, 1, on_cork_written);
	if (rc) {
		vy_conn_replies_sub(c, w->bytes);
		free(w->data);
		free(w);
		conn_close(c, uv_strerror(rc));
		maybe_free(c);
		return;
	}
	c->writes++;
}

void vy_replies_cork(struct vy_server *s)
{
	s->corking++;
}

void vy_replies_uncork(struct vy_server *s)
{
	assert(s->corking > 0);
	if (--s->corking > 0) {
		return;
	}
	while (!vy_list_empty(&s->corked)) {
		cork_flush(VY_CONTAINER_OF(s->corked.next, struct vy_conn, cork_link));
	}
}

/* Take a reply held whole in its buffer into the connection's cork; false when it must be
 * written on its own. */
static bool cork_take(struct vy_reply *rp)
{
	struct vy_conn *c = rp->conn;
	struct vy_server *s = c->srv;
	if (s->corking == 0 || rp->n_segs || rp->sb.size > VY_CORK_MAX) {
		return false;
	}
	msgpack_sbuffer_write(&c->cork, rp->sb.data, rp->sb.size);
	c->cork_bytes += rp->sb.size;
	vy_conn_replies_add(c, rp->sb.size);
	c->bytes_out += rp->sb.size;
	s->stats.bytes_out += rp->sb.size;
	if (!c->corked) {
		c->corked = true;
		vy_list_insert_tail(&s->corked, &c->cork_link);
	}
	msgpack_sbuffer_destroy(&rp->sb);
	free(rp);
	update_flow(c);
	return true;
}

/* A reply under construction: its frame header is reserved, the body is packed next. */
static struct vy_reply *reply_new(struct vy_req *req)
{
	struct vy_reply *rp = calloc(1, sizeof(*rp));
	if (!rp) {
		fprintf(stderr, "vyred: out of memory for a reply\n");
		abort();
	}
	rp->conn = req->conn;
	rp->req = req;
	msgpack_sbuffer_init(&rp->sb);
	msgpack_packer_init(&rp->pk, &rp->sb, msgpack_sbuffer_write);
	vy_frame_begin(&rp->sb);
	return rp;
}

struct vy_reply *vy_reply_begin(struct vy_req *req, uint32_t nfields)
{
	struct vy_reply *rp = reply_new(req);
	vy_response_pack_ok(&rp->pk, req->r.id, nfields);
	return rp;
}

void vy_reply_bin(struct vy_reply *rp, const void *data, size_t len)
{
	msgpack_pack_bin(&rp->pk, len);
	if (len <= VY_REPLY_INLINE_BIN || rp->n_segs == VY_REPLY_MAX_SEGS) {
		msgpack_pack_bin_body(&rp->pk, data, len);
		return;
	}
	rp->segs[rp->n_segs].sb_end = rp->sb.size;
	rp->segs[rp->n_segs].data = data;
	rp->segs[rp->n_segs].len = len;
	rp->n_segs++;
}

static void send_reply(struct vy_reply *rp, int code)
{
	struct vy_req *req = rp->req;
	struct vy_conn *c = rp->conn;
	struct vy_server *s = c->srv;
	uint64_t total = rp->sb.size;
	for (uint32_t i = 0; i < rp->n_segs; i++) {
		total += rp->segs[i].len;
	}
	uint64_t payload = total - VY_FRAME_HEADER;
	if (payload > UINT32_MAX) {
		/* A reply must fit the 32-bit length of a frame: answer with the error instead. */
		msgpack_sbuffer_destroy(&rp->sb);
		free(rp);
		vy_reply_fail(req, VY_E_OUT_OF_MEMORY,
			"ask for less data per request (download in ranges, or split the dispatch)",
			"the reply would hold %" PRIu64 " bytes, more than one frame can carry",
			payload);
		return;
	}
	req_settle(req, code);
	if (!vy_conn_alive(c)) {
		msgpack_sbuffer_destroy(&rp->sb);
		free(rp);
		req_free(req);
		maybe_free(c);
		return;
	}
	if (rp->n_segs == 0) {
		/* Every byte of the reply is in its buffer: the request can go now, and so can the
		 * buffer's unused tail, so that a queue of small replies held for a slow reader
		 * costs little more than its bytes. */
		req_free(req);
		rp->req = NULL;
		char *fit = realloc(rp->sb.data, rp->sb.size);
		if (fit) {
			rp->sb.data = fit;
			rp->sb.alloc = rp->sb.size;
		}
	}
	uint8_t *h = (uint8_t *)rp->sb.data;
	h[0] = (uint8_t)(payload >> 24);
	h[1] = (uint8_t)(payload >> 16);
	h[2] = (uint8_t)(payload >> 8);
	h[3] = (uint8_t)payload;
	if (cork_take(rp)) {
		return;
	}
	/* Replies leave in the order they were sent. */
	cork_flush(c);
	unsigned n = 0;
	size_t pos = 0;
	for (uint32_t i = 0; i < rp->n_segs; i++) {
		if (rp->segs[i].sb_end > pos) {
			rp->bufs[n++] = uv_buf_init(
				rp->sb.data + pos, (unsigned)(rp->segs[i].sb_end - pos));
		}
		rp->bufs[n++] = uv_buf_init((char *)rp->segs[i].data, (unsigned)rp->segs[i].len);
		pos = rp->segs[i].sb_end;
	}
	if (rp->sb.size > pos) {
		rp->bufs[n++] = uv_buf_init(rp->sb.data + pos, (unsigned)(rp->sb.size - pos));
	}
	/* Backpressure counts what a pending reply holds, not only the bytes it will write: a
	 * flood of tiny requests would otherwise queue replies whose bookkeeping outweighs their
	 * bytes a hundredfold before write_high_water is reached. */
	rp->bytes = total + sizeof(*rp) + (rp->req ? sizeof(*rp->req) : 0);
	int rc = uv_write(&rp->wr, (uv_stream_t *)&c->pipe, rp->bufs, n, on_written);
	if (rc) {
		bool holds_req = rp->req != NULL;
		msgpack_sbuffer_destroy(&rp->sb);
		free(rp);
		if (holds_req) {
			req_free(req);
		}
		conn_close(c, uv_strerror(rc));
		maybe_free(c);
		return;
	}
	c->writes++;
	vy_conn_replies_add(c, rp->bytes);
	c->bytes_out += total;
	s->stats.bytes_out += total;
	update_flow(c);
}

void vy_reply_send(struct vy_reply *rp)
{
	send_reply(rp, 0);
}

void vy_reply_error(struct vy_req *req, const struct vy_err *err, const struct vy_err_list *errs)
{
	struct vy_reply *rp = reply_new(req);
	vy_response_pack_error(&rp->pk, req->r.id, err, errs);
	vy_log(VY_LOG_DEBUG, "client %" PRIu64 " request %" PRIu64 ": %s: %s", req->conn->id,
		req->r.id, vy_err_name(err->code), err->message);
	send_reply(rp, err->code ? err->code : VY_E_INTERNAL);
}

void vy_reply_fail(struct vy_req *req, int code, const char *fix, const char *fmt, ...)
{
	struct vy_err err;
	va_list ap;
	va_start(ap, fmt);
	vy_err_setv(&err, code, NULL, fix, fmt, ap);
	va_end(ap);
	vy_reply_error(req, &err, NULL);
}

/* --- reading --------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	struct vy_conn *c = handle->data;
	struct vy_server *s = c->srv;
	/* The rest of a large admitted frame goes straight into its own buffer. */
	size_t room = 0;
	uint8_t *direct =
		c->frame_admitted ? vy_frame_reader_space(&c->reader, VY_READ_DIRECT, &room) : NULL;
	if (direct && room >= VY_READ_CHUNK) {
		*buf = uv_buf_init((char *)direct, (unsigned)room);
		return;
	}
	/* libuv reads one stream at a time and hands the bytes over before asking again, so one
	 * buffer serves every connection. The read takes no more than the rest of the admitted
	 * frame and the inbound room beyond it (the top of this file says why); none at all asks
	 * libuv for UV_ENOBUFS, and the connection waits. */
	uint64_t size = inbound_room(c);
	if (c->frame_admitted) {
		size += c->reader.len - c->reader.have;
	}
	size = size < VY_READ_CHUNK ? size : VY_READ_CHUNK;
	*buf = uv_buf_init((char *)s->read_buf, (unsigned)size);
}

static void update_flow(struct vy_conn *c)
{
	struct vy_server *s = c->srv;
	if (c->in_read_cb) {
		return;
	}
	vy_ops_resume_waiters(s);
	if (c->state != VY_CONN_OPEN) {
		return;
	}
	/* Replies being prepared count too: their bytes are on their way (ops.c). */
	uint64_t held = c->out_pending + c->preparing;
	if (!c->paused && held > s->cfg.write_high_water) {
		c->paused = true;
		s->stats.backpressure_pauses++;
		if (c->reading) {
			uv_read_stop((uv_stream_t *)&c->pipe);
			c->reading = false;
		}
		vy_log(VY_LOG_DEBUG,
			"client %" PRIu64 ": %" PRIu64 " reply bytes unread or in preparation, "
			"reading paused",
			c->id, held);
	} else if (c->paused && held <= s->cfg.write_low_water) {
		c->paused = false;
		start_reading(c);
	}
}

/* Close every descriptor the peer sent that no frame took. */
static void discard_fds(struct vy_conn *c)
{
	int fd;
	while ((fd = vy_conn_take_fd(c)) >= 0) {
		close(fd);
	}
}

/* Answer with id 0 (no request of the peer's is known), then close once that is written. */
static void reply_unsolicited(struct vy_conn *c, const struct vy_err *err)
{
	c->close_after_write = true;
	struct vy_req *req = calloc(1, sizeof(*req));
	if (!req) {
		fprintf(stderr, "vyred: out of memory for a request\n");
		abort();
	}
	req->conn = c;
	req->t_start = vy_now_ns();
	vy_list_init(&req->wait);
	inflight_add(c);
	vy_reply_error(req, err, NULL);
}

/* The frame is complete: its request takes over what the frame is counted for. */
static void on_frame(struct vy_conn *c)
{
	struct vy_server *s = c->srv;
	assert(c->frame_admitted);
	size_t len;
	size_t cap = c->reader.cap;
	uint8_t *frame = vy_frame_reader_take(&c->reader, &len);
	struct vy_req *req = calloc(1, sizeof(*req));
	if (!req) {
		fprintf(stderr, "vyred: out of memory for a request\n");
		abort();
	}
	req->conn = c;
	req->frame = frame;
	req->frame_cap = cap;
	req->frame_import = c->reading_import;
	c->reading_import = (struct vy_frame_import){0};
	req->inbound = c->frame_charge;
	c->frame_charge = 0;
	c->frame_admitted = false;
	req->t_start = vy_now_ns();
	vy_list_init(&req->wait);
	vy_spec_map_init(&req->spec);
	vy_outputs_init(&req->job.outputs);
	inflight_add(c);
	c->requests++;
	struct vy_err err = {0};
	/* A program sent whole stays in its bytes until the cache has looked for them. */
	int rc = vy_request_decode_flags(frame, len, VY_DECODE_PROGRAM_RAW, &req->r, &err);
	if (rc) {
		if (rc == VY_E_BAD_FRAME) {
			s->stats.bad_frames++;
			c->close_after_write = true;
		}
		vy_reply_error(req, &err, NULL);
		return;
	}
	req->decoded = true;
	s->stats.by_op[req->r.op]++;
	vy_ops_start(req);
}

/*
 * A length prefix has arrived, with `n` more bytes of this read at `rest`: admit the frame, refuse
 * one that can never fit, or keep what of it is in hand, counted, and wait for room. Returns
 * whether reading goes on.
 */
static bool frame_arrived(struct vy_conn *c, const char *rest, size_t n, size_t *off)
{
	struct vy_server *s = c->srv;
	if (frame_admit(c)) {
		return true;
	}
	uint64_t len = c->reader.len;
	bool user = s->cfg.inbound_quota <= s->cfg.inbound_total;
	uint64_t bound = user ? s->cfg.inbound_quota : s->cfg.inbound_total;
	if (len > bound) {
		struct vy_err err;
		vy_err_set(&err, VY_E_QUOTA_EXCEEDED, NULL,
			user ? "send large data through resident buffers (upload in parts) or "
			       "shared "
			       "memory, or ask the operator to raise inbound_quota"
			     : "send large data through resident buffers (upload in parts) or "
			       "shared "
			       "memory, or ask the operator to raise inbound_total",
			"a frame of %" PRIu64 " bytes is larger than %s (%" PRIu64 ")", len,
			user ? "inbound_quota" : "inbound_total", bound);
		reply_unsolicited(c, &err);
		return false;
	}
	c->reader.exact = true;
	size_t used = 0;
	struct vy_err err = {0};
	int rc = n ? vy_frame_reader_feed(&c->reader, rest, n, &used, &err) : 0;
	assert(rc == 0 && used == n);
	(void)rc;
	*off += used;
	held_set(c, c->reader.have);
	inbound_add(c, c->reader.have - c->frame_charge);
	c->frame_charge = c->reader.have;
	vy_log(VY_LOG_DEBUG,
		"client %" PRIu64 " (uid %u): a frame of %" PRIu64 " bytes waits for inbound room; "
		"the user holds %" PRIu64 " bytes, the daemon %" PRIu64,
		c->id, (unsigned)c->uid, len, c->user->inbound, s->inbound);
	starve(c);
	return false;
}

static void on_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf)
{
	struct vy_conn *c = stream->data;
	struct vy_server *s = c->srv;
	if (n == 0) {
		return;
	}
	if (n == UV_ENOBUFS) {
		/* on_alloc found no inbound room: wait for some. */
		starve(c);
		return;
	}
	if (n < 0) {
		c->reading = false;
		if (n == UV_EOF && vy_frame_reader_pending(&c->reader) == 0) {
			if (c->state == VY_CONN_OPEN) {
				c->state = VY_CONN_EOF;
			}
			discard_fds(c);
			maybe_free(c);
		} else {
			conn_close(c,
				n == UV_EOF ? "end of stream inside a frame" : uv_strerror((int)n));
		}
		return;
	}
	c->in_read_cb = true;
	vy_replies_cork(s);
	uint64_t now = vy_now_ns();
	c->bytes_in += (uint64_t)n;
	c->active_ns = now;
	s->stats.bytes_in += (uint64_t)n;
	size_t off = 0;
	if (buf->base != (char *)s->read_buf) {
		/* Read in place into the frame in progress (on_alloc). */
		off = (size_t)n;
		if (vy_frame_reader_commit(&c->reader, (size_t)n) == 1) {
			on_frame(c);
		}
	}
	while (off < (size_t)n && c->state == VY_CONN_OPEN && !c->close_after_write) {
		size_t used = 0;
		if (vy_frame_reader_pending(&c->reader) == 0) {
			c->progress_ns = now;
		}
		struct vy_err err = {0};
		int rc = vy_frame_reader_feed(
			&c->reader, buf->base + off, (size_t)n - off, &used, &err);
		off += used;
		if (rc < 0) {
			/* The stream is out of step: answer once (no id is known) and close. */
			s->stats.bad_frames++;
			reply_unsolicited(c, &err);
			break;
		}
		if (rc == VY_FRAME_HEADER_DONE &&
			!frame_arrived(c, buf->base + off, (size_t)n - off, &off)) {
			break;
		}
		if (rc == 1) {
			on_frame(c);
		}
	}
	c->in_read_cb = false;
	vy_replies_uncork(s);
	if (c->close_after_write && c->reading) {
		uv_read_stop(stream);
		c->reading = false;
	}
	if (c->state == VY_CONN_OPEN && vy_frame_reader_pending(&c->reader) == 0) {
		discard_fds(c);
	} else if (c->state == VY_CONN_OPEN &&
		   uv_pipe_pending_count(&c->pipe) > VY_MAX_PENDING_FDS) {
		conn_close(c, "too many descriptors sent ahead of their frames");
	}
	update_flow(c);
	maybe_free(c);
}

static void start_reading(struct vy_conn *c)
{
	if (c->reading || c->paused || c->starved || c->state != VY_CONN_OPEN ||
		c->close_after_write) {
		return;
	}
	if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) == 0) {
		c->reading = true;
		/* The time the daemon did not read is not the peer's: its frame gets a full
		 * stall_timeout_ms from now. */
		c->progress_ns = vy_now_ns();
	}
}

static void on_fd_pipe_closed(uv_handle_t *handle)
{
	free(handle);
}

int vy_conn_take_fd(struct vy_conn *c)
{
	if (uv_pipe_pending_count(&c->pipe) == 0) {
		return -1;
	}
	/* libuv hands a received descriptor over only as a stream; borrow one and keep a copy. */
	uv_pipe_t *tmp = malloc(sizeof(*tmp));
	if (!tmp) {
		abort();
	}
	uv_pipe_init(&c->srv->loop, tmp, 0);
	int fd = -1;
	if (uv_accept((uv_stream_t *)&c->pipe, (uv_stream_t *)tmp) == 0) {
		uv_os_fd_t raw;
		if (uv_fileno((uv_handle_t *)tmp, &raw) == 0) {
			fd = fcntl(raw, F_DUPFD_CLOEXEC, 0);
		}
	}
	uv_close((uv_handle_t *)tmp, on_fd_pipe_closed);
	/* uv_accept restarts the watcher; keep a paused connection paused. */
	if (!c->reading) {
		uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
		uv_read_stop((uv_stream_t *)&c->pipe);
	}
	return fd;
}

/* --- accepting and closing ------------------------------------------------------------- */

/* A refused connection's warning, at most one line a second: a client in a connect loop must not
 * flood the log. The next line logged says how many were not. */
static void refusal_log(struct vy_server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void refusal_log(struct vy_server *s, const char *fmt, ...)
{
	uint64_t now = vy_now_ns();
	if (s->refused_ns != 0 && now - s->refused_ns < 1000000000ull) {
		s->refused_quiet++;
		return;
	}
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (s->refused_quiet) {
		vy_log(VY_LOG_WARNING, "%s (%" PRIu64 " more refused since the last such line)",
			line, s->refused_quiet);
	} else {
		vy_log(VY_LOG_WARNING, "%s", line);
	}
	s->refused_ns = now;
	s->refused_quiet = 0;
}

static void on_closed(uv_handle_t *handle)
{
	struct vy_conn *c = handle->data;
	struct vy_server *s = c->srv;
	/* Only now: libuv has called every write callback, and a reply written in place frees its
	 * request (and the request's inbound bytes) there. */
	struct vy_user *u = c->user;
	kept_drop(c);
	import_release(&c->reading_import);
	if (u) {
		held_set(c, 0);
		uint64_t charge = c->frame_charge;
		c->frame_charge = 0;
		c->frame_admitted = false;
		u->conns--;
		inbound_sub(s, u, charge);
		c->user = NULL;
		user_put(u);
	}
	vy_device_conn_finish(s, c);
	vy_frame_reader_finish(&c->reader);
	free(c);
	vy_server_poke(s);
}

/* Free the connection once nothing refers to it any more. */
static void maybe_free(struct vy_conn *c)
{
	if (c->state == VY_CONN_CLOSED) {
		return;
	}
	bool done = c->in_flight == 0 &&
		    (c->state == VY_CONN_CLOSING ||
			    (c->state == VY_CONN_EOF && c->writes == 0 && !c->corked));
	if (!done) {
		return;
	}
	if (c->state == VY_CONN_EOF) {
		conn_close(c, NULL);
		return;
	}
	struct vy_server *s = c->srv;
	c->state = VY_CONN_CLOSED;
	vy_list_remove(&c->link);
	s->n_conns--;
	uv_close((uv_handle_t *)&c->pipe, on_closed);
}

static void conn_close(struct vy_conn *c, const char *why)
{
	if (c->state == VY_CONN_CLOSING || c->state == VY_CONN_CLOSED) {
		return;
	}
	struct vy_server *s = c->srv;
	c->state = VY_CONN_CLOSING;
	unstarve(c);
	if (c->reading) {
		uv_read_stop((uv_stream_t *)&c->pipe);
		c->reading = false;
	}
	vy_log(why ? VY_LOG_INFO : VY_LOG_DEBUG,
		"client %" PRIu64 " (pid %d, uid %u%s%s) closed%s%s; %u requests in flight", c->id,
		(int)c->pid, (unsigned)c->uid, c->name[0] ? ", " : "", c->name, why ? ": " : "",
		why ? why : "", c->in_flight);
	cork_drop(c);
	kept_drop(c);
	while (!vy_list_empty(&c->deferred)) {
		struct vy_req *req = VY_CONTAINER_OF(c->deferred.next, struct vy_req, wait);
		vy_list_remove(&req->wait);
		req_settle(req, 0);
		req_free(req);
	}
	if (c->reply_waiting) {
		vy_list_remove(&c->reply_link);
		c->reply_waiting = false;
	}
	vy_device_cancel_conn(s, c);
	vy_resident_conn_closed(s, c);
	vy_graph_conn_closed(s, c);
	vy_shm_conn_closed(c);
	maybe_free(c);
}

void vy_conn_on_connection(uv_stream_t *listener, int status)
{
	struct vy_server *s = listener->data;
	if (status < 0) {
		vy_log(VY_LOG_WARNING, "accepting a connection failed: %s", uv_strerror(status));
		return;
	}
	struct vy_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "vyred: out of memory for a connection\n");
		abort();
	}
	c->srv = s;
	c->admin = -1;
	c->state = VY_CONN_OPEN;
	vy_list_init(&c->link);
	vy_list_init(&c->residents);
	vy_list_init(&c->deferred);
	vy_list_init(&c->reply_link);
	vy_list_init(&c->shms);
	vy_list_init(&c->graphs);
	msgpack_sbuffer_init(&c->cork);
	for (uint32_t i = 0; i < VY_MAX_DEVICES; i++) {
		vy_list_init(&c->queues[i].jobs);
		vy_list_init(&c->queues[i].ring);
		c->queues[i].conn = c;
	}
	uv_pipe_init(&s->loop, &c->pipe, 1);
	c->pipe.data = c;
	vy_frame_reader_init(&c->reader, s->cfg.max_frame);
	c->reader.stop_at_header = true;
	if (uv_accept(listener, (uv_stream_t *)&c->pipe) != 0) {
		c->state = VY_CONN_CLOSED;
		uv_close((uv_handle_t *)&c->pipe, on_closed);
		return;
	}
	if (s->state != VY_SERVER_RUNNING) {
		s->stats.connections_refused++;
		refusal_log(s, "refusing a connection: shutting down");
		c->state = VY_CONN_CLOSED;
		uv_close((uv_handle_t *)&c->pipe, on_closed);
		return;
	}
	uv_os_fd_t fd;
	struct ucred cred = {0};
	socklen_t len = sizeof(cred);
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) != 0 ||
		getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
		refusal_log(
			s, "refusing a connection without peer credentials: %s", strerror(errno));
		c->state = VY_CONN_CLOSED;
		uv_close((uv_handle_t *)&c->pipe, on_closed);
		return;
	}
	/* Counted before this one joins: refused connections stay in the list only until their
	 * error frame is written. */
	uint32_t open = s->n_conns;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->id = ++s->next_conn_id;
	c->connected_ns = c->progress_ns = c->active_ns = vy_now_ns();
	c->user = user_get(s, c->uid);
	c->user->conns++;
	vy_list_insert_tail(&s->conns, &c->link);
	s->n_conns++;
	/* Refused with a reply, so that the client learns why rather than seeing a reset. */
	struct vy_err err;
	if (open >= s->cfg.max_clients) {
		s->stats.connections_refused++;
		refusal_log(s,
			"refusing a connection of uid %u (pid %d): max_clients (%" PRIu64
			") connections are open",
			(unsigned)c->uid, (int)c->pid, s->cfg.max_clients);
		vy_err_set(&err, VY_E_BUSY, NULL,
			"retry once other clients have disconnected, or ask the operator to raise "
			"max_clients",
			"%" PRIu32 " connections are open; max_clients is %" PRIu64, open,
			s->cfg.max_clients);
		reply_unsolicited(c, &err);
		return;
	}
	if (c->user->conns > s->cfg.max_clients_per_user) {
		s->stats.connections_refused++;
		refusal_log(s,
			"refusing a connection of uid %u (pid %d): it holds max_clients_per_user "
			"(%" PRIu64 ") connections",
			(unsigned)c->uid, (int)c->pid, s->cfg.max_clients_per_user);
		vy_err_set(&err, VY_E_QUOTA_EXCEEDED, NULL,
			"close connections this user no longer uses, or ask the operator to raise "
			"max_clients_per_user",
			"uid %u holds %" PRIu32 " connections; max_clients_per_user is %" PRIu64,
			(unsigned)c->uid, c->user->conns - 1, s->cfg.max_clients_per_user);
		reply_unsolicited(c, &err);
		return;
	}
	s->stats.connections_accepted++;
	start_reading(c);
	vy_log(VY_LOG_DEBUG, "client %" PRIu64 " connected: pid %d, uid %u, gid %u", c->id,
		(int)c->pid, (unsigned)c->uid, (unsigned)c->gid);
}

void vy_conn_close_all(struct vy_server *s)
{
	struct vy_link *l;
	struct vy_link *t;
	VY_LIST_FOR_EACH_SAFE(l, t, &s->conns)
	{
		conn_close(VY_CONTAINER_OF(l, struct vy_conn, link), NULL);
	}
}

/* Whether `c` holds nothing that closing it would lose: no request, reply, frame, unnamed
 * resident buffer or shm region. */
static bool conn_idle(const struct vy_conn *c)
{
	return c->in_flight == 0 && c->writes == 0 && !c->corked && !c->starved &&
	       vy_frame_reader_pending(&c->reader) == 0 && vy_list_empty(&c->residents) &&
	       c->n_shms == 0;
}

/*
 * A frame that waits for room that only other waiting frames hold would wait forever: refuse it
 * (BUSY), which frees what it holds for the others.
 */
static void refuse_deadlocked(struct vy_server *s)
{
	struct vy_link *l;
	struct vy_link *t;
	VY_LIST_FOR_EACH_SAFE(l, t, &s->starved)
	{
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, starve_link);
		if (!frame_waits(c) || c->state != VY_CONN_OPEN) {
			continue;
		}
		struct vy_user *u = c->user;
		uint64_t need = c->reader.len - c->frame_charge;
		bool user_stuck = u->inbound == u->held && u->inbound + need > s->cfg.inbound_quota;
		bool all_stuck =
			s->inbound == s->inbound_held && s->inbound + need > s->cfg.inbound_total;
		if (!user_stuck && !all_stuck) {
			continue;
		}
		unstarve(c);
		struct vy_err err;
		vy_err_set(&err, VY_E_BUSY, NULL,
			"send fewer large frames at once (on fewer connections), or ask the "
			"operator "
			"to raise inbound_quota and inbound_total",
			"a frame of %zu bytes waits for inbound room that only other waiting "
			"frames "
			"hold",
			c->reader.len);
		reply_unsolicited(c, &err);
		/* One per sweep: the reply may free room that the next one is waiting for. */
		return;
	}
}

void vy_conn_sweep(struct vy_server *s, uint64_t now)
{
	uint64_t limit = s->cfg.stall_timeout_ms * 1000000;
	uint64_t idle = s->cfg.idle_timeout_ms * 1000000;
	while (!vy_list_empty(&s->kept)) {
		struct vy_conn *c = VY_CONTAINER_OF(s->kept.next, struct vy_conn, kept_link);
		if (now - c->kept_ns < VY_KEEP_IDLE_NS) {
			break;
		}
		kept_drop(c);
	}
	refuse_deadlocked(s);
	/* Every release of reply room wakes the waiters; this only backs that up. */
	vy_ops_resume_waiters(s);
	struct vy_link *l;
	struct vy_link *t;
	VY_LIST_FOR_EACH_SAFE(l, t, &s->conns)
	{
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, link);
		if (c->state != VY_CONN_OPEN) {
			continue;
		}
		char why[96];
		if (limit && c->reading && vy_frame_reader_pending(&c->reader) > 0 &&
			now - c->progress_ns > limit) {
			s->stats.connections_stalled++;
			snprintf(why, sizeof(why), "a frame still incomplete after %" PRIu64 " ms",
				(now - c->progress_ns) / 1000000);
			conn_close(c, why);
		} else if (idle && !c->close_after_write && conn_idle(c) &&
			   now - c->active_ns > idle) {
			s->stats.connections_idle++;
			snprintf(why, sizeof(why), "idle for %" PRIu64 " ms (idle_timeout_ms)",
				(now - c->active_ns) / 1000000);
			conn_close(c, why);
		}
	}
}

void vy_conn_apply_config(struct vy_server *s)
{
	for (struct vy_link *l = s->conns.next; l != &s->conns; l = l->next) {
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, link);
		c->reader.max_frame = s->cfg.max_frame;
		c->admin = -1;
		update_flow(c);
	}
	/* The inbound bounds may have shrunk or grown. */
	kept_trim(s, NULL);
	inbound_wake(s);
}
