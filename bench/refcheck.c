/*
 * A program's slice run on the reference backend in-process (refcheck.h): decoded from its JSON
 * form with the protocol's codec, validated as the daemon validates it, and dispatched with
 * plain byte inputs.
 */
#include "refcheck.h"

#include <string.h>

#include "backend.h"
#include "bench.h"
#include "codec.h"
#include "reference/reference.h"
#include "validate.h"

int vy_bench_reference_run(const char *json, const void *const *inputs, const size_t *lens,
	size_t n_inputs, void *out, size_t out_len, struct vy_err *err)
{
	if (n_inputs > VY_BENCH_REF_INPUTS_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "reference", "pass at most 8 inputs",
			"%zu inputs", n_inputs);
	}
	struct vy_bytes views[VY_BENCH_REF_INPUTS_MAX];
	for (size_t i = 0; i < n_inputs; i++) {
		views[i] = (struct vy_bytes){(const uint8_t *)inputs[i], lens[i]};
	}
	struct vy_program *p = NULL;
	struct vy_backend *b = NULL;
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	int rc = vy_program_from_json(json, strlen(json), &p, err);
	if (rc == 0) {
		rc = vy_validate_first(p, NULL, err);
	}
	if (rc == 0) {
		rc = vy_reference_backend_create(NULL, &b, err);
	}
	if (rc == 0) {
		rc = vy_backend_dispatch(b, p, views, n_inputs, NULL, &outs, err);
	}
	if (rc == 0 && (outs.len != 1 || outs.items[0].len != out_len)) {
		rc = vy_bench_wrong(err, "reference backend",
			"%zu outputs (%zu bytes), want one of %zu", outs.len,
			outs.len ? outs.items[0].len : 0, out_len);
	}
	if (rc == 0) {
		memcpy(out, outs.items[0].data, out_len);
	}
	vy_outputs_finish(&outs);
	if (b) {
		vy_backend_shutdown(b, NULL);
		vy_backend_destroy(b);
	}
	vy_program_destroy(p);
	return rc;
}
