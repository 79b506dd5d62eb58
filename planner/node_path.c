/*
 * Node numbers and node paths. One preorder walk serves every query: it counts nodes until it
 * meets the one asked for, by number or by pointer, and records the chain of (block, index, node)
 * steps that leads there, from which the path text is written.
 */
#include "node_path.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

/* One level of the walk: which block of the parent, at which index, and the node there. */
struct step {
	const char *block; /* "entry", ".then", ".else", ".body" */
	uint32_t index;
	const struct vy_node *node;
};

/* Room for the nesting limit, with slack for programs at the limit. */
#define MAX_STEPS (VY_IR_MAX_NESTING + 2)

struct walk {
	uint32_t next;              /* number of the next node visited */
	uint32_t want_index;        /* VY_NODE_NONE when searching by pointer */
	const struct vy_node *want; /* NULL when searching by number */
	uint32_t found;             /* number of the node found, or VY_NODE_NONE */
	uint32_t depth;
	struct step steps[MAX_STEPS];
};

static bool walk_block(struct walk *w, const struct vy_block *b, const char *name);

/* Visit `n`, the node at steps[depth - 1]; true when it or a node below it is the one wanted. */
static bool walk_node(struct walk *w, const struct vy_node *n)
{
	uint32_t number = w->next++;
	if (n == w->want || number == w->want_index) {
		w->found = number;
		return true;
	}
	const char *first = n->kind == VY_NODE_IF ? ".then" : ".body";
	return walk_block(w, &n->body, first) || walk_block(w, &n->orelse, ".else");
}

static bool walk_block(struct walk *w, const struct vy_block *b, const char *name)
{
	/* Only an unvalidated program nests deeper; its deeper nodes are left unnumbered. */
	if (b->len == 0 || w->depth >= MAX_STEPS) {
		return false;
	}
	uint32_t d = w->depth++;
	for (uint32_t i = 0; i < b->len; i++) {
		w->steps[d] = (struct step){name, i, b->items[i]};
		if (walk_node(w, b->items[i])) {
			return true;
		}
	}
	w->depth--;
	return false;
}

static bool find(
	struct walk *w, const struct vy_program *p, uint32_t index, const struct vy_node *node)
{
	memset(w, 0, sizeof(*w));
	w->want_index = index;
	w->want = node;
	w->found = VY_NODE_NONE;
	return walk_block(w, &p->entry, "entry");
}

uint32_t vy_node_path_count(const struct vy_program *p)
{
	return vy_block_count_nodes(&p->entry);
}

uint32_t vy_node_path_index(const struct vy_program *p, const struct vy_node *node)
{
	struct walk w;
	if (!node || !find(&w, p, VY_NODE_NONE, node)) {
		return VY_NODE_NONE;
	}
	return w.found;
}

const struct vy_node *vy_node_path_node(const struct vy_program *p, uint32_t index)
{
	struct walk w;
	if (index == VY_NODE_NONE || !find(&w, p, index, NULL)) {
		return NULL;
	}
	return w.steps[w.depth - 1].node;
}

int vy_node_path(const struct vy_program *p, uint32_t index, char *buf, size_t size)
{
	assert(buf && size > 0);
	buf[0] = '\0';
	struct walk w;
	if (index == VY_NODE_NONE || !find(&w, p, index, NULL)) {
		return VY_E_NOT_FOUND;
	}
	size_t used = 0;
	bool cut = false;
	for (uint32_t d = 0; d < w.depth && !cut; d++) {
		const struct step *s = &w.steps[d];
		int n = snprintf(buf + used, size - used, "%s[%u].%s", s->block, s->index,
			vy_node_kind_name(s->node->kind));
		if (n < 0 || (size_t)n >= size - used) {
			cut = true;
		} else {
			used += (size_t)n;
		}
	}
	if (cut && size >= 4) {
		memcpy(buf + size - 4, "...", 4);
	}
	return 0;
}

/* The lowered program's nodes, numbered as the written program's. */
struct origins {
	uint32_t next_written;
	uint32_t next_lowered;
	uint32_t *out;
	uint32_t n_out;
	uint32_t depth;
};

static bool same_node(const struct vy_node *a, const struct vy_node *b)
{
	if (a->kind != b->kind) {
		return false;
	}
	if (!a->name || !b->name) {
		return a->name == b->name;
	}
	return strcmp(a->name, b->name) == 0;
}

/* A node the lowering inserted and every node inside it stand for the next written statement. */
static bool map_inserted(struct origins *o, const struct vy_node *n)
{
	if (o->next_lowered >= o->n_out) {
		return false;
	}
	o->out[o->next_lowered++] = o->next_written;
	for (uint32_t i = 0; i < n->body.len; i++) {
		if (!map_inserted(o, n->body.items[i])) {
			return false;
		}
	}
	for (uint32_t i = 0; i < n->orelse.len; i++) {
		if (!map_inserted(o, n->orelse.items[i])) {
			return false;
		}
	}
	return true;
}

static bool map_block(struct origins *o, const struct vy_block *w, const struct vy_block *l)
{
	if (o->depth >= MAX_STEPS) {
		return false;
	}
	o->depth++;
	uint32_t j = 0;
	for (uint32_t i = 0; i < l->len; i++) {
		const struct vy_node *ln = l->items[i];
		if (o->next_lowered >= o->n_out || j >= w->len) {
			return false;
		}
		if (!same_node(w->items[j], ln)) {
			/* Inserted (a let, or a branch of the math-library lowering, the one kind
			 * of if with a name): it stands for the statement it precedes, numbered
			 * next. */
			if (ln->kind != VY_NODE_LET && !(ln->kind == VY_NODE_IF && ln->name)) {
				return false;
			}
			if (!map_inserted(o, ln)) {
				return false;
			}
			continue;
		}
		o->out[o->next_lowered++] = o->next_written++;
		const struct vy_node *wn = w->items[j++];
		if (!map_block(o, &wn->body, &ln->body) ||
			!map_block(o, &wn->orelse, &ln->orelse)) {
			return false;
		}
	}
	o->depth--;
	return j == w->len;
}

int vy_node_path_origins(const struct vy_program *written, const struct vy_program *lowered,
	uint32_t *out, uint32_t n_out)
{
	struct origins o = {0, 0, out, n_out, 0};
	if (!map_block(&o, &written->entry, &lowered->entry)) {
		return VY_E_INTERNAL;
	}
	return 0;
}

static const char *const trap_names[] = {
#define VY__TRAP_NAME(suffix, wire) wire,
	VY_TRAP_KIND_MAP(VY__TRAP_NAME)
#undef VY__TRAP_NAME
};

const char *vy_trap_kind_name(enum vy_trap_kind kind)
{
	if ((unsigned)kind >= VY_TRAP_KIND_COUNT) {
		return "?";
	}
	return trap_names[kind];
}
