/*
 * Programs for libvyre users: the JSON form through the protocol's codec, and a builder that
 * wraps the IR builders of protocol/ir.h behind the IR's own words ("add", "read_only", "f32"),
 * so the public header needs none of the internal enums.
 *
 * A builder that meets an unknown word returns NULL and notes the word in a per-thread slot;
 * every builder passes a NULL operand on as NULL, and vy_program_entry reports the note. Building
 * one program is single-threaded (ir.h), so the note of the thread names the mistake of the
 * program being built.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "codec.h"
#include "internal.h"
#include "ir.h"
#include "validate.h"

/* JSON documents far above the IR's 16 MiB msgpack limit are refused before parsing. */
#define MAX_JSON_FILE ((size_t)64 * 1024 * 1024)

static _Thread_local char build_note[192];

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void note(const char *fmt, ...)
{
	if (build_note[0]) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(build_note, sizeof(build_note), fmt, ap);
	va_end(ap);
}

int vy_program_load_json(
	const char *text, size_t len, struct vy_program **out, struct vy_error *err)
{
	*out = NULL;
	struct vy_err e = {0};
	if (vy_program_from_json(text, len, out, &e) != 0) {
		return vy__error_from_err(err, &e);
	}
	return 0;
}

int vy_program_load_file(const char *path, struct vy_program **out, struct vy_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		return vy__error_set(err, VY_ERROR_SYSTEM, NULL,
			"check the path and its permissions", "cannot open %s: %s (%s)", path,
			strerror(e), strerrorname_np(e));
	}
	size_t cap = 1 << 16;
	size_t len = 0;
	char *text = malloc(cap);
	int rc = 0;
	while (text) {
		if (len == cap) {
			if (cap >= MAX_JSON_FILE) {
				rc = vy__error_set(err, VY_ERROR_INVALID_PROGRAM, NULL,
					"keep the program document under 16 MiB",
					"%s is larger than %zu bytes", path, MAX_JSON_FILE);
				break;
			}
			cap *= 2;
			char *grown = realloc(text, cap);
			if (!grown) {
				break;
			}
			text = grown;
		}
		size_t n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			break;
		}
	}
	if (!text) {
		fclose(f);
		return vy__error_set(err, VY_ERROR_OUT_OF_MEMORY, NULL, "free memory and try again",
			"no memory to read %s", path);
	}
	if (rc == 0 && ferror(f)) {
		rc = vy__error_set(err, VY_ERROR_SYSTEM, NULL, "check the file and the disk",
			"cannot read %s", path);
	}
	fclose(f);
	if (rc == 0) {
		rc = vy_program_load_json(text, len, out, err);
	}
	free(text);
	return rc;
}

char *vy_program_json(const struct vy_program *p, bool pretty)
{
	return p ? vy_program_to_json(p, pretty) : NULL;
}

int vy_program_check(struct vy_program *p, struct vy_error *err)
{
	struct vy_err_list list;
	vy_err_list_init(&list);
	int rc = vy_validate(p, NULL, &list);
	if (rc != 0 && list.len > 0) {
		vy__error_from_err(err, &list.items[0]);
		if (err) {
			err->code = rc;
			snprintf(err->name, sizeof(err->name), "%s", vy_error_name(rc));
			err->n_errors = list.len + list.dropped;
			for (size_t i = 0; i < list.len && i < VY_ERROR_ITEMS_MAX; i++) {
				struct vy_error_item *it = &err->errors[i];
				it->code = list.items[i].code;
				snprintf(it->at, sizeof(it->at), "%s", list.items[i].at);
				snprintf(it->message, sizeof(it->message), "%s",
					list.items[i].message);
				snprintf(it->fix, sizeof(it->fix), "%s", list.items[i].fix);
			}
			if (err->n_errors > 1) {
				snprintf(err->message, sizeof(err->message),
					"%zu errors; first: %.340s", err->n_errors,
					list.items[0].message);
			}
		}
	} else if (rc == 0) {
		vy_error_clear(err);
	}
	vy_err_list_finish(&list);
	return rc;
}

void vy_program_free(struct vy_program *p)
{
	vy_program_destroy(p);
}

/* --- building --- */

struct vy_program *vy_program_new(const char *name, uint32_t wx, uint32_t wy, uint32_t wz)
{
	build_note[0] = '\0';
	return vy_program_create(name, wx, wy, wz);
}

int vy_program_buffer(struct vy_program *p, const char *name, uint32_t binding, const char *access,
	const char *type, uint32_t count, unsigned flags, struct vy_error *err)
{
	const char *fix = "use the words of docs/ir.md";
	int acc = access ? vy_access_from_name(access, strlen(access)) : -1;
	int ty = type ? vy_type_from_name(type, strlen(type)) : -1;
	if (!p || !name) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "buffers",
			"pass a program and a buffer name", "a buffer needs a program and a name");
	}
	if (acc < 0) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "buffers.access", fix,
			"buffer %s: unknown access \"%s\"", name, access ? access : "(null)");
	}
	if (ty < 0) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "buffers.type", fix,
			"buffer %s: unknown type \"%s\"", name, type ? type : "(null)");
	}
	if (flags & ~(VY_BUFFER_OUTPUT | VY_BUFFER_LIVE_OUT)) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "buffers",
			"combine only VY_BUFFER_OUTPUT and VY_BUFFER_LIVE_OUT",
			"buffer %s: unknown flags 0x%x", name, flags);
	}
	struct vy_buffer *b = vy_program_add_buffer(
		p, name, binding, (enum vy_access)acc, (enum vy_type)ty, count);
	if (!b) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "buffers",
			"merge buffers: a program holds at most 32", "buffer %s would be number %d",
			name, VY_IR_MAX_BUFFERS + 1);
	}
	b->output = flags & VY_BUFFER_OUTPUT;
	b->live_out = flags & VY_BUFFER_LIVE_OUT;
	return 0;
}

int vy_program_hints(struct vy_program *p, const char *buffer, uint32_t alignment,
	int32_t coalesce_axis, const char *locality, struct vy_error *err)
{
	int loc = locality ? vy_locality_from_name(locality, strlen(locality)) : -1;
	struct vy_buffer *b = NULL;
	for (uint32_t i = 0; p && buffer && i < p->n_buffers; i++) {
		if (strcmp(p->buffers[i].name, buffer) == 0) {
			b = &p->buffers[i];
		}
	}
	if (!b) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "buffers",
			"declare the buffer with vy_program_buffer first", "no buffer named %s",
			buffer ? buffer : "(null)");
	}
	if (loc < 0) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "buffers.hints.locality",
			"use temporal, streaming or random", "buffer %s: unknown locality \"%s\"",
			buffer, locality ? locality : "(null)");
	}
	b->has_hints = true;
	b->hints.alignment = alignment;
	b->hints.coalesce_axis = coalesce_axis;
	b->hints.locality = (enum vy_locality)loc;
	return 0;
}

/* A block of `n` statements, or false when one is NULL or there are too many. */
static bool make_block(
	struct vy_program *p, struct vy_node *const *body, size_t n, struct vy_block *out)
{
	if (n > VY_IR_MAX_NODES || (n > 0 && !body)) {
		note("a body of %zu statements", n);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (!body[i]) {
			return false;
		}
	}
	*out = vy_ir_seqv(p, body, (uint32_t)n);
	return true;
}

int vy_program_entry(
	struct vy_program *p, struct vy_node *const *body, size_t n, struct vy_error *err)
{
	struct vy_block block;
	if (!p || !make_block(p, body, n, &block)) {
		int rc = vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "entry",
			"fix the builder call that returned NULL",
			"a statement of the program could not be built: %s",
			build_note[0] ? build_note : "a NULL statement or program");
		build_note[0] = '\0';
		return rc;
	}
	vy_program_set_entry(p, block);
	return 0;
}

/* Look a word up; note it when unknown. */
static int word(int (*lookup)(const char *, size_t), const char *what, const char *name)
{
	int v = name ? lookup(name, strlen(name)) : -1;
	if (v < 0) {
		note("unknown %s \"%s\"", what, name ? name : "(null)");
	}
	return v;
}

#define NEED(...)                                                                                  \
	do {                                                                                       \
		const void *need_[] = {__VA_ARGS__};                                               \
		for (size_t k_ = 0; k_ < sizeof(need_) / sizeof(need_[0]); k_++) {                 \
			if (!need_[k_]) {                                                          \
				return NULL;                                                       \
			}                                                                          \
		}                                                                                  \
	} while (0)

struct vy_expr *vy_expr_u32(struct vy_program *p, uint32_t v)
{
	NEED(p);
	return vy_ir_u32(p, v);
}

struct vy_expr *vy_expr_i32(struct vy_program *p, int32_t v)
{
	NEED(p);
	return vy_ir_i32(p, v);
}

struct vy_expr *vy_expr_f32(struct vy_program *p, float v)
{
	NEED(p);
	return vy_ir_f32(p, v);
}

struct vy_expr *vy_expr_bool(struct vy_program *p, bool v)
{
	NEED(p);
	return vy_ir_bool(p, v);
}

struct vy_expr *vy_expr_var(struct vy_program *p, const char *name)
{
	NEED(p, name);
	return vy_ir_var(p, name);
}

struct vy_expr *vy_expr_load(struct vy_program *p, const char *buffer, struct vy_expr *index)
{
	NEED(p, buffer, index);
	return vy_ir_load(p, buffer, index);
}

struct vy_expr *vy_expr_len(struct vy_program *p, const char *buffer)
{
	NEED(p, buffer);
	return vy_ir_len(p, buffer);
}

static bool axis_ok(uint32_t axis)
{
	if (axis > 2) {
		note("axis %u (0, 1 or 2)", axis);
	}
	return axis <= 2;
}

struct vy_expr *vy_expr_gid(struct vy_program *p, uint32_t axis)
{
	NEED(p);
	return axis_ok(axis) ? vy_ir_gid(p, axis) : NULL;
}

struct vy_expr *vy_expr_lid(struct vy_program *p, uint32_t axis)
{
	NEED(p);
	return axis_ok(axis) ? vy_ir_lid(p, axis) : NULL;
}

struct vy_expr *vy_expr_wgid(struct vy_program *p, uint32_t axis)
{
	NEED(p);
	return axis_ok(axis) ? vy_ir_wgid(p, axis) : NULL;
}

struct vy_expr *vy_expr_binary(
	struct vy_program *p, const char *op, struct vy_expr *a, struct vy_expr *b)
{
	int o = word(vy_binop_from_name, "binary operator", op);
	NEED(p, a, b);
	return o < 0 ? NULL : vy_ir_binary(p, (enum vy_binop)o, a, b);
}

struct vy_expr *vy_expr_unary(struct vy_program *p, const char *op, struct vy_expr *a)
{
	int o = word(vy_unop_from_name, "unary operator", op);
	NEED(p, a);
	return o < 0 ? NULL : vy_ir_unary(p, (enum vy_unop)o, a);
}

struct vy_expr *vy_expr_select(
	struct vy_program *p, struct vy_expr *cond, struct vy_expr *a, struct vy_expr *b)
{
	NEED(p, cond, a, b);
	return vy_ir_select(p, cond, a, b);
}

struct vy_expr *vy_expr_cast(struct vy_program *p, const char *type, struct vy_expr *a)
{
	int t = word(vy_type_from_name, "type", type);
	NEED(p, a);
	return t < 0 ? NULL : vy_ir_cast(p, (enum vy_type)t, a);
}

struct vy_expr *vy_expr_bitcast(struct vy_program *p, const char *type, struct vy_expr *a)
{
	int t = word(vy_type_from_name, "type", type);
	NEED(p, a);
	return t < 0 ? NULL : vy_ir_bitcast(p, (enum vy_type)t, a);
}

struct vy_expr *vy_expr_fma(
	struct vy_program *p, struct vy_expr *a, struct vy_expr *b, struct vy_expr *c)
{
	NEED(p, a, b, c);
	return vy_ir_fma(p, a, b, c);
}

struct vy_expr *vy_expr_atomic(struct vy_program *p, const char *op, const char *buffer,
	struct vy_expr *index, struct vy_expr *value)
{
	int o = word(vy_atomic_from_name, "atomic operator", op);
	if (o == VY_ATOMIC_COMPARE_EXCHANGE) {
		note("atomic compare_exchange (use vy_expr_atomic_cas)");
		return NULL;
	}
	NEED(p, buffer, index, value);
	return o < 0 ? NULL : vy_ir_atomic(p, (enum vy_atomic_op)o, buffer, index, value);
}

struct vy_expr *vy_expr_atomic_cas(struct vy_program *p, const char *buffer, struct vy_expr *index,
	struct vy_expr *expected, struct vy_expr *value)
{
	NEED(p, buffer, index, expected, value);
	return vy_ir_atomic_cas(p, buffer, index, expected, value);
}

struct vy_expr *vy_expr_spec(struct vy_program *p, const char *name, struct vy_expr *fallback)
{
	NEED(p, name, fallback);
	if (fallback->kind != VY_EXPR_LIT) {
		note("default of spec constant %s (a literal is needed)", name);
		return NULL;
	}
	return vy_ir_spec(p, name, fallback->type, fallback->bits);
}

struct vy_expr *vy_expr_subgroup_reduce(struct vy_program *p, const char *op, struct vy_expr *a)
{
	int o = word(vy_reduce_from_name, "subgroup reduction", op);
	NEED(p, a);
	return o < 0 ? NULL : vy_ir_subgroup_reduce(p, (enum vy_reduce_op)o, a);
}

struct vy_expr *vy_expr_subgroup_shuffle(
	struct vy_program *p, struct vy_expr *value, struct vy_expr *lane)
{
	NEED(p, value, lane);
	return vy_ir_subgroup_shuffle(p, value, lane);
}

struct vy_expr *vy_expr_subgroup_ballot(struct vy_program *p, struct vy_expr *cond)
{
	NEED(p, cond);
	return vy_ir_subgroup_ballot(p, cond);
}

struct vy_expr *vy_expr_subgroup_lane(struct vy_program *p)
{
	NEED(p);
	return vy_ir_subgroup_lane(p);
}

struct vy_expr *vy_expr_subgroup_size(struct vy_program *p)
{
	NEED(p);
	return vy_ir_subgroup_size(p);
}

struct vy_node *vy_node_let(struct vy_program *p, const char *name, struct vy_expr *value)
{
	NEED(p, name, value);
	return vy_ir_let(p, name, value);
}

struct vy_node *vy_node_assign(struct vy_program *p, const char *name, struct vy_expr *value)
{
	NEED(p, name, value);
	return vy_ir_assign(p, name, value);
}

struct vy_node *vy_node_store(
	struct vy_program *p, const char *buffer, struct vy_expr *index, struct vy_expr *value)
{
	NEED(p, buffer, index, value);
	return vy_ir_store(p, buffer, index, value);
}

struct vy_node *vy_node_if(struct vy_program *p, struct vy_expr *cond,
	struct vy_node *const *then_body, size_t n_then, struct vy_node *const *else_body,
	size_t n_else)
{
	NEED(p, cond);
	struct vy_block then_block;
	struct vy_block else_block;
	if (!make_block(p, then_body, n_then, &then_block) ||
		!make_block(p, else_body, n_else, &else_block)) {
		return NULL;
	}
	return vy_ir_if(p, cond, then_block, else_block);
}

struct vy_node *vy_node_loop(struct vy_program *p, const char *var, struct vy_expr *from,
	struct vy_expr *to, struct vy_node *const *body, size_t n)
{
	NEED(p, var, from, to);
	struct vy_block block;
	return make_block(p, body, n, &block) ? vy_ir_loop(p, var, from, to, block) : NULL;
}

struct vy_node *vy_node_return(struct vy_program *p)
{
	NEED(p);
	return vy_ir_return(p);
}

struct vy_node *vy_node_block(struct vy_program *p, struct vy_node *const *body, size_t n)
{
	NEED(p);
	struct vy_block block;
	return make_block(p, body, n, &block) ? vy_ir_block(p, block) : NULL;
}

struct vy_node *vy_node_region(
	struct vy_program *p, const char *generator, struct vy_node *const *body, size_t n)
{
	NEED(p, generator);
	struct vy_block block;
	return make_block(p, body, n, &block) ? vy_ir_region(p, generator, block) : NULL;
}

struct vy_node *vy_node_barrier(struct vy_program *p, const char *order)
{
	NEED(p);
	int o = order ? word(vy_order_from_name, "barrier ordering", order) : VY_ORDER_SEQ_CST;
	return o < 0 ? NULL : vy_ir_barrier(p, (enum vy_order)o);
}
