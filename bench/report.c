/*
 * The report of a vybench run (report.h): rows judged against their targets when they are
 * added, a fixed-width table for people and a JSON array for programs.
 */
#include "report.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "bench.h"

static const char *judge(const struct vy_bench_figure *f)
{
	double x = f->goal == VY_BENCH_GOAL_RATIO_AT_MOST || f->goal == VY_BENCH_GOAL_RATIO_AT_LEAST
			   ? f->ratio
			   : f->value;
	if (f->goal == VY_BENCH_GOAL_NONE) {
		return "report";
	}
	if (isnan(x)) {
		return "miss";
	}
	switch (f->goal) {
	case VY_BENCH_GOAL_RATIO_AT_MOST:
	case VY_BENCH_GOAL_AT_MOST:
		return x <= f->limit ? "pass" : "miss";
	case VY_BENCH_GOAL_RATIO_AT_LEAST:
	case VY_BENCH_GOAL_AT_LEAST:
		return x >= f->limit ? "pass" : "miss";
	case VY_BENCH_GOAL_NONE:
		break;
	}
	return "report";
}

struct vy_bench_figure *vy_bench_report_add(struct vy_bench_report *r, const char *key,
	const char *name, const char *unit, double value, const char *anchor_name, double anchor,
	enum vy_bench_goal goal, double limit, const char *target)
{
	assert(r->len < VY_BENCH_FIGURES_MAX);
	if (r->len >= VY_BENCH_FIGURES_MAX) {
		return NULL;
	}
	struct vy_bench_figure *f = &r->items[r->len++];
	memset(f, 0, sizeof(*f));
	snprintf(f->key, sizeof(f->key), "%s", key);
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->unit, sizeof(f->unit), "%s", unit);
	snprintf(f->anchor_name, sizeof(f->anchor_name), "%s", anchor_name ? anchor_name : "");
	snprintf(f->target, sizeof(f->target), "%s", target ? target : "-");
	f->value = value;
	f->anchor = anchor;
	f->ratio = !isnan(value) && !isnan(anchor) && anchor != 0 ? value / anchor : NAN;
	f->goal = goal;
	f->limit = limit;
	f->status = judge(f);
	return f;
}

struct vy_bench_figure *vy_bench_report_find(struct vy_bench_report *r, const char *key)
{
	for (size_t i = 0; i < r->len; i++) {
		if (strcmp(r->items[i].key, key) == 0) {
			return &r->items[i];
		}
	}
	return NULL;
}

void vy_bench_figure_anchor(struct vy_bench_figure *f, const char *anchor_name, double anchor,
	enum vy_bench_goal goal, double limit, const char *target)
{
	if (!f) {
		return;
	}
	snprintf(f->anchor_name, sizeof(f->anchor_name), "%s", anchor_name ? anchor_name : "");
	snprintf(f->target, sizeof(f->target), "%s", target ? target : "-");
	f->anchor = anchor;
	f->ratio = !isnan(f->value) && !isnan(anchor) && anchor != 0 ? f->value / anchor : NAN;
	f->goal = goal;
	f->limit = limit;
	f->status = judge(f);
}

void vy_bench_figure_note(struct vy_bench_figure *f, const char *fmt, ...)
{
	if (!f) {
		return;
	}
	size_t len = strlen(f->note);
	if (len && len + 2 < sizeof(f->note)) {
		memcpy(f->note + len, "; ", 3);
		len += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->note + len, sizeof(f->note) - len, fmt, ap);
	va_end(ap);
}

void vy_bench_report_fail(
	struct vy_bench_report *r, const char *key, const char *name, const struct vy_err *err)
{
	struct vy_bench_figure *f =
		vy_bench_report_add(r, key, name, "", NAN, NULL, NAN, VY_BENCH_GOAL_NONE, 0, NULL);
	if (!f) {
		return;
	}
	f->status = err->code == VY_BENCH_WRONG ? "wrong" : "error";
	vy_bench_figure_note(f, "%s", err->message);
	if (err->at[0]) {
		vy_bench_figure_note(f, "at %s", err->at);
	}
	if (err->fix[0]) {
		vy_bench_figure_note(f, "Fix: %s", err->fix);
	}
}

bool vy_bench_report_failed(const struct vy_bench_report *r)
{
	for (size_t i = 0; i < r->len; i++) {
		const char *s = r->items[i].status;
		if (strcmp(s, "error") == 0 || strcmp(s, "wrong") == 0) {
			return true;
		}
	}
	return false;
}

/* A number with as many digits as its size deserves, and its unit. */
static void format_num(char *buf, size_t size, double x, const char *unit)
{
	/* Unitless figures are indices between 0 and 1: three decimals for all of them. */
	const char *fmt = !unit[0] && fabs(x) <= 1 ? "%.3f"
			  : fabs(x) >= 1000        ? "%.0f"
			  : fabs(x) >= 100         ? "%.1f"
			  : fabs(x) >= 1 || x == 0 ? "%.2f"
			  : fabs(x) >= 0.1         ? "%.3f"
						   : "%.3g";
	if (isnan(x)) {
		snprintf(buf, size, "-");
		return;
	}
	int n = snprintf(buf, size, fmt, x);
	if (unit[0] && n > 0 && (size_t)n < size) {
		snprintf(buf + n, size - (size_t)n, " %s", unit);
	}
}

void vy_bench_report_print(const struct vy_bench_report *r, FILE *out)
{
	fprintf(out, "%-40s %14s  %-32s %7s  %-22s %s\n", "figure", "value", "anchor", "ratio",
		"target", "result");
	for (size_t i = 0; i < r->len; i++) {
		const struct vy_bench_figure *f = &r->items[i];
		char value[32], anchor[80], num[32], ratio[16];
		format_num(value, sizeof(value), f->value, f->unit);
		format_num(num, sizeof(num), f->anchor, f->unit);
		if (isnan(f->anchor)) {
			snprintf(anchor, sizeof(anchor), "-");
		} else {
			snprintf(anchor, sizeof(anchor), "%s %s", num, f->anchor_name);
		}
		if (isnan(f->ratio)) {
			snprintf(ratio, sizeof(ratio), "-");
		} else {
			snprintf(ratio, sizeof(ratio), "%.3f", f->ratio);
		}
		fprintf(out, "%-40s %14s  %-32s %7s  %-22s %s\n", f->name, value, anchor, ratio,
			f->target, f->status);
	}
	bool header = false;
	for (size_t i = 0; i < r->len; i++) {
		const struct vy_bench_figure *f = &r->items[i];
		if (f->note[0]) {
			if (!header) {
				fprintf(out, "\nnotes:\n");
				header = true;
			}
			fprintf(out, "  %s: %s\n", f->name, f->note);
		}
	}
}

/* Six significant digits: a figure's noise is far larger, and the file stays readable. */
static json_object *num_or_null(double x)
{
	if (isnan(x) || isinf(x)) {
		return NULL;
	}
	char text[32];
	snprintf(text, sizeof(text), "%.6g", x);
	return json_object_new_double_s(x, text);
}

json_object *vy_bench_report_json(const struct vy_bench_report *r)
{
	json_object *rows = json_object_new_array();
	for (size_t i = 0; i < r->len; i++) {
		const struct vy_bench_figure *f = &r->items[i];
		json_object *j = json_object_new_object();
		json_object_object_add(j, "key", json_object_new_string(f->key));
		json_object_object_add(j, "figure", json_object_new_string(f->name));
		json_object_object_add(j, "unit", json_object_new_string(f->unit));
		json_object_object_add(j, "value", num_or_null(f->value));
		json_object_object_add(j, "anchor", num_or_null(f->anchor));
		json_object_object_add(j, "anchor_name",
			f->anchor_name[0] ? json_object_new_string(f->anchor_name) : NULL);
		json_object_object_add(j, "ratio", num_or_null(f->ratio));
		json_object_object_add(j, "target",
			strcmp(f->target, "-") != 0 ? json_object_new_string(f->target) : NULL);
		json_object_object_add(j, "status", json_object_new_string(f->status));
		if (f->note[0]) {
			json_object_object_add(j, "note", json_object_new_string(f->note));
		}
		json_object_array_add(rows, j);
	}
	return rows;
}
