/*
 * Hostile programs (DESIGN.md §3, §4.3, §4.5, §7.5): endless loops, enormous grids, giant
 * allocations, deep nesting, out-of-bounds indices everywhere, workgroup memory overflow,
 * division traps, barriers in divergent flow, and programs that try to reach another client's
 * resident buffer. Each gets its own clear error (or, for out-of-bounds accesses, exactly the
 * reference backend's outputs), while a crowd of well-behaved clients on the same daemon keeps
 * getting correct results.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rel.h"

TestSuite(hostile_programs, .fini = rel_fini, .timeout = 240);

/* A short dispatch timeout keeps runaway work (and these tests) short. */
static const char base_config[] = "[limits]\ndispatch_timeout_ms = 1500\n";

/* out[gid] = the sum of i over i in [0, 0xFFFFFFFF): a loop no invocation finishes. */
static struct vy_program *endless_program(const char *name, bool nested)
{
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_expr *next = vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "acc"), vy_ir_var(p, "i"));
	struct vy_block body = vy_ir_seq(p, vy_ir_assign(p, "acc", next), NULL);
	struct vy_node *loop = vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 0xFFFFFFFFu), body);
	if (nested) {
		loop = vy_ir_loop(p, "j", vy_ir_u32(p, 0), vy_ir_u32(p, 0xFFFFFFFFu),
			vy_ir_seq(p, loop, NULL));
	}
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "acc", vy_ir_u32(p, 0)), loop,
			   vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_var(p, "acc")), NULL));
	return p;
}

Test(hostile_programs, endless_loops_trap_at_the_daemons_loop_cap)
{
	struct rel_scene s;
	rel_scene_open(
		&s, "[limits]\ndispatch_timeout_ms = 20000\nmax_loop_iterations = 20000\n", 4);
	struct vy_program *single = endless_program("endless", false);
	struct vy_program *nested = endless_program("endless-nested", true);
	struct tc_reply r;
	/* Asking for more iterations than the daemon allows changes nothing. */
	rel_dispatch_grid(&s.c, single, NULL, (uint64_t)1 << 40, &r);
	rel_expect_error(&r, VY_E_TRAP, "loop_limit");
	tc_reply_free(&r);
	rel_dispatch_grid(&s.c, nested, NULL, 0, &r);
	rel_expect_error(&r, VY_E_TRAP, "loop_limit");
	tc_reply_free(&r);
	/* A volley of them, pipelined: each is answered, each traps. */
	uint64_t first = s.c.next_id;
	for (int i = 0; i < 8; i++) {
		struct tc_msg m;
		tc_begin(&s.c, &m, VY_OP_DISPATCH, 2);
		t_pack_program(&m.pk, i % 2 ? nested : single);
		vy_pack_cstr(&m.pk, "inputs");
		msgpack_pack_array(&m.pk, 0);
		cr_assert_eq(tc_send(&s.c, &m, -1), 0);
	}
	bool seen[8] = {0};
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(tc_recv(&s.c, &r, 120000), 0);
		uint64_t k = r.r.id - first;
		cr_expect(k < 8 && !seen[k], "reply id %lu", (unsigned long)r.r.id);
		seen[k < 8 ? k : 0] = true;
		rel_expect_error(&r, VY_E_TRAP, "loop_limit");
		tc_reply_free(&r);
	}
	vy_program_destroy(single);
	vy_program_destroy(nested);
	rel_scene_close(&s);
}

Test(hostile_programs, an_endless_loop_under_the_default_cap_never_succeeds)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	struct vy_program *p = endless_program("endless-default", false);
	struct tc_reply r;
	int code = rel_dispatch_grid(&s.c, p, NULL, 0, &r);
	/* Depending on the device's speed the loop cap (1 << 24 iterations) or the timeout ends it,
	 * or, on a device whose driver ends loops itself (lavapipe after about a million
	 * iterations, docs/semantics.md §7), that limit; a success would mean a wrong answer. */
	cr_expect(code == VY_E_TRAP || code == VY_E_TIMEOUT || code == VY_E_UNSUPPORTED_FEATURE,
		"an endless loop answered %s: %s", code ? vy_err_name(code) : "ok",
		r.r.error.message);
	if (code == VY_E_TRAP) {
		rel_expect_error(&r, VY_E_TRAP, "loop_limit");
	}
	if (code == VY_E_UNSUPPORTED_FEATURE) {
		rel_expect_error(&r, VY_E_UNSUPPORTED_FEATURE, "loop passes per invocation");
	}
	tc_reply_free(&r);
	vy_program_destroy(p);
	rel_scene_close(&s);
}

/* out[gid] = 1: trivial work per invocation, so only the grid makes it big. */
static struct vy_program *store_program(const char *name)
{
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_u32(p, 1)), NULL));
	return p;
}

Test(hostile_programs, enormous_grids_are_refused_or_timed_out)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	struct vy_program *p = store_program("enormous");
	struct tc_reply r;
	static const uint32_t beyond[3] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
	rel_dispatch_grid(&s.c, p, beyond, 0, &r);
	rel_expect_error(&r, VY_E_BAD_REQUEST, "2^64");
	cr_expect_str_eq(r.r.error.at, "config.grid");
	tc_reply_free(&r);
	/* 2^24 workgroups of 64: far more than the timeout lets any device run (lavapipe takes
	 * hours). The timeout must end the dispatch for the client and on the device, which the
	 * crowd needs back: the stop word ends the parts that run and empties the rest. */
	static const uint32_t huge[3] = {16, 16, 65535};
	long t0 = rel_now_ms();
	rel_dispatch_grid(&s.c, p, huge, 0, &r);
	rel_expect_error(&r, VY_E_TIMEOUT, NULL);
	cr_expect_lt(
		rel_now_ms() - t0, 15000, "the timeout of 1500 ms took %ld ms", rel_now_ms() - t0);
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&s.c, VY_OP_STATS, &r), 0);
	uint64_t timeouts = 0;
	cr_expect(tc_row_u64(&r, "devices", "index", 0, "timeouts", &timeouts) && timeouts == 1,
		"devices[0].timeouts is %lu", (unsigned long)timeouts);
	tc_reply_free(&r);
	/* The device is free again: a small dispatch on the same connection is answered. */
	static const uint32_t one[3] = {1, 1, 1};
	rel_dispatch_grid(&s.c, p, one, 0, &r);
	cr_expect_eq(r.r.ok, true, "after the timeout: %s", r.r.ok ? "" : r.r.error.message);
	tc_reply_free(&r);
	vy_program_destroy(p);
	rel_scene_close(&s);
}

Test(hostile_programs, giant_allocations_are_refused_with_their_limit)
{
	struct rel_scene s;
	rel_scene_open(&s,
		"[limits]\ndispatch_timeout_ms = 1500\nresident_quota = 2T\nresident_total = 2T\n",
		4);
	uint64_t h = 0;
	cr_expect_eq(rel_alloc(&s.c, (uint64_t)1 << 63, NULL, &h), VY_E_QUOTA_EXCEEDED);
	/* Within the quota but beyond what one buffer of the device can be. */
	int code = rel_alloc(&s.c, (uint64_t)1 << 40, NULL, &h);
	cr_expect_eq(code, s.vulkan ? VY_E_OUT_OF_MEMORY : VY_E_BAD_REQUEST, "alloc of 1 TiB: %s",
		code ? vy_err_name(code) : "ok");
	cr_expect_eq(h, 0);

	/* An output of 4 GiB: more than max_output (and than a device binds, or a reply frame
	 * carries), refused before anything is allocated on either backend. */
	struct vy_program *p = vy_program_create("giant-output", 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 1u << 30);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_u32(p, 1)), NULL));
	static const uint32_t one[3] = {1, 1, 1};
	struct tc_reply r;
	rel_dispatch_grid(&s.c, p, one, 0, &r);
	rel_expect_error(&r, VY_E_QUOTA_EXCEEDED, "max_output");
	tc_reply_free(&r);
	vy_program_destroy(p);
	rel_scene_close(&s);
}

Test(hostile_programs, the_resident_quota_bounds_what_one_user_holds)
{
	struct rel_scene s;
	rel_scene_open(&s, "[limits]\ndispatch_timeout_ms = 1500\nresident_quota = 48M\n", 4);
	/* The crowd (same user) holds 4 x 4 KiB; the rest of the quota is the attacker's. */
	uint64_t handles[4] = {0};
	int codes[4];
	for (int i = 0; i < 4; i++) {
		codes[i] = rel_alloc(&s.c, 15u << 20, NULL, &handles[i]);
	}
	cr_expect(codes[0] == 0 && codes[1] == 0 && codes[2] == 0, "the first 45 MiB fit");
	cr_expect_eq(codes[3], VY_E_QUOTA_EXCEEDED, "the fourth 15 MiB do not: %d", codes[3]);
	cr_expect_eq(rel_free(&s.c, handles[0]), 0);
	cr_expect_eq(rel_alloc(&s.c, 15u << 20, NULL, &handles[0]), 0, "freeing gives it back");
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(rel_free(&s.c, handles[i]), 0);
	}
	rel_scene_close(&s);
}

/* A program of `depth` ifs, each inside the previous one's then-branch. */
static struct vy_program *nested_ifs(uint32_t depth)
{
	struct vy_program *p = vy_program_create("deep-ifs", 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_node *n = vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_u32(p, 1));
	for (uint32_t i = 0; i < depth; i++) {
		n = vy_ir_if(p, vy_ir_bool(p, true), vy_ir_seq(p, n, NULL), vy_ir_seq(p, NULL));
	}
	vy_program_set_entry(p, vy_ir_seq(p, n, NULL));
	return p;
}

/* out[gid] = gid + 1 + 1 + ... : an expression `depth` additions deep. */
static struct vy_program *deep_expression(uint32_t depth)
{
	struct vy_program *p = vy_program_create("deep-expr", 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_expr *e = vy_ir_gid(p, 0);
	for (uint32_t i = 0; i < depth; i++) {
		e = vy_ir_binary(p, VY_BIN_ADD, e, vy_ir_u32(p, 1));
	}
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), e), NULL));
	return p;
}

/* `n` stores in a row: a program with more nodes than the IR allows. */
static struct vy_program *many_nodes(uint32_t n)
{
	struct vy_program *p = vy_program_create("many-nodes", 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_node **nodes = malloc(n * sizeof(*nodes));
	for (uint32_t i = 0; i < n; i++) {
		nodes[i] = vy_ir_store(p, "out", vy_ir_u32(p, i & 63), vy_ir_u32(p, i));
	}
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, n));
	free(nodes);
	return p;
}

static void expect_invalid(struct tc *c, const struct vy_program *p, const char *words)
{
	struct tc_reply r;
	rel_dispatch_grid(c, p, NULL, 0, &r);
	rel_expect_error(&r, VY_E_INVALID_PROGRAM, words);
	tc_reply_free(&r);
}

Test(hostile_programs, deep_nesting_is_an_invalid_program)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	struct vy_program *p = nested_ifs(VY_IR_MAX_NESTING + 6);
	expect_invalid(&s.c, p, "nesting exceeds 64");
	vy_program_destroy(p);
	p = deep_expression(VY_IR_MAX_EXPR_DEPTH + 72);
	expect_invalid(&s.c, p, "expression nesting exceeds 128");
	vy_program_destroy(p);
	p = many_nodes(VY_IR_MAX_NODES + 1);
	expect_invalid(&s.c, p, "more than 100000 nodes");
	vy_program_destroy(p);

	/* 200,000 nested one-element arrays where a node should be, built by hand: no builder
	 * makes them, and a recursive decoder would overflow its stack on them. */
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	vy_frame_begin(&sb);
	vy_request_pack_head(&pk, 77, VY_OP_DISPATCH, 2);
	vy_pack_cstr(&pk, "inputs");
	msgpack_pack_array(&pk, 0);
	vy_pack_cstr(&pk, "program");
	msgpack_pack_map(&pk, 4);
	vy_pack_cstr(&pk, "vyre");
	msgpack_pack_uint32(&pk, 1);
	vy_pack_cstr(&pk, "workgroup_size");
	msgpack_pack_array(&pk, 3);
	for (int k = 0; k < 3; k++) {
		msgpack_pack_uint32(&pk, 1);
	}
	vy_pack_cstr(&pk, "buffers");
	msgpack_pack_array(&pk, 0);
	vy_pack_cstr(&pk, "entry");
	for (int i = 0; i < 200000; i++) {
		msgpack_pack_array(&pk, 1);
	}
	msgpack_pack_nil(&pk);
	vy_frame_end(&sb, 0);
	cr_assert_eq(tc_send_raw(&s.c, sb.data, sb.size), 0);
	msgpack_sbuffer_destroy(&sb);
	struct tc_reply r;
	cr_assert_eq(tc_recv(&s.c, &r, 60000), 0);
	cr_expect_eq(r.r.id, 77);
	rel_expect_error(&r, VY_E_INVALID_PROGRAM, NULL);
	tc_reply_free(&r);
	cr_expect_eq(t_simple(&s.c, VY_OP_PING, &r), 0, "the connection stays usable");
	tc_reply_free(&r);
	rel_scene_close(&s);
}

/*
 * Loads, stores and atomics far outside every kind of buffer: read-only, uniform, read-write,
 * write-only and workgroup, at 0xFFFFFFFF, at the length, at the length + 1 and at gid * a
 * large prime. Out-of-bounds loads read 0, stores and atomics do nothing (the atomic returns 0).
 */
static struct vy_program *oob_program(void)
{
	struct vy_program *p = vy_program_create("out-of-bounds", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 64);
	vy_program_add_buffer(p, "u", 1, VY_ACCESS_UNIFORM, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "b", 2, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 64);
	vy_program_add_buffer(p, "out", 3, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	vy_program_add_buffer(p, "sh", 4, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 64);
	static const char *const readable[] = {"a", "u", "b", "sh"};
	struct vy_node *nodes[64];
	uint32_t n = 0;
	nodes[n++] = vy_ir_let(p, "x", vy_ir_u32(p, 0));
	for (size_t k = 0; k < 4; k++) {
		const char *buf = readable[k];
		struct vy_expr *idx[4] = {
			vy_ir_u32(p, 0xFFFFFFFFu),
			vy_ir_len(p, buf),
			vy_ir_binary(p, VY_BIN_ADD, vy_ir_len(p, buf), vy_ir_u32(p, 1)),
			vy_ir_binary(p, VY_BIN_MUL, vy_ir_gid(p, 0), vy_ir_u32(p, 1000003)),
		};
		for (int i = 0; i < 4; i++) {
			struct vy_expr *sum = vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "x"),
				vy_ir_binary(p, VY_BIN_MUL, vy_ir_load(p, buf, idx[i]),
					vy_ir_u32(p, 0x9E3779B9u + (uint32_t)(k * 4 + i))));
			nodes[n++] = vy_ir_assign(p, "x", sum);
		}
	}
	static const char *const writable[] = {"b", "out", "sh"};
	for (size_t k = 0; k < 3; k++) {
		nodes[n++] =
			vy_ir_store(p, writable[k], vy_ir_u32(p, 0xFFFFFFFFu), vy_ir_u32(p, 7));
		nodes[n++] =
			vy_ir_store(p, writable[k], vy_ir_len(p, writable[k]), vy_ir_u32(p, 7));
		nodes[n++] = vy_ir_store(p, writable[k],
			vy_ir_binary(p, VY_BIN_ADD, vy_ir_gid(p, 0), vy_ir_u32(p, 64)),
			vy_ir_u32(p, 7));
	}
	struct vy_expr *old =
		vy_ir_atomic(p, VY_ATOMIC_ADD, "b", vy_ir_u32(p, 0x7FFFFFFFu), vy_ir_u32(p, 1));
	nodes[n++] = vy_ir_assign(p, "x", vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "x"), old));
	struct vy_expr *cas =
		vy_ir_atomic_cas(p, "b", vy_ir_len(p, "b"), vy_ir_u32(p, 0), vy_ir_u32(p, 5));
	nodes[n++] = vy_ir_assign(p, "x", vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "x"), cas));
	nodes[n++] = vy_ir_store(p, "out", vy_ir_gid(p, 0),
		vy_ir_binary(
			p, VY_BIN_ADD, vy_ir_var(p, "x"), vy_ir_load(p, "b", vy_ir_gid(p, 0))));
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, n));
	return p;
}

Test(hostile_programs, out_of_bounds_indices_read_zero_and_write_nothing)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	struct vy_program *p = oob_program();
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct t_inputs in;
		t_inputs_make(p, 0, seed, &in);
		struct vy_outputs want;
		cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
		struct tc_reply r;
		cr_assert_eq(t_dispatch(&s.c, p, &in, &r), 0);
		cr_expect(r.r.ok, "%s", r.r.error.message);
		cr_expect(t_outputs_equal(&r, &want),
			"out-of-bounds accesses differ from the reference");
		tc_reply_free(&r);
		vy_outputs_finish(&want);
		t_inputs_free(&in);
	}
	vy_program_destroy(p);
	rel_scene_close(&s);
}

Test(hostile_programs, workgroup_memory_beyond_the_device_is_refused)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	struct vy_program *p = vy_program_create("shared-overflow", 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	vy_program_add_buffer(p, "sh", 1, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 1u << 30);
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "sh", vy_ir_lid(p, 0), vy_ir_gid(p, 0)),
					vy_ir_store(p, "out", vy_ir_gid(p, 0),
						vy_ir_load(p, "sh", vy_ir_lid(p, 0))),
					NULL));
	struct tc_reply r;
	rel_dispatch_grid(&s.c, p, NULL, 0, &r);
	rel_expect_error(&r, VY_E_UNSUPPORTED_FEATURE, "shared memory");
	tc_reply_free(&r);
	vy_program_destroy(p);
	/* Many workgroup buffers that each fit but together do not. */
	p = vy_program_create("shared-sum", 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_node *stores[24];
	for (uint32_t i = 0; i < 24; i++) {
		char name[16];
		snprintf(name, sizeof(name), "sh%u", i);
		vy_program_add_buffer(p, name, 1 + i, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 4096);
		stores[i] = vy_ir_store(p, name, vy_ir_lid(p, 0), vy_ir_u32(p, i));
	}
	vy_program_set_entry(p, vy_ir_seqv(p, stores, 24));
	rel_dispatch_grid(&s.c, p, NULL, 0, &r);
	rel_expect_error(&r, VY_E_UNSUPPORTED_FEATURE, "shared memory");
	tc_reply_free(&r);
	vy_program_destroy(p);
	rel_scene_close(&s);
}

/* out[gid] = a[gid] <op> b[gid] on i32. */
static struct vy_program *division_program(enum vy_binop op, enum vy_type type)
{
	struct vy_program *p = vy_program_create(op == VY_BIN_DIV ? "div" : "mod", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, type, 64);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, type, 64);
	vy_program_add_buffer(p, "out", 2, VY_ACCESS_WRITE_ONLY, type, 64);
	struct vy_expr *q = vy_ir_binary(
		p, op, vy_ir_load(p, "a", vy_ir_gid(p, 0)), vy_ir_load(p, "b", vy_ir_gid(p, 0)));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), q), NULL));
	return p;
}

/* Dispatch a / b where every b is 3 except b[at] = divisor, with a[at] = dividend. */
static int divide(struct tc *c, const struct vy_program *p, int32_t dividend, int32_t divisor,
	uint32_t at, struct tc_reply *r, struct vy_outputs *want)
{
	int32_t a[64];
	int32_t b[64];
	for (int i = 0; i < 64; i++) {
		a[i] = i * 1000 - 7;
		b[i] = 3;
	}
	a[at] = dividend;
	b[at] = divisor;
	struct t_inputs in = {.n = 2};
	in.in[0] = (struct vy_bytes){(const uint8_t *)a, sizeof(a)};
	in.in[1] = (struct vy_bytes){(const uint8_t *)b, sizeof(b)};
	if (want) {
		cr_assert_eq(t_reference(p, &in, NULL, want), 0);
	}
	return rel_dispatch(c, p, 2, NULL, in.in, 0, NULL, r);
}

Test(hostile_programs, division_traps_name_their_kind_and_node)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	struct tc_reply r;
	for (int k = 0; k < 2; k++) {
		struct vy_program *p = division_program(k ? VY_BIN_MOD : VY_BIN_DIV, VY_TYPE_I32);
		divide(&s.c, p, 17, 0, 37, &r, NULL);
		rel_expect_error(&r, VY_E_TRAP, "int_div_zero");
		cr_expect(strstr(r.r.error.message, "entry[0]") != NULL, "%s", r.r.error.message);
		tc_reply_free(&r);
		divide(&s.c, p, INT32_MIN, -1, 5, &r, NULL);
		rel_expect_error(&r, VY_E_TRAP, "int_overflow_div");
		tc_reply_free(&r);
		vy_program_destroy(p);
	}
	/* On u32 a division by zero is defined (0xFFFFFFFF, remainder 0): no trap, reference
	 * outputs. */
	for (int k = 0; k < 2; k++) {
		struct vy_program *p = division_program(k ? VY_BIN_MOD : VY_BIN_DIV, VY_TYPE_U32);
		struct vy_outputs want;
		cr_expect_eq(divide(&s.c, p, 17, 0, 37, &r, &want), 0, "%s", r.r.error.message);
		cr_expect(t_outputs_equal(&r, &want));
		tc_reply_free(&r);
		vy_outputs_finish(&want);
		vy_program_destroy(p);
	}
	rel_scene_close(&s);
}

/* A program whose entry is `node` followed by out[gid] = 1, over buffers a (u32 input) and out. */
static struct vy_program *with_entry(const char *name, struct vy_node *(*make)(struct vy_program *))
{
	struct vy_program *p = vy_program_create(name, 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 64);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	vy_program_set_entry(
		p, vy_ir_seq(p, make(p), vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_u32(p, 1)),
			   NULL));
	return p;
}

static struct vy_block just_barrier(struct vy_program *p, enum vy_order order)
{
	return vy_ir_seq(p, vy_ir_barrier(p, order), NULL);
}

static struct vy_node *barrier_under_gid(struct vy_program *p)
{
	struct vy_expr *cond = vy_ir_binary(p, VY_BIN_LT, vy_ir_gid(p, 0), vy_ir_u32(p, 3));
	return vy_ir_if(p, cond, just_barrier(p, VY_ORDER_SEQ_CST), vy_ir_seq(p, NULL));
}

static struct vy_node *barrier_under_lid_loop(struct vy_program *p)
{
	return vy_ir_loop(
		p, "i", vy_ir_u32(p, 0), vy_ir_lid(p, 0), just_barrier(p, VY_ORDER_ACQ_REL));
}

static struct vy_node *barrier_under_load(struct vy_program *p)
{
	struct vy_expr *cond =
		vy_ir_binary(p, VY_BIN_EQ, vy_ir_load(p, "a", vy_ir_u32(p, 0)), vy_ir_u32(p, 1));
	return vy_ir_if(p, vy_ir_bool(p, true), vy_ir_seq(p, NULL),
		vy_ir_seq(p,
			vy_ir_if(p, cond, just_barrier(p, VY_ORDER_SEQ_CST), vy_ir_seq(p, NULL)),
			NULL));
}

static struct vy_node *grid_sync_in_a_branch(struct vy_program *p)
{
	return vy_ir_if(
		p, vy_ir_bool(p, true), just_barrier(p, VY_ORDER_GRID_SYNC), vy_ir_seq(p, NULL));
}

static struct vy_node *barrier_under_wgid(struct vy_program *p)
{
	struct vy_expr *cond = vy_ir_binary(p, VY_BIN_EQ, vy_ir_wgid(p, 0), vy_ir_u32(p, 0));
	return vy_ir_if(p, cond, just_barrier(p, VY_ORDER_SEQ_CST), vy_ir_seq(p, NULL));
}

Test(hostile_programs, barriers_in_divergent_flow_are_invalid)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	static const struct {
		const char *name;
		struct vy_node *(*make)(struct vy_program *);
		const char *at;
	} bad[] = {
		{"barrier-gid", barrier_under_gid, "entry[0].if.then[0].barrier"},
		{"barrier-lid-loop", barrier_under_lid_loop, "entry[0].loop.body[0].barrier"},
		{"barrier-load", barrier_under_load, "entry[0].if.else[0].if.then[0].barrier"},
		{"grid-sync-branch", grid_sync_in_a_branch, "entry[0].if.then[0].barrier"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vy_program *p = with_entry(bad[i].name, bad[i].make);
		struct t_inputs in;
		t_inputs_make(p, 0, 5, &in);
		struct tc_reply r;
		cr_assert_eq(t_dispatch(&s.c, p, &in, &r), 0);
		rel_expect_error(&r, VY_E_INVALID_PROGRAM, "barrier");
		cr_expect_str_eq(r.r.error.at, bad[i].at, "%s: at %s", bad[i].name, r.r.error.at);
		tc_reply_free(&r);
		t_inputs_free(&in);
		vy_program_destroy(p);
	}
	/* The control: a barrier under a condition every invocation of a workgroup shares. */
	struct vy_program *p = with_entry("barrier-wgid", barrier_under_wgid);
	struct t_inputs in;
	t_inputs_make(p, 0, 5, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	struct tc_reply r;
	cr_assert_eq(t_dispatch(&s.c, p, &in, &r), 0);
	cr_expect(r.r.ok, "a uniform barrier is valid: %s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want));
	tc_reply_free(&r);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	vy_program_destroy(p);
	rel_scene_close(&s);
}

/* out[i] = a[i + 1024 * k] for k chosen by spec "k": reads far past its own 4-element input,
 * where a neighbour's buffer could lie. */
static struct vy_program *probe_program(void)
{
	struct vy_program *p = vy_program_create("neighbour-probe", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 4096);
	struct vy_expr *reach = vy_ir_binary(
		p, VY_BIN_MUL, vy_ir_gid(p, 0), vy_ir_spec(p, "stride", VY_TYPE_U32, 1024));
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_store(p, "out", vy_ir_gid(p, 0),
				   vy_ir_load(p, "a",
					   vy_ir_binary(p, VY_BIN_ADD, reach, vy_ir_u32(p, 4)))),
			   NULL));
	return p;
}

#define SECRET_WORDS 16384u

static bool holds_secret(const uint8_t *data, size_t len)
{
	for (size_t i = 0; i + 4 <= len; i += 4) {
		uint32_t w;
		memcpy(&w, data + i, 4);
		if ((w & 0xFFFF0000u) == 0x5EC20000u) {
			return true;
		}
	}
	return false;
}

struct replay {
	const char *sock;
	uint64_t secret;
	const struct vy_program *program;
};

/* As another user: every way of naming the victim's buffer is NOT_FOUND. */
static int replay_as_other_user(void *arg)
{
	const struct replay *rp = arg;
	struct tc c;
	if (tc_connect(&c, rp->sock) != 0 || tc_hello(&c, "thief") != 0) {
		return 1;
	}
	uint8_t buf[64];
	if (rel_download(&c, rp->secret, 0, sizeof(buf), buf) != VY_E_NOT_FOUND) {
		return 2;
	}
	struct tc_reply r;
	uint64_t handles[1] = {rp->secret};
	if (rel_dispatch(&c, rp->program, 1, handles, NULL, 0, NULL, &r) != VY_E_NOT_FOUND) {
		return 3;
	}
	tc_reply_free(&r);
	tc_close(&c);
	return 0;
}

Test(hostile_programs, another_clients_resident_buffer_is_out_of_reach)
{
	struct rel_scene s;
	rel_scene_open(
		&s, "[daemon]\nsocket_mode = 0666\n[limits]\ndispatch_timeout_ms = 1500\n", 4);
	struct tc victim;
	tc_open(&victim, s.d.sock, "victim");
	uint32_t *secret = malloc(SECRET_WORDS * 4);
	for (uint32_t i = 0; i < SECRET_WORDS; i++) {
		secret[i] = 0x5EC20000u | (i & 0xFFFF);
	}
	uint64_t vh = 0;
	cr_assert_eq(rel_alloc(&victim, SECRET_WORDS * 4, NULL, &vh), 0);
	cr_assert_eq(rel_upload(&victim, vh, 0, secret, SECRET_WORDS * 4), 0);
	/* A freed buffer full of the secret, whose memory a pool could hand out again. */
	uint64_t freed = 0;
	cr_assert_eq(rel_alloc(&victim, SECRET_WORDS * 4, NULL, &freed), 0);
	cr_assert_eq(rel_upload(&victim, freed, 0, secret, SECRET_WORDS * 4), 0);
	cr_assert_eq(rel_free(&victim, freed), 0);

	struct vy_program *p = probe_program();
	struct tc_reply r;
	/* Naming the victim's handle, as an input or as an output target. */
	uint64_t handles[1] = {vh};
	rel_dispatch(&s.c, p, 1, handles, NULL, 0, NULL, &r);
	rel_expect_error(&r, VY_E_NOT_FOUND, NULL);
	cr_expect_str_eq(r.r.error.at, "inputs[0].resident");
	tc_reply_free(&r);
	uint32_t mine[4] = {1, 2, 3, 4};
	struct vy_bytes bytes[1] = {{(const uint8_t *)mine, sizeof(mine)}};
	uint64_t targets[1] = {vh};
	rel_dispatch(&s.c, p, 1, NULL, bytes, 1, targets, &r);
	rel_expect_error(&r, VY_E_NOT_FOUND, NULL);
	tc_reply_free(&r);
	uint8_t peek[64];
	cr_expect_eq(rel_download(&s.c, vh, 0, sizeof(peek), peek), VY_E_NOT_FOUND);
	cr_expect_eq(rel_upload(&s.c, vh, 0, mine, sizeof(mine)), VY_E_NOT_FOUND);
	cr_expect_eq(rel_free(&s.c, vh), VY_E_NOT_FOUND);

	/* Reaching past its own small buffers, resident or not, reads zeros, never the secret. */
	uint64_t own = 0;
	cr_assert_eq(rel_alloc(&s.c, sizeof(mine), NULL, &own), 0);
	cr_assert_eq(rel_upload(&s.c, own, 0, mine, sizeof(mine)), 0);
	uint64_t own_handles[1] = {own};
	for (int resident = 0; resident < 2; resident++) {
		cr_assert_eq(
			rel_dispatch(&s.c, p, 1, resident ? own_handles : NULL, bytes, 0, NULL, &r),
			0, "%s", r.r.error.message);
		const uint8_t *data[1];
		size_t lens[1];
		bool nil[1];
		cr_assert_eq(tc_outputs(&r, data, lens, nil, 1), 1);
		cr_expect(!holds_secret(data[0], lens[0]), "the output holds the victim's words");
		size_t nonzero = 0;
		for (size_t i = 0; i < lens[0]; i++) {
			nonzero += data[0][i] != 0;
		}
		cr_expect_eq(nonzero, 0, "out-of-bounds loads read %zu non-zero bytes", nonzero);
		tc_reply_free(&r);
	}
	/* A fresh buffer and a fresh output hold zeros, not what the last owner left. */
	uint64_t fresh = 0;
	cr_assert_eq(rel_alloc(&s.c, SECRET_WORDS * 4, NULL, &fresh), 0);
	uint32_t *back = malloc(SECRET_WORDS * 4);
	cr_assert_eq(rel_download(&s.c, fresh, 0, SECRET_WORDS * 4, back), 0);
	cr_expect(!holds_secret((const uint8_t *)back, SECRET_WORDS * 4),
		"a new buffer holds another client's bytes");
	cr_expect_eq(rel_free(&s.c, fresh), 0);
	cr_expect_eq(rel_free(&s.c, own), 0);

	struct replay rp = {s.d.sock, vh, p};
	int rc = rel_as_nobody(replay_as_other_user, &rp);
	cr_expect_eq(rc, 0, "another user reached the victim's buffer (check %d)", rc);

	/* The victim's bytes are untouched. */
	cr_assert_eq(rel_download(&victim, vh, 0, SECRET_WORDS * 4, back), 0);
	cr_expect_eq(memcmp(back, secret, SECRET_WORDS * 4), 0);
	cr_expect_eq(rel_free(&victim, vh), 0);
	free(back);
	free(secret);
	vy_program_destroy(p);
	tc_close(&victim);
	rel_scene_close(&s);
}

static void pack_shm_input(msgpack_packer *pk, uint64_t region, uint64_t offset, uint64_t len)
{
	msgpack_pack_map(pk, 1);
	vy_pack_cstr(pk, "shm");
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, region);
	msgpack_pack_uint64(pk, offset);
	msgpack_pack_uint64(pk, len);
}

static int shm_dispatch(struct tc *c, const struct vy_program *p, uint64_t region, uint64_t offset,
	uint64_t len, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DISPATCH, 3);
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 1);
	pack_shm_input(&m.pk, region, offset, len);
	/* A stride of 1: invocation i loads element i + 4, just past the input's end and on
	 * through the rest of the region. */
	vy_pack_cstr(&m.pk, "config");
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, "spec");
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, "stride");
	msgpack_pack_uint32(&m.pk, 1);
	memset(r, 0, sizeof(*r));
	cr_assert_eq(tc_call(c, &m, r), 0);
	return tc_code(r);
}

Test(hostile_programs, shared_memory_ranges_stay_inside_their_region)
{
	struct rel_scene s;
	rel_scene_open(&s, base_config, 4);
	/* A region of 4 KiB whose second half holds a pattern the program must not reach. */
	int fd = memfd_create("rel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	uint32_t words[1024];
	for (uint32_t i = 0; i < 1024; i++) {
		words[i] = i < 512 ? i : 0x5EC20000u | i;
	}
	cr_assert_eq(pwrite(fd, words, sizeof(words), 0), (ssize_t)sizeof(words));
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	struct tc_msg m;
	tc_begin(&s.c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, 4096);
	cr_assert_eq(tc_send(&s.c, &m, fd), 0);
	close(fd);
	struct tc_reply r;
	cr_assert_eq(tc_recv(&s.c, &r, 30000), 0);
	uint64_t region = 0;
	cr_assert(r.r.ok && tc_u64(&r, "region", &region), "%s", r.r.error.message);
	tc_reply_free(&r);
	struct vy_program *p = probe_program();
	/* Ranges past the end, including ones whose offset + length wraps around 2^64. */
	static const uint64_t ranges[][2] = {
		{0, 4100}, {4096, 4}, {4092, 8}, {UINT64_MAX - 7, 16}, {8, UINT64_MAX}};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		shm_dispatch(&s.c, p, region, ranges[i][0], ranges[i][1], &r);
		rel_expect_error(&r, VY_E_BAD_REQUEST, "outside region");
		tc_reply_free(&r);
	}
	/* The first half as the input: loads past it read zeros, never the second half. */
	cr_assert_eq(shm_dispatch(&s.c, p, region, 0, 2048, &r), 0, "%s", r.r.error.message);
	const uint8_t *data[1];
	size_t lens[1];
	bool nil[1];
	cr_assert_eq(tc_outputs(&r, data, lens, nil, 1), 1);
	cr_expect(!holds_secret(data[0], lens[0]), "a load reached past the input's range");
	uint32_t first;
	memcpy(&first, data[0], 4);
	cr_expect_eq(first, 4, "invocation 0 reads element 4 of the input");
	tc_reply_free(&r);
	vy_program_destroy(p);
	rel_scene_close(&s);
}
