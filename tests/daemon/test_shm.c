/* Shared memory regions: shm_attach with SCM_RIGHTS, checked descriptors, inputs read in place. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

static struct tc c;

static void setup(void)
{
	tc_open(&c, vyd_shared_socket(), "test_shm");
}

static void teardown(void)
{
	tc_close(&c);
}

TestSuite(shm, .init = setup, .fini = teardown, .timeout = 120);

static int attach(int fd, uint64_t size, uint64_t *region, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	uint64_t id = m.id;
	cr_assert_eq(tc_send(&c, &m, fd), 0);
	cr_assert_eq(tc_recv(&c, r, 60000), 0);
	cr_assert_eq(r->r.id, id);
	int code = tc_code(r);
	if (code == 0) {
		cr_assert(tc_u64(r, "region", region));
	}
	return code;
}

static int sealed_memfd(const void *data, size_t len, size_t size, int seals)
{
	int fd = memfd_create("vyred-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	if (len) {
		cr_assert_eq(pwrite(fd, data, len, 0), (ssize_t)len);
	}
	if (seals) {
		cr_assert_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	}
	return fd;
}

static void pack_shm_input(msgpack_packer *pk, uint64_t region, uint64_t offset, uint64_t len)
{
	msgpack_pack_map(pk, 1);
	vy_pack_cstr(pk, "shm");
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, region);
	msgpack_pack_uint64(pk, offset);
	msgpack_pack_uint64(pk, len);
}

static int dispatch_shm(const struct vy_program *p, uint64_t region, uint64_t off_b, uint64_t len,
	struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DISPATCH, 2);
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 2);
	pack_shm_input(&m.pk, region, 0, len);
	pack_shm_input(&m.pk, region, off_b, len);
	cr_assert_eq(tc_call(&c, &m, r), 0);
	return tc_code(r);
}

Test(shm, dispatch_reads_inputs_from_a_sealed_memfd)
{
	struct vy_program *p = tc_program("vector_add");
	struct t_inputs in;
	t_inputs_make(p, 0, 21, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	size_t len = in.in[0].len;
	uint8_t *bytes = malloc(2 * len);
	memcpy(bytes, in.in[0].data, len);
	memcpy(bytes + len, in.in[1].data, len);
	int fd = sealed_memfd(bytes, 2 * len, 2 * len, F_SEAL_SHRINK);
	struct tc_reply r;
	uint64_t region = 0;
	cr_assert_eq(attach(fd, 2 * len, &region, &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	close(fd);
	cr_assert_eq(dispatch_shm(p, region, len, len, &r), 0, "%s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want));
	tc_reply_free(&r);
	cr_expect_eq(dispatch_shm(p, region, len + 4, len, &r), VY_E_BAD_REQUEST,
		"a range past the region's end is refused");
	tc_reply_free(&r);

	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_SHM_DETACH, 1);
	vy_pack_cstr(&m.pk, "region");
	msgpack_pack_uint64(&m.pk, region);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_expect_eq(tc_code(&r), 0);
	tc_reply_free(&r);
	cr_expect_eq(dispatch_shm(p, region, len, len, &r), VY_E_NOT_FOUND);
	tc_reply_free(&r);
	tc_begin(&c, &m, VY_OP_SHM_DETACH, 1);
	vy_pack_cstr(&m.pk, "region");
	msgpack_pack_uint64(&m.pk, region);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_NOT_FOUND);
	tc_reply_free(&r);
	free(bytes);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	vy_program_destroy(p);
}

Test(shm, attach_checks_the_descriptor)
{
	struct tc_reply r;
	uint64_t region;
	cr_expect_eq(attach(-1, 4096, &region, &r), VY_E_BAD_REQUEST, "no descriptor");
	cr_expect(strstr(r.r.error.fix, "SCM_RIGHTS"), "fix: %s", r.r.error.fix);
	tc_reply_free(&r);

	int fd = sealed_memfd(NULL, 0, 4096, 0);
	cr_expect_eq(attach(fd, 4096, &region, &r), VY_E_BAD_REQUEST, "not sealed");
	cr_expect(strstr(r.r.error.fix, "F_SEAL_SHRINK"), "fix: %s", r.r.error.fix);
	tc_reply_free(&r);
	close(fd);

	fd = sealed_memfd(NULL, 0, 4096, F_SEAL_SHRINK);
	cr_expect_eq(attach(fd, 8192, &region, &r), VY_E_BAD_REQUEST, "smaller than announced");
	tc_reply_free(&r);
	close(fd);

	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	cr_expect_eq(attach(pipefd[0], 16, &region, &r), VY_E_BAD_REQUEST, "not a memfd");
	tc_reply_free(&r);
	close(pipefd[0]);
	close(pipefd[1]);

	cr_expect_eq(t_simple(&c, VY_OP_PING, &r), 0, "the connection stays usable");
	tc_reply_free(&r);
}
