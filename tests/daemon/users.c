/* A client of another user in a thread of its own identity (users.h). */
#include "users.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct t_user {
	pthread_t thread;
	uid_t uid;
	gid_t gid;
	int (*fn)(void *);
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state; /* 0 starting, 1 running as the user, 2 ended, -1 could not become the user */
	int rc;
};

/*
 * The thread's own identity. glibc's setuid family changes every thread of the process; the
 * system calls themselves change the calling task only, which is the point here.
 */
static int become(const struct t_user *u)
{
	if (unshare(CLONE_FILES) != 0) {
		return errno;
	}
	if (syscall(SYS_setgroups, 0, NULL) != 0 ||
		syscall(SYS_setresgid, u->gid, u->gid, u->gid) != 0 ||
		syscall(SYS_setresuid, u->uid, u->uid, u->uid) != 0) {
		return errno;
	}
	return 0;
}

/* Close every descriptor of the thread's own table, as a process's exit would. */
static void close_own(void)
{
	if (close_range(0, ~0U, 0) == 0) {
		return;
	}
	long most = sysconf(_SC_OPEN_MAX);
	for (long fd = 0; fd < most; fd++) {
		close((int)fd);
	}
}

static void *run_user(void *arg)
{
	struct t_user *u = arg;
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	int err = become(u);
	if (err) {
		fprintf(stderr, "cannot become uid %u gid %u: %s\n", (unsigned)u->uid,
			(unsigned)u->gid, strerror(err));
	}
	pthread_mutex_lock(&u->lock);
	u->state = err ? -1 : 1;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (err) {
		return NULL;
	}
	u->rc = u->fn(u->arg);
	fflush(NULL);
	close_own();
	pthread_mutex_lock(&u->lock);
	u->state = 2;
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

struct t_user *t_user_start(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	struct t_user *u = calloc(1, sizeof(*u));
	if (!u) {
		return NULL;
	}
	*u = (struct t_user){.uid = uid, .gid = gid, .fn = fn, .arg = arg};
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	fflush(NULL);
	int err = pthread_create(&u->thread, NULL, run_user, u);
	if (err) {
		pthread_cond_destroy(&u->cond);
		pthread_mutex_destroy(&u->lock);
		free(u);
		errno = err;
		return NULL;
	}
	pthread_mutex_lock(&u->lock);
	while (u->state == 0) {
		pthread_cond_wait(&u->cond, &u->lock);
	}
	pthread_mutex_unlock(&u->lock);
	return u;
}

bool t_user_ended(struct t_user *u)
{
	pthread_mutex_lock(&u->lock);
	bool ended = u->state != 1;
	pthread_mutex_unlock(&u->lock);
	return ended;
}

int t_user_wait(struct t_user *u)
{
	pthread_join(u->thread, NULL);
	int rc = u->state < 0 ? -1 : u->rc;
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
	return rc;
}
