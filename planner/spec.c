/*
 * Specialization values, the name-ordered map of them and the keys the pipeline and artifact
 * caches are built on (seed 002). The map is a sorted array: it holds a handful of entries, is
 * built once per compile and is hashed and compared far more often than it changes, so ordered
 * storage makes hashing and comparison a single linear pass.
 */
#include "spec.h"

#include <assert.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

/*
 * Cryptographic hash of the artifact keys: BLAKE2b-256 through libsodium's crypto_generichash.
 * The seed uses BLAKE3, which Debian 12 does not package; the label names the function so a key
 * of one can never be mistaken for the other.
 */
static const char artifact_domain[] = "vyred-specialization-artifact-key-v1/blake2b-256";

_Static_assert(VY_SPEC_ARTIFACT_KEY_HEX == 2 * 32, "artifact keys are 256-bit digests");

uint32_t vy_spec_dtype_tag(enum vy_type t)
{
	switch (t) {
	case VY_TYPE_U32:
		return 0x01;
	case VY_TYPE_I32:
		return 0x02;
	case VY_TYPE_BOOL:
		return 0x06;
	case VY_TYPE_F32:
		return 0x0B;
	case VY_TYPE_COUNT:
		break;
	}
	return VY_SPEC_DTYPE_TAG_UNKNOWN;
}

static uint32_t f32_bits(float f)
{
	uint32_t bits;
	memcpy(&bits, &f, sizeof(bits));
	return bits;
}

double vy_spec_value_as_f64(const struct vy_spec_value *v)
{
	switch (v->kind) {
	case VY_SPEC_U32:
		return (double)v->as.u32;
	case VY_SPEC_I32:
		return (double)v->as.i32;
	case VY_SPEC_F32:
		return (double)v->as.f32;
	case VY_SPEC_BOOL:
		return v->as.b ? 1.0 : 0.0;
	case VY_SPEC_DTYPE:
		return (double)vy_spec_dtype_tag(v->as.dtype);
	}
	assert(!"spec value of unknown kind");
	return 0.0;
}

uint64_t vy_spec_value_hash(const struct vy_spec_value *v)
{
	switch (v->kind) {
	case VY_SPEC_U32:
		return (uint64_t)v->as.u32 << 8;
	case VY_SPEC_I32:
		return 1u | ((uint64_t)(uint32_t)v->as.i32 << 8);
	case VY_SPEC_F32:
		return 2u | ((uint64_t)f32_bits(v->as.f32) << 8);
	case VY_SPEC_BOOL:
		return 3u | ((uint64_t)(v->as.b ? 1u : 0u) << 8);
	case VY_SPEC_DTYPE:
		return 4u | ((uint64_t)vy_spec_dtype_tag(v->as.dtype) << 8);
	}
	assert(!"spec value of unknown kind");
	return 0;
}

bool vy_spec_value_eq(const struct vy_spec_value *a, const struct vy_spec_value *b)
{
	if (a->kind != b->kind) {
		return false;
	}
	switch (a->kind) {
	case VY_SPEC_U32:
		return a->as.u32 == b->as.u32;
	case VY_SPEC_I32:
		return a->as.i32 == b->as.i32;
	case VY_SPEC_F32:
		return f32_bits(a->as.f32) == f32_bits(b->as.f32);
	case VY_SPEC_BOOL:
		return a->as.b == b->as.b;
	case VY_SPEC_DTYPE:
		return a->as.dtype == b->as.dtype;
	}
	assert(!"spec value of unknown kind");
	return false;
}

static void *xrealloc(void *p, size_t n, size_t size)
{
	if (n > SIZE_MAX / size) {
		fprintf(stderr, "vyred: spec map of %zu entries overflows\n", n);
		abort();
	}
	void *q = realloc(p, n * size);
	if (!q) {
		fprintf(stderr, "vyred: out of memory growing a spec map to %zu entries\n", n);
		abort();
	}
	return q;
}

static char *xstrdup(const char *s)
{
	size_t size = strlen(s) + 1;
	char *copy = malloc(size);
	if (!copy) {
		fprintf(stderr, "vyred: out of memory copying a spec name\n");
		abort();
	}
	return memcpy(copy, s, size);
}

void vy_spec_map_init(struct vy_spec_map *map)
{
	memset(map, 0, sizeof(*map));
}

void vy_spec_map_finish(struct vy_spec_map *map)
{
	if (!map) {
		return;
	}
	for (size_t i = 0; i < map->len; i++) {
		free(map->entries[i].name);
	}
	free(map->entries);
	memset(map, 0, sizeof(*map));
}

void vy_spec_map_init_pairs(struct vy_spec_map *map, const struct vy_spec_pair *pairs, size_t n)
{
	vy_spec_map_init(map);
	for (size_t i = 0; i < n; i++) {
		vy_spec_map_insert(map, pairs[i].name, pairs[i].value);
	}
}

void vy_spec_map_init_copy(struct vy_spec_map *dst, const struct vy_spec_map *src)
{
	vy_spec_map_init(dst);
	if (src->len == 0) {
		return;
	}
	dst->entries = xrealloc(NULL, src->len, sizeof(*dst->entries));
	dst->cap = src->len;
	for (size_t i = 0; i < src->len; i++) {
		dst->entries[i].name = xstrdup(src->entries[i].name);
		dst->entries[i].value = src->entries[i].value;
	}
	dst->len = src->len;
}

/* Index of `name`, or of the slot it would be inserted at; *found says which. */
static size_t search(const struct vy_spec_map *map, const char *name, bool *found)
{
	size_t lo = 0;
	size_t hi = map->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(map->entries[mid].name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	*found = false;
	return lo;
}

void vy_spec_map_insert(struct vy_spec_map *map, const char *name, struct vy_spec_value value)
{
	assert(name);
	bool found;
	size_t at = search(map, name, &found);
	if (found) {
		map->entries[at].value = value;
		return;
	}
	if (map->len == map->cap) {
		size_t cap = map->cap ? map->cap * 2 : 4;
		map->entries = xrealloc(map->entries, cap, sizeof(*map->entries));
		map->cap = cap;
	}
	memmove(&map->entries[at + 1], &map->entries[at], (map->len - at) * sizeof(*map->entries));
	map->entries[at].name = xstrdup(name);
	map->entries[at].value = value;
	map->len++;
}

const struct vy_spec_value *vy_spec_map_get(const struct vy_spec_map *map, const char *name)
{
	bool found;
	size_t at = search(map, name, &found);
	return found ? &map->entries[at].value : NULL;
}

static uint64_t fnv_bytes(uint64_t hash, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		hash ^= p[i];
		hash *= FNV_PRIME;
	}
	return hash;
}

/* The integer's bytes least significant first, whatever the host's byte order. */
static uint64_t fnv_u64le(uint64_t hash, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		hash ^= (v >> (8 * i)) & 0xFF;
		hash *= FNV_PRIME;
	}
	return hash;
}

uint64_t vy_spec_map_hash(const struct vy_spec_map *map)
{
	uint64_t hash = FNV_OFFSET;
	for (size_t i = 0; i < map->len; i++) {
		const struct vy_spec_entry *e = &map->entries[i];
		hash = fnv_bytes(hash, e->name, strlen(e->name));
		hash = fnv_u64le(hash, vy_spec_value_hash(&e->value));
	}
	return hash;
}

bool vy_spec_map_eq(const struct vy_spec_map *a, const struct vy_spec_map *b)
{
	if (a->len != b->len) {
		return false;
	}
	for (size_t i = 0; i < a->len; i++) {
		if (strcmp(a->entries[i].name, b->entries[i].name) != 0 ||
			!vy_spec_value_eq(&a->entries[i].value, &b->entries[i].value)) {
			return false;
		}
	}
	return true;
}

void vy_spec_map_numeric_constants(const struct vy_spec_map *map, struct vy_spec_numeric *out)
{
	for (size_t i = 0; i < map->len; i++) {
		out[i].name = map->entries[i].name;
		out[i].value = vy_spec_value_as_f64(&map->entries[i].value);
	}
}

struct vy_spec_cache_key vy_spec_cache_key_make(uint64_t shader_hash, uint64_t binding_sig,
	const uint32_t workgroup_size[3], const struct vy_spec_map *specs)
{
	return (struct vy_spec_cache_key){
		.shader_hash = shader_hash,
		.binding_sig = binding_sig,
		.workgroup_size = {workgroup_size[0], workgroup_size[1], workgroup_size[2]},
		.spec_hash = vy_spec_map_hash(specs),
	};
}

bool vy_spec_cache_key_eq(const struct vy_spec_cache_key *a, const struct vy_spec_cache_key *b)
{
	return a->shader_hash == b->shader_hash && a->binding_sig == b->binding_sig &&
	       a->workgroup_size[0] == b->workgroup_size[0] &&
	       a->workgroup_size[1] == b->workgroup_size[1] &&
	       a->workgroup_size[2] == b->workgroup_size[2] && a->spec_hash == b->spec_hash;
}

uint64_t vy_spec_cache_key_hash(const struct vy_spec_cache_key *key)
{
	uint64_t hash = FNV_OFFSET;
	hash = fnv_u64le(hash, key->shader_hash);
	hash = fnv_u64le(hash, key->binding_sig);
	for (int i = 0; i < 3; i++) {
		hash = fnv_u64le(hash, key->workgroup_size[i]);
	}
	return fnv_u64le(hash, key->spec_hash);
}

struct vy_spec_vsa_key vy_spec_vsa_key_make(
	const uint32_t *fingerprint, size_t n_words, uint64_t spec_hash)
{
	uint64_t hi = 0;
	for (size_t i = 0; i < n_words && i < 2; i++) {
		hi |= (uint64_t)fingerprint[i] << (32 * i);
	}
	return (struct vy_spec_vsa_key){.hi = hi, .lo = spec_hash};
}

static void hash_le(crypto_generichash_state *st, uint64_t v, size_t bytes)
{
	unsigned char buf[8];
	for (size_t i = 0; i < bytes; i++) {
		buf[i] = (unsigned char)(v >> (8 * i));
	}
	crypto_generichash_update(st, buf, bytes);
}

/* A separator, then the string's length as 8 little-endian bytes, then its bytes. */
static void hash_field(
	crypto_generichash_state *st, const char *label, size_t label_len, const char *s)
{
	size_t len = strlen(s);
	crypto_generichash_update(st, (const unsigned char *)label, label_len);
	hash_le(st, len, 8);
	crypto_generichash_update(st, (const unsigned char *)s, len);
}

/*
 * sodium_init is not called: it only picks faster implementations (with the same results) and
 * seeds libsodium's random generator, which a pure function has no business touching.
 */
void vy_spec_artifact_key(uint32_t cache_version, const char *spec_hash,
	const char *backend_fingerprint, char out[VY_SPEC_ARTIFACT_KEY_HEX + 1])
{
	static const char version_label[] = "\0version\0";
	static const char spec_label[] = "\0spec\0";
	static const char backend_label[] = "\0backend\0";
	unsigned char digest[VY_SPEC_ARTIFACT_KEY_HEX / 2];
	crypto_generichash_state st;

	int rc = crypto_generichash_init(&st, NULL, 0, sizeof(digest));
	assert(rc == 0);
	crypto_generichash_update(
		&st, (const unsigned char *)artifact_domain, sizeof(artifact_domain) - 1);
	crypto_generichash_update(
		&st, (const unsigned char *)version_label, sizeof(version_label) - 1);
	hash_le(&st, cache_version, 4);
	hash_field(&st, spec_label, sizeof(spec_label) - 1, spec_hash);
	hash_field(&st, backend_label, sizeof(backend_label) - 1, backend_fingerprint);
	rc = crypto_generichash_final(&st, digest, sizeof(digest));
	assert(rc == 0);
	(void)rc;
	sodium_bin2hex(out, VY_SPEC_ARTIFACT_KEY_HEX + 1, digest, sizeof(digest));
}
