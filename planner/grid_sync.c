/*
 * Grid-sync splitting (seed 004): find the top-level grid_sync barriers of a program, cut its
 * top level into segments at them, and run the segments one launch after another, carrying each
 * read_write buffer from one segment's outputs to the next segment's inputs. Segments are views
 * over the source program (see grid_sync.h), so a split allocates a few structs per segment and
 * copies no IR.
 */
#include "grid_sync.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "err.h"

/*
 * The top level of the program: the body of the single region of a wrapped program, else the
 * entry. *generator is the wrapping region's generator name, or NULL.
 */
static const struct vy_block *top_level(const struct vy_program *program, const char **generator)
{
	const struct vy_block *entry = &program->entry;
	if (entry->len == 1 && entry->items[0]->kind == VY_NODE_REGION) {
		*generator = entry->items[0]->name;
		return &entry->items[0]->body;
	}
	*generator = NULL;
	return entry;
}

static bool is_grid_sync(const struct vy_node *node)
{
	return node->kind == VY_NODE_BARRIER && node->order == VY_ORDER_GRID_SYNC;
}

bool vy_grid_sync_contains(const struct vy_program *program)
{
	const char *generator;
	const struct vy_block *top = top_level(program, &generator);
	for (uint32_t i = 0; i < top->len; i++) {
		if (is_grid_sync(top->items[i])) {
			return true;
		}
	}
	return false;
}

/* A view of `src` whose entry is `entry`; everything else is borrowed from `src`. */
static struct vy_program *segment_view(
	struct vy_arena *arena, const struct vy_program *src, struct vy_block entry)
{
	struct vy_program *seg = vy_arena_alloc(arena, sizeof(*seg));
	*seg = *src;
	seg->arena = NULL;
	seg->entry = entry;
	return seg;
}

/* The segment of the `n` top-level nodes at `nodes`, wrapped again when the source was. */
static struct vy_program *segment_of(struct vy_arena *arena, const struct vy_program *src,
	const char *generator, struct vy_node **nodes, uint32_t n)
{
	struct vy_block body = {nodes, n};
	if (!generator) {
		return segment_view(arena, src, body);
	}
	struct vy_node *region = vy_arena_alloc(arena, sizeof(*region));
	region->kind = VY_NODE_REGION;
	region->order = VY_ORDER_SEQ_CST;
	region->name = generator;
	region->body = body;
	struct vy_node **items = vy_arena_alloc(arena, sizeof(*items));
	items[0] = region;
	return segment_view(arena, src, (struct vy_block){items, 1});
}

void vy_grid_sync_split(const struct vy_program *program, struct vy_grid_sync_split *out)
{
	const char *generator;
	const struct vy_block *top = top_level(program, &generator);
	uint32_t barriers = 0;
	for (uint32_t i = 0; i < top->len; i++) {
		barriers += is_grid_sync(top->items[i]);
	}

	out->arena = vy_arena_create();
	out->len = barriers + 1;
	out->segments = vy_arena_calloc(out->arena, out->len, sizeof(*out->segments));
	out->starts = vy_arena_calloc(out->arena, out->len, sizeof(*out->starts));
	out->wrapped = generator != NULL;
	if (barriers == 0) {
		out->segments[0] = segment_view(out->arena, program, program->entry);
		out->wrapped = false;
		return;
	}
	uint32_t k = 0;
	uint32_t start = 0;
	for (uint32_t i = 0; i <= top->len; i++) {
		if (i == top->len || is_grid_sync(top->items[i])) {
			out->starts[k] = start;
			out->segments[k++] = segment_of(
				out->arena, program, generator, top->items + start, i - start);
			start = i + 1;
		}
	}
	assert(k == out->len);
}

void vy_grid_sync_split_finish(struct vy_grid_sync_split *split)
{
	if (!split) {
		return;
	}
	vy_arena_destroy(split->arena);
	memset(split, 0, sizeof(*split));
}

/* One read_write buffer carried between segments: its input slot and its output slot. */
struct carried {
	uint32_t input;
	uint32_t output;
};

/*
 * The carried buffers of `program`, numbered as the binding plan numbers inputs and outputs
 * (planner/binding.h): buffers in binding order, ties in program order; input_output, input and
 * uniform buffers take an input slot; input_output and output buffers, and any live_out buffer,
 * take an output slot. Only input_output buffers (read_write, not workgroup, not marked output)
 * have both, and those are the ones carried.
 */
static uint32_t carried_buffers(const struct vy_program *program, struct carried *out)
{
	uint32_t order[VY_IR_MAX_BUFFERS];
	uint32_t n = program->n_buffers;
	assert(n <= VY_IR_MAX_BUFFERS);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = i;
		while (j > 0 &&
			program->buffers[order[j - 1]].binding > program->buffers[i].binding) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}

	uint32_t inputs = 0;
	uint32_t outputs = 0;
	uint32_t n_carried = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct vy_buffer *buf = &program->buffers[order[i]];
		bool consumes = false;
		bool produces = false;
		bool carries = false;
		if (buf->access != VY_ACCESS_WORKGROUP && !buf->output) {
			consumes = buf->access == VY_ACCESS_READ_ONLY ||
				   buf->access == VY_ACCESS_READ_WRITE ||
				   buf->access == VY_ACCESS_UNIFORM;
			carries = buf->access == VY_ACCESS_READ_WRITE;
			produces = carries || buf->access == VY_ACCESS_WRITE_ONLY;
		} else if (buf->access != VY_ACCESS_WORKGROUP) {
			produces = true;
		}
		if (carries) {
			out[n_carried++] = (struct carried){inputs, outputs};
		}
		inputs += consumes;
		outputs += produces || buf->live_out;
	}
	return n_carried;
}

/* Move the top-level index of a segment location by `offset`, in place. */
static void shift_location(char *at, size_t size, bool wrapped, uint32_t offset)
{
	const char *head = wrapped ? "entry[0].region.body[" : "entry[";
	size_t hl = strlen(head);
	if (offset == 0 || strncmp(at, head, hl) != 0) {
		return;
	}
	char *end;
	unsigned long index = strtoul(at + hl, &end, 10);
	if (end == at + hl || *end != ']') {
		return;
	}
	char moved[VY_ERR_AT_MAX];
	snprintf(moved, sizeof(moved), "%.*s%lu%s", (int)hl, at, index + offset, end);
	snprintf(at, size, "%s", moved);
}

static void prefix_error(struct vy_err *err, uint32_t segment)
{
	if (!err) {
		return;
	}
	char prefix[40];
	size_t plen = (size_t)snprintf(prefix, sizeof(prefix), "grid_sync segment %u: ", segment);
	size_t room = sizeof(err->message) - 1 - plen;
	size_t mlen = strnlen(err->message, sizeof(err->message) - 1);
	/* A message already at the limit loses its tail, not the prefix. */
	if (mlen > room) {
		mlen = room;
	}
	memmove(err->message + plen, err->message, mlen);
	memcpy(err->message, prefix, plen);
	err->message[plen + mlen] = '\0';
}

void vy_grid_sync_segment_error(
	const struct vy_grid_sync_split *split, uint32_t k, struct vy_err *err)
{
	if (!err) {
		return;
	}
	prefix_error(err, k);
	shift_location(err->at, sizeof(err->at), split->wrapped, split->starts[k]);
}

/*
 * Replace the input of every carried buffer by its output from the segment just run. The output
 * buffer moves into `owned`, which keeps it alive for the next segment.
 */
static int carry_outputs(struct vy_backend *b, const struct carried *carried, uint32_t n_carried,
	struct vy_outputs *seg_out, struct vy_bytes *current, uint8_t **owned, size_t n_inputs,
	uint32_t segment, struct vy_err *err)
{
	for (uint32_t i = 0; i < n_carried; i++) {
		const struct carried *c = &carried[i];
		if (c->input >= n_inputs) {
			continue;
		}
		if (c->output >= seg_out->len) {
			const char *fix =
				"report this backend bug: a dispatch returns every output";
			return vy_err_set(err, VY_E_INTERNAL, NULL, fix,
				"grid_sync segment %u: backend %s returned only %zu outputs",
				segment, b->id, seg_out->len);
		}
		size_t len;
		uint8_t *data = vy_outputs_take(seg_out, c->output, &len);
		free(owned[c->input]);
		owned[c->input] = data;
		current[c->input] = (struct vy_bytes){data, len};
	}
	return 0;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "vyred: out of memory allocating %zu x %zu bytes\n", n, size);
		abort();
	}
	return p;
}

int vy_grid_sync_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	if (!vy_grid_sync_contains(program) || vy_backend_supports(b, VY_CAP_GRID_SYNC)) {
		return vy_backend_dispatch_into(b, program, inputs, n_inputs, config, outputs, err);
	}

	struct vy_grid_sync_split split;
	vy_grid_sync_split(program, &split);
	struct carried carried[VY_IR_MAX_BUFFERS];
	uint32_t n_carried = carried_buffers(program, carried);

	/* Inputs that are not carried stay borrowed from the caller for the whole split. */
	struct vy_bytes *current = xcalloc(n_inputs, sizeof(*current));
	uint8_t **owned = xcalloc(n_inputs, sizeof(*owned));
	if (n_inputs > 0) {
		memcpy(current, inputs, n_inputs * sizeof(*current));
	}
	struct vy_outputs seg_out;
	vy_outputs_init(&seg_out);

	int rc = 0;
	for (uint32_t k = 0; k < split.len && rc == 0; k++) {
		bool last = k + 1 == split.len;
		rc = vy_backend_dispatch_into(b, split.segments[k], current, n_inputs, config,
			last ? outputs : &seg_out, err);
		if (rc) {
			if (err && err->code == 0) {
				err->code = rc;
			}
			vy_grid_sync_segment_error(&split, k, err);
		} else if (!last) {
			rc = carry_outputs(
				b, carried, n_carried, &seg_out, current, owned, n_inputs, k, err);
		}
	}

	if (rc) {
		vy_outputs_clear(outputs);
	}
	vy_outputs_finish(&seg_out);
	for (size_t i = 0; i < n_inputs; i++) {
		free(owned[i]);
	}
	free(owned);
	free(current);
	vy_grid_sync_split_finish(&split);
	return rc;
}
