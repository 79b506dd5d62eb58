/*
 * A client of another user, for the cases that check what one user can do to another.
 *
 * The client runs in a thread of the test process that holds that user's credentials and a
 * descriptor table of its own: Linux keeps both per task. vyred knows its peers by SO_PEERCRED,
 * which records the connecting task's credentials, so the daemon sees that user; the thread's
 * descriptors close when it ends, as a process's would at exit. Everything else is shared with
 * the test, as between threads: memory (a result written to `arg` is the test's to read) and the
 * process's limits and signal dispositions. SIGPIPE is blocked in the thread, so a write to a
 * closed peer fails with EPIPE there.
 *
 * A forked child would copy one thread into a process where other threads (Criterion's, the
 * harness's) may hold the allocator's lock at the fork: the child's first malloc would then
 * wait for ever.
 *
 * Needs root (CAP_SETUID and CAP_SETGID) to take the user's identity.
 */
#ifndef VY_TESTS_DAEMON_USERS_H
#define VY_TESTS_DAEMON_USERS_H

#include <stdbool.h>
#include <sys/types.h>

struct t_user;

/* Start `fn(arg)` as `uid`/`gid` (no supplementary groups) and return once it runs as that
 * user: descriptors the test closes after this call stay open in the user's table. NULL when
 * no thread could start (errno set). */
struct t_user *t_user_start(uid_t uid, gid_t gid, int (*fn)(void *), void *arg);

/* Whether `fn` has returned and the user's descriptors are closed (t_user_wait will not wait). */
bool t_user_ended(struct t_user *u);

/* Wait for `u` to end and free it: what `fn` returned, or -1 when the thread could not take
 * the user's identity (it then printed why). */
int t_user_wait(struct t_user *u);

#endif
