/*
 * Shared memory that cannot bring the daemon down (docs/security.md). An unprivileged user
 * creates a memfd on hugetlbfs (MFD_HUGETLB), seals it against shrinking and offers it to
 * shm_attach; accepted, a hole punched in it with the huge page pool drained made the daemon's
 * next read of the region raise SIGBUS, which killed the daemon and every client. The daemon must
 * refuse it with BAD_REQUEST and a Fix line. A plain shmem memfd stays accepted: a hole punched in
 * it refaults as zeros, so the dispatch that reads it succeeds and reads zeros. Throughout, a
 * crowd of well-behaved clients gets correct results and the daemon ends with status 0.
 *
 * No client can make an accepted region fault on this machine (see daemon/sigbus.h for the
 * guard that catches it anyway, and tests/daemon/test_sigbus.c for its test), so if the refusal
 * is missing, the attacker goes on with the whole attack and the case reports what the daemon
 * did: survived with the request failed (the guard), or died.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rel.h"

#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"
#define ATTACKER 61001
#define REGION (64u * 1024)
#define PATTERN 0xa5a5a5a5u

/* The pool size found before the case changed it, restored by the case and by its .fini. */
static long saved_hugepages = -1;
/* The case's program, freed by .fini too when an assertion ends the case early. */
static struct vy_program *touch_p;

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1) {
			v = -1;
		}
		fclose(f);
	}
	return v;
}

static bool write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		return false;
	}
	bool ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok;
}

/* A field of /proc/meminfo ("HugePages_Free"), or -1. */
static long meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	}
	if (f) {
		fclose(f);
	}
	return v;
}

static bool have_hugetlbfs(void)
{
	FILE *f = fopen("/proc/filesystems", "r");
	char line[128];
	bool found = false;
	while (f && fgets(line, sizeof(line), f)) {
		found = found || strstr(line, "hugetlbfs") != NULL;
	}
	if (f) {
		fclose(f);
	}
	return found && access(NR_HUGEPAGES, F_OK) == 0;
}

static void restore_hugepages(void)
{
	if (saved_hugepages >= 0) {
		if (!write_long(NR_HUGEPAGES, saved_hugepages)) {
			fprintf(stderr, "could not restore %s to %ld: %s\n", NR_HUGEPAGES,
				saved_hugepages, strerror(errno));
		}
		saved_hugepages = -1;
	}
}

static void iso_shm_fini(void)
{
	restore_hugepages();
	rel_fini();
	vy_program_destroy(touch_p);
	touch_p = NULL;
}

/* A program whose one read_write buffer takes the input and comes back whole, with its first
 * element set to 7: the reply shows what the daemon read. */
static struct vy_program *touch_program(void)
{
	struct vy_program *p = vy_program_create("iso-shm-touch", 1, 1, 1);
	vy_program_add_buffer(p, "data", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_store(p, "data", vy_ir_u32(p, 0), vy_ir_u32(p, 7)), NULL));
	return p;
}

struct attack {
	const char *sock;
	const struct vy_program *touch;
	size_t huge; /* bytes of one huge page */
};

/* Outcomes the attacker reports by its exit status. */
enum {
	HELD = 0,          /* refused; the punched shmem region read zeros */
	NO_CONNECT = 1,    /* could not connect or say hello */
	NO_HUGETLB = 2,    /* memfd_create(MFD_HUGETLB) or its first huge page failed */
	WRONG_REFUSAL = 3, /* refused, but not BAD_REQUEST with a Fix naming MFD_HUGETLB */
	SHMEM_BROKEN = 4,  /* the plain memfd's attach or dispatches did not go as they must */
	GUARDED = 20,      /* accepted; the attack's dispatch failed with an error, daemon up */
	NOT_FAULTED = 21,  /* accepted; the attack's dispatch returned outputs */
	DAEMON_DIED = 22,  /* accepted; the attack's dispatch lost the connection */
	NO_ATTACK = 23,    /* accepted; punching the hole or draining the pool failed */
};

static int attach(struct tc *c, int fd, uint64_t size, uint64_t *region, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	if (tc_send(c, &m, fd) != 0 || tc_recv(c, r, 30000) != 0) {
		return -EPIPE;
	}
	int code = tc_code(r);
	if (code == 0 && !tc_u64(r, "region", region)) {
		code = VY_E_INTERNAL;
	}
	return code;
}

/* Dispatch the touch program on `len` bytes of `region`; the reply's code, or -EPIPE when the
 * connection is gone. */
static int touch(
	struct tc *c, const struct vy_program *p, uint64_t region, uint64_t len, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_DISPATCH, 3);
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "config");
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, "grid");
	msgpack_pack_array(&m.pk, 3);
	for (int k = 0; k < 3; k++) {
		msgpack_pack_uint32(&m.pk, 1);
	}
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 1);
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, "shm");
	msgpack_pack_array(&m.pk, 3);
	msgpack_pack_uint64(&m.pk, region);
	msgpack_pack_uint64(&m.pk, 0);
	msgpack_pack_uint64(&m.pk, len);
	if (tc_send(c, &m, -1) != 0 || tc_recv(c, r, 30000) != 0) {
		return -EPIPE;
	}
	return tc_code(r);
}

/* Whether the touch reply holds `len` bytes: 7, then `word` in every other element. */
static bool touched(const struct tc_reply *r, size_t len, uint32_t word)
{
	const uint8_t *data[1];
	size_t lens[1];
	bool nil[1];
	if (tc_outputs(r, data, lens, nil, 1) != 1 || lens[0] != len) {
		return false;
	}
	for (size_t i = 0; i < len / 4; i++) {
		uint32_t v;
		memcpy(&v, data[0] + 4 * i, 4);
		if (v != (i ? word : 7u)) {
			return false;
		}
	}
	return true;
}

/* A plain shmem memfd, filled and sealed: a hole punched in it after the attach reads zeros. */
static int punched_shmem(struct tc *c, const struct vy_program *p)
{
	int fd = memfd_create("iso-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint32_t *fill = malloc(REGION);
	if (fd < 0 || !fill || ftruncate(fd, REGION) != 0) {
		return 1;
	}
	for (size_t i = 0; i < REGION / 4; i++) {
		fill[i] = PATTERN;
	}
	bool written = pwrite(fd, fill, REGION, 0) == (ssize_t)REGION;
	free(fill);
	if (!written || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
		return 2;
	}
	struct tc_reply r;
	uint64_t region = 0;
	int code = attach(c, fd, REGION, &region, &r);
	if (code != 0) {
		fprintf(stderr, "attacker: plain memfd refused: %s\n", r.r.error.message);
		return 3;
	}
	tc_reply_free(&r);
	if (touch(c, p, region, REGION, &r) != 0 || !touched(&r, REGION, PATTERN)) {
		return 4;
	}
	tc_reply_free(&r);
	/* F_SEAL_SHRINK does not forbid punching holes: the pages go, the size stays. */
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, REGION) != 0) {
		return 5;
	}
	close(fd);
	code = touch(c, p, region, REGION, &r);
	/* Zeros where the daemon or lavapipe reads the mapping; a GPU that pinned the pages at
	 * import still reads the bytes from before the hole. */
	bool zeros = code == 0 && touched(&r, REGION, 0);
	bool ok = zeros || (code == 0 && touched(&r, REGION, PATTERN));
	if (ok) {
		fprintf(stderr, "attacker: the region with its pages punched out read %s\n",
			zeros ? "zeros" : "the bytes from before (pages pinned by an import)");
	} else {
		fprintf(stderr, "attacker: dispatch on the punched region: %s\n",
			code ? r.r.error.message : "outputs not zeros");
	}
	if (code != -EPIPE) {
		tc_reply_free(&r);
	}
	return ok ? 0 : 6;
}

/* What the table's attack does once the region is attached: punch the hole, take every free
 * huge page, and have the daemon read the region. */
static int attack_accepted(struct tc *c, const struct attack *a, int fd, uint64_t region)
{
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)a->huge) != 0) {
		return NO_ATTACK;
	}
	long free_pages = meminfo("HugePages_Free");
	void *drain = NULL;
	size_t drained = free_pages > 0 ? (size_t)free_pages * a->huge : 0;
	if (drained) {
		int dfd = memfd_create("iso-shm-drain", MFD_CLOEXEC | MFD_HUGETLB);
		drain = dfd >= 0 && ftruncate(dfd, (off_t)drained) == 0
				? mmap(NULL, drained, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0)
				: MAP_FAILED;
		if (drain == MAP_FAILED) {
			return NO_ATTACK;
		}
		for (size_t off = 0; off < drained; off += a->huge) {
			((volatile uint8_t *)drain)[off] = 1;
		}
	}
	fprintf(stderr, "attacker: hole punched, %ld free huge pages taken, pool now %ld free\n",
		free_pages, meminfo("HugePages_Free"));
	struct tc_reply r;
	int code = touch(c, a->touch, region, a->huge, &r);
	if (code == -EPIPE) {
		return DAEMON_DIED;
	}
	fprintf(stderr, "attacker: the attack's dispatch: %s%s%s\n",
		code ? vy_err_name(code) : "ok", code ? ": " : "", code ? r.r.error.message : "");
	tc_reply_free(&r);
	return code ? GUARDED : NOT_FAULTED;
}

static int attacker(void *arg)
{
	const struct attack *a = arg;
	struct tc c;
	if (tc_connect(&c, a->sock) != 0 || tc_hello(&c, "iso-shm-attacker") != 0) {
		return NO_CONNECT;
	}
	int fd = memfd_create("iso-shm-huge", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
	if (fd < 0 || ftruncate(fd, (off_t)a->huge) != 0) {
		fprintf(stderr, "attacker: memfd_create(MFD_HUGETLB): %s\n", strerror(errno));
		return NO_HUGETLB;
	}
	/* Its one huge page, written: the pool's free page is now the attacker's. */
	void *map = mmap(NULL, a->huge, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "attacker: mapping a huge page: %s\n", strerror(errno));
		return NO_HUGETLB;
	}
	memset(map, 0x5a, a->huge);
	munmap(map, a->huge);
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
		return NO_HUGETLB;
	}
	struct tc_reply r;
	uint64_t region = 0;
	int code = attach(&c, fd, a->huge, &region, &r);
	if (code == -EPIPE) {
		return DAEMON_DIED;
	}
	if (code == 0) {
		tc_reply_free(&r);
		int rc = attack_accepted(&c, a, fd, region);
		close(fd);
		tc_close(&c);
		return rc;
	}
	close(fd);
	bool named = code == VY_E_BAD_REQUEST && strstr(r.r.error.fix, "MFD_HUGETLB") &&
		     strstr(r.r.error.message, "hugetlbfs");
	fprintf(stderr, "attacker: MFD_HUGETLB memfd: %s: %s Fix: %s\n", vy_err_name(code),
		r.r.error.message, r.r.error.fix);
	tc_reply_free(&r);
	if (!named) {
		return WRONG_REFUSAL;
	}
	int bad = punched_shmem(&c, a->touch);
	tc_close(&c);
	if (bad) {
		fprintf(stderr, "attacker: plain shmem memfd, step %d went wrong\n", bad);
		return SHMEM_BROKEN;
	}
	return HELD;
}

/* Whether the daemon still answers a ping on `c` (without asserting: it may be gone). */
static bool answers(struct tc *c)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_PING, 0);
	struct tc_reply r;
	if (tc_call(c, &m, &r) != 0) {
		return false;
	}
	bool ok = r.r.ok;
	tc_reply_free(&r);
	return ok;
}

static const char *outcome(int rc)
{
	switch (rc) {
	case HELD:
		return "refused; a punched shmem region read zeros";
	case NO_CONNECT:
		return "the attacker could not connect";
	case NO_HUGETLB:
		return "the attacker could not make its huge page memfd";
	case WRONG_REFUSAL:
		return "refused without BAD_REQUEST, hugetlbfs and a Fix naming MFD_HUGETLB";
	case SHMEM_BROKEN:
		return "a plain memfd with a punched hole was not served";
	case GUARDED:
		return "hugetlbfs memfd ACCEPTED; the attack's dispatch failed, daemon alive";
	case NOT_FAULTED:
		return "hugetlbfs memfd ACCEPTED; the attack's dispatch returned outputs";
	case DAEMON_DIED:
		return "hugetlbfs memfd ACCEPTED; the daemon died during the attack";
	case NO_ATTACK:
		return "hugetlbfs memfd ACCEPTED; the attack could not be set up";
	default:
		return "the attacker crashed";
	}
}

Test(isolation, a_hugetlbfs_memfd_cannot_bring_the_daemon_down, .fini = iso_shm_fini,
	.timeout = 120)
{
	if (!have_hugetlbfs()) {
		cr_skip_test("the kernel has no hugetlbfs (CONFIG_HUGETLBFS): no huge page memfd "
			     "can be made, so the attack cannot happen here");
	}
	long huge_kib = meminfo("Hugepagesize");
	cr_assert_gt(huge_kib, 0, "no Hugepagesize in /proc/meminfo");
	saved_hugepages = read_long(NR_HUGEPAGES);
	cr_assert_geq(saved_hugepages, 0, "cannot read %s", NR_HUGEPAGES);
	/* One huge page more than the pool had: the attacker takes it for its memfd. */
	cr_assert(write_long(NR_HUGEPAGES, saved_hugepages + 1), "cannot write %s: %s",
		NR_HUGEPAGES, strerror(errno));
	long pool = read_long(NR_HUGEPAGES);
	cr_assert_eq(pool, saved_hugepages + 1,
		"the kernel found no memory for one more huge page (pool %ld)", pool);

	struct rel_scene s;
	rel_scene_open(
		&s, "[daemon]\nsocket_mode = 0666\n[limits]\ndispatch_timeout_ms = 5000\n", 4);
	touch_p = touch_program();
	struct attack a = {s.d.sock, touch_p, (size_t)huge_kib * 1024};
	long t0 = rel_now_ms();
	int rc = rel_as_user(ATTACKER, ATTACKER, attacker, &a);
	long attack_ms = rel_now_ms() - t0;
	bool alive = answers(&s.c);
	int died = alive ? 0 : vyd_wait(&s.d, 5000);
	uint64_t faults = alive ? t_stat(&s.c, "resident.shm_faults") : 0;
	char daemon[64];
	snprintf(daemon, sizeof(daemon), alive ? "alive" : "DEAD, exit status %d", died);
	printf("isolation: shm hugetlbfs memfd (%ld KiB huge page, F_SEAL_SHRINK) as uid %d: %s "
	       "(%ld ms); daemon %s, %" PRIu64 " SIGBUS faults caught\n",
		huge_kib, ATTACKER, outcome(rc), attack_ms, daemon, faults);
	fflush(stdout);
	cr_expect_eq(rc, HELD, "attacker: %s (status %d)", outcome(rc), rc);
	cr_assert(alive, "the daemon died with status %d", died);
	cr_expect_eq(faults, 0, "no read of client memory faulted");
	rel_scene_close(&s);
	restore_hugepages();
	cr_expect_eq(read_long(NR_HUGEPAGES), pool - 1, "the huge page pool is as it was");
}
