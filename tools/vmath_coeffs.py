#!/usr/bin/env python3
"""Derive the polynomial coefficients of the math-library lowering (planner/vmath*.c).

Each approximation is a minimax polynomial found by the Remez exchange algorithm in high
precision (mpmath), minimizing the largest relative error of the polynomial against its target
over the interval the lowering feeds it. The coefficients are then rounded to f32, the form the
lowering emits, and the relative error is measured again after rounding.

Run: python3 tools/vmath_coeffs.py            (prints a C table for each approximation)
     python3 tools/vmath_coeffs.py NAME...    (only those: erf_p, erfc_b, erfc_r, erfcx_pieces, ...)
Needs python3-mpmath. The tables are copied into planner/vmath_exp.c, vmath_log.c, vmath_trig.c
and vmath_erf.c by hand; the build does not run this script.

erf and erfc (planner/vmath_erf.c) take, besides three polynomials of the table below, the
piecewise polynomials of erfcx(a) = e^(a^2) erfc(a) (erfcx_pieces): on each interval a minimax
polynomial of degree 9 in d = a - z, z an f32 inside the interval, whose three lowest
coefficients are printed as pairs (an f32 and the f32 nearest the remainder) because the lowering
adds those terms exactly; and the constants that it splits into pairs (split_constants).
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


def erfcx(a):
	return mp.exp(a * a) * mp.erfc(a)


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
		("erf_p", "(erf(x) / x - C - p0 z) / z^2, C = 2 / sqrt(pi), p0 = -C / 3",
			series_guard(lambda z: (mp.erf(mp.sqrt(z)) / mp.sqrt(z) - erf_c - erf_p0 * z)
				/ z**2, erf_c / 10),
			mp.mpf(0), ERF_SMALL**2, 2),
		("erfc_b", "(e^r - 1 - r - r^2 / 2) / r^3",
			series_guard(lambda r: (mp.expm1(r) - r - r * r / 2) / r**3, mp.mpf(1) / 6),
			-ln2 / 2 * mp.mpf("1.01"), ln2 / 2 * mp.mpf("1.01"), 4),
		("erfc_r", "(sqrt(pi) a erfcx(a) - 1 + w / 2) / w^2, w = 1 / a^2",
			lambda w: (mp.sqrt(mp.pi) / mp.sqrt(w) * erfcx(1 / mp.sqrt(w)) - 1 + w / 2) / w**2,
			1 / ERFC_CLAMP**2, 1 / ERFC_TAIL**2, 6),
	]


# erf and erfc (planner/vmath_erf.c): the small path below ERF_SMALL, the pieces of erfcx up to
# ERFC_TAIL, its asymptotic form up to ERFC_CLAMP (beyond, erfc is below 2^-126).
ERF_SMALL = mp.mpf("0.25")
ERFC_TAIL = mp.mpf(3)
ERFC_CLAMP = mp.mpf("9.25")
erf_c = 2 / mp.sqrt(mp.pi)
erf_p0 = -erf_c / 3
# [lo, hi) and the expansion point z: hi <= 2 z and z <= 2 lo, so a - z is exact (Sterbenz).
ERFCX_PIECES = [("0.25", "0.75", "0.5"), ("0.75", "1.625", "1.1875"), ("1.625", "3", "2.3125")]
ERFCX_DEGREE = 9


def pair(x):
	hi = to_f32(x)
	return hi, to_f32(x - mp.mpf(hi))


def erfcx_pieces():
	"""The tables of erfcx on its pieces, in the layout of planner/vmath_erf.c."""
	zs, his, los, qs = [], [], [], []
	for lo, hi, z in ERFCX_PIECES:
		lo, hi, z = mp.mpf(lo), mp.mpf(hi), mp.mpf(z)
		assert hi <= 2 * z and z <= 2 * lo and to_f32(z) == z
		f = lambda d, z=z: erfcx(z + d)
		c = remez(f, lo - z, hi - z, ERFCX_DEGREE)
		split = [pair(x) for x in c[:3]]
		used = [mp.mpf(h) + mp.mpf(l) for h, l in split] + [mp.mpf(to_f32(x)) for x in c[3:]]
		print("/* erfcx on [%s, %s), d = a - %s: relative error %.3g (%.3g as the lowering "
			"holds the coefficients) */" % (mp.nstr(lo, 6), mp.nstr(hi, 6), mp.nstr(z, 6),
				float(measure(f, c, lo - z, hi - z)), float(measure(f, used, lo - z, hi - z))))
		zs.append(z)
		his.append([h for h, _ in split])
		los.append([l for _, l in split])
		qs.append(c[3:])

	def rows(table):
		return ",\n\t".join("{%s}" % ", ".join(c_float(x) for x in row) for row in table)
	print("static const float erfcx_z[] = {%s};" % ", ".join(c_float(z) for z in zs))
	print("static const float erfcx_hi[][3] = {%s};" % rows(his))
	print("static const float erfcx_lo[][3] = {%s};" % rows(los))
	print("static const float erfcx_q[][%d] = {%s};" % (ERFCX_DEGREE - 2, rows(qs)))


def split_constants():
	"""The constants of planner/vmath_erf.c that the lowering holds as pairs."""
	for name, v in (("ERF_C", erf_c), ("ERF_P0", erf_p0), ("RSQRT_PI", 1 / mp.sqrt(mp.pi))):
		hi, lo = pair(v)
		print("#define %s_HI %s\n#define %s_LO %s" % (name, c_float(hi), name, c_float(lo)))


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
	if not only or "erfcx_pieces" in only:
		erfcx_pieces()
	if not only or "split_constants" in only:
		split_constants()


if __name__ == "__main__":
	main()
