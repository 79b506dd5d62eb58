/*
 * Program files of the disk cache: atomic writes, checked reads. A program file is small (the
 * canonical form of one program, at most 16 MiB), so it is read and written whole. Also the
 * trust of the cache folder and its key file, which every file of the cache is authenticated
 * with.
 */
#include "disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir.h"

#define HEADER_BYTES 72
#define HEADER_SIGNED 40 /* the header bytes before the MAC, which the MAC covers */

int vy_disk_mkdirs(const char *dir, struct vy_err *err)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		return vy_err_set(err, VY_E_INTERNAL, NULL, "use a shorter cache_dir",
			"the cache folder path is too long");
	}
	for (char *p = path + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(path, 0750) != 0 && errno != EEXIST) {
				return vy_err_set(err, VY_E_INTERNAL, NULL,
					"create the folder with write access for the daemon's "
					"user, or set "
					"cache_dir",
					"cannot create %s: %s", path, strerror(errno));
			}
			*p = c;
			if (c == '\0') {
				break;
			}
		}
	}
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"give the daemon's user write access to the folder, or set cache_dir",
			"%s is not a writable folder", dir);
	}
	return 0;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--) {
		v = v << 8 | p[i];
	}
	return v;
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int vy_disk_program_write(const char *dir, const uint8_t key[VY_DISK_KEY_BYTES],
	const struct vy_program_id *id, const void *bytes, size_t len, struct vy_err *err)
{
	char hex[VY_PROGRAM_ID_HEX];
	vy_program_id_hex(id, hex);
	char tmp[4200];
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s.vyp", dir, hex);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, hex);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"give the daemon's user write access to cache_dir",
			"cannot create a file in %s: %s", dir, strerror(errno));
	}
	uint8_t header[HEADER_BYTES] = {0};
	memcpy(header, VY_DISK_PROGRAM_MAGIC, 8);
	put_u32(header + 8, VY_DISK_PROGRAM_FORMAT);
	put_u64(header + 16, len);
	memcpy(header + 24, id->bytes, 16);
	vy_disk_mac(key, header, HEADER_SIGNED, bytes, len, header + HEADER_SIGNED);
	int rc = write_all(fd, header, sizeof(header)) || write_all(fd, bytes, len) || fsync(fd);
	int saved = errno;
	close(fd);
	if (rc == 0 && rename(tmp, path) != 0) {
		rc = -1;
		saved = errno;
	}
	if (rc) {
		unlink(tmp);
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"free space on the cache file system or give the daemon write access to it",
			"cannot write %s: %s", path, strerror(saved));
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

/* The payload of a valid file, malloc'd, or NULL. */
static uint8_t *read_program(const char *path, const uint8_t key[VY_DISK_KEY_BYTES],
	const struct vy_program_id *want, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return NULL;
	}
	struct stat st;
	uint8_t header[HEADER_BYTES];
	uint8_t *payload = NULL;
	bool ok = fstat(fd, &st) == 0 && st.st_size >= HEADER_BYTES &&
		  (size_t)st.st_size - HEADER_BYTES <= VY_IR_MAX_DOCUMENT &&
		  read(fd, header, sizeof(header)) == (ssize_t)sizeof(header) &&
		  memcmp(header, VY_DISK_PROGRAM_MAGIC, 8) == 0 &&
		  get_u32(header + 8) == VY_DISK_PROGRAM_FORMAT &&
		  get_u64(header + 16) == (uint64_t)st.st_size - HEADER_BYTES &&
		  memcmp(header + 24, want->bytes, 16) == 0;
	if (ok) {
		*len = (size_t)st.st_size - HEADER_BYTES;
		payload = malloc(*len ? *len : 1);
		uint8_t mac[VY_DISK_MAC_BYTES];
		ok = payload && read(fd, payload, *len) == (ssize_t)*len;
		if (ok) {
			vy_disk_mac(key, header, HEADER_SIGNED, payload, *len, mac);
			ok = sodium_memcmp(mac, header + HEADER_SIGNED, sizeof(mac)) == 0;
		}
	}
	close(fd);
	if (!ok) {
		free(payload);
		return NULL;
	}
	/* The name must also be the id of the bytes: a file copied under another name is foreign.
	 */
	struct vy_program_id id;
	vy_program_id_compute(payload, *len, &id);
	if (memcmp(id.bytes, want->bytes, 16) != 0) {
		free(payload);
		return NULL;
	}
	return payload;
}

struct found {
	char name[VY_PROGRAM_ID_HEX + 4];
	struct timespec mtime;
};

static int newest_first(const void *a, const void *b)
{
	const struct found *x = a;
	const struct found *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec) {
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	}
	if (x->mtime.tv_nsec != y->mtime.tv_nsec) {
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	}
	return strcmp(x->name, y->name);
}

void vy_disk_programs_load(const char *dir, const uint8_t key[VY_DISK_KEY_BYTES], size_t max,
	void (*fn)(void *ctx, const struct vy_program_id *id, const uint8_t *bytes, size_t len),
	void *ctx, uint64_t *rejected)
{
	DIR *d = opendir(dir);
	if (!d) {
		return;
	}
	struct found *files = NULL;
	size_t n = 0;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.' && len > 2 && e->d_name[1] != '.') {
			/* A temporary file left by a write that never finished. */
			unlink(path);
			continue;
		}
		if (len != VY_PROGRAM_ID_HEX - 1 + 4 || strcmp(e->d_name + len - 4, ".vyp") != 0) {
			continue;
		}
		struct stat st;
		if (stat(path, &st) != 0) {
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct found *grown = realloc(files, cap * sizeof(*files));
			if (!grown) {
				break;
			}
			files = grown;
		}
		memcpy(files[n].name, e->d_name, len + 1);
		files[n].mtime = st.st_mtim;
		n++;
	}
	closedir(d);
	if (n > 1) {
		qsort(files, n, sizeof(*files), newest_first);
	}
	for (size_t i = 0; i < n; i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		struct vy_program_id id;
		size_t len = 0;
		uint8_t *bytes = NULL;
		if (i < max &&
			vy_program_id_parse(files[i].name, VY_PROGRAM_ID_HEX - 1, &id, NULL) == 0) {
			bytes = read_program(path, key, &id, &len);
		}
		if (!bytes) {
			*rejected += i < max;
			unlink(path);
			continue;
		}
		fn(ctx, &id, bytes, len);
		free(bytes);
	}
	free(files);
}

size_t vy_disk_programs_clear(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		return 0;
	}
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len > 4 && strcmp(e->d_name + len - 4, ".vyp") == 0) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			n += unlink(path) == 0;
		}
	}
	closedir(d);
	return n;
}

void vy_disk_mac(const uint8_t key[VY_DISK_KEY_BYTES], const void *header, size_t header_len,
	const void *payload, size_t len, uint8_t out[VY_DISK_MAC_BYTES])
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, key, VY_DISK_KEY_BYTES, VY_DISK_MAC_BYTES);
	crypto_generichash_update(&st, header, header_len);
	crypto_generichash_update(&st, payload, len);
	crypto_generichash_final(&st, out, VY_DISK_MAC_BYTES);
}

/* --- trust of the folder ---------------------------------------------------------------- */

/*
 * Whether a folder on the way to the cache lets no one but root and the daemon's user change
 * what it holds. Like ssh's StrictModes: owned by root or the daemon's user, and writable by no
 * one else, except that a folder above cache_dir (not cache_dir itself) may be a root-owned
 * sticky folder like /tmp, where others cannot rename or delete what they do not own.
 */
static int folder_trusted(const char *path, bool above, struct vy_err *err)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL, "create the folder or set cache_dir",
			"cannot inspect %s: %s", path, strerror(errno));
	}
	uid_t me = geteuid();
	if (!S_ISDIR(st.st_mode)) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"make cache_dir a real folder path (no symbolic link in it)",
			"%s is not a folder", path);
	}
	if (st.st_uid != 0 && st.st_uid != me) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"chown the folder to root or to the daemon's user, or set cache_dir",
			"%s is owned by uid %u, neither root nor the daemon's uid %u", path,
			(unsigned)st.st_uid, (unsigned)me);
	}
	bool others = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
	bool sticky = above && st.st_uid == 0 && (st.st_mode & S_ISVTX);
	if (others && !sticky) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"chmod go-w the folder (the cache must be writable by the daemon's user "
			"only), or set cache_dir",
			"%s is writable by users other than the daemon's (mode %04o)", path,
			(unsigned)(st.st_mode & 07777));
	}
	return 0;
}

int vy_disk_dir_check(const char *dir, struct vy_err *err)
{
	if (dir[0] != '/') {
		return vy_err_set(err, VY_E_INTERNAL, NULL, "set cache_dir to an absolute path",
			"cache_dir %s is not an absolute path", dir);
	}
	/* The deepest folder that exists, resolved; what is missing is created by the daemon. */
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		return vy_err_set(err, VY_E_INTERNAL, NULL, "use a shorter cache_dir",
			"the cache folder path is too long");
	}
	char real[PATH_MAX];
	bool leaf = true;
	while (!realpath(path, real)) {
		char *slash = strrchr(path, '/');
		if (errno != ENOENT || !slash) {
			return vy_err_set(err, VY_E_INTERNAL, NULL,
				"set cache_dir to a usable folder", "cannot resolve %s: %s", path,
				strerror(errno));
		}
		*(slash == path ? slash + 1 : slash) = '\0';
		leaf = false;
	}
	int rc = folder_trusted(real, !leaf, err);
	static const char *const subs[] = {"programs", "vulkan", "vulkan/spirv"};
	for (size_t i = 0; leaf && rc == 0 && i < sizeof(subs) / sizeof(subs[0]); i++) {
		char sub[PATH_MAX + 16];
		snprintf(sub, sizeof(sub), "%s/%s", real, subs[i]);
		struct stat st;
		if (lstat(sub, &st) == 0) {
			rc = folder_trusted(sub, false, err);
		}
	}
	while (rc == 0 && strcmp(real, "/") != 0) {
		char *slash = strrchr(real, '/');
		*(slash == real ? slash + 1 : slash) = '\0';
		rc = folder_trusted(real, true, err);
	}
	/* A symbolic link on the way is only as safe as the folder that holds it. */
	for (char *s = path + 1; rc == 0 && (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (realpath(path, real)) {
			rc = folder_trusted(real, true, err);
		}
		*s = '/';
	}
	return rc;
}

/* --- the key ---------------------------------------------------------------------------- */

/* Create the key file with fresh random bytes; losing a race to another daemon is no error. */
static int key_create(const char *dir, const char *path, struct vy_err *err)
{
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s/.key.XXXXXX", dir);
	/* mkostemp creates the file with O_EXCL and mode 0600. */
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"give the daemon's user write access to cache_dir",
			"cannot create the key file in %s: %s", dir, strerror(errno));
	}
	uint8_t key[VY_DISK_KEY_BYTES];
	if (sodium_init() < 0) {
		fprintf(stderr, "vyred: libsodium failed to initialise\n");
		abort();
	}
	randombytes_buf(key, sizeof(key));
	int rc = write_all(fd, key, sizeof(key)) || fsync(fd);
	int saved = errno;
	sodium_memzero(key, sizeof(key));
	close(fd);
	/* link, unlike rename, never replaces a key another daemon made meanwhile. */
	if (rc == 0 && link(tmp, path) != 0 && errno != EEXIST) {
		rc = -1;
		saved = errno;
	}
	unlink(tmp);
	if (rc) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"free space on the cache file system or give the daemon write access to it",
			"cannot write %s: %s", path, strerror(saved));
	}
	return 0;
}

int vy_disk_key_load(
	const char *dir, bool create, uint8_t key[VY_DISK_KEY_BYTES], struct vy_err *err)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/" VY_DISK_KEY_FILE, dir);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !create) {
		return 1;
	}
	if (fd < 0 && errno == ENOENT) {
		int rc = key_create(dir, path, err);
		if (rc) {
			return rc;
		}
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"remove the file so that the daemon creates a new key (the cache is then "
			"rebuilt)",
			"cannot open the key file %s: %s", path, strerror(errno));
	}
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		(st.st_mode & 077) != 0 || st.st_size != VY_DISK_KEY_BYTES) {
		rc = vy_err_set(err, VY_E_INTERNAL, NULL,
			"remove the file so that the daemon creates a new key (0600, owned by the "
			"daemon's user; the cache is then rebuilt)",
			"the key file %s is not a %d-byte file of mode 0600 owned by uid %u", path,
			VY_DISK_KEY_BYTES, (unsigned)geteuid());
	} else if (read(fd, key, VY_DISK_KEY_BYTES) != VY_DISK_KEY_BYTES) {
		rc = vy_err_set(err, VY_E_INTERNAL, NULL,
			"remove the file so that the daemon creates a new key",
			"cannot read the key file %s: %s", path, strerror(errno));
	}
	close(fd);
	return rc;
}

/* --- the budget ------------------------------------------------------------------------ */

struct budget_file {
	char *path; /* owned */
	uint64_t bytes;
	struct timespec used;
};

struct budget_scan {
	struct budget_file *files;
	size_t n;
	size_t cap;
	uint64_t total;
};

/* Files of the cache: program files, SPIR-V modules, pipeline-cache blobs; never a temporary
 * file of a write under way (".name.XXXXXX", "name.tmp.pid.n"). */
static bool cache_file(const char *name)
{
	size_t len = strlen(name);
	if (name[0] == '.' || strstr(name, ".tmp.")) {
		return false;
	}
	return len > 4 &&
	       (strcmp(name + len - 4, ".vyp") == 0 || strcmp(name + len - 4, ".spv") == 0 ||
		       strcmp(name + len - 4, ".bin") == 0);
}

static void scan_dir(struct budget_scan *sc, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d) {
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
			continue;
		}
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(path, &st) != 0) {
			continue;
		}
		if (S_ISDIR(st.st_mode) && depth > 0) {
			scan_dir(sc, path, depth - 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !cache_file(e->d_name)) {
			continue;
		}
		if (sc->n == sc->cap) {
			sc->cap = sc->cap ? sc->cap * 2 : 256;
			struct budget_file *grown = realloc(sc->files, sc->cap * sizeof(*grown));
			if (!grown) {
				fprintf(stderr, "vyred: out of memory scanning the disk cache\n");
				abort();
			}
			sc->files = grown;
		}
		char *copy = strdup(path);
		if (!copy) {
			fprintf(stderr, "vyred: out of memory scanning the disk cache\n");
			abort();
		}
		sc->files[sc->n++] = (struct budget_file){copy, (uint64_t)st.st_size, st.st_mtim};
		sc->total += (uint64_t)st.st_size;
	}
	closedir(d);
}

static int oldest_first(const void *a, const void *b)
{
	const struct budget_file *x = a;
	const struct budget_file *y = b;
	if (x->used.tv_sec != y->used.tv_sec) {
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	}
	if (x->used.tv_nsec != y->used.tv_nsec) {
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	}
	return strcmp(x->path, y->path);
}

/* Scan the folders and remove the oldest files until `room` more bytes fit an eighth under the
 * cap. The caller holds b->lock. */
static void budget_trim_locked(struct vy_disk_budget *b, uint64_t room)
{
	struct budget_scan sc = {0};
	for (int i = 0; i < 2; i++) {
		if (b->dirs[i]) {
			scan_dir(&sc, b->dirs[i], 1);
		}
	}
	b->scans++;
	uint64_t target = b->cap - b->cap / 8;
	if (sc.n > 1) {
		qsort(sc.files, sc.n, sizeof(*sc.files), oldest_first);
	}
	for (size_t i = 0; i < sc.n; i++) {
		if (sc.total + b->pending + room > target && unlink(sc.files[i].path) == 0) {
			sc.total -= sc.files[i].bytes;
			b->removed++;
		}
		free(sc.files[i].path);
	}
	free(sc.files);
	b->total = sc.total;
}

static bool budget_reserve(struct vy_disk_quota *q, uint64_t bytes)
{
	struct vy_disk_budget *b = (struct vy_disk_budget *)q;
	pthread_mutex_lock(&b->lock);
	bool ok = bytes <= b->cap - b->cap / 8;
	if (!ok) {
		b->refused++;
	} else {
		if (b->total + b->pending + bytes > b->cap) {
			budget_trim_locked(b, bytes);
		}
		b->pending += bytes;
	}
	pthread_mutex_unlock(&b->lock);
	return ok;
}

static void budget_release(struct vy_disk_quota *q, uint64_t bytes, bool written)
{
	struct vy_disk_budget *b = (struct vy_disk_budget *)q;
	pthread_mutex_lock(&b->lock);
	b->pending -= bytes;
	/* A file that replaced another (a pipeline-cache blob) counts twice until the next scan:
	 * the estimate only errs towards trimming early. */
	b->total += written ? bytes : 0;
	pthread_mutex_unlock(&b->lock);
}

void vy_disk_budget_init(
	struct vy_disk_budget *b, uint64_t cap, const char *programs_dir, const char *backend_dir)
{
	memset(b, 0, sizeof(*b));
	b->quota = (struct vy_disk_quota){budget_reserve, budget_release};
	pthread_mutex_init(&b->lock, NULL);
	b->cap = cap;
	const char *dirs[2] = {programs_dir, backend_dir};
	for (int i = 0; i < 2; i++) {
		if (dirs[i] && !(b->dirs[i] = strdup(dirs[i]))) {
			fprintf(stderr, "vyred: out of memory\n");
			abort();
		}
	}
	pthread_mutex_lock(&b->lock);
	b->total = UINT64_MAX / 4; /* unknown until scanned: forces the first scan */
	budget_trim_locked(b, 0);
	pthread_mutex_unlock(&b->lock);
}

void vy_disk_budget_finish(struct vy_disk_budget *b)
{
	for (int i = 0; i < 2; i++) {
		free(b->dirs[i]);
	}
	pthread_mutex_destroy(&b->lock);
	memset(b, 0, sizeof(*b));
}

int vy_disk_program_keep(const char *dir, const uint8_t key[VY_DISK_KEY_BYTES],
	struct vy_disk_budget *b, const struct vy_program_id *id, const void *bytes, size_t len,
	bool *written, struct vy_err *err)
{
	*written = false;
	char hex[VY_PROGRAM_ID_HEX];
	vy_program_id_hex(id, hex);
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s.vyp", dir, hex);
	struct stat st;
	/* The file is checked whole when it is read at start; here its size is enough to know that
	 * the same program is there, and touching it records the use. */
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		(uint64_t)st.st_size == HEADER_BYTES + (uint64_t)len &&
		utimensat(AT_FDCWD, path, NULL, 0) == 0) {
		return 0;
	}
	uint64_t need = HEADER_BYTES + (uint64_t)len;
	if (b && !b->quota.reserve(&b->quota, need)) {
		return 0;
	}
	int rc = vy_disk_program_write(dir, key, id, bytes, len, err);
	if (b) {
		b->quota.release(&b->quota, need, rc == 0);
	}
	*written = rc == 0;
	return rc;
}
