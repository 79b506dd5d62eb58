/*
 * The backend registry (DESIGN.md §2): the table of backends compiled into this build, each with
 * an id, a precedence and a factory. The daemon opens the first backend that is available, in
 * precedence order (vulkan, then reference), unless a request or the configuration names one;
 * the conformance runner opens every available backend and compares them with the reference.
 *
 * Precedence: a smaller number is tried first. "Available" means the factory succeeded: a Vulkan
 * backend without a usable device fails to open, and the next backend is tried.
 *
 * Adding a backend: add one line to the table in registry.c, under the compile-time define that
 * says the backend is built (VY_HAVE_VULKAN for the Vulkan backend), naming a factory with the
 * signature of struct vy_registry_entry's `create` (a few lines that map the registry options
 * onto the backend's own).
 *
 * Errors: every fallible function returns 0 or a negative VY_E_* code and fills the optional
 * struct vy_err with a Fix line.
 *
 * Thread-safety: the table is immutable; every function may be called from any thread. Opening
 * a backend is as thread-safe as that backend's factory.
 */
#ifndef VY_BACKEND_REGISTRY_H
#define VY_BACKEND_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "err.h"

/* What a caller may ask of the backend it opens. A zeroed struct asks for every default. */
struct vy_registry_options {
	/*
	 * Lanes of a simulated subgroup, for a backend that simulates subgroups (the reference):
	 * set it to the subgroup size of the backend it is compared with (lavapipe 8, NVIDIA 32). 0
	 * for the backend's default. Backends on a real device report the device's size and ignore
	 * it.
	 */
	uint32_t subgroup_size;
	/*
	 * For backends that drive a device (vulkan): which device, in the backend's enumeration
	 * order; the folder of the disk cache (borrowed; NULL: none) and the 32-byte key that
	 * authenticates its files (borrowed; without it the disk cache is off); whether to run
	 * under the validation layers. Other backends ignore them.
	 */
	uint32_t device_index;
	const char *cache_dir;
	const uint8_t *cache_key;
	bool enable_validation;
	/* The bound on the disk cache's bytes (borrowed; NULL: none), and the compiled programs a
	 * backend keeps beyond those its callers hold (0: the backend's default). */
	struct vy_disk_quota *disk_quota;
	uint32_t kernel_cache_entries;
	/* For backends that generate code (vulkan): the plain code, nothing speculated, for
	 * comparing with the code they generate by default (ulp_report --plain). */
	bool plain_code;
};

/* One compiled-in backend. */
struct vy_registry_entry {
	const char *id; /* "vulkan", "reference": the backend's id, static */
	int precedence; /* smaller is tried first */
	/* Create the backend: store it in *out and return 0, or leave *out NULL and return a
	 * negative VY_E_* code. `opts` is never NULL. */
	int (*create)(const struct vy_registry_options *opts, struct vy_backend **out,
		struct vy_err *err);
};

/* Most backends one build holds; vy_registry_open_all never needs more slots. */
#define VY_REGISTRY_MAX 8

/*
 * Store pointers to the compiled-in backends, in precedence order, into out[0..min(count, cap))
 * and return their count. `out` may be NULL when `cap` is 0. The entries are static.
 */
size_t vy_registry_list(const struct vy_registry_entry **out, size_t cap);

/* The compiled-in backend with this id, or NULL. */
const struct vy_registry_entry *vy_registry_find(const char *id);

/*
 * Open the backend `id`. `opts` may be NULL for every default. On success *out holds a backend
 * that the caller frees with vy_backend_destroy. Errors: NOT_FOUND when no compiled-in backend
 * has this id (the message lists those that do); otherwise whatever the backend's factory
 * returns.
 */
int vy_registry_open(const char *id, const struct vy_registry_options *opts,
	struct vy_backend **out, struct vy_err *err);

/*
 * Open the first available backend in precedence order. On failure of every backend returns the
 * first backend's error code, with a message naming each backend and why it did not open, and
 * the first backend's Fix.
 */
int vy_registry_open_first(
	const struct vy_registry_options *opts, struct vy_backend **out, struct vy_err *err);

/* One backend tried by vy_registry_open_all. */
struct vy_registry_opened {
	const struct vy_registry_entry *entry; /* static */
	struct vy_backend *backend;            /* owned; NULL when it did not open */
	struct vy_err err;                     /* why it did not open; code 0 when it opened */
};

/* Every compiled-in backend, tried in precedence order. */
struct vy_registry_set {
	size_t len;
	struct vy_registry_opened items[VY_REGISTRY_MAX];
};

/*
 * Try to open every compiled-in backend, in precedence order, and record each result in *set
 * (which need not be initialized). Returns how many opened. Free the set with
 * vy_registry_set_finish.
 */
size_t vy_registry_open_all(const struct vy_registry_options *opts, struct vy_registry_set *set);

/* Destroy every backend of the set and leave it empty. NULL is accepted. */
void vy_registry_set_finish(struct vy_registry_set *set);

#endif
