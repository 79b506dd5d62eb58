/*
 * The program cache and the pipeline cache (DESIGN.md §7.3).
 *
 * Program cache: canonical bytes -> the validated program with its binding plan and spec
 * declarations. Found by program id (XXH3-128 of the canonical bytes) and confirmed by comparing
 * the bytes, so a hash collision can never serve another program. Validation runs on the thread
 * pool; requests for a program being validated wait on its entry.
 *
 * Pipeline cache: (program id, spec values, workgroup size, device and its fingerprint) ->
 * struct vy_pipeline from vy_backend_compile_native. Compiles run on the thread pool with
 * single flight: every request for a key being compiled waits on the one compile. The capability
 * check against the device (vy_validate with the device's caps, on a copy of the program) runs in
 * the same work item, so a request gets the validator's complete error list.
 *
 * Both caches are LRU lists bounded by entries and bytes. An evicted or cleared entry leaves the
 * table at once and dies with its last reference, so requests holding it finish normally. A
 * pipeline's "bytes" is an estimate (the canonical program plus a fixed allowance for the native
 * objects), since the backend contract does not report the size of a pipeline.
 *
 * Privacy: a program entry records the users (uids) that sent its bytes, and a request by
 * program_id from any other user gets exactly the NOT_FOUND of an id that never existed, so an id
 * seen elsewhere (a log, a shared folder) neither runs another user's program nor tells that it
 * exists. Programs restored from disk belong to nobody until a user sends their bytes: owners are
 * not persisted, since a file cannot vouch for who sent it. Pipelines stay shared underneath
 * (one compile serves every user of the same program); each records its users too, and
 * cache_list shows a user only the rows they use, with their own hits and times, so that it
 * tells nothing of another user's activity. Admins see every row with the totals.
 *
 * The thread pool is shared per user: validation and compile work waits in per-user queues, and
 * vyred hands libuv's pool (compile_threads threads) at most compile_threads items at once,
 * each from the user served least recently among those with work waiting and fewer than
 * compile_per_user items running. So one user's flood of large programs delays another user's
 * small one by about one compile, and never fills every thread while compile_per_user is below
 * compile_threads. What bounds one item's cost is the program: the IR limits (docs/ir.md §15:
 * 100,000 nodes, nesting 64, expression depth 128, 32 buffers, a 16 MiB document) and the
 * frame limit (max_frame) bound the work of validation, planning and code generation.
 *
 * Outcome of a pipeline miss: "disk" when the compile was served from the disk cache (the Vulkan
 * backend's SPIR-V files, seen through its disk-hit counter; for a backend with no compiled
 * artifacts of its own, a program restored from the daemon's program files), otherwise "miss".
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"
#include "launch.h"
#include "log.h"
#include "vyred.h"

#define PIPE_NATIVE_ALLOWANCE ((uint64_t)16 * 1024)

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "vyred: out of memory in the caches\n");
		abort();
	}
	return p;
}

static uint64_t id_hash(const struct vy_program_id *id)
{
	uint64_t h = 0;
	memcpy(&h, id->bytes, sizeof(h));
	return h;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
	return h * UINT64_C(0xff51afd7ed558ccd);
}

/* --- spec declarations ----------------------------------------------------------------- */

struct spec_walk {
	struct vy_spec_decl *decls;
	uint32_t n;
	uint32_t cap;
};

static void walk_expr(struct spec_walk *w, const struct vy_expr *e)
{
	if (!e) {
		return;
	}
	if (e->kind == VY_EXPR_SPEC) {
		for (uint32_t i = 0; i < w->n; i++) {
			if (strcmp(w->decls[i].name, e->name) == 0) {
				return;
			}
		}
		if (w->n == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 8;
			w->decls = realloc(w->decls, w->cap * sizeof(*w->decls));
			if (!w->decls) {
				fprintf(stderr, "vyred: out of memory collecting spec constants\n");
				abort();
			}
		}
		w->decls[w->n++] = (struct vy_spec_decl){e->name, e->type, e->bits};
		return;
	}
	for (uint32_t i = 0; i < e->nargs && i < 3; i++) {
		walk_expr(w, e->args[i]);
	}
}

/* Recursion follows the program's nesting, which validation bounds. */
static void walk_block(struct spec_walk *w, const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		walk_expr(w, n->args[0]);
		walk_expr(w, n->args[1]);
		walk_block(w, &n->body);
		walk_block(w, &n->orelse);
	}
}

static const struct vy_spec_decl *find_decl(const struct vy_prog *p, const char *name)
{
	for (uint32_t i = 0; i < p->n_specs; i++) {
		if (strcmp(p->specs[i].name, name) == 0) {
			return &p->specs[i];
		}
	}
	return NULL;
}

static bool is_default(const struct vy_spec_decl *d, const struct vy_spec_value *v)
{
	switch (v->kind) {
	case VY_SPEC_U32:
		return v->as.u32 == d->bits;
	case VY_SPEC_I32:
		return (uint32_t)v->as.i32 == d->bits;
	case VY_SPEC_F32: {
		uint32_t bits;
		memcpy(&bits, &v->as.f32, sizeof(bits));
		return bits == d->bits;
	}
	case VY_SPEC_BOOL:
		return v->as.b == (d->bits != 0);
	case VY_SPEC_DTYPE:
		break;
	}
	return false;
}

int vy_spec_resolve(const struct vy_prog *p, const struct vy_request_config *c,
	struct vy_spec_map *out, struct vy_err *err)
{
	vy_spec_map_init(out);
	for (uint32_t i = 0; i < c->n_spec; i++) {
		const struct vy_spec_setting *s = &c->spec[i];
		char at[VY_ERR_AT_MAX];
		snprintf(at, sizeof(at), "config.spec.%s", s->name);
		const struct vy_spec_decl *d = find_decl(p, s->name);
		if (!d) {
			char fix[VY_ERR_FIX_MAX];
			int n = snprintf(
				fix, sizeof(fix), "set only spec constants the program declares");
			for (uint32_t k = 0; k < p->n_specs && n < (int)sizeof(fix) - 80; k++) {
				n += snprintf(fix + n, sizeof(fix) - (size_t)n, "%s %s (%s)",
					k ? "," : ":", p->specs[k].name,
					vy_type_name(p->specs[k].type));
			}
			if (p->n_specs == 0) {
				snprintf(fix + n, sizeof(fix) - (size_t)n,
					" (this one declares none)");
			}
			vy_spec_map_finish(out);
			return vy_err_set(err, VY_E_BAD_REQUEST, at, fix,
				"the program has no spec constant \"%s\"", s->name);
		}
		struct vy_spec_value v;
		bool ok = false;
		switch (d->type) {
		case VY_TYPE_U32:
			ok = s->wire == VY_SPEC_WIRE_UINT && s->u <= UINT32_MAX;
			v = vy_spec_u32((uint32_t)s->u);
			break;
		case VY_TYPE_I32:
			ok = (s->wire == VY_SPEC_WIRE_UINT && s->u <= INT32_MAX) ||
			     (s->wire == VY_SPEC_WIRE_INT && s->i >= INT32_MIN);
			v = vy_spec_i32(
				s->wire == VY_SPEC_WIRE_UINT ? (int32_t)s->u : (int32_t)s->i);
			break;
		case VY_TYPE_F32:
			/* Integers are accepted where a float is exact, as JSON-minded clients
			 * send 2. */
			if (s->wire == VY_SPEC_WIRE_FLOAT) {
				ok = true;
				v = vy_spec_f32((float)s->f);
			} else if (s->wire == VY_SPEC_WIRE_UINT && s->u <= (1u << 24)) {
				ok = true;
				v = vy_spec_f32((float)s->u);
			} else if (s->wire == VY_SPEC_WIRE_INT && s->i >= -(1 << 24)) {
				ok = true;
				v = vy_spec_f32((float)s->i);
			}
			break;
		case VY_TYPE_BOOL:
			ok = s->wire == VY_SPEC_WIRE_BOOL;
			v = vy_spec_bool(s->b);
			break;
		default:
			break;
		}
		if (!ok) {
			char fix[VY_ERR_FIX_MAX];
			snprintf(fix, sizeof(fix), "send a %s value for %s", vy_type_name(d->type),
				s->name);
			vy_spec_map_finish(out);
			return vy_err_set(err, VY_E_BAD_REQUEST, at, fix,
				"spec constant \"%s\" is %s; the value sent does not fit that type",
				s->name, vy_type_name(d->type));
		}
		/* A value equal to the default compiles alike: leave it out of the key. */
		if (!is_default(d, &v)) {
			vy_spec_map_insert(out, s->name, v);
		}
	}
	return 0;
}

/* A work item the pool cancelled at shutdown never ran: its waiters learn why. */
static void work_cancelled(int status, int *rc, struct vy_err *err)
{
	if (status == UV_ECANCELED) {
		*rc = vy_err_set(err, VY_E_SHUTTING_DOWN, NULL,
			"reconnect once the daemon has restarted", "the daemon is shutting down");
	}
}

/* The oldest request waiting on an entry, unlinked, or NULL once none is left. */
static struct vy_req *waiter_pop(struct vy_link *waiters)
{
	if (vy_list_empty(waiters)) {
		return NULL;
	}
	struct vy_req *req = VY_CONTAINER_OF(waiters->next, struct vy_req, wait);
	vy_list_remove(&req->wait);
	return req;
}

/* --- users of an entry ------------------------------------------------------------------ */

static struct vy_cache_use *use_find(const struct vy_cache_users *u, uid_t uid)
{
	for (uint32_t i = 0; i < u->len; i++) {
		if (u->items[i].uid == uid) {
			return &u->items[i];
		}
	}
	return NULL;
}

/* Record a use by `uid` (a hit when `hit`), adding the user on their first. */
static void use_touch(struct vy_cache_users *u, uid_t uid, bool hit)
{
	uint64_t now = vy_now_ns();
	struct vy_cache_use *e = use_find(u, uid);
	if (!e) {
		if (u->len == u->cap) {
			u->cap = u->cap ? u->cap * 2 : 2;
			u->items = realloc(u->items, u->cap * sizeof(*u->items));
			if (!u->items) {
				fprintf(stderr, "vyred: out of memory in the caches\n");
				abort();
			}
		}
		e = &u->items[u->len++];
		*e = (struct vy_cache_use){.uid = uid, .first_ns = now};
	}
	e->hits += hit;
	e->last_ns = now;
}

/* --- the thread pool, shared per user ------------------------------------------------- */

/* A user with pool work queued or running; freed when it has neither. */
struct vy_pool_user {
	struct vy_link link; /* in srv->pool_users */
	uid_t uid;
	struct vy_link queue; /* vy_pool_item.link, oldest first */
	uint32_t running;
	uint64_t served; /* srv->pool_served when its last item started; 0: never */
};

static void pool_after(uv_work_t *work, int status);
static void pool_finish(struct vy_pool_item *it, int status);

/* Whether a request of a live connection waits for the item. */
static bool pool_wanted(const struct vy_pool_item *it)
{
	for (struct vy_link *l = it->waiters->next; l != it->waiters; l = l->next) {
		if (vy_conn_alive(VY_CONTAINER_OF(l, struct vy_req, wait)->conn)) {
			return true;
		}
	}
	return false;
}

/* Start queued items while the pool has room: each from the user served least recently among
 * those under compile_per_user. An item whose every requester has gone is not run: it ends as
 * cancelled, which takes its entry out of the cache (a later request queues it again). */
static void pool_pump(struct vy_server *s)
{
	while (s->pool_running < s->cfg.compile_threads) {
		struct vy_pool_user *pick = NULL;
		for (struct vy_link *l = s->pool_users.next; l != &s->pool_users; l = l->next) {
			struct vy_pool_user *u = VY_CONTAINER_OF(l, struct vy_pool_user, link);
			if (!vy_list_empty(&u->queue) && u->running < s->cfg.compile_per_user &&
				(!pick || u->served < pick->served)) {
				pick = u;
			}
		}
		if (!pick) {
			return;
		}
		struct vy_pool_item *it =
			VY_CONTAINER_OF(pick->queue.next, struct vy_pool_item, link);
		vy_list_remove(&it->link);
		pick->running++;
		s->pool_running++;
		if (!pool_wanted(it)) {
			pool_finish(it, UV_ECANCELED);
			continue;
		}
		pick->served = ++s->pool_served;
		uv_queue_work(&s->loop, &it->work, it->run, pool_after);
	}
}

/* Queue `it` for the pool as work of `uid` for the requests in `waiters`; `after` runs on the
 * loop when it is done (with UV_ECANCELED when it never ran). */
static void pool_submit(struct vy_server *s, uid_t uid, struct vy_pool_item *it,
	struct vy_link *waiters, uv_work_cb run, uv_after_work_cb after)
{
	struct vy_pool_user *u = NULL;
	for (struct vy_link *l = s->pool_users.next; l != &s->pool_users; l = l->next) {
		struct vy_pool_user *x = VY_CONTAINER_OF(l, struct vy_pool_user, link);
		if (x->uid == uid) {
			u = x;
			break;
		}
	}
	if (!u) {
		u = xcalloc(1, sizeof(*u));
		u->uid = uid;
		vy_list_init(&u->queue);
		vy_list_insert_tail(&s->pool_users, &u->link);
	}
	it->srv = s;
	it->user = u;
	it->waiters = waiters;
	it->run = run;
	it->after = after;
	vy_list_insert_tail(&u->queue, &it->link);
	s->works++;
	pool_pump(s);
}

/* The item is done (or was never run): its user's slot is free again. */
static void pool_finish(struct vy_pool_item *it, int status)
{
	struct vy_server *s = it->srv;
	struct vy_pool_user *u = it->user;
	u->running--;
	s->pool_running--;
	if (u->running == 0 && vy_list_empty(&u->queue)) {
		vy_list_remove(&u->link);
		free(u);
	}
	/* May free the item's entry. */
	it->after(&it->work, status);
}

static void pool_after(uv_work_t *work, int status)
{
	struct vy_pool_item *it = VY_CONTAINER_OF(work, struct vy_pool_item, work);
	struct vy_server *s = it->srv;
	pool_finish(it, status);
	pool_pump(s);
}

/* --- program entries ------------------------------------------------------------------- */

static void prog_destroy(struct vy_prog *p)
{
	assert(vy_list_empty(&p->waiters));
	vy_binding_plan_destroy(p->plan);
	vy_program_destroy(p->program);
	free(p->specs);
	free(p->canonical);
	free(p->users.items);
	vy_err_list_finish(&p->errs);
	free(p);
}

void vy_prog_unref(struct vy_prog *p)
{
	if (p && --p->refs == 0) {
		prog_destroy(p);
	}
}

static struct vy_prog *prog_find(struct vy_progcache *c, const struct vy_program_id *id)
{
	uint64_t h = id_hash(id);
	for (struct vy_hlink *l = vy_htable_bucket(&c->index, h); l; l = l->next) {
		struct vy_prog *p = VY_CONTAINER_OF(l, struct vy_prog, link);
		if (l->hash == h && memcmp(p->id.bytes, id->bytes, 16) == 0) {
			return p;
		}
	}
	return NULL;
}

static void prog_insert(struct vy_progcache *c, struct vy_prog *p)
{
	vy_htable_insert(&c->index, &p->link);
	p->in_table = true;
	p->refs++;
	c->count++;
	c->bytes += p->canonical_len;
	vy_list_insert_head(&c->lru, &p->lru);
}

/* Take the entry out of the table and drop the table's reference. */
static void prog_remove(struct vy_progcache *c, struct vy_prog *p)
{
	assert(p->in_table);
	vy_htable_remove(&c->index, &p->link);
	p->in_table = false;
	c->count--;
	c->bytes -= p->canonical_len;
	vy_list_remove(&p->lru);
	vy_prog_unref(p);
}

static struct vy_prog *prog_new(struct vy_server *s, struct vy_program *program, uint8_t *canonical,
	size_t len, const struct vy_program_id *id)
{
	struct vy_prog *p = xcalloc(1, sizeof(*p));
	p->srv = s;
	p->program = program;
	p->canonical = canonical;
	p->canonical_len = len;
	p->id = *id;
	p->link.hash = id_hash(id);
	p->state = VY_ENTRY_PENDING;
	vy_list_init(&p->waiters);
	vy_list_init(&p->lru);
	vy_err_list_init(&p->errs);
	return p;
}

/* Validation and planning: runs on the thread pool or at start-up. */
static int prog_prepare(struct vy_prog *p)
{
	vy_err_list_finish(&p->errs);
	vy_err_list_init(&p->errs);
	p->rc = vy_validate(p->program, NULL, &p->errs);
	if (p->rc) {
		p->err = p->errs.items[0];
		size_t total = p->errs.len + p->errs.dropped;
		if (total > 1) {
			char message[VY_ERR_MESSAGE_MAX];
			snprintf(message, sizeof(message), "%zu errors; first: %.300s", total,
				p->err.message);
			memcpy(p->err.message, message, sizeof(message));
		}
		p->err.code = p->rc;
		return p->rc;
	}
	p->rc = vy_binding_plan_build(p->program, &p->plan, &p->err);
	if (p->rc) {
		return p->rc;
	}
	p->features = vy_launch_features_scan(p->program);
	struct spec_walk w = {0};
	walk_block(&w, &p->program->entry);
	p->specs = w.decls;
	p->n_specs = w.n;
	return 0;
}

static void prog_work(uv_work_t *work)
{
	struct vy_prog *p = VY_CONTAINER_OF(work, struct vy_prog, work.work);
	prog_prepare(p);
}

/*
 * Saving a program: only once a request using it succeeded (its pipeline built for a compile, its
 * dispatch done), so that requests whose programs fail store nothing; a program already on disk
 * has its use recorded instead, for the budget's least-recently-used order.
 */
static void keep_work(uv_work_t *work)
{
	struct vy_prog *p = VY_CONTAINER_OF(work, struct vy_prog, work.work);
	struct vy_server *s = p->srv;
	struct vy_err err;
	bool written = false;
	if (vy_disk_program_keep(s->programs_dir, s->disk_key, s->disk_budget, &p->id, p->canonical,
		    p->canonical_len, &written, &err) != 0) {
		vy_log_err(VY_LOG_WARNING, &err, "disk cache");
	}
	p->disk_written = written;
}

static void keep_after(uv_work_t *work, int status)
{
	struct vy_prog *p = VY_CONTAINER_OF(work, struct vy_prog, work.work);
	struct vy_server *s = p->srv;
	s->works--;
	s->progs.disk_writes += status == 0 && p->disk_written;
	p->disk_keeping = false;
	vy_prog_unref(p);
}

void vy_prog_keep(struct vy_server *s, struct vy_prog *p)
{
	if (!s->programs_dir || !p || p->state != VY_ENTRY_READY || p->disk_keeping ||
		p->disk_kept) {
		return;
	}
	p->disk_kept = true;
	p->disk_keeping = true;
	p->refs++;
	s->works++;
	/* A short write outside the per-user pool queues: the entry is ready, its pool item idle.
	 */
	uv_queue_work(&s->loop, &p->work.work, keep_work, keep_after);
}

static void trim_progs(struct vy_server *s);

static void prog_after(uv_work_t *work, int status)
{
	struct vy_prog *p = VY_CONTAINER_OF(work, struct vy_prog, work.work);
	struct vy_server *s = p->srv;
	s->works--;
	work_cancelled(status, &p->rc, &p->err);
	if (p->rc == 0) {
		p->state = VY_ENTRY_READY;
	} else if (p->in_table) {
		prog_remove(&s->progs, p);
	}
	for (struct vy_req *req; (req = waiter_pop(&p->waiters));) {
		vy_ops_on_prog(req, p->rc, &p->err, &p->errs);
	}
	trim_progs(s);
	vy_prog_unref(p);
	vy_server_poke(s);
}

void vy_prog_acquire(struct vy_req *req)
{
	struct vy_server *s = req->conn->srv;
	struct vy_progcache *c = &s->progs;
	struct vy_prog *p = NULL;
	const uint8_t *raw = req->r.program_raw;
	size_t raw_len = req->r.program_raw_len;
	if (raw) {
		/* Sent in canonical form (as libvyre sends it), a known program is found by its
		 * bytes, with no decoding; in any other form it is decoded and found as below. */
		struct vy_program_id id;
		vy_program_id_compute(raw, raw_len, &id);
		p = prog_find(c, &id);
		if (!p || p->canonical_len != raw_len || memcmp(p->canonical, raw, raw_len) != 0) {
			p = NULL;
			struct vy_err err = {0};
			int rc = vy_request_program(&req->r, &err);
			if (rc) {
				vy_ops_on_prog(req, rc, &err, NULL);
				return;
			}
		}
		req->r.program_raw = NULL;
	}
	if (p) {
		c->hits_by_bytes++;
		use_touch(&p->users, req->conn->uid, true);
	} else if (req->r.program) {
		msgpack_sbuffer sb;
		struct vy_program_id id;
		vy_program_id_of(req->r.program, &sb, &id);
		p = prog_find(c, &id);
		bool same = p && p->canonical_len == sb.size &&
			    memcmp(p->canonical, sb.data, sb.size) == 0;
		if (same) {
			msgpack_sbuffer_destroy(&sb);
		} else {
			c->misses++;
			size_t len = sb.size;
			uint8_t *bytes = (uint8_t *)msgpack_sbuffer_release(&sb);
			msgpack_sbuffer_destroy(&sb);
			struct vy_prog *fresh = prog_new(s, req->r.program, bytes, len, &id);
			req->r.program = NULL;
			/* Two programs with one id (never seen for XXH3-128) would both be served
			 * correctly: the second simply stays out of the table. */
			if (!p) {
				prog_insert(c, fresh);
			}
			use_touch(&fresh->users, req->conn->uid, false);
			fresh->refs++; /* the work's */
			fresh->refs++; /* the request's */
			req->prog = fresh;
			vy_list_insert_tail(&fresh->waiters, &req->wait);
			pool_submit(s, req->conn->uid, &fresh->work, &fresh->waiters, prog_work,
				prog_after);
			return;
		}
		use_touch(&p->users, req->conn->uid, true);
	} else {
		p = prog_find(c, &req->r.program_id);
		/* Another user's program is answered exactly as an unknown id. */
		if (!p || !use_find(&p->users, req->conn->uid)) {
			char hex[VY_PROGRAM_ID_HEX];
			vy_program_id_hex(&req->r.program_id, hex);
			c->misses++;
			struct vy_err err = {0};
			vy_err_set(&err, VY_E_NOT_FOUND, "program_id",
				"send the program itself (compile or dispatch with \"program\")",
				"no program with id %s is known to this daemon", hex);
			vy_ops_on_prog(req, VY_E_NOT_FOUND, &err, NULL);
			return;
		}
		use_touch(&p->users, req->conn->uid, true);
	}
	c->hits++;
	p->hits++;
	p->refs++;
	req->prog = p;
	p->last_use_ns = vy_now_ns();
	if (p->in_table) {
		vy_list_remove(&p->lru);
		vy_list_insert_head(&c->lru, &p->lru);
	}
	if (p->state == VY_ENTRY_READY) {
		vy_ops_on_prog(req, 0, NULL, NULL);
	} else {
		vy_list_insert_tail(&p->waiters, &req->wait);
	}
}

static void trim_progs(struct vy_server *s)
{
	struct vy_progcache *c = &s->progs;
	struct vy_link *l = c->lru.prev;
	while (l != &c->lru && (c->count > s->cfg.program_cache_entries ||
				       c->bytes > s->cfg.program_cache_bytes)) {
		struct vy_prog *p = VY_CONTAINER_OF(l, struct vy_prog, lru);
		l = l->prev;
		if (p->state == VY_ENTRY_READY) {
			c->evictions++;
			prog_remove(c, p);
		}
	}
}

/* --- pipeline entries ------------------------------------------------------------------ */

static void pipe_destroy(struct vy_pipe *p)
{
	assert(vy_list_empty(&p->waiters));
	vy_pipeline_destroy(p->pl);
	vy_spec_map_finish(&p->spec);
	vy_prog_unref(p->prog);
	free(p->users.items);
	vy_err_list_finish(&p->errs);
	free(p);
}

void vy_pipe_unref(struct vy_pipe *p)
{
	if (p && --p->refs == 0) {
		pipe_destroy(p);
	}
}

static uint64_t pipe_hash(const struct vy_program_id *id, const struct vy_spec_map *spec,
	const uint32_t wg[3], const struct vy_device *d)
{
	uint64_t h = mix(id_hash(id), vy_spec_map_hash(spec));
	h = mix(h, (uint64_t)wg[0] << 32 | wg[1]);
	h = mix(h, (uint64_t)wg[2] << 32 | d->index);
	return mix(h, d->fingerprint);
}

/* One entry is the same program; two entries (one evicted and reloaded) compare their bytes. */
static bool same_program(const struct vy_prog *a, const struct vy_prog *b)
{
	return a == b ||
	       (memcmp(a->id.bytes, b->id.bytes, 16) == 0 && a->canonical_len == b->canonical_len &&
		       memcmp(a->canonical, b->canonical, a->canonical_len) == 0);
}

static struct vy_pipe *pipe_find(struct vy_pcache *c, uint64_t h, const struct vy_prog *prog,
	const struct vy_spec_map *spec, const uint32_t wg[3], const struct vy_device *d)
{
	for (struct vy_hlink *l = vy_htable_bucket(&c->index, h); l; l = l->next) {
		struct vy_pipe *p = VY_CONTAINER_OF(l, struct vy_pipe, link);
		if (l->hash == h && p->dev == d && p->fingerprint == d->fingerprint &&
			same_program(p->prog, prog) &&
			memcmp(p->workgroup_size, wg, sizeof(p->workgroup_size)) == 0 &&
			vy_spec_map_eq(&p->spec, spec)) {
			return p;
		}
	}
	return NULL;
}

static void pipe_insert(struct vy_pcache *c, struct vy_pipe *p)
{
	vy_htable_insert(&c->index, &p->link);
	p->in_table = true;
	p->refs++;
	c->count++;
	c->bytes += p->bytes;
	c->spec_entries += p->spec.len > 0;
	vy_list_insert_head(&c->lru, &p->lru);
}

static void pipe_remove(struct vy_pcache *c, struct vy_pipe *p)
{
	assert(p->in_table);
	vy_htable_remove(&c->index, &p->link);
	p->in_table = false;
	c->count--;
	c->bytes -= p->bytes;
	c->spec_entries -= p->spec.len > 0;
	vy_list_remove(&p->lru);
	vy_pipe_unref(p);
}

static void pipe_work(uv_work_t *work)
{
	struct vy_pipe *p = VY_CONTAINER_OF(work, struct vy_pipe, work.work);
	struct vy_device *d = p->dev;
	uint64_t t0 = vy_now_ns();
	/* The capability check writes types, so it runs on a copy of the shared program. */
	struct vy_program *copy = vy_program_clone(p->prog->program);
	p->rc = vy_validate(copy, &d->caps, &p->errs);
	vy_program_destroy(copy);
	if (p->rc) {
		p->err = p->errs.items[0];
		p->err.code = p->rc;
		return;
	}
	p->rc = vy_backend_check_ops(d->backend, p->prog->program, &p->err);
	if (p->rc) {
		return;
	}
	struct vy_dispatch_config cfg = {.spec = &p->spec};
	if (memcmp(p->workgroup_size, p->prog->program->workgroup_size,
		    sizeof(cfg.workgroup_size))) {
		memcpy(cfg.workgroup_size, p->workgroup_size, sizeof(cfg.workgroup_size));
	}
	p->rc = vy_backend_compile_native(d->backend, p->prog->program, &cfg, &p->pl, &p->err);
	bool disk = p->pl && p->pl->native ? p->pl->from_disk : p->prog->from_disk;
	p->outcome = disk ? "disk" : "miss";
	p->compile_ns = vy_now_ns() - t0;
}

static void trim_pipes(struct vy_server *s);

static void pipe_after(uv_work_t *work, int status)
{
	struct vy_pipe *p = VY_CONTAINER_OF(work, struct vy_pipe, work.work);
	struct vy_server *s = p->srv;
	struct vy_pcache *c = &s->pipes;
	s->works--;
	work_cancelled(status, &p->rc, &p->err);
	if (p->rc == 0) {
		p->state = VY_ENTRY_READY;
		vy_hist_add(&c->compile_ns, p->compile_ns);
		c->disk_hits += strcmp(p->outcome, "disk") == 0;
	} else if (p->in_table) {
		pipe_remove(c, p);
	}
	for (struct vy_req *req; (req = waiter_pop(&p->waiters));) {
		if (p->rc == 0) {
			p->refs++;
			req->pipe = p;
			req->cache = p->outcome;
			req->compile_ns = p->compile_ns;
		}
		vy_ops_on_pipe(req, p->rc, &p->err, &p->errs);
	}
	trim_pipes(s);
	vy_pipe_unref(p);
	vy_server_poke(s);
}

/* A pending entry, in no table yet, holding no reference. */
static struct vy_pipe *pipe_new(struct vy_server *s, uint64_t h, struct vy_prog *prog,
	const struct vy_spec_map *spec, const uint32_t wg[3], struct vy_device *d)
{
	struct vy_pipe *p = xcalloc(1, sizeof(*p));
	p->srv = s;
	p->link.hash = h;
	p->prog = prog;
	prog->refs++;
	p->dev = d;
	p->fingerprint = d->fingerprint;
	vy_spec_map_init_copy(&p->spec, spec);
	memcpy(p->workgroup_size, wg, sizeof(p->workgroup_size));
	p->state = VY_ENTRY_PENDING;
	p->bytes = prog->canonical_len + PIPE_NATIVE_ALLOWANCE;
	p->created_ns = p->last_use_ns = vy_now_ns();
	vy_list_init(&p->waiters);
	vy_list_init(&p->lru);
	vy_err_list_init(&p->errs);
	return p;
}

void vy_pipe_acquire(struct vy_req *req)
{
	struct vy_server *s = req->conn->srv;
	struct vy_pcache *c = &s->pipes;
	struct vy_device *d = req->dev;
	uint64_t h = pipe_hash(&req->prog->id, &req->spec, req->workgroup_size, d);
	struct vy_pipe *p = pipe_find(c, h, req->prog, &req->spec, req->workgroup_size, d);
	bool spec = req->spec.len > 0;
	if (p && p->state == VY_ENTRY_READY) {
		c->hits++;
		c->spec_hits += spec;
		p->hits++;
		use_touch(&p->users, req->conn->uid, true);
		p->refs++;
		p->last_use_ns = vy_now_ns();
		vy_list_remove(&p->lru);
		vy_list_insert_head(&c->lru, &p->lru);
		req->pipe = p;
		/* The first request that a pipeline built at start serves hears how it was built
		 * and how long that took, as if it had asked for it: it is the first to use it. */
		req->cache = p->warm_unserved ? p->outcome : "hit";
		req->compile_ns = p->warm_unserved ? p->compile_ns : 0;
		p->warm_unserved = false;
		vy_ops_on_pipe(req, 0, NULL, NULL);
		return;
	}
	if (p) {
		c->coalesced++;
		use_touch(&p->users, req->conn->uid, false);
		vy_list_insert_tail(&p->waiters, &req->wait);
		return;
	}
	c->misses++;
	c->spec_misses += spec;
	p = pipe_new(s, h, req->prog, &req->spec, req->workgroup_size, d);
	use_touch(&p->users, req->conn->uid, false);
	pipe_insert(c, p);
	p->refs++; /* the work's */
	vy_list_insert_tail(&p->waiters, &req->wait);
	pool_submit(s, req->conn->uid, &p->work, &p->waiters, pipe_work, pipe_after);
}

static void trim_pipes(struct vy_server *s)
{
	struct vy_pcache *c = &s->pipes;
	struct vy_link *l = c->lru.prev;
	while (l != &c->lru && (c->count > s->cfg.pipeline_cache_entries ||
				       c->bytes > s->cfg.pipeline_cache_bytes)) {
		struct vy_pipe *p = VY_CONTAINER_OF(l, struct vy_pipe, lru);
		l = l->prev;
		if (p->state == VY_ENTRY_READY) {
			c->evictions++;
			pipe_remove(c, p);
		}
	}
}

/* --- the caches as a whole ------------------------------------------------------------- */

void vy_caches_init(struct vy_server *s)
{
	memset(&s->progs, 0, sizeof(s->progs));
	memset(&s->pipes, 0, sizeof(s->pipes));
	vy_list_init(&s->progs.lru);
	vy_list_init(&s->pipes.lru);
	vy_list_init(&s->pool_users);
}

void vy_caches_finish(struct vy_server *s)
{
	while (!vy_list_empty(&s->pipes.lru)) {
		pipe_remove(&s->pipes, VY_CONTAINER_OF(s->pipes.lru.next, struct vy_pipe, lru));
	}
	while (!vy_list_empty(&s->progs.lru)) {
		prog_remove(&s->progs, VY_CONTAINER_OF(s->progs.lru.next, struct vy_prog, lru));
	}
	vy_htable_finish(&s->pipes.index);
	vy_htable_finish(&s->progs.index);
}

void vy_caches_trim(struct vy_server *s)
{
	trim_pipes(s);
	trim_progs(s);
}

void vy_caches_clear(struct vy_server *s, bool disk)
{
	struct vy_link *l;
	struct vy_link *t;
	VY_LIST_FOR_EACH_SAFE(l, t, &s->pipes.lru)
	{
		struct vy_pipe *p = VY_CONTAINER_OF(l, struct vy_pipe, lru);
		if (p->state == VY_ENTRY_READY) {
			pipe_remove(&s->pipes, p);
		}
	}
	VY_LIST_FOR_EACH_SAFE(l, t, &s->progs.lru)
	{
		struct vy_prog *p = VY_CONTAINER_OF(l, struct vy_prog, lru);
		if (p->state == VY_ENTRY_READY) {
			prog_remove(&s->progs, p);
		}
	}
	if (disk && s->programs_dir) {
		size_t n = vy_disk_programs_clear(s->programs_dir);
		vy_log(VY_LOG_NOTICE, "cache_clear: removed %zu program files from %s", n,
			s->programs_dir);
	}
}

void vy_caches_drop_device(struct vy_server *s, struct vy_device *d)
{
	struct vy_link *l;
	struct vy_link *t;
	size_t n = 0;
	VY_LIST_FOR_EACH_SAFE(l, t, &s->pipes.lru)
	{
		struct vy_pipe *p = VY_CONTAINER_OF(l, struct vy_pipe, lru);
		if (p->dev == d && p->state == VY_ENTRY_READY) {
			pipe_remove(&s->pipes, p);
			n++;
		}
	}
	vy_log(VY_LOG_NOTICE, "device %u: dropped %zu pipelines after the device was recovered",
		d->index, n);
}

struct restore_ctx {
	struct vy_server *s;
	size_t loaded;
};

static void restore_one(void *ctx, const struct vy_program_id *id, const uint8_t *bytes, size_t len)
{
	struct restore_ctx *r = ctx;
	struct vy_server *s = r->s;
	struct vy_program *program = NULL;
	struct vy_err err;
	if (prog_find(&s->progs, id) || vy_program_decode(bytes, len, &program, &err) != 0) {
		return;
	}
	uint8_t *copy = xcalloc(len, 1);
	memcpy(copy, bytes, len);
	struct vy_prog *p = prog_new(s, program, copy, len, id);
	if (prog_prepare(p) != 0) {
		s->progs.disk_rejected++;
		prog_destroy(p);
		return;
	}
	p->state = VY_ENTRY_READY;
	p->from_disk = true;
	/* Newest first: each older file goes behind those already loaded. */
	prog_insert(&s->progs, p);
	vy_list_remove(&p->lru);
	vy_list_insert_tail(&s->progs.lru, &p->lru);
	r->loaded++;
}

void vy_caches_restore(struct vy_server *s)
{
	if (!s->programs_dir) {
		return;
	}
	struct restore_ctx r = {s, 0};
	uint64_t t0 = vy_now_ns();
	vy_disk_programs_load(s->programs_dir, s->disk_key, s->cfg.program_cache_entries,
		restore_one, &r, &s->progs.disk_rejected);
	s->progs.restored = r.loaded;
	vy_log(VY_LOG_INFO,
		"disk cache: restored %zu programs from %s in %" PRIu64 " ms (%" PRIu64
		" files rejected)",
		r.loaded, s->programs_dir, (vy_now_ns() - t0) / 1000000, s->progs.disk_rejected);
}

/*
 * The pipeline a dispatch that sends `prog` whole asks for on `d` (its own workgroup size, no
 * spec values), built on this thread as pipe_work builds one for a request, and entered in the
 * cache as ready. Returns whether the backend built it.
 */
static bool warm_pipe(struct vy_server *s, struct vy_prog *prog, struct vy_device *d)
{
	struct vy_pcache *c = &s->pipes;
	struct vy_spec_map none;
	vy_spec_map_init(&none);
	const uint32_t *wg = prog->program->workgroup_size;
	uint64_t h = pipe_hash(&prog->id, &none, wg, d);
	bool built = pipe_find(c, h, prog, &none, wg, d) != NULL;
	if (!built) {
		struct vy_pipe *p = pipe_new(s, h, prog, &none, wg, d);
		p->refs++; /* this function's */
		pipe_work(&p->work.work);
		built = p->rc == 0;
		if (built) {
			p->state = VY_ENTRY_READY;
			p->warm_unserved = true;
			vy_hist_add(&c->compile_ns, p->compile_ns);
			c->disk_hits += strcmp(p->outcome, "disk") == 0;
			/* Behind the entries requests made: the least recently used. */
			pipe_insert(c, p);
			vy_list_remove(&p->lru);
			vy_list_insert_tail(&c->lru, &p->lru);
		}
		vy_pipe_unref(p);
	}
	vy_spec_map_finish(&none);
	return built;
}

static void pool_start_work(uv_work_t *work)
{
	(void)work;
}

static void pool_start_after(uv_work_t *work, int status)
{
	(void)status;
	struct vy_server *s = work->data;
	s->works--;
}

/* How long the start may spend building pipelines of restored programs. */
#define WARM_BUDGET_NS (UINT64_C(2) * 1000000000u)

void vy_caches_warm(struct vy_server *s)
{
	uint64_t t0 = vy_now_ns();
	size_t built = 0, failed = 0, programs = 0;
	struct vy_link *l = s->progs.lru.next;
	for (; l != &s->progs.lru && programs < s->cfg.warm_pipelines &&
		vy_now_ns() - t0 < WARM_BUDGET_NS;
		l = l->next) {
		struct vy_prog *prog = VY_CONTAINER_OF(l, struct vy_prog, lru);
		if (prog->state != VY_ENTRY_READY) {
			continue;
		}
		programs++;
		for (uint32_t i = 0; i < s->n_devices; i++) {
			if (warm_pipe(s, prog, &s->devices[i])) {
				built++;
			} else {
				failed++;
			}
		}
	}
	trim_pipes(s);
	uint64_t t1 = vy_now_ns();
	for (uint32_t i = 0; i < s->n_devices; i++) {
		vy_device_warm(&s->devices[i]);
	}
	/* libuv starts its pool's threads with the first item: here, not in the first request. */
	s->pool_start.data = s;
	s->works++;
	uv_queue_work(&s->loop, &s->pool_start, pool_start_work, pool_start_after);
	vy_log(VY_LOG_INFO,
		"warm start: %zu pipelines of %zu programs built in %" PRIu64
		" ms (%zu failed); a dispatch on each device in %" PRIu64 " ms",
		built, programs, (t1 - t0) / 1000000, failed, (vy_now_ns() - t1) / 1000000);
}

void vy_caches_pack_stats(struct vy_server *s, msgpack_packer *pk)
{
	struct vy_pcache *c = &s->pipes;
	vy_pack_cstr(pk, "pipeline_cache");
	msgpack_pack_map(pk, 13);
	vy_pack_cstr(pk, "entries");
	msgpack_pack_uint64(pk, c->count);
	vy_pack_cstr(pk, "bytes");
	msgpack_pack_uint64(pk, c->bytes);
	vy_pack_cstr(pk, "max_entries");
	msgpack_pack_uint64(pk, s->cfg.pipeline_cache_entries);
	vy_pack_cstr(pk, "max_bytes");
	msgpack_pack_uint64(pk, s->cfg.pipeline_cache_bytes);
	vy_pack_cstr(pk, "hits");
	msgpack_pack_uint64(pk, c->hits);
	vy_pack_cstr(pk, "misses");
	msgpack_pack_uint64(pk, c->misses);
	vy_pack_cstr(pk, "disk_hits");
	msgpack_pack_uint64(pk, c->disk_hits);
	vy_pack_cstr(pk, "evictions");
	msgpack_pack_uint64(pk, c->evictions);
	vy_pack_cstr(pk, "coalesced");
	msgpack_pack_uint64(pk, c->coalesced);
	vy_pack_cstr(pk, "compiles");
	msgpack_pack_uint64(pk, c->compile_ns.count);
	vy_pack_cstr(pk, "compile_ns_p50");
	msgpack_pack_uint64(pk, vy_hist_quantile(&c->compile_ns, 0.5));
	vy_pack_cstr(pk, "compile_ns_p99");
	msgpack_pack_uint64(pk, vy_hist_quantile(&c->compile_ns, 0.99));
	vy_pack_cstr(pk, "compile_ns_total");
	msgpack_pack_uint64(pk, c->compile_ns.sum);

	vy_pack_cstr(pk, "spec_cache");
	msgpack_pack_map(pk, 3);
	vy_pack_cstr(pk, "entries");
	msgpack_pack_uint64(pk, c->spec_entries);
	vy_pack_cstr(pk, "hits");
	msgpack_pack_uint64(pk, c->spec_hits);
	vy_pack_cstr(pk, "misses");
	msgpack_pack_uint64(pk, c->spec_misses);

	struct vy_progcache *g = &s->progs;
	vy_pack_cstr(pk, "program_cache");
	msgpack_pack_map(pk, 9);
	vy_pack_cstr(pk, "entries");
	msgpack_pack_uint64(pk, g->count);
	vy_pack_cstr(pk, "bytes");
	msgpack_pack_uint64(pk, g->bytes);
	vy_pack_cstr(pk, "hits");
	msgpack_pack_uint64(pk, g->hits);
	vy_pack_cstr(pk, "hits_by_bytes");
	msgpack_pack_uint64(pk, g->hits_by_bytes);
	vy_pack_cstr(pk, "misses");
	msgpack_pack_uint64(pk, g->misses);
	vy_pack_cstr(pk, "evictions");
	msgpack_pack_uint64(pk, g->evictions);
	vy_pack_cstr(pk, "restored");
	msgpack_pack_uint64(pk, g->restored);
	vy_pack_cstr(pk, "disk_writes");
	msgpack_pack_uint64(pk, g->disk_writes);
	vy_pack_cstr(pk, "disk_rejected");
	msgpack_pack_uint64(pk, g->disk_rejected);
}

static void pack_spec_map(msgpack_packer *pk, const struct vy_spec_map *m)
{
	msgpack_pack_map(pk, m->len);
	for (size_t i = 0; i < m->len; i++) {
		const struct vy_spec_value *v = &m->entries[i].value;
		vy_pack_cstr(pk, m->entries[i].name);
		switch (v->kind) {
		case VY_SPEC_U32:
			msgpack_pack_uint32(pk, v->as.u32);
			break;
		case VY_SPEC_I32:
			msgpack_pack_int32(pk, v->as.i32);
			break;
		case VY_SPEC_F32:
			msgpack_pack_float(pk, v->as.f32);
			break;
		case VY_SPEC_BOOL:
			if (v->as.b) {
				msgpack_pack_true(pk);
			} else {
				msgpack_pack_false(pk);
			}
			break;
		case VY_SPEC_DTYPE:
			vy_pack_cstr(pk, vy_type_name(v->as.dtype));
			break;
		}
	}
}

/* The viewer's own figures of an entry, or the totals for an admin; false when hidden. */
struct row_view {
	uint64_t hits;
	uint64_t first_ns;
	uint64_t last_ns;
};

static bool row_visible(const struct vy_cache_users *u, uid_t viewer, bool admin, uint64_t hits,
	uint64_t first_ns, uint64_t last_ns, struct row_view *out)
{
	const struct vy_cache_use *e = use_find(u, viewer);
	if (admin) {
		*out = (struct row_view){hits, first_ns, last_ns};
		return true;
	}
	if (!e) {
		return false;
	}
	*out = (struct row_view){e->hits, e->first_ns, e->last_ns};
	return true;
}

void vy_caches_pack_list(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk)
{
	uint64_t now = vy_now_ns();
	bool admin = vy_server_is_admin(s, viewer);
	uid_t uid = viewer->uid;
	struct row_view v;
	uint32_t n = 0;
	struct vy_link *l;
	for (l = s->pipes.lru.next; l != &s->pipes.lru; l = l->next) {
		struct vy_pipe *p = VY_CONTAINER_OF(l, struct vy_pipe, lru);
		n += row_visible(&p->users, uid, admin, 0, 0, 0, &v);
	}
	vy_pack_cstr(pk, "pipelines");
	msgpack_pack_array(pk, n);
	for (l = s->pipes.lru.next; l != &s->pipes.lru; l = l->next) {
		struct vy_pipe *p = VY_CONTAINER_OF(l, struct vy_pipe, lru);
		if (!row_visible(
			    &p->users, uid, admin, p->hits, p->created_ns, p->last_use_ns, &v)) {
			continue;
		}
		char hex[VY_PROGRAM_ID_HEX];
		vy_program_id_hex(&p->prog->id, hex);
		msgpack_pack_map(pk, 11);
		vy_pack_cstr(pk, "program_id");
		vy_pack_cstr(pk, hex);
		vy_pack_cstr(pk, "name");
		vy_pack_cstr(pk, p->prog->program->name ? p->prog->program->name : "");
		vy_pack_cstr(pk, "device");
		msgpack_pack_uint32(pk, p->dev->index);
		vy_pack_cstr(pk, "state");
		vy_pack_cstr(pk, p->state == VY_ENTRY_READY ? "ready" : "compiling");
		vy_pack_cstr(pk, "workgroup_size");
		msgpack_pack_array(pk, 3);
		for (int i = 0; i < 3; i++) {
			msgpack_pack_uint32(pk, p->workgroup_size[i]);
		}
		vy_pack_cstr(pk, "spec");
		pack_spec_map(pk, &p->spec);
		vy_pack_cstr(pk, "hits");
		msgpack_pack_uint64(pk, v.hits);
		vy_pack_cstr(pk, "compile_ns");
		msgpack_pack_uint64(pk, p->compile_ns);
		vy_pack_cstr(pk, "bytes");
		msgpack_pack_uint64(pk, p->bytes);
		vy_pack_cstr(pk, "idle_ms");
		msgpack_pack_uint64(pk, (now - v.last_ns) / 1000000);
		vy_pack_cstr(pk, "age_ms");
		msgpack_pack_uint64(pk, (now - v.first_ns) / 1000000);
	}
	n = 0;
	for (l = s->progs.lru.next; l != &s->progs.lru; l = l->next) {
		struct vy_prog *p = VY_CONTAINER_OF(l, struct vy_prog, lru);
		n += row_visible(&p->users, uid, admin, 0, 0, 0, &v);
	}
	vy_pack_cstr(pk, "programs");
	msgpack_pack_array(pk, n);
	for (l = s->progs.lru.next; l != &s->progs.lru; l = l->next) {
		struct vy_prog *p = VY_CONTAINER_OF(l, struct vy_prog, lru);
		if (!row_visible(&p->users, uid, admin, p->hits, 0, p->last_use_ns, &v)) {
			continue;
		}
		char hex[VY_PROGRAM_ID_HEX];
		vy_program_id_hex(&p->id, hex);
		msgpack_pack_map(pk, 5);
		vy_pack_cstr(pk, "program_id");
		vy_pack_cstr(pk, hex);
		vy_pack_cstr(pk, "name");
		vy_pack_cstr(pk, p->program && p->program->name ? p->program->name : "");
		vy_pack_cstr(pk, "bytes");
		msgpack_pack_uint64(pk, p->canonical_len);
		vy_pack_cstr(pk, "hits");
		msgpack_pack_uint64(pk, v.hits);
		vy_pack_cstr(pk, "from_disk");
		if (p->from_disk) {
			msgpack_pack_true(pk);
		} else {
			msgpack_pack_false(pk);
		}
	}
}
