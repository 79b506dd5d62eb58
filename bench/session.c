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
