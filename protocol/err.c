/* Lookups over the error-code table and the formatting of struct vy_err. */
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct code_info {
	int code;
	const char *name;
	int num;
	enum vy_retry retry;
	const char *desc;
};

static const struct code_info codes[] = {
#define VY__ERR_INFO(name, num, retry, desc) {VY_E_##name, #name, num, VY_RETRY_##retry, desc},
	VY_ERR_MAP(VY__ERR_INFO)
#undef VY__ERR_INFO
};

#define N_CODES (sizeof(codes) / sizeof(codes[0]))

static const struct code_info *find(int code)
{
	for (size_t i = 0; i < N_CODES; i++) {
		if (codes[i].code == code) {
			return &codes[i];
		}
	}
	return NULL;
}

const char *vy_err_name(int code)
{
	const struct code_info *c = find(code);
	return c ? c->name : "UNKNOWN";
}

int vy_err_num(int code)
{
	const struct code_info *c = find(code);
	return c ? c->num : 1999;
}

enum vy_retry vy_err_retry(int code)
{
	const struct code_info *c = find(code);
	return c ? c->retry : VY_RETRY_LATER;
}

const char *vy_err_retry_name(enum vy_retry retry)
{
	switch (retry) {
	case VY_RETRY_NEVER:
		return "never";
	case VY_RETRY_LATER:
		return "later";
	case VY_RETRY_AFTER_FIX:
		return "after_fix";
	case VY_RETRY_RECONNECT:
		return "reconnect";
	}
	return "later";
}

const char *vy_err_desc(int code)
{
	const struct code_info *c = find(code);
	return c ? c->desc : "unknown error";
}

int vy_err_from_name(const char *name)
{
	for (size_t i = 0; i < N_CODES; i++) {
		if (strcmp(codes[i].name, name) == 0) {
			return codes[i].code;
		}
	}
	return 0;
}

int vy_err_from_num(int num)
{
	for (size_t i = 0; i < N_CODES; i++) {
		if (codes[i].num == num) {
			return codes[i].code;
		}
	}
	return 0;
}

int vy_err_setv(
	struct vy_err *err, int code, const char *at, const char *fix, const char *fmt, va_list ap)
{
	if (!err) {
		return code;
	}
	err->code = code;
	snprintf(err->at, sizeof(err->at), "%s", at ? at : "");
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	snprintf(err->fix, sizeof(err->fix), "%s", fix ? fix : "");
	return code;
}

int vy_err_set(struct vy_err *err, int code, const char *at, const char *fix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vy_err_setv(err, code, at, fix, fmt, ap);
	va_end(ap);
	return code;
}

void vy_err_clear(struct vy_err *err)
{
	if (err) {
		memset(err, 0, sizeof(*err));
	}
}

char *vy_err_format(const struct vy_err *err, char *buf, size_t size)
{
	if (err->at[0]) {
		snprintf(buf, size, "%s: %s (at %s). Fix: %s", vy_err_name(err->code), err->message,
			err->at, err->fix);
	} else {
		snprintf(buf, size, "%s: %s. Fix: %s", vy_err_name(err->code), err->message,
			err->fix);
	}
	return buf;
}

void vy_err_list_init(struct vy_err_list *list)
{
	memset(list, 0, sizeof(*list));
}

void vy_err_list_finish(struct vy_err_list *list)
{
	if (list) {
		free(list->items);
		memset(list, 0, sizeof(*list));
	}
}

void vy_err_list_push(struct vy_err_list *list, const struct vy_err *err)
{
	if (list->len >= VY_ERR_LIST_MAX) {
		list->dropped++;
		return;
	}
	if (list->len == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 8;
		struct vy_err *items = realloc(list->items, cap * sizeof(*items));
		if (!items) {
			fprintf(stderr, "vyred: out of memory growing an error list\n");
			abort();
		}
		list->items = items;
		list->cap = cap;
	}
	list->items[list->len++] = *err;
}
