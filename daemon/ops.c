/*
 * The operations of protocol version 1 (DESIGN.md §6), one handler each, run on the loop thread.
 *
 * Checks common to every request come first, in this order: the daemon is not shutting down,
 * hello came first, the connection is under its in-flight limit (BUSY), admin operations come
 * from an admin peer. compile and dispatch then go through the program cache and the pipeline
 * cache (cache.c), which call back vy_ops_on_prog and vy_ops_on_pipe, at once on a hit or when
 * the thread pool finishes; dispatches and resident buffer operations become jobs on a device
 * (device.c), which come back through vy_ops_on_job. Every path ends in exactly one reply, or in
 * vy_req_drop when the connection is gone.
 *
 * Dispatch paths: with only bytes and shm inputs and no outputs_to, the job runs the compiled
 * pipeline on the input views (bytes borrowed from the frame, shm bytes read in place from the
 * mapping, and where the device imported the region, named in the dispatch config's imports so
 * that the device copies them itself) and the outputs go back in the reply. With any resident input
 * or outputs_to target, every non-workgroup buffer is bound to a resource: a resident buffer the
 * program only reads is bound as it is; one it may write is copied first unless it is also that
 * output's target, so an input is never changed behind the client's back; bytes go to a temporary
 * resource or straight into the output's target. Outputs without a target are read back into the
 * reply; the others are nil there.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "vyred.h"

#define MAX_DOWNLOAD ((uint64_t)UINT32_MAX - 4096)

/* The most output bytes one dispatch may produce: max_output, and never more than one reply
 * frame carries. */
static uint64_t max_output(const struct vy_server *s)
{
	return s->cfg.max_output < MAX_DOWNLOAD ? s->cfg.max_output : MAX_DOWNLOAD;
}

static void reply_empty(struct vy_req *req)
{
	vy_reply_send(vy_reply_begin(req, 0));
}

static void fail(struct vy_req *req, int code, const char *at, const char *fix, const char *fmt,
	...) __attribute__((format(printf, 5, 6)));

static void fail(
	struct vy_req *req, int code, const char *at, const char *fix, const char *fmt, ...)
{
	struct vy_err err;
	va_list ap;
	va_start(ap, fmt);
	vy_err_setv(&err, code, at, fix, fmt, ap);
	va_end(ap);
	vy_reply_error(req, &err, NULL);
}

/* --- hello, ping ----------------------------------------------------------------------- */

static void op_hello(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	if (c->hello) {
		fail(req, VY_E_BAD_REQUEST, "op", "send hello once per connection",
			"hello was already sent on this connection");
		return;
	}
	if (req->r.protocol != VY_PROTOCOL_VERSION) {
		fail(req, VY_E_UNSUPPORTED_PROTOCOL, "protocol",
			"speak protocol 1, the only version this daemon supports",
			"protocol %" PRIu32 " is not supported; supported versions: [1]",
			req->r.protocol);
		return;
	}
	c->hello = true;
	if (req->r.client) {
		snprintf(c->name, sizeof(c->name), "%s", req->r.client);
	}
	struct vy_reply *rp = vy_reply_begin(req, 6);
	msgpack_packer *pk = &rp->pk;
	vy_pack_kv_str(pk, "server", "vyred " VY_DAEMON_VERSION);
	vy_pack_kv_u64(pk, "protocol", VY_PROTOCOL_VERSION);
	vy_pack_cstr(pk, "protocols");
	msgpack_pack_array(pk, 1);
	msgpack_pack_uint32(pk, VY_PROTOCOL_VERSION);
	vy_pack_kv_u64(pk, "client_id", c->id);
	vy_pack_cstr(pk, "devices");
	vy_devices_pack(s, pk, true);
	vy_pack_cstr(pk, "limits");
	msgpack_pack_map(pk, 17);
	vy_pack_kv_u64(pk, "max_frame", s->cfg.max_frame);
	vy_pack_kv_u64(pk, "max_inflight", s->cfg.max_inflight);
	vy_pack_kv_u64(pk, "max_inflight_per_user", s->cfg.max_inflight_per_user);
	vy_pack_kv_u64(pk, "max_clients_per_user", s->cfg.max_clients_per_user);
	vy_pack_kv_u64(pk, "idle_timeout_ms", s->cfg.idle_timeout_ms);
	vy_pack_kv_u64(pk, "inbound_quota", s->cfg.inbound_quota);
	vy_pack_kv_u64(pk, "max_output", max_output(s));
	vy_pack_kv_u64(pk, "reply_quota", s->cfg.reply_quota);
	vy_pack_kv_u64(pk, "resident_quota", s->cfg.resident_quota);
	vy_pack_kv_u64(pk, "max_inputs", VY_MAX_INPUTS);
	vy_pack_kv_u64(pk, "max_loop_iterations", s->cfg.max_loop_iterations);
	vy_pack_kv_u64(pk, "dispatch_timeout_ms", s->cfg.dispatch_timeout_ms);
	vy_pack_kv_u64(pk, "max_shm_regions", s->cfg.max_shm_regions);
	vy_pack_kv_u64(pk, "shm_quota", s->cfg.shm_quota);
	vy_pack_kv_u64(pk, "max_download", MAX_DOWNLOAD);
	vy_pack_kv_u64(pk, "max_graph_steps", s->cfg.max_graph_steps);
	vy_pack_kv_u64(pk, "max_graphs", s->cfg.max_graphs);
	vy_reply_send(rp);
}

/* --- compile and dispatch -------------------------------------------------------------- */

static int hold_resident(struct vy_req *req, uint64_t handle, const char *at,
	struct vy_resident **out, struct vy_device **dev, struct vy_err *err)
{
	struct vy_conn *c = req->conn;
	struct vy_resident *r = vy_resident_get(c->srv, c, handle, err);
	if (!r) {
		snprintf(err->at, sizeof(err->at), "%s", at);
		return VY_E_NOT_FOUND;
	}
	if (*dev && *dev != r->dev) {
		return vy_err_set(err, VY_E_BAD_REQUEST, at,
			"use resident buffers of one device in one dispatch",
			"resident buffer %" PRIu64
			" lives on device %u, another of this dispatch on "
			"device %u",
			handle, r->dev->index, (*dev)->index);
	}
	*dev = r->dev;
	vy_resident_ref(r);
	req->res[req->n_res++] = r;
	*out = r;
	return 0;
}

/* Take references on the resident buffers a dispatch names; they decide its device. */
static int hold_residents(struct vy_req *req, struct vy_device **dev, struct vy_err *err)
{
	char at[64];
	for (uint32_t i = 0; i < req->r.n_inputs; i++) {
		if (req->r.inputs[i].kind != VY_INPUT_RESIDENT) {
			continue;
		}
		snprintf(at, sizeof(at), "inputs[%" PRIu32 "].resident", i);
		int rc = hold_resident(req, req->r.inputs[i].handle, at, &req->in_res[i], dev, err);
		if (rc) {
			return rc;
		}
	}
	for (uint32_t o = 0; req->r.has_outputs_to && o < req->r.n_outputs_to; o++) {
		if (req->r.outputs_to[o] == 0) {
			continue;
		}
		snprintf(at, sizeof(at), "outputs_to[%" PRIu32 "]", o);
		int rc = hold_resident(req, req->r.outputs_to[o], at, &req->out_res[o], dev, err);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

/*
 * A cache entry came back for a request: a request whose client left is dropped and a failed
 * entry is answered, so both callbacks go on only with a live request and a usable entry.
 */
static bool settled_early(
	struct vy_req *req, int rc, const struct vy_err *err, const struct vy_err_list *errs)
{
	if (!vy_conn_alive(req->conn)) {
		vy_req_drop(req);
		return true;
	}
	if (rc) {
		vy_reply_error(req, err, errs && errs->len > 1 ? errs : NULL);
		return true;
	}
	return false;
}

void vy_ops_on_prog(
	struct vy_req *req, int rc, const struct vy_err *err, const struct vy_err_list *errs)
{
	if (req->r.op == VY_OP_GRAPH_CREATE) {
		vy_graph_on_prog(req, rc, err, errs);
		return;
	}
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	if (settled_early(req, rc, err, errs)) {
		return;
	}
	struct vy_err e = {0};
	struct vy_device *forced = NULL;
	if (req->r.op == VY_OP_DISPATCH && hold_residents(req, &forced, &e) != 0) {
		vy_reply_error(req, &e, NULL);
		return;
	}
	if (forced && req->r.config.device >= 0 &&
		(uint32_t)req->r.config.device != forced->index) {
		fail(req, VY_E_BAD_REQUEST, "config.device",
			"drop config.device or use resident buffers of that device",
			"the resident buffers of this dispatch live on device %u, not %" PRId32,
			forced->index, req->r.config.device);
		return;
	}
	req->dev = forced ? forced : vy_device_pick(s, &req->r.config, req->prog->features, &e);
	if (!req->dev) {
		vy_reply_error(req, &e, NULL);
		return;
	}
	if (vy_spec_resolve(req->prog, &req->r.config, &req->spec, &e) != 0) {
		vy_reply_error(req, &e, NULL);
		return;
	}
	const uint32_t *wg = req->r.config.has_workgroup_size ? req->r.config.workgroup_size
							      : req->prog->program->workgroup_size;
	if (!wg[0] || !wg[1] || !wg[2]) {
		fail(req, VY_E_BAD_REQUEST, "config.workgroup_size",
			"give every axis a size of 1 or more",
			"workgroup size [%" PRIu32 ", %" PRIu32 ", %" PRIu32 "] has a zero axis",
			wg[0], wg[1], wg[2]);
		return;
	}
	memcpy(req->workgroup_size, wg, sizeof(req->workgroup_size));
	vy_pipe_acquire(req);
}

static void reply_compile(struct vy_req *req)
{
	vy_prog_keep(req->conn->srv, req->prog);
	char hex[VY_PROGRAM_ID_HEX];
	vy_program_id_hex(&req->prog->id, hex);
	struct vy_reply *rp = vy_reply_begin(req, 4);
	vy_pack_kv_str(&rp->pk, "program_id", hex);
	vy_pack_kv_str(&rp->pk, "cache", req->cache);
	vy_pack_kv_u64(&rp->pk, "compile_ns", req->compile_ns);
	vy_pack_kv_u64(&rp->pk, "device", req->dev->index);
	vy_reply_send(rp);
}

/*
 * Resolve input `i` as bytes (inline or from a shm region) into job->inputs[i]; with `import`, a
 * shm input also gets its place in the region's import on the job's device (job->imports[i]).
 */
int vy_ops_input_bytes(struct vy_req *req, uint32_t i, bool import, struct vy_err *err)
{
	const struct vy_input *in = &req->r.inputs[i];
	struct vy_bytes *b = &req->job.inputs[i];
	char at[64];
	snprintf(at, sizeof(at), "inputs[%" PRIu32 "]", i);
	if (in->kind == VY_INPUT_BYTES) {
		*b = (struct vy_bytes){in->data, (size_t)in->len};
		/* A large input is read by the device from the frame's pages where it imports
		 * them, as a shm region is, instead of being copied by the host. */
		const uint8_t *base = NULL;
		uint64_t id = import && in->len >= VY_KEEP_MIN && req->frame
				      ? vy_conn_frame_import(req, &base)
				      : 0;
		if (id) {
			req->job.imports[i] = (struct vy_host_ref){
				id, (uint64_t)((const uint8_t *)in->data - base)};
			req->job.cfg.imports = req->job.imports;
		}
		return 0;
	}
	if (in->kind != VY_INPUT_SHM) {
		*b = (struct vy_bytes){NULL, 0};
		return 0;
	}
	struct vy_shm *m = vy_shm_get(req->conn, in->region);
	if (!m) {
		return vy_err_set(err, VY_E_NOT_FOUND, at,
			"attach the region with shm_attach on this connection first",
			"no shm region %" PRIu64 " on this connection", in->region);
	}
	if (in->offset > m->size || in->len > m->size - in->offset) {
		return vy_err_set(err, VY_E_BAD_REQUEST, at,
			"keep offset + length within the size given to shm_attach",
			"bytes %" PRIu64 "..%" PRIu64 " lie outside region %" PRIu64
			" of %zu bytes",
			in->offset, in->offset + in->len, in->region, m->size);
	}
	int rc = vy_shm_check_faulted(m, at, err);
	if (rc) {
		return rc;
	}
	vy_shm_ref(m);
	req->shm[req->n_shm++] = m;
	*b = (struct vy_bytes){m->map + in->offset, (size_t)in->len};
	if (import) {
		req->job.imports[i] = (struct vy_host_ref){vy_shm_import(m, req->dev), in->offset};
		req->job.cfg.imports = req->job.imports;
	}
	return 0;
}

/* Bind every non-workgroup buffer of a resident dispatch (see the top of this file). */
/*
 * The reply bytes a request will produce (a download's data, a dispatch's outputs) count with
 * the connection's unsent replies from the moment it goes to a device, so that a client that
 * asks without reading meets backpressure before the daemon holds the results in memory.
 */
static void hold_reply(struct vy_req *req, uint64_t len)
{
	struct vy_conn *c = req->conn;
	req->preparing = len;
	c->preparing += len;
	c->user->replies += len;
	c->srv->replies += len;
}

/* The bound that `len` more reply bytes would pass, or NULL when they fit: the connection's
 * write_high_water, its user's reply_quota, the daemon's reply_total. Each holds only once
 * something else is counted against it, so one request alone always fits (nothing waits for
 * room that only it could free). */
static const char *reply_bound(
	const struct vy_conn *c, uint64_t len, uint64_t *held, uint64_t *limit)
{
	const struct vy_server *s = c->srv;
	const uint64_t have[3] = {c->out_pending + c->preparing, c->user->replies, s->replies};
	const uint64_t most[3] = {s->cfg.write_high_water, s->cfg.reply_quota, s->cfg.reply_total};
	static const char *const key[3] = {"write_high_water", "reply_quota", "reply_total"};
	for (int i = 0; i < 3; i++) {
		if (have[i] != 0 && (len > most[i] || have[i] > most[i] - len)) {
			*held = have[i];
			*limit = most[i];
			return key[i];
		}
	}
	return NULL;
}

static bool reply_fits(const struct vy_conn *c, uint64_t len)
{
	uint64_t held;
	uint64_t limit;
	return reply_bound(c, len, &held, &limit) == NULL;
}

/* A download that does not fit is answered BUSY: its bytes are allocated at once. */
static bool download_fits(struct vy_req *req, uint64_t len)
{
	struct vy_conn *c = req->conn;
	uint64_t held;
	uint64_t limit;
	const char *key = reply_bound(c, len, &held, &limit);
	if (key) {
		bool own = strcmp(key, "write_high_water") == 0;
		c->busy++;
		fail(req, VY_E_BUSY, NULL,
			own ? "read the replies of earlier requests before asking for more"
			    : "read the replies of earlier requests (on every connection of this "
			      "user) before asking for more, or ask the operator to raise "
			      "reply_quota and reply_total",
			"%" PRIu64 " reply bytes are waiting to be read or prepared %s; this "
			"download would pass %s (%" PRIu64 ")",
			held,
			own ? "on this connection"
			    : (strcmp(key, "reply_quota") == 0 ? "for this user" : "for all users"),
			key, limit);
		return false;
	}
	return true;
}

/* Wait, in arrival order, for reply room (the connection's, its user's or the daemon's). */
static void reply_wait(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	vy_log(VY_LOG_DEBUG,
		"client %" PRIu64 ": request %" PRIu64 " waits for reply room (%" PRIu64
		" bytes on the connection, %" PRIu64 " of its user, %" PRIu64 " in all)",
		c->id, req->r.id, c->out_pending + c->preparing, c->user->replies, s->replies);
	s->stats.reply_waits++;
	vy_list_insert_tail(&c->deferred, &req->wait);
	if (!c->reply_waiting) {
		c->reply_waiting = true;
		vy_list_insert_tail(&s->reply_waiters, &c->reply_link);
	}
}

/* The bytes of the outputs a dispatch returns in its reply (not those sent to resident
 * buffers): a declared length, or the length of the input the buffer takes. */
static uint64_t reply_output_bytes(const struct vy_req *req)
{
	const struct vy_binding_plan *plan = req->prog->plan;
	const struct vy_job *j = &req->job;
	uint64_t total = 0;
	for (uint32_t k = 0; k < plan->n_bindings; k++) {
		const struct vy_binding *b = &plan->bindings[k];
		uint32_t out = b->output_index;
		if (out == VY_BINDING_NONE || (req->r.has_outputs_to && req->r.outputs_to[out])) {
			continue;
		}
		uint32_t in = b->input_index;
		if (b->has_static_len) {
			total += b->static_byte_len;
		} else if (in != VY_BINDING_NONE) {
			total += req->in_res[in] ? req->in_res[in]->size : j->inputs[in].len;
		}
	}
	return total;
}

static int build_resident(struct vy_req *req, struct vy_err *err)
{
	const struct vy_binding_plan *plan = req->prog->plan;
	struct vy_job *j = &req->job;
	for (uint32_t k = 0; k < plan->n_bindings; k++) {
		const struct vy_binding *b = &plan->bindings[k];
		if (b->role == VY_ROLE_SHARED) {
			continue;
		}
		struct vy_bind_src *src = &j->srcs[j->n_srcs++];
		uint32_t in = b->input_index;
		uint32_t out = b->output_index;
		struct vy_resident *target = out != VY_BINDING_NONE ? req->out_res[out] : NULL;
		struct vy_resident *inres = in != VY_BINDING_NONE ? req->in_res[in] : NULL;
		const struct vy_bytes *bytes =
			in != VY_BINDING_NONE && !inres ? &j->inputs[in] : NULL;
		bool writes = b->role == VY_ROLE_OUTPUT || b->role == VY_ROLE_INPUT_OUTPUT;
		char at[64];
		snprintf(at, sizeof(at), "buffers.%s", b->name);
		if (bytes && b->has_static_len && bytes->len != b->static_byte_len) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at, "send exactly count * 4 bytes",
				"input for buffer %s holds %zu bytes; its declaration fixes %zu",
				b->name, bytes->len, b->static_byte_len);
		}
		if (bytes && bytes->len % b->element_size) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at, "send whole 4-byte elements",
				"input for buffer %s holds %zu bytes, not a whole number of "
				"elements",
				b->name, bytes->len);
		}
		size_t in_len = inres ? inres->size : bytes ? bytes->len : 0;
		if (target) {
			size_t need = b->has_static_len ? b->static_byte_len : in_len;
			if (target->size < need || target->size < in_len) {
				return vy_err_set(err, VY_E_BAD_REQUEST, at,
					"allocate the target buffer at least as large as the "
					"output",
					"outputs_to[%" PRIu32 "] holds %" PRIu64
					" bytes; buffer %s needs %zu",
					out, target->size, b->name, need > in_len ? need : in_len);
			}
			src->res = target->res;
			if (inres && inres != target) {
				src->has_copy = true;
				src->copy_from = inres->res;
			} else if (bytes) {
				src->data = bytes->data;
				src->data_len = bytes->len;
			}
			j->out_nil[out] = true;
			continue;
		}
		if (inres && !writes) {
			src->res = inres->res;
		} else if (inres) {
			src->temp = true;
			src->temp_len = inres->size;
			src->has_copy = true;
			src->copy_from = inres->res;
		} else if (bytes) {
			src->temp = true;
			src->temp_len = bytes->len;
			src->data = bytes->data;
			src->data_len = bytes->len;
		} else {
			src->temp = true;
			src->temp_len = b->static_byte_len;
		}
		if (out != VY_BINDING_NONE) {
			src->to_reply = true;
			src->output_index = out;
			src->out_len = b->has_static_len ? b->static_byte_len
				       : src->temp       ? src->temp_len
							 : src->res.len;
		}
	}
	return 0;
}

static void start_dispatch(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	const struct vy_binding_plan *plan = req->prog->plan;
	const struct vy_request *r = &req->r;
	struct vy_job *j = &req->job;
	struct vy_err err = {0};
	if (r->n_inputs != plan->n_inputs) {
		char names[160] = "";
		size_t n = 0;
		for (uint32_t i = 0; i < plan->n_inputs && n < sizeof(names) - 70; i++) {
			const char *name = req->prog->program->buffers[plan->input_indices[i]].name;
			n += (size_t)snprintf(
				names + n, sizeof(names) - n, "%s%s", i ? ", " : "", name);
		}
		fail(req, VY_E_BAD_REQUEST, "inputs",
			"send one input per input buffer, in binding order",
			"the program takes %" PRIu32 " inputs (%s); the request gave %" PRIu32,
			plan->n_inputs, names, r->n_inputs);
		return;
	}
	if (r->has_outputs_to && r->n_outputs_to != plan->n_outputs) {
		fail(req, VY_E_BAD_REQUEST, "outputs_to",
			"give one entry (nil or a handle) per output",
			"the program has %" PRIu32 " outputs; outputs_to has %" PRIu32 " entries",
			plan->n_outputs, r->n_outputs_to);
		return;
	}
	j->req = req;
	j->dev = req->dev;
	j->program = req->prog->program;
	j->pl = req->pipe->pl;
	j->n_inputs = r->n_inputs;
	j->n_outputs = plan->n_outputs;
	const struct vy_request_config *rc = &r->config;
	if (rc->has_grid) {
		memcpy(j->cfg.grid, rc->grid, sizeof(j->cfg.grid));
	}
	if (rc->has_workgroup_size) {
		memcpy(j->cfg.workgroup_size, rc->workgroup_size, sizeof(j->cfg.workgroup_size));
	}
	j->cfg.spec = &req->spec;
	uint64_t cap = s->cfg.max_loop_iterations;
	j->cfg.max_loop_iterations = rc->max_loop_iterations && rc->max_loop_iterations < cap
					     ? rc->max_loop_iterations
					     : cap;
	j->cfg.max_output_bytes = max_output(s);
	uint32_t tcap = (uint32_t)s->cfg.dispatch_timeout_ms;
	j->cfg.timeout_ms = rc->timeout_ms && rc->timeout_ms < tcap ? rc->timeout_ms : tcap;
	j->cfg.label = rc->label;
	j->cfg.has_device = true;
	j->cfg.device = req->dev->index;
	j->cfg.timing = rc->timing;
	bool resident = req->n_res > 0;
	for (uint32_t i = 0; i < r->n_inputs; i++) {
		if (vy_ops_input_bytes(req, i, !resident, &err) != 0) {
			vy_reply_error(req, &err, NULL);
			return;
		}
	}
	if (resident) {
		j->kind = VY_JOB_RESIDENT_DISPATCH;
		if (build_resident(req, &err) != 0) {
			vy_reply_error(req, &err, NULL);
			return;
		}
	} else {
		j->kind = VY_JOB_DISPATCH;
		if (vy_binding_plan_check_inputs(plan, j->inputs, j->n_inputs, &err) != 0) {
			vy_reply_error(req, &err, NULL);
			return;
		}
	}
	/* Sized from the binding plan before the device allocates anything: a program that
	 * declares a huge output is refused here, on every backend, not after it ran. */
	req->reply_bytes = reply_output_bytes(req);
	vy_ops_submit_sized(req);
}

void vy_ops_submit_sized(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	struct vy_job *j = &req->job;
	if (req->reply_bytes > max_output(s)) {
		bool frame = max_output(s) < s->cfg.max_output;
		fail(req, VY_E_QUOTA_EXCEEDED, "outputs",
			frame ? "declare smaller outputs, or send them to resident buffers with "
				"outputs_to and download them in ranges"
			      : "declare smaller outputs, send them to resident buffers with "
				"outputs_to, or ask the operator to raise max_output",
			"the outputs of this dispatch would hold %" PRIu64
			" bytes; the limit is %" PRIu64 " (%s)",
			req->reply_bytes, max_output(s),
			frame ? "what one reply frame carries" : "max_output");
		return;
	}
	/* A dispatch that does not fit waits, in order, until the client reads its replies. */
	if (!vy_list_empty(&c->deferred) || !reply_fits(c, req->reply_bytes)) {
		reply_wait(req);
		return;
	}
	hold_reply(req, req->reply_bytes);
	vy_device_submit(j);
}

void vy_ops_resume_deferred(struct vy_conn *c)
{
	while (!vy_list_empty(&c->deferred)) {
		struct vy_req *req = VY_CONTAINER_OF(c->deferred.next, struct vy_req, wait);
		if (!reply_fits(c, req->reply_bytes)) {
			return;
		}
		vy_list_remove(&req->wait);
		hold_reply(req, req->reply_bytes);
		vy_device_submit(&req->job);
	}
	if (c->reply_waiting) {
		vy_list_remove(&c->reply_link);
		c->reply_waiting = false;
	}
}

void vy_ops_resume_waiters(struct vy_server *s)
{
	/* A submit may answer at once (an error), and that answer's write resumes again: the outer
	 * call goes round once more instead, so that the list is walked by one loop at a time. */
	if (s->resuming) {
		s->resume_again = true;
		return;
	}
	s->resuming = true;
	do {
		s->resume_again = false;
		struct vy_link *l;
		struct vy_link *t;
		VY_LIST_FOR_EACH_SAFE(l, t, &s->reply_waiters)
		{
			struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, reply_link);
			if (vy_conn_alive(c)) {
				vy_ops_resume_deferred(c);
			}
			if (s->resume_again) {
				break; /* the list may have changed under the walk */
			}
		}
	} while (s->resume_again);
	s->resuming = false;
}

void vy_ops_on_pipe(
	struct vy_req *req, int rc, const struct vy_err *err, const struct vy_err_list *errs)
{
	if (settled_early(req, rc, err, errs)) {
		return;
	}
	if (req->r.op == VY_OP_COMPILE) {
		reply_compile(req);
	} else {
		start_dispatch(req);
	}
}

static void reply_dispatch(struct vy_req *req)
{
	vy_prog_keep(req->conn->srv, req->prog);
	struct vy_job *j = &req->job;
	struct vy_reply *rp = vy_reply_begin(req, 3);
	msgpack_packer *pk = &rp->pk;
	vy_pack_cstr(pk, "outputs");
	msgpack_pack_array(pk, j->outputs.len);
	for (size_t o = 0; o < j->outputs.len; o++) {
		if (o < VY_IR_MAX_BUFFERS && j->out_nil[o]) {
			msgpack_pack_nil(pk);
		} else {
			vy_reply_bin(rp, j->outputs.items[o].data, j->outputs.items[o].len);
		}
	}
	vy_pack_cstr(pk, "timing");
	msgpack_pack_map(pk, 7);
	vy_pack_kv_u64(pk, "wall_ns", vy_now_ns() - req->t_start);
	/* The stages between: frame in to the device's queue (decode, lookup, inputs), waiting
	 * there, the backend's own part, and the hand-back to the event loop. */
	vy_pack_kv_u64(pk, "prepare_ns", j->t_enqueue - req->t_start);
	vy_pack_kv_u64(pk, "queue_ns", j->t_start - j->t_enqueue);
	vy_pack_kv_u64(pk, "backend_ns", j->t_end - j->t_start);
	vy_pack_kv_u64(pk, "handback_ns", j->t_loop - j->t_end);
	vy_pack_kv_u64(pk, "compile_ns", req->compile_ns);
	vy_pack_cstr(pk, "device_ns");
	if (j->timing.device_ns == VY_TIMING_NONE) {
		msgpack_pack_nil(pk);
	} else {
		msgpack_pack_uint64(pk, j->timing.device_ns);
	}
	vy_pack_kv_str(pk, "cache", req->cache);
	vy_reply_send(rp);
}

/* --- resident buffers ------------------------------------------------------------------ */

/* Every way an alloc can end well answers alike; attached says the name already existed. */
static void reply_alloc(struct vy_req *req, uint64_t handle, bool attached, uint32_t device)
{
	struct vy_reply *rp = vy_reply_begin(req, 3);
	vy_pack_kv_u64(&rp->pk, "handle", handle);
	vy_pack_kv_bool(&rp->pk, "attached", attached);
	vy_pack_kv_u64(&rp->pk, "device", device);
	vy_reply_send(rp);
}

/* A named buffer attached with config.device must live on that device. */
static bool named_on_device(struct vy_req *req, const struct vy_resident *named)
{
	int32_t want = req->r.config.device;
	if (want < 0 || (uint32_t)want == named->dev->index) {
		return true;
	}
	fail(req, VY_E_BAD_REQUEST, "config.device",
		"drop config.device to attach the named buffer where it lives, or use another name",
		"the named buffer \"%s\" lives on device %u, not %" PRId32, named->name,
		named->dev->index, want);
	return false;
}

static void op_alloc(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	const struct vy_request *r = &req->r;
	if (r->name) {
		struct vy_resident *named = vy_resident_find_named(s, c->uid, r->name);
		if (named && named->size != r->size) {
			fail(req, VY_E_BAD_REQUEST, "size",
				"attach the named buffer with its own size, or free it first",
				"the named buffer \"%s\" holds %" PRIu64 " bytes, not %" PRIu64,
				r->name, named->size, r->size);
			return;
		}
		if (named) {
			if (named_on_device(req, named)) {
				reply_alloc(req, named->handle, true, named->dev->index);
			}
			return;
		}
	}
	struct vy_err err = {0};
	if (r->size > SIZE_MAX) {
		fail(req, VY_E_BAD_REQUEST, "size", "allocate a smaller buffer",
			"%" PRIu64 " bytes cannot be addressed", r->size);
		return;
	}
	/* A buffer lives on the device config.device names, else on the least-loaded one; the
	 * requests that use it then run there. */
	req->dev = vy_device_pick(s, &r->config, 0, &err);
	if (!req->dev) {
		vy_reply_error(req, &err, NULL);
		return;
	}
	if (vy_resident_reserve(s, c->uid, r->size, &err) != 0) {
		vy_reply_error(req, &err, NULL);
		return;
	}
	req->reserved = r->size;
	req->job.kind = VY_JOB_ALLOC;
	req->job.req = req;
	req->job.dev = req->dev;
	req->job.len = (size_t)r->size;
	vy_device_submit(&req->job);
}

static void alloc_done(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	struct vy_job *j = &req->job;
	if (j->rc) {
		vy_resident_unreserve(s, c->uid, req->reserved);
		vy_reply_error(req, &j->err, NULL);
		return;
	}
	const char *name = req->r.name;
	struct vy_resident *named = name ? vy_resident_find_named(s, c->uid, name) : NULL;
	if (named) {
		/* Another connection created the name while this alloc ran: attach to it. */
		vy_backend_resident_free(req->dev->backend, j->res, NULL);
		vy_resident_unreserve(s, c->uid, req->reserved);
		if (named_on_device(req, named)) {
			reply_alloc(req, named->handle, true, named->dev->index);
		}
		return;
	}
	struct vy_resident *res = vy_resident_add(s, c, req->dev, &j->res, req->r.size, name);
	req->reserved = 0;
	reply_alloc(req, res->handle, false, req->dev->index);
}

/* Look up the buffer a request names; a miss is answered here, so callers just return. */
static struct vy_resident *request_resident(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_err err = {0};
	struct vy_resident *res = vy_resident_get(c->srv, c, req->r.handle, &err);
	if (!res) {
		vy_reply_error(req, &err, NULL);
	}
	return res;
}

static void op_upload(struct vy_req *req)
{
	const struct vy_request *r = &req->r;
	struct vy_resident *res = request_resident(req);
	if (!res) {
		return;
	}
	if (r->offset > res->size || r->data_len > res->size - r->offset) {
		fail(req, VY_E_BAD_REQUEST, "data", "keep offset + length within the buffer's size",
			"%" PRIu64 " bytes at offset %" PRIu64 " do not fit buffer %" PRIu64
			" of %" PRIu64 " bytes",
			r->data_len, r->offset, r->handle, res->size);
		return;
	}
	vy_resident_ref(res);
	req->res[req->n_res++] = res;
	struct vy_job *j = &req->job;
	j->kind = VY_JOB_UPLOAD;
	j->req = req;
	j->dev = res->dev;
	j->res = res->res;
	j->offset = (size_t)r->offset;
	j->data = r->data;
	j->len = (size_t)r->data_len;
	vy_device_submit(j);
}

static void op_download(struct vy_req *req)
{
	const struct vy_request *r = &req->r;
	struct vy_resident *res = request_resident(req);
	if (!res) {
		return;
	}
	if (r->offset > res->size) {
		fail(req, VY_E_BAD_REQUEST, "offset", "use an offset within the buffer's size",
			"offset %" PRIu64 " lies beyond buffer %" PRIu64 " of %" PRIu64 " bytes",
			r->offset, r->handle, res->size);
		return;
	}
	uint64_t len = r->has_length ? r->length : res->size - r->offset;
	if (len > res->size - r->offset) {
		fail(req, VY_E_BAD_REQUEST, "length",
			"keep offset + length within the buffer's size",
			"%" PRIu64 " bytes at offset %" PRIu64 " run past buffer %" PRIu64
			" of %" PRIu64 " bytes",
			len, r->offset, r->handle, res->size);
		return;
	}
	if (len > MAX_DOWNLOAD) {
		fail(req, VY_E_BAD_REQUEST, "length",
			"download in ranges of at most hello's limits.max_download bytes",
			"%" PRIu64 " bytes do not fit one reply frame", len);
		return;
	}
	if (!download_fits(req, len)) {
		return;
	}
	struct vy_job *j = &req->job;
	j->out = malloc(len ? (size_t)len : 1);
	if (!j->out) {
		fail(req, VY_E_OUT_OF_MEMORY, "length", "download in smaller ranges",
			"no memory for %" PRIu64 " bytes", len);
		return;
	}
	vy_resident_ref(res);
	req->res[req->n_res++] = res;
	j->kind = VY_JOB_DOWNLOAD;
	j->req = req;
	j->dev = res->dev;
	j->res = res->res;
	j->offset = (size_t)r->offset;
	j->len = (size_t)len;
	hold_reply(req, len);
	vy_device_submit(j);
}

static void op_free(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_err err = {0};
	/* A buffer lost with its device can still be freed, which forgets its handle. */
	struct vy_resident *res = vy_resident_find(c->srv, c, req->r.handle, &err);
	if (!res) {
		vy_reply_error(req, &err, NULL);
		return;
	}
	vy_resident_remove(c->srv, res);
	reply_empty(req);
}

/* Whether a shm input of the request faulted; fills err naming the first such input. */
static bool shm_faulted(const struct vy_req *req, struct vy_err *err)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < req->r.n_inputs && k < req->n_shm; i++) {
		if (req->r.inputs[i].kind != VY_INPUT_SHM) {
			continue;
		}
		char at[64];
		snprintf(at, sizeof(at), "inputs[%" PRIu32 "]", i);
		if (vy_shm_check_faulted(req->shm[k++], at, err) != 0) {
			return true;
		}
	}
	return false;
}

void vy_ops_on_job(struct vy_job *job)
{
	struct vy_req *req = job->req;
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	c->preparing -= req->preparing;
	c->user->replies -= req->preparing;
	s->replies -= req->preparing;
	req->preparing = 0;
	if (job->t_start) {
		uint64_t wait = job->t_start - job->t_enqueue;
		vy_hist_add(&c->wait, wait);
		vy_hist_add(&s->stats.queue_wait, wait);
	}
	if (job->canceled || !vy_conn_alive(c)) {
		if (job->kind == VY_JOB_ALLOC) {
			if (!job->canceled && job->rc == 0) {
				vy_backend_resident_free(job->dev->backend, job->res, NULL);
			}
			vy_resident_unreserve(s, c->uid, req->reserved);
		}
		vy_req_drop(req);
		/* Its reply room is free without a write to say so. */
		vy_ops_resume_waiters(s);
		return;
	}
	if (job->kind == VY_JOB_ALLOC) {
		alloc_done(req);
		return;
	}
	/* A region whose pages vanished while the job read it gave zeros, not the client's data:
	 * whatever the job computed from them is not an answer. */
	struct vy_err err = {0};
	if (shm_faulted(req, &err)) {
		vy_reply_error(req, &err, NULL);
		return;
	}
	if (job->rc) {
		vy_reply_error(req, &job->err, NULL);
		return;
	}
	switch (job->kind) {
	case VY_JOB_DISPATCH:
	case VY_JOB_RESIDENT_DISPATCH:
		reply_dispatch(req);
		break;
	case VY_JOB_UPLOAD:
		reply_empty(req);
		break;
	case VY_JOB_GRAPH:
		vy_graph_on_job(req);
		break;
	case VY_JOB_DOWNLOAD: {
		struct vy_reply *rp = vy_reply_begin(req, 1);
		vy_pack_cstr(&rp->pk, "data");
		vy_reply_bin(rp, job->out, job->len);
		vy_reply_send(rp);
		break;
	}
	case VY_JOB_ALLOC:
		break;
	}
}

/* --- shared memory --------------------------------------------------------------------- */

static void op_shm_attach(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	int fd = vy_conn_take_fd(c);
	if (fd < 0) {
		fail(req, VY_E_BAD_REQUEST, "size",
			"send the memfd with SCM_RIGHTS in the same sendmsg as the shm_attach "
			"frame",
			"shm_attach came without a file descriptor");
		return;
	}
	if (c->n_shms >= s->cfg.max_shm_regions) {
		close(fd);
		fail(req, VY_E_QUOTA_EXCEEDED, "size",
			"detach regions you no longer need, or ask the operator to raise "
			"max_shm_regions",
			"this connection holds %" PRIu32 " regions, the limit", c->n_shms);
		return;
	}
	uint64_t id = 0;
	struct vy_err err = {0};
	if (vy_shm_attach(c, fd, req->r.size, &id, &err) != 0) {
		vy_reply_error(req, &err, NULL);
		return;
	}
	struct vy_reply *rp = vy_reply_begin(req, 1);
	vy_pack_kv_u64(&rp->pk, "region", id);
	vy_reply_send(rp);
}

static void op_shm_detach(struct vy_req *req)
{
	struct vy_shm *m = vy_shm_get(req->conn, req->r.region);
	if (!m) {
		fail(req, VY_E_NOT_FOUND, "region", "use a region that shm_attach returned here",
			"no shm region %" PRIu64 " on this connection", req->r.region);
		return;
	}
	vy_shm_detach(m);
	reply_empty(req);
}

/* --- tables ---------------------------------------------------------------------------- */

static void op_cache_clear(struct vy_req *req)
{
	struct vy_server *s = req->conn->srv;
	uint64_t pipes = s->pipes.count;
	uint64_t progs = s->progs.count;
	vy_caches_clear(s, true);
	vy_log(VY_LOG_NOTICE,
		"cache_clear by client %" PRIu64 " (uid %u): %" PRIu64 " pipelines, %" PRIu64
		" programs",
		req->conn->id, (unsigned)req->conn->uid, pipes - s->pipes.count,
		progs - s->progs.count);
	struct vy_reply *rp = vy_reply_begin(req, 2);
	vy_pack_kv_u64(&rp->pk, "pipelines", pipes - s->pipes.count);
	vy_pack_kv_u64(&rp->pk, "programs", progs - s->progs.count);
	vy_reply_send(rp);
}

/* --- fault injection (tests of failure handling, DESIGN.md §7.8) ----------------------- */

static void op_inject_fault(struct vy_req *req)
{
	struct vy_server *s = req->conn->srv;
	if (!s->cfg.fault_injection) {
		fail(req, VY_E_PERMISSION_DENIED, "op",
			"start vyred with fault_injection = true in [debug] (test daemons only)",
			"fault injection is disabled on this daemon");
		return;
	}
	enum vy_fault fault;
	if (!vy_fault_parse(req->r.fault, &fault)) {
		fail(req, VY_E_BAD_REQUEST, "fault",
			"name one of device_lost, compile, dispatch or out_of_memory",
			"unknown fault \"%s\"", req->r.fault);
		return;
	}
	struct vy_err err;
	struct vy_device *d = vy_device_pick(s, &req->r.config, 0, &err);
	if (d && vy_backend_inject_fault(d->backend, fault, &err) == 0) {
		vy_log(VY_LOG_WARNING,
			"device %u: fault %s injected by client %" PRIu64 " (uid %u)", d->index,
			vy_fault_name(fault), req->conn->id, (unsigned)req->conn->uid);
		struct vy_reply *rp = vy_reply_begin(req, 1);
		vy_pack_kv_u64(&rp->pk, "device", d->index);
		vy_reply_send(rp);
		return;
	}
	vy_reply_error(req, &err, NULL);
}

void vy_ops_start(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	enum vy_op op = req->r.op;
	if (s->state != VY_SERVER_RUNNING) {
		fail(req, VY_E_SHUTTING_DOWN, NULL, "reconnect once the daemon has restarted",
			"the daemon is shutting down");
		return;
	}
	if (!c->hello && op != VY_OP_HELLO) {
		fail(req, VY_E_BAD_REQUEST, "op",
			"send hello with protocol 1 as the first request of the connection",
			"%s before hello", vy_op_name(op));
		return;
	}
	if (c->in_flight > s->cfg.max_inflight) {
		c->busy++;
		fail(req, VY_E_BUSY, NULL,
			"wait for replies before sending more requests, or ask the operator to "
			"raise "
			"max_inflight",
			"%" PRIu32
			" requests are in flight on this connection; the limit is %" PRIu64,
			c->in_flight - 1, s->cfg.max_inflight);
		return;
	}
	if (c->user->in_flight > s->cfg.max_inflight_per_user) {
		c->busy++;
		fail(req, VY_E_BUSY, NULL,
			"wait for replies before sending more requests, or ask the operator to "
			"raise "
			"max_inflight_per_user",
			"%" PRIu32
			" requests of uid %u are in flight over its connections; the limit "
			"is %" PRIu64,
			c->user->in_flight - 1, (unsigned)c->uid, s->cfg.max_inflight_per_user);
		return;
	}
	if (s->in_flight > s->cfg.max_inflight_total) {
		c->busy++;
		fail(req, VY_E_BUSY, NULL,
			"retry once replies have come back (other users' requests fill the "
			"daemon), "
			"or ask the operator to raise max_inflight_total",
			"%" PRIu32 " requests of all users are in flight; max_inflight_total is "
			"%" PRIu64,
			s->in_flight - 1, s->cfg.max_inflight_total);
		return;
	}
	if (vy_op_admin(op) && !vy_server_is_admin(s, c)) {
		fail(req, VY_E_PERMISSION_DENIED, "op",
			"run it as root, as the daemon's user, or as a member of admin_group",
			"%s needs an admin peer; uid %u is not one", vy_op_name(op),
			(unsigned)c->uid);
		return;
	}
	switch (op) {
	case VY_OP_HELLO:
		op_hello(req);
		break;
	case VY_OP_PING:
		reply_empty(req);
		break;
	case VY_OP_COMPILE:
	case VY_OP_DISPATCH:
		vy_prog_acquire(req);
		break;
	case VY_OP_ALLOC:
		op_alloc(req);
		break;
	case VY_OP_UPLOAD:
		op_upload(req);
		break;
	case VY_OP_DOWNLOAD:
		op_download(req);
		break;
	case VY_OP_FREE:
		op_free(req);
		break;
	case VY_OP_STATS: {
		struct vy_reply *rp = vy_reply_begin(req, VY_STATS_FIELDS);
		vy_stats_pack(s, c, &rp->pk);
		vy_reply_send(rp);
		break;
	}
	case VY_OP_CLIENTS: {
		struct vy_reply *rp = vy_reply_begin(req, 1);
		vy_stats_pack_clients(s, c, &rp->pk);
		vy_reply_send(rp);
		break;
	}
	case VY_OP_BUFFERS: {
		struct vy_reply *rp = vy_reply_begin(req, 1);
		vy_resident_pack_table(s, c, &rp->pk);
		vy_reply_send(rp);
		break;
	}
	case VY_OP_CACHE_LIST: {
		struct vy_reply *rp = vy_reply_begin(req, 2);
		vy_caches_pack_list(s, c, &rp->pk);
		vy_reply_send(rp);
		break;
	}
	case VY_OP_CACHE_CLEAR:
		op_cache_clear(req);
		break;
	case VY_OP_SHM_ATTACH:
		op_shm_attach(req);
		break;
	case VY_OP_SHM_DETACH:
		op_shm_detach(req);
		break;
	case VY_OP_INJECT_FAULT:
		op_inject_fault(req);
		break;
	case VY_OP_GRAPH_CREATE:
	case VY_OP_GRAPH_RUN:
	case VY_OP_GRAPH_FREE:
	case VY_OP_GRAPHS:
		vy_graph_op(req);
		break;
	case VY_OP_COUNT:
		fail(req, VY_E_INTERNAL, NULL, "report this as a bug", "unknown operation");
		break;
	}
}
