/*
 * Request and response envelopes. A request is read in two passes over the bounded reader: the
 * first finds id and op (so every later error can carry the id), the second decodes each field
 * against the operation's table entry.
 */
#include "envelope.h"

#include "arena.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

struct op_info {
	const char *name;
	bool admin;
	const char *fields;
	const char *required;
};

static const struct op_info ops[] = {
#define VY__OP_INFO(e, wire, admin, fields, required) {wire, admin, fields, required},
	VY_OP_MAP(VY__OP_INFO)
#undef VY__OP_INFO
};

const char *vy_op_name(enum vy_op op)
{
	return (unsigned)op < VY_OP_COUNT ? ops[op].name : "?";
}

bool vy_op_admin(enum vy_op op)
{
	return (unsigned)op < VY_OP_COUNT && ops[op].admin;
}

int vy_op_from_name(const char *name, size_t len)
{
	for (int i = 0; i < VY_OP_COUNT; i++) {
		if (strlen(ops[i].name) == len && memcmp(ops[i].name, name, len) == 0) {
			return i;
		}
	}
	return -1;
}

/* True when the space-separated `list` holds the word key[0..len). */
static bool word_in(const char *list, const char *key, size_t len)
{
	const char *p = list;
	while (*p) {
		size_t n = strcspn(p, " ");
		if (n == len && memcmp(p, key, len) == 0) {
			return true;
		}
		p += n;
		p += *p == ' ';
	}
	return false;
}

void vy_request_config_init(struct vy_request_config *config)
{
	memset(config, 0, sizeof(*config));
	config->device = -1;
	config->backend = VY_BACKEND_ANY;
}

/* --- request decoding ---------------------------------------------------------------------- */

struct rdec {
	struct vy_mp_reader *r;
	struct vy_request *req;
	struct vy_err *err;
	const char *field; /* location of errors */
	unsigned flags;    /* VY_DECODE_* */
};

static int bad(struct rdec *d, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(struct rdec *d, const char *fix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vy_err_setv(d->err, VY_E_BAD_REQUEST, d->field, fix, fmt, ap);
	va_end(ap);
	return VY_E_BAD_REQUEST;
}

static const char request_fix[] = "send the request as docs/protocol.md describes it";

static int get(struct rdec *d, struct vy_mp_obj *o, enum vy_mp_type type, const char *what)
{
	int rc = vy_mp_read(d->r, o);
	if (rc != VY_MP_OK) {
		return bad(d, request_fix, "malformed msgpack in %s: %s", what, vy_mp_strerror(rc));
	}
	if (o->type != type) {
		return bad(d, request_fix, "%s must be %s, found %s", what, vy_mp_type_name(type),
			vy_mp_type_name(o->type));
	}
	return 0;
}

static int get_u64(struct rdec *d, uint64_t *out, const char *what)
{
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_UINT, what);
	if (rc == 0) {
		*out = o.u;
	}
	return rc;
}

static int get_u32(struct rdec *d, uint32_t *out, const char *what)
{
	uint64_t v;
	int rc = get_u64(d, &v, what);
	if (rc == 0 && v > UINT32_MAX) {
		return bad(d, "use a value that fits in 32 bits",
			"%s is %" PRIu64 ", more than 4294967295", what, v);
	}
	if (rc == 0) {
		*out = (uint32_t)v;
	}
	return rc;
}

static int get_str(struct rdec *d, const char **out, size_t max, const char *what)
{
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_STR, what);
	if (rc) {
		return rc;
	}
	if (o.len > max || memchr(o.data, '\0', o.len)) {
		return bad(d, "send a shorter text without NUL bytes",
			"%s must be at most %zu bytes of text without NUL bytes", what, max);
	}
	*out = vy_arena_strndup(d->req->arena, (const char *)o.data, o.len);
	return 0;
}

static int get_triple(struct rdec *d, uint32_t out[3], const char *what)
{
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_ARRAY, what);
	if (rc == 0 && o.len != 3) {
		return bad(d, "give three numbers [x, y, z]", "%s needs 3 elements, found %" PRIu32,
			what, o.len);
	}
	for (int i = 0; rc == 0 && i < 3; i++) {
		rc = get_u32(d, &out[i], what);
	}
	return rc;
}

static int get_input(struct rdec *d, struct vy_input *in)
{
	struct vy_mp_obj o;
	int rc = vy_mp_read(d->r, &o);
	if (rc != VY_MP_OK) {
		return bad(d, request_fix, "malformed msgpack in an input: %s", vy_mp_strerror(rc));
	}
	if (o.type == VY_MP_BIN) {
		in->kind = VY_INPUT_BYTES;
		in->data = o.data;
		in->len = o.len;
		return 0;
	}
	const char *fix = "give each input as bytes, {\"resident\": handle} or "
			  "{\"shm\": [region, offset, length]}";
	if (o.type != VY_MP_MAP || o.len != 1) {
		return bad(d, fix, "an input must be bytes or a one-field map, found %s",
			vy_mp_type_name(o.type));
	}
	struct vy_mp_obj key;
	rc = get(d, &key, VY_MP_STR, "an input key");
	if (rc) {
		return rc;
	}
	if (vy_mp_str_eq(&key, "resident")) {
		in->kind = VY_INPUT_RESIDENT;
		return get_u64(d, &in->handle, "a resident handle");
	}
	if (vy_mp_str_eq(&key, "shm")) {
		in->kind = VY_INPUT_SHM;
		rc = get(d, &o, VY_MP_ARRAY, "an shm input");
		if (rc == 0 && o.len != 3) {
			return bad(d, fix, "an shm input needs [region, offset, length]");
		}
		if (rc == 0) {
			rc = get_u64(d, &in->region, "the shm region");
		}
		if (rc == 0) {
			rc = get_u64(d, &in->offset, "the shm offset");
		}
		return rc ? rc : get_u64(d, &in->len, "the shm length");
	}
	return bad(d, fix, "unknown input kind \"%.*s\"", (int)(key.len > 32 ? 32 : key.len),
		(const char *)key.data);
}

static int get_inputs(struct rdec *d)
{
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_ARRAY, "inputs");
	if (rc) {
		return rc;
	}
	if (o.len > VY_MAX_INPUTS) {
		return bad(d, "send one input per input buffer of the program (at most 32)",
			"%" PRIu32 " inputs is more than %d", o.len, VY_MAX_INPUTS);
	}
	d->req->n_inputs = o.len;
	d->req->inputs = vy_arena_calloc(d->req->arena, o.len, sizeof(*d->req->inputs));
	for (uint32_t i = 0; i < o.len; i++) {
		rc = get_input(d, &d->req->inputs[i]);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

static int get_outputs_to(struct rdec *d)
{
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_ARRAY, "outputs_to");
	if (rc) {
		return rc;
	}
	if (o.len > VY_IR_MAX_BUFFERS) {
		return bad(d, "send one entry per output of the program",
			"%" PRIu32 " entries is more than %d", o.len, VY_IR_MAX_BUFFERS);
	}
	struct vy_request *req = d->req;
	req->has_outputs_to = true;
	req->n_outputs_to = o.len;
	req->outputs_to = vy_arena_calloc(req->arena, o.len, sizeof(*req->outputs_to));
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj v;
		rc = vy_mp_read(d->r, &v);
		if (rc == VY_MP_OK && v.type == VY_MP_UINT && v.u != 0) {
			req->outputs_to[i] = v.u;
		} else if (rc != VY_MP_OK || v.type != VY_MP_NIL) {
			return bad(d, "give each entry as nil or a resident handle",
				"outputs_to[%" PRIu32 "] is neither nil nor a handle", i);
		}
	}
	return 0;
}

static int get_spec(struct rdec *d, struct vy_request_config *c)
{
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_MAP, "config.spec");
	if (rc) {
		return rc;
	}
	if (o.len > VY_MAX_SPEC_SETTINGS) {
		return bad(d, "set at most 64 spec constants",
			"%" PRIu32 " spec values is more than %d", o.len, VY_MAX_SPEC_SETTINGS);
	}
	c->n_spec = o.len;
	c->spec = vy_arena_calloc(d->req->arena, o.len, sizeof(*c->spec));
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_spec_setting *s = &c->spec[i];
		rc = get_str(d, &s->name, VY_IR_MAX_NAME, "a spec name");
		if (rc) {
			return rc;
		}
		struct vy_mp_obj v;
		rc = vy_mp_read(d->r, &v);
		if (rc != VY_MP_OK) {
			return bad(d, request_fix, "malformed msgpack in config.spec");
		}
		switch (v.type) {
		case VY_MP_UINT:
			s->wire = VY_SPEC_WIRE_UINT;
			s->u = v.u;
			break;
		case VY_MP_INT:
			s->wire = VY_SPEC_WIRE_INT;
			s->i = v.i;
			break;
		case VY_MP_FLOAT:
			s->wire = VY_SPEC_WIRE_FLOAT;
			s->f = v.f;
			break;
		case VY_MP_BOOL:
			s->wire = VY_SPEC_WIRE_BOOL;
			s->b = v.b;
			break;
		default:
			return bad(d, "give each spec value as a number or a boolean",
				"spec value \"%s\" is %s", s->name, vy_mp_type_name(v.type));
		}
	}
	return 0;
}

static int get_config_field(
	struct rdec *d, struct vy_request_config *c, const struct vy_mp_obj *key)
{
	if (vy_mp_str_eq(key, "grid")) {
		c->has_grid = true;
		return get_triple(d, c->grid, "config.grid");
	}
	if (vy_mp_str_eq(key, "workgroup_size")) {
		c->has_workgroup_size = true;
		return get_triple(d, c->workgroup_size, "config.workgroup_size");
	}
	if (vy_mp_str_eq(key, "spec")) {
		return get_spec(d, c);
	}
	if (vy_mp_str_eq(key, "max_loop_iterations")) {
		return get_u64(d, &c->max_loop_iterations, "config.max_loop_iterations");
	}
	if (vy_mp_str_eq(key, "timeout_ms")) {
		return get_u32(d, &c->timeout_ms, "config.timeout_ms");
	}
	if (vy_mp_str_eq(key, "label")) {
		return get_str(d, &c->label, VY_MAX_LABEL, "config.label");
	}
	if (vy_mp_str_eq(key, "device")) {
		uint32_t dev = 0;
		int rc = get_u32(d, &dev, "config.device");
		if (rc == 0 && dev > INT32_MAX) {
			return bad(d, "name a device index that hello listed",
				"device %" PRIu32 " does not exist", dev);
		}
		c->device = (int32_t)dev;
		return rc;
	}
	if (vy_mp_str_eq(key, "backend")) {
		struct vy_mp_obj v;
		int rc = get(d, &v, VY_MP_STR, "config.backend");
		if (rc == 0 && vy_mp_str_eq(&v, "vulkan")) {
			c->backend = VY_BACKEND_VULKAN;
		} else if (rc == 0 && vy_mp_str_eq(&v, "reference")) {
			c->backend = VY_BACKEND_REFERENCE;
		} else if (rc == 0) {
			return bad(d, "use \"vulkan\" or \"reference\"", "unknown backend");
		}
		return rc;
	}
	if (vy_mp_str_eq(key, "timing")) {
		struct vy_mp_obj v;
		int rc = get(d, &v, VY_MP_BOOL, "config.timing");
		c->timing = v.b;
		return rc;
	}
	return bad(d,
		"use only grid, workgroup_size, spec, max_loop_iterations, timeout_ms, label, "
		"device, "
		"backend and timing",
		"unknown config field \"%.*s\"", (int)(key->len > 32 ? 32 : key->len),
		(const char *)key->data);
}

static int get_config(struct rdec *d, struct vy_request_config *c)
{
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_MAP, "config");
	for (uint32_t i = 0; rc == 0 && i < o.len; i++) {
		struct vy_mp_obj key;
		rc = get(d, &key, VY_MP_STR, "a config key");
		if (rc == 0) {
			rc = get_config_field(d, c, &key);
		}
	}
	return rc;
}

static const char bind_fix[] = "bind each buffer as {\"input\": k}, {\"output\": j}, "
			       "{\"temp\": name} or {\"resident\": handle}";

static int get_bind(struct rdec *d, struct vy_step_bind *b)
{
	int rc = get_str(d, &b->buffer, VY_IR_MAX_NAME, "a bound buffer's name");
	struct vy_mp_obj o;
	if (rc == 0) {
		rc = get(d, &o, VY_MP_MAP, "a bind");
	}
	if (rc == 0 && o.len != 1) {
		return bad(d, bind_fix, "the bind of buffer %s must be a one-field map", b->buffer);
	}
	struct vy_mp_obj key;
	if (rc == 0) {
		rc = get(d, &key, VY_MP_STR, "a bind's kind");
	}
	if (rc) {
		return rc;
	}
	if (vy_mp_str_eq(&key, "temp")) {
		b->kind = VY_STEP_TEMP;
		return get_str(d, &b->temp, VY_IR_MAX_NAME, "a temp name");
	}
	b->kind = vy_mp_str_eq(&key, "input")      ? VY_STEP_INPUT
		  : vy_mp_str_eq(&key, "output")   ? VY_STEP_OUTPUT
		  : vy_mp_str_eq(&key, "resident") ? VY_STEP_RESIDENT
						   : (enum vy_step_bind_kind) - 1;
	if ((int)b->kind < 0) {
		return bad(d, bind_fix, "unknown bind kind \"%.*s\" for buffer %s",
			(int)(key.len > 32 ? 32 : key.len), (const char *)key.data, b->buffer);
	}
	rc = get_u64(d, &b->value, "a bind's value");
	if (rc == 0 && b->kind != VY_STEP_RESIDENT && b->value >= VY_IR_MAX_BUFFERS * 4) {
		return bad(d, "number graph inputs and outputs from 0",
			"buffer %s is bound to %s %" PRIu64 ", past any graph's", b->buffer,
			b->kind == VY_STEP_INPUT ? "input" : "output", b->value);
	}
	return rc;
}

static int get_step(struct rdec *d, struct vy_step_request *st, uint32_t i, struct vy_err *err)
{
	const char *outer = d->field;
	vy_request_config_init(&st->config);
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_MAP, "a step");
	char place[48];
	for (uint32_t f = 0; rc == 0 && f < o.len; f++) {
		struct vy_mp_obj key;
		rc = get(d, &key, VY_MP_STR, "a step field");
		if (rc) {
			break;
		}
		snprintf(place, sizeof(place), "steps[%" PRIu32 "].%.*s", i,
			(int)(key.len > 16 ? 16 : key.len), (const char *)key.data);
		d->field = place;
		if (vy_mp_str_eq(&key, "program") && !st->program) {
			rc = vy_program_read(d->r, place, &st->program, err);
		} else if (vy_mp_str_eq(&key, "program_id") && !st->has_program_id) {
			struct vy_mp_obj v;
			rc = get(d, &v, VY_MP_STR, "program_id");
			if (rc == 0) {
				rc = vy_program_id_parse(
					(const char *)v.data, v.len, &st->program_id, err);
			}
			st->has_program_id = rc == 0;
		} else if (vy_mp_str_eq(&key, "config")) {
			rc = get_config(d, &st->config);
		} else if (vy_mp_str_eq(&key, "bind") && !st->binds) {
			struct vy_mp_obj m;
			rc = get(d, &m, VY_MP_MAP, "bind");
			if (rc == 0 && m.len > VY_IR_MAX_BUFFERS) {
				rc = bad(d, "bind each buffer of the program once",
					"%" PRIu32 " binds is more than a program's %d buffers",
					m.len, VY_IR_MAX_BUFFERS);
			}
			if (rc == 0) {
				st->n_binds = m.len;
				st->binds = vy_arena_calloc(
					d->req->arena, m.len ? m.len : 1, sizeof(*st->binds));
			}
			for (uint32_t k = 0; rc == 0 && k < m.len; k++) {
				rc = get_bind(d, &st->binds[k]);
			}
		} else {
			rc = bad(d, "give a step program or program_id, config and bind, once each",
				"a step does not take this field here");
		}
		if (rc && err->at[0] == '\0') {
			snprintf(err->at, sizeof(err->at), "%s", place);
		}
	}
	if (rc == 0 && !st->program == !st->has_program_id) {
		snprintf(place, sizeof(place), "steps[%" PRIu32 "]", i);
		d->field = place;
		rc = bad(d, "give each step either its program or the program_id compile returned",
			"step %" PRIu32 " needs exactly one of program and program_id", i);
	}
	d->field = outer; /* `place` ends with this call */
	return rc;
}

static int get_steps(struct rdec *d, struct vy_err *err)
{
	struct vy_mp_obj o;
	int rc = get(d, &o, VY_MP_ARRAY, "steps");
	if (rc) {
		return rc;
	}
	if (o.len > VY_MAX_GRAPH_STEPS) {
		return bad(d, "split the work into graphs of at most 4096 steps",
			"%" PRIu32 " steps is more than %d", o.len, VY_MAX_GRAPH_STEPS);
	}
	struct vy_request *req = d->req;
	req->steps = vy_arena_calloc(req->arena, o.len ? o.len : 1, sizeof(*req->steps));
	req->n_steps = o.len;
	for (uint32_t i = 0; rc == 0 && i < o.len; i++) {
		rc = get_step(d, &req->steps[i], i, err);
	}
	return rc;
}

static int get_field(struct rdec *d, const struct vy_mp_obj *key, struct vy_err *err)
{
	struct vy_request *req = d->req;
	const char *k = (const char *)key->data;
	size_t n = key->len;
	if (!word_in(ops[req->op].fields, k, n)) {
		return bad(d,
			"remove the field; docs/protocol.md lists the fields of each operation",
			"%s does not take the field \"%.*s\"", ops[req->op].name,
			(int)(n > 32 ? 32 : n), k);
	}
	if (vy_mp_str_eq(key, "protocol")) {
		return get_u32(d, &req->protocol, "protocol");
	}
	if (vy_mp_str_eq(key, "client")) {
		return get_str(d, &req->client, VY_MAX_LABEL, "client");
	}
	if (vy_mp_str_eq(key, "program") && (d->flags & VY_DECODE_PROGRAM_RAW)) {
		size_t from = vy_mp_offset(d->r);
		const uint8_t *raw = d->r->p;
		if (vy_mp_skip(d->r) != VY_MP_OK) {
			return bad(d, "send the program as one msgpack map",
				"the program is not a complete msgpack value");
		}
		req->program_raw = raw;
		req->program_raw_len = vy_mp_offset(d->r) - from;
		return 0;
	}
	if (vy_mp_str_eq(key, "program")) {
		return vy_program_read(d->r, "program", &req->program, err);
	}
	if (vy_mp_str_eq(key, "program_id")) {
		struct vy_mp_obj o;
		int rc = get(d, &o, VY_MP_STR, "program_id");
		if (rc == 0) {
			rc = vy_program_id_parse(
				(const char *)o.data, o.len, &req->program_id, err);
		}
		req->has_program_id = rc == 0;
		return rc;
	}
	if (vy_mp_str_eq(key, "inputs")) {
		return get_inputs(d);
	}
	if (vy_mp_str_eq(key, "config")) {
		return get_config(d, &req->config);
	}
	if (vy_mp_str_eq(key, "steps")) {
		return get_steps(d, err);
	}
	if (vy_mp_str_eq(key, "outputs_to")) {
		return get_outputs_to(d);
	}
	if (vy_mp_str_eq(key, "name")) {
		return get_str(d, &req->name, VY_IR_MAX_NAME, "name");
	}
	if (vy_mp_str_eq(key, "fault")) {
		return get_str(d, &req->fault, VY_MAX_LABEL, "fault");
	}
	if (vy_mp_str_eq(key, "data")) {
		struct vy_mp_obj o;
		int rc = get(d, &o, VY_MP_BIN, "data");
		req->data = o.data;
		req->data_len = o.len;
		return rc;
	}
	if (vy_mp_str_eq(key, "length")) {
		req->has_length = true;
		return get_u64(d, &req->length, "length");
	}
	uint64_t *slot = vy_mp_str_eq(key, "size")     ? &req->size
			 : vy_mp_str_eq(key, "handle") ? &req->handle
			 : vy_mp_str_eq(key, "offset") ? &req->offset
			 : vy_mp_str_eq(key, "graph")  ? &req->graph
						       : &req->region;
	return get_u64(d, slot, d->field);
}

/* First pass: id, op and the shape of the map. */
static int scan_envelope(const uint8_t *frame, size_t len, struct vy_request *req,
	struct vy_err *err, bool *has_id, bool *has_op)
{
	struct vy_mp_reader r;
	vy_mp_reader_init(&r, frame, len);
	struct vy_mp_obj o;
	const char *fix = "send exactly one msgpack map per frame";
	int rc = vy_mp_read(&r, &o);
	if (rc != VY_MP_OK || o.type != VY_MP_MAP) {
		return vy_err_set(
			err, VY_E_BAD_FRAME, NULL, fix, "the frame payload is not a msgpack map");
	}
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj key;
		struct vy_mp_obj v;
		rc = vy_mp_read(&r, &key);
		if (rc != VY_MP_OK) {
			return vy_err_set(err, VY_E_BAD_FRAME, NULL, fix, "malformed msgpack: %s",
				vy_mp_strerror(rc));
		}
		if (key.type == VY_MP_STR &&
			(vy_mp_str_eq(&key, "id") || vy_mp_str_eq(&key, "op"))) {
			rc = vy_mp_read(&r, &v);
			if (rc == VY_MP_OK && key.data[0] == 'i' && v.type == VY_MP_UINT) {
				req->id = v.u;
				*has_id = true;
			} else if (rc == VY_MP_OK && key.data[0] == 'o' && v.type == VY_MP_STR) {
				int op = vy_op_from_name((const char *)v.data, v.len);
				if (op < 0) {
					*has_op = false;
					return vy_err_set(err, VY_E_BAD_REQUEST, "op",
						"use an operation listed in docs/protocol.md",
						"unknown operation \"%.*s\"",
						(int)(v.len > 32 ? 32 : v.len),
						(const char *)v.data);
				}
				req->op = (enum vy_op)op;
				*has_op = true;
			} else if (rc == VY_MP_OK) {
				return vy_err_set(err, VY_E_BAD_REQUEST,
					key.data[0] == 'i' ? "id" : "op",
					"send id as an unsigned integer and op as a string",
					"the field %s has the wrong type",
					key.data[0] == 'i' ? "id" : "op");
			}
		} else {
			if (key.type != VY_MP_STR) {
				return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
					"use strings as request field names",
					"a request field name is %s", vy_mp_type_name(key.type));
			}
			rc = vy_mp_skip(&r);
		}
		if (rc != VY_MP_OK) {
			return vy_err_set(err, VY_E_BAD_FRAME, NULL, fix, "malformed msgpack: %s",
				vy_mp_strerror(rc));
		}
	}
	if (vy_mp_offset(&r) != len) {
		return vy_err_set(err, VY_E_BAD_FRAME, NULL, fix,
			"%zu bytes follow the request map in the frame", len - vy_mp_offset(&r));
	}
	return 0;
}

int vy_request_program(struct vy_request *req, struct vy_err *err)
{
	if (req->program || !req->program_raw) {
		return 0;
	}
	struct vy_mp_reader r;
	vy_mp_reader_init(&r, req->program_raw, req->program_raw_len);
	return vy_program_read(&r, "program", &req->program, err);
}

int vy_request_decode(const uint8_t *frame, size_t len, struct vy_request *req, struct vy_err *err)
{
	return vy_request_decode_flags(frame, len, 0, req, err);
}

int vy_request_decode_flags(const uint8_t *frame, size_t len, unsigned flags,
	struct vy_request *req, struct vy_err *err)
{
	memset(req, 0, sizeof(*req));
	vy_request_config_init(&req->config);
	bool has_id = false;
	bool has_op = false;
	int rc = scan_envelope(frame, len, req, err, &has_id, &has_op);
	if (rc) {
		return rc;
	}
	if (!has_id || !has_op) {
		return vy_err_set(err, VY_E_BAD_REQUEST, has_id ? "op" : "id",
			"give every request an unsigned integer id and an op",
			"the request has no %s", has_id ? "op" : "id");
	}
	req->arena = vy_arena_create();
	struct vy_mp_reader r;
	vy_mp_reader_init(&r, frame, len);
	struct vy_mp_obj o;
	vy_mp_read(&r, &o);
	struct rdec d = {.r = &r, .req = req, .err = err, .flags = flags};
	char field[40];
	/* an operation accepts at most five fields, so eight slots catch every repetition */
	struct vy_mp_obj seen[8];
	unsigned n_seen = 0;
	for (uint32_t i = 0; rc == 0 && i < o.len; i++) {
		struct vy_mp_obj key;
		vy_mp_read(&r, &key);
		if (vy_mp_str_eq(&key, "id") || vy_mp_str_eq(&key, "op")) {
			vy_mp_skip(&r);
			continue;
		}
		snprintf(field, sizeof(field), "%.*s", (int)(key.len > 32 ? 32 : key.len),
			(const char *)key.data);
		d.field = field;
		for (unsigned s = 0; s < n_seen; s++) {
			if (seen[s].len == key.len &&
				memcmp(seen[s].data, key.data, key.len) == 0) {
				rc = bad(&d, "send each field once", "the field %s appears twice",
					field);
			}
		}
		if (rc == 0) {
			rc = get_field(&d, &key, err);
		}
		if (rc == 0 && n_seen < 8) {
			seen[n_seen++] = key;
		}
	}
	const char *required = ops[req->op].required;
	while (rc == 0 && *required) {
		size_t n = strcspn(required, " ");
		bool present = (n == 8 && !memcmp(required, "protocol", 8) && req->protocol) ||
			       (n == 7 && !memcmp(required, "program", 7) &&
				       (req->program || req->program_raw)) ||
			       (n == 4 && !memcmp(required, "size", 4) && req->size) ||
			       (n == 6 && !memcmp(required, "handle", 6) && req->handle) ||
			       (n == 4 && !memcmp(required, "data", 4) && req->data) ||
			       (n == 6 && !memcmp(required, "region", 6) && req->region) ||
			       (n == 5 && !memcmp(required, "fault", 5) && req->fault) ||
			       (n == 5 && !memcmp(required, "steps", 5) && req->n_steps) ||
			       (n == 5 && !memcmp(required, "graph", 5) && req->graph);
		if (!present) {
			snprintf(field, sizeof(field), "%.*s", (int)n, required);
			rc = vy_err_set(err, VY_E_BAD_REQUEST, field,
				"add the field; docs/protocol.md lists the fields of each "
				"operation",
				"%s needs a nonzero field %s", ops[req->op].name, field);
		}
		required += n;
		required += *required == ' ';
	}
	bool program = req->program || req->program_raw;
	if (rc == 0 && req->op == VY_OP_DISPATCH && !program == !req->has_program_id) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "program",
			"send either the program or the program_id that compile returned",
			"dispatch needs exactly one of program and program_id");
	}
	if (rc) {
		uint64_t id = req->id;
		vy_request_finish(req);
		req->id = id;
	}
	return rc;
}

void vy_request_finish(struct vy_request *req)
{
	if (!req) {
		return;
	}
	vy_program_destroy(req->program);
	for (uint32_t i = 0; req->steps && i < req->n_steps; i++) {
		vy_program_destroy(req->steps[i].program);
	}
	vy_arena_destroy(req->arena);
	memset(req, 0, sizeof(*req));
}

/* --- writing ------------------------------------------------------------------------------- */

void vy_pack_cstr(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

void vy_request_pack_head(msgpack_packer *pk, uint64_t id, enum vy_op op, uint32_t nfields)
{
	msgpack_pack_map(pk, nfields + 2);
	vy_pack_cstr(pk, "id");
	msgpack_pack_uint64(pk, id);
	vy_pack_cstr(pk, "op");
	vy_pack_cstr(pk, vy_op_name(op));
}

static void pack_triple(msgpack_packer *pk, const char *key, const uint32_t v[3])
{
	vy_pack_cstr(pk, key);
	msgpack_pack_array(pk, 3);
	for (int i = 0; i < 3; i++) {
		msgpack_pack_uint32(pk, v[i]);
	}
}

void vy_request_config_pack(msgpack_packer *pk, const struct vy_request_config *c)
{
	uint32_t n = (uint32_t)c->has_grid + c->has_workgroup_size + (c->n_spec > 0) +
		     (c->max_loop_iterations > 0) + (c->timeout_ms > 0) + (c->label != NULL) +
		     (c->device >= 0) + (c->backend != VY_BACKEND_ANY) + c->timing;
	msgpack_pack_map(pk, n);
	if (c->has_grid) {
		pack_triple(pk, "grid", c->grid);
	}
	if (c->has_workgroup_size) {
		pack_triple(pk, "workgroup_size", c->workgroup_size);
	}
	if (c->n_spec > 0) {
		vy_pack_cstr(pk, "spec");
		msgpack_pack_map(pk, c->n_spec);
		for (uint32_t i = 0; i < c->n_spec; i++) {
			const struct vy_spec_setting *s = &c->spec[i];
			vy_pack_cstr(pk, s->name);
			switch (s->wire) {
			case VY_SPEC_WIRE_UINT:
				msgpack_pack_uint64(pk, s->u);
				break;
			case VY_SPEC_WIRE_INT:
				msgpack_pack_int64(pk, s->i);
				break;
			case VY_SPEC_WIRE_FLOAT:
				msgpack_pack_double(pk, s->f);
				break;
			case VY_SPEC_WIRE_BOOL:
				if (s->b) {
					msgpack_pack_true(pk);
				} else {
					msgpack_pack_false(pk);
				}
				break;
			}
		}
	}
	if (c->max_loop_iterations > 0) {
		vy_pack_cstr(pk, "max_loop_iterations");
		msgpack_pack_uint64(pk, c->max_loop_iterations);
	}
	if (c->timeout_ms > 0) {
		vy_pack_cstr(pk, "timeout_ms");
		msgpack_pack_uint32(pk, c->timeout_ms);
	}
	if (c->label) {
		vy_pack_cstr(pk, "label");
		vy_pack_cstr(pk, c->label);
	}
	if (c->device >= 0) {
		vy_pack_cstr(pk, "device");
		msgpack_pack_uint32(pk, (uint32_t)c->device);
	}
	if (c->backend != VY_BACKEND_ANY) {
		vy_pack_cstr(pk, "backend");
		vy_pack_cstr(pk, c->backend == VY_BACKEND_VULKAN ? "vulkan" : "reference");
	}
	if (c->timing) {
		vy_pack_cstr(pk, "timing");
		msgpack_pack_true(pk);
	}
}

void vy_response_pack_ok(msgpack_packer *pk, uint64_t id, uint32_t nfields)
{
	msgpack_pack_map(pk, nfields + 2);
	vy_pack_cstr(pk, "id");
	msgpack_pack_uint64(pk, id);
	vy_pack_cstr(pk, "ok");
	msgpack_pack_true(pk);
}

static void pack_error_fields(msgpack_packer *pk, const struct vy_err *err, uint32_t extra)
{
	char message[VY_ERR_MESSAGE_MAX + VY_ERR_FIX_MAX + 8];
	snprintf(message, sizeof(message), "%s. Fix: %s", err->message, err->fix);
	bool has_at = err->at[0] != '\0';
	msgpack_pack_map(pk, 5 + has_at + extra);
	vy_pack_cstr(pk, "code");
	vy_pack_cstr(pk, vy_err_name(err->code));
	vy_pack_cstr(pk, "num");
	msgpack_pack_int(pk, vy_err_num(err->code));
	vy_pack_cstr(pk, "message");
	vy_pack_cstr(pk, message);
	vy_pack_cstr(pk, "fix");
	vy_pack_cstr(pk, err->fix);
	vy_pack_cstr(pk, "retry");
	vy_pack_cstr(pk, vy_err_retry_name(vy_err_retry(err->code)));
	if (has_at) {
		vy_pack_cstr(pk, "at");
		vy_pack_cstr(pk, err->at);
	}
}

void vy_error_pack(msgpack_packer *pk, const struct vy_err *err)
{
	pack_error_fields(pk, err, 0);
}

void vy_response_pack_error(
	msgpack_packer *pk, uint64_t id, const struct vy_err *err, const struct vy_err_list *errors)
{
	msgpack_pack_map(pk, 3);
	vy_pack_cstr(pk, "id");
	msgpack_pack_uint64(pk, id);
	vy_pack_cstr(pk, "ok");
	msgpack_pack_false(pk);
	vy_pack_cstr(pk, "error");
	bool list = errors && errors->len > 0;
	pack_error_fields(pk, err, list);
	if (list) {
		vy_pack_cstr(pk, "errors");
		msgpack_pack_array(pk, errors->len);
		for (size_t i = 0; i < errors->len; i++) {
			vy_error_pack(pk, &errors->items[i]);
		}
	}
}

/* --- response decoding --------------------------------------------------------------------- */

static void copy_text(char *dst, size_t size, const struct vy_mp_obj *o)
{
	size_t n = o->len < size - 1 ? o->len : size - 1;
	memcpy(dst, o->data, n);
	dst[n] = '\0';
}

int vy_error_read(struct vy_mp_reader *r, struct vy_err *out, size_t *n_errors)
{
	vy_err_clear(out);
	out->code = VY_E_INTERNAL;
	if (n_errors) {
		*n_errors = 0;
	}
	struct vy_mp_obj o;
	if (vy_mp_read(r, &o) != VY_MP_OK || o.type != VY_MP_MAP) {
		return VY_E_BAD_FRAME;
	}
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj key;
		struct vy_mp_obj v;
		if (vy_mp_read(r, &key) != VY_MP_OK || key.type != VY_MP_STR) {
			return VY_E_BAD_FRAME;
		}
		const uint8_t *mark = r->p;
		if (vy_mp_read(r, &v) != VY_MP_OK) {
			return VY_E_BAD_FRAME;
		}
		if (v.type == VY_MP_STR && vy_mp_str_eq(&key, "code")) {
			char name[40];
			copy_text(name, sizeof(name), &v);
			int code = vy_err_from_name(name);
			out->code = code ? code : VY_E_INTERNAL;
		} else if (v.type == VY_MP_STR && vy_mp_str_eq(&key, "message")) {
			copy_text(out->message, sizeof(out->message), &v);
		} else if (v.type == VY_MP_STR && vy_mp_str_eq(&key, "fix")) {
			copy_text(out->fix, sizeof(out->fix), &v);
		} else if (v.type == VY_MP_STR && vy_mp_str_eq(&key, "at")) {
			copy_text(out->at, sizeof(out->at), &v);
		} else {
			if (v.type == VY_MP_ARRAY && vy_mp_str_eq(&key, "errors") && n_errors) {
				*n_errors = v.len;
			}
			r->p = mark;
			if (vy_mp_skip(r) != VY_MP_OK) {
				return VY_E_BAD_FRAME;
			}
		}
	}
	/* the wire message repeats the Fix line; keep the cause alone in `message` */
	char *fix = strstr(out->message, ". Fix: ");
	if (fix) {
		*fix = '\0';
	}
	return 0;
}

int vy_response_decode(
	const uint8_t *frame, size_t len, struct vy_response *resp, struct vy_err *err)
{
	memset(resp, 0, sizeof(*resp));
	resp->frame = frame;
	resp->len = len;
	const char *fix = "check that the peer is a vyred speaking protocol 1";
	struct vy_mp_reader r;
	vy_mp_reader_init(&r, frame, len);
	struct vy_mp_obj o;
	if (vy_mp_read(&r, &o) != VY_MP_OK || o.type != VY_MP_MAP) {
		return vy_err_set(
			err, VY_E_BAD_FRAME, NULL, fix, "the response is not a msgpack map");
	}
	bool has_id = false;
	bool has_ok = false;
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj key;
		struct vy_mp_obj v;
		if (vy_mp_read(&r, &key) != VY_MP_OK || key.type != VY_MP_STR) {
			return vy_err_set(err, VY_E_BAD_FRAME, NULL, fix, "malformed response map");
		}
		const uint8_t *mark = r.p;
		if (vy_mp_str_eq(&key, "error")) {
			if (vy_error_read(&r, &resp->error, &resp->n_errors) != 0) {
				return vy_err_set(
					err, VY_E_BAD_FRAME, NULL, fix, "malformed error object");
			}
			continue;
		}
		if (vy_mp_read(&r, &v) != VY_MP_OK) {
			return vy_err_set(err, VY_E_BAD_FRAME, NULL, fix, "malformed response map");
		}
		if (vy_mp_str_eq(&key, "id") && v.type == VY_MP_UINT) {
			resp->id = v.u;
			has_id = true;
		} else if (vy_mp_str_eq(&key, "ok") && v.type == VY_MP_BOOL) {
			resp->ok = v.b;
			has_ok = true;
		} else {
			r.p = mark;
			if (vy_mp_skip(&r) != VY_MP_OK) {
				return vy_err_set(
					err, VY_E_BAD_FRAME, NULL, fix, "malformed response map");
			}
		}
	}
	if (!has_id || !has_ok || vy_mp_offset(&r) != len) {
		return vy_err_set(err, VY_E_BAD_FRAME, NULL, fix,
			"the response lacks id or ok, or has trailing bytes");
	}
	return 0;
}

bool vy_response_field(const struct vy_response *resp, const char *key, struct vy_mp_reader *r)
{
	vy_mp_reader_init(r, resp->frame, resp->len);
	struct vy_mp_obj o;
	vy_mp_read(r, &o);
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj k;
		vy_mp_read(r, &k);
		if (vy_mp_str_eq(&k, key)) {
			return true;
		}
		vy_mp_skip(r);
	}
	return false;
}
