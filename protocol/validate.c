/*
 * The IR validator. One bounded walk over the program types every expression, resolves scopes
 * and checks buffer access; it runs twice with identical traversal. The first run only gathers
 * uniformity facts as a graph (variables and control contexts, with an edge wherever a value
 * flows from one into another), which is then closed by propagation; the second run reports
 * every error, including barriers that the closed graph puts in non-uniform control flow. Two
 * runs keep the barrier check exact for variables assigned after their use (inside loops)
 * without storing a path for every barrier.
 */
#include "validate.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Long enough for the deepest path the limits allow; longer text is cut anyway. */
#define PATH_CAP 8192
#define NO_TARGET UINT32_MAX
#define NO_POS UINT32_MAX
#define ROOT_CTX 0u

#define TB(t) (1u << (t))
#define M_U TB(VY_TYPE_U32)
#define M_I TB(VY_TYPE_I32)
#define M_F TB(VY_TYPE_F32)
#define M_B TB(VY_TYPE_BOOL)
#define M_ALL (M_U | M_I | M_F | M_B)

#define FIX_CAST_U32 "cast it to u32 with [\"cast\", \"u32\", ...]"

/* Operand rules of a binary operator: the types `a` may have, and how `b` relates to `a`. */
struct bin_rule {
	uint8_t mask;
	bool count;      /* b is a u32 shift or rotate count, not a second value of a's type */
	bool gives_bool; /* comparisons */
	bool gives_u32;  /* abs_diff: the distance of two 32-bit integers always fits a u32 */
};

static const struct bin_rule bin_rules[VY_BINOP_COUNT] = {
	[VY_BIN_ADD] = {M_U | M_I | M_F, false, false},
	[VY_BIN_SUB] = {M_U | M_I | M_F, false, false},
	[VY_BIN_MUL] = {M_U | M_I | M_F, false, false},
	[VY_BIN_DIV] = {M_U | M_I | M_F, false, false},
	[VY_BIN_MOD] = {M_U | M_I | M_F, false, false},
	[VY_BIN_MIN] = {M_U | M_I | M_F, false, false},
	[VY_BIN_MAX] = {M_U | M_I | M_F, false, false},
	[VY_BIN_BIT_AND] = {M_U | M_I, false, false},
	[VY_BIN_BIT_OR] = {M_U | M_I, false, false},
	[VY_BIN_BIT_XOR] = {M_U | M_I, false, false},
	[VY_BIN_MUL_HIGH] = {M_U | M_I, false, false},
	[VY_BIN_SHL] = {M_U | M_I, true, false},
	[VY_BIN_SHR] = {M_U | M_I, true, false},
	[VY_BIN_ROTL] = {M_U | M_I, true, false},
	[VY_BIN_ROTR] = {M_U | M_I, true, false},
	[VY_BIN_EQ] = {M_ALL, false, true},
	[VY_BIN_NE] = {M_ALL, false, true},
	[VY_BIN_LT] = {M_U | M_I | M_F, false, true},
	[VY_BIN_LE] = {M_U | M_I | M_F, false, true},
	[VY_BIN_GT] = {M_U | M_I | M_F, false, true},
	[VY_BIN_GE] = {M_U | M_I | M_F, false, true},
	[VY_BIN_AND] = {M_U | M_I | M_B, false, false},
	[VY_BIN_OR] = {M_U | M_I | M_B, false, false},
	[VY_BIN_ABS_DIFF] = {M_U | M_I, false, false, true},
	[VY_BIN_SAT_ADD] = {M_U | M_I, false, false},
	[VY_BIN_SAT_SUB] = {M_U | M_I, false, false},
	[VY_BIN_SAT_MUL] = {M_U, false, false},
	[VY_BIN_HYPOT] = {M_F, false, false},
	[VY_BIN_ATAN2] = {M_F, false, false},
	[VY_BIN_POW] = {M_F, false, false},
};

/* Operand rule of a unary operator; the result has the operand's type unless it is a test. */
struct un_rule {
	uint8_t mask;
	bool gives_bool;
};

static const struct un_rule un_rules[VY_UNOP_COUNT] = {
	[VY_UN_NEG] = {M_U | M_I | M_F, false},
	[VY_UN_BIT_NOT] = {M_U | M_I, false},
	[VY_UN_NOT] = {M_U | M_I | M_B, false},
	[VY_UN_POPCOUNT] = {M_U | M_I, false},
	[VY_UN_CLZ] = {M_U | M_I, false},
	[VY_UN_CTZ] = {M_U | M_I, false},
	[VY_UN_REVERSE_BITS] = {M_U | M_I, false},
	[VY_UN_ABS] = {M_I | M_F, false},
	[VY_UN_SIGN] = {M_I | M_F, false},
	[VY_UN_FLOOR] = {M_F, false},
	[VY_UN_CEIL] = {M_F, false},
	[VY_UN_ROUND] = {M_F, false},
	[VY_UN_TRUNC] = {M_F, false},
	[VY_UN_SQRT] = {M_F, false},
	[VY_UN_INVERSE_SQRT] = {M_F, false},
	[VY_UN_RECIPROCAL] = {M_F, false},
	[VY_UN_EXP] = {M_F, false},
	[VY_UN_EXP2] = {M_F, false},
	[VY_UN_EXP10] = {M_F, false},
	[VY_UN_EXPM1] = {M_F, false},
	[VY_UN_LOG] = {M_F, false},
	[VY_UN_LOG2] = {M_F, false},
	[VY_UN_LOG10] = {M_F, false},
	[VY_UN_LOG1P] = {M_F, false},
	[VY_UN_CBRT] = {M_F, false},
	[VY_UN_SIN] = {M_F, false},
	[VY_UN_COS] = {M_F, false},
	[VY_UN_TAN] = {M_F, false},
	[VY_UN_ASIN] = {M_F, false},
	[VY_UN_ACOS] = {M_F, false},
	[VY_UN_ATAN] = {M_F, false},
	[VY_UN_SINH] = {M_F, false},
	[VY_UN_COSH] = {M_F, false},
	[VY_UN_TANH] = {M_F, false},
	[VY_UN_ERF] = {M_F, false},
	[VY_UN_ERFC] = {M_F, false},
	[VY_UN_IS_NAN] = {M_F, true},
	[VY_UN_IS_INF] = {M_F, true},
	[VY_UN_IS_FINITE] = {M_F, true},
	[VY_UN_UNPACK4_LOW] = {M_U, false},
	[VY_UN_UNPACK4_HIGH] = {M_U, false},
	[VY_UN_UNPACK8_LOW] = {M_U, false},
	[VY_UN_UNPACK8_HIGH] = {M_U, false},
	[VY_UN_EXP_CR] = {M_F, false},
	[VY_UN_EXP2_CR] = {M_F, false},
	[VY_UN_LOG_CR] = {M_F, false},
	[VY_UN_LOG2_CR] = {M_F, false},
};

/* A name in scope: a variable (visible ones form a stack) or a spec constant. */
struct entry {
	const char *name; /* borrowed from the program */
	uint32_t hash;
	int32_t next; /* the entry below in the same hash chain, or -1 */
	enum vy_type type;
	uint32_t bits;  /* spec default */
	uint32_t graph; /* uniformity node of a variable */
	bool loop;      /* loop variables are read-only */
	bool cut;       /* declared before a grid_sync barrier: gone after it */
};

/*
 * Chained hash table over an array. Entries are pushed and popped in stack order and each push
 * goes to the head of its chain, so the entry popped is always the head of its chain.
 */
struct table {
	struct entry *items;
	size_t len;
	size_t cap;
	int32_t *heads;
	uint32_t nheads; /* a power of two */
};

struct edge {
	uint32_t from;
	uint32_t to;
};

/* A return: the uniformity context it sits in and the first position it can affect. */
struct ret {
	uint32_t ctx;
	uint32_t pos;
};

/* An if or loop around the walk, for naming the condition that makes a barrier non-uniform. */
struct frame {
	uint32_t ctx;
	size_t plen; /* length of the node's path */
	bool loop;
};

struct state {
	struct vy_program *p;
	const struct vy_caps *caps;
	struct vy_err_list *errs;
	int pass; /* 1: gather uniformity, 2: report */
	size_t n_invalid;
	size_t n_unsupported;
	char path[PATH_CAP];
	size_t plen;
	struct table vars;
	struct table specs;
	uint32_t nodes;
	bool nodes_over;
	uint32_t exprs;
	bool exprs_over;
	uint32_t loop_start; /* position of the outermost loop being walked, or NO_POS */
	uint32_t ngraph;
	uint8_t *nonuni; /* per graph node: may differ between invocations */
	size_t cap_graph;
	struct edge *edges;
	size_t nedges;
	size_t cap_edges;
	struct ret *rets;
	size_t nrets;
	size_t cap_rets;
	uint32_t first_bad_return; /* first position after a non-uniform return, or NO_POS */
	struct frame frames[VY_IR_MAX_NESTING + 1];
	uint32_t nframes;
	/* Scratch text for error reports, kept here so the walk's frames stay small. */
	char fix[VY_ERR_FIX_MAX];
	char allowed[40];
	char values[2][32];
};

static void *grow(void *ptr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap) {
		return ptr;
	}
	size_t n = *cap ? *cap : 16;
	while (n < need) {
		n *= 2;
	}
	void *q = realloc(ptr, n * size);
	if (!q) {
		fprintf(stderr, "vyred: out of memory in the IR validator\n");
		abort();
	}
	*cap = n;
	return q;
}

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++) {
		h = (h ^ (uint8_t)*s) * 16777619u;
	}
	return h;
}

static void table_rehash(struct table *t, uint32_t nheads)
{
	size_t cap = 0;
	t->heads = grow(NULL, &cap, nheads, sizeof(*t->heads));
	t->nheads = nheads;
	for (uint32_t i = 0; i < nheads; i++) {
		t->heads[i] = -1;
	}
	for (size_t i = 0; i < t->len; i++) {
		uint32_t b = t->items[i].hash & (nheads - 1);
		t->items[i].next = t->heads[b];
		t->heads[b] = (int32_t)i;
	}
}

static void table_reset(struct table *t)
{
	t->len = 0;
	free(t->heads);
	table_rehash(t, 64);
}

static void table_finish(struct table *t)
{
	free(t->items);
	free(t->heads);
}

static struct entry *table_find(const struct table *t, const char *name)
{
	uint32_t h = hash_name(name);
	for (int32_t i = t->heads[h & (t->nheads - 1)]; i >= 0; i = t->items[i].next) {
		if (t->items[i].hash == h && strcmp(t->items[i].name, name) == 0) {
			return &t->items[i];
		}
	}
	return NULL;
}

static void table_push(struct table *t, struct entry e)
{
	t->items = grow(t->items, &t->cap, t->len + 1, sizeof(*t->items));
	e.hash = hash_name(e.name);
	uint32_t b = e.hash & (t->nheads - 1);
	e.next = t->heads[b];
	t->heads[b] = (int32_t)t->len;
	t->items[t->len++] = e;
	if (t->len > (size_t)t->nheads * 2) {
		free(t->heads);
		table_rehash(t, t->nheads * 2);
	}
}

static void table_pop_to(struct table *t, size_t len)
{
	while (t->len > len) {
		struct entry *e = &t->items[--t->len];
		uint32_t b = e->hash & (t->nheads - 1);
		assert(t->heads[b] == (int32_t)t->len);
		t->heads[b] = e->next;
	}
}

static void path_append(struct state *st, const char *s, size_t len)
{
	size_t room = PATH_CAP - 1 - st->plen;
	len = len < room ? len : room;
	memcpy(st->path + st->plen, s, len);
	st->plen += len;
	st->path[st->plen] = '\0';
}

/* Append ".a", then ".b" when b is not NULL; returns the length to restore with path_pop. */
static size_t path_push(struct state *st, const char *a, const char *b)
{
	size_t mark = st->plen;
	path_append(st, ".", 1);
	path_append(st, a, strlen(a));
	if (b) {
		path_append(st, ".", 1);
		path_append(st, b, strlen(b));
	}
	return mark;
}

/* Append "name[i]"; returns the length to restore with path_pop. */
static size_t path_push_index(struct state *st, const char *name, uint32_t i)
{
	size_t mark = st->plen;
	char room[VY_PATH_INDEX_ROOM];
	size_t len;
	const char *text = vy_path_index(i, room, &len);
	path_append(st, name, strlen(name));
	path_append(st, text, len);
	return mark;
}

static void path_pop(struct state *st, size_t mark)
{
	st->plen = mark;
	st->path[mark] = '\0';
}

static void emit(struct state *st, const char *at, int code, const char *fix, const char *fmt,
	va_list ap) __attribute__((format(printf, 5, 0)));

/* Record one error (second run only); `at` NULL means the current path. */
static void emit(
	struct state *st, const char *at, int code, const char *fix, const char *fmt, va_list ap)
{
	if (st->pass != 2) {
		return;
	}
	if (code == VY_E_INVALID_PROGRAM) {
		st->n_invalid++;
	} else {
		st->n_unsupported++;
	}
	if (!st->errs) {
		return;
	}
	char cut[VY_ERR_AT_MAX];
	if (!at) {
		at = st->path;
		if (st->plen >= VY_ERR_AT_MAX) {
			memcpy(cut, st->path, VY_ERR_AT_MAX - 4);
			memcpy(cut + VY_ERR_AT_MAX - 4, "...", 4);
			at = cut;
		}
	}
	struct vy_err err;
	vy_err_setv(&err, code, at, fix, fmt, ap);
	vy_err_list_push(st->errs, &err);
}

static void report(struct state *st, int code, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void report(struct state *st, int code, const char *fix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(st, NULL, code, fix, fmt, ap);
	va_end(ap);
}

static void report_at(struct state *st, const char *at, int code, const char *fix, const char *fmt,
	...) __attribute__((format(printf, 5, 6)));

static void report_at(
	struct state *st, const char *at, int code, const char *fix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(st, at, code, fix, fmt, ap);
	va_end(ap);
}

/* An INVALID_PROGRAM error at an operand of the current expression: `<path>.<ename>.<arg>`. */
static void report_arg(struct state *st, const char *ename, const char *arg, const char *fix,
	const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void report_arg(
	struct state *st, const char *ename, const char *arg, const char *fix, const char *fmt, ...)
{
	size_t mark = path_push(st, ename, arg);
	va_list ap;
	va_start(ap, fmt);
	emit(st, NULL, VY_E_INVALID_PROGRAM, fix, fmt, ap);
	va_end(ap);
	path_pop(st, mark);
}

/* Use of a variable declared before a grid_sync barrier, after it. */
static void report_cut(struct state *st, const char *name)
{
	report(st, VY_E_INVALID_PROGRAM,
		"recompute the value after the grid_sync barrier, or pass it through a buffer",
		"variable \"%.64s\" was declared before a grid_sync barrier and is used after it; "
		"each side of the barrier runs as its own launch",
		name);
}

static const char *tname(enum vy_type t)
{
	return t < VY_TYPE_COUNT ? vy_type_name(t) : "an unknown type";
}

static bool type_ok(enum vy_type t)
{
	return t < VY_TYPE_COUNT;
}

static bool in_mask(unsigned mask, enum vy_type t)
{
	return type_ok(t) && (mask & TB(t));
}

/* "u32, i32 or f32", in the state's scratch text. */
static const char *mask_text(struct state *st, unsigned mask)
{
	const char *parts[VY_TYPE_COUNT];
	unsigned n = 0;
	for (unsigned t = 0; t < VY_TYPE_COUNT; t++) {
		if (mask & TB(t)) {
			parts[n++] = vy_type_name((enum vy_type)t);
		}
	}
	size_t used = 0;
	st->allowed[0] = '\0';
	for (unsigned i = 0; i < n && used < sizeof(st->allowed); i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
		int w = snprintf(
			st->allowed + used, sizeof(st->allowed) - used, "%s%s", sep, parts[i]);
		used += w > 0 ? (size_t)w : 0;
	}
	return st->allowed;
}

/* Format a fix into the state's scratch text. */
static const char *fixf(struct state *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static const char *fixf(struct state *st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->fix, sizeof(st->fix), fmt, ap);
	va_end(ap);
	return st->fix;
}

static bool is_ident(const char *s)
{
	if (!s) {
		return false;
	}
	size_t i = 0;
	for (; s[i]; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
		bool digit = c >= '0' && c <= '9';
		if (i >= VY_IR_MAX_NAME || !(alpha || (digit && i > 0))) {
			return false;
		}
	}
	return i > 0;
}

/* Report an invalid identifier at the current path; `what` says what it names. */
static bool check_ident(struct state *st, const char *name, const char *what)
{
	if (is_ident(name)) {
		return true;
	}
	report(st, VY_E_INVALID_PROGRAM,
		"use 1 to 64 letters, digits and underscores, starting with a letter or underscore",
		"%s name \"%.64s%s\" is not a valid name: names match [A-Za-z_][A-Za-z0-9_]{0,63}",
		what, name ? name : "", name && strlen(name) > 64 ? "..." : "");
	return false;
}

static const char *value_text(enum vy_type t, uint32_t bits, char *buf, size_t size)
{
	int32_t i;
	float f;
	switch (t) {
	case VY_TYPE_U32:
		snprintf(buf, size, "%u", bits);
		break;
	case VY_TYPE_I32:
		memcpy(&i, &bits, sizeof(i));
		snprintf(buf, size, "%d", i);
		break;
	case VY_TYPE_F32:
		memcpy(&f, &bits, sizeof(f));
		snprintf(buf, size, "%.9g", (double)f);
		break;
	case VY_TYPE_BOOL:
		snprintf(buf, size, "%s", bits == 0 ? "false" : bits == 1 ? "true" : "?");
		break;
	default:
		snprintf(buf, size, "0x%08x", bits);
		break;
	}
	return buf;
}

static uint32_t graph_node(struct state *st)
{
	uint32_t id = st->ngraph++;
	if (st->pass == 1) {
		st->nonuni = grow(st->nonuni, &st->cap_graph, st->ngraph, sizeof(*st->nonuni));
		st->nonuni[id] = 0;
	}
	assert(!st->nonuni || id < st->cap_graph);
	return id;
}

static void graph_edge(struct state *st, uint32_t from, uint32_t to)
{
	if (st->pass != 1 || to == NO_TARGET || from == to) {
		return;
	}
	if (st->nedges > 0 && st->edges[st->nedges - 1].from == from &&
		st->edges[st->nedges - 1].to == to) {
		return;
	}
	st->edges = grow(st->edges, &st->cap_edges, st->nedges + 1, sizeof(*st->edges));
	st->edges[st->nedges++] = (struct edge){from, to};
}

static void graph_mark(struct state *st, uint32_t target)
{
	if (st->pass == 1 && target != NO_TARGET) {
		st->nonuni[target] = 1;
	}
}

static uint32_t graph_ctx(struct state *st, uint32_t parent)
{
	uint32_t id = graph_node(st);
	graph_edge(st, parent, id);
	return id;
}

/* Close the graph: whatever a non-uniform node flows into is non-uniform too. */
static void graph_propagate(struct state *st)
{
	uint32_t n = st->ngraph;
	size_t cap = 0;
	uint32_t *start = grow(NULL, &cap, (size_t)n + 1, sizeof(*start));
	memset(start, 0, ((size_t)n + 1) * sizeof(*start));
	for (size_t i = 0; i < st->nedges; i++) {
		start[st->edges[i].from + 1]++;
	}
	for (uint32_t i = 0; i < n; i++) {
		start[i + 1] += start[i];
	}
	cap = 0;
	uint32_t *adj = grow(NULL, &cap, st->nedges + 1, sizeof(*adj));
	cap = 0;
	uint32_t *fill = grow(NULL, &cap, (size_t)n + 1, sizeof(*fill));
	memcpy(fill, start, (size_t)n * sizeof(*fill));
	for (size_t i = 0; i < st->nedges; i++) {
		adj[fill[st->edges[i].from]++] = st->edges[i].to;
	}
	/* `fill` becomes the work queue. */
	uint32_t head = 0, tail = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (st->nonuni[i]) {
			fill[tail++] = i;
		}
	}
	while (head < tail) {
		uint32_t v = fill[head++];
		for (uint32_t k = start[v]; k < start[v + 1]; k++) {
			if (!st->nonuni[adj[k]]) {
				st->nonuni[adj[k]] = 1;
				fill[tail++] = adj[k];
			}
		}
	}
	st->first_bad_return = NO_POS;
	for (size_t i = 0; i < st->nrets; i++) {
		if (st->nonuni[st->rets[i].ctx] && st->rets[i].pos < st->first_bad_return) {
			st->first_bad_return = st->rets[i].pos;
		}
	}
	free(start);
	free(adj);
	free(fill);
}

static const struct vy_buffer *find_buffer(const struct state *st, const char *name)
{
	if (!name) {
		return NULL;
	}
	uint32_t n = st->p->n_buffers < VY_IR_MAX_BUFFERS ? st->p->n_buffers : VY_IR_MAX_BUFFERS;
	for (uint32_t i = 0; i < n; i++) {
		if (st->p->buffers[i].name && strcmp(st->p->buffers[i].name, name) == 0) {
			return &st->p->buffers[i];
		}
	}
	return NULL;
}

/* The buffer an expression or node names, or NULL after reporting that it is not declared. */
static const struct vy_buffer *named_buffer(struct state *st, const char *name, const char *use)
{
	const struct vy_buffer *b = find_buffer(st, name);
	if (!b) {
		report(st, VY_E_INVALID_PROGRAM,
			"declare the buffer in \"buffers\" or correct the name",
			"%s names buffer \"%.64s\", which is not declared", use, name ? name : "");
	}
	return b;
}

static void check_index(struct state *st, enum vy_type t, const char *ename, const char *arg)
{
	if (type_ok(t) && t != VY_TYPE_U32) {
		report_arg(st, ename, arg, "cast the index to u32 with [\"cast\", \"u32\", ...]",
			"%s %s is %s; buffer indices are u32", ename, arg, tname(t));
	}
}

static void check_u32_arg(struct state *st, enum vy_type t, const char *ename, const char *arg)
{
	if (type_ok(t) && t != VY_TYPE_U32) {
		report_arg(st, ename, arg, FIX_CAST_U32, "%s %s is %s; it must be u32", ename, arg,
			tname(t));
	}
}

static void check_cond(struct state *st, enum vy_type t, const char *ename, const char *arg)
{
	if (type_ok(t) && t != VY_TYPE_U32 && t != VY_TYPE_I32 && t != VY_TYPE_BOOL) {
		report_arg(st, ename, arg,
			"compare the value with a comparison (for example [\"ne\", x, zero]) to "
			"get a bool",
			"%s %s is %s; a condition is u32, i32 or bool", ename, arg, tname(t));
	}
}

static enum vy_type walk_expr(struct state *st, struct vy_expr *e, uint32_t depth, uint32_t target);

/* Walk operand `i` of `e` at `<path>.<ename>.<arg>`. */
static enum vy_type operand(struct state *st, struct vy_expr *e, unsigned i, const char *ename,
	const char *arg, uint32_t depth, uint32_t target)
{
	size_t mark = path_push(st, ename, arg);
	enum vy_type t = walk_expr(st, e->args[i], depth + 1, target);
	path_pop(st, mark);
	return t;
}

static void subgroup_gate(struct state *st, const char *what)
{
	if (st->caps && !st->caps->subgroups) {
		report(st, VY_E_UNSUPPORTED_FEATURE,
			"run the program on a backend that reports subgroup support, or compute "
			"the result through a workgroup buffer and barriers",
			"%s needs subgroup operations, which this backend does not support", what);
	}
}

/* Operand `arg` of operator `on` has type t, outside the operator's domain `mask`. */
static void report_domain(
	struct state *st, const char *on, const char *arg, unsigned mask, enum vy_type t)
{
	const char *allowed = mask_text(st, mask);
	report_arg(st, on, arg,
		fixf(st, "cast %s to %s, or use an operator defined on %s", arg, allowed, tname(t)),
		"%s takes %s operands, but %s is %s", on, allowed, arg, tname(t));
}

static enum vy_type walk_binary(
	struct state *st, struct vy_expr *e, uint32_t depth, uint32_t target)
{
	if (e->op >= VY_BINOP_COUNT) {
		report(st, VY_E_INVALID_PROGRAM, "use one of the binary operators of DESIGN.md §3",
			"unknown binary operator %u", e->op);
		return VY_TYPE_NONE;
	}
	const char *on = vy_binop_name((enum vy_binop)e->op);
	const struct bin_rule *r = &bin_rules[e->op];
	enum vy_type ta = operand(st, e, 0, on, "a", depth, target);
	enum vy_type tb = operand(st, e, 1, on, "b", depth, target);
	bool a_ok = in_mask(r->mask, ta);
	bool ok = a_ok && type_ok(tb);
	if (type_ok(ta) && !a_ok) {
		report_domain(st, on, "a", r->mask, ta);
	}
	if (r->count) {
		if (type_ok(tb) && tb != VY_TYPE_U32) {
			ok = false;
			report_arg(st, on, "b",
				"cast the count to u32 with [\"cast\", \"u32\", ...]",
				"%s takes a u32 count, but b is %s", on, tname(tb));
		}
	} else if (type_ok(tb) && tb != ta) {
		/* When a is already reported, b of the same type adds nothing. */
		ok = false;
		if (!in_mask(r->mask, tb)) {
			report_domain(st, on, "b", r->mask, tb);
		} else if (a_ok) {
			report_arg(st, on, "b",
				fixf(st,
					"cast b to %s with [\"cast\", \"%s\", ...]; vyre never "
					"promotes implicitly",
					tname(ta), tname(ta)),
				"%s operands differ in type: a is %s, b is %s", on, tname(ta),
				tname(tb));
		}
	}
	if (!ok) {
		return VY_TYPE_NONE;
	}
	if (r->gives_bool) {
		return VY_TYPE_BOOL;
	}
	return r->gives_u32 ? VY_TYPE_U32 : ta;
}

static enum vy_type walk_unary(struct state *st, struct vy_expr *e, uint32_t depth, uint32_t target)
{
	if (e->op >= VY_UNOP_COUNT) {
		report(st, VY_E_INVALID_PROGRAM, "use one of the unary operators of DESIGN.md §3",
			"unknown unary operator %u", e->op);
		return VY_TYPE_NONE;
	}
	const char *on = vy_unop_name((enum vy_unop)e->op);
	const struct un_rule *r = &un_rules[e->op];
	enum vy_type ta = operand(st, e, 0, on, "a", depth, target);
	if (!type_ok(ta)) {
		return VY_TYPE_NONE;
	}
	if (!in_mask(r->mask, ta)) {
		report_domain(st, on, "a", r->mask, ta);
		return VY_TYPE_NONE;
	}
	return r->gives_bool ? VY_TYPE_BOOL : ta;
}

/* A bitcast keeps the 32 bits of a u32, i32 or f32 value and reads them as another of the three. */
static enum vy_type walk_bitcast(
	struct state *st, struct vy_expr *e, uint32_t depth, uint32_t target)
{
	enum vy_type t = operand(st, e, 0, "bitcast", "value", depth, target);
	if (type_ok(t) && !in_mask(M_U | M_I | M_F, t)) {
		report_arg(st, "bitcast", "value",
			"cast the bool with [\"cast\", \"u32\", ...]; a bool has no bits to keep",
			"bitcast takes a u32, i32 or f32 value, but the value is %s", tname(t));
	}
	if (!type_ok(e->type)) {
		report(st, VY_E_INVALID_PROGRAM, "bitcast to u32, i32 or f32",
			"bitcast to an unknown type");
		return VY_TYPE_NONE;
	}
	if (e->type == VY_TYPE_BOOL) {
		report(st, VY_E_INVALID_PROGRAM,
			"bitcast to u32, i32 or f32, or compare with [\"ne\", x, zero] to get a "
			"bool",
			"bitcast to bool; a bool is not a 32-bit pattern");
		return VY_TYPE_NONE;
	}
	/* The declared type, as a cast gives it, so a wrong operand is reported once. */
	return e->type;
}

static enum vy_type walk_atomic(
	struct state *st, struct vy_expr *e, uint32_t depth, uint32_t target)
{
	graph_mark(st, target);
	bool cas = e->op == VY_ATOMIC_COMPARE_EXCHANGE;
	if (e->op >= VY_ATOMIC_COUNT) {
		report(st, VY_E_INVALID_PROGRAM,
			"use add, and, or, xor, min, max, exchange or compare_exchange",
			"unknown atomic operation %u", e->op);
	}
	const struct vy_buffer *b = named_buffer(st, e->name, "atomic");
	if (b && type_ok(b->type) && b->type != VY_TYPE_U32) {
		report(st, VY_E_INVALID_PROGRAM,
			fixf(st,
				"declare buffer %.64s with type u32 and cast the values, or avoid "
				"atomics on it",
				b->name),
			"atomic on buffer \"%.64s\" of type %s; atomics take u32 buffers only",
			b->name, tname(b->type));
	}
	if (b && b->access != VY_ACCESS_READ_WRITE) {
		report(st, VY_E_INVALID_PROGRAM,
			fixf(st, "declare buffer %.64s read_write to use atomics on it", b->name),
			"atomic on buffer \"%.64s\", which is %s; only read_write buffers take "
			"atomics",
			b->name,
			b->access < VY_ACCESS_COUNT ? vy_access_name(b->access) : "invalid");
	}
	check_index(st, operand(st, e, 0, "atomic", "index", depth, target), "atomic", "index");
	if (cas) {
		check_u32_arg(st, operand(st, e, 1, "atomic", "expected", depth, target), "atomic",
			"expected");
		check_u32_arg(
			st, operand(st, e, 2, "atomic", "value", depth, target), "atomic", "value");
	} else {
		check_u32_arg(
			st, operand(st, e, 1, "atomic", "value", depth, target), "atomic", "value");
	}
	return VY_TYPE_U32;
}

static enum vy_type walk_spec(struct state *st, struct vy_expr *e)
{
	bool ok = check_ident(st, e->name, "spec constant");
	if (!type_ok(e->type)) {
		report(st, VY_E_INVALID_PROGRAM,
			"declare the spec constant as u32, i32, f32 or bool",
			"spec constant \"%.64s\" has an unknown type", e->name ? e->name : "");
		return VY_TYPE_NONE;
	}
	if (e->type == VY_TYPE_BOOL && e->bits > 1) {
		report(st, VY_E_INVALID_PROGRAM,
			"give a bool spec constant the default true or false",
			"spec constant \"%.64s\" is bool but its default is %u",
			e->name ? e->name : "", e->bits);
		ok = false;
	}
	if (!ok) {
		return e->type;
	}
	struct entry *prev = table_find(&st->specs, e->name);
	if (!prev) {
		table_push(&st->specs,
			(struct entry){.name = e->name, .type = e->type, .bits = e->bits});
	} else if (prev->type != e->type || prev->bits != e->bits) {
		report(st, VY_E_INVALID_PROGRAM,
			fixf(st,
				"give every use of spec constant %.64s the same type and default, "
				"or rename one",
				e->name),
			"spec constant \"%.64s\" is %s with default %s here but %s with default "
			"%s earlier",
			e->name, tname(e->type),
			value_text(e->type, e->bits, st->values[0], sizeof(st->values[0])),
			tname(prev->type),
			value_text(prev->type, prev->bits, st->values[1], sizeof(st->values[1])));
	}
	return e->type;
}

static enum vy_type walk_subgroup(
	struct state *st, struct vy_expr *e, uint32_t depth, uint32_t target)
{
	graph_mark(st, target);
	const char *en = vy_expr_kind_name(e->kind);
	subgroup_gate(st, en);
	enum vy_type t;
	switch (e->kind) {
	case VY_EXPR_SUBGROUP_REDUCE: {
		if (e->op >= VY_REDUCE_COUNT) {
			report(st, VY_E_INVALID_PROGRAM, "use add, mul, min, max, and, or or xor",
				"unknown subgroup_reduce operation %u", e->op);
			operand(st, e, 0, en, "value", depth, target);
			return VY_TYPE_NONE;
		}
		unsigned mask = e->op <= VY_REDUCE_MAX ? (M_U | M_I | M_F) : (M_U | M_I);
		const char *on = vy_reduce_name((enum vy_reduce_op)e->op);
		t = operand(st, e, 0, en, "value", depth, target);
		if (type_ok(t) && !in_mask(mask, t)) {
			const char *allowed = mask_text(st, mask);
			report_arg(st, en, "value", fixf(st, "cast the value to %s", allowed),
				"subgroup_reduce %s takes %s, but the value is %s", on, allowed,
				tname(t));
			return VY_TYPE_NONE;
		}
		return t;
	}
	case VY_EXPR_SUBGROUP_SHUFFLE:
		t = operand(st, e, 0, en, "value", depth, target);
		check_u32_arg(st, operand(st, e, 1, en, "lane", depth, target), en, "lane");
		return t;
	case VY_EXPR_SUBGROUP_BALLOT:
		check_cond(st, operand(st, e, 0, en, "cond", depth, target), en, "cond");
		return VY_TYPE_U32;
	default:
		return VY_TYPE_U32;
	}
}

static enum vy_type walk_kind(struct state *st, struct vy_expr *e, uint32_t depth, uint32_t target)
{
	const struct vy_buffer *b;
	struct entry *v;
	enum vy_type t, ta, tb;
	switch (e->kind) {
	case VY_EXPR_LIT:
		if (!type_ok(e->type)) {
			report(st, VY_E_INVALID_PROGRAM,
				"write the literal as u32, i32, f32 or bool",
				"literal has an unknown type");
			return VY_TYPE_NONE;
		}
		if (e->type == VY_TYPE_BOOL && e->bits > 1) {
			report(st, VY_E_INVALID_PROGRAM, "write a bool literal as true or false",
				"bool literal holds %u", e->bits);
		}
		return e->type;
	case VY_EXPR_VAR:
		v = e->name ? table_find(&st->vars, e->name) : NULL;
		if (!v) {
			report(st, VY_E_INVALID_PROGRAM,
				"define the variable with a let before this use, in this block or "
				"an enclosing one",
				"variable \"%.64s\" is not defined here", e->name ? e->name : "");
			return VY_TYPE_NONE;
		}
		if (v->cut) {
			report_cut(st, e->name);
		}
		graph_edge(st, v->graph, target);
		return v->type;
	case VY_EXPR_LOAD:
		graph_mark(st, target);
		b = named_buffer(st, e->name, "load");
		if (b && b->access == VY_ACCESS_WRITE_ONLY) {
			report(st, VY_E_INVALID_PROGRAM,
				fixf(st, "declare buffer %.64s read_write to load from it",
					b->name),
				"load from buffer \"%.64s\", which is write_only", b->name);
		}
		check_index(st, operand(st, e, 0, "load", "index", depth, target), "load", "index");
		return b && type_ok(b->type) ? b->type : VY_TYPE_NONE;
	case VY_EXPR_LEN:
		named_buffer(st, e->name, "len");
		return VY_TYPE_U32;
	case VY_EXPR_GID:
	case VY_EXPR_LID:
	case VY_EXPR_WGID:
		if (e->kind != VY_EXPR_WGID) {
			graph_mark(st, target);
		}
		if (e->bits > 2) {
			report(st, VY_E_INVALID_PROGRAM, "use axis 0 (x), 1 (y) or 2 (z)",
				"%s axis %u is out of range; axes are 0, 1 and 2",
				vy_expr_kind_name(e->kind), e->bits);
		}
		return VY_TYPE_U32;
	case VY_EXPR_BINARY:
		return walk_binary(st, e, depth, target);
	case VY_EXPR_UNARY:
		return walk_unary(st, e, depth, target);
	case VY_EXPR_SELECT:
		check_cond(
			st, operand(st, e, 0, "select", "cond", depth, target), "select", "cond");
		ta = operand(st, e, 1, "select", "a", depth, target);
		tb = operand(st, e, 2, "select", "b", depth, target);
		if (type_ok(ta) && type_ok(tb) && ta != tb) {
			report_arg(st, "select", "b",
				fixf(st, "cast b to %s so both arms have one type", tname(ta)),
				"select arms differ in type: a is %s, b is %s", tname(ta),
				tname(tb));
			return VY_TYPE_NONE;
		}
		return ta == tb ? ta : VY_TYPE_NONE;
	case VY_EXPR_CAST:
		operand(st, e, 0, "cast", "value", depth, target);
		if (!type_ok(e->type)) {
			report(st, VY_E_INVALID_PROGRAM, "cast to u32, i32, f32 or bool",
				"cast to an unknown type");
			return VY_TYPE_NONE;
		}
		return e->type;
	case VY_EXPR_BITCAST:
		return walk_bitcast(st, e, depth, target);
	case VY_EXPR_FMA: {
		static const char *const names[3] = {"a", "b", "c"};
		bool ok = true;
		for (unsigned i = 0; i < 3; i++) {
			t = operand(st, e, i, "fma", names[i], depth, target);
			if (type_ok(t) && t != VY_TYPE_F32) {
				report_arg(st, "fma", names[i],
					"cast the operand to f32; fma is defined on f32 only",
					"fma takes f32 operands, but %s is %s", names[i], tname(t));
			}
			ok = ok && t == VY_TYPE_F32;
		}
		return ok ? VY_TYPE_F32 : VY_TYPE_NONE;
	}
	case VY_EXPR_ATOMIC:
		return walk_atomic(st, e, depth, target);
	case VY_EXPR_SPEC:
		return walk_spec(st, e);
	case VY_EXPR_SUBGROUP_REDUCE:
	case VY_EXPR_SUBGROUP_SHUFFLE:
	case VY_EXPR_SUBGROUP_BALLOT:
	case VY_EXPR_SUBGROUP_LANE:
	case VY_EXPR_SUBGROUP_SIZE:
		return walk_subgroup(st, e, depth, target);
	default:
		report(st, VY_E_INVALID_PROGRAM, "use one of the expressions of DESIGN.md §3",
			"unknown expression kind %u", (unsigned)e->kind);
		return VY_TYPE_NONE;
	}
}

/*
 * Type the expression at the current path, which names its slot. `target` is the uniformity node
 * that receives the expression's value, or NO_TARGET.
 */
static enum vy_type walk_expr(struct state *st, struct vy_expr *e, uint32_t depth, uint32_t target)
{
	if (!e) {
		report(st, VY_E_INVALID_PROGRAM,
			"give the expression every operand its form requires",
			"missing expression");
		return VY_TYPE_NONE;
	}
	if (depth > VY_IR_MAX_EXPR_DEPTH) {
		report(st, VY_E_INVALID_PROGRAM,
			"split the expression with let variables so no expression nests deeper "
			"than 128",
			"expression nests deeper than %d levels", VY_IR_MAX_EXPR_DEPTH);
		return VY_TYPE_NONE;
	}
	if (st->exprs >= VY_VALIDATE_MAX_EXPRS) {
		if (!st->exprs_over) {
			st->exprs_over = true;
			report(st, VY_E_INVALID_PROGRAM,
				"make the program smaller, or share values through let variables",
				"the program holds more than %u expressions",
				VY_VALIDATE_MAX_EXPRS);
		}
		return VY_TYPE_NONE;
	}
	st->exprs++;
	enum vy_type t = walk_kind(st, e, depth, target);
	if (e->kind != VY_EXPR_LIT && e->kind != VY_EXPR_CAST && e->kind != VY_EXPR_BITCAST &&
		e->kind != VY_EXPR_SPEC) {
		e->type = t;
	}
	return t;
}

/* Type an expression slot of the current node: `<path>.<slot>`. */
static enum vy_type slot(struct state *st, struct vy_expr *e, const char *name, uint32_t target)
{
	size_t mark = path_push(st, name, NULL);
	enum vy_type t = walk_expr(st, e, 1, target);
	path_pop(st, mark);
	return t;
}

static void walk_block(struct state *st, struct vy_block *b, const char *name, uint32_t depth,
	uint32_t ctx, bool grid_ok);

static void walk_let(struct state *st, struct vy_node *n)
{
	bool named = check_ident(st, n->name, "let variable");
	uint32_t g = graph_node(st);
	enum vy_type t = slot(st, n->args[0], "value", g);
	if (!named) {
		return;
	}
	const struct entry *prev = table_find(&st->vars, n->name);
	if (prev) {
		report(st, VY_E_INVALID_PROGRAM,
			"rename the new variable; vyre forbids shadowing a visible name",
			"let \"%.64s\" shadows the %s of the same name that is still visible",
			n->name, prev->loop ? "loop variable" : "variable");
	}
	table_push(&st->vars, (struct entry){.name = n->name, .type = t, .graph = g});
}

static void walk_assign(struct state *st, struct vy_node *n, uint32_t ctx)
{
	struct entry *v = n->name ? table_find(&st->vars, n->name) : NULL;
	uint32_t target = NO_TARGET;
	if (!v) {
		report(st, VY_E_INVALID_PROGRAM,
			fixf(st, "declare %.64s with a let before assigning to it",
				n->name ? n->name : "the variable"),
			"assign to \"%.64s\", which is not defined here", n->name ? n->name : "");
	} else if (v->cut) {
		report_cut(st, n->name);
	} else if (v->loop) {
		report(st, VY_E_INVALID_PROGRAM,
			"copy the loop variable into a new variable with let and assign to that",
			"assign to loop variable \"%.64s\"; loop variables are read-only", n->name);
	} else {
		target = v->graph;
		graph_edge(st, ctx, target);
	}
	enum vy_type t = slot(st, n->args[0], "value", target);
	if (target != NO_TARGET && type_ok(t) && type_ok(v->type) && t != v->type) {
		size_t mark = path_push(st, "value", NULL);
		report(st, VY_E_INVALID_PROGRAM,
			fixf(st, "cast the value to %s, or declare %.64s as %s", tname(v->type),
				n->name, tname(t)),
			"assign gives \"%.64s\" a %s value, but its let made it %s", n->name,
			tname(t), tname(v->type));
		path_pop(st, mark);
	}
}

static void walk_store(struct state *st, struct vy_node *n)
{
	const struct vy_buffer *b = named_buffer(st, n->name, "store");
	if (b && (b->access == VY_ACCESS_READ_ONLY || b->access == VY_ACCESS_UNIFORM)) {
		report(st, VY_E_INVALID_PROGRAM,
			fixf(st,
				"declare buffer %.64s read_write (or write_only if the program "
				"never loads it)",
				b->name),
			"store into buffer \"%.64s\", which is %s", b->name,
			vy_access_name(b->access));
	}
	enum vy_type ti = slot(st, n->args[0], "index", NO_TARGET);
	if (type_ok(ti) && ti != VY_TYPE_U32) {
		size_t mark = path_push(st, "index", NULL);
		report(st, VY_E_INVALID_PROGRAM,
			"cast the index to u32 with [\"cast\", \"u32\", ...]",
			"store index is %s; buffer indices are u32", tname(ti));
		path_pop(st, mark);
	}
	enum vy_type tv = slot(st, n->args[1], "value", NO_TARGET);
	if (b && type_ok(b->type) && type_ok(tv) && tv != b->type) {
		size_t mark = path_push(st, "value", NULL);
		report(st, VY_E_INVALID_PROGRAM,
			fixf(st, "cast the value to %s with [\"cast\", \"%s\", ...]",
				tname(b->type), tname(b->type)),
			"store of a %s value into buffer \"%.64s\" of type %s", tname(tv), b->name,
			tname(b->type));
		path_pop(st, mark);
	}
}

static void check_bound(struct state *st, enum vy_type t, const char *name)
{
	if (type_ok(t) && t != VY_TYPE_U32) {
		size_t mark = path_push(st, name, NULL);
		report(st, VY_E_INVALID_PROGRAM,
			"cast the bound to u32 with [\"cast\", \"u32\", ...]",
			"loop bound %s is %s; loop bounds are u32", name, tname(t));
		path_pop(st, mark);
	}
}

static void walk_loop(
	struct state *st, struct vy_node *n, uint32_t depth, uint32_t ctx, uint32_t pos)
{
	bool named = check_ident(st, n->name, "loop variable");
	uint32_t c = graph_ctx(st, ctx);
	check_bound(st, slot(st, n->args[0], "from", c), "from");
	check_bound(st, slot(st, n->args[1], "to", c), "to");
	size_t scope = st->vars.len;
	if (named) {
		const struct entry *prev = table_find(&st->vars, n->name);
		if (prev) {
			report(st, VY_E_INVALID_PROGRAM,
				"rename the loop variable; vyre forbids shadowing a visible name",
				"loop variable \"%.64s\" shadows the %s of the same name that is "
				"still visible",
				n->name, prev->loop ? "loop variable" : "variable");
		}
	}
	uint32_t g = graph_node(st);
	graph_edge(st, c, g);
	if (named) {
		table_push(&st->vars,
			(struct entry){
				.name = n->name, .type = VY_TYPE_U32, .graph = g, .loop = true});
	}
	uint32_t outer_loop = st->loop_start;
	if (outer_loop == NO_POS) {
		st->loop_start = pos;
	}
	st->frames[st->nframes++] = (struct frame){c, st->plen, true};
	walk_block(st, &n->body, ".body", depth + 1, c, false);
	st->nframes--;
	st->loop_start = outer_loop;
	table_pop_to(&st->vars, scope);
}

static void walk_barrier(
	struct state *st, struct vy_node *n, uint32_t ctx, bool grid_ok, uint32_t pos)
{
	if (n->order >= VY_ORDER_COUNT) {
		report(st, VY_E_INVALID_PROGRAM,
			"use acquire, release, acq_rel, seq_cst or grid_sync as the ordering",
			"barrier has an unknown ordering %u", (unsigned)n->order);
	}
	if (n->order == VY_ORDER_GRID_SYNC && !grid_ok) {
		report(st, VY_E_INVALID_PROGRAM,
			"move the grid_sync barrier to the top level of the entry, or of a region "
			"that is the entry's only node",
			"grid_sync barrier is nested; it splits the dispatch, so it may only "
			"stand at the top level of the entry or of a region that wraps the whole "
			"entry");
	}
	if (n->order == VY_ORDER_GRID_SYNC) {
		/* each side of the barrier runs as its own launch: no variable survives it */
		for (size_t i = 0; i < st->vars.len; i++) {
			st->vars.items[i].cut = true;
		}
	}
	if (st->pass != 2) {
		return;
	}
	assert(st->nonuni);
	if (st->nonuni[ctx]) {
		for (uint32_t i = 0; i < st->nframes; i++) {
			const struct frame *f = &st->frames[i];
			if (!st->nonuni[f->ctx]) {
				continue;
			}
			report(st, VY_E_INVALID_PROGRAM,
				"build conditions and loop bounds around a barrier only from "
				"literals, spec constants, len, wgid and variables derived from "
				"them, or move the barrier out",
				"barrier in non-uniform control flow: the %s at %.*s%s may differ "
				"between invocations",
				f->loop ? "bounds" : "condition",
				(int)(f->plen < 160 ? f->plen : 160), st->path,
				f->plen < 160 ? (f->loop ? "" : ".cond") : "...");
			return;
		}
	}
	if (st->first_bad_return != NO_POS && pos > st->first_bad_return) {
		report(st, VY_E_INVALID_PROGRAM,
			"move the return after the last barrier, or make the conditions around "
			"the return uniform",
			"barrier in non-uniform control flow: a return under a condition that may "
			"differ between invocations comes before it, so some invocations never "
			"reach it");
	}
}

/* Walk one node at the current path (which ends in its index). */
static void walk_node(
	struct state *st, struct vy_node *n, uint32_t depth, uint32_t ctx, bool grid_ok)
{
	if (!n) {
		report(st, VY_E_INVALID_PROGRAM, "remove the empty entry or give it a node",
			"missing node");
		return;
	}
	if (st->nodes >= VY_IR_MAX_NODES) {
		st->nodes_over = true;
		report_at(st, "entry", VY_E_INVALID_PROGRAM,
			"split the work into several programs, or use loops instead of repeated "
			"nodes",
			"the program holds more than %d nodes", VY_IR_MAX_NODES);
		return;
	}
	uint32_t pos = ++st->nodes;
	if (n->kind >= VY_NODE_KIND_COUNT) {
		report(st, VY_E_INVALID_PROGRAM, "use one of the nodes of DESIGN.md §3",
			"unknown node kind %u", (unsigned)n->kind);
		return;
	}
	size_t mark = path_push(st, vy_node_kind_name(n->kind), NULL);
	if (depth > VY_IR_MAX_NESTING) {
		report(st, VY_E_INVALID_PROGRAM,
			"flatten the nesting (merge blocks, hoist code out of ifs and loops) to "
			"64 levels or fewer",
			"%s nests deeper than %d levels", vy_node_kind_name(n->kind),
			VY_IR_MAX_NESTING);
		path_pop(st, mark);
		return;
	}
	switch (n->kind) {
	case VY_NODE_LET:
		walk_let(st, n);
		break;
	case VY_NODE_ASSIGN:
		walk_assign(st, n, ctx);
		break;
	case VY_NODE_STORE:
		walk_store(st, n);
		break;
	case VY_NODE_IF: {
		uint32_t c = graph_ctx(st, ctx);
		enum vy_type t = slot(st, n->args[0], "cond", c);
		if (type_ok(t) && t != VY_TYPE_U32 && t != VY_TYPE_I32 && t != VY_TYPE_BOOL) {
			size_t m = path_push(st, "cond", NULL);
			report(st, VY_E_INVALID_PROGRAM,
				"compare the value with a comparison (for example [\"ne\", x, "
				"zero]) to get a bool",
				"if condition is %s; a condition is u32, i32 or bool", tname(t));
			path_pop(st, m);
		}
		st->frames[st->nframes++] = (struct frame){c, st->plen, false};
		walk_block(st, &n->body, ".then", depth + 1, c, false);
		walk_block(st, &n->orelse, ".else", depth + 1, c, false);
		st->nframes--;
		break;
	}
	case VY_NODE_LOOP:
		walk_loop(st, n, depth, ctx, pos);
		break;
	case VY_NODE_RETURN:
		if (st->pass == 1) {
			st->rets = grow(st->rets, &st->cap_rets, st->nrets + 1, sizeof(*st->rets));
			st->rets[st->nrets++] =
				(struct ret){ctx, st->loop_start != NO_POS ? st->loop_start : pos};
		}
		break;
	case VY_NODE_REGION:
		if (!n->name || !n->name[0] || strlen(n->name) > VY_IR_MAX_NAME) {
			report(st, VY_E_INVALID_PROGRAM,
				"name the region's generator in 1 to 64 bytes",
				"region generator name is %s",
				n->name && n->name[0] ? "longer than 64 bytes" : "empty");
		}
		walk_block(
			st, &n->body, ".body", depth + 1, ctx, depth == 1 && st->p->entry.len == 1);
		break;
	case VY_NODE_BLOCK:
		walk_block(st, &n->body, ".body", depth + 1, ctx, false);
		break;
	case VY_NODE_BARRIER:
		walk_barrier(st, n, ctx, grid_ok, pos);
		break;
	default:
		break;
	}
	path_pop(st, mark);
}

/* Walk a block, a scope of its own, at `<path><name>[i]`. */
static void walk_block(struct state *st, struct vy_block *b, const char *name, uint32_t depth,
	uint32_t ctx, bool grid_ok)
{
	size_t scope = st->vars.len;
	for (uint32_t i = 0; i < b->len && !st->nodes_over; i++) {
		size_t mark = path_push_index(st, name, i);
		walk_node(st, b->items ? b->items[i] : NULL, depth, ctx, grid_ok);
		path_pop(st, mark);
	}
	table_pop_to(&st->vars, scope);
}

static void check_workgroup_size(struct state *st)
{
	const struct vy_program *p = st->p;
	const struct vy_caps *caps = st->caps;
	uint64_t total = 1;
	char at[32];
	for (unsigned i = 0; i < 3; i++) {
		uint32_t w = p->workgroup_size[i];
		snprintf(at, sizeof(at), "workgroup_size[%u]", i);
		total *= w;
		if (w == 0) {
			report_at(st, at, VY_E_INVALID_PROGRAM,
				"set every workgroup_size axis to 1 or more",
				"workgroup_size[%u] is 0; every axis must be at least 1", i);
		} else if (caps && caps->max_workgroup_size[i] && w > caps->max_workgroup_size[i]) {
			report_at(st, at, VY_E_UNSUPPORTED_FEATURE,
				fixf(st, "set workgroup_size[%u] to %u or less", i,
					caps->max_workgroup_size[i]),
				"workgroup_size[%u] is %u, above this device's limit of %u", i, w,
				caps->max_workgroup_size[i]);
		}
	}
	if (caps && caps->max_workgroup_invocations && total > caps->max_workgroup_invocations) {
		report_at(st, "workgroup_size", VY_E_UNSUPPORTED_FEATURE,
			fixf(st,
				"shrink workgroup_size so that the product of its axes is %u or "
				"less",
				caps->max_workgroup_invocations),
			"workgroup_size %ux%ux%u is %llu invocations, above this device's limit "
			"of %u",
			p->workgroup_size[0], p->workgroup_size[1], p->workgroup_size[2],
			(unsigned long long)total, caps->max_workgroup_invocations);
	}
}

static void check_buffer(struct state *st, uint32_t i)
{
	const struct vy_buffer *b = &st->p->buffers[i];
	char at[64];
	size_t mark = path_push_index(st, "buffers", i);
	path_push(st, "name", NULL);
	if (check_ident(st, b->name, "buffer")) {
		for (uint32_t j = 0; j < i; j++) {
			if (st->p->buffers[j].name &&
				strcmp(st->p->buffers[j].name, b->name) == 0) {
				report(st, VY_E_INVALID_PROGRAM, "give every buffer its own name",
					"buffer name \"%.64s\" is already used by buffers[%u]",
					b->name, j);
				break;
			}
		}
	}
	path_pop(st, mark);
	const char *bn = b->name ? b->name : "";
	if (b->access >= VY_ACCESS_COUNT) {
		snprintf(at, sizeof(at), "buffers[%u].access", i);
		report_at(st, at, VY_E_INVALID_PROGRAM,
			"use read_only, read_write, write_only, uniform or workgroup",
			"buffer \"%.64s\" has an unknown access mode", bn);
	}
	if (!type_ok(b->type)) {
		snprintf(at, sizeof(at), "buffers[%u].type", i);
		report_at(st, at, VY_E_INVALID_PROGRAM, "use u32, i32, f32 or bool",
			"buffer \"%.64s\" has an unknown element type", bn);
	}
	if (b->access != VY_ACCESS_WORKGROUP) {
		for (uint32_t j = 0; j < i; j++) {
			const struct vy_buffer *o = &st->p->buffers[j];
			if (o->access != VY_ACCESS_WORKGROUP && o->binding == b->binding) {
				snprintf(at, sizeof(at), "buffers[%u].binding", i);
				report_at(st, at, VY_E_INVALID_PROGRAM,
					"give every non-workgroup buffer its own binding number",
					"buffer \"%.64s\" has binding %u, already taken by buffer "
					"\"%.64s\"",
					bn, b->binding, o->name ? o->name : "");
				break;
			}
		}
	} else if (b->count == 0) {
		snprintf(at, sizeof(at), "buffers[%u].count", i);
		report_at(st, at, VY_E_INVALID_PROGRAM,
			fixf(st,
				"give workgroup buffer %.64s a count > 0; workgroup buffers have "
				"no input to size them",
				bn),
			"workgroup buffer \"%.64s\" has count 0", bn);
	}
	if (b->count == 0 && (b->output || b->access == VY_ACCESS_WRITE_ONLY)) {
		snprintf(at, sizeof(at), "buffers[%u].count", i);
		report_at(st, at, VY_E_INVALID_PROGRAM,
			fixf(st,
				"give %.64s a count > 0; an output buffer is allocated by the "
				"backend and has no input to size it",
				bn),
			"output buffer \"%.64s\" has count 0", bn);
	}
	if (!b->has_hints) {
		return;
	}
	uint32_t al = b->hints.alignment;
	if (al & (al - 1)) {
		snprintf(at, sizeof(at), "buffers[%u].hints.alignment", i);
		report_at(st, at, VY_E_INVALID_PROGRAM,
			"set the alignment hint to 0 or a power of two such as 16, 64 or 256",
			"buffer \"%.64s\" alignment hint %u is not a power of two", bn, al);
	}
	if (b->hints.coalesce_axis < -1 || b->hints.coalesce_axis > 2) {
		snprintf(at, sizeof(at), "buffers[%u].hints.coalesce_axis", i);
		report_at(st, at, VY_E_INVALID_PROGRAM,
			"set coalesce_axis to 0, 1 or 2, or leave it out",
			"buffer \"%.64s\" coalesce_axis %d is not an axis", bn,
			b->hints.coalesce_axis);
	}
	if (b->hints.locality >= VY_LOCALITY_COUNT) {
		snprintf(at, sizeof(at), "buffers[%u].hints.locality", i);
		report_at(st, at, VY_E_INVALID_PROGRAM, "use streaming, temporal or random",
			"buffer \"%.64s\" has an unknown locality hint", bn);
	}
}

static void check_header(struct state *st)
{
	const struct vy_program *p = st->p;
	if (p->version != VY_IR_VERSION) {
		report_at(st, "vyre", VY_E_INVALID_PROGRAM,
			"write the program for vyre IR version 1",
			"IR version %u is not supported; this validator reads version %d",
			p->version, VY_IR_VERSION);
	}
	if (p->name && (!p->name[0] || strlen(p->name) > VY_IR_MAX_NAME)) {
		report_at(st, "name", VY_E_INVALID_PROGRAM,
			"shorten the program label to 1 to 64 bytes, or leave it out",
			"program label is %s", p->name[0] ? "longer than 64 bytes" : "empty");
	}
	check_workgroup_size(st);
	uint32_t n = p->n_buffers;
	if (n > VY_IR_MAX_BUFFERS) {
		report_at(st, "buffers", VY_E_INVALID_PROGRAM,
			"merge buffers (for example pack several arrays into one) to 32 or fewer",
			"the program declares %u buffers; at most %d are allowed", n,
			VY_IR_MAX_BUFFERS);
		n = VY_IR_MAX_BUFFERS;
	}
	uint64_t shared = 0;
	bool shared_reported = false;
	for (uint32_t i = 0; i < n; i++) {
		check_buffer(st, i);
		const struct vy_buffer *b = &p->buffers[i];
		if (b->access != VY_ACCESS_WORKGROUP || !type_ok(b->type)) {
			continue;
		}
		shared += (uint64_t)b->count * vy_type_size(b->type);
		if (st->caps && st->caps->max_shared_bytes && shared > st->caps->max_shared_bytes &&
			!shared_reported) {
			char at[48];
			shared_reported = true;
			snprintf(at, sizeof(at), "buffers[%u].count", i);
			report_at(st, at, VY_E_UNSUPPORTED_FEATURE,
				fixf(st,
					"shrink the workgroup buffers to %u bytes in all, or run "
					"on a device with more shared memory",
					st->caps->max_shared_bytes),
				"workgroup buffers up to \"%.64s\" take %llu bytes, above this "
				"device's %u bytes of shared memory",
				b->name ? b->name : "", (unsigned long long)shared,
				st->caps->max_shared_bytes);
		}
	}
}

/*
 * Whether the walk will meet a barrier. It visits the nodes the walk visits, in the same order and
 * within the same limits, so a program without barriers skips the uniformity run.
 */
static bool has_barrier(const struct vy_block *b, uint32_t depth, uint32_t *budget)
{
	if (depth > VY_IR_MAX_NESTING || !b->items) {
		return false;
	}
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		if (!n) {
			continue;
		}
		if (*budget == 0) {
			return false;
		}
		(*budget)--;
		if (n->kind == VY_NODE_BARRIER || has_barrier(&n->body, depth + 1, budget) ||
			has_barrier(&n->orelse, depth + 1, budget)) {
			return true;
		}
	}
	return false;
}

static void run_pass(struct state *st, int pass)
{
	st->pass = pass;
	st->plen = 0;
	st->path[0] = '\0';
	st->nodes = 0;
	st->nodes_over = false;
	st->exprs = 0;
	st->exprs_over = false;
	st->loop_start = NO_POS;
	st->ngraph = 0;
	st->nframes = 0;
	table_reset(&st->vars);
	table_reset(&st->specs);
	if (pass == 2) {
		check_header(st);
	}
	uint32_t root = graph_node(st);
	assert(root == ROOT_CTX);
	walk_block(st, &st->p->entry, "entry", 1, root, true);
}

int vy_validate(struct vy_program *program, const struct vy_caps *caps, struct vy_err_list *errs)
{
	assert(program);
	struct state *st = calloc(1, sizeof(*st));
	if (!st) {
		fprintf(stderr, "vyred: out of memory in the IR validator\n");
		abort();
	}
	st->p = program;
	st->caps = caps;
	st->errs = errs;
	st->first_bad_return = NO_POS;
	uint32_t budget = VY_IR_MAX_NODES;
	if (has_barrier(&program->entry, 1, &budget)) {
		run_pass(st, 1);
		graph_propagate(st);
	}
	run_pass(st, 2);
	int rc = st->n_invalid       ? VY_E_INVALID_PROGRAM
		 : st->n_unsupported ? VY_E_UNSUPPORTED_FEATURE
				     : 0;
	table_finish(&st->vars);
	table_finish(&st->specs);
	free(st->nonuni);
	free(st->edges);
	free(st->rets);
	free(st);
	return rc;
}

int vy_validate_first(struct vy_program *p, const struct vy_caps *caps, struct vy_err *err)
{
	struct vy_err_list list;
	vy_err_list_init(&list);
	int rc = vy_validate(p, caps, &list);
	vy_err_clear(err);
	if (err && list.len > 0) {
		*err = list.items[0];
		size_t total = list.len + list.dropped;
		if (total > 1) {
			char prefix[48];
			int n = snprintf(prefix, sizeof(prefix), "%zu errors; first: ", total);
			size_t plen = n > 0 ? (size_t)n : 0;
			size_t room = sizeof(err->message) - 1 - plen;
			size_t mlen = strlen(list.items[0].message);
			mlen = mlen < room ? mlen : room;
			memcpy(err->message, prefix, plen);
			memcpy(err->message + plen, list.items[0].message, mlen);
			err->message[plen + mlen] = '\0';
		}
	}
	vy_err_list_finish(&list);
	return rc;
}
