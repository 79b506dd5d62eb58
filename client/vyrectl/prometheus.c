/*
 * The stats tree as Prometheus metrics, in the text exposition format 0.0.4.
 *
 * Every numeric (and boolean, as 0 or 1) leaf of the tree becomes a sample. A path through the
 * tree names the leaf ("devices.*.busy_ns"); rows of arrays and keyed maps become labels instead
 * of name parts (device="0", client="12", op="dispatch", code="BUSY"). A table of rules gives the
 * known leaves their metric names, types and help; a leaf the table does not know (a field a
 * newer daemon added) still comes out as a gauge named after its path, so nothing is dropped.
 * Units follow Prometheus's base units: nanoseconds and milliseconds become seconds (written as
 * exact decimals, not through floating point), counters end in _total, byte counts in _bytes.
 * Quantiles become summaries (p50 and p99 as quantile="0.5" and "0.99", with _count and _sum
 * where the tree has them). The strings of a map (a device's name, a client's name) become the
 * labels of an info metric with the value 1.
 *
 * The format's rules are kept by construction: samples are gathered per family first and each
 * family is written once, with one HELP and one TYPE line; names are checked against
 * [a-zA-Z_:][a-zA-Z0-9_:]*; label values are escaped (backslash, double quote, newline) and
 * invalid UTF-8 is replaced, since a client chooses its own name.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

enum fam_type { FAM_GAUGE, FAM_COUNTER, FAM_SUMMARY };

static const char *const type_names[] = {"gauge", "counter", "summary"};

/* What a leaf's number counts, which decides the scale of its value. */
enum unit { UNIT_PLAIN, UNIT_NS, UNIT_MS };

/* A known leaf: its path with row segments as "*", its family (without the vyred_ prefix), and
 * for summaries the quantile or the suffix it stands for. */
struct rule {
	const char *path;
	const char *family;
	enum fam_type type;
	enum unit unit;
	const char *quantile; /* "0.5", or NULL */
	const char *suffix;   /* "_count", "_sum", or NULL */
	const char *help;
};

#define G(path, family, help)                                                                      \
	{                                                                                          \
		path, family, FAM_GAUGE, UNIT_PLAIN, NULL, NULL, help                              \
	}
#define GU(path, family, unit, help)                                                               \
	{                                                                                          \
		path, family, FAM_GAUGE, unit, NULL, NULL, help                                    \
	}
#define C(path, family, help)                                                                      \
	{                                                                                          \
		path, family, FAM_COUNTER, UNIT_PLAIN, NULL, NULL, help                            \
	}
#define CU(path, family, unit, help)                                                               \
	{                                                                                          \
		path, family, FAM_COUNTER, unit, NULL, NULL, help                                  \
	}
#define Q(path, family, q, help)                                                                   \
	{                                                                                          \
		path, family, FAM_SUMMARY, UNIT_NS, q, NULL, help                                  \
	}
#define S(path, family, suffix, unit, help)                                                        \
	{                                                                                          \
		path, family, FAM_SUMMARY, unit, NULL, suffix, help                                \
	}

#define H_COMPILE "Time to compile a pipeline (validate, plan, lower, build), per compile."
#define H_WAIT "Time jobs waited in a device queue before they started."
#define H_CWAIT "Time this client's jobs waited in a device queue."
#define H_LATENCY "Time from decoding a request to sending its reply, per operation."

static const struct rule rules[] = {
	G("daemon.protocol", "daemon_protocol_version", "Protocol version the daemon speaks."),
	G("daemon.pid", "daemon_pid", "Process id of the daemon."),
	GU("daemon.uptime_ms", "daemon_uptime_seconds", UNIT_MS, "Time since the daemon started."),
	C("daemon.connections_accepted", "connections_accepted_total",
		"Connections accepted since start."),
	C("daemon.connections_refused", "connections_refused_total",
		"Connections refused because max_clients were connected."),
	C("daemon.connections_stalled", "connections_stalled_total",
		"Connections closed for stalling in the middle of a frame."),
	C("daemon.backpressure_pauses", "backpressure_pauses_total",
		"Times a connection stopped being read because its replies were not read."),
	G("daemon.inbound_bytes", "inbound_bytes",
		"Request bytes held: frames being read and requests not yet answered."),
	C("daemon.inbound_waits", "inbound_waits_total",
		"Times a connection waited for inbound room (inbound_quota, inbound_total)."),
	G("daemon.inbound_kept_bytes", "inbound_kept_bytes",
		"Bytes of large frame buffers kept for their connection's next frame."),
	C("daemon.frames_reused", "frames_reused_total",
		"Frames read into the buffer their connection kept."),
	C("daemon.frames_imported", "frames_imported_total",
		"Frame buffers a device imported to copy large inputs from."),

	G("devices.*.vendor_id", "device_vendor_id", "PCI vendor id of the device."),
	G("devices.*.device_id", "device_device_id", "PCI device id of the device."),
	G("devices.*.subgroup_ops", "device_subgroup_ops",
		"Whether the device runs subgroup operations (1) or not (0)."),
	G("devices.*.subgroup_size", "device_subgroup_size", "Subgroup width of the device."),
	G("devices.*.max_workgroup_size.*", "device_max_workgroup_size",
		"Largest workgroup size on each axis."),
	G("devices.*.max_workgroup_invocations", "device_max_workgroup_invocations",
		"Largest number of invocations in one workgroup."),
	G("devices.*.max_storage_buffer_bytes", "device_max_storage_buffer_bytes",
		"Largest storage buffer the device binds."),
	G("devices.*.memory_total", "device_memory_total_bytes",
		"Device-local memory of the device (0 where it uses host memory)."),
	G("devices.*.memory_used", "device_memory_used_bytes", "Device-local memory in use."),
	G("devices.*.float.fma_fused", "device_float_fma_fused",
		"Whether the device's native fma is fused (1) or emulated by vyred (0)."),
	G("devices.*.float.div_exact", "device_float_div_exact",
		"Whether the device's native division is correctly rounded."),
	G("devices.*.float.sqrt_exact", "device_float_sqrt_exact",
		"Whether the device's native square root is correctly rounded."),
	G("devices.*.float.keeps_subnormals", "device_float_keeps_subnormals",
		"Whether the device keeps subnormal results (vyred flushes them)."),
	G("devices.*.float.fold_exact", "device_float_fold_exact",
		"Whether the device's compiler keeps signed zeros, infinities and NaN when it "
		"folds "
		"constant operands (0: vyred decides them by integer tests)."),
	G("devices.*.float.select_exact", "device_float_select_exact",
		"Whether a select between two constants keeps their bits on the device (0: vyred "
		"hides the constants from the compiler)."),
	G("devices.*.loop_passes", "device_loop_passes",
		"Loop passes the device's driver allows one invocation over all its loops (0: no "
		"limit found); vyred writes long loops as copies of their body under it."),
	C("devices.*.dispatches", "device_dispatches_total", "Dispatches run on the device."),
	CU("devices.*.busy_ns", "device_busy_seconds_total", UNIT_NS,
		"Time the device spent running jobs."),
	C("devices.*.batches", "device_batches_total", "Batches of jobs submitted to the device."),
	C("devices.*.jobs", "device_jobs_total", "Jobs the device finished."),
	G("devices.*.largest_batch", "device_largest_batch", "Most jobs submitted in one batch."),
	C("devices.*.started_together", "device_started_together_total",
		"Jobs started beside others, queued on the device one behind the other."),
	C("devices.*.batches_overlapped", "device_batches_overlapped_total",
		"Batches started while the batch before them was still running on the device."),
	G("devices.*.queue_depth", "device_queue_depth", "Jobs waiting for the device."),
	G("devices.*.running", "device_running_jobs", "Jobs running on the device."),
	C("devices.*.lost", "device_lost_total", "Times the device was lost and recreated."),
	C("devices.*.timeouts", "device_timeouts_total",
		"Dispatches ended by their timeout and stopped on the device."),
	G("devices.*.backend_cache.entries", "device_backend_cache_entries",
		"Pipelines in the backend's own cache."),
	G("devices.*.backend_cache.bytes", "device_backend_cache_bytes",
		"Bytes of the backend's own pipeline cache."),
	C("devices.*.backend_cache.hits", "device_backend_cache_hits_total",
		"Hits of the backend's own pipeline cache."),
	C("devices.*.backend_cache.misses", "device_backend_cache_misses_total",
		"Misses of the backend's own pipeline cache."),
	C("devices.*.backend_cache.evictions", "device_backend_cache_evictions_total",
		"Evictions from the backend's own pipeline cache."),

	G("pipeline_cache.entries", "pipeline_cache_entries", "Compiled pipelines in memory."),
	G("pipeline_cache.bytes", "pipeline_cache_bytes", "Estimated bytes of cached pipelines."),
	G("pipeline_cache.max_entries", "pipeline_cache_max_entries",
		"Limit on cached pipelines (pipeline_cache_entries)."),
	G("pipeline_cache.max_bytes", "pipeline_cache_max_bytes",
		"Limit on cached pipeline bytes (pipeline_cache_bytes)."),
	C("pipeline_cache.hits", "pipeline_cache_hits_total",
		"Pipeline lookups served from memory."),
	C("pipeline_cache.misses", "pipeline_cache_misses_total",
		"Pipeline lookups not found in memory (compiled or loaded from disk)."),
	C("pipeline_cache.disk_hits", "pipeline_cache_disk_hits_total",
		"Pipelines loaded from the disk cache."),
	C("pipeline_cache.evictions", "pipeline_cache_evictions_total",
		"Pipelines evicted from memory."),
	C("pipeline_cache.coalesced", "pipeline_cache_coalesced_total",
		"Requests that waited on a compile already running."),
	S("pipeline_cache.compiles", "pipeline_cache_compile_seconds", "_count", UNIT_PLAIN,
		H_COMPILE),
	Q("pipeline_cache.compile_ns_p50", "pipeline_cache_compile_seconds", "0.5", H_COMPILE),
	Q("pipeline_cache.compile_ns_p99", "pipeline_cache_compile_seconds", "0.99", H_COMPILE),
	S("pipeline_cache.compile_ns_total", "pipeline_cache_compile_seconds", "_sum", UNIT_NS,
		H_COMPILE),

	G("spec_cache.entries", "spec_cache_entries",
		"Cached pipelines specialized with spec constants."),
	C("spec_cache.hits", "spec_cache_hits_total", "Specialized pipeline lookups served."),
	C("spec_cache.misses", "spec_cache_misses_total", "Specialized pipeline lookups missed."),

	G("program_cache.entries", "program_cache_entries", "Validated programs in memory."),
	G("program_cache.bytes", "program_cache_bytes", "Canonical bytes of cached programs."),
	C("program_cache.hits", "program_cache_hits_total", "Program lookups served from memory."),
	C("program_cache.misses", "program_cache_misses_total",
		"Program lookups that decoded and validated the program."),
	C("program_cache.evictions", "program_cache_evictions_total",
		"Programs evicted from memory."),
	C("program_cache.restored", "program_cache_restored_total",
		"Programs restored from the disk cache at start."),
	C("program_cache.disk_writes", "program_cache_disk_writes_total",
		"Programs written to the disk cache."),
	C("program_cache.disk_rejected", "program_cache_disk_rejected_total",
		"Disk cache files that failed their checks and were ignored."),

	G("resident.buffers", "resident_buffers", "Resident buffers held for clients."),
	G("resident.bytes", "resident_bytes", "Bytes of resident buffers."),
	G("resident.named", "resident_named_buffers", "Resident buffers with a name."),
	C("resident.allocs", "resident_allocs_total", "Resident buffers allocated."),
	C("resident.frees", "resident_frees_total", "Resident buffers freed."),
	C("resident.lost", "resident_lost_total", "Resident buffers lost with their device."),
	G("resident.shm_regions", "shm_regions", "Shared-memory regions attached by clients."),
	G("resident.shm_bytes", "shm_bytes", "Bytes of attached shared-memory regions."),
	G("resident.shm_imported", "shm_imported_regions",
		"Shared-memory regions a device imported, so it reads them without a host copy."),
	C("resident.shm_import_inputs", "shm_import_inputs_total",
		"Dispatch inputs a device read from imported host memory (shared memory "
		"regions and large frames)."),
	C("resident.shm_import_bytes", "shm_import_bytes_total",
		"Bytes of dispatch inputs read from imported host memory."),
	C("resident.shm_faults", "shm_faults_total",
		"Reads of shared memory whose pages had vanished (SIGBUS caught; the region's "
		"requests fail)."),

	G("clients.count", "clients", "Connected clients."),
	C("clients.bytes_in", "received_bytes_total", "Bytes received from clients."),
	C("clients.bytes_out", "sent_bytes_total", "Bytes sent to clients."),
	G("clients.list.*.pid", "client_pid", "Process id of the client."),
	G("clients.list.*.uid", "client_uid", "User id of the client."),
	G("clients.list.*.self", "client_self", "Whether the row is the scraping connection."),
	GU("clients.list.*.connected_ms", "client_connected_seconds", UNIT_MS,
		"Time since the client connected."),
	C("clients.list.*.requests", "client_requests_total", "Requests of the client."),
	C("clients.list.*.errors", "client_errors_total", "Error replies sent to the client."),
	C("clients.list.*.busy", "client_busy_total", "BUSY replies sent to the client."),
	G("clients.list.*.in_flight", "client_in_flight_requests",
		"Requests of the client not answered yet."),
	C("clients.list.*.bytes_in", "client_received_bytes_total",
		"Bytes received from the client."),
	C("clients.list.*.bytes_out", "client_sent_bytes_total", "Bytes sent to the client."),
	G("clients.list.*.unsent_bytes", "client_unsent_bytes",
		"Reply bytes waiting to be written to the client."),
	G("clients.list.*.paused", "client_paused",
		"Whether reading from the client is paused by backpressure."),
	G("clients.list.*.resident_bytes", "client_resident_bytes",
		"Bytes of the client's resident buffers."),
	Q("clients.list.*.queue_wait_p50_ns", "client_queue_wait_seconds", "0.5", H_CWAIT),
	Q("clients.list.*.queue_wait_p99_ns", "client_queue_wait_seconds", "0.99", H_CWAIT),

	G("queue.depth", "queue_depth", "Jobs waiting in the device queues."),
	S("queue.jobs", "queue_wait_seconds", "_count", UNIT_PLAIN, H_WAIT),
	Q("queue.wait_p50_ns", "queue_wait_seconds", "0.5", H_WAIT),
	Q("queue.wait_p99_ns", "queue_wait_seconds", "0.99", H_WAIT),
	GU("queue.wait_max_ns", "queue_wait_max_seconds", UNIT_NS,
		"Longest time a job waited in a device queue."),

	C("requests.bad_frames", "bad_frames_total", "Malformed frames received."),
	C("requests.by_op.*", "requests_total", "Requests received, per operation."),
	C("requests.by_error.*", "request_errors_total", "Error replies sent, per error code."),

	S("latency.*.count", "request_duration_seconds", "_count", UNIT_PLAIN, H_LATENCY),
	S("latency.*.sum_ns", "request_duration_seconds", "_sum", UNIT_NS, H_LATENCY),
	Q("latency.*.p50_ns", "request_duration_seconds", "0.5", H_LATENCY),
	Q("latency.*.p99_ns", "request_duration_seconds", "0.99", H_LATENCY),
	GU("latency.*.max_ns", "request_duration_max_seconds", UNIT_NS,
		"Longest time from decoding a request to sending its reply, per operation."),
};

/* Arrays and keyed maps whose rows become a label; `key` names the field that identifies an
 * array's row (the row's position when it is absent). */
struct rows {
	const char *path;
	const char *label;
	const char *key;
};

static const struct rows row_rules[] = {
	{"devices", "device", "index"},
	{"devices.*.max_workgroup_size", "axis", NULL},
	{"clients.list", "client", "id"},
	{"requests.by_op", "op", NULL},
	{"requests.by_error", "code", NULL},
	{"latency", "op", NULL},
};

/* Info metrics: the strings of the map at `path` become the labels of `family`. */
static const struct rule info_rules[] = {
	G("daemon", "daemon_info", "The daemon's version, state and paths."),
	G("devices.*", "device_info", "Each device's backend, name, driver and version."),
	G("clients.list.*", "client_info", "Each client's name and connection state."),
};

/* --- growable strings ------------------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len;
	size_t cap;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = ctl_realloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

static char *sb_take(struct sbuf *b)
{
	if (!b->p) {
		sb_putn(b, "", 0);
	}
	char *s = b->p;
	memset(b, 0, sizeof(*b));
	return s;
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when the bytes there are not one. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n = c < 0x80             ? 1
		   : (c & 0xE0) == 0xC0 ? 2
		   : (c & 0xF0) == 0xE0 ? 3
		   : (c & 0xF8) == 0xF0 ? 4
					: 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80) {
			return 0;
		}
	}
	if ((n == 2 && c < 0xC2) || (n == 3 && c == 0xE0 && s[1] < 0xA0) ||
		(n == 3 && c == 0xED && s[1] >= 0xA0) || (n == 4 && c == 0xF0 && s[1] < 0x90) ||
		(n == 4 && (c > 0xF4 || (c == 0xF4 && s[1] >= 0x90)))) {
		return 0;
	}
	return n;
}

/* A label value or HELP text, escaped as the format asks; `quote` escapes '"' (label values). */
static void sb_escaped(struct sbuf *b, const char *s, size_t len, bool quote)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		size_t n = u[i] ? utf8_seq(u + i) : 0;
		if (n == 0 || i + n > len) {
			sb_puts(b, "\xef\xbf\xbd");
			i++;
		} else if (u[i] == '\\') {
			sb_puts(b, "\\\\");
			i++;
		} else if (u[i] == '\n') {
			sb_puts(b, "\\n");
			i++;
		} else if (u[i] == '"' && quote) {
			sb_puts(b, "\\\"");
			i++;
		} else {
			sb_putn(b, s + i, n);
			i += n;
		}
	}
}

/* A metric or label name from arbitrary text: characters outside [a-zA-Z0-9_] become '_', and a
 * name that would not start with a letter gets a prefix (names starting "__" are reserved). */
static void sb_name(struct sbuf *b, const char *s, const char *prefix)
{
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) {
		sb_puts(b, prefix);
	}
	for (; *s; s++) {
		char c = *s;
		bool ok =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		sb_putn(b, ok ? &c : "_", 1);
	}
}

/* --- families and samples --------------------------------------------------------------- */

struct label {
	char *name;  /* owned */
	char *value; /* owned */
};

struct sample {
	size_t family;
	char *labels; /* owned: `a="x",b="y"`, without quantile */
	const char *quantile;
	const char *suffix;
	char value[48];
};

struct family {
	char *name; /* owned, with the vyred_ prefix */
	enum fam_type type;
	char *help; /* owned */
};

struct prom {
	struct family *fams;
	size_t n_fams;
	struct sample *samples;
	size_t n_samples;
	struct label labels[16]; /* the rows the walk is inside */
	size_t n_labels;
};

static size_t family_of(struct prom *p, const char *name, enum fam_type type, const char *help)
{
	for (size_t i = 0; i < p->n_fams; i++) {
		if (strcmp(p->fams[i].name, name) == 0) {
			return i;
		}
	}
	p->fams = ctl_realloc(p->fams, (p->n_fams + 1) * sizeof(*p->fams));
	struct sbuf h = {0};
	sb_escaped(&h, help, strlen(help), false);
	struct sbuf n = {0};
	sb_puts(&n, name);
	p->fams[p->n_fams] = (struct family){sb_take(&n), type, sb_take(&h)};
	return p->n_fams++;
}

static char *render_labels(const struct prom *p, const struct label *extra, size_t n_extra)
{
	struct sbuf b = {0};
	for (size_t i = 0; i < p->n_labels + n_extra; i++) {
		const struct label *l = i < p->n_labels ? &p->labels[i] : &extra[i - p->n_labels];
		sb_puts(&b, b.len ? "," : "");
		sb_puts(&b, l->name);
		sb_puts(&b, "=\"");
		sb_escaped(&b, l->value, strlen(l->value), true);
		sb_puts(&b, "\"");
	}
	return sb_take(&b);
}

static void add_sample(struct prom *p, size_t fam, char *labels, const char *quantile,
	const char *suffix, const char *value)
{
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct sample *s = &p->samples[i];
		if (s->family == fam && strcmp(s->labels, labels) == 0 &&
			(s->quantile == quantile ||
				(s->quantile && quantile && strcmp(s->quantile, quantile) == 0)) &&
			(s->suffix == suffix ||
				(s->suffix && suffix && strcmp(s->suffix, suffix) == 0))) {
			free(labels);
			return;
		}
	}
	p->samples = ctl_realloc(p->samples, (p->n_samples + 1) * sizeof(*p->samples));
	struct sample *s = &p->samples[p->n_samples++];
	*s = (struct sample){fam, labels, quantile, suffix, ""};
	snprintf(s->value, sizeof(s->value), "%s", value);
}

/* An integer scaled by 10^-digits, as an exact decimal without trailing zeros. */
static void exact_decimal(char *buf, size_t size, bool negative, uint64_t v, unsigned digits)
{
	uint64_t div = 1;
	for (unsigned i = 0; i < digits; i++) {
		div *= 10;
	}
	int n = snprintf(buf, size, "%s%" PRIu64, negative ? "-" : "", v / div);
	if (v % div) {
		n += snprintf(buf + n, size - (size_t)n, ".%0*" PRIu64, (int)digits, v % div);
		while (buf[n - 1] == '0') {
			buf[--n] = '\0';
		}
	}
}

/* The value of a leaf in the family's unit; false when the leaf is no number. */
static bool leaf_value(const struct vy_value *v, enum unit unit, char *buf, size_t size)
{
	unsigned digits = unit == UNIT_NS ? 9 : unit == UNIT_MS ? 3 : 0;
	uint64_t u;
	int64_t i;
	double f;
	bool b;
	switch (vy_value_kind(v)) {
	case VY_KIND_UINT:
		vy_value_u64(v, &u);
		exact_decimal(buf, size, false, u, digits);
		return true;
	case VY_KIND_INT:
		vy_value_i64(v, &i);
		exact_decimal(buf, size, i < 0, i < 0 ? 0 - (uint64_t)i : (uint64_t)i, digits);
		return true;
	case VY_KIND_BOOL:
		vy_value_bool(v, &b);
		snprintf(buf, size, "%d", b ? 1 : 0);
		return true;
	case VY_KIND_FLOAT:
		vy_value_f64(v, &f);
		f /= unit == UNIT_NS ? 1e9 : unit == UNIT_MS ? 1e3 : 1.0;
		if (isnan(f)) {
			snprintf(buf, size, "NaN");
		} else if (isinf(f)) {
			snprintf(buf, size, "%s", f > 0 ? "+Inf" : "-Inf");
		} else {
			snprintf(buf, size, "%.17g", f);
		}
		return true;
	default:
		return false;
	}
}

static const struct rule *find_rule(const struct rule *table, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(table[i].path, path) == 0) {
			return &table[i];
		}
	}
	return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s);
	size_t m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "vyred_" and the path's name segments (rows left out), each made a valid name part. */
static void path_name(struct sbuf *name, const char *path)
{
	sb_puts(name, "vyred");
	const char *seg = path;
	while (*seg) {
		size_t n = strcspn(seg, ".");
		if (!(n == 1 && seg[0] == '*')) {
			char part[128];
			snprintf(part, sizeof(part), "%.*s", (int)n, seg);
			sb_puts(name, "_");
			sb_name(name, part, "x_");
		}
		seg += n + (seg[n] == '.');
	}
}

/* A leaf no rule knows: a gauge named after its path, its unit taken from its name. */
static void emit_unknown(struct prom *p, const struct vy_value *v, const char *path)
{
	struct sbuf name = {0};
	path_name(&name, path);
	enum unit unit = ends_with(name.p, "_ns")   ? UNIT_NS
			 : ends_with(name.p, "_ms") ? UNIT_MS
						    : UNIT_PLAIN;
	if (unit != UNIT_PLAIN) {
		name.len -= 3;
		name.p[name.len] = '\0';
		sb_puts(&name, "_seconds");
	}
	char value[48];
	if (leaf_value(v, unit, value, sizeof(value))) {
		struct sbuf help = {0};
		sb_puts(&help, "The stats field ");
		sb_puts(&help, path);
		sb_puts(&help, unit == UNIT_PLAIN ? "." : ", in seconds.");
		size_t fam = family_of(p, name.p, FAM_GAUGE, help.p);
		free(help.p);
		if (p->fams[fam].type == FAM_GAUGE) {
			add_sample(p, fam, render_labels(p, NULL, 0), NULL, NULL, value);
		}
	}
	free(name.p);
}

static void emit_leaf(struct prom *p, const struct vy_value *v, const char *path)
{
	const struct rule *r = find_rule(rules, sizeof(rules) / sizeof(rules[0]), path);
	if (!r) {
		emit_unknown(p, v, path);
		return;
	}
	char value[48];
	if (!leaf_value(v, r->unit, value, sizeof(value))) {
		return;
	}
	char name[128];
	snprintf(name, sizeof(name), "vyred_%s", r->family);
	size_t fam = family_of(p, name, r->type, r->help);
	add_sample(p, fam, render_labels(p, NULL, 0), r->quantile, r->suffix, value);
}

static bool label_taken(const struct prom *p, const struct label *extra, size_t n, const char *name)
{
	for (size_t i = 0; i < p->n_labels; i++) {
		if (strcmp(p->labels[i].name, name) == 0) {
			return true;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(extra[i].name, name) == 0) {
			return true;
		}
	}
	return false;
}

/* The strings of a map as an info metric. */
static void emit_info(struct prom *p, const struct vy_value *map, const char *path)
{
	struct label extra[32];
	size_t n = 0;
	for (size_t i = 0; i < vy_value_len(map) && n < 32; i++) {
		const char *s = vy_value_str(vy_value_item(map, i));
		if (!s) {
			continue;
		}
		struct sbuf nb = {0};
		sb_name(&nb, vy_value_key(map, i), "l_");
		if (label_taken(p, extra, n, nb.p)) {
			free(nb.p);
			continue;
		}
		struct sbuf vb = {0};
		sb_putn(&vb, s, vy_value_len(vy_value_item(map, i)));
		extra[n++] = (struct label){sb_take(&nb), sb_take(&vb)};
	}
	if (n == 0) {
		return;
	}
	const struct rule *r =
		find_rule(info_rules, sizeof(info_rules) / sizeof(info_rules[0]), path);
	struct sbuf name = {0};
	struct sbuf help = {0};
	if (r) {
		sb_puts(&name, "vyred_");
		sb_puts(&name, r->family);
		sb_puts(&help, r->help);
	} else {
		path_name(&name, path);
		sb_puts(&name, "_info");
		sb_puts(&help, "The text fields of the stats map ");
		sb_puts(&help, path);
		sb_puts(&help, ".");
	}
	size_t fam = family_of(p, name.p, FAM_GAUGE, help.p);
	if (p->fams[fam].type == FAM_GAUGE) {
		add_sample(p, fam, render_labels(p, extra, n), NULL, NULL, "1");
	}
	for (size_t i = 0; i < n; i++) {
		free(extra[i].name);
		free(extra[i].value);
	}
	free(name.p);
	free(help.p);
}

static const struct rows *rows_at(const char *path)
{
	for (size_t i = 0; i < sizeof(row_rules) / sizeof(row_rules[0]); i++) {
		if (strcmp(row_rules[i].path, path) == 0) {
			return &row_rules[i];
		}
	}
	return NULL;
}

static void walk(struct prom *p, const struct vy_value *v, struct sbuf *path);

/* Walk row `item` of a table under the label name=value. */
static void walk_row(struct prom *p, const struct vy_value *item, struct sbuf *path,
	const char *name, const char *value)
{
	assert(p->n_labels < sizeof(p->labels) / sizeof(p->labels[0]));
	struct sbuf nb = {0};
	sb_name(&nb, name, "l_");
	struct sbuf vb = {0};
	sb_puts(&vb, value);
	p->labels[p->n_labels++] = (struct label){sb_take(&nb), sb_take(&vb)};
	size_t len = path->len;
	sb_puts(path, path->len ? ".*" : "*");
	walk(p, item, path);
	path->len = len;
	path->p[len] = '\0';
	p->n_labels--;
	free(p->labels[p->n_labels].name);
	free(p->labels[p->n_labels].value);
}

static void walk_array(struct prom *p, const struct vy_value *v, struct sbuf *path)
{
	const struct rows *rr = rows_at(path->p ? path->p : "");
	for (size_t i = 0; i < vy_value_len(v); i++) {
		const struct vy_value *item = vy_value_item(v, i);
		char value[64];
		const struct vy_value *key = rr && rr->key ? vy_value_get(item, rr->key) : NULL;
		uint64_t u;
		if (key && vy_value_u64(key, &u)) {
			snprintf(value, sizeof(value), "%" PRIu64, u);
		} else if (key && vy_value_str(key)) {
			snprintf(value, sizeof(value), "%s", vy_value_str(key));
		} else {
			snprintf(value, sizeof(value), "%zu", i);
		}
		walk_row(p, item, path, rr ? rr->label : "index", value);
	}
}

static void walk_map(struct prom *p, const struct vy_value *v, struct sbuf *path)
{
	const char *here = path->p ? path->p : "";
	const struct rows *rr = rows_at(here);
	if (rr) {
		for (size_t i = 0; i < vy_value_len(v); i++) {
			walk_row(p, vy_value_item(v, i), path, rr->label, vy_value_key(v, i));
		}
		return;
	}
	emit_info(p, v, here);
	/* The field that names a row is its label already. */
	const char *row_key = NULL;
	size_t plen = strlen(here);
	if (plen >= 2 && strcmp(here + plen - 2, ".*") == 0) {
		char parent[256];
		snprintf(parent, sizeof(parent), "%.*s", (int)(plen - 2), here);
		const struct rows *pr = rows_at(parent);
		row_key = pr ? pr->key : NULL;
	}
	for (size_t i = 0; i < vy_value_len(v); i++) {
		const char *key = vy_value_key(v, i);
		if (row_key && strcmp(key, row_key) == 0) {
			continue;
		}
		size_t len = path->len;
		sb_puts(path, path->len ? "." : "");
		sb_puts(path, key);
		walk(p, vy_value_item(v, i), path);
		path->len = len;
		path->p[len] = '\0';
	}
}

static void walk(struct prom *p, const struct vy_value *v, struct sbuf *path)
{
	switch (vy_value_kind(v)) {
	case VY_KIND_MAP:
		walk_map(p, v, path);
		break;
	case VY_KIND_ARRAY:
		walk_array(p, v, path);
		break;
	case VY_KIND_UINT:
	case VY_KIND_INT:
	case VY_KIND_FLOAT:
	case VY_KIND_BOOL:
		emit_leaf(p, v, path->p ? path->p : "");
		break;
	default:
		break;
	}
}

/* Order within a summary's row: quantiles by value, then _sum, then _count. */
static double sample_rank(const struct sample *s)
{
	if (s->quantile) {
		return strtod(s->quantile, NULL);
	}
	if (s->suffix && strcmp(s->suffix, "_sum") == 0) {
		return 2.0;
	}
	return s->suffix ? 3.0 : -1.0;
}

static void write_family(const struct prom *p, size_t fam, FILE *out)
{
	const struct family *f = &p->fams[fam];
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
		type_names[f->type]);
	/* Rows in the order they first came; within a row, the rank above. */
	bool *done = ctl_realloc(NULL, (p->n_samples ? p->n_samples : 1) * sizeof(*done));
	memset(done, 0, (p->n_samples ? p->n_samples : 1) * sizeof(*done));
	for (size_t i = 0; i < p->n_samples; i++) {
		if (p->samples[i].family != fam || done[i]) {
			continue;
		}
		for (;;) {
			size_t best = SIZE_MAX;
			for (size_t j = i; j < p->n_samples; j++) {
				const struct sample *s = &p->samples[j];
				if (s->family != fam || done[j] ||
					strcmp(s->labels, p->samples[i].labels) != 0) {
					continue;
				}
				if (best == SIZE_MAX ||
					sample_rank(s) < sample_rank(&p->samples[best])) {
					best = j;
				}
			}
			if (best == SIZE_MAX) {
				break;
			}
			done[best] = true;
			const struct sample *s = &p->samples[best];
			bool braces = s->labels[0] || s->quantile;
			fprintf(out, "%s%s%s%s%s%s%s%s%s %s\n", f->name, s->suffix ? s->suffix : "",
				braces ? "{" : "", s->labels,
				s->labels[0] && s->quantile ? "," : "",
				s->quantile ? "quantile=\"" : "", s->quantile ? s->quantile : "",
				s->quantile ? "\"" : "", braces ? "}" : "", s->value);
		}
	}
	free(done);
}

void ctl_prometheus_write(const struct vy_value *stats, FILE *out)
{
	struct prom p = {0};
	struct sbuf path = {0};
	sb_putn(&path, "", 0);
	walk(&p, stats, &path);
	free(path.p);
	for (size_t i = 0; i < p.n_fams; i++) {
		write_family(&p, i, out);
	}
	for (size_t i = 0; i < p.n_samples; i++) {
		free(p.samples[i].labels);
	}
	for (size_t i = 0; i < p.n_fams; i++) {
		free(p.fams[i].name);
		free(p.fams[i].help);
	}
	free(p.samples);
	free(p.fams);
}
