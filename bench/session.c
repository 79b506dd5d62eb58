/*
 * libvyre glue for vybench's figure groups (session.h).
 */
#include "session.h"

#include <string.h>

#include "daemon.h"

int vy_bench_session_fail(struct vy_err *err, const char *what, const struct vy_error *e)
{
	char text[1024];
	vy_error_text(e, text, sizeof(text));
	int code = e->code ? e->code : VY_E_INTERNAL;
	return vy_err_set(err, code, e->at[0] ? e->at : NULL, e->fix[0] ? e->fix : NULL, "%s: %s",
		what, text);
}

int vy_bench_session_connect(const struct vy_bench_ctx *ctx, const char *name,
	struct vy_client **out, struct vy_err *err)
{
	struct vy_error e;
	if (vy_client_connect(ctx->daemon->sock, name, out, &e) != 0) {
		return vy_bench_session_fail(err, "connect", &e);
	}
	return 0;
}

int vy_bench_session_compile(struct vy_client *c, const struct vy_program *p,
	const struct vy_dispatch_options *options, char id[VY_PROGRAM_ID_CHARS],
	struct vy_compile_result *res, struct vy_err *err)
{
	struct vy_error e;
	struct vy_compile_result local;
	res = res ? res : &local;
	if (vy_compile(c, p, options, res, &e) != 0) {
		return vy_bench_session_fail(err, "compile", &e);
	}
	memcpy(id, res->program_id, VY_PROGRAM_ID_CHARS);
	return 0;
}

uint64_t vy_bench_session_time(const struct vy_reply *r, uint64_t wall_ns, bool *device)
{
	struct vy_dispatch_timing t;
	*device = vy_reply_timing(r, &t) && t.device_ns != VY_TIME_NONE;
	return *device ? t.device_ns : wall_ns;
}

int vy_bench_session_put(
	struct vy_client *c, const void *data, size_t len, uint64_t *handle, struct vy_err *err)
{
	struct vy_error e;
	if (vy_buffer_alloc(c, len, NULL, handle, &e) != 0) {
		return vy_bench_session_fail(err, "alloc", &e);
	}
	if (vy_buffer_upload(c, *handle, 0, data, len, &e) != 0) {
		return vy_bench_session_fail(err, "upload", &e);
	}
	return 0;
}

int vy_bench_session_dispatch(struct vy_client *c, const struct vy_dispatch_args *args,
	vy_bench_check_fn *check, const void *want, uint64_t *ns, uint64_t *wall_ns, bool *device,
	struct vy_bench_stages *st, struct vy_err *err)
{
	struct vy_reply *r = NULL;
	struct vy_error e;
	uint64_t t0 = vy_bench_now_ns();
	if (vy_dispatch(c, args, &r, &e) != 0) {
		return vy_bench_session_fail(err, "dispatch", &e);
	}
	*wall_ns = vy_bench_now_ns() - t0;
	*ns = vy_bench_session_time(r, *wall_ns, device);
	if (st) {
		const struct vy_value *v = vy_reply_value(r);
		st->daemon = vy_value_get_u64(v, "timing.wall_ns", 0);
		st->prepare = vy_value_get_u64(v, "timing.prepare_ns", 0);
		st->backend = vy_value_get_u64(v, "timing.backend_ns", 0);
	}
	int rc = check ? check(r, want, err) : 0;
	vy_reply_destroy(r);
	return rc;
}

int vy_bench_session_runs(struct vy_client *c, const struct vy_dispatch_args *args, uint32_t runs,
	vy_bench_check_fn *check, const void *want, uint64_t *median_ns, uint64_t *wall_ns,
	bool *device, uint32_t *made, struct vy_err *err)
{
	if (runs == 0 || runs > VY_BENCH_RUNS_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL, "use 1 to 256 timed runs",
			"%u timed runs asked for", runs);
	}
	uint64_t t[VY_BENCH_RUNS_MAX], w[VY_BENCH_RUNS_MAX];
	int rc = 0;
	uint32_t warm = 1;
	uint64_t warm_from = vy_bench_now_ns();
	for (uint32_t it = 0; rc == 0 && it < warm + runs; it++) {
		if (it + 1 == warm && vy_bench_now_ns() - warm_from < VY_BENCH_WARM_NS) {
			warm++;
		}
		uint64_t ns = 0, wall = 0;
		rc = vy_bench_session_dispatch(c, args, check, want, &ns, &wall, device, NULL, err);
		if (it >= warm) {
			t[it - warm] = ns;
			w[it - warm] = wall;
		}
	}
	if (rc == 0) {
		*median_ns = vy_bench_median(t, runs);
		*wall_ns = vy_bench_median(w, runs);
	}
	if (made) {
		*made = warm + runs;
	}
	return rc;
}

int vy_bench_session_output_resident(const struct vy_reply *r, const void *want, struct vy_err *err)
{
	(void)want;
	if (vy_reply_outputs(r) != 1 || vy_reply_output(r, 0, NULL) != NULL) {
		return vy_bench_wrong(err, "vyred dispatch", "the output did not stay resident");
	}
	return 0;
}
