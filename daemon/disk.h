/*
 * The daemon's own disk cache (DESIGN.md §7.3): the canonical bytes of every program it has
 * validated, one file per program id under <cache_dir>/programs/, so that after a restart a
 * client can dispatch by program_id and the pipeline is rebuilt from disk (the Vulkan backend
 * keeps its SPIR-V and VkPipelineCache blob beside it, in <cache_dir>/vulkan/).
 *
 * File format (little-endian): the magic "VYREDPG\0", the format version (u32), a reserved u32,
 * the payload length (u64), the XXH3-64 of the payload (u64), the program id (16 bytes), then
 * the canonical msgpack bytes. A file that fails any check is deleted and never trusted; writes
 * are atomic (temporary file, fsync, rename, fsync of the folder).
 *
 * Thread-safety: every function may run on any thread; files are written whole or not at all.
 */
#ifndef VY_DAEMON_DISK_H
#define VY_DAEMON_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "err.h"

#define VY_DISK_PROGRAM_MAGIC "VYREDPG"
#define VY_DISK_PROGRAM_FORMAT 1u

/* Create `dir` and its parents (mode 0750). Errors: INTERNAL naming the path and errno. */
int vy_disk_mkdirs(const char *dir, struct vy_err *err);

/* Write one program file atomically. Errors: INTERNAL naming the path and errno. */
int vy_disk_program_write(const char *dir, const struct vy_program_id *id, const void *bytes,
	size_t len, struct vy_err *err);

/*
 * Call `fn` for each valid program file of `dir`, newest first, at most `max` times; files that
 * fail a check are deleted and counted in *rejected, files beyond `max` are deleted. The bytes
 * passed to `fn` are freed after it returns.
 */
void vy_disk_programs_load(const char *dir, size_t max,
	void (*fn)(void *ctx, const struct vy_program_id *id, const uint8_t *bytes, size_t len),
	void *ctx, uint64_t *rejected);

/* Delete every program file of `dir`; returns how many were deleted. */
size_t vy_disk_programs_clear(const char *dir);

#endif
