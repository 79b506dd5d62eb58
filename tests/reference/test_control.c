/*
 * Control flow, traps and limits of the reference interpreter (DESIGN.md §4.5, §5): trap sites
 * and their node paths, the loop limit, a divergent barrier, return, ids and launch geometry,
 * spec values, grid_sync segments over shared memory, timeouts, and the math-library lowering seen
 * from the interpreter.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "interp.h"
#include "reference.h"
#include "spec.h"
#include "util.h"
#include "validate.h"

static double seconds_since(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* The lowest-numbered trapping node wins, even when it traps in a later workgroup. */
Test(reference_control, trap_reports_the_lowest_numbered_node)
{
	struct vy_program *p = vy_program_create("traps", 64, 1, 1);
	BUF("out", 0, WRITE_ONLY, I32, 256);
	vy_program_set_entry(p,
		SEQ(LET("i", GID(0)),
			IF(BIN(EQ, VAR("i"), U32(200)),
				SEQ(LET("z",
					BIN(DIV, I32(1), CAST(I32, BIN(SUB, VAR("i"), U32(200)))))),
				EMPTY),
			IF(BIN(EQ, VAR("i"), U32(3)),
				SEQ(LET("w",
					BIN(MOD, I32(1), CAST(I32, BIN(SUB, VAR("i"), U32(3)))))),
				EMPTY),
			STORE("out", VAR("i"), CAST(I32, VAR("i")))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	ref_expect_error(&r, VY_E_TRAP, "entry[1].if.then[0].let");
	cr_expect(strstr(r.err.message, "int_div_zero"), "%s", r.err.message);
	cr_expect(strstr(r.err.message, "workgroup 3, local invocation 8"), "%s", r.err.message);
	cr_expect(strstr(r.err.message, "2 invocation(s) trapped"), "%s", r.err.message);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* At one node, int_div_zero comes before int_overflow_div whatever the lanes' order. */
Test(reference_control, trap_kinds_break_ties_at_one_node)
{
	struct vy_program *p = vy_program_create("kinds", 4, 1, 1);
	BUF("d", 0, READ_ONLY, I32, 4);
	BUF("out", 1, WRITE_ONLY, I32, 4);
	vy_program_set_entry(
		p, SEQ(STORE("out", GID(0), BIN(DIV, I32(INT32_MIN), LOAD("d", GID(0))))));
	uint32_t d[] = {2, 0xFFFFFFFFu, 0, 1};
	struct vy_bytes in = ref_in(d, 4);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	ref_expect_error(&r, VY_E_TRAP, "entry[0].store");
	cr_expect(strstr(r.err.message, "trap int_div_zero"), "%s", r.err.message);
	cr_expect(strstr(r.err.message, "local invocation 2"), "%s", r.err.message);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* A trap ends only its invocation: the others' stores happen (seen through a resident run). */
Test(reference_control, a_trap_ends_only_its_invocation)
{
	struct vy_backend *b = ref_backend(0);
	struct vy_program *p = vy_program_create("partial", 4, 1, 1);
	BUF("d", 0, READ_WRITE, I32, 4);
	vy_program_set_entry(p,
		SEQ(LET("q", BIN(DIV, I32(12), LOAD("d", GID(0)))), STORE("d", GID(0), VAR("q"))));
	struct vy_err err = {0};
	struct vy_resource res;
	cr_assert_eq(vy_backend_resident_alloc(b, 16, &res, &err), 0);
	int32_t d[] = {3, 0, -4, 6};
	cr_assert_eq(vy_backend_resident_upload(b, &res, 0, ref_in((uint32_t *)d, 4), &err), 0);
	struct vy_timing t;
	cr_assert_eq(vy_backend_resident_dispatch(b, p, &res, 1, NULL, &t, &err), VY_E_TRAP);
	cr_expect_str_eq(err.at, "entry[0].let");
	int32_t got[4];
	cr_assert_eq(vy_backend_resident_download(b, &res, 0, (uint8_t *)got, 16, &err), 0);
	cr_expect_eq(got[0], 4);
	cr_expect_eq(got[1], 0, "the trapping invocation stores nothing");
	cr_expect_eq(got[2], -3);
	cr_expect_eq(got[3], 2);
	vy_program_destroy(p);
	vy_backend_destroy(b);
}

static struct ref_result run_loops(struct vy_program *p, uint64_t max)
{
	struct vy_dispatch_config cfg = {.max_loop_iterations = max};
	return ref_dispatch(p, NULL, 0, &cfg);
}

Test(reference_control, endless_loop_ends_with_loop_limit)
{
	struct vy_program *p = vy_program_create("endless", 64, 1, 1);
	BUF("out", 0, READ_WRITE, U32, 1)->output = true;
	vy_program_set_entry(p, SEQ(LOOP("i", U32(0), U32(0xFFFFFFFFu),
					SEQ(LET("h", ATOMIC(ADD, "out", U32(0), U32(1)))))));
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	struct ref_result r = run_loops(p, 1000);
	ref_expect_error(&r, VY_E_TRAP, "entry[0].loop");
	cr_expect(strstr(r.err.message, "loop_limit"), "%s", r.err.message);
	cr_expect(strstr(r.err.message, "64 invocation(s) trapped"), "%s", r.err.message);
	cr_expect(strstr(r.err.fix, "max_loop_iterations (now 1000)"), "%s", r.err.fix);
	cr_expect_lt(seconds_since(&start), 1.0);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_control, nested_endless_loops_end_with_loop_limit)
{
	struct vy_program *p = vy_program_create("nested", 32, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 32);
	vy_program_set_entry(
		p, SEQ(LOOP("i", U32(0), U32(0xFFFFFFFFu),
			   SEQ(LOOP("j", U32(0), U32(0xFFFFFFFFu),
				   SEQ(STORE("out", GID(0), BIN(ADD, VAR("i"), VAR("j")))))))));
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	struct ref_result r = run_loops(p, 5000);
	ref_expect_error(&r, VY_E_TRAP, "entry[0].loop.body[0].loop");
	cr_expect(strstr(r.err.message, "loop_limit"), "%s", r.err.message);
	cr_expect_lt(seconds_since(&start), 1.0);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* The limit counts every iteration of the invocation, over all of its loops. */
Test(reference_control, loop_limit_counts_all_loops_of_an_invocation)
{
	struct vy_program *p = vy_program_create("two_loops", 1, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 1);
	vy_program_set_entry(p,
		SEQ(LET("n", U32(0)),
			LOOP("i", U32(0), U32(600), SEQ(ASSIGN("n", BIN(ADD, VAR("n"), U32(1))))),
			LOOP("j", U32(0), U32(400), SEQ(ASSIGN("n", BIN(ADD, VAR("n"), U32(1))))),
			STORE("out", U32(0), VAR("n"))));
	struct ref_result r = run_loops(p, 1000);
	ref_expect(&r, (uint32_t[]){1000}, 1, "exactly the limit runs");
	ref_result_finish(&r);
	r = run_loops(p, 999);
	ref_expect_error(&r, VY_E_TRAP, "entry[2].loop");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_control, timeout_ends_a_long_dispatch)
{
	struct vy_program *p = vy_program_create("slow", 64, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 64);
	vy_program_set_entry(
		p, SEQ(LOOP("i", U32(0), U32(0xFFFFFFFFu), SEQ(STORE("out", GID(0), VAR("i"))))));
	struct vy_dispatch_config cfg = {.max_loop_iterations = UINT64_MAX, .timeout_ms = 50};
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	struct ref_result r = ref_dispatch(p, NULL, 0, &cfg);
	ref_expect_error(&r, VY_E_TIMEOUT, NULL);
	cr_expect_lt(seconds_since(&start), 2.0);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* if (lid < 4) barrier: validation refuses it; run anyway, it fails instead of hanging. */
Test(reference_control, divergent_barrier_fails_the_dispatch)
{
	struct vy_program *p = vy_program_create("divergent", 16, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 16);
	vy_program_set_entry(p, SEQ(STORE("out", GID(0), U32(1)),
					IF(BIN(LT, LID(0), U32(4)), SEQ(BARRIER()), EMPTY)));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	ref_expect_error(&r, VY_E_INVALID_PROGRAM, "entry[1].if.then[0].barrier");
	ref_result_finish(&r);

	/* The refused program still gets its expression types, which the interpreter needs. */
	vy_validate(p, NULL, NULL);
	struct vy_backend *b = ref_backend(0);
	memset(&r, 0, sizeof(r));
	r.rc = vy__reference_dispatch_unchecked(b, p, NULL, 0, NULL, &r.out, &r.err);
	ref_expect_error(&r, VY_E_DISPATCH_FAILED, "entry[1].if.then[0].barrier");
	cr_expect(strstr(r.err.message, "4 of the 16 live invocations"), "%s", r.err.message);
	cr_expect(strstr(r.err.fix, "uniform control flow"), "%s", r.err.fix);
	ref_result_finish(&r);
	vy_backend_destroy(b);
	vy_program_destroy(p);
}

/*
 * A return under a non-uniform condition before a barrier: validation refuses it, and when it
 * runs anyway the returned invocation takes no part in the barrier, which the others pass.
 */
Test(reference_control, returned_invocations_take_no_part_in_barriers)
{
	struct vy_program *p = vy_program_create("returned", 8, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 8);
	vy_program_set_entry(p, SEQ(IF(BIN(EQ, LID(0), U32(5)), SEQ(RETURN()), EMPTY), BARRIER(),
					STORE("out", GID(0), U32(1))));
	cr_assert_eq(vy_validate(p, NULL, NULL), VY_E_INVALID_PROGRAM);
	struct vy_backend *b = ref_backend(0);
	struct ref_result r;
	memset(&r, 0, sizeof(r));
	r.rc = vy__reference_dispatch_unchecked(b, p, NULL, 0, NULL, &r.out, &r.err);
	ref_expect(&r, (uint32_t[]){1, 1, 1, 1, 1, 0, 1, 1}, 8, "stores after the barrier");
	ref_result_finish(&r);
	vy_backend_destroy(b);
	vy_program_destroy(p);
}

/* Barriers in uniform flow with lanes that all returned, or none: no error. */
Test(reference_control, uniform_returns_and_barriers_run)
{
	struct vy_program *p = vy_program_create("uniform", 8, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 16);
	vy_program_set_entry(p, SEQ(IF(BIN(EQ, WGID(0), U32(1)), SEQ(RETURN()), EMPTY), BARRIER(),
					STORE("out", GID(0), BIN(ADD, GID(0), U32(1))), BARRIER()));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	for (uint32_t k = 0; k < 16; k++) {
		cr_expect_eq(ref_word(&r, 0, k), k < 8 ? k + 1 : 0);
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_control, return_ends_the_invocation_inside_a_loop)
{
	struct vy_program *p = vy_program_create("search", 8, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 8);
	vy_program_set_entry(p,
		SEQ(STORE("out", GID(0), U32(99)),
			LOOP("k", U32(0), U32(100),
				SEQ(IF(BIN(EQ, VAR("k"), GID(0)),
					    SEQ(STORE("out", GID(0), VAR("k")), RETURN()), EMPTY),
					STORE("out", GID(0), U32(1000)))),
			STORE("out", GID(0), U32(5000))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	for (uint32_t k = 0; k < 8; k++) {
		cr_expect_eq(ref_word(&r, 0, k), k);
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_control, if_else_and_assign_follow_each_lane)
{
	struct vy_program *p = vy_program_create("branches", 8, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 8);
	vy_program_set_entry(p,
		SEQ(LET("x", GID(0)),
			IF(BIN(BIT_AND, GID(0), U32(1)),
				SEQ(ASSIGN("x", BIN(MUL, VAR("x"), U32(10)))),
				SEQ(ASSIGN("x", BIN(ADD, BIN(MUL, U32(2), VAR("x")), VAR("x"))))),
			vy_ir_block(p,
				SEQ(LET("y", U32(1)), ASSIGN("x", BIN(ADD, VAR("x"), VAR("y"))))),
			vy_ir_region(p, "gen",
				SEQ(LET("y", U32(2)), ASSIGN("x", BIN(ADD, VAR("x"), VAR("y"))))),
			STORE("out", GID(0),
				vy_ir_select(p, BIN(LT, VAR("x"), U32(20)), VAR("x"), U32(0)))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	ref_expect(&r, (uint32_t[]){3, 13, 9, 0, 15, 0, 0, 0}, 8, "per-lane branches");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* An i32 condition is true when nonzero, in an if and in a select: lanes 0..7 test 3 - gid. */
Test(reference_control, i32_conditions_are_true_when_nonzero)
{
	struct vy_program *p = vy_program_create("i32_cond", 8, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 8);
	struct vy_expr *d = BIN(SUB, I32(3), CAST(I32, GID(0)));
	vy_program_set_entry(
		p, SEQ(LET("d", d), LET("x", vy_ir_select(p, VAR("d"), U32(10), U32(20))),
			   IF(VAR("d"), SEQ(ASSIGN("x", BIN(ADD, VAR("x"), U32(1)))), EMPTY),
			   STORE("out", GID(0), VAR("x"))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	ref_expect(&r, (uint32_t[]){11, 11, 11, 20, 11, 11, 11, 11}, 8, "i32 conditions");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* gid = wgid * workgroup_size + lid on every axis, with an explicit 3-D grid. */
Test(reference_control, ids_follow_the_launch_geometry)
{
	struct vy_program *p = vy_program_create("ids", 4, 2, 2);
	BUF("out", 0, WRITE_ONLY, U32, 9 * 192);
	struct vy_expr *linear =
		BIN(ADD, GID(0), BIN(MUL, U32(8), BIN(ADD, GID(1), BIN(MUL, U32(6), GID(2)))));
	struct vy_node *stores[9];
	struct vy_expr *vals[9] = {
		GID(0), GID(1), GID(2), LID(0), LID(1), LID(2), WGID(0), WGID(1), WGID(2)};
	for (uint32_t k = 0; k < 9; k++) {
		stores[k] = STORE("out", BIN(ADD, BIN(MUL, VAR("at"), U32(9)), U32(k)), vals[k]);
	}
	struct vy_node *entry[10];
	entry[0] = LET("at", linear);
	memcpy(entry + 1, stores, sizeof(stores));
	vy_program_set_entry(p, vy_ir_seqv(p, entry, 10));
	struct vy_dispatch_config cfg = {.grid = {2, 3, 2}};
	struct ref_result r = ref_dispatch(p, NULL, 0, &cfg);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	for (uint32_t z = 0; z < 4; z++) {
		for (uint32_t y = 0; y < 6; y++) {
			for (uint32_t x = 0; x < 8; x++) {
				uint32_t at = x + 8 * (y + 6 * z);
				uint32_t want[9] = {
					x, y, z, x % 4, y % 2, z % 2, x / 4, y / 2, z / 2};
				for (uint32_t k = 0; k < 9; k++) {
					cr_expect_eq(ref_word(&r, 0, at * 9 + k), want[k],
						"id %u of invocation (%u, %u, %u)", k, x, y, z);
				}
			}
		}
	}
	ref_result_finish(&r);
	r = ref_dispatch(p, NULL, 0, NULL);
	ref_expect_error(&r, VY_E_BAD_REQUEST, "config.grid");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_control, default_grid_covers_the_largest_output)
{
	struct vy_program *p = vy_program_create("grid", 64, 1, 1);
	BUF("small", 0, WRITE_ONLY, U32, 10);
	BUF("big", 1, WRITE_ONLY, U32, 130);
	vy_program_set_entry(p, SEQ(STORE("big", GID(0), BIN(ADD, GID(0), U32(1)))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	for (uint32_t k = 0; k < 130; k++) {
		cr_expect_eq(ref_word(&r, 1, k), k + 1);
	}
	ref_result_finish(&r);

	/* An overriding workgroup size changes the lanes, and must fit the limits. */
	struct vy_dispatch_config cfg = {.workgroup_size = {2048, 1, 1}};
	r = ref_dispatch(p, NULL, 0, &cfg);
	ref_expect_error(&r, VY_E_BAD_REQUEST, "config.workgroup_size");
	ref_result_finish(&r);
	cfg.workgroup_size[0] = 7;
	r = ref_dispatch(p, NULL, 0, &cfg);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_expect_eq(ref_word(&r, 1, 129), 130);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

static struct vy_program *spec_program(void)
{
	struct vy_program *p = vy_program_create("spec", 8, 1, 1);
	BUF("x", 0, READ_ONLY, F32, 8);
	BUF("y", 1, WRITE_ONLY, F32, 8);
	BUF("n", 2, WRITE_ONLY, U32, 8);
	struct vy_expr *scale = vy_ir_spec(p, "scale", VY_TYPE_F32, fbits(2.0f));
	struct vy_expr *reps = vy_ir_spec(p, "reps", VY_TYPE_U32, 3);
	struct vy_expr *neg = vy_ir_spec(p, "negate", VY_TYPE_BOOL, 0);
	vy_program_set_entry(
		p, SEQ(LET("v", BIN(MUL, LOAD("x", GID(0)), scale)),
			   IF(neg, SEQ(ASSIGN("v", UN(NEG, VAR("v")))), EMPTY), LET("c", U32(0)),
			   LOOP("k", U32(0), reps, SEQ(ASSIGN("c", BIN(ADD, VAR("c"), U32(1))))),
			   STORE("y", GID(0), VAR("v")), STORE("n", GID(0), VAR("c"))));
	return p;
}

Test(reference_control, spec_values_come_from_the_config_or_the_default)
{
	struct vy_program *p = spec_program();
	uint32_t x[8];
	for (uint32_t k = 0; k < 8; k++) {
		x[k] = fbits((float)k);
	}
	struct vy_bytes in = ref_in(x, 8);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_expect_eq(ref_word(&r, 0, 5), fbits(10.0f));
	cr_expect_eq(ref_word(&r, 1, 5), 3);
	ref_result_finish(&r);

	struct vy_spec_map map;
	struct vy_spec_pair pairs[] = {{"scale", vy_spec_f32(-0.5f)}, {"reps", vy_spec_u32(7)},
		{"negate", vy_spec_bool(true)}, {"unused", vy_spec_i32(1)}};
	vy_spec_map_init_pairs(&map, pairs, 4);
	struct vy_dispatch_config cfg = {.spec = &map};
	r = ref_dispatch(p, &in, 1, &cfg);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_expect_eq(ref_word(&r, 0, 5), fbits(2.5f));
	cr_expect_eq(ref_word(&r, 0, 0), fbits(0.0f), "-(0 * -0.5) is +0");
	cr_expect_eq(ref_word(&r, 1, 5), 7);
	ref_result_finish(&r);

	vy_spec_map_insert(&map, "scale", vy_spec_i32(3));
	r = ref_dispatch(p, &in, 1, &cfg);
	ref_expect_error(&r, VY_E_BAD_REQUEST, "config.spec.scale");
	cr_expect(strstr(r.err.message, "is f32, but config.spec gives i32"), "%s", r.err.message);
	ref_result_finish(&r);
	vy_spec_map_finish(&map);
	vy_program_destroy(p);
}

/* Two phases: each invocation reads, after the grid_sync, what another workgroup wrote. */
static struct vy_program *two_phase(bool wrapped)
{
	struct vy_program *p = vy_program_create("two_phase", 8, 1, 1);
	BUF("x", 0, READ_ONLY, U32, 32);
	BUF("t", 1, READ_WRITE, U32, 32);
	BUF("out", 2, WRITE_ONLY, U32, 32);
	struct vy_block top =
		SEQ(vy_ir_block(p, SEQ(STORE("t", GID(0), BIN(MUL, LOAD("x", GID(0)), U32(3))))),
			vy_ir_barrier(p, VY_ORDER_GRID_SYNC),
			vy_ir_block(p, SEQ(LET("j", BIN(MOD, BIN(ADD, GID(0), U32(9)), U32(32))),
					       STORE("out", GID(0), LOAD("t", VAR("j"))))));
	vy_program_set_entry(p, wrapped ? SEQ(vy_ir_region(p, "phases", top)) : top);
	return p;
}

Test(reference_control, grid_sync_segments_see_what_earlier_segments_wrote)
{
	uint32_t x[32];
	uint32_t t[32];
	for (uint32_t k = 0; k < 32; k++) {
		x[k] = k + 1;
		t[k] = 0;
	}
	for (int wrapped = 0; wrapped < 2; wrapped++) {
		struct vy_program *p = two_phase(wrapped);
		struct vy_bytes in[] = {ref_in(x, 32), ref_in(t, 32)};
		struct ref_result r = ref_dispatch(p, in, 2, NULL);
		cr_assert_eq(r.rc, 0, "%s", r.err.message);
		for (uint32_t k = 0; k < 32; k++) {
			cr_expect_eq(ref_word(&r, 0, k), 3 * (k + 1));
			cr_expect_eq(ref_word(&r, 1, k), 3 * ((k + 9) % 32 + 1), "out[%u]", k);
		}
		ref_result_finish(&r);

		/* The same program on resident buffers. */
		struct vy_backend *b = ref_backend(0);
		struct vy_err err = {0};
		struct vy_resource res[3];
		for (int i = 0; i < 3; i++) {
			cr_assert_eq(vy_backend_resident_alloc(b, 128, &res[i], &err), 0);
		}
		cr_assert_eq(vy_backend_resident_upload(b, &res[0], 0, in[0], &err), 0);
		struct vy_timing tm;
		cr_assert_eq(vy_backend_resident_dispatch(b, p, res, 3, NULL, &tm, &err), 0, "%s",
			err.message);
		uint32_t got[32];
		cr_assert_eq(
			vy_backend_resident_download(b, &res[2], 0, (uint8_t *)got, 128, &err), 0);
		for (uint32_t k = 0; k < 32; k++) {
			cr_expect_eq(got[k], 3 * ((k + 9) % 32 + 1), "resident out[%u]", k);
		}
		vy_backend_destroy(b);
		vy_program_destroy(p);
	}
}

Test(reference_control, grid_sync_errors_name_their_segment_and_whole_program_node)
{
	struct vy_program *p = vy_program_create("late_trap", 4, 1, 1);
	BUF("a", 0, READ_WRITE, I32, 4);
	vy_program_set_entry(p, SEQ(STORE("a", GID(0), BIN(SUB, LOAD("a", GID(0)), I32(1))),
					vy_ir_barrier(p, VY_ORDER_GRID_SYNC),
					STORE("a", GID(0), BIN(DIV, I32(100), LOAD("a", GID(0))))));
	uint32_t a[] = {1, 2, 3, 4};
	struct vy_bytes in = ref_in(a, 4);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	ref_expect_error(&r, VY_E_TRAP, "entry[2].store");
	cr_expect(strncmp(r.err.message, "grid_sync segment 1: trap int_div_zero", 38) == 0, "%s",
		r.err.message);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* A grid barrier keeps every buffer: a write_only buffer written before it is still there after. */
Test(reference_control, grid_sync_keeps_output_buffers_written_before_it)
{
	struct vy_program *p = vy_program_create("keep", 1, 1, 1);
	BUF("y", 0, WRITE_ONLY, U32, 2);
	vy_program_set_entry(
		p, SEQ(STORE("y", U32(0), U32(7)), vy_ir_barrier(p, VY_ORDER_GRID_SYNC),
			   STORE("y", U32(1), U32(9))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	ref_expect(&r, (uint32_t[]){7, 9}, 2, "y after two segments");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_control, invalid_programs_and_inputs_are_refused)
{
	struct vy_program *p = vy_program_create("bad", 8, 1, 1);
	BUF("x", 0, READ_ONLY, U32, 8);
	BUF("y", 1, WRITE_ONLY, U32, 8);
	vy_program_set_entry(p, SEQ(STORE("y", GID(0), LOAD("x", F32(1.0f)))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	ref_expect_error(&r, VY_E_INVALID_PROGRAM, NULL);
	cr_expect(strstr(r.err.at, "entry[0].store"), "%s", r.err.at);
	ref_result_finish(&r);
	vy_program_destroy(p);

	p = vy_program_create("good", 8, 1, 1);
	BUF("x", 0, READ_ONLY, U32, 8);
	BUF("y", 1, WRITE_ONLY, U32, 8);
	vy_program_set_entry(p, SEQ(STORE("y", GID(0), LOAD("x", GID(0)))));
	r = ref_dispatch(p, NULL, 0, NULL);
	ref_expect_error(&r, VY_E_BAD_REQUEST, "inputs");
	ref_result_finish(&r);
	uint32_t x[4] = {0};
	struct vy_bytes in = ref_in(x, 4);
	r = ref_dispatch(p, &in, 1, NULL);
	ref_expect_error(&r, VY_E_BAD_REQUEST, NULL);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* exp is lowered before interpretation; traps still name the nodes as written. */
Test(reference_control, lowered_programs_keep_the_written_node_paths)
{
	struct vy_program *p = vy_program_create("lowered", 4, 1, 1);
	BUF("x", 0, READ_ONLY, F32, 4);
	BUF("d", 1, READ_ONLY, I32, 4);
	BUF("y", 2, WRITE_ONLY, F32, 4);
	vy_program_set_entry(
		p, SEQ(LET("e", UN(EXP, LOAD("x", GID(0)))),
			   STORE("y", GID(0), BIN(ADD, VAR("e"), UN(EXP, LOAD("x", GID(0))))),
			   LET("q", BIN(DIV, I32(1), LOAD("d", GID(0))))));
	uint32_t x[] = {fbits(0.0f), fbits(1.0f), fbits(-1.0f), fbits(2.0f)};
	uint32_t d[] = {1, 1, 1, 1};
	struct vy_bytes in[] = {ref_in(x, 4), ref_in(d, 4)};
	struct ref_result r = ref_dispatch(p, in, 2, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	/* The lowering promises 4 ULP; exp(x) + exp(x) doubles exactly. */
	float e0 = ffrom(ref_word(&r, 0, 0)) / 2.0f;
	float e1 = ffrom(ref_word(&r, 0, 1)) / 2.0f;
	cr_expect(e0 > 0.9999995f && e0 < 1.000001f, "exp(0) = %.9g", (double)e0);
	cr_expect(e1 > 2.718279f && e1 < 2.718285f, "exp(1) = %.9g", (double)e1);
	ref_result_finish(&r);

	d[2] = 0;
	r = ref_dispatch(p, in, 2, NULL);
	ref_expect_error(&r, VY_E_TRAP, "entry[2].let");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_control, timed_dispatch_reports_wall_and_device_time)
{
	struct vy_backend *b = ref_backend(0);
	struct vy_program *p = vy_program_create("timed", 64, 1, 1);
	BUF("y", 0, WRITE_ONLY, U32, 4096);
	vy_program_set_entry(p, SEQ(STORE("y", GID(0), BIN(MUL, GID(0), GID(0)))));
	struct vy_outputs out;
	vy_outputs_init(&out);
	struct vy_timing t;
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_dispatch_timed(b, p, NULL, 0, NULL, &out, &t, &err), 0, "%s",
		err.message);
	cr_expect_gt(t.wall_ns, 0);
	cr_expect_neq(t.device_ns, VY_TIMING_NONE);
	cr_expect_gt(t.device_ns, 0);
	cr_expect_leq(t.device_ns, t.wall_ns);
	cr_assert_eq(out.len, 1);
	cr_expect_eq(out.items[0].len, 4096 * 4);
	vy_outputs_finish(&out);
	vy_program_destroy(p);
	vy_backend_destroy(b);
}

Test(reference_control, capabilities_and_device_profile)
{
	struct vy_backend *b = ref_backend(32);
	cr_expect_str_eq(b->id, "reference");
	cr_expect(vy_backend_supports(b, VY_CAP_SUBGROUP_OPS));
	cr_expect(vy_backend_supports(b, VY_CAP_GRID_SYNC));
	cr_expect_eq(vy_backend_subgroup_size(b), 32);
	cr_expect_eq(vy_backend_max_workgroup_invocations(b), 1024);
	struct vy_device_profile prof;
	vy_backend_device_profile(b, &prof);
	cr_expect_str_eq(prof.name, "vyre reference interpreter");
	cr_expect_eq(prof.subgroup_size, 32);
	cr_expect(prof.supports_subgroup_ops);
	cr_expect(prof.fma_fused && prof.div_exact && prof.sqrt_exact);
	cr_expect_not(prof.keeps_subnormals);
	cr_expect_eq(prof.max_shared_bytes, 64 * 1024);
	cr_expect_eq(prof.max_workgroup_size[2], 64);
	vy_backend_destroy(b);

	struct vy_reference_options bad = {12};
	struct vy_err err = {0};
	cr_expect_eq(vy_reference_backend_create(&bad, &b, &err), VY_E_BAD_REQUEST);
	cr_expect_null(b);
	bad.subgroup_size = 256;
	cr_expect_eq(vy_reference_backend_create(&bad, &b, &err), VY_E_BAD_REQUEST);
	cr_expect_eq(vy_reference_backend_create(NULL, &b, &err), 0);
	cr_expect_eq(vy_backend_subgroup_size(b), 8);
	vy_backend_destroy(b);
}

/* A million-element saxpy: correct at both ends, and quick enough for the test suite. */
Test(reference_control, saxpy_of_a_million_elements)
{
	enum { COUNT = 1 << 20 };
	struct vy_program *p = vy_program_create("saxpy", 256, 1, 1);
	BUF("x", 0, READ_ONLY, F32, 0);
	BUF("y", 1, READ_WRITE, F32, 0);
	vy_program_set_entry(
		p, SEQ(LET("i", GID(0)), IF(BIN(GE, VAR("i"), LEN("y")), SEQ(RETURN()), EMPTY),
			   STORE("y", VAR("i"),
				   BIN(ADD, BIN(MUL, F32(2.0f), LOAD("x", VAR("i"))),
					   LOAD("y", VAR("i"))))));
	uint32_t *x = malloc(COUNT * 4);
	uint32_t *y = malloc(COUNT * 4);
	for (uint32_t k = 0; k < COUNT; k++) {
		x[k] = fbits((float)k);
		y[k] = fbits(1.0f);
	}
	struct vy_bytes in[] = {ref_in(x, COUNT), ref_in(y, COUNT)};
	struct ref_result r = ref_dispatch(p, in, 2, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_expect_eq(ref_word(&r, 0, 0), fbits(1.0f));
	cr_expect_eq(ref_word(&r, 0, 12345), fbits(24691.0f));
	cr_expect_eq(ref_word(&r, 0, COUNT - 1), fbits(2.0f * (float)(COUNT - 1) + 1.0f));
	ref_result_finish(&r);
	free(x);
	free(y);
	vy_program_destroy(p);
}
