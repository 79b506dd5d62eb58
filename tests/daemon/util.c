/* Helpers of the end-to-end tests (util.h). */
#include "util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "reference/reference.h"
#include "spec.h"

void t_unique(char *buf, size_t size, const char *prefix)
{
	static unsigned counter;
	unsigned r = (unsigned)rand();
	snprintf(buf, size, "%s-%d-%u-%u", prefix, (int)getpid(), ++counter, r % 100000);
}

struct vy_program *t_slow_program(const char *name)
{
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 256);
	/* A nonlinear recurrence: no compiler can fold the loop into a closed form. */
	struct vy_expr *x = vy_ir_binary(p, VY_BIN_BIT_XOR, vy_ir_var(p, "acc"), vy_ir_var(p, "i"));
	struct vy_expr *mixed = vy_ir_binary(p, VY_BIN_MUL, x, vy_ir_u32(p, 2654435761u));
	struct vy_expr *next = vy_ir_binary(p, VY_BIN_ADD, mixed, vy_ir_u32(p, 1013904223u));
	struct vy_block body = vy_ir_seq(p, vy_ir_assign(p, "acc", next), NULL);
	struct vy_expr *n = vy_ir_spec(p, "n", VY_TYPE_U32, 1000);
	struct vy_node *init = vy_ir_let(p, "acc", vy_ir_gid(p, 0));
	struct vy_node *loop = vy_ir_loop(p, "i", vy_ir_u32(p, 0), n, body);
	struct vy_node *store = vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_var(p, "acc"));
	vy_program_set_entry(p, vy_ir_seq(p, init, loop, store, NULL));
	return p;
}

struct vy_program *t_trap_program(const char *name)
{
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_I32, 64);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_I32, 64);
	struct vy_expr *a = vy_ir_load(p, "a", vy_ir_gid(p, 0));
	struct vy_expr *q = vy_ir_binary(p, VY_BIN_DIV, a, vy_ir_i32(p, 0));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), q), NULL));
	return p;
}

struct vy_program *t_loop_program(const char *name)
{
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_expr *next = vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "acc"), vy_ir_u32(p, 1));
	struct vy_block body = vy_ir_seq(p, vy_ir_assign(p, "acc", next), NULL);
	struct vy_node *init = vy_ir_let(p, "acc", vy_ir_u32(p, 0));
	struct vy_node *loop = vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 100), body);
	struct vy_node *store = vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_var(p, "acc"));
	vy_program_set_entry(p, vy_ir_seq(p, init, loop, store, NULL));
	return p;
}

struct vy_program *t_invalid_program(void)
{
	struct vy_program *p = vy_program_create("invalid", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 64);
	struct vy_node *store = vy_ir_store(p, "a", vy_ir_gid(p, 0), vy_ir_u32(p, 1));
	struct vy_node *let = vy_ir_let(p, "x", vy_ir_var(p, "nope"));
	vy_program_set_entry(p, vy_ir_seq(p, store, let, NULL));
	return p;
}

static bool on_vulkan(struct tc *c)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_STATS, 0);
	struct tc_reply r;
	cr_assert_eq(tc_call(c, &m, &r), 0);
	struct vy_mp_reader rd;
	bool vulkan = false;
	if (tc_field(&r, "devices", &rd)) {
		/* The first device's map starts with index, then backend. */
		struct vy_mp_obj o;
		for (int i = 0; i < 6 && vy_mp_read(&rd, &o) == VY_MP_OK; i++) {
			vulkan = vulkan || (o.type == VY_MP_STR && vy_mp_str_eq(&o, "vulkan"));
		}
	}
	tc_reply_free(&r);
	return vulkan;
}

void t_pack_slow(struct tc *c, struct tc_msg *m, const struct vy_program *p, struct t_slow slow,
	int device, uint32_t timeout_ms)
{
	tc_begin(c, m, VY_OP_DISPATCH, 3);
	t_pack_program(&m->pk, p);
	vy_pack_cstr(&m->pk, "inputs");
	msgpack_pack_array(&m->pk, 0);
	vy_pack_cstr(&m->pk, "config");
	msgpack_pack_map(&m->pk, 2 + (device >= 0) + (timeout_ms > 0));
	vy_pack_cstr(&m->pk, "spec");
	msgpack_pack_map(&m->pk, 1);
	vy_pack_cstr(&m->pk, "n");
	msgpack_pack_uint32(&m->pk, slow.n);
	vy_pack_cstr(&m->pk, "grid");
	msgpack_pack_array(&m->pk, 3);
	msgpack_pack_uint32(&m->pk, slow.grid);
	msgpack_pack_uint32(&m->pk, 1);
	msgpack_pack_uint32(&m->pk, 1);
	if (device >= 0) {
		vy_pack_cstr(&m->pk, "device");
		msgpack_pack_uint32(&m->pk, (uint32_t)device);
	}
	if (timeout_ms > 0) {
		vy_pack_cstr(&m->pk, "timeout_ms");
		msgpack_pack_uint32(&m->pk, timeout_ms);
	}
}

static long wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct t_slow t_slow_calibrate(
	struct tc *c, const struct vy_program *p, int device, uint32_t target_ms)
{
	/* The loop count is a spec constant (one pipeline per value), so it stays fixed and the
	 * grid, which is not part of the pipeline, scales the work: extra invocations store out
	 * of bounds, which does nothing. */
	/* On Vulkan the count stays below 65,535, the loop passes that lavapipe allows one
	 * invocation (docs/semantics.md §7). */
	struct t_slow slow = {on_vulkan(c) ? 60000u : 15000u, 1};
	struct tc_msg m;
	struct tc_reply r;
	t_pack_slow(c, &m, p, slow, device, 0);
	cr_assert_eq(tc_call(c, &m, &r), 0);
	cr_assert(r.r.ok, "%s", r.r.error.message);
	tc_reply_free(&r);
	slow.grid = 4;
	long t0 = wall_ms();
	t_pack_slow(c, &m, p, slow, device, 0);
	cr_assert_eq(tc_call(c, &m, &r), 0);
	cr_assert(r.r.ok, "%s", r.r.error.message);
	tc_reply_free(&r);
	long took = wall_ms() - t0;
	long grid = took > 0 ? 4 * (long)target_ms / took : 4096;
	slow.grid = grid < 4 ? 4 : grid > 65535 ? 65535 : (uint32_t)grid;
	return slow;
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void t_inputs_make(const struct vy_program *p, uint32_t n, uint64_t seed, struct t_inputs *out)
{
	memset(out, 0, sizeof(*out));
	struct vy_binding_plan *plan = NULL;
	cr_assert_eq(vy_binding_plan_build(p, &plan, NULL), 0);
	uint64_t s = seed * 2654435761u + 88172645463325252ull;
	for (uint32_t i = 0; i < plan->n_inputs; i++) {
		const struct vy_buffer *b = &p->buffers[plan->input_indices[i]];
		uint32_t count = b->count ? b->count : n;
		uint8_t *data = malloc((size_t)count * 4 + 1);
		for (uint32_t k = 0; k < count; k++) {
			uint32_t v = (uint32_t)next_rand(&s);
			if (b->type == VY_TYPE_F32) {
				float f = (float)((int32_t)(v % 20001) - 10000) / 1000.0f;
				memcpy(&v, &f, 4);
			} else if (b->type == VY_TYPE_BOOL) {
				v &= 1;
			} else if (b->access == VY_ACCESS_UNIFORM) {
				v %= 8;
			}
			memcpy(data + (size_t)k * 4, &v, 4);
		}
		out->in[i] = (struct vy_bytes){data, (size_t)count * 4};
	}
	out->n = plan->n_inputs;
	vy_binding_plan_destroy(plan);
}

void t_inputs_free(struct t_inputs *in)
{
	for (size_t i = 0; i < in->n; i++) {
		free((void *)in->in[i].data);
	}
	in->n = 0;
}

int t_reference(const struct vy_program *p, const struct t_inputs *in,
	const struct vy_spec_map *spec, struct vy_outputs *out)
{
	static __thread struct vy_backend *ref;
	if (!ref) {
		cr_assert_eq(vy_reference_backend_create(NULL, &ref, NULL), 0);
	}
	struct vy_dispatch_config cfg = {.spec = spec};
	vy_outputs_init(out);
	struct vy_err err = {0};
	int rc = vy_backend_dispatch(ref, p, in->in, in->n, &cfg, out, &err);
	if (rc) {
		cr_log_warn("reference dispatch of %s: %s", p->name ? p->name : "?", err.message);
	}
	return rc;
}

void t_pack_program(msgpack_packer *pk, const struct vy_program *p)
{
	vy_pack_cstr(pk, "program");
	vy_program_pack(p, pk);
}

void t_pack_inputs(msgpack_packer *pk, const struct t_inputs *in)
{
	vy_pack_cstr(pk, "inputs");
	msgpack_pack_array(pk, in->n);
	for (size_t i = 0; i < in->n; i++) {
		msgpack_pack_bin(pk, in->in[i].len);
		msgpack_pack_bin_body(pk, in->in[i].data, in->in[i].len);
	}
}

int t_dispatch(
	struct tc *c, const struct vy_program *p, const struct t_inputs *in, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DISPATCH, 2);
	t_pack_program(&m.pk, p);
	t_pack_inputs(&m.pk, in);
	return tc_call(c, &m, r);
}

bool t_outputs_equal(const struct tc_reply *r, const struct vy_outputs *want)
{
	const uint8_t *data[VY_IR_MAX_BUFFERS];
	size_t lens[VY_IR_MAX_BUFFERS];
	bool nil[VY_IR_MAX_BUFFERS];
	int n = tc_outputs(r, data, lens, nil, VY_IR_MAX_BUFFERS);
	if (n != (int)want->len) {
		cr_log_error("%d outputs, expected %zu", n, want->len);
		return false;
	}
	for (int i = 0; i < n; i++) {
		if (lens[i] != want->items[i].len ||
			(lens[i] && memcmp(data[i], want->items[i].data, lens[i]) != 0)) {
			cr_log_error(
				"output %d differs from the reference (%zu bytes, expected %zu)", i,
				lens[i], want->items[i].len);
			return false;
		}
	}
	return true;
}

uint64_t t_stat(struct tc *c, const char *path)
{
	struct tc_reply r;
	cr_assert_eq(t_simple(c, VY_OP_STATS, &r), 0);
	uint64_t v = 0;
	cr_assert(tc_u64(&r, path, &v), "stats has no %s", path);
	tc_reply_free(&r);
	return v;
}

int t_simple(struct tc *c, enum vy_op op, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, op, 0);
	int rc = tc_call(c, &m, r);
	cr_assert_eq(rc, 0, "%s: %d", vy_op_name(op), rc);
	return tc_code(r);
}

void t_start(struct vyd *d, const char *config)
{
	struct vyd_opts o = {.config = config};
	cr_assert_eq(vyd_start(d, &o), 0, "vyred did not start");
}

void t_stop(struct vyd *d)
{
	int status = vyd_stop(d);
	if (status != 0) {
		vyd_dump_log(d);
	}
	cr_expect_eq(status, 0, "vyred exited with status %d", status);
	vyd_cleanup(d);
}

bool t_client_stat(const struct tc_reply *stats, uint64_t client_id, const char *key, uint64_t *out)
{
	return tc_row_u64(stats, "clients.list", "id", client_id, key, out);
}

uint64_t t_client_id(struct tc *c)
{
	struct tc_reply r;
	cr_assert_eq(t_simple(c, VY_OP_CLIENTS, &r), 0);
	uint64_t id = 0;
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	cr_assert(tc_field(&r, "clients", &rd));
	vy_mp_read(&rd, &o);
	for (uint32_t i = 0; i < o.len && !id; i++) {
		struct vy_mp_obj row;
		vy_mp_read(&rd, &row);
		uint64_t this_id = 0;
		bool self = false;
		for (uint32_t k = 0; k < row.len; k++) {
			struct vy_mp_obj key;
			struct vy_mp_obj v;
			vy_mp_read(&rd, &key);
			const uint8_t *mark = rd.p;
			vy_mp_read(&rd, &v);
			if (vy_mp_str_eq(&key, "id")) {
				this_id = v.u;
			} else if (vy_mp_str_eq(&key, "self")) {
				self = v.b;
			} else {
				rd.p = mark;
				vy_mp_skip(&rd);
			}
		}
		if (self) {
			id = this_id;
		}
	}
	tc_reply_free(&r);
	cr_assert(id, "no row for this connection in the clients table");
	return id;
}
