/*
 * Specialization values, maps and keys (planner/spec.h). Every test of seed 002 is here under its
 * own name; the seed's DataType has thirty variants and ours (enum vy_type) has four, so the
 * dtype tests run over u32, i32, f32 and bool. The tests after those pin the byte layouts the
 * caches persist.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "spec.h"

static const uint32_t wg64[3] = {64, 1, 1};
static const uint32_t wg1[3] = {1, 1, 1};

Test(spec, spec_map_ordering_is_commutative)
{
	struct vy_spec_map a;
	struct vy_spec_map b;
	vy_spec_map_init(&a);
	vy_spec_map_init(&b);
	vy_spec_map_insert(&a, "A", vy_spec_u32(1));
	vy_spec_map_insert(&a, "B", vy_spec_u32(2));
	vy_spec_map_insert(&b, "B", vy_spec_u32(2));
	vy_spec_map_insert(&b, "A", vy_spec_u32(1));

	cr_assert_eq(vy_spec_map_hash(&a), vy_spec_map_hash(&b));
	cr_assert(vy_spec_map_eq(&a, &b));
	cr_assert_str_eq(b.entries[0].name, "A");
	cr_assert_str_eq(b.entries[1].name, "B");
	vy_spec_map_finish(&a);
	vy_spec_map_finish(&b);
}

Test(spec, cache_key_differs_by_spec_hash)
{
	struct vy_spec_map a;
	struct vy_spec_map b;
	vy_spec_map_init_pairs(&a, &(struct vy_spec_pair){"K", vy_spec_u32(1)}, 1);
	vy_spec_map_init_pairs(&b, &(struct vy_spec_pair){"K", vy_spec_u32(2)}, 1);

	struct vy_spec_cache_key ka = vy_spec_cache_key_make(0xdead, 0xbeef, wg64, &a);
	struct vy_spec_cache_key kb = vy_spec_cache_key_make(0xdead, 0xbeef, wg64, &b);
	cr_assert_not(vy_spec_cache_key_eq(&ka, &kb));
	cr_assert_neq(ka.spec_hash, kb.spec_hash);
	vy_spec_map_finish(&a);
	vy_spec_map_finish(&b);
}

/*
 * The seed folds the fingerprint of a one-store program; here the fingerprint is computed by the
 * caller (the program id or the launch fingerprint), so the test gives its words directly.
 */
Test(spec, vsa_specialization_key_changes_only_low_half_for_spec_hash)
{
	static const uint32_t fingerprint[4] = {0x89abcdef, 0x01234567, 0xdeadbeef, 0xfeedface};
	struct vy_spec_vsa_key a = vy_spec_vsa_key_make(fingerprint, 4, 0x11);
	struct vy_spec_vsa_key b = vy_spec_vsa_key_make(fingerprint, 4, 0x22);

	cr_assert_eq(a.hi, b.hi, "program identity must not depend on specialization values");
	cr_assert_neq(a.lo, b.lo, "the key must include the specialization hash");
	cr_assert_eq(a.hi, UINT64_C(0x0123456789abcdef));
	cr_assert_eq(a.lo, 0x11);
}

Test(spec, vsa_key_reads_missing_fingerprint_words_as_zero)
{
	static const uint32_t one_word[1] = {0x5a5a5a5a};
	struct vy_spec_vsa_key k = vy_spec_vsa_key_make(one_word, 1, 7);
	cr_assert_eq(k.hi, UINT64_C(0x5a5a5a5a));
	k = vy_spec_vsa_key_make(NULL, 0, 7);
	cr_assert_eq(k.hi, 0);
	cr_assert_eq(k.lo, 7);
}

Test(spec, versioned_artifact_key_separates_variable_length_fields)
{
	char a[VY_SPEC_ARTIFACT_KEY_HEX + 1];
	char b[VY_SPEC_ARTIFACT_KEY_HEX + 1];
	vy_spec_artifact_key(1, "ab", "cd", a);
	vy_spec_artifact_key(1, "abc", "d", b);
	cr_assert_str_neq(a, b, "artifact keys must length-prefix their variable fields");
}

Test(spec, dtype_spec_value_round_trips)
{
	struct vy_spec_value v = vy_spec_dtype(VY_TYPE_F32);
	cr_assert_eq(v.kind, VY_SPEC_DTYPE);
	cr_assert_eq(v.as.dtype, VY_TYPE_F32);

	struct vy_spec_map m;
	vy_spec_map_init(&m);
	vy_spec_map_insert(&m, "dtype", v);
	const struct vy_spec_value *got = vy_spec_map_get(&m, "dtype");
	cr_assert_not_null(got);
	cr_assert_eq(got->kind, VY_SPEC_DTYPE);
	cr_assert_eq(got->as.dtype, VY_TYPE_F32);
	vy_spec_map_finish(&m);
}

/* The seed checks F32, U32 and I32; bool is our fourth type and joins them. */
Test(spec, dtype_spec_distinct_dtypes_hash_distinct)
{
	for (int i = 0; i < VY_TYPE_COUNT; i++) {
		for (int j = 0; j < VY_TYPE_COUNT; j++) {
			struct vy_spec_value a = vy_spec_dtype((enum vy_type)i);
			struct vy_spec_value b = vy_spec_dtype((enum vy_type)j);
			if (i != j) {
				cr_assert_neq(vy_spec_value_hash(&a), vy_spec_value_hash(&b),
					"%s and %s", vy_type_name(a.as.dtype),
					vy_type_name(b.as.dtype));
			}
		}
	}
}

Test(spec, dtype_spec_equal_dtypes_hash_equal)
{
	struct vy_spec_value a = vy_spec_dtype(VY_TYPE_F32);
	struct vy_spec_value b = vy_spec_dtype(VY_TYPE_F32);
	cr_assert_eq(vy_spec_value_hash(&a), vy_spec_value_hash(&b));
	cr_assert(vy_spec_value_eq(&a, &b));
}

/*
 * The dtype kind carries 4 in the low byte; the zero value of every other kind carries its own
 * kind there, so none of them can equal a dtype hash.
 */
Test(spec, dtype_spec_does_not_collide_with_other_variants)
{
	struct vy_spec_value dtype = vy_spec_dtype(VY_TYPE_U32);
	struct vy_spec_value others[] = {
		vy_spec_u32(0),
		vy_spec_i32(0),
		vy_spec_f32(0.0f),
		vy_spec_bool(false),
	};
	uint64_t dtype_hash = vy_spec_value_hash(&dtype);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		cr_assert_neq(
			dtype_hash, vy_spec_value_hash(&others[i]), "kind %d", others[i].kind);
	}
}

Test(spec, dtype_spec_separates_cache_key_in_specmap)
{
	struct vy_spec_map a;
	struct vy_spec_map b;
	vy_spec_map_init_pairs(&a, &(struct vy_spec_pair){"dtype", vy_spec_dtype(VY_TYPE_F32)}, 1);
	vy_spec_map_init_pairs(&b, &(struct vy_spec_pair){"dtype", vy_spec_dtype(VY_TYPE_U32)}, 1);

	cr_assert_neq(
		vy_spec_map_hash(&a), vy_spec_map_hash(&b), "dtype-keyed maps must hash apart");
	struct vy_spec_cache_key ka = vy_spec_cache_key_make(0, 0, wg1, &a);
	struct vy_spec_cache_key kb = vy_spec_cache_key_make(0, 0, wg1, &b);
	cr_assert_not(vy_spec_cache_key_eq(&ka, &kb));
	vy_spec_map_finish(&a);
	vy_spec_map_finish(&b);
}

/* The seed lists its thirty DataType variants; ours are the four of enum vy_type. */
Test(spec, dtype_tag_covers_every_data_type)
{
	uint32_t seen[VY_TYPE_COUNT];
	for (int i = 0; i < VY_TYPE_COUNT; i++) {
		uint32_t tag = vy_spec_dtype_tag((enum vy_type)i);
		cr_assert_neq(tag, VY_SPEC_DTYPE_TAG_UNKNOWN, "no tag for %s",
			vy_type_name((enum vy_type)i));
		for (int j = 0; j < i; j++) {
			cr_assert_neq(seen[j], tag, "%s and %s share tag %u",
				vy_type_name((enum vy_type)j), vy_type_name((enum vy_type)i), tag);
		}
		seen[i] = tag;
	}
	cr_assert_eq(vy_spec_dtype_tag(VY_TYPE_NONE), VY_SPEC_DTYPE_TAG_UNKNOWN);
}

Test(spec, dtype_tags_follow_the_vyre_wire_numbering)
{
	cr_assert_eq(vy_spec_dtype_tag(VY_TYPE_U32), 0x01);
	cr_assert_eq(vy_spec_dtype_tag(VY_TYPE_I32), 0x02);
	cr_assert_eq(vy_spec_dtype_tag(VY_TYPE_BOOL), 0x06);
	cr_assert_eq(vy_spec_dtype_tag(VY_TYPE_F32), 0x0B);
}

Test(spec, value_hash_puts_the_kind_low_and_the_bits_above)
{
	struct vy_spec_value u = vy_spec_u32(0xFFFFFFFF);
	struct vy_spec_value i = vy_spec_i32(-1);
	struct vy_spec_value f = vy_spec_f32(1.0f);
	struct vy_spec_value t = vy_spec_bool(true);
	struct vy_spec_value d = vy_spec_dtype(VY_TYPE_F32);
	cr_assert_eq(vy_spec_value_hash(&u), UINT64_C(0xFFFFFFFF00));
	cr_assert_eq(vy_spec_value_hash(&i), UINT64_C(0xFFFFFFFF01));
	cr_assert_eq(vy_spec_value_hash(&f), UINT64_C(0x3F80000002));
	cr_assert_eq(vy_spec_value_hash(&t), UINT64_C(0x103));
	cr_assert_eq(vy_spec_value_hash(&d), UINT64_C(0xB04));
}

/* Reference values computed apart from this code with the seed's algorithm. */
Test(spec, map_hash_is_the_seeds_fnv1a)
{
	struct vy_spec_map m;
	vy_spec_map_init(&m);
	cr_assert_eq(vy_spec_map_hash(&m), UINT64_C(0xcbf29ce484222325));

	const struct vy_spec_pair ab[] = {{"B", vy_spec_u32(2)}, {"A", vy_spec_u32(1)}};
	vy_spec_map_init_pairs(&m, ab, 2);
	cr_assert_eq(vy_spec_map_hash(&m), UINT64_C(0x7fdf168a143cc515));
	vy_spec_map_finish(&m);

	const struct vy_spec_pair mixed[] = {
		{"tile", vy_spec_u32(64)},
		{"alpha", vy_spec_f32(1.5f)},
		{"signed", vy_spec_i32(-3)},
		{"fast", vy_spec_bool(true)},
		{"dtype", vy_spec_dtype(VY_TYPE_F32)},
	};
	vy_spec_map_init_pairs(&m, mixed, 5);
	cr_assert_eq(vy_spec_map_hash(&m), UINT64_C(0x8cf2265ea41d65ca));
	vy_spec_map_finish(&m);
}

Test(spec, map_orders_names_bytewise)
{
	const struct vy_spec_pair pairs[] = {
		{"b", vy_spec_u32(0)},
		{"ab", vy_spec_u32(0)},
		{"B", vy_spec_u32(0)},
		{"a", vy_spec_u32(0)},
		{"_", vy_spec_u32(0)},
	};
	static const char *const order[] = {"B", "_", "a", "ab", "b"};
	struct vy_spec_map m;
	vy_spec_map_init_pairs(&m, pairs, 5);
	cr_assert_eq(m.len, 5);
	for (size_t i = 0; i < 5; i++) {
		cr_assert_str_eq(m.entries[i].name, order[i]);
	}
	vy_spec_map_finish(&m);
}

Test(spec, insert_replaces_the_value_of_a_present_name)
{
	const struct vy_spec_pair pairs[] = {
		{"K", vy_spec_u32(1)},
		{"L", vy_spec_u32(5)},
		{"K", vy_spec_i32(-2)},
	};
	struct vy_spec_map m;
	vy_spec_map_init_pairs(&m, pairs, 3);
	cr_assert_eq(m.len, 2);
	const struct vy_spec_value *k = vy_spec_map_get(&m, "K");
	cr_assert_not_null(k);
	cr_assert_eq(k->kind, VY_SPEC_I32);
	cr_assert_eq(k->as.i32, -2);
	cr_assert_null(vy_spec_map_get(&m, "M"));

	struct vy_spec_map direct;
	vy_spec_map_init_pairs(&direct, &pairs[1], 2);
	cr_assert(vy_spec_map_eq(&m, &direct));
	cr_assert_eq(vy_spec_map_hash(&m), vy_spec_map_hash(&direct));
	vy_spec_map_finish(&m);
	vy_spec_map_finish(&direct);
}

Test(spec, map_owns_its_names)
{
	char name[] = "tile";
	struct vy_spec_map m;
	vy_spec_map_init(&m);
	vy_spec_map_insert(&m, name, vy_spec_u32(8));
	name[0] = 'm';
	cr_assert_str_eq(m.entries[0].name, "tile");
	cr_assert_not_null(vy_spec_map_get(&m, "tile"));
	vy_spec_map_finish(&m);
	cr_assert_eq(m.len, 0);
	cr_assert_null(m.entries);
	vy_spec_map_finish(&m);
	vy_spec_map_finish(NULL);
}

Test(spec, map_grows_past_its_first_allocation)
{
	struct vy_spec_map m;
	vy_spec_map_init(&m);
	char name[8];
	for (uint32_t i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "k%03u", 99 - i);
		vy_spec_map_insert(&m, name, vy_spec_u32(99 - i));
	}
	cr_assert_eq(m.len, 100);
	for (uint32_t i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "k%03u", i);
		cr_assert_str_eq(m.entries[i].name, name);
		cr_assert_eq(m.entries[i].value.as.u32, i);
	}
	vy_spec_map_finish(&m);
}

Test(spec, copy_is_deep_and_equal)
{
	const struct vy_spec_pair pairs[] = {{"x", vy_spec_f32(2.5f)}, {"y", vy_spec_bool(true)}};
	struct vy_spec_map src;
	struct vy_spec_map dst;
	vy_spec_map_init_pairs(&src, pairs, 2);
	vy_spec_map_init_copy(&dst, &src);
	cr_assert(vy_spec_map_eq(&src, &dst));
	cr_assert_eq(vy_spec_map_hash(&src), vy_spec_map_hash(&dst));
	cr_assert_neq(src.entries[0].name, dst.entries[0].name);
	vy_spec_map_finish(&src);
	cr_assert_str_eq(dst.entries[0].name, "x");
	vy_spec_map_finish(&dst);

	struct vy_spec_map empty;
	vy_spec_map_init(&empty);
	vy_spec_map_init_copy(&dst, &empty);
	cr_assert_eq(dst.len, 0);
	cr_assert(vy_spec_map_eq(&dst, &empty));
	vy_spec_map_finish(&dst);
}

Test(spec, map_equality_tells_apart_what_compiles_apart)
{
	struct vy_spec_map a;
	struct vy_spec_map b;

	/* Same value, different names. */
	vy_spec_map_init_pairs(&a, &(struct vy_spec_pair){"x", vy_spec_u32(1)}, 1);
	vy_spec_map_init_pairs(&b, &(struct vy_spec_pair){"y", vy_spec_u32(1)}, 1);
	cr_assert_not(vy_spec_map_eq(&a, &b));
	vy_spec_map_finish(&b);

	/* Same bits, different kinds. */
	vy_spec_map_init_pairs(&b, &(struct vy_spec_pair){"x", vy_spec_i32(1)}, 1);
	cr_assert_not(vy_spec_map_eq(&a, &b));
	vy_spec_map_finish(&b);

	/* A prefix of the entries. */
	const struct vy_spec_pair two[] = {{"x", vy_spec_u32(1)}, {"z", vy_spec_u32(1)}};
	vy_spec_map_init_pairs(&b, two, 2);
	cr_assert_not(vy_spec_map_eq(&a, &b));
	vy_spec_map_finish(&b);
	vy_spec_map_finish(&a);

	/* f32 values compare by bits: -0 and +0 differ, a NaN equals itself. */
	struct vy_spec_value pz = vy_spec_f32(0.0f);
	struct vy_spec_value nz = vy_spec_f32(-0.0f);
	struct vy_spec_value nan = vy_spec_f32(NAN);
	cr_assert_not(vy_spec_value_eq(&pz, &nz));
	cr_assert_neq(vy_spec_value_hash(&pz), vy_spec_value_hash(&nz));
	cr_assert(vy_spec_value_eq(&nan, &nan));
}

Test(spec, numeric_constants_convert_every_kind_exactly)
{
	const struct vy_spec_pair pairs[] = {
		{"u", vy_spec_u32(UINT32_MAX)},
		{"i", vy_spec_i32(INT32_MIN)},
		{"f", vy_spec_f32(0.1f)},
		{"t", vy_spec_bool(true)},
		{"d", vy_spec_dtype(VY_TYPE_F32)},
		{"b", vy_spec_bool(false)},
	};
	struct vy_spec_map m;
	vy_spec_map_init_pairs(&m, pairs, 6);
	struct vy_spec_numeric out[6];
	vy_spec_map_numeric_constants(&m, out);

	static const char *const names[] = {"b", "d", "f", "i", "t", "u"};
	const double values[] = {0.0, 11.0, (double)0.1f, -2147483648.0, 1.0, 4294967295.0};
	for (size_t k = 0; k < 6; k++) {
		cr_assert_str_eq(out[k].name, names[k]);
		cr_assert_eq(out[k].value, values[k], "%s: %.17g", names[k], out[k].value);
	}
	cr_assert_eq(out[0].name, m.entries[0].name, "names are borrowed from the map");
	vy_spec_map_finish(&m);
}

Test(spec, cache_key_keeps_its_fields_and_hashes_by_all_of_them)
{
	struct vy_spec_map m;
	vy_spec_map_init_pairs(&m, &(struct vy_spec_pair){"K", vy_spec_u32(1)}, 1);
	struct vy_spec_cache_key base = vy_spec_cache_key_make(0xdead, 0xbeef, wg64, &m);
	cr_assert_eq(base.shader_hash, 0xdead);
	cr_assert_eq(base.binding_sig, 0xbeef);
	cr_assert_eq(base.workgroup_size[0], 64);
	cr_assert_eq(base.spec_hash, vy_spec_map_hash(&m));

	struct vy_spec_cache_key same = vy_spec_cache_key_make(0xdead, 0xbeef, wg64, &m);
	cr_assert(vy_spec_cache_key_eq(&base, &same));
	cr_assert_eq(vy_spec_cache_key_hash(&base), vy_spec_cache_key_hash(&same));

	struct vy_spec_cache_key changed[4] = {base, base, base, base};
	changed[0].shader_hash ^= 1;
	changed[1].binding_sig ^= 1;
	changed[2].workgroup_size[2] = 2;
	changed[3].spec_hash ^= 1;
	for (int i = 0; i < 4; i++) {
		cr_assert_not(vy_spec_cache_key_eq(&base, &changed[i]), "field %d", i);
		cr_assert_neq(vy_spec_cache_key_hash(&base), vy_spec_cache_key_hash(&changed[i]),
			"field %d", i);
	}
	vy_spec_map_finish(&m);
}

static void append(unsigned char *buf, size_t *len, const void *data, size_t n)
{
	memcpy(buf + *len, data, n);
	*len += n;
}

static void append_le(unsigned char *buf, size_t *len, uint64_t v, size_t bytes)
{
	for (size_t i = 0; i < bytes; i++) {
		buf[(*len)++] = (unsigned char)(v >> (8 * i));
	}
}

/* The artifact key is a persistent name: rebuild the documented byte layout and hash it here. */
Test(spec, artifact_key_is_blake2b_of_the_documented_layout)
{
	const char *spec = "00ff00ff00ff00ff";
	const char *backend = "vulkan:10de:2335:580.159";
	unsigned char msg[256];
	size_t len = 0;
	static const char domain[] = "vyred-specialization-artifact-key-v1/blake2b-256";
	append(msg, &len, domain, sizeof(domain) - 1);
	append(msg, &len, "\0version\0", 9);
	append_le(msg, &len, 7, 4);
	append(msg, &len, "\0spec\0", 6);
	append_le(msg, &len, strlen(spec), 8);
	append(msg, &len, spec, strlen(spec));
	append(msg, &len, "\0backend\0", 9);
	append_le(msg, &len, strlen(backend), 8);
	append(msg, &len, backend, strlen(backend));

	unsigned char digest[32];
	cr_assert_eq(crypto_generichash(digest, sizeof(digest), msg, len, NULL, 0), 0);
	char expected[VY_SPEC_ARTIFACT_KEY_HEX + 1];
	sodium_bin2hex(expected, sizeof(expected), digest, sizeof(digest));

	char key[VY_SPEC_ARTIFACT_KEY_HEX + 1];
	vy_spec_artifact_key(7, spec, backend, key);
	cr_assert_str_eq(key, expected);
	cr_assert_eq(strlen(key), VY_SPEC_ARTIFACT_KEY_HEX);
	cr_assert_eq(strspn(key, "0123456789abcdef"), VY_SPEC_ARTIFACT_KEY_HEX);
}

Test(spec, artifact_key_depends_on_every_field)
{
	char base[VY_SPEC_ARTIFACT_KEY_HEX + 1];
	char again[VY_SPEC_ARTIFACT_KEY_HEX + 1];
	char other[VY_SPEC_ARTIFACT_KEY_HEX + 1];
	vy_spec_artifact_key(1, "ab", "cd", base);
	vy_spec_artifact_key(1, "ab", "cd", again);
	cr_assert_str_eq(base, again);
	vy_spec_artifact_key(2, "ab", "cd", other);
	cr_assert_str_neq(base, other);
	vy_spec_artifact_key(1, "ab", "ce", other);
	cr_assert_str_neq(base, other);
	vy_spec_artifact_key(1, "", "abcd", other);
	cr_assert_str_neq(base, other);
}
