/*
 * Memory rules of the reference interpreter (DESIGN.md §4.3): out-of-bounds loads, stores and
 * atomics, count-0 buffers sized by their input, bool buffers, workgroup memory (zeroed in every
 * workgroup, shared by its lanes across barriers), every atomic operation (a histogram, a
 * counter, a compare_exchange loop) and resident buffers, with the simulated device loss that
 * drops them.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "reference.h"
#include "util.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

Test(reference_memory, out_of_bounds_load_reads_zero_and_store_does_nothing)
{
	struct vy_program *p = vy_program_create("oob", 1, 1, 1);
	BUF("a", 0, READ_ONLY, U32, 4);
	BUF("f", 1, READ_ONLY, F32, 2);
	BUF("out", 2, WRITE_ONLY, U32, 6);
	BUF("rw", 3, READ_WRITE, U32, 2);
	vy_program_set_entry(p,
		SEQ(STORE("out", U32(0), LOAD("a", U32(4))),
			STORE("out", U32(1), LOAD("a", U32(0xFFFFFFFFu))),
			STORE("out", U32(2), CAST(U32, LOAD("f", U32(2)))),
			STORE("out", U32(3), LEN("a")), STORE("out", U32(6), U32(99)),
			STORE("out", U32(0xFFFFFFFFu), U32(99)), STORE("rw", U32(2), U32(99)),
			LET("old", ATOMIC(ADD, "rw", U32(5), U32(7))),
			STORE("out", U32(4), VAR("old")), STORE("out", U32(5), LOAD("a", U32(3)))));
	uint32_t a[] = {10, 11, 12, 13};
	uint32_t f[] = {0x3F800000u, 0x40000000u};
	uint32_t rw[] = {21, 22};
	struct vy_bytes in[] = {ref_in(a, 4), ref_in(f, 2), ref_in(rw, 2)};
	struct ref_result r = ref_dispatch(p, in, 3, NULL);
	ref_expect(&r, (uint32_t[]){0, 0, 0, 4, 0, 13}, 6, "out");
	cr_assert_eq(ref_words(&r, 1), 2);
	cr_expect_eq(ref_word(&r, 1, 0), 21, "an out-of-bounds atomic changes nothing");
	cr_expect_eq(ref_word(&r, 1, 1), 22, "an out-of-bounds store changes nothing");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* Index == count is the first index out of bounds: a second atomic there must not see the first. */
Test(reference_memory, atomics_one_past_the_end_do_nothing_and_return_zero)
{
	struct vy_program *p = vy_program_create("oob_atomic", 1, 1, 1);
	BUF("rw", 0, READ_WRITE, U32, 2);
	BUF("out", 1, WRITE_ONLY, U32, 2);
	vy_program_set_entry(p, SEQ(STORE("out", U32(0), ATOMIC(EXCHANGE, "rw", U32(2), U32(7))),
					STORE("out", U32(1), ATOMIC(ADD, "rw", U32(2), U32(1)))));
	uint32_t rw[] = {21, 22};
	struct vy_bytes in[] = {ref_in(rw, 2)};
	struct ref_result r = ref_dispatch(p, in, 1, NULL);
	ref_expect(&r, (uint32_t[]){21, 22}, 2, "rw");
	cr_assert_eq(ref_word(&r, 1, 0), 0);
	cr_assert_eq(ref_word(&r, 1, 1), 0, "the first atomic past the end changed something");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_memory, count_zero_buffers_take_their_length_from_the_input)
{
	struct vy_program *p = vy_program_create("double", 32, 1, 1);
	BUF("x", 0, READ_ONLY, U32, 0);
	BUF("y", 1, READ_WRITE, U32, 0);
	BUF("n", 2, WRITE_ONLY, U32, 1);
	vy_program_set_entry(
		p, SEQ(LET("i", GID(0)),
			   IF(BIN(EQ, VAR("i"), U32(0)), SEQ(STORE("n", U32(0), LEN("x"))), EMPTY),
			   STORE("y", VAR("i"),
				   BIN(ADD, LOAD("y", VAR("i")),
					   BIN(MUL, LOAD("x", VAR("i")), U32(2))))));
	uint32_t x[100];
	uint32_t y[100];
	for (uint32_t k = 0; k < 100; k++) {
		x[k] = k;
		y[k] = 1000;
	}
	struct vy_bytes in[] = {ref_in(x, 100), ref_in(y, 100)};
	struct ref_result r = ref_dispatch(p, in, 2, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_assert_eq(r.out.len, 2);
	cr_assert_eq(ref_words(&r, 0), 100, "y keeps its input's length");
	for (uint32_t k = 0; k < 100; k++) {
		cr_expect_eq(ref_word(&r, 0, k), 1000 + 2 * k);
	}
	cr_expect_eq(ref_word(&r, 1, 0), 100, "len is the input's element count");
	ref_result_finish(&r);

	uint32_t odd[3] = {1, 2, 3};
	struct vy_bytes bad[] = {ref_in(x, 100), {(const uint8_t *)odd, 10}};
	r = ref_dispatch(p, bad, 2, NULL);
	ref_expect_error(&r, VY_E_BAD_REQUEST, NULL);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_memory, bool_buffers_read_nonzero_as_true_and_store_one_or_zero)
{
	struct vy_program *p = vy_program_create("bools", 8, 1, 1);
	BUF("b", 0, READ_ONLY, BOOL, 4);
	BUF("nb", 1, WRITE_ONLY, BOOL, 4);
	BUF("w", 2, WRITE_ONLY, U32, 4);
	BUF("f", 3, WRITE_ONLY, BOOL, 4);
	vy_program_set_entry(
		p, SEQ(LET("i", GID(0)), IF(BIN(GE, VAR("i"), U32(4)), SEQ(RETURN()), EMPTY),
			   STORE("nb", VAR("i"), UN(NOT, LOAD("b", VAR("i")))),
			   STORE("w", VAR("i"), CAST(U32, LOAD("b", VAR("i")))),
			   STORE("f", VAR("i"), CAST(BOOL, BIN(MUL, VAR("i"), U32(7))))));
	uint32_t b[] = {0, 1, 2, 0xFFFFFFFFu};
	struct vy_bytes in = ref_in(b, 4);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	uint32_t nb[] = {1, 0, 0, 0};
	uint32_t w[] = {0, 1, 1, 1};
	uint32_t f[] = {0, 1, 1, 1};
	for (size_t k = 0; k < 4; k++) {
		cr_expect_eq(ref_word(&r, 0, k), nb[k]);
		cr_expect_eq(ref_word(&r, 1, k), w[k]);
		cr_expect_eq(ref_word(&r, 2, k), f[k], "stored bools are words of 1 or 0");
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_memory, workgroup_memory_starts_zeroed_in_every_workgroup)
{
	struct vy_program *p = vy_program_create("zeroed", 16, 1, 1);
	BUF("s", 0, WORKGROUP, U32, 16);
	BUF("seen", 1, WRITE_ONLY, U32, 64);
	vy_program_set_entry(p, SEQ(STORE("seen", GID(0), LOAD("s", LID(0))),
					STORE("s", LID(0), BIN(ADD, WGID(0), U32(1)))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_assert_eq(ref_words(&r, 0), 64);
	for (size_t k = 0; k < 64; k++) {
		cr_expect_eq(
			ref_word(&r, 0, k), 0, "workgroup %zu saw a value left by another", k / 16);
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* A tree reduction of 64 values per workgroup through workgroup memory and barriers. */
Test(reference_memory, workgroup_reduction_shares_memory_across_barriers)
{
	struct vy_program *p = vy_program_create("reduce", 64, 1, 1);
	BUF("x", 0, READ_ONLY, U32, 0);
	BUF("sums", 1, WRITE_ONLY, U32, 4);
	BUF("s", 2, WORKGROUP, U32, 64);
	struct vy_node *step = IF(BIN(LT, LID(0), VAR("stride")),
		SEQ(STORE("s", LID(0),
			BIN(ADD, LOAD("s", LID(0)), LOAD("s", BIN(ADD, LID(0), VAR("stride")))))),
		EMPTY);
	vy_program_set_entry(p,
		SEQ(STORE("s", LID(0), LOAD("x", GID(0))), BARRIER(),
			LOOP("k", U32(0), U32(6),
				SEQ(LET("stride", BIN(SHR, U32(32), VAR("k"))), step, BARRIER())),
			IF(BIN(EQ, LID(0), U32(0)), SEQ(STORE("sums", WGID(0), LOAD("s", U32(0)))),
				EMPTY)));
	uint32_t x[256];
	uint32_t want[4] = {0};
	for (uint32_t k = 0; k < 256; k++) {
		x[k] = k * k + 3;
		want[k / 64] += x[k];
	}
	struct vy_bytes in = ref_in(x, 256);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	ref_expect(&r, want, 4, "workgroup sums");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_memory, atomic_histogram_counts_every_value)
{
	struct vy_program *p = vy_program_create("histogram", 32, 1, 1);
	BUF("data", 0, READ_ONLY, U32, 0);
	struct vy_buffer *bins = BUF("bins", 1, READ_WRITE, U32, 16);
	bins->output = true;
	vy_program_set_entry(p,
		SEQ(LET("i", GID(0)), IF(BIN(GE, VAR("i"), LEN("data")), SEQ(RETURN()), EMPTY),
			LET("prev",
				ATOMIC(ADD, "bins", BIN(BIT_AND, LOAD("data", VAR("i")), U32(15)),
					U32(1)))));
	uint32_t data[1000];
	uint32_t want[16] = {0};
	uint32_t state = 12345;
	for (size_t k = 0; k < 1000; k++) {
		state = state * 1103515245u + 12345u;
		data[k] = state >> 8;
		want[data[k] & 15]++;
	}
	struct vy_bytes in = ref_in(data, 1000);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	ref_expect(&r, want, 16, "histogram bins");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_memory, atomic_counter_hands_out_ids_in_lane_then_workgroup_order)
{
	struct vy_program *p = vy_program_create("counter", 16, 1, 1);
	struct vy_buffer *c = BUF("counter", 0, READ_WRITE, U32, 1);
	c->output = true;
	BUF("ticket", 1, WRITE_ONLY, U32, 80);
	vy_program_set_entry(
		p, SEQ(STORE("ticket", GID(0), ATOMIC(ADD, "counter", U32(0), U32(1)))));
	struct vy_dispatch_config cfg = {.grid = {5, 1, 1}};
	struct ref_result r = ref_dispatch(p, NULL, 0, &cfg);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_expect_eq(ref_word(&r, 0, 0), 80);
	for (uint32_t k = 0; k < 80; k++) {
		cr_expect_eq(ref_word(&r, 1, k), k, "ticket of invocation %u", k);
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* Every lane adds its value with a compare_exchange retry loop. */
Test(reference_memory, compare_exchange_loop_adds_every_value)
{
	struct vy_program *p = vy_program_create("cas_add", 64, 1, 1);
	BUF("v", 0, READ_ONLY, U32, 64);
	struct vy_buffer *total = BUF("total", 1, READ_WRITE, U32, 1);
	total->output = true;
	BUF("tries", 2, WRITE_ONLY, U32, 64);
	struct vy_expr *cas = vy_ir_atomic_cas(
		p, "total", U32(0), VAR("old"), BIN(ADD, VAR("old"), LOAD("v", GID(0))));
	vy_program_set_entry(
		p, SEQ(LET("done", BOOL(false)), LET("old", ATOMIC(OR, "total", U32(0), U32(0))),
			   LET("n", U32(0)),
			   LOOP("k", U32(0), U32(100),
				   SEQ(IF(UN(NOT, VAR("done")),
					   SEQ(ASSIGN("n", BIN(ADD, VAR("n"), U32(1))),
						   LET("got", cas),
						   IF(BIN(EQ, VAR("got"), VAR("old")),
							   SEQ(ASSIGN("done", BOOL(true))),
							   SEQ(ASSIGN("old", VAR("got"))))),
					   EMPTY))),
			   STORE("tries", GID(0), VAR("n"))));
	uint32_t v[64];
	uint32_t want = 0;
	for (uint32_t k = 0; k < 64; k++) {
		v[k] = 3 * k + 1;
		want += v[k];
	}
	struct vy_bytes in = ref_in(v, 64);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_expect_eq(ref_word(&r, 0, 0), want);
	/* In lock step the lanes retry together and the lowest waiting lane wins each round. */
	for (uint32_t k = 0; k < 64; k++) {
		cr_expect_eq(ref_word(&r, 1, k), k + 1, "lane %u's attempts", k);
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_memory, every_atomic_returns_the_old_value)
{
	struct vy_program *p = vy_program_create("atomics", 1, 1, 1);
	BUF("m", 0, READ_WRITE, U32, 8);
	BUF("old", 1, WRITE_ONLY, U32, 8);
	vy_program_set_entry(p,
		SEQ(STORE("old", U32(0), ATOMIC(ADD, "m", U32(0), U32(0xFFFFFFFFu))),
			STORE("old", U32(1), ATOMIC(AND, "m", U32(1), U32(0x3Cu))),
			STORE("old", U32(2), ATOMIC(OR, "m", U32(2), U32(0x0Fu))),
			STORE("old", U32(3), ATOMIC(XOR, "m", U32(3), U32(0xFFu))),
			STORE("old", U32(4), ATOMIC(MIN, "m", U32(4), U32(0x80000000u))),
			STORE("old", U32(5), ATOMIC(MAX, "m", U32(5), U32(0x80000000u))),
			STORE("old", U32(6), ATOMIC(EXCHANGE, "m", U32(6), U32(42))),
			STORE("old", U32(7), vy_ir_atomic_cas(p, "m", U32(7), U32(9), U32(10)))));
	uint32_t m[] = {2, 0xF0u, 0xF0u, 0x0Fu, 5, 5, 7, 8};
	struct vy_bytes in = ref_in(m, 8);
	/* One invocation: the default grid would cover the 8 elements of m. */
	struct vy_dispatch_config one = {.grid = {1, 1, 1}};
	struct ref_result r = ref_dispatch(p, &in, 1, &one);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	uint32_t want_m[] = {1, 0x30u, 0xFFu, 0xF0u, 5, 0x80000000u, 42, 8};
	for (size_t k = 0; k < 8; k++) {
		cr_expect_eq(ref_word(&r, 0, k), want_m[k], "m[%zu] = 0x%x", k, ref_word(&r, 0, k));
		cr_expect_eq(ref_word(&r, 1, k), m[k], "old value of m[%zu] = 0x%x", k,
			ref_word(&r, 1, k));
	}
	ref_result_finish(&r);

	/* A compare_exchange that matches swaps. */
	m[7] = 9;
	r = ref_dispatch(p, &in, 1, &one);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_expect_eq(ref_word(&r, 0, 7), 10);
	cr_expect_eq(ref_word(&r, 1, 7), 9);
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_memory, workgroup_buffers_marked_live_out_come_back_zeroed)
{
	struct vy_program *p = vy_program_create("shared_out", 4, 1, 1);
	struct vy_buffer *s = BUF("s", 0, WORKGROUP, U32, 4);
	s->live_out = true;
	BUF("out", 1, WRITE_ONLY, U32, 4);
	vy_program_set_entry(p, SEQ(STORE("s", LID(0), U32(7)), STORE("out", GID(0), U32(1))));
	struct ref_result r = ref_dispatch(p, NULL, 0, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);
	cr_assert_eq(r.out.len, 2);
	for (size_t k = 0; k < 4; k++) {
		cr_expect_eq(ref_word(&r, 0, k), 0);
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* y = y + a * x over resident buffers, in place. */
static struct vy_program *resident_program(void)
{
	struct vy_program *p = vy_program_create("axpy", 8, 1, 1);
	BUF("x", 0, READ_ONLY, U32, 0);
	BUF("y", 1, READ_WRITE, U32, 0);
	struct vy_buffer *hits = BUF("hits", 2, READ_WRITE, U32, 1);
	hits->output = true;
	BUF("tmp", 3, WORKGROUP, U32, 8);
	vy_program_set_entry(
		p, SEQ(LET("i", GID(0)), IF(BIN(GE, VAR("i"), LEN("y")), SEQ(RETURN()), EMPTY),
			   STORE("y", VAR("i"),
				   BIN(ADD, LOAD("y", VAR("i")),
					   BIN(MUL, U32(3), LOAD("x", VAR("i"))))),
			   LET("h", ATOMIC(ADD, "hits", U32(0), U32(1)))));
	return p;
}

Test(reference_memory, resident_buffers_run_in_place)
{
	struct vy_backend *b = ref_backend(0);
	struct vy_err err = {0};
	struct vy_resource x;
	struct vy_resource y;
	struct vy_resource hits;
	cr_assert_eq(vy_backend_resident_alloc(b, 40, &x, &err), 0, "%s", err.message);
	cr_assert_eq(vy_backend_resident_alloc(b, 40, &y, &err), 0);
	cr_assert_eq(vy_backend_resident_alloc(b, 4, &hits, &err), 0);
	cr_assert_neq(x.id, y.id);
	cr_assert_eq(x.len, 40);
	uint32_t xv[10];
	uint32_t yv[10];
	for (uint32_t k = 0; k < 10; k++) {
		xv[k] = k;
		yv[k] = 100 + k;
	}
	cr_assert_eq(vy_backend_resident_upload(b, &x, 0, ref_in(xv, 10), &err), 0);
	cr_assert_eq(vy_backend_resident_upload(b, &y, 0, ref_in(yv, 10), &err), 0);
	uint32_t stale = 555;
	cr_assert_eq(vy_backend_resident_upload(b, &hits, 0, ref_in(&stale, 1), &err), 0);

	struct vy_program *p = resident_program();
	struct vy_resource res[] = {x, y, hits};
	struct vy_timing t;
	for (int round = 0; round < 2; round++) {
		int rc = vy_backend_resident_dispatch(b, p, res, 3, NULL, &t, &err);
		cr_assert_eq(rc, 0, "%s", err.message);
		cr_assert_neq(t.device_ns, VY_TIMING_NONE);
	}
	uint32_t got[10];
	cr_assert_eq(vy_backend_resident_download(b, &y, 0, (uint8_t *)got, 40, &err), 0);
	for (uint32_t k = 0; k < 10; k++) {
		cr_expect_eq(got[k], 100 + k + 6 * k, "y[%u] after two dispatches", k);
	}
	uint32_t h;
	cr_assert_eq(vy_backend_resident_download(b, &hits, 0, (uint8_t *)&h, 4, &err), 0);
	cr_expect_eq(h, 10, "an output buffer starts zeroed in every dispatch");

	/* Partial transfers and their bounds. */
	uint32_t two[2] = {7, 8};
	cr_assert_eq(vy_backend_resident_upload(b, &x, 32, ref_in(two, 2), &err), 0);
	cr_assert_eq(vy_backend_resident_download(b, &x, 36, (uint8_t *)&h, 4, &err), 0);
	cr_expect_eq(h, 8);
	cr_expect_eq(vy_backend_resident_upload(b, &x, 36, ref_in(two, 2), &err), VY_E_BAD_REQUEST);
	cr_expect_eq(
		vy_backend_resident_download(b, &x, 41, (uint8_t *)&h, 0, &err), VY_E_BAD_REQUEST);

	/* Wrong resource counts and sizes. */
	cr_expect_eq(vy_backend_resident_dispatch(b, p, res, 2, NULL, &t, &err), VY_E_BAD_REQUEST);
	struct vy_resource odd;
	cr_assert_eq(vy_backend_resident_alloc(b, 6, &odd, &err), 0);
	struct vy_resource with_odd[] = {x, odd, hits};
	cr_expect_eq(
		vy_backend_resident_dispatch(b, p, with_odd, 3, NULL, &t, &err), VY_E_BAD_REQUEST);
	cr_expect_str_eq(err.at, "resources[1]");
	struct vy_resource small_hits[] = {x, y, odd};
	odd.len = 0;
	cr_assert_eq(vy_backend_resident_free(b, odd, &err), 0);
	cr_expect_eq(
		vy_backend_resident_dispatch(b, p, small_hits, 3, NULL, &t, &err), VY_E_NOT_FOUND);

	/* A freed handle is gone. */
	cr_assert_eq(vy_backend_resident_free(b, y, &err), 0);
	cr_expect_eq(vy_backend_resident_free(b, y, &err), VY_E_NOT_FOUND);
	cr_expect_eq(
		vy_backend_resident_download(b, &y, 0, (uint8_t *)got, 4, &err), VY_E_NOT_FOUND);
	cr_expect_eq(vy_backend_resident_dispatch(b, p, res, 3, NULL, &t, &err), VY_E_NOT_FOUND);
	cr_expect_str_eq(err.at, "resources[1]");
	vy_program_destroy(p);
	vy_backend_destroy(b);
}

Test(reference_memory, a_simulated_device_loss_fails_everything_until_recovery_drops_buffers)
{
	struct vy_backend *b = ref_backend(0);
	struct vy_err err = {0};
	struct vy_resource x, y, hits;
	cr_assert_eq(vy_backend_resident_alloc(b, 40, &x, &err), 0, "%s", err.message);
	cr_assert_eq(vy_backend_resident_alloc(b, 40, &y, &err), 0);
	cr_assert_eq(vy_backend_resident_alloc(b, 4, &hits, &err), 0);
	cr_assert_eq(vy_backend_inject_fault(b, VY_FAULT_COMPILE, &err), VY_E_UNSUPPORTED_FEATURE,
		"the reference simulates device_lost only");
	cr_expect(strstr(err.message, "compile") != NULL, "%s", err.message);
	cr_assert_not(vy_backend_device_lost(b));
	cr_assert_eq(vy_backend_inject_fault(b, VY_FAULT_DEVICE_LOST, &err), 0, "%s", err.message);
	cr_assert(vy_backend_device_lost(b));

	struct vy_program *q = resident_program();
	struct vy_resource res[] = {x, y, hits};
	struct vy_timing t;
	uint32_t word = 1;
	cr_expect_eq(vy_backend_resident_dispatch(b, q, res, 3, NULL, &t, &err), VY_E_DEVICE_LOST);
	cr_expect(strstr(err.message, "lost") != NULL, "%s", err.message);
	cr_expect_eq(
		vy_backend_resident_upload(b, &x, 0, ref_in(&word, 1), &err), VY_E_DEVICE_LOST);
	cr_expect_eq(vy_backend_resident_download(b, &x, 0, (uint8_t *)&word, 4, &err),
		VY_E_DEVICE_LOST);
	struct vy_resource more;
	cr_expect_eq(vy_backend_resident_alloc(b, 4, &more, &err), VY_E_DEVICE_LOST);
	struct vy_program *p = vy_program_create("plain", 1, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 1);
	vy_program_set_entry(p, SEQ(STORE("out", U32(0), U32(7))));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	cr_expect_eq(vy_backend_dispatch(b, p, NULL, 0, NULL, &outs, &err), VY_E_DEVICE_LOST);

	/* Recovery brings the device back empty, as a GPU's comes back. */
	cr_assert_eq(vy_backend_try_recover(b, &err), 0, "%s", err.message);
	cr_assert_not(vy_backend_device_lost(b));
	cr_expect_eq(
		vy_backend_resident_download(b, &x, 0, (uint8_t *)&word, 4, &err), VY_E_NOT_FOUND);
	cr_expect_eq(vy_backend_resident_free(b, y, &err), VY_E_NOT_FOUND);
	cr_assert_eq(vy_backend_dispatch(b, p, NULL, 0, NULL, &outs, &err), 0, "%s", err.message);
	cr_expect_eq(outs.len, 1);
	cr_expect_eq(outs.len == 1 ? *(const uint32_t *)outs.items[0].data : 0, 7);
	cr_assert_eq(vy_backend_resident_alloc(b, 4, &more, &err), 0, "%s", err.message);
	vy_outputs_finish(&outs);
	vy_program_destroy(q);
	vy_program_destroy(p);
	vy_backend_destroy(b);
}

Test(reference_memory, resident_and_input_dispatches_compute_the_same_bytes)
{
	struct vy_backend *b = ref_backend(0);
	struct vy_program *p = resident_program();
	uint32_t xv[13];
	uint32_t yv[13];
	for (uint32_t k = 0; k < 13; k++) {
		xv[k] = k * 7 + 1;
		yv[k] = k ^ 0x55u;
	}
	struct vy_bytes in[] = {ref_in(xv, 13), ref_in(yv, 13)};
	struct ref_result r = ref_dispatch_on(b, p, in, 2, NULL);
	cr_assert_eq(r.rc, 0, "%s", r.err.message);

	struct vy_err err = {0};
	struct vy_resource res[3];
	size_t sizes[] = {52, 52, 4};
	const uint32_t *data[] = {xv, yv, NULL};
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(vy_backend_resident_alloc(b, sizes[i], &res[i], &err), 0);
		if (data[i]) {
			cr_assert_eq(vy_backend_resident_upload(
					     b, &res[i], 0, ref_in(data[i], sizes[i] / 4), &err),
				0);
		}
	}
	struct vy_timing t;
	cr_assert_eq(
		vy_backend_resident_dispatch(b, p, res, 3, NULL, &t, &err), 0, "%s", err.message);
	for (int o = 0; o < 2; o++) {
		uint8_t got[52];
		size_t len = r.out.items[o].len;
		cr_assert_eq(vy_backend_resident_download(b, &res[o + 1], 0, got, len, &err), 0);
		cr_expect_eq(memcmp(got, r.out.items[o].data, len), 0, "output %d differs", o);
	}
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(vy_backend_resident_free(b, res[i], &err), 0);
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
	vy_backend_destroy(b);
}
