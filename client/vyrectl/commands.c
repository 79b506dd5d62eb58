/*
 * The commands that inspect the daemon: status, stats, devices, clients, buffers, cache and
 * ping. Each asks for one reply (stats, clients, buffers, cache_list) and renders it as tables,
 * as JSON through json-c (--json), or for stats as Prometheus text (--prometheus). The tables
 * read the fields the daemon documents (one it does not send reads as 0 or empty); the JSON forms
 * carry the daemon's tree unchanged, so nothing it sends is lost on the way.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session.h"

/* The parsing every command without options of its own does. */
static int no_options(struct ctl *ctl, int argc, char **argv, int n_args)
{
	static const struct option none[] = {{NULL, 0, NULL, 0}};
	if (ctl_getopt(ctl, argc, argv, "", none) != -1) {
		return CTL_EXIT_USAGE;
	}
	return ctl_want_args(ctl, argc, argv, n_args) ? CTL_EXIT_OK : CTL_EXIT_USAGE;
}

/* A scalar value as short text: numbers, bools and strings; "-" for anything else. */
static const char *scalar_text(const struct vy_value *v, char *buf, size_t size)
{
	uint64_t u;
	int64_t i;
	double f;
	bool b;
	if (vy_value_u64(v, &u) && vy_value_kind(v) == VY_KIND_UINT) {
		snprintf(buf, size, "%" PRIu64, u);
	} else if (vy_value_i64(v, &i)) {
		snprintf(buf, size, "%" PRId64, i);
	} else if (vy_value_kind(v) == VY_KIND_FLOAT && vy_value_f64(v, &f)) {
		snprintf(buf, size, "%.9g", f);
	} else if (vy_value_bool(v, &b)) {
		snprintf(buf, size, "%s", b ? "true" : "false");
	} else if (vy_value_str(v)) {
		snprintf(buf, size, "%s", vy_value_str(v));
	} else {
		snprintf(buf, size, "-");
	}
	return buf;
}

static const char *yes_no(const struct vy_value *v, const char *path)
{
	return ctl_bool(v, path) ? "yes" : "no";
}

/* Sum of the numbers of a map (requests by operation, by error code). */
static uint64_t map_sum(const struct vy_value *map)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < vy_value_len(map); i++) {
		uint64_t n = 0;
		vy_value_u64(vy_value_item(map, i), &n);
		sum += n;
	}
	return sum;
}

/* "75.0%" of hits among lookups, or "-" before the first lookup. */
static char *hit_rate(uint64_t hits, uint64_t misses, char *buf)
{
	if (hits + misses == 0) {
		snprintf(buf, CTL_FMT_MAX, "-");
	} else {
		snprintf(
			buf, CTL_FMT_MAX, "%.1f%%", 100.0 * (double)hits / (double)(hits + misses));
	}
	return buf;
}

static char *memory_text(const struct vy_value *dev, char *buf, size_t size)
{
	uint64_t total = ctl_u64(dev, "memory_total");
	char used[CTL_FMT_MAX];
	char all[CTL_FMT_MAX];
	if (!total) {
		snprintf(buf, size, "host memory");
	} else {
		snprintf(buf, size, "%s used of %s",
			ctl_fmt_bytes(ctl_u64(dev, "memory_used"), used),
			ctl_fmt_bytes(total, all));
	}
	return buf;
}

/* --- status ----------------------------------------------------------------------------- */

static struct json_object *status_json(const struct vy_value *hello, const struct vy_value *st)
{
	const struct vy_value *d = vy_value_get(st, "daemon");
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "server", ctl_json_of(vy_value_get(hello, "server")));
	json_object_object_add(o, "version", ctl_json_of(vy_value_get(d, "version")));
	json_object_object_add(o, "protocol", ctl_json_of(vy_value_get(hello, "protocol")));
	json_object_object_add(o, "pid", ctl_json_of(vy_value_get(d, "pid")));
	json_object_object_add(o, "state", ctl_json_of(vy_value_get(d, "state")));
	json_object_object_add(o, "uptime_ms", ctl_json_of(vy_value_get(d, "uptime_ms")));
	json_object_object_add(o, "socket", ctl_json_of(vy_value_get(d, "socket")));
	struct json_object *devs = json_object_new_array();
	const struct vy_value *dv = vy_value_get(st, "devices");
	for (size_t i = 0; i < vy_value_len(dv); i++) {
		const struct vy_value *dev = vy_value_item(dv, i);
		struct json_object *j = json_object_new_object();
		static const char *const keys[] = {
			"index", "name", "backend", "driver", "memory_total", "memory_used"};
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			json_object_object_add(j, keys[k], ctl_json_of(vy_value_get(dev, keys[k])));
		}
		json_object_array_add(devs, j);
	}
	json_object_object_add(o, "devices", devs);
	json_object_object_add(o, "clients", ctl_json_of(vy_value_get(st, "clients.count")));
	uint64_t hits = ctl_u64(st, "pipeline_cache.hits");
	uint64_t misses = ctl_u64(st, "pipeline_cache.misses");
	struct json_object *pc = json_object_new_object();
	json_object_object_add(
		pc, "entries", ctl_json_of(vy_value_get(st, "pipeline_cache.entries")));
	json_object_object_add(pc, "hits", json_object_new_uint64(hits));
	json_object_object_add(pc, "misses", json_object_new_uint64(misses));
	json_object_object_add(
		pc, "disk_hits", ctl_json_of(vy_value_get(st, "pipeline_cache.disk_hits")));
	json_object_object_add(pc, "hit_rate",
		hits + misses ? json_object_new_double((double)hits / (double)(hits + misses))
			      : NULL);
	json_object_object_add(o, "pipeline_cache", pc);
	json_object_object_add(o, "queue_depth", ctl_json_of(vy_value_get(st, "queue.depth")));
	json_object_object_add(
		o, "requests", json_object_new_uint64(map_sum(vy_value_get(st, "requests.by_op"))));
	json_object_object_add(o, "errors",
		json_object_new_uint64(map_sum(vy_value_get(st, "requests.by_error"))));
	return o;
}

static void status_print(const struct vy_value *hello, const struct vy_value *st)
{
	const struct vy_value *d = vy_value_get(st, "daemon");
	char a[CTL_FMT_MAX];
	char b[CTL_FMT_MAX];
	char c[CTL_FMT_MAX];
	printf("%s (protocol %" PRIu64 "), pid %" PRIu64 ", %s, up %s\n", ctl_str(hello, "server"),
		ctl_u64(hello, "protocol"), ctl_u64(d, "pid"), ctl_str(d, "state"),
		ctl_fmt_uptime(ctl_u64(d, "uptime_ms"), a));
	printf("socket     %s\n", ctl_str(d, "socket"));
	const char *cache_dir = ctl_str(d, "cache_dir");
	printf("cache dir  %s\n", cache_dir[0] ? cache_dir : "(disk cache off)");

	const struct vy_value *dv = vy_value_get(st, "devices");
	printf("devices    %zu\n", vy_value_len(dv));
	for (size_t i = 0; i < vy_value_len(dv); i++) {
		const struct vy_value *dev = vy_value_item(dv, i);
		char mem[2 * CTL_FMT_MAX + 8];
		printf("  %" PRIu64 "  %-9s  %s  (%s)\n", ctl_u64(dev, "index"),
			ctl_str(dev, "backend"), ctl_str(dev, "name"),
			memory_text(dev, mem, sizeof(mem)));
	}
	printf("clients    %" PRIu64 " connected (%" PRIu64 " accepted since start)\n",
		ctl_u64(st, "clients.count"), ctl_u64(d, "connections_accepted"));
	uint64_t hits = ctl_u64(st, "pipeline_cache.hits");
	uint64_t misses = ctl_u64(st, "pipeline_cache.misses");
	printf("cache      hit rate %s: %" PRIu64 " pipelines, %" PRIu64 " hits, %" PRIu64
	       " misses (%" PRIu64 " loaded from disk)\n",
		hit_rate(hits, misses, a), ctl_u64(st, "pipeline_cache.entries"), hits, misses,
		ctl_u64(st, "pipeline_cache.disk_hits"));
	printf("queue      depth %" PRIu64 ", wait p50 %s, p99 %s\n", ctl_u64(st, "queue.depth"),
		ctl_fmt_ns(ctl_u64(st, "queue.wait_p50_ns"), b),
		ctl_fmt_ns(ctl_u64(st, "queue.wait_p99_ns"), c));
	printf("resident   %" PRIu64 " buffers, %s\n", ctl_u64(st, "resident.buffers"),
		ctl_fmt_bytes(ctl_u64(st, "resident.bytes"), a));
	printf("requests   %" PRIu64 ", %" PRIu64 " answered with an error\n",
		map_sum(vy_value_get(st, "requests.by_op")),
		map_sum(vy_value_get(st, "requests.by_error")));
}

/* The read-only commands share one shape: no options, one request, its answer printed. */
static int fetch_and_show(struct ctl *ctl, int argc, char **argv, const char *op,
	void (*show)(const struct ctl *ctl, struct vy_client *c, struct vy_reply *r))
{
	int rc = no_options(ctl, argc, argv, 0);
	if (rc) {
		return rc;
	}
	struct vy_client *c;
	struct vy_reply *r;
	rc = ctl_fetch(ctl, op, &c, &r);
	if (rc) {
		return rc;
	}
	show(ctl, c, r);
	vy_reply_destroy(r);
	vy_client_close(c);
	return CTL_EXIT_OK;
}

static void status_show(const struct ctl *ctl, struct vy_client *c, struct vy_reply *r)
{
	if (ctl->json) {
		ctl_json_print(status_json(vy_client_hello(c), vy_reply_value(r)));
	} else {
		status_print(vy_client_hello(c), vy_reply_value(r));
	}
}

int ctl_cmd_status(struct ctl *ctl, int argc, char **argv)
{
	return fetch_and_show(ctl, argc, argv, "stats", status_show);
}

/* --- stats ------------------------------------------------------------------------------ */

static void stats_caches(const struct vy_value *st)
{
	static const char *const heads[] = {
		"cache", ">entries", ">bytes", ">hits", ">misses", ">hit rate", ">evictions"};
	static const char *const names[] = {"pipeline_cache", "program_cache", "spec_cache"};
	struct ctl_table t;
	ctl_table_init(&t, 7, heads);
	for (size_t i = 0; i < 3; i++) {
		const struct vy_value *c = vy_value_get(st, names[i]);
		if (!c) {
			continue;
		}
		char e[CTL_FMT_MAX], by[CTL_FMT_MAX], h[CTL_FMT_MAX], m[CTL_FMT_MAX];
		char rate[CTL_FMT_MAX], ev[CTL_FMT_MAX];
		const char *row[] = {names[i], ctl_fmt_u64(ctl_u64(c, "entries"), e),
			vy_value_get(c, "bytes") ? ctl_fmt_bytes(ctl_u64(c, "bytes"), by) : NULL,
			ctl_fmt_u64(ctl_u64(c, "hits"), h), ctl_fmt_u64(ctl_u64(c, "misses"), m),
			hit_rate(ctl_u64(c, "hits"), ctl_u64(c, "misses"), rate),
			vy_value_get(c, "evictions") ? ctl_fmt_u64(ctl_u64(c, "evictions"), ev)
						     : NULL};
		ctl_table_row(&t, row);
	}
	ctl_table_print(&t, stdout);
	ctl_table_finish(&t);
	const struct vy_value *pc = vy_value_get(st, "pipeline_cache");
	const struct vy_value *pg = vy_value_get(st, "program_cache");
	char a[CTL_FMT_MAX], b[CTL_FMT_MAX], c[CTL_FMT_MAX];
	printf("compiles: %" PRIu64 ", p50 %s, p99 %s, total %s; %" PRIu64
	       " pipelines loaded from disk, %" PRIu64 " requests joined a running compile\n",
		ctl_u64(pc, "compiles"), ctl_fmt_ns(ctl_u64(pc, "compile_ns_p50"), a),
		ctl_fmt_ns(ctl_u64(pc, "compile_ns_p99"), b),
		ctl_fmt_ns(ctl_u64(pc, "compile_ns_total"), c), ctl_u64(pc, "disk_hits"),
		ctl_u64(pc, "coalesced"));
	printf("programs on disk: %" PRIu64 " restored at start, %" PRIu64 " written, %" PRIu64
	       " rejected\n",
		ctl_u64(pg, "restored"), ctl_u64(pg, "disk_writes"), ctl_u64(pg, "disk_rejected"));
}

static void stats_devices(const struct vy_value *st)
{
	static const char *const heads[] = {">dev", "backend", "name", ">dispatches", ">batches",
		">largest", ">busy", ">queue", ">running", ">lost", "memory"};
	struct ctl_table t;
	ctl_table_init(&t, 11, heads);
	const struct vy_value *dv = vy_value_get(st, "devices");
	for (size_t i = 0; i < vy_value_len(dv); i++) {
		const struct vy_value *d = vy_value_item(dv, i);
		char idx[CTL_FMT_MAX], n[CTL_FMT_MAX], bat[CTL_FMT_MAX], lg[CTL_FMT_MAX];
		char busy[CTL_FMT_MAX], q[CTL_FMT_MAX], run[CTL_FMT_MAX], lost[CTL_FMT_MAX];
		char mem[2 * CTL_FMT_MAX + 8];
		const char *row[] = {ctl_fmt_u64(ctl_u64(d, "index"), idx), ctl_str(d, "backend"),
			ctl_str(d, "name"), ctl_fmt_u64(ctl_u64(d, "dispatches"), n),
			ctl_fmt_u64(ctl_u64(d, "batches"), bat),
			ctl_fmt_u64(ctl_u64(d, "largest_batch"), lg),
			ctl_fmt_ns(ctl_u64(d, "busy_ns"), busy),
			ctl_fmt_u64(ctl_u64(d, "queue_depth"), q),
			ctl_fmt_u64(ctl_u64(d, "running"), run),
			ctl_fmt_u64(ctl_u64(d, "lost"), lost), memory_text(d, mem, sizeof(mem))};
		ctl_table_row(&t, row);
	}
	ctl_table_print(&t, stdout);
	ctl_table_finish(&t);
}

static void client_rows(const struct vy_value *list)
{
	static const char *const heads[] = {">id", ">pid", ">uid", "name", "state", ">requests",
		">errors", ">busy", ">in flight", ">in", ">out", ">resident", ">connected"};
	struct ctl_table t;
	ctl_table_init(&t, 13, heads);
	for (size_t i = 0; i < vy_value_len(list); i++) {
		const struct vy_value *c = vy_value_item(list, i);
		char id[CTL_FMT_MAX], pid[CTL_FMT_MAX], uid[CTL_FMT_MAX], req[CTL_FMT_MAX];
		char err[CTL_FMT_MAX], busy[CTL_FMT_MAX], fl[CTL_FMT_MAX], in[CTL_FMT_MAX];
		char out[CTL_FMT_MAX], res[CTL_FMT_MAX], age[CTL_FMT_MAX];
		snprintf(id, sizeof(id), "%s%" PRIu64, ctl_bool(c, "self") ? "*" : "",
			ctl_u64(c, "id"));
		const char *row[] = {id, ctl_fmt_u64(ctl_u64(c, "pid"), pid),
			ctl_fmt_u64(ctl_u64(c, "uid"), uid), ctl_str(c, "name"),
			ctl_bool(c, "paused") ? "paused" : ctl_str(c, "state"),
			ctl_fmt_u64(ctl_u64(c, "requests"), req),
			ctl_fmt_u64(ctl_u64(c, "errors"), err),
			ctl_fmt_u64(ctl_u64(c, "busy"), busy),
			ctl_fmt_u64(ctl_u64(c, "in_flight"), fl),
			ctl_fmt_bytes(ctl_u64(c, "bytes_in"), in),
			ctl_fmt_bytes(ctl_u64(c, "bytes_out"), out),
			ctl_fmt_bytes(ctl_u64(c, "resident_bytes"), res),
			ctl_fmt_uptime(ctl_u64(c, "connected_ms"), age)};
		ctl_table_row(&t, row);
	}
	ctl_table_print(&t, stdout);
	ctl_table_finish(&t);
}

static void stats_requests(const struct vy_value *st)
{
	static const char *const heads[] = {
		"operation", ">requests", ">measured", ">p50", ">p99", ">max"};
	struct ctl_table t;
	ctl_table_init(&t, 6, heads);
	const struct vy_value *by_op = vy_value_get(st, "requests.by_op");
	const struct vy_value *lat = vy_value_get(st, "latency");
	for (size_t i = 0; i < vy_value_len(by_op); i++) {
		const char *op = vy_value_key(by_op, i);
		const struct vy_value *h = vy_value_get(lat, op);
		uint64_t n = 0;
		vy_value_u64(vy_value_item(by_op, i), &n);
		if (!n && !ctl_u64(h, "count")) {
			continue;
		}
		char a[CTL_FMT_MAX], b[CTL_FMT_MAX], c[CTL_FMT_MAX], d[CTL_FMT_MAX];
		char e[CTL_FMT_MAX];
		const char *row[] = {op, ctl_fmt_u64(n, a), ctl_fmt_u64(ctl_u64(h, "count"), b),
			ctl_fmt_ns(ctl_u64(h, "p50_ns"), c), ctl_fmt_ns(ctl_u64(h, "p99_ns"), d),
			ctl_fmt_ns(ctl_u64(h, "max_ns"), e)};
		ctl_table_row(&t, row);
	}
	ctl_table_print(&t, stdout);
	ctl_table_finish(&t);
	const struct vy_value *by_err = vy_value_get(st, "requests.by_error");
	printf("errors:");
	size_t shown = 0;
	for (size_t i = 0; i < vy_value_len(by_err); i++) {
		uint64_t n = 0;
		vy_value_u64(vy_value_item(by_err, i), &n);
		if (n) {
			printf("%s %s %" PRIu64, shown++ ? "," : "", vy_value_key(by_err, i), n);
		}
	}
	printf("%s; bad frames: %" PRIu64 "\n", shown ? "" : " none",
		ctl_u64(st, "requests.bad_frames"));
}

static void stats_print(const struct vy_value *st)
{
	const struct vy_value *d = vy_value_get(st, "daemon");
	char a[CTL_FMT_MAX], b[CTL_FMT_MAX], c[CTL_FMT_MAX], e[CTL_FMT_MAX];
	printf("vyred %s (protocol %" PRIu64 "), pid %" PRIu64 ", %s, up %s\n",
		ctl_str(d, "version"), ctl_u64(d, "protocol"), ctl_u64(d, "pid"),
		ctl_str(d, "state"), ctl_fmt_uptime(ctl_u64(d, "uptime_ms"), a));
	printf("connections: %" PRIu64 " accepted, %" PRIu64 " refused, %" PRIu64
	       " closed stalled; %" PRIu64 " backpressure pauses\n",
		ctl_u64(d, "connections_accepted"), ctl_u64(d, "connections_refused"),
		ctl_u64(d, "connections_stalled"), ctl_u64(d, "backpressure_pauses"));
	printf("inbound: %s held (%" PRIu64 " waits), %s kept for the next frame; %" PRIu64
	       " frames reused, %" PRIu64 " imported\n",
		ctl_fmt_bytes(ctl_u64(d, "inbound_bytes"), a), ctl_u64(d, "inbound_waits"),
		ctl_fmt_bytes(ctl_u64(d, "inbound_kept_bytes"), b), ctl_u64(d, "frames_reused"),
		ctl_u64(d, "frames_imported"));

	printf("\nDEVICES\n");
	stats_devices(st);
	printf("\nCACHES\n");
	stats_caches(st);

	const struct vy_value *r = vy_value_get(st, "resident");
	printf("\nRESIDENT\n%" PRIu64 " buffers (%" PRIu64 " named), %s; %" PRIu64
	       " allocated, %" PRIu64 " freed, %" PRIu64 " lost; %" PRIu64
	       " shared-memory regions, %s\n",
		ctl_u64(r, "buffers"), ctl_u64(r, "named"), ctl_fmt_bytes(ctl_u64(r, "bytes"), a),
		ctl_u64(r, "allocs"), ctl_u64(r, "frees"), ctl_u64(r, "lost"),
		ctl_u64(r, "shm_regions"), ctl_fmt_bytes(ctl_u64(r, "shm_bytes"), b));

	const struct vy_value *cl = vy_value_get(st, "clients");
	printf("\nCLIENTS\n%" PRIu64 " connected; %s in, %s out\n", ctl_u64(cl, "count"),
		ctl_fmt_bytes(ctl_u64(cl, "bytes_in"), a),
		ctl_fmt_bytes(ctl_u64(cl, "bytes_out"), b));
	client_rows(vy_value_get(cl, "list"));

	const struct vy_value *q = vy_value_get(st, "queue");
	printf("\nQUEUE\ndepth %" PRIu64 "; %" PRIu64 " jobs waited p50 %s, p99 %s, max %s\n",
		ctl_u64(q, "depth"), ctl_u64(q, "jobs"), ctl_fmt_ns(ctl_u64(q, "wait_p50_ns"), a),
		ctl_fmt_ns(ctl_u64(q, "wait_p99_ns"), c), ctl_fmt_ns(ctl_u64(q, "wait_max_ns"), e));

	printf("\nREQUESTS (latency from decode to reply)\n");
	stats_requests(st);
}

int ctl_cmd_stats(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{"prometheus", no_argument, NULL, 'p'}, {NULL, 0, NULL, 0}};
	bool prometheus = false;
	int opt;
	while ((opt = ctl_getopt(ctl, argc, argv, "p", opts)) != -1) {
		if (opt != 'p') {
			return CTL_EXIT_USAGE;
		}
		prometheus = true;
	}
	if (!ctl_want_args(ctl, argc, argv, 0)) {
		return CTL_EXIT_USAGE;
	}
	if (prometheus && ctl->json) {
		return ctl_usage_error(ctl, "give --json or --prometheus, not both");
	}
	struct vy_client *c;
	struct vy_reply *r;
	int rc = ctl_fetch(ctl, "stats", &c, &r);
	if (rc) {
		return rc;
	}
	if (prometheus) {
		ctl_prometheus_write(vy_reply_value(r), stdout);
	} else if (ctl->json) {
		ctl_json_print(ctl_json_of(vy_reply_value(r)));
	} else {
		stats_print(vy_reply_value(r));
	}
	vy_reply_destroy(r);
	vy_client_close(c);
	return CTL_EXIT_OK;
}

/* --- devices ---------------------------------------------------------------------------- */

static void device_print(const struct vy_value *d)
{
	char a[CTL_FMT_MAX], b[CTL_FMT_MAX];
	char mem[2 * CTL_FMT_MAX + 8];
	printf("device %" PRIu64 ": %s\n", ctl_u64(d, "index"), ctl_str(d, "name"));
	printf("  backend     %s (%s)\n", ctl_str(d, "backend"), ctl_str(d, "version"));
	printf("  driver      %s\n", ctl_str(d, "driver"));
	const char *uuid = ctl_str(d, "uuid");
	printf("  ids         vendor 0x%04" PRIx64 ", device 0x%04" PRIx64 "%s%s\n",
		ctl_u64(d, "vendor_id"), ctl_u64(d, "device_id"), *uuid ? ", uuid " : "", uuid);
	printf("  memory      %s\n", memory_text(d, mem, sizeof(mem)));
	printf("  subgroups   %s, size %" PRIu64 "\n",
		ctl_bool(d, "subgroup_ops") ? "supported" : "not supported",
		ctl_u64(d, "subgroup_size"));
	printf("  workgroups  at most %" PRIu64 " x %" PRIu64 " x %" PRIu64 ", %" PRIu64
	       " invocations\n",
		ctl_u64(d, "max_workgroup_size.0"), ctl_u64(d, "max_workgroup_size.1"),
		ctl_u64(d, "max_workgroup_size.2"), ctl_u64(d, "max_workgroup_invocations"));
	printf("  buffers     at most %s each\n",
		ctl_fmt_bytes(ctl_u64(d, "max_storage_buffer_bytes"), a));
	printf("  float       fma fused: %s, div exact: %s, sqrt exact: %s, subnormals: %s\n",
		yes_no(d, "float.fma_fused"), yes_no(d, "float.div_exact"),
		yes_no(d, "float.sqrt_exact"),
		ctl_bool(d, "float.keeps_subnormals") ? "kept" : "flushed");
	printf("  constants   folded exactly: %s, selects exact: %s\n",
		yes_no(d, "float.fold_exact"), yes_no(d, "float.select_exact"));
	if (ctl_u64(d, "loop_passes") > 0) {
		printf("  loops       at most %" PRIu64 " passes per invocation, over all its "
		       "loops\n",
			ctl_u64(d, "loop_passes"));
	} else {
		printf("  loops       no limit found\n");
	}
	printf("  work        %" PRIu64 " dispatches in %" PRIu64 " batches (largest %" PRIu64
	       "), busy %s, queue %" PRIu64 ", running %" PRIu64 ", timed out %" PRIu64
	       ", lost %" PRIu64 "\n",
		ctl_u64(d, "dispatches"), ctl_u64(d, "batches"), ctl_u64(d, "largest_batch"),
		ctl_fmt_ns(ctl_u64(d, "busy_ns"), b), ctl_u64(d, "queue_depth"),
		ctl_u64(d, "running"), ctl_u64(d, "timeouts"), ctl_u64(d, "lost"));
	const struct vy_value *bc = vy_value_get(d, "backend_cache");
	if (vy_value_kind(bc) == VY_KIND_MAP) {
		printf("  pipelines   %" PRIu64 " in the backend's cache (%s), %" PRIu64
		       " hits, %" PRIu64 " misses, %" PRIu64 " evictions\n",
			ctl_u64(bc, "entries"), ctl_fmt_bytes(ctl_u64(bc, "bytes"), a),
			ctl_u64(bc, "hits"), ctl_u64(bc, "misses"), ctl_u64(bc, "evictions"));
	}
}

static void devices_show(const struct ctl *ctl, struct vy_client *c, struct vy_reply *r)
{
	const struct vy_value *dv = vy_reply_get(r, "devices");
	if (ctl->json) {
		ctl_json_print(ctl_json_of(dv));
	} else {
		for (size_t i = 0; i < vy_value_len(dv); i++) {
			if (i) {
				putchar('\n');
			}
			device_print(vy_value_item(dv, i));
		}
	}
}

int ctl_cmd_devices(struct ctl *ctl, int argc, char **argv)
{
	return fetch_and_show(ctl, argc, argv, "stats", devices_show);
}

/* --- clients, buffers ------------------------------------------------------------------- */

static void clients_show(const struct ctl *ctl, struct vy_client *c, struct vy_reply *r)
{
	if (ctl->json) {
		ctl_json_print(ctl_json_of(vy_reply_get(r, "clients")));
	} else {
		client_rows(vy_reply_get(r, "clients"));
	}
}

int ctl_cmd_clients(struct ctl *ctl, int argc, char **argv)
{
	return fetch_and_show(ctl, argc, argv, "clients", clients_show);
}

static void buffers_show(const struct ctl *ctl, struct vy_client *c, struct vy_reply *r)
{
	const struct vy_value *list = vy_reply_get(r, "buffers");
	if (ctl->json) {
		ctl_json_print(ctl_json_of(list));
	} else {
		static const char *const heads[] = {"handle", ">size", "name", ">uid", ">pid",
			">client", ">device", ">age", ">idle", "state"};
		struct ctl_table t;
		ctl_table_init(&t, 10, heads);
		for (size_t i = 0; i < vy_value_len(list); i++) {
			const struct vy_value *b = vy_value_item(list, i);
			char h[CTL_FMT_MAX], sz[CTL_FMT_MAX], uid[CTL_FMT_MAX], pid[CTL_FMT_MAX];
			char cl[CTL_FMT_MAX], dev[CTL_FMT_MAX], age[CTL_FMT_MAX], idle[CTL_FMT_MAX];
			/* The daemon sends pids as signed numbers. */
			int64_t p = 0;
			vy_value_i64(vy_value_get(b, "pid"), &p);
			snprintf(pid, sizeof(pid), "%" PRId64, p);
			snprintf(h, sizeof(h), "0x%016" PRIx64, ctl_u64(b, "handle"));
			const char *name = ctl_str(b, "name");
			const char *row[] = {h, ctl_fmt_bytes(ctl_u64(b, "size"), sz),
				name[0] ? name : NULL, ctl_fmt_u64(ctl_u64(b, "uid"), uid), pid,
				ctl_fmt_u64(ctl_u64(b, "client"), cl),
				ctl_fmt_u64(ctl_u64(b, "device"), dev),
				ctl_fmt_uptime(ctl_u64(b, "age_ms"), age),
				ctl_fmt_uptime(ctl_u64(b, "idle_ms"), idle),
				ctl_bool(b, "lost") ? "lost" : "ok"};
			ctl_table_row(&t, row);
		}
		ctl_table_print(&t, stdout);
		ctl_table_finish(&t);
	}
}

int ctl_cmd_buffers(struct ctl *ctl, int argc, char **argv)
{
	return fetch_and_show(ctl, argc, argv, "buffers", buffers_show);
}

static void graphs_show(const struct ctl *ctl, struct vy_client *c, struct vy_reply *r)
{
	const struct vy_value *list = vy_reply_get(r, "graphs");
	if (ctl->json) {
		ctl_json_print(ctl_json_of(list));
		return;
	}
	static const char *const heads[] = {"graph", "name", ">steps", ">inputs", ">outputs",
		">barriers", ">temps", ">uid", ">client", ">device", ">runs", ">age"};
	struct ctl_table t;
	ctl_table_init(&t, 12, heads);
	for (size_t i = 0; i < vy_value_len(list); i++) {
		const struct vy_value *g = vy_value_item(list, i);
		char h[CTL_FMT_MAX], st[CTL_FMT_MAX], in[CTL_FMT_MAX], out[CTL_FMT_MAX];
		char ba[CTL_FMT_MAX], tb[CTL_FMT_MAX], uid[CTL_FMT_MAX], cl[CTL_FMT_MAX];
		char dev[CTL_FMT_MAX], runs[CTL_FMT_MAX], age[CTL_FMT_MAX];
		snprintf(h, sizeof(h), "0x%016" PRIx64, ctl_u64(g, "graph"));
		const char *name = ctl_str(g, "name");
		const char *row[] = {h, name[0] ? name : NULL, ctl_fmt_u64(ctl_u64(g, "steps"), st),
			ctl_fmt_u64(ctl_u64(g, "inputs"), in),
			ctl_fmt_u64(ctl_u64(g, "outputs"), out),
			ctl_fmt_u64(ctl_u64(g, "barriers"), ba),
			ctl_fmt_bytes(ctl_u64(g, "temp_bytes"), tb),
			ctl_fmt_u64(ctl_u64(g, "uid"), uid), ctl_fmt_u64(ctl_u64(g, "client"), cl),
			ctl_fmt_u64(ctl_u64(g, "device"), dev),
			ctl_fmt_u64(ctl_u64(g, "runs"), runs),
			ctl_fmt_uptime(ctl_u64(g, "age_ms"), age)};
		ctl_table_row(&t, row);
	}
	ctl_table_print(&t, stdout);
	ctl_table_finish(&t);
}

int ctl_cmd_graphs(struct ctl *ctl, int argc, char **argv)
{
	return fetch_and_show(ctl, argc, argv, "graphs", graphs_show);
}

/* --- cache ------------------------------------------------------------------------------ */

static void spec_text(const struct vy_value *spec, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < vy_value_len(spec) && n < size; i++) {
		char v[64];
		n += (size_t)snprintf(buf + n, size - n, "%s%s=%s", i ? "," : "",
			vy_value_key(spec, i), scalar_text(vy_value_item(spec, i), v, sizeof(v)));
	}
}

static void cache_list_print(const struct vy_reply *r)
{
	static const char *const pheads[] = {"program", "name", ">device", "state", "workgroup",
		"spec", ">hits", ">compile", ">bytes", ">idle"};
	const struct vy_value *pipes = vy_reply_get(r, "pipelines");
	printf("PIPELINES (%zu, most recently used first)\n", vy_value_len(pipes));
	struct ctl_table t;
	ctl_table_init(&t, 10, pheads);
	for (size_t i = 0; i < vy_value_len(pipes); i++) {
		const struct vy_value *p = vy_value_item(pipes, i);
		char dev[CTL_FMT_MAX], wg[3 * CTL_FMT_MAX], hits[CTL_FMT_MAX], ct[CTL_FMT_MAX];
		char by[CTL_FMT_MAX], idle[CTL_FMT_MAX], spec[256];
		snprintf(wg, sizeof(wg), "%" PRIu64 "x%" PRIu64 "x%" PRIu64,
			ctl_u64(p, "workgroup_size.0"), ctl_u64(p, "workgroup_size.1"),
			ctl_u64(p, "workgroup_size.2"));
		spec_text(vy_value_get(p, "spec"), spec, sizeof(spec));
		const char *name = ctl_str(p, "name");
		const char *row[] = {ctl_str(p, "program_id"), name[0] ? name : NULL,
			ctl_fmt_u64(ctl_u64(p, "device"), dev), ctl_str(p, "state"), wg,
			spec[0] ? spec : NULL, ctl_fmt_u64(ctl_u64(p, "hits"), hits),
			ctl_fmt_ns(ctl_u64(p, "compile_ns"), ct),
			ctl_fmt_bytes(ctl_u64(p, "bytes"), by),
			ctl_fmt_uptime(ctl_u64(p, "idle_ms"), idle)};
		ctl_table_row(&t, row);
	}
	ctl_table_print(&t, stdout);
	ctl_table_finish(&t);

	static const char *const gheads[] = {"program", "name", ">bytes", ">hits", "from disk"};
	const struct vy_value *progs = vy_reply_get(r, "programs");
	printf("\nPROGRAMS (%zu, most recently used first)\n", vy_value_len(progs));
	ctl_table_init(&t, 5, gheads);
	for (size_t i = 0; i < vy_value_len(progs); i++) {
		const struct vy_value *p = vy_value_item(progs, i);
		char by[CTL_FMT_MAX], hits[CTL_FMT_MAX];
		const char *name = ctl_str(p, "name");
		const char *row[] = {ctl_str(p, "program_id"), name[0] ? name : NULL,
			ctl_fmt_bytes(ctl_u64(p, "bytes"), by),
			ctl_fmt_u64(ctl_u64(p, "hits"), hits), yes_no(p, "from_disk")};
		ctl_table_row(&t, row);
	}
	ctl_table_print(&t, stdout);
	ctl_table_finish(&t);
}

int ctl_cmd_cache(struct ctl *ctl, int argc, char **argv)
{
	int rc = no_options(ctl, argc, argv, 1);
	if (rc) {
		return rc;
	}
	const char *sub = argv[optind];
	bool list = strcmp(sub, "list") == 0;
	if (!list && strcmp(sub, "clear") != 0) {
		return ctl_usage_error(ctl, "no subcommand \"%s\" (list or clear)", sub);
	}
	struct vy_client *c;
	struct vy_reply *r;
	rc = ctl_fetch(ctl, list ? "cache_list" : "cache_clear", &c, &r);
	if (rc) {
		return rc;
	}
	if (ctl->json) {
		ctl_json_print(ctl_json_of(vy_reply_value(r)));
	} else if (list) {
		cache_list_print(r);
	} else {
		printf("cleared %" PRIu64 " pipelines and %" PRIu64 " programs\n",
			ctl_u64(vy_reply_value(r), "pipelines"),
			ctl_u64(vy_reply_value(r), "programs"));
	}
	vy_reply_destroy(r);
	vy_client_close(c);
	return CTL_EXIT_OK;
}

/* --- ping ------------------------------------------------------------------------------- */

#define PING_MAX 1000000

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a;
	uint64_t y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static uint64_t percentile(const uint64_t *sorted, size_t n, double q)
{
	size_t rank = (size_t)(q * (double)n + 0.999999);
	rank = rank < 1 ? 1 : rank > n ? n : rank;
	return sorted[rank - 1];
}

int ctl_cmd_ping(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{"count", required_argument, NULL, 'n'}, {NULL, 0, NULL, 0}};
	unsigned long count = 10;
	int opt;
	while ((opt = ctl_getopt(ctl, argc, argv, "n:", opts)) != -1) {
		if (opt != 'n') {
			return CTL_EXIT_USAGE;
		}
		char *end = NULL;
		count = strtoul(optarg, &end, 10);
		if (end == optarg || *end || optarg[0] == '-' || count < 1 || count > PING_MAX) {
			return ctl_usage_error(ctl,
				"--count takes a number from 1 to %d, not \"%s\"", PING_MAX,
				optarg);
		}
	}
	if (!ctl_want_args(ctl, argc, argv, 0)) {
		return CTL_EXIT_USAGE;
	}
	struct vy_client *c;
	int rc = ctl_connect(ctl, &c);
	if (rc) {
		return rc;
	}
	uint64_t *ns = ctl_realloc(NULL, count * sizeof(*ns));
	for (size_t i = 0; i < count; i++) {
		struct vy_error err;
		uint64_t t0 = now_ns();
		if (vy_ping(c, &err) != 0) {
			free(ns);
			vy_client_close(c);
			return ctl_report(ctl, "ping", &err);
		}
		ns[i] = now_ns() - t0;
	}
	vy_client_close(c);
	qsort(ns, count, sizeof(*ns), cmp_u64);
	uint64_t sum = 0;
	for (size_t i = 0; i < count; i++) {
		sum += ns[i];
	}
	double us[5] = {(double)ns[0] / 1e3, (double)percentile(ns, count, 0.5) / 1e3,
		(double)percentile(ns, count, 0.99) / 1e3, (double)ns[count - 1] / 1e3,
		(double)sum / (double)count / 1e3};
	free(ns);
	if (ctl->json) {
		static const char *const keys[] = {
			"min_us", "p50_us", "p99_us", "max_us", "mean_us"};
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "socket", json_object_new_string(ctl_socket_path(ctl)));
		json_object_object_add(o, "count", json_object_new_uint64(count));
		for (size_t i = 0; i < 5; i++) {
			char text[32];
			snprintf(text, sizeof(text), "%.3f", us[i]);
			json_object_object_add(o, keys[i], json_object_new_double_s(us[i], text));
		}
		ctl_json_print(o);
	} else {
		printf("%lu pings to %s: min %.1f \xc2\xb5s, p50 %.1f \xc2\xb5s, p99 %.1f "
		       "\xc2\xb5s, max %.1f \xc2\xb5s\n",
			count, ctl_socket_path(ctl), us[0], us[1], us[2], us[3]);
	}
	return CTL_EXIT_OK;
}
