/*
 * The figures of one vybench run: each row holds a value, the anchor measured in the same run
 * (where the figure has one), their ratio, the DESIGN.md §10 target and whether the value meets
 * it. Printed as a table and written as JSON with json-c.
 *
 * A value or anchor that was not measured is NAN (printed "-", written null). A row's status is
 * "pass" or "miss" where it has a target, "report" where it has none, and "error" or "wrong" for
 * a group that could not be measured or computed a wrong result.
 *
 * Thread-safety: a report belongs to one thread.
 */
#ifndef VY_BENCH_REPORT_H
#define VY_BENCH_REPORT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"

#define VY_BENCH_FIGURES_MAX 64

/* What a row's target compares: the ratio value/anchor or the value itself. */
enum vy_bench_goal {
	VY_BENCH_GOAL_NONE,
	VY_BENCH_GOAL_RATIO_AT_MOST,
	VY_BENCH_GOAL_RATIO_AT_LEAST,
	VY_BENCH_GOAL_AT_MOST,
	VY_BENCH_GOAL_AT_LEAST,
};

struct vy_bench_figure {
	char key[48];  /* stable machine name, "tiny_p50" */
	char name[64]; /* shown in the table */
	char unit[16];
	double value;
	char anchor_name[40]; /* what the anchor is, "raw Vulkan" */
	double anchor;
	double ratio; /* value / anchor, NAN without both */
	enum vy_bench_goal goal;
	double limit;
	char target[40]; /* the target as text, "ratio <= 1.0" */
	const char *status;
	char note[384];
};

struct vy_bench_report {
	struct vy_bench_figure items[VY_BENCH_FIGURES_MAX];
	size_t len;
};

/*
 * Add a row and judge it against its goal. `anchor_name` may be NULL when `anchor` is NAN.
 * Returns the row (for a note), or NULL when the report is full (asserted in debug builds).
 */
struct vy_bench_figure *vy_bench_report_add(struct vy_bench_report *r, const char *key,
	const char *name, const char *unit, double value, const char *anchor_name, double anchor,
	enum vy_bench_goal goal, double limit, const char *target);
/* Add a row for a group that failed: status "wrong" for VY_BENCH_WRONG, else "error". */
void vy_bench_report_fail(
	struct vy_bench_report *r, const char *key, const char *name, const struct vy_err *err);
/* Append printf-style text to a row's note ("; " between parts). NULL is accepted. */
void vy_bench_figure_note(struct vy_bench_figure *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The first row with this key, or NULL. */
struct vy_bench_figure *vy_bench_report_find(struct vy_bench_report *r, const char *key);
/*
 * Give a row measured before its anchor (a figure of PyTorch's, which runs after every group) that
 * anchor, its goal and its target text (NULL: "-"), and judge it again. NULL is accepted.
 */
void vy_bench_figure_anchor(struct vy_bench_figure *f, const char *anchor_name, double anchor,
	enum vy_bench_goal goal, double limit, const char *target);

/* Whether any row failed (error or wrong). */
bool vy_bench_report_failed(const struct vy_bench_report *r);
/* Print the table and the notes under it. */
void vy_bench_report_print(const struct vy_bench_report *r, FILE *out);
/* The rows as a JSON array (a new reference, owned by the caller). */
json_object *vy_bench_report_json(const struct vy_bench_report *r);

#endif
