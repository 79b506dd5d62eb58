/*
 * Faults around the daemon (DESIGN.md §7.3, §7.7, §7.8): kill -9 in the middle of a dispatch and
 * a restart on the same socket and disk cache, a full or read-only cache folder, damaged cache
 * files, a socket folder that vanishes while the daemon runs, and device loss (through the
 * backend's fault hook) while a crowd of clients keeps running. Clients get a clean error or a
 * closed connection, never a wrong answer, and the daemon goes on (or comes back) serving.
 *
 * The full and read-only folders are small tmpfs mounts, which need root (CAP_SYS_ADMIN); without
 * it those cases skip.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel.h"

TestSuite(faults, .fini = rel_fini, .timeout = 240);

static int compile_id(struct tc *c, const struct vy_program *p, char *id, size_t size)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_COMPILE, 1);
	t_pack_program(&m.pk, p);
	struct tc_reply r;
	cr_assert_eq(tc_call(c, &m, &r), 0);
	int code = tc_code(&r);
	if (code == 0) {
		cr_assert(tc_str(&r, "program_id", id, size));
	}
	tc_reply_free(&r);
	return code;
}

/* A dispatch of `p` (or of its id when `id` is not NULL) checked against the reference; returns
 * the error code and the reply's cache field. */
static int dispatch_checked(
	struct tc *c, const struct vy_program *p, const char *id, char *cache, size_t size)
{
	struct t_inputs in;
	t_inputs_make(p, 0, 17, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DISPATCH, 2);
	if (id) {
		vy_pack_cstr(&m.pk, "program_id");
		vy_pack_cstr(&m.pk, id);
	} else {
		t_pack_program(&m.pk, p);
	}
	t_pack_inputs(&m.pk, &in);
	struct tc_reply r;
	cr_assert_eq(tc_call(c, &m, &r), 0);
	int code = tc_code(&r);
	if (code == 0) {
		cr_expect(t_outputs_equal(&r, &want));
		if (cache) {
			tc_str(&r, "cache", cache, size);
		}
	}
	tc_reply_free(&r);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	return code;
}

static struct vy_program *numbered(const char *prefix, int k)
{
	char name[64];
	snprintf(name, sizeof(name), "%s-%d-%d", prefix, (int)getpid(), k);
	return tc_program_renamed("vector_add", name);
}

/* Names in `dir` that start with a dot and are not . or .. (temporary files). */
static int temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		return 0;
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	}
	closedir(d);
	return n;
}

#define KEPT 6

Test(faults, kill_9_mid_dispatch_then_a_restart_serves_the_disk_cache)
{
	struct vyd first;
	t_start(&first, "");
	struct tc c;
	struct tc idle;
	tc_open(&c, first.sock, "busy");
	tc_open(&idle, first.sock, "idle");
	struct vy_program *kept[KEPT];
	char ids[KEPT][64];
	for (int k = 0; k < KEPT; k++) {
		kept[k] = numbered("kept", k);
		cr_assert_eq(compile_id(&c, kept[k], ids[k], sizeof(ids[k])), 0);
	}
	/* A long dispatch and a burst of fresh compiles in flight, then SIGKILL. */
	struct vy_program *slow = t_slow_program("killed-slow");
	struct t_slow speed = t_slow_calibrate(&c, slow, -1, 2000);
	struct tc_msg m;
	t_pack_slow(&c, &m, slow, speed, -1, 0);
	cr_assert_eq(tc_send(&c, &m, -1), 0);
	for (int k = 0; k < 8; k++) {
		struct vy_program *p = numbered("in-flight", k);
		tc_begin(&c, &m, VY_OP_COMPILE, 1);
		t_pack_program(&m.pk, p);
		cr_assert_eq(tc_send(&c, &m, -1), 0);
		vy_program_destroy(p);
	}
	usleep(100000);
	cr_assert_eq(kill(first.pid, SIGKILL), 0);
	cr_expect_eq(vyd_wait(&first, 10000), 128 + SIGKILL);
	/* Both clients see the connection end: replies that made it, then EOF, never a hang. */
	cr_expect(tc_wait_eof(&c, 5000), "the busy client saw no end of stream");
	cr_expect(tc_wait_eof(&idle, 5000), "the idle client saw no end of stream");
	tc_close(&c);
	tc_close(&idle);

	/* The same socket path and cache folder: the stale socket is replaced. */
	struct vyd second;
	const char *args[] = {"--socket", first.sock, NULL};
	struct vyd_opts o = {.cache = first.cache, .args = args};
	cr_assert_eq(vyd_start(&second, &o), 0);
	tc_open(&c, first.sock, "reconnected");
	cr_expect_geq(t_stat(&c, "program_cache.restored"), KEPT);
	cr_expect_eq(t_stat(&c, "program_cache.disk_rejected"), 0,
		"a file of the disk cache was damaged by the kill");
	char programs[400];
	snprintf(programs, sizeof(programs), "%s/programs", first.cache);
	cr_expect_eq(temporaries(programs), 0, "temporary files were left behind");
	for (int k = 0; k < KEPT; k++) {
		/* A restored program belongs to nobody until a user sends it; then it comes from
		 * disk and its id works again. */
		char cache[16] = "";
		cr_expect_eq(dispatch_checked(&c, kept[k], ids[k], NULL, 0), VY_E_NOT_FOUND);
		cr_expect_eq(dispatch_checked(&c, kept[k], NULL, cache, sizeof(cache)), 0);
		cr_expect_str_eq(cache, "disk", "program %d after the restart: %s", k, cache);
		cr_expect_eq(dispatch_checked(&c, kept[k], ids[k], cache, sizeof(cache)), 0);
		cr_expect_str_eq(cache, "hit");
		vy_program_destroy(kept[k]);
	}
	tc_close(&c);
	vy_program_destroy(slow);
	t_stop(&second);
	vyd_cleanup(&first);
}

/* A tmpfs of `kib` KiB mounted on a fresh folder (in `dir`); skips the test without the
 * privilege to mount. */
static void mount_small(char *dir, size_t size, unsigned kib)
{
	snprintf(dir, size, REL_FS_PREFIX "%ld-XXXXXX", (long)getpid());
	cr_assert(mkdtemp(dir));
	char opts[64];
	snprintf(opts, sizeof(opts), "size=%uk,mode=0755", kib);
	if (mount("tmpfs", dir, "tmpfs", 0, opts) != 0) {
		int e = errno;
		rmdir(dir);
		cr_skip_test(
			"cannot mount a tmpfs (%s): needs root with CAP_SYS_ADMIN", strerror(e));
	}
}

static void unmount_small(const char *dir)
{
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}

static int remount(const char *dir, bool read_only)
{
	return mount(NULL, dir, NULL, MS_REMOUNT | (read_only ? MS_RDONLY : 0), NULL);
}

/* Fill the file system of `dir` with one file until a write fails with ENOSPC. */
static void fill(const char *dir)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/filler", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	char block[4096] = {0};
	ssize_t n;
	while ((n = write(fd, block, sizeof(block))) > 0) {
	}
	cr_assert_eq(errno, ENOSPC, "filling %s: %s", dir, strerror(errno));
	close(fd);
}

static void start_on(struct vyd *d, const char *cache)
{
	struct vyd_opts o = {.cache = cache, .config = "[limits]\ndispatch_timeout_ms = 5000\n"};
	cr_assert_eq(vyd_start(d, &o), 0);
}

Test(faults, a_full_cache_folder_degrades_to_memory_and_recovers)
{
	char dir[64];
	mount_small(dir, sizeof(dir), 256);
	char cache[128];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	cr_assert_eq(mkdir(cache, 0750), 0);
	char programs[160];
	snprintf(programs, sizeof(programs), "%s/programs", cache);
	cr_assert_eq(mkdir(programs, 0750), 0);
	char vulkan[160];
	snprintf(vulkan, sizeof(vulkan), "%s/vulkan", cache);
	cr_assert_eq(mkdir(vulkan, 0750), 0);
	/* The folder of an installation that ran before: its key exists (a first start on a full
	 * file system cannot make one and runs without a disk cache). */
	char key[160];
	snprintf(key, sizeof(key), "%s/key", cache);
	int fd = open(key, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "a key of 32 bytes for this cache", 32), 32);
	close(fd);
	fill(dir);
	struct vyd d;
	start_on(&d, cache);
	struct rel_crowd *crowd = rel_crowd_start(d.sock, 4, NULL);
	struct tc c;
	tc_open(&c, d.sock, "full");
	for (int k = 0; k < 4; k++) {
		struct vy_program *p = numbered("full", k);
		cr_expect_eq(dispatch_checked(&c, p, NULL, NULL, 0), 0);
		vy_program_destroy(p);
	}
	/* A program is written once a request using it succeeded, just after its reply: wait for
	 * the warnings of the failed writes. */
	for (int i = 0; i < 100 && !vyd_log_has(&d, "disk cache"); i++) {
		usleep(50000);
	}
	cr_expect(vyd_log_has(&d, "disk cache"), "the failed writes are logged");
	cr_expect_eq(
		t_stat(&c, "program_cache.disk_writes"), 0, "a write to a full folder counted");
	/* Space comes back: the next new program is written, without a restart. */
	char filler[160];
	snprintf(filler, sizeof(filler), "%s/filler", dir);
	cr_assert_eq(unlink(filler), 0, "unlink %s: %s", filler, strerror(errno));
	struct vy_program *p = numbered("after-full", 0);
	cr_expect_eq(dispatch_checked(&c, p, NULL, NULL, 0), 0);
	cr_expect_eq(rel_wait_stat(&c, "program_cache.disk_writes", 1, 10000), 1);
	vy_program_destroy(p);
	tc_close(&c);
	rel_stop(&d, rel_crowd_stop(crowd, 2, NULL));
	unmount_small(dir);
}

Test(faults, a_read_only_cache_folder_degrades_to_memory)
{
	char dir[64];
	mount_small(dir, sizeof(dir), 4096);
	char cache[128];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	struct vyd d;
	start_on(&d, cache);
	struct rel_crowd *crowd = rel_crowd_start(d.sock, 4, NULL);
	struct tc c;
	tc_open(&c, d.sock, "read-only");
	uint64_t written = t_stat(&c, "program_cache.disk_writes");
	struct vy_program *before = numbered("before-ro", 0);
	cr_expect_eq(dispatch_checked(&c, before, NULL, NULL, 0), 0);
	written++;
	cr_expect_eq(rel_wait_stat(&c, "program_cache.disk_writes", written, 10000), written);
	/* The folder turns read-only under the running daemon. */
	cr_assert_eq(remount(dir, true), 0, "remount read-only: %s", strerror(errno));
	for (int k = 0; k < 3; k++) {
		struct vy_program *p = numbered("during-ro", k);
		cr_expect_eq(dispatch_checked(&c, p, NULL, NULL, 0), 0);
		vy_program_destroy(p);
	}
	cr_expect_eq(t_stat(&c, "program_cache.disk_writes"), written);
	tc_close(&c);
	bool ok = rel_crowd_stop(crowd, 2, NULL);
	rel_stop(&d, ok);

	/* A daemon that starts on the read-only folder serves without a disk cache. */
	start_on(&d, cache);
	cr_expect(vyd_log_has(&d, "disk cache disabled"), "the read-only cache is reported");
	crowd = rel_crowd_start(d.sock, 4, NULL);
	tc_open(&c, d.sock, "read-only-start");
	cr_expect_eq(dispatch_checked(&c, before, NULL, NULL, 0), 0);
	struct vy_program *p = numbered("start-ro", 0);
	cr_expect_eq(dispatch_checked(&c, p, NULL, NULL, 0), 0);
	vy_program_destroy(p);
	tc_close(&c);
	ok = rel_crowd_stop(crowd, 2, NULL);
	rel_stop(&d, ok);
	vy_program_destroy(before);
	cr_assert_eq(remount(dir, false), 0);
	unmount_small(dir);
}

static void damage(const char *path, const char *how)
{
	if (strcmp(how, "flip") == 0) {
		int fd = open(path, O_RDWR);
		cr_assert_geq(fd, 0, "%s", path);
		struct stat st;
		fstat(fd, &st);
		uint8_t b;
		cr_assert_eq(pread(fd, &b, 1, st.st_size - 3), 1);
		b ^= 0x5a;
		cr_assert_eq(pwrite(fd, &b, 1, st.st_size - 3), 1);
		close(fd);
	} else if (strcmp(how, "truncate") == 0) {
		cr_assert_eq(truncate(path, 20), 0);
	} else if (strcmp(how, "empty") == 0) {
		cr_assert_eq(truncate(path, 0), 0);
	} else if (strcmp(how, "magic") == 0) {
		int fd = open(path, O_RDWR);
		cr_assert_eq(pwrite(fd, "NOTVYRED", 8, 0), 8);
		close(fd);
	} else if (strcmp(how, "length") == 0) {
		/* The header's payload length says 2^62. */
		int fd = open(path, O_RDWR);
		uint8_t len[8] = {0, 0, 0, 0, 0, 0, 0, 0x40};
		cr_assert_eq(pwrite(fd, len, 8, 16), 8);
		close(fd);
	}
}

/* The path of program `id`'s file in `cache`. */
static void program_file(const char *cache, const char *id, char *out, size_t size)
{
	int n = snprintf(out, size, "%s/programs/%s.vyp", cache, id);
	cr_assert(n > 0 && (size_t)n < size, "path too long");
}

/* Damage every file under `dir` (recursively) whose name ends in `suffix`; returns how many. */
static int damage_all(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	if (!d) {
		return 0;
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.') {
			continue;
		}
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct stat st;
		if (stat(path, &st) != 0) {
			continue;
		}
		size_t len = strlen(e->d_name);
		if (S_ISDIR(st.st_mode)) {
			n += damage_all(path, suffix);
		} else if (len > strlen(suffix) &&
			   strcmp(e->d_name + len - strlen(suffix), suffix) == 0 &&
			   st.st_size > 24) {
			damage(path, n % 2 ? "flip" : "truncate");
			n++;
		}
	}
	closedir(d);
	return n;
}

Test(faults, damaged_cache_files_are_rejected_and_replaced)
{
	struct vyd first;
	t_start(&first, "");
	struct tc c;
	tc_open(&c, first.sock, "writer");
	struct vy_program *p[7];
	char ids[7][64];
	for (int k = 0; k < 7; k++) {
		p[k] = numbered("damaged", k);
		cr_assert_eq(dispatch_checked(&c, p[k], NULL, NULL, 0), 0);
		cr_assert_eq(compile_id(&c, p[k], ids[k], sizeof(ids[k])), 0);
	}
	tc_close(&c);
	cr_assert_eq(vyd_stop(&first), 0);

	static const char *const hows[] = {"flip", "truncate", "empty", "magic", "length"};
	char path[512];
	for (int k = 0; k < 5; k++) {
		program_file(first.cache, ids[k], path, sizeof(path));
		damage(path, hows[k]);
	}
	/* Program 5's file under program 4's name is foreign: replace 4's file by a copy of 5's. */
	char from[512];
	program_file(first.cache, ids[5], from, sizeof(from));
	program_file(first.cache, ids[4], path, sizeof(path));
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, path);
	cr_assert_eq(system(cmd), 0);
	/* A folder named like a program file, and a temporary file a crash left behind. */
	snprintf(path, sizeof(path), "%s/programs/%032x.vyp", first.cache, 0x1234);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/programs/.%s.Xyz123", first.cache, ids[6]);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fputs("half written", f);
	fclose(f);
	char vulkan[400];
	snprintf(vulkan, sizeof(vulkan), "%s/vulkan", first.cache);
	int backend_files = damage_all(vulkan, ".bin") + damage_all(vulkan, ".spv");

	/* No pipeline built at start: each program's first request reads what is left on disk. */
	struct vyd second;
	struct vyd_opts o = {.cache = first.cache, .config = "[cache]\nwarm_pipelines = 0\n"};
	cr_assert_eq(vyd_start(&second, &o), 0);
	struct rel_crowd *crowd = rel_crowd_start(second.sock, 4, NULL);
	tc_open(&c, second.sock, "reader");
	cr_expect_eq(t_stat(&c, "program_cache.restored"), 2, "programs 5 and 6 are intact");
	cr_expect_eq(t_stat(&c, "program_cache.disk_rejected"), 6,
		"five damaged files and the folder are rejected");
	uint64_t written = t_stat(&c, "program_cache.disk_writes");
	char programs[400];
	snprintf(programs, sizeof(programs), "%s/programs", first.cache);
	/* The crowd's own programs may be being written meanwhile: look for the planted one. */
	snprintf(path, sizeof(path), "%s/.%s.Xyz123", programs, ids[6]);
	cr_expect_neq(access(path, F_OK), 0, "the temporary file is removed");
	for (int k = 0; k < 7; k++) {
		/* Restored or not, no one has sent it since the restart: its id is unknown. */
		cr_expect_eq(dispatch_checked(&c, p[k], ids[k], NULL, 0), VY_E_NOT_FOUND);
		/* Sent whole, every program runs, and its file is written again. */
		char cache[16] = "";
		cr_expect_eq(dispatch_checked(&c, p[k], NULL, cache, sizeof(cache)), 0);
		if (k >= 5) {
			cr_expect_str_eq(cache, "disk");
		}
	}
	/* A program is written once a request using it succeeded, just after its reply; the
	 * crowd's programs may be written too, so the count reaches at least five more. */
	uint64_t now_written = t_stat(&c, "program_cache.disk_writes");
	for (long end = rel_now_ms() + 60000; now_written < written + 5 && rel_now_ms() < end;) {
		usleep(20000);
		now_written = t_stat(&c, "program_cache.disk_writes");
	}
	cr_expect_geq(now_written, written + 5, "the damaged files are replaced");
	cr_log_info("damaged %d backend cache files", backend_files);
	uint64_t total = t_stat(&c, "program_cache.entries");
	tc_close(&c);
	rel_stop(&second, rel_crowd_stop(crowd, 2, NULL));

	/* Without the folder (which no daemon should delete), a third start finds every file
	 * sound. */
	snprintf(path, sizeof(path), "%s/programs/%032x.vyp", first.cache, 0x1234);
	cr_assert_eq(rmdir(path), 0);
	struct vyd third;
	cr_assert_eq(vyd_start(&third, &o), 0);
	tc_open(&c, third.sock, "third");
	cr_expect_eq(t_stat(&c, "program_cache.restored"), total);
	cr_expect_eq(t_stat(&c, "program_cache.disk_rejected"), 0);
	tc_close(&c);
	t_stop(&third);
	for (int k = 0; k < 7; k++) {
		vy_program_destroy(p[k]);
	}
	vyd_cleanup(&first);
}

Test(faults, a_vanished_socket_folder_is_created_again)
{
	char base[64];
	snprintf(base, sizeof(base), "/tmp/vyred-rel-run-XXXXXX");
	cr_assert(mkdtemp(base));
	char folder[128];
	snprintf(folder, sizeof(folder), "%s/run/vyred", base);
	char sock[160];
	snprintf(sock, sizeof(sock), "%s/vyred.sock", folder);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", folder);
	cr_assert_eq(system(cmd), 0);
	struct vyd d;
	const char *args[] = {"--socket", sock, NULL};
	struct vyd_opts o = {.args = args};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct rel_crowd *crowd = rel_crowd_start(sock, 4, NULL);
	struct tc before;
	tc_open(&before, sock, "before");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/run'", base);
	cr_assert_eq(system(cmd), 0);
	struct vy_program *p = tc_program("vector_add");
	cr_expect_eq(dispatch_checked(&before, p, NULL, NULL, 0), 0,
		"an established connection does not notice");
	long t0 = rel_now_ms();
	struct tc after;
	int rc = -1;
	while (rc != 0 && rel_now_ms() - t0 < 10000) {
		usleep(50000);
		rc = tc_connect(&after, sock);
	}
	cr_assert_eq(rc, 0, "the socket did not come back within 10 s");
	cr_log_info("the socket came back after %ld ms", rel_now_ms() - t0);
	cr_assert_eq(tc_hello(&after, "after"), 0);
	cr_expect_eq(dispatch_checked(&after, p, NULL, NULL, 0), 0);
	cr_expect(vyd_log_has(&d, "vanished"), "the daemon says what happened");
	struct stat st;
	cr_expect(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
	tc_close(&after);
	tc_close(&before);
	vy_program_destroy(p);
	rel_stop(&d, rel_crowd_stop(crowd, 2, NULL));
	cr_expect(stat(sock, &st) != 0, "the socket is removed at exit");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	cr_assert_eq(system(cmd), 0);
}

static int inject(struct tc *c, const char *fault)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_INJECT_FAULT, 1);
	vy_pack_cstr(&m.pk, "fault");
	vy_pack_cstr(&m.pk, fault);
	struct tc_reply r;
	cr_assert_eq(tc_call(c, &m, &r), 0);
	int code = tc_code(&r);
	tc_reply_free(&r);
	return code;
}

/* Device 0's count of losses, waiting up to `timeout_ms` for it to reach `want`. */
static uint64_t wait_lost(struct tc *c, uint64_t want, int timeout_ms)
{
	long t0 = rel_now_ms();
	uint64_t lost = 0;
	for (;;) {
		struct tc_reply r;
		cr_assert_eq(t_simple(c, VY_OP_STATS, &r), 0);
		cr_assert(tc_row_u64(&r, "devices", "index", 0, "lost", &lost));
		tc_reply_free(&r);
		if (lost >= want || rel_now_ms() - t0 > timeout_ms) {
			return lost;
		}
		usleep(20000);
	}
}

Test(faults, device_loss_recovers_while_other_clients_keep_running)
{
	struct vyd d;
	t_start(&d, "[debug]\nfault_injection = true\n[limits]\ndispatch_timeout_ms = 10000\n");
	struct tc c;
	tc_open(&c, d.sock, "saboteur");
	bool vulkan = rel_on_vulkan(&c);
	/* What the crowd may see while faults are injected: the faults' own codes, and NOT_FOUND
	 * for a resident buffer that went with the device. */
	static const int tolerate[] = {VY_E_DEVICE_LOST, VY_E_NOT_FOUND, VY_E_DISPATCH_FAILED,
		VY_E_KERNEL_COMPILE_FAILED, VY_E_OUT_OF_MEMORY, 0};
	struct rel_crowd *crowd = rel_crowd_start(d.sock, 6, tolerate);
	static const char *const faults[] = {"device_lost", "dispatch", "device_lost",
		"out_of_memory", "compile", "device_lost"};
	int injected = 0;
	uint64_t losses = 0;
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		usleep(300000);
		int code = inject(&c, faults[i]);
		bool loss = strcmp(faults[i], "device_lost") == 0;
		/* The reference simulates a device loss only; the other faults are Vulkan's. */
		if (vulkan || loss) {
			cr_expect_eq(code, 0, "inject_fault %s: %s", faults[i],
				code ? vy_err_name(code) : "ok");
			injected += code == 0;
			/* A loss is one state until the device recovers: the next loss is injected
			 * only once the crowd's work has met this one, however slow the machine. */
			if (loss) {
				losses++;
				cr_expect_eq(wait_lost(&c, losses, 20000), losses,
					"the injected loss %lu was not met within 20 s",
					(unsigned long)losses);
			}
		} else {
			cr_expect_eq(code, VY_E_UNSUPPORTED_FEATURE,
				"the reference has no %s fault", faults[i]);
		}
	}
	usleep(500000);
	uint64_t tolerated = 0;
	bool ok = rel_crowd_stop(crowd, 3, &tolerated);
	cr_expect_gt(tolerated, 0, "no client met an injected fault");
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	uint64_t lost = 0;
	cr_expect(tc_row_u64(&r, "devices", "index", 0, "lost", &lost) && lost == 3,
		"the device was lost %lu times, 3 injected", (unsigned long)lost);
	tc_reply_free(&r);
	cr_log_info("%d faults injected; the crowd met %lu of their errors", injected,
		(unsigned long)tolerated);
	tc_close(&c);
	rel_stop(&d, ok);
}
