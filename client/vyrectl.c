/*
 * vyrectl: the command-line tool of vyred. `check` reads a program in its JSON form, decodes and
 * validates it, and prints a summary: the program id, its buffers with their binding roles and
 * input/output order, its size in nodes and canonical bytes, and every validation error with its
 * location and Fix line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "codec.h"
#include "launch.h"
#include "validate.h"

enum { EXIT_USAGE = 2, EXIT_INVALID = 3, EXIT_IO = 4 };

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vyrectl COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  check PROGRAM.json   decode and validate a program, print its id and bindings\n"
		"  help                 show this text\n"
		"\n"
		"exit status: 0 success, 2 usage error, 3 invalid program, 4 file error\n");
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f) {
		return NULL;
	}
	size_t cap = 1 << 16;
	size_t n = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (n < cap) {
			break;
		}
		if (cap >= VY_IR_MAX_DOCUMENT * 4) {
			errno = EFBIG;
			free(buf);
			buf = NULL;
			break;
		}
		cap *= 2;
		char *grown = realloc(buf, cap);
		if (!grown) {
			free(buf);
		}
		buf = grown;
	}
	if (f != stdin) {
		fclose(f);
	}
	*len = n;
	return buf;
}

static void print_err(const struct vy_err *e)
{
	char line[VY_ERR_AT_MAX + VY_ERR_MESSAGE_MAX + VY_ERR_FIX_MAX + 64];
	fprintf(stderr, "  %s\n", vy_err_format(e, line, sizeof(line)));
}

static const char *role_io(const struct vy_binding *b, char *buf, size_t size)
{
	char in[16] = "-";
	char out[16] = "-";
	if (b->input_index != VY_BINDING_NONE) {
		snprintf(in, sizeof(in), "in[%u]", b->input_index);
	}
	if (b->output_index != VY_BINDING_NONE) {
		snprintf(out, sizeof(out), "out[%u]", b->output_index);
	}
	snprintf(buf, size, "%-7s %s", in, out);
	return buf;
}

static void print_summary(const struct vy_program *p)
{
	msgpack_sbuffer canon;
	struct vy_program_id id;
	vy_program_id_of(p, &canon, &id);
	char hex[VY_PROGRAM_ID_HEX];
	vy_program_id_hex(&id, hex);
	printf("program      %s\n", p->name ? p->name : "(unnamed)");
	printf("id           %s\n", hex);
	printf("canonical    %zu bytes of msgpack\n", canon.size);
	printf("workgroup    %u x %u x %u\n", p->workgroup_size[0], p->workgroup_size[1],
		p->workgroup_size[2]);
	printf("nodes        %u\n", vy_block_count_nodes(&p->entry));
	unsigned features = vy_launch_features_scan(p);
	printf("uses         %s%s%s%s\n", features & VY_LAUNCH_USES_ATOMICS ? "atomics " : "",
		features & VY_LAUNCH_USES_WORKGROUP_MEMORY ? "workgroup-memory " : "",
		features & VY_LAUNCH_USES_SUBGROUPS ? "subgroups " : "",
		features ? "" : "plain loads and stores");
	msgpack_sbuffer_destroy(&canon);

	struct vy_binding_plan *plan = NULL;
	struct vy_err err;
	if (vy_binding_plan_build(p, &plan, &err) != 0) {
		print_err(&err);
		return;
	}
	printf("\n%-8s %-16s %-11s %-5s %-9s %-12s %s\n", "binding", "buffer", "access", "type",
		"count", "role", "order");
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		const struct vy_binding *b = &plan->bindings[i];
		const struct vy_buffer *buf = &p->buffers[b->buffer_index];
		char count[16];
		char io[32];
		snprintf(count, sizeof(count), "%u", buf->count);
		printf("%-8u %-16s %-11s %-5s %-9s %-12s %s\n", b->binding, b->name,
			vy_access_name(buf->access), vy_type_name(buf->type),
			buf->count ? count : "by-input", vy_binding_role_name(b->role),
			role_io(b, io, sizeof(io)));
	}
	vy_binding_plan_destroy(plan);
}

static int cmd_check(const char *path)
{
	size_t len = 0;
	char *text = read_file(path, &len);
	if (!text) {
		fprintf(stderr,
			"vyrectl: cannot read %s: %s. Fix: check the path and its permissions.\n",
			path, strerror(errno));
		return EXIT_IO;
	}
	struct vy_program *p = NULL;
	struct vy_err err;
	int rc = vy_program_from_json(text, len, &p, &err);
	free(text);
	if (rc != 0) {
		fprintf(stderr, "vyrectl: %s does not decode:\n", path);
		print_err(&err);
		return EXIT_INVALID;
	}
	struct vy_err_list errs;
	vy_err_list_init(&errs);
	rc = vy_validate(p, NULL, &errs);
	print_summary(p);
	if (rc != 0) {
		fprintf(stderr, "\nvyrectl: %s is not valid (%zu error%s):\n", path,
			errs.len + errs.dropped, errs.len + errs.dropped == 1 ? "" : "s");
		for (size_t i = 0; i < errs.len; i++) {
			print_err(&errs.items[i]);
		}
	} else {
		printf("\nvalid        yes\n");
	}
	vy_err_list_finish(&errs);
	vy_program_destroy(p);
	return rc ? EXIT_INVALID : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "check") == 0) {
		if (argc != 3 || strcmp(argv[2], "--help") == 0) {
			fprintf(argc == 3 ? stdout : stderr,
				"usage: vyrectl check PROGRAM.json\n"
				"Decode and validate a program (\"-\" reads standard input), print "
				"its id,\n"
				"buffers, binding roles and input/output order, and every error "
				"with its Fix.\n");
			return argc == 3 ? 0 : EXIT_USAGE;
		}
		return cmd_check(argv[2]);
	}
	fprintf(stderr, "vyrectl: unknown command \"%s\". Fix: run vyrectl help.\n", cmd);
	return EXIT_USAGE;
}
