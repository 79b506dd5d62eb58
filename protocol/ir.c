/* Name tables of the IR enums, the program builders and the deep copy. */
#include "ir.h"

#include "arena.h"

#include <stdarg.h>
#include <string.h>

#define VY__NAME(suffix, wire) wire,
static const char *const type_names[] = {VY_TYPE_MAP(VY__NAME)};
static const char *const access_names[] = {VY_ACCESS_MAP(VY__NAME)};
static const char *const locality_names[] = {VY_LOCALITY_MAP(VY__NAME)};
static const char *const order_names[] = {VY_ORDER_MAP(VY__NAME)};
static const char *const binop_names[] = {VY_BINOP_MAP(VY__NAME)};
static const char *const unop_names[] = {VY_UNOP_MAP(VY__NAME)};
static const char *const atomic_names[] = {VY_ATOMIC_MAP(VY__NAME)};
static const char *const reduce_names[] = {VY_REDUCE_MAP(VY__NAME)};
#undef VY__NAME

static const char *const node_kind_names[] = {
	"let", "assign", "store", "if", "loop", "return", "block", "region", "barrier"};
static const char *const expr_kind_names[] = {"lit", "var", "load", "len", "gid", "lid", "wgid",
	"binary", "unary", "select", "cast", "fma", "atomic", "spec", "subgroup_reduce",
	"subgroup_shuffle", "subgroup_ballot", "subgroup_lane", "subgroup_size", "bitcast"};

_Static_assert(sizeof(node_kind_names) / sizeof(node_kind_names[0]) == VY_NODE_KIND_COUNT,
	"node kind names");
_Static_assert(sizeof(expr_kind_names) / sizeof(expr_kind_names[0]) == VY_EXPR_KIND_COUNT,
	"expr kind names");

static const char *name_at(const char *const *names, unsigned count, unsigned i)
{
	return i < count ? names[i] : "?";
}

static int lookup(const char *const *names, unsigned count, const char *name, size_t len)
{
	for (unsigned i = 0; i < count; i++) {
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) {
			return (int)i;
		}
	}
	return -1;
}

#define VY__TABLE(fn, type, table, count)                                                          \
	const char *vy_##fn##_name(type v)                                                         \
	{                                                                                          \
		return name_at(table, count, (unsigned)v);                                         \
	}                                                                                          \
	int vy_##fn##_from_name(const char *name, size_t len)                                      \
	{                                                                                          \
		return lookup(table, count, name, len);                                            \
	}
VY__TABLE(type, enum vy_type, type_names, VY_TYPE_COUNT)
VY__TABLE(access, enum vy_access, access_names, VY_ACCESS_COUNT)
VY__TABLE(locality, enum vy_locality, locality_names, VY_LOCALITY_COUNT)
VY__TABLE(order, enum vy_order, order_names, VY_ORDER_COUNT)
VY__TABLE(binop, enum vy_binop, binop_names, VY_BINOP_COUNT)
VY__TABLE(unop, enum vy_unop, unop_names, VY_UNOP_COUNT)
VY__TABLE(atomic, enum vy_atomic_op, atomic_names, VY_ATOMIC_COUNT)
VY__TABLE(reduce, enum vy_reduce_op, reduce_names, VY_REDUCE_COUNT)
#undef VY__TABLE

const char *vy_node_kind_name(enum vy_node_kind kind)
{
	return name_at(node_kind_names, VY_NODE_KIND_COUNT, (unsigned)kind);
}

const char *vy_expr_kind_name(enum vy_expr_kind kind)
{
	return name_at(expr_kind_names, VY_EXPR_KIND_COUNT, (unsigned)kind);
}

struct vy_program *vy_program_create(const char *name, uint32_t wx, uint32_t wy, uint32_t wz)
{
	struct vy_arena *arena = vy_arena_create();
	struct vy_program *p = vy_arena_alloc(arena, sizeof(*p));
	p->arena = arena;
	p->version = VY_IR_VERSION;
	p->name = name ? vy_arena_strdup(arena, name) : NULL;
	p->workgroup_size[0] = wx;
	p->workgroup_size[1] = wy;
	p->workgroup_size[2] = wz;
	p->buffers = vy_arena_calloc(arena, VY_IR_MAX_BUFFERS, sizeof(*p->buffers));
	return p;
}

void vy_program_destroy(struct vy_program *program)
{
	if (program) {
		vy_arena_destroy(program->arena);
	}
}

struct vy_buffer *vy_program_add_buffer(struct vy_program *p, const char *name, uint32_t binding,
	enum vy_access access, enum vy_type type, uint32_t count)
{
	if (p->n_buffers >= VY_IR_MAX_BUFFERS) {
		return NULL;
	}
	struct vy_buffer *b = &p->buffers[p->n_buffers++];
	b->name = vy_arena_strdup(p->arena, name);
	b->binding = binding;
	b->access = access;
	b->type = type;
	b->count = count;
	b->hints.coalesce_axis = -1;
	b->hints.locality = VY_LOCALITY_TEMPORAL;
	return b;
}

const struct vy_buffer *vy_program_find_buffer(const struct vy_program *p, const char *name)
{
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		if (strcmp(p->buffers[i].name, name) == 0) {
			return &p->buffers[i];
		}
	}
	return NULL;
}

static struct vy_expr *expr_new(struct vy_program *p, enum vy_expr_kind kind, uint32_t nargs)
{
	struct vy_expr *e = vy_arena_alloc(p->arena, sizeof(*e));
	e->kind = kind;
	e->type = VY_TYPE_NONE;
	e->nargs = nargs;
	return e;
}

struct vy_expr *vy_ir_lit(struct vy_program *p, enum vy_type type, uint32_t bits)
{
	struct vy_expr *e = expr_new(p, VY_EXPR_LIT, 0);
	e->type = type;
	e->bits = bits;
	return e;
}

struct vy_expr *vy_ir_u32(struct vy_program *p, uint32_t v)
{
	return vy_ir_lit(p, VY_TYPE_U32, v);
}

struct vy_expr *vy_ir_i32(struct vy_program *p, int32_t v)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof(bits));
	return vy_ir_lit(p, VY_TYPE_I32, bits);
}

struct vy_expr *vy_ir_f32(struct vy_program *p, float v)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof(bits));
	return vy_ir_lit(p, VY_TYPE_F32, bits);
}

struct vy_expr *vy_ir_bool(struct vy_program *p, bool v)
{
	return vy_ir_lit(p, VY_TYPE_BOOL, v ? 1u : 0u);
}

static struct vy_expr *named(struct vy_program *p, enum vy_expr_kind kind, const char *name)
{
	struct vy_expr *e = expr_new(p, kind, 0);
	e->name = vy_arena_strdup(p->arena, name);
	return e;
}

struct vy_expr *vy_ir_var(struct vy_program *p, const char *name)
{
	return named(p, VY_EXPR_VAR, name);
}

struct vy_expr *vy_ir_load(struct vy_program *p, const char *buffer, struct vy_expr *index)
{
	struct vy_expr *e = named(p, VY_EXPR_LOAD, buffer);
	e->nargs = 1;
	e->args[0] = index;
	return e;
}

struct vy_expr *vy_ir_len(struct vy_program *p, const char *buffer)
{
	return named(p, VY_EXPR_LEN, buffer);
}

static struct vy_expr *axis_expr(struct vy_program *p, enum vy_expr_kind kind, uint32_t axis)
{
	struct vy_expr *e = expr_new(p, kind, 0);
	e->bits = axis;
	return e;
}

struct vy_expr *vy_ir_gid(struct vy_program *p, uint32_t axis)
{
	return axis_expr(p, VY_EXPR_GID, axis);
}

struct vy_expr *vy_ir_lid(struct vy_program *p, uint32_t axis)
{
	return axis_expr(p, VY_EXPR_LID, axis);
}

struct vy_expr *vy_ir_wgid(struct vy_program *p, uint32_t axis)
{
	return axis_expr(p, VY_EXPR_WGID, axis);
}

static struct vy_expr *with_args(struct vy_program *p, enum vy_expr_kind kind, uint32_t op,
	struct vy_expr *a, struct vy_expr *b, struct vy_expr *c)
{
	struct vy_expr *e = expr_new(p, kind, c ? 3 : b ? 2 : a ? 1 : 0);
	e->op = op;
	e->args[0] = a;
	e->args[1] = b;
	e->args[2] = c;
	return e;
}

struct vy_expr *vy_ir_binary(
	struct vy_program *p, enum vy_binop op, struct vy_expr *a, struct vy_expr *b)
{
	return with_args(p, VY_EXPR_BINARY, op, a, b, NULL);
}

struct vy_expr *vy_ir_unary(struct vy_program *p, enum vy_unop op, struct vy_expr *a)
{
	return with_args(p, VY_EXPR_UNARY, op, a, NULL, NULL);
}

struct vy_expr *vy_ir_select(
	struct vy_program *p, struct vy_expr *cond, struct vy_expr *a, struct vy_expr *b)
{
	return with_args(p, VY_EXPR_SELECT, 0, cond, a, b);
}

struct vy_expr *vy_ir_cast(struct vy_program *p, enum vy_type type, struct vy_expr *a)
{
	struct vy_expr *e = with_args(p, VY_EXPR_CAST, 0, a, NULL, NULL);
	e->type = type;
	return e;
}

struct vy_expr *vy_ir_bitcast(struct vy_program *p, enum vy_type type, struct vy_expr *a)
{
	struct vy_expr *e = with_args(p, VY_EXPR_BITCAST, 0, a, NULL, NULL);
	e->type = type;
	return e;
}

struct vy_expr *vy_ir_fma(
	struct vy_program *p, struct vy_expr *a, struct vy_expr *b, struct vy_expr *c)
{
	return with_args(p, VY_EXPR_FMA, 0, a, b, c);
}

struct vy_expr *vy_ir_atomic(struct vy_program *p, enum vy_atomic_op op, const char *buffer,
	struct vy_expr *index, struct vy_expr *value)
{
	struct vy_expr *e = with_args(p, VY_EXPR_ATOMIC, op, index, value, NULL);
	e->name = vy_arena_strdup(p->arena, buffer);
	return e;
}

struct vy_expr *vy_ir_atomic_cas(struct vy_program *p, const char *buffer, struct vy_expr *index,
	struct vy_expr *expected, struct vy_expr *value)
{
	struct vy_expr *e =
		with_args(p, VY_EXPR_ATOMIC, VY_ATOMIC_COMPARE_EXCHANGE, index, expected, value);
	e->name = vy_arena_strdup(p->arena, buffer);
	return e;
}

struct vy_expr *vy_ir_spec(
	struct vy_program *p, const char *name, enum vy_type type, uint32_t default_bits)
{
	struct vy_expr *e = named(p, VY_EXPR_SPEC, name);
	e->type = type;
	e->bits = default_bits;
	return e;
}

struct vy_expr *vy_ir_subgroup_reduce(struct vy_program *p, enum vy_reduce_op op, struct vy_expr *a)
{
	return with_args(p, VY_EXPR_SUBGROUP_REDUCE, op, a, NULL, NULL);
}

struct vy_expr *vy_ir_subgroup_shuffle(
	struct vy_program *p, struct vy_expr *value, struct vy_expr *lane)
{
	return with_args(p, VY_EXPR_SUBGROUP_SHUFFLE, 0, value, lane, NULL);
}

struct vy_expr *vy_ir_subgroup_ballot(struct vy_program *p, struct vy_expr *cond)
{
	return with_args(p, VY_EXPR_SUBGROUP_BALLOT, 0, cond, NULL, NULL);
}

struct vy_expr *vy_ir_subgroup_lane(struct vy_program *p)
{
	return expr_new(p, VY_EXPR_SUBGROUP_LANE, 0);
}

struct vy_expr *vy_ir_subgroup_size(struct vy_program *p)
{
	return expr_new(p, VY_EXPR_SUBGROUP_SIZE, 0);
}

static struct vy_node *node_new(struct vy_program *p, enum vy_node_kind kind, const char *name)
{
	struct vy_node *n = vy_arena_alloc(p->arena, sizeof(*n));
	n->kind = kind;
	n->order = VY_ORDER_SEQ_CST;
	n->name = name ? vy_arena_strdup(p->arena, name) : NULL;
	return n;
}

struct vy_node *vy_ir_let(struct vy_program *p, const char *name, struct vy_expr *value)
{
	struct vy_node *n = node_new(p, VY_NODE_LET, name);
	n->args[0] = value;
	return n;
}

struct vy_node *vy_ir_assign(struct vy_program *p, const char *name, struct vy_expr *value)
{
	struct vy_node *n = node_new(p, VY_NODE_ASSIGN, name);
	n->args[0] = value;
	return n;
}

struct vy_node *vy_ir_store(
	struct vy_program *p, const char *buffer, struct vy_expr *index, struct vy_expr *value)
{
	struct vy_node *n = node_new(p, VY_NODE_STORE, buffer);
	n->args[0] = index;
	n->args[1] = value;
	return n;
}

struct vy_node *vy_ir_if(struct vy_program *p, struct vy_expr *cond, struct vy_block then_body,
	struct vy_block else_body)
{
	struct vy_node *n = node_new(p, VY_NODE_IF, NULL);
	n->args[0] = cond;
	n->body = then_body;
	n->orelse = else_body;
	return n;
}

struct vy_node *vy_ir_loop(struct vy_program *p, const char *var, struct vy_expr *from,
	struct vy_expr *to, struct vy_block body)
{
	struct vy_node *n = node_new(p, VY_NODE_LOOP, var);
	n->args[0] = from;
	n->args[1] = to;
	n->body = body;
	return n;
}

struct vy_node *vy_ir_return(struct vy_program *p)
{
	return node_new(p, VY_NODE_RETURN, NULL);
}

struct vy_node *vy_ir_block(struct vy_program *p, struct vy_block body)
{
	struct vy_node *n = node_new(p, VY_NODE_BLOCK, NULL);
	n->body = body;
	return n;
}

struct vy_node *vy_ir_region(struct vy_program *p, const char *generator, struct vy_block body)
{
	struct vy_node *n = node_new(p, VY_NODE_REGION, generator);
	n->body = body;
	return n;
}

struct vy_node *vy_ir_barrier(struct vy_program *p, enum vy_order order)
{
	struct vy_node *n = node_new(p, VY_NODE_BARRIER, NULL);
	n->order = order;
	return n;
}

struct vy_block vy_ir_seqv(struct vy_program *p, struct vy_node *const *nodes, uint32_t n)
{
	struct vy_block b = {NULL, n};
	b.items = vy_arena_calloc(p->arena, n, sizeof(*b.items));
	for (uint32_t i = 0; i < n; i++) {
		b.items[i] = nodes[i];
	}
	return b;
}

struct vy_block vy_ir_seq(struct vy_program *p, ...)
{
	va_list ap;
	uint32_t n = 0;
	va_start(ap, p);
	while (va_arg(ap, struct vy_node *)) {
		n++;
	}
	va_end(ap);
	struct vy_block b = {NULL, n};
	b.items = vy_arena_calloc(p->arena, n, sizeof(*b.items));
	va_start(ap, p);
	for (uint32_t i = 0; i < n; i++) {
		b.items[i] = va_arg(ap, struct vy_node *);
	}
	va_end(ap);
	return b;
}

void vy_program_set_entry(struct vy_program *p, struct vy_block entry)
{
	p->entry = entry;
}

static const char *copy_str(struct vy_arena *a, const char *s)
{
	return s ? vy_arena_strdup(a, s) : NULL;
}

static struct vy_expr *clone_expr(struct vy_arena *a, const struct vy_expr *src)
{
	if (!src) {
		return NULL;
	}
	struct vy_expr *e = vy_arena_alloc(a, sizeof(*e));
	*e = *src;
	e->name = copy_str(a, src->name);
	for (uint32_t i = 0; i < 3; i++) {
		e->args[i] = clone_expr(a, src->args[i]);
	}
	return e;
}

static struct vy_block clone_block(struct vy_arena *a, const struct vy_block *src);

static struct vy_node *clone_node(struct vy_arena *a, const struct vy_node *src)
{
	struct vy_node *n = vy_arena_alloc(a, sizeof(*n));
	*n = *src;
	n->name = copy_str(a, src->name);
	n->args[0] = clone_expr(a, src->args[0]);
	n->args[1] = clone_expr(a, src->args[1]);
	n->body = clone_block(a, &src->body);
	n->orelse = clone_block(a, &src->orelse);
	return n;
}

static struct vy_block clone_block(struct vy_arena *a, const struct vy_block *src)
{
	struct vy_block b = {NULL, src->len};
	b.items = vy_arena_calloc(a, src->len, sizeof(*b.items));
	for (uint32_t i = 0; i < src->len; i++) {
		b.items[i] = clone_node(a, src->items[i]);
	}
	return b;
}

struct vy_program *vy_program_clone(const struct vy_program *src)
{
	struct vy_program *p = vy_program_create(
		src->name, src->workgroup_size[0], src->workgroup_size[1], src->workgroup_size[2]);
	p->version = src->version;
	p->n_buffers = src->n_buffers;
	for (uint32_t i = 0; i < src->n_buffers; i++) {
		p->buffers[i] = src->buffers[i];
		p->buffers[i].name = vy_arena_strdup(p->arena, src->buffers[i].name);
	}
	p->entry = clone_block(p->arena, &src->entry);
	return p;
}

uint32_t vy_block_count_nodes(const struct vy_block *block)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < block->len; i++) {
		const struct vy_node *node = block->items[i];
		n += 1 + vy_block_count_nodes(&node->body) + vy_block_count_nodes(&node->orelse);
	}
	return n;
}

const char *vy_path_index(uint32_t i, char *room, size_t *len)
{
	size_t n = VY_PATH_INDEX_ROOM;
	room[--n] = ']';
	do {
		room[--n] = (char)('0' + i % 10);
		i /= 10;
	} while (i);
	room[--n] = '[';
	*len = VY_PATH_INDEX_ROOM - n;
	return room + n;
}
