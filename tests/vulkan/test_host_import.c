/*
 * Host memory imports of the Vulkan backend (vy_backend_host_import, VK_EXT_external_memory_host):
 * inputs lying in an import are copied by the device and give the same bytes as the plain path,
 * on every memory path; refs that do not fit fall back to the views; releasing waits for the
 * work that reads the import; a lost device drops every import. Also the contract's default for
 * a backend without imports. Fails on any validation-layer message; skipped without a Vulkan
 * device, or on one without the extension.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "err.h"
#include "ir.h"
#include "vk_backend.h"
#include "vulkan.h"

static struct vy_backend *be;
static uint64_t expected_messages;

static struct vy_backend *open_flags(unsigned flags)
{
	struct vy_vulkan_options opts = {.enable_validation = vy_vulkan_validation_available()};
	const char *demand = getenv("VYRED_VULKAN_VALIDATION");
	if (demand && strcmp(demand, "1") == 0 && !opts.enable_validation) {
		cr_assert_fail("VYRED_VULKAN_VALIDATION=1 but VK_LAYER_KHRONOS_validation is "
			       "missing; install vulkan-validationlayers");
	}
	struct vy_backend *b = NULL;
	struct vy_err err = {0};
	int rc = flags ? vy__vk_backend_create_for_test(&opts, flags, &b, &err)
		       : vy_vulkan_backend_create(&opts, &b, &err);
	if (rc == VY_E_UNSUPPORTED_FEATURE) {
		cr_skip_test("no usable Vulkan device: %s", err.message);
	}
	cr_assert_eq(rc, 0, "backend create: %s", err.message);
	if (!vy__vk_from(b)->dev.host_import) {
		vy_backend_destroy(b);
		cr_skip_test("the device lacks VK_EXT_external_memory_host");
	}
	return b;
}

static void setup(void)
{
	expected_messages = vy_vulkan_validation_messages(NULL, 0);
	be = open_flags(0);
}

static void teardown(void)
{
	vy_backend_destroy(be);
	be = NULL;
}

/* The end of every test that opened a device: no validation message since setup. */
static void done(void)
{
	vy_backend_destroy(be);
	be = NULL;
	char last[512];
	uint64_t n = vy_vulkan_validation_messages(last, sizeof(last));
	cr_assert_eq(n, expected_messages, "validation layer reported %llu message(s); last: %s",
		(unsigned long long)(n - expected_messages), last);
}

TestSuite(host_import, .init = setup, .fini = teardown, .timeout = 60);

/* c[i] += a[i] + b[i] over count-0 u32 buffers: three inputs, one of them read back. */
static struct vy_program *add_three(void)
{
	struct vy_program *p = vy_program_create("add_three", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "c", 2, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	struct vy_expr *i = vy_ir_gid(p, 0);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", i),
			   vy_ir_store(p, "c", vy_ir_var(p, "i"),
				   vy_ir_binary(p, VY_BIN_ADD,
					   vy_ir_binary(p, VY_BIN_ADD,
						   vy_ir_load(p, "a", vy_ir_var(p, "i")),
						   vy_ir_load(p, "b", vy_ir_var(p, "i"))),
					   vy_ir_load(p, "c", vy_ir_var(p, "i")))),
			   NULL));
	return p;
}

/* Pages of host memory filled with a pattern of `salt`. */
static uint8_t *pages(size_t n, uint32_t salt)
{
	size_t size = n * 4096;
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	uint32_t *w = m;
	for (size_t i = 0; i < size / 4; i++) {
		w[i] = (uint32_t)i * 2654435761u + salt;
	}
	return m;
}

static struct vy_vulkan_stats stats_of(struct vy_backend *b)
{
	struct vy_vulkan_stats st;
	cr_assert(vy_vulkan_stats(b, &st));
	return st;
}

static uint64_t import_ok(struct vy_backend *b, const void *ptr, size_t len)
{
	uint64_t id = 0;
	struct vy_err err = {0};
	int rc = vy_backend_host_import(b, ptr, len, &id, &err);
	cr_assert_eq(rc, 0, "import: %s %s", vy_err_name(rc), err.message);
	cr_assert_neq(id, 0);
	return id;
}

/* Dispatch with `refs` (NULL: plain) and check the outputs against the plain path's. */
static void dispatch_same(struct vy_backend *b, const struct vy_program *p,
	const struct vy_bytes *in, const struct vy_host_ref *refs)
{
	struct vy_outputs plain, imported;
	vy_outputs_init(&plain);
	vy_outputs_init(&imported);
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_dispatch(b, p, in, 3, NULL, &plain, &err), 0, "%s", err.message);
	struct vy_dispatch_config cfg = {.imports = refs};
	int rc = vy_backend_dispatch(b, p, in, 3, &cfg, &imported, &err);
	cr_assert_eq(rc, 0, "%s %s", vy_err_name(rc), err.message);
	cr_assert_eq(imported.len, 1);
	cr_assert_eq(imported.items[0].len, in[2].len);
	cr_assert_eq(memcmp(plain.items[0].data, imported.items[0].data, in[2].len), 0);
	const uint32_t *a = (const uint32_t *)in[0].data;
	const uint32_t *bb = (const uint32_t *)in[1].data;
	const uint32_t *c = (const uint32_t *)in[2].data;
	const uint32_t *out = (const uint32_t *)imported.items[0].data;
	for (size_t i = 0; i < in[2].len / 4; i++) {
		cr_assert_eq(out[i], a[i] + bb[i] + c[i], "c[%zu]", i);
	}
	vy_outputs_finish(&plain);
	vy_outputs_finish(&imported);
}

/* Three inputs of n u32 in `mem` at byte offsets off[0..2]. */
static void views(uint8_t *mem, const size_t off[3], size_t n, struct vy_bytes in[3])
{
	for (int i = 0; i < 3; i++) {
		in[i] = (struct vy_bytes){mem + off[i], n * 4};
	}
}

static void check_paths(struct vy_backend *b)
{
	enum { PAGES = 64 };
	struct vy_program *p = add_three();
	uint8_t *mem = pages(PAGES, 7);
	uint64_t id = import_ok(b, mem, PAGES * 4096);
	cr_assert_eq(stats_of(b).host_imports, 1);
	/* Aligned and unaligned offsets, small (direct on discrete GPUs) and large (staged). */
	const size_t offs[][3] = {{0, 4096, 8192}, {12, 40000, 100004}, {4, 65536, 131072}};
	const size_t ns[] = {100, 3000, 30000};
	for (size_t k = 0; k < 3; k++) {
		struct vy_bytes in[3];
		views(mem, offs[k], ns[k], in);
		struct vy_host_ref refs[3];
		for (int i = 0; i < 3; i++) {
			refs[i] = (struct vy_host_ref){id, offs[k][i]};
		}
		struct vy_vulkan_stats before = stats_of(b);
		dispatch_same(b, p, in, refs);
		struct vy_vulkan_stats after = stats_of(b);
		cr_expect_eq(after.host_import_inputs - before.host_import_inputs, 3,
			"every input came from the import (case %zu)", k);
		cr_expect_eq(after.host_import_bytes - before.host_import_bytes, 3 * ns[k] * 4);
	}
	vy_backend_host_release(b, id);
	cr_assert_eq(stats_of(b).host_imports, 0);
	munmap(mem, PAGES * 4096);
	vy_program_destroy(p);
}

Test(host_import, inputs_in_an_import_are_copied_by_the_device_and_match_the_plain_path)
{
	check_paths(be);
	/* Discrete GPUs' paths: host-visible small buffers and staged large ones, read back. */
	struct vy_backend *b = open_flags(VY__VK_TEST_STAGING);
	check_paths(b);
	vy_backend_destroy(b);
	b = open_flags(
		VY__VK_TEST_STAGING | VY__VK_TEST_COPY_ALL | VY__VK_TEST_NO_PUSH_DESCRIPTORS);
	check_paths(b);
	vy_backend_destroy(b);
	done();
}

/* Import the pages and view three inputs of n words at off, each also named by a ref. */
static uint64_t import_three(uint8_t *mem, size_t pages, const size_t off[3], size_t n,
	struct vy_bytes in[3], struct vy_host_ref refs[3])
{
	uint64_t id = import_ok(be, mem, pages * 4096);
	views(mem, off, n, in);
	for (int i = 0; i < 3; i++) {
		refs[i] = (struct vy_host_ref){id, off[i]};
	}
	return id;
}

/* The answer read through the views alone, which every import path must reproduce. */
static void expect_from_views(const struct vy_program *p, const struct vy_bytes in[3],
	struct vy_outputs *want, struct vy_outputs *got)
{
	vy_outputs_init(want);
	vy_outputs_init(got);
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_dispatch(be, p, in, 3, NULL, want, &err), 0, "%s", err.message);
}

static void finish_compared(uint8_t *mem, size_t pages, struct vy_outputs *want,
	struct vy_outputs *got, struct vy_program *p)
{
	munmap(mem, pages * 4096);
	vy_outputs_finish(want);
	vy_outputs_finish(got);
	vy_program_destroy(p);
	done();
}

Test(host_import, compiled_and_async_dispatches_read_imports_too)
{
	enum { PAGES = 16, N = 2048 };
	struct vy_program *p = add_three();
	uint8_t *mem = pages(PAGES, 3);
	const size_t off[3] = {0, 8192, 20000};
	struct vy_bytes in[3];
	struct vy_host_ref refs[3];
	uint64_t id = import_three(mem, PAGES, off, N, in, refs);
	struct vy_dispatch_config cfg = {.imports = refs};
	struct vy_outputs want, got;
	expect_from_views(p, in, &want, &got);
	struct vy_err err = {0};

	struct vy_vulkan_stats before = stats_of(be);
	struct vy_pipeline *pl;
	cr_assert_eq(vy_backend_compile_native(be, p, NULL, &pl, &err), 0, "%s", err.message);
	cr_assert_eq(vy_pipeline_dispatch(pl, in, 3, &cfg, &got, &err), 0, "%s", err.message);
	cr_expect_eq(memcmp(got.items[0].data, want.items[0].data, N * 4), 0);
	struct vy_pending *pend[4];
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(vy_backend_dispatch_async(be, p, in, 3, &cfg, &pend[i], &err), 0);
	}
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(vy_pending_wait(pend[i], &got, &err), 0, "%s", err.message);
		cr_expect_eq(memcmp(got.items[0].data, want.items[0].data, N * 4), 0);
	}
	cr_expect_eq(stats_of(be).host_import_inputs - before.host_import_inputs, 15);

	vy_pipeline_destroy(pl);
	vy_backend_host_release(be, id);
	finish_compared(mem, PAGES, &want, &got, p);
}

Test(host_import, refs_that_do_not_fit_the_import_fall_back_to_the_views)
{
	enum { PAGES = 8, N = 256 };
	struct vy_program *p = add_three();
	uint8_t *mem = pages(PAGES, 11);
	/* Given from byte 100 to 100 bytes before the end: only pages 1 .. PAGES-2 are whole. */
	uint64_t id = import_ok(be, mem + 100, PAGES * 4096 - 200);
	struct vy_err err = {0};
	uint64_t none = 1;
	cr_expect_eq(vy_backend_host_import(be, mem + 8, 4000, &none, &err),
		VY_E_UNSUPPORTED_FEATURE, "a range without a whole page cannot be imported");
	cr_expect_eq(none, 0);

	const size_t off[3] = {200, 4096, 2 * 4096};
	struct vy_bytes in[3];
	views(mem, off, N, in);
	/* Offsets count from the pointer that was imported (mem + 100). */
	struct vy_host_ref cases[][3] = {
		/* a lies in the first page, which was not imported */
		{{id, off[0] - 100}, {id, off[1] - 100}, {id, off[2] - 100}},
		/* b's ref names other bytes than its view */
		{{0, 0}, {id, off[1] - 100 + 4}, {0, 0}},
		/* c's id is unknown */
		{{0, 0}, {0, 0}, {id ^ 1, off[2] - 100}},
	};
	uint64_t used[] = {2, 0, 0};
	for (size_t k = 0; k < 3; k++) {
		struct vy_vulkan_stats before = stats_of(be);
		dispatch_same(be, p, in, cases[k]);
		cr_expect_eq(stats_of(be).host_import_inputs - before.host_import_inputs, used[k],
			"case %zu", k);
	}
	/* Memory that is not all mapped writable is refused before the driver sees it. */
	uint8_t *ro = pages(4, 1);
	cr_assert_eq(mprotect(ro + 4096, 4096, PROT_READ), 0);
	cr_expect_eq(vy_backend_host_import(be, ro, 4 * 4096, &none, &err),
		VY_E_UNSUPPORTED_FEATURE, "a read-only page in the range");
	cr_expect(strstr(err.message, "writable"), "%s", err.message);
	cr_assert_eq(munmap(ro + 2 * 4096, 4096), 0);
	cr_expect_eq(vy_backend_host_import(be, ro + 2 * 4096, 2 * 4096, &none, &err),
		VY_E_UNSUPPORTED_FEATURE, "an unmapped page in the range");
	uint64_t tail_id = import_ok(be, ro + 3 * 4096, 4096);
	vy_backend_host_release(be, tail_id);
	munmap(ro, 2 * 4096);
	munmap(ro + 3 * 4096, 4096);

	/* An input running past the last whole page. */
	struct vy_bytes tail[3] = {in[0], in[1], {mem + (PAGES - 1) * 4096 - 512, N * 4}};
	struct vy_host_ref refs[3] = {{0, 0}, {0, 0}, {id, (PAGES - 1) * 4096 - 512 - 100}};
	struct vy_vulkan_stats before = stats_of(be);
	dispatch_same(be, p, tail, refs);
	cr_expect_eq(stats_of(be).host_import_inputs, before.host_import_inputs);

	vy_backend_host_release(be, id);
	munmap(mem, PAGES * 4096);
	vy_program_destroy(p);
	done();
}

Test(host_import, release_waits_for_the_work_reading_the_import_and_forgets_the_id)
{
	enum { PAGES = 32, N = 8192 };
	struct vy_program *p = add_three();
	uint8_t *mem = pages(PAGES, 5);
	const size_t off[3] = {0, 32768, 65536};
	struct vy_bytes in[3];
	struct vy_host_ref refs[3];
	uint64_t id = import_three(mem, PAGES, off, N, in, refs);
	struct vy_dispatch_config cfg = {.imports = refs};
	struct vy_outputs want, got;
	expect_from_views(p, in, &want, &got);
	struct vy_err err = {0};

	/* Queued, not yet submitted: the release submits it and waits before returning. */
	struct vy_pending *pend;
	cr_assert_eq(vy_backend_dispatch_async(be, p, in, 3, &cfg, &pend, &err), 0);
	vy_backend_host_release(be, id);
	cr_expect_eq(stats_of(be).host_imports, 0);
	cr_expect(vy_pending_is_ready(pend), "the job finished before the release returned");
	cr_assert_eq(vy_pending_wait(pend, &got, &err), 0, "%s", err.message);
	cr_expect_eq(memcmp(got.items[0].data, want.items[0].data, N * 4), 0);

	struct vy_vulkan_stats before = stats_of(be);
	dispatch_same(be, p, in, refs);
	cr_expect_eq(stats_of(be).host_import_inputs, before.host_import_inputs,
		"a released id is unknown: the views are read");
	vy_backend_host_release(be, id);
	vy_backend_host_release(be, 0);

	/* A job abandoned after a timeout still holds its import; the release waits for it. */
	uint64_t held = import_ok(be, mem, PAGES * 4096);
	struct vy_host_ref late[3] = {{held, off[0]}, {held, off[1]}, {held, off[2]}};
	struct vy_dispatch_config slow = {.imports = late, .timeout_ms = 20};
	cr_assert_eq(vy__vk_hold_submissions(be, true, &err), 0, "%s", err.message);
	cr_assert_eq(vy_backend_dispatch(be, p, in, 3, &slow, &got, &err), VY_E_TIMEOUT);
	cr_assert_eq(vy__vk_hold_submissions(be, false, &err), 0, "%s", err.message);
	uint64_t in_use = stats_of(be).bytes_in_use;
	vy_backend_host_release(be, id);
	vy_backend_host_release(be, held);
	cr_expect_eq(stats_of(be).host_imports, 0);
	cr_expect_lt(stats_of(be).bytes_in_use, in_use, "the abandoned job was reclaimed");

	finish_compared(mem, PAGES, &want, &got, p);
}

Test(host_import, a_lost_device_drops_every_import)
{
	enum { PAGES = 8, N = 512 };
	struct vy_program *p = add_three();
	uint8_t *mem = pages(PAGES, 13);
	const size_t off[3] = {0, 4096, 8192};
	struct vy_bytes in[3];
	struct vy_host_ref refs[3];
	uint64_t id = import_three(mem, PAGES, off, N, in, refs);
	dispatch_same(be, p, in, refs);

	vy__vk_simulate_device_lost(be);
	struct vy_err err = {0};
	uint64_t other = 1;
	cr_expect_eq(vy_backend_host_import(be, mem, PAGES * 4096, &other, &err), VY_E_DEVICE_LOST);
	cr_expect_eq(other, 0);
	cr_assert_eq(vy_backend_try_recover(be, &err), 0, "%s", err.message);
	struct vy_vulkan_stats st = stats_of(be);
	cr_expect_eq(st.host_imports, 0, "recovery drops the imports");
	dispatch_same(be, p, in, refs);
	cr_expect_eq(stats_of(be).host_import_inputs, st.host_import_inputs,
		"the old id falls back to the views");
	vy_backend_host_release(be, id);

	uint64_t fresh = import_ok(be, mem, PAGES * 4096);
	struct vy_host_ref again[3] = {{fresh, off[0]}, {fresh, off[1]}, {fresh, off[2]}};
	dispatch_same(be, p, in, again);
	cr_expect_eq(stats_of(be).host_import_inputs - st.host_import_inputs, 3);
	vy_backend_host_release(be, fresh);

	munmap(mem, PAGES * 4096);
	vy_program_destroy(p);
	done();
}

Test(host_import, a_shared_memfd_mapping_imports_as_the_daemon_maps_it)
{
	/* What the daemon imports: a memfd sealed against shrinking, mapped shared and writable
	 * (drivers refuse read-only mappings), and only read. */
	enum { PAGES = 4, N = 1000 };
	struct vy_program *p = add_three();
	uint8_t *src = pages(PAGES, 17);
	int fd = memfd_create("vyred-import-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, src, PAGES * 4096), PAGES * 4096);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	uint8_t *mem = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(mem, MAP_FAILED);
	close(fd);
	const size_t off[3] = {0, 4096, 8192};
	struct vy_bytes in[3];
	struct vy_host_ref refs[3];
	uint64_t id = import_three(mem, PAGES, off, N, in, refs);
	struct vy_vulkan_stats before = stats_of(be);
	dispatch_same(be, p, in, refs);
	cr_expect_eq(stats_of(be).host_import_inputs - before.host_import_inputs, 3);
	vy_backend_host_release(be, id);
	munmap(mem, PAGES * 4096);
	munmap(src, PAGES * 4096);
	vy_program_destroy(p);
	done();
}

/* A backend with nothing but a dispatch entry, for the contract's defaults. */
static int bare_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	return 0;
}

static const struct vy_backend_ops bare_ops = {.dispatch = bare_dispatch};

Test(host_import_contract, a_backend_without_imports_refuses_them_by_name)
{
	struct vy_backend bare = {&bare_ops, "bare", NULL};
	uint8_t mem[64] = {0};
	uint64_t id = 7;
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_host_import(&bare, mem, sizeof(mem), &id, &err),
		VY_E_UNSUPPORTED_FEATURE);
	cr_expect_eq(id, 0);
	cr_expect(strstr(err.message, "host memory import"), "%s", err.message);
	cr_expect(strstr(err.message, "bare"), "%s", err.message);
	vy_backend_host_release(&bare, 7);
}
