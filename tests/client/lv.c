/*
 * The libvyre tests' helpers: the shared daemon's client, programs, and the fake daemon (a plain
 * Unix socket the test serves by hand, with msgpack-c packing its replies).
 */
#include "lv.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#ifndef VY_TEST_SOURCE_DIR
#error "VY_TEST_SOURCE_DIR must name the source tree"
#endif

const char *lv_socket(void)
{
	const char *s = vyd_shared_socket();
	cr_assert(s, "VYRED_TEST_SOCKET is not set: run the suite through its main");
	return s;
}

struct vy_client *lv_connect(const char *name)
{
	struct vy_client *c = NULL;
	struct vy_error err;
	lv_ok(vy_client_connect(lv_socket(), name, &c, &err), &err);
	return c;
}

const char *lv_program_path(const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/tests/programs/%s.json", VY_TEST_SOURCE_DIR, name);
	return buf;
}

struct vy_program *lv_program(const char *name)
{
	char path[512];
	struct vy_program *p = NULL;
	struct vy_error err;
	lv_ok(vy_program_load_file(lv_program_path(name, path, sizeof(path)), &p, &err), &err);
	return p;
}

bool lv_on_backend(struct vy_client *c, const char *backend)
{
	const struct vy_value *devices = vy_value_get(vy_client_hello(c), "devices");
	for (size_t i = 0; i < vy_value_len(devices); i++) {
		const char *b = vy_value_get_str(vy_value_item(devices, i), "backend", "");
		if (strcmp(b, backend) == 0) {
			return true;
		}
	}
	return false;
}

struct vy_program *lv_trap_program(void)
{
	struct vy_program *p = vy_program_new("lv_trap", 64, 1, 1);
	struct vy_error err;
	lv_ok(vy_program_buffer(p, "a", 0, "read_only", "i32", 64, 0, &err), &err);
	lv_ok(vy_program_buffer(p, "out", 1, "write_only", "i32", 64, 0, &err), &err);
	struct vy_expr *q = vy_expr_binary(
		p, "div", vy_expr_load(p, "a", vy_expr_gid(p, 0)), vy_expr_i32(p, 0));
	struct vy_node *body[] = {vy_node_store(p, "out", vy_expr_gid(p, 0), q)};
	lv_ok(vy_program_entry(p, body, 1, &err), &err);
	return p;
}

struct vy_program *lv_invalid_program(void)
{
	struct vy_program *p = vy_program_new("lv_invalid", 64, 1, 1);
	struct vy_error err;
	lv_ok(vy_program_buffer(p, "a", 0, "read_only", "u32", 64, 0, &err), &err);
	struct vy_node *body[] = {
		vy_node_store(p, "a", vy_expr_gid(p, 0), vy_expr_u32(p, 1)),
		vy_node_let(p, "x", vy_expr_var(p, "nope")),
	};
	lv_ok(vy_program_entry(p, body, 2, &err), &err);
	return p;
}

/* --- the fake daemon --- */

static void write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		cr_assert(n > 0, "fake daemon: send: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

/* Read one frame into f->buf (payload at f->buf, length returned). */
static size_t read_frame(int fd, uint8_t *buf, size_t cap)
{
	uint8_t head[4];
	size_t got = 0;
	while (got < 4) {
		ssize_t n = recv(fd, head + got, 4 - got, 0);
		if (n <= 0) {
			return 0;
		}
		got += (size_t)n;
	}
	size_t len = (size_t)head[0] << 24 | (size_t)head[1] << 16 | (size_t)head[2] << 8 | head[3];
	if (len > cap) {
		return 0;
	}
	got = 0;
	while (got < len) {
		ssize_t n = recv(fd, buf + got, len - got, 0);
		if (n <= 0) {
			return 0;
		}
		got += (size_t)n;
	}
	return len;
}

void lv_fake_send(struct lv_fake *f, const msgpack_sbuffer *sb)
{
	uint8_t head[4] = {(uint8_t)(sb->size >> 24), (uint8_t)(sb->size >> 16),
		(uint8_t)(sb->size >> 8), (uint8_t)sb->size};
	write_all(f->conn_fd, head, 4);
	write_all(f->conn_fd, sb->data, sb->size);
}

void lv_fake_send_raw(struct lv_fake *f, const void *data, size_t len)
{
	write_all(f->conn_fd, data, len);
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

void lv_fake_ok(struct lv_fake *f, uint64_t id)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	pack_str(&pk, "id");
	msgpack_pack_uint64(&pk, id);
	pack_str(&pk, "ok");
	msgpack_pack_true(&pk);
	lv_fake_send(f, &sb);
	msgpack_sbuffer_destroy(&sb);
}

uint64_t lv_fake_request(struct lv_fake *f, char *op, size_t size)
{
	size_t len = read_frame(f->conn_fd, f->buf, sizeof(f->buf));
	cr_assert(len > 0, "fake daemon: no request came");
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	cr_assert_eq(
		msgpack_unpack_next(&u, (const char *)f->buf, len, NULL), MSGPACK_UNPACK_SUCCESS);
	cr_assert_eq(u.data.type, MSGPACK_OBJECT_MAP);
	uint64_t id = 0;
	if (op) {
		op[0] = '\0';
	}
	for (uint32_t i = 0; i < u.data.via.map.size; i++) {
		const msgpack_object_kv *kv = &u.data.via.map.ptr[i];
		const msgpack_object_str *k = &kv->key.via.str;
		if (k->size == 2 && memcmp(k->ptr, "id", 2) == 0) {
			id = kv->val.via.u64;
		}
		if (op && k->size == 2 && memcmp(k->ptr, "op", 2) == 0) {
			snprintf(op, size, "%.*s", (int)kv->val.via.str.size, kv->val.via.str.ptr);
		}
	}
	msgpack_unpacked_destroy(&u);
	return id;
}

static void *serve_hello(void *arg)
{
	struct lv_fake *f = arg;
	f->conn_fd = accept(f->listen_fd, NULL, NULL);
	if (f->conn_fd < 0) {
		return NULL;
	}
	uint64_t id = lv_fake_request(f, NULL, 0);
	lv_fake_ok(f, id);
	return NULL;
}

void lv_fake_start(struct lv_fake *f)
{
	memset(f, 0, sizeof(*f));
	f->conn_fd = -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/vyre-fake-XXXXXX");
	cr_assert(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/fake.sock", f->dir);
	f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%.100s", f->path);
	cr_assert_eq(bind(f->listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	cr_assert_eq(listen(f->listen_fd, 4), 0);
}

struct vy_client *lv_fake_connect(struct lv_fake *f)
{
	cr_assert_eq(pthread_create(&f->thread, NULL, serve_hello, f), 0);
	struct vy_client *c = NULL;
	struct vy_error err;
	int rc = vy_client_connect(f->path, "fake-test", &c, &err);
	pthread_join(f->thread, NULL);
	lv_ok(rc, &err);
	return c;
}

void lv_fake_hang_up(struct lv_fake *f)
{
	if (f->conn_fd >= 0) {
		close(f->conn_fd);
		f->conn_fd = -1;
	}
}

void lv_fake_stop(struct lv_fake *f)
{
	lv_fake_hang_up(f);
	if (f->listen_fd >= 0) {
		close(f->listen_fd);
		f->listen_fd = -1;
	}
	unlink(f->path);
	rmdir(f->dir);
}

int lv_run(char *const *argv, char *out, size_t size)
{
	int pipefd[2];
	if (pipe(pipefd) != 0) {
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		return -1;
	}
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	size_t have = 0;
	for (;;) {
		char chunk[1024];
		ssize_t n = read(pipefd[0], chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			break;
		}
		size_t k = (size_t)n < size - 1 - have ? (size_t)n : size - 1 - have;
		memcpy(out + have, chunk, k);
		have += k;
	}
	out[have] = '\0';
	close(pipefd[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
