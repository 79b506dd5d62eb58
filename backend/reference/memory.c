/*
 * Buffers of the reference interpreter (DESIGN.md §4.3): binding a dispatch's inputs to word
 * arrays, handing the outputs back, and the loads, stores and atomics of the active lanes.
 *
 * Every buffer is an array of little-endian 32-bit words (the interpreter refuses to build on a
 * big-endian host). Bounds are the element count bound at dispatch: the declared count, or for a
 * count-0 buffer the elements of its input. An out-of-bounds load reads 0; an out-of-bounds store
 * or atomic does nothing and the atomic gives 0. f32 elements are canonicalized when loaded and
 * when stored; bool elements read as 1 when their word is not zero and are stored as 1 or 0.
 *
 * Where DESIGN.md leaves room: a workgroup buffer marked live_out or output is returned as its
 * count of zero words, because no workgroup's copy outlives its workgroup.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "interp.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	"the reference interpreter reads buffers as little-endian words in place");

int vy__ref_mem_bind(struct ref_mem *mem, const struct vy_program *p,
	const struct vy_binding_plan *plan, const struct vy_bytes *inputs, struct vy_err *err)
{
	memset(mem, 0, sizeof(*mem));
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		const struct vy_binding *b = &plan->bindings[i];
		uint32_t bi = b->buffer_index;
		assert(bi < p->n_buffers);
		if (b->role == VY_ROLE_SHARED) {
			mem->count[bi] = p->buffers[bi].count;
			continue;
		}
		mem->count[bi] = b->element_count;
		if (b->element_count == 0) {
			continue;
		}
		/* Counts come from programs and requests: running out of memory is an answer. */
		mem->words[bi] = calloc(b->element_count, sizeof(uint32_t));
		if (!mem->words[bi]) {
			vy__ref_mem_finish(mem);
			return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL,
				"declare a smaller buffer or free memory on the host",
				"no memory for buffer `%s` of %u elements", b->name,
				b->element_count);
		}
		mem->owned[bi] = true;
		if (b->input_index != VY_BINDING_NONE) {
			/* The plan checked the input's length against the element count. */
			memcpy(mem->words[bi], inputs[b->input_index].data,
				(size_t)b->element_count * sizeof(uint32_t));
		}
	}
	return 0;
}

void vy__ref_mem_outputs(struct ref_mem *mem, const struct vy_program *p,
	const struct vy_binding_plan *plan, struct vy_outputs *outputs)
{
	for (uint32_t o = 0; o < plan->n_outputs; o++) {
		uint32_t bi = plan->output_indices[o];
		size_t len = (size_t)mem->count[bi] * sizeof(uint32_t);
		if (p->buffers[bi].access == VY_ACCESS_WORKGROUP) {
			vy_outputs_push_zeroed(outputs, len);
		} else if (mem->owned[bi]) {
			vy_outputs_push(
				outputs, (uint8_t *)mem->words[bi], mem->words[bi] ? len : 0);
			mem->words[bi] = NULL;
			mem->owned[bi] = false;
		} else {
			vy_outputs_push_copy(outputs, mem->words[bi], len);
		}
	}
}

void vy__ref_mem_finish(struct ref_mem *mem)
{
	for (uint32_t i = 0; i < VY_IR_MAX_BUFFERS; i++) {
		if (mem->owned[i]) {
			free(mem->words[i]);
		}
		mem->words[i] = NULL;
		mem->owned[i] = false;
	}
}

void vy__ref_load(const uint32_t *words, uint32_t count, enum vy_type type,
	const struct ref_lanes *lanes, const uint32_t *idx, uint32_t *out)
{
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		out[l] = idx[l] < count ? words[idx[l]] : 0;
	}
	if (type == VY_TYPE_F32) {
		for (uint32_t k = 0; k < lanes->n; k++) {
			uint32_t l = lanes->at[k];
			out[l] = ref_canon(out[l]);
		}
	} else if (type == VY_TYPE_BOOL) {
		for (uint32_t k = 0; k < lanes->n; k++) {
			uint32_t l = lanes->at[k];
			out[l] = out[l] != 0;
		}
	}
}

void vy__ref_store(uint32_t *words, uint32_t count, enum vy_type type,
	const struct ref_lanes *lanes, const uint8_t *alive, const uint32_t *idx,
	const uint32_t *val)
{
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		if (!alive[l] || idx[l] >= count) {
			continue;
		}
		uint32_t v = val[l];
		if (type == VY_TYPE_F32) {
			v = ref_canon(v);
		} else if (type == VY_TYPE_BOOL) {
			v = v != 0;
		}
		words[idx[l]] = v;
	}
}

static uint32_t atomic_new(enum vy_atomic_op op, uint32_t old, uint32_t expected, uint32_t v)
{
	switch (op) {
	case VY_ATOMIC_ADD:
		return old + v;
	case VY_ATOMIC_AND:
		return old & v;
	case VY_ATOMIC_OR:
		return old | v;
	case VY_ATOMIC_XOR:
		return old ^ v;
	case VY_ATOMIC_MIN:
		return v < old ? v : old;
	case VY_ATOMIC_MAX:
		return v > old ? v : old;
	case VY_ATOMIC_EXCHANGE:
		return v;
	case VY_ATOMIC_COMPARE_EXCHANGE:
		return old == expected ? v : old;
	case VY_ATOMIC_COUNT:
		break;
	}
	assert(!"atomic operation outside the enum");
	return old;
}

void vy__ref_atomic(uint32_t *words, uint32_t count, enum vy_atomic_op op,
	const struct ref_lanes *lanes, const uint8_t *alive, const uint32_t *idx,
	const uint32_t *expected, const uint32_t *val, uint32_t *out)
{
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		if (!alive[l] || idx[l] >= count) {
			out[l] = 0;
			continue;
		}
		uint32_t old = words[idx[l]];
		words[idx[l]] = atomic_new(op, old, expected ? expected[l] : 0, val[l]);
		out[l] = old;
	}
}
