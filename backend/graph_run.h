/*
 * Running a planned graph (planner/graph.h, docs/graphs.md) once on a backend. A backend with a
 * `graph_run` entry runs it from a recording it keeps between runs (the Vulkan backend: one
 * command buffer per graph, replayed with the new inputs copied in). Otherwise it runs through the
 * contract's resident entries: every slot but the caller's resident buffers becomes a resident
 * resource of the run (zeroed; the inputs uploaded into theirs), each step is a resident dispatch
 * on the resources of its binds, in order, and the outputs are read back. A backend with neither
 * answers UNSUPPORTED_FEATURE, as it does for resident dispatch.
 *
 * A run fails as a whole, as one dispatch does (docs/semantics.md §7): a trap in a step ends the
 * invocations that raised it, every step still runs to its end, and the run fails with the trap
 * of the first step that trapped; outputs are not returned. Any other error ends the run there.
 * Errors of a step name it: the message begins "step 7 of 10: " and `at` begins "steps[7]"
 * (followed by the step's own place, such as the node of a trap: "steps[7].entry[4].store").
 *
 * Thread-safety: as the backend's resident entries; the plan and the programs are only read.
 */
#ifndef VY_BACKEND_GRAPH_RUN_H
#define VY_BACKEND_GRAPH_RUN_H

#include <stdint.h>

#include "backend.h"
#include "graph.h"

/* One step as it runs: its validated program and its dispatch config (borrowed). */
struct vy_graph_step_run {
	const struct vy_program *program;
	struct vy_dispatch_config config;
};

/*
 * Run `plan` once. `steps` holds plan->n_steps entries; `inputs` plan->n_inputs views in graph
 * input order; `residents` one resource per slot (read only for the resident slots; NULL when
 * the plan has none). `timeout_ms` bounds the whole run (0: none): each step gets what remains.
 * On success `outputs` (initialized by the caller; its buffers are replaced) holds one buffer per
 * graph output and 0 is returned; `step_ns`, when not NULL, receives each step's device time
 * (VY_TIMING_NONE where the backend cannot measure it).
 */
int vy_backend_graph_run(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_outputs *outputs,
	uint64_t *step_ns, struct vy_err *err);

/*
 * As vy_backend_graph_run, keeping the backend's recording of the graph in *rec (NULL before the
 * first run) for the next run of the same plan and steps; the caller gives it back with
 * vy_backend_graph_forget. A backend without recordings leaves *rec NULL.
 */
int vy_backend_graph_replay(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_outputs *outputs,
	uint64_t *step_ns, struct vy_graph_recording **rec, struct vy_err *err);

/*
 * As vy_backend_graph_replay without step times, returning once the run is on the device, so
 * that the caller may start more work behind it: stores a handle in *out whose vy_pending_wait
 * gives the outputs or the run's error, or leaves *out NULL and returns an error that ended the
 * run before it started. The recording in *rec is the run's until the handle is waited for or
 * destroyed; a second run of the same recording meanwhile records one of its own. A backend
 * without graph_start runs the graph before returning and hands back a handle already done.
 */
int vy_backend_graph_start(struct vy_backend *b, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_graph_recording **rec,
	struct vy_pending **out, struct vy_err *err);

/* Drop a recording of vy_backend_graph_replay. NULL is accepted. */
void vy_backend_graph_forget(struct vy_backend *b, struct vy_graph_recording *rec);

/* Put "step i of n: " in front of err's message and "steps[i]" in front of its place. */
void vy_graph_name_step(struct vy_err *err, uint32_t i, uint32_t n);

#endif
