/*
 * Parts of the daemon on their own, linked from its source: the latency histogram (whose
 * quantiles the daemon's figures are made of, and which a running daemon fills with timings no
 * test can know), the intrusive hash table past its first growth, and the log's escaping of
 * control bytes. Every figure is pinned, computed by hand from the documented scheme.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hist.h"
#include "htable.h"
#include "log.h"

/* --- histogram ----------------------------------------------------------------------------- */

/* p50 of a histogram holding `v` and a much larger value: the upper edge of v's bucket. */
static uint64_t edge_of(uint64_t v)
{
	struct vy_hist h = {0};
	vy_hist_add(&h, v);
	vy_hist_add(&h, UINT64_C(1) << 40);
	return vy_hist_quantile(&h, 0.5);
}

Test(hist, each_value_lands_in_its_quarter_of_a_power_of_two)
{
	/* Values 0 to 7 have buckets of one; from 8 on, four buckets per power of two:
	 * [8, 9] [10, 11] [12, 13] [14, 15], [16, 19] [20, 23] ..., [1024, 1279] [1280, 1535] ...
	 */
	static const uint64_t cases[][2] = {
		{0, 0},
		{1, 1},
		{3, 3},
		{4, 4},
		{7, 7},
		{8, 9},
		{9, 9},
		{10, 11},
		{12, 13},
		{15, 15},
		{16, 19},
		{19, 19},
		{20, 23},
		{24, 27},
		{28, 31},
		{31, 31},
		{32, 39},
		{48, 55},
		{1023, 1023},
		{1024, 1279},
		{1279, 1279},
		{1280, 1535},
		{1536, 1791},
		{1792, 2047},
		{1000000, 1048575},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(edge_of(cases[i][0]), cases[i][1],
			"the bucket of %llu ends at %llu, "
			"not %llu",
			(unsigned long long)cases[i][0], (unsigned long long)cases[i][1],
			(unsigned long long)edge_of(cases[i][0]));
	}
	/* The last bucket ends at the largest value. */
	struct vy_hist h = {0};
	vy_hist_add(&h, UINT64_MAX);
	cr_expect_eq(vy_hist_quantile(&h, 0.5), UINT64_MAX);
	cr_expect_eq(h.buckets[VY_HIST_BUCKETS - 1], 1);
}

Test(hist, quantiles_of_one_to_a_hundred)
{
	struct vy_hist h = {0};
	cr_expect_eq(vy_hist_quantile(&h, 0.5), 0, "no values: 0");
	for (uint64_t v = 1; v <= 100; v++) {
		vy_hist_add(&h, v);
	}
	cr_expect_eq(h.count, 100);
	cr_expect_eq(h.sum, 5050);
	cr_expect_eq(h.max, 100);
	/* Rank 25 is 25, in [24, 27]; rank 50 is 50, in [48, 55]; rank 99 is 99, in [96, 111],
	 * which ends above the largest value, 100. */
	cr_expect_eq(vy_hist_quantile(&h, 0.25), 27);
	cr_expect_eq(vy_hist_quantile(&h, 0.5), 55);
	cr_expect_eq(vy_hist_quantile(&h, 0.99), 100);
	cr_expect_eq(vy_hist_quantile(&h, 1.0), 100);
	/* The smallest rank is 1: the value 1. */
	cr_expect_eq(vy_hist_quantile(&h, 0.001), 1);
}

Test(hist, an_outlier_moves_only_the_top_quantile)
{
	struct vy_hist h = {0};
	for (uint64_t v = 1; v <= 99; v++) {
		vy_hist_add(&h, v);
	}
	vy_hist_add(&h, 1000000);
	cr_expect_eq(h.max, 1000000);
	cr_expect_eq(h.sum, 4950 + 1000000);
	cr_expect_eq(vy_hist_quantile(&h, 0.5), 55);
	/* Rank 99 is 99: its bucket's upper edge, now below the maximum. */
	cr_expect_eq(vy_hist_quantile(&h, 0.99), 111);
	/* Rank 100 is the outlier, in [917504, 1048575], capped at 1000000. */
	cr_expect_eq(vy_hist_quantile(&h, 1.0), 1000000);
}

Test(hist, the_rank_is_rounded_up)
{
	/* Nearest rank: p50 of three values is the second (rank ceil(1.5) = 2), p34 as well
	 * (ceil(1.02) = 2), p33 the first (ceil(0.99) = 1). */
	struct vy_hist h = {0};
	vy_hist_add(&h, 10);
	vy_hist_add(&h, 20);
	vy_hist_add(&h, 30);
	cr_expect_eq(vy_hist_quantile(&h, 0.5), 23, "20 is in [20, 23]");
	cr_expect_eq(vy_hist_quantile(&h, 0.34), 23);
	cr_expect_eq(vy_hist_quantile(&h, 0.33), 11, "10 is in [10, 11]");
	cr_expect_eq(vy_hist_quantile(&h, 0.99), 30, "30 is in [28, 31], capped at 30");
}

/* --- hash table ---------------------------------------------------------------------------- */

struct entry {
	struct vy_hlink link;
	uint32_t key;
};

static uint64_t hash_of(uint32_t key)
{
	/* Every key below 64 shares one hash, so chains form too; the rest spread over the bits. */
	return key < 64 ? UINT64_C(0x5eed) : (uint64_t)key * UINT64_C(0x9E3779B97F4A7C15);
}

static struct entry *find(const struct vy_htable *t, uint32_t key)
{
	for (struct vy_hlink *l = vy_htable_bucket(t, hash_of(key)); l; l = l->next) {
		struct entry *e = (struct entry *)l;
		if (e->key == key) {
			return e;
		}
	}
	return NULL;
}

Test(htable, entries_stay_findable_through_every_growth_and_go_when_removed)
{
	enum { N = 5000 };
	struct entry *es = calloc(N, sizeof(*es));
	cr_assert(es);
	struct vy_htable t = {0};
	cr_expect_null(find(&t, 1), "an empty table finds nothing");
	for (uint32_t i = 0; i < N; i++) {
		es[i].key = i;
		es[i].link.hash = hash_of(i);
		vy_htable_insert(&t, &es[i].link);
		if (i == 255 || i == 256 || i == 1024) {
			/* Just before and after each growth, every entry so far is found. */
			for (uint32_t k = 0; k <= i; k++) {
				cr_assert_eq(
					find(&t, k), &es[k], "key %u after %u inserts", k, i + 1);
			}
		}
	}
	cr_expect_eq(t.count, N);
	cr_expect_eq(t.n_buckets, 8192, "doubled from 256 until it holds 5000");
	for (uint32_t k = 0; k < N; k++) {
		cr_assert_eq(find(&t, k), &es[k], "key %u", k);
	}
	/* Remove the odd keys: the even ones stay. */
	for (uint32_t k = 1; k < N; k += 2) {
		vy_htable_remove(&t, &es[k].link);
	}
	cr_expect_eq(t.count, N / 2);
	for (uint32_t k = 0; k < N; k++) {
		cr_assert_eq(find(&t, k), k % 2 ? NULL : &es[k], "key %u", k);
	}
	for (uint32_t k = 0; k < N; k += 2) {
		vy_htable_remove(&t, &es[k].link);
	}
	cr_expect_eq(t.count, 0);
	for (uint32_t k = 0; k < N; k++) {
		cr_assert_null(find(&t, k), "key %u was removed", k);
	}
	vy_htable_finish(&t);
	cr_expect_eq(t.n_buckets, 0);
	cr_expect_null(find(&t, 1));
	free(es);
}

/* --- log ----------------------------------------------------------------------------------- */

/* What one vy_log call writes to stderr, as a NUL-terminated string in `buf`. */
static void logged(enum vy_log_level level, const char *text, char *buf, size_t size)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	int saved = dup(STDERR_FILENO);
	cr_assert_geq(saved, 0);
	cr_assert_geq(dup2(fds[1], STDERR_FILENO), 0);
	close(fds[1]);
	vy_log(level, "client %s: hello", text);
	cr_assert_geq(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	size_t n = 0;
	ssize_t got;
	while (n < size - 1 && (got = read(fds[0], buf + n, size - 1 - n)) > 0) {
		n += (size_t)got;
	}
	buf[n] = '\0';
	close(fds[0]);
}

Test(log, every_control_byte_of_a_client_name_becomes_a_space)
{
	vy_log_setup(VY_LOG_INFO, false);
	char line[256];
	/* DEL, an escape sequence, a carriage return, a newline that would start a line of
	 * priority 3, a tab, and the first and last control bytes; UTF-8 stays as it is. */
	logged(VY_LOG_WARNING,
		"ab\x7f"
		"cd\x1b[31mef\r\n<3>forged\tg\x01h\x1fi \xc3\xa9",
		line, sizeof(line));
	cr_expect_str_eq(line, "<4>client ab cd [31mef  <3>forged g h i \xc3\xa9: hello\n");
	/* Below the level, nothing. */
	logged(VY_LOG_DEBUG, "quiet", line, sizeof(line));
	cr_expect_str_eq(line, "");
}
