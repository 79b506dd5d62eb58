/*
 * libFuzzer target for a whole daemon connection: the input is the byte stream one client sends.
 * It goes through a real Unix socket into a real vyred running in this process (the daemon's own
 * sources but main.c, on the reference backend): the listener accepts it, conn.c reads and
 * frames it, ops.c answers it, compiles run on the libuv thread pool and dispatches on the
 * device's submit thread. No seam in the daemon is needed: the target drives the daemon's libuv
 * loop itself, one iteration at a time, between writes and reads on its end of the socket.
 *
 * The first input byte steers the delivery:
 *   bits 0-2  chunk size of the writes: the whole stream, or 1, 3, 16, 61, 256, 1024, 4093 bytes,
 *             with a loop iteration between chunks so frames arrive in pieces
 *   bit 3     send a hello frame first, so that mutations reach every operation
 *   bit 4     pass a sealed 4 KiB memfd with the first chunk (for shm_attach)
 *   bit 5     close the socket at once after the last byte (a disconnect in the middle of whatever
 *             was in flight) instead of half-closing it and reading every reply
 * The rest is the stream.
 *
 * After each input the target runs the loop until the daemon has dropped the connection and has
 * no work left; a daemon that keeps the connection or its work for 10 s after the peer left is a
 * finding, as is any crash or sanitizer report. The daemon runs with a small max_frame, loop cap,
 * dispatch timeout and caches, and without the disk cache, so that one input stays fast.
 *
 * Every reply is parsed as it arrives: each must be one frame (a length of 1 or more, then one
 * msgpack map) whose envelope decodes, and an error must carry its message and fix. The target
 * reads the stream it sends as the daemon does (framing, then vy_request_decode for each frame's
 * id), so it knows the reply each frame is owed: every reply's id must belong to a frame sent
 * and not yet answered (or be the one id-0 answer before a close). When the stream is whole
 * (every byte sent, ending on a frame boundary, half-closed so that every reply is read) and
 * nothing in it closes the connection (a bad length, a BAD_FRAME, a frame too large for the
 * inbound quota), every frame must have had exactly one reply.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "envelope.h"
#include "vyred.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct vy_server *srv;
static char dir[64];
static char sock_path[128];
static char conf_path[128];
static struct vy_config_args args;

static const size_t chunk_sizes[8] = {0, 1, 3, 16, 61, 256, 1024, 4093};

#define MAX_FRAME (UINT32_C(1) << 20) /* the daemon's max_frame below */
#define MAX_OWED 4096

/* The replies a stream is owed, and the replies read so far. */
struct ledger {
	uint64_t owed[MAX_OWED]; /* ids of the frames sent, each answered at most once */
	bool answered[MAX_OWED];
	size_t n_owed;
	bool closes;      /* something in the stream makes the daemon close the connection */
	bool complete;    /* the stream ends on a frame boundary */
	bool unsolicited; /* an id-0 answer that belongs to no frame came */
	size_t replies;
	/* the reply frame being read */
	uint8_t *buf;
	size_t have, cap;
};

static void finding(const char *what)
{
	fprintf(stderr, "fuzz_conn: %s\n", what);
	abort();
}

static void set(const char *key, const char *value)
{
	args.keys[args.n_sets] = key;
	args.values[args.n_sets] = value;
	args.n_sets++;
}

static void cleanup(void)
{
	if (srv) {
		vy_server_finish(srv);
		free(srv);
		srv = NULL;
	}
	unlink(conf_path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/vyred-fuzz-conn-XXXXXX");
	if (!mkdtemp(dir)) {
		finding("mkdtemp failed");
	}
	snprintf(sock_path, sizeof(sock_path), "%s/vyred.sock", dir);
	snprintf(conf_path, sizeof(conf_path), "%s/vyred.conf", dir);
	FILE *f = fopen(conf_path, "w");
	if (!f) {
		finding("cannot write the configuration");
	}
	fclose(f);
	args.file = conf_path;
	set("socket_path", sock_path);
	set("backend", "reference");
	set("disk_cache", "false");
	set("log_level", "err");
	set("max_frame", "1M");
	set("max_inflight", "16");
	set("max_loop_iterations", "4096");
	set("dispatch_timeout_ms", "200");
	set("resident_quota", "64M");
	set("max_shm_regions", "4");
	set("program_cache_entries", "64");
	set("pipeline_cache_entries", "64");
	set("write_high_water", "4M");
	set("write_low_water", "1M");
	set("fault_injection", "true");
	srv = calloc(1, sizeof(*srv));
	struct vy_err err = {0};
	if (!srv || vy_server_init(srv, &args, &err) != 0) {
		fprintf(stderr, "fuzz_conn: the daemon did not start: %s\n", err.message);
		abort();
	}
	/* Signals belong to libFuzzer, not to the daemon's drain. */
	uv_signal_stop(&srv->sig_term);
	uv_signal_stop(&srv->sig_int);
	uv_signal_stop(&srv->sig_hup);
	atexit(cleanup);
	return 0;
}

static bool daemon_idle(void)
{
	return srv->n_conns == 0 && srv->works == 0 && vy_devices_idle(srv);
}

/* One loop iteration, waiting up to `ms` for the loop or for `fd` to be readable. */
static void step(int fd, int ms)
{
	struct pollfd p[2] = {{uv_backend_fd(&srv->loop), POLLIN, 0}, {fd, POLLIN, 0}};
	int timeout = uv_backend_timeout(&srv->loop);
	if (timeout < 0 || timeout > ms) {
		timeout = ms;
	}
	poll(p, fd >= 0 ? 2 : 1, timeout);
	uv_run(&srv->loop, UV_RUN_NOWAIT);
}

/* The frames of `stream` as the daemon reads them, and the id each one's reply carries. */
static void owe(struct ledger *l, const uint8_t *stream, size_t len)
{
	size_t off = 0;
	l->complete = true;
	while (off < len && !l->closes) {
		if (len - off < 4) {
			l->complete = false;
			break;
		}
		uint32_t n = (uint32_t)stream[off] << 24 | (uint32_t)stream[off + 1] << 16 |
			     (uint32_t)stream[off + 2] << 8 | stream[off + 3];
		if (n == 0 || n > MAX_FRAME) {
			l->closes = true; /* BAD_FRAME with id 0, then the close */
			break;
		}
		if (len - off - 4 < n) {
			l->complete = false;
			break;
		}
		struct vy_request req;
		struct vy_err err;
		int rc = vy_request_decode(stream + off + 4, n, &req, &err);
		if (l->n_owed == MAX_OWED) {
			l->closes =
				true; /* too many to track: only the shape of replies is checked */
			break;
		}
		l->owed[l->n_owed++] = req.id;
		if (rc == 0) {
			vy_request_finish(&req);
		} else if (rc == VY_E_BAD_FRAME) {
			l->closes = true;
		}
		off += 4 + n;
	}
}

/* One reply frame: well formed, and owed. */
static void check_reply(struct ledger *l, const uint8_t *p, size_t n)
{
	struct vy_response resp;
	struct vy_err err;
	if (vy_response_decode(p, n, &resp, &err) != 0) {
		fprintf(stderr, "fuzz_conn: reply %zu: %s\n", l->replies, err.message);
		finding("a reply frame is not a well-formed response");
	}
	if (!resp.ok && (resp.error.message[0] == '\0' || resp.error.fix[0] == '\0')) {
		finding("an error reply has no message or no fix");
	}
	l->replies++;
	if (resp.id == 0 && !resp.ok &&
		(resp.error.code == VY_E_BAD_FRAME || resp.error.code == VY_E_QUOTA_EXCEEDED ||
			resp.error.code == VY_E_BUSY)) {
		l->closes = true; /* maybe an answer to no frame, which the close follows */
	}
	for (size_t i = 0; i < l->n_owed; i++) {
		if (!l->answered[i] && l->owed[i] == resp.id) {
			l->answered[i] = true;
			return;
		}
	}
	if (resp.id == 0 && !resp.ok && !l->unsolicited) {
		/* BAD_FRAME, QUOTA_EXCEEDED or BUSY for no frame of the peer's, then the close. */
		l->unsolicited = true;
		l->closes = true;
		return;
	}
	fprintf(stderr, "fuzz_conn: reply %zu has id %llu\n", l->replies,
		(unsigned long long)resp.id);
	finding("a reply answers no frame that was sent, or answers one twice");
}

/* Take in what the daemon sent, reply by reply; false once it closed its end. */
static bool drain(int fd, struct ledger *l)
{
	for (;;) {
		if (l->cap - l->have < 65536) {
			l->cap = l->cap ? 2 * l->cap : 262144;
			l->buf = realloc(l->buf, l->cap);
			if (!l->buf) {
				finding("out of memory for replies");
			}
		}
		ssize_t n = recv(fd, l->buf + l->have, l->cap - l->have, MSG_DONTWAIT);
		if (n <= 0) {
			return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
		}
		l->have += (size_t)n;
		size_t off = 0;
		while (l->have - off >= 4) {
			const uint8_t *h = l->buf + off;
			uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
				       (uint32_t)h[2] << 8 | h[3];
			if (len == 0) {
				finding("a reply frame of length 0");
			}
			if (l->have - off - 4 < len) {
				break;
			}
			check_reply(l, h + 4, len);
			off += 4 + (size_t)len;
		}
		memmove(l->buf, l->buf + off, l->have - off);
		l->have -= off;
	}
}

/* Write `len` bytes, the first time with `pass_fd` attached; returns bytes written (or -1). */
static ssize_t send_some(int fd, const uint8_t *p, size_t len, int *pass_fd)
{
	struct iovec iov = {(void *)p, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	if (*pass_fd >= 0) {
		memset(&control, 0, sizeof(control));
		msg.msg_control = control.buf;
		msg.msg_controllen = sizeof(control.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), pass_fd, sizeof(int));
	}
	ssize_t n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n > 0 && *pass_fd >= 0) {
		close(*pass_fd);
		*pass_fd = -1;
	}
	return n;
}

static int sealed_memfd(void)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, 4096) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
		finding("cannot make a sealed memfd");
	}
	return fd;
}

/* The frame of {"id": 1, "op": "hello", "protocol": 1}. */
static const uint8_t hello[] = {0x00, 0x00, 0x00, 0x1a, 0x83, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p',
	0xa5, 'h', 'e', 'l', 'l', 'o', 0xa8, 'p', 'r', 'o', 't', 'o', 'c', 'o', 'l', 0x01};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1) {
		return 0;
	}
	uint8_t ctl = data[0];
	size_t chunk = chunk_sizes[ctl & 7];
	bool abrupt = ctl & 32;
	uint8_t *stream = malloc(sizeof(hello) + size);
	size_t len = 0;
	if (ctl & 8) {
		memcpy(stream, hello, sizeof(hello));
		len = sizeof(hello);
	}
	memcpy(stream + len, data + 1, size - 1);
	len += size - 1;

	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		finding("cannot connect to the daemon");
	}
	int pass_fd = ctl & 16 ? sealed_memfd() : -1;
	static struct ledger ledger;
	struct ledger *l = &ledger;
	uint8_t *keep = l->buf;
	size_t keep_cap = l->cap;
	memset(l, 0, sizeof(*l));
	l->buf = keep;
	l->cap = keep_cap;
	owe(l, stream, len);
	size_t off = 0;
	bool open = true;
	uint64_t start = uv_hrtime();
	while (off < len && open) {
		size_t n = chunk && chunk < len - off ? chunk : len - off;
		ssize_t w = send_some(fd, stream + off, n, &pass_fd);
		if (w > 0) {
			off += (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			/* The daemon closed the connection (a bad frame): the rest is moot. */
			break;
		}
		step(fd, w > 0 ? 0 : 10);
		open = drain(fd, l);
		if (uv_hrtime() - start > 10000000000ull) {
			finding("the daemon stopped reading a peer for 10 s");
		}
	}
	if (pass_fd >= 0) {
		close(pass_fd);
	}
	if (abrupt) {
		close(fd);
		fd = -1;
	} else {
		shutdown(fd, SHUT_WR);
	}
	start = uv_hrtime();
	while (!daemon_idle() || (fd >= 0 && open)) {
		step(fd, 10);
		if (fd >= 0 && open) {
			open = drain(fd, l);
		}
		if (uv_hrtime() - start > 10000000000ull) {
			finding("the daemon kept a connection or its work 10 s after the peer "
				"left");
		}
	}
	if (!abrupt && off == len && l->complete && !l->closes) {
		if (l->have != 0) {
			finding("the daemon closed the connection inside a reply frame");
		}
		for (size_t i = 0; i < l->n_owed; i++) {
			if (!l->answered[i]) {
				fprintf(stderr,
					"fuzz_conn: frame %zu of %zu (id %llu) got no reply\n", i,
					l->n_owed, (unsigned long long)l->owed[i]);
				finding("a request frame got no reply");
			}
		}
	}
	/* Let the close callbacks run, so that the next input starts from a quiet loop. */
	uv_run(&srv->loop, UV_RUN_NOWAIT);
	if (fd >= 0) {
		close(fd);
	}
	free(stream);
	return 0;
}
