/*
 * The daemon side of vyrectl: connecting through libvyre, reporting errors with their Fix lines
 * and the exit status they mean, and turning reply values into json-c objects.
 *
 * Thread-safety: vyrectl is single-threaded.
 */
#ifndef VY_CLIENT_VYRECTL_SESSION_H
#define VY_CLIENT_VYRECTL_SESSION_H

#include <json-c/json.h>
#include <vy/vyre.h>

#include "vyrectl.h"

/*
 * Connect to the daemon as client "vyrectl" and apply --timeout. On failure prints what failed
 * with a Fix line and returns CTL_EXIT_CONNECT (nobody answered at the socket) or
 * CTL_EXIT_DAEMON (the daemon refused hello); *out is then NULL.
 */
int ctl_connect(const struct ctl *ctl, struct vy_client **out);

/*
 * Print a failed request to stderr: "vyrectl NAME: WHAT: CODE: message", the daemon's location,
 * every validation error it listed, and a "Fix:" line. Returns the exit status it means:
 * CTL_EXIT_CONNECT when the connection broke, CTL_EXIT_DAEMON otherwise.
 */
int ctl_report(const struct ctl *ctl, const char *what, const struct vy_error *err);

/* Connect and run one operation without fields ("stats", "clients", ...). On success returns 0
 * with the open client in *client and the reply in *reply (the caller frees both); on failure
 * reports and returns the exit status, leaving both NULL. */
int ctl_fetch(
	const struct ctl *ctl, const char *op, struct vy_client **client, struct vy_reply **reply);

/* The value as a new json-c object (NULL for a missing value or nil, which json-c writes as
 * null). Unsigned integers keep all 64 bits; bins become hex strings; non-finite floats become
 * the strings "nan", "inf" and "-inf", which JSON has no numbers for. */
struct json_object *ctl_json_of(const struct vy_value *v);
/* Write the object to stdout as indented JSON with a newline, then release it. */
void ctl_json_print(struct json_object *obj);

/* Shorthands for reading reply trees: the number at `path` below `v` as u64, or 0. */
uint64_t ctl_u64(const struct vy_value *v, const char *path);
/* The string at `path`, or "" when absent. */
const char *ctl_str(const struct vy_value *v, const char *path);
/* The bool at `path`, false when absent. */
bool ctl_bool(const struct vy_value *v, const char *path);

/* Render the stats tree as Prometheus text exposition format 0.0.4 to `out` (prometheus.c). */
void ctl_prometheus_write(const struct vy_value *stats, FILE *out);

#endif
