/*
 * Binding plans (seed 000): one pass over the program's buffers in binding order assigns roles,
 * input and output positions, element sizes, alignments and static sizes, and a second pass
 * checks the inputs against the result. A plan lives in a single heap block (bindings, index
 * arrays and copied names together), so destroying it is one free and it never borrows from the
 * program. The layout fingerprints at the end decide when two dispatches can reuse one
 * descriptor-set layout.
 */
#include "binding.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/*
 * Room for an error location such as "buffers[31].hints.alignment". Fix lines are formatted into
 * a local buffer before vy_err_set, because like the seed's they name buffers and byte counts.
 */
#define AT_MAX 64

#define VY__ROLE_NAME(suffix, name) name,
static const char *const role_names[] = {VY_BINDING_ROLE_MAP(VY__ROLE_NAME)};
#undef VY__ROLE_NAME

const char *vy_binding_role_name(enum vy_binding_role role)
{
	return (unsigned)role < VY_ROLE_COUNT ? role_names[role] : "?";
}

static size_t align_up(size_t off, size_t align)
{
	return (off + align - 1) / align * align;
}

/* One block: the plan, its bindings, its three index arrays, then the names. */
static struct vy_binding_plan *plan_alloc(const struct vy_program *program, uint32_t n)
{
	size_t names = 0;
	for (uint32_t i = 0; i < n; i++) {
		names += strlen(program->buffers[i].name) + 1;
	}
	size_t off_bindings = align_up(sizeof(struct vy_binding_plan), _Alignof(struct vy_binding));
	size_t off_indices =
		align_up(off_bindings + n * sizeof(struct vy_binding), _Alignof(uint32_t));
	size_t off_names = off_indices + 3 * (size_t)n * sizeof(uint32_t);
	size_t total = off_names + names;

	unsigned char *block = calloc(1, total);
	if (!block) {
		fprintf(stderr, "vyred: out of memory allocating a binding plan of %zu bytes\n",
			total);
		abort();
	}
	struct vy_binding_plan *plan = (struct vy_binding_plan *)block;
	plan->bindings = (struct vy_binding *)(block + off_bindings);
	uint32_t *indices = (uint32_t *)(block + off_indices);
	plan->input_indices = indices;
	plan->output_indices = indices + n;
	plan->shared_indices = indices + 2 * (size_t)n;
	return plan;
}

/* The names area starts right after the last shared index slot. */
static char *plan_names(struct vy_binding_plan *plan, uint32_t n)
{
	return (char *)(plan->shared_indices + n);
}

/* Insertion sort by binding number: stable, so workgroup buffers sharing a number keep order. */
static void order_by_binding(const struct vy_program *program, uint32_t *order, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = order[i] = i;
		uint32_t j = i;
		while (j > 0 &&
			program->buffers[order[j - 1]].binding > program->buffers[v].binding) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = v;
	}
}

static int role_for(
	const struct vy_buffer *buf, uint32_t index, enum vy_binding_role *role, struct vy_err *err)
{
	if (buf->access == VY_ACCESS_WORKGROUP) {
		*role = VY_ROLE_SHARED;
		return 0;
	}
	if (buf->output) {
		*role = VY_ROLE_OUTPUT;
		return 0;
	}
	switch (buf->access) {
	case VY_ACCESS_READ_ONLY:
		*role = VY_ROLE_INPUT;
		return 0;
	case VY_ACCESS_READ_WRITE:
		*role = VY_ROLE_INPUT_OUTPUT;
		return 0;
	case VY_ACCESS_WRITE_ONLY:
		*role = VY_ROLE_OUTPUT;
		return 0;
	case VY_ACCESS_UNIFORM:
		*role = VY_ROLE_UNIFORM;
		return 0;
	case VY_ACCESS_WORKGROUP:
	case VY_ACCESS_COUNT:
		break;
	}
	char at[AT_MAX];
	char fix[VY_ERR_FIX_MAX];
	snprintf(at, sizeof(at), "buffers[%" PRIu32 "].access", index);
	snprintf(fix, sizeof(fix),
		"declare `%s` as read_only, read_write, write_only, uniform or workgroup",
		buf->name);
	return vy_err_set(err, VY_E_INVALID_PROGRAM, at, fix,
		"buffer `%s` has access value %d, which no binding role maps to", buf->name,
		(int)buf->access);
}

static int static_len(const struct vy_buffer *buf, uint32_t index, uint32_t element_size,
	struct vy_binding *b, struct vy_err *err)
{
	if (buf->count == 0) {
		return 0;
	}
	if ((size_t)buf->count > SIZE_MAX / element_size) {
		char at[AT_MAX];
		char fix[VY_ERR_FIX_MAX];
		snprintf(at, sizeof(at), "buffers[%" PRIu32 "].count", index);
		snprintf(fix, sizeof(fix),
			"split `%s` into smaller buffers or declare fewer elements", buf->name);
		return vy_err_set(err, VY_E_INVALID_PROGRAM, at, fix,
			"buffer `%s` declares %" PRIu32 " elements of %" PRIu32
			" bytes, more bytes than size_t holds on this host",
			buf->name, buf->count, element_size);
	}
	b->has_static_len = true;
	b->static_byte_len = (size_t)buf->count * element_size;
	return 0;
}

static int alignment_for(const struct vy_buffer *buf, uint32_t index, uint32_t element_size,
	uint32_t *out, struct vy_err *err)
{
	uint32_t hinted = buf->has_hints ? buf->hints.alignment : 0;
	if (hinted & (hinted - 1)) {
		char at[AT_MAX];
		char fix[VY_ERR_FIX_MAX];
		snprintf(at, sizeof(at), "buffers[%" PRIu32 "].hints.alignment", index);
		snprintf(fix, sizeof(fix),
			"set hints.alignment of `%s` to 0 or a power of two such as 16 or 64",
			buf->name);
		return vy_err_set(err, VY_E_INVALID_PROGRAM, at, fix,
			"buffer `%s` has preferred_alignment=%" PRIu32
			", which is not a power of two",
			buf->name, hinted);
	}
	*out = hinted > element_size ? hinted : element_size;
	return 0;
}

static int check_input(const struct vy_binding *b, size_t len, struct vy_err *err)
{
	char at[AT_MAX];
	char fix[VY_ERR_FIX_MAX];
	snprintf(at, sizeof(at), "inputs[%" PRIu32 "]", b->input_index);
	if (b->element_size > 1 && len % b->element_size != 0) {
		snprintf(fix, sizeof(fix),
			"send a whole number of %" PRIu32 "-byte elements for `%s`",
			b->element_size, b->name);
		return vy_err_set(err, VY_E_BAD_REQUEST, at, fix,
			"input `%s` holds %zu bytes, not a multiple of its %" PRIu32
			"-byte element size",
			b->name, len, b->element_size);
	}
	if (b->has_static_len && len != b->static_byte_len) {
		snprintf(fix, sizeof(fix),
			"send exactly %zu bytes for `%s`, or declare it with count 0 "
			"so that its input sizes it",
			b->static_byte_len, b->name);
		return vy_err_set(err, VY_E_BAD_REQUEST, at, fix,
			"input `%s` holds %zu bytes but its declaration (%" PRIu32
			" elements of %" PRIu32 " bytes) fixes %zu bytes",
			b->name, len, b->element_count, b->element_size, b->static_byte_len);
	}
	if (!b->has_static_len && len / b->element_size > UINT32_MAX) {
		snprintf(fix, sizeof(fix), "split `%s` into inputs of at most %" PRIu32 " elements",
			b->name, UINT32_MAX);
		return vy_err_set(err, VY_E_BAD_REQUEST, at, fix,
			"input `%s` holds %zu elements, more than a u32 index reaches", b->name,
			len / b->element_size);
	}
	return 0;
}

int vy_binding_plan_check_outputs(
	const struct vy_binding_plan *plan, uint64_t limit, struct vy_err *err)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		const struct vy_binding *b = &plan->bindings[i];
		if (b->output_index != VY_BINDING_NONE) {
			total += b->has_static_len ? (uint64_t)b->static_byte_len
						   : (uint64_t)b->element_count * b->element_size;
		}
	}
	if (total > limit) {
		return vy_err_set(err, VY_E_QUOTA_EXCEEDED, "outputs",
			"declare smaller outputs, or split the work into several dispatches",
			"the outputs of this dispatch would hold %" PRIu64
			" bytes; the limit is %" PRIu64,
			total, limit);
	}
	return 0;
}

int vy_binding_plan_check_inputs(const struct vy_binding_plan *plan, const struct vy_bytes *inputs,
	size_t n_inputs, struct vy_err *err)
{
	assert(plan);
	assert(inputs || n_inputs == 0);
	if (n_inputs != plan->n_inputs) {
		char fix[VY_ERR_FIX_MAX];
		snprintf(fix, sizeof(fix),
			"send %" PRIu32 " input(s), one per read_only, read_write and "
			"uniform buffer, in binding order",
			plan->n_inputs);
		return vy_err_set(err, VY_E_BAD_REQUEST, "inputs", fix,
			"the program declares %" PRIu32
			" input buffer(s) but the dispatch sent %zu",
			plan->n_inputs, n_inputs);
	}
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		const struct vy_binding *b = &plan->bindings[i];
		if (b->input_index == VY_BINDING_NONE) {
			continue;
		}
		assert(b->input_index < n_inputs);
		int rc = check_input(b, inputs[b->input_index].len, err);
		if (rc < 0) {
			return rc;
		}
	}
	return 0;
}

static uint32_t count_from_input(
	const struct vy_binding *b, const struct vy_bytes *inputs, size_t n_inputs)
{
	if (!inputs || b->input_index == VY_BINDING_NONE || b->input_index >= n_inputs) {
		return 0;
	}
	size_t elements = inputs[b->input_index].len / b->element_size;
	return elements > UINT32_MAX ? 0 : (uint32_t)elements;
}

static int build(const struct vy_program *program, const struct vy_bytes *inputs, size_t n_inputs,
	bool check, struct vy_binding_plan **out, struct vy_err *err)
{
	assert(program && out);
	assert(inputs || n_inputs == 0);
	assert(program->n_buffers <= VY_IR_MAX_BUFFERS);
	*out = NULL;

	uint32_t n = program->n_buffers;
	uint32_t order[VY_IR_MAX_BUFFERS];
	order_by_binding(program, order, n);

	struct vy_binding_plan *plan = plan_alloc(program, n);
	char *names = plan_names(plan, n);
	int rc = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t index = order[k];
		const struct vy_buffer *buf = &program->buffers[index];
		struct vy_binding *b = &plan->bindings[k];

		rc = role_for(buf, index, &b->role, err);
		if (rc < 0) {
			goto error;
		}
		/* Every IR v1 type has a fixed width, so no runtime-sized element reaches here. */
		b->element_size = vy_type_size(buf->type);
		assert(b->element_size > 0);
		rc = static_len(buf, index, b->element_size, b, err);
		if (rc < 0) {
			goto error;
		}
		rc = alignment_for(buf, index, b->element_size, &b->preferred_alignment, err);
		if (rc < 0) {
			goto error;
		}

		size_t len = strlen(buf->name) + 1;
		memcpy(names, buf->name, len);
		b->name = names;
		names += len;
		b->binding = buf->binding;
		b->buffer_index = index;

		bool consumes = b->role == VY_ROLE_INPUT || b->role == VY_ROLE_INPUT_OUTPUT ||
				b->role == VY_ROLE_UNIFORM;
		bool produces = b->role == VY_ROLE_OUTPUT || b->role == VY_ROLE_INPUT_OUTPUT;
		b->input_index = VY_BINDING_NONE;
		b->output_index = VY_BINDING_NONE;
		if (consumes) {
			b->input_index = plan->n_inputs;
			plan->input_indices[plan->n_inputs++] = index;
		}
		if (produces || buf->live_out) {
			b->output_index = plan->n_outputs;
			plan->output_indices[plan->n_outputs++] = index;
		}
		if (b->role == VY_ROLE_SHARED) {
			plan->shared_indices[plan->n_shared++] = index;
		}
		b->element_count = buf->count ? buf->count : count_from_input(b, inputs, n_inputs);
		plan->n_bindings++;
	}

	if (check) {
		rc = vy_binding_plan_check_inputs(plan, inputs, n_inputs, err);
		if (rc < 0) {
			goto error;
		}
	}
	*out = plan;
	return 0;

error:
	vy_binding_plan_destroy(plan);
	return rc;
}

int vy_binding_plan_build(
	const struct vy_program *program, struct vy_binding_plan **out, struct vy_err *err)
{
	return build(program, NULL, 0, false, out, err);
}

int vy_binding_plan_build_for_inputs(const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, struct vy_binding_plan **out,
	struct vy_err *err)
{
	return build(program, inputs, n_inputs, true, out, err);
}

void vy_binding_plan_destroy(struct vy_binding_plan *plan)
{
	free(plan);
}

/*
 * FNV-1a over little-endian words: the same bytes on every host, so a fingerprint's hash can be
 * logged or persisted and compared elsewhere.
 */
#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv_u32(uint64_t h, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		h ^= (v >> (8 * i)) & 0xffu;
		h *= FNV_PRIME;
	}
	return h;
}

void vy_binding_set_fingerprint_init(
	struct vy_binding_set_fingerprint *fp, const struct vy_binding_plan *plan)
{
	assert(plan->n_bindings <= VY_IR_MAX_BUFFERS);
	memset(fp, 0, sizeof(*fp));
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		struct vy_binding_slot slot = {
			.binding = plan->bindings[i].binding,
			.role = plan->bindings[i].role,
			.element_size = plan->bindings[i].element_size,
		};
		/* Plans come sorted already; sorting here keeps this contract standalone. */
		uint32_t j = i;
		while (j > 0 && fp->slots[j - 1].binding > slot.binding) {
			fp->slots[j] = fp->slots[j - 1];
			j--;
		}
		fp->slots[j] = slot;
	}
	fp->n_slots = plan->n_bindings;
}

bool vy_binding_set_fingerprint_equal(
	const struct vy_binding_set_fingerprint *a, const struct vy_binding_set_fingerprint *b)
{
	if (a->n_slots != b->n_slots) {
		return false;
	}
	for (uint32_t i = 0; i < a->n_slots; i++) {
		const struct vy_binding_slot *x = &a->slots[i];
		const struct vy_binding_slot *y = &b->slots[i];
		if (x->binding != y->binding || x->role != y->role ||
			x->element_size != y->element_size) {
			return false;
		}
	}
	return true;
}

uint64_t vy_binding_set_fingerprint_hash(const struct vy_binding_set_fingerprint *fp)
{
	uint64_t h = fnv_u32(FNV_OFFSET, fp->n_slots);
	for (uint32_t i = 0; i < fp->n_slots; i++) {
		h = fnv_u32(h, fp->slots[i].binding);
		h = fnv_u32(h, (uint32_t)fp->slots[i].role);
		h = fnv_u32(h, fp->slots[i].element_size);
	}
	return h;
}

bool vy_binding_plans_share_layout(const struct vy_binding_plan *a, const struct vy_binding_plan *b)
{
	struct vy_binding_set_fingerprint fa;
	struct vy_binding_set_fingerprint fb;
	vy_binding_set_fingerprint_init(&fa, a);
	vy_binding_set_fingerprint_init(&fb, b);
	return vy_binding_set_fingerprint_equal(&fa, &fb);
}

static bool layout_before(const struct vy_layout_slot *x, const struct vy_layout_slot *y)
{
	return x->group < y->group || (x->group == y->group && x->binding < y->binding);
}

void vy_layout_fingerprint_init(
	struct vy_layout_fingerprint *fp, const struct vy_layout_slot *slots, uint32_t n)
{
	assert(n <= VY_LAYOUT_MAX_SLOTS);
	assert(slots || n == 0);
	memset(fp, 0, sizeof(*fp));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = i;
		while (j > 0 && layout_before(&slots[i], &fp->slots[j - 1])) {
			fp->slots[j] = fp->slots[j - 1];
			j--;
		}
		fp->slots[j] = slots[i];
	}
	fp->n_slots = n;
}

bool vy_layout_fingerprint_equal(
	const struct vy_layout_fingerprint *a, const struct vy_layout_fingerprint *b)
{
	if (a->n_slots != b->n_slots) {
		return false;
	}
	for (uint32_t i = 0; i < a->n_slots; i++) {
		const struct vy_layout_slot *x = &a->slots[i];
		const struct vy_layout_slot *y = &b->slots[i];
		if (x->group != y->group || x->binding != y->binding || x->class != y->class ||
			x->read_only != y->read_only || x->element_size != y->element_size) {
			return false;
		}
	}
	return true;
}

uint64_t vy_layout_fingerprint_hash(const struct vy_layout_fingerprint *fp)
{
	uint64_t h = fnv_u32(FNV_OFFSET, fp->n_slots);
	for (uint32_t i = 0; i < fp->n_slots; i++) {
		const struct vy_layout_slot *s = &fp->slots[i];
		h = fnv_u32(h, s->group);
		h = fnv_u32(h, s->binding);
		h = fnv_u32(h, (uint32_t)s->class);
		h = fnv_u32(h, s->read_only ? 1u : 0u);
		h = fnv_u32(h, s->element_size);
	}
	return h;
}
