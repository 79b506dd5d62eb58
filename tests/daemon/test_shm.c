/*
 * Shared memory regions: shm_attach with SCM_RIGHTS, checked descriptors, inputs read in place,
 * and on Vulkan devices copied by the device from the region's host memory import.
 */
#include <criterion/criterion.h>
#include <errno.h>
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

/* Dispatch `p` (two inputs of `len` bytes at 0 and off_b in the region) on `backend` (NULL:
 * any device). */
static int dispatch_shm_on(const struct vy_program *p, uint64_t region, uint64_t off_b,
	uint64_t len, const char *backend, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DISPATCH, backend ? 3 : 2);
	if (backend) {
		vy_pack_cstr(&m.pk, "config");
		msgpack_pack_map(&m.pk, 1);
		vy_pack_cstr(&m.pk, "backend");
		vy_pack_cstr(&m.pk, backend);
	}
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 2);
	pack_shm_input(&m.pk, region, 0, len);
	pack_shm_input(&m.pk, region, off_b, len);
	cr_assert_eq(tc_call(&c, &m, r), 0);
	return tc_code(r);
}

static int dispatch_shm(const struct vy_program *p, uint64_t region, uint64_t off_b, uint64_t len,
	struct tc_reply *r)
{
	return dispatch_shm_on(p, region, off_b, len, NULL, r);
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

Test(shm, attach_refuses_a_memfd_on_hugetlbfs)
{
	/* Its pages can be taken back under the daemon's mapping (a punched hole refaults only
	 * while the huge page pool has a page): refused even sealed and with no page yet. */
	size_t size = 2u << 20;
	int fd = memfd_create("vyred-test", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
	if (fd < 0) {
		cr_skip_test("no hugetlbfs memfd here: %s", strerror(errno));
	}
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	struct tc_reply r;
	uint64_t region;
	cr_expect_eq(attach(fd, size, &region, &r), VY_E_BAD_REQUEST, "a hugetlbfs memfd");
	cr_expect(strstr(r.r.error.message, "hugetlbfs"), "message: %s", r.r.error.message);
	cr_expect(strstr(r.r.error.fix, "MFD_HUGETLB"), "fix: %s", r.r.error.fix);
	tc_reply_free(&r);
	close(fd);
}

/* The import figures of the stats tree's resident part. */
struct import_stats {
	uint64_t regions;
	uint64_t inputs;
	uint64_t bytes;
};

static struct import_stats import_stats(void)
{
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	struct import_stats st;
	cr_assert(tc_u64(&r, "resident.shm_imported", &st.regions));
	cr_assert(tc_u64(&r, "resident.shm_import_inputs", &st.inputs));
	cr_assert(tc_u64(&r, "resident.shm_import_bytes", &st.bytes));
	tc_reply_free(&r);
	return st;
}

static void detach(uint64_t region)
{
	struct tc_msg m;
	struct tc_reply r;
	tc_begin(&c, &m, VY_OP_SHM_DETACH, 1);
	vy_pack_cstr(&m.pk, "region");
	msgpack_pack_uint64(&m.pk, region);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_assert_eq(tc_code(&r), 0);
	tc_reply_free(&r);
}

Test(shm, vulkan_devices_copy_inputs_from_the_imported_region)
{
	/* The default backend is Vulkan where a device opens; the reference imports nothing. */
	const char *backend = vyd_backend() ? NULL : "vulkan";
	struct vy_program *p = tc_program("vector_add");
	struct t_inputs in;
	t_inputs_make(p, 0, 33, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	size_t len = in.in[0].len;
	/* Three pages: the second input starts a page in, past an unused gap. */
	size_t off_b = 4096 + 64;
	size_t size = 3 * 4096;
	cr_assert_leq(off_b + len, size);
	uint8_t *bytes = calloc(1, size);
	memcpy(bytes, in.in[0].data, len);
	memcpy(bytes + off_b, in.in[1].data, len);
	int fd = sealed_memfd(bytes, size, size, F_SEAL_SHRINK);
	struct tc_reply r;
	uint64_t region = 0;
	cr_assert_eq(attach(fd, size, &region, &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	close(fd);

	struct import_stats before = import_stats();
	int code = dispatch_shm_on(p, region, off_b, len, backend, &r);
	if (backend && code == VY_E_UNSUPPORTED_FEATURE) {
		char why[VY_ERR_MESSAGE_MAX];
		snprintf(why, sizeof(why), "%s", r.r.error.message);
		tc_reply_free(&r);
		detach(region);
		free(bytes);
		cr_skip_test("no Vulkan device in this daemon: %s", why);
	}
	cr_assert_eq(code, 0, "%s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want), "outputs match the reference byte for byte");
	tc_reply_free(&r);
	cr_assert_eq(
		dispatch_shm_on(p, region, off_b, len, backend, &r), 0, "%s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want));
	tc_reply_free(&r);
	struct import_stats after = import_stats();
	if (backend) {
		cr_expect_eq(after.regions, before.regions + 1, "the region was imported once");
		cr_expect_eq(after.inputs - before.inputs, 4, "both inputs of both dispatches");
		cr_expect_eq(after.bytes - before.bytes, 4 * len);
	} else {
		cr_expect_eq(after.regions, 0, "the reference backend imports nothing");
		cr_expect_eq(after.inputs, 0);
	}
	detach(region);
	cr_expect_eq(import_stats().regions, before.regions, "a detached region is not counted");

	/* A write-sealed memfd can only be mapped read-only, which drivers refuse to import: its
	 * inputs are read in place. */
	fd = sealed_memfd(bytes, size, size, F_SEAL_SHRINK | F_SEAL_WRITE);
	cr_assert_eq(attach(fd, size, &region, &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	close(fd);
	before = import_stats();
	cr_assert_eq(
		dispatch_shm_on(p, region, off_b, len, backend, &r), 0, "%s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want));
	tc_reply_free(&r);
	after = import_stats();
	cr_expect_eq(after.regions, before.regions, "a read-only mapping is not imported");
	cr_expect_eq(after.inputs, before.inputs);
	detach(region);
	free(bytes);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	vy_program_destroy(p);
}
