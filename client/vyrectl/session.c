/*
 * Talking to the daemon for every vyrectl command: one connection through libvyre, errors
 * printed the same way everywhere (what failed, the daemon's code and message, each validation
 * error, then the Fix line on a line of its own so an operator's eye finds it), and reply values
 * converted to json-c objects, so no JSON is ever written by hand.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

#define FIX_CONNECT                                                                                \
	"start vyred (systemctl start vyred), or give its socket with --socket or "                \
	"$VYRED_SOCKET, and check that your user may open it (the socket's group)"

static bool is_connection_error(int code)
{
	return code == VY_ERROR_CONNECT_FAILED || code == VY_ERROR_DISCONNECTED ||
	       code == VY_ERROR_BAD_REPLY;
}

/* The daemon's message ends with its Fix line, which is printed apart: cut it off. */
static void print_message(FILE *out, const char *message)
{
	const char *fix = strstr(message, " Fix: ");
	int len = fix ? (int)(fix - message) : (int)strlen(message);
	fprintf(out, "%.*s", len, message);
}

int ctl_report(const struct ctl *ctl, const char *what, const struct vy_error *err)
{
	FILE *out = stderr;
	fprintf(out, "vyrectl %s: %s: %s: ", ctl->cmd->name, what,
		err->name[0] ? err->name : vy_error_name(err->code));
	print_message(out, err->message);
	if (err->at[0]) {
		fprintf(out, " (at %s)", err->at);
	}
	fputc('\n', out);
	size_t shown = err->n_errors < VY_ERROR_ITEMS_MAX ? err->n_errors : VY_ERROR_ITEMS_MAX;
	for (size_t i = 0; i < shown; i++) {
		const struct vy_error_item *it = &err->errors[i];
		fprintf(out, "  %s%s", it->at, it->at[0] ? ": " : "");
		print_message(out, it->message);
		fprintf(out, "%s%s\n", it->fix[0] ? " Fix: " : "", it->fix);
	}
	if (err->n_errors > shown) {
		fprintf(out, "  ... and %zu more\n", err->n_errors - shown);
	}
	if (err->fix[0]) {
		fprintf(out, "Fix: %s\n", err->fix);
	} else if (is_connection_error(err->code)) {
		fprintf(out, "Fix: %s\n", FIX_CONNECT);
	}
	return is_connection_error(err->code) ? CTL_EXIT_CONNECT : CTL_EXIT_DAEMON;
}

int ctl_connect(const struct ctl *ctl, struct vy_client **out)
{
	struct vy_error err;
	vy_error_clear(&err);
	int rc = vy_client_connect(ctl->socket, "vyrectl", out, &err);
	if (rc == 0) {
		vy_client_set_timeout(*out, ctl->timeout_ms);
		return CTL_EXIT_OK;
	}
	*out = NULL;
	if (!is_connection_error(rc)) {
		return ctl_report(ctl, "hello", &err);
	}
	/* libvyre's Fix speaks of its own arguments; vyrectl's names --socket. */
	const char *path = ctl_socket_path(ctl);
	fprintf(stderr, "vyrectl %s: ", ctl->cmd->name);
	print_message(stderr, err.message);
	if (!strstr(err.message, path)) {
		fprintf(stderr, " (socket %s)", path);
	}
	fprintf(stderr, "\nFix: %s\n", FIX_CONNECT);
	return CTL_EXIT_CONNECT;
}

int ctl_fetch(
	const struct ctl *ctl, const char *op, struct vy_client **client, struct vy_reply **reply)
{
	*reply = NULL;
	int rc = ctl_connect(ctl, client);
	if (rc) {
		return rc;
	}
	struct vy_error err;
	vy_error_clear(&err);
	if (vy_call(*client, op, reply, &err) != 0) {
		vy_client_close(*client);
		*client = NULL;
		*reply = NULL;
		return ctl_report(ctl, op, &err);
	}
	return CTL_EXIT_OK;
}

static struct json_object *hex_string(const uint8_t *bytes, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char *s = ctl_realloc(NULL, len * 2 + 1);
	for (size_t i = 0; i < len; i++) {
		s[2 * i] = digits[bytes[i] >> 4];
		s[2 * i + 1] = digits[bytes[i] & 15];
	}
	struct json_object *o = json_object_new_string_len(s, (int)(len * 2));
	free(s);
	return o;
}

struct json_object *ctl_json_of(const struct vy_value *v)
{
	switch (vy_value_kind(v)) {
	case VY_KIND_MISSING:
	case VY_KIND_NIL:
		return NULL;
	case VY_KIND_BOOL: {
		bool b = false;
		vy_value_bool(v, &b);
		return json_object_new_boolean(b);
	}
	case VY_KIND_UINT: {
		uint64_t u = 0;
		vy_value_u64(v, &u);
		return json_object_new_uint64(u);
	}
	case VY_KIND_INT: {
		int64_t i = 0;
		vy_value_i64(v, &i);
		return json_object_new_int64(i);
	}
	case VY_KIND_FLOAT: {
		double f = 0;
		vy_value_f64(v, &f);
		if (isnan(f)) {
			return json_object_new_string("nan");
		}
		if (isinf(f)) {
			return json_object_new_string(f > 0 ? "inf" : "-inf");
		}
		return json_object_new_double(f);
	}
	case VY_KIND_STR:
		return json_object_new_string_len(vy_value_str(v), (int)vy_value_len(v));
	case VY_KIND_BIN: {
		size_t len = 0;
		const uint8_t *b = vy_value_bin(v, &len);
		return hex_string(b, len);
	}
	case VY_KIND_ARRAY: {
		struct json_object *a = json_object_new_array();
		for (size_t i = 0; i < vy_value_len(v); i++) {
			json_object_array_add(a, ctl_json_of(vy_value_item(v, i)));
		}
		return a;
	}
	case VY_KIND_MAP: {
		struct json_object *o = json_object_new_object();
		for (size_t i = 0; i < vy_value_len(v); i++) {
			json_object_object_add(
				o, vy_value_key(v, i), ctl_json_of(vy_value_item(v, i)));
		}
		return o;
	}
	}
	return NULL;
}

void ctl_json_print(struct json_object *obj)
{
	puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							 JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(obj);
}

uint64_t ctl_u64(const struct vy_value *v, const char *path)
{
	return vy_value_get_u64(v, path, 0);
}

const char *ctl_str(const struct vy_value *v, const char *path)
{
	return vy_value_get_str(v, path, "");
}

bool ctl_bool(const struct vy_value *v, const char *path)
{
	bool b = false;
	vy_value_bool(vy_value_get(v, path), &b);
	return b;
}
