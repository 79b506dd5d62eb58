/*
 * The SIGBUS guard (sigbus.h). The handler may run on any thread at any moment, also while the
 * loop thread adds or removes a slot, so it reads the registry only through atomics: the chunk
 * pointers are published once and never change until the guard is removed; each slot is a small
 * seqlock (the sequence is odd while its owner rewrites it), and a slot caught mid-rewrite is
 * skipped, which is safe because no one reads a region while its slot is being written (a region
 * is registered before its first reader and removed after its last). Zero pages are mapped over
 * the whole region rather than the faulting page: every later read of the region gives zeros at
 * once instead of one fault per vanished page, and the region is failed as a whole anyway. The
 * handler calls only system call wrappers (mmap, sigaction, raise); mmap is not on POSIX's list
 * of async-signal-safe functions, but on Linux it is a plain system call, which is what
 * compositors rely on for the same purpose.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "err.h"
#include "sigbus.h"

struct slot {
	atomic_uint seq;        /* odd while the slot is being rewritten */
	atomic_uintptr_t start; /* the mapping's first byte */
	atomic_size_t len;      /* its length; 0 while the slot is free */
	atomic_bool faulted;
};

static struct slot *_Atomic chunks[VY_SIGBUS_MAX_CHUNKS];
static atomic_uint slots_used; /* slots ever handed out: the handler scans [0, slots_used) */
static atomic_uint_least64_t faults;
static atomic_bool active;
static struct sigaction previous;
/* Slots given back, reused first; touched only by the thread that adds and removes. */
static uint32_t *free_slots;
static size_t n_free;
static size_t cap_free;

/*
 * AddressSanitizer keeps SIGBUS for itself unless told to let the program install a handler;
 * vyred's own handler passes every fault it does not own on to the default action.
 */
const char *__asan_default_options(void);
__attribute__((visibility("default"), used)) const char *__asan_default_options(void)
{
	return "allow_user_segv_handler=1";
}

static struct slot *slot_at(uint32_t i)
{
	struct slot *chunk =
		atomic_load_explicit(&chunks[i / VY_SIGBUS_CHUNK], memory_order_acquire);
	return chunk ? &chunk[i % VY_SIGBUS_CHUNK] : NULL;
}

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	(void)uctx;
	int saved = errno;
	uintptr_t addr = (uintptr_t)si->si_addr;
	/* si_code > 0: raised by the kernel for an access at si_addr (not sent by a process). */
	uint32_t n = si->si_code > 0 ? atomic_load_explicit(&slots_used, memory_order_acquire) : 0;
	for (uint32_t i = 0; i < n; i++) {
		struct slot *sl = slot_at(i);
		if (!sl) {
			continue;
		}
		unsigned seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
		uintptr_t start = atomic_load_explicit(&sl->start, memory_order_relaxed);
		size_t len = atomic_load_explicit(&sl->len, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if ((seq & 1) || atomic_load_explicit(&sl->seq, memory_order_relaxed) != seq ||
			len == 0 || addr - start >= len) {
			continue;
		}
		/* MAP_FIXED replaces the vanished pages in one step: no window without a mapping.
		 */
		void *p = mmap((void *)start, len, PROT_READ,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p == MAP_FAILED) {
			break;
		}
		atomic_store_explicit(&sl->faulted, true, memory_order_release);
		atomic_fetch_add_explicit(&faults, 1, memory_order_relaxed);
		errno = saved;
		return;
	}
	/* Not a region's: die of it as without the guard. The signal stays blocked until the
	 * handler returns, and is then delivered with the default action. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
	errno = saved;
}

int vy_sigbus_guard_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &previous) != 0) {
		return VY_E_INTERNAL;
	}
	/* A sanitizer may answer success and keep its own handler: look. */
	struct sigaction now;
	if (sigaction(SIGBUS, NULL, &now) != 0 || !(now.sa_flags & SA_SIGINFO) ||
		now.sa_sigaction != on_sigbus) {
		return VY_E_INTERNAL;
	}
	atomic_store(&active, true);
	return 0;
}

void vy_sigbus_guard_remove(void)
{
	if (atomic_load(&active)) {
		sigaction(SIGBUS, &previous, NULL);
		atomic_store(&active, false);
	}
	for (uint32_t i = 0; i < VY_SIGBUS_MAX_CHUNKS; i++) {
		free(atomic_exchange(&chunks[i], NULL));
	}
	atomic_store(&slots_used, 0);
	free(free_slots);
	free_slots = NULL;
	n_free = cap_free = 0;
}

bool vy_sigbus_guard_active(void)
{
	return atomic_load(&active);
}

int vy_sigbus_region_add(const void *map, size_t len, uint32_t *slot)
{
	uint32_t i;
	if (n_free) {
		i = free_slots[--n_free];
	} else {
		i = atomic_load_explicit(&slots_used, memory_order_relaxed);
		if (i >= VY_SIGBUS_CHUNK * VY_SIGBUS_MAX_CHUNKS) {
			return VY_E_OUT_OF_MEMORY;
		}
		if (i % VY_SIGBUS_CHUNK == 0 && !chunks[i / VY_SIGBUS_CHUNK]) {
			struct slot *chunk = calloc(VY_SIGBUS_CHUNK, sizeof(*chunk));
			if (!chunk) {
				fprintf(stderr, "vyred: out of memory for the SIGBUS guard\n");
				abort();
			}
			atomic_store_explicit(
				&chunks[i / VY_SIGBUS_CHUNK], chunk, memory_order_release);
		}
		atomic_store_explicit(&slots_used, i + 1, memory_order_release);
	}
	struct slot *sl = slot_at(i);
	unsigned seq = atomic_load_explicit(&sl->seq, memory_order_relaxed);
	atomic_store_explicit(&sl->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&sl->start, (uintptr_t)map, memory_order_relaxed);
	atomic_store_explicit(&sl->len, len, memory_order_relaxed);
	atomic_store_explicit(&sl->faulted, false, memory_order_relaxed);
	atomic_store_explicit(&sl->seq, seq + 2, memory_order_release);
	*slot = i;
	return 0;
}

void vy_sigbus_region_remove(uint32_t slot)
{
	struct slot *sl = slot_at(slot);
	unsigned seq = atomic_load_explicit(&sl->seq, memory_order_relaxed);
	atomic_store_explicit(&sl->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&sl->len, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->seq, seq + 2, memory_order_release);
	if (n_free == cap_free) {
		size_t cap = cap_free ? 2 * cap_free : 64;
		uint32_t *grown = realloc(free_slots, cap * sizeof(*grown));
		if (!grown) {
			fprintf(stderr, "vyred: out of memory for the SIGBUS guard\n");
			abort();
		}
		free_slots = grown;
		cap_free = cap;
	}
	free_slots[n_free++] = slot;
}

bool vy_sigbus_region_faulted(uint32_t slot)
{
	struct slot *sl = slot_at(slot);
	return sl && atomic_load_explicit(&sl->faulted, memory_order_acquire);
}

uint64_t vy_sigbus_faults(void)
{
	return atomic_load_explicit(&faults, memory_order_relaxed);
}
