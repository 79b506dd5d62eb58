/*
 * `run` and `compile`: send a program from its JSON file to the daemon. Both check the program
 * locally first (check.c), so a mistake is reported with every error and its Fix before anything
 * is sent. `run` builds one input per input buffer, in the order of the program's binding plan,
 * from --input NAME=DATA arguments given in any order, and prints each output under its buffer's
 * name in its element type or the --format asked for.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

enum { OPT_BACKEND = 0x200, OPT_DEVICE, OPT_TIMING };

enum format { FMT_DEFAULT, FMT_U32, FMT_I32, FMT_F32, FMT_HEX, FMT_RAW };

static const char *const format_names[] = {"", "u32", "i32", "f32", "hex", "raw"};

#define MAX_INPUT_ARGS 64

struct input_arg {
	const char *name; /* up to the '=' of the argument */
	size_t name_len;
	const char *data; /* after the '=' */
};

struct bytes {
	uint8_t *p; /* owned */
	size_t len;
};

static void push_word(struct bytes *b, uint32_t w)
{
	b->p = ctl_realloc(b->p, b->len + 4);
	for (int i = 0; i < 4; i++) {
		b->p[b->len++] = (uint8_t)(w >> (8 * i));
	}
}

static uint32_t word_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

static bool parse_hex(const char *s, struct bytes *b)
{
	int hi = -1;
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n') {
			continue;
		}
		int d = hex_digit(*s);
		if (d < 0) {
			return false;
		}
		if (hi < 0) {
			hi = d;
			continue;
		}
		b->p = ctl_realloc(b->p, b->len + 1);
		b->p[b->len++] = (uint8_t)(hi << 4 | d);
		hi = -1;
	}
	return hi < 0;
}

/* One element of a list in `type` ("u32", "i32", "f32", "bool") as its 32-bit word. */
static bool parse_element(const char *tok, const char *type, uint32_t *w)
{
	char *end = NULL;
	errno = 0;
	if (strcmp(type, "f32") == 0) {
		float f = strtof(tok, &end);
		memcpy(w, &f, sizeof(f));
		/* Subnormals underflow with ERANGE and are what was asked for; overflow is not. */
		if (errno == ERANGE && !isinf(f)) {
			errno = 0;
		}
	} else if (strcmp(type, "i32") == 0) {
		long long v = strtoll(tok, &end, 0);
		if (v < INT32_MIN || v > INT32_MAX) {
			return false;
		}
		*w = (uint32_t)(int32_t)v;
	} else if (strcmp(type, "bool") == 0 &&
		   (strcmp(tok, "true") == 0 || strcmp(tok, "false") == 0)) {
		*w = tok[0] == 't';
		return true;
	} else {
		if (tok[0] == '-') {
			return false;
		}
		unsigned long long v = strtoull(tok, &end, 0);
		if (v > UINT32_MAX || (strcmp(type, "bool") == 0 && v > 1)) {
			return false;
		}
		*w = (uint32_t)v;
	}
	return errno == 0 && end != tok && *end == '\0';
}

/* A comma-separated list of `type` elements; *bad points at the element that failed. */
static bool parse_list(const char *s, const char *type, struct bytes *b, char *bad, size_t size)
{
	while (*s == ' ') {
		s++;
	}
	if (!*s) {
		return true;
	}
	for (;;) {
		size_t n = strcspn(s, ",");
		char tok[96];
		snprintf(tok, sizeof(tok), "%.*s", (int)n, s);
		char *t = tok;
		while (*t == ' ') {
			t++;
		}
		for (size_t e = strlen(t); e > 0 && t[e - 1] == ' '; e--) {
			t[e - 1] = '\0';
		}
		uint32_t w = 0;
		if (n >= sizeof(tok) || !parse_element(t, type, &w)) {
			snprintf(bad, size, "%.*s", (int)n, s);
			return false;
		}
		push_word(b, w);
		if (!s[n]) {
			return true;
		}
		s += n + 1;
	}
}

static const struct ctl_slot *find_slot(
	const struct ctl_slot *slots, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(slots[i].name) == len && strncmp(slots[i].name, name, len) == 0) {
			return &slots[i];
		}
	}
	return NULL;
}

static enum format format_of(enum format asked, const struct ctl_slot *slot);
static void print_output(
	const struct ctl_slot *slot, enum format fmt, const uint8_t *p, size_t len);
static struct json_object *output_json(
	const struct ctl_slot *slot, enum format fmt, const uint8_t *p, size_t len);

/* The bytes of one input from its DATA; returns an exit status. */
static int input_bytes(
	const struct ctl *ctl, const struct ctl_slot *slot, const char *data, struct bytes *b);

int ctl_slot_input(const struct ctl *ctl, const struct ctl_slot *slot, const char *data,
	uint8_t **p, size_t *len)
{
	struct bytes b = {0};
	int rc = input_bytes(ctl, slot, data, &b);
	*p = b.p;
	*len = b.len;
	return rc;
}

void ctl_slot_print(const struct ctl *ctl, const struct ctl_slot *slot, const uint8_t *p,
	size_t len, struct json_object *into)
{
	enum format fmt = format_of(FMT_DEFAULT, slot);
	if (into) {
		json_object_array_add(into, output_json(slot, fmt, p, len));
	} else {
		print_output(slot, fmt, p, len);
	}
}

static int input_bytes(
	const struct ctl *ctl, const struct ctl_slot *slot, const char *data, struct bytes *b)
{
	if (data[0] == '@') {
		size_t len = 0;
		char *text = ctl_read_file(data + 1, &len);
		if (!text) {
			fprintf(stderr,
				"vyrectl run: cannot read %s for input %s: %s.\nFix: check the "
				"path and its permissions.\n",
				data + 1, slot->name, strerror(errno));
			return CTL_EXIT_FILE;
		}
		b->p = (uint8_t *)text;
		b->len = len;
		return CTL_EXIT_OK;
	}
	if (strncmp(data, "hex:", 4) == 0) {
		if (!parse_hex(data + 4, b)) {
			return ctl_usage_error(ctl,
				"input %s: \"%s\" is not whole bytes in hex (two digits each)",
				slot->name, data + 4);
		}
		return CTL_EXIT_OK;
	}
	static const char *const typed[] = {"u32", "i32", "f32"};
	const char *type = strcmp(slot->type, "bool") == 0 ? "bool" : slot->type;
	const char *list = data;
	for (size_t i = 0; i < 3; i++) {
		if (strncmp(data, typed[i], 3) == 0 && data[3] == ':') {
			type = typed[i];
			list = data + 4;
		}
	}
	char bad[96];
	if (!parse_list(list, type, b, bad, sizeof(bad))) {
		return ctl_usage_error(ctl, "input %s: \"%s\" is not %s", slot->name, bad,
			strcmp(type, "bool") == 0  ? "a bool (true, false, 1 or 0)"
			: strcmp(type, "f32") == 0 ? "an f32 number"
			: strcmp(type, "i32") == 0 ? "an i32 integer"
						   : "a u32 integer");
	}
	return CTL_EXIT_OK;
}

/* Shortest decimal text that reads back as the same f32. */
static void f32_text(float f, char *buf, size_t size)
{
	if (isnan(f)) {
		snprintf(buf, size, "nan");
		return;
	}
	if (isinf(f)) {
		snprintf(buf, size, "%s", f > 0 ? "inf" : "-inf");
		return;
	}
	for (int prec = 1; prec <= 9; prec++) {
		snprintf(buf, size, "%.*g", prec, (double)f);
		if (strtof(buf, NULL) == f) {
			return;
		}
	}
}

static enum format format_of(enum format asked, const struct ctl_slot *slot)
{
	if (asked != FMT_DEFAULT) {
		return asked;
	}
	return strcmp(slot->type, "f32") == 0   ? FMT_F32
	       : strcmp(slot->type, "i32") == 0 ? FMT_I32
						: FMT_U32;
}

/* Element i of an output as text in a numeric format. */
static void element_text(enum format fmt, const uint8_t *p, char *buf, size_t size)
{
	uint32_t w = word_at(p);
	if (fmt == FMT_F32) {
		float f;
		memcpy(&f, &w, sizeof(f));
		f32_text(f, buf, size);
	} else if (fmt == FMT_I32) {
		snprintf(buf, size, "%" PRId32, (int32_t)w);
	} else if (fmt == FMT_HEX) {
		snprintf(buf, size, "%02x%02x%02x%02x", p[0], p[1], p[2], p[3]);
	} else {
		snprintf(buf, size, "%" PRIu32, w);
	}
}

static void print_output(const struct ctl_slot *slot, enum format fmt, const uint8_t *p, size_t len)
{
	if (fmt == FMT_RAW) {
		fwrite(p, 1, len, stdout);
		return;
	}
	size_t n = len / 4;
	printf("%s %s[%zu]%s\n", slot->name, fmt == FMT_HEX ? "hex" : format_names[fmt], n,
		fmt == FMT_HEX ? " (bytes of each element in memory order)" : "");
	for (size_t i = 0; i < n; i++) {
		char text[40];
		element_text(fmt, p + 4 * i, text, sizeof(text));
		printf("%s%s", i % 8 == 0 ? "  " : " ", text);
		if (i % 8 == 7 || i + 1 == n) {
			putchar('\n');
		}
	}
	if (len % 4) {
		printf("  (and %zu trailing bytes:", len % 4);
		for (size_t i = n * 4; i < len; i++) {
			printf(" %02x", p[i]);
		}
		printf(")\n");
	}
}

static struct json_object *output_json(
	const struct ctl_slot *slot, enum format fmt, const uint8_t *p, size_t len)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(slot->name));
	json_object_object_add(o, "type", json_object_new_string(slot->type));
	json_object_object_add(o, "bytes", json_object_new_uint64(len));
	if (fmt == FMT_HEX || fmt == FMT_RAW) {
		static const char digits[] = "0123456789abcdef";
		char *hex = ctl_realloc(NULL, len * 2 + 1);
		for (size_t i = 0; i < len; i++) {
			hex[2 * i] = digits[p[i] >> 4];
			hex[2 * i + 1] = digits[p[i] & 15];
		}
		json_object_object_add(o, "hex", json_object_new_string_len(hex, (int)(len * 2)));
		free(hex);
		return o;
	}
	json_object_object_add(o, "format", json_object_new_string(format_names[fmt]));
	struct json_object *values = json_object_new_array();
	for (size_t i = 0; i + 4 <= len; i += 4) {
		uint32_t w = word_at(p + i);
		struct json_object *v;
		if (fmt == FMT_F32) {
			float f;
			memcpy(&f, &w, sizeof(f));
			char text[40];
			f32_text(f, text, sizeof(text));
			v = isfinite(f) ? json_object_new_double_s(f, text)
					: json_object_new_string(text);
		} else if (fmt == FMT_I32) {
			v = json_object_new_int64((int32_t)w);
		} else {
			v = json_object_new_uint64(w);
		}
		json_object_array_add(values, v);
	}
	json_object_object_add(o, "values", values);
	return o;
}

static char *ns_or_dash(uint64_t ns, char *buf)
{
	if (ns == VY_TIME_NONE) {
		snprintf(buf, CTL_FMT_MAX, "-");
		return buf;
	}
	return ctl_fmt_ns(ns, buf);
}

static int report_run(const struct ctl *ctl, const struct ctl_layout *lay, enum format asked,
	const struct vy_reply *r)
{
	size_t n = vy_reply_outputs(r);
	if (n != lay->n_outputs) {
		fprintf(stderr,
			"vyrectl run: the daemon sent %zu outputs; the program has %zu.\nFix: "
			"check that vyrectl and vyred come from the same release.\n",
			n, lay->n_outputs);
		return CTL_EXIT_DAEMON;
	}
	struct json_object *outs = ctl->json ? json_object_new_array() : NULL;
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		const uint8_t *p = vy_reply_output(r, i, &len);
		enum format fmt = format_of(asked, &lay->outputs[i]);
		if (ctl->json) {
			json_object_array_add(outs, output_json(&lay->outputs[i], fmt, p, len));
		} else {
			print_output(&lay->outputs[i], fmt, p, len);
		}
	}
	struct vy_dispatch_timing t;
	vy_reply_timing(r, &t);
	const char *cache = vy_value_get_str(vy_reply_value(r), "cache", "-");
	if (ctl->json) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "program", json_object_new_string(lay->program_name));
		json_object_object_add(o, "outputs", outs);
		json_object_object_add(o, "cache", json_object_new_string(cache));
		json_object_object_add(o, "timing", ctl_json_of(vy_reply_get(r, "timing")));
		ctl_json_print(o);
		return CTL_EXIT_OK;
	}
	fflush(stdout);
	char a[CTL_FMT_MAX], b[CTL_FMT_MAX], c[CTL_FMT_MAX], d[CTL_FMT_MAX];
	fprintf(stderr, "vyrectl run: %s: cache %s; wall %s, queue %s, compile %s, device %s\n",
		lay->program_name[0] ? lay->program_name : "(unnamed)", cache,
		ns_or_dash(t.wall_ns, a), ns_or_dash(t.queue_ns, b), ns_or_dash(t.compile_ns, c),
		ns_or_dash(t.device_ns, d));
	return CTL_EXIT_OK;
}

static bool parse_u32(const char *s, uint32_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > UINT32_MAX) {
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

static bool parse_grid(const char *s, uint32_t grid[3])
{
	grid[0] = grid[1] = grid[2] = 1;
	for (int axis = 0; axis < 3; axis++) {
		size_t n = strcspn(s, ",");
		char part[24];
		if (n == 0 || n >= sizeof(part)) {
			return false;
		}
		snprintf(part, sizeof(part), "%.*s", (int)n, s);
		if (!parse_u32(part, &grid[axis]) || grid[axis] == 0) {
			return false;
		}
		if (!s[n]) {
			return true;
		}
		s += n + 1;
	}
	return false;
}

/* Options that run and compile share; 0 when `opt` was one of them, else an exit status. */
static int dispatch_option(struct ctl *ctl, int opt, const char *arg, struct vy_dispatch_options *o)
{
	switch (opt) {
	case OPT_BACKEND:
		if (strcmp(arg, "vulkan") != 0 && strcmp(arg, "reference") != 0) {
			return ctl_usage_error(
				ctl, "--backend takes vulkan or reference, not \"%s\"", arg);
		}
		o->backend = arg;
		return 0;
	case OPT_DEVICE:
		if (!parse_u32(arg, &o->device)) {
			return ctl_usage_error(
				ctl, "--device takes a device index, not \"%s\"", arg);
		}
		o->has_device = true;
		return 0;
	default:
		return CTL_EXIT_USAGE;
	}
}

/* Connect and load the checked program text into a libvyre program. */
static int open_program(const struct ctl *ctl, const char *text, size_t len,
	struct vy_program **prog, struct vy_client **client)
{
	struct vy_error err;
	vy_error_clear(&err);
	*client = NULL;
	if (vy_program_load_json(text, len, prog, &err) != 0) {
		ctl_report(ctl, "load", &err);
		return CTL_EXIT_INVALID;
	}
	int rc = ctl_connect(ctl, client);
	if (rc) {
		vy_program_free(*prog);
		*prog = NULL;
	}
	return rc;
}

/* Both program commands take one program file after their options, and its layout. */
static int load_program_arg(
	struct ctl *ctl, int argc, char **argv, struct ctl_layout *lay, char **text, size_t *len)
{
	if (!ctl_want_args(ctl, argc, argv, 1)) {
		return CTL_EXIT_USAGE;
	}
	return ctl_layout_load(ctl, argv[optind], lay, text, len);
}

int ctl_cmd_run(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{"input", required_argument, NULL, 'i'},
		{"grid", required_argument, NULL, 'g'},
		{"format", required_argument, NULL, 'f'},
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"device", required_argument, NULL, OPT_DEVICE},
		{"timing", no_argument, NULL, OPT_TIMING},
		{NULL, 0, NULL, 0},
	};
	struct input_arg args[MAX_INPUT_ARGS];
	size_t n_args = 0;
	struct vy_dispatch_options o = {0};
	enum format fmt = FMT_DEFAULT;
	int opt;
	while ((opt = ctl_getopt(ctl, argc, argv, "i:g:f:", opts)) != -1) {
		switch (opt) {
		case 'i': {
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg) {
				return ctl_usage_error(
					ctl, "--input takes NAME=DATA, not \"%s\"", optarg);
			}
			if (n_args == MAX_INPUT_ARGS) {
				return ctl_usage_error(
					ctl, "more than %d --input arguments", MAX_INPUT_ARGS);
			}
			args[n_args++] = (struct input_arg){optarg, (size_t)(eq - optarg), eq + 1};
			break;
		}
		case 'g':
			if (!parse_grid(optarg, o.grid)) {
				return ctl_usage_error(ctl,
					"--grid takes X[,Y[,Z]], each at least 1, not \"%s\"",
					optarg);
			}
			break;
		case 'f':
			for (int k = FMT_U32; k <= FMT_RAW; k++) {
				if (strcmp(optarg, format_names[k]) == 0) {
					fmt = (enum format)k;
				}
			}
			if (fmt == FMT_DEFAULT) {
				return ctl_usage_error(ctl,
					"--format takes u32, i32, f32, hex or raw, not \"%s\"",
					optarg);
			}
			break;
		case OPT_TIMING:
			o.timing = true;
			break;
		case '?':
			return CTL_EXIT_USAGE;
		default: {
			int rc = dispatch_option(ctl, opt, optarg, &o);
			if (rc) {
				return rc;
			}
		}
		}
	}
	char *text;
	size_t len;
	struct ctl_layout lay;
	int rc = load_program_arg(ctl, argc, argv, &lay, &text, &len);
	if (rc) {
		return rc;
	}
	struct bytes data[CTL_LAYOUT_MAX] = {{0}};
	const char *given[CTL_LAYOUT_MAX] = {0};
	for (size_t i = 0; i < n_args && rc == 0; i++) {
		const struct input_arg *a = &args[i];
		const struct ctl_slot *s =
			find_slot(lay.inputs, lay.n_inputs, a->name, a->name_len);
		if (!s) {
			bool out = find_slot(lay.outputs, lay.n_outputs, a->name, a->name_len);
			rc = ctl_usage_error(ctl, "buffer \"%.*s\" %s", (int)a->name_len, a->name,
				out ? "is an output only; it takes no input"
				    : "is not in the program");
			break;
		}
		size_t k = (size_t)(s - lay.inputs);
		if (given[k]) {
			rc = ctl_usage_error(ctl, "input %s is given twice", s->name);
			break;
		}
		given[k] = a->data;
		rc = input_bytes(ctl, s, a->data, &data[k]);
	}
	for (size_t k = 0; k < lay.n_inputs && rc == 0; k++) {
		if (!given[k]) {
			char count[32] = "sized by its input";
			if (lay.inputs[k].count) {
				snprintf(count, sizeof(count), "%" PRIu32 " elements",
					lay.inputs[k].count);
			}
			rc = ctl_usage_error(ctl, "no --input for buffer %s (%s, %s)",
				lay.inputs[k].name, lay.inputs[k].type, count);
		}
	}
	struct vy_program *prog = NULL;
	struct vy_client *c = NULL;
	if (rc == 0) {
		rc = open_program(ctl, text, len, &prog, &c);
	}
	if (rc == 0) {
		struct vy_dispatch_input in[CTL_LAYOUT_MAX];
		for (size_t k = 0; k < lay.n_inputs; k++) {
			in[k] = vy_input_bytes(data[k].p, data[k].len);
		}
		struct vy_dispatch_args da = {
			.program = prog, .inputs = in, .n_inputs = lay.n_inputs, .options = &o};
		struct vy_reply *r = NULL;
		struct vy_error err;
		vy_error_clear(&err);
		rc = vy_dispatch(c, &da, &r, &err) == 0 ? report_run(ctl, &lay, fmt, r)
							: ctl_report(ctl, "dispatch", &err);
		vy_reply_destroy(r);
	}
	vy_client_close(c);
	vy_program_free(prog);
	for (size_t k = 0; k < lay.n_inputs; k++) {
		free(data[k].p);
	}
	free(text);
	return rc;
}

int ctl_cmd_compile(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"device", required_argument, NULL, OPT_DEVICE},
		{NULL, 0, NULL, 0},
	};
	struct vy_dispatch_options o = {0};
	int opt;
	while ((opt = ctl_getopt(ctl, argc, argv, "", opts)) != -1) {
		int rc = opt == '?' ? CTL_EXIT_USAGE : dispatch_option(ctl, opt, optarg, &o);
		if (rc) {
			return rc;
		}
	}
	char *text;
	size_t len;
	struct ctl_layout lay;
	int rc = load_program_arg(ctl, argc, argv, &lay, &text, &len);
	if (rc) {
		return rc;
	}
	struct vy_program *prog = NULL;
	struct vy_client *c = NULL;
	rc = open_program(ctl, text, len, &prog, &c);
	free(text);
	if (rc) {
		return rc;
	}
	struct vy_compile_result res;
	struct vy_error err;
	vy_error_clear(&err);
	if (vy_compile(c, prog, &o, &res, &err) != 0) {
		rc = ctl_report(ctl, "compile", &err);
	} else if (ctl->json) {
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "program", json_object_new_string(lay.program_name));
		json_object_object_add(j, "program_id", json_object_new_string(res.program_id));
		json_object_object_add(j, "cache", json_object_new_string(res.cache));
		json_object_object_add(j, "compile_ns", json_object_new_uint64(res.compile_ns));
		json_object_object_add(j, "device", json_object_new_uint64(res.device));
		ctl_json_print(j);
	} else {
		char t[CTL_FMT_MAX];
		printf("program      %s\n", lay.program_name[0] ? lay.program_name : "(unnamed)");
		printf("id           %s\n", res.program_id);
		printf("cache        %s\n", res.cache);
		printf("compile      %s\n", ctl_fmt_ns(res.compile_ns, t));
		printf("device       %" PRIu32 "\n", res.device);
	}
	vy_client_close(c);
	vy_program_free(prog);
	return rc;
}
