/*
 * How hard exp, exp2, log and log2 are to round correctly in f32: for every f32 input whose
 * result is a normal f32, how close the true result lies to a rounding boundary (a midpoint
 * between two neighbouring f32), relative to the result. An evaluation whose relative error stays
 * below e rounds correctly every input that lies farther than e from a boundary, so the counts
 * below say how accurate a correctly rounded expansion must be, and how many inputs a table of
 * exceptions (or a slower path behind a rounding test) would have to answer. The true results
 * come from the C library's long double functions (64-bit significands on x86-64), well below
 * the smallest threshold counted. The hardest inputs are listed.
 *
 *   cc -O2 -o hard_to_round tools/hard_to_round.c -lm && ./hard_to_round exp2
 *
 * One function takes about two minutes of one core (2^32 inputs).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define LEVELS 5
#define HARDEST 8

static const int thresholds[LEVELS] = {40, 45, 50, 55, 60}; /* 2^-k */

struct fn {
	const char *name;
	long double (*f)(long double);
	float lowest; /* the smallest input counted */
};

static const struct fn fns[] = {
	{"exp2", exp2l, -INFINITY},
	{"exp", expl, -INFINITY},
	{"log2", log2l, 0x1p-126f},
	{"log", logl, 0x1p-126f},
};

/* The true result at x, or NAN where x is not counted or the result is not a normal f32. */
static long double result(const struct fn *fn, float x)
{
	if (!(x >= fn->lowest) || !isfinite(x)) {
		return NAN;
	}
	long double y = fn->f(x);
	long double a = fabsl(y);
	return a >= 0x1p-126L && a < 0x1p128L ? y : NAN;
}

/* |y - b| / |y| for the rounding boundary b nearest y. */
static long double boundary_distance(long double y)
{
	int e;
	frexpl(fabsl(y), &e);
	long double ulp = ldexpl(1.0L, e - 24);
	long double a = fabsl(y);
	long double mid = floorl(a / ulp) * ulp + ulp / 2;
	long double d =
		fminl(fabsl(a - mid), fminl(fabsl(a - (mid - ulp)), fabsl(a - (mid + ulp))));
	return d / a;
}

int main(int argc, char **argv)
{
	const struct fn *fn = NULL;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (argc > 1 && strcmp(argv[1], fns[i].name) == 0) {
			fn = &fns[i];
		}
	}
	if (!fn) {
		fprintf(stderr, "usage: hard_to_round exp|exp2|log|log2\n");
		return 2;
	}
	long double limit[LEVELS];
	for (int k = 0; k < LEVELS; k++) {
		limit[k] = ldexpl(1.0L, -thresholds[k]);
	}
	uint64_t counts[LEVELS] = {0};
	uint64_t inputs = 0;
	float hardest[HARDEST];
	long double hardest_d[HARDEST];
	int n_hardest = 0;
	for (uint64_t u = 0; u < (UINT64_C(1) << 32); u++) {
		uint32_t bits = (uint32_t)u;
		float x;
		memcpy(&x, &bits, sizeof(x));
		long double y = result(fn, x);
		if (isnan(y)) {
			continue;
		}
		inputs++;
		long double d = boundary_distance(y);
		if (d >= limit[0]) {
			continue;
		}
		for (int k = 0; k < LEVELS; k++) {
			counts[k] += d < limit[k];
		}
		/* keep the HARDEST smallest distances, sorted */
		int at = n_hardest < HARDEST ? n_hardest++ : HARDEST;
		while (at > 0 && hardest_d[at - 1] > d) {
			if (at < HARDEST) {
				hardest_d[at] = hardest_d[at - 1];
				hardest[at] = hardest[at - 1];
			}
			at--;
		}
		if (at < HARDEST) {
			hardest_d[at] = d;
			hardest[at] = x;
		}
	}
	printf("%s: %llu inputs with a normal result\n", fn->name, (unsigned long long)inputs);
	for (int k = 0; k < LEVELS; k++) {
		printf("  within 2^-%d of a rounding boundary: %llu\n", thresholds[k],
			(unsigned long long)counts[k]);
	}
	for (int i = 0; i < n_hardest; i++) {
		uint32_t bits;
		memcpy(&bits, &hardest[i], sizeof(bits));
		printf("  %.9g (0x%08X): 2^%.1f\n", (double)hardest[i], bits,
			(double)log2l(hardest_d[i]));
	}
	return 0;
}
