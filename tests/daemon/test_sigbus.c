/*
 * The SIGBUS guard of the daemon (daemon/sigbus.c) alone, without a daemon: a registered mapping
 * whose file loses its pages reads zeros and is flagged, on any thread; a fault anywhere else
 * still kills the process with SIGBUS, as does a SIGBUS sent to it.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sigbus.h"

#define PAGES 3

static void guard_on(void)
{
	cr_assert_eq(vy_sigbus_guard_install(), 0,
		"the guard installs (a sanitizer did not keep SIGBUS for itself)");
}

static void guard_off(void)
{
	vy_sigbus_guard_remove();
}

TestSuite(sigbus, .init = guard_on, .fini = guard_off, .timeout = 60);

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* An unlinked regular file of PAGES pages filled with `fill`, mapped shared for reading. */
static const volatile uint8_t *map_file(uint8_t fill, int *fd_out)
{
	char path[] = "/tmp/vyred-sigbus-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	size_t len = PAGES * page_size();
	uint8_t *bytes = malloc(len);
	cr_assert_not_null(bytes);
	memset(bytes, fill, len);
	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	free(bytes);
	void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(map, MAP_FAILED);
	*fd_out = fd;
	return map;
}

/* The bytes of [p, p + len) summed; each read of a vanished page faults. */
static uint64_t sum(const volatile uint8_t *p, size_t len)
{
	uint64_t total = 0;
	for (size_t i = 0; i < len; i++) {
		total += p[i];
	}
	return total;
}

Test(sigbus, a_vanished_region_reads_zeros_and_is_flagged)
{
	size_t len = PAGES * page_size();
	int fd_a;
	int fd_b;
	const volatile uint8_t *a = map_file(0x5a, &fd_a);
	const volatile uint8_t *b = map_file(0x33, &fd_b);
	uint32_t slot_a;
	uint32_t slot_b;
	cr_assert_eq(vy_sigbus_region_add((const void *)a, len, &slot_a), 0);
	cr_assert_eq(vy_sigbus_region_add((const void *)b, len, &slot_b), 0);
	cr_expect_eq(sum(a, len), 0x5aull * len, "the region reads its file while it is whole");
	uint64_t before = vy_sigbus_faults();

	/* Truncated to nothing, every page of the mapping lies past the end of the file: without
	 * the guard the next read would kill this process. */
	cr_assert_eq(ftruncate(fd_a, 0), 0);
	cr_expect_eq(sum(a, len), 0, "the vanished region reads zeros");
	cr_expect(vy_sigbus_region_faulted(slot_a), "the vanished region is flagged");
	cr_expect_eq(vy_sigbus_faults(), before + 1, "one fault, then zeros everywhere");
	cr_expect_eq(sum(b, len), 0x33ull * len, "the other region reads its own bytes");
	cr_expect_not(vy_sigbus_region_faulted(slot_b), "the other region is not flagged");

	vy_sigbus_region_remove(slot_a);
	vy_sigbus_region_remove(slot_b);
	munmap((void *)a, len);
	munmap((void *)b, len);
	close(fd_a);
	close(fd_b);
}

struct reader {
	const volatile uint8_t *map;
	size_t len;
	uint64_t sum;
};

static void *read_region(void *arg)
{
	struct reader *r = arg;
	r->sum = sum(r->map, r->len);
	return NULL;
}

Test(sigbus, a_fault_on_another_thread_is_caught_there)
{
	size_t len = PAGES * page_size();
	int fd;
	const volatile uint8_t *a = map_file(0x11, &fd);
	uint32_t slot;
	cr_assert_eq(vy_sigbus_region_add((const void *)a, len, &slot), 0);
	cr_assert_eq(ftruncate(fd, (off_t)page_size()), 0);
	struct reader r = {a, len, 0};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, read_region, &r), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	/* The first page may have been read before or after the zeros came. */
	cr_expect(r.sum == 0 || r.sum == 0x11ull * page_size(),
		"the thread read the first page and zeros after it (sum %llu)",
		(unsigned long long)r.sum);
	cr_expect(vy_sigbus_region_faulted(slot), "the region is flagged");
	vy_sigbus_region_remove(slot);
	munmap((void *)a, len);
	close(fd);
}

Test(sigbus, slots_are_reused_and_grow_past_one_chunk)
{
	size_t len = PAGES * page_size();
	enum { N = VY_SIGBUS_CHUNK + 10 };
	static uint32_t slots[N];
	static char dummy[N];
	for (uint32_t i = 0; i < N; i++) {
		cr_assert_eq(vy_sigbus_region_add(&dummy[i], 1, &slots[i]), 0);
	}
	for (uint32_t i = 0; i < N; i++) {
		vy_sigbus_region_remove(slots[i]);
	}
	/* A slot given back comes back, flag cleared; a region registered in the second chunk is
	 * still found by the handler. */
	int fd;
	const volatile uint8_t *a = map_file(0x22, &fd);
	uint32_t slot;
	cr_assert_eq(vy_sigbus_region_add((const void *)a, len, &slot), 0);
	cr_expect_eq(slot, slots[N - 1], "the last slot given back is reused");
	cr_expect_geq(slot, VY_SIGBUS_CHUNK, "the slot lies in the second chunk");
	cr_expect_not(vy_sigbus_region_faulted(slot), "a reused slot starts unflagged");
	cr_assert_eq(ftruncate(fd, 0), 0);
	cr_expect_eq(sum(a, len), 0);
	cr_expect(vy_sigbus_region_faulted(slot));
	vy_sigbus_region_remove(slot);
	munmap((void *)a, len);
	close(fd);
}

/* How a child that does `what` ends: its signal, or 1000 + its exit status. */
static int child_ends(void (*what)(void))
{
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		what();
		_exit(0);
	}
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : 1000 + WEXITSTATUS(status);
}

/* A mapping that was never registered, truncated under it. */
static void fault_unregistered(void)
{
	int fd;
	const volatile uint8_t *a = map_file(0x44, &fd);
	if (ftruncate(fd, 0) != 0) {
		_exit(2);
	}
	(void)sum(a, PAGES * page_size());
}

/* A mapping registered, then removed from the registry (as before its unmap). */
static void fault_removed(void)
{
	int fd;
	const volatile uint8_t *a = map_file(0x44, &fd);
	uint32_t slot;
	if (vy_sigbus_region_add((const void *)a, PAGES * page_size(), &slot) != 0) {
		_exit(2);
	}
	vy_sigbus_region_remove(slot);
	if (ftruncate(fd, 0) != 0) {
		_exit(2);
	}
	(void)sum(a, PAGES * page_size());
}

/* SIGBUS sent by a process: no address to own, even with a region registered. */
static void sent_sigbus(void)
{
	int fd;
	const volatile uint8_t *a = map_file(0x44, &fd);
	uint32_t slot;
	if (vy_sigbus_region_add((const void *)a, PAGES * page_size(), &slot) != 0) {
		_exit(2);
	}
	kill(getpid(), SIGBUS);
}

/* A fault on the first page past a registered region (the mapping goes on, the region not). A
 * guard that took it as the region's would remap the region and return to the same fault forever:
 * the alarm ends that. */
static void fault_just_past(void)
{
	int fd;
	const volatile uint8_t *a = map_file(0x44, &fd);
	uint32_t slot;
	size_t region = (PAGES - 1) * page_size();
	if (vy_sigbus_region_add((const void *)a, region, &slot) != 0 || ftruncate(fd, 0) != 0) {
		_exit(2);
	}
	alarm(10);
	(void)a[region];
}

/* SIGBUS queued by this process with the region's address where a fault's address would be: a
 * sent signal (si_code <= 0) is never taken as a vanished page, whatever its fields hold. */
static void queued_sigbus_naming_a_region(void)
{
	int fd;
	const volatile uint8_t *a = map_file(0x44, &fd);
	uint32_t slot;
	if (vy_sigbus_region_add((const void *)a, PAGES * page_size(), &slot) != 0) {
		_exit(2);
	}
	siginfo_t info;
	memset(&info, 0, sizeof(info));
	info.si_signo = SIGBUS;
	info.si_code = SI_QUEUE;
	info.si_addr = (void *)a;
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), SIGBUS, &info) !=
		0) {
		_exit(3);
	}
}

Test(sigbus, a_fault_outside_every_region_still_kills)
{
	cr_expect_eq(child_ends(fault_just_past), SIGBUS,
		"a fault on the page just past a region kills with SIGBUS");
	cr_expect_eq(child_ends(queued_sigbus_naming_a_region), SIGBUS,
		"a queued SIGBUS whose fields name a region's address kills");
	cr_expect_eq(child_ends(fault_unregistered), SIGBUS,
		"a fault in an unregistered mapping kills with SIGBUS");
	cr_expect_eq(child_ends(fault_removed), SIGBUS,
		"a fault in a mapping removed from the registry kills with SIGBUS");
	cr_expect_eq(child_ends(sent_sigbus), SIGBUS, "a SIGBUS sent by a process kills");
}
