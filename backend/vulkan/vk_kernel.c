/*
 * Compiling programs for the Vulkan backend, and the in-memory cache of the results.
 *
 * A program is found by its canonical bytes (protocol/codec.h): XXH3-128 picks the bucket and the
 * bytes confirm the hit, so no collision can serve another program's pipelines. On a miss the
 * program is cloned, validated against the device's limits, math-lowered (planner/vmath.h),
 * planned, split at its top-level grid_sync barriers, and every segment is generated (vk_codegen)
 * and compiled to SPIR-V (from the disk cache when it holds the module). Pipelines come later,
 * per (spec values, workgroup size), as variants of the kernel.
 */
#include "vk_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "codec.h"
#include "node_path.h"
#include "validate.h"
#include "vmath.h"

/* Bumped when generated modules stop matching older keys. */
#define SPIRV_KEY_VERSION UINT64_C(2)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "vyred: out of memory (%zu x %zu bytes)\n", n, size);
		abort();
	}
	return p;
}

int vy__vk_segment_error(const struct vy__vk_kernel *k, uint32_t seg, int rc, struct vy_err *err)
{
	if (k->split.len > 1 && err) {
		if (err->code == 0) {
			err->code = rc;
		}
		vy_grid_sync_segment_error(&k->split, seg, err);
	}
	return rc;
}

static void destroy_vulkan(struct vy__vk_kernel *k)
{
	struct vy_vk_device *d = &k->b->dev;
	while (k->variants) {
		struct vy__vk_variant *v = k->variants;
		k->variants = v->next;
		for (uint32_t s = 0; s < k->n_segments; s++) {
			if (v->pipelines[s]) {
				d->vk.vkDestroyPipeline(d->dev, v->pipelines[s], NULL);
				atomic_fetch_add(&k->b->destroyed, 1);
			}
		}
		free(v->pipelines);
		vy_spec_map_finish(&v->spec);
		free(v);
	}
	for (uint32_t s = 0; s < k->n_segments; s++) {
		if (k->segments[s].module) {
			d->vk.vkDestroyShaderModule(d->dev, k->segments[s].module, NULL);
			k->segments[s].module = VK_NULL_HANDLE;
		}
		if (k->segments[s].coarse_module) {
			d->vk.vkDestroyShaderModule(d->dev, k->segments[s].coarse_module, NULL);
			k->segments[s].coarse_module = VK_NULL_HANDLE;
		}
		k->segments[s].vk_layout = NULL;
	}
}

static void kernel_free(struct vy__vk_kernel *k)
{
	for (uint32_t s = 0; s < k->n_segments; s++) {
		struct vy__vk_segment *seg = &k->segments[s];
		free(seg->unsaved);
		if (seg->program != seg->written) {
			vy_program_destroy(seg->program);
		}
		vy_program_destroy(seg->written);
		free(seg->origins);
	}
	free(k->segments);
	free(k->spec_names);
	vy_binding_plan_destroy(k->plan);
	vy_grid_sync_split_finish(&k->split);
	vy_program_destroy(k->program);
	free(k->canonical);
	pthread_mutex_destroy(&k->variants_lock);
	free(k);
}

void vy__vk_kernel_ref(struct vy__vk_kernel *k)
{
	atomic_fetch_add(&k->refs, 1);
}

void vy__vk_kernel_unref(struct vy__vk_kernel *k)
{
	if (!k || atomic_fetch_sub(&k->refs, 1) != 1) {
		return;
	}
	struct vy__vk_backend *b = k->b;
	pthread_mutex_lock(&b->cache_lock);
	if (k->all_prev) {
		k->all_prev->all_next = k->all_next;
	} else if (b->all == k) {
		b->all = k->all_next;
	}
	if (k->all_next) {
		k->all_next->all_prev = k->all_prev;
	}
	if (k->generation == atomic_load(&b->generation) && b->open) {
		destroy_vulkan(k);
	}
	pthread_mutex_unlock(&b->cache_lock);
	kernel_free(k);
}

void vy__vk_reap(struct vy__vk_backend *b)
{
	uint64_t n = atomic_exchange(&b->destroyed, 0);
	if (n == 0) {
		return;
	}
	/* Never wait for a recovery (it holds life for writing, and frees everything with the
	 * device): the caller may be the daemon's loop. Busy, the count waits for the next call. */
	if (pthread_rwlock_tryrdlock(&b->life) != 0) {
		atomic_fetch_add(&b->destroyed, n);
		return;
	}
	if (b->open && !atomic_load(&b->lost)) {
		vy__vk_exec_reap(&b->exec);
	}
	pthread_rwlock_unlock(&b->life);
}

void vy__vk_kernel_release(void *kernel)
{
	vy__vk_kernel_unref(kernel);
}

static void lru_unlink(struct vy__vk_backend *b, struct vy__vk_kernel *k)
{
	if (k->lru_prev) {
		k->lru_prev->lru_next = k->lru_next;
	} else {
		b->lru_head = k->lru_next;
	}
	if (k->lru_next) {
		k->lru_next->lru_prev = k->lru_prev;
	} else {
		b->lru_tail = k->lru_prev;
	}
	k->lru_prev = k->lru_next = NULL;
}

static void lru_push(struct vy__vk_backend *b, struct vy__vk_kernel *k)
{
	k->lru_next = b->lru_head;
	k->lru_prev = NULL;
	if (b->lru_head) {
		b->lru_head->lru_prev = k;
	}
	b->lru_head = k;
	if (!b->lru_tail) {
		b->lru_tail = k;
	}
}

/* Remove a kernel from the table and the LRU list; returns the cache's reference to drop. */
static struct vy__vk_kernel *table_remove(struct vy__vk_backend *b, struct vy__vk_kernel *k)
{
	struct vy__vk_kernel **link = &b->buckets[k->hash % VY__VK_CACHE_BUCKETS];
	while (*link != k) {
		link = &(*link)->chain;
	}
	*link = k->chain;
	k->chain = NULL;
	lru_unlink(b, k);
	k->cached = false;
	b->stats.entries--;
	b->stats.bytes -= k->bytes;
	return k;
}

static struct vy__vk_kernel *table_find(
	struct vy__vk_backend *b, uint64_t hash, const uint8_t *canonical, size_t len)
{
	for (struct vy__vk_kernel *k = b->buckets[hash % VY__VK_CACHE_BUCKETS]; k; k = k->chain) {
		if (k->hash == hash && k->canonical_len == len &&
			memcmp(k->canonical, canonical, len) == 0) {
			return k;
		}
	}
	return NULL;
}

static void fill_caps(struct vy__vk_backend *b, struct vy_caps *caps)
{
	const VkPhysicalDeviceLimits *l = &b->dev.props.limits;
	caps->subgroups = b->subgroups;
	caps->max_workgroup_invocations = l->maxComputeWorkGroupInvocations;
	for (int i = 0; i < 3; i++) {
		caps->max_workgroup_size[i] = l->maxComputeWorkGroupSize[i];
	}
	caps->max_shared_bytes = l->maxComputeSharedMemorySize;
}

static void spirv_key(struct vy__vk_backend *b, const char *glsl, bool optimize, uint8_t key[16])
{
	uint32_t ident[4] = {(uint32_t)SPIRV_KEY_VERSION, b->dev.props.vendorID,
		b->dev.props.deviceID, optimize};
	uint64_t seed = XXH3_64bits(ident, sizeof(ident));
	XXH128_hash_t h = XXH3_128bits_withSeed(glsl, strlen(glsl), seed);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, h);
	memcpy(key, c.digest, 16);
}

/* SPIR-V of `glsl`, from the disk cache (*from_disk set, and the file's use recorded) or
 * compiled, through the optimizer when `optimize`; `key` receives its disk cache key. */
static int spirv_of(struct vy__vk_backend *b, const char *glsl, bool optimize, uint32_t **words,
	size_t *n_words, bool *from_disk, uint8_t key[16], struct vy_err *err)
{
	spirv_key(b, glsl, optimize, key);
	void *data = NULL;
	size_t len = 0;
	if (vy__vk_disk_read(&b->disk, VY_VK_DISK_SPIRV, key, &data, &len)) {
		/* Authenticated is not proof of sound: the driver sees only modules spirv-val
		 * accepts (an invalid one can crash it), and a rejected file is rebuilt below. */
		const uint32_t *w = data;
		if (len >= 20 && len % 4 == 0 && w[0] == 0x07230203u &&
			(vy__vk_disk_vetted(&b->disk, key, data, len) ||
				vy__vk_validate_spirv(w, len / 4, NULL) == 0)) {
			*words = data;
			*n_words = len / 4;
			*from_disk = true;
			vy__vk_disk_touch(&b->disk, VY_VK_DISK_SPIRV, key);
			return 0;
		}
		atomic_fetch_add(&b->disk.rejected, 1);
		atomic_fetch_add(&b->disk.spirv_invalid, 1);
		atomic_fetch_sub(&b->disk.spirv_hits, 1);
		atomic_fetch_add(&b->disk.spirv_misses, 1);
		free(data);
	}
	*from_disk = false;
	return vy__vk_compile_glsl(
		b->cc, glsl, strlen(glsl), "kernel.comp", optimize, words, n_words, err);
}

/* Write the SPIR-V compiled for the kernel's segments, now that a pipeline of each was built.
 * The caller holds k->variants_lock. */
static void save_spirv_locked(struct vy__vk_kernel *k)
{
	for (uint32_t s = 0; s < k->n_segments; s++) {
		struct vy__vk_segment *seg = &k->segments[s];
		if (seg->unsaved) {
			/* A cache that cannot be written costs a recompile later, not this
			 * dispatch. */
			(void)vy__vk_disk_write(&k->b->disk, VY_VK_DISK_SPIRV, seg->spirv_key,
				seg->unsaved, seg->unsaved_words * 4, NULL);
			free(seg->unsaved);
			seg->unsaved = NULL;
		}
	}
}

/* Lower a copy of the segment and learn which written node each lowered node stands for, so that
 * traps are named by the program as its author wrote it (as the reference names them). */
static int lower_segment(struct vy__vk_segment *seg, struct vy_err *err)
{
	seg->program = vy_program_clone(seg->written);
	int rc = vy_vmath_lower(seg->program, err);
	if (rc) {
		return rc;
	}
	seg->n_origins = vy_node_path_count(seg->program);
	seg->origins = xcalloc(seg->n_origins, sizeof(*seg->origins));
	if (vy_node_path_origins(seg->written, seg->program, seg->origins, seg->n_origins)) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"report the program: the math-library lowering must keep its statements",
			"the lowered program does not keep the statements of the original");
	}
	return 0;
}

static int coarse_segment(struct vy__vk_backend *b, struct vy__vk_segment *seg, bool only_from_disk,
	bool *from_disk, struct vy_err *err);

static int build_segment(struct vy__vk_backend *b, struct vy__vk_kernel *k, uint32_t s,
	const struct vy_program *view, const struct vy_caps *caps, struct vy_err *err)
{
	struct vy__vk_segment *seg = &k->segments[s];
	seg->written = vy_program_clone(view);
	seg->program = seg->written;
	int rc = vy_validate_first(seg->written, caps, err);
	if (rc == 0 && vy_vmath_needed(seg->written)) {
		rc = lower_segment(seg, err);
	}
	if (rc) {
		return rc;
	}
	char *glsl = NULL;
	struct vy_vk_codegen_options plain = b->cg;
	plain.coarse = false;
	rc = vy_vk_codegen(seg->program, &plain, &glsl, &seg->layout, err);
	if (rc) {
		return rc;
	}
	uint32_t *words = NULL;
	size_t n_words = 0;
	bool from_disk = false;
	/* A cold compile pays for the plain form: the driver optimizes it well enough alone. */
	rc = spirv_of(b, glsl, false, &words, &n_words, &from_disk, seg->spirv_key, err);
	free(glsl);
	k->from_disk = k->from_disk && from_disk;
	if (rc == 0 && b->validation && !from_disk) {
		rc = vy__vk_validate_spirv(words, n_words, err);
	}
	if (rc == 0) {
		rc = vy__vk_module_create(&b->pipes, words, n_words, &seg->module, err);
	}
	if (rc == 0 && !from_disk && b->disk.dir) {
		seg->unsaved = words;
		seg->unsaved_words = n_words;
		words = NULL;
	}
	free(words);
	/* Where no launch runs coarse (a CPU device) the coarse form is never generated. */
	if (rc == 0 && seg->layout.coarse && b->disk.dir && b->exec.coarse_min != UINT32_MAX) {
		rc = coarse_segment(b, seg, true, &k->from_disk, err);
	}
	if (rc) {
		return rc;
	}
	k->bytes += n_words * 4;
	struct vy_vk_shape shape = {.push_bytes = seg->layout.push_constant_bytes};
	for (uint32_t i = 0; i < seg->layout.n_bindings; i++) {
		shape.slots[shape.n_slots++] = (struct vy_layout_slot){
			.group = 0,
			.binding = seg->layout.bindings[i].vk_binding,
			.class = VY_LAYOUT_STORAGE,
			.read_only = seg->layout.bindings[i].read_only,
			.element_size = 4,
		};
	}
	shape.slots[shape.n_slots++] = (struct vy_layout_slot){
		.group = 0,
		.binding = seg->layout.trap_binding,
		.class = VY_LAYOUT_STORAGE,
		.read_only = false,
		.element_size = 4,
	};
	shape.slots[shape.n_slots++] = (struct vy_layout_slot){
		.group = 0,
		.binding = seg->layout.stop_binding,
		.class = VY_LAYOUT_STORAGE,
		.read_only = true,
		.element_size = 4,
	};
	rc = vy__vk_layout_get(&b->pipes, &shape, &seg->vk_layout, err);
	if (seg->layout.subgroup_features) {
		seg->subgroup_size = b->dev.subgroup_size;
	}
	return rc;
}

static int spec_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vy__vk_spec_name *)a)->name,
		((const struct vy__vk_spec_name *)b)->name);
}

/* The union of the segments' spec constants, sorted and without repeats. */
static void collect_spec_names(struct vy__vk_kernel *k)
{
	uint32_t total = 0;
	for (uint32_t s = 0; s < k->n_segments; s++) {
		total += k->segments[s].layout.n_spec;
	}
	k->spec_names = xcalloc(total, sizeof(*k->spec_names));
	for (uint32_t s = 0; s < k->n_segments; s++) {
		const struct vy_vk_shader_layout *l = &k->segments[s].layout;
		for (uint32_t i = 0; i < l->n_spec; i++) {
			k->spec_names[k->n_spec_names++] =
				(struct vy__vk_spec_name){l->spec[i].name, l->spec[i].type};
		}
	}
	qsort(k->spec_names, k->n_spec_names, sizeof(*k->spec_names), spec_name_cmp);
	uint32_t out = 0;
	for (uint32_t i = 0; i < k->n_spec_names; i++) {
		if (out == 0 || strcmp(k->spec_names[out - 1].name, k->spec_names[i].name) != 0) {
			k->spec_names[out++] = k->spec_names[i];
		}
	}
	k->n_spec_names = out;
}

static int kernel_build(struct vy__vk_backend *b, const struct vy_program *program,
	struct vy__vk_kernel *k, struct vy_err *err)
{
	struct vy_caps caps;
	fill_caps(b, &caps);
	k->program = vy_program_clone(program);
	/* The whole program first, so that its errors carry whole-program paths. */
	int rc = vy_validate_first(k->program, &caps, err);
	if (rc == 0) {
		rc = vy_binding_plan_build(k->program, &k->plan, err);
	}
	if (rc) {
		return rc;
	}
	k->features = vy_launch_features_scan(k->program);
	vy_grid_sync_split(k->program, &k->split);
	k->n_segments = k->split.len;
	k->segments = xcalloc(k->n_segments, sizeof(*k->segments));
	k->from_disk = true;
	for (uint32_t s = 0; s < k->n_segments && rc == 0; s++) {
		rc = build_segment(b, k, s, k->split.segments[s], &caps, err);
		if (rc) {
			vy__vk_segment_error(k, s, rc, err);
		}
	}
	if (rc == 0) {
		collect_spec_names(k);
	}
	return rc;
}

int vy__vk_kernel_get(struct vy__vk_backend *b, const struct vy_program *program,
	struct vy__vk_kernel **out, struct vy_err *err)
{
	*out = NULL;
	msgpack_sbuffer sb;
	struct vy_program_id id;
	vy_program_id_of(program, &sb, &id);
	uint64_t hash;
	memcpy(&hash, id.bytes, sizeof(hash));
	uint64_t generation = atomic_load(&b->generation);

	pthread_mutex_lock(&b->cache_lock);
	struct vy__vk_kernel *k = table_find(b, hash, (const uint8_t *)sb.data, sb.size);
	if (k) {
		vy__vk_kernel_ref(k);
		lru_unlink(b, k);
		lru_push(b, k);
		b->stats.hits++;
		pthread_mutex_unlock(&b->cache_lock);
		msgpack_sbuffer_destroy(&sb);
		*out = k;
		return 0;
	}
	b->stats.misses++;
	pthread_mutex_unlock(&b->cache_lock);

	uint64_t start = now_ns();
	k = xcalloc(1, sizeof(*k));
	atomic_init(&k->refs, 1);
	k->b = b;
	k->generation = generation;
	memcpy(k->id, id.bytes, 16);
	k->hash = hash;
	k->canonical_len = sb.size;
	k->canonical = (uint8_t *)msgpack_sbuffer_release(&sb);
	msgpack_sbuffer_destroy(&sb);
	pthread_mutex_init(&k->variants_lock, NULL);
	pthread_mutex_lock(&b->cache_lock);
	k->all_next = b->all;
	if (b->all) {
		b->all->all_prev = k;
	}
	b->all = k;
	pthread_mutex_unlock(&b->cache_lock);

	int rc = vy__vk_fault_take(b, VY_FAULT_COMPILE, err) ? VY_E_KERNEL_COMPILE_FAILED
							     : kernel_build(b, program, k, err);
	if (rc) {
		vy__vk_kernel_unref(k);
		return rc;
	}

	pthread_mutex_lock(&b->cache_lock);
	b->stats.compile_ns += now_ns() - start;
	struct vy__vk_kernel *other = table_find(b, hash, k->canonical, k->canonical_len);
	struct vy__vk_kernel *evicted = NULL;
	if (other) {
		/* Another thread compiled the same program meanwhile: use the cached one. */
		vy__vk_kernel_ref(other);
		pthread_mutex_unlock(&b->cache_lock);
		vy__vk_kernel_unref(k);
		*out = other;
		return 0;
	}
	vy__vk_kernel_ref(k); /* the cache's reference */
	k->cached = true;
	k->chain = b->buckets[hash % VY__VK_CACHE_BUCKETS];
	b->buckets[hash % VY__VK_CACHE_BUCKETS] = k;
	lru_push(b, k);
	b->stats.entries++;
	b->stats.bytes += k->bytes;
	if (b->stats.entries > b->kernel_limit) {
		evicted = table_remove(b, b->lru_tail);
		b->stats.evictions++;
	}
	pthread_mutex_unlock(&b->cache_lock);
	vy__vk_kernel_unref(evicted);
	*out = k;
	return 0;
}

/* The 32-bit word a spec value gives a constant of type `t`, or false for a mismatched kind. */
static bool spec_word(enum vy_type t, const struct vy_spec_value *v, uint32_t *word)
{
	switch (t) {
	case VY_TYPE_U32:
		if (v->kind == VY_SPEC_U32 || (v->kind == VY_SPEC_I32 && v->as.i32 >= 0)) {
			*word = v->kind == VY_SPEC_U32 ? v->as.u32 : (uint32_t)v->as.i32;
			return true;
		}
		return false;
	case VY_TYPE_I32:
		if (v->kind == VY_SPEC_I32 || (v->kind == VY_SPEC_U32 && v->as.u32 <= INT32_MAX)) {
			*word = v->kind == VY_SPEC_I32 ? (uint32_t)v->as.i32 : v->as.u32;
			return true;
		}
		return false;
	case VY_TYPE_F32:
		if (v->kind == VY_SPEC_F32) {
			memcpy(word, &v->as.f32, 4);
			return true;
		}
		return false;
	case VY_TYPE_BOOL:
		if (v->kind == VY_SPEC_BOOL) {
			*word = v->as.b ? 1 : 0;
			return true;
		}
		return false;
	default:
		return false;
	}
}

static int check_spec(struct vy__vk_kernel *k, const struct vy_spec_map *spec, struct vy_err *err)
{
	if (!spec) {
		return 0;
	}
	for (size_t i = 0; i < spec->len; i++) {
		const struct vy_spec_entry *e = &spec->entries[i];
		struct vy__vk_spec_name key = {e->name, VY_TYPE_NONE};
		const struct vy__vk_spec_name *n = bsearch(&key, k->spec_names, k->n_spec_names,
			sizeof(*k->spec_names), spec_name_cmp);
		char at[VY_ERR_AT_MAX];
		snprintf(at, sizeof(at), "config.spec.%s", e->name);
		if (!n) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"remove the value or name one of the program's spec constants",
				"the program has no spec constant named %s", e->name);
		}
		uint32_t word;
		if (!spec_word(n->type, &e->value, &word)) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"give the value with the constant's type",
				"spec constant %s is %s; the value given does not fit it", e->name,
				vy_type_name(n->type));
		}
	}
	return 0;
}

static const struct vy_spec_map empty_spec;

static struct vy__vk_variant *find_variant(struct vy__vk_kernel *k, const struct vy_spec_map *spec,
	const uint32_t wg[3], struct vy__vk_form form)
{
	for (struct vy__vk_variant *v = k->variants; v; v = v->next) {
		if (memcmp(v->workgroup_size, wg, sizeof(v->workgroup_size)) == 0 &&
			v->form.coarse == form.coarse && v->form.uncounted == form.uncounted &&
			v->form.direct == form.direct && vy_spec_map_eq(&v->spec, spec)) {
			return v;
		}
	}
	return NULL;
}

/*
 * The coarse form's module of segment s (vk_coarse.c), from the disk cache or compiled (and
 * then written there). With `only_from_disk`, nothing happens unless the disk cache holds a
 * file for it: a kernel takes a module that is on disk when it is built, so that what it reports
 * as from the disk covers every module the disk holds, and compiles one only when a launch first
 * needs it. *from_disk is cleared when the module did not come from the disk.
 */
static int coarse_segment(struct vy__vk_backend *b, struct vy__vk_segment *seg, bool only_from_disk,
	bool *from_disk, struct vy_err *err)
{
	char *glsl = NULL;
	struct vy_vk_shader_layout layout;
	int rc = vy_vk_codegen(seg->program, &b->cg, &glsl, &layout, err);
	if (rc) {
		return rc;
	}
	/* The coarse form runs the large launches: worth the optimizer's time, which streams
	 * faster on NVIDIA. */
	uint8_t key[16];
	spirv_key(b, glsl, true, key);
	if (only_from_disk && !vy__vk_disk_has(&b->disk, VY_VK_DISK_SPIRV, key)) {
		free(glsl);
		return 0;
	}
	uint32_t *words = NULL;
	size_t n_words = 0;
	bool disk = false;
	rc = spirv_of(b, glsl, true, &words, &n_words, &disk, key, err);
	free(glsl);
	*from_disk = *from_disk && disk;
	if (rc == 0 && b->validation && !disk) {
		rc = vy__vk_validate_spirv(words, n_words, err);
	}
	if (rc == 0) {
		rc = vy__vk_module_create(&b->pipes, words, n_words, &seg->coarse_module, err);
	}
	if (rc == 0 && !disk && b->disk.dir) {
		(void)vy__vk_disk_write(&b->disk, VY_VK_DISK_SPIRV, key, words, n_words * 4, NULL);
	}
	free(words);
	return rc;
}

/* The coarse form's module of every segment, the first time a coarse launch needs it. The caller
 * holds k->variants_lock. */
static int coarse_modules_locked(struct vy__vk_kernel *k, struct vy_err *err)
{
	for (uint32_t s = 0; s < k->n_segments; s++) {
		bool from_disk = true;
		int rc = k->segments[s].coarse_module
				 ? 0
				 : coarse_segment(k->b, &k->segments[s], false, &from_disk, err);
		if (rc) {
			return vy__vk_segment_error(k, s, rc, err);
		}
	}
	return 0;
}

static int make_pipelines(struct vy__vk_kernel *k, const struct vy_spec_map *spec,
	const uint32_t wg[3], struct vy__vk_form form, VkPipeline *pipelines, struct vy_err *err)
{
	struct vy__vk_backend *b = k->b;
	for (uint32_t s = 0; s < k->n_segments; s++) {
		const struct vy__vk_segment *seg = &k->segments[s];
		uint32_t data[6 + VY_VK_MAX_SPEC];
		VkSpecializationMapEntry entries[6 + VY_VK_MAX_SPEC];
		uint32_t n = 0;
		for (uint32_t i = 0; i < 3; i++) {
			data[n] = wg[i];
			entries[n] = (VkSpecializationMapEntry){i, n * 4, 4};
			n++;
		}
		for (uint32_t i = 0; i < seg->layout.n_spec; i++) {
			const struct vy_vk_spec *sp = &seg->layout.spec[i];
			const struct vy_spec_value *v = vy_spec_map_get(spec, sp->name);
			data[n] = sp->default_bits;
			if (v) {
				spec_word(sp->type, v, &data[n]);
			}
			entries[n] = (VkSpecializationMapEntry){sp->constant_id, n * 4, 4};
			n++;
		}
		if (form.coarse) {
			data[n] = form.coarse;
			entries[n] = (VkSpecializationMapEntry){VY_VK_COARSE_SPEC_ID, n * 4, 4};
			n++;
		}
		if (form.uncounted && seg->layout.uncountable) {
			data[n] = VK_FALSE;
			entries[n] = (VkSpecializationMapEntry){VY_VK_COUNT_SPEC_ID, n * 4, 4};
			n++;
		}
		if (form.direct && !form.coarse) {
			data[n] = VK_TRUE;
			entries[n] = (VkSpecializationMapEntry){VY_VK_DIRECT_SPEC_ID, n * 4, 4};
			n++;
		}
		VkSpecializationInfo info = {
			.mapEntryCount = n,
			.pMapEntries = entries,
			.dataSize = n * 4,
			.pData = data,
		};
		int rc = vy__vk_pipeline_create(&b->pipes,
			form.coarse ? seg->coarse_module : seg->module, seg->vk_layout, &info,
			seg->subgroup_size, &pipelines[s], err);
		if (rc) {
			return vy__vk_segment_error(k, s, rc, err);
		}
	}
	return 0;
}

bool vy__vk_uncounted(const struct vy__vk_kernel *k, uint64_t limit)
{
	bool any = false;
	for (uint32_t s = 0; s < k->n_segments; s++) {
		const struct vy_vk_shader_layout *l = &k->segments[s].layout;
		if (l->static_iters > limit || (l->static_iters > 0 && !l->uncountable)) {
			return false;
		}
		any = any || l->uncountable;
	}
	return any;
}

int vy__vk_variant_get(struct vy__vk_kernel *k, const struct vy_spec_map *spec,
	const uint32_t workgroup_size[3], struct vy__vk_form form, struct vy__vk_variant **out,
	struct vy_err *err)
{
	if (!spec) {
		spec = &empty_spec;
	}
	pthread_mutex_lock(&k->variants_lock);
	struct vy__vk_variant *v = find_variant(k, spec, workgroup_size, form);
	pthread_mutex_unlock(&k->variants_lock);
	if (v) {
		*out = v;
		return 0;
	}
	int rc = check_spec(k, spec, err);
	if (rc) {
		return rc;
	}
	if (form.coarse) {
		pthread_mutex_lock(&k->variants_lock);
		rc = coarse_modules_locked(k, err);
		pthread_mutex_unlock(&k->variants_lock);
		if (rc) {
			return rc;
		}
	}
	v = xcalloc(1, sizeof(*v));
	memcpy(v->workgroup_size, workgroup_size, sizeof(v->workgroup_size));
	v->form = form;
	v->pipelines = xcalloc(k->n_segments, sizeof(*v->pipelines));
	rc = make_pipelines(k, spec, workgroup_size, form, v->pipelines, err);
	struct vy_vk_device *d = &k->b->dev;
	if (rc) {
		for (uint32_t s = 0; s < k->n_segments; s++) {
			if (v->pipelines[s]) {
				d->vk.vkDestroyPipeline(d->dev, v->pipelines[s], NULL);
			}
		}
		free(v->pipelines);
		free(v);
		return rc;
	}
	vy_spec_map_init_copy(&v->spec, spec);
	pthread_mutex_lock(&k->variants_lock);
	save_spirv_locked(k);
	struct vy__vk_variant *other = find_variant(k, spec, workgroup_size, form);
	if (!other) {
		v->next = k->variants;
		k->variants = v;
	}
	pthread_mutex_unlock(&k->variants_lock);
	if (other) {
		for (uint32_t s = 0; s < k->n_segments; s++) {
			d->vk.vkDestroyPipeline(d->dev, v->pipelines[s], NULL);
		}
		free(v->pipelines);
		vy_spec_map_finish(&v->spec);
		free(v);
		v = other;
	}
	*out = v;
	return 0;
}

void vy__vk_kernels_drop_device(struct vy__vk_backend *b)
{
	pthread_mutex_lock(&b->cache_lock);
	for (struct vy__vk_kernel *k = b->all; k; k = k->all_next) {
		if (k->generation == atomic_load(&b->generation)) {
			destroy_vulkan(k);
		}
	}
	struct vy__vk_kernel *dropped = NULL;
	while (b->lru_head) {
		struct vy__vk_kernel *k = table_remove(b, b->lru_head);
		k->chain = dropped;
		dropped = k;
	}
	pthread_mutex_unlock(&b->cache_lock);
	while (dropped) {
		struct vy__vk_kernel *next = dropped->chain;
		dropped->chain = NULL;
		vy__vk_kernel_unref(dropped);
		dropped = next;
	}
}
