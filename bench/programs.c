/*
 * vybench's IR programs (programs.h). Each builds its buffers and entry with libvyre's builders;
 * a builder that fails returns NULL, which reaches vy_program_entry and is reported there.
 */
#include "programs.h"

#include <stddef.h>
#include <stdio.h>

static struct vy_expr *u32(struct vy_program *p, uint32_t v)
{
	return vy_expr_u32(p, v);
}

static struct vy_expr *var(struct vy_program *p, const char *name)
{
	return vy_expr_var(p, name);
}

static struct vy_expr *op2(
	struct vy_program *p, const char *op, struct vy_expr *a, struct vy_expr *b)
{
	return vy_expr_binary(p, op, a, b);
}

static struct vy_expr *load(struct vy_program *p, const char *buffer, struct vy_expr *index)
{
	return vy_expr_load(p, buffer, index);
}

/* Set the entry, check the program, and hand it over (or free it on failure). */
static struct vy_program *finish(
	struct vy_program *p, struct vy_node *const *body, size_t n, struct vy_error *err)
{
	if (vy_program_entry(p, body, n, err) != 0 || vy_program_check(p, err) != 0) {
		vy_program_free(p);
		return NULL;
	}
	return p;
}

struct vy_program *vy_bench_prog_tiny(uint32_t n, uint32_t add, struct vy_error *err)
{
	struct vy_program *p = vy_program_new("bench_tiny", n, 1, 1);
	if (vy_program_buffer(p, "x", 0, "read_only", "u32", n, 0, err) ||
		vy_program_buffer(p, "y", 1, "write_only", "u32", n, VY_BUFFER_OUTPUT, err)) {
		vy_program_free(p);
		return NULL;
	}
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_store(
			p, "y", var(p, "i"), op2(p, "add", load(p, "x", var(p, "i")), u32(p, add))),
	};
	return finish(p, body, 2, err);
}

struct vy_program *vy_bench_prog_stream(uint32_t n, struct vy_error *err)
{
	struct vy_program *p = vy_program_new("bench_stream", 256, 1, 1);
	if (vy_program_buffer(p, "x", 0, "read_only", "f32", n, 0, err) ||
		vy_program_buffer(p, "y", 1, "read_write", "f32", n, 0, err)) {
		vy_program_free(p);
		return NULL;
	}
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_store(p, "y", var(p, "i"),
			op2(p, "add", load(p, "x", var(p, "i")), load(p, "y", var(p, "i")))),
	};
	return finish(p, body, 2, err);
}

struct vy_program *vy_bench_prog_math(const char *op, bool binary, uint32_t n, struct vy_error *err)
{
	char name[64];
	snprintf(name, sizeof(name), "bench_math_%s", op);
	struct vy_program *p = vy_program_new(name, 256, 1, 1);
	const char *in0 = binary ? "a" : "x";
	uint32_t y = binary ? 2 : 1;
	if (vy_program_buffer(p, in0, 0, "read_only", "f32", n, 0, err) ||
		(binary && vy_program_buffer(p, "b", 1, "read_only", "f32", n, 0, err)) ||
		vy_program_buffer(p, "y", y, "read_write", "f32", n, 0, err)) {
		vy_program_free(p);
		return NULL;
	}
	struct vy_expr *a = load(p, in0, var(p, "i"));
	struct vy_expr *value =
		binary ? op2(p, op, a, load(p, "b", var(p, "i"))) : vy_expr_unary(p, op, a);
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_store(p, "y", var(p, "i"), value),
	};
	return finish(p, body, 2, err);
}

struct vy_program *vy_bench_prog_probe(struct vy_error *err)
{
	struct vy_program *p = vy_program_new("bench_probe", 64, 1, 1);
	if (vy_program_buffer(p, "x", 0, "read_only", "u32", 0, 0, err) ||
		vy_program_buffer(p, "out", 1, "write_only", "u32", 64, VY_BUFFER_OUTPUT, err)) {
		vy_program_free(p);
		return NULL;
	}
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_let(p, "stride", op2(p, "div", vy_expr_len(p, "x"), u32(p, 64))),
		vy_node_store(p, "out", var(p, "i"),
			load(p, "x", op2(p, "mul", var(p, "i"), var(p, "stride")))),
	};
	return finish(p, body, 3, err);
}

struct vy_program *vy_bench_prog_reduce(uint32_t groups, uint32_t per, struct vy_error *err)
{
	struct vy_program *p = vy_program_new("bench_reduce", 256, 1, 1);
	if (vy_program_buffer(p, "x", 0, "read_only", "u32", 0, 0, err) ||
		vy_program_buffer(p, "s", 1, "read_write", "u32", 1, VY_BUFFER_OUTPUT, err) ||
		vy_program_buffer(p, "part", 2, "workgroup", "u32", 256, 0, err)) {
		vy_program_free(p);
		return NULL;
	}
	/* Out-of-bounds loads read 0 (DESIGN.md §4.3), so the grid-stride loop needs no test. */
	struct vy_node *gather[] = {
		vy_node_assign(p, "acc",
			op2(p, "add", var(p, "acc"),
				load(p, "x",
					op2(p, "add", vy_expr_gid(p, 0),
						op2(p, "mul", var(p, "j"),
							u32(p, groups * 256u)))))),
	};
	struct vy_node *fold[] = {
		vy_node_store(p, "part", var(p, "l"),
			op2(p, "add", load(p, "part", var(p, "l")),
				load(p, "part", op2(p, "add", var(p, "l"), var(p, "h"))))),
	};
	struct vy_node *tree[] = {
		vy_node_let(p, "h", op2(p, "shr", u32(p, 128), var(p, "k"))),
		vy_node_if(p, op2(p, "lt", var(p, "l"), var(p, "h")), fold, 1, NULL, 0),
		vy_node_barrier(p, NULL),
	};
	struct vy_node *publish[] = {
		vy_node_let(p, "old",
			vy_expr_atomic(p, "add", "s", u32(p, 0), load(p, "part", u32(p, 0)))),
	};
	struct vy_node *body[] = {
		vy_node_let(p, "l", vy_expr_lid(p, 0)),
		vy_node_let(p, "acc", u32(p, 0)),
		vy_node_loop(p, "j", u32(p, 0), u32(p, per), gather, 1),
		vy_node_store(p, "part", var(p, "l"), var(p, "acc")),
		vy_node_barrier(p, NULL),
		vy_node_loop(p, "k", u32(p, 0), u32(p, 8), tree, 3),
		vy_node_if(p, op2(p, "eq", var(p, "l"), u32(p, 0)), publish, 1, NULL, 0),
	};
	return finish(p, body, 7, err);
}

struct vy_program *vy_bench_prog_matmul(uint32_t n, struct vy_error *err)
{
	struct vy_program *p = vy_program_new("bench_matmul", 16, 16, 1);
	uint32_t nn = n * n;
	if (vy_program_buffer(p, "a", 0, "read_only", "f32", nn, 0, err) ||
		vy_program_buffer(p, "b", 1, "read_only", "f32", nn, 0, err) ||
		vy_program_buffer(p, "c", 2, "write_only", "f32", nn, VY_BUFFER_OUTPUT, err) ||
		vy_program_buffer(p, "ta", 3, "workgroup", "f32", 256, 0, err) ||
		vy_program_buffer(p, "tb", 4, "workgroup", "f32", 256, 0, err)) {
		vy_program_free(p);
		return NULL;
	}
	/* ta[lr*16+k] * tb[k*16+lc], added to acc unfused, as the hand-written kernel does. */
	struct vy_node *inner[] = {
		vy_node_assign(p, "acc",
			op2(p, "add", var(p, "acc"),
				op2(p, "mul",
					load(p, "ta",
						op2(p, "add",
							op2(p, "mul", var(p, "lr"), u32(p, 16)),
							var(p, "k"))),
					load(p, "tb",
						op2(p, "add",
							op2(p, "mul", var(p, "k"), u32(p, 16)),
							var(p, "lc")))))),
	};
	struct vy_node *tile[] = {
		vy_node_let(p, "t16", op2(p, "mul", var(p, "t"), u32(p, 16))),
		vy_node_store(p, "ta", var(p, "slot"),
			load(p, "a",
				op2(p, "add", op2(p, "mul", var(p, "row"), u32(p, n)),
					op2(p, "add", var(p, "t16"), var(p, "lc"))))),
		vy_node_store(p, "tb", var(p, "slot"),
			load(p, "b",
				op2(p, "add",
					op2(p, "mul", op2(p, "add", var(p, "t16"), var(p, "lr")),
						u32(p, n)),
					var(p, "col")))),
		vy_node_barrier(p, NULL),
		vy_node_loop(p, "k", u32(p, 0), u32(p, 16), inner, 1),
		vy_node_barrier(p, NULL),
	};
	struct vy_node *body[] = {
		vy_node_let(p, "col", vy_expr_gid(p, 0)),
		vy_node_let(p, "row", vy_expr_gid(p, 1)),
		vy_node_let(p, "lc", vy_expr_lid(p, 0)),
		vy_node_let(p, "lr", vy_expr_lid(p, 1)),
		vy_node_let(p, "slot",
			op2(p, "add", op2(p, "mul", var(p, "lr"), u32(p, 16)), var(p, "lc"))),
		vy_node_let(p, "acc", vy_expr_f32(p, 0.0f)),
		vy_node_loop(p, "t", u32(p, 0), u32(p, n / 16), tile, 6),
		vy_node_store(p, "c",
			op2(p, "add", op2(p, "mul", var(p, "row"), u32(p, n)), var(p, "col")),
			var(p, "acc")),
	};
	return finish(p, body, 8, err);
}
