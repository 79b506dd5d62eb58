/*
 * Program files of the disk cache: atomic writes, checked reads. A program file is small (the
 * canonical form of one program, at most 16 MiB), so it is read and written whole.
 */
#include "disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ir.h"

#define HEADER_BYTES 48

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

int vy_disk_program_write(const char *dir, const struct vy_program_id *id, const void *bytes,
	size_t len, struct vy_err *err)
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
	put_u64(header + 24, XXH3_64bits(bytes, len));
	memcpy(header + 32, id->bytes, 16);
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
static uint8_t *read_program(const char *path, const struct vy_program_id *want, size_t *len)
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
		  memcmp(header + 32, want->bytes, 16) == 0;
	if (ok) {
		*len = (size_t)st.st_size - HEADER_BYTES;
		payload = malloc(*len ? *len : 1);
		ok = payload && read(fd, payload, *len) == (ssize_t)*len &&
		     XXH3_64bits(payload, *len) == get_u64(header + 24);
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

void vy_disk_programs_load(const char *dir, size_t max,
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
			bytes = read_program(path, &id, &len);
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

int vy_disk_program_keep(const char *dir, struct vy_disk_budget *b, const struct vy_program_id *id,
	const void *bytes, size_t len, bool *written, struct vy_err *err)
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
	int rc = vy_disk_program_write(dir, id, bytes, len, err);
	if (b) {
		b->quota.release(&b->quota, need, rc == 0);
	}
	*written = rc == 0;
	return rc;
}
