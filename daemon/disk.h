/*
 * The daemon's own disk cache (DESIGN.md §7.3): the canonical bytes of every program a request
 * used successfully, one file per program id under <cache_dir>/programs/, so that after a restart a
 * client that sends a program again gets its pipeline rebuilt from disk (the Vulkan backend
 * keeps its SPIR-V and VkPipelineCache blob beside it, in <cache_dir>/vulkan/).
 *
 * File format (little-endian): the magic "VYREDPG\0", the format version (u32), a reserved u32,
 * the payload length (u64), the program id (16 bytes), the MAC (32 bytes: keyed BLAKE2b-256 of
 * the 40 header bytes before it and the payload, keyed with the install's key), then the
 * canonical msgpack bytes. A file that fails any check (format 1 files, which had a plain XXH3,
 * included) is deleted and never trusted; writes are atomic (temporary file, fsync, rename,
 * fsync of the folder). Someone who can write the folder but not read the key cannot forge a
 * file; the daemon also refuses a folder others can write (vy_disk_dir_check).
 *
 * The key: <cache_dir>/key, 32 random bytes made at the first start (a temporary file created
 * with O_EXCL and mode 0600, then linked into place, so it appears whole or not at all), owned by
 * the daemon's user and readable by no one else. The Vulkan backend authenticates its own files
 * with the same key.
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
#define VY_DISK_PROGRAM_FORMAT 2u
#define VY_DISK_KEY_BYTES 32
#define VY_DISK_MAC_BYTES 32
#define VY_DISK_KEY_FILE "key"

/*
 * Whether cache_dir can be trusted: it, its programs/ and vulkan/ folders (where they exist) and
 * every folder above it are owned by root or the daemon's user and writable by no one else; a
 * folder above cache_dir may instead be a root-owned sticky folder such as /tmp (as ssh's
 * StrictModes accepts). Symbolic links are followed, and the folders holding them must pass as
 * well. A cache_dir that does not exist yet is judged by the deepest folder that does. Errors:
 * INTERNAL naming the folder, its owner or mode, with a Fix line.
 */
int vy_disk_dir_check(const char *dir, struct vy_err *err);

/*
 * Load the key of the disk cache from <dir>/key, creating it when missing if `create` (the
 * daemon's start; `vyred --check` only looks, so that a check run as root makes no file the
 * service's user could not read). Returns 0, 1 when the file is missing and not created, or
 * INTERNAL (with a Fix line) when the file is not a regular 32-byte file of mode 0600 owned by the
 * daemon's user.
 */
int vy_disk_key_load(
	const char *dir, bool create, uint8_t key[VY_DISK_KEY_BYTES], struct vy_err *err);

/* The keyed BLAKE2b-256 of `header` then `payload`. */
void vy_disk_mac(const uint8_t key[VY_DISK_KEY_BYTES], const void *header, size_t header_len,
	const void *payload, size_t len, uint8_t out[VY_DISK_MAC_BYTES]);

/* Create `dir` and its parents (mode 0750). Errors: INTERNAL naming the path and errno. */
int vy_disk_mkdirs(const char *dir, struct vy_err *err);

/* Write one program file atomically, authenticated with `key`. Errors: INTERNAL naming the path
 * and errno. */
int vy_disk_program_write(const char *dir, const uint8_t key[VY_DISK_KEY_BYTES],
	const struct vy_program_id *id, const void *bytes, size_t len, struct vy_err *err);

/*
 * Call `fn` for each valid program file of `dir`, newest first, at most `max` times; files that
 * fail a check are deleted and counted in *rejected, files beyond `max` are deleted. The bytes
 * passed to `fn` are freed after it returns.
 */
void vy_disk_programs_load(const char *dir, const uint8_t key[VY_DISK_KEY_BYTES], size_t max,
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
 * modification time); otherwise write it (vy_disk_program_write, authenticated with `key`)
 * within the budget `b` (may be NULL). Sets *written when a file was written. Errors: those of
 * vy_disk_program_write.
 */
int vy_disk_program_keep(const char *dir, const uint8_t key[VY_DISK_KEY_BYTES],
	struct vy_disk_budget *b, const struct vy_program_id *id, const void *bytes, size_t len,
	bool *written, struct vy_err *err);

#endif
