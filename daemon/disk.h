/*
 * The daemon's own disk cache (DESIGN.md §7.3): the canonical bytes of every program a request
 * used successfully, one file per program id under <cache_dir>/programs/, so that after a restart a
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

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
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

/*
 * The bound on the disk cache (disk_cache_bytes): the program files plus the backends' files
 * (SPIR-V modules, pipeline-cache blobs), least recently used first out. A file's modification
 * time is its last use: writers set it when they write, readers when they use a file. Before each
 * write the writer reserves the file's bytes; when the bytes known (the last scan of the folders,
 * plus what was written since, plus reservations under way) would pass the cap, the folders are
 * scanned and the oldest files removed until the total is an eighth below the cap, so a scan
 * comes at most once per cap/8 bytes written.
 * Thread-safety: reserve and release may be called from any thread.
 */
struct vy_disk_budget {
	struct vy_disk_quota quota; /* handed to the writers */
	pthread_mutex_t lock;
	uint64_t cap;
	uint64_t total;   /* bytes of the files as of the last scan, plus writes since */
	uint64_t pending; /* reserved by writes under way */
	char *dirs[2];    /* owned: the folders bounded together */
	uint64_t scans;
	uint64_t removed; /* files removed to stay under the cap */
	uint64_t refused; /* files larger than the cap, not written */
};

/* Bound `programs_dir` and `backend_dir` (either may be NULL) together by `cap` bytes, trimming
 * them now. */
void vy_disk_budget_init(
	struct vy_disk_budget *b, uint64_t cap, const char *programs_dir, const char *backend_dir);
void vy_disk_budget_finish(struct vy_disk_budget *b);

/*
 * Keep the program file of `id`: when a valid-looking file is there, record its use (its
 * modification time); otherwise write it (vy_disk_program_write) within the budget `b` (may be
 * NULL). Sets *written when a file was written. Errors: those of vy_disk_program_write.
 */
int vy_disk_program_keep(const char *dir, struct vy_disk_budget *b, const struct vy_program_id *id,
	const void *bytes, size_t len, bool *written, struct vy_err *err);

#endif
