/*
 * The disk cache of the Vulkan backend (DESIGN.md §7.3): compiled SPIR-V modules by key, and the
 * VkPipelineCache blob, under one directory.
 *
 *   <cache_dir>/pipeline-cache-<vendor>-<device>.bin   the VkPipelineCache data
 *   <cache_dir>/spirv/<32 hex digits>.spv              one SPIR-V module per key
 *
 * Every file starts with a 104-byte little-endian header: magic "VYREDVK\0", format version,
 * kind (1 SPIR-V, 2 pipeline cache), vendor id, device id, driver version, a reserved word, the
 * device's pipelineCacheUUID, the key (zero for the pipeline cache), the payload length, then the
 * MAC: the keyed BLAKE2b-256 (libsodium's crypto_generichash) of the 72 header bytes before it
 * and the payload, keyed with the install's secret (the daemon's <cache_dir>/key, passed in
 * through the options). A file that fails any check (short, truncated, damaged, another device's
 * or driver's, another key's, format 1 with its plain XXH3, or forged by someone without the
 * secret) is counted as rejected and never handed to the driver; the next write replaces it.
 * SPIR-V that passes these checks is also validated (spirv-val) before it reaches the driver
 * (vk_kernel.c): when it is read, or ahead, when the device opens, for the most recently used
 * files (vy__vk_disk_vet), whose payloads are then trusted only byte for byte. Writes are atomic: a
 * temporary file in the same directory, fsync, rename, fsync of the directory.
 *
 * Ownership: struct vy_vk_disk is embedded in the backend (open/close). Payloads read are
 * malloc'd and freed by the caller.
 * Thread-safety: reads and writes may run from several threads and processes at once (each write
 * has its own temporary file; rename is atomic).
 */
#ifndef VY_BACKEND_VULKAN_VK_DISK_H
#define VY_BACKEND_VULKAN_VK_DISK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "err.h"

#define VY_VK_DISK_MAGIC "VYREDVK"
#define VY_VK_DISK_FORMAT 2
#define VY_VK_DISK_HEADER_BYTES 104
#define VY_VK_DISK_SIGNED_BYTES 72 /* header bytes the MAC covers, before the MAC */
#define VY_VK_DISK_MAC_KEY_BYTES 32

enum vy_vk_disk_kind {
	VY_VK_DISK_SPIRV = 1,
	VY_VK_DISK_PIPELINE_CACHE = 2,
};

/* What a file must match to be read. */
struct vy_vk_disk_identity {
	uint32_t vendor_id;
	uint32_t device_id;
	uint32_t driver_version;
	uint8_t cache_uuid[16];
};

struct vy_vk_disk {
	char *dir;                   /* owned; NULL when the disk cache is off */
	struct vy_disk_quota *quota; /* borrowed, or NULL: the folder's bound shared with others */
	struct vy_vk_disk_identity id;
	uint8_t mac_key[VY_VK_DISK_MAC_KEY_BYTES];
	_Atomic uint64_t spirv_hits;
	_Atomic uint64_t spirv_misses;
	_Atomic uint64_t writes;
	_Atomic uint64_t rejected;
	_Atomic uint64_t spirv_invalid; /* authenticated SPIR-V that spirv-val refused */
	_Atomic uint64_t write_errors;
	/* SPIR-V files checked by spirv-val when the cache opened (vy__vk_disk_vet): key and the
	 * BLAKE2b of the payload that passed. Written only while the backend's device comes up,
	 * read-only afterwards. */
	struct vy_vk_disk_vetted *vetted; /* owned */
	size_t n_vetted;
};

struct vy_vk_disk_vetted {
	uint8_t key[16];
	uint8_t digest[32];
};

/*
 * Open the cache under `dir` (created, with its spirv/ folder, when missing), its files
 * authenticated with `mac_key` (copied). `dir` or `mac_key` NULL turns the cache off: reads find
 * nothing and writes do nothing. Errors: DISPATCH_FAILED naming the folder and errno when it
 * cannot be created.
 */
int vy__vk_disk_open(struct vy_vk_disk *disk, const char *dir,
	const uint8_t mac_key[VY_VK_DISK_MAC_KEY_BYTES], const struct vy_vk_disk_identity *id,
	struct vy_err *err);
void vy__vk_disk_close(struct vy_vk_disk *disk);

/*
 * Check ahead the SPIR-V files most likely to be read first: the most recently used ones, at most
 * `max_files`, for at most `budget_ns`, each read and authenticated like vy__vk_disk_read (but
 * counted nowhere) and passed to `valid`; those that pass are remembered by the digest of their
 * payload. A later read whose payload has that digest needs no second check (the same bytes were
 * checked); anything else is checked when it is read. Call while the cache is open and nothing
 * reads it.
 */
void vy__vk_disk_vet(struct vy_vk_disk *disk, size_t max_files, uint64_t budget_ns,
	bool (*valid)(const uint32_t *words, size_t n_words));
/* Whether `data` is the payload of the SPIR-V file of `key` as checked by vy__vk_disk_vet. */
bool vy__vk_disk_vetted(
	const struct vy_vk_disk *disk, const uint8_t key[16], const void *data, size_t len);

/* Path of the pipeline-cache blob or of the SPIR-V file of `key`, into buf; false when off. */
bool vy__vk_disk_path(const struct vy_vk_disk *disk, enum vy_vk_disk_kind kind,
	const uint8_t key[16], char *buf, size_t size);

/*
 * Read the payload of a file. Returns true and stores a malloc'd copy in *data (and its length)
 * when the file exists and passes every check; false otherwise (counted as rejected when the file
 * exists but fails a check). `key` is NULL for the pipeline cache.
 */
bool vy__vk_disk_read(struct vy_vk_disk *disk, enum vy_vk_disk_kind kind, const uint8_t key[16],
	void **data, size_t *len);
/* Whether a file of `key` exists (checked and counted only when read). */
bool vy__vk_disk_has(
	const struct vy_vk_disk *disk, enum vy_vk_disk_kind kind, const uint8_t key[16]);

/*
 * Write a file atomically. Failures are counted in write_errors and returned (DISPATCH_FAILED
 * naming the path and errno); the cache stays usable.
 */
int vy__vk_disk_write(struct vy_vk_disk *disk, enum vy_vk_disk_kind kind, const uint8_t key[16],
	const void *data, size_t len, struct vy_err *err);

/* Record a use of the file of `key` (its modification time, which orders the disk cache's files
 * for trimming), after a read that passed its checks. */
void vy__vk_disk_touch(struct vy_vk_disk *disk, enum vy_vk_disk_kind kind, const uint8_t key[16]);

/* Build the header of a payload, with its MAC under `mac_key` (also used by tests to forge
 * files). */
void vy__vk_disk_header(const struct vy_vk_disk_identity *id, enum vy_vk_disk_kind kind,
	const uint8_t key[16], const uint8_t mac_key[VY_VK_DISK_MAC_KEY_BYTES], const void *data,
	size_t len, uint8_t out[VY_VK_DISK_HEADER_BYTES]);

#endif
