#!/usr/bin/env python3
"""Derive the polynomial coefficients of the math-library lowering (planner/vmath*.c).

Each approximation is a minimax polynomial found by the Remez exchange algorithm in high
precision (mpmath), minimizing the largest relative error of the polynomial against its target
over the interval the lowering feeds it. The coefficients are then rounded to f32, the form the
lowering emits, and the relative error is measured again after rounding.

Run: python3 tools/vmath_coeffs.py            (prints a C table for each approximation)
Needs python3-mpmath. The tables are copied into planner/vmath_exp.c, vmath_log.c and vmath_trig.c
by hand; the build does not run this script.
"""

import struct
import sys

import mpmath as mp

mp.mp.dps = 60


def to_f32(x):
	return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def c_float(x):
	"""A C float literal that reads back as the f32 x."""
	text = "%.9g" % to_f32(x)
	if "." not in text and "e" not in text:
		text += ".0"
	return text + "f"


def horner(c, x):
	acc = mp.mpf(0)
	for k in reversed(c):
		acc = acc * x + k
	return acc


def error_fn(f, c):
	return lambda x: (horner(c, x) - f(x)) / f(x)


def extrema(e, a, b, grid):
	"""Local extrema of e on [a, b]: dense sampling, then golden-section refinement."""
	xs = [a + (b - a) * mp.mpf(i) / grid for i in range(grid + 1)]
	ys = [e(x) for x in xs]
	found = []
	for i in range(len(xs)):
		left = ys[i - 1] if i > 0 else None
		right = ys[i + 1] if i + 1 < len(xs) else None
		y = ys[i]
		is_ext = True
		for n in (left, right):
			if n is not None and abs(n) > abs(y):
				is_ext = False
		if not is_ext:
			continue
		if left is None or right is None:
			found.append((xs[i], y))
			continue
		lo, hi = xs[i - 1], xs[i + 1]
		g = (mp.sqrt(5) - 1) / 2
		for _ in range(60):
			m1 = hi - g * (hi - lo)
			m2 = lo + g * (hi - lo)
			if abs(e(m1)) > abs(e(m2)):
				hi = m2
			else:
				lo = m1
		x = (lo + hi) / 2
		found.append((x, e(x)))
	return found


def pick_alternating(points, count):
	"""Keep, from sign runs, the largest point of each run, then trim to `count` alternating."""
	runs = []
	for x, y in points:
		if runs and mp.sign(runs[-1][1]) == mp.sign(y):
			if abs(y) > abs(runs[-1][1]):
				runs[-1] = (x, y)
		else:
			runs.append((x, y))
	while len(runs) > count:
		if abs(runs[0][1]) < abs(runs[-1][1]):
			runs.pop(0)
		else:
			runs.pop()
	return [x for x, _ in runs]


def remez(f, a, b, degree, iters=40, grid=3000):
	"""Minimax polynomial of `degree` for f on [a, b], relative error."""
	n = degree + 1
	ref = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * i / n) for i in range(n + 1)]
	c = None
	for _ in range(iters):
		rows = []
		rhs = []
		for j, x in enumerate(ref):
			rows.append([x**i for i in range(n)] + [(-1) ** j * f(x)])
			rhs.append(f(x))
		sol = mp.lu_solve(mp.matrix(rows), mp.matrix(rhs))
		c = [sol[i] for i in range(n)]
		level = abs(sol[n])
		pts = extrema(error_fn(f, c), a, b, grid)
		worst = max(abs(y) for _, y in pts)
		new_ref = pick_alternating(pts, n + 1)
		if len(new_ref) < n + 1:
			break
		ref = new_ref
		if worst <= level * (1 + mp.mpf("1e-8")):
			break
	return c


def measure(f, c, a, b, grid=20000):
	e = error_fn(f, c)
	return max(abs(e(a + (b - a) * mp.mpf(i) / grid)) for i in range(grid + 1))


def series_guard(g, limit):
	"""g with its limit at 0 (the targets below are removable singularities there)."""
	return lambda x: limit if x == 0 else g(x)


# Each entry: name, target, interval, degree. The variable is r for the exp family and z = x^2
# for the odd and even functions; the lowering evaluates them with fma in Horner form.
def targets():
	ln2 = mp.log(2)
	ln10 = mp.log(10)
	lg2 = mp.log10(2)
	s_max = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)
	t8 = mp.tan(mp.pi / 8)
	return [
		("exp_q", "(e^r - 1) / r", series_guard(lambda r: mp.expm1(r) / r, mp.mpf(1)),
			-ln2 / 2 * mp.mpf("1.01"), ln2 / 2 * mp.mpf("1.01"), 5),
		("exp2_q", "(2^r - 1) / r", series_guard(lambda r: mp.expm1(r * ln2) / r, ln2),
			mp.mpf("-0.5"), mp.mpf("0.5"), 5),
		("exp10_q", "(10^r - 1) / r", series_guard(lambda r: mp.expm1(r * ln10) / r, ln10),
			-lg2 / 2 * mp.mpf("1.01"), lg2 / 2 * mp.mpf("1.01"), 6),
		("log_t", "(2 atanh(s) / s - 2) / z, z = s^2",
			series_guard(lambda z: (2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z) - 2) / z,
				mp.mpf(2) / 3),
			mp.mpf(0), s_max**2, 3),
		("sin_s", "(sin(r) / r - 1) / z", series_guard(
			lambda z: (mp.sin(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, -mp.mpf(1) / 6),
			mp.mpf(0), (mp.pi / 4) ** 2 * mp.mpf("1.0001"), 3),
		("cos_c", "(cos(r) - 1) / z", series_guard(lambda z: (mp.cos(mp.sqrt(z)) - 1) / z,
			-mp.mpf(1) / 2),
			mp.mpf(0), (mp.pi / 4) ** 2 * mp.mpf("1.0001"), 4),
		("tan_t", "(tan(r) / r - 1) / z", series_guard(
			lambda z: (mp.tan(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, mp.mpf(1) / 3),
			mp.mpf(0), (mp.pi / 4) ** 2 * mp.mpf("1.0001"), 7),
		("asin_a", "(asin(x) / x - 1) / z", series_guard(
			lambda z: (mp.asin(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, mp.mpf(1) / 6),
			mp.mpf(0), mp.mpf("0.25"), 5),
		("atan_b", "(atan(u) / u - 1) / z", series_guard(
			lambda z: (mp.atan(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, -mp.mpf(1) / 3),
			mp.mpf(0), t8**2 * mp.mpf("1.0001"), 5),
		("sinh_h", "(sinh(x) / x - 1) / z", series_guard(
			lambda z: (mp.sinh(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, mp.mpf(1) / 6),
			mp.mpf(0), mp.mpf(1), 4),
		("tanh_k", "(tanh(x) / x - 1) / z", series_guard(
			lambda z: (mp.tanh(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, -mp.mpf(1) / 3),
			mp.mpf(0), mp.mpf("0.390625"), 6),
	]


def main():
	only = set(sys.argv[1:])
	for name, desc, f, a, b, degree in targets():
		if only and name not in only:
			continue
		c = remez(f, a, b, degree)
		c32 = [mp.mpf(to_f32(x)) for x in c]
		err = measure(f, c, a, b)
		err32 = measure(f, c32, a, b)
		print("/* %s: %s on [%s, %s], degree %d: relative error %.3g (%.3g with f32 "
			"coefficients) */" % (name, desc, mp.nstr(a, 8), mp.nstr(b, 8), degree,
				float(err), float(err32)))
		print("static const float %s[] = {%s};" % (name, ", ".join(c_float(x) for x in c)))
		sys.stdout.flush()


if __name__ == "__main__":
	main()
