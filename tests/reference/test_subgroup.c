/*
 * Simulated subgroups of the reference interpreter at sizes 8 (lavapipe) and 32 (NVIDIA):
 * lane and size, reductions over the active lanes in ascending lane order, ballots, shuffles,
 * partial subgroups, and running the same invocations concurrently from several threads.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "util.h"

#define WG 64u

static struct ref_result run_sg(
	uint32_t sg, struct vy_program *p, const struct vy_bytes *in, size_t n_in)
{
	struct vy_backend *b = ref_backend(sg);
	struct ref_result r = ref_dispatch_on(b, p, in, n_in, NULL);
	vy_backend_destroy(b);
	cr_assert_eq(r.rc, 0, "subgroup size %u: %s (at %s)", sg, r.err.message, r.err.at);
	return r;
}

static const uint32_t sizes[] = {8, 32};

Test(reference_subgroup, lane_and_size_follow_the_simulated_width)
{
	struct vy_program *p = vy_program_create("lanes", WG, 1, 1);
	BUF("lane", 0, WRITE_ONLY, U32, 2 * WG);
	BUF("size", 1, WRITE_ONLY, U32, 2 * WG);
	vy_program_set_entry(p, SEQ(STORE("lane", GID(0), vy_ir_subgroup_lane(p)),
					STORE("size", GID(0), vy_ir_subgroup_size(p))));
	for (size_t s = 0; s < 2; s++) {
		struct ref_result r = run_sg(sizes[s], p, NULL, 0);
		for (uint32_t k = 0; k < 2 * WG; k++) {
			cr_expect_eq(ref_word(&r, 0, k), (k % WG) % sizes[s]);
			cr_expect_eq(ref_word(&r, 1, k), sizes[s]);
		}
		ref_result_finish(&r);
	}
	vy_program_destroy(p);
}

/* out = reduce add of gid + 1 over the lanes with lid % 3 == 0, other lanes write all ones. */
Test(reference_subgroup, reduce_combines_only_the_active_lanes)
{
	struct vy_program *p = vy_program_create("reduce", WG, 1, 1);
	BUF("all", 0, WRITE_ONLY, U32, WG);
	BUF("some", 1, WRITE_ONLY, U32, WG);
	struct vy_expr *v = BIN(ADD, GID(0), U32(1));
	vy_program_set_entry(
		p, SEQ(STORE("all", GID(0), vy_ir_subgroup_reduce(p, VY_REDUCE_ADD, v)),
			   STORE("some", GID(0), U32(0xFFFFFFFFu)),
			   IF(BIN(EQ, BIN(MOD, LID(0), U32(3)), U32(0)),
				   SEQ(STORE("some", GID(0),
					   vy_ir_subgroup_reduce(
						   p, VY_REDUCE_ADD, BIN(ADD, GID(0), U32(1))))),
				   EMPTY)));
	for (size_t s = 0; s < 2; s++) {
		uint32_t sg = sizes[s];
		struct ref_result r = run_sg(sg, p, NULL, 0);
		for (uint32_t k = 0; k < WG; k++) {
			uint32_t base = k - k % sg;
			uint32_t all = 0;
			uint32_t some = 0;
			for (uint32_t l = base; l < base + sg; l++) {
				all += l + 1;
				some += l % 3 == 0 ? l + 1 : 0;
			}
			cr_expect_eq(ref_word(&r, 0, k), all, "sg %u lane %u", sg, k);
			cr_expect_eq(ref_word(&r, 1, k), k % 3 == 0 ? some : 0xFFFFFFFFu,
				"sg %u lane %u", sg, k);
		}
		ref_result_finish(&r);
	}
	vy_program_destroy(p);
}

static uint32_t reduce_ref(enum vy_reduce_op op, bool is_signed, const uint32_t *v, uint32_t n)
{
	uint32_t acc = v[0];
	for (uint32_t k = 1; k < n; k++) {
		int32_t sa = (int32_t)acc;
		int32_t sv = (int32_t)v[k];
		switch (op) {
		case VY_REDUCE_MUL:
			acc *= v[k];
			break;
		case VY_REDUCE_MIN:
			acc = (is_signed ? sv < sa : v[k] < acc) ? v[k] : acc;
			break;
		case VY_REDUCE_MAX:
			acc = (is_signed ? sv > sa : v[k] > acc) ? v[k] : acc;
			break;
		case VY_REDUCE_AND:
			acc &= v[k];
			break;
		case VY_REDUCE_OR:
			acc |= v[k];
			break;
		case VY_REDUCE_XOR:
			acc ^= v[k];
			break;
		default:
			acc += v[k];
			break;
		}
	}
	return acc;
}

Test(reference_subgroup, integer_reductions_respect_signedness)
{
	static const enum vy_reduce_op ops[] = {VY_REDUCE_MUL, VY_REDUCE_MIN, VY_REDUCE_MAX,
		VY_REDUCE_AND, VY_REDUCE_OR, VY_REDUCE_XOR};
	uint32_t v[WG];
	for (uint32_t k = 0; k < WG; k++) {
		v[k] = (k * 2654435761u) ^ (k & 1 ? 0x80000000u : 0);
	}
	for (int signed_type = 0; signed_type < 2; signed_type++) {
		struct vy_program *p = vy_program_create("int_reduce", WG, 1, 1);
		enum vy_type t = signed_type ? VY_TYPE_I32 : VY_TYPE_U32;
		vy_program_add_buffer(p, "v", 0, VY_ACCESS_READ_ONLY, t, WG);
		vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, t, 6 * WG);
		struct vy_node *stores[6];
		for (uint32_t o = 0; o < 6; o++) {
			stores[o] = STORE("out", BIN(ADD, BIN(MUL, U32(o), U32(WG)), GID(0)),
				vy_ir_subgroup_reduce(p, ops[o], LOAD("v", GID(0))));
		}
		/* The grid covers `out`; only the first workgroup has values. */
		struct vy_node *entry[7] = {IF(BIN(GE, GID(0), U32(WG)), SEQ(RETURN()), EMPTY)};
		memcpy(entry + 1, stores, sizeof(stores));
		vy_program_set_entry(p, vy_ir_seqv(p, entry, 7));
		struct vy_bytes in = ref_in(v, WG);
		for (size_t s = 0; s < 2; s++) {
			uint32_t sg = sizes[s];
			struct ref_result r = run_sg(sg, p, &in, 1);
			for (uint32_t o = 0; o < 6; o++) {
				for (uint32_t k = 0; k < WG; k++) {
					uint32_t want =
						reduce_ref(ops[o], signed_type, v + k - k % sg, sg);
					cr_expect_eq(ref_word(&r, 0, o * WG + k), want,
						"%s %s sg %u lane %u: got 0x%x want 0x%x",
						vy_type_name(t), vy_reduce_name(ops[o]), sg, k,
						ref_word(&r, 0, o * WG + k), want);
				}
			}
			ref_result_finish(&r);
		}
		vy_program_destroy(p);
	}
}

/* An f32 sum rounds after every addition, in ascending lane order. */
Test(reference_subgroup, f32_reductions_fold_in_lane_order)
{
	struct vy_program *p = vy_program_create("f32_reduce", 8, 1, 1);
	BUF("v", 0, READ_ONLY, F32, 8);
	BUF("out", 1, WRITE_ONLY, F32, 24);
	vy_program_set_entry(
		p, SEQ(IF(BIN(GE, GID(0), U32(8)), SEQ(RETURN()), EMPTY),
			   STORE("out", GID(0),
				   vy_ir_subgroup_reduce(p, VY_REDUCE_ADD, LOAD("v", GID(0)))),
			   STORE("out", BIN(ADD, GID(0), U32(8)),
				   vy_ir_subgroup_reduce(p, VY_REDUCE_MIN, LOAD("v", GID(0)))),
			   STORE("out", BIN(ADD, GID(0), U32(16)),
				   vy_ir_subgroup_reduce(p, VY_REDUCE_MAX, LOAD("v", GID(0))))));
	uint32_t v[8] = {fbits(1e8f), fbits(1.0f), fbits(1.0f), fbits(1.0f), fbits(-0.0f),
		fbits(0.0f), fbits(1.0f), 0x7FC00000u};
	struct vy_bytes in = ref_in(v, 8);
	struct ref_result r = run_sg(8, p, &in, 1);
	for (uint32_t k = 0; k < 8; k++) {
		cr_expect_eq(ref_word(&r, 0, k), 0x7FC00000u, "the NaN lane makes the sum NaN");
		cr_expect_eq(ref_word(&r, 0, 8 + k), fbits(-0.0f), "min ignores NaN, -0 < +0");
		cr_expect_eq(ref_word(&r, 0, 16 + k), fbits(1e8f));
	}
	ref_result_finish(&r);

	/* Each + 3 is below half an ulp of 1e8 (4) and vanishes; a pairwise tree would add 3 + 3
	 * first and end above 1e8. */
	for (int k = 1; k < 8; k++) {
		v[k] = fbits(3.0f);
	}
	r = run_sg(8, p, &in, 1);
	cr_expect_eq(ref_word(&r, 0, 3), fbits(1e8f), "(((1e8 + 3) + 3) + ...) stays 1e8");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

/* Bit k of a ballot is lane k; lanes from 32 up are not represented. */
Test(reference_subgroup, ballot_sets_a_bit_per_active_lane)
{
	struct vy_program *p = vy_program_create("ballot", WG, 1, 1);
	BUF("all", 0, WRITE_ONLY, U32, WG);
	BUF("few", 1, WRITE_ONLY, U32, WG);
	vy_program_set_entry(
		p, SEQ(STORE("all", GID(0),
			       vy_ir_subgroup_ballot(p, BIN(EQ, BIN(MOD, LID(0), U32(3)), U32(0)))),
			   IF(BIN(LT, LID(0), U32(5)),
				   SEQ(STORE("few", GID(0), vy_ir_subgroup_ballot(p, BOOL(true)))),
				   EMPTY)));
	static const uint32_t widths[] = {8, 32, 64};
	for (size_t s = 0; s < 3; s++) {
		uint32_t sg = widths[s];
		struct ref_result r = run_sg(sg, p, NULL, 0);
		for (uint32_t k = 0; k < WG; k++) {
			uint32_t base = k - k % sg;
			uint32_t want = 0;
			for (uint32_t l = base; l < base + sg && l - base < 32; l++) {
				want |= l % 3 == 0 ? 1u << (l - base) : 0;
			}
			cr_expect_eq(ref_word(&r, 0, k), want, "sg %u lane %u", sg, k);
			if (k < 5) {
				cr_expect_eq(ref_word(&r, 1, k), 0x1Fu, "sg %u lane %u", sg, k);
			}
		}
		ref_result_finish(&r);
	}
	vy_program_destroy(p);
}

/* Shuffles read another lane's value; a lane out of range or inactive reads 0. */
Test(reference_subgroup, shuffle_reads_the_named_lane)
{
	struct vy_program *p = vy_program_create("shuffle", WG, 1, 1);
	BUF("x", 0, READ_ONLY, U32, WG);
	BUF("rot", 1, WRITE_ONLY, U32, WG);
	BUF("far", 2, WRITE_ONLY, U32, WG);
	BUF("even", 3, WRITE_ONLY, U32, WG);
	struct vy_expr *next =
		BIN(MOD, BIN(ADD, vy_ir_subgroup_lane(p), U32(1)), vy_ir_subgroup_size(p));
	vy_program_set_entry(
		p, SEQ(LET("v", LOAD("x", GID(0))),
			   STORE("rot", GID(0), vy_ir_subgroup_shuffle(p, VAR("v"), next)),
			   STORE("far", GID(0), vy_ir_subgroup_shuffle(p, VAR("v"), U32(100))),
			   IF(BIN(EQ, BIN(MOD, LID(0), U32(2)), U32(0)),
				   SEQ(STORE("even", GID(0),
					   vy_ir_subgroup_shuffle(p, VAR("v"),
						   BIN(ADD, vy_ir_subgroup_lane(p), U32(1))))),
				   SEQ(STORE("even", GID(0),
					   vy_ir_subgroup_shuffle(p, VAR("v"), U32(0)))))));
	uint32_t x[WG];
	for (uint32_t k = 0; k < WG; k++) {
		x[k] = 1000 + k;
	}
	struct vy_bytes in = ref_in(x, WG);
	for (size_t s = 0; s < 2; s++) {
		uint32_t sg = sizes[s];
		struct ref_result r = run_sg(sg, p, &in, 1);
		for (uint32_t k = 0; k < WG; k++) {
			uint32_t base = k - k % sg;
			cr_expect_eq(ref_word(&r, 0, k), x[base + (k % sg + 1) % sg]);
			cr_expect_eq(ref_word(&r, 1, k), 0, "lane 100 is out of range");
			/* Odd lanes run the else arm: lane 0 runs the then arm, so it is inactive.
			 */
			cr_expect_eq(ref_word(&r, 2, k), 0, "sg %u lane %u reads an inactive lane",
				sg, k);
		}
		ref_result_finish(&r);
	}
	vy_program_destroy(p);
}

/* A workgroup of 12 at subgroup size 8: the second subgroup holds lanes 8 to 11 only. */
Test(reference_subgroup, the_last_subgroup_may_be_partial)
{
	struct vy_program *p = vy_program_create("partial", 12, 1, 1);
	BUF("sum", 0, WRITE_ONLY, U32, 12);
	BUF("from5", 1, WRITE_ONLY, U32, 12);
	vy_program_set_entry(
		p, SEQ(STORE("sum", GID(0), vy_ir_subgroup_reduce(p, VY_REDUCE_ADD, GID(0))),
			   STORE("from5", GID(0),
				   vy_ir_subgroup_shuffle(p, BIN(ADD, GID(0), U32(1)), U32(5)))));
	struct ref_result r = run_sg(8, p, NULL, 0);
	for (uint32_t k = 0; k < 12; k++) {
		cr_expect_eq(ref_word(&r, 0, k), k < 8 ? 28 : 38, "lane %u", k);
		cr_expect_eq(ref_word(&r, 1, k), k < 8 ? 6 : 0, "lane %u", k);
	}
	ref_result_finish(&r);
	vy_program_destroy(p);
}

struct worker {
	struct vy_backend *b;
	struct vy_program *p;
	const uint32_t *x;
	int failures;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct vy_bytes in = ref_in(w->x, WG);
	for (int round = 0; round < 20; round++) {
		struct ref_result r = ref_dispatch_on(w->b, w->p, &in, 1, NULL);
		if (r.rc != 0 || r.out.len != 1) {
			w->failures++;
		} else {
			for (uint32_t k = 0; k < WG; k++) {
				uint32_t got;
				memcpy(&got, r.out.items[0].data + 4 * k, 4);
				w->failures += got != w->x[k - k % 8] * 8 + 28;
			}
		}
		ref_result_finish(&r);
	}
	return NULL;
}

/* One backend, one program, four threads dispatching at once. */
Test(reference_subgroup, concurrent_dispatches_do_not_interfere)
{
	struct vy_backend *b = ref_backend(8);
	struct vy_program *p = vy_program_create("concurrent", WG, 1, 1);
	BUF("x", 0, READ_ONLY, U32, WG);
	BUF("out", 1, WRITE_ONLY, U32, WG);
	/* Lane l of a subgroup adds x[base] + l, so the sum is 8 * x[base] + 28. */
	struct vy_expr *first = vy_ir_subgroup_shuffle(p, LOAD("x", GID(0)), U32(0));
	vy_program_set_entry(p, SEQ(STORE("out", GID(0),
					vy_ir_subgroup_reduce(p, VY_REDUCE_ADD,
						BIN(ADD, first, vy_ir_subgroup_lane(p))))));
	uint32_t x[4][WG];
	struct worker w[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		for (uint32_t k = 0; k < WG; k++) {
			x[i][k] = (uint32_t)i * 1000 + k;
		}
		w[i] = (struct worker){b, p, x[i], 0};
		cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(w[i].failures, 0, "thread %d", i);
	}
	vy_program_destroy(p);
	vy_backend_destroy(b);
}
