/*
 * A graph run over the resident entries of the backend contract (graph_run.h).
 */
#include "graph_run.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void vy_graph_name_step(struct vy_err *err, uint32_t i, uint32_t n)
{
	if (!err) {
		return;
	}
	char msg[VY_ERR_MESSAGE_MAX + 32];
	char at[VY_ERR_AT_MAX + 32];
	snprintf(msg, sizeof(msg), "step %" PRIu32 " of %" PRIu32 ": %s", i, n, err->message);
	snprintf(at, sizeof(at), "steps[%" PRIu32 "]%s%s", i, err->at[0] ? "." : "", err->at);
	/* What does not fit is cut: the step's number comes first, so it stays. */
	snprintf(err->message, sizeof(err->message), "%.*s", (int)sizeof(err->message) - 1, msg);
	snprintf(err->at, sizeof(err->at), "%.*s", (int)sizeof(err->at) - 1, at);
}

/* Allocate a resource for every slot but the resident ones, and upload the inputs. */
static int make_slots(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_bytes *inputs, const size_t *lens, struct vy_resource *res, bool *owned,
	struct vy_err *err)
{
	for (uint32_t s = 0; s < plan->n_slots; s++) {
		if (plan->slots[s].kind == VY_GRAPH_RESIDENT) {
			continue;
		}
		int rc = vy_backend_resident_alloc(b, lens[s], &res[s], err);
		if (rc) {
			return rc;
		}
		owned[s] = true;
	}
	for (uint32_t k = 0; k < plan->n_inputs; k++) {
		if (inputs[k].len == 0) {
			continue;
		}
		int rc =
			vy_backend_resident_upload(b, &res[plan->input_slot[k]], 0, inputs[k], err);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

/* The steps in order; a trap is kept (the first) while the later steps run (graph_run.h). */
static int run_steps(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_resource *res, uint32_t timeout_ms,
	uint64_t *step_ns, struct vy_err *err)
{
	uint64_t deadline = timeout_ms ? now_ms() + timeout_ms : 0;
	struct vy_err trap = {0};
	for (uint32_t i = 0; i < plan->n_steps; i++) {
		const struct vy_graph_step *st = &plan->steps[i];
		struct vy_resource binds[VY_IR_MAX_BUFFERS];
		uint32_t n = 0;
		for (uint32_t k = 0; k < st->n_bindings; k++) {
			if (st->slot_of[k] != VY_GRAPH_NO_SLOT) {
				binds[n++] = res[st->slot_of[k]];
			}
		}
		struct vy_dispatch_config cfg = steps[i].config;
		if (deadline) {
			uint64_t now = now_ms();
			if (now >= deadline) {
				vy_err_set(err, VY_E_TIMEOUT, NULL,
					"raise timeout_ms, or split the graph",
					"the graph's %" PRIu32 " ms ran out before this step began",
					timeout_ms);
				vy_graph_name_step(err, i, plan->n_steps);
				return VY_E_TIMEOUT;
			}
			uint64_t left = deadline - now;
			if (!cfg.timeout_ms || left < cfg.timeout_ms) {
				cfg.timeout_ms = (uint32_t)left;
			}
		}
		struct vy_timing timing;
		struct vy_err step_err = {0};
		int rc = vy_backend_resident_dispatch(
			b, steps[i].program, binds, n, &cfg, &timing, &step_err);
		if (rc == VY_E_TRAP && trap.code == 0) {
			trap = step_err;
			vy_graph_name_step(&trap, i, plan->n_steps);
		} else if (rc && rc != VY_E_TRAP) {
			if (err) {
				*err = step_err;
			}
			vy_graph_name_step(err, i, plan->n_steps);
			return rc;
		}
		if (step_ns) {
			step_ns[i] = rc ? VY_TIMING_NONE : timing.device_ns;
		}
	}
	if (trap.code) {
		if (err) {
			*err = trap;
		}
		return VY_E_TRAP;
	}
	return 0;
}

static int read_outputs(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_resource *res, const size_t *lens, struct vy_outputs *outputs,
	struct vy_err *err)
{
	for (uint32_t j = 0; j < plan->n_outputs; j++) {
		uint32_t s = plan->output_slot[j];
		uint8_t *dst = vy_outputs_push_zeroed(outputs, lens[s]);
		if (lens[s] == 0) {
			continue;
		}
		int rc = vy_backend_resident_download(b, &res[s], 0, dst, lens[s], err);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

int vy_backend_graph_replay(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_outputs *outputs,
	uint64_t *step_ns, struct vy_graph_recording **rec, struct vy_err *err)
{
	if (!b->ops->graph_run) {
		return vy_backend_graph_run(
			b, plan, steps, inputs, residents, timeout_ms, outputs, step_ns, err);
	}
	vy_outputs_clear(outputs);
	int rc = b->ops->graph_run(
		b, plan, steps, inputs, residents, timeout_ms, outputs, step_ns, rec, err);
	if (rc) {
		vy_outputs_clear(outputs);
	}
	return rc;
}

int vy_backend_graph_start(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_graph_recording **rec,
	struct vy_pending **out, struct vy_err *err)
{
	*out = NULL;
	if (b->ops->graph_start) {
		return b->ops->graph_start(
			b, plan, steps, inputs, residents, timeout_ms, rec, out, err);
	}
	struct vy_outputs outputs;
	vy_outputs_init(&outputs);
	int rc = vy_backend_graph_replay(
		b, plan, steps, inputs, residents, timeout_ms, &outputs, NULL, rec, err);
	if (rc == 0) {
		*out = vy_pending_done(&outputs);
	}
	vy_outputs_finish(&outputs);
	return rc;
}

void vy_backend_graph_forget(struct vy_backend *b, struct vy_graph_recording *rec)
{
	if (rec && b->ops->graph_forget) {
		b->ops->graph_forget(b, rec);
	}
}

int vy_backend_graph_run(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_outputs *outputs,
	uint64_t *step_ns, struct vy_err *err)
{
	vy_outputs_clear(outputs);
	size_t *lens = calloc(plan->n_slots, sizeof(*lens));
	struct vy_resource *res = calloc(plan->n_slots, sizeof(*res));
	bool *owned = calloc(plan->n_slots, sizeof(*owned));
	int rc = 0;
	if (!lens || !res || !owned) {
		rc = vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free host memory and retry",
			"no memory for the slots of a graph run");
	}
	if (rc == 0) {
		rc = vy_graph_plan_run_lengths(plan, inputs, plan->n_inputs, lens, err);
	}
	for (uint32_t s = 0; rc == 0 && s < plan->n_slots; s++) {
		if (plan->slots[s].kind == VY_GRAPH_RESIDENT) {
			res[s] = residents[s];
			lens[s] = residents[s].len;
		}
	}
	if (rc == 0) {
		rc = make_slots(b, plan, inputs, lens, res, owned, err);
	}
	if (rc == 0) {
		rc = run_steps(b, plan, steps, res, timeout_ms, step_ns, err);
	}
	if (rc == 0) {
		rc = read_outputs(b, plan, res, lens, outputs, err);
	}
	for (uint32_t s = 0; owned && s < plan->n_slots; s++) {
		if (owned[s]) {
			vy_backend_resident_free(b, res[s], NULL);
		}
	}
	if (rc) {
		vy_outputs_clear(outputs);
	}
	free(lens);
	free(res);
	free(owned);
	return rc;
}
