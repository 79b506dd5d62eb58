/*
 * Human output of vyrectl: tables whose columns line up however wide the cells turn out (the
 * short renderings of byte counts, durations and uptimes are in fmt.c). Widths count characters,
 * not bytes, so "µs" and names in UTF-8 keep the columns straight.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vyrectl.h"

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(ctl_realloc(NULL, n), s, n);
}

/* Characters of a UTF-8 string: every byte that does not continue a sequence. */
static size_t width_of(const char *s)
{
	size_t w = 0;
	for (; *s; s++) {
		w += ((unsigned char)*s & 0xC0) != 0x80;
	}
	return w;
}

void ctl_table_init(struct ctl_table *t, size_t n_cols, const char *const *headers)
{
	assert(n_cols >= 1 && n_cols <= CTL_TABLE_COLS);
	memset(t, 0, sizeof(*t));
	t->n_cols = n_cols;
	for (size_t i = 0; i < n_cols; i++) {
		t->headers[i] = headers[i];
	}
}

void ctl_table_row(struct ctl_table *t, const char *const *cells)
{
	if (t->n_rows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = ctl_realloc(t->cells, t->cap * t->n_cols * sizeof(*t->cells));
	}
	char **row = t->cells + t->n_rows * t->n_cols;
	for (size_t i = 0; i < t->n_cols; i++) {
		row[i] = xstrdup(cells[i] ? cells[i] : "-");
	}
	t->n_rows++;
}

static void pad(FILE *out, size_t n)
{
	for (; n > 0; n--) {
		fputc(' ', out);
	}
}

static void print_row(
	const struct ctl_table *t, const char *const *cells, const size_t *widths, FILE *out)
{
	for (size_t i = 0; i < t->n_cols; i++) {
		bool right = t->headers[i][0] == '>';
		const char *s = cells[i];
		size_t w = width_of(s);
		bool last = i + 1 == t->n_cols;
		if (right) {
			pad(out, widths[i] - w);
		}
		fputs(s, out);
		if (!last) {
			pad(out, (right ? 0 : widths[i] - w) + 2);
		}
	}
	fputc('\n', out);
}

void ctl_table_print(const struct ctl_table *t, FILE *out)
{
	size_t widths[CTL_TABLE_COLS];
	const char *heads[CTL_TABLE_COLS];
	for (size_t i = 0; i < t->n_cols; i++) {
		heads[i] = t->headers[i] + (t->headers[i][0] == '>');
		widths[i] = width_of(heads[i]);
	}
	for (size_t r = 0; r < t->n_rows; r++) {
		for (size_t i = 0; i < t->n_cols; i++) {
			size_t w = width_of(t->cells[r * t->n_cols + i]);
			widths[i] = w > widths[i] ? w : widths[i];
		}
	}
	print_row(t, heads, widths, out);
	for (size_t r = 0; r < t->n_rows; r++) {
		print_row(t, (const char *const *)(t->cells + r * t->n_cols), widths, out);
	}
}

void ctl_table_finish(struct ctl_table *t)
{
	for (size_t i = 0; i < t->n_rows * t->n_cols; i++) {
		free(t->cells[i]);
	}
	free(t->cells);
	memset(t, 0, sizeof(*t));
}
