/*
 * Errors of libvyre. The daemon's codes are the protocol's table (protocol/err.h) under public
 * names with the same values, checked below at compile time; the client's own codes (connection,
 * arguments, system calls) get names, numbers and retry classes from a small table here. Errors
 * the daemon sends are copied field by field, so the caller sees exactly what the daemon said.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define VY__CHECK_CODE(name, num, retry, desc)                                                     \
	static_assert(                                                                             \
		(int)VY_ERROR_##name == (int)VY_E_##name, "public and wire codes differ: " #name);
VY_ERR_MAP(VY__CHECK_CODE)
#undef VY__CHECK_CODE

struct local_code {
	int code;
	const char *name;
	const char *retry;
};

static const struct local_code local_codes[] = {
	{VY_ERROR_CONNECT_FAILED, "CONNECT_FAILED", "later"},
	{VY_ERROR_DISCONNECTED, "DISCONNECTED", "reconnect"},
	{VY_ERROR_BAD_REPLY, "BAD_REPLY", "reconnect"},
	{VY_ERROR_INVALID_ARGUMENT, "INVALID_ARGUMENT", "after_fix"},
	{VY_ERROR_SYSTEM, "SYSTEM_ERROR", "later"},
	{VY_ERROR_NO_REPLY, "NO_REPLY", "later"},
};

static const struct local_code *find_local(int code)
{
	for (size_t i = 0; i < sizeof(local_codes) / sizeof(local_codes[0]); i++) {
		if (local_codes[i].code == code) {
			return &local_codes[i];
		}
	}
	return NULL;
}

const char *vy_error_name(int code)
{
	const struct local_code *l = find_local(code);
	return l ? l->name : vy_err_name(code);
}

void vy_error_clear(struct vy_error *err)
{
	if (err) {
		memset(err, 0, sizeof(*err));
	}
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

/* Name, number and retry class of a code, from whichever table holds it. */
static void fill_identity(struct vy_error *err, int code)
{
	err->code = code;
	const struct local_code *l = find_local(code);
	if (l) {
		err->num = -code;
		copy_str(err->name, sizeof(err->name), l->name);
		copy_str(err->retry, sizeof(err->retry), l->retry);
		return;
	}
	err->num = vy_err_num(code);
	copy_str(err->name, sizeof(err->name), vy_err_name(code));
	copy_str(err->retry, sizeof(err->retry), vy_err_retry_name(vy_err_retry(code)));
}

int vy__error_set(
	struct vy_error *err, int code, const char *at, const char *fix, const char *fmt, ...)
{
	if (!err) {
		return code;
	}
	vy_error_clear(err);
	fill_identity(err, code);
	copy_str(err->at, sizeof(err->at), at);
	copy_str(err->fix, sizeof(err->fix), fix);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

int vy__error_from_err(struct vy_error *err, const struct vy_err *e)
{
	if (!err) {
		return e->code;
	}
	vy_error_clear(err);
	fill_identity(err, e->code);
	copy_str(err->at, sizeof(err->at), e->at);
	copy_str(err->message, sizeof(err->message), e->message);
	copy_str(err->fix, sizeof(err->fix), e->fix);
	return e->code;
}

/* The code of a daemon error object: its number when the table knows it, else its name, else
 * the negated number as sent (a newer daemon's code), else INTERNAL. */
static int code_of(const struct vy_value *obj)
{
	uint64_t num = vy_value_get_u64(obj, "num", 0);
	int code = num <= 1000000 ? vy_err_from_num((int)num) : 0;
	if (!code) {
		code = vy_err_from_name(vy_value_get_str(obj, "code", ""));
	}
	if (!code && num > 0 && num <= 1000000) {
		code = -(int)num;
	}
	return code ? code : VY_E_INTERNAL;
}

int vy__error_from_value(struct vy_error *err, const struct vy_value *obj)
{
	int code = code_of(obj);
	if (!err) {
		return code;
	}
	vy_error_clear(err);
	err->code = code;
	err->num = (int)vy_value_get_u64(obj, "num", (uint64_t)-code);
	copy_str(err->name, sizeof(err->name), vy_value_get_str(obj, "code", vy_error_name(code)));
	copy_str(err->retry, sizeof(err->retry),
		vy_value_get_str(obj, "retry", vy_err_retry_name(vy_err_retry(code))));
	copy_str(err->at, sizeof(err->at), vy_value_get_str(obj, "at", ""));
	copy_str(err->message, sizeof(err->message), vy_value_get_str(obj, "message", ""));
	copy_str(err->fix, sizeof(err->fix), vy_value_get_str(obj, "fix", ""));
	const struct vy_value *list = vy_value_get(obj, "errors");
	err->n_errors = vy_value_len(list);
	for (size_t i = 0; i < err->n_errors && i < VY_ERROR_ITEMS_MAX; i++) {
		const struct vy_value *e = vy_value_item(list, i);
		struct vy_error_item *it = &err->errors[i];
		it->code = code_of(e);
		copy_str(it->at, sizeof(it->at), vy_value_get_str(e, "at", ""));
		copy_str(it->message, sizeof(it->message), vy_value_get_str(e, "message", ""));
		copy_str(it->fix, sizeof(it->fix), vy_value_get_str(e, "fix", ""));
	}
	return code;
}

void vy__error_copy(struct vy_error *dst, const struct vy_error *src)
{
	if (!dst) {
		return;
	}
	if (src) {
		*dst = *src;
	} else {
		vy_error_clear(dst);
	}
}

char *vy_error_text(const struct vy_error *err, char *buf, size_t size)
{
	if (!err || !err->code) {
		snprintf(buf, size, "no error");
		return buf;
	}
	char at[VY_ERROR_AT_MAX + 8] = "";
	if (err->at[0]) {
		snprintf(at, sizeof(at), " (at %s)", err->at);
	}
	snprintf(buf, size, "%s: %s%s.%s%s", err->name[0] ? err->name : vy_error_name(err->code),
		err->message, at, err->fix[0] ? " Fix: " : "", err->fix);
	return buf;
}

const char *vy_version(void)
{
#define VY__STR2(x) #x
#define VY__STR(x) VY__STR2(x)
	return VY__STR(VYRE_VERSION_MAJOR) "." VY__STR(VYRE_VERSION_MINOR) "." VY__STR(
		VYRE_VERSION_PATCH);
#undef VY__STR
#undef VY__STR2
}
