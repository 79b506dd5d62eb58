/*
 * The test client: blocking sockets, frames read with the protocol's own frame reader, and
 * replies read with the bounded msgpack reader.
 */
#include "tclient.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "arena.h"
#include "codec.h"
#include "mp.h"

#ifndef VY_TEST_SOURCE_DIR
#error "VY_TEST_SOURCE_DIR must name the source tree"
#endif

int tc_connect(struct tc *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	c->next_id = 1;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		return -errno;
	}
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%.100s", path);
	if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		int e = errno;
		close(c->fd);
		c->fd = -1;
		return -e;
	}
	vy_frame_reader_init(&c->reader, (size_t)UINT32_MAX);
	return 0;
}

void tc_close(struct tc *c)
{
	if (c->fd >= 0) {
		close(c->fd);
	}
	c->fd = -1;
	vy_frame_reader_finish(&c->reader);
}

void tc_begin(struct tc *c, struct tc_msg *m, enum vy_op op, uint32_t nfields)
{
	msgpack_sbuffer_init(&m->sb);
	msgpack_packer_init(&m->pk, &m->sb, msgpack_sbuffer_write);
	m->id = c->next_id++;
	vy_frame_begin(&m->sb);
	vy_request_pack_head(&m->pk, m->id, op, nfields);
}

static int send_all(int fd, const uint8_t *p, size_t len, int pass_fd)
{
	while (len > 0) {
		struct iovec iov = {(void *)p, len};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
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
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return -errno;
		}
		pass_fd = -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tc_send(struct tc *c, struct tc_msg *m, int fd)
{
	vy_frame_end(&m->sb, 0);
	int rc = send_all(c->fd, (const uint8_t *)m->sb.data, m->sb.size, fd);
	msgpack_sbuffer_destroy(&m->sb);
	return rc;
}

int tc_send_raw(struct tc *c, const void *data, size_t len)
{
	return send_all(c->fd, data, len, -1);
}

int tc_recv(struct tc *c, struct tc_reply *out, int timeout_ms)
{
	memset(out, 0, sizeof(*out));
	for (;;) {
		while (c->buf_off < c->buf_len) {
			size_t used = 0;
			int rc = vy_frame_reader_feed(&c->reader, c->buf + c->buf_off,
				c->buf_len - c->buf_off, &used, NULL);
			c->buf_off += used;
			if (rc < 0) {
				return -EBADMSG;
			}
			if (rc == 1) {
				out->frame = vy_frame_reader_take(&c->reader, &out->len);
				if (vy_response_decode(out->frame, out->len, &out->r, NULL) != 0) {
					return -EBADMSG;
				}
				return 0;
			}
		}
		struct pollfd p = {c->fd, POLLIN, 0};
		int pr = poll(&p, 1, timeout_ms);
		if (pr == 0) {
			return -ETIMEDOUT;
		}
		if (pr < 0 && errno == EINTR) {
			continue;
		}
		ssize_t n = recv(c->fd, c->buf, sizeof(c->buf), 0);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return -EPIPE;
		}
		c->buf_len = (size_t)n;
		c->buf_off = 0;
	}
}

void tc_reply_free(struct tc_reply *r)
{
	free(r->frame);
	r->frame = NULL;
}

int tc_call(struct tc *c, struct tc_msg *m, struct tc_reply *out)
{
	uint64_t id = m->id;
	int rc = tc_send(c, m, -1);
	if (rc == 0) {
		rc = tc_recv(c, out, 120000);
	}
	if (rc == 0 && out->r.id != id) {
		cr_log_error("reply id %llu for request %llu", (unsigned long long)out->r.id,
			(unsigned long long)id);
		return -EPROTO;
	}
	return rc;
}

bool tc_wait_eof(struct tc *c, int timeout_ms)
{
	for (;;) {
		struct tc_reply r;
		int rc = tc_recv(c, &r, timeout_ms);
		tc_reply_free(&r);
		if (rc == -EPIPE) {
			return true;
		}
		if (rc != 0) {
			return false;
		}
	}
}

/* Position `rd` on the value of `key` in the map at the reader. */
static bool map_find(struct vy_mp_reader *rd, const char *key, size_t klen)
{
	struct vy_mp_obj o;
	if (vy_mp_read(rd, &o) != VY_MP_OK || o.type != VY_MP_MAP) {
		return false;
	}
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj k;
		if (vy_mp_read(rd, &k) != VY_MP_OK) {
			return false;
		}
		if (k.type == VY_MP_STR && k.len == klen && memcmp(k.data, key, klen) == 0) {
			return true;
		}
		if (vy_mp_skip(rd) != VY_MP_OK) {
			return false;
		}
	}
	return false;
}

bool tc_field(const struct tc_reply *r, const char *path, struct vy_mp_reader *rd)
{
	if (!r->frame) {
		return false;
	}
	vy_mp_reader_init(rd, r->frame, r->len);
	const char *p = path;
	while (*p) {
		size_t n = strcspn(p, ".");
		if (!map_find(rd, p, n)) {
			return false;
		}
		p += n;
		p += *p == '.';
	}
	return true;
}

bool tc_u64(const struct tc_reply *r, const char *path, uint64_t *out)
{
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	if (!tc_field(r, path, &rd) || vy_mp_read(&rd, &o) != VY_MP_OK) {
		return false;
	}
	if (o.type == VY_MP_UINT) {
		*out = o.u;
		return true;
	}
	if (o.type == VY_MP_BOOL) {
		*out = o.b;
		return true;
	}
	return false;
}

bool tc_str(const struct tc_reply *r, const char *path, char *buf, size_t size)
{
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	if (!tc_field(r, path, &rd) || vy_mp_read(&rd, &o) != VY_MP_OK || o.type != VY_MP_STR) {
		return false;
	}
	snprintf(buf, size, "%.*s", (int)o.len, (const char *)o.data);
	return true;
}

bool tc_is_nil(const struct tc_reply *r, const char *path)
{
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	return tc_field(r, path, &rd) && vy_mp_read(&rd, &o) == VY_MP_OK && o.type == VY_MP_NIL;
}

int tc_outputs(const struct tc_reply *r, const uint8_t **data, size_t *lens, bool *nil, size_t cap)
{
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	if (!tc_field(r, "outputs", &rd) || vy_mp_read(&rd, &o) != VY_MP_OK ||
		o.type != VY_MP_ARRAY || o.len > cap) {
		return -1;
	}
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj e;
		if (vy_mp_read(&rd, &e) != VY_MP_OK) {
			return -1;
		}
		nil[i] = e.type == VY_MP_NIL;
		data[i] = e.type == VY_MP_BIN ? e.data : NULL;
		lens[i] = e.type == VY_MP_BIN ? e.len : 0;
	}
	return (int)o.len;
}

bool tc_outputs_equal(const struct tc_reply *r, const struct vy_outputs *want)
{
	const uint8_t *data[VY_IR_MAX_BUFFERS];
	size_t lens[VY_IR_MAX_BUFFERS];
	bool nil[VY_IR_MAX_BUFFERS];
	int n = tc_outputs(r, data, lens, nil, VY_IR_MAX_BUFFERS);
	if (n != (int)want->len) {
		return false;
	}
	for (size_t i = 0; i < want->len; i++) {
		if (lens[i] != want->items[i].len ||
			(lens[i] && memcmp(data[i], want->items[i].data, lens[i]) != 0)) {
			return false;
		}
	}
	return true;
}

int tc_array_len(const struct tc_reply *r, const char *path)
{
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	if (!tc_field(r, path, &rd) || vy_mp_read(&rd, &o) != VY_MP_OK || o.type != VY_MP_ARRAY) {
		return -1;
	}
	return (int)o.len;
}

bool tc_row_u64(const struct tc_reply *r, const char *path, const char *match, uint64_t value,
	const char *key, uint64_t *out)
{
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	if (!tc_field(r, path, &rd) || vy_mp_read(&rd, &o) != VY_MP_OK || o.type != VY_MP_ARRAY) {
		return false;
	}
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_reader row = rd;
		struct vy_mp_reader f = rd;
		struct vy_mp_obj v;
		bool hit = map_find(&f, match, strlen(match)) && vy_mp_read(&f, &v) == VY_MP_OK &&
			   v.type == VY_MP_UINT && v.u == value;
		if (hit) {
			f = row;
			if (map_find(&f, key, strlen(key)) && vy_mp_read(&f, &v) == VY_MP_OK &&
				(v.type == VY_MP_UINT || v.type == VY_MP_BOOL)) {
				*out = v.type == VY_MP_UINT ? v.u : v.b;
				return true;
			}
			return false;
		}
		if (vy_mp_skip(&rd) != VY_MP_OK) {
			return false;
		}
	}
	return false;
}

int tc_code(const struct tc_reply *r)
{
	return r->r.ok ? 0 : r->r.error.code;
}

int tc_hello(struct tc *c, const char *name)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_HELLO, 2);
	vy_pack_cstr(&m.pk, "protocol");
	msgpack_pack_uint32(&m.pk, 1);
	vy_pack_cstr(&m.pk, "client");
	vy_pack_cstr(&m.pk, name);
	struct tc_reply r;
	int rc = tc_call(c, &m, &r);
	if (rc == 0) {
		rc = tc_code(&r);
	}
	tc_reply_free(&r);
	return rc;
}

void tc_open(struct tc *c, const char *path, const char *name)
{
	int rc = tc_connect(c, path);
	cr_assert_eq(rc, 0, "connect %s: %s", path, strerror(-rc));
	rc = tc_hello(c, name);
	cr_assert_eq(rc, 0, "hello failed: %d", rc);
}

struct vy_program *tc_program(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/programs/%s.json", VY_TEST_SOURCE_DIR, name);
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	size_t cap = (size_t)1 << 20;
	char *text = malloc(cap);
	cr_assert(text);
	size_t n = fread(text, 1, cap, f);
	fclose(f);
	struct vy_program *p = NULL;
	struct vy_err err = {0};
	int rc = vy_program_from_json(text, n, &p, &err);
	free(text);
	cr_assert_eq(rc, 0, "%s: %s", path, err.message);
	return p;
}

struct vy_program *tc_program_renamed(const char *file, const char *name)
{
	struct vy_program *p = tc_program(file);
	p->name = vy_arena_strdup(p->arena, name);
	return p;
}
