/*
 * Failures a client cannot cause from the wire, caused through the backend's fault hook
 * (inject_fault, enabled by fault_injection in [debug]): a pipeline that fails to compile, a
 * dispatch that fails to submit, device memory running out, and a lost device that the daemon
 * recovers while it keeps serving. Each failure reaches the client as its own error code with a
 * Fix line, and the next request succeeds. The reference backend simulates a device loss only:
 * for the other faults the operation answers UNSUPPORTED_FEATURE there, which is checked instead.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

TestSuite(faults, .timeout = 120);

static const char fault_config[] = "[debug]\nfault_injection = true\n";

/* Every fault test starts its own daemon, so that an injected fault cannot reach another test. */
static void faulty_open(struct vyd *d, struct tc *c)
{
	t_start(d, fault_config);
	tc_open(c, d->sock, "faults");
}

static void faulty_close(struct vyd *d, struct tc *c)
{
	tc_close(c);
	t_stop(d);
}

static bool on_vulkan(void)
{
	return vyd_backend() == NULL;
}

static int inject(struct tc *c, const char *fault, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_INJECT_FAULT, 1);
	vy_pack_cstr(&m.pk, "fault");
	vy_pack_cstr(&m.pk, fault);
	cr_assert_eq(tc_call(c, &m, r), 0);
	return tc_code(r);
}

/* Inject `fault` on a daemon that allows it; false where the backend has no such fault (the
 * reference, but for device_lost), after the operation's refusal has been checked. */
static bool inject_ok(struct tc *c, const char *fault)
{
	struct tc_reply r;
	int code = inject(c, fault, &r);
	bool has = on_vulkan() || strcmp(fault, "device_lost") == 0;
	if (has) {
		cr_assert_eq(code, 0, "inject_fault %s: %s", fault, r.r.error.message);
	} else {
		cr_assert_eq(
			code, VY_E_UNSUPPORTED_FEATURE, "inject_fault on the reference: %d", code);
		cr_expect(strstr(r.r.error.message, fault) != NULL, "%s", r.r.error.message);
		cr_expect_neq(r.r.error.fix[0], '\0');
	}
	tc_reply_free(&r);
	return has;
}

/* A dispatch of a fresh vector_add; its error code (0 after checking the outputs). */
static int dispatch_checked(struct tc *c, const struct vy_program *p, struct tc_reply *r)
{
	struct t_inputs in;
	t_inputs_make(p, 64, 11, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	cr_assert_eq(t_dispatch(c, p, &in, r), 0);
	int code = tc_code(r);
	if (code == 0) {
		cr_expect(t_outputs_equal(r, &want));
	}
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	return code;
}

static void expect_error(const struct tc_reply *r, int code, const char *words)
{
	cr_expect_eq(tc_code(r), code, "code %d, not %d: %s", tc_code(r), code, r->r.error.message);
	cr_expect_neq(r->r.error.fix[0], '\0', "no Fix line: %s", r->r.error.message);
	cr_expect(strstr(r->r.error.message, words) != NULL, "\"%s\" not in: %s", words,
		r->r.error.message);
}

Test(faults, inject_fault_is_refused_unless_the_daemon_enables_it)
{
	struct tc c;
	tc_open(&c, vyd_shared_socket(), "no-faults");
	struct tc_reply r;
	cr_assert_eq(inject(&c, "compile", &r), VY_E_PERMISSION_DENIED);
	cr_expect(strstr(r.r.error.fix, "fault_injection") != NULL, "%s", r.r.error.fix);
	tc_reply_free(&r);
	tc_close(&c);
}

Test(faults, an_unknown_fault_is_a_bad_request)
{
	struct vyd d;
	struct tc c;
	faulty_open(&d, &c);
	struct tc_reply r;
	cr_expect_eq(inject(&c, "meteor", &r), VY_E_BAD_REQUEST);
	cr_expect(strstr(r.r.error.message, "meteor") != NULL);
	tc_reply_free(&r);
	faulty_close(&d, &c);
}

Test(faults, a_failed_compile_is_reported_and_the_next_one_succeeds)
{
	struct vyd d;
	struct tc c;
	faulty_open(&d, &c);
	if (inject_ok(&c, "compile")) {
		char name[64];
		t_unique(name, sizeof(name), "compile-fault");
		struct vy_program *p = tc_program_renamed("vector_add", name);
		struct tc_reply r;
		cr_assert_eq(dispatch_checked(&c, p, &r), VY_E_KERNEL_COMPILE_FAILED);
		expect_error(&r, VY_E_KERNEL_COMPILE_FAILED, "compiled");
		tc_reply_free(&r);
		cr_expect_eq(dispatch_checked(&c, p, &r), 0, "%s", r.r.error.message);
		tc_reply_free(&r);
		vy_program_destroy(p);
	}
	faulty_close(&d, &c);
}

Test(faults, a_failed_dispatch_is_reported_and_the_next_one_succeeds)
{
	struct vyd d;
	struct tc c;
	faulty_open(&d, &c);
	struct vy_program *p = tc_program_renamed("vector_add", "dispatch-fault");
	struct tc_reply r;
	cr_assert_eq(dispatch_checked(&c, p, &r), 0);
	tc_reply_free(&r);
	if (inject_ok(&c, "dispatch")) {
		cr_assert_eq(dispatch_checked(&c, p, &r), VY_E_DISPATCH_FAILED);
		expect_error(&r, VY_E_DISPATCH_FAILED, "submitted");
		tc_reply_free(&r);
		cr_expect_eq(dispatch_checked(&c, p, &r), 0, "%s", r.r.error.message);
		tc_reply_free(&r);
	}
	vy_program_destroy(p);
	faulty_close(&d, &c);
}

static int alloc(struct tc *c, uint64_t size, struct tc_reply *r, uint64_t *handle)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_ALLOC, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	cr_assert_eq(tc_call(c, &m, r), 0);
	*handle = 0;
	if (r->r.ok) {
		cr_assert(tc_u64(r, "handle", handle));
	}
	return tc_code(r);
}

Test(faults, exhausted_device_memory_is_out_of_memory_and_passes)
{
	struct vyd d;
	struct tc c;
	faulty_open(&d, &c);
	if (inject_ok(&c, "out_of_memory")) {
		struct tc_reply r;
		uint64_t h;
		cr_assert_eq(alloc(&c, 4096, &r, &h), VY_E_OUT_OF_MEMORY);
		expect_error(&r, VY_E_OUT_OF_MEMORY, "memory");
		tc_reply_free(&r);
		cr_expect_eq(alloc(&c, 4096, &r, &h), 0, "%s", r.r.error.message);
		tc_reply_free(&r);
		struct tc_reply st;
		cr_assert_eq(t_simple(&c, VY_OP_STATS, &st), 0);
		uint64_t buffers = 0;
		cr_expect(tc_u64(&st, "resident.buffers", &buffers) && buffers == 1,
			"the failed allocation holds nothing: %" PRIu64 " buffers", buffers);
		tc_reply_free(&st);
	}
	faulty_close(&d, &c);
}

Test(faults, a_lost_device_fails_its_request_recovers_and_keeps_serving)
{
	struct vyd d;
	t_start(&d, fault_config);
	struct tc owner;
	struct tc other;
	tc_open(&owner, d.sock, "owner");
	tc_open(&other, d.sock, "other");
	struct vy_program *p = tc_program_renamed("vector_add", "lost-device");
	struct tc_reply r;
	cr_assert_eq(dispatch_checked(&other, p, &r), 0);
	tc_reply_free(&r);
	uint64_t h;
	cr_assert_eq(alloc(&owner, 256, &r, &h), 0);
	tc_reply_free(&r);

	if (inject_ok(&owner, "device_lost")) {
		uint64_t id = other.next_id;
		cr_assert_eq(dispatch_checked(&other, p, &r), VY_E_DEVICE_LOST);
		char want[64];
		snprintf(want, sizeof(want), "request %" PRIu64, id);
		expect_error(&r, VY_E_DEVICE_LOST, want);
		tc_reply_free(&r);

		/* The device came back: the same client and a new one are served again. */
		cr_expect_eq(dispatch_checked(&other, p, &r), 0, "%s", r.r.error.message);
		tc_reply_free(&r);
		struct tc late;
		tc_open(&late, d.sock, "late");
		cr_expect_eq(dispatch_checked(&late, p, &r), 0, "%s", r.r.error.message);
		tc_reply_free(&r);
		tc_close(&late);

		/* The buffer went with the device: its owner is told to upload it again. */
		struct tc_msg m;
		tc_begin(&owner, &m, VY_OP_DOWNLOAD, 1);
		vy_pack_cstr(&m.pk, "handle");
		msgpack_pack_uint64(&m.pk, h);
		cr_assert_eq(tc_call(&owner, &m, &r), 0);
		expect_error(&r, VY_E_NOT_FOUND, "lost");
		cr_expect(strstr(r.r.error.fix, "upload") != NULL, "%s", r.r.error.fix);
		tc_reply_free(&r);

		struct tc_reply st;
		cr_assert_eq(t_simple(&owner, VY_OP_STATS, &st), 0);
		cr_expect(tc_row_u64(&st, "devices", "index", 0, "lost", &h) && h == 1,
			"devices[0].lost is %" PRIu64, h);
		tc_reply_free(&st);
		cr_expect(vyd_log_has(&d, "was lost and has been recovered"));
	}
	vy_program_destroy(p);
	tc_close(&owner);
	tc_close(&other);
	t_stop(&d);
}
