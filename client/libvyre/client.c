/*
 * The connection of a libvyre client: connect and hello, framing over a non-blocking Unix socket,
 * the calls in flight and their completions, and reconnecting.
 *
 * Every request becomes a call in `calls` before its bytes leave. Replies are matched by id; a
 * completed call with a callback moves to `ready` and its callback runs later, from
 * vy_client_process or vy_client_wait, never in the middle of a send; a call without one stays
 * in `calls` until vy_client_wait takes it. Sending waits for POLLOUT and POLLIN together and
 * reads replies while the socket is full, because the daemon stops reading from a client that
 * does not read its replies: blocking on the write alone could deadlock both sides.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Replies can carry a whole download (up to 4 GiB); requests are held to the daemon's limit. */
#define MAX_REPLY ((size_t)UINT32_MAX)
#define RECV_CHUNK ((size_t)256 * 1024)
/* Bins from this size on are sent from the caller's memory instead of being copied. */
#define REF_SIZE 4096

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* Poll `pfd` without sleeping for up to the client's busy-poll time, then with `wait` ms left
 * (-1: forever); poll()'s result. */
static int poll_busy(const struct vy_client *c, struct pollfd *pfd, int wait)
{
	if (c->busy_poll_ns && wait != 0) {
		uint64_t start = now_ns();
		do {
			int pr = poll(pfd, 1, 0);
			if (pr != 0) {
				return pr;
			}
		} while (now_ns() - start < c->busy_poll_ns);
		if (wait > 0) {
			uint64_t spent_ms = (now_ns() - start) / 1000000;
			wait = spent_ms >= (uint64_t)wait ? 0 : wait - (int)spent_ms;
		}
	}
	return poll(pfd, 1, wait);
}

/* Milliseconds left before `deadline` (-1: none), for poll. */
static int remaining(long long deadline)
{
	if (deadline < 0) {
		return -1;
	}
	long long left = deadline - now_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* --- call lists --- */

static void list_push(struct vy__call_list *l, struct vy__call *call)
{
	call->prev = l->tail;
	call->next = NULL;
	if (l->tail) {
		l->tail->next = call;
	} else {
		l->head = call;
	}
	l->tail = call;
	l->len++;
}

static void list_unlink(struct vy__call_list *l, struct vy__call *call)
{
	if (call->prev) {
		call->prev->next = call->next;
	} else {
		l->head = call->next;
	}
	if (call->next) {
		call->next->prev = call->prev;
	} else {
		l->tail = call->prev;
	}
	call->prev = call->next = NULL;
	l->len--;
}

static struct vy__call *list_find(const struct vy__call_list *l, uint64_t id)
{
	for (struct vy__call *call = l->head; call; call = call->next) {
		if (call->id == id) {
			return call;
		}
	}
	return NULL;
}

static void call_free(struct vy__call *call)
{
	vy_reply_destroy(call->reply);
	free(call->error);
	free(call);
}

/* Record the outcome of a call and route it: to `ready` (callback), dropped (abandoned) or kept. */
static void complete(struct vy_client *c, struct vy__call *call, struct vy_reply *reply,
	const struct vy_error *error)
{
	assert(call->state == VY__CALL_SENT);
	call->state = VY__CALL_DONE;
	call->reply = reply;
	if (error) {
		call->error = malloc(sizeof(*call->error));
		if (!call->error) {
			fprintf(stderr, "libvyre: out of memory\n");
			abort();
		}
		*call->error = *error;
	}
	if (call->abandoned) {
		list_unlink(&c->calls, call);
		call_free(call);
	} else if (call->done) {
		list_unlink(&c->calls, call);
		list_push(&c->ready, call);
	}
}

/* Run the callbacks of every completed call; callbacks may start new requests. */
static void deliver(struct vy_client *c)
{
	assert(!c->in_callback);
	struct vy__call *call;
	while ((call = c->ready.head) != NULL) {
		list_unlink(&c->ready, call);
		struct vy_reply *reply = call->reply;
		call->reply = NULL;
		c->in_callback = true;
		call->done(c, call->id, reply, call->error, call->user);
		c->in_callback = false;
		call_free(call);
	}
}

/* --- the connection --- */

/* Close the socket and fail every call still waiting for a reply. */
static void drop_connection(struct vy_client *c, const char *why)
{
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	vy_frame_reader_finish(&c->reader);
	vy_frame_reader_init(&c->reader, MAX_REPLY);
	struct vy_error err;
	vy__error_set(&err, VY_ERROR_DISCONNECTED, NULL,
		"call vy_client_reconnect once the daemon is back, then send the request again",
		"the connection to vyred at %s was lost: %s%s%s", c->path, why,
		c->last_words[0] ? "; the daemon's last words: " : "", c->last_words);
	struct vy__call *call = c->calls.head;
	while (call) {
		struct vy__call *next = call->next;
		if (call->state == VY__CALL_SENT) {
			complete(c, call, NULL, &err);
		}
		call = next;
	}
}

static int disconnected(const struct vy_client *c, struct vy_error *err)
{
	return vy__error_set(err, VY_ERROR_DISCONNECTED, NULL,
		"call vy_client_reconnect once the daemon is back",
		"the client has no connection to vyred at %s", c->path);
}

/* One reply frame: match it to its call. Returns 1 when a call completed, 0 when the frame
 * answered nothing pending, or VY_ERROR_BAD_REPLY (the connection is then dropped). */
static int handle_frame(struct vy_client *c, uint8_t *frame, size_t len)
{
	struct vy_reply *rep = vy__reply_decode(frame, len);
	if (!rep) {
		drop_connection(c, "a reply did not decode as protocol 1");
		return VY_ERROR_BAD_REPLY;
	}
	struct vy__call *call = list_find(&c->calls, rep->id);
	if (!call || call->state != VY__CALL_SENT) {
		/* The daemon answers a frame it could not read with id 0, then closes. */
		if (!rep->ok) {
			const struct vy_value *e = vy_reply_get(rep, "error");
			snprintf(c->last_words, sizeof(c->last_words), "%s: %s",
				vy_value_get_str(e, "code", "?"),
				vy_value_get_str(e, "message", ""));
		}
		vy_reply_destroy(rep);
		return 0;
	}
	if (rep->ok) {
		complete(c, call, rep, NULL);
		return 1;
	}
	struct vy_error err;
	vy__error_from_value(&err, vy_reply_get(rep, "error"));
	vy_reply_destroy(rep);
	complete(c, call, NULL, &err);
	return 1;
}

/*
 * Read what the socket holds, waiting up to `timeout_ms` (-1: forever, 0: not at all) for the
 * first bytes. Returns the calls completed (>= 0), VY_ERROR_NO_REPLY when nothing came in time,
 * VY_ERROR_DISCONNECTED (the connection is dropped and its calls failed) or VY_ERROR_BAD_REPLY.
 */
static int read_some(struct vy_client *c, int timeout_ms)
{
	if (c->fd < 0) {
		return VY_ERROR_DISCONNECTED;
	}
	uint8_t *buf = malloc(RECV_CHUNK);
	if (!buf) {
		fprintf(stderr, "libvyre: out of memory\n");
		abort();
	}
	int completed = 0;
	bool got_bytes = false;
	int wait = timeout_ms;
	for (;;) {
		struct pollfd pfd = {c->fd, POLLIN, 0};
		int pr = poll_busy(c, &pfd, wait);
		if (pr < 0 && errno == EINTR) {
			continue;
		}
		if (pr <= 0) {
			break;
		}
		ssize_t n = recv(c->fd, buf, RECV_CHUNK, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
			wait = 0;
			continue;
		}
		if (n <= 0) {
			char why[96];
			snprintf(why, sizeof(why), "%s",
				n == 0 ? "the daemon closed it" : strerrorname_np(errno));
			drop_connection(c, why);
			free(buf);
			return VY_ERROR_DISCONNECTED;
		}
		got_bytes = true;
		size_t off = 0;
		while (off < (size_t)n) {
			size_t used = 0;
			int rc = vy_frame_reader_feed(
				&c->reader, buf + off, (size_t)n - off, &used, NULL);
			off += used;
			if (rc < 0) {
				drop_connection(c, "a reply frame had a bad length");
				free(buf);
				return VY_ERROR_BAD_REPLY;
			}
			if (rc == 1) {
				size_t len;
				uint8_t *frame = vy_frame_reader_take(&c->reader, &len);
				int hr = handle_frame(c, frame, len);
				if (hr < 0) {
					free(buf);
					return hr;
				}
				completed += hr;
			}
		}
		/* Keep reading what is already there, but wait no longer. */
		wait = 0;
	}
	free(buf);
	return got_bytes || timeout_ms == 0 ? completed : VY_ERROR_NO_REPLY;
}

/* Write every byte of `iov` (modified as it goes), passing `pass_fd` with the first byte. */
static int send_iov(
	struct vy_client *c, struct iovec *iov, int iovcnt, int pass_fd, struct vy_error *err)
{
	while (iovcnt > 0) {
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} control;
		if (pass_fd >= 0) {
			memset(&control, 0, sizeof(control));
			msg.msg_control = control.buf;
			msg.msg_controllen = sizeof(control.buf);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
		}
		ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {c->fd, POLLIN | POLLOUT, 0};
			if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
				/* Part of the frame may be out: the stream cannot go on. */
				drop_connection(c, strerrorname_np(errno));
				return disconnected(c, err);
			}
			if (pfd.revents & POLLIN) {
				int rc = read_some(c, 0);
				if (rc == VY_ERROR_DISCONNECTED || rc == VY_ERROR_BAD_REPLY) {
					return disconnected(c, err);
				}
			}
			continue;
		}
		if (n < 0) {
			drop_connection(c, strerrorname_np(errno));
			return disconnected(c, err);
		}
		pass_fd = -1;
		size_t left = (size_t)n;
		while (iovcnt > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return 0;
}

void vy__msg_begin(struct vy_client *c, struct vy__msg *m, enum vy_op op, uint32_t nfields)
{
	if (!msgpack_vrefbuffer_init(&m->vb, REF_SIZE, 65536)) {
		fprintf(stderr, "libvyre: out of memory\n");
		abort();
	}
	msgpack_packer_init(&m->pk, &m->vb, msgpack_vrefbuffer_write);
	m->op = op;
	vy_request_pack_head(&m->pk, c->next_id, op, nfields);
}

void vy__msg_free(struct vy__msg *m)
{
	msgpack_vrefbuffer_destroy(&m->vb);
}

int vy__msg_start(struct vy_client *c, struct vy__msg *m, int pass_fd, vy_done_fn *done, void *user,
	uint64_t *id, struct vy_error *err)
{
	if (c->fd < 0) {
		vy__msg_free(m);
		return disconnected(c, err);
	}
	const msgpack_iovec *vec = msgpack_vrefbuffer_vec(&m->vb);
	size_t veclen = msgpack_vrefbuffer_veclen(&m->vb);
	size_t total = 0;
	for (size_t i = 0; i < veclen; i++) {
		total += vec[i].iov_len;
	}
	if (total > c->max_frame) {
		vy__msg_free(m);
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, NULL,
			"send large inputs through a shared-memory region or upload them in parts",
			"the %s request takes %zu bytes, above the daemon's max_frame of %zu",
			vy_op_name(m->op), total, c->max_frame);
	}
	struct iovec *iov = calloc(veclen + 1, sizeof(*iov));
	struct vy__call *call = calloc(1, sizeof(*call));
	if (!iov || !call) {
		fprintf(stderr, "libvyre: out of memory\n");
		abort();
	}
	uint8_t head[VY_FRAME_HEADER] = {(uint8_t)(total >> 24), (uint8_t)(total >> 16),
		(uint8_t)(total >> 8), (uint8_t)total};
	iov[0] = (struct iovec){head, sizeof(head)};
	for (size_t i = 0; i < veclen; i++) {
		iov[i + 1] = (struct iovec){vec[i].iov_base, vec[i].iov_len};
	}
	call->id = c->next_id++;
	call->done = done;
	call->user = user;
	list_push(&c->calls, call);
	int rc = 0;
	/* sendmsg takes at most IOV_MAX pieces at a time. */
	for (size_t at = 0; rc == 0 && at < veclen + 1; at += IOV_MAX) {
		size_t n = veclen + 1 - at < IOV_MAX ? veclen + 1 - at : IOV_MAX;
		rc = send_iov(c, iov + at, (int)n, at == 0 ? pass_fd : -1, err);
	}
	free(iov);
	vy__msg_free(m);
	if (rc != 0) {
		/* No completion will come for a request that did not leave whole. */
		if (call->state == VY__CALL_SENT || !call->done) {
			list_unlink(&c->calls, call);
		} else {
			list_unlink(&c->ready, call);
		}
		call_free(call);
		return rc;
	}
	if (id) {
		*id = call->id;
	}
	return 0;
}

/* Take the outcome of a completed call without a callback and free it. */
static int take(
	struct vy_client *c, struct vy__call *call, struct vy_reply **out, struct vy_error *err)
{
	list_unlink(&c->calls, call);
	int rc = call->error ? call->error->code : 0;
	vy__error_copy(err, call->error);
	if (out) {
		*out = call->reply;
		call->reply = NULL;
	}
	call_free(call);
	return rc;
}

int vy_client_wait(struct vy_client *c, uint64_t id, int timeout_ms, struct vy_reply **out,
	struct vy_error *err)
{
	assert(!c->in_callback);
	if (out) {
		*out = NULL;
	}
	struct vy__call *call = list_find(&c->calls, id);
	if (!call && list_find(&c->ready, id)) {
		deliver(c);
		return 0;
	}
	if (!call) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, NULL,
			"wait for an id that a *_start call returned and that was not taken yet",
			"no request %llu is pending on this client", (unsigned long long)id);
	}
	bool has_callback = call->done != NULL;
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	for (;;) {
		if (!has_callback && call->state == VY__CALL_DONE) {
			deliver(c);
			return take(c, call, out, err);
		}
		if (has_callback && call->state == VY__CALL_DONE) {
			deliver(c);
			return 0;
		}
		deliver(c);
		int rc = read_some(c, remaining(deadline));
		if (rc == VY_ERROR_NO_REPLY) {
			return vy__error_set(err, VY_ERROR_NO_REPLY, NULL,
				"wait longer, or check the daemon's load with vyrectl status",
				"no reply to request %llu within %d ms", (unsigned long long)id,
				timeout_ms);
		}
		/* On a broken connection the call has just been completed with the error. */
		if (rc < 0 && call->state != VY__CALL_DONE) {
			return disconnected(c, err);
		}
	}
}

int vy__msg_call(struct vy_client *c, struct vy__msg *m, int pass_fd, struct vy_reply **out,
	struct vy_error *err)
{
	assert(!c->in_callback);
	if (out) {
		*out = NULL;
	}
	uint64_t id;
	int rc = vy__msg_start(c, m, pass_fd, NULL, NULL, &id, err);
	if (rc != 0) {
		return rc;
	}
	rc = vy_client_wait(c, id, c->timeout_ms, out, err);
	if (rc == VY_ERROR_NO_REPLY) {
		struct vy__call *call = list_find(&c->calls, id);
		if (call) {
			call->abandoned = true;
		}
	}
	return rc;
}

int vy_client_process(struct vy_client *c, struct vy_error *err)
{
	assert(!c->in_callback);
	int rc = c->fd >= 0 ? read_some(c, 0) : 0;
	deliver(c);
	if (rc == VY_ERROR_DISCONNECTED || rc == VY_ERROR_BAD_REPLY) {
		return vy__error_set(err, rc, NULL,
			"call vy_client_reconnect once the daemon is back, then send the requests "
			"again",
			"the connection to vyred at %s was lost; its pending requests failed",
			c->path);
	}
	return rc;
}

int vy_client_fd(const struct vy_client *c)
{
	return c->fd;
}

size_t vy_client_pending(const struct vy_client *c)
{
	return c->calls.len + c->ready.len;
}

bool vy_client_connected(const struct vy_client *c)
{
	return c->fd >= 0;
}

const char *vy_client_path(const struct vy_client *c)
{
	return c->path;
}

const struct vy_value *vy_client_hello(const struct vy_client *c)
{
	return vy_reply_value(c->hello);
}

void vy_client_set_timeout(struct vy_client *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
}

void vy_client_set_busy_poll(struct vy_client *c, uint32_t us)
{
	us = us > VY_BUSY_POLL_MAX_US ? VY_BUSY_POLL_MAX_US : us;
	c->busy_poll_ns = (uint64_t)us * 1000;
}

/* --- connecting --- */

static int open_socket(struct vy_client *c, struct vy_error *err)
{
	const char *fix = "start vyred (systemctl start vyred), or point $VYRED_SOCKET or the "
			  "path argument at its socket";
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return vy__error_set(err, VY_ERROR_SYSTEM, NULL,
			"check the process's descriptor limits", "socket: %s (%s)", strerror(errno),
			strerrorname_np(errno));
	}
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	memcpy(addr.sun_path, c->path, strlen(c->path) + 1);
	int rc;
	do {
		rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	} while (rc != 0 && errno == EINTR);
	if (rc != 0) {
		int e = errno;
		close(fd);
		if (e == EACCES || e == EPERM) {
			fix = "run as a member of the socket's group (vyred), or ask the operator "
			      "to "
			      "admit your user";
		}
		return vy__error_set(err, VY_ERROR_CONNECT_FAILED, NULL, fix,
			"cannot connect to vyred at %s: %s (%s)", c->path, strerror(e),
			strerrorname_np(e));
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
		int e = errno;
		close(fd);
		return vy__error_set(err, VY_ERROR_SYSTEM, NULL, "report this as a libvyre bug",
			"fcntl O_NONBLOCK: %s", strerrorname_np(e));
	}
	c->fd = fd;
	return 0;
}

static int hello(struct vy_client *c, struct vy_error *err)
{
	struct vy__msg m;
	vy__msg_begin(c, &m, VY_OP_HELLO, 2);
	vy_pack_cstr(&m.pk, "protocol");
	msgpack_pack_uint32(&m.pk, VY_CLIENT_PROTOCOL);
	vy_pack_cstr(&m.pk, "client");
	vy_pack_cstr(&m.pk, c->name);
	struct vy_reply *rep = NULL;
	int rc = vy__msg_call(c, &m, -1, &rep, err);
	if (rc != 0) {
		return rc;
	}
	vy_reply_destroy(c->hello);
	c->hello = rep;
	uint64_t max = vy_value_get_u64(vy_reply_get(rep, "limits"), "max_frame", 0);
	c->max_frame = max >= 64 && max <= SIZE_MAX ? (size_t)max : VY_FRAME_DEFAULT_MAX;
	return 0;
}

/* Open the socket and say hello; the connection is closed again on failure. */
static int establish(struct vy_client *c, struct vy_error *err)
{
	c->last_words[0] = '\0';
	c->max_frame = VY_FRAME_DEFAULT_MAX;
	int rc = open_socket(c, err);
	if (rc == 0) {
		rc = hello(c, err);
	}
	if (rc != 0 && c->fd >= 0) {
		drop_connection(c, "hello failed");
	}
	return rc;
}

int vy_client_connect(
	const char *path, const char *name, struct vy_client **out, struct vy_error *err)
{
	*out = NULL;
	if (!path || !*path) {
		path = getenv("VYRED_SOCKET");
	}
	if (!path || !*path) {
		path = VY_DEFAULT_SOCKET;
	}
	struct vy_client *c = calloc(1, sizeof(*c));
	if (!c) {
		return vy__error_set(err, VY_ERROR_OUT_OF_MEMORY, NULL, "free memory and try again",
			"no memory for a client");
	}
	if (strlen(path) >= sizeof(c->path)) {
		free(c);
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, NULL,
			"use a socket path shorter than 108 bytes",
			"socket path %.64s... is too long for a Unix socket", path);
	}
	snprintf(c->path, sizeof(c->path), "%s", path);
	snprintf(c->name, sizeof(c->name), "%s",
		name && *name ? name : program_invocation_short_name);
	c->fd = -1;
	c->next_id = 1;
	c->timeout_ms = -1;
	const char *busy = getenv("VYRE_BUSY_POLL_US");
	if (busy && *busy) {
		vy_client_set_busy_poll(c, (uint32_t)strtoul(busy, NULL, 10));
	}
	vy_frame_reader_init(&c->reader, MAX_REPLY);
	int rc = establish(c, err);
	if (rc != 0) {
		vy_client_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

int vy_client_reconnect(struct vy_client *c, struct vy_error *err)
{
	assert(!c->in_callback);
	if (c->fd >= 0) {
		drop_connection(c, "closed by vy_client_reconnect");
	}
	deliver(c);
	int rc = establish(c, err);
	if (rc == 0) {
		rc = vy__regions_reattach(c, err);
	}
	if (rc != 0 && c->fd >= 0) {
		drop_connection(c, "reconnect failed");
		deliver(c);
	}
	return rc;
}

void vy_client_close(struct vy_client *c)
{
	if (!c) {
		return;
	}
	assert(!c->in_callback);
	if (c->fd >= 0) {
		close(c->fd);
	}
	vy__regions_release(c);
	struct vy__call_list *lists[] = {&c->calls, &c->ready};
	for (size_t i = 0; i < 2; i++) {
		while (lists[i]->head) {
			struct vy__call *call = lists[i]->head;
			list_unlink(lists[i], call);
			call_free(call);
		}
	}
	vy_reply_destroy(c->hello);
	vy_frame_reader_finish(&c->reader);
	free(c);
}
