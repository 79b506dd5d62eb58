/*
 * The table of compiled-in backends and the ways to open them (registry.h). The table is the only
 * place that knows which backends this build holds: each backend joins it with one entry, under
 * the define that says it was built, beside a small factory that maps the registry options onto
 * the backend's own; everything else (the daemon's choice of backend, the conformance runner's
 * list) reads the table.
 */
#include "registry.h"

#include <assert.h>
#include <stdbool.h>
#include <string.h>

#include "reference/reference.h"

#ifdef VY_HAVE_VULKAN
#include "vulkan/vulkan.h"
#endif

static int open_reference(
	const struct vy_registry_options *opts, struct vy_backend **out, struct vy_err *err)
{
	struct vy_reference_options ref = {.subgroup_size = opts->subgroup_size};
	return vy_reference_backend_create(&ref, out, err);
}

#ifdef VY_HAVE_VULKAN
static int open_vulkan(
	const struct vy_registry_options *opts, struct vy_backend **out, struct vy_err *err)
{
	struct vy_vulkan_options vk = {
		.device_index = opts->device_index,
		.cache_dir = opts->cache_dir,
		.cache_key = opts->cache_key,
		.enable_validation = opts->enable_validation,
		.disk_quota = opts->disk_quota,
		.kernel_cache_entries = opts->kernel_cache_entries,
		.plain_code = opts->plain_code,
	};
	return vy_vulkan_backend_create(&vk, out, err);
}
#endif

static const struct vy_registry_entry backends[] = {
#ifdef VY_HAVE_VULKAN
	{VY_VULKAN_BACKEND_ID, 10, open_vulkan},
#endif
	{VY_REFERENCE_ID, 100, open_reference},
};

#define N_BACKENDS (sizeof(backends) / sizeof(backends[0]))
_Static_assert(N_BACKENDS <= VY_REGISTRY_MAX, "raise VY_REGISTRY_MAX");

static const struct vy_registry_options default_options;

/* The whole table in precedence order; ties keep table order. */
static void sorted(const struct vy_registry_entry *order[N_BACKENDS])
{
	for (size_t i = 0; i < N_BACKENDS; i++) {
		size_t j = i;
		while (j > 0 && order[j - 1]->precedence > backends[i].precedence) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = &backends[i];
	}
}

size_t vy_registry_list(const struct vy_registry_entry **out, size_t cap)
{
	const struct vy_registry_entry *order[N_BACKENDS];
	sorted(order);
	for (size_t i = 0; i < N_BACKENDS && i < cap; i++) {
		out[i] = order[i];
	}
	return N_BACKENDS;
}

const struct vy_registry_entry *vy_registry_find(const char *id)
{
	for (size_t i = 0; i < N_BACKENDS; i++) {
		if (strcmp(backends[i].id, id) == 0) {
			return &backends[i];
		}
	}
	return NULL;
}

/* Append `s` to the NUL-terminated text in `buf` (`size` bytes), cutting what does not fit. */
static void append(char *buf, size_t size, const char *s)
{
	size_t used = strlen(buf);
	size_t n = strlen(s);
	if (n > size - 1 - used) {
		n = size - 1 - used;
	}
	memcpy(buf + used, s, n);
	buf[used + n] = '\0';
}

/* Call the factory, holding the contract that *out is set exactly when it succeeds. */
static int create(const struct vy_registry_entry *entry, const struct vy_registry_options *opts,
	struct vy_backend **out, struct vy_err *err)
{
	*out = NULL;
	int rc = entry->create(opts ? opts : &default_options, out, err);
	assert((rc == 0) == (*out != NULL));
	return rc;
}

int vy_registry_open(const char *id, const struct vy_registry_options *opts,
	struct vy_backend **out, struct vy_err *err)
{
	const struct vy_registry_entry *entry = vy_registry_find(id);
	if (!entry) {
		const struct vy_registry_entry *order[N_BACKENDS];
		sorted(order);
		char names[128] = "";
		for (size_t i = 0; i < N_BACKENDS; i++) {
			append(names, sizeof(names), i ? ", " : "");
			append(names, sizeof(names), order[i]->id);
		}
		*out = NULL;
		return vy_err_set(err, VY_E_NOT_FOUND, NULL,
			"choose one of the compiled-in backends, or rebuild with the one you need",
			"no backend '%s' in this build (compiled in: %s)", id, names);
	}
	return create(entry, opts, out, err);
}

int vy_registry_open_first(
	const struct vy_registry_options *opts, struct vy_backend **out, struct vy_err *err)
{
	const struct vy_registry_entry *order[N_BACKENDS];
	sorted(order);
	struct vy_err first = {0};
	char why[VY_ERR_MESSAGE_MAX] = "";
	for (size_t i = 0; i < N_BACKENDS; i++) {
		struct vy_err e = {0};
		if (create(order[i], opts, out, &e) == 0) {
			vy_err_clear(err);
			return 0;
		}
		if (i == 0) {
			first = e;
		}
		append(why, sizeof(why), i ? "; " : "");
		append(why, sizeof(why), order[i]->id);
		append(why, sizeof(why), ": ");
		append(why, sizeof(why), e.message);
	}
	return vy_err_set(err, first.code, NULL,
		first.fix[0] ? first.fix
			     : "check the backends' "
			       "requirements (vyred --check)",
		"no backend could be opened: %s", why);
}

size_t vy_registry_open_all(const struct vy_registry_options *opts, struct vy_registry_set *set)
{
	const struct vy_registry_entry *order[N_BACKENDS];
	sorted(order);
	memset(set, 0, sizeof(*set));
	size_t opened = 0;
	for (size_t i = 0; i < N_BACKENDS; i++) {
		struct vy_registry_opened *o = &set->items[set->len++];
		o->entry = order[i];
		if (create(order[i], opts, &o->backend, &o->err) == 0) {
			vy_err_clear(&o->err);
			opened++;
		}
	}
	return opened;
}

void vy_registry_set_finish(struct vy_registry_set *set)
{
	if (!set) {
		return;
	}
	for (size_t i = 0; i < set->len; i++) {
		vy_backend_destroy(set->items[i].backend);
	}
	memset(set, 0, sizeof(*set));
}
