/*
 * Elementwise programs, several logical invocations per invocation (docs/architecture.md, "code
 * generation"). A program in which every invocation touches the buffers it writes only at its
 * own `gid.x` runs its entry as a function, vy_main, once per logical invocation; each such
 * buffer's element lives in a register for the call: read before the calls, written back after
 * them. On a large 1-D launch the runtime then builds the pipeline with spec constant
 * VY_VK_COARSE_SPEC_ID at VY__VK_COARSE, and each invocation runs that many consecutive logical
 * workgroups, whose loads all issue before the first call: a memory-bound kernel keeps several
 * loads in flight per invocation, as a hand-written vector kernel does. Every other launch runs
 * the plain form, the shader generated as for any program; the coarse form is generated and
 * compiled only when a launch first needs it (vk_kernel.c), so a cold compile costs what it did.
 *
 * Why this gives the reference's bytes. The reference runs invocations one after another, and a
 * race-free program's result does not depend on their order or interleaving. The conditions
 * below make the logical invocations of one invocation independent of each other and of every
 * other invocation:
 *   - every load and store of a buffer that the program stores to is at the invocation's own
 *     gid.x, so no invocation reads or writes another one's element of such a buffer;
 *   - nothing lets invocations meet: no barrier, workgroup memory, atomic or subgroup operation;
 *   - nothing tells workgroups apart but gid: no wgid, and no gid.y or gid.z (the coarse launch is
 *     1-D, where they are 0 anyway, but the plain one need not be).
 * Within one logical invocation the register is the element: a load reads it, a store in range
 * writes it, so a load after a store sees the store, a store out of range changes nothing, and
 * an element out of range reads as 0 as the reference's out-of-range load does. A trap or a
 * return ends the call, and the stores made before it still reach memory after the calls, as
 * they would have. The loop counters are the function's locals, so max_loop_iterations still
 * counts per logical invocation. On a device whose driver ends long loops (llvmpipe counts the
 * passes of an invocation's loops against one budget), a program with loops is not eligible:
 * the logical invocations of one invocation would share one budget.
 *
 * Only small programs run coarse (VY__VK_COARSE_SIZE): their time goes to memory, which the
 * loads in flight hide, while a long program's goes to arithmetic, which they do not; and the
 * driver's compiler sees the entry once per logical invocation, so the limit also bounds what
 * coarse costs a cold compile.
 */
#include "vk_codegen_internal.h"

#include <string.h>

/* The names the program binds only to gid.x (every let of the name is `gid 0`, and nothing
 * assigns it or loops over it), so a variable of such a name is gid.x wherever it is read. */
struct names {
	const char *name[VY__VK_COARSE_NAMES];
	bool gid[VY__VK_COARSE_NAMES];
	uint32_t n;
	bool full; /* more names than fit: none is trusted */
};

static bool is_gid_x(const struct vy_expr *e)
{
	return e->kind == VY_EXPR_GID && e->bits == 0;
}

static void name_note(struct names *s, const char *name, bool gid)
{
	for (uint32_t i = 0; i < s->n; i++) {
		if (strcmp(s->name[i], name) == 0) {
			s->gid[i] = s->gid[i] && gid;
			return;
		}
	}
	if (s->n == VY__VK_COARSE_NAMES) {
		s->full = true;
		return;
	}
	s->name[s->n] = name;
	s->gid[s->n++] = gid;
}

static void names_block(struct names *s, const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		if (n->kind == VY_NODE_LET) {
			name_note(s, n->name, is_gid_x(n->args[0]));
		} else if (n->kind == VY_NODE_ASSIGN || n->kind == VY_NODE_LOOP) {
			name_note(s, n->name, false);
		}
		names_block(s, &n->body);
		names_block(s, &n->orelse);
	}
}

bool vy__vk_coarse_gid_index(const struct vy__vk_gen *g, const struct vy_expr *idx)
{
	if (is_gid_x(idx)) {
		return true;
	}
	if (idx->kind != VY_EXPR_VAR) {
		return false;
	}
	for (uint32_t i = 0; i < g->coarse.n_names; i++) {
		if (strcmp(g->coarse.names[i], idx->name) == 0) {
			return true;
		}
	}
	return false;
}

/* What the walk found: buffers by bit of their program index. */
struct scan {
	bool ok;
	uint32_t gid_load;  /* loaded at gid.x somewhere */
	uint32_t gid_store; /* stored at gid.x somewhere */
	uint32_t other;     /* loaded or stored anywhere else */
	uint32_t stored;    /* stored anywhere */
	uint32_t size;      /* nodes and expressions */
};

static void scan_expr(const struct vy__vk_gen *g, struct scan *s, const struct vy_expr *e)
{
	s->size++;
	switch (e->kind) {
	case VY_EXPR_WGID:
	case VY_EXPR_ATOMIC:
	case VY_EXPR_SUBGROUP_REDUCE:
	case VY_EXPR_SUBGROUP_SHUFFLE:
	case VY_EXPR_SUBGROUP_BALLOT:
	case VY_EXPR_SUBGROUP_LANE:
	case VY_EXPR_SUBGROUP_SIZE:
		s->ok = false;
		return;
	case VY_EXPR_GID:
		s->ok = s->ok && e->bits == 0;
		return;
	case VY_EXPR_LOAD: {
		uint32_t bit = UINT32_C(1) << vy__vk_buffer_find(g, e->name);
		if (vy__vk_coarse_gid_index(g, e->args[0])) {
			s->gid_load |= bit;
		} else {
			s->other |= bit;
		}
		break;
	}
	default:
		break;
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		scan_expr(g, s, e->args[i]);
	}
}

static void scan_block(const struct vy__vk_gen *g, struct scan *s, const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len && s->ok; i++) {
		const struct vy_node *n = b->items[i];
		s->size++;
		if (n->kind == VY_NODE_BARRIER ||
			(n->kind == VY_NODE_LOOP && g->opts->loop_passes > 0)) {
			s->ok = false;
			return;
		}
		if (n->kind == VY_NODE_STORE) {
			uint32_t bit = UINT32_C(1) << vy__vk_buffer_find(g, n->name);
			s->stored |= bit;
			if (vy__vk_coarse_gid_index(g, n->args[0])) {
				s->gid_store |= bit;
			} else {
				s->other |= bit;
			}
		}
		for (uint32_t a = 0; a < 2; a++) {
			if (n->args[a]) {
				scan_expr(g, s, n->args[a]);
			}
		}
		scan_block(g, s, &n->body);
		scan_block(g, s, &n->orelse);
	}
}

void vy__vk_coarse_plan(struct vy__vk_gen *g)
{
	struct vy__vk_coarse *c = &g->coarse;
	memset(c, 0, sizeof(*c));
	const struct vy_program *p = g->p;
	if (p->workgroup_size[1] != 1 || p->workgroup_size[2] != 1) {
		return;
	}
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		if (p->buffers[i].access == VY_ACCESS_WORKGROUP) {
			return;
		}
	}
	struct names s = {.n = 0};
	names_block(&s, &p->entry);
	if (s.full) {
		return;
	}
	for (uint32_t i = 0; i < s.n; i++) {
		if (s.gid[i]) {
			c->names[c->n_names++] = s.name[i];
		}
	}
	struct scan sc = {.ok = true};
	scan_block(g, &sc, &p->entry);
	/* A buffer that is stored to must be touched at gid.x alone. */
	if (!sc.ok || sc.size > VY__VK_COARSE_SIZE || (sc.stored & sc.other) != 0 ||
		(sc.gid_load | sc.gid_store) == 0) {
		c->n_names = 0;
		return;
	}
	g->layout->coarse = true;
	if (!g->opts->coarse) {
		c->n_names = 0;
		return;
	}
	c->on = true;
	c->reg = sc.gid_load | sc.gid_store;
	c->preload = sc.gid_load;
	c->stored = sc.gid_store;
}

/* ---- Emission ---- */

void vy__vk_coarse_head(const struct vy__vk_gen *g, struct vy__vk_str *out)
{
	for (uint32_t k = 0; k < g->layout->n_bindings; k++) {
		vy__vk_str_addf(out, "uint vy_len%u;\n", k);
	}
	if (!g->opts->math.select_exact) {
		vy__vk_str_add(out, "uint vy_z;\n");
	}
	vy__vk_str_add(out, "\nvoid vy_main(uvec3 vy_gid, inout uint vy_st");
	for (uint32_t b = 0; b < g->p->n_buffers; b++) {
		if (g->coarse.reg & (UINT32_C(1) << b)) {
			vy__vk_str_addf(out, ", inout uint vy_r%u", b);
		}
	}
	vy__vk_str_add(out, ")\n{\n");
	if (g->has_loop) {
		vy__vk_str_add(out, "\tuint vy_it_lo = 0u;\n\tuint vy_it_hi = 0u;\n");
	}
}

/*
 * The end of main(): the logical invocations of this invocation (one, or VY__VK_COARSE when
 * vy_k says so), their registers read, vy_main called for each, and the stored registers
 * written back.
 */
void vy__vk_coarse_main(const struct vy__vk_gen *g, struct vy__vk_str *out)
{
	const struct vy__vk_coarse *c = &g->coarse;
	vy__vk_str_add(out, "\tuint vy_w0 = vy_wg.x * vy_k;\n");
	for (uint32_t k = 0; k < VY__VK_COARSE; k++) {
		if (k == 0) {
			vy__vk_str_add(out, "\tbool vy_on0 = true;\n"
					    "\tuvec3 vy_g0 = uvec3(vy_w0, vy_wg.y, vy_wg.z) * "
					    "gl_WorkGroupSize + gl_LocalInvocationID;\n");
		} else {
			vy__vk_str_addf(out,
				"\tbool vy_on%u = vy_k > %uu && vy_w0 + %uu < vy_pc.lwg_x;\n"
				"\tuvec3 vy_g%u = uvec3(vy_w0 + %uu, 0u, 0u) * gl_WorkGroupSize + "
				"gl_LocalInvocationID;\n",
				k, k, k, k, k);
		}
		vy__vk_str_addf(out, "\tuint vy_st%u = 0u;\n", k);
	}
	char arr[160], len[160];
	for (uint32_t b = 0; b < g->p->n_buffers; b++) {
		uint32_t bit = UINT32_C(1) << b;
		if (!(c->reg & bit)) {
			continue;
		}
		vy__vk_buffer_array(g, b, arr, sizeof(arr));
		vy__vk_buffer_len(g, b, len, sizeof(len));
		for (uint32_t k = 0; k < VY__VK_COARSE; k++) {
			vy__vk_str_addf(out, "\tuint vy_r%u_%u = 0u;\n", b, k);
			if (c->preload & bit) {
				vy__vk_str_addf(out,
					"\tif (vy_on%u && vy_g%u.x < %s) {\n"
					"\t\tvy_r%u_%u = %s[vy_g%u.x];\n"
					"\t}\n",
					k, k, len, b, k, arr, k);
			}
		}
	}
	for (uint32_t k = 0; k < VY__VK_COARSE; k++) {
		vy__vk_str_addf(out, "\tif (vy_on%u) {\n\t\tvy_main(vy_g%u, vy_st%u", k, k, k);
		for (uint32_t b = 0; b < g->p->n_buffers; b++) {
			if (c->reg & (UINT32_C(1) << b)) {
				vy__vk_str_addf(out, ", vy_r%u_%u", b, k);
			}
		}
		vy__vk_str_add(out, ");\n\t}\n");
	}
	for (uint32_t b = 0; b < g->p->n_buffers; b++) {
		uint32_t bit = UINT32_C(1) << b;
		if (!(c->stored & bit)) {
			continue;
		}
		vy__vk_buffer_array(g, b, arr, sizeof(arr));
		for (uint32_t k = 0; k < VY__VK_COARSE; k++) {
			vy__vk_str_addf(out,
				"\tif ((vy_st%u & %uu) != 0u) {\n"
				"\t\t%s[vy_g%u.x] = vy_r%u_%u;\n"
				"\t}\n",
				k, bit, arr, k, b, k);
		}
	}
}
