/*
 * Binding plans (DESIGN.md §5, seed 000): the host/device ABI of one program. The plan lists every
 * buffer ordered by binding number with its role, element size, preferred alignment, element
 * count and static byte length, and numbers the buffers that take a host input and those that are
 * read back as outputs. The dispatch path builds it once per program (or once per dispatch when
 * count-0 buffers take their size from the inputs) and never walks the buffer list again.
 *
 * Role of each IR buffer, in the order the checks apply:
 *   access workgroup              -> SHARED (even when marked output)
 *   output: true                  -> OUTPUT
 *   read_only                     -> INPUT
 *   read_write                    -> INPUT_OUTPUT
 *   write_only                    -> OUTPUT
 *   uniform                       -> UNIFORM
 * INPUT, INPUT_OUTPUT and UNIFORM buffers consume one input each, in binding order. OUTPUT and
 * INPUT_OUTPUT buffers, and any buffer marked live_out, get an output index, in binding order.
 * PERSISTENT is part of the contract shared with backends (a buffer that the runtime's ingest API
 * manages), but IR version 1 has no persistent memory kind, so no IR buffer maps to it today.
 *
 * Inputs are byte views (struct vy_bytes). Whether the caller owns the bytes or borrows them from a
 * frame or a memfd does not matter here: only their lengths are read.
 *
 * Ownership: a plan is a heap object made by vy_binding_plan_build or
 * vy_binding_plan_build_for_inputs and freed by vy_binding_plan_destroy. It copies the buffer
 * names, so it does not borrow the program and may outlive it.
 *
 * Errors: INVALID_PROGRAM for a buffer the ABI cannot represent (unknown access value, alignment
 * hint that is not 0 or a power of two, static byte length that overflows size_t); BAD_REQUEST
 * for inputs that do not match the plan (wrong count, a length that is not a whole number of
 * elements, a length other than the static size). `at` names the buffer (`buffers[i]...`) or the
 * input (`inputs[i]`).
 *
 * Thread-safety: a built plan is immutable and may be read by any number of threads.
 */
#ifndef VY_PLANNER_BINDING_H
#define VY_PLANNER_BINDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"

struct vy_err;

/* A view of input bytes; `data` is borrowed and may be NULL when `len` is 0. */
struct vy_bytes {
	const uint8_t *data;
	size_t len;
};

#define VY_BINDING_ROLE_MAP(X)                                                                     \
	X(INPUT, "input")                                                                          \
	X(OUTPUT, "output")                                                                        \
	X(INPUT_OUTPUT, "input_output")                                                            \
	X(UNIFORM, "uniform")                                                                      \
	X(SHARED, "shared")                                                                        \
	X(PERSISTENT, "persistent")

#define VY__ENUM_ROLE(suffix, name) VY_ROLE_##suffix,
enum vy_binding_role { VY_BINDING_ROLE_MAP(VY__ENUM_ROLE) VY_ROLE_COUNT };
#undef VY__ENUM_ROLE

/* "input", "output", ...; "?" for a value outside the enum. */
const char *vy_binding_role_name(enum vy_binding_role role);

/* Marks an absent input or output index. */
#define VY_BINDING_NONE UINT32_MAX

struct vy_binding {
	const char *name;      /* owned by the plan */
	uint32_t binding;      /* binding number from the program */
	uint32_t buffer_index; /* index in program->buffers */
	enum vy_binding_role role;
	uint32_t element_size; /* bytes per element */
	/*
	 * Byte alignment the backend should give the allocation: the hint when larger, else the
	 * element size. An optimization contract only: it never changes what the program computes.
	 */
	uint32_t preferred_alignment;
	/*
	 * Declared count, or for a count-0 buffer the whole elements of its input; 0 when the
	 * buffer is runtime-sized and no input was given (or the input holds more than UINT32_MAX
	 * elements, which the input check rejects).
	 */
	uint32_t element_count;
	bool has_static_len;    /* the declaration fixes the byte length */
	size_t static_byte_len; /* count * element_size when has_static_len */
	uint32_t input_index;   /* position in the inputs, or VY_BINDING_NONE */
	uint32_t output_index;  /* position in the outputs, or VY_BINDING_NONE */
};

struct vy_binding_plan {
	uint32_t n_bindings;
	struct vy_binding *bindings; /* ordered by binding number; ties keep program order */
	uint32_t n_inputs;
	uint32_t *input_indices; /* program buffer index of input i */
	uint32_t n_outputs;
	uint32_t *output_indices; /* program buffer index of output i */
	uint32_t n_shared;
	uint32_t *shared_indices; /* program buffer indices of workgroup buffers */
};

/*
 * Build the plan of `program` without looking at inputs; count-0 buffers keep element_count 0.
 * On success stores a new plan in *out and returns 0; on failure leaves *out NULL and returns a
 * negative VY_E_* code, filling `err` when given.
 */
int vy_binding_plan_build(
	const struct vy_program *program, struct vy_binding_plan **out, struct vy_err *err);

/*
 * Build the plan of `program` for these inputs (one per input-consuming buffer, in input order):
 * count-0 buffers take their element count from their input, and the inputs are checked as
 * vy_binding_plan_check_inputs does. `inputs` may be NULL when `n_inputs` is 0.
 */
int vy_binding_plan_build_for_inputs(const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, struct vy_binding_plan **out,
	struct vy_err *err);

/*
 * Check inputs against a plan: exactly plan->n_inputs of them; each length a whole number of
 * elements; each length equal to the static byte length where the declaration fixes one; a
 * count-0 buffer's input at most UINT32_MAX elements (a u32 index must reach every element).
 * Only the lengths are read. Returns 0 or VY_E_BAD_REQUEST.
 */
int vy_binding_plan_check_inputs(const struct vy_binding_plan *plan, const struct vy_bytes *inputs,
	size_t n_inputs, struct vy_err *err);

/*
 * Check that the outputs the plan sizes (declared lengths, or the element counts bound from the
 * inputs) hold at most `limit` bytes together, before anything is allocated for them. Returns 0
 * or VY_E_QUOTA_EXCEEDED naming the total.
 */
int vy_binding_plan_check_outputs(
	const struct vy_binding_plan *plan, uint64_t limit, struct vy_err *err);

/* Free a plan. NULL is accepted. */
void vy_binding_plan_destroy(struct vy_binding_plan *plan);

/*
 * Layout fingerprint of a plan (the seed's BindingSetFingerprint): the (binding, role,
 * element_size) of every binding, sorted by binding number. Two plans with equal fingerprints can
 * share one descriptor-set layout across consecutive dispatches, whatever their element counts;
 * the contents of the buffers are not part of it. The value is deterministic across runs and
 * machines.
 */
struct vy_binding_slot {
	uint32_t binding;
	enum vy_binding_role role;
	uint32_t element_size;
};

struct vy_binding_set_fingerprint {
	uint32_t n_slots;
	struct vy_binding_slot slots[VY_IR_MAX_BUFFERS];
};

void vy_binding_set_fingerprint_init(
	struct vy_binding_set_fingerprint *fp, const struct vy_binding_plan *plan);
bool vy_binding_set_fingerprint_equal(
	const struct vy_binding_set_fingerprint *a, const struct vy_binding_set_fingerprint *b);
/* 64-bit FNV-1a over the slots, for keying a layout cache; equal fingerprints hash equal. */
uint64_t vy_binding_set_fingerprint_hash(const struct vy_binding_set_fingerprint *fp);

/* True when the two plans can share a descriptor-set layout (equal layout fingerprints). */
bool vy_binding_plans_share_layout(
	const struct vy_binding_plan *a, const struct vy_binding_plan *b);

/*
 * Descriptor-layout fingerprint for backend object caches (the seed's BackendLayoutFingerprint):
 * backends build their own slots (they may add private ones, such as the trap sidecar) and share
 * this one canonical form, slots sorted by (group, binding), so that every backend keys its
 * layout cache by the same rule.
 */
enum vy_layout_class {
	VY_LAYOUT_STORAGE,
	VY_LAYOUT_UNIFORM,
};

struct vy_layout_slot {
	uint32_t group;   /* descriptor set */
	uint32_t binding; /* binding inside the set */
	enum vy_layout_class class;
	bool read_only; /* for storage descriptors */
	uint32_t element_size;
};

/* Room for every IR buffer plus a few slots private to a backend. */
#define VY_LAYOUT_MAX_SLOTS (VY_IR_MAX_BUFFERS + 8)

struct vy_layout_fingerprint {
	uint32_t n_slots;
	struct vy_layout_slot slots[VY_LAYOUT_MAX_SLOTS];
};

/* Copy `n` slots (n <= VY_LAYOUT_MAX_SLOTS, asserted) in canonical order. */
void vy_layout_fingerprint_init(
	struct vy_layout_fingerprint *fp, const struct vy_layout_slot *slots, uint32_t n);
bool vy_layout_fingerprint_equal(
	const struct vy_layout_fingerprint *a, const struct vy_layout_fingerprint *b);
/* 64-bit FNV-1a over the slots; equal fingerprints hash equal. */
uint64_t vy_layout_fingerprint_hash(const struct vy_layout_fingerprint *fp);

#endif
