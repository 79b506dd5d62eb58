/*
 * `vyred --check`: a table of named self-checks, each OK, SKIP or FAIL, and for each failure one
 * line saying how to fix it. The exit status is 0 when nothing failed, so the command fits an
 * ExecStartPre= line or a provisioning script.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk.h"
#include "registry.h"
#include "vyred.h"

#ifdef VY_HAVE_VULKAN
#include <shaderc/shaderc.h>

#include "vulkan/vulkan.h"
#endif

enum result { CHECK_OK, CHECK_SKIP, CHECK_FAIL };

static int failures;

static void row(const char *name, enum result r, const char *detail, const char *fix)
{
	static const char *const words[] = {"OK", "SKIP", "FAIL"};
	printf("%-15s %-6s %s\n", name, words[r], detail);
	if (r == CHECK_FAIL) {
		printf("%-15s        Fix: %s\n", "", fix);
		failures++;
	}
}

static void check_vulkan_loader(void)
{
#ifdef VY_HAVE_VULKAN
	struct vy_vulkan_device_info info[VY_MAX_DEVICES];
	uint32_t n = 0;
	struct vy_err err = {0};
	if (vy_vulkan_devices_enumerate(info, VY_MAX_DEVICES, &n, &err) != 0) {
		row("vulkan loader", CHECK_FAIL, err.message, err.fix);
		return;
	}
	char detail[256];
	uint32_t usable = 0;
	for (uint32_t i = 0; i < n && i < VY_MAX_DEVICES; i++) {
		usable += info[i].usable;
	}
	snprintf(detail, sizeof(detail), "%u devices, %u usable (Vulkan 1.2, compute queue)", n,
		usable);
	row("vulkan loader", usable ? CHECK_OK : CHECK_FAIL, detail,
		"install a Vulkan driver (mesa-vulkan-drivers gives lavapipe on any machine)");
#else
	row("vulkan loader", CHECK_SKIP, "this build has no Vulkan backend", "");
#endif
}

static void check_shaderc(void)
{
#ifdef VY_HAVE_VULKAN
	static const char src[] = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
	shaderc_compiler_t cc = shaderc_compiler_initialize();
	if (!cc) {
		row("shaderc", CHECK_FAIL, "shaderc_compiler_initialize failed",
			"reinstall libshaderc1");
		return;
	}
	shaderc_compilation_result_t res = shaderc_compile_into_spv(
		cc, src, sizeof(src) - 1, shaderc_compute_shader, "check.comp", "main", NULL);
	bool ok = res &&
		  shaderc_result_get_compilation_status(res) == shaderc_compilation_status_success;
	char detail[256];
	snprintf(detail, sizeof(detail), "%s",
		ok    ? "compiled a test compute shader"
		: res ? shaderc_result_get_error_message(res)
		      : "no result");
	row("shaderc", ok ? CHECK_OK : CHECK_FAIL, detail, "reinstall libshaderc1 and glslang");
	shaderc_result_release(res);
	shaderc_compiler_release(cc);
#else
	row("shaderc", CHECK_SKIP, "this build has no Vulkan backend", "");
#endif
}

/* Open the configured backend; kept open while the other checks run (see vy_check_run). */
static struct vy_backend *open_device(const struct vy_config *cfg, struct vy_err *err)
{
	struct vy_registry_options opts = {
		.subgroup_size = (uint32_t)cfg->reference_subgroup_size,
		.enable_validation = cfg->vulkan_validation,
	};
	if (strcmp(cfg->devices, "all") != 0) {
		opts.device_index = (uint32_t)strtoul(cfg->devices, NULL, 10);
	}
	struct vy_backend *b = NULL;
	if (strcmp(cfg->backend, "auto") == 0) {
		vy_registry_open_first(&opts, &b, err);
	} else {
		vy_registry_open(cfg->backend, &opts, &b, err);
	}
	return b;
}

static void check_device(struct vy_backend *b, const struct vy_err *err)
{
	if (!b) {
		row("device", CHECK_FAIL, err->message, err->fix);
		return;
	}
	struct vy_device_profile p;
	vy_backend_device_profile(b, &p);
	char detail[600];
	snprintf(detail, sizeof(detail), "%s: %s (%s)", b->id, p.name,
		p.driver_info[0] ? p.driver_info : "no driver info");
	row("device", CHECK_OK, detail, "");
}

static void check_socket_dir(const struct vy_config *cfg)
{
	if (getenv("LISTEN_FDS")) {
		row("socket dir", CHECK_OK, "systemd passes the socket (socket activation)", "");
		return;
	}
	char path[512];
	snprintf(path, sizeof(path), "%s", cfg->socket_path);
	const char *dir = dirname(path);
	char detail[700];
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(detail, sizeof(detail), "%s: %s", dir,
			errno ? strerror(errno) : "not a folder");
		row("socket dir", CHECK_FAIL, detail,
			"create the folder (systemd-tmpfiles --create does it for /run/vyred) or "
			"set "
			"socket_path");
		return;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		snprintf(detail, sizeof(detail), "%s: not writable by uid %u", dir,
			(unsigned)getuid());
		row("socket dir", CHECK_FAIL, detail,
			"run vyred as the user that owns the folder, or set socket_path");
		return;
	}
	snprintf(detail, sizeof(detail), "%s is writable", dir);
	row("socket dir", CHECK_OK, detail, "");
}

static void check_cache_dir(const struct vy_config *cfg)
{
	if (!cfg->disk_cache) {
		row("cache dir", CHECK_SKIP, "disk_cache = false", "");
		return;
	}
	struct vy_err err = {0};
	char detail[700];
	if (vy_disk_dir_check(cfg->cache_dir, &err) != 0) {
		snprintf(detail, sizeof(detail), "%s; the daemon runs without a disk cache",
			err.message);
		row("cache dir", CHECK_FAIL, detail, err.fix);
		return;
	}
	if (vy_disk_mkdirs(cfg->cache_dir, &err) != 0) {
		row("cache dir", CHECK_FAIL, err.message, err.fix);
		return;
	}
	uint8_t key[VY_DISK_KEY_BYTES];
	int rc = vy_disk_key_load(cfg->cache_dir, false, key, &err);
	memset(key, 0, sizeof(key));
	if (rc < 0) {
		row("cache dir", CHECK_FAIL, err.message, err.fix);
		return;
	}
	snprintf(detail, sizeof(detail),
		"%s is writable by the daemon's user only; its key file %s", cfg->cache_dir,
		rc == 0 ? "is private" : "is made at the first start");
	row("cache dir", CHECK_OK, detail, "");
}

int vy_check_run(const struct vy_config *cfg, const char *config_error)
{
	failures = 0;
	printf("%-15s %-6s %s\n", "CHECK", "RESULT", "DETAIL");
	if (config_error) {
		row("configuration", CHECK_FAIL, config_error,
			"correct the configuration file or variable named above");
	} else {
		char detail[600];
		snprintf(detail, sizeof(detail), "%s",
			cfg->file ? cfg->file : "no configuration file; defaults and environment");
		row("configuration", CHECK_OK, detail, "");
	}
	/* The devices open first and stay open, so that the loader check's short-lived instance
	 * does not unload the driver again (see vy_devices_pin_libraries): the configured one, and
	 * a Vulkan device 0 when the configured backend is another. */
	struct vy_err err = {0};
	struct vy_backend *b = open_device(cfg, &err);
	struct vy_backend *vk = NULL;
	if (vy_registry_find("vulkan") && (!b || strcmp(b->id, "vulkan") != 0)) {
		vy_registry_open("vulkan", NULL, &vk, NULL);
	}
	check_vulkan_loader();
	check_device(b, &err);
	check_shaderc();
	check_socket_dir(cfg);
	check_cache_dir(cfg);
	vy_devices_pin_libraries();
	vy_backend_destroy(vk);
	vy_backend_destroy(b);
	printf("%s\n", failures ? "some checks failed" : "every check passed");
	return failures ? 1 : 0;
}
