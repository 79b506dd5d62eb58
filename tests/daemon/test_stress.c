/*
 * 64 concurrent clients x 200 dispatches of varied programs on the shared daemon: every output
 * byte-identical to the reference backend's, every request answered exactly once, and fairness
 * visible in the stats (no client's p99 queue wait above 4 times another's). The same traffic,
 * smaller, also runs on a daemon whose devices poll instead of sleeping (spin = on), the mode
 * GPUs use by default.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "util.h"

#define CLIENTS 64
#define PER_CLIENT 200
#define WINDOW 4
#define SETS 4

struct variant {
	struct vy_program *program;
	bool has_spec;
	float scale;
	struct t_inputs in[SETS];
	struct vy_outputs want[SETS];
};

static struct variant variants[16];
static size_t n_variants;
static pthread_barrier_t start_line;
static int per_client = PER_CLIENT;
static atomic_int failures;
static atomic_int mismatches;

struct worker {
	struct tc c;
	int index;
	uint64_t client_id;
	char error[256];
};

static void note(struct worker *w, const char *what)
{
	if (!w->error[0]) {
		snprintf(w->error, sizeof(w->error), "client %d: %s", w->index, what);
	}
	atomic_fetch_add(&failures, 1);
}

static void add_variant(const char *file, uint32_t n, bool has_spec, float scale)
{
	struct variant *v = &variants[n_variants];
	memset(v, 0, sizeof(*v));
	v->program = tc_program(file);
	v->has_spec = has_spec;
	v->scale = scale;
	struct vy_spec_map spec;
	vy_spec_map_init(&spec);
	if (has_spec) {
		vy_spec_map_insert(&spec, "scale", vy_spec_f32(scale));
	}
	for (int s = 0; s < SETS; s++) {
		t_inputs_make(v->program, n, (uint64_t)(n_variants * 100 + s + 1), &v->in[s]);
		if (t_reference(v->program, &v->in[s], &spec, &v->want[s]) != 0) {
			cr_log_warn(
				"%s left out: the reference does not run it on generated inputs",
				file);
			for (int k = 0; k <= s; k++) {
				t_inputs_free(&v->in[k]);
				vy_outputs_finish(&v->want[k]);
			}
			vy_program_destroy(v->program);
			vy_spec_map_finish(&spec);
			return;
		}
	}
	vy_spec_map_finish(&spec);
	n_variants++;
}

static void send_one(struct worker *w, int j, uint64_t *ids, int *slot_of)
{
	int vi = (w->index + j) % (int)n_variants;
	int set = (w->index * 7 + j) % SETS;
	struct variant *v = &variants[vi];
	struct tc_msg m;
	tc_begin(&w->c, &m, VY_OP_DISPATCH, v->has_spec ? 3 : 2);
	t_pack_program(&m.pk, v->program);
	t_pack_inputs(&m.pk, &v->in[set]);
	if (v->has_spec) {
		vy_pack_cstr(&m.pk, "config");
		msgpack_pack_map(&m.pk, 1);
		vy_pack_cstr(&m.pk, "spec");
		msgpack_pack_map(&m.pk, 1);
		vy_pack_cstr(&m.pk, "scale");
		msgpack_pack_float(&m.pk, v->scale);
	}
	ids[j] = m.id;
	slot_of[j] = vi * SETS + set;
	if (tc_send(&w->c, &m, -1) != 0) {
		note(w, "send failed");
	}
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t ids[PER_CLIENT];
	int slot_of[PER_CLIENT];
	bool answered[PER_CLIENT] = {0};
	pthread_barrier_wait(&start_line);
	int sent = 0;
	int received = 0;
	while (sent < per_client && sent < WINDOW) {
		send_one(w, sent++, ids, slot_of);
	}
	while (received < per_client && !w->error[0]) {
		struct tc_reply r;
		if (tc_recv(&w->c, &r, 120000) != 0) {
			note(w, "no reply");
			break;
		}
		/* Ids are consecutive from the first dispatch's. */
		int64_t j = (int64_t)(r.r.id - ids[0]);
		if (j < 0 || j >= sent || answered[j]) {
			note(w, j >= 0 && j < sent ? "a request answered twice"
						   : "an unknown reply id");
		} else if (!r.r.ok) {
			char msg[200];
			snprintf(msg, sizeof(msg), "error %.180s", r.r.error.message);
			note(w, msg);
		} else {
			answered[j] = true;
			int slot = slot_of[j];
			if (!tc_outputs_equal(&r, &variants[slot / SETS].want[slot % SETS])) {
				atomic_fetch_add(&mismatches, 1);
				note(w, "outputs differ from the reference");
			}
		}
		tc_reply_free(&r);
		received++;
		if (sent < per_client) {
			send_one(w, sent++, ids, slot_of);
		}
	}
	/* Nothing more may arrive: the next reply is the ping's. */
	struct tc_msg m;
	tc_begin(&w->c, &m, VY_OP_PING, 0);
	uint64_t ping = m.id;
	struct tc_reply r;
	if (tc_call(&w->c, &m, &r) != 0 || r.r.id != ping) {
		note(w, "an extra reply after the last one");
	}
	tc_reply_free(&r);
	return NULL;
}

static void add_variants(void)
{
	n_variants = 0;
	add_variant("vector_add", 0, false, 0);
	add_variant("saxpy", 256, false, 0);
	add_variant("spec_scale", 0, false, 0);
	add_variant("spec_scale", 0, true, 3.0f);
	add_variant("spec_scale", 0, true, -0.5f);
	add_variant("select_clamp", 0, false, 0);
	add_variant("histogram_atomic", 512, false, 0);
	add_variant("workgroup_reduce", 0, false, 0);
	add_variant("early_return", 256, false, 0);
	add_variant("bool_mask", 0, false, 0);
	cr_assert_geq(n_variants, 6, "too few programs run on the reference");
}

static void free_variants(void)
{
	for (size_t v = 0; v < n_variants; v++) {
		for (int s = 0; s < SETS; s++) {
			t_inputs_free(&variants[v].in[s]);
			vy_outputs_finish(&variants[v].want[s]);
		}
		vy_program_destroy(variants[v].program);
	}
}

static struct worker workers[CLIENTS];

/* `clients` workers of `requests` dispatches each against the daemon at `sock`; every output is
 * checked. The connections stay open for the caller's checks. */
static void run_clients(const char *sock, int clients, int requests)
{
	per_client = requests;
	atomic_store(&failures, 0);
	atomic_store(&mismatches, 0);
	for (int i = 0; i < clients; i++) {
		char name[32];
		snprintf(name, sizeof(name), "stress-%d", i);
		workers[i].index = i;
		workers[i].error[0] = '\0';
		tc_open(&workers[i].c, sock, name);
		workers[i].client_id = t_client_id(&workers[i].c);
	}
	pthread_barrier_init(&start_line, NULL, (unsigned)clients);
	pthread_t threads[CLIENTS];
	for (int i = 0; i < clients; i++) {
		pthread_create(&threads[i], NULL, run_worker, &workers[i]);
	}
	for (int i = 0; i < clients; i++) {
		pthread_join(threads[i], NULL);
	}
	pthread_barrier_destroy(&start_line);
	for (int i = 0; i < clients; i++) {
		cr_expect(!workers[i].error[0], "%s", workers[i].error);
	}
	cr_expect_eq(atomic_load(&mismatches), 0);
	cr_expect_eq(atomic_load(&failures), 0);
}

Test(stress, sixty_four_clients_get_reference_outputs_fairly, .timeout = 600)
{
	add_variants();
	run_clients(vyd_shared_socket(), CLIENTS, PER_CLIENT);

	struct tc_reply r;
	cr_assert_eq(t_simple(&workers[0].c, VY_OP_STATS, &r), 0);
	uint64_t lo = UINT64_MAX;
	uint64_t hi = 0;
	for (int i = 0; i < CLIENTS; i++) {
		uint64_t p99 = 0;
		uint64_t requests = 0;
		cr_expect(t_client_stat(&r, workers[i].client_id, "queue_wait_p99_ns", &p99));
		cr_expect(t_client_stat(&r, workers[i].client_id, "requests", &requests));
		cr_expect_geq(requests, PER_CLIENT, "client %d made %lu requests", i,
			(unsigned long)requests);
		/* Below 50 us a wait is scheduling noise, not unfairness. */
		p99 = p99 < 50000 ? 50000 : p99;
		lo = p99 < lo ? p99 : lo;
		hi = p99 > hi ? p99 : hi;
	}
	/* With 256 requests in flight the submit thread always has a next batch: it starts it
	 * behind the one running, and every byte above came through that. */
	uint64_t overlapped = 0;
	uint64_t batches = 0;
	cr_assert(tc_row_u64(&r, "devices", "index", 0, "batches_overlapped", &overlapped));
	cr_assert(tc_row_u64(&r, "devices", "index", 0, "batches", &batches));
	cr_expect_gt(overlapped, 0, "no batch was started behind a running one (%lu batches)",
		(unsigned long)batches);
	printf("stress: %lu of %lu batches started behind a running one\n",
		(unsigned long)overlapped, (unsigned long)batches);
	tc_reply_free(&r);
	cr_expect_leq(hi, 4 * lo, "p99 queue waits range %lu..%lu ns", (unsigned long)lo,
		(unsigned long)hi);
	for (int i = 0; i < CLIENTS; i++) {
		tc_close(&workers[i].c);
	}
	free_variants();
}

Test(stress, polling_devices_serve_every_client_correctly, .timeout = 300)
{
	struct vyd d;
	t_start(&d, "[devices]\nspin = on\n");
	add_variants();
	run_clients(d.sock, 8, 60);
	for (int i = 0; i < 8; i++) {
		tc_close(&workers[i].c);
	}
	free_variants();
	t_stop(&d);
}
