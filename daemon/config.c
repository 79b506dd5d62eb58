/*
 * Configuration: a descriptor table generated from VY_CONFIG_MAP drives parsing, defaults, the
 * environment, reload and printing, so adding a key is one line in config.h (and its comment in
 * etc/vyred.conf).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envelope.h"
#include "log.h"

enum conf_type { CONF_STR, CONF_BOOL, CONF_U64, CONF_SIZE, CONF_MODE, CONF_LEVEL };

struct conf_key {
	const char *key;
	const char *section;
	enum conf_type type;
	const char *def;
	bool reload;
	size_t offset;
};

static const struct conf_key keys[] = {
#define VY__CONF_DESC(field, section, type, def, reload, help)                                     \
	{#field, section, CONF_##type, def, reload, offsetof(struct vy_config, field)},
	VY_CONFIG_MAP(VY__CONF_DESC)
#undef VY__CONF_DESC
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

const char *const vy_config_keys[] = {
#define VY__CONF_NAME(field, section, type, def, reload, help) #field,
	VY_CONFIG_MAP(VY__CONF_NAME)
#undef VY__CONF_NAME
		NULL,
};

static const struct conf_key *find_key(const char *key)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(keys[i].key, key) == 0) {
			return &keys[i];
		}
	}
	return NULL;
}

static void *slot(struct vy_config *c, const struct conf_key *k)
{
	return (char *)c + k->offset;
}

static const void *cslot(const struct vy_config *c, const struct conf_key *k)
{
	return (const char *)c + k->offset;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);
	if (!d) {
		fprintf(stderr, "vyred: out of memory reading the configuration\n");
		abort();
	}
	return d;
}

static int parse_u64(const char *s, uint64_t *out)
{
	if (!isdigit((unsigned char)*s)) {
		return -1;
	}
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end) {
		return -1;
	}
	*out = v;
	return 0;
}

/* A byte count with an optional binary suffix: 4096, 64K, 256M, 1G, 2GiB. */
static int parse_size(const char *s, uint64_t *out)
{
	if (!isdigit((unsigned char)*s)) {
		return -1;
	}
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno) {
		return -1;
	}
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {
		{"", 0},
		{"B", 0},
		{"K", 10},
		{"KiB", 10},
		{"M", 20},
		{"MiB", 20},
		{"G", 30},
		{"GiB", 30},
		{"T", 40},
		{"TiB", 40},
	};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].suffix) == 0) {
			if (units[i].shift && v > (UINT64_MAX >> units[i].shift)) {
				return -1;
			}
			*out = (uint64_t)v << units[i].shift;
			return 0;
		}
	}
	return -1;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

static const char *type_hint(enum conf_type t)
{
	switch (t) {
	case CONF_BOOL:
		return "true or false";
	case CONF_U64:
		return "a whole number";
	case CONF_SIZE:
		return "a byte count such as 4096, 64K, 256M or 1G";
	case CONF_MODE:
		return "octal permission bits such as 0660";
	case CONF_LEVEL:
		return "err, warning, notice, info or debug";
	case CONF_STR:
		break;
	}
	return "text";
}

static int set_value(
	struct vy_config *c, const struct conf_key *k, const char *value, struct vy_err *err)
{
	void *p = slot(c, k);
	int rc = 0;
	switch (k->type) {
	case CONF_STR:
		free(*(char **)p);
		*(char **)p = xstrdup(value);
		return 0;
	case CONF_BOOL:
		rc = parse_bool(value, p);
		break;
	case CONF_U64:
		rc = parse_u64(value, p);
		break;
	case CONF_SIZE:
		rc = parse_size(value, p);
		break;
	case CONF_MODE: {
		char *end;
		errno = 0;
		unsigned long m = strtoul(value, &end, 8);
		rc = (*value && !*end && !errno && m <= 0777) ? 0 : -1;
		if (rc == 0) {
			*(uint32_t *)p = (uint32_t)m;
		}
		break;
	}
	case CONF_LEVEL: {
		int level = vy_log_level_parse(value);
		rc = level < 0 ? -1 : 0;
		if (rc == 0) {
			*(int *)p = level;
		}
		break;
	}
	}
	if (rc) {
		char fix[VY_ERR_FIX_MAX];
		snprintf(fix, sizeof(fix), "give %s %s", k->key, type_hint(k->type));
		return vy_err_set(err, VY_E_BAD_REQUEST, k->key, fix,
			"%s = \"%.64s\" does not parse", k->key, value);
	}
	return 0;
}

int vy_config_set(struct vy_config *c, const char *key, const char *value, struct vy_err *err)
{
	const struct conf_key *k = find_key(key);
	if (!k) {
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
			"use a key that etc/vyred.conf documents (vyred --help lists them)",
			"unknown configuration key \"%.64s\"", key);
	}
	return set_value(c, k, value, err);
}

void vy_config_init(struct vy_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < N_KEYS; i++) {
		int rc = set_value(c, &keys[i], keys[i].def, NULL);
		if (rc) {
			fprintf(stderr, "vyred: the default of %s does not parse\n", keys[i].key);
			abort();
		}
	}
}

void vy_config_finish(struct vy_config *c)
{
	if (!c) {
		return;
	}
	for (size_t i = 0; i < N_KEYS; i++) {
		if (keys[i].type == CONF_STR) {
			free(*(char **)slot(c, &keys[i]));
		}
	}
	free(c->file);
	memset(c, 0, sizeof(*c));
}

struct ini_ctx {
	struct vy_config *c;
	struct vy_err err; /* the first error */
	bool failed;
};

/* Returns 0 on an error, so that ini_parse_file reports the line of the first one. */
static int on_ini(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *ctx = user;
	const struct conf_key *k = find_key(name);
	struct vy_err e = {0};
	if (!k) {
		vy_err_set(&e, VY_E_BAD_REQUEST, NULL,
			"remove the line or correct the key (etc/vyred.conf documents every key)",
			"unknown key \"%.64s\"", name);
	} else if (strcmp(section, k->section) != 0) {
		char fix[VY_ERR_FIX_MAX];
		snprintf(fix, sizeof(fix), "move %s under [%s]", k->key, k->section);
		vy_err_set(
			&e, VY_E_BAD_REQUEST, NULL, fix, "%s is in section [%.64s]", name, section);
	} else if (set_value(ctx->c, k, value, &e) == 0) {
		return 1;
	}
	if (!ctx->failed) {
		ctx->err = e;
		ctx->failed = true;
	}
	return 0;
}

static int load_file(struct vy_config *c, const char *path, bool required, struct vy_err *err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT && !required) {
			return 0;
		}
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
			"create the file, or name an existing one with --config",
			"cannot read the configuration %s: %s", path, strerror(errno));
	}
	struct ini_ctx ctx = {.c = c};
	int line = ini_parse_file(f, on_ini, &ctx);
	fclose(f);
	if (line != 0) {
		if (!ctx.failed) {
			vy_err_set(&ctx.err, VY_E_BAD_REQUEST, NULL,
				"write each setting as key = value under a [section] header",
				"the line does not parse");
		}
		snprintf(ctx.err.at, sizeof(ctx.err.at), "%s:%d", path, line);
		if (err) {
			*err = ctx.err;
		}
		return VY_E_BAD_REQUEST;
	}
	free(c->file);
	c->file = xstrdup(path);
	return 0;
}

static int load_env(struct vy_config *c, struct vy_err *err)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		char name[96] = "VYRED_";
		size_t n = strlen(name);
		for (const char *p = keys[i].key; *p && n < sizeof(name) - 1; p++) {
			name[n++] = (char)toupper((unsigned char)*p);
		}
		name[n] = '\0';
		const char *v = getenv(name);
		if (v && set_value(c, &keys[i], v, err)) {
			if (err) {
				snprintf(err->at, sizeof(err->at), "%s", name);
			}
			return VY_E_BAD_REQUEST;
		}
	}
	return 0;
}

static bool devices_list_ok(const char *s)
{
	if (strcmp(s, "all") == 0) {
		return true;
	}
	bool digit = false;
	for (const char *p = s; *p; p++) {
		if (isdigit((unsigned char)*p)) {
			digit = true;
		} else if (*p == ',' && digit) {
			digit = false;
		} else if (*p != ' ') {
			return false;
		}
	}
	return digit;
}

static int check(const struct vy_config *c, struct vy_err *err)
{
	if (strcmp(c->backend, "auto") && strcmp(c->backend, "vulkan") &&
		strcmp(c->backend, "reference")) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "backend",
			"set backend to auto, vulkan or reference", "unknown backend \"%.64s\"",
			c->backend);
	}
	if (strcmp(c->spin, "auto") && strcmp(c->spin, "on") && strcmp(c->spin, "off")) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "spin", "set spin to auto, on or off",
			"unknown spin setting \"%.64s\"", c->spin);
	}
	if (!devices_list_ok(c->devices)) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "devices",
			"set devices to all or to indices such as 0,1",
			"devices = \"%.64s\" does not parse", c->devices);
	}
	if (c->socket_path[0] == '\0' || strlen(c->socket_path) >= 108) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "socket_path",
			"use a socket path of 1 to 107 bytes",
			"the socket path is empty or too long");
	}
	if (c->max_frame < 16 || c->max_frame > UINT32_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "max_frame",
			"set max_frame between 16 bytes and 4G - 1",
			"max_frame %" PRIu64 " is out of range", c->max_frame);
	}
	if (c->max_inflight < 1 || c->max_inflight > 1u << 20) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "max_inflight",
			"set max_inflight between 1 and 1048576",
			"max_inflight %" PRIu64 " is out of range", c->max_inflight);
	}
	if (c->batch_max < 1 || c->batch_max > 256) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "batch_max",
			"set batch_max between 1 and 256", "batch_max %" PRIu64 " is out of range",
			c->batch_max);
	}
	if (c->batch_cost_us > 60000000) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "batch_cost_us",
			"set batch_cost_us to at most 60000000 (a minute); 2000 suits most devices",
			"batch_cost_us %" PRIu64 " is out of range", c->batch_cost_us);
	}
	if (c->compile_threads < 1 || c->compile_threads > 1024) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "compile_threads",
			"set compile_threads between 1 and 1024",
			"compile_threads %" PRIu64 " is out of range", c->compile_threads);
	}
	if (c->max_graph_steps < 1 || c->max_graph_steps > VY_MAX_GRAPH_STEPS ||
		c->max_graphs < 1) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "max_graph_steps",
			"set max_graph_steps to 1 .. 4096 and max_graphs to 1 or more",
			"max_graph_steps %" PRIu64 " or max_graphs %" PRIu64 " is out of range",
			c->max_graph_steps, c->max_graphs);
	}
	if (c->compile_per_user < 1) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "compile_per_user",
			"set compile_per_user to 1 or more (at most compile_threads has effect)",
			"compile_per_user is 0: no user could compile");
	}
	if (c->max_clients < 1) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "max_clients",
			"set max_clients to 1 or more", "max_clients is 0");
	}
	if (c->max_clients_per_user < 1 || c->max_inflight_per_user < 1 ||
		c->max_inflight_total < 1) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "max_clients_per_user",
			"set max_clients_per_user, max_inflight_per_user and max_inflight_total to "
			"1 "
			"or more",
			"a per-user limit of connections or requests is 0");
	}
	if (c->inbound_quota < 16 || c->inbound_total < 16 || c->max_output < 4) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "inbound_quota",
			"set inbound_quota and inbound_total to 16 bytes or more, max_output to 4 "
			"or "
			"more",
			"inbound_quota %" PRIu64 ", inbound_total %" PRIu64
			" or max_output %" PRIu64 " is too small",
			c->inbound_quota, c->inbound_total, c->max_output);
	}
	if (c->max_output > c->reply_quota || c->reply_quota > c->reply_total) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "reply_quota",
			"keep max_output <= reply_quota <= reply_total, so that one dispatch of "
			"the "
			"largest output can always run",
			"max_output %" PRIu64 ", reply_quota %" PRIu64 ", reply_total %" PRIu64
			" are not in that order",
			c->max_output, c->reply_quota, c->reply_total);
	}
	if (c->write_low_water >= c->write_high_water) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "write_low_water",
			"set write_low_water below write_high_water",
			"write_low_water %" PRIu64 " is not below write_high_water %" PRIu64,
			c->write_low_water, c->write_high_water);
	}
	if (c->max_loop_iterations < 1) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "max_loop_iterations",
			"set max_loop_iterations to 1 or more", "max_loop_iterations is 0");
	}
	if (c->dispatch_timeout_ms < 1 || c->dispatch_timeout_ms > UINT32_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "dispatch_timeout_ms",
			"set dispatch_timeout_ms between 1 and 4294967295",
			"dispatch_timeout_ms %" PRIu64 " is out of range", c->dispatch_timeout_ms);
	}
	if (c->program_cache_entries < 1 || c->pipeline_cache_entries < 1) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "pipeline_cache_entries",
			"keep at least one entry in each cache",
			"a cache is configured with 0 entries");
	}
	return 0;
}

int vy_config_build(struct vy_config *c, const struct vy_config_args *args, struct vy_err *err)
{
	vy_config_init(c);
	const char *file = args && args->file ? args->file : getenv("VYRED_CONFIG");
	bool required = file != NULL;
	int rc = load_file(c, file ? file : VY_CONFIG_DEFAULT_PATH, required, err);
	if (rc == 0) {
		rc = load_env(c, err);
	}
	for (size_t i = 0; rc == 0 && args && i < args->n_sets; i++) {
		rc = vy_config_set(c, args->keys[i], args->values[i], err);
	}
	if (rc == 0) {
		rc = check(c, err);
	}
	if (rc) {
		vy_config_finish(c);
		vy_config_init(c);
	}
	return rc;
}

bool vy_config_reloadable(const char *key)
{
	const struct conf_key *k = find_key(key);
	return k && k->reload;
}

const char *vy_config_value_text(const struct vy_config *c, const char *key, char *buf, size_t size)
{
	const struct conf_key *k = find_key(key);
	if (!k) {
		return NULL;
	}
	const void *p = cslot(c, k);
	switch (k->type) {
	case CONF_STR:
		snprintf(buf, size, "%s", *(char *const *)p);
		break;
	case CONF_BOOL:
		snprintf(buf, size, "%s", *(const bool *)p ? "true" : "false");
		break;
	case CONF_U64:
	case CONF_SIZE:
		snprintf(buf, size, "%" PRIu64, *(const uint64_t *)p);
		break;
	case CONF_MODE:
		snprintf(buf, size, "%04o", (unsigned)*(const uint32_t *)p);
		break;
	case CONF_LEVEL:
		snprintf(buf, size, "%s", vy_log_level_name(*(const int *)p));
		break;
	}
	return buf;
}

int vy_config_apply_reload(struct vy_config *live, const struct vy_config *fresh)
{
	int changed = 0;
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &keys[i];
		char a[512];
		char b[512];
		vy_config_value_text(live, k->key, a, sizeof(a));
		vy_config_value_text(fresh, k->key, b, sizeof(b));
		if (strcmp(a, b) == 0) {
			continue;
		}
		if (!k->reload) {
			vy_log(VY_LOG_WARNING,
				"reload: %s changed from %s to %s but takes effect only after a "
				"restart",
				k->key, a, b);
			continue;
		}
		vy_log(VY_LOG_NOTICE, "reload: %s = %s (was %s)", k->key, b, a);
		set_value(live, k, b, NULL);
		changed++;
	}
	return changed;
}
