/*
 * Helpers shared by the end-to-end tests: programs built for a purpose (slow, trapping,
 * invalid), inputs generated from a program's binding plan, reference outputs computed in the
 * test process by the reference backend, and request packing.
 */
#ifndef VY_TESTS_DAEMON_UTIL_H
#define VY_TESTS_DAEMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "binding.h"
#include "harness.h"
#include "ir.h"
#include "tclient.h"

/* A name no other test uses ("prefix-<pid>-<n>"), so a program renamed with it is new. */
void t_unique(char *buf, size_t size, const char *prefix);

/* 256 invocations each iterating a hash n times: slow by `n`, which is a u32 spec constant "n"
 * (default 1000) so one program serves every speed. Named `name`. */
struct vy_program *t_slow_program(const char *name);
/* out[gid] = a[gid] / 0 on i32: traps with int_div_zero. */
struct vy_program *t_trap_program(const char *name);
/* A loop of 100 iterations per invocation (trips a small max_loop_iterations). */
struct vy_program *t_loop_program(const char *name);
/* Two errors: a store to a read_only buffer and an unknown variable. */
struct vy_program *t_invalid_program(void);

/* How to run t_slow_program: its loop count (spec "n") and its grid. */
struct t_slow {
	uint32_t n;
	uint32_t grid;
};
/* Measure the daemon behind `c` and choose a grid that makes one dispatch of `p` (a
 * t_slow_program) on `device` (-1: any) take about target_ms. The program is compiled after it. */
struct t_slow t_slow_calibrate(
	struct tc *c, const struct vy_program *p, int device, uint32_t target_ms);
/* A dispatch of `p` with the spec and grid of `slow`, on `device` (-1: any), with timeout_ms
 * (0: none). */
void t_pack_slow(struct tc *c, struct tc_msg *m, const struct vy_program *p, struct t_slow slow,
	int device, uint32_t timeout_ms);

/* Inputs for `p`: one buffer per input, count-0 buffers with `n` elements, random values
 * (finite floats, 0/1 bools) from `seed`. Free with t_inputs_free. */
struct t_inputs {
	size_t n;
	struct vy_bytes in[VY_IR_MAX_BUFFERS];
};
void t_inputs_make(const struct vy_program *p, uint32_t n, uint64_t seed, struct t_inputs *out);
void t_inputs_free(struct t_inputs *in);

/* The reference backend's outputs for `p` on `in` with spec values (may be NULL). */
int t_reference(const struct vy_program *p, const struct t_inputs *in,
	const struct vy_spec_map *spec, struct vy_outputs *out);

/* Pack "program" (or "program_id" when id_hex is not NULL) and "inputs" as bytes. */
void t_pack_program(msgpack_packer *pk, const struct vy_program *p);
void t_pack_inputs(msgpack_packer *pk, const struct t_inputs *in);

/* dispatch of `p` on `in` (no config); returns tc_call's result. */
int t_dispatch(
	struct tc *c, const struct vy_program *p, const struct t_inputs *in, struct tc_reply *r);
/* Whether the reply's outputs equal `want` byte for byte (messages through cr_log). */
bool t_outputs_equal(const struct tc_reply *r, const struct vy_outputs *want);

/* A single request of `op` with no fields; the reply's error code (0 when ok). */
int t_simple(struct tc *c, enum vy_op op, struct tc_reply *r);
/* The u64 at `path` of a stats reply on `c`; asserts that it exists. */
uint64_t t_stat(struct tc *c, const char *path);

/* Start a daemon for one test with extra configuration text; asserts it started. */
void t_start(struct vyd *d, const char *config);
/* Stop it and assert a clean exit (status 0), printing its log otherwise. */
void t_stop(struct vyd *d);

/* The u64 field of the client row `client_id` in a stats reply's clients.list. */
bool t_client_stat(
	const struct tc_reply *stats, uint64_t client_id, const char *key, uint64_t *out);
/* This connection's client id (from the clients table). */
uint64_t t_client_id(struct tc *c);

#endif
