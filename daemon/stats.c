/*
 * The stats tree (DESIGN.md §7.6), packed on demand from the live objects; nothing is copied or
 * aggregated in the background.
 *
 * Visibility: the per-client rows of `stats` and `clients` show only the viewer's own user
 * unless the viewer is an admin; the totals are global.
 */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "vyred.h"

static const int err_codes[] = {
#define VY__ERR_CODE(name, num, retry, desc) VY_E_##name,
	VY_ERR_MAP(VY__ERR_CODE)
#undef VY__ERR_CODE
};

_Static_assert(sizeof(err_codes) / sizeof(err_codes[0]) == VY_ERR_COUNT,
	"VY_ERR_COUNT must match VY_ERR_MAP");

int vy_err_index(int code)
{
	for (int i = 0; i < VY_ERR_COUNT; i++) {
		if (err_codes[i] == code) {
			return i;
		}
	}
	return vy_err_index(VY_E_INTERNAL);
}

int vy_err_at_index(int index)
{
	return err_codes[index];
}

static void pack_hist(msgpack_packer *pk, const char *key, const struct vy_hist *h)
{
	vy_pack_cstr(pk, key);
	msgpack_pack_map(pk, 4);
	vy_pack_kv_u64(pk, "count", h->count);
	vy_pack_kv_u64(pk, "p50_ns", vy_hist_quantile(h, 0.5));
	vy_pack_kv_u64(pk, "p99_ns", vy_hist_quantile(h, 0.99));
	vy_pack_kv_u64(pk, "max_ns", h->max);
}

static bool visible(struct vy_server *s, struct vy_conn *viewer, struct vy_conn *c)
{
	return c->uid == viewer->uid || vy_server_is_admin(s, viewer);
}

static const char *conn_state_name(enum vy_conn_state st)
{
	switch (st) {
	case VY_CONN_OPEN:
		return "open";
	case VY_CONN_EOF:
		return "half-closed";
	case VY_CONN_CLOSING:
		return "closing";
	case VY_CONN_CLOSED:
		break;
	}
	return "closed";
}

static void pack_client_rows(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk)
{
	uint32_t n = 0;
	for (struct vy_link *l = s->conns.next; l != &s->conns; l = l->next) {
		n += visible(s, viewer, VY_CONTAINER_OF(l, struct vy_conn, link));
	}
	uint64_t now = vy_now_ns();
	msgpack_pack_array(pk, n);
	for (struct vy_link *l = s->conns.next; l != &s->conns; l = l->next) {
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, link);
		if (!visible(s, viewer, c)) {
			continue;
		}
		uint64_t resident = 0;
		for (struct vy_link *r = c->residents.next; r != &c->residents; r = r->next) {
			resident += VY_CONTAINER_OF(r, struct vy_resident, owner)->size;
		}
		msgpack_pack_map(pk, 18);
		vy_pack_kv_u64(pk, "id", c->id);
		vy_pack_kv_u64(pk, "pid", (uint64_t)c->pid);
		vy_pack_kv_u64(pk, "uid", (uint64_t)c->uid);
		vy_pack_kv_str(pk, "name", c->name);
		vy_pack_kv_str(pk, "state", conn_state_name(c->state));
		vy_pack_kv_bool(pk, "self", c == viewer);
		vy_pack_kv_u64(pk, "connected_ms", (now - c->connected_ns) / 1000000);
		vy_pack_kv_u64(pk, "requests", c->requests);
		vy_pack_kv_u64(pk, "errors", c->errors);
		vy_pack_kv_u64(pk, "busy", c->busy);
		vy_pack_kv_u64(pk, "in_flight", c->in_flight);
		vy_pack_kv_u64(pk, "bytes_in", c->bytes_in);
		vy_pack_kv_u64(pk, "bytes_out", c->bytes_out);
		vy_pack_kv_u64(pk, "unsent_bytes", c->out_pending);
		vy_pack_kv_bool(pk, "paused", c->paused);
		vy_pack_kv_u64(pk, "resident_bytes", resident);
		vy_pack_kv_u64(pk, "queue_wait_p50_ns", vy_hist_quantile(&c->wait, 0.5));
		vy_pack_kv_u64(pk, "queue_wait_p99_ns", vy_hist_quantile(&c->wait, 0.99));
	}
}

void vy_stats_pack_clients(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk)
{
	vy_pack_cstr(pk, "clients");
	pack_client_rows(s, viewer, pk);
}

static const char *state_name(enum vy_server_state st)
{
	switch (st) {
	case VY_SERVER_STARTING:
		return "starting";
	case VY_SERVER_RUNNING:
		return "running";
	case VY_SERVER_DRAINING:
		return "draining";
	case VY_SERVER_STOPPING:
		break;
	}
	return "stopping";
}

void vy_stats_pack(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk)
{
	uint64_t now = vy_now_ns();
	vy_pack_cstr(pk, "daemon");
	msgpack_pack_map(pk, 19);
	vy_pack_kv_str(pk, "version", VY_DAEMON_VERSION);
	vy_pack_kv_u64(pk, "protocol", VY_PROTOCOL_VERSION);
	vy_pack_kv_u64(pk, "pid", (uint64_t)getpid());
	vy_pack_kv_u64(pk, "uptime_ms", (now - s->start_ns) / 1000000);
	vy_pack_kv_str(pk, "state", state_name(s->state));
	vy_pack_kv_str(pk, "socket", s->activated ? "(socket activation)" : s->cfg.socket_path);
	vy_pack_kv_str(pk, "cache_dir", s->programs_dir ? s->cfg.cache_dir : "");
	vy_pack_kv_u64(pk, "connections_accepted", s->stats.connections_accepted);
	vy_pack_kv_u64(pk, "connections_refused", s->stats.connections_refused);
	vy_pack_kv_u64(pk, "connections_stalled", s->stats.connections_stalled);
	vy_pack_kv_u64(pk, "connections_idle", s->stats.connections_idle);
	vy_pack_kv_u64(pk, "inbound_waits", s->stats.inbound_waits);
	vy_pack_kv_u64(pk, "inbound_bytes", s->inbound);
	vy_pack_kv_u64(pk, "inbound_kept_bytes", s->kept_bytes);
	vy_pack_kv_u64(pk, "frames_reused", s->stats.frames_reused);
	vy_pack_kv_u64(pk, "frames_imported", s->stats.frames_imported);
	vy_pack_kv_u64(pk, "reply_waits", s->stats.reply_waits);
	vy_pack_kv_u64(pk, "reply_bytes", s->replies);
	vy_pack_kv_u64(pk, "backpressure_pauses", s->stats.backpressure_pauses);

	vy_pack_cstr(pk, "devices");
	vy_devices_pack(s, pk, false);

	vy_caches_pack_stats(s, pk);
	vy_resident_pack_stats(s, pk);
	vy_graph_pack_stats(s, pk);

	vy_pack_cstr(pk, "clients");
	msgpack_pack_map(pk, 4);
	vy_pack_kv_u64(pk, "count", s->n_conns);
	vy_pack_kv_u64(pk, "bytes_in", s->stats.bytes_in);
	vy_pack_kv_u64(pk, "bytes_out", s->stats.bytes_out);
	vy_pack_cstr(pk, "list");
	pack_client_rows(s, viewer, pk);

	uint64_t depth = 0;
	for (uint32_t i = 0; i < s->n_devices; i++) {
		depth += vy_device_load(&s->devices[i]);
	}
	vy_pack_cstr(pk, "queue");
	msgpack_pack_map(pk, 5);
	vy_pack_kv_u64(pk, "depth", depth);
	vy_pack_kv_u64(pk, "jobs", s->stats.queue_wait.count);
	vy_pack_kv_u64(pk, "wait_p50_ns", vy_hist_quantile(&s->stats.queue_wait, 0.5));
	vy_pack_kv_u64(pk, "wait_p99_ns", vy_hist_quantile(&s->stats.queue_wait, 0.99));
	vy_pack_kv_u64(pk, "wait_max_ns", s->stats.queue_wait.max);

	vy_pack_cstr(pk, "requests");
	msgpack_pack_map(pk, 3);
	vy_pack_kv_u64(pk, "bad_frames", s->stats.bad_frames);
	vy_pack_cstr(pk, "by_op");
	msgpack_pack_map(pk, VY_OP_COUNT);
	for (int op = 0; op < VY_OP_COUNT; op++) {
		vy_pack_kv_u64(pk, vy_op_name((enum vy_op)op), s->stats.by_op[op]);
	}
	vy_pack_cstr(pk, "by_error");
	msgpack_pack_map(pk, VY_ERR_COUNT);
	for (int i = 0; i < VY_ERR_COUNT; i++) {
		vy_pack_kv_u64(pk, vy_err_name(vy_err_at_index(i)), s->stats.by_error[i]);
	}

	vy_pack_cstr(pk, "latency");
	msgpack_pack_map(pk, VY_OP_COUNT);
	for (int op = 0; op < VY_OP_COUNT; op++) {
		pack_hist(pk, vy_op_name((enum vy_op)op), &s->stats.latency[op]);
	}
}
