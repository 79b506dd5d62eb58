/*
 * Privacy of programs and trust of the disk cache, attacked as unprivileged users (uid 61001 the
 * attacker, 61002 the victim) against a daemon whose socket anyone may use: cache_list shows a
 * user only their own rows (an admin sees all), another user's program id is as unknown as one
 * that never existed, a cache_dir others (its group included) can write or whose key file they can
 * read is neither read nor written, and files of the disk cache that were forged (an unkeyed
 * old-style checksum, a MAC under another key, garbage SPIR-V under the right key, before the
 * daemon starts or after it vetted the file) never reach the daemon's tables or the driver.
 *
 * Each case prints what it measured on one line starting with "isolation:".
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "rel.h"

#define ATTACKER 61001
#define VICTIM 61002

static const char open_config[] = "[daemon]\nsocket_mode = 0666\n";

/* What the test and the users' clients share. */
struct shared {
	char sock[320];
	const struct vy_program *victim;   /* the victim's program */
	const struct vy_program *own;      /* the attacker's own program */
	const struct t_inputs *victim_in;  /* inputs of the victim's program */
	char victim_id[VY_PROGRAM_ID_HEX]; /* its id, computed by the parent */
	/* figures the clients measured */
	int rows_before;      /* rows the attacker saw before sending anything */
	int victim_rows;      /* rows of the victim's program among them */
	int programs_after;   /* the attacker's program rows after sending */
	int pipelines_after;  /* its pipeline rows */
	int spec_rows_after;  /* pipeline rows with spec values (the victim's) */
	uint64_t hits_seen;   /* the hits the attacker saw on the shared program */
	uint8_t before[4096]; /* reply frames of an unknown id, then of the victim's */
	size_t before_len;
	uint8_t after[4096];
	size_t after_len;
	int after_send_code; /* a dispatch by id once the attacker sent the bytes */
};

static struct shared *shared_map(void)
{
	struct shared *sh =
		mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	return sh;
}

/* --- cache_list rows --------------------------------------------------------------------- */

struct rows {
	int n;         /* rows of the table */
	int matching;  /* rows whose program_id is the one asked for */
	int with_spec; /* matching rows with a non-empty spec map */
	uint64_t hits; /* the hits of the last matching row */
};

/* Count the rows of cache_list's `table` ("programs" or "pipelines"); -1 when unreadable. */
static int read_rows(const struct tc_reply *r, const char *table, const char *id, struct rows *out)
{
	memset(out, 0, sizeof(*out));
	struct vy_mp_reader rd;
	struct vy_mp_obj o;
	if (!tc_field(r, table, &rd) || vy_mp_read(&rd, &o) != VY_MP_OK || o.type != VY_MP_ARRAY) {
		return -1;
	}
	out->n = (int)o.len;
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj map;
		if (vy_mp_read(&rd, &map) != VY_MP_OK || map.type != VY_MP_MAP) {
			return -1;
		}
		bool match = false;
		uint64_t hits = 0;
		uint32_t spec = 0;
		for (uint32_t k = 0; k < map.len; k++) {
			struct vy_mp_obj key;
			struct vy_mp_obj v;
			if (vy_mp_read(&rd, &key) != VY_MP_OK || key.type != VY_MP_STR) {
				return -1;
			}
			bool is_id = key.len == 10 && memcmp(key.data, "program_id", 10) == 0;
			bool is_hits = key.len == 4 && memcmp(key.data, "hits", 4) == 0;
			bool is_spec = key.len == 4 && memcmp(key.data, "spec", 4) == 0;
			if (!is_id && !is_hits && !is_spec) {
				if (vy_mp_skip(&rd) != VY_MP_OK) {
					return -1;
				}
				continue;
			}
			if (vy_mp_read(&rd, &v) != VY_MP_OK) {
				return -1;
			}
			if (is_id) {
				match = v.type == VY_MP_STR && v.len == strlen(id) &&
					memcmp(v.data, id, v.len) == 0;
			} else if (is_hits) {
				hits = v.u;
			} else {
				spec = v.len;
				for (uint32_t s = 0; s < 2 * v.len; s++) {
					if (vy_mp_skip(&rd) != VY_MP_OK) {
						return -1;
					}
				}
			}
		}
		if (match) {
			out->matching++;
			out->with_spec += spec > 0;
			out->hits = hits;
		}
	}
	return 0;
}

static int cache_list(struct tc *c, const char *id, struct rows *programs, struct rows *pipes)
{
	struct tc_reply r;
	if (t_simple(c, VY_OP_CACHE_LIST, &r) != 0 ||
		read_rows(&r, "programs", id, programs) != 0 ||
		read_rows(&r, "pipelines", id, pipes) != 0) {
		tc_reply_free(&r);
		return -1;
	}
	tc_reply_free(&r);
	return 0;
}

/* A dispatch of `p` (by its bytes, or by `id`) with spec scale = `scale` (0: none); its code. */
static int send_program(struct tc *c, const struct vy_program *p, const char *id,
	const struct t_inputs *in, double scale, struct tc_reply *out)
{
	struct tc_msg m;
	tc_begin(c, &m, in ? VY_OP_DISPATCH : VY_OP_COMPILE, 1 + (in != NULL) + (scale != 0));
	if (id) {
		vy_pack_cstr(&m.pk, "program_id");
		vy_pack_cstr(&m.pk, id);
	} else {
		t_pack_program(&m.pk, p);
	}
	if (in) {
		t_pack_inputs(&m.pk, in);
	}
	if (scale != 0) {
		vy_pack_cstr(&m.pk, "config");
		msgpack_pack_map(&m.pk, 1);
		vy_pack_cstr(&m.pk, "spec");
		msgpack_pack_map(&m.pk, 1);
		vy_pack_cstr(&m.pk, "scale");
		msgpack_pack_double(&m.pk, scale);
	}
	struct tc_reply r;
	if (tc_call(c, &m, &r) != 0) {
		return -1;
	}
	int code = tc_code(&r);
	if (out) {
		*out = r;
	} else {
		tc_reply_free(&r);
	}
	return code;
}

/* The victim runs its program with a secret spec value, and compiles it. */
static int victim_uses(void *arg)
{
	struct shared *sh = arg;
	struct tc c;
	if (tc_connect(&c, sh->sock) != 0 || tc_hello(&c, "victim") != 0) {
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		if (send_program(&c, sh->victim, NULL, sh->victim_in, 7.25, NULL) != 0) {
			return 2;
		}
	}
	for (int i = 0; i < 3; i++) {
		if (send_program(&c, sh->victim, NULL, NULL, 0, NULL) != 0) {
			return 3;
		}
	}
	/* Its own id works for it. */
	if (send_program(&c, NULL, sh->victim_id, sh->victim_in, 0, NULL) != 0) {
		return 4;
	}
	tc_close(&c);
	return 0;
}

/* The attacker lists the caches, then sends the same program (default spec) and its own. */
static int attacker_lists(void *arg)
{
	struct shared *sh = arg;
	struct tc c;
	if (tc_connect(&c, sh->sock) != 0 || tc_hello(&c, "attacker") != 0) {
		return 1;
	}
	struct rows progs;
	struct rows pipes;
	if (cache_list(&c, sh->victim_id, &progs, &pipes) != 0) {
		return 2;
	}
	sh->rows_before = progs.n + pipes.n;
	sh->victim_rows = progs.matching + pipes.matching;
	for (int i = 0; i < 2; i++) {
		if (send_program(&c, sh->victim, NULL, sh->victim_in, 0, NULL) != 0) {
			return 3;
		}
	}
	if (send_program(&c, sh->own, NULL, NULL, 0, NULL) != 0) {
		return 4;
	}
	if (cache_list(&c, sh->victim_id, &progs, &pipes) != 0) {
		return 5;
	}
	sh->programs_after = progs.n;
	sh->pipelines_after = pipes.n;
	sh->spec_rows_after = pipes.with_spec;
	sh->hits_seen = progs.hits;
	tc_close(&c);
	return 0;
}

Test(isolation, cache_list_shows_each_user_only_their_own_rows_unless_admin)
{
	struct vyd d;
	t_start(&d, open_config);
	struct shared *sh = shared_map();
	snprintf(sh->sock, sizeof(sh->sock), "%s", d.sock);
	char name[64];
	snprintf(name, sizeof(name), "iso-secret-%d", (int)getpid());
	struct vy_program *victim = tc_program_renamed("spec_scale", name);
	struct vy_program *own = tc_program_renamed("vector_add", "iso-own");
	struct t_inputs in;
	t_inputs_make(victim, 0, 5, &in);
	msgpack_sbuffer sb;
	struct vy_program_id id;
	vy_program_id_of(victim, &sb, &id);
	msgpack_sbuffer_destroy(&sb);
	vy_program_id_hex(&id, sh->victim_id);
	sh->victim = victim;
	sh->own = own;
	sh->victim_in = &in;

	cr_assert_eq(rel_as_user(VICTIM, VICTIM, victim_uses, sh), 0, "the victim's requests");
	cr_assert_eq(
		rel_as_user(ATTACKER, ATTACKER, attacker_lists, sh), 0, "the attacker's requests");
	/* The admin (root) sees every row, with the totals. */
	struct tc c;
	tc_open(&c, d.sock, "admin");
	struct rows progs;
	struct rows pipes;
	cr_assert_eq(cache_list(&c, sh->victim_id, &progs, &pipes), 0);
	tc_close(&c);

	printf("isolation: cache_list as another user: %d rows before sending anything (%d of the "
	       "victim's program); after sending the same program and its own: %d program rows, "
	       "%d pipeline rows, %d with the victim's spec values, hits shown %" PRIu64
	       " (its own) of %" PRIu64
	       "; admin sees %d program rows, %d pipelines of that program\n",
		sh->rows_before, sh->victim_rows, sh->programs_after, sh->pipelines_after,
		sh->spec_rows_after, sh->hits_seen, progs.hits, progs.n, pipes.matching);
	cr_expect_eq(sh->rows_before, 0, "another user's rows were shown");
	cr_expect_eq(sh->victim_rows, 0);
	cr_expect_eq(sh->programs_after, 2, "its two programs");
	cr_expect_eq(sh->pipelines_after, 2, "its two pipelines");
	cr_expect_eq(sh->spec_rows_after, 0, "the victim's spec values were shown");
	cr_expect_eq(sh->hits_seen, 2, "the hits shown count another user's use");
	cr_expect_eq(progs.matching, 1);
	cr_expect_eq(pipes.matching, 2, "the admin sees both pipelines of the program");
	cr_expect_eq(progs.hits, 3 + 3 + 1 + 2, "the admin sees every user's hits");
	t_inputs_free(&in);
	vy_program_destroy(victim);
	vy_program_destroy(own);
	munmap(sh, sizeof(*sh));
	t_stop(&d);
}

/* --- program ids across users ------------------------------------------------------------ */

/* Two dispatches by the victim's id (the second with a spec setting) on a fresh connection; the
 * two reply frames go to `out` one after the other (the same request ids each time). */
static int by_id(struct shared *sh, uint8_t *out, size_t *len)
{
	struct tc c;
	if (tc_connect(&c, sh->sock) != 0 || tc_hello(&c, "attacker") != 0) {
		return 1;
	}
	*len = 0;
	for (int k = 0; k < 2; k++) {
		struct tc_reply r;
		int code = send_program(&c, NULL, sh->victim_id, sh->victim_in, k ? 2.0 : 0, &r);
		if (code != VY_E_NOT_FOUND || *len + r.len > sizeof(sh->before)) {
			fprintf(stderr, "by id: code %d: %s\n", code, r.r.error.message);
			tc_reply_free(&r);
			return 2;
		}
		memcpy(out + *len, r.frame, r.len);
		*len += r.len;
		tc_reply_free(&r);
	}
	tc_close(&c);
	return 0;
}

static int attacker_before(void *arg)
{
	struct shared *sh = arg;
	return by_id(sh, sh->before, &sh->before_len);
}

static int victim_compiles(void *arg)
{
	struct shared *sh = arg;
	struct tc c;
	if (tc_connect(&c, sh->sock) != 0 || tc_hello(&c, "victim") != 0) {
		return 1;
	}
	if (send_program(&c, sh->victim, NULL, NULL, 0, NULL) != 0 ||
		send_program(&c, NULL, sh->victim_id, sh->victim_in, 0, NULL) != 0) {
		return 2;
	}
	tc_close(&c);
	return 0;
}

static int attacker_after(void *arg)
{
	struct shared *sh = arg;
	int rc = by_id(sh, sh->after, &sh->after_len);
	if (rc) {
		return rc;
	}
	/* Once it has sent the bytes itself, the id is its own too. */
	struct tc c;
	if (tc_connect(&c, sh->sock) != 0 || tc_hello(&c, "attacker") != 0) {
		return 3;
	}
	sh->after_send_code = send_program(&c, sh->victim, NULL, NULL, 0, NULL);
	if (sh->after_send_code == 0) {
		sh->after_send_code = send_program(&c, NULL, sh->victim_id, sh->victim_in, 0, NULL);
	}
	tc_close(&c);
	return 0;
}

Test(isolation, another_users_program_id_is_not_found_exactly_like_an_unknown_one)
{
	struct vyd d;
	t_start(&d, open_config);
	struct shared *sh = shared_map();
	snprintf(sh->sock, sizeof(sh->sock), "%s", d.sock);
	char name[64];
	snprintf(name, sizeof(name), "iso-private-%d", (int)getpid());
	struct vy_program *victim = tc_program_renamed("vector_add", name);
	struct t_inputs in;
	t_inputs_make(victim, 0, 9, &in);
	msgpack_sbuffer sb;
	struct vy_program_id id;
	vy_program_id_of(victim, &sb, &id);
	msgpack_sbuffer_destroy(&sb);
	vy_program_id_hex(&id, sh->victim_id);
	sh->victim = victim;
	sh->victim_in = &in;

	/* The id before it exists, then once the victim has compiled and run it. */
	cr_assert_eq(rel_as_user(ATTACKER, ATTACKER, attacker_before, sh), 0,
		"an unknown id is NOT_FOUND");
	cr_assert_eq(rel_as_user(VICTIM, VICTIM, victim_compiles, sh), 0,
		"the victim's own id works for it");
	int rc = rel_as_user(ATTACKER, ATTACKER, attacker_after, sh);
	bool same = sh->before_len == sh->after_len &&
		    memcmp(sh->before, sh->after, sh->before_len) == 0;
	printf("isolation: dispatch by another user's program id: %s; replies %s "
	       "those of the id before it existed (%zu bytes); after sending the bytes itself: "
	       "code %d\n",
		rc == 0 ? "NOT_FOUND" : "ran", same ? "byte-identical to" : "differ from",
		sh->before_len, sh->after_send_code);
	cr_expect_eq(rc, 0, "another user's program id was served");
	cr_expect(same, "the NOT_FOUND of another user's id tells it from an unknown one");
	cr_expect_eq(sh->after_send_code, 0);
	t_inputs_free(&in);
	vy_program_destroy(victim);
	munmap(sh, sizeof(*sh));
	t_stop(&d);
}

/* --- the disk cache ---------------------------------------------------------------------- */

static void read_file(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	*data = malloc((size_t)n + 1);
	cr_assert_eq(fread(*data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
}

static void write_file(const char *path, const void *a, size_t alen, const void *b, size_t blen)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f, "cannot write %s", path);
	cr_assert_eq(fwrite(a, 1, alen, f), alen);
	if (blen) {
		cr_assert_eq(fwrite(b, 1, blen, f), blen);
	}
	fclose(f);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A listing of `dir` and below (names, sizes, modification times), to see that nothing changed. */
static void listing(const char *dir, char *out, size_t size)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -printf '%%p %%s %%T@ %%m\\n' | sort", dir);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t n = fread(out, 1, size - 1, p);
	out[n] = '\0';
	pclose(p);
}

/* The names of the SPIR-V files under <cache>/vulkan/spirv, one per line. */
static void spirv_names(const char *cache, char *out, size_t size)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/vulkan/spirv", cache);
	out[0] = '\0';
	DIR *d = opendir(dir);
	if (!d) {
		return;
	}
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strstr(e->d_name, ".spv") && !strstr(e->d_name, ".tmp")) {
			n += (size_t)snprintf(out + n, size - n, "%s\n", e->d_name);
		}
	}
	closedir(d);
}

/* The first SPIR-V file in `now` but not in `before`, as a path; false when none. */
static bool new_spirv(
	const char *cache, const char *before, const char *now, char *path, size_t size)
{
	for (const char *p = now; *p;) {
		const char *nl = strchr(p, '\n');
		char name[128];
		snprintf(name, sizeof(name), "%.*s", (int)(nl - p), p);
		if (!strstr(before, name)) {
			snprintf(path, size, "%s/vulkan/spirv/%s", cache, name);
			return true;
		}
		p = nl + 1;
	}
	return false;
}

/* A checked dispatch of `p` by its bytes; the reply's cache field into `cache`. */
static int run_checked(struct tc *c, const struct vy_program *p, char *cache, size_t size)
{
	struct t_inputs in;
	t_inputs_make(p, 0, 21, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	struct tc_reply r;
	cr_assert_eq(t_dispatch(c, p, &in, &r), 0);
	int code = tc_code(&r);
	if (code == 0) {
		cr_expect(t_outputs_equal(&r, &want), "wrong outputs for %s", p->name);
		if (cache) {
			tc_str(&r, "cache", cache, size);
		}
	} else {
		cr_log_error("dispatch of %s: %s", p->name, r.r.error.message);
	}
	tc_reply_free(&r);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	return code;
}

/* A cache folder of its own under /tmp (0700, root's), filled by a daemon that ran `progs`;
 * on Vulkan the SPIR-V file each program added goes to spirv[k] ("" when none). */
static void fill_cache(char *cache, size_t size, struct vy_program **progs, int n,
	char (*spirv)[600], char (*ids)[VY_PROGRAM_ID_HEX], bool *vulkan, const char *const *args)
{
	snprintf(cache, size, "/tmp/vyred-iso-cache-XXXXXX");
	cr_assert(mkdtemp(cache));
	struct vyd d;
	struct vyd_opts o = {.cache = cache, .config = open_config, .args = args};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "filler");
	*vulkan = rel_on_vulkan(&c);
	static char before[65536];
	static char now[65536];
	for (int k = 0; k < n; k++) {
		spirv_names(cache, before, sizeof(before));
		cr_assert_eq(run_checked(&c, progs[k], NULL, 0), 0);
		spirv_names(cache, now, sizeof(now));
		if (spirv && !new_spirv(cache, before, now, spirv[k], sizeof(spirv[k]))) {
			spirv[k][0] = '\0';
		}
		msgpack_sbuffer sb;
		struct vy_program_id id;
		vy_program_id_of(progs[k], &sb, &id);
		msgpack_sbuffer_destroy(&sb);
		vy_program_id_hex(&id, ids[k]);
	}
	tc_close(&c);
	t_stop(&d);
}

static void remove_tree(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

/* Format 1 of a program file, as the daemon wrote it before files were keyed: the magic, the
 * version, the payload length, its plain XXH3-64 and the program id, then the payload. */
static void forge_old_program(
	const char *path, const uint8_t *payload, size_t len, const uint8_t id[16])
{
	uint8_t h[48] = "VYREDPG";
	put_u32(h + 8, 1);
	put_u64(h + 16, len);
	put_u64(h + 24, XXH3_64bits(payload, len));
	memcpy(h + 32, id, 16);
	write_file(path, h, sizeof(h), payload, len);
}

struct planter {
	char cache[300];
	const uint8_t *payload;
	size_t len;
	uint8_t id[16];
	char hex[VY_PROGRAM_ID_HEX];
};

/* The attacker swaps the world-writable cache's programs/ folder for one of its own holding a
 * well-formed old-style file of a program of its choosing. */
static int plant(void *arg)
{
	const struct planter *pl = arg;
	char from[400];
	char to[400];
	snprintf(from, sizeof(from), "%s/programs", pl->cache);
	snprintf(to, sizeof(to), "%s/programs.moved", pl->cache);
	if (rename(from, to) != 0) {
		fprintf(stderr, "rename %s: %s\n", from, strerror(errno));
		return 1;
	}
	if (mkdir(from, 0777) != 0) {
		return 2;
	}
	char path[500];
	snprintf(path, sizeof(path), "%s/%s.vyp", from, pl->hex);
	FILE *f = fopen(path, "wb");
	if (!f) {
		return 3;
	}
	uint8_t h[48] = "VYREDPG";
	put_u32(h + 8, 1);
	put_u64(h + 16, pl->len);
	put_u64(h + 24, XXH3_64bits(pl->payload, pl->len));
	memcpy(h + 32, pl->id, 16);
	bool ok = fwrite(h, 1, sizeof(h), f) == sizeof(h) &&
		  fwrite(pl->payload, 1, pl->len, f) == pl->len;
	return fclose(f) == 0 && ok ? 0 : 4;
}

/* `vyred --check` on `cache`: whether its cache dir row fails with a Fix line. */
static bool check_fails(const char *cache, char *row, size_t size)
{
	char cmd[800];
	snprintf(cmd, sizeof(cmd),
		"'%s' --check --config /dev/null --backend reference "
		"--cache-dir '%s' 2>&1",
		vyd_bin(), cache);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char line[1024];
	bool fail = false;
	bool fix = false;
	row[0] = '\0';
	while (fgets(line, sizeof(line), p)) {
		if (strncmp(line, "cache dir", 9) == 0) {
			fail = strstr(line, "FAIL") != NULL;
			snprintf(row, size, "%s", line);
			row[strcspn(row, "\n")] = '\0';
		} else if (fail && !fix && strstr(line, "Fix:")) {
			fix = true;
		}
	}
	pclose(p);
	return fail && fix;
}

/* What a daemon on the reference backend did with a cache folder it must not trust. */
struct unsafe_use {
	bool warned;        /* the log says the disk cache is disabled, and why */
	uint64_t restored;  /* programs restored from the folder */
	char dir[64];       /* stats' daemon.cache_dir */
	char served[2][16]; /* how each program was served ("disk": from the folder) */
	bool untouched;     /* the folder's listing did not change */
	bool check;         /* vyred --check fails the cache dir row with a Fix line */
	char row[512];      /* that row */
};

/* Start a daemon on `cache`, run `progs` (at most 2) and stop it; `why` is the reason the log
 * must give for disabling the disk cache. */
static void use_unsafe_dir(const char *cache, struct vy_program *const *progs, int n,
	const char *why, struct unsafe_use *u)
{
	memset(u, 0, sizeof(*u));
	static const char *const reference[] = {"--backend", "reference", NULL};
	static char before[65536];
	static char after[65536];
	listing(cache, before, sizeof(before));
	struct vyd d;
	struct vyd_opts o = {.cache = cache, .config = open_config, .args = reference};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "after");
	u->restored = t_stat(&c, "program_cache.restored");
	snprintf(u->dir, sizeof(u->dir), "?");
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	tc_str(&r, "daemon.cache_dir", u->dir, sizeof(u->dir));
	tc_reply_free(&r);
	for (int k = 0; k < n; k++) {
		cr_expect_eq(run_checked(&c, progs[k], u->served[k], sizeof(u->served[k])), 0);
	}
	tc_close(&c);
	cr_expect_eq(vyd_stop(&d), 0);
	u->warned = vyd_log_has(&d, "disk cache disabled: nothing is read") && vyd_log_has(&d, why);
	if (!u->warned) {
		vyd_dump_log(&d);
	}
	vyd_cleanup(&d);
	listing(cache, after, sizeof(after));
	u->untouched = strcmp(before, after) == 0;
	cr_expect(u->untouched, "the daemon wrote to the unsafe folder:\nbefore\n%s\nafter\n%s",
		before, after);
	u->check = check_fails(cache, u->row, sizeof(u->row));
}

Test(isolation, a_cache_dir_others_can_write_is_neither_read_nor_written)
{
	struct vy_program *p = tc_program_renamed("vector_add", "iso-kept");
	struct vy_program *planted = tc_program_renamed("saxpy", "iso-planted");
	char cache[300];
	char ids[1][VY_PROGRAM_ID_HEX];
	bool vulkan;
	/* Which folder the daemon trusts does not depend on the backend: the quick one runs. */
	static const char *const reference[] = {"--backend", "reference", NULL};
	fill_cache(cache, sizeof(cache), &p, 1, NULL, ids, &vulkan, reference);
	/* An admin's mistake: the folder becomes world-writable, and the attacker plants. */
	cr_assert_eq(chmod(cache, 0777), 0);
	struct planter pl;
	snprintf(pl.cache, sizeof(pl.cache), "%s", cache);
	msgpack_sbuffer sb;
	struct vy_program_id id;
	vy_program_id_of(planted, &sb, &id);
	pl.payload = (const uint8_t *)sb.data;
	pl.len = sb.size;
	memcpy(pl.id, id.bytes, 16);
	vy_program_id_hex(&id, pl.hex);
	cr_assert_eq(rel_as_user(ATTACKER, ATTACKER, plant, &pl), 0, "the attacker plants a file");
	msgpack_sbuffer_destroy(&sb);

	struct unsafe_use u;
	struct vy_program *const both[2] = {planted, p};
	use_unsafe_dir(cache, both, 2, "writable by users other than the daemon's (mode 0777)", &u);

	/* A world-writable folder above cache_dir (not a sticky one like /tmp) is as unsafe. */
	char parent[300];
	snprintf(parent, sizeof(parent), "/tmp/vyred-iso-parent-XXXXXX");
	cr_assert(mkdtemp(parent));
	cr_assert_eq(chmod(parent, 0777), 0);
	char below[400];
	snprintf(below, sizeof(below), "%s/cache", parent);
	struct vyd d2;
	struct vyd_opts o2 = {.cache = below, .config = open_config, .args = reference};
	cr_assert_eq(vyd_start(&d2, &o2), 0);
	cr_expect_eq(vyd_stop(&d2), 0);
	bool parent_warned = vyd_log_has(&d2, "disk cache disabled: nothing is read");
	struct stat st;
	bool parent_untouched = stat(below, &st) != 0;
	vyd_cleanup(&d2);

	printf("isolation: world-writable cache_dir: %s, %" PRIu64 " programs restored, planted "
	       "program served as \"%s\", stats cache_dir \"%s\", folder %s; --check: %s; "
	       "world-writable parent: %s, %s\n",
		u.warned ? "refused with a warning" : "USED", u.restored, u.served[0], u.dir,
		u.untouched ? "untouched" : "CHANGED", u.row,
		parent_warned ? "refused with a warning" : "USED",
		parent_untouched ? "nothing created" : "cache_dir CREATED");
	cr_expect(u.warned, "no warning about the unsafe cache_dir in the log");
	cr_expect_eq(u.restored, 0, "a program was read from the unsafe folder");
	cr_expect_str_eq(u.served[0], "miss", "the planted program came from disk");
	cr_expect_str_eq(u.dir, "", "stats report a disk cache");
	cr_expect(u.check, "vyred --check does not fail the cache dir with a Fix line: %s", u.row);
	cr_expect(parent_warned, "a world-writable parent folder was trusted");
	cr_expect(parent_untouched, "cache_dir was created under a world-writable folder");
	remove_tree(cache);
	remove_tree(parent);
	vy_program_destroy(p);
	vy_program_destroy(planted);
}

/*
 * A filled cache whose folder (`file` "") or one of its files is given to the attacker's group
 * with mode `bad`: the daemon must say `warning` in its log, read and write nothing there, and
 * fail `vyred --check`; at mode `good` again the same files are used.
 */
static void unsafe_then_safe(
	const char *program, const char *file, mode_t bad, mode_t good, const char *warning)
{
	struct vy_program *p = tc_program_renamed("vector_add", program);
	char cache[300];
	char ids[1][VY_PROGRAM_ID_HEX];
	bool vulkan;
	static const char *const reference[] = {"--backend", "reference", NULL};
	fill_cache(cache, sizeof(cache), &p, 1, NULL, ids, &vulkan, reference);
	char path[400];
	snprintf(path, sizeof(path), "%s%s%s", cache, *file ? "/" : "", file);
	cr_assert_eq(chown(path, 0, ATTACKER), 0);
	cr_assert_eq(chmod(path, bad), 0);
	struct unsafe_use u;
	use_unsafe_dir(cache, &p, 1, warning, &u);
	/* Back to the safe mode: the same files are trusted again. */
	cr_assert_eq(chmod(path, good), 0);
	struct vyd d;
	struct vyd_opts o = {.cache = cache, .config = open_config, .args = reference};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "after");
	uint64_t restored = t_stat(&c, "program_cache.restored");
	char served[16] = "";
	cr_expect_eq(run_checked(&c, p, served, sizeof(served)), 0);
	tc_close(&c);
	t_stop(&d);

	printf("isolation: %s of mode %04o (group %d): %s, %" PRIu64 " programs restored, the "
	       "program served as \"%s\", stats cache_dir \"%s\", folder %s; --check: %s; at "
	       "%04o: %" PRIu64 " restored, served as \"%s\"\n",
		*file ? file : "cache_dir", (unsigned)bad, ATTACKER,
		u.warned ? "refused with a warning" : "USED", u.restored, u.served[0], u.dir,
		u.untouched ? "untouched" : "CHANGED", u.row, (unsigned)good, restored, served);
	cr_expect(u.warned, "no warning in the log: %s", warning);
	cr_expect_eq(u.restored, 0, "a program was read while the %s was unsafe",
		*file ? file : "folder");
	cr_expect_str_eq(u.served[0], "miss");
	cr_expect_str_eq(u.dir, "", "stats report a disk cache");
	cr_expect(u.check, "vyred --check does not fail the cache dir with a Fix line: %s", u.row);
	cr_expect_eq(restored, 1, "at %04o the cache was not used", (unsigned)good);
	cr_expect_str_eq(served, "disk");
	remove_tree(cache);
	vy_program_destroy(p);
}

/*
 * A cache folder its group can write (0770, the group being the attacker's) is as unsafe as one
 * everyone can write: any member of the group could plant files. The daemon reads nothing from it
 * (not even the program it wrote itself under its own key) and writes nothing to it.
 */
Test(isolation, a_cache_dir_its_group_can_write_is_neither_read_nor_written)
{
	unsafe_then_safe("iso-group-dir", "", 0770, 0700,
		"writable by users other than the daemon's (mode 0770)");
}

/*
 * The MAC key file must be the daemon's alone: one its group can read (0640) would let the group
 * forge cache files, so the daemon uses no disk cache at all (the key is neither used nor
 * replaced, and nothing is read or written) until the mode is 0600 again.
 */
Test(isolation, a_key_file_its_group_can_read_disables_the_disk_cache)
{
	unsafe_then_safe("iso-key-mode", "key", 0640, 0600,
		"is not a 32-byte file of mode 0600 owned by uid 0");
}

/* The header of a file of the Vulkan backend's disk cache: the MAC follows the first 72 bytes
 * (identity, key, length), which format 1 followed with a plain XXH3 instead. */
#define VK_HEADER 104
#define VK_SIGNED 72

/* Where the payload of a backend file starts, by its format. */
static size_t vk_payload_at(const uint8_t *data, size_t len)
{
	cr_assert_gt(len, 80);
	uint32_t format;
	memcpy(&format, data + 8, 4);
	return format == 1 ? 80 : VK_HEADER;
}

Test(isolation, forged_cache_files_with_an_unkeyed_checksum_are_rejected)
{
	struct vy_program *progs[4] = {
		tc_program_renamed("vector_add", "iso-forged-program"),
		tc_program_renamed("binary_ops", "iso-forged-mac"),
		tc_program_renamed("saxpy", "iso-planted-spirv"),
		tc_program_renamed("spec_scale", "iso-forged-spirv-mac"),
	};
	char cache[300];
	char spirv[4][600];
	char ids[4][VY_PROGRAM_ID_HEX];
	bool vulkan;
	fill_cache(cache, sizeof(cache), progs, 4, spirv, ids, &vulkan, NULL);

	/* Program 0: its own bytes in the old format, with a correct plain checksum. */
	char path[500];
	uint8_t *data;
	size_t len;
	msgpack_sbuffer sb;
	struct vy_program_id id;
	vy_program_id_of(progs[0], &sb, &id);
	snprintf(path, sizeof(path), "%s/programs/%s.vyp", cache, ids[0]);
	forge_old_program(path, (const uint8_t *)sb.data, sb.size, id.bytes);
	msgpack_sbuffer_destroy(&sb);
	/* Program 1: the keyed format with a MAC under a key of the forger's own. */
	vy_program_id_of(progs[1], &sb, &id);
	uint8_t h[72] = "VYREDPG";
	put_u32(h + 8, 2);
	put_u64(h + 16, sb.size);
	memcpy(h + 24, id.bytes, 16);
	uint8_t wrong[32] = "not the key of this installation";
	crypto_generichash_state st;
	crypto_generichash_init(&st, wrong, sizeof(wrong), 32);
	crypto_generichash_update(&st, h, 40);
	crypto_generichash_update(&st, (const uint8_t *)sb.data, sb.size);
	crypto_generichash_final(&st, h + 40, 32);
	snprintf(path, sizeof(path), "%s/programs/%s.vyp", cache, ids[1]);
	write_file(path, h, sizeof(h), sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	/* On Vulkan, program 0's SPIR-V becomes program 2's module under an old-style header
	 * (what the identity fields and a plain XXH3 checksum used to vouch for). */
	bool spirv_forged = vulkan && spirv[0][0] && spirv[2][0];
	if (spirv_forged) {
		uint8_t *other;
		size_t other_len;
		read_file(spirv[0], &data, &len);
		read_file(spirv[2], &other, &other_len);
		size_t at = vk_payload_at(other, other_len);
		uint8_t old[80];
		memcpy(old, data, 64);
		put_u32(old + 8, 1);
		put_u64(old + 64, other_len - at);
		put_u64(old + 72, XXH3_64bits(other + at, other_len - at));
		write_file(spirv[0], old, sizeof(old), other + at, other_len - at);
		free(data);
		free(other);
	}
	/* On Vulkan, program 3's own SPIR-V under its own current-format header, the MAC made
	 * with the forger's key: only the MAC is wrong. */
	bool spirv_mac_forged = vulkan && spirv[3][0];
	if (spirv_mac_forged) {
		read_file(spirv[3], &data, &len);
		cr_assert_gt(len, VK_HEADER);
		cr_assert_eq(vk_payload_at(data, len), VK_HEADER);
		crypto_generichash_init(&st, wrong, sizeof(wrong), 32);
		crypto_generichash_update(&st, data, VK_SIGNED);
		crypto_generichash_update(&st, data + VK_HEADER, len - VK_HEADER);
		crypto_generichash_final(&st, data + VK_SIGNED, 32);
		write_file(spirv[3], data, len, NULL, 0);
		free(data);
	}

	struct vyd d;
	struct vyd_opts o = {.cache = cache, .config = open_config};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "after");
	uint64_t rejected = t_stat(&c, "program_cache.disk_rejected");
	uint64_t restored = t_stat(&c, "program_cache.restored");
	char cache0[16] = "";
	int code0 = run_checked(&c, progs[0], cache0, sizeof(cache0));
	int code1 = run_checked(&c, progs[1], NULL, 0);
	char cache3[16] = "";
	int code3 = run_checked(&c, progs[3], cache3, sizeof(cache3));
	uint64_t vk_rejected = vulkan ? rel_device_stat(&c, "disk_rejected") : 0;
	tc_close(&c);
	t_stop(&d);

	printf("isolation: forged cache files: program files rejected %" PRIu64 " of 2 (restored "
	       "%" PRIu64 " of 4); SPIR-V of another program under an old-style header: %s "
	       "(the program served as \"%s\"); its own SPIR-V under a MAC of another key: %s "
	       "(served as \"%s\"); backend files rejected %" PRIu64 "; results %s\n",
		rejected, restored, spirv_forged ? "planted" : "n/a on this backend", cache0,
		spirv_mac_forged ? "planted" : "n/a on this backend", cache3, vk_rejected,
		code0 == 0 && code1 == 0 && code3 == 0 ? "correct" : "WRONG or failed");
	cr_expect_eq(rejected, 2, "a forged program file was accepted");
	cr_expect_eq(restored, 2);
	cr_expect_eq(code0, 0);
	cr_expect_eq(code1, 0);
	cr_expect_eq(code3, 0);
	if (spirv_forged) {
		cr_expect_str_neq(cache0, "disk", "the planted SPIR-V was used");
	}
	if (spirv_mac_forged) {
		cr_expect_str_eq(cache3, "miss", "SPIR-V under another key's MAC was used");
	}
	if (spirv_forged && spirv_mac_forged) {
		cr_expect_eq(vk_rejected, 2, "a forged SPIR-V file was not rejected");
	}
	remove_tree(cache);
	for (int k = 0; k < 4; k++) {
		vy_program_destroy(progs[k]);
	}
}

/* A module spirv-val refuses: the SPIR-V header, then instructions of impossible word counts. */
static void garbage_module(uint32_t garbage[64])
{
	static const uint32_t head[5] = {0x07230203u, 0x00010300u, 0, 100, 0};
	memcpy(garbage, head, sizeof(head));
	for (int i = 5; i < 64; i++) {
		garbage[i] = 0xdead0000u | (uint32_t)i;
	}
}

/* Root reads the key of `cache` and rewrites the SPIR-V file `spirv` to hold `garbage` under its
 * own header and a valid MAC. */
static void sign_garbage(const char *cache, const char *spirv, const uint32_t garbage[64])
{
	char path[400];
	snprintf(path, sizeof(path), "%s/key", cache);
	uint8_t *key;
	size_t key_len;
	read_file(path, &key, &key_len);
	cr_assert_eq(key_len, 32);
	uint8_t *data;
	size_t len;
	read_file(spirv, &data, &len);
	cr_assert_gt(len, VK_HEADER + 20);
	uint8_t h[VK_HEADER];
	memcpy(h, data, VK_SIGNED);
	put_u64(h + 64, 64 * 4);
	crypto_generichash_state st;
	crypto_generichash_init(&st, key, 32, 32);
	crypto_generichash_update(&st, h, VK_SIGNED);
	crypto_generichash_update(&st, (const uint8_t *)garbage, 64 * 4);
	crypto_generichash_final(&st, h + VK_SIGNED, 32);
	write_file(spirv, h, sizeof(h), garbage, 64 * 4);
	free(data);
	free(key);
}

/* Whether the SPIR-V file `spirv` no longer holds `garbage`. */
static bool garbage_replaced(const char *spirv, const uint32_t garbage[64])
{
	uint8_t *data;
	size_t len;
	read_file(spirv, &data, &len);
	bool rebuilt = len != VK_HEADER + 64 * 4 || memcmp(data + VK_HEADER, garbage, 64 * 4) != 0;
	free(data);
	return rebuilt;
}

/*
 * A cache filled by a daemon that ran one program named `name`, whose SPIR-V file goes to
 * `spirv`; false (the case printed as not applying, everything freed) when the daemon is not on
 * Vulkan or wrote no SPIR-V.
 */
static bool one_spirv_cache(
	const char *name, const char *what, struct vy_program **p, char cache[300], char spirv[600])
{
	*p = tc_program_renamed("vector_add", name);
	char files[1][600];
	char ids[1][VY_PROGRAM_ID_HEX];
	bool vulkan;
	fill_cache(cache, 300, p, 1, files, ids, &vulkan, NULL);
	if (!vulkan || !files[0][0]) {
		printf("isolation: %s: n/a on this backend (no SPIR-V files)\n", what);
		remove_tree(cache);
		vy_program_destroy(*p);
		return false;
	}
	snprintf(spirv, 600, "%s", files[0]);
	return true;
}

Test(isolation, garbage_spirv_with_a_valid_mac_never_reaches_the_driver)
{
	struct vy_program *p;
	char cache[300];
	char spirv[600];
	if (!one_spirv_cache(
		    "iso-garbage-spirv", "garbage SPIR-V with a valid MAC", &p, cache, spirv)) {
		return;
	}
	uint32_t garbage[64];
	garbage_module(garbage);
	sign_garbage(cache, spirv, garbage);

	struct vyd d;
	struct vyd_opts o = {.cache = cache, .config = open_config};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "after");
	char got[16] = "";
	int code = run_checked(&c, p, got, sizeof(got));
	uint64_t invalid = rel_device_stat(&c, "spirv_invalid");
	uint64_t rejected = rel_device_stat(&c, "disk_rejected");
	tc_close(&c);
	t_stop(&d);
	bool rebuilt = garbage_replaced(spirv, garbage);

	printf("isolation: garbage SPIR-V with a valid MAC: refused by spirv-val %" PRIu64
	       " time(s) (backend files rejected %" PRIu64 "), the program %s (cache \"%s\"), "
	       "file %s\n",
		invalid, rejected, code == 0 ? "gave correct results" : "FAILED", got,
		rebuilt ? "rebuilt from source" : "left in place");
	cr_expect_eq(code, 0, "the program failed after its SPIR-V file was replaced");
	cr_expect_eq(invalid, 1, "spirv-val did not refuse the module");
	cr_expect_geq(rejected, 1);
	cr_expect_str_neq(got, "disk");
	cr_expect(rebuilt, "the invalid file was not rebuilt");
	remove_tree(cache);
	vy_program_destroy(p);
}

/*
 * SPIR-V is vetted by spirv-val ahead, when the device opens; a vetted file is trusted later only
 * while its bytes are those vetted. A file rewritten after the daemon started (garbage under a
 * valid MAC, its name unchanged) is checked again before the driver sees it.
 */
Test(isolation, spirv_rewritten_after_it_was_vetted_is_checked_again)
{
	struct vy_program *p;
	char cache[300];
	char spirv[600];
	if (!one_spirv_cache(
		    "iso-vetted-spirv", "SPIR-V rewritten after it was vetted", &p, cache, spirv)) {
		return;
	}
	/* The daemon opens its device on the sound file and vets it; the program is not used yet
	 * (no pipeline is built at start, which would read the file before it is rewritten). */
	struct vyd d;
	struct vyd_opts o = {.cache = cache,
		.config = "[daemon]\nsocket_mode = 0666\n[cache]\nwarm_pipelines = 0\n"};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "after");
	uint32_t garbage[64];
	garbage_module(garbage);
	sign_garbage(cache, spirv, garbage);
	char got[16] = "";
	int code = run_checked(&c, p, got, sizeof(got));
	uint64_t invalid = rel_device_stat(&c, "spirv_invalid");
	uint64_t rejected = rel_device_stat(&c, "disk_rejected");
	int again = run_checked(&c, p, NULL, 0);
	tc_close(&c);
	t_stop(&d);
	bool rebuilt = garbage_replaced(spirv, garbage);

	printf("isolation: SPIR-V rewritten to garbage under a valid MAC after it was vetted: "
	       "refused by spirv-val %" PRIu64 " time(s) (backend files rejected %" PRIu64
	       "), the program %s (cache \"%s\"), then %s; file %s\n",
		invalid, rejected, code == 0 ? "gave correct results" : "FAILED", got,
		again == 0 ? "correct again" : "FAILED",
		rebuilt ? "rebuilt from source" : "left in place");
	cr_expect_eq(code, 0, "the program failed after its vetted SPIR-V file was rewritten");
	cr_expect_eq(invalid, 1, "the rewritten module was not checked again");
	cr_expect_eq(rejected, 1);
	cr_expect_str_eq(got, "miss");
	cr_expect_eq(again, 0);
	cr_expect(rebuilt, "the rewritten file was not rebuilt");
	remove_tree(cache);
	vy_program_destroy(p);
}

/* Sign a program file's header and payload with this installation's key, as the daemon does. */
static void sign_program(const uint8_t key[32], uint8_t h[72], const uint8_t *payload, size_t len)
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, key, 32, 32);
	crypto_generichash_update(&st, h, 40);
	crypto_generichash_update(&st, payload, len);
	crypto_generichash_final(&st, h + 40, 32);
}

/*
 * Each validity field of a program file checked alone: a file whose magic, format, length, id or
 * bytes disagree with its name is rejected even under a MAC made with the installation's own key,
 * so the MAC is not the only check (a key that leaks, or a file of an older format signed with
 * it, still cannot pass off the wrong program).
 */
Test(isolation, a_program_file_with_one_field_wrong_is_rejected_under_the_true_key)
{
	enum { N = 6, CONTROL = 5 };
	struct vy_program *progs[N];
	for (int k = 0; k < N; k++) {
		char name[32];
		snprintf(name, sizeof(name), "iso-field-%d", k);
		progs[k] = tc_program_renamed("vector_add", name);
	}
	char cache[300];
	char ids[N][VY_PROGRAM_ID_HEX];
	bool vulkan;
	fill_cache(cache, sizeof(cache), progs, N, NULL, ids, &vulkan, NULL);
	char path[500];
	uint8_t *key;
	size_t key_len;
	snprintf(path, sizeof(path), "%s/key", cache);
	read_file(path, &key, &key_len);
	cr_assert_eq(key_len, 32);
	uint8_t *other;
	size_t other_len;
	snprintf(path, sizeof(path), "%s/programs/%s.vyp", cache, ids[CONTROL]);
	read_file(path, &other, &other_len);
	for (int k = 0; k < CONTROL; k++) {
		uint8_t *data;
		size_t len;
		snprintf(path, sizeof(path), "%s/programs/%s.vyp", cache, ids[k]);
		read_file(path, &data, &len);
		cr_assert_gt(len, 72);
		const uint8_t *payload = data + 72;
		size_t payload_len = len - 72;
		switch (k) {
		case 0: /* the magic */
			data[0] ^= 0x20;
			break;
		case 1: /* the format */
			put_u32(data + 8, 3);
			break;
		case 2: /* the length field, not the file's length */
			put_u64(data + 16, payload_len - 1);
			break;
		case 3: /* the id field: another program's */
			memcpy(data + 24, other + 24, 16);
			break;
		case 4: /* the bytes: another program's, under this name and id */
			payload = other + 72;
			payload_len = other_len - 72;
			put_u64(data + 16, payload_len);
			break;
		}
		sign_program(key, data, payload, payload_len);
		write_file(path, data, 72, payload, payload_len);
		free(data);
	}
	free(other);
	free(key);

	struct vyd d;
	struct vyd_opts o = {.cache = cache, .config = open_config};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "after");
	int failed = 0;
	for (int k = 0; k < N; k++) {
		failed += run_checked(&c, progs[k], NULL, 0) != 0;
	}
	uint64_t rejected = t_stat(&c, "program_cache.disk_rejected");
	uint64_t restored = t_stat(&c, "program_cache.restored");
	tc_close(&c);
	t_stop(&d);
	printf("isolation: program files with one field wrong under the true key: rejected "
	       "%" PRIu64 " of %d, the untouched one restored: %" PRIu64 ", failed runs %d\n",
		rejected, CONTROL, restored, failed);
	cr_expect_eq(rejected, CONTROL, "a program file with a wrong field was accepted");
	cr_expect_eq(restored, 1, "the untouched program file was not restored");
	cr_expect_eq(failed, 0);
	remove_tree(cache);
	for (int k = 0; k < N; k++) {
		vy_program_destroy(progs[k]);
	}
}
