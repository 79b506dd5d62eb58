/*
 * The requests of protocol version 1, packed for libvyre's public calls. Each operation has one
 * packing function; its synchronous call sends it and waits, its *_start call sends it and
 * returns. Arguments the daemon would refuse for sure (too many inputs, a region of another
 * client, an unknown backend) are refused here first, before anything is sent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "internal.h"

static void pack_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	vy_pack_cstr(pk, key);
	msgpack_pack_uint64(pk, v);
}

int vy__make_config(const struct vy_dispatch_options *o, struct vy_request_config *cfg,
	struct vy_spec_setting *spec, struct vy_error *err)
{
	vy_request_config_init(cfg);
	if (!o) {
		return 0;
	}
	cfg->has_grid = o->grid[0] || o->grid[1] || o->grid[2];
	memcpy(cfg->grid, o->grid, sizeof(cfg->grid));
	cfg->has_workgroup_size =
		o->workgroup_size[0] || o->workgroup_size[1] || o->workgroup_size[2];
	memcpy(cfg->workgroup_size, o->workgroup_size, sizeof(cfg->workgroup_size));
	if (o->n_spec > VY_MAX_SPEC_SETTINGS || (o->n_spec && !o->spec)) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "config.spec",
			"give at most 64 specialization values", "%zu specialization values",
			o->n_spec);
	}
	for (size_t i = 0; i < o->n_spec; i++) {
		const struct vy_spec_arg *a = &o->spec[i];
		struct vy_spec_setting *s = &spec[i];
		memset(s, 0, sizeof(*s));
		s->name = a->name ? a->name : "";
		switch (a->type) {
		case VY_SPEC_TYPE_U32:
			s->wire = VY_SPEC_WIRE_UINT;
			s->u = a->v.u32;
			break;
		case VY_SPEC_TYPE_I32:
			s->wire = a->v.i32 < 0 ? VY_SPEC_WIRE_INT : VY_SPEC_WIRE_UINT;
			s->i = a->v.i32;
			s->u = (uint64_t)(a->v.i32 < 0 ? 0 : a->v.i32);
			break;
		case VY_SPEC_TYPE_F32:
			s->wire = VY_SPEC_WIRE_FLOAT;
			s->f = (double)a->v.f32;
			break;
		case VY_SPEC_TYPE_BOOL:
			s->wire = VY_SPEC_WIRE_BOOL;
			s->b = a->v.b;
			break;
		default:
			return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "config.spec",
				"use a VY_SPEC_TYPE_* value", "spec %s has an unknown type %d",
				s->name, (int)a->type);
		}
	}
	cfg->n_spec = (uint32_t)o->n_spec;
	cfg->spec = spec;
	cfg->max_loop_iterations = o->max_loop_iterations;
	cfg->timeout_ms = o->timeout_ms;
	cfg->label = o->label;
	cfg->device = o->has_device ? (int32_t)o->device : -1;
	if (o->backend && strcmp(o->backend, "vulkan") == 0) {
		cfg->backend = VY_BACKEND_VULKAN;
	} else if (o->backend && strcmp(o->backend, "reference") == 0) {
		cfg->backend = VY_BACKEND_REFERENCE;
	} else if (o->backend) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "config.backend",
			"name \"vulkan\" or \"reference\", or leave the backend NULL",
			"unknown backend \"%s\"", o->backend);
	}
	cfg->timing = o->timing;
	return 0;
}

static int need_program(const struct vy_program *p, struct vy_error *err)
{
	if (p) {
		return 0;
	}
	return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "program",
		"load or build a program first", "no program given");
}

/* --- compile --- */

/* The request's "config" entry, where the caller gave options (cfg from vy__make_config). */
static void pack_config(struct vy__msg *m, const struct vy_dispatch_options *options,
	const struct vy_request_config *cfg)
{
	if (options) {
		vy_pack_cstr(&m->pk, "config");
		vy_request_config_pack(&m->pk, cfg);
	}
}

static int pack_compile(struct vy_client *c, struct vy__msg *m, const struct vy_program *p,
	const struct vy_dispatch_options *options, struct vy_error *err)
{
	struct vy_request_config cfg;
	struct vy_spec_setting spec[VY_MAX_SPEC_SETTINGS];
	int rc = need_program(p, err);
	if (rc == 0) {
		rc = vy__make_config(options, &cfg, spec, err);
	}
	if (rc != 0) {
		return rc;
	}
	vy__msg_begin(c, m, VY_OP_COMPILE, options ? 2 : 1);
	vy_pack_cstr(&m->pk, "program");
	vy_program_pack(p, &m->pk);
	pack_config(m, options, &cfg);
	return 0;
}

int vy_compile(struct vy_client *c, const struct vy_program *p,
	const struct vy_dispatch_options *options, struct vy_compile_result *out,
	struct vy_error *err)
{
	struct vy__msg m;
	struct vy_reply *rep = NULL;
	int rc = pack_compile(c, &m, p, options, err);
	if (rc == 0) {
		rc = vy__msg_call(c, &m, -1, &rep, err);
	}
	if (rc == 0 && out) {
		memset(out, 0, sizeof(*out));
		snprintf(out->program_id, sizeof(out->program_id), "%s",
			vy_value_get_str(vy_reply_value(rep), "program_id", ""));
		snprintf(out->cache, sizeof(out->cache), "%s",
			vy_value_get_str(vy_reply_value(rep), "cache", ""));
		out->compile_ns = vy_value_get_u64(vy_reply_value(rep), "compile_ns", 0);
		out->device = (uint32_t)vy_value_get_u64(vy_reply_value(rep), "device", 0);
	}
	vy_reply_destroy(rep);
	return rc;
}

int vy_compile_start(struct vy_client *c, const struct vy_program *p,
	const struct vy_dispatch_options *options, vy_done_fn *done, void *user, uint64_t *id,
	struct vy_error *err)
{
	struct vy__msg m;
	int rc = pack_compile(c, &m, p, options, err);
	return rc ? rc : vy__msg_start(c, &m, -1, done, user, id, err);
}

/* --- dispatch --- */

static int check_dispatch(
	const struct vy_client *c, const struct vy_dispatch_args *a, struct vy_error *err)
{
	if (!a->program && !a->program_id) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "program",
			"give the program or the program_id that vy_compile returned",
			"a dispatch needs a program");
	}
	if (a->n_outputs_to > VY_MAX_INPUTS || (a->n_outputs_to && !a->outputs_to)) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "outputs_to",
			"give one entry per output (at most 32)", "%zu outputs_to entries",
			a->n_outputs_to);
	}
	return vy__check_inputs(c, a->inputs, a->n_inputs, err);
}

int vy__check_inputs(const struct vy_client *c, const struct vy_dispatch_input *inputs, size_t n,
	struct vy_error *err)
{
	if (n > VY_MAX_INPUTS || (n && !inputs)) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "inputs",
			"give one input per input buffer (at most 32)", "%zu inputs", n);
	}
	for (size_t i = 0; i < n; i++) {
		const struct vy_dispatch_input *in = &inputs[i];
		char at[32];
		snprintf(at, sizeof(at), "inputs[%zu]", i);
		if (in->from == VY_INPUT_FROM_SHM && (!in->region || in->region->client != c)) {
			return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, at,
				"use a region attached through this client",
				"the shm input names a region of another client (or none)");
		}
		if (in->from == VY_INPUT_FROM_SHM &&
			(in->offset > in->region->size ||
				in->len > in->region->size - in->offset)) {
			return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, at,
				"keep offset + length within the region",
				"bytes %zu..%zu lie outside the region of %zu bytes", in->offset,
				in->offset + in->len, in->region->size);
		}
		if (in->from == VY_INPUT_FROM_BYTES && in->len && !in->data) {
			return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, at,
				"point data at the input's bytes", "the input has no data");
		}
		if (in->from > VY_INPUT_FROM_SHM) {
			return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, at,
				"use a VY_INPUT_FROM_* value", "unknown input source %d",
				(int)in->from);
		}
	}
	return 0;
}

static int pack_dispatch(struct vy_client *c, struct vy__msg *m, const struct vy_dispatch_args *a,
	struct vy_error *err)
{
	struct vy_request_config cfg;
	struct vy_spec_setting spec[VY_MAX_SPEC_SETTINGS];
	int rc = check_dispatch(c, a, err);
	if (rc == 0) {
		rc = vy__make_config(a->options, &cfg, spec, err);
	}
	if (rc != 0) {
		return rc;
	}
	uint32_t n = 2 + (a->options != NULL) + (a->n_outputs_to > 0);
	vy__msg_begin(c, m, VY_OP_DISPATCH, n);
	if (a->program) {
		vy_pack_cstr(&m->pk, "program");
		vy_program_pack(a->program, &m->pk);
	} else {
		vy_pack_cstr(&m->pk, "program_id");
		vy_pack_cstr(&m->pk, a->program_id);
	}
	vy__pack_inputs(&m->pk, a->inputs, a->n_inputs);
	pack_config(m, a->options, &cfg);
	if (a->n_outputs_to > 0) {
		vy_pack_cstr(&m->pk, "outputs_to");
		msgpack_pack_array(&m->pk, a->n_outputs_to);
		for (size_t i = 0; i < a->n_outputs_to; i++) {
			if (a->outputs_to[i]) {
				msgpack_pack_uint64(&m->pk, a->outputs_to[i]);
			} else {
				msgpack_pack_nil(&m->pk);
			}
		}
	}
	return 0;
}

void vy__pack_inputs(msgpack_packer *pk, const struct vy_dispatch_input *inputs, size_t n)
{
	vy_pack_cstr(pk, "inputs");
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++) {
		const struct vy_dispatch_input *in = &inputs[i];
		switch (in->from) {
		case VY_INPUT_FROM_BYTES:
			msgpack_pack_bin(pk, in->len);
			msgpack_pack_bin_body(pk, in->data, in->len);
			break;
		case VY_INPUT_FROM_RESIDENT:
			msgpack_pack_map(pk, 1);
			pack_u64(pk, "resident", in->handle);
			break;
		case VY_INPUT_FROM_SHM:
			msgpack_pack_map(pk, 1);
			vy_pack_cstr(pk, "shm");
			msgpack_pack_array(pk, 3);
			msgpack_pack_uint64(pk, in->region->id);
			msgpack_pack_uint64(pk, in->offset);
			msgpack_pack_uint64(pk, in->len);
			break;
		}
	}
}

int vy_dispatch(struct vy_client *c, const struct vy_dispatch_args *args, struct vy_reply **out,
	struct vy_error *err)
{
	struct vy__msg m;
	if (out) {
		*out = NULL;
	}
	int rc = pack_dispatch(c, &m, args, err);
	return rc ? rc : vy__msg_call(c, &m, -1, out, err);
}

int vy_dispatch_start(struct vy_client *c, const struct vy_dispatch_args *args, vy_done_fn *done,
	void *user, uint64_t *id, struct vy_error *err)
{
	struct vy__msg m;
	int rc = pack_dispatch(c, &m, args, err);
	return rc ? rc : vy__msg_start(c, &m, -1, done, user, id, err);
}

/* --- resident buffers --- */

int vy_buffer_alloc(struct vy_client *c, uint64_t size, const char *name, uint64_t *handle,
	struct vy_error *err)
{
	return vy_buffer_alloc_on(c, size, name, NULL, handle, err);
}

int vy_buffer_alloc_on(struct vy_client *c, uint64_t size, const char *name,
	const struct vy_dispatch_options *options, uint64_t *handle, struct vy_error *err)
{
	struct vy_request_config cfg;
	struct vy_spec_setting spec[VY_MAX_SPEC_SETTINGS];
	int rc = vy__make_config(options, &cfg, spec, err);
	if (rc != 0) {
		return rc;
	}
	struct vy__msg m;
	vy__msg_begin(c, &m, VY_OP_ALLOC, 1 + (name != NULL) + (options != NULL));
	pack_u64(&m.pk, "size", size);
	if (name) {
		vy_pack_cstr(&m.pk, "name");
		vy_pack_cstr(&m.pk, name);
	}
	pack_config(&m, options, &cfg);
	struct vy_reply *rep = NULL;
	rc = vy__msg_call(c, &m, -1, &rep, err);
	if (rc == 0 && !vy_value_u64(vy_reply_get(rep, "handle"), handle)) {
		rc = vy__error_set(err, VY_ERROR_BAD_REPLY, "handle",
			"use a vyred that speaks protocol 1", "the alloc reply holds no handle");
	}
	vy_reply_destroy(rep);
	return rc;
}

static void pack_upload(struct vy_client *c, struct vy__msg *m, uint64_t handle, uint64_t offset,
	const void *data, size_t len)
{
	vy__msg_begin(c, m, VY_OP_UPLOAD, offset ? 3 : 2);
	pack_u64(&m->pk, "handle", handle);
	vy_pack_cstr(&m->pk, "data");
	msgpack_pack_bin(&m->pk, len);
	msgpack_pack_bin_body(&m->pk, len ? data : "", len);
	if (offset) {
		pack_u64(&m->pk, "offset", offset);
	}
}

static int check_data(const void *data, size_t len, struct vy_error *err)
{
	if (len && !data) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "data",
			"point data at the bytes to upload", "%zu bytes from a NULL pointer", len);
	}
	return 0;
}

int vy_buffer_upload(struct vy_client *c, uint64_t handle, uint64_t offset, const void *data,
	size_t len, struct vy_error *err)
{
	struct vy__msg m;
	int rc = check_data(data, len, err);
	if (rc != 0) {
		return rc;
	}
	pack_upload(c, &m, handle, offset, data, len);
	return vy__msg_call(c, &m, -1, NULL, err);
}

int vy_buffer_upload_start(struct vy_client *c, uint64_t handle, uint64_t offset, const void *data,
	size_t len, vy_done_fn *done, void *user, uint64_t *id, struct vy_error *err)
{
	struct vy__msg m;
	int rc = check_data(data, len, err);
	if (rc != 0) {
		return rc;
	}
	pack_upload(c, &m, handle, offset, data, len);
	return vy__msg_start(c, &m, -1, done, user, id, err);
}

static void pack_download(
	struct vy_client *c, struct vy__msg *m, uint64_t handle, uint64_t offset, uint64_t len)
{
	bool has_len = len != UINT64_MAX;
	vy__msg_begin(c, m, VY_OP_DOWNLOAD, 1 + (offset != 0) + has_len);
	pack_u64(&m->pk, "handle", handle);
	if (offset) {
		pack_u64(&m->pk, "offset", offset);
	}
	if (has_len) {
		pack_u64(&m->pk, "length", len);
	}
}

int vy_buffer_download(struct vy_client *c, uint64_t handle, uint64_t offset, void *dst, size_t len,
	struct vy_error *err)
{
	struct vy__msg m;
	int rc = check_data(dst, len, err);
	if (rc != 0) {
		return rc;
	}
	pack_download(c, &m, handle, offset, len);
	struct vy_reply *rep = NULL;
	rc = vy__msg_call(c, &m, -1, &rep, err);
	size_t got = 0;
	const void *data = rc == 0 ? vy_value_bin(vy_reply_get(rep, "data"), &got) : NULL;
	if (rc == 0 && (!data || got != len)) {
		rc = vy__error_set(err, VY_ERROR_BAD_REPLY, "data",
			"use a vyred that speaks protocol 1",
			"the download reply holds %zu bytes, %zu were asked for", got, len);
	}
	if (rc == 0 && len) {
		memcpy(dst, data, len);
	}
	vy_reply_destroy(rep);
	return rc;
}

int vy_buffer_download_start(struct vy_client *c, uint64_t handle, uint64_t offset, uint64_t len,
	vy_done_fn *done, void *user, uint64_t *id, struct vy_error *err)
{
	struct vy__msg m;
	pack_download(c, &m, handle, offset, len);
	return vy__msg_start(c, &m, -1, done, user, id, err);
}

int vy_buffer_free(struct vy_client *c, uint64_t handle, struct vy_error *err)
{
	struct vy__msg m;
	vy__msg_begin(c, &m, VY_OP_FREE, 1);
	pack_u64(&m.pk, "handle", handle);
	return vy__msg_call(c, &m, -1, NULL, err);
}

/* --- operations without fields --- */

static int pack_plain(struct vy_client *c, struct vy__msg *m, const char *op, struct vy_error *err)
{
	int o = op ? vy_op_from_name(op, strlen(op)) : -1;
	switch (o) {
	case VY_OP_PING:
	case VY_OP_STATS:
	case VY_OP_CLIENTS:
	case VY_OP_BUFFERS:
	case VY_OP_CACHE_LIST:
	case VY_OP_CACHE_CLEAR:
	case VY_OP_GRAPHS:
		vy__msg_begin(c, m, (enum vy_op)o, 0);
		return 0;
	default:
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "op",
			"name ping, stats, clients, buffers, graphs, cache_list or cache_clear, or "
			"use "
			"the call made for the operation",
			"\"%s\" is not an operation without fields", op ? op : "(null)");
	}
}

int vy_call(struct vy_client *c, const char *op, struct vy_reply **out, struct vy_error *err)
{
	struct vy__msg m;
	if (out) {
		*out = NULL;
	}
	int rc = pack_plain(c, &m, op, err);
	return rc ? rc : vy__msg_call(c, &m, -1, out, err);
}

int vy_call_start(struct vy_client *c, const char *op, vy_done_fn *done, void *user, uint64_t *id,
	struct vy_error *err)
{
	struct vy__msg m;
	int rc = pack_plain(c, &m, op, err);
	return rc ? rc : vy__msg_start(c, &m, -1, done, user, id, err);
}

int vy_ping(struct vy_client *c, struct vy_error *err)
{
	return vy_call(c, "ping", NULL, err);
}

int vy_stats(struct vy_client *c, struct vy_reply **out, struct vy_error *err)
{
	return vy_call(c, "stats", out, err);
}

int vy_clients(struct vy_client *c, struct vy_reply **out, struct vy_error *err)
{
	return vy_call(c, "clients", out, err);
}

int vy_buffers(struct vy_client *c, struct vy_reply **out, struct vy_error *err)
{
	return vy_call(c, "buffers", out, err);
}

int vy_cache_list(struct vy_client *c, struct vy_reply **out, struct vy_error *err)
{
	return vy_call(c, "cache_list", out, err);
}

int vy_cache_clear(struct vy_client *c, struct vy_reply **out, struct vy_error *err)
{
	return vy_call(c, "cache_clear", out, err);
}

int vy_inject_fault(struct vy_client *c, const char *fault,
	const struct vy_dispatch_options *options, struct vy_reply **out, struct vy_error *err)
{
	if (out) {
		*out = NULL;
	}
	if (!fault) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "fault",
			"name device_lost, compile, dispatch or out_of_memory", "no fault given");
	}
	struct vy_request_config cfg;
	struct vy_spec_setting spec[VY_MAX_SPEC_SETTINGS];
	int rc = vy__make_config(options, &cfg, spec, err);
	if (rc != 0) {
		return rc;
	}
	struct vy__msg m;
	vy__msg_begin(c, &m, VY_OP_INJECT_FAULT, options ? 2 : 1);
	vy_pack_cstr(&m.pk, "fault");
	vy_pack_cstr(&m.pk, fault);
	pack_config(&m, options, &cfg);
	return vy__msg_call(c, &m, -1, out, err);
}
