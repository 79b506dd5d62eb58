/*
 * Replies and their value trees. A reply frame is decoded once, with the protocol's bounded
 * msgpack reader, into a tree of nodes in one arena: strings are copied with a terminating NUL so
 * callers can print them, binaries are copied once into one block aligned to 64 bytes (in the
 * frame they sit wherever the msgpack headers leave them, and callers read them as floats), and
 * each node remembers its msgpack bytes so any subtree can be printed as JSON. The
 * nesting of a reply is bounded, so a damaged or hostile frame cannot exhaust the stack.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "internal.h"
#include "json.h"
#include "mp.h"

/* Replies nest a few levels (stats is the deepest); anything far deeper is not a reply. */
#define MAX_DEPTH 64

/* Bins are handed out aligned for any vector type, so callers can read floats in place. */
#define BIN_ALIGN 64

/* The decoding of one reply: its arena and the bin nodes met so far. */
struct parse {
	struct vy_arena *arena;
	struct vy_value **bins; /* heap array */
	size_t n_bins;
	size_t cap_bins;
};

static bool read_value(struct parse *ps, struct vy_mp_reader *r, struct vy_value *v, int depth);

static const char *key_text(struct vy_arena *a, const struct vy_value *k)
{
	char num[32];
	switch (k->kind) {
	case VY_KIND_STR:
		return k->str;
	case VY_KIND_UINT:
		snprintf(num, sizeof(num), "%" PRIu64, k->u);
		return vy_arena_strdup(a, num);
	case VY_KIND_INT:
		snprintf(num, sizeof(num), "%" PRId64, k->i);
		return vy_arena_strdup(a, num);
	default:
		return "";
	}
}

static bool read_container(
	struct parse *ps, struct vy_mp_reader *r, struct vy_value *v, bool map, int depth)
{
	struct vy_arena *a = ps->arena;
	if (depth >= MAX_DEPTH) {
		return false;
	}
	/* The reader checked the count against the bytes left, so these sizes are bounded. */
	v->items = vy_arena_calloc(a, v->len ? v->len : 1, sizeof(*v->items));
	if (map) {
		v->keys = vy_arena_calloc(a, v->len ? v->len : 1, sizeof(*v->keys));
	}
	for (uint32_t i = 0; i < v->len; i++) {
		if (map) {
			struct vy_value k = {0};
			if (!read_value(ps, r, &k, depth + 1)) {
				return false;
			}
			v->keys[i] = key_text(a, &k);
		}
		if (!read_value(ps, r, &v->items[i], depth + 1)) {
			return false;
		}
	}
	return true;
}

static bool note_bin(struct parse *ps, struct vy_value *v)
{
	if (ps->n_bins == ps->cap_bins) {
		size_t cap = ps->cap_bins ? ps->cap_bins * 2 : 8;
		struct vy_value **grown = realloc(ps->bins, cap * sizeof(*grown));
		if (!grown) {
			return false;
		}
		ps->bins = grown;
		ps->cap_bins = cap;
	}
	ps->bins[ps->n_bins++] = v;
	return true;
}

static bool read_value(struct parse *ps, struct vy_mp_reader *r, struct vy_value *v, int depth)
{
	struct vy_arena *a = ps->arena;
	const uint8_t *start = r->p;
	struct vy_mp_obj o;
	if (vy_mp_read(r, &o) != VY_MP_OK) {
		return false;
	}
	memset(v, 0, sizeof(*v));
	v->len = o.len;
	bool ok = true;
	switch (o.type) {
	case VY_MP_NIL:
		v->kind = VY_KIND_NIL;
		break;
	case VY_MP_BOOL:
		v->kind = VY_KIND_BOOL;
		v->b = o.b;
		break;
	case VY_MP_UINT:
		v->kind = VY_KIND_UINT;
		v->u = o.u;
		break;
	case VY_MP_INT:
		v->kind = VY_KIND_INT;
		v->i = o.i;
		break;
	case VY_MP_FLOAT:
		v->kind = VY_KIND_FLOAT;
		v->f = o.is_f32 ? (double)o.f32 : o.f;
		break;
	case VY_MP_STR:
		v->kind = VY_KIND_STR;
		v->str = vy_arena_strndup(a, (const char *)o.data, o.len);
		break;
	case VY_MP_BIN:
		v->kind = VY_KIND_BIN;
		v->bin = o.data;
		ok = note_bin(ps, v);
		break;
	case VY_MP_ARRAY:
		v->kind = VY_KIND_ARRAY;
		ok = read_container(ps, r, v, false, depth);
		break;
	case VY_MP_MAP:
		v->kind = VY_KIND_MAP;
		ok = read_container(ps, r, v, true, depth);
		break;
	case VY_MP_EXT:
		ok = false;
		break;
	}
	v->raw = start;
	v->raw_len = (size_t)(r->p - start);
	return ok;
}

/* Move the response's "id" and "ok" out of the root map into the reply. */
static bool take_envelope(struct vy_reply *rep)
{
	struct vy_value *root = &rep->root;
	bool has_id = false;
	bool has_ok = false;
	uint32_t kept = 0;
	for (uint32_t i = 0; i < root->len; i++) {
		const struct vy_value *v = &root->items[i];
		if (strcmp(root->keys[i], "id") == 0 && v->kind == VY_KIND_UINT) {
			rep->id = v->u;
			has_id = true;
			continue;
		}
		if (strcmp(root->keys[i], "ok") == 0 && v->kind == VY_KIND_BOOL) {
			rep->ok = v->b;
			has_ok = true;
			continue;
		}
		root->keys[kept] = root->keys[i];
		root->items[kept] = root->items[i];
		kept++;
	}
	root->len = kept;
	root->root = true;
	return has_id && has_ok;
}

/* Copy every bin of the frame into one aligned block owned by the reply. */
static bool align_bins(struct vy_reply *rep, struct parse *ps)
{
	size_t total = 0;
	for (size_t i = 0; i < ps->n_bins; i++) {
		total += ((size_t)ps->bins[i]->len + BIN_ALIGN - 1) & ~(size_t)(BIN_ALIGN - 1);
	}
	if (total == 0) {
		return true;
	}
	rep->bins = aligned_alloc(BIN_ALIGN, total);
	if (!rep->bins) {
		return false;
	}
	uint8_t *at = rep->bins;
	for (size_t i = 0; i < ps->n_bins; i++) {
		struct vy_value *v = ps->bins[i];
		memcpy(at, v->bin, v->len);
		v->bin = at;
		at += ((size_t)v->len + BIN_ALIGN - 1) & ~(size_t)(BIN_ALIGN - 1);
	}
	return true;
}

struct vy_reply *vy__reply_decode(uint8_t *frame, size_t len)
{
	struct vy_reply *rep = calloc(1, sizeof(*rep));
	if (!rep) {
		free(frame);
		return NULL;
	}
	rep->frame = frame;
	rep->len = len;
	rep->arena = vy_arena_create();
	struct vy_mp_reader r;
	vy_mp_reader_init(&r, frame, len);
	struct parse ps = {.arena = rep->arena};
	/* Bins first: take_envelope moves the root's nodes, and ps.bins points at them. */
	bool ok = read_value(&ps, &r, &rep->root, 0) && r.p == r.end &&
		  rep->root.kind == VY_KIND_MAP && align_bins(rep, &ps) && take_envelope(rep);
	free(ps.bins);
	if (!ok) {
		vy_reply_destroy(rep);
		return NULL;
	}
	return rep;
}

void vy_reply_destroy(struct vy_reply *reply)
{
	if (!reply) {
		return;
	}
	vy_arena_destroy(reply->arena);
	free(reply->bins);
	free(reply->frame);
	free(reply);
}

uint64_t vy_reply_id(const struct vy_reply *reply)
{
	return reply ? reply->id : 0;
}

const struct vy_value *vy_reply_value(const struct vy_reply *reply)
{
	return reply ? &reply->root : NULL;
}

const struct vy_value *vy_reply_get(const struct vy_reply *reply, const char *path)
{
	return vy_value_get(vy_reply_value(reply), path);
}

size_t vy_reply_outputs(const struct vy_reply *reply)
{
	const struct vy_value *o = vy_reply_get(reply, "outputs");
	return vy_value_kind(o) == VY_KIND_ARRAY ? vy_value_len(o) : 0;
}

const void *vy_reply_output(const struct vy_reply *reply, size_t i, size_t *len)
{
	const struct vy_value *o = vy_reply_get(reply, "outputs");
	const struct vy_value *e = vy_value_kind(o) == VY_KIND_ARRAY ? vy_value_item(o, i) : NULL;
	if (len) {
		*len = 0;
	}
	return vy_value_bin(e, len);
}

bool vy_reply_timing(const struct vy_reply *reply, struct vy_dispatch_timing *t)
{
	const struct vy_value *m = vy_reply_get(reply, "timing");
	t->wall_ns = vy_value_get_u64(m, "wall_ns", VY_TIME_NONE);
	t->queue_ns = vy_value_get_u64(m, "queue_ns", VY_TIME_NONE);
	t->compile_ns = vy_value_get_u64(m, "compile_ns", VY_TIME_NONE);
	t->device_ns = vy_value_get_u64(m, "device_ns", VY_TIME_NONE);
	return vy_value_kind(m) == VY_KIND_MAP;
}

/* --- values --- */

enum vy_kind vy_value_kind(const struct vy_value *v)
{
	return v ? v->kind : VY_KIND_MISSING;
}

const char *vy_kind_name(enum vy_kind kind)
{
	switch (kind) {
	case VY_KIND_MISSING:
		return "missing";
	case VY_KIND_NIL:
		return "nil";
	case VY_KIND_BOOL:
		return "bool";
	case VY_KIND_UINT:
		return "uint";
	case VY_KIND_INT:
		return "int";
	case VY_KIND_FLOAT:
		return "float";
	case VY_KIND_STR:
		return "str";
	case VY_KIND_BIN:
		return "bin";
	case VY_KIND_ARRAY:
		return "array";
	case VY_KIND_MAP:
		return "map";
	}
	return "missing";
}

/* One path segment: a key of a map, or a decimal index of an array. */
static const struct vy_value *step(const struct vy_value *v, const char *seg, size_t n)
{
	if (v->kind == VY_KIND_MAP) {
		for (uint32_t i = 0; i < v->len; i++) {
			if (strlen(v->keys[i]) == n && memcmp(v->keys[i], seg, n) == 0) {
				return &v->items[i];
			}
		}
		return NULL;
	}
	if (v->kind != VY_KIND_ARRAY || n == 0 || n > 10) {
		return NULL;
	}
	uint64_t idx = 0;
	for (size_t i = 0; i < n; i++) {
		if (seg[i] < '0' || seg[i] > '9') {
			return NULL;
		}
		idx = idx * 10 + (uint64_t)(seg[i] - '0');
	}
	return idx < v->len ? &v->items[idx] : NULL;
}

const struct vy_value *vy_value_get(const struct vy_value *v, const char *path)
{
	if (!path) {
		return v;
	}
	const char *p = path;
	while (v && *p) {
		size_t n = strcspn(p, ".");
		v = step(v, p, n);
		p += n;
		p += *p == '.';
	}
	return v;
}

size_t vy_value_len(const struct vy_value *v)
{
	if (!v) {
		return 0;
	}
	switch (v->kind) {
	case VY_KIND_ARRAY:
	case VY_KIND_MAP:
	case VY_KIND_STR:
	case VY_KIND_BIN:
		return v->len;
	default:
		return 0;
	}
}

const struct vy_value *vy_value_item(const struct vy_value *v, size_t i)
{
	if (!v || (v->kind != VY_KIND_ARRAY && v->kind != VY_KIND_MAP) || i >= v->len) {
		return NULL;
	}
	return &v->items[i];
}

const char *vy_value_key(const struct vy_value *v, size_t i)
{
	if (!v || v->kind != VY_KIND_MAP || i >= v->len) {
		return NULL;
	}
	return v->keys[i];
}

bool vy_value_u64(const struct vy_value *v, uint64_t *out)
{
	if (v && v->kind == VY_KIND_UINT) {
		*out = v->u;
		return true;
	}
	if (v && v->kind == VY_KIND_BOOL) {
		*out = v->b;
		return true;
	}
	return false;
}

bool vy_value_i64(const struct vy_value *v, int64_t *out)
{
	if (v && v->kind == VY_KIND_INT) {
		*out = v->i;
		return true;
	}
	if (v && v->kind == VY_KIND_UINT && v->u <= (uint64_t)INT64_MAX) {
		*out = (int64_t)v->u;
		return true;
	}
	return false;
}

bool vy_value_f64(const struct vy_value *v, double *out)
{
	if (!v) {
		return false;
	}
	switch (v->kind) {
	case VY_KIND_FLOAT:
		*out = v->f;
		return true;
	case VY_KIND_UINT:
		*out = (double)v->u;
		return true;
	case VY_KIND_INT:
		*out = (double)v->i;
		return true;
	default:
		return false;
	}
}

bool vy_value_bool(const struct vy_value *v, bool *out)
{
	if (v && v->kind == VY_KIND_BOOL) {
		*out = v->b;
		return true;
	}
	return false;
}

const char *vy_value_str(const struct vy_value *v)
{
	return v && v->kind == VY_KIND_STR ? v->str : NULL;
}

const void *vy_value_bin(const struct vy_value *v, size_t *len)
{
	if (!v || v->kind != VY_KIND_BIN) {
		return NULL;
	}
	if (len) {
		*len = v->len;
	}
	/* An empty bin is still a bin: give a valid pointer, not NULL. */
	return v->len ? (const void *)v->bin : (const void *)"";
}

uint64_t vy_value_get_u64(const struct vy_value *v, const char *path, uint64_t fallback)
{
	uint64_t out = fallback;
	vy_value_u64(vy_value_get(v, path), &out);
	return out;
}

const char *vy_value_get_str(const struct vy_value *v, const char *path, const char *fallback)
{
	const char *s = vy_value_str(vy_value_get(v, path));
	return s ? s : fallback;
}

char *vy_value_json(const struct vy_value *v, bool pretty)
{
	if (!v) {
		return NULL;
	}
	struct json_object *obj = NULL;
	if (vy_msgpack_to_json(v->raw, v->raw_len, &obj, NULL) != 0) {
		return NULL;
	}
	if (v->root) {
		json_object_object_del(obj, "id");
		json_object_object_del(obj, "ok");
	}
	char *text = vy_json_text(obj, pretty);
	json_object_put(obj);
	return text;
}
