/*
 * vyred --emit-glsl: the GLSL (or SPIR-V) the Vulkan backend generates for a program, under a
 * named float profile or the profile of a device opened for the purpose. No socket, no server:
 * exactness bugs are found by reading this text (docs/semantics.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vyred.h"

#ifdef VY_HAVE_VULKAN
#include "vulkan/vulkan.h"
#endif

static void print_err(const char *what, const struct vy_err *err)
{
	char line[VY_ERR_AT_MAX + VY_ERR_MESSAGE_MAX + VY_ERR_FIX_MAX + 64];
	fprintf(stderr, "vyred --emit-glsl: %s:\n  %s\n", what,
		vy_err_format(err, line, sizeof(line)));
}

/* The whole of `f`, NUL-terminated, in a malloc'd buffer; NULL with errno set on failure. */
static char *read_all(FILE *f, size_t *len)
{
	size_t cap = 4096;
	size_t n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n - 1, f);
		if (ferror(f)) {
			free(buf);
			return NULL;
		}
		if (feof(f)) {
			buf[n] = '\0';
			*len = n;
			return buf;
		}
		cap *= 2;
		char *more = realloc(buf, cap);
		if (!more) {
			free(buf);
		}
		buf = more;
	}
	errno = ENOMEM;
	return NULL;
}

#ifdef VY_HAVE_VULKAN
static int parse_device(const char *device, uint32_t *index)
{
	*index = 0;
	if (!device) {
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long v = strtoul(device, &end, 10);
	if (errno || end == device || *end || v >= VY_MAX_DEVICES || device[0] == '-') {
		fprintf(stderr,
			"vyred --emit-glsl: --device needs one device index, got \"%s\".\nFix: "
			"name "
			"one device such as 0 (vyred --check lists them).\n",
			device);
		return -1;
	}
	*index = (uint32_t)v;
	return 0;
}

/* Program errors are the caller's to fix (status 3); anything else is the generator's or the
 * device's (status 1). */
static int status_of(int code)
{
	return code == VY_E_INVALID_PROGRAM || code == VY_E_UNSUPPORTED_FEATURE ? VY_EMIT_INVALID
										: VY_EMIT_FAILED;
}

int vy_emit_run(const char *path, const char *profile_name, const char *device, bool spirv)
{
	uint32_t index;
	if (parse_device(device, &index)) {
		return VY_EMIT_USAGE;
	}
	struct vy_err err = {0};
	struct vy_vulkan_profile *profile = NULL;
	int rc = vy_vulkan_profile_get(profile_name, index, &profile, &err);
	if (rc == VY_E_BAD_REQUEST) {
		print_err("bad --profile", &err);
		return VY_EMIT_USAGE;
	}
	if (rc) {
		print_err("the device did not open", &err);
		return VY_EMIT_FAILED;
	}
	bool std_in = strcmp(path, "-") == 0;
	FILE *f = std_in ? stdin : fopen(path, "rb");
	size_t len = 0;
	char *json = f ? read_all(f, &len) : NULL;
	if (!json) {
		fprintf(stderr,
			"vyred --emit-glsl: cannot read %s: %s.\nFix: check the path and its "
			"permissions.\n",
			path, strerror(errno));
		if (f && !std_in) {
			fclose(f);
		}
		vy_vulkan_profile_free(profile);
		return VY_EMIT_FILE;
	}
	if (!std_in) {
		fclose(f);
	}
	struct vy_program *program = NULL;
	char what[512];
	int status = VY_EMIT_OK;
	if (vy_program_from_json(json, len, &program, &err) != 0) {
		snprintf(what, sizeof(what), "%s does not decode", path);
		print_err(what, &err);
		status = VY_EMIT_INVALID;
	} else {
		char *text = NULL;
		rc = vy_vulkan_emit(program, profile, spirv, &text, &err);
		if (rc) {
			snprintf(what, sizeof(what), "%s is refused under float profile %s", path,
				profile_name);
			print_err(what, &err);
			status = status_of(rc);
		} else {
			fputs(text, stdout);
			if (fflush(stdout) != 0) {
				fprintf(stderr, "vyred --emit-glsl: cannot write: %s\n",
					strerror(errno));
				status = VY_EMIT_FAILED;
			}
			free(text);
		}
	}
	vy_program_destroy(program);
	free(json);
	vy_vulkan_profile_free(profile);
	return status;
}
#else
int vy_emit_run(const char *path, const char *profile, const char *device, bool spirv)
{
	fprintf(stderr,
		"vyred --emit-glsl: this vyred was built without the Vulkan backend.\nFix: "
		"install libvulkan-dev, libvulkan-volk-dev and libshaderc-dev and rebuild.\n");
	return VY_EMIT_FAILED;
}
#endif
