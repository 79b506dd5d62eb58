/*
 * Helpers of the libvyre tests: a client of the suite's shared daemon, programs from
 * tests/programs, assertions that print the whole error (with its Fix), and a fake daemon: a
 * socket served by the test itself, which answers hello and then sends exactly the frames a test
 * writes, so replies can come late, out of order, malformed or never.
 */
#ifndef VY_TESTS_CLIENT_LV_H
#define VY_TESTS_CLIENT_LV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>
#include <vy/vyre.h>

/* Assert rc == 0, printing the error otherwise. */
#define lv_ok(rc, err)                                                                             \
	do {                                                                                       \
		int lv_rc_ = (rc);                                                                 \
		char lv_text_[1200];                                                               \
		cr_assert_eq(lv_rc_, 0, "%s:%d: %s", __FILE__, __LINE__,                           \
			vy_error_text((err), lv_text_, sizeof(lv_text_)));                         \
	} while (0)

/* The shared daemon's socket. */
const char *lv_socket(void);
/* A client of the shared daemon named `name`; aborts the test on failure. */
struct vy_client *lv_connect(const char *name);
/* tests/programs/<name>.json. */
struct vy_program *lv_program(const char *name);
/* The path of tests/programs/<name>.json in `buf`. */
const char *lv_program_path(const char *name, char *buf, size_t size);
/* Whether the hello reply lists a device of backend `backend` ("reference", "vulkan"). */
bool lv_on_backend(struct vy_client *c, const char *backend);

/* A program whose dispatch traps: out[i] = a[i] / 0 on i32 (64 elements each). */
struct vy_program *lv_trap_program(void);
/* A program with two errors: a store to a read_only buffer and an unknown variable. */
struct vy_program *lv_invalid_program(void);

struct lv_fake {
	char dir[64];
	char path[128];
	int listen_fd;
	int conn_fd;
	pthread_t thread;
	uint8_t buf[65536];
	size_t have;
};

/* Listen on a fresh socket. */
void lv_fake_start(struct lv_fake *f);
/* Connect a client to the fake (which answers its hello); the fake keeps the connection. */
struct vy_client *lv_fake_connect(struct lv_fake *f);
/* Read the next request and return its id (and its op in `op`, up to `size` bytes). */
uint64_t lv_fake_request(struct lv_fake *f, char *op, size_t size);
/* Write a frame holding the msgpack bytes of `sb`. */
void lv_fake_send(struct lv_fake *f, const msgpack_sbuffer *sb);
/* Write raw bytes. */
void lv_fake_send_raw(struct lv_fake *f, const void *data, size_t len);
/* A success reply {id, ok: true}. */
void lv_fake_ok(struct lv_fake *f, uint64_t id);
/* Close the client's connection. */
void lv_fake_hang_up(struct lv_fake *f);
/* Close everything and remove the socket. */
void lv_fake_stop(struct lv_fake *f);

/* Run `argv` (NULL-terminated) with stdout into `out` (up to size - 1 bytes, NUL-terminated);
 * return its exit status, or -1. */
int lv_run(char *const *argv, char *out, size_t size);

#endif
