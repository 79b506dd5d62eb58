/*
 * The guard around the daemon's reads of client memory (shared memory regions). The client owns
 * the file behind a region; if its pages vanish while the daemon reads them, the read raises
 * SIGBUS, which would kill the daemon and every client with it. As compositors do for client
 * wl_shm buffers, a process-wide SIGBUS handler looks the faulting address up among the
 * registered regions, maps anonymous zero pages over that whole region (the read resumes and
 * reads zeros) and marks the region faulted, so that the request that read it fails alone. A
 * fault outside every region is a real bug: the handler restores the default action and the
 * signal kills the process as it would have without the guard.
 *
 * The registry is a table of slots published with atomics, grown in fixed chunks that stay until
 * vy_sigbus_guard_remove, so the handler takes no lock and allocates nothing.
 *
 * Thread-safety: install and remove once, while no other thread reads a region. Slots are added
 * and removed by one thread at a time (the loop thread in the daemon); vy_sigbus_region_faulted
 * may be called from any thread; the handler runs on whichever thread faulted.
 */
#ifndef VY_DAEMON_SIGBUS_H
#define VY_DAEMON_SIGBUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Slots the registry may hold at once (chunks of VY_SIGBUS_CHUNK, allocated as needed). */
#define VY_SIGBUS_CHUNK 1024u
#define VY_SIGBUS_MAX_CHUNKS 1024u

/*
 * Install the SIGBUS handler (process-wide). Returns 0, or a negative VY_E_INTERNAL when the
 * handler could not be installed (a sanitizer that keeps SIGBUS for itself, for one); the
 * daemon then runs unguarded and says so.
 */
int vy_sigbus_guard_install(void);
/* Restore the action found at install and free the registry; every region must be removed. */
void vy_sigbus_guard_remove(void);
/* Whether the handler is installed. */
bool vy_sigbus_guard_active(void);

/*
 * Register the mapping [map, map + len) (len a whole number of pages, as mmap made it) and store
 * its slot in *slot. Returns 0, or VY_E_OUT_OF_MEMORY when every slot is taken. The mapping must
 * stay mapped until vy_sigbus_region_remove.
 */
int vy_sigbus_region_add(const void *map, size_t len, uint32_t *slot);
/* Unregister a slot, before its mapping is unmapped; its faulted flag goes with it. */
void vy_sigbus_region_remove(uint32_t slot);
/* Whether a read of the slot's region faulted (its pages are zeros from then on). */
bool vy_sigbus_region_faulted(uint32_t slot);
/* Faults the handler absorbed since install. */
uint64_t vy_sigbus_faults(void);

#endif
