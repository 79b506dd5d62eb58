/*
 * The clock, the statistics and the test data every figure group of vybench uses (bench.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

uint64_t vy_bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a;
	uint64_t y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void vy_bench_sort(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
}

uint64_t vy_bench_percentile(const uint64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	rank = rank < 1 ? 1 : rank > n ? n : rank;
	return sorted[rank - 1];
}

uint64_t vy_bench_median(uint64_t *v, size_t n)
{
	vy_bench_sort(v, n);
	return v[n / 2];
}

double vy_bench_jain(const uint64_t *x, size_t n)
{
	double sum = 0, squares = 0;
	for (size_t i = 0; i < n; i++) {
		sum += (double)x[i];
		squares += (double)x[i] * (double)x[i];
	}
	return squares > 0 ? sum * sum / ((double)n * squares) : 0;
}

/* splitmix64's finalizer. */
uint32_t vy_bench_hash(uint64_t i)
{
	uint64_t z = i + UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return (uint32_t)(z ^ (z >> 31));
}

int vy_bench_wrong(struct vy_err *err, const char *what, const char *fmt, ...)
{
	char detail[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return vy_err_set(err, VY_BENCH_WRONG, what,
		"report the program and device: vyred must give the reference's bytes",
		"%s computed a wrong result: %s", what, detail);
}
