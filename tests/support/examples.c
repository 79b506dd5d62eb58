/* The example programs of the source tree, read for the tests that decode or compile them. */
#include "examples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *vy_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		if (len) {
			*len = (size_t)n;
		}
	}
	return buf;
}

int vy_test_each_ir_doc_program(const char *source_root,
	void (*fn)(const char *json, const char *what, void *ctx), void *ctx)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/docs/ir.md", source_root);
	char *doc = vy_test_read_file(path, NULL);
	if (!doc) {
		return -1;
	}
	int n = 0;
	for (char *p = strstr(doc, "```json\n"); p; p = strstr(p, "```json\n")) {
		p += 8;
		char *end = strstr(p, "```");
		if (!end) {
			n = -1;
			break;
		}
		*end = '\0';
		const char *q = p;
		while (*q == ' ' || *q == '\n' || *q == '{') {
			q++;
		}
		if (strncmp(q, "\"vyre\"", 6) == 0) {
			char what[64];
			snprintf(what, sizeof(what), "docs/ir.md program %d", n + 1);
			fn(p, what, ctx);
			n++;
		}
		p = end + 3;
	}
	free(doc);
	return n;
}
