/*
 * Programs: the JSON form (files, text, round trip), local validation with every error, and the
 * builder: each builder used in one program that the daemon then runs, so a builder that builds
 * the wrong node shows up as a wrong output, and each kind of builder mistake reported by word.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lv.h"

Test(program, loads_a_file_and_round_trips_its_json)
{
	struct vy_program *p = lv_program("saxpy");
	char *json = vy_program_json(p, false);
	cr_assert(json && strstr(json, "\"saxpy\""), "%s", json);
	struct vy_program *q = NULL;
	struct vy_error err;
	lv_ok(vy_program_load_json(json, strlen(json), &q, &err), &err);
	char *again = vy_program_json(q, false);
	cr_assert_str_eq(json, again);
	char *pretty = vy_program_json(q, true);
	cr_assert(strchr(pretty, '\n'));
	cr_assert_null(vy_program_json(NULL, false));
	lv_ok(vy_program_check(q, &err), &err);
	cr_assert_eq(err.code, 0);
	free(json);
	free(again);
	free(pretty);
	vy_program_free(p);
	vy_program_free(q);
	vy_program_free(NULL);
}

Test(program, explains_bad_json_and_missing_files)
{
	struct vy_program *p = (struct vy_program *)1;
	struct vy_error err;
	const char *bad = "{\"vyre\": 1,\n \"name\": ,}";
	cr_assert_eq(vy_program_load_json(bad, strlen(bad), &p, &err), VY_ERROR_INVALID_PROGRAM);
	cr_assert_null(p);
	cr_assert(strstr(err.message, "line"), "%s", err.message);
	cr_assert(err.fix[0]);
	const char *unknown = "{\"vyre\": 1, \"workgroup_size\": [1,1,1], \"buffers\": [], "
			      "\"entry\": [], \"colour\": 3}";
	cr_assert_eq(
		vy_program_load_json(unknown, strlen(unknown), &p, &err), VY_ERROR_INVALID_PROGRAM);
	cr_assert(strstr(err.message, "colour") || strstr(err.at, "colour"), "%s at %s",
		err.message, err.at);
	cr_assert_eq(
		vy_program_load_file("/tmp/vyre-no-such-program.json", &p, &err), VY_ERROR_SYSTEM);
	cr_assert(strstr(err.message, "ENOENT"), "%s", err.message);
	cr_assert_str_eq(err.name, "SYSTEM_ERROR");
}

Test(program, check_reports_every_error_with_its_fix)
{
	struct vy_program *p = lv_invalid_program();
	struct vy_error err;
	cr_assert_eq(vy_program_check(p, &err), VY_ERROR_INVALID_PROGRAM);
	cr_assert_eq(err.n_errors, 2);
	cr_assert(strncmp(err.message, "2 errors", 8) == 0, "%s", err.message);
	for (size_t i = 0; i < 2; i++) {
		cr_assert(err.errors[i].at[0], "error %zu has no location", i);
		cr_assert(err.errors[i].fix[0], "error %zu has no fix", i);
		cr_assert_eq(err.errors[i].code, VY_ERROR_INVALID_PROGRAM);
	}
	vy_program_free(p);
}

/* A program that touches every expression and statement builder except the subgroup ones (not
 * every backend has subgroups): out[i] = in[i] * spec(mul) + 6 + (i < 32 ? 1 : 2), checked
 * against lid/wgid; f[i] = i * 0.5 + 1 in a region; cnt counts invocations atomically. */
static struct vy_program *build_every(void)
{
	struct vy_error err;
	struct vy_program *p = vy_program_new("lv_every_builder", 64, 1, 1);
	lv_ok(vy_program_buffer(p, "in", 0, "read_only", "u32", 64, 0, &err), &err);
	lv_ok(vy_program_buffer(p, "out", 1, "read_write", "u32", 64, 0, &err), &err);
	lv_ok(vy_program_buffer(p, "cnt", 2, "read_write", "u32", 1, 0, &err), &err);
	lv_ok(vy_program_buffer(p, "f", 3, "write_only", "f32", 64, 0, &err), &err);
	lv_ok(vy_program_hints(p, "in", 64, 0, "streaming", &err), &err);
	struct vy_expr *i = vy_expr_var(p, "i");
	struct vy_node *early[] = {vy_node_return(p)};
	struct vy_node *acc_step[] = {vy_node_assign(
		p, "acc", vy_expr_binary(p, "add", vy_expr_var(p, "acc"), vy_expr_var(p, "k")))};
	struct vy_expr *linear = vy_expr_binary(p, "add",
		vy_expr_binary(p, "mul", vy_expr_wgid(p, 0), vy_expr_u32(p, 64)),
		vy_expr_lid(p, 0));
	struct vy_expr *id_error = vy_expr_select(
		p, vy_expr_binary(p, "eq", linear, i), vy_expr_u32(p, 0), vy_expr_u32(p, 1000));
	struct vy_expr *value = vy_expr_binary(p, "add",
		vy_expr_binary(p, "mul", vy_expr_load(p, "in", i),
			vy_expr_spec(p, "mul", vy_expr_u32(p, 3))),
		vy_expr_binary(p, "add", vy_expr_var(p, "acc"), vy_expr_var(p, "t")));
	struct vy_node *inner[] = {
		vy_node_let(p, "t",
			vy_expr_select(p, vy_expr_binary(p, "lt", i, vy_expr_u32(p, 32)),
				vy_expr_u32(p, 1), vy_expr_u32(p, 2))),
		vy_node_store(p, "out", i,
			vy_expr_binary(p, "add", value,
				vy_expr_bitcast(p, "u32",
					vy_expr_bitcast(p, "i32",
						vy_expr_unary(p, "bit_not",
							vy_expr_unary(p, "bit_not", id_error)))))),
	};
	struct vy_node *gen[] = {vy_node_store(p, "f", i,
		vy_expr_fma(
			p, vy_expr_cast(p, "f32", i), vy_expr_f32(p, 0.5f), vy_expr_f32(p, 1.0f)))};
	struct vy_node *body[] = {
		vy_node_barrier(p, NULL),
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_if(p, vy_expr_binary(p, "ge", i, vy_expr_len(p, "out")), early, 1, NULL, 0),
		vy_node_let(p, "acc", vy_expr_u32(p, 0)),
		vy_node_loop(p, "k", vy_expr_u32(p, 0), vy_expr_u32(p, 4), acc_step, 1),
		vy_node_block(p, inner, 2),
		vy_node_region(p, "lv.gen", gen, 1),
		vy_node_let(p, "old",
			vy_expr_atomic(p, "add", "cnt", vy_expr_u32(p, 0), vy_expr_u32(p, 1))),
		vy_node_let(p, "swapped",
			vy_expr_atomic_cas(p, "cnt", vy_expr_u32(p, 0), vy_expr_u32(p, 999999),
				vy_expr_u32(p, 5))),
		vy_node_if(p, vy_expr_bool(p, false), early, 1, early, 1),
	};
	lv_ok(vy_program_entry(p, body, sizeof(body) / sizeof(body[0]), &err), &err);
	lv_ok(vy_program_check(p, &err), &err);
	return p;
}

static void check_every(struct vy_client *c, struct vy_program *p, uint32_t mul)
{
	uint32_t in[64];
	uint32_t out[64] = {0};
	uint32_t cnt = 0;
	for (uint32_t k = 0; k < 64; k++) {
		in[k] = k;
	}
	struct vy_dispatch_input inputs[] = {
		vy_input_bytes(in, sizeof(in)),
		vy_input_bytes(out, sizeof(out)),
		vy_input_bytes(&cnt, sizeof(cnt)),
	};
	struct vy_spec_arg spec = {.name = "mul", .type = VY_SPEC_TYPE_U32, .v.u32 = mul};
	struct vy_dispatch_options opt = {.spec = &spec, .n_spec = 1};
	struct vy_dispatch_args args = {
		.program = p, .inputs = inputs, .n_inputs = 3, .options = mul != 3 ? &opt : NULL};
	struct vy_reply *r = NULL;
	struct vy_error err;
	lv_ok(vy_dispatch(c, &args, &r, &err), &err);
	cr_assert_eq(vy_reply_outputs(r), 3);
	size_t len = 0;
	const uint32_t *o = vy_reply_output(r, 0, &len);
	cr_assert_eq(len, sizeof(out));
	for (uint32_t k = 0; k < 64; k++) {
		cr_assert_eq(o[k], k * mul + 6 + (k < 32 ? 1 : 2), "out[%u] = %u", k, o[k]);
	}
	const uint32_t *n = vy_reply_output(r, 1, &len);
	cr_assert_eq(len, 4);
	cr_assert_eq(*n, 64);
	const float *f = vy_reply_output(r, 2, &len);
	cr_assert_eq(len, 64 * sizeof(float));
	for (uint32_t k = 0; k < 64; k++) {
		cr_assert_float_eq(f[k], (float)k * 0.5f + 1.0f, 0.0f);
	}
	cr_assert_null(vy_reply_output(r, 3, &len));
	cr_assert_eq(len, 0);
	vy_reply_destroy(r);
}

Test(builder, builds_a_program_the_daemon_runs)
{
	struct vy_program *p = build_every();
	char *json = vy_program_json(p, false);
	cr_assert(strstr(json, "\"alignment\":64") && strstr(json, "\"streaming\""), "%s", json);
	cr_assert(strstr(json, "[\"region\",\"lv.gen\""), "%s", json);
	cr_assert(strstr(json, "[\"barrier\"]"), "%s", json);
	free(json);
	struct vy_client *c = lv_connect("lv-builder");
	check_every(c, p, 3);
	check_every(c, p, 5);
	vy_client_close(c);
	vy_program_free(p);
}

Test(builder, builds_subgroup_expressions)
{
	struct vy_error err;
	struct vy_program *p = vy_program_new("lv_subgroups", 64, 1, 1);
	lv_ok(vy_program_buffer(p, "out", 0, "write_only", "u32", 64, VY_BUFFER_OUTPUT, &err),
		&err);
	lv_ok(vy_program_buffer(p, "live", 1, "read_write", "u32", 64, VY_BUFFER_LIVE_OUT, &err),
		&err);
	struct vy_expr *lane = vy_expr_subgroup_lane(p);
	struct vy_expr *sum = vy_expr_subgroup_reduce(p, "add", lane);
	struct vy_expr *shuffled = vy_expr_subgroup_shuffle(p, sum, vy_expr_u32(p, 0));
	struct vy_expr *ballot = vy_expr_subgroup_ballot(p, vy_expr_bool(p, true));
	struct vy_expr *total = vy_expr_binary(
		p, "add", shuffled, vy_expr_binary(p, "add", ballot, vy_expr_subgroup_size(p)));
	struct vy_node *body[] = {vy_node_store(p, "out", vy_expr_gid(p, 0), total)};
	lv_ok(vy_program_entry(p, body, 1, &err), &err);
	lv_ok(vy_program_check(p, &err), &err);
	char *json = vy_program_json(p, false);
	for (const char *const *w = (const char *const[]){"subgroup_lane", "subgroup_reduce",
		     "subgroup_shuffle", "subgroup_ballot", "subgroup_size", "\"output\":true",
		     "\"live_out\":true", NULL};
		*w; w++) {
		cr_assert(strstr(json, *w), "%s is missing from %s", *w, json);
	}
	free(json);
	vy_program_free(p);
}

Test(builder, names_the_word_it_could_not_use)
{
	struct vy_error err;
	struct vy_program *p = vy_program_new("lv_bad_words", 64, 1, 1);
	cr_assert_eq(vy_program_buffer(p, "a", 0, "read_mostly", "u32", 1, 0, &err),
		VY_ERROR_INVALID_ARGUMENT);
	cr_assert(strstr(err.message, "read_mostly"), "%s", err.message);
	cr_assert_eq(vy_program_buffer(p, "a", 0, "read_only", "u64", 1, 0, &err),
		VY_ERROR_INVALID_ARGUMENT);
	cr_assert(strstr(err.message, "u64"), "%s", err.message);
	cr_assert_eq(vy_program_buffer(p, "a", 0, "read_only", "u32", 1, 8, &err),
		VY_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(vy_program_hints(p, "nope", 0, -1, "random", &err), VY_ERROR_INVALID_ARGUMENT);
	lv_ok(vy_program_buffer(p, "a", 0, "read_write", "u32", 1, 0, &err), &err);
	cr_assert_eq(vy_program_hints(p, "a", 0, -1, "sometimes", &err), VY_ERROR_INVALID_ARGUMENT);

	struct vy_expr *one = vy_expr_u32(p, 1);
	cr_assert_null(vy_expr_binary(p, "addd", one, one));
	cr_assert_null(vy_expr_unary(p, "sqroot", one));
	cr_assert_null(vy_expr_cast(p, "f64", one));
	cr_assert_null(vy_expr_bitcast(p, "f64", one));
	cr_assert_null(vy_expr_atomic(p, "compare_exchange", "a", one, one));
	cr_assert_null(vy_expr_subgroup_reduce(p, "avg", one));
	cr_assert_null(vy_expr_gid(p, 3));
	cr_assert_null(vy_expr_spec(p, "s", vy_expr_var(p, "x")));
	cr_assert_null(vy_node_barrier(p, "sometimes"));
	cr_assert_null(vy_node_let(p, "x", NULL));
	cr_assert_null(vy_expr_var(NULL, "x"));
	/* The first mistake is the one reported; a NULL travels up to the entry. */
	struct vy_node *body[] = {
		vy_node_store(p, "a", one, vy_expr_binary(p, "mul", one, NULL)),
	};
	cr_assert_eq(vy_program_entry(p, body, 1, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert(strstr(err.message, "\"addd\""), "%s", err.message);
	cr_assert(err.fix[0]);
	/* Reporting clears the note: the next mistake names its own word. */
	struct vy_node *again[] = {vy_node_barrier(p, "eventually")};
	cr_assert_eq(vy_program_entry(p, again, 1, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert(strstr(err.message, "eventually"), "%s", err.message);
	vy_program_free(p);
}

Test(builder, refuses_a_33rd_buffer)
{
	struct vy_error err;
	struct vy_program *p = vy_program_new(NULL, 1, 1, 1);
	char name[16];
	for (uint32_t k = 0; k < 32; k++) {
		snprintf(name, sizeof(name), "b%u", k);
		lv_ok(vy_program_buffer(p, name, k, "read_only", "u32", 1, 0, &err), &err);
	}
	cr_assert_eq(vy_program_buffer(p, "b32", 32, "read_only", "u32", 1, 0, &err),
		VY_ERROR_INVALID_ARGUMENT);
	cr_assert(strstr(err.fix, "32"), "%s", err.fix);
	vy_program_free(p);
}
