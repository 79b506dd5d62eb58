/*
 * Node numbers and node paths (planner/node_path.h): preorder numbering, the validator's path
 * grammar, lookups both ways, cut paths, the mapping from a lowered program back to the
 * program as written, and the trap-site order.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "node_path.h"
#include "util.h"

/*
 * entry[0] let          0
 * entry[1] if           1
 *   then[0] loop        2
 *     body[0] store     3
 *   else[0] return      4
 * entry[2] region       5
 *   body[0] block       6
 *     body[0] barrier   7
 */
static struct vy_program *sample(void)
{
	struct vy_program *p = vy_program_create("paths", 1, 1, 1);
	BUF("out", 0, WRITE_ONLY, U32, 4);
	vy_program_set_entry(
		p, SEQ(LET("a", U32(1)),
			   IF(BOOL(true),
				   SEQ(LOOP("i", U32(0), U32(2),
					   SEQ(STORE("out", VAR("i"), VAR("a"))))),
				   SEQ(RETURN())),
			   vy_ir_region(p, "gen", SEQ(vy_ir_block(p, SEQ(BARRIER()))))));
	return p;
}

Test(node_path, numbers_nodes_in_preorder_with_their_paths)
{
	struct vy_program *p = sample();
	const char *paths[] = {"entry[0].let", "entry[1].if", "entry[1].if.then[0].loop",
		"entry[1].if.then[0].loop.body[0].store", "entry[1].if.else[0].return",
		"entry[2].region", "entry[2].region.body[0].block",
		"entry[2].region.body[0].block.body[0].barrier"};
	cr_assert_eq(vy_node_path_count(p), 8);
	for (uint32_t i = 0; i < 8; i++) {
		char buf[VY_ERR_AT_MAX];
		cr_assert_eq(vy_node_path(p, i, buf, sizeof(buf)), 0);
		cr_expect_str_eq(buf, paths[i]);
		const struct vy_node *n = vy_node_path_node(p, i);
		cr_assert_not_null(n);
		cr_expect_eq(vy_node_path_index(p, n), i);
	}
	const struct vy_node *store = p->entry.items[1]->body.items[0]->body.items[0];
	cr_expect_eq(store->kind, VY_NODE_STORE);
	cr_expect_eq(vy_node_path_index(p, store), 3);
	vy_program_destroy(p);
}

Test(node_path, unknown_nodes_are_not_found)
{
	struct vy_program *p = sample();
	char buf[32] = "unchanged";
	cr_expect_eq(vy_node_path(p, 8, buf, sizeof(buf)), VY_E_NOT_FOUND);
	cr_expect_str_eq(buf, "");
	cr_expect_eq(vy_node_path(p, VY_NODE_NONE, buf, sizeof(buf)), VY_E_NOT_FOUND);
	cr_expect_null(vy_node_path_node(p, 8));
	struct vy_program *other = sample();
	cr_expect_eq(vy_node_path_index(p, other->entry.items[0]), VY_NODE_NONE);
	cr_expect_eq(vy_node_path_index(p, NULL), VY_NODE_NONE);
	vy_program_destroy(other);
	vy_program_destroy(p);
}

Test(node_path, long_paths_are_cut_with_an_ellipsis)
{
	struct vy_program *p = sample();
	char buf[16];
	cr_assert_eq(vy_node_path(p, 7, buf, sizeof(buf)), 0);
	cr_expect_eq(strlen(buf), 15);
	cr_expect_str_eq(buf, "entry[2].reg...");
	char tiny[2];
	cr_assert_eq(vy_node_path(p, 0, tiny, sizeof(tiny)), 0);
	cr_expect_eq(strlen(tiny), 1);
	vy_program_destroy(p);
}

/* A copy with lets inserted before statements maps back to the statements they precede. */
Test(node_path, origins_map_inserted_lets_to_the_next_statement)
{
	struct vy_program *written = sample();
	struct vy_program *lowered = sample();
	struct vy_program *p = lowered;
	/* Two lets before entry[1], one before the store inside the loop. */
	struct vy_node *top[] = {lowered->entry.items[0], LET("_vm0", U32(1)), LET("_vm1", U32(2)),
		lowered->entry.items[1], lowered->entry.items[2]};
	lowered->entry = vy_ir_seqv(p, top, 5);
	struct vy_node *loop = lowered->entry.items[3]->body.items[0];
	struct vy_node *body[] = {LET("_vm2", U32(3)), loop->body.items[0]};
	loop->body = vy_ir_seqv(p, body, 2);

	uint32_t n = vy_node_path_count(lowered);
	cr_assert_eq(n, 11);
	uint32_t map[11];
	cr_assert_eq(vy_node_path_origins(written, lowered, map, n), 0);
	uint32_t want[11] = {0, 1, 1, 1, 2, 3, 3, 4, 5, 6, 7};
	for (uint32_t i = 0; i < n; i++) {
		cr_expect_eq(map[i], want[i], "lowered node %u", i);
	}
	cr_expect_eq(vy_node_path_origins(written, lowered, map, 10), VY_E_INTERNAL,
		"too little room is refused");
	cr_expect_eq(vy_node_path_origins(lowered, written, map, n), VY_E_INTERNAL,
		"a program missing nodes is no rewrite");

	/* A changed statement is no rewrite either. */
	lowered->entry.items[4] = RETURN();
	cr_expect_eq(vy_node_path_origins(written, lowered, map, n), VY_E_INTERNAL);
	vy_program_destroy(lowered);
	vy_program_destroy(written);
}

Test(node_path, trap_sites_order_by_node_then_kind)
{
	cr_expect_lt(vy_trap_key(3, VY_TRAP_LOOP_LIMIT), vy_trap_key(4, VY_TRAP_INT_DIV_ZERO));
	cr_expect_lt(
		vy_trap_key(4, VY_TRAP_INT_DIV_ZERO), vy_trap_key(4, VY_TRAP_INT_OVERFLOW_DIV));
	cr_expect_lt(vy_trap_key(4, VY_TRAP_INT_OVERFLOW_DIV), vy_trap_key(4, VY_TRAP_LOOP_LIMIT));
	cr_expect_str_eq(vy_trap_kind_name(VY_TRAP_INT_DIV_ZERO), "int_div_zero");
	cr_expect_str_eq(vy_trap_kind_name(VY_TRAP_INT_OVERFLOW_DIV), "int_overflow_div");
	cr_expect_str_eq(vy_trap_kind_name(VY_TRAP_LOOP_LIMIT), "loop_limit");
	cr_expect_str_eq(vy_trap_kind_name(VY_TRAP_KIND_COUNT), "?");
}
