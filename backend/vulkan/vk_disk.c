/*
 * Files of the disk cache. Nothing read from disk reaches the driver before its header and MAC
 * have been checked: a damaged or planted pipeline-cache blob can crash a driver, and the cache
 * directory outlives driver updates and may be shared by different GPUs.
 */
#include "vk_disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

/* A payload above this is not a file this cache wrote. */
#define MAX_PAYLOAD ((uint64_t)1 << 30)

static _Atomic uint64_t temp_counter;

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void mac_of(const uint8_t mac_key[VY_VK_DISK_MAC_KEY_BYTES], const uint8_t *header,
	const void *data, size_t len, uint8_t out[32])
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, mac_key, VY_VK_DISK_MAC_KEY_BYTES, 32);
	crypto_generichash_update(&st, header, VY_VK_DISK_SIGNED_BYTES);
	crypto_generichash_update(&st, data, len);
	crypto_generichash_final(&st, out, 32);
}

void vy__vk_disk_header(const struct vy_vk_disk_identity *id, enum vy_vk_disk_kind kind,
	const uint8_t key[16], const uint8_t mac_key[VY_VK_DISK_MAC_KEY_BYTES], const void *data,
	size_t len, uint8_t out[VY_VK_DISK_HEADER_BYTES])
{
	memset(out, 0, VY_VK_DISK_HEADER_BYTES);
	memcpy(out, VY_VK_DISK_MAGIC, sizeof(VY_VK_DISK_MAGIC));
	put32(out + 8, VY_VK_DISK_FORMAT);
	put32(out + 12, (uint32_t)kind);
	put32(out + 16, id->vendor_id);
	put32(out + 20, id->device_id);
	put32(out + 24, id->driver_version);
	memcpy(out + 32, id->cache_uuid, 16);
	if (key) {
		memcpy(out + 48, key, 16);
	}
	put64(out + 64, (uint64_t)len);
	mac_of(mac_key, out, data, len, out + VY_VK_DISK_SIGNED_BYTES);
}

static int make_dir(const char *path, struct vy_err *err)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST) {
		struct stat st;
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			return 0;
		}
		errno = ENOTDIR;
	}
	int e = errno;
	return vy_err_set(err, VY_E_DISPATCH_FAILED, NULL,
		"create the cache folder writable by vyred, or set cache_dir to another one",
		"cache folder %s: %s (%s)", path, strerror(e), strerrorname_np(e));
}

int vy__vk_disk_open(struct vy_vk_disk *disk, const char *dir,
	const uint8_t mac_key[VY_VK_DISK_MAC_KEY_BYTES], const struct vy_vk_disk_identity *id,
	struct vy_err *err)
{
	memset(disk, 0, sizeof(*disk));
	disk->id = *id;
	if (!dir || !mac_key) {
		return 0;
	}
	memcpy(disk->mac_key, mac_key, sizeof(disk->mac_key));
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/') {
		n--;
	}
	char spirv[4096];
	if (n + sizeof("/spirv") > sizeof(spirv)) {
		return vy_err_set(err, VY_E_DISPATCH_FAILED, NULL, "set a shorter cache_dir",
			"cache folder path is %zu bytes long", n);
	}
	snprintf(spirv, sizeof(spirv), "%.*s", (int)n, dir);
	int rc = make_dir(spirv, err);
	if (rc) {
		return rc;
	}
	snprintf(spirv, sizeof(spirv), "%.*s/spirv", (int)n, dir);
	rc = make_dir(spirv, err);
	if (rc) {
		return rc;
	}
	disk->dir = strndup(dir, n);
	if (!disk->dir) {
		fprintf(stderr, "vyred: out of memory\n");
		abort();
	}
	return 0;
}

void vy__vk_disk_close(struct vy_vk_disk *disk)
{
	sodium_memzero(disk->mac_key, sizeof(disk->mac_key));
	free(disk->dir);
	disk->dir = NULL;
	free(disk->vetted);
	disk->vetted = NULL;
	disk->n_vetted = 0;
}

bool vy__vk_disk_path(const struct vy_vk_disk *disk, enum vy_vk_disk_kind kind,
	const uint8_t key[16], char *buf, size_t size)
{
	if (!disk->dir) {
		return false;
	}
	int n;
	if (kind == VY_VK_DISK_PIPELINE_CACHE) {
		n = snprintf(buf, size, "%s/pipeline-cache-%04x-%04x.bin", disk->dir,
			disk->id.vendor_id, disk->id.device_id);
	} else {
		char hex[33];
		for (int i = 0; i < 16; i++) {
			snprintf(hex + 2 * i, 3, "%02x", key[i]);
		}
		n = snprintf(buf, size, "%s/spirv/%s.spv", disk->dir, hex);
	}
	return n > 0 && (size_t)n < size;
}

static bool header_ok(const struct vy_vk_disk *disk, const uint8_t *h, enum vy_vk_disk_kind kind,
	const uint8_t key[16], uint64_t payload)
{
	static const uint8_t zero[16];
	return memcmp(h, VY_VK_DISK_MAGIC, sizeof(VY_VK_DISK_MAGIC)) == 0 &&
	       get32(h + 8) == VY_VK_DISK_FORMAT && get32(h + 12) == (uint32_t)kind &&
	       get32(h + 16) == disk->id.vendor_id && get32(h + 20) == disk->id.device_id &&
	       get32(h + 24) == disk->id.driver_version &&
	       memcmp(h + 32, disk->id.cache_uuid, 16) == 0 &&
	       memcmp(h + 48, key ? key : zero, 16) == 0 && get64(h + 64) == payload;
}

/*
 * Read into `in`, or write from `out`, until len bytes have moved: short transfers and EINTR
 * are retried, an error or end of file fails.
 */
static bool move_all(int fd, uint8_t *in, const uint8_t *out, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n =
			in ? read(fd, in + done, len - done) : write(fd, out + done, len - done);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return false;
		}
		done += (size_t)n;
	}
	return true;
}

static bool read_all(int fd, uint8_t *buf, size_t len)
{
	return move_all(fd, buf, NULL, len);
}

enum read_outcome { READ_ABSENT, READ_REJECTED, READ_OK };

/* Read and authenticate a file, counting nothing. */
static enum read_outcome read_checked(const struct vy_vk_disk *disk, enum vy_vk_disk_kind kind,
	const uint8_t key[16], void **data, size_t *len)
{
	*data = NULL;
	*len = 0;
	char path[4200];
	if (!vy__vk_disk_path(disk, kind, key, path, sizeof(path))) {
		return READ_ABSENT;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return READ_ABSENT;
	}
	uint8_t h[VY_VK_DISK_HEADER_BYTES];
	uint8_t *payload = NULL;
	struct stat st;
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		  (uint64_t)st.st_size >= VY_VK_DISK_HEADER_BYTES &&
		  (uint64_t)st.st_size - VY_VK_DISK_HEADER_BYTES <= MAX_PAYLOAD &&
		  read_all(fd, h, sizeof(h));
	uint64_t n = ok ? (uint64_t)st.st_size - VY_VK_DISK_HEADER_BYTES : 0;
	ok = ok && header_ok(disk, h, kind, key, n);
	if (ok) {
		payload = malloc(n ? n : 1);
		if (!payload) {
			fprintf(stderr, "vyred: out of memory reading %s\n", path);
			abort();
		}
		uint8_t mac[32];
		ok = read_all(fd, payload, n);
		if (ok) {
			mac_of(disk->mac_key, h, payload, n, mac);
			ok = sodium_memcmp(mac, h + VY_VK_DISK_SIGNED_BYTES, sizeof(mac)) == 0;
		}
	}
	close(fd);
	if (!ok) {
		free(payload);
		return READ_REJECTED;
	}
	*data = payload;
	*len = n;
	return READ_OK;
}

bool vy__vk_disk_has(
	const struct vy_vk_disk *disk, enum vy_vk_disk_kind kind, const uint8_t key[16])
{
	char path[4200];
	return vy__vk_disk_path(disk, kind, key, path, sizeof(path)) && access(path, F_OK) == 0;
}

bool vy__vk_disk_read(struct vy_vk_disk *disk, enum vy_vk_disk_kind kind, const uint8_t key[16],
	void **data, size_t *len)
{
	enum read_outcome got = read_checked(disk, kind, key, data, len);
	if (got == READ_REJECTED) {
		atomic_fetch_add(&disk->rejected, 1);
	}
	if (kind == VY_VK_DISK_SPIRV) {
		atomic_fetch_add(got == READ_OK ? &disk->spirv_hits : &disk->spirv_misses, 1);
	}
	return got == READ_OK;
}

static bool write_all(int fd, const uint8_t *buf, size_t len)
{
	return move_all(fd, NULL, buf, len);
}

static void sync_dir(const char *path)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash) {
		return;
	}
	*slash = '\0';
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		/* The rename is already atomic; this only makes it durable across a power cut, so
		 * a failure costs at most a recompile after one. */
		(void)fsync(fd);
		close(fd);
	}
}

int vy__vk_disk_write(struct vy_vk_disk *disk, enum vy_vk_disk_kind kind, const uint8_t key[16],
	const void *data, size_t len, struct vy_err *err)
{
	char path[4200];
	if (!vy__vk_disk_path(disk, kind, key, path, sizeof(path))) {
		return 0;
	}
	char tmp[4300];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%llu", path, (long)getpid(),
		(unsigned long long)atomic_fetch_add(&temp_counter, 1));
	uint8_t h[VY_VK_DISK_HEADER_BYTES];
	vy__vk_disk_header(&disk->id, kind, key, disk->mac_key, data, len, h);
	/* A file that cannot fit under the folder's bound is not kept: a later compile makes it
	 * again. */
	uint64_t bytes = sizeof(h) + len;
	if (disk->quota && !disk->quota->reserve(disk->quota, bytes)) {
		return 0;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	bool ok = fd >= 0 && write_all(fd, h, sizeof(h)) && write_all(fd, data, len) &&
		  fsync(fd) == 0;
	int e = errno;
	if (fd >= 0 && close(fd) != 0 && ok) {
		ok = false;
		e = errno;
	}
	if (ok && rename(tmp, path) != 0) {
		ok = false;
		e = errno;
	}
	if (disk->quota) {
		disk->quota->release(disk->quota, bytes, ok);
	}
	if (!ok) {
		if (fd >= 0) {
			unlink(tmp);
		}
		atomic_fetch_add(&disk->write_errors, 1);
		return vy_err_set(err, VY_E_DISPATCH_FAILED, NULL,
			"make the cache folder writable by vyred and free disk space",
			"writing cache file %s: %s (%s)", path, strerror(e), strerrorname_np(e));
	}
	sync_dir(path);
	atomic_fetch_add(&disk->writes, 1);
	return 0;
}

void vy__vk_disk_touch(struct vy_vk_disk *disk, enum vy_vk_disk_kind kind, const uint8_t key[16])
{
	char path[4200];
	if (vy__vk_disk_path(disk, kind, key, path, sizeof(path))) {
		/* A file another process just removed is no use to record. */
		(void)utimensat(AT_FDCWD, path, NULL, 0);
	}
}

/* --- checking ahead ----------------------------------------------------------------------- */

struct recent {
	uint8_t key[16];
	struct timespec used;
};

static int most_recent_first(const void *a, const void *b)
{
	const struct recent *x = a;
	const struct recent *y = b;
	if (x->used.tv_sec != y->used.tv_sec) {
		return x->used.tv_sec < y->used.tv_sec ? 1 : -1;
	}
	if (x->used.tv_nsec != y->used.tv_nsec) {
		return x->used.tv_nsec < y->used.tv_nsec ? 1 : -1;
	}
	return memcmp(x->key, y->key, sizeof(x->key));
}

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The key of a file named like vy__vk_disk_path's SPIR-V files, or false. */
static bool key_of_name(const char *name, uint8_t key[16])
{
	if (strlen(name) != 36 || strcmp(name + 32, ".spv") != 0) {
		return false;
	}
	for (int i = 0; i < 16; i++) {
		unsigned v;
		char byte[3] = {name[2 * i], name[2 * i + 1], '\0'};
		if (!strchr("0123456789abcdef", byte[0]) || !strchr("0123456789abcdef", byte[1]) ||
			sscanf(byte, "%02x", &v) != 1) {
			return false;
		}
		key[i] = (uint8_t)v;
	}
	return true;
}

void vy__vk_disk_vet(struct vy_vk_disk *disk, size_t max_files, uint64_t budget_ns,
	bool (*valid)(const uint32_t *words, size_t n_words))
{
	if (!disk->dir || max_files == 0) {
		return;
	}
	uint64_t start = mono_ns();
	char folder[4200];
	snprintf(folder, sizeof(folder), "%s/spirv", disk->dir);
	DIR *d = opendir(folder);
	if (!d) {
		return;
	}
	struct recent *files = NULL;
	size_t n = 0;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct recent r;
		struct stat st;
		if (!key_of_name(e->d_name, r.key) || fstatat(dirfd(d), e->d_name, &st, 0) != 0 ||
			!S_ISREG(st.st_mode)) {
			continue;
		}
		r.used = st.st_mtim;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			struct recent *grown = realloc(files, cap * sizeof(*files));
			if (!grown) {
				break;
			}
			files = grown;
		}
		files[n++] = r;
	}
	closedir(d);
	if (n > 1) {
		qsort(files, n, sizeof(*files), most_recent_first);
	}
	n = n < max_files ? n : max_files;
	disk->vetted = n ? calloc(n, sizeof(*disk->vetted)) : NULL;
	for (size_t i = 0; disk->vetted && i < n && mono_ns() - start < budget_ns; i++) {
		void *data = NULL;
		size_t len = 0;
		if (read_checked(disk, VY_VK_DISK_SPIRV, files[i].key, &data, &len) == READ_OK &&
			len >= 20 && len % 4 == 0 && valid(data, len / 4)) {
			struct vy_vk_disk_vetted *v = &disk->vetted[disk->n_vetted++];
			memcpy(v->key, files[i].key, sizeof(v->key));
			crypto_generichash(v->digest, sizeof(v->digest), data, len, NULL, 0);
		}
		free(data);
	}
	free(files);
}

bool vy__vk_disk_vetted(
	const struct vy_vk_disk *disk, const uint8_t key[16], const void *data, size_t len)
{
	for (size_t i = 0; i < disk->n_vetted; i++) {
		const struct vy_vk_disk_vetted *v = &disk->vetted[i];
		if (memcmp(v->key, key, sizeof(v->key)) == 0) {
			uint8_t digest[32];
			crypto_generichash(digest, sizeof(digest), data, len, NULL, 0);
			return sodium_memcmp(digest, v->digest, sizeof(digest)) == 0;
		}
	}
	return false;
}
