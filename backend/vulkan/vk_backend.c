/*
 * The Vulkan backend's side of the contract (backend/backend.h): creating and recovering the
 * device, the dispatch entries, compiled pipelines, asynchronous handles, resident buffers,
 * capability and limit answers, and the device profile.
 */
#include "vk_backend.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "vk_util.h"

static const struct vy_backend_ops vk_ops;

int vy__vk_note(struct vy__vk_backend *b, int rc)
{
	if (rc == VY_E_DEVICE_LOST) {
		atomic_store(&b->lost, true);
	}
	return rc;
}

bool vy__vk_fault_take(struct vy__vk_backend *b, enum vy_fault fault, struct vy_err *err)
{
	unsigned bit = 1u << fault;
	if (!(atomic_load(&b->faults) & bit) || !(atomic_fetch_and(&b->faults, ~bit) & bit)) {
		return false;
	}
	const char *fix = "this failure was injected by a test; dispatch again";
	switch (fault) {
	case VY_FAULT_COMPILE:
		vy_err_set(err, VY_E_KERNEL_COMPILE_FAILED, NULL, fix,
			"the pipeline of the program could not be compiled (injected fault)");
		break;
	case VY_FAULT_DISPATCH:
		vy_err_set(err, VY_E_DISPATCH_FAILED, NULL, fix,
			"the dispatch could not be submitted (injected fault)");
		break;
	case VY_FAULT_OUT_OF_MEMORY:
		vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, fix,
			"device memory is exhausted (injected fault)");
		break;
	case VY_FAULT_DEVICE_LOST:
	case VY_FAULT_COUNT:
		break;
	}
	return true;
}

int vy__vk_usable(struct vy__vk_backend *b, struct vy_err *err)
{
	if (b->shut || !b->open) {
		return vy_err_set(err, VY_E_SHUTTING_DOWN, NULL,
			"open a new backend; this one has been shut down",
			"the Vulkan backend is shut down");
	}
	if (atomic_load(&b->lost) || b->exec.lost) {
		atomic_store(&b->lost, true);
		return vy_err_set(err, VY_E_DEVICE_LOST, NULL,
			"call try_recover, then retry; check the kernel log for GPU faults",
			"Vulkan device %u (%s) was lost", b->dev.index, b->dev.props.deviceName);
	}
	return 0;
}

/* Device life. */

static bool spirv_valid(const uint32_t *words, size_t n_words)
{
	return vy__vk_validate_spirv(words, n_words, NULL) == 0;
}

/* How long opening a device may spend checking the disk cache's most recent SPIR-V ahead, so
 * that the first dispatches after a restart find their modules checked already. */
#define VET_BUDGET_NS 50000000u

static int device_up(struct vy__vk_backend *b, uint32_t index, struct vy_err *err)
{
	int rc = vy__vk_device_open(&b->dev, index, b->validation, err);
	if (rc) {
		return rc;
	}
	if (b->test_flags & VY__VK_TEST_STAGING) {
		b->dev.unified = false;
	}
	if (b->test_flags & VY__VK_TEST_NO_NULL_DESCRIPTOR) {
		b->dev.null_descriptor = false;
	}
	if (b->test_flags & VY__VK_TEST_SMALL_GRID) {
		static const uint32_t small[3] = VY__VK_TEST_GRID_LIMITS;
		uint32_t *lim = b->dev.props.limits.maxComputeWorkGroupCount;
		for (int i = 0; i < 3; i++) {
			lim[i] = lim[i] < small[i] ? lim[i] : small[i];
		}
	}
	vy__vk_compiler_set_float_preserve(b->cc, b->dev.float32_preserve);
	vy__vk_memory_init(&b->mem, &b->dev);
	rc = vy__vk_exec_init(&b->exec, &b->dev, &b->mem, err);
	if (rc) {
		goto error;
	}
	if (b->test_flags & VY__VK_TEST_COPY_ALL) {
		b->exec.direct_limit = 0;
	}
	if (b->test_flags & VY__VK_TEST_COARSE_ALL) {
		b->exec.coarse_min = 1;
	}
	struct vy_vk_disk_identity id = {
		.vendor_id = b->dev.props.vendorID,
		.device_id = b->dev.props.deviceID,
		.driver_version = b->dev.props.driverVersion,
	};
	memcpy(id.cache_uuid, b->dev.props.pipelineCacheUUID, 16);
	vy__vk_disk_close(&b->disk);
	rc = vy__vk_disk_open(&b->disk, b->cache_dir, b->cache_key, &id, err);
	b->disk.quota = b->disk_quota;
	if (rc) {
		goto error;
	}
	bool push = b->dev.push_descriptors && !(b->test_flags & VY__VK_TEST_NO_PUSH_DESCRIPTORS);
	rc = vy__vk_pipelines_init(&b->pipes, &b->dev, &b->disk, push, err);
	b->pipes.cache_limit = 2 * (uint64_t)b->kernel_limit;
	if (rc) {
		goto error;
	}
	rc = vy__vk_probe_run(&b->exec, &b->pipes, b->cc, &b->probe, err);
	if (rc) {
		goto error;
	}
	vy__vk_disk_vet(&b->disk, b->kernel_limit, VET_BUDGET_NS, spirv_valid);
	b->subgroups = b->dev.subgroup_ops;
	b->cg = (struct vy_vk_codegen_options){
		.math =
			{
				.fma_fused = b->probe.fma_fused,
				.div_exact = b->probe.div_exact,
				.sqrt_exact = b->probe.sqrt_exact,
				.has_f64 = b->dev.f64,
				.fold_exact = b->probe.fold_exact,
				.select_exact = b->probe.select_exact,
				.flushes_subnormals = b->probe.flushes_subnormals,
				/* The fma's flag matters only where fma is fused, which speculation
				 * needs anyway (an unfused fma misses it: vk_probe.h). Plain code
				 * speculates nothing. */
				.product_flag =
					!b->plain_code && b->probe.flag_misses == 0 &&
					(!b->probe.fma_fused || b->probe.fma_flag_misses == 0),
			},
		.coarse = true,
		.subgroups = b->subgroups,
		.subgroup_size = b->dev.subgroup_size,
		.loop_passes = b->probe.loop_passes,
	};
	snprintf(b->version, sizeof(b->version), "vulkan %u.%u.%u %.40s %.60s",
		VK_API_VERSION_MAJOR(b->dev.props.apiVersion),
		VK_API_VERSION_MINOR(b->dev.props.apiVersion),
		VK_API_VERSION_PATCH(b->dev.props.apiVersion), b->dev.driver_name,
		b->dev.driver_info);
	b->open = true;
	return 0;
error:
	vy__vk_pipelines_finish(&b->pipes);
	vy__vk_exec_finish(&b->exec);
	vy__vk_memory_finish(&b->mem);
	vy__vk_device_close(&b->dev);
	return rc;
}

static void residents_clear(struct vy__vk_backend *b)
{
	pthread_mutex_lock(&b->resident_lock);
	for (size_t i = 0; i < b->res_n_buckets; i++) {
		while (b->res_buckets[i]) {
			struct vy__vk_resident *r = b->res_buckets[i];
			b->res_buckets[i] = r->next;
			vy__vk_resident_release(r);
		}
	}
	b->res_count = 0;
	pthread_mutex_unlock(&b->resident_lock);
}

/* Close everything of the device; the caller holds `life` for writing. */
static void device_down(struct vy__vk_backend *b)
{
	if (!b->open) {
		return;
	}
	/* On a lost device this fails at once; the objects can still be destroyed. */
	(void)vy__vk_exec_drain(&b->exec, NULL);
	(void)vy__vk_device_wait_idle(&b->dev, NULL);
	vy__vk_graphs_drop_device(b);
	vy__vk_exec_finish(&b->exec);
	residents_clear(b);
	vy__vk_imports_clear(b);
	vy__vk_kernels_drop_device(b);
	vy__vk_pipelines_finish(&b->pipes);
	vy__vk_memory_finish(&b->mem);
	vy__vk_device_close(&b->dev);
	b->open = false;
	atomic_fetch_add(&b->generation, 1);
}

/* Asynchronous handles. */

struct vy__vk_pending {
	struct vy_pending base;
	struct vy__vk_backend *b;
	struct vy__vk_job job;
	bool dead; /* its device went away: the job is gone */
	struct vy__vk_pending *prev;
	struct vy__vk_pending *next;
};

static void pending_unlink(struct vy__vk_backend *b, struct vy__vk_pending *p)
{
	pthread_mutex_lock(&b->pending_lock);
	if (p->prev) {
		p->prev->next = p->next;
	} else if (b->pendings == p) {
		b->pendings = p->next;
	}
	if (p->next) {
		p->next->prev = p->prev;
	}
	p->prev = p->next = NULL;
	pthread_mutex_unlock(&b->pending_lock);
}

/* Drop the jobs of every live handle before the device closes (caller holds `life` for
 * writing). */
static void pendings_kill(struct vy__vk_backend *b)
{
	pthread_mutex_lock(&b->pending_lock);
	for (struct vy__vk_pending *p = b->pendings; p; p = p->next) {
		if (!p->dead) {
			vy__vk_job_abandon(b, &p->job);
			p->dead = true;
		}
	}
	pthread_mutex_unlock(&b->pending_lock);
}

static bool pending_is_ready(struct vy_pending *base)
{
	struct vy__vk_pending *p = base->impl;
	pthread_rwlock_rdlock(&p->b->life);
	bool ready = p->dead || vy__vk_job_ready(p->b, &p->job);
	pthread_rwlock_unlock(&p->b->life);
	return ready;
}

static int pending_wait(struct vy_pending *base, struct vy_outputs *outputs, struct vy_err *err)
{
	struct vy__vk_pending *p = base->impl;
	struct vy__vk_backend *b = p->b;
	pthread_rwlock_rdlock(&b->life);
	int rc;
	if (p->dead && b->shut) {
		rc = vy_err_set(err, VY_E_SHUTTING_DOWN, NULL,
			"dispatch the program on another backend: this one was shut down",
			"the Vulkan backend shut down before the dispatch finished");
	} else if (p->dead) {
		rc = vy_err_set(err, VY_E_DEVICE_LOST, NULL,
			"dispatch the program again: the device was lost while it ran",
			"Vulkan device %u was lost before the dispatch finished", b->dev.index);
	} else {
		rc = vy__vk_job_finish(b, &p->job, outputs, NULL, err);
		p->dead = true;
	}
	pthread_rwlock_unlock(&b->life);
	pending_unlink(b, p);
	free(p);
	return vy__vk_note(b, rc);
}

static void pending_destroy(struct vy_pending *base)
{
	struct vy__vk_pending *p = base->impl;
	struct vy__vk_backend *b = p->b;
	pthread_rwlock_rdlock(&b->life);
	if (!p->dead) {
		vy__vk_job_abandon(b, &p->job);
	}
	pthread_rwlock_unlock(&b->life);
	pending_unlink(b, p);
	free(p);
}

static const struct vy_pending_ops pending_ops = {
	.is_ready = pending_is_ready,
	.wait = pending_wait,
	.destroy = pending_destroy,
};

/* Dispatch entries. */

static int run_host(struct vy__vk_backend *b, struct vy__vk_kernel *k,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_timing *timing, struct vy_err *err)
{
	struct vy__vk_request req = {
		.inputs = inputs,
		.n_inputs = n_inputs,
		.config = config,
		.timed = timing != NULL,
	};
	struct vy__vk_job job;
	int rc = vy__vk_job_start(b, k, &req, true, &job, err);
	if (rc == 0) {
		rc = vy__vk_job_finish(b, &job, outputs, timing, err);
	}
	return rc;
}

/* The kernel of a program on a backend still able to run it; the caller holds b->life. */
static int usable_kernel(struct vy__vk_backend *b, const struct vy_program *program,
	struct vy__vk_kernel **k, struct vy_err *err)
{
	int rc = vy__vk_usable(b, err);
	return rc ? rc : vy__vk_kernel_get(b, program, k, err);
}

static int dispatch_common(struct vy_backend *base, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_timing *timing, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	struct vy__vk_kernel *k = NULL;
	int rc = usable_kernel(b, program, &k, err);
	if (rc == 0) {
		rc = run_host(b, k, inputs, n_inputs, config, outputs, timing, err);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

static int vk_dispatch(struct vy_backend *base, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	return dispatch_common(base, program, inputs, n_inputs, config, outputs, NULL, err);
}

static int vk_dispatch_timed(struct vy_backend *base, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_timing *timing, struct vy_err *err)
{
	return dispatch_common(base, program, inputs, n_inputs, config, outputs, timing, err);
}

/*
 * Start a dispatch of kernel `k`, whose reference the job takes over, into a new handle. The
 * caller holds b->life; returns 0 or the failure (the reference then dropped).
 */
static int start_async(struct vy__vk_backend *b, struct vy__vk_kernel *k,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_pending **out, struct vy_err *err)
{
	struct vy__vk_pending *p = calloc(1, sizeof(*p));
	if (!p) {
		fprintf(stderr, "vyred: out of memory for a pending dispatch\n");
		abort();
	}
	p->base = (struct vy_pending){&pending_ops, p};
	p->b = b;
	struct vy__vk_request req = {
		.inputs = inputs,
		.n_inputs = n_inputs,
		.config = config,
	};
	int rc = vy__vk_job_start(b, k, &req, false, &p->job, err);
	if (rc) {
		free(p);
		return rc;
	}
	pthread_mutex_lock(&b->pending_lock);
	p->next = b->pendings;
	if (b->pendings) {
		b->pendings->prev = p;
	}
	b->pendings = p;
	pthread_mutex_unlock(&b->pending_lock);
	*out = &p->base;
	return 0;
}

static int vk_dispatch_async(struct vy_backend *base, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_pending **out, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	struct vy__vk_kernel *k = NULL;
	int rc = usable_kernel(b, program, &k, err);
	if (rc == 0) {
		rc = start_async(b, k, inputs, n_inputs, config, out, err);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

/* Compiled pipelines. */

struct vk_compiled {
	struct vy_pipeline base;
	struct vy_program *program; /* owned: to compile again after a device recovery */
	pthread_mutex_t lock;
	struct vy__vk_kernel *k; /* a reference */
};

/* The compiled kernel, rebuilt when the device was recreated since; returns a reference. */
static int compiled_kernel(struct vy__vk_backend *b, struct vk_compiled *c,
	struct vy__vk_kernel **out, struct vy_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = 0;
	if (c->k->generation != atomic_load(&b->generation)) {
		struct vy__vk_kernel *fresh = NULL;
		rc = vy__vk_kernel_get(b, c->program, &fresh, err);
		if (rc == 0) {
			vy__vk_kernel_unref(c->k);
			c->k = fresh;
		}
	}
	if (rc == 0) {
		vy__vk_kernel_ref(c->k);
		*out = c->k;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/*
 * Take b->life for reading and the pipeline's kernel (a reference) for a dispatch of `pl`; the
 * caller releases the lock, whatever the result.
 */
static int compiled_enter(struct vy_pipeline *pl, struct vy__vk_backend **bp,
	struct vy__vk_kernel **k, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(pl->backend);
	*bp = b;
	pthread_rwlock_rdlock(&b->life);
	int rc = vy__vk_usable(b, err);
	return rc ? rc : compiled_kernel(b, pl->impl, k, err);
}

static int compiled_dispatch(struct vy_pipeline *pl, const struct vy_bytes *inputs, size_t n_inputs,
	const struct vy_dispatch_config *config, struct vy_outputs *outputs, struct vy_err *err)
{
	struct vy__vk_backend *b;
	struct vy__vk_kernel *k = NULL;
	int rc = compiled_enter(pl, &b, &k, err);
	if (rc == 0) {
		rc = run_host(b, k, inputs, n_inputs, config, outputs, NULL, err);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

static int compiled_dispatch_async(struct vy_pipeline *pl, const struct vy_bytes *inputs,
	size_t n_inputs, const struct vy_dispatch_config *config, struct vy_pending **out,
	struct vy_err *err)
{
	struct vy__vk_backend *b;
	struct vy__vk_kernel *k = NULL;
	int rc = compiled_enter(pl, &b, &k, err);
	if (rc == 0) {
		rc = start_async(b, k, inputs, n_inputs, config, out, err);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

static void compiled_destroy(struct vy_pipeline *pl)
{
	struct vk_compiled *c = pl->impl;
	struct vy__vk_backend *b = vy__vk_from(pl->backend);
	vy__vk_kernel_unref(c->k);
	vy_program_destroy(c->program);
	pthread_mutex_destroy(&c->lock);
	free(c);
	vy__vk_reap(b);
}

static const struct vy_pipeline_ops compiled_ops = {
	.dispatch = compiled_dispatch,
	.dispatch_async = compiled_dispatch_async,
	.destroy = compiled_destroy,
};

static int vk_compile_native(struct vy_backend *base, const struct vy_program *program,
	const struct vy_dispatch_config *config, struct vy_pipeline **out, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	struct vy__vk_kernel *k = NULL;
	int rc = usable_kernel(b, program, &k, err);
	if (rc == 0) {
		/* Make the pipelines of the config's spec values and workgroup size now, so that
		 * the first dispatch compiles nothing. */
		const uint32_t *wg = k->program->workgroup_size;
		const uint32_t *over = config->workgroup_size;
		if (over[0] || over[1] || over[2]) {
			wg = over;
			rc = vy__vk_check_workgroup(b, over, err);
		}
		struct vy__vk_variant *v;
		if (rc == 0) {
			uint64_t limit = config->max_loop_iterations
						 ? config->max_loop_iterations
						 : VY_DISPATCH_DEFAULT_MAX_LOOP_ITERATIONS;
			/* A plain launch of its grid as it is: what small dispatches take. */
			struct vy__vk_form form = {0, vy__vk_uncounted(k, limit), true};
			rc = vy__vk_variant_get(k, config->spec, wg, form, &v, err);
		}
	}
	pthread_rwlock_unlock(&b->life);
	if (rc) {
		vy__vk_kernel_unref(k);
		vy__vk_reap(b);
		return vy__vk_note(b, rc);
	}
	/* Kernels this compile pushed out of the table die here when nothing else holds them. */
	vy__vk_reap(b);
	struct vk_compiled *c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "vyred: out of memory for a compiled pipeline\n");
		abort();
	}
	c->base = (struct vy_pipeline){&compiled_ops, base, true, k->from_disk, c};
	c->program = vy_program_clone(program);
	pthread_mutex_init(&c->lock, NULL);
	c->k = k;
	*out = &c->base;
	return 0;
}

/* Resident buffers. */

void vy__vk_resident_release(void *resident)
{
	struct vy__vk_resident *r = resident;
	if (atomic_fetch_sub(&r->refs, 1) == 1) {
		vy__vk_slice_free(&r->b->mem, &r->slice);
		free(r);
	}
}

static size_t res_bucket(const struct vy__vk_backend *b, uint64_t id)
{
	return (size_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> 32) % b->res_n_buckets;
}

static void res_grow_locked(struct vy__vk_backend *b)
{
	size_t n = b->res_n_buckets ? b->res_n_buckets * 2 : 256;
	struct vy__vk_resident **fresh = calloc(n, sizeof(*fresh));
	if (!fresh) {
		fprintf(stderr, "vyred: out of memory growing the resident table\n");
		abort();
	}
	struct vy__vk_resident **old = b->res_buckets;
	size_t old_n = b->res_n_buckets;
	b->res_buckets = fresh;
	b->res_n_buckets = n;
	for (size_t i = 0; i < old_n; i++) {
		while (old[i]) {
			struct vy__vk_resident *r = old[i];
			old[i] = r->next;
			size_t j = res_bucket(b, r->id);
			r->next = fresh[j];
			fresh[j] = r;
		}
	}
	free(old);
}

static struct vy__vk_resident *res_find_locked(struct vy__vk_backend *b, uint64_t id)
{
	if (!b->res_n_buckets) {
		return NULL;
	}
	for (struct vy__vk_resident *r = b->res_buckets[res_bucket(b, id)]; r; r = r->next) {
		if (r->id == id) {
			return r;
		}
	}
	return NULL;
}

static int not_found(uint64_t id, struct vy_err *err)
{
	return vy_err_set(err, VY_E_NOT_FOUND, NULL,
		"allocate and upload the buffer again (a lost device loses its resident buffers)",
		"no resident buffer %016llx on this backend", (unsigned long long)id);
}

int vy__vk_resident_get(
	struct vy__vk_backend *b, uint64_t id, struct vy__vk_resident **out, struct vy_err *err)
{
	pthread_mutex_lock(&b->resident_lock);
	struct vy__vk_resident *r = res_find_locked(b, id);
	if (r) {
		atomic_fetch_add(&r->refs, 1);
	}
	pthread_mutex_unlock(&b->resident_lock);
	*out = r;
	return r ? 0 : not_found(id, err);
}

struct copy_arg {
	struct vy__vk_backend *b;
	const struct vy_vk_slice *res;
	VkDeviceSize offset;
	struct vy_vk_xfer *staging;
	bool to_device;
	bool fill;
};

static int record_copy(struct vy_vk_ctx *ctx, VkCommandBuffer cmd, void *arg, struct vy_err *err)
{
	struct copy_arg *a = arg;
	struct vy_vk_device *d = &a->b->dev;
	VkMemoryBarrier before = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	d->vk.vkCmdPipelineBarrier(cmd,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, NULL, 0, NULL);
	const struct vy_vk_xfer *s = a->staging;
	if (a->fill) {
		d->vk.vkCmdFillBuffer(cmd, a->res->buffer, a->res->offset, s->len, 0);
	} else if (a->to_device) {
		VkBufferCopy region = {s->dev.offset, a->res->offset + a->offset, s->len};
		d->vk.vkCmdCopyBuffer(cmd, s->dev.buffer, a->res->buffer, 1, &region);
	} else {
		VkBufferCopy region = {a->res->offset + a->offset, s->dev.offset, s->len};
		d->vk.vkCmdCopyBuffer(cmd, a->res->buffer, s->dev.buffer, 1, &region);
	}
	VkMemoryBarrier after = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT |
				 VK_ACCESS_SHADER_WRITE_BIT,
	};
	d->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0,
		NULL, 0, NULL);
	return 0;
}

/*
 * Move bytes between the host and a resident buffer through staging: `data` to the device when
 * `to_device`, the device's bytes to `dst` otherwise, or zeros when both are NULL.
 */
static int staged_copy(struct vy__vk_backend *b, const struct vy_vk_slice *res, uint64_t offset,
	const void *data, void *dst, uint64_t len, struct vy_err *err)
{
	struct vy_vk_exec *x = &b->exec;
	struct vy_vk_ctx *ctx = NULL;
	int rc = vy__vk_ctx_acquire(x, &ctx, err);
	if (rc) {
		return rc;
	}
	struct vy_vk_xfer staging = {.len = len};
	bool fill = !data && !dst;
	if (data) {
		rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_UPLOAD, len, &staging.dev, err);
		if (rc == 0) {
			memcpy(staging.dev.map, data, len);
		}
	} else if (dst) {
		rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_READBACK, len, &staging.dev, err);
		staging.down = staging.dev;
	}
	struct copy_arg arg = {b, res, offset, &staging, data != NULL, fill};
	if (rc == 0) {
		rc = vy__vk_ctx_submit(x, ctx, false, true, 0, record_copy, &arg, err);
	}
	if (rc == 0) {
		rc = vy__vk_ctx_wait(x, ctx, UINT64_MAX, err);
	}
	if (rc == 0 && dst) {
		rc = vy__vk_slice_invalidate(&b->mem, &staging.dev, len, err);
		if (rc == 0) {
			memcpy(dst, staging.dev.map, len);
		}
	}
	vy__vk_ctx_release(x, ctx);
	return rc;
}

static int vk_resident_alloc(
	struct vy_backend *base, size_t len, struct vy_resource *out, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	struct vy__vk_resident *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "vyred: out of memory for a resident buffer\n");
		abort();
	}
	r->b = b;
	r->len = len;
	atomic_init(&r->refs, 1);
	int rc = vy__vk_usable(b, err);
	if (rc == 0 && vy__vk_fault_take(b, VY_FAULT_OUT_OF_MEMORY, err)) {
		rc = VY_E_OUT_OF_MEMORY;
	}
	if (rc == 0 && len > 0) {
		rc = vy__vk_slice_alloc(&b->mem, VY_VK_POOL_DEVICE, len, &r->slice, err);
		/* Pooled memory held another job's bytes: a new buffer must not show them. */
		if (rc == 0 && r->slice.map && b->dev.unified) {
			memset(r->slice.map, 0, len);
		} else if (rc == 0) {
			rc = staged_copy(b, &r->slice, 0, NULL, NULL, len, err);
		}
	}
	if (rc) {
		vy__vk_slice_free(&b->mem, &r->slice);
		free(r);
		pthread_rwlock_unlock(&b->life);
		return vy__vk_note(b, rc);
	}
	pthread_mutex_lock(&b->resident_lock);
	do {
		if (getrandom(&r->id, sizeof(r->id), 0) != (ssize_t)sizeof(r->id)) {
			r->id = (uint64_t)time(NULL) * UINT64_C(0x9e3779b97f4a7c15) + b->res_count;
		}
	} while (r->id == 0 || res_find_locked(b, r->id));
	if (b->res_count + 1 > b->res_n_buckets) {
		res_grow_locked(b);
	}
	size_t j = res_bucket(b, r->id);
	r->next = b->res_buckets[j];
	b->res_buckets[j] = r;
	b->res_count++;
	pthread_mutex_unlock(&b->resident_lock);
	pthread_rwlock_unlock(&b->life);
	*out = (struct vy_resource){r->id, len};
	return 0;
}

static int range_check(
	const struct vy__vk_resident *r, size_t offset, size_t len, struct vy_err *err)
{
	if (offset > r->len || len > r->len - offset) {
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
			"keep offset + length within the buffer's size",
			"bytes %zu..%zu are outside resident buffer %016llx of %llu bytes", offset,
			offset + len, (unsigned long long)r->id, (unsigned long long)r->len);
	}
	return 0;
}

/* Upload (src set) or download (dst set) between host memory and a resident buffer. */
static int resident_copy(struct vy_backend *base, const struct vy_resource *res, size_t offset,
	const uint8_t *src, uint8_t *dst, size_t len, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	struct vy__vk_resident *r = NULL;
	int rc = vy__vk_usable(b, err);
	if (rc == 0) {
		rc = vy__vk_resident_get(b, res->id, &r, err);
	}
	if (rc == 0) {
		rc = range_check(r, offset, len, err);
	}
	if (rc == 0 && len > 0) {
		if (r->slice.map && b->dev.unified) {
			if (src) {
				memcpy(r->slice.map + offset, src, len);
			} else {
				memcpy(dst, r->slice.map + offset, len);
			}
		} else {
			rc = staged_copy(b, &r->slice, offset, src, dst, len, err);
		}
	}
	if (r) {
		vy__vk_resident_release(r);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

static int vk_resident_upload(struct vy_backend *base, const struct vy_resource *res, size_t offset,
	struct vy_bytes data, struct vy_err *err)
{
	return resident_copy(base, res, offset, data.data, NULL, data.len, err);
}

static int vk_resident_download(struct vy_backend *base, const struct vy_resource *res,
	size_t offset, uint8_t *dst, size_t len, struct vy_err *err)
{
	return resident_copy(base, res, offset, NULL, dst, len, err);
}

static int vk_resident_free(struct vy_backend *base, struct vy_resource res, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	pthread_mutex_lock(&b->resident_lock);
	struct vy__vk_resident *found = NULL;
	if (b->res_n_buckets) {
		struct vy__vk_resident **link = &b->res_buckets[res_bucket(b, res.id)];
		while (*link && (*link)->id != res.id) {
			link = &(*link)->next;
		}
		if (*link) {
			found = *link;
			*link = found->next;
			b->res_count--;
		}
	}
	pthread_mutex_unlock(&b->resident_lock);
	if (found) {
		vy__vk_resident_release(found);
	}
	pthread_rwlock_unlock(&b->life);
	return found ? 0 : not_found(res.id, err);
}

static int vk_resident_dispatch(struct vy_backend *base, const struct vy_program *program,
	const struct vy_resource *resources, size_t n_resources,
	const struct vy_dispatch_config *config, struct vy_timing *timing, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	struct vy__vk_resident *held[VY_IR_MAX_BUFFERS];
	size_t n_held = 0;
	pthread_rwlock_rdlock(&b->life);
	int rc = vy__vk_usable(b, err);
	if (rc == 0 && n_resources > VY_IR_MAX_BUFFERS) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "resources",
			"pass one resident buffer per non-workgroup buffer, in binding order",
			"%zu resident buffers given; a program has at most %d buffers", n_resources,
			VY_IR_MAX_BUFFERS);
	}
	for (size_t i = 0; rc == 0 && i < n_resources; i++) {
		rc = vy__vk_resident_get(b, resources[i].id, &held[n_held], err);
		if (rc == 0) {
			n_held++;
		} else if (err) {
			snprintf(err->at, sizeof(err->at), "resources[%zu]", i);
		}
	}
	struct vy__vk_kernel *k = NULL;
	if (rc == 0) {
		rc = vy__vk_kernel_get(b, program, &k, err);
	}
	if (rc == 0) {
		struct vy__vk_request req = {
			.resources = held,
			.n_resources = n_held,
			.config = config,
			.timed = true,
		};
		struct vy__vk_job job;
		rc = vy__vk_job_start(b, k, &req, true, &job, err);
		if (rc == 0) {
			rc = vy__vk_job_finish(b, &job, NULL, timing, err);
		}
	}
	for (size_t i = 0; i < n_held; i++) {
		vy__vk_resident_release(held[i]);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

/* Host memory imports. */

static int vk_host_import(
	struct vy_backend *base, const void *ptr, size_t len, uint64_t *out_id, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	int rc = vy__vk_usable(b, err);
	if (rc == 0) {
		rc = vy__vk_import_add(b, ptr, len, out_id, err);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

static void vk_host_release(struct vy_backend *base, uint64_t id)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	vy__vk_import_remove(b, id);
	pthread_rwlock_unlock(&b->life);
}

/* Capabilities, limits and the profile. */

static const char *vk_version(struct vy_backend *base)
{
	return vy__vk_from(base)->version;
}

static bool vk_supports(struct vy_backend *base, enum vy_capability cap)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	switch (cap) {
	case VY_CAP_SUBGROUP_OPS:
		return b->subgroups;
	case VY_CAP_GRID_SYNC:
		return true;
	default:
		return false;
	}
}

static void vk_max_workgroup_size(struct vy_backend *base, uint32_t out[3])
{
	const VkPhysicalDeviceLimits *l = &vy__vk_from(base)->dev.props.limits;
	for (int i = 0; i < 3; i++) {
		out[i] = l->maxComputeWorkGroupSize[i];
	}
}

static uint32_t vk_max_workgroups_per_dimension(struct vy_backend *base)
{
	const uint32_t *c = vy__vk_from(base)->dev.props.limits.maxComputeWorkGroupCount;
	uint32_t m = c[0];
	m = c[1] < m ? c[1] : m;
	return c[2] < m ? c[2] : m;
}

static uint32_t vk_max_workgroup_invocations(struct vy_backend *base)
{
	return vy__vk_from(base)->dev.props.limits.maxComputeWorkGroupInvocations;
}

static uint32_t vk_subgroup_size(struct vy_backend *base)
{
	return vy__vk_from(base)->dev.subgroup_size;
}

static uint64_t vk_max_storage_buffer_bytes(struct vy_backend *base)
{
	return vy__vk_from(base)->dev.max_storage_range;
}

static void vk_device_profile(struct vy_backend *base, struct vy_device_profile *out)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	const struct vy_vk_device *d = &b->dev;
	const VkPhysicalDeviceLimits *l = &d->props.limits;
	out->backend = VY_VULKAN_BACKEND_ID;
	snprintf(out->name, sizeof(out->name), "%s", d->props.deviceName);
	snprintf(out->driver_info, sizeof(out->driver_info), "%.100s %.150s", d->driver_name,
		d->driver_info);
	out->vendor_id = d->props.vendorID;
	out->device_id = d->props.deviceID;
	out->driver_version = d->props.driverVersion;
	memcpy(out->pipeline_cache_uuid, d->props.pipelineCacheUUID, 16);
	out->has_device_uuid = true;
	memcpy(out->device_uuid, d->device_uuid, 16);
	out->supports_subgroup_ops = b->subgroups;
	out->has_subgroup_shuffle = b->subgroups;
	out->subgroup_size = d->subgroup_size;
	out->supports_indirect_dispatch = false;
	out->supports_specialization_constants = true;
	out->supports_trap_propagation = true;
	out->has_shared_memory = l->maxComputeSharedMemorySize > 0;
	out->max_native_int_width = d->int64 ? 64 : 32;
	for (int i = 0; i < 3; i++) {
		out->max_workgroup_size[i] = l->maxComputeWorkGroupSize[i];
		out->max_workgroup_count[i] = l->maxComputeWorkGroupCount[i];
	}
	out->max_workgroup_invocations = l->maxComputeWorkGroupInvocations;
	out->max_shared_bytes = l->maxComputeSharedMemorySize;
	out->max_storage_buffer_bytes = d->max_storage_range;
	out->compute_units = d->compute_units;
	out->fma_fused = b->probe.fma_fused;
	out->div_exact = b->probe.div_exact;
	out->sqrt_exact = b->probe.sqrt_exact;
	out->keeps_subnormals = b->probe.keeps_subnormals;
	out->fold_exact = b->probe.fold_exact;
	out->select_exact = b->probe.select_exact;
	out->loop_passes = b->probe.loop_passes;
	out->timestamps = d->timestamps;
	out->timestamp_period_ns = d->timestamp_period_ns;
	out->unified_memory = d->unified;
	out->cpu_device = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
	if (b->open) {
		vy__vk_device_heaps(d, out);
	}
	pthread_rwlock_unlock(&b->life);
}

static bool vk_pipeline_cache_stats(struct vy_backend *base, struct vy_pipeline_cache_stats *out)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_mutex_lock(&b->cache_lock);
	*out = b->stats;
	pthread_mutex_unlock(&b->cache_lock);
	return true;
}

/* Lifecycle. */

static int vk_prepare(struct vy_backend *base, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	struct vy_vk_ctx *ctx = NULL;
	int rc = vy__vk_usable(b, err);
	if (rc == 0) {
		rc = vy__vk_ctx_acquire(&b->exec, &ctx, err);
	}
	if (ctx) {
		vy__vk_ctx_release(&b->exec, ctx);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

static int vk_flush(struct vy_backend *base, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	int rc = vy__vk_usable(b, err);
	if (rc == 0) {
		rc = vy__vk_exec_drain(&b->exec, err);
	}
	if (rc == 0) {
		rc = vy__vk_pipelines_save(&b->pipes, err);
	}
	pthread_rwlock_unlock(&b->life);
	return vy__vk_note(b, rc);
}

static int vk_shutdown(struct vy_backend *base, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_wrlock(&b->life);
	int rc = 0;
	if (!b->shut) {
		if (b->open && !atomic_load(&b->lost)) {
			rc = vy__vk_exec_drain(&b->exec, err);
			int save = vy__vk_pipelines_save(&b->pipes, rc ? NULL : err);
			rc = rc ? rc : save;
		}
		pendings_kill(b);
		device_down(b);
		b->shut = true;
	}
	pthread_rwlock_unlock(&b->life);
	return rc == VY_E_DEVICE_LOST ? 0 : rc;
}

static bool vk_device_lost(struct vy_backend *base)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	return atomic_load(&b->lost) || b->exec.lost;
}

static int vk_try_recover(struct vy_backend *base, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_wrlock(&b->life);
	int rc = 0;
	if (b->shut) {
		rc = vy__vk_usable(b, err);
	} else if (atomic_load(&b->lost) || b->exec.lost || !b->open) {
		uint32_t index = b->dev.index;
		pendings_kill(b);
		device_down(b);
		rc = device_up(b, index, err);
		if (rc == 0) {
			atomic_store(&b->lost, false);
		}
	}
	pthread_rwlock_unlock(&b->life);
	return rc;
}

static int vk_inject_fault(struct vy_backend *base, enum vy_fault fault, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	assert((unsigned)fault < VY_FAULT_COUNT);
	if (fault == VY_FAULT_DEVICE_LOST) {
		atomic_store(&b->lost, true);
	} else {
		atomic_fetch_or(&b->faults, 1u << fault);
	}
	return 0;
}

static void vk_destroy(struct vy_backend *base)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	vk_shutdown(base, NULL);
	vy__vk_disk_close(&b->disk);
	vy__vk_compiler_destroy(b->cc);
	free(b->res_buckets);
	pthread_mutex_destroy(&b->import_lock);
	pthread_mutex_destroy(&b->graph_lock);
	pthread_mutex_destroy(&b->resident_lock);
	pthread_mutex_destroy(&b->pending_lock);
	pthread_mutex_destroy(&b->cache_lock);
	pthread_rwlock_destroy(&b->life);
	free(b->cache_dir);
	free(b);
}

static const struct vy_backend_ops vk_ops = {
	.dispatch = vk_dispatch,
	.destroy = vk_destroy,
	.version = vk_version,
	.dispatch_into = vk_dispatch,
	.dispatch_timed = vk_dispatch_timed,
	.resident_alloc = vk_resident_alloc,
	.resident_upload = vk_resident_upload,
	.resident_download = vk_resident_download,
	.resident_free = vk_resident_free,
	.resident_dispatch = vk_resident_dispatch,
	.graph_run = vy__vk_graph_run,
	.graph_forget = vy__vk_graph_forget,
	.graph_start = vy__vk_graph_start,
	.compile_native = vk_compile_native,
	.dispatch_async = vk_dispatch_async,
	.pipeline_cache_stats = vk_pipeline_cache_stats,
	.supports = vk_supports,
	.max_workgroup_size = vk_max_workgroup_size,
	.max_workgroups_per_dimension = vk_max_workgroups_per_dimension,
	.max_workgroup_invocations = vk_max_workgroup_invocations,
	.subgroup_size = vk_subgroup_size,
	.max_storage_buffer_bytes = vk_max_storage_buffer_bytes,
	.device_profile = vk_device_profile,
	.prepare = vk_prepare,
	.flush = vk_flush,
	.shutdown = vk_shutdown,
	.device_lost = vk_device_lost,
	.inject_fault = vk_inject_fault,
	.try_recover = vk_try_recover,
	.host_import = vk_host_import,
	.host_release = vk_host_release,
};

static int create(const struct vy_vulkan_options *opts, unsigned test_flags,
	struct vy_backend **out, struct vy_err *err)
{
	*out = NULL;
	static const struct vy_vulkan_options defaults;
	if (!opts) {
		opts = &defaults;
	}
	struct vy__vk_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		fprintf(stderr, "vyred: out of memory for the Vulkan backend\n");
		abort();
	}
	b->base = (struct vy_backend){&vk_ops, VY_VULKAN_BACKEND_ID, b};
	const char *env = getenv("VYRED_VULKAN_VALIDATION");
	b->validation = opts->enable_validation || (env && strcmp(env, "1") == 0);
	b->plain_code = opts->plain_code;
	b->test_flags = test_flags;
	b->kernel_limit =
		opts->kernel_cache_entries ? opts->kernel_cache_entries : VY__VK_CACHE_MAX_ENTRIES;
	b->disk_quota = opts->disk_quota;
	if (opts->cache_dir && opts->cache_key) {
		memcpy(b->cache_key, opts->cache_key, sizeof(b->cache_key));
		b->cache_dir = strdup(opts->cache_dir);
		if (!b->cache_dir) {
			fprintf(stderr, "vyred: out of memory\n");
			abort();
		}
	}
	pthread_rwlock_init(&b->life, NULL);
	pthread_mutex_init(&b->cache_lock, NULL);
	pthread_mutex_init(&b->pending_lock, NULL);
	pthread_mutex_init(&b->resident_lock, NULL);
	pthread_mutex_init(&b->import_lock, NULL);
	pthread_mutex_init(&b->graph_lock, NULL);
	b->cc = vy__vk_compiler_create();
	int rc = device_up(b, opts->device_index, err);
	if (rc) {
		b->shut = true;
		vk_destroy(&b->base);
		return rc;
	}
	*out = &b->base;
	return 0;
}

int vy_vulkan_backend_create(
	const struct vy_vulkan_options *opts, struct vy_backend **out, struct vy_err *err)
{
	return create(opts, 0, out, err);
}

int vy__vk_backend_create_for_test(const struct vy_vulkan_options *opts, unsigned flags,
	struct vy_backend **out, struct vy_err *err)
{
	return create(opts, flags, out, err);
}

bool vy_vulkan_stats(struct vy_backend *base, struct vy_vulkan_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!base || base->ops != &vk_ops) {
		return false;
	}
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	out->spirv_disk_hits = atomic_load(&b->disk.spirv_hits);
	out->spirv_disk_misses = atomic_load(&b->disk.spirv_misses);
	out->disk_writes = atomic_load(&b->disk.writes);
	out->disk_rejected = atomic_load(&b->disk.rejected);
	out->spirv_disk_invalid = atomic_load(&b->disk.spirv_invalid);
	out->disk_write_errors = atomic_load(&b->disk.write_errors);
	out->pipeline_cache_from_disk = b->pipes.cache_from_disk;
	if (b->open) {
		pthread_mutex_lock(&b->exec.lock);
		out->submits = b->exec.submits;
		out->jobs = b->exec.jobs;
		out->stopped = b->exec.stopped;
		pthread_mutex_unlock(&b->exec.lock);
		vy__vk_memory_usage(&b->mem, &out->bytes_in_use, &out->bytes_held);
	}
	pthread_mutex_lock(&b->resident_lock);
	out->resident_buffers = b->res_count;
	pthread_mutex_unlock(&b->resident_lock);
	pthread_mutex_lock(&b->import_lock);
	out->host_imports = b->import_count;
	pthread_mutex_unlock(&b->import_lock);
	out->host_import_inputs = atomic_load(&b->imported_inputs);
	out->host_import_bytes = atomic_load(&b->imported_bytes);
	pthread_rwlock_unlock(&b->life);
	return true;
}

static const char *type_name(VkPhysicalDeviceType t)
{
	switch (t) {
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
		return "discrete";
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
		return "integrated";
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
		return "virtual";
	case VK_PHYSICAL_DEVICE_TYPE_CPU:
		return "cpu";
	default:
		return "other";
	}
}

static bool has_compute_queue(VkPhysicalDevice phys)
{
	uint32_t n = 0;
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, NULL);
	VkQueueFamilyProperties fams[32];
	n = n > 32 ? 32 : n;
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, fams);
	for (uint32_t i = 0; i < n; i++) {
		if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
			return true;
		}
	}
	return false;
}

int vy_vulkan_devices_enumerate(
	struct vy_vulkan_device_info *out, uint32_t cap, uint32_t *n, struct vy_err *err)
{
	*n = 0;
	VkInstance instance;
	VkDebugUtilsMessengerEXT messenger;
	PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
	int rc = vy__vk_instance_create(false, &instance, &messenger, &destroy_messenger, err);
	if (rc) {
		return rc;
	}
	VkPhysicalDevice *phys = NULL;
	uint32_t count = 0;
	VY_VK(vkEnumeratePhysicalDevices(instance, &count, NULL));
	phys = calloc(count ? count : 1, sizeof(*phys));
	if (!phys) {
		fprintf(stderr, "vyred: out of memory listing devices\n");
		abort();
	}
	VY_VK(vkEnumeratePhysicalDevices(instance, &count, phys));
	for (uint32_t i = 0; i < count && i < cap; i++) {
		VkPhysicalDeviceIDProperties ids = {
			.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
		VkPhysicalDeviceProperties2 p2 = {
			.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &ids};
		vkGetPhysicalDeviceProperties2(phys[i], &p2);
		const VkPhysicalDeviceProperties p = p2.properties;
		out[i] = (struct vy_vulkan_device_info){
			.index = i,
			.type = type_name(p.deviceType),
			.vendor_id = p.vendorID,
			.device_id = p.deviceID,
			.driver_version = p.driverVersion,
			.api_version = p.apiVersion,
			.usable = p.apiVersion >= VK_API_VERSION_1_2 && has_compute_queue(phys[i]),
		};
		snprintf(out[i].name, sizeof(out[i].name), "%s", p.deviceName);
		memcpy(out[i].uuid, ids.deviceUUID, sizeof(out[i].uuid));
	}
	*n = count;
	free(phys);
	vkDestroyInstance(instance, NULL);
	return 0;
error:
	free(phys);
	vkDestroyInstance(instance, NULL);
	return rc;
}

bool vy_vulkan_validation_available(void)
{
	return vy__vk_validation_available();
}

uint64_t vy_vulkan_validation_messages(char *buf, size_t size)
{
	if (buf && size) {
		vy__vk_validation_last(buf, size);
	}
	return vy__vk_validation_count();
}

void vy__vk_simulate_device_lost(struct vy_backend *base)
{
	vk_inject_fault(base, VY_FAULT_DEVICE_LOST, NULL);
}

int vy__vk_hold_submissions(struct vy_backend *base, bool hold, struct vy_err *err)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	int rc =
		hold ? vy__vk_exec_gate_close(&b->exec, err) : vy__vk_exec_gate_open(&b->exec, err);
	pthread_rwlock_unlock(&b->life);
	return rc;
}

const struct vy_vk_probe *vy__vk_backend_probe(struct vy_backend *base)
{
	return &vy__vk_from(base)->probe;
}

int vy__vk_backend_compile(struct vy_backend *base, const char *glsl, struct vy_err *err)
{
	uint32_t *words = NULL;
	size_t n_words = 0;
	int rc = vy__vk_compile_glsl(vy__vk_from(base)->cc, glsl, strlen(glsl), "kernel.comp",
		false, &words, &n_words, err);
	free(words);
	return rc;
}
