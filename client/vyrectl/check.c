/*
 * The local side of vyrectl: programs read with the protocol and planner modules, without a
 * daemon. `check` decodes and validates a program and prints a summary (its id, its buffers with
 * their binding roles and input/output order, its size, every validation error with its location
 * and Fix line). `run` and `compile` use the same decoding and validation before they send a
 * program, and `run` takes the program's input and output order and element types from the
 * binding plan here, the one the daemon builds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "codec.h"
#include "launch.h"
#include "validate.h"
#include "vyrectl.h"

_Static_assert(
	sizeof(((struct ctl_slot *)0)->name) > VY_IR_MAX_NAME, "a slot holds any buffer name");
_Static_assert(CTL_LAYOUT_MAX >= VY_IR_MAX_BUFFERS, "a layout holds every buffer");

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

/* Read and decode a program; on failure print why and return the exit status. */
static int decode(
	const struct ctl *ctl, const char *path, char **text, size_t *len, struct vy_program **out)
{
	*out = NULL;
	*text = ctl_read_file(path, len);
	if (!*text) {
		fprintf(stderr,
			"vyrectl %s: cannot read %s: %s.\nFix: check the path and its "
			"permissions.\n",
			ctl->cmd->name, path, strerror(errno));
		return CTL_EXIT_FILE;
	}
	struct vy_err err;
	if (vy_program_from_json(*text, *len, out, &err) != 0) {
		fprintf(stderr, "vyrectl %s: %s does not decode:\n", ctl->cmd->name, path);
		print_err(&err);
		free(*text);
		*text = NULL;
		return CTL_EXIT_INVALID;
	}
	return CTL_EXIT_OK;
}

static void print_errors(const struct ctl *ctl, const char *path, const struct vy_err_list *errs)
{
	size_t n = errs->len + errs->dropped;
	fprintf(stderr, "vyrectl %s: %s is not valid (%zu error%s):\n", ctl->cmd->name, path, n,
		n == 1 ? "" : "s");
	for (size_t i = 0; i < errs->len; i++) {
		print_err(&errs->items[i]);
	}
}

int ctl_cmd_check(struct ctl *ctl, int argc, char **argv)
{
	static const struct option none[] = {{NULL, 0, NULL, 0}};
	if (ctl_getopt(ctl, argc, argv, "", none) != -1 || !ctl_want_args(ctl, argc, argv, 1)) {
		return CTL_EXIT_USAGE;
	}
	const char *path = argv[optind];
	char *text;
	size_t len;
	struct vy_program *p;
	int rc = decode(ctl, path, &text, &len, &p);
	if (rc) {
		return rc;
	}
	free(text);
	struct vy_err_list errs;
	vy_err_list_init(&errs);
	rc = vy_validate(p, NULL, &errs);
	print_summary(p);
	if (rc != 0) {
		fputc('\n', stderr);
		print_errors(ctl, path, &errs);
	} else {
		printf("\nvalid        yes\n");
	}
	vy_err_list_finish(&errs);
	vy_program_destroy(p);
	return rc ? CTL_EXIT_INVALID : CTL_EXIT_OK;
}

static void fill_slot(struct ctl_slot *s, const struct vy_buffer *b)
{
	snprintf(s->name, sizeof(s->name), "%s", b->name);
	snprintf(s->type, sizeof(s->type), "%s", vy_type_name(b->type));
	s->count = b->count;
}

int ctl_layout_load(
	const struct ctl *ctl, const char *path, struct ctl_layout *out, char **text, size_t *len)
{
	memset(out, 0, sizeof(*out));
	struct vy_program *p;
	int rc = decode(ctl, path, text, len, &p);
	if (rc) {
		return rc;
	}
	struct vy_err_list errs;
	vy_err_list_init(&errs);
	struct vy_binding_plan *plan = NULL;
	struct vy_err err;
	if (vy_validate(p, NULL, &errs) != 0) {
		print_errors(ctl, path, &errs);
		rc = CTL_EXIT_INVALID;
	} else if (vy_binding_plan_build(p, &plan, &err) != 0) {
		fprintf(stderr, "vyrectl %s: %s has no binding plan:\n", ctl->cmd->name, path);
		print_err(&err);
		rc = CTL_EXIT_INVALID;
	} else {
		snprintf(
			out->program_name, sizeof(out->program_name), "%s", p->name ? p->name : "");
		out->n_inputs = plan->n_inputs;
		for (uint32_t i = 0; i < plan->n_inputs; i++) {
			fill_slot(&out->inputs[i], &p->buffers[plan->input_indices[i]]);
		}
		out->n_outputs = plan->n_outputs;
		for (uint32_t i = 0; i < plan->n_outputs; i++) {
			fill_slot(&out->outputs[i], &p->buffers[plan->output_indices[i]]);
		}
	}
	vy_binding_plan_destroy(plan);
	vy_err_list_finish(&errs);
	vy_program_destroy(p);
	if (rc) {
		free(*text);
		*text = NULL;
	}
	return rc;
}
