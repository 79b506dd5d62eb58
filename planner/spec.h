/*
 * Specialization values and the cache keys built from them (seed 002, DESIGN.md §7.3).
 *
 * A program's `spec` expressions are named constants fixed at compile time; a dispatch may
 * override them (`config.spec`). The values chosen for one compile form a struct vy_spec_map,
 * ordered by name so that the same choices give the same hash whatever order they arrived in.
 * The pipeline cache keys a compiled pipeline by struct vy_spec_cache_key, which folds the map's
 * hash beside the shader hash, the binding signature and the workgroup size; a cache that must
 * never serve the wrong pipeline keeps a copy of the map and confirms a hit with
 * vy_spec_map_eq.
 *
 * Every hash here is part of a persistent format (disk cache file names, artifact keys): the
 * byte layouts below are fixed, and changing one means changing the cache version.
 *
 * Thread-safety: the functions keep no state. A map belongs to its caller; a map that nobody
 * modifies may be read by any number of threads.
 */
#ifndef VY_PLANNER_SPEC_H
#define VY_PLANNER_SPEC_H

#include "ir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vy_spec_kind {
	VY_SPEC_U32,
	VY_SPEC_I32,
	VY_SPEC_F32, /* compared and hashed by its bit pattern */
	VY_SPEC_BOOL,
	VY_SPEC_DTYPE, /* an element type, so dtype-specialized variants share the same cache */
};

/* One specializable scalar value. Build it with the constructors below. */
struct vy_spec_value {
	enum vy_spec_kind kind;
	union {
		uint32_t u32;
		int32_t i32;
		float f32;
		bool b;
		enum vy_type dtype;
	} as;
};

static inline struct vy_spec_value vy_spec_u32(uint32_t v)
{
	return (struct vy_spec_value){.kind = VY_SPEC_U32, .as.u32 = v};
}

static inline struct vy_spec_value vy_spec_i32(int32_t v)
{
	return (struct vy_spec_value){.kind = VY_SPEC_I32, .as.i32 = v};
}

static inline struct vy_spec_value vy_spec_f32(float v)
{
	return (struct vy_spec_value){.kind = VY_SPEC_F32, .as.f32 = v};
}

static inline struct vy_spec_value vy_spec_bool(bool v)
{
	return (struct vy_spec_value){.kind = VY_SPEC_BOOL, .as.b = v};
}

static inline struct vy_spec_value vy_spec_dtype(enum vy_type t)
{
	return (struct vy_spec_value){.kind = VY_SPEC_DTYPE, .as.dtype = t};
}

/* Returned by vy_spec_dtype_tag for a value outside enum vy_type. */
#define VY_SPEC_DTYPE_TAG_UNKNOWN UINT32_C(0xFFFFFFFF)

/*
 * Stable numeric tag of an element type, the one the hashes below fold in: u32 0x01, i32 0x02,
 * bool 0x06, f32 0x0B (the numbering of the vyre wire format, which has more types than ours).
 * Every enum vy_type value has its own tag; anything else gives VY_SPEC_DTYPE_TAG_UNKNOWN.
 */
uint32_t vy_spec_dtype_tag(enum vy_type t);

/*
 * The value as a double, for override APIs that take every numeric constant through one
 * floating-point carrier (WebGPU pipeline overrides do). Exact for every kind: u32 and i32 fit
 * a double, f32 widens exactly, bool gives 0 or 1, a dtype gives its tag.
 */
double vy_spec_value_as_f64(const struct vy_spec_value *v);

/*
 * 64-bit cache contribution of one value: the kind in the low byte (u32 0, i32 1, f32 2, bool 3,
 * dtype 4) and the payload's 32 bits above it (i32 as its two's complement bits, f32 as its bit
 * pattern, bool as 0 or 1, dtype as its tag). Distinct values of one kind never collide, and no
 * two kinds share a low byte.
 */
uint64_t vy_spec_value_hash(const struct vy_spec_value *v);

/* Same kind and same payload; f32 compares bit patterns, so -0 differs from +0 and a NaN equals
 * a NaN of the same bits, which is what a cache key needs (equal values compile alike). */
bool vy_spec_value_eq(const struct vy_spec_value *a, const struct vy_spec_value *b);

struct vy_spec_entry {
	char *name; /* owned by the map */
	struct vy_spec_value value;
};

/*
 * Specialization values ordered by name (bytewise, as strcmp orders them), at most one per name.
 * Read `entries[0..len)` directly to iterate in that order; change the map only through the
 * functions below. A zeroed map is a valid empty map.
 */
struct vy_spec_map {
	struct vy_spec_entry *entries; /* owned, sorted by name */
	size_t len;
	size_t cap;
};

/* One (name, value) pair to build a map from; the map copies the name. */
struct vy_spec_pair {
	const char *name; /* borrowed */
	struct vy_spec_value value;
};

/* One numeric constant, as vy_spec_map_numeric_constants gives it. */
struct vy_spec_numeric {
	const char *name; /* borrowed from the map */
	double value;
};

/* Make `map` empty. */
void vy_spec_map_init(struct vy_spec_map *map);

/* Free the names and entries and leave the map empty. NULL and zeroed maps are accepted. */
void vy_spec_map_finish(struct vy_spec_map *map);

/*
 * Initialize `map` from `n` pairs (`pairs` may be NULL when n is 0), as if each were inserted in
 * turn: a name given twice keeps its last value. Names are copied.
 */
void vy_spec_map_init_pairs(struct vy_spec_map *map, const struct vy_spec_pair *pairs, size_t n);

/* Initialize `dst` as a deep copy of `src` (the pipeline cache keeps its own copy of a key). */
void vy_spec_map_init_copy(struct vy_spec_map *dst, const struct vy_spec_map *src);

/*
 * Insert (name, value), or replace the value when the name is present. `name` is a
 * NUL-terminated string that the map copies. Out of memory aborts with a message.
 */
void vy_spec_map_insert(struct vy_spec_map *map, const char *name, struct vy_spec_value value);

/* The value of `name`, or NULL. The pointer is valid until the map next changes. */
const struct vy_spec_value *vy_spec_map_get(const struct vy_spec_map *map, const char *name);

/*
 * The map's 64-bit cache hash: FNV-1a (64-bit offset basis and prime) over, for each entry in
 * name order, the name's bytes and then the 8 little-endian bytes of vy_spec_value_hash. The
 * empty map hashes to the offset basis.
 */
uint64_t vy_spec_map_hash(const struct vy_spec_map *map);

/* Same names with equal values (vy_spec_value_eq). Consistent with vy_spec_map_hash. */
bool vy_spec_map_eq(const struct vy_spec_map *a, const struct vy_spec_map *b);

/*
 * Write the map as numeric constants (vy_spec_value_as_f64) into out[0..map->len), in name
 * order. The names stay owned by the map.
 */
void vy_spec_map_numeric_constants(const struct vy_spec_map *map, struct vy_spec_numeric *out);

/* A backend pipeline identity extended with the specialization values (seed 002). */
struct vy_spec_cache_key {
	uint64_t shader_hash; /* hash of the shader or target module */
	uint64_t binding_sig; /* stable signature of the binding layout */
	uint32_t workgroup_size[3];
	uint64_t spec_hash; /* vy_spec_map_hash of the values */
};

/* Fold `specs` into a cache key. */
struct vy_spec_cache_key vy_spec_cache_key_make(uint64_t shader_hash, uint64_t binding_sig,
	const uint32_t workgroup_size[3], const struct vy_spec_map *specs);

/* Every field equal. */
bool vy_spec_cache_key_eq(const struct vy_spec_cache_key *a, const struct vy_spec_cache_key *b);

/* 64-bit hash of every field (FNV-1a over their little-endian bytes), for hash tables. */
uint64_t vy_spec_cache_key_hash(const struct vy_spec_cache_key *key);

/* A 128-bit shader-cache key: program identity above, specialization below. */
struct vy_spec_vsa_key {
	uint64_t hi; /* the low 64 bits of the program fingerprint */
	uint64_t lo; /* the specialization hash */
};

/*
 * The VSA specialization key of a program: `fingerprint` holds the program's fingerprint as
 * 32-bit words, least significant first; its first two words (missing ones read as zero) form
 * the high half, `spec_hash` is the low half. So two keys of one program differ only in the low
 * half, and every backend folds program identity the same way. `fingerprint` may be NULL when
 * n_words is 0.
 */
struct vy_spec_vsa_key vy_spec_vsa_key_make(
	const uint32_t *fingerprint, size_t n_words, uint64_t spec_hash);

/* Hex digits of an artifact key (a 256-bit digest), without the terminating NUL. */
#define VY_SPEC_ARTIFACT_KEY_HEX 64

/*
 * Deterministic key of an ahead-of-time specialization artifact, identified by (cache version,
 * specialization hash, backend fingerprint): 64 lowercase hex digits and a NUL written to `out`.
 * The digest is BLAKE2b-256 (libsodium's crypto_generichash) over a domain-separation prefix,
 * the version as 4 little-endian bytes, and each string preceded by a separator and its length
 * as 8 little-endian bytes, so ("ab", "cd") and ("abc", "d") give different keys.
 * Both strings are NUL-terminated and borrowed.
 */
void vy_spec_artifact_key(uint32_t cache_version, const char *spec_hash,
	const char *backend_fingerprint, char out[VY_SPEC_ARTIFACT_KEY_HEX + 1]);

#endif
