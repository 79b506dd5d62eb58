/*
 * The wrappers of the backend contract: each one calls the backend's entry when it has one and
 * otherwise applies the contract's conservative default (seed 001), so that adding an optional
 * entry to the vtable never forces a change on an existing backend. Also the output list, the
 * passthrough pipeline and the ready pending handle that the defaults hand out.
 */
#include "backend.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"

_Static_assert(VY_NODE_KIND_COUNT <= 32, "node kinds must fit struct vy_op_set.nodes");
_Static_assert(VY_EXPR_KIND_COUNT <= 32, "expression kinds must fit struct vy_op_set.exprs");
_Static_assert(VY_BINOP_COUNT <= 32, "binary ops must fit struct vy_op_set.binops");
_Static_assert(VY_UNOP_COUNT <= 64, "unary ops must fit struct vy_op_set.unops");
_Static_assert(VY_ATOMIC_COUNT <= 32, "atomic ops must fit struct vy_op_set.atomics");
_Static_assert(VY_REDUCE_COUNT <= 32, "reduce ops must fit struct vy_op_set.reduces");

static const struct vy_dispatch_config default_config;

static const struct vy_dispatch_config *config_or_default(const struct vy_dispatch_config *c)
{
	return c ? c : &default_config;
}

static void *xrealloc(void *ptr, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size) {
		fprintf(stderr, "vyred: output list of %zu x %zu bytes overflows\n", n, size);
		abort();
	}
	void *p = realloc(ptr, n * size);
	if (!p && n * size != 0) {
		fprintf(stderr, "vyred: out of memory allocating %zu bytes\n", n * size);
		abort();
	}
	return p;
}

void vy_outputs_init(struct vy_outputs *outputs)
{
	memset(outputs, 0, sizeof(*outputs));
}

void vy_outputs_clear(struct vy_outputs *outputs)
{
	for (size_t i = 0; i < outputs->len; i++) {
		free(outputs->items[i].data);
	}
	outputs->len = 0;
}

void vy_outputs_finish(struct vy_outputs *outputs)
{
	if (!outputs) {
		return;
	}
	vy_outputs_clear(outputs);
	free(outputs->items);
	vy_outputs_init(outputs);
}

void vy_outputs_push(struct vy_outputs *outputs, uint8_t *data, size_t len)
{
	if (outputs->len == outputs->cap) {
		size_t cap = outputs->cap ? outputs->cap * 2 : 8;
		outputs->items = xrealloc(outputs->items, cap, sizeof(*outputs->items));
		outputs->cap = cap;
	}
	outputs->items[outputs->len++] = (struct vy_output){data, len};
}

uint8_t *vy_outputs_push_zeroed(struct vy_outputs *outputs, size_t len)
{
	uint8_t *data = NULL;
	if (len > 0) {
		data = calloc(1, len);
		if (!data) {
			fprintf(stderr, "vyred: out of memory allocating %zu bytes\n", len);
			abort();
		}
	}
	vy_outputs_push(outputs, data, len);
	return data;
}

void vy_outputs_push_copy(struct vy_outputs *outputs, const void *data, size_t len)
{
	uint8_t *copy = vy_outputs_push_zeroed(outputs, len);
	if (len > 0) {
		memcpy(copy, data, len);
	}
}

uint8_t *vy_outputs_take(struct vy_outputs *outputs, size_t i, size_t *len)
{
	assert(i < outputs->len);
	uint8_t *data = outputs->items[i].data;
	*len = outputs->items[i].len;
	outputs->items[i] = (struct vy_output){NULL, 0};
	return data;
}

void vy_outputs_move(struct vy_outputs *dst, struct vy_outputs *src)
{
	vy_outputs_finish(dst);
	*dst = *src;
	vy_outputs_init(src);
}

static const char *const capability_names[] = {
#define VY__CAP_NAME(suffix, name) name,
	VY_CAPABILITY_MAP(VY__CAP_NAME)
#undef VY__CAP_NAME
};

const char *vy_capability_name(enum vy_capability cap)
{
	if ((unsigned)cap >= VY_CAP_COUNT) {
		return "?";
	}
	return capability_names[cap];
}

static uint64_t low_bits(unsigned n)
{
	return n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;
}

void vy_op_set_all(struct vy_op_set *set)
{
	set->nodes = (uint32_t)low_bits(VY_NODE_KIND_COUNT);
	set->exprs = (uint32_t)low_bits(VY_EXPR_KIND_COUNT);
	set->binops = (uint32_t)low_bits(VY_BINOP_COUNT);
	set->unops = low_bits(VY_UNOP_COUNT);
	set->atomics = (uint32_t)low_bits(VY_ATOMIC_COUNT);
	set->reduces = (uint32_t)low_bits(VY_REDUCE_COUNT);
}

int vy_backend_unsupported(struct vy_backend *b, const char *feature, struct vy_err *err)
{
	char fix[VY_ERR_FIX_MAX];
	snprintf(fix, sizeof(fix),
		"select a backend that supports %s, or leave it out of the request", feature);
	return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL, fix,
		"backend %s does not support %s", b->id, feature);
}

void vy_backend_destroy(struct vy_backend *b)
{
	if (b && b->ops->destroy) {
		b->ops->destroy(b);
	}
}

const char *vy_backend_version(struct vy_backend *b)
{
	return b->ops->version ? b->ops->version(b) : "unspecified";
}

void vy_backend_supported_ops(struct vy_backend *b, struct vy_op_set *out)
{
	if (b->ops->supported_ops) {
		memset(out, 0, sizeof(*out));
		b->ops->supported_ops(b, out);
		return;
	}
	vy_op_set_all(out);
	if (!vy_backend_supports(b, VY_CAP_SUBGROUP_OPS)) {
		for (int k = VY_EXPR_SUBGROUP_REDUCE; k <= VY_EXPR_SUBGROUP_SIZE; k++) {
			out->exprs &= ~(UINT32_C(1) << k);
		}
	}
}

/* Walks a program against an op set, stopping at the first operation outside it. */
struct op_check {
	struct vy_backend *backend;
	const struct vy_op_set *set;
	struct vy_err *err;
	char at[VY_ERR_AT_MAX];
};

static int op_missing(struct op_check *c, const char *what, const char *name)
{
	char feature[96];
	snprintf(feature, sizeof(feature), "the %s %s", name, what);
	int code = vy_backend_unsupported(c->backend, feature, c->err);
	if (c->err) {
		snprintf(c->err->at, sizeof(c->err->at), "%s", c->at);
	}
	return code;
}

static int check_expr(struct op_check *c, const struct vy_expr *e)
{
	if (!e) {
		return 0;
	}
	const struct vy_op_set *s = c->set;
	if (!(s->exprs & (UINT32_C(1) << e->kind))) {
		return op_missing(c, "expression", vy_expr_kind_name(e->kind));
	}
	if (e->kind == VY_EXPR_BINARY && !(s->binops & (UINT32_C(1) << e->op))) {
		return op_missing(c, "binary operation", vy_binop_name(e->op));
	}
	if (e->kind == VY_EXPR_UNARY && !(s->unops & (UINT64_C(1) << e->op))) {
		return op_missing(c, "unary operation", vy_unop_name(e->op));
	}
	if (e->kind == VY_EXPR_ATOMIC && !(s->atomics & (UINT32_C(1) << e->op))) {
		return op_missing(c, "atomic operation", vy_atomic_name(e->op));
	}
	if (e->kind == VY_EXPR_SUBGROUP_REDUCE && !(s->reduces & (UINT32_C(1) << e->op))) {
		return op_missing(c, "subgroup reduction", vy_reduce_name(e->op));
	}
	for (uint32_t i = 0; i < e->nargs && i < 3; i++) {
		int rc = check_expr(c, e->args[i]);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

static int check_block(struct op_check *c, const struct vy_block *block, const char *label);

static int check_node(struct op_check *c, const struct vy_node *n)
{
	if (!(c->set->nodes & (UINT32_C(1) << n->kind))) {
		return op_missing(c, "node", vy_node_kind_name(n->kind));
	}
	for (int i = 0; i < 2; i++) {
		int rc = check_expr(c, n->args[i]);
		if (rc) {
			return rc;
		}
	}
	const char *kind = vy_node_kind_name(n->kind);
	char label[32];
	snprintf(label, sizeof(label), ".%s.%s", kind, n->kind == VY_NODE_IF ? "then" : "body");
	int rc = check_block(c, &n->body, label);
	if (rc == 0 && n->kind == VY_NODE_IF) {
		snprintf(label, sizeof(label), ".%s.else", kind);
		rc = check_block(c, &n->orelse, label);
	}
	return rc;
}

static int check_block(struct op_check *c, const struct vy_block *block, const char *label)
{
	size_t base = strlen(c->at);
	for (uint32_t i = 0; i < block->len; i++) {
		snprintf(c->at + base, sizeof(c->at) - base, "%s[%u]", label, i);
		int rc = check_node(c, block->items[i]);
		if (rc) {
			return rc;
		}
	}
	c->at[base] = '\0';
	return 0;
}

int vy_backend_check_ops(struct vy_backend *b, const struct vy_program *program, struct vy_err *err)
{
	struct vy_op_set set;
	vy_backend_supported_ops(b, &set);
	struct op_check c = {.backend = b, .set = &set, .err = err};
	return check_block(&c, &program->entry, "entry");
}

int vy_backend_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	assert(b->ops->dispatch);
	vy_outputs_clear(outputs);
	int rc = b->ops->dispatch(
		b, program, inputs, n_inputs, config_or_default(config), outputs, err);
	if (rc) {
		vy_outputs_clear(outputs);
	}
	return rc;
}

int vy_backend_dispatch_owned(struct vy_backend *b, const struct vy_program *program,
	struct vy_outputs *inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	int rc;
	if (b->ops->dispatch_owned) {
		vy_outputs_clear(outputs);
		rc = b->ops->dispatch_owned(
			b, program, inputs, config_or_default(config), outputs, err);
		if (rc) {
			vy_outputs_clear(outputs);
		}
	} else {
		struct vy_bytes *views = xrealloc(NULL, inputs->len, sizeof(*views));
		for (size_t i = 0; i < inputs->len; i++) {
			views[i] = (struct vy_bytes){inputs->items[i].data, inputs->items[i].len};
		}
		rc = vy_backend_dispatch(b, program, views, inputs->len, config, outputs, err);
		free(views);
	}
	vy_outputs_clear(inputs);
	return rc;
}

int vy_backend_dispatch_into(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	if (!b->ops->dispatch_into) {
		return vy_backend_dispatch(b, program, inputs, n_inputs, config, outputs, err);
	}
	int rc = b->ops->dispatch_into(
		b, program, inputs, n_inputs, config_or_default(config), outputs, err);
	if (rc) {
		vy_outputs_clear(outputs);
	}
	return rc;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

int vy_backend_dispatch_timed(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_timing *timing, struct vy_err *err)
{
	*timing = (struct vy_timing){0, VY_TIMING_NONE, VY_TIMING_NONE, VY_TIMING_NONE};
	if (b->ops->dispatch_timed) {
		int rc = b->ops->dispatch_timed(b, program, inputs, n_inputs,
			config_or_default(config), outputs, timing, err);
		if (rc) {
			vy_outputs_clear(outputs);
		}
		return rc;
	}
	uint64_t start = monotonic_ns();
	int rc = vy_backend_dispatch_into(b, program, inputs, n_inputs, config, outputs, err);
	timing->wall_ns = monotonic_ns() - start;
	return rc;
}

int vy_backend_resident_alloc(
	struct vy_backend *b, size_t len, struct vy_resource *out, struct vy_err *err)
{
	if (!b->ops->resident_alloc) {
		return vy_backend_unsupported(b, "resident buffer allocation", err);
	}
	return b->ops->resident_alloc(b, len, out, err);
}

int vy_backend_resident_upload(struct vy_backend *b, const struct vy_resource *res, size_t offset,
	struct vy_bytes data, struct vy_err *err)
{
	if (!b->ops->resident_upload) {
		return vy_backend_unsupported(b, "resident buffer upload", err);
	}
	return b->ops->resident_upload(b, res, offset, data, err);
}

int vy_backend_resident_download(struct vy_backend *b, const struct vy_resource *res, size_t offset,
	uint8_t *dst, size_t len, struct vy_err *err)
{
	if (!b->ops->resident_download) {
		return vy_backend_unsupported(b, "resident buffer download", err);
	}
	return b->ops->resident_download(b, res, offset, dst, len, err);
}

int vy_backend_resident_free(struct vy_backend *b, struct vy_resource res, struct vy_err *err)
{
	if (!b->ops->resident_free) {
		return vy_backend_unsupported(b, "resident buffer free", err);
	}
	return b->ops->resident_free(b, res, err);
}

int vy_backend_resident_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_resource *resources, size_t n_resources,
	const struct vy_dispatch_config *config, struct vy_timing *timing, struct vy_err *err)
{
	*timing = (struct vy_timing){0, VY_TIMING_NONE, VY_TIMING_NONE, VY_TIMING_NONE};
	if (!b->ops->resident_dispatch) {
		return vy_backend_unsupported(b, "resident timed dispatch", err);
	}
	return b->ops->resident_dispatch(
		b, program, resources, n_resources, config_or_default(config), timing, err);
}

bool vy_backend_supports(struct vy_backend *b, enum vy_capability cap)
{
	return b->ops->supports ? b->ops->supports(b, cap) : false;
}

void vy_backend_max_workgroup_size(struct vy_backend *b, uint32_t out[3])
{
	if (b->ops->max_workgroup_size) {
		b->ops->max_workgroup_size(b, out);
		return;
	}
	out[0] = out[1] = out[2] = 1;
}

uint32_t vy_backend_max_workgroups_per_dimension(struct vy_backend *b)
{
	return b->ops->max_workgroups_per_dimension ? b->ops->max_workgroups_per_dimension(b) : 1;
}

uint32_t vy_backend_max_workgroup_invocations(struct vy_backend *b)
{
	if (b->ops->max_workgroup_invocations) {
		return b->ops->max_workgroup_invocations(b);
	}
	uint32_t size[3];
	vy_backend_max_workgroup_size(b, size);
	uint64_t product = 1;
	for (int i = 0; i < 3; i++) {
		product *= size[i];
		if (product > UINT32_MAX) {
			return UINT32_MAX;
		}
	}
	return (uint32_t)product;
}

uint32_t vy_backend_subgroup_size(struct vy_backend *b)
{
	return b->ops->subgroup_size ? b->ops->subgroup_size(b) : 0;
}

uint64_t vy_backend_max_storage_buffer_bytes(struct vy_backend *b)
{
	return b->ops->max_storage_buffer_bytes ? b->ops->max_storage_buffer_bytes(b) : 0;
}

void vy_backend_device_profile(struct vy_backend *b, struct vy_device_profile *out)
{
	memset(out, 0, sizeof(*out));
	out->backend = b->id;
	snprintf(out->name, sizeof(out->name), "%s", b->id);
	out->supports_subgroup_ops = vy_backend_supports(b, VY_CAP_SUBGROUP_OPS);
	out->has_subgroup_shuffle = out->supports_subgroup_ops;
	out->subgroup_size = vy_backend_subgroup_size(b);
	out->supports_indirect_dispatch = vy_backend_supports(b, VY_CAP_INDIRECT_DISPATCH);
	out->supports_f16 = vy_backend_supports(b, VY_CAP_F16);
	out->supports_bf16 = vy_backend_supports(b, VY_CAP_BF16);
	out->supports_tensor_cores = vy_backend_supports(b, VY_CAP_TENSOR_CORES);
	out->max_native_int_width = 32;
	vy_backend_max_workgroup_size(b, out->max_workgroup_size);
	out->max_workgroup_invocations = vy_backend_max_workgroup_invocations(b);
	uint32_t count = vy_backend_max_workgroups_per_dimension(b);
	out->max_workgroup_count[0] = out->max_workgroup_count[1] = out->max_workgroup_count[2] =
		count;
	out->max_storage_buffer_bytes = vy_backend_max_storage_buffer_bytes(b);
	if (b->ops->device_profile) {
		b->ops->device_profile(b, out);
	}
}

bool vy_backend_pipeline_cache_stats(struct vy_backend *b, struct vy_pipeline_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	return b->ops->pipeline_cache_stats ? b->ops->pipeline_cache_stats(b, out) : false;
}

int vy_backend_prepare(struct vy_backend *b, struct vy_err *err)
{
	return b->ops->prepare ? b->ops->prepare(b, err) : 0;
}

int vy_backend_flush(struct vy_backend *b, struct vy_err *err)
{
	return b->ops->flush ? b->ops->flush(b, err) : 0;
}

int vy_backend_shutdown(struct vy_backend *b, struct vy_err *err)
{
	return b->ops->shutdown ? b->ops->shutdown(b, err) : 0;
}

bool vy_backend_device_lost(struct vy_backend *b)
{
	return b->ops->device_lost ? b->ops->device_lost(b) : false;
}

int vy_backend_try_recover(struct vy_backend *b, struct vy_err *err)
{
	if (!b->ops->try_recover) {
		return vy_backend_unsupported(b, "device recovery", err);
	}
	return b->ops->try_recover(b, err);
}

int vy_backend_inject_fault(struct vy_backend *b, enum vy_fault fault, struct vy_err *err)
{
	if (!b->ops->inject_fault) {
		return vy_backend_unsupported(b, "fault injection", err);
	}
	return b->ops->inject_fault(b, fault, err);
}

int vy_backend_host_import(
	struct vy_backend *b, const void *ptr, size_t len, uint64_t *id, struct vy_err *err)
{
	*id = 0;
	if (!b->ops->host_import) {
		return vy_backend_unsupported(b, "host memory import", err);
	}
	int rc = b->ops->host_import(b, ptr, len, id, err);
	assert(rc != 0 || *id != 0);
	if (rc) {
		*id = 0;
	}
	return rc;
}

void vy_backend_host_release(struct vy_backend *b, uint64_t id)
{
	if (id != 0 && b->ops->host_release) {
		b->ops->host_release(b, id);
	}
}

#define VY__FAULT_NAME(suffix, name) [VY_FAULT_##suffix] = name,
static const char *const fault_names[] = {VY_FAULT_MAP(VY__FAULT_NAME)};
#undef VY__FAULT_NAME

const char *vy_fault_name(enum vy_fault fault)
{
	return (unsigned)fault < VY_FAULT_COUNT ? fault_names[fault] : "?";
}

bool vy_fault_parse(const char *name, enum vy_fault *out)
{
	for (unsigned i = 0; i < VY_FAULT_COUNT; i++) {
		if (strcmp(name, fault_names[i]) == 0) {
			*out = (enum vy_fault)i;
			return true;
		}
	}
	return false;
}

/*
 * The passthrough pipeline keeps its own copy of the program, so that a cache may hold it after
 * the caller's program is gone, exactly as it would hold a native pipeline.
 */
struct passthrough {
	struct vy_pipeline base;
	struct vy_program *program; /* owned */
};

static int passthrough_dispatch(struct vy_pipeline *pl, const struct vy_bytes *inputs,
	size_t n_inputs, const struct vy_dispatch_config *config, struct vy_outputs *outputs,
	struct vy_err *err)
{
	struct passthrough *p = (struct passthrough *)pl;
	return vy_backend_dispatch(pl->backend, p->program, inputs, n_inputs, config, outputs, err);
}

static void passthrough_destroy(struct vy_pipeline *pl)
{
	struct passthrough *p = (struct passthrough *)pl;
	vy_program_destroy(p->program);
	free(p);
}

static const struct vy_pipeline_ops passthrough_ops = {
	.dispatch = passthrough_dispatch,
	.destroy = passthrough_destroy,
};

int vy_backend_compile_native(struct vy_backend *b, const struct vy_program *program,
	const struct vy_dispatch_config *config, struct vy_pipeline **out, struct vy_err *err)
{
	*out = NULL;
	if (b->ops->compile_native) {
		int rc = b->ops->compile_native(b, program, config_or_default(config), out, err);
		if (rc) {
			vy_pipeline_destroy(*out);
			*out = NULL;
			return rc;
		}
		if (*out) {
			return 0;
		}
	}
	struct passthrough *p = xrealloc(NULL, 1, sizeof(*p));
	p->base = (struct vy_pipeline){.ops = &passthrough_ops, .backend = b};
	p->program = vy_program_clone(program);
	*out = &p->base;
	return 0;
}

int vy_pipeline_dispatch(struct vy_pipeline *pl, const struct vy_bytes *inputs, size_t n_inputs,
	const struct vy_dispatch_config *config, struct vy_outputs *outputs, struct vy_err *err)
{
	vy_outputs_clear(outputs);
	int rc = pl->ops->dispatch(pl, inputs, n_inputs, config_or_default(config), outputs, err);
	if (rc) {
		vy_outputs_clear(outputs);
	}
	return rc;
}

/* A dispatch run at once, its outputs in a ready handle: the asynchronous entries' default. */
static int run_now(int rc, struct vy_outputs *outputs, struct vy_pending **out)
{
	if (rc == 0) {
		*out = vy_pending_done(outputs);
	}
	vy_outputs_finish(outputs);
	return rc;
}

int vy_pipeline_dispatch_async(struct vy_pipeline *pl, const struct vy_bytes *inputs,
	size_t n_inputs, const struct vy_dispatch_config *config, struct vy_pending **out,
	struct vy_err *err)
{
	*out = NULL;
	if (pl->ops->dispatch_async) {
		int rc = pl->ops->dispatch_async(
			pl, inputs, n_inputs, config_or_default(config), out, err);
		if (rc) {
			vy_pending_destroy(*out);
			*out = NULL;
		}
		return rc;
	}
	struct vy_outputs outputs;
	vy_outputs_init(&outputs);
	return run_now(
		vy_pipeline_dispatch(pl, inputs, n_inputs, config, &outputs, err), &outputs, out);
}

void vy_pipeline_destroy(struct vy_pipeline *pl)
{
	if (pl) {
		pl->ops->destroy(pl);
	}
}

/* The handle the default dispatch_async returns: the work is already done. */
struct ready_pending {
	struct vy_pending base;
	struct vy_outputs outputs;
};

static bool ready_is_ready(struct vy_pending *p)
{
	return true;
}

static int ready_wait(struct vy_pending *p, struct vy_outputs *outputs, struct vy_err *err)
{
	struct ready_pending *r = (struct ready_pending *)p;
	vy_outputs_move(outputs, &r->outputs);
	free(r);
	return 0;
}

static void ready_destroy(struct vy_pending *p)
{
	struct ready_pending *r = (struct ready_pending *)p;
	vy_outputs_finish(&r->outputs);
	free(r);
}

static const struct vy_pending_ops ready_ops = {
	.is_ready = ready_is_ready,
	.wait = ready_wait,
	.destroy = ready_destroy,
};

int vy_backend_dispatch_async(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_pending **out, struct vy_err *err)
{
	*out = NULL;
	if (b->ops->dispatch_async) {
		int rc = b->ops->dispatch_async(
			b, program, inputs, n_inputs, config_or_default(config), out, err);
		if (rc) {
			vy_pending_destroy(*out);
			*out = NULL;
		}
		return rc;
	}
	struct vy_outputs outputs;
	vy_outputs_init(&outputs);
	return run_now(vy_backend_dispatch(b, program, inputs, n_inputs, config, &outputs, err),
		&outputs, out);
}

struct vy_pending *vy_pending_done(struct vy_outputs *outputs)
{
	struct ready_pending *r = xrealloc(NULL, 1, sizeof(*r));
	r->base = (struct vy_pending){&ready_ops, NULL};
	vy_outputs_init(&r->outputs);
	vy_outputs_move(&r->outputs, outputs);
	return &r->base;
}

bool vy_pending_is_ready(struct vy_pending *p)
{
	return p->ops->is_ready(p);
}

int vy_pending_wait(struct vy_pending *p, struct vy_outputs *outputs, struct vy_err *err)
{
	vy_outputs_clear(outputs);
	int rc = p->ops->wait(p, outputs, err);
	if (rc) {
		vy_outputs_clear(outputs);
	}
	return rc;
}

void vy_pending_destroy(struct vy_pending *p)
{
	if (p) {
		p->ops->destroy(p);
	}
}
