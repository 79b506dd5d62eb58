#!/usr/bin/env python3
"""Write the conformance corpus (tests/conformance/cases/*.json).

Each case is a program, the generators of its inputs, its dispatch config and, where the
expected outputs can be computed without the interpreter, those outputs. The expectations are
computed here, in Python, from the definitions of docs/ir.md and DESIGN.md section 4: integer
operations on Python integers, f32 operations on exact rationals (fractions.Fraction) rounded
to nearest even by hand, so nothing here shares code or libm with the C interpreter. Inputs
are expanded by a Python copy of the generators the runner implements (README.md), so a
disagreement between the two shows up as a failed expectation.

The correctly rounded atan2 and pow of the lowered functions' cases come from mpmath
(python3-mpmath) at 200 to 300 bits; hypot's from an exact integer square root.

Run it from anywhere; it rewrites every case file, and the output is deterministic:
    python3 tests/conformance/make_corpus.py
"""

import functools
import json
import math
import os
import struct
import sys
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")
M32 = 0xFFFFFFFF
INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
NAN = 0x7FC00000
INF = 0x7F800000
NINF = 0xFF800000

# ---------------------------------------------------------------------------------------------
# Witness values and generators (the runner's generators, re-implemented)

WITNESS = {
    "u32": [0, 1, 2, 3, 7, 31, 32, 33, 0xFFFF, 0x10000, 0x12345678, 0x7FFFFFFF, 0x80000000,
            0x80000001, 0xFFFFFFFE, 0xFFFFFFFF],
    "i32": [x & M32 for x in [0, 1, -1, 2, -2, 3, -3, 7, 31, 32, -32, 0x12345678, INT_MAX,
                              INT_MAX - 1, INT_MIN, INT_MIN + 1]],
    "f32": [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000, 0x3FC00000,
            0xC0200000, 0x40400000, 0x3DCCCCCD, 0x4B800000, 0x4F000000, 0x7F7FFFFF, 0xFF7FFFFF,
            0x00800000, 0x80800000, 0x00000001, 0x007FFFFF, 0x80000001, 0x7F800000, 0xFF800000,
            0x7FC00000, 0x7F800001, 0xFFC00000],
    "bool": [0, 1, 2, 0xFFFFFFFF],
}


class SplitMix:
    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)


def value_bits(v, ty):
    """The word of one literal value of the case format."""
    if isinstance(v, str):
        if v.startswith("0x"):
            return int(v, 16)
        if ty != "f32":
            raise ValueError(v)
        return {"nan": NAN, "inf": INF, "-inf": NINF, "-0": 0x80000000}[v]
    if isinstance(v, bool):
        return 1 if v else 0
    if ty == "f32":
        return round_double(float(v), flush=False)
    if ty == "bool":
        return v & M32
    return v & M32


def gen_eval(g, ty):
    if isinstance(g, list):
        return [value_bits(v, ty) for v in g]
    if "values" in g:
        return [value_bits(v, ty) for v in g["values"]]
    if "witness" in g:
        assert g["witness"] == ty, (g, ty)
        return list(WITNESS[ty])
    if "fill" in g:
        return [value_bits(g["fill"], ty)] * g["count"]
    if "iota" in g:
        assert g["iota"] == ty
        start, step = g.get("start", 0), g.get("step", 1)
        if ty == "f32":
            return [round_double(float(start) + i * float(step), flush=False)
                    for i in range(g["count"])]
        return [(start + i * step) & M32 for i in range(g["count"])]
    if "random" in g:
        assert g["random"] == ty
        rng = SplitMix(g["seed"])
        out = []
        for _ in range(g["count"]):
            if ty == "bool":
                out.append(rng.next() >> 63)
            elif ty == "f32" and "min" in g:
                u = (rng.next() >> 40) / float(1 << 24)
                lo, hi = float(g["min"]), float(g["max"])
                out.append(round_double(lo + (hi - lo) * u, flush=False))
            elif "min" in g:
                lo, hi = g["min"], g["max"]
                out.append((lo + (rng.next() >> 32) % (hi - lo + 1)) & M32)
            else:
                out.append(rng.next() >> 32)
        return out
    if "concat" in g:
        return [w for part in g["concat"] for w in gen_eval(part, ty)]
    if "repeat" in g:
        return gen_eval(g["repeat"], ty) * g["times"]
    if "stretch" in g:
        return [w for w in gen_eval(g["stretch"], ty) for _ in range(g["times"])]
    raise ValueError(g)


def cross(ty_a, ty_b=None):
    """Generators for all pairs of witnesses: a stretched, b repeated."""
    ty_b = ty_b or ty_a
    na, nb = len(WITNESS[ty_a]), len(WITNESS[ty_b])
    return ({"stretch": {"witness": ty_a}, "times": nb},
            {"repeat": {"witness": ty_b}, "times": na})


# ---------------------------------------------------------------------------------------------
# f32 arithmetic on exact rationals

def bits_to_float(b):
    return struct.unpack("<f", struct.pack("<I", b & M32))[0]


def is_nan_bits(b):
    return (b & 0x7F800000) == 0x7F800000 and (b & 0x007FFFFF) != 0


def canon(b):
    """Canonical f32: NaN -> 0x7FC00000, subnormal -> signed zero."""
    if is_nan_bits(b):
        return NAN
    if (b & 0x7F800000) == 0 and (b & 0x007FFFFF) != 0:
        return b & 0x80000000
    return b


def load_f(b):
    """The value an f32 load gives, as a Python float (exact)."""
    return bits_to_float(canon(b))


def round_frac(q, neg_zero=False, flush=True):
    """f32 bits of the rational q rounded to nearest even, then flushed (canonical) unless
    `flush` is false (input values keep their subnormals: loads flush them)."""
    if q == 0:
        return 0x80000000 if neg_zero else 0
    sign = 0x80000000 if q < 0 else 0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    assert Fraction(2) ** e <= a < Fraction(2) ** (e + 1)
    qe = e - 23 if e >= -126 else -149
    m = a / (Fraction(2) ** qe)
    n = m.numerator // m.denominator
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if e >= -126:
        if n == 1 << 24:
            n = 1 << 23
            e += 1
        if e > 127:
            return sign | INF
        bits = ((e + 127) << 23) | (n - (1 << 23))
    else:
        bits = n  # subnormal, or exactly the smallest normal when n reached 2^23
    return canon(sign | bits) if flush else sign | bits


def round_double(x, flush=True):
    """f32 bits of a double rounded to nearest even (canonical unless `flush` is false)."""
    if math.isnan(x):
        return NAN
    if math.isinf(x):
        return INF if x > 0 else NINF
    if x == 0:
        return 0x80000000 if math.copysign(1.0, x) < 0 else 0
    return round_frac(Fraction(x), flush=flush)


def fadd(a, b):
    x, y = load_f(a), load_f(b)
    if not (math.isfinite(x) and math.isfinite(y)):
        return round_double(x + y)
    q = Fraction(x) + Fraction(y)
    if q == 0:
        return round_double(x + y)  # the double sum is an exact zero with IEEE's sign
    return round_frac(q)


def fsub(a, b):
    return fadd(a, fneg(b))  # a - b is a + (-b) in IEEE, zero signs included


def fmul(a, b):
    x, y = load_f(a), load_f(b)
    if not (math.isfinite(x) and math.isfinite(y)):
        return round_double(x * y)
    q = Fraction(x) * Fraction(y)
    if q == 0:
        return round_double(x * y)
    return round_frac(q)


def fdiv(a, b):
    x, y = load_f(a), load_f(b)
    if math.isnan(x) or math.isnan(y):
        return NAN
    sx, sy = math.copysign(1.0, x) < 0, math.copysign(1.0, y) < 0
    sign = 0x80000000 if sx != sy else 0
    if y == 0:
        return NAN if x == 0 else sign | INF
    if math.isinf(x):
        return NAN if math.isinf(y) else sign | INF
    if math.isinf(y):
        return sign
    if x == 0:
        return sign
    return round_frac(Fraction(x) / Fraction(y))


def ffmod(a, b):
    """C's fmodf: exact, so the double remainder of the two f32 values is the f32 one."""
    x, y = load_f(a), load_f(b)
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return NAN
    if math.isinf(y):
        return canon(a)
    r = math.fmod(x, y)
    assert Fraction(x) - Fraction(y) * int(Fraction(x) / Fraction(y)) == Fraction(r)
    return canon(struct.unpack("<I", struct.pack("<f", r))[0])


def ffma(a, b, c):
    x, y, z = load_f(a), load_f(b), load_f(c)
    if math.isnan(x) or math.isnan(y) or math.isnan(z):
        return NAN
    if math.isinf(x) or math.isinf(y):
        if x == 0 or y == 0:
            return NAN
        p = math.copysign(math.inf, x) * math.copysign(1.0, y)
        if math.isinf(z) and z != p:
            return NAN
        return round_double(p)
    if math.isinf(z):
        return round_double(z)
    q = Fraction(x) * Fraction(y) + Fraction(z)
    if q == 0:
        prod_zero = x == 0 or y == 0
        ps = (math.copysign(1.0, x) < 0) != (math.copysign(1.0, y) < 0)
        zs = math.copysign(1.0, z) < 0
        return round_frac(q, neg_zero=prod_zero and z == 0 and ps and zs)
    return round_frac(q)


def fsqrt(a):
    x = load_f(a)
    if math.isnan(x) or (x < 0):
        return NAN
    if x == 0:
        return canon(a) & 0x80000000
    if math.isinf(x):
        return INF
    return round_double(math.sqrt(x))  # correctly rounded: double has more than 2*24+2 bits


def fneg(a):
    c = canon(a)
    return NAN if is_nan_bits(c) else c ^ 0x80000000


def fabs(a):
    c = canon(a)
    return NAN if is_nan_bits(c) else c & 0x7FFFFFFF


def fminmax(a, b, want_min):
    ca, cb = canon(a), canon(b)
    if is_nan_bits(ca):
        return cb
    if is_nan_bits(cb):
        return ca
    x, y = bits_to_float(ca), bits_to_float(cb)
    if x == y:  # equal values, or +0 against -0: the sign decides
        neg_a = (ca >> 31) == 1
        neg_b = (cb >> 31) == 1
        if want_min:
            return ca if neg_a or not neg_b else cb
        return ca if not neg_a or neg_b else cb
    if want_min:
        return ca if x < y else cb
    return ca if x > y else cb


def fround_like(a, how):
    c = canon(a)
    x = bits_to_float(c)
    if not math.isfinite(x):
        return NAN if math.isnan(x) else c
    if abs(x) >= 2 ** 23:
        return c
    q = Fraction(x)
    if how == "floor":
        n = math.floor(q)
    elif how == "ceil":
        n = math.ceil(q)
    elif how == "trunc":
        n = math.trunc(q)
    else:
        n = math.floor(abs(q) + Fraction(1, 2))
        n = -n if x < 0 else n
    if n == 0:
        return c & 0x80000000
    return round_frac(Fraction(n))


def fsign(a):
    c = canon(a)
    x = bits_to_float(c)
    if math.isnan(x):
        return NAN
    if x > 0:
        return 0x3F800000
    if x < 0:
        return 0xBF800000
    return 0


def fcmp(a, b, op):
    x, y = load_f(a), load_f(b)
    if math.isnan(x) or math.isnan(y):
        return 1 if op == "ne" else 0
    return int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
                "ge": x >= y}[op])


# ---------------------------------------------------------------------------------------------
# Integer operations

def s32(x):
    x &= M32
    return x - (1 << 32) if x & 0x80000000 else x


def u32(x):
    return x & M32


def rotl(x, n):
    n &= 31
    return ((x << n) | (x >> (32 - n))) & M32 if n else x


def clz(x):
    return 32 - x.bit_length()


def ctz(x):
    return 32 if x == 0 else (x & -x).bit_length() - 1


def rev32(x):
    return int("{:032b}".format(x)[::-1], 2)


def u32_binop(op, a, b):
    if op == "add":
        return u32(a + b)
    if op == "sub":
        return u32(a - b)
    if op == "mul":
        return u32(a * b)
    if op == "div":
        return M32 if b == 0 else a // b
    if op == "mod":
        return 0 if b == 0 else a % b
    if op == "bit_and":
        return a & b
    if op == "bit_or":
        return a | b
    if op == "bit_xor":
        return a ^ b
    if op == "shl":
        return u32(a << (b & 31))
    if op == "shr":
        return a >> (b & 31)
    if op == "rotl":
        return rotl(a, b)
    if op == "rotr":
        return rotl(a, (32 - (b & 31)) & 31)
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if op == "abs_diff":
        return abs(a - b)
    if op == "sat_add":
        return min(a + b, M32)
    if op == "sat_sub":
        return max(a - b, 0)
    if op == "sat_mul":
        return min(a * b, M32)
    if op == "mul_high":
        return (a * b) >> 32
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        return int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
                    "ge": a >= b}[op])
    if op == "and":
        return int(a != 0 and b != 0)
    if op == "or":
        return int(a != 0 or b != 0)
    raise ValueError(op)


def i32_binop(op, a, b):
    """a and b are words; returns a word. div and mod assume no trap."""
    x, y = s32(a), s32(b)
    if op == "add":
        return u32(x + y)
    if op == "sub":
        return u32(x - y)
    if op == "mul":
        return u32(x * y)
    if op == "div":
        q = abs(x) // abs(y)
        return u32(q if (x < 0) == (y < 0) else -q)
    if op == "mod":
        r = abs(x) % abs(y)
        return u32(-r if x < 0 else r)
    if op in ("bit_and", "bit_or", "bit_xor", "rotl", "rotr"):
        return u32_binop(op, a, b)
    if op == "shl":
        return u32(a << (b & 31))
    if op == "shr":
        return u32(x >> (b & 31))
    if op == "min":
        return u32(min(x, y))
    if op == "max":
        return u32(max(x, y))
    if op == "mul_high":
        return u32((x * y) >> 32)
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        return int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
                    "ge": x >= y}[op])
    if op == "and":
        return int(x != 0 and y != 0)
    if op == "or":
        return int(x != 0 or y != 0)
    if op == "sat_add":
        return u32(min(max(x + y, INT_MIN), INT_MAX))
    if op == "sat_sub":
        return u32(min(max(x - y, INT_MIN), INT_MAX))
    if op == "abs_diff":
        return abs(x - y)
    raise ValueError(op)


def int_unop(op, a, signed):
    x = s32(a) if signed else a
    if op == "neg":
        return u32(-x)
    if op == "bit_not":
        return a ^ M32
    if op == "not":
        return int(a == 0)
    if op == "popcount":
        return bin(a).count("1")
    if op == "clz":
        return clz(a)
    if op == "ctz":
        return ctz(a)
    if op == "reverse_bits":
        return rev32(a)
    if op == "abs":
        return u32(abs(x))
    if op == "sign":
        return u32((x > 0) - (x < 0))
    if op == "unpack4_low":
        return a & 0xF
    if op == "unpack4_high":
        return a >> 28
    if op == "unpack8_low":
        return a & 0xFF
    if op == "unpack8_high":
        return a >> 24
    raise ValueError(op)


def cast(word, src, dst):
    """The cast table of docs/ir.md section 8.9, on words."""
    if src == "bool":
        v = 1 if word != 0 else 0
        if dst == "f32":
            return 0x3F800000 if v else 0
        return v
    if dst == "bool":
        if src == "f32":
            return 0 if bits_to_float(canon(word)) == 0 else 1
        return 1 if word != 0 else 0
    if src == dst:
        return canon(word) if src == "f32" else word
    if src in ("u32", "i32") and dst in ("u32", "i32"):
        return word
    if dst == "f32":
        n = s32(word) if src == "i32" else word
        return round_frac(Fraction(n))
    x = load_f(word)
    if math.isnan(x):
        return 0
    lo, hi = (0, M32) if dst == "u32" else (INT_MIN, INT_MAX)
    if math.isinf(x):
        return u32(hi if x > 0 else lo)
    n = math.trunc(Fraction(x))
    return u32(min(max(n, lo), hi))


# ---------------------------------------------------------------------------------------------
# Program building helpers (the JSON form of docs/ir.md)

def U(v):
    return ["u32", v & M32]


def I(v):
    return ["i32", v]


def F(v):
    return ["f32", v]


def B(v):
    return ["bool", v]


def V(n):
    return ["var", n]


def gid(axis=0):
    return ["gid", axis]


def lid(axis=0):
    return ["lid", axis]


def wgid(axis=0):
    return ["wgid", axis]


def load(b, i):
    return ["load", b, i]


def length(b):
    return ["len", b]


def let(n, e):
    return ["let", n, e]


def assign(n, e):
    return ["assign", n, e]


def store(b, i, v):
    return ["store", b, i, v]


def if_(c, then, orelse=None):
    return ["if", c, then, orelse or []]


def loop(v, lo, hi, body):
    return ["loop", v, lo, hi, body]


def block(body):
    return ["block", body]


def region(name, body):
    return ["region", name, body]


def barrier(order=None):
    return ["barrier"] if order is None else ["barrier", order]


def ret():
    return ["return"]


def op(name, *args):
    return [name, *args]


def atomic(o, b, i, v, expected=None):
    if o == "compare_exchange":
        return ["atomic", o, b, i, expected, v]
    return ["atomic", o, b, i, v]


def buf(name, binding, access, ty, count, output=False, live_out=False, hints=None):
    d = {"name": name, "binding": binding, "access": access, "type": ty, "count": count}
    if output:
        d["output"] = True
    if live_out:
        d["live_out"] = True
    if hints:
        d["hints"] = hints
    return d


def program(name, wg, buffers, entry):
    if isinstance(wg, int):
        wg = [wg, 1, 1]
    return {"vyre": 1, "name": name, "workgroup_size": wg, "buffers": buffers, "entry": entry}


def guard(n_expr):
    """Return when gid 0 is at or past n_expr."""
    return if_(op("ge", gid(), n_expr), [ret()])


# ---------------------------------------------------------------------------------------------
# Writing expected values in the case format

def show(word, ty):
    word &= M32
    if ty == "u32":
        return word
    if ty == "i32":
        return s32(word)
    if ty == "bool":
        return word != 0 if word in (0, 1) else "0x%08x" % word
    if word == NAN:
        return "nan"
    if is_nan_bits(word) or canon(word) != word:
        return "0x%08x" % word
    if word == INF:
        return "inf"
    if word == NINF:
        return "-inf"
    if word == 0x80000000:
        return "-0"
    x = bits_to_float(word)
    if x == int(x) and abs(x) < 2 ** 53:
        return int(x) if abs(x) < 2 ** 24 else x
    return x


def shown(words, ty):
    return [show(w, ty) for w in words]


CASES = {}


def case(name, notes, prog, inputs=None, config=None, expect=None, source=None,
         subgroup_size=None, ulp=None):
    assert name not in CASES, name
    prog["name"] = name
    c = {"notes": notes}
    if subgroup_size is not None:
        c["subgroup_size"] = subgroup_size
    c["program"] = prog
    if config:
        c["config"] = config
    if inputs:
        c["inputs"] = inputs
    if expect is not None:
        if "error" in expect:
            c["expect"] = expect
        else:
            c["expect"] = {"source": source or "make_corpus.py", "outputs": expect}
    if ulp:
        c["ulp"] = ulp
    CASES[name] = c



# ---------------------------------------------------------------------------------------------
# Operators over witness pairs

BOOL_RESULT = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "is_nan", "is_inf",
               "is_finite"}


# Operations whose result is a u32 whatever their operand type.
U32_RESULT = {"abs_diff"}


def pair_case(name, notes, ty_a, ty_b, ops, fn, guarded=None):
    """out_<op>[i] = a[i] <op> b[i] over every pair of witnesses of ty_a and ty_b."""
    ga, gb = cross(ty_a, ty_b)
    xs, ys = gen_eval(ga, ty_a), gen_eval(gb, ty_b)
    n = len(xs)
    buffers = [buf("a", 0, "read_only", ty_a, n), buf("b", 1, "read_only", ty_b, n)]
    entry = [let("i", gid()), guard(length("a")), let("x", load("a", V("i"))),
             let("y", load("b", V("i")))]
    expect = []
    for k, o in enumerate(ops):
        rty = "bool" if o in BOOL_RESULT else "u32" if o in U32_RESULT else ty_a
        buffers.append(buf(o, 2 + k, "write_only", rty, n))
        value = op(o, V("x"), V("y"))
        if rty == "bool" and ty_a != "bool" and o in ("and", "or"):
            value = ["cast", "bool", value]
        st = store(o, V("i"), value)
        if guarded and o in guarded:
            cond, fallback = guarded[o]
            entry.append(if_(cond, [st], [store(o, V("i"), fallback)]))
        else:
            entry.append(st)
        expect.append(shown([fn(o, x, y) for x, y in zip(xs, ys)], rty))
    case(name, notes, program(name, 64, buffers, entry), [ga, gb], expect=expect)


pair_case("u32_arith_witness",
          "Wrapping add/sub/mul, u32 x/0 = 0xFFFFFFFF and x%0 = 0, min/max, abs_diff, the "
          "saturating ops and mul_high over every pair of u32 witnesses.",
          "u32", "u32", ["add", "sub", "mul", "div", "mod", "min", "max", "abs_diff", "sat_add",
                         "sat_sub", "sat_mul", "mul_high"], u32_binop)
pair_case("u32_bitwise_witness",
          "Bitwise ops, shifts and rotates on u32; counts come from the witnesses (31, 32, 33, "
          "MAX...) so the '& 31' masking of every shift and rotate count is exercised.",
          "u32", "u32", ["bit_and", "bit_or", "bit_xor", "shl", "shr", "rotl", "rotr"],
          u32_binop)
pair_case("u32_compare_witness",
          "Unsigned comparisons and the logical and/or on u32 (nonzero is true), stored into "
          "bool buffers (words 1 and 0); and/or are cast to bool before the store.",
          "u32", "u32", ["eq", "ne", "lt", "le", "gt", "ge", "and", "or"], u32_binop)

SAFE_DIV = op("and", op("ne", V("y"), I(0)),
              op("or", op("ne", V("x"), I(INT_MIN)), op("ne", V("y"), I(-1))))


def i32_guarded(o, x, y):
    if o in ("div", "mod") and (s32(y) == 0 or (s32(x) == INT_MIN and s32(y) == -1)):
        return u32(-12345)
    return i32_binop(o, x, y)


pair_case("i32_arith_witness",
          "Wrapping i32 add/sub/mul, signed min/max and mul_high, and division and remainder "
          "truncating toward zero (remainder takes the sign of a); the trapping pairs (b = 0, "
          "MIN / -1) are skipped by an if and write -12345 instead.",
          "i32", "i32", ["add", "sub", "mul", "div", "mod", "min", "max", "mul_high"],
          i32_guarded, guarded={"div": (SAFE_DIV, I(-12345)), "mod": (SAFE_DIV, I(-12345))})
pair_case("i32_bitwise_witness",
          "i32 bitwise ops, shl, arithmetic shr and rotates with u32 counts from the u32 "
          "witnesses (masked by 31).",
          "i32", "u32", ["shl", "shr", "rotl", "rotr"], i32_binop)
pair_case("i32_saturating_witness",
          "i32 sat_add and sat_sub clamp the exact result to -2147483648 .. 2147483647 (MAX + 1 "
          "is MAX, MIN - 1 is MIN, MIN - MIN is 0); abs_diff gives the exact distance as a u32 "
          "(MAX to MIN is 4294967295); and/or are logical (nonzero is true), cast to bool before "
          "the store; over every pair of i32 witnesses.",
          "i32", "i32", ["sat_add", "sat_sub", "abs_diff", "and", "or"], i32_binop)
pair_case("i32_logic_witness",
          "i32 bit_and/bit_or/bit_xor and signed comparisons over every pair of i32 witnesses.",
          "i32", "i32", ["bit_and", "bit_or", "bit_xor", "eq", "ne", "lt", "le", "gt", "ge"],
          i32_binop)


def f32_binop(o, x, y):
    if o == "add":
        return fadd(x, y)
    if o == "sub":
        return fsub(x, y)
    if o == "mul":
        return fmul(x, y)
    if o == "div":
        return fdiv(x, y)
    if o == "mod":
        return ffmod(x, y)
    if o == "min":
        return fminmax(x, y, True)
    if o == "max":
        return fminmax(x, y, False)
    return fcmp(x, y, o)


pair_case("f32_add_sub_mul_witness",
          "IEEE add/sub/mul (round to nearest even) over every pair of f32 witnesses, with "
          "canonical results: subnormal operands read as signed zeros, NaN results are "
          "0x7FC00000, overflow gives infinities, x - x is +0.",
          "f32", "f32", ["add", "sub", "mul"], f32_binop)
pair_case("f32_div_witness",
          "Correctly rounded f32 division over every pair of witnesses: x/0 is a signed "
          "infinity, 0/0 and inf/inf are NaN, x/inf a signed zero, subnormal quotients flush.",
          "f32", "f32", ["div"], f32_binop)
pair_case("f32_mod_witness",
          "f32 mod is C's fmodf over every pair of witnesses: exact, with the sign of a; NaN for "
          "an infinite a or a zero b (subnormal witnesses read as zeros), a itself for an "
          "infinite b.",
          "f32", "f32", ["mod"], f32_binop)
pair_case("f32_min_max_witness",
          "f32 min/max ignore a NaN operand (NaN only when both are NaN) and order -0 below +0.",
          "f32", "f32", ["min", "max"], f32_binop)
pair_case("f32_compare_witness",
          "IEEE comparisons: every comparison with a NaN is false except ne; -0 == +0; "
          "subnormal witnesses compare as zeros (flushed on load).",
          "f32", "f32", ["eq", "ne", "lt", "le", "gt", "ge"], f32_binop)


def bool_op(o, x, y):
    bx, by = int(x != 0), int(y != 0)
    return {"eq": bx == by, "ne": bx != by, "and": bx and by, "or": bx or by}[o] and 1 or 0


pair_case("bool_logic_witness",
          "bool eq/ne/and/or over every pair of bool witness words (0, 1, 2, 0xFFFFFFFF): any "
          "nonzero word loads as true, and stores write 1 or 0.",
          "bool", "bool", ["eq", "ne", "and", "or"], bool_op)


# ---------------------------------------------------------------------------------------------
# Unary operators

def unary_case(name, notes, ty, ops, fn, gen=None, out_ty=None):
    g = gen or {"witness": ty}
    xs = gen_eval(g, ty)
    n = len(xs)
    buffers = [buf("a", 0, "read_only", ty, n)]
    entry = [let("i", gid()), guard(length("a")), let("x", load("a", V("i")))]
    expect = []
    for k, o in enumerate(ops):
        rty = "bool" if o in BOOL_RESULT else (out_ty or ty)
        buffers.append(buf(o, 1 + k, "write_only", rty, n))
        value = op(o, V("x"))
        if o == "not" and ty != "bool":
            value = ["cast", "bool", value]
        entry.append(store(o, V("i"), value))
        expect.append(shown([fn(o, x) for x in xs], rty) if fn else None)
    case(name, notes, program(name, 64, buffers, entry), [g],
         expect=expect if fn else None)


RAND_U32 = {"random": "u32", "count": 48, "seed": 11}
unary_case("u32_unary_witness",
           "neg wraps (0 - x: neg(1) is MAX, neg(MSB) is MSB), bit_not, popcount, clz/ctz (32 "
           "for 0), reverse_bits, logical not and the unpack fields (unpack4_high is a >> 28, "
           "unpack8_high a >> 24) on u32 witnesses and random words.",
           "u32", ["neg", "bit_not", "popcount", "clz", "ctz", "reverse_bits", "not",
                   "unpack4_low", "unpack4_high", "unpack8_low", "unpack8_high"],
           lambda o, x: int_unop(o, x, False),
           gen={"concat": [{"witness": "u32"}, RAND_U32]})
unary_case("i32_unary_witness",
           "neg and abs wrap (neg/abs of MIN is MIN), sign gives -1/0/1, the bit counts of "
           "i32 work on the two's complement bits, and logical not is 1 for 0 and 0 otherwise "
           "(cast to bool before the store).",
           "i32", ["neg", "abs", "sign", "bit_not", "popcount", "clz", "ctz", "reverse_bits",
                   "not"],
           lambda o, x: int_unop(o, x, True),
           gen={"concat": [{"witness": "i32"}, {"random": "i32", "count": 48, "seed": 12}]})


def f32_unop(o, x):
    if o == "neg":
        return fneg(x)
    if o == "abs":
        return fabs(x)
    if o == "sign":
        return fsign(x)
    if o in ("floor", "ceil", "trunc", "round"):
        return fround_like(x, o)
    if o == "sqrt":
        return fsqrt(x)
    v = load_f(x)
    if o == "is_nan":
        return int(math.isnan(v))
    if o == "is_inf":
        return int(math.isinf(v))
    if o == "is_finite":
        return int(math.isfinite(v))
    raise ValueError(o)


HALVES = {"values": [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 0.49999997, -0.49999997,
                     0.50000006, 1.4999999, 8388607.5, -8388607.5, 8388608.0, 4194303.5,
                     1e-30, -1e-30, 0.75, -0.25, 123456.5, -123456.5, 16777215.0, 1e30]}
unary_case("f32_unary_witness",
           "neg/abs change only the sign bit (NaN stays canonical), sign (+0 for either zero), "
           "floor/ceil/trunc/round keeping the sign of a zero result (ceil(-0.5) = -0), round "
           "halves away from zero, sqrt(-0) = -0 and NaN below zero, the is_* predicates; on the "
           "f32 witnesses and on halves and near-halves.",
           "f32", ["neg", "abs", "sign", "floor", "ceil", "trunc", "round", "sqrt", "is_nan",
                   "is_inf", "is_finite"], f32_unop,
           gen={"concat": [{"witness": "f32"}, HALVES]})

SQRT_RANDOM = {"random": "f32", "count": 256, "seed": 21}
unary_case("f32_sqrt_random",
           "Correctly rounded sqrt of 256 random bit patterns (every exponent, NaNs, negatives, "
           "subnormals).",
           "f32", ["sqrt"], f32_unop, gen=SQRT_RANDOM)


# Transcendentals and the other lowered functions: results are defined by the expansions of
# planner/ (DESIGN.md section 4.4), so the only oracle is the reference itself; the runner
# measures their error against libm in double precision (the "ulp" list).

FLT_MIN = 1.1754944e-38
PI = 3.1415927

# op: (ULP domain, two random ranges, extra values)
LOWERED = {
    "exp": ([-87.0, 88.0], [(-87.0, 88.0), (-1.0, 1.0)],
            [1.0, -1.0, 0.5, 88.7, -103.0, 100.0, -200.0, 2.7182817]),
    "exp2": ([-126.0, 127.0], [(-126.0, 127.0), (-1.0, 1.0)],
             [1.0, 2.0, -1.0, 0.5, 128.0, -150.0, 127.99]),
    "log": ([FLT_MIN, 3.4e38], [(1e-30, 1e30), (0.5, 2.0)],
            [1.0, 2.0, 0.5, 10.0, 2.7182817, -1.0, 1e-38]),
    "log2": ([FLT_MIN, 3.4e38], [(1e-30, 1e30), (0.5, 2.0)],
             [1.0, 2.0, 4.0, 0.5, 1024.0, 3.0, -1.0]),
    "sin": ([-100.0, 100.0], [(-3.2, 3.2), (-100.0, 100.0)],
            [PI / 2, PI, -PI, PI / 4, 1e-5, -1e-5, 2 * PI, 1000.0, 1e6]),
    "cos": ([-100.0, 100.0], [(-3.2, 3.2), (-100.0, 100.0)],
            [PI / 2, PI, -PI, PI / 4, 1e-5, -1e-5, 2 * PI, 1000.0, 1e6]),
    "tan": ([-1.5, 1.5], [(-1.5, 1.5), (-100.0, 100.0)], [PI / 4, PI / 2, 1e-5, 0.5, -1.0]),
    "asin": ([-1.0, 1.0], [(-1.0, 1.0), (-0.1, 0.1)], [1.0, -1.0, 0.5, -0.5, 1.0000001, 2.0]),
    "acos": ([-1.0, 1.0], [(-1.0, 1.0), (-0.1, 0.1)], [1.0, -1.0, 0.5, -0.5, 1.0000001, 2.0]),
    "atan": ([-1e30, 1e30], [(-10.0, 10.0), (-1e30, 1e30)], [1.0, -1.0, 1e-5, 1e10]),
    "sinh": ([-88.0, 88.0], [(-10.0, 10.0), (-90.0, 90.0)], [1e-4, -1e-4, 0.5, 89.5]),
    "cosh": ([-88.0, 88.0], [(-10.0, 10.0), (-90.0, 90.0)], [1e-4, -1e-4, 0.5, 89.5]),
    "tanh": ([-20.0, 20.0], [(-1.0, 1.0), (-20.0, 20.0)], [1e-4, 9.0, 20.0, -20.0, 30.0]),
    "reciprocal": ([-1e38, 1e38], [(0.0, 4.0), (-1e10, 1e10)],
                   [1.0, 4.0, 0.25, 3.0, 1e-38, 2.5e38, -2.0]),
    "inverse_sqrt": ([FLT_MIN, 3.4e38], [(1e-30, 1e30), (0.5, 4.0)],
                     [1.0, 4.0, 0.25, 3.0, 1e-38, 2.5e38, -2.0]),
    "log10": ([FLT_MIN, 3.4e38], [(1e-30, 1e30), (0.5, 2.0)],
              [1.0, 10.0, 100.0, 1000.0, 0.1, 0.001, 1e30, 3.0, -1.0, 1e-38]),
    "exp10": ([-37.0, 38.0], [(-37.0, 38.0), (-1.0, 1.0)],
              [0.0, 1.0, 2.0, 3.0, 10.0, -1.0, -3.0, 0.5, 38.5, -38.0, -45.0, 40.0]),
    "expm1": ([-87.0, 88.0], [(-1.0, 1.0), (-87.0, 88.0)],
              [1e-10, -1e-10, 1e-5, -1e-5, 0.3, -0.3, 1.0, -20.0, 17.0, 88.7, 100.0]),
    "log1p": ([-0.99, 3.4e38], [(-0.5, 1.0), (1e-30, 1e30)],
              [1e-10, -1e-10, 1e-5, -1e-5, -0.5, -1.0, -2.0, 1.0, 1e30, 3.4e38]),
    "cbrt": ([-3.4e38, 3.4e38], [(-10.0, 10.0), (-3.4e38, 3.4e38)],
             [1.0, -1.0, 8.0, -8.0, 27.0, 0.125, 1e-30, -1e-30, 2.0, 4.0, 7.9999995, 1e30,
              3.4028235e38, -3.4028235e38, 1.1754944e-38]),
}


# The bounds of docs/semantics.md section 6.2 where they are not 1 ULP. A result within N ULP of
# the correctly rounded one lies within N + 0.5 ULP of the true value, the runner's measure.
ULP_BOUND = {"reciprocal": 0, "cbrt": 0, "tan": 2, "asin": 2, "atan": 2, "sinh": 2}


def fcbrt(a):
    """cbrt of an f32 word, correctly rounded and canonical; needs python3-mpmath."""
    import mpmath
    x = load_f(a)
    if math.isnan(x):
        return NAN
    if math.isinf(x) or x == 0:
        return round_double(x)
    with mpmath.workprec(200):
        v = mpmath.cbrt(mpmath.mpf(abs(x)))
        man, exp = v.man_exp
        q = Fraction(int(man)) * Fraction(2) ** int(exp)
        return round_frac(-q if x < 0 else q)


# The lowered functions that are correctly rounded: every result of their cases is written.
EXACT_FN = {"cbrt": fcbrt, "reciprocal": lambda a: fdiv(0x3F800000, a)}


def unary_program(name, o, n):
    """y[i] = o(x[i]) over n f32 elements, guarded."""
    return program(name, 64, [buf("x", 0, "read_only", "f32", n),
                              buf("y", 1, "write_only", "f32", n)],
                   [let("i", gid()), guard(length("x")),
                    store("y", V("i"), op(o, load("x", V("i"))))])


def lowered_case(o, seed):
    dom, ranges, extra = LOWERED[o]
    g = {"concat": [{"random": "f32", "count": 192, "seed": seed, "min": ranges[0][0],
                     "max": ranges[0][1]},
                    {"random": "f32", "count": 64, "seed": seed + 1, "min": ranges[1][0],
                     "max": ranges[1][1]},
                    {"witness": "f32"}, {"values": extra}]}
    name = "lowered_" + o
    words = gen_eval(g, "f32")
    prog = unary_program(name, o, len(words))
    notes = ("%s as lowered by planner/vmath (DESIGN.md section 4.4): byte-identical on every "
             "backend, and within its bound of docs/semantics.md section 6.2 (%d ULP, so %g of "
             "the true value) of libm over [%g, %g]; also on the f32 witnesses and a few points "
             "outside the domain." % (o, ULP_BOUND.get(o, 1), ULP_BOUND.get(o, 1) + 0.5, dom[0],
                                      dom[1]))
    exact = EXACT_FN.get(o)
    expect = None
    if exact:
        notes += " Correctly rounded, so every result is written (exact rationals, or mpmath)."
        expect = [shown([exact(w) for w in words], "f32")]
    case(name, notes, prog, [g], expect=expect,
         source="make_corpus.py: every result" if exact else None,
         ulp=[{"op": o, "input": 0, "output": 0, "domain": dom, "max": ULP_BOUND.get(o, 1) + 0.5}])


for _k, _o in enumerate(LOWERED):
    lowered_case(_o, 200 + 2 * _k)


def ferf(a, complement):
    """erf (or erfc) of an f32 word, correctly rounded and canonical (a result below 2^-126
    flushes), with C99 Annex F's special values; needs python3-mpmath."""
    import mpmath
    x = load_f(a)
    if math.isnan(x):
        return NAN
    if math.isinf(x):
        if complement:
            return 0 if x > 0 else 0x40000000
        return 0x3F800000 if x > 0 else 0xBF800000
    if x == 0 and not complement:
        return round_frac(0, neg_zero=math.copysign(1.0, x) < 0)
    if abs(x) >= 10:
        # erfc(10) < 2^-148: erfc flushes to +0 or rounds to 2, erf rounds to +-1
        if complement:
            return 0 if x > 0 else 0x40000000
        return 0x3F800000 if x > 0 else 0xBF800000
    with mpmath.workprec(200):
        v = (mpmath.erfc if complement else mpmath.erf)(mpmath.mpf(x))
        man, exp = abs(v).man_exp
        q = Fraction(int(man)) * Fraction(2) ** int(exp)
        return round_frac(-q if v < 0 else q, neg_zero=v < 0)


def erf_case(o, seed):
    """lowered_erf, lowered_erfc: random inputs within 1 ULP of libm, and specials (the thresholds
    of planner/vmath_erf.c among them, and for erf pairs x, -x) equal to the correctly rounded
    value from mpmath. Two uses of the function in the program: lavapipe compiles the emulated
    fma of a third in minutes."""
    complement = o == "erfc"
    hi = 9.5 if complement else 4.5
    g = {"concat": [{"random": "f32", "count": 192, "seed": seed, "min": -4.5, "max": hi},
                    {"random": "f32", "count": 64, "seed": seed + 1, "min": -1e-3, "max": 1e-3},
                    {"random": "f32", "count": 64, "seed": seed + 2},
                    {"witness": "f32"}]}
    sp = [0.0, "-0", "inf", "-inf", "nan", 1e-45, -1e-45, 1.1754944e-38, -1.1754944e-38, 1e-30,
          1e-10, -1e-10, 1e-8, 0.1, -0.1, 0.24999999, -0.24999999, 0.25, -0.25, 0.5, 0.74999994,
          0.75, 1.0, -1.0, 1.5, -1.5, 1.6249999, 1.625, 2.0, -2.5, 2.9999998, 3.0, -3.0, 3.5,
          3.9, 4.0, 5.0, 7.0, 9.0, 9.19, 9.2, 9.25, 10.0, -10.0, 3.4028235e38, -3.4028235e38]
    n = len(gen_eval(g, "f32"))
    m = len(sp)
    name = "lowered_" + o
    prog = program(name, 64, [buf("x", 0, "read_only", "f32", n),
                              buf("s", 1, "read_only", "f32", m),
                              buf("y", 2, "write_only", "f32", n),
                              buf("sy", 3, "write_only", "f32", m)],
                   [let("i", gid()),
                    if_(op("lt", V("i"), length("x")),
                        [store("y", V("i"), op(o, load("x", V("i"))))]),
                    if_(op("lt", V("i"), length("s")),
                        [store("sy", V("i"), op(o, load("s", V("i"))))])])
    notes = ("%s as lowered by planner/vmath: byte-identical on every backend, within 1 ULP of "
             "libm's %s over random inputs (the dense range, near zero, random bits) and the f32 "
             "witnesses, and correctly rounded (the value from mpmath at 200 bits), with C99 "
             "Annex F's special values, at %d specials: signed zeros and subnormals, "
             "infinities, NaN, and the thresholds of the expansion" % (o, o, m))
    notes += ("; results below 2^-126 flush to +0." if complement else
              "; erf(-x) = -erf(x) to the bit.")
    case(name, notes, prog, [g, sp],
         expect=[None, shown([ferf(w, complement) for w in gen_eval(sp, "f32")], "f32")],
         source="make_corpus.py: the specials from mpmath",
         ulp=[{"op": o, "input": 0, "output": 0, "domain": [-3.4028235e38, 3.4028235e38],
               "max": 1}])


erf_case("erf", 340)
erf_case("erfc", 344)


# The correctly rounded variants: op -> (mpmath function, dense range of the random inputs, the
# hardest input of docs/semantics.md section 6.6 and other inputs close to a rounding boundary).
# exp_cr's others round the wrong way when x log2(e) loses its third part (a mutant that an
# exhaustive run found them for: docs/testing.md).
CR = {
    "exp_cr": ("exp", (-104.0, 89.0),
               [0xC16912CD, 0x41F77C01, 0x428A94C5, 0x429675E7, 0xC2ABB454, 0xC2AC0052]),
    "exp2_cr": ("exp2", (-150.0, 128.0), [0xB52D1F9A]),
    "log_cr": ("log", (1e-30, 1e30), [0x65D890D3]),
    "log2_cr": ("log2", (1e-30, 1e30), [0x3EA07AB9]),
}


def fcr(a, fn):
    """exp, exp2, log or log2 of an f32 word, correctly rounded and canonical, with C99 Annex
    F's special values; needs python3-mpmath."""
    import mpmath
    x = load_f(a)
    if math.isnan(x):
        return NAN
    if fn.startswith("log"):
        if x < 0:
            return NAN
        if x == 0:
            return NINF
        if math.isinf(x):
            return INF
    else:
        if x > 200:
            return INF
        if x < -200:
            return 0
    with mpmath.workprec(300):
        v = {"exp": mpmath.exp, "exp2": lambda t: mpmath.mpf(2) ** t, "log": mpmath.log,
             "log2": lambda t: mpmath.log(t, 2)}[fn](mpmath.mpf(x))
        if v == 0:
            return 0
        man, exp = abs(v).man_exp
        q = Fraction(int(man)) * Fraction(2) ** int(exp)
        return round_frac(-q if v < 0 else q)


def cr_exceptions(o):
    """The inputs of the table of exceptions of planner/vmath_cr.c for op o."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "planner",
                        "vmath_cr_%s.inc" % o[:-3])
    words = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{0x"):
                words.append(int(line[1:].split(",")[0], 16))
    return words


def cr_case(o, seed):
    """lowered_exp_cr, ...: every result equal to the correctly rounded value from mpmath (300
    bits): random inputs, the f32 witnesses, the hardest inputs to round and every input of the
    expansion's table of exceptions."""
    fn, (lo, hi), hard = CR[o]
    g = {"concat": [{"random": "f32", "count": 160, "seed": seed, "min": lo, "max": hi},
                    {"random": "f32", "count": 64, "seed": seed + 1},
                    {"witness": "f32"},
                    {"values": [bits_to_float(w) for w in hard + cr_exceptions(o)]}]}
    words = gen_eval(g, "f32")
    n = len(words)
    name = "lowered_" + o
    prog = unary_program(name, o, n)
    case(name, "%s, correctly rounded (planner/vmath_cr.c): each of %d results equal to the "
         "value from mpmath at 300 bits rounded once to f32 (subnormal results flush), on random "
         "inputs of the dense range and of all bit patterns, the f32 witnesses, inputs that are "
         "hard to round (docs/semantics.md section 6.6) and every input of the expansion's table of "
         "exceptions." % (o, n), prog, [g],
         expect=[shown([fcr(w, fn) for w in words], "f32")],
         source="make_corpus.py: every result from mpmath")


for _k, _o in enumerate(CR):
    cr_case(_o, 360 + 2 * _k)


def fhypot(a, b):
    """hypot of two f32 words, correctly rounded (C99 Annex F for the special operands)."""
    x, y = load_f(a), load_f(b)
    if math.isinf(x) or math.isinf(y):
        return INF
    if math.isnan(x) or math.isnan(y):
        return NAN
    # The root of the exact x^2 + y^2, truncated 84 bits below its leading bit: an exact root
    # (a tie included) is kept as it is; otherwise the midpoint of the truncation's interval
    # rounds as the root does, since a root that is not itself a tie lies at least 2^-73 (in
    # relative terms) from one: near a tie the smaller operand is at least 2^-13 times the
    # larger, so x^2 + y^2 differs from the tie's square by a multiple of 2^-72 times it.
    q = Fraction(x) ** 2 + Fraction(y) ** 2
    if q == 0:
        return 0
    e = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    scale = Fraction(2) ** (84 - e)
    n = q * scale * scale
    r = math.isqrt(n.numerator // n.denominator)
    if Fraction(r) ** 2 == n:
        return round_frac(Fraction(r) / scale)
    return round_frac((Fraction(r) + Fraction(1, 2)) / scale)


def random_pairs(seed):
    """One operand of a two-operand function's random pairs: the whole range, random bits, and
    values near 1 (the other operand's generator from seed + 3 gives operands of like
    magnitude)."""
    return {"concat": [{"random": "f32", "count": 128, "seed": seed, "min": -3.4e38,
                        "max": 3.4e38},
                       {"random": "f32", "count": 128, "seed": seed + 1},
                       {"random": "f32", "count": 128, "seed": seed + 2,
                        "min": -10.0 - (seed % 2) * 2, "max": 10.0 + (seed % 2) * 2}]}


def two_operand_case(o, ga, gb, sp, fn, exact_random, notes):
    """lowered_<o>: o(a, b) over the pairs of ga and gb, within 1 ULP of libm (and equal to fn,
    the correctly rounded value, where exact_random), and over every pair of the specials sp,
    equal to fn."""
    n = len(gen_eval(ga, "f32"))
    sa = [v for v in sp for _ in sp]
    sb = [w for _ in sp for w in sp]
    m = len(sa)
    name = "lowered_" + o
    prog = program(name, 64, [buf("a", 0, "read_only", "f32", n),
                              buf("b", 1, "read_only", "f32", n),
                              buf("sa", 2, "read_only", "f32", m),
                              buf("sb", 3, "read_only", "f32", m),
                              buf("r", 4, "write_only", "f32", n),
                              buf("sr", 5, "write_only", "f32", m)],
                   [let("i", gid()),
                    if_(op("lt", V("i"), length("a")),
                        [store("r", V("i"), op(o, load("a", V("i")), load("b", V("i"))))]),
                    if_(op("lt", V("i"), length("sa")),
                        [store("sr", V("i"), op(o, load("sa", V("i")), load("sb", V("i"))))])])
    pairs = zip(gen_eval(ga, "f32"), gen_eval(gb, "f32"))
    specials = zip(gen_eval(sa, "f32"), gen_eval(sb, "f32"))
    case(name, notes, prog, [ga, gb, sa, sb],
         expect=[shown([fn(a, b) for a, b in pairs], "f32") if exact_random else None,
                 shown([fn(a, b) for a, b in specials], "f32")],
         ulp=[{"op": o, "input": 0, "input2": 1, "output": 0,
               "domain": [-3.4028235e38, 3.4028235e38], "max": 1}])


def hypot_case():
    """hypot over random pairs and every pair of specials, each correctly rounded."""
    two_operand_case(
        "hypot", random_pairs(310), random_pairs(313),
        [0.0, -0.0, "inf", "-inf", "nan", 1.0, -1.0, 3.0, -4.0, 2.5, 3.4028235e38,
         -3.4028235e38, 1.1754944e-38, 1e-45, 1e-20, 1e30], fhypot, True,
        "hypot as lowered by planner/vmath: byte-identical on every backend and correctly "
        "rounded (so within 1 ULP of libm's hypot) over random pairs (whole range, random bits, "
        "and operands of like magnitude), and over every pair of 16 specials with C99 Annex F's "
        "special values (an infinity beats a NaN, signs and order do not matter, no overflow or "
        "underflow on the way).")


hypot_case()

def fatan2(a, b):
    """atan2(y = a, x = b) of two f32 words, correctly rounded (C99 Annex F specials); needs
    python3-mpmath."""
    import mpmath
    y, x = load_f(a), load_f(b)
    if math.isnan(x) or math.isnan(y):
        return NAN
    neg = math.copysign(1.0, y) < 0
    sign = 0x80000000 if neg else 0
    if math.isinf(y) or math.isinf(x) or y == 0:
        # Annex F: exact multiples of pi/4, or a signed zero; Python's atan2 follows it
        v = abs(math.atan2(y, x))
        if v == 0:
            return sign
        return sign | round_double(v)
    with mpmath.workprec(200):
        v = mpmath.atan2(mpmath.mpf(abs(y)), mpmath.mpf(x))
        man, exp = v.man_exp
        return sign | round_frac(Fraction(int(man)) * Fraction(2) ** int(exp))


def atan2_case():
    """atan2 over random pairs and every pair of specials, against the correctly rounded
    value."""
    two_operand_case(
        "atan2", random_pairs(320), random_pairs(323),
        [0.0, -0.0, "inf", "-inf", "nan", 1.0, -1.0, 0.41421354, 0.41421357, 3.0, -4.0,
         3.4028235e38, -3.4028235e38, 1.1754944e-38, 1e-45, 1e30], fatan2, True,
        "atan2(y, x) as lowered by planner/vmath: byte-identical on every backend and correctly "
        "rounded over these random pairs (whole range, random bits, and operands of like "
        "magnitude; the function is within 1 ULP everywhere) and over every pair of 16 specials "
        "with C99 Annex F's special values: the sign of y, +-0 or +-pi for a zero y by the sign "
        "of x, multiples of pi/4 for infinities.")


atan2_case()

def fpow(a, b):
    """pow(x = a, y = b) of two f32 words, correctly rounded, with C99 Annex F's special
    values; needs python3-mpmath."""
    import mpmath
    x, y = load_f(a), load_f(b)
    if y == 0 or x == 1.0:
        return 0x3F800000
    if math.isnan(x) or math.isnan(y):
        return NAN
    y_int = math.isinf(y) or y == math.floor(y)
    y_odd = y_int and not math.isinf(y) and abs(y) < 2 ** 24 and int(y) % 2 == 1
    if math.isinf(y):
        if abs(x) == 1:
            return 0x3F800000
        return INF if (abs(x) < 1) == (y < 0) else 0
    neg = math.copysign(1.0, x) < 0
    sign = 0x80000000 if neg and y_odd else 0
    if x == 0 or math.isinf(x):
        return sign | (INF if (x == 0) == (y < 0) else 0)
    if neg and not y_int:
        return NAN
    with mpmath.workprec(300):
        v = mpmath.power(mpmath.mpf(abs(x)), mpmath.mpf(y))
        if v > mpmath.mpf(2) ** 200:
            return sign | INF
        if v < mpmath.mpf(2) ** -200:
            return sign
        man, exp = v.man_exp
        return sign | round_frac(Fraction(int(man)) * Fraction(2) ** int(exp))


def pow_case():
    """pow over random pairs with normal results (within 1 ULP of libm) and every pair of
    specials (correctly rounded)."""
    xs = gen_eval({"random": "f32", "count": 256, "seed": 330}, "f32")
    ws = gen_eval({"random": "f32", "count": 256, "seed": 331, "min": -150.0, "max": 128.0},
                  "f32")
    ys = []
    for a, w in zip(xs, ws):
        lx = math.log2(abs(load_f(a))) if load_f(a) != 0 and math.isfinite(load_f(a)) else 0
        ys.append(round_double(load_f(w) / lx if lx else load_f(w), flush=False))
    small = gen_eval({"random": "f32", "count": 128, "seed": 332, "min": -10.0, "max": 10.0},
                     "f32")
    ints = [round_double(float(k % 81 - 40)) for k in
            gen_eval({"random": "u32", "count": 128, "seed": 333}, "u32")]
    two_operand_case(
        "pow", {"values": ["0x%08x" % w for w in xs + small]},
        {"values": ["0x%08x" % w for w in ys + ints]},
        [0.0, -0.0, "inf", "-inf", "nan", 1.0, -1.0, 0.5, 2.0, -2.0, 3.0, -3.0, 0.25, 10.0, 1e-45,
         3.4028235e38], fpow, False,
        "pow(x, y) as lowered by planner/vmath: byte-identical on every backend, within 1 ULP of "
        "libm's pow over random pairs whose result is a normal number (any x with y = w / "
        "log2|x|, and x in [-10, 10] with an integer y in [-40, 40]), and correctly rounded, "
        "with C99 Annex F's special values, over every pair of 16 specials: pow(x, 0) and "
        "pow(1, y) are 1 even for NaN, a negative x takes only integer powers, signed by their "
        "parity.")


pow_case()

def trig_full_range_case(fn):
    """fn (sin, cos or tan) over the whole finite f32 range, where the reduction is exact: one
    case per function, so that the three large expansions compile in cases of their own."""
    big = [1e10, -1e10, 3.4028235e38, -3.4028235e38, 1e38, 16777216.0, 16777215.0, 4194304.0,
           4194303.5, 4096.0, 4095.9998, 123456789.0, 1e22, 7.7e28, 2.0 ** 100, 3.0e30,
           1.5e20, 6.2831855e8]
    g = {"concat": [{"random": "f32", "count": 256, "seed": 260, "min": -3.4e38, "max": 3.4e38},
                    {"random": "f32", "count": 128, "seed": 261, "min": -1e12, "max": 1e12},
                    {"random": "f32", "count": 128, "seed": 262, "min": -1e6, "max": 1e6},
                    {"values": big}]}
    n = len(gen_eval(g, "f32"))
    name = "lowered_trig_full_range_" + fn
    entry = [let("i", gid()), guard(length("x")), let("v", load("x", V("i"))),
             store(fn, V("i"), op(fn, V("v")))]
    # cos is even, sin and tan odd, exactly: 0 where f(-v) is f(v) or -f(v) to the bit.
    mirror = op(fn, V("v")) if fn == "cos" else op("neg", op(fn, V("v")))
    sym = op("ne", op(fn, op("neg", V("v"))), mirror)
    entry.append(store("asym", V("i"), ["cast", "u32", sym]))
    prog = program(name, 64, [buf("x", 0, "read_only", "f32", n),
                              buf(fn, 1, "write_only", "f32", n),
                              buf("asym", 2, "write_only", "u32", n)], entry)
    bound = 3 if fn == "tan" else 2
    parity = "even" if fn == "cos" else "odd"
    case(name, "%s of finite arguments up to FLT_MAX: the Payne-Hanek reduction of "
         "planner/vmath_trig.c is exact there, so %s is within %d ULP of libm (which reduces "
         "exactly too)%s, and %s, to the bit." % (
             fn, fn, bound,
             " measured against the exact value, a stricter scale than the steps to the "
             "correctly rounded result, where tan is within 2" if fn == "tan" else "",
             parity),
         prog, [g], expect=[None, [0] * n],
         ulp=[{"op": fn, "input": 0, "output": 0, "domain": [-3.4028235e38, 3.4028235e38],
               "max": bound}])


for trig_fn in ("sin", "cos", "tan"):
    trig_full_range_case(trig_fn)


# ---------------------------------------------------------------------------------------------
# fma

def fma_case():
    small = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000,
             0x00800000]
    w = len(WITNESS["f32"])
    ga = {"stretch": {"witness": "f32"}, "times": w * len(small)}
    gb = {"repeat": {"stretch": {"witness": "f32"}, "times": len(small)}, "times": w}
    gc = {"repeat": {"values": ["0x%08x" % b for b in small]}, "times": w * w}
    xs, ys, zs = gen_eval(ga, "f32"), gen_eval(gb, "f32"), gen_eval(gc, "f32")
    n = len(xs)
    name = "f32_fma_witness"
    prog = program(name, 64, [buf("a", 0, "read_only", "f32", n),
                              buf("b", 1, "read_only", "f32", n),
                              buf("c", 2, "read_only", "f32", n),
                              buf("r", 3, "write_only", "f32", n)],
                   [let("i", gid()), guard(length("a")),
                    store("r", V("i"), ["fma", load("a", V("i")), load("b", V("i")),
                                        load("c", V("i"))])])
    case(name, "fma is fused (one rounding) on every witness pair a*b plus c in {+-0, +-1, "
         "+-inf, NaN, min normal}: 0*inf+c and inf-inf are NaN, exact zeros follow IEEE signs.",
         prog, [ga, gb, gc], expect=[shown([ffma(*t) for t in zip(xs, ys, zs)], "f32")])

    gr = [{"random": "f32", "count": 512, "seed": s, "min": -4.0, "max": 4.0} for s in (31, 32, 33)]
    xs, ys, zs = (gen_eval(g, "f32") for g in gr)
    name = "f32_fma_random"
    prog = program(name, 64, [buf("a", 0, "read_only", "f32", 512),
                              buf("b", 1, "read_only", "f32", 512),
                              buf("c", 2, "read_only", "f32", 512),
                              buf("fused", 3, "write_only", "f32", 512),
                              buf("unfused", 4, "write_only", "f32", 512)],
                   [let("i", gid()),
                    let("x", load("a", V("i"))), let("y", load("b", V("i"))),
                    let("z", load("c", V("i"))),
                    store("fused", V("i"), ["fma", V("x"), V("y"), V("z")]),
                    store("unfused", V("i"), op("add", op("mul", V("x"), V("y")), V("z")))])
    case(name, "fma rounds once and add(mul) rounds twice: on random operands in [-4, 4) the two "
         "differ in many elements, and neither may be contracted or split.",
         prog, gr, expect=[shown([ffma(*t) for t in zip(xs, ys, zs)], "f32"),
                           shown([fadd(fmul(x, y), z) for x, y, z in zip(xs, ys, zs)], "f32")])


fma_case()


def f32_random_case():
    gens = [{"random": "f32", "count": 512, "seed": 41},
            {"random": "f32", "count": 512, "seed": 42},
            {"random": "f32", "count": 512, "seed": 43, "min": -1e6, "max": 1e6},
            {"random": "f32", "count": 512, "seed": 44, "min": 1e-3, "max": 1e3}]
    xs, ys, us, vs = (gen_eval(g, "f32") for g in gens)
    name = "f32_arith_random"
    ops = ["add", "sub", "mul", "div", "mod"]
    buffers = [buf("a", 0, "read_only", "f32", 512), buf("b", 1, "read_only", "f32", 512),
               buf("c", 2, "read_only", "f32", 512), buf("d", 3, "read_only", "f32", 512)]
    entry = [let("i", gid()), let("x", load("a", V("i"))), let("y", load("b", V("i"))),
             let("u", load("c", V("i"))), let("v", load("d", V("i")))]
    expect = []
    for k, o in enumerate(ops):
        buffers.append(buf("bits_" + o, 4 + k, "write_only", "f32", 512))
        buffers.append(buf("range_" + o, 4 + len(ops) + k, "write_only", "f32", 512))
        entry.append(store("bits_" + o, V("i"), op(o, V("x"), V("y"))))
        entry.append(store("range_" + o, V("i"), op(o, V("u"), V("v"))))
    for o in ops:
        expect.append(shown([f32_binop(o, x, y) for x, y in zip(xs, ys)], "f32"))
        expect.append(shown([f32_binop(o, x, y) for x, y in zip(us, vs)], "f32"))
    # outputs come back in binding order: bits_add(4), bits_sub(5), ..., range_add(9), ...
    expect = expect[0::2] + expect[1::2]
    case(name, "add/sub/mul/div/mod on random bit patterns (every exponent, NaN payloads, "
         "subnormals) and on random values of moderate range, correctly rounded and canonical.",
         program(name, 64, buffers, entry), gens, expect=expect)


f32_random_case()


# ---------------------------------------------------------------------------------------------
# Casts: every pair of the four types

CAST_EXTRA = {
    "u32": {"values": [16777216, 16777217, 16777218, 16777219, 33554435, 0xFFFFFF7F, 0xFFFFFF80,
                       0xFFFFFF81, 0x7FFFFFBF, 0x7FFFFFC0, 0x7FFFFFC1, 4294967040, 100, 255]},
    "i32": {"values": [16777217, -16777217, 16777219, -16777219, 2147483520, 2147483584,
                       -2147483584, -2147483585, -2147483520, 1000000001, -7, 255]},
    "f32": {"values": [4294967296.0, 4294967040.0, 2147483648.0, 2147483520.0, -2147483648.0,
                       -2147483904.0, 0.99999994, -0.99999994, 1e20, -1e20, -1.5, 255.9,
                       16777216.0, -0.0, 1e-40, "0x7fa00000", 3000000000.0, -3000000000.0]},
    "bool": {"values": [True, False, 2, 3, "0x80000000", 0]},
}


def cast_case(src):
    g = {"concat": [{"witness": src}, CAST_EXTRA[src]]}
    xs = gen_eval(g, src)
    n = len(xs)
    name = "cast_from_" + src
    buffers = [buf("a", 0, "read_only", src, n)]
    entry = [let("i", gid()), guard(length("a")), let("x", load("a", V("i")))]
    expect = []
    for k, dst in enumerate(["u32", "i32", "f32", "bool"]):
        buffers.append(buf("to_" + dst, 1 + k, "write_only", dst, n))
        entry.append(store("to_" + dst, V("i"), ["cast", dst, V("x")]))
        expect.append(shown([cast(x, src, dst) for x in xs], dst))
    notes = {
        "u32": "u32 to i32 keeps the bits, to f32 rounds to nearest even (ties at 2^24 + odd, "
               "near 2^31 and 2^32), to bool is 'nonzero', to u32 is the identity.",
        "i32": "i32 to u32 keeps the bits, to f32 rounds to nearest even (negative ties too), to "
               "bool is 'nonzero', to i32 is the identity.",
        "f32": "f32 to u32/i32 truncates toward zero and saturates (NaN gives 0, -0.99 gives 0, "
               "2^32 gives MAX), to bool is 'nonzero' (NaN is true, -0 and flushed subnormals "
               "are false), to f32 canonicalizes.",
        "bool": "bool to u32/i32 is 1 or 0, to f32 1.0 or 0.0, whatever nonzero word was "
                "stored; bool to bool writes 1 or 0.",
    }[src]
    case(name, notes, program(name, 64, buffers, entry), [g], expect=expect)


for _src in ["u32", "i32", "f32", "bool"]:
    cast_case(_src)


# ---------------------------------------------------------------------------------------------
# Bitcasts between u32, i32 and f32: the same word, canonicalized where it is read as f32

def bitcast(word, src, dst):
    """docs/semantics.md section 3.3: an f32 operand is canonical already (its load made it so);
    a word read as f32 is canonicalized as a load would."""
    w = canon(word) if src == "f32" else word
    return canon(w) if dst == "f32" else w


# Words that are NaN, subnormal or special as f32 patterns, for the integer sources.
BITCAST_EXTRA = ["0x7f800001", "0xffc12345", "0x7fc00001", "0x00000001", "0x807fffff",
                 "0x80000000", "0x7f800000", "0xff800000", "0x3f800000", "0x00800000",
                 "0x7f7fffff", "0x7fc00000", "0xffffffff", "0x80800000"]


def bitcast_case(src):
    extra = BITCAST_EXTRA if src != "f32" else ["0x7fa12345", "0xff812345", "0x00400000",
                                                "0x80000002", "0x40490fdb", "0xc0490fdb"]
    g = {"concat": [{"witness": src}, {"values": extra}]}
    xs = gen_eval(g, src)
    n = len(xs)
    name = "bitcast_from_" + src
    buffers = [buf("a", 0, "read_only", src, n)]
    entry = [let("i", gid()), guard(length("a")), let("x", load("a", V("i")))]
    expect = []
    for k, dst in enumerate(["u32", "i32", "f32"]):
        buffers.append(buf("to_" + dst, 1 + k, "write_only", dst, n))
        entry.append(store("to_" + dst, V("i"), ["bitcast", dst, V("x")]))
        expect.append(shown([bitcast(x, src, dst) for x in xs], dst))
    if src != "f32":
        # Back to the integer type, so that no f32 store can canonicalize what the bitcast left.
        buffers.append(buf("round_trip", 4, "write_only", src, n))
        entry.append(store("round_trip", V("i"), ["bitcast", src, ["bitcast", "f32", V("x")]]))
        expect.append(shown([canon(x) for x in xs], src))
    notes = {
        "u32": "u32 to i32 and to u32 keep the word; to f32 canonicalizes it as a load does: "
               "every NaN pattern (signalling, negative, with a payload) is 0x7FC00000, every "
               "subnormal pattern the zero of its sign; other words, infinities included, are "
               "kept. round_trip reads the f32 back as u32, so no f32 store can hide it.",
        "i32": "i32 to u32 and to i32 keep the word; to f32 canonicalizes NaN and subnormal "
               "patterns as a load does and keeps every other word; round_trip reads the f32 "
               "back as i32.",
        "f32": "f32 to u32 and i32 give the bits of the canonical value (the load already made "
               "NaN payloads 0x7FC00000 and subnormals signed zeros), to f32 the value itself.",
    }[src]
    case(name, notes, program(name, 64, buffers, entry), [g], expect=expect)


for _src in ["u32", "i32", "f32"]:
    bitcast_case(_src)


def float_key_case():
    """Two uses of bitcast: the order-preserving u32 key of a float (radix sort) and the next
    word up (nextafter toward the larger bits)."""
    g = {"concat": [{"witness": "f32"}, {"values": [-3.5, 2.75, -1e-30, 1e-30, 65504.0]}]}
    xs = gen_eval(g, "f32")
    n = len(xs)
    name = "bitcast_float_keys"
    bits = ["bitcast", "u32", V("x")]
    # mask = 0xFFFFFFFF for a negative sign, 0x80000000 otherwise: the sign spread by an i32
    # arithmetic shift, or-ed with the sign bit.
    mask = op("bit_or", ["bitcast", "u32", op("shr", ["bitcast", "i32", V("x")], U(31))],
              U(0x80000000))
    buffers = [buf("a", 0, "read_only", "f32", n), buf("key", 1, "write_only", "u32", n),
               buf("up", 2, "write_only", "f32", n), buf("back", 3, "write_only", "f32", n)]
    entry = [let("i", gid()), guard(length("a")), let("x", load("a", V("i"))),
             let("k", op("bit_xor", bits, mask)),
             store("key", V("i"), V("k")),
             store("up", V("i"), ["bitcast", "f32", op("add", bits, U(1))]),
             store("back", V("i"), ["bitcast", "f32", op("bit_xor", V("k"), op(
                 "bit_or", ["bitcast", "u32", op("shr", ["bitcast", "i32", op(
                     "bit_not", V("k"))], U(31))], U(0x80000000)))])]
    keys, ups, backs = [], [], []
    for x in xs:
        c = canon(x)
        key = c ^ (0xFFFFFFFF if c & 0x80000000 else 0x80000000)
        keys.append(key)
        ups.append(canon((c + 1) & M32))
        backs.append(canon(key ^ (0x80000000 if key & 0x80000000 else 0xFFFFFFFF)))
    # The keys order the numbers: the sorted keys give the values in increasing order.
    finite = [(k, bits_to_float(canon(x))) for k, x in zip(keys, xs) if not is_nan_bits(x)]
    ordered = [v for _, v in sorted(finite)]
    assert all(a <= b for a, b in zip(ordered, ordered[1:])), ordered
    case(name, "bitcast as float radix sort and nextafter use it: key = bits ^ (negative ? "
         "0xFFFFFFFF : 0x80000000) orders every non-NaN value as u32 (-0 just below +0); "
         "bitcast(f32, bits + 1) is the next word up (+0 gives the smallest subnormal pattern, "
         "which reads as +0; FLT_MAX gives inf; inf gives a NaN pattern, canonical); the key "
         "turned back gives the canonical value.",
         program(name, 64, buffers, entry), [g],
         expect=[shown(keys, "u32"), shown(ups, "f32"), shown(backs, "f32")])


float_key_case()


def i32_condition_case():
    g = {"witness": "i32"}
    xs = gen_eval(g, "i32")
    n = len(xs)
    name = "i32_condition"
    buffers = [buf("a", 0, "read_only", "i32", n), buf("sel", 1, "write_only", "u32", n),
               buf("branch", 2, "write_only", "i32", n)]
    entry = [let("i", gid()), guard(length("a")), let("x", load("a", V("i"))),
             store("sel", V("i"), op("select", V("x"), U(1), U(2))),
             if_(V("x"), [store("branch", V("i"), op("neg", V("x")))],
                 [store("branch", V("i"), I(77))])]
    case(name, "An i32 condition is true when nonzero, in a select and in an if (negative "
         "values, MIN and MAX included).",
         program(name, 64, buffers, entry), [g],
         expect=[[1 if x else 2 for x in xs],
                 shown([u32(-s32(x)) if x else 77 for x in xs], "i32")])


i32_condition_case()


# ---------------------------------------------------------------------------------------------
# Long loops (docs/semantics.md section 7): more than 65,535 loop passes in one invocation, which
# lavapipe's loop limiter allows an invocation over all of its loops, run to their end on every
# backend; the loop limit still traps where the iterations exceed it, not before.

def long_loop_cases():
    name = "loop_long_single"
    trips = [70000, 131072, 1, 0, 65535, 65536, 99999, 3]
    prog = program(name, 8, [buf("n", 0, "read_only", "u32", 8),
                             buf("sum", 1, "write_only", "u32", 8),
                             buf("count", 2, "write_only", "u32", 8)],
                   [let("i", gid()), let("s", U(0)), let("c", U(0)),
                    loop("k", U(0), load("n", V("i")),
                         [assign("s", op("add", V("s"), op("mul", V("k"), V("k")))),
                          assign("c", op("add", V("c"), U(1)))]),
                    store("sum", V("i"), V("s")), store("count", V("i"), V("c"))])
    case(name, "One loop per invocation, its bound loaded (70,000 to 131,072 iterations, and "
         "short ones beside them in the same workgroup): every invocation runs all of its "
         "iterations (wrapping sum of k*k, and the count).",
         prog, [{"values": trips}], config={"max_loop_iterations": 200000},
         expect=[[u32(sum(k * k for k in range(n))) for n in trips], trips])

    name = "loop_long_sequential"
    prog = program(name, 2, [buf("y", 0, "write_only", "u32", 2)],
                   [let("i", gid()), let("s", U(0)),
                    loop("a", U(0), U(40000), [assign("s", op("add", V("s"), V("a")))]),
                    loop("b", U(0), U(50000), [assign("s", op("bit_xor", V("s"), V("b")))]),
                    store("y", V("i"), V("s"))])
    want = 0
    for a in range(40000):
        want = u32(want + a)
    for b in range(50000):
        want ^= b
    case(name, "Two loops of 40,000 and 50,000 iterations in a row, each short of 65,535 but "
         "not together: both run to their end.", prog, None, expect=[[want, want]])

    name = "loop_long_nested"
    prog = program(name, 2, [buf("y", 0, "write_only", "u32", 4)],
                   [let("i", gid()), let("s", U(0)), let("t", U(0)),
                    loop("a", U(0), U(300), [
                        loop("b", U(0), U(300), [
                            assign("s", op("add", V("s"), op("mul", V("a"), V("b"))))])]),
                    loop("c", U(0), U(70000), [
                        loop("d", U(0), U(3), [
                            assign("t", op("add", V("t"), op("add", V("c"), V("d"))))])]),
                    store("y", op("mul", V("i"), U(2)), V("s")),
                    store("y", op("add", op("mul", V("i"), U(2)), U(1)), V("t"))])
    s_want = u32(sum(a * b for a in range(300) for b in range(300)))
    t_want = u32(sum(c + d for c in range(70000) for d in range(3)))
    case(name, "300 x 300 nested iterations, and 70,000 x 3: every iteration of the inner "
         "loops runs.", prog, None, config={"max_loop_iterations": 1000000},
         expect=[[s_want, t_want, s_want, t_want]])

    name = "loop_limit_long_exact"
    prog = program(name, 4, [buf("y", 0, "write_only", "u32", 4)],
                   [let("i", gid()), let("s", U(0)),
                    loop("a", U(0), U(7), [assign("s", op("add", V("s"), U(1)))]),
                    loop("b", U(0), U(99993), [assign("s", op("add", V("s"), U(1)))]),
                    store("y", V("i"), V("s"))])
    case(name, "7 and then 99,993 iterations: exactly max_loop_iterations (100,000) do not "
         "trap, even where the limit falls inside a long loop.", prog, None,
         config={"max_loop_iterations": 100000}, expect=[[100000] * 4])

    name = "trap_loop_limit_long"
    prog = program(name, 4, [buf("n", 0, "read_only", "u32", 4),
                             buf("y", 1, "write_only", "u32", 4)],
                   [let("i", gid()), let("s", U(0)),
                    loop("a", U(0), U(7), [assign("s", op("add", V("s"), U(1)))]),
                    loop("b", U(0), load("n", V("i")), [assign("s", op("add", V("s"), U(1)))]),
                    store("y", V("i"), V("s"))])
    case(name, "7 and then 99,993 to 99,996 iterations under a limit of 100,000: the "
         "invocations that need 100,001 or more trap with loop_limit at the second loop.",
         prog, [{"values": [99993, 99994, 99995, 99996]}],
         config={"max_loop_iterations": 100000}, expect=trap("loop_limit", "entry[3].loop"))

    # The outer loop's bound is loaded, so lavapipe writes it as copies of its body, and the
    # loop of 3 inside as three copies with no loop: the iterations still count in the order
    # they run (outer 1, inner 3, outer 1, ...), so the 21st iteration is the sixth of the
    # outer loop, not the third of an inner one.
    name = "trap_loop_limit_nested_copies"
    prog = program(name, 2, [buf("n", 0, "read_only", "u32", 2),
                             buf("y", 1, "write_only", "u32", 2)],
                   [let("i", gid()), let("s", U(0)),
                    loop("a", U(0), load("n", V("i")), [
                        loop("b", U(0), U(3), [assign("s", op("add", V("s"), V("b")))])]),
                    store("y", V("i"), V("s"))])
    case(name, "An outer loop of 100 around an inner loop of 3, under a limit of 20 iterations: "
         "5 outer iterations with their 15 inner ones make 20, and the sixth outer iteration "
         "traps with loop_limit at the outer loop, on every backend whatever it does to the "
         "loops.", prog, [{"values": [100, 100]}], config={"max_loop_iterations": 20},
         expect=trap("loop_limit", "entry[2].loop"))
    name = "loop_limit_nested_copies_exact"
    prog = program(name, 2, [buf("n", 0, "read_only", "u32", 2),
                             buf("y", 1, "write_only", "u32", 2)],
                   [let("i", gid()), let("s", U(0)),
                    loop("a", U(0), load("n", V("i")), [
                        loop("b", U(0), U(3), [assign("s", op("add", V("s"), V("b")))])]),
                    store("y", V("i"), V("s"))])
    case(name, "The loops of trap_loop_limit_nested_copies with 5 and 4 outer iterations: 20 "
         "and 16 iterations in all do not trap under a limit of 20.", prog,
         [{"values": [5, 4]}], config={"max_loop_iterations": 20}, expect=[[15, 12]])


# ---------------------------------------------------------------------------------------------
# Random integer operands

def random_int_case():
    gens = [{"random": "u32", "count": 512, "seed": 51},
            {"concat": [{"random": "u32", "count": 448, "seed": 52, "min": 0, "max": 70000},
                        {"values": [0] * 32},
                        {"random": "u32", "count": 32, "seed": 53}]},
            {"random": "i32", "count": 512, "seed": 54},
            {"concat": [{"random": "i32", "count": 448, "seed": 55, "min": -300, "max": 300},
                        {"random": "i32", "count": 64, "seed": 56}]}]
    ux, uy = gen_eval(gens[0], "u32"), gen_eval(gens[1], "u32")
    ix, iy = gen_eval(gens[2], "i32"), gen_eval(gens[3], "i32")
    name = "int_div_mod_random"
    buffers = [buf("ua", 0, "read_only", "u32", 512), buf("ub", 1, "read_only", "u32", 512),
               buf("ia", 2, "read_only", "i32", 512), buf("ib", 3, "read_only", "i32", 512),
               buf("udiv", 4, "write_only", "u32", 512), buf("umod", 5, "write_only", "u32", 512),
               buf("uhigh", 6, "write_only", "u32", 512),
               buf("usat", 7, "write_only", "u32", 512),
               buf("idiv", 8, "write_only", "i32", 512), buf("imod", 9, "write_only", "i32", 512),
               buf("ihigh", 10, "write_only", "i32", 512)]
    entry = [let("i", gid()),
             let("x", load("ua", V("i"))), let("y", load("ub", V("i"))),
             let("p", load("ia", V("i"))), let("q", load("ib", V("i"))),
             store("udiv", V("i"), op("div", V("x"), V("y"))),
             store("umod", V("i"), op("mod", V("x"), V("y"))),
             store("uhigh", V("i"), op("mul_high", V("x"), V("y"))),
             store("usat", V("i"), op("sat_sub", op("sat_mul", V("x"), V("y")),
                                      op("sat_add", V("x"), V("y")))),
             if_(op("ne", V("q"), I(0)),
                 [store("idiv", V("i"), op("div", V("p"), V("q"))),
                  store("imod", V("i"), op("mod", V("p"), V("q")))],
                 [store("idiv", V("i"), I(77)), store("imod", V("i"), I(-77))]),
             store("ihigh", V("i"), op("mul_high", V("p"), V("q")))]
    e_udiv = [u32_binop("div", x, y) for x, y in zip(ux, uy)]
    e_umod = [u32_binop("mod", x, y) for x, y in zip(ux, uy)]
    e_uhigh = [u32_binop("mul_high", x, y) for x, y in zip(ux, uy)]
    e_usat = [u32_binop("sat_sub", u32_binop("sat_mul", x, y), u32_binop("sat_add", x, y))
              for x, y in zip(ux, uy)]
    e_idiv = [i32_binop("div", p, q) if q else 77 for p, q in zip(ix, iy)]
    e_imod = [i32_binop("mod", p, q) if q else u32(-77) for p, q in zip(ix, iy)]
    e_ihigh = [i32_binop("mul_high", p, q) for p, q in zip(ix, iy)]
    assert all(not (s32(p) == INT_MIN and s32(q) == -1) for p, q in zip(ix, iy))
    case(name, "u32 and i32 division, remainder, mul_high and the saturating ops on random "
         "operands, with zero divisors among them (u32: MAX and 0; i32: guarded by an if).",
         program(name, 64, buffers, entry), gens,
         expect=[shown(e_udiv, "u32"), shown(e_umod, "u32"), shown(e_uhigh, "u32"),
                 shown(e_usat, "u32"), shown(e_idiv, "i32"), shown(e_imod, "i32"),
                 shown(e_ihigh, "i32")])


random_int_case()


# ---------------------------------------------------------------------------------------------
# Node kinds and control flow

def node_cases():
    g = {"concat": [{"iota": "u32", "count": 160}, {"witness": "u32"}]}
    xs = gen_eval(g, "u32")
    n = len(xs)
    name = "node_let_assign"
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", n),
                              buf("acc", 1, "write_only", "u32", n),
                              buf("flag", 2, "write_only", "bool", n)],
                   [let("i", gid()), guard(length("x")),
                    let("v", load("x", V("i"))),
                    let("a", V("v")),
                    assign("a", op("add", op("mul", V("a"), U(3)), U(1))),
                    assign("a", op("bit_xor", V("a"), V("v"))),
                    let("f", op("lt", V("v"), U(100))),
                    assign("f", op("not", V("f"))),
                    store("acc", V("i"), V("a")),
                    store("flag", V("i"), V("f"))])
    case(name, "let binds a value, assign replaces it with one of the same type (u32 and bool), "
         "later reads see the latest assignment.", prog, [g],
         expect=[[u32(x * 3 + 1) ^ x for x in xs], [x >= 100 for x in xs]])

    name = "node_if_else"
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", n),
                              buf("y", 1, "write_only", "u32", n)],
                   [let("i", gid()), guard(length("x")),
                    let("v", load("x", V("i"))),
                    if_(op("bit_and", V("v"), U(1)),
                        [if_(op("gt", V("v"), U(10)),
                             [store("y", V("i"), U(1))],
                             [store("y", V("i"), U(2))])],
                        [if_(op("eq", V("v"), U(0)),
                             [store("y", V("i"), U(3))],
                             [])])])

    def if_else(v):
        if v & 1:
            return 1 if v > 10 else 2
        return 3 if v == 0 else 0
    case(name, "if takes a u32 condition (nonzero is true) or a bool; nested arms; an empty "
         "else arm leaves the zero-filled output untouched.", prog, [g],
         expect=[[if_else(x) for x in xs]])

    gl = {"random": "u32", "count": 200, "seed": 61, "min": 0, "max": 12}
    ls = gen_eval(gl, "u32")
    name = "node_loop_bounds"
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 200),
                              buf("sums", 1, "write_only", "u32", 200),
                              buf("twice", 2, "write_only", "u32", 200),
                              buf("pairs", 3, "write_only", "u32", 200)],
                   [let("i", gid()), guard(length("x")),
                    let("n", load("x", V("i"))),
                    let("s", U(0)),
                    loop("k", U(0), V("n"), [assign("s", op("add", V("s"), V("k")))]),
                    loop("never", U(5), U(2), [assign("s", op("add", V("s"), U(1000)))]),
                    loop("empty", V("n"), V("n"), [assign("s", op("add", V("s"), U(1000)))]),
                    let("hi", V("n")),
                    loop("k2", U(0), V("hi"), [assign("hi", op("add", V("hi"), U(1)))]),
                    let("c", U(0)),
                    loop("p", U(0), op("min", V("n"), U(4)), [
                        loop("q", V("p"), U(4), [
                            assign("c", op("add", V("c"), op("add", op("mul", V("p"), U(16)),
                                                             V("q"))))])]),
                    store("sums", V("i"), V("s")),
                    store("twice", V("i"), V("hi")),
                    store("pairs", V("i"), V("c"))])

    def pairs(nv):
        return sum(p * 16 + q for p in range(min(nv, 4)) for q in range(p, 4))
    case(name, "Loops are half-open (from >= to runs nothing), bounds are evaluated once "
         "(assigning the bound's variable in the body does not extend the loop), the counter "
         "counts up, and an inner loop may start at the outer counter.", prog, [gl],
         expect=[[nv * (nv - 1) // 2 for nv in ls], [2 * nv for nv in ls],
                 [pairs(nv) for nv in ls]])

    gk = {"random": "u32", "count": 100, "seed": 62, "min": 0, "max": 40}
    gt = {"random": "u32", "count": 32, "seed": 63, "min": 0, "max": 40}
    ks, ts = gen_eval(gk, "u32"), gen_eval(gt, "u32")
    name = "node_return_search"
    prog = program(name, 64, [buf("keys", 0, "read_only", "u32", 100),
                              buf("table", 1, "read_only", "u32", 32),
                              buf("pos", 2, "write_only", "u32", 100),
                              buf("missing", 3, "write_only", "bool", 100)],
                   [let("i", gid()), guard(length("keys")),
                    let("key", load("keys", V("i"))),
                    loop("j", U(0), length("table"), [
                        if_(op("eq", load("table", V("j")), V("key")),
                            [store("pos", V("i"), op("add", V("j"), U(1))), ret()])]),
                    store("missing", V("i"), B(True))])
    e_pos = [(ts.index(k) + 1) if k in ts else 0 for k in ks]
    case(name, "return inside a loop ends the invocation at the first match: nothing after the "
         "loop runs for it, and the invocations past the end return at the guard.", prog,
         [gk, gt], expect=[e_pos, [k not in ts for k in ks]])

    name = "node_block_region_scopes"
    prog = program(name, 64, [buf("x", 0, "read_only", "i32", 128),
                              buf("y", 1, "write_only", "i32", 128),
                              buf("z", 2, "write_only", "i32", 128)],
                   [let("i", gid()),
                    block([let("t", op("mul", load("x", V("i")), I(2))),
                           store("y", V("i"), V("t"))]),
                    region("conformance.scope", [
                        let("t", op("sub", load("x", V("i")), I(5))),
                        block([let("u", op("add", V("t"), I(1))),
                               region("inner", [store("z", V("i"), op("mul", V("u"), V("t")))])])]),
                    block([])])
    gx = {"random": "i32", "count": 128, "seed": 64, "min": -1000, "max": 1000}
    xv = [s32(w) for w in gen_eval(gx, "i32")]
    case(name, "block and region open scopes: sibling scopes reuse a name, inner scopes see "
         "outer variables, an empty block does nothing, and a region computes exactly what a "
         "block would.", prog, [gx],
         expect=[[2 * v for v in xv], [(v - 5 + 1) * (v - 5) for v in xv]])

    name = "select_both_arms"
    gs = {"random": "u32", "count": 100, "seed": 65}
    sv = gen_eval(gs, "u32")
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 100),
                              buf("counts", 1, "read_write", "u32", 2, output=True),
                              buf("picked", 2, "write_only", "u32", 100),
                              buf("fpick", 3, "write_only", "f32", 100),
                              buf("bpick", 4, "write_only", "bool", 100)],
                   [let("i", gid()), guard(length("x")),
                    let("v", load("x", V("i"))),
                    let("odd", op("bit_and", V("v"), U(1))),
                    let("got", ["select", V("odd"),
                                atomic("add", "counts", U(0), U(1)),
                                atomic("add", "counts", U(1), U(1))]),
                    store("picked", V("i"), ["select", op("gt", V("v"), U(0x80000000)),
                                             op("shr", V("v"), U(16)), V("odd")]),
                    store("fpick", V("i"), ["select", V("odd"), F(1.5), F("-inf")]),
                    store("bpick", V("i"), ["select", op("lt", V("v"), U(1000000000)),
                                            B(True), op("eq", V("odd"), U(1))])])
    case(name, "select evaluates both arms: the atomics in both arms run for every invocation, "
         "so both counters reach 100; a u32 condition is true when nonzero.", prog, [gs],
         expect=[[100, 100],
                 [(v >> 16) if v > 0x80000000 else (v & 1) for v in sv],
                 [1.5 if v & 1 else "-inf" for v in sv],
                 [True if v < 1000000000 else (v & 1) == 1 for v in sv]])

    name = "ids_2d"
    prog = program(name, [8, 4, 1], [buf("where", 0, "write_only", "u32", 24 * 8)],
                   [let("x", gid(0)), let("y", gid(1)),
                    store("where", op("add", op("mul", V("y"), U(24)), V("x")),
                          op("bit_or", op("bit_or", op("shl", wgid(0), U(24)),
                                          op("shl", wgid(1), U(16))),
                             op("bit_or", op("shl", lid(0), U(8)), lid(1))))])
    exp = [0] * (24 * 8)
    for wy in range(2):
        for wx in range(3):
            for ly in range(4):
                for lx in range(8):
                    gx_, gy_ = wx * 8 + lx, wy * 4 + ly
                    exp[gy_ * 24 + gx_] = (wx << 24) | (wy << 16) | (lx << 8) | ly
    case(name, "gid = wgid * workgroup_size + lid on x and y, with a 2D workgroup [8, 4] and an "
         "explicit grid [3, 2, 1].", prog, None, config={"grid": [3, 2, 1]}, expect=[exp])

    name = "ids_3d"
    prog = program(name, [4, 2, 2], [buf("where", 0, "write_only", "u32", 8 * 6 * 4)],
                   [let("x", gid(0)), let("y", gid(1)), let("z", gid(2)),
                    store("where", op("add", op("mul", op("add", op("mul", V("z"), U(6)), V("y")),
                                                 U(8)), V("x")),
                          op("add", op("mul", op("add", op("mul", wgid(2), U(100)), wgid(1)),
                                       U(1000)),
                             op("add", op("mul", wgid(0), U(10)), lid(2))))])
    exp = [0] * (8 * 6 * 4)
    for z in range(4):
        for y in range(6):
            for x in range(8):
                exp[(z * 6 + y) * 8 + x] = ((z // 2) * 100 + (y // 2)) * 1000 + (x // 4) * 10 + z % 2
    case(name, "gid, wgid and lid on all three axes: workgroup [4, 2, 2], grid [2, 3, 2].",
         prog, None, config={"grid": [2, 3, 2]}, expect=[exp])

    name = "grid_many_workgroups"
    prog = program(name, 1, [buf("y", 0, "write_only", "u32", 70000)],
                   [store("y", gid(), op("add", op("mul", gid(), U(2)), wgid()))])
    case(name, "70000 workgroups of one invocation: more than many devices allow on one axis "
         "(65535), so a backend folds the grid into y and z while gid stays the linear id.",
         prog, None, expect=[[3 * i for i in range(70000)]])

    name = "grid_partial_last_part"
    prog = program(name, 1, [buf("y", 0, "write_only", "u32", 5003)],
                   [store("y", gid(), op("add", wgid(), U(1)))])
    case(name, "5003 workgroups of one invocation on x alone: a backend that launches large "
         "grids in parts (Vulkan: parts of 4096 workgroups on a CPU device) must run the "
         "partial last part too, so every element is its workgroup id + 1.",
         prog, None, expect=[[i + 1 for i in range(5003)]])

    name = "workgroup_size_override"
    prog = program(name, 64, [buf("l", 0, "write_only", "u32", 96),
                              buf("w", 1, "write_only", "u32", 96)],
                   [store("l", gid(), lid()), store("w", gid(), wgid())])
    case(name, "config.workgroup_size replaces the program's [64, 1, 1] by [32, 1, 1]: 96 "
         "elements take 3 workgroups, and lid/wgid follow the new size.", prog, None,
         config={"workgroup_size": [32, 1, 1]},
         expect=[[i % 32 for i in range(96)], [i // 32 for i in range(96)]])


node_cases()


def spec_cases():
    def prog(name):
        return program(name, 64, [buf("x", 0, "read_only", "f32", 64),
                                  buf("y", 1, "write_only", "f32", 64),
                                  buf("n", 2, "write_only", "u32", 64),
                                  buf("b", 3, "write_only", "bool", 64)],
                       [let("i", gid()),
                        store("y", V("i"), op("mul", load("x", V("i")),
                                              ["spec", "scale", "f32", F(2.0)])),
                        let("s", U(0)),
                        loop("k", U(0), ["spec", "reps", "u32", U(3)], [
                            assign("s", op("add", V("s"), op("add", V("k"), [
                                "cast", "u32", ["spec", "bias", "i32", I(-1)]])))]),
                        store("n", V("i"), V("s")),
                        store("b", V("i"), ["spec", "on", "bool", B(False)])])
    gx = {"iota": "f32", "count": 64, "start": -8.0, "step": 0.25}
    xs = gen_eval(gx, "f32")

    def sums(reps, bias):
        return u32(sum(k + bias for k in range(reps)))
    case("spec_defaults", "spec constants take their defaults when config.spec is absent: "
         "f32 scale 2, u32 loop bound 3, i32 bias -1, bool false.", prog("spec_defaults"),
         [gx], expect=[shown([fmul(x, 0x40000000) for x in xs], "f32"),
                       [sums(3, -1)] * 64, [False] * 64])
    case("spec_override", "config.spec overrides f32, u32 (a loop bound), i32 and bool spec "
         "constants; names absent from config keep their defaults.", prog("spec_override"),
         [gx], config={"spec": {"scale": -0.5, "reps": 7, "on": True}},
         expect=[shown([fmul(x, 0xBF000000) for x in xs], "f32"),
                 [sums(7, -1)] * 64, [True] * 64])

    tiny = bits_to_float(0x00000001)
    prog = program("spec_f32_noncanonical", 1, [buf("y", 0, "write_only", "f32", 8)],
                   [if_(op("eq", gid(), U(0)), [
                       store("y", U(0), ["spec", "sub", "f32", F(0.0)]),
                       store("y", U(1), ["spec", "nsub", "f32", F(0.0)]),
                       store("y", U(2), ["spec", "qnan", "f32", F(0.0)]),
                       store("y", U(3), ["spec", "nnan", "f32", F(0.0)]),
                       store("y", U(4), ["spec", "dsub", "f32", F(tiny)]),
                       store("y", U(5), ["spec", "big", "f32", F(0.0)]),
                       store("y", U(6), F(tiny)),
                       store("y", U(7), F(-tiny))])])
    case("spec_f32_noncanonical", "f32 spec values and literals stored straight to an output "
         "come out canonical: the subnormal words 0x00000001 and 0x80000005 (and a subnormal "
         "default) flush to +0 and -0, NaNs with payloads 0x7FC12345 and 0xFFC00001 become "
         "0x7FC00000, the smallest normal number passes unchanged.", prog,
         config={"spec": {"sub": "0x00000001", "nsub": "0x80000005", "qnan": "0x7fc12345",
                          "nnan": "0xffc00001", "big": "0x00800000"}},
         expect=[shown([0, 0x80000000, NAN, NAN, 0, 0x00800000, 0, 0x80000000], "f32")])


spec_cases()


# ---------------------------------------------------------------------------------------------
# Buffers and memory

def memory_cases():
    name = "count0_lengths"
    gx = {"iota": "u32", "count": 10, "start": 100}
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 0),
                              buf("empty", 1, "read_only", "f32", 0),
                              buf("fixed", 2, "uniform", "u32", 7),
                              buf("rw", 3, "read_write", "i32", 0),
                              buf("lens", 4, "write_only", "u32", 8),
                              buf("tile", 5, "workgroup", "u32", 48)],
                   [let("i", gid()),
                    if_(op("eq", V("i"), U(0)), [
                        store("lens", U(0), length("x")),
                        store("lens", U(1), length("empty")),
                        store("lens", U(2), length("fixed")),
                        store("lens", U(3), length("rw")),
                        store("lens", U(4), length("lens")),
                        store("lens", U(5), length("tile")),
                        store("lens", U(6), op("add", load("x", U(9)),
                                               ["cast", "u32", load("empty", U(0))])),
                        store("lens", U(7), load("x", U(10)))]),
                    store("rw", V("i"), op("sub", load("rw", V("i")), I(1)))])
    gr = {"values": [10, 20, 30]}
    case(name, "len of count-0 buffers is their input's element count (10, and 0 for an empty "
         "input, whose loads read 0), a declared count otherwise; loads past a count-0 "
         "buffer's input read 0; a count-0 read_write buffer returns as many elements as it "
         "received; len of a workgroup buffer is its count.",
         prog, [gx, {"values": []}, {"iota": "u32", "count": 7}, gr],
         expect=[[9, 19, 29], [10, 0, 7, 3, 8, 48, 109, 0]])

    name = "count0_empty_input"
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 0),
                              buf("y", 1, "write_only", "u32", 16)],
                   [let("i", gid()),
                    store("y", V("i"), op("add", load("x", V("i")), op("add", length("x"),
                                                                      U(1))))])
    case(name, "A count-0 input given 0 bytes: len is 0 and every load reads 0, while the grid "
         "still covers the 16-element output.", prog, [{"values": []}],
         expect=[[1] * 16])

    name = "bool_buffers"
    gb = {"concat": [{"witness": "bool"}, {"random": "bool", "count": 60, "seed": 71}]}
    bs = gen_eval(gb, "bool")
    prog = program(name, 64, [buf("x", 0, "read_only", "bool", 64),
                              buf("flags", 1, "read_write", "bool", 64),
                              buf("inv", 2, "write_only", "bool", 64),
                              buf("words", 3, "write_only", "u32", 64)],
                   [let("i", gid()),
                    let("b", load("x", V("i"))),
                    store("inv", V("i"), op("not", V("b"))),
                    store("words", V("i"), op("add", ["cast", "u32", V("b")],
                                              ["cast", "u32", load("flags", V("i"))])),
                    if_(op("lt", V("i"), U(32)), [store("flags", V("i"), load("flags", V("i")))])])
    gf = {"repeat": {"witness": "bool"}, "times": 16}
    fs = gen_eval(gf, "bool")
    case(name, "bool buffers hold one u32 word per element: any nonzero word (2, 0xFFFFFFFF) "
         "loads as true, stores write 1 or 0, and elements of a read_write bool buffer that are "
         "never stored come back with their original words.", prog, [gb, gf],
         expect=[[int(f != 0) if k < 32 else "0x%08x" % f for k, f in enumerate(fs)],
                 [b == 0 for b in bs],
                 [int(b != 0) + int(f != 0) for b, f in zip(bs, fs)]])

    name = "coarse_elementwise_edges"
    n_x, n_y, n_run = 4000, 4200, 65 * 64
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 0),
                              buf("y", 1, "read_write", "u32", 0),
                              buf("f", 2, "write_only", "f32", n_y),
                              buf("b", 3, "write_only", "bool", n_y)],
                   [let("i", gid()),
                    if_(op("eq", op("mod", V("i"), U(7)), U(3)), [ret()]),
                    store("y", V("i"), op("add", load("x", V("i")), load("y", V("i")))),
                    if_(op("eq", op("bit_and", V("i"), U(1)), U(0)),
                        [store("y", V("i"), op("mul", load("y", V("i")), U(3)))]),
                    store("f", V("i"), ["cast", "f32", load("y", V("i"))]),
                    store("b", V("i"), op("gt", load("y", V("i")), U(5000)))])
    ys, fs, bs = [], [], []
    for i in range(n_y):
        if i % 7 == 3 or i >= n_run:
            ys.append(i)
            fs.append(0)
            bs.append(False)
            continue
        v = (3 * i + 1 if i < n_x else 0) + i
        v = v * 3 if i % 2 == 0 else v
        ys.append(v)
        fs.append(v)
        bs.append(v > 5000)
    case(name, "An elementwise program on a grid of 65 workgroups, which a coarse launch runs "
         "eight to a workgroup (the last one alone, and no 66th: y's elements past 65 * 64 keep "
         "their input): invocations that return early store nothing, a load after a store of "
         "the same element reads the store, x is shorter than y so its loads past the end read "
         "0, and bool and f32 outputs are written back after the calls.",
         prog, [{"values": [3 * i + 1 for i in range(n_x)]}, {"values": list(range(n_y))}],
         config={"grid": [65, 1, 1]}, expect=[ys, fs, bs])

    name = "oob_loads"
    prog = program(name, 64, [buf("u", 0, "read_only", "u32", 4),
                              buf("s", 1, "read_only", "i32", 4),
                              buf("f", 2, "read_only", "f32", 4),
                              buf("b", 3, "read_only", "bool", 4),
                              buf("ou", 4, "write_only", "u32", 12),
                              buf("os", 5, "write_only", "i32", 12),
                              buf("of", 6, "write_only", "f32", 12),
                              buf("ob", 7, "write_only", "bool", 12)],
                   [let("i", gid()),
                    let("at", ["select", op("lt", V("i"), U(8)), V("i"),
                               op("sub", U(0xFFFFFFFF), V("i"))]),
                    store("ou", V("i"), load("u", V("at"))),
                    store("os", V("i"), load("s", V("at"))),
                    store("of", V("i"), load("f", V("at"))),
                    store("ob", V("i"), load("b", V("at")))])
    case(name, "Loads at or past the end (4..7, and indices near 0xFFFFFFFF) read 0: 0, 0, "
         "+0.0 and false.", prog,
         [{"values": [5, 6, 7, 8]}, {"values": [-1, -2, -3, -4]},
          {"values": ["nan", -1.5, "-0", 2.0]}, {"values": [True, 2, 0, True]}],
         expect=[[5, 6, 7, 8] + [0] * 8, [-1, -2, -3, -4] + [0] * 8,
                 ["nan", -1.5, "-0", 2] + [0] * 8, [True, True, False, True] + [False] * 8])

    name = "oob_stores"
    prog = program(name, 64, [buf("y", 0, "write_only", "u32", 4),
                              buf("z", 1, "read_write", "f32", 3),
                              buf("w", 2, "workgroup", "u32", 8),
                              buf("seen", 3, "write_only", "u32", 64)],
                   [let("i", gid()),
                    store("y", V("i"), op("add", V("i"), U(1))),
                    store("y", op("bit_or", V("i"), U(0x80000000)), U(99)),
                    store("z", op("add", V("i"), U(3)), F(7.0)),
                    store("w", V("i"), op("add", V("i"), U(1))),
                    barrier(),
                    store("seen", V("i"), ["select", op("lt", V("i"), U(8)),
                                           load("w", V("i")), load("w", op("sub", V("i"),
                                                                            U(8)))])])
    case(name, "Stores at or past the end (4..63, and past 2^31) do nothing: y keeps the 4 "
         "elements written by gid 0..3, "
         "the read_write z is never touched (its input comes back), and stores past a workgroup "
         "buffer are dropped too.", prog, [{"values": [1.0, 2.0, 3.0]}],
         config={"grid": [1, 1, 1]},
         expect=[[1, 2, 3, 4], [1, 2, 3],
                 [i + 1 for i in range(8)] + [(i - 8 + 1) if i - 8 < 8 else 0
                                              for i in range(8, 64)]])

    name = "oob_atomics"
    prog = program(name, 64, [buf("counters", 0, "read_write", "u32", 2),
                              buf("olds", 1, "write_only", "u32", 64)],
                   [let("i", gid()),
                    let("old", atomic("add", "counters", V("i"), U(1))),
                    let("far", op("add", op("add", atomic("max", "counters", U(0xFFFFFFFF),
                                                          U(9)),
                                            atomic("exchange", "counters", U(2), U(9))),
                                  atomic("compare_exchange", "counters", U(5), U(9), U(0)))),
                    store("olds", V("i"), op("add", op("add", V("old"), V("far")), U(7)))])
    case(name, "Atomics at or past the end do nothing and return 0, for every op including "
         "exchange and compare_exchange.", prog, [{"values": [10, 20]}],
         expect=[[11, 21], [17, 27] + [7] * 62])

    name = "f32_canonical_memory"
    raw = [0x7F800001, 0xFFC00001, 0x7FC00000, 0xFF800000, 0x00000001, 0x807FFFFF, 0x80000000,
           0x3F800000, 0x00800000, 0x80800001, 0x7FFFFFFF, 0x00400000]
    gx = {"repeat": {"values": ["0x%08x" % r for r in raw]}, "times": 2}
    xs = gen_eval(gx, "f32")
    prog = program(name, 64, [buf("x", 0, "read_only", "f32", 24),
                              buf("z", 1, "read_write", "f32", 24),
                              buf("y", 2, "write_only", "f32", 24),
                              buf("bits", 3, "write_only", "u32", 24)],
                   [let("i", gid()), guard(length("x")),
                    let("v", load("x", V("i"))),
                    store("y", V("i"), V("v")),
                    store("bits", V("i"), ["cast", "u32", op("is_nan", V("v"))]),
                    if_(op("eq", op("bit_and", V("i"), U(1)), U(0)),
                        [store("z", V("i"), load("z", V("i")))])])
    case(name, "f32 loads and stores are canonical: every NaN becomes 0x7FC00000 and subnormals "
         "become zeros of the same sign; elements of a read_write buffer that are never "
         "stored come back as their input bits.", prog, [gx, gx],
         expect=[["0x%08x" % (canon(x) if k % 2 == 0 else x) for k, x in enumerate(xs)],
                 shown([canon(x) for x in xs], "f32"),
                 [int(is_nan_bits(x)) for x in xs]])

    name = "buffer_roles_order"
    gp = {"values": [3, 5]}
    gt = {"iota": "i32", "count": 8, "start": -4}
    gi = {"iota": "u32", "count": 16}
    prog = program(name, 64, [buf("params", 0, "uniform", "u32", 2, live_out=True),
                              buf("table", 1, "read_only", "i32", 8, live_out=True),
                              buf("data", 2, "read_write", "u32", 16),
                              buf("hist", 3, "read_write", "u32", 4, output=True),
                              buf("out", 4, "write_only", "i32", 16)],
                   [let("i", gid()), guard(length("data")),
                    let("v", load("data", V("i"))),
                    store("data", V("i"), op("add", op("mul", V("v"), load("params", U(0))),
                                             load("params", U(1)))),
                    store("out", V("i"), load("table", op("mod", V("v"), length("table")))),
                    let("old", atomic("add", "hist", op("bit_and", V("v"), U(3)), U(1)))])
    case(name, "Inputs and outputs follow binding order: a uniform and a read_only buffer marked "
         "live_out come back unchanged, a read_write buffer is both input and output, an "
         "output: true buffer starts zeroed and takes no input.", prog, [gp, gt, gi],
         expect=[[3, 5], [-4, -3, -2, -1, 0, 1, 2, 3], [3 * v + 5 for v in range(16)],
                 [4, 4, 4, 4], [(v % 8) - 4 for v in range(16)]])


memory_cases()


# ---------------------------------------------------------------------------------------------
# Atomics

def atomic_cases():
    name = "atomic_histogram"
    gd = {"random": "u32", "count": 2000, "seed": 81}
    ds = gen_eval(gd, "u32")
    prog = program(name, 128, [buf("data", 0, "read_only", "u32", 0),
                               buf("bins", 1, "read_write", "u32", 256, output=True)],
                   [let("i", gid()), guard(length("data")),
                    let("prev", atomic("add", "bins", op("unpack8_low", load("data", V("i"))),
                                       U(1)))])
    hist = [0] * 256
    for d in ds:
        hist[d & 0xFF] += 1
    case(name, "A 256-bin histogram of the low bytes of 2000 random words with atomic add into "
         "a zero-filled output; the grid covers the count-0 input (atomics make it count).",
         prog, [gd], expect=[hist])

    name = "atomic_counter_unique"
    prog = program(name, 64, [buf("counter", 0, "read_write", "u32", 1, output=True),
                              buf("seen", 1, "read_write", "u32", 1000, output=True)],
                   [let("i", gid()), guard(length("seen")),
                    let("old", atomic("add", "counter", U(0), U(1))),
                    store("seen", V("old"), op("add", load("seen", V("old")), U(1)))])
    case(name, "1000 invocations take tickets from one counter: every old value from 0 to 999 "
         "is returned exactly once (each ticket's slot is written once), whatever the order.",
         prog, None, expect=[[1000], [1] * 1000])

    name = "atomic_ops_all"
    gv = {"random": "u32", "count": 300, "seed": 82}
    vs = gen_eval(gv, "u32")
    init = [0, M32, 0, 0, M32, 0]
    prog = program(name, 64, [buf("data", 0, "read_only", "u32", 300),
                              buf("cells", 1, "read_write", "u32", 6),
                              buf("ex", 2, "read_write", "u32", 300),
                              buf("cas", 3, "read_write", "u32", 300),
                              buf("olds", 4, "write_only", "u32", 300)],
                   [let("i", gid()), guard(length("data")),
                    let("v", load("data", V("i"))),
                    let("r0", atomic("add", "cells", U(0), V("v"))),
                    let("r1", atomic("and", "cells", U(1), V("v"))),
                    let("r2", atomic("or", "cells", U(2), V("v"))),
                    let("r3", atomic("xor", "cells", U(3), V("v"))),
                    let("r4", atomic("min", "cells", U(4), V("v"))),
                    let("r5", atomic("max", "cells", U(5), V("v"))),
                    let("e", atomic("exchange", "ex", V("i"), V("v"))),
                    let("miss", atomic("compare_exchange", "cas", V("i"), U(5),
                                       op("add", op("mul", V("i"), U(2)), U(1)))),
                    let("hit", atomic("compare_exchange", "cas", V("i"), V("v"),
                                      op("mul", V("i"), U(2)))),
                    store("olds", V("i"), op("add", op("add", V("e"), V("miss")), V("hit")))])
    acc = list(init)
    for v in vs:
        acc[0] = u32(acc[0] + v)
        acc[1] &= v
        acc[2] |= v
        acc[3] ^= v
        acc[4] = min(acc[4], v)
        acc[5] = max(acc[5], v)
    case(name, "Every atomic op: add/and/or/xor/min/max from 300 invocations on one cell each "
         "(order-independent finals), exchange returning the old value, and a strong "
         "compare_exchange that fails (returns old, writes nothing) then succeeds.",
         prog, [gv, {"values": init}, {"iota": "u32", "count": 300, "start": 1000},
                {"iota": "u32", "count": 300, "step": 2}],
         expect=[acc, vs, vs, [u32((1000 + i) + 2 * i + 2 * i) for i in range(300)]])

    name = "atomic_cas_loop"
    gd = {"random": "u32", "count": 256, "seed": 83}
    ds = gen_eval(gd, "u32")
    prog = program(name, 64, [buf("data", 0, "read_only", "u32", 256),
                              buf("cells", 1, "read_write", "u32", 2, output=True)],
                   [let("i", gid()), guard(length("data")),
                    let("v", load("data", V("i"))),
                    let("sq", op("mul", V("v"), V("v"))),
                    let("h", op("bit_xor", op("rotl", V("v"), U(7)), U(0x5A5A5A5A))),
                    let("done", B(False)),
                    let("done_max", B(False)),
                    loop("t", U(0), U(1024), [
                        if_(op("not", V("done")), [
                            let("cur", atomic("or", "cells", U(0), U(0))),
                            let("got", atomic("compare_exchange", "cells", U(0),
                                              op("add", V("cur"), V("sq")), V("cur"))),
                            assign("done", op("eq", V("got"), V("cur")))]),
                        if_(op("not", V("done_max")), [
                            let("top", atomic("or", "cells", U(1), U(0))),
                            if_(op("gt", V("h"), V("top")), [
                                let("prev", atomic("compare_exchange", "cells", U(1),
                                                   V("h"), V("top"))),
                                assign("done_max", op("eq", V("prev"), V("top")))],
                                [assign("done_max", B(True))])])])])
    case(name, "compare_exchange retry loops: a sum of squares (wrapping) and a maximum built "
         "from read + compare_exchange + retry, whose finals do not depend on the order in "
         "which the 256 invocations win.", prog, [gd],
         expect=[[u32(sum(d * d for d in ds)),
                  max((rotl(d, 7) ^ 0x5A5A5A5A) for d in ds)]])


atomic_cases()


# ---------------------------------------------------------------------------------------------
# Workgroup memory and barriers

def workgroup_cases():
    name = "workgroup_reduce_u32"
    gx = {"random": "u32", "count": 1024, "seed": 91}
    xs = gen_eval(gx, "u32")
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 1024),
                              buf("sums", 1, "write_only", "u32", 16),
                              buf("scratch", 2, "workgroup", "u32", 64)],
                   [let("l", lid()),
                    store("scratch", V("l"), load("x", gid())),
                    barrier(),
                    loop("step", U(0), U(6), [
                        let("stride", op("shr", U(32), V("step"))),
                        if_(op("lt", V("l"), V("stride")), [
                            store("scratch", V("l"),
                                  op("add", load("scratch", V("l")),
                                     load("scratch", op("add", V("l"), V("stride")))))]),
                        barrier()]),
                    if_(op("eq", V("l"), U(0)), [
                        store("sums", wgid(), load("scratch", U(0)))])])
    case(name, "A tree reduction in workgroup memory with a barrier inside a uniform loop: "
         "each of 16 workgroups sums its 64 words (wrapping).", prog, [gx],
         expect=[[u32(sum(xs[w * 64:(w + 1) * 64])) for w in range(16)]])

    name = "workgroup_zeroed"
    prog = program(name, 64, [buf("y", 0, "write_only", "u32", 256),
                              buf("tile", 1, "workgroup", "u32", 64)],
                   [let("l", lid()),
                    let("before", load("tile", V("l"))),
                    barrier(),
                    store("tile", V("l"), op("add", wgid(), U(1))),
                    barrier(),
                    store("y", gid(), op("add", V("before"),
                                         op("mul", load("tile", op("mod", op("add", V("l"), U(1)),
                                                                  U(64))), U(10))))])
    case(name, "Workgroup buffers start zeroed in every workgroup: what workgroup 0 wrote is "
         "not seen by workgroup 1, and values written before a barrier are seen after it.",
         prog, None, expect=[[(w + 1) * 10 for w in range(4) for _ in range(64)]])

    name = "barrier_orderings"
    gx = {"random": "u32", "count": 128, "seed": 92}
    xs = gen_eval(gx, "u32")
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 128),
                              buf("y", 1, "write_only", "u32", 128),
                              buf("t0", 2, "workgroup", "u32", 64),
                              buf("t1", 3, "workgroup", "u32", 64),
                              buf("t2", 4, "workgroup", "u32", 64)],
                   [let("l", lid()),
                    store("t0", V("l"), load("x", gid())),
                    barrier("acq_rel"),
                    store("t1", V("l"), op("add", load("t0", op("bit_and", op("add", V("l"), U(1)),
                                                              U(63))), U(1))),
                    barrier(),
                    store("t2", V("l"), op("mul", load("t1", op("bit_and", op("add", V("l"), U(2)),
                                                              U(63))), U(2))),
                    barrier("seq_cst"),
                    store("t0", V("l"), load("t2", op("bit_and", op("add", V("l"), U(3)), U(63)))),
                    barrier("release"),
                    barrier("acquire"),
                    store("y", gid(), load("t0", op("bit_and", op("add", V("l"), U(4)), U(63))))])
    exp = []
    for g in range(128):
        w, l = divmod(g, 64)
        exp.append(u32((xs[w * 64 + (l + 10) % 64] + 1) * 2))
    case(name, "Every workgroup barrier ordering (acq_rel, default, seq_cst, release followed "
         "by acquire) orders workgroup memory between phases that read other invocations' "
         "slots.", prog, [gx], expect=[exp])

    name = "transpose_tiled"
    gm = {"random": "u32", "count": 16 * 32, "seed": 93}
    ms = gen_eval(gm, "u32")
    prog = program(name, [8, 8, 1], [buf("a", 0, "read_only", "u32", 16 * 32),
                                     buf("t", 1, "write_only", "u32", 32 * 16),
                                     buf("tile", 2, "workgroup", "u32", 64)],
                   [let("lx", lid(0)), let("ly", lid(1)),
                    store("tile", op("add", op("mul", V("ly"), U(8)), V("lx")),
                          load("a", op("add", op("mul", gid(1), U(32)), gid(0)))),
                    barrier("release"),
                    barrier("acquire"),
                    store("t", op("add", op("mul", op("add", op("mul", wgid(0), U(8)), V("ly")),
                                            U(16)),
                                  op("add", op("mul", wgid(1), U(8)), V("lx"))),
                          load("tile", op("add", op("mul", V("lx"), U(8)), V("ly"))))])
    case(name, "Transpose a 16x32 matrix through an 8x8 workgroup tile: 2D workgroups, "
         "gid/lid/wgid on two axes, release and acquire barriers.", prog, [gm],
         config={"grid": [4, 2, 1]},
         expect=[[ms[r * 32 + c] for c in range(32) for r in range(16)]])


workgroup_cases()


# ---------------------------------------------------------------------------------------------
# Small real kernels

def kernel_cases():
    name = "saxpy"
    gp = {"values": [1.7182817]}
    gx = {"random": "f32", "count": 1000, "seed": 101, "min": -100.0, "max": 100.0}
    gy = {"random": "f32", "count": 1000, "seed": 102, "min": -100.0, "max": 100.0}
    alpha, xs, ys = gen_eval(gp, "f32")[0], gen_eval(gx, "f32"), gen_eval(gy, "f32")
    prog = program(name, 256, [buf("params", 0, "uniform", "f32", 1),
                               buf("x", 1, "read_only", "f32", 0),
                               buf("y", 2, "read_write", "f32", 0)],
                   [let("i", gid()), guard(length("y")),
                    let("alpha", load("params", U(0))),
                    store("y", V("i"), ["fma", V("alpha"), load("x", V("i")),
                                        load("y", V("i"))])])
    case(name, "y = fma(alpha, x, y) over 1000 elements (count-0 buffers sized by their "
         "inputs, a uniform parameter, a length guard); fused, so one rounding per element.",
         prog, [gp, gx, gy], expect=[shown([ffma(alpha, x, y) for x, y in zip(xs, ys)], "f32")])

    name = "vector_add"
    ga = {"random": "f32", "count": 1024, "seed": 103, "min": -1e3, "max": 1e3}
    gb = {"random": "f32", "count": 1024, "seed": 104, "min": -1e-3, "max": 1e3}
    xs, ys = gen_eval(ga, "f32"), gen_eval(gb, "f32")
    hint = {"alignment": 256, "coalesce_axis": 0, "locality": "streaming"}
    prog = program(name, 64, [buf("a", 0, "read_only", "f32", 1024, hints=hint),
                              buf("b", 1, "read_only", "f32", 1024,
                                  hints={"alignment": 0, "coalesce_axis": None,
                                         "locality": "random"}),
                              buf("c", 2, "write_only", "f32", 1024, hints=hint)],
                   [let("i", gid()),
                    store("c", V("i"), op("add", load("a", V("i")), load("b", V("i"))))])
    case(name, "c = a + b on 1024 floats; the default grid is 16 workgroups of 64; buffer hints "
         "change nothing.", prog,
         [ga, gb], expect=[shown([fadd(x, y) for x, y in zip(xs, ys)], "f32")])

    name = "prefix_sum"
    gx = {"random": "u32", "count": 1024, "seed": 105, "min": 0, "max": 100000}
    xs = gen_eval(gx, "u32")
    prog = program(name, 256, [buf("x", 0, "read_only", "u32", 1024),
                               buf("y", 1, "read_write", "u32", 1024),
                               buf("sums", 2, "read_write", "u32", 4),
                               buf("t", 3, "workgroup", "u32", 256)],
                   [block([let("l", lid()),
                           store("t", V("l"), load("x", gid())),
                           barrier(),
                           loop("s", U(0), U(8), [
                               let("off", op("shl", U(1), V("s"))),
                               let("v", load("t", V("l"))),
                               if_(op("ge", V("l"), V("off")), [
                                   assign("v", op("add", V("v"),
                                                  load("t", op("sub", V("l"), V("off")))))]),
                               barrier(),
                               store("t", V("l"), V("v")),
                               barrier()]),
                           store("y", gid(), load("t", V("l"))),
                           if_(op("eq", V("l"), U(255)), [
                               store("sums", wgid(), load("t", U(255)))])]),
                    barrier("grid_sync"),
                    block([if_(op("eq", gid(), U(0)), [
                        loop("k", U(1), length("sums"), [
                            store("sums", V("k"), op("add", load("sums", V("k")),
                                                     load("sums", op("sub", V("k"), U(1)))))])])]),
                    barrier("grid_sync"),
                    block([if_(op("gt", wgid(), U(0)), [
                        store("y", gid(), op("add", load("y", gid()),
                                             load("sums", op("sub", wgid(), U(1)))))])])])
    run, scan = 0, []
    for x in xs:
        run = u32(run + x)
        scan.append(run)
    case(name, "Inclusive prefix sum of 1024 words in three grid_sync phases: a Hillis-Steele "
         "scan per workgroup of 256 in workgroup memory, a scan of the 4 block sums by one "
         "invocation, and the block offsets added back. What crosses a grid_sync lives in "
         "read_write buffers.", prog,
         [gx, {"fill": 0, "count": 1024}, {"fill": 0, "count": 4}],
         expect=[scan, [scan[255], scan[511], scan[767], scan[1023]]])

    name = "reduction_f32_two_stage"
    gx = {"random": "f32", "count": 512, "seed": 106, "min": -1.0, "max": 1.0}
    xs = gen_eval(gx, "f32")
    prog = program(name, 64, [buf("x", 0, "read_only", "f32", 512),
                              buf("partial", 1, "read_write", "f32", 8),
                              buf("total", 2, "read_write", "f32", 1),
                              buf("scratch", 3, "workgroup", "f32", 64)],
                   [region("reduce.workgroup", [
                       let("l", lid()),
                       store("scratch", V("l"), load("x", gid())),
                       barrier(),
                       loop("step", U(0), U(6), [
                           let("stride", op("shr", U(32), V("step"))),
                           if_(op("lt", V("l"), V("stride")), [
                               store("scratch", V("l"),
                                     op("add", load("scratch", V("l")),
                                        load("scratch", op("add", V("l"), V("stride")))))]),
                           barrier()]),
                       if_(op("eq", V("l"), U(0)), [
                           store("partial", wgid(), load("scratch", U(0)))])]),
                    barrier("grid_sync"),
                    region("reduce.final", [
                        if_(op("eq", gid(), U(0)), [
                            let("acc", F(0.0)),
                            loop("k", U(0), length("partial"), [
                                assign("acc", op("add", V("acc"), load("partial", V("k"))))]),
                            store("total", U(0), V("acc"))])])])
    partial = []
    for w in range(8):
        s = xs[w * 64:(w + 1) * 64]
        s = [canon(v) for v in s]
        stride = 32
        while stride >= 1:
            for l in range(stride):
                s[l] = fadd(s[l], s[l + stride])
            stride //= 2
        partial.append(s[0])
    acc = 0
    for p in partial:
        acc = fadd(acc, p)
    case(name, "A two-stage f32 sum with a fixed order: a tree per workgroup, grid_sync, then "
         "one invocation adds the 8 partial sums in order; every addition is rounded the same "
         "way on every backend.", prog, [gx, {"fill": 0, "count": 8}, [0]],
         expect=[shown(partial, "f32"), shown([acc], "f32")])

    name = "matmul_u32_tiled"
    ga = {"random": "u32", "count": 16 * 24, "seed": 107, "min": 0, "max": 1000}
    gb = {"random": "u32", "count": 24 * 32, "seed": 108, "min": 0, "max": 1000}
    am, bm = gen_eval(ga, "u32"), gen_eval(gb, "u32")
    prog = program(name, [8, 8, 1], [buf("a", 0, "read_only", "u32", 16 * 24),
                                     buf("b", 1, "read_only", "u32", 24 * 32),
                                     buf("c", 2, "write_only", "u32", 16 * 32),
                                     buf("ta", 3, "workgroup", "u32", 64),
                                     buf("tb", 4, "workgroup", "u32", 64)],
                   [let("col", gid(0)), let("row", gid(1)),
                    let("lx", lid(0)), let("ly", lid(1)),
                    let("acc", U(0)),
                    loop("t", U(0), U(3), [
                        let("k0", op("mul", V("t"), U(8))),
                        store("ta", op("add", op("mul", V("ly"), U(8)), V("lx")),
                              load("a", op("add", op("mul", V("row"), U(24)),
                                           op("add", V("k0"), V("lx"))))),
                        store("tb", op("add", op("mul", V("ly"), U(8)), V("lx")),
                              load("b", op("add", op("mul", op("add", V("k0"), V("ly")), U(32)),
                                           V("col")))),
                        barrier(),
                        loop("k", U(0), U(8), [
                            assign("acc", op("add", V("acc"),
                                             op("mul", load("ta", op("add", op("mul", V("ly"), U(8)),
                                                                     V("k"))),
                                                load("tb", op("add", op("mul", V("k"), U(8)),
                                                              V("lx"))))))]),
                        barrier()]),
                    store("c", op("add", op("mul", V("row"), U(32)), V("col")), V("acc"))])
    cm = [u32(sum(am[r * 24 + k] * bm[k * 32 + c] for k in range(24)))
          for r in range(16) for c in range(32)]
    case(name, "C = A x B (16x24 by 24x32, u32) with 8x8 tiles staged through workgroup memory "
         "and two barriers per tile.", prog, [ga, gb], config={"grid": [4, 2, 1]},
         expect=[cm])

    name = "matmul_f32_fma"
    ga = {"random": "f32", "count": 144, "seed": 109, "min": -2.0, "max": 2.0}
    gb = {"random": "f32", "count": 144, "seed": 110, "min": -2.0, "max": 2.0}
    am, bm = gen_eval(ga, "f32"), gen_eval(gb, "f32")
    prog = program(name, [4, 4, 1], [buf("a", 0, "read_only", "f32", 144),
                                     buf("b", 1, "read_only", "f32", 144),
                                     buf("c", 2, "write_only", "f32", 144)],
                   [let("col", gid(0)), let("row", gid(1)),
                    let("acc", F(0.0)),
                    loop("k", U(0), U(12), [
                        assign("acc", ["fma", load("a", op("add", op("mul", V("row"), U(12)),
                                                          V("k"))),
                                       load("b", op("add", op("mul", V("k"), U(12)), V("col"))),
                                       V("acc")])]),
                    store("c", op("add", op("mul", V("row"), U(12)), V("col")), V("acc"))])
    cm = []
    for r in range(12):
        for c in range(12):
            acc = 0
            for k in range(12):
                acc = ffma(am[r * 12 + k], bm[k * 12 + c], acc)
            cm.append(acc)
    case(name, "12x12 f32 matrix product accumulated with fma in k order, on a 2D grid "
         "[3, 3, 1] of 4x4 workgroups.", prog, [ga, gb], config={"grid": [3, 3, 1]},
         expect=[shown(cm, "f32")])

    name = "stencil_1d"
    gx = {"random": "f32", "count": 256, "seed": 111, "min": -10.0, "max": 10.0}
    xs = gen_eval(gx, "f32")
    prog = program(name, 64, [buf("x", 0, "read_only", "f32", 256),
                              buf("y", 1, "write_only", "f32", 256),
                              buf("tile", 2, "workgroup", "f32", 66)],
                   [let("g", gid()), let("l", lid()),
                    store("tile", op("add", V("l"), U(1)), load("x", V("g"))),
                    if_(op("eq", V("l"), U(0)), [
                        store("tile", U(0), load("x", op("sub", V("g"), U(1))))]),
                    if_(op("eq", V("l"), U(63)), [
                        store("tile", U(65), load("x", op("add", V("g"), U(1))))]),
                    barrier(),
                    store("y", V("g"),
                          op("add", op("add", op("mul", F(0.25), load("tile", V("l"))),
                                        op("mul", F(0.5), load("tile", op("add", V("l"), U(1))))),
                             op("mul", F(0.25), load("tile", op("add", V("l"), U(2))))))])
    ys = []
    for g in range(256):
        left = xs[g - 1] if g > 0 else 0
        right = xs[g + 1] if g < 255 else 0
        ys.append(fadd(fadd(fmul(0x3E800000, left), fmul(0x3F000000, xs[g])),
                       fmul(0x3E800000, right)))
    case(name, "A 3-point stencil with a halo staged in workgroup memory; the halo loads at "
         "both ends of the array are out of bounds (gid - 1 wraps) and read 0.", prog, [gx],
         expect=[shown(ys, "f32")])

    def bitonic_step(v, j, k):
        out = list(v)
        for i in range(len(v)):
            p = i ^ j
            if p > i:
                a, b = v[i], v[p]
                asc = (i & k) == 0
                swap = a > b if asc else a < b
                out[i], out[p] = (b, a) if swap else (a, b)
        return out

    name = "bitonic_step"
    gx = {"random": "u32", "count": 256, "seed": 112, "min": 0, "max": 1000}
    xs = gen_eval(gx, "u32")
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 256),
                              buf("y", 1, "write_only", "u32", 256)],
                   [let("i", gid()),
                    let("p", op("bit_xor", V("i"), ["spec", "j", "u32", U(1)])),
                    if_(op("gt", V("p"), V("i")), [
                        let("a", load("x", V("i"))), let("b", load("x", V("p"))),
                        let("asc", op("eq", op("bit_and", V("i"), ["spec", "k", "u32", U(2)]),
                                      U(0))),
                        let("swap", ["select", V("asc"), op("gt", V("a"), V("b")),
                                     op("lt", V("a"), V("b"))]),
                        store("y", V("i"), ["select", V("swap"), V("b"), V("a")]),
                        store("y", V("p"), ["select", V("swap"), V("a"), V("b")])])])
    case(name, "One compare-exchange step of a bitonic sort (j = 4, k = 16 from spec "
         "constants): the lower invocation of each pair writes both elements.", prog, [gx],
         config={"spec": {"j": 4, "k": 16}}, expect=[bitonic_step(xs, 4, 16)])

    name = "bitonic_sort_workgroup"
    gx = {"random": "u32", "count": 256, "seed": 113}
    xs = gen_eval(gx, "u32")
    prog = program(name, 256, [buf("x", 0, "read_only", "u32", 256),
                               buf("y", 1, "write_only", "u32", 256),
                               buf("t", 2, "workgroup", "u32", 256)],
                   [let("i", lid()),
                    store("t", V("i"), load("x", V("i"))),
                    barrier(),
                    loop("kk", U(1), U(9), [
                        let("k", op("shl", U(1), V("kk"))),
                        loop("jj", U(0), V("kk"), [
                            let("j", op("shr", V("k"), op("add", V("jj"), U(1)))),
                            let("p", op("bit_xor", V("i"), V("j"))),
                            if_(op("gt", V("p"), V("i")), [
                                let("a", load("t", V("i"))), let("b", load("t", V("p"))),
                                let("asc", op("eq", op("bit_and", V("i"), V("k")), U(0))),
                                if_(["select", V("asc"), op("gt", V("a"), V("b")),
                                     op("lt", V("a"), V("b"))], [
                                    store("t", V("i"), V("b")),
                                    store("t", V("p"), V("a"))])]),
                            barrier()])]),
                    store("y", V("i"), load("t", V("i")))])
    case(name, "A full bitonic sort of 256 words in one workgroup: nested uniform loops (the "
         "inner bound is the outer counter) with a barrier after every step.", prog, [gx],
         expect=[sorted(xs)])


kernel_cases()


# ---------------------------------------------------------------------------------------------
# grid_sync pipelines

def grid_sync_cases():
    name = "grid_sync_three_phase"
    gx = {"random": "u32", "count": 512, "seed": 121}
    xs = gen_eval(gx, "u32")
    prog = program(name, 64, [buf("data", 0, "read_write", "u32", 512),
                              buf("out", 1, "read_write", "u32", 512)],
                   [region("pipeline", [
                       block([let("i", gid()),
                              store("data", V("i"), op("mul", load("data", V("i")), U(3)))]),
                       barrier("grid_sync"),
                       block([let("i2", gid()),
                              let("next", op("mod", op("add", V("i2"), U(1)), length("data"))),
                              store("out", V("i2"), op("add", load("data", V("i2")),
                                                       load("data", V("next"))))]),
                       barrier("grid_sync"),
                       block([let("i3", gid()),
                              store("data", V("i3"),
                                    load("out", op("mod", op("add", V("i3"), U(5)),
                                                   length("out"))))])])])
    d1 = [u32(x * 3) for x in xs]
    o = [u32(d1[i] + d1[(i + 1) % 512]) for i in range(512)]
    d2 = [o[(i + 5) % 512] for i in range(512)]
    case(name, "Three phases split by grid_sync barriers in a region that wraps the whole "
         "entry: each phase reads elements that other workgroups wrote in the phase before.",
         prog, [gx, {"fill": 0, "count": 512}], expect=[d2, o])

    name = "grid_sync_atomic_total"
    gx = {"random": "u32", "count": 300, "seed": 122, "min": 0, "max": 1000}
    xs = gen_eval(gx, "u32")
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 300),
                              buf("total", 1, "read_write", "u32", 1),
                              buf("share", 2, "write_only", "u32", 300)],
                   [block([let("i", gid()),
                           if_(op("lt", V("i"), length("x")), [
                               let("old", atomic("add", "total", U(0), load("x", V("i"))))])]),
                    barrier("grid_sync"),
                    block([let("j", gid()), guard(length("x")),
                           store("share", V("j"), op("sub", load("total", U(0)),
                                                     load("x", V("j"))))])])
    t = sum(xs)
    case(name, "Atomic adds in one phase, then every invocation of the next phase reads the "
         "finished total.", prog, [gx, [0]], expect=[[t], [t - x for x in xs]])

    name = "grid_sync_workgroup_rezero"
    prog = program(name, 64, [buf("y1", 0, "read_write", "u32", 128),
                              buf("y2", 1, "write_only", "u32", 128),
                              buf("tile", 2, "workgroup", "u32", 64)],
                   [block([let("l", lid()),
                           store("tile", V("l"), op("add", V("l"), U(5))),
                           barrier(),
                           store("y1", gid(), load("tile", op("bit_and", op("add", V("l"), U(1)),
                                                              U(63))))]),
                    barrier("grid_sync"),
                    store("y2", gid(), op("add", load("tile", lid()), U(1)))])
    case(name, "Workgroup buffers start zeroed again after a grid_sync.", prog,
         [{"fill": 0, "count": 128}],
         expect=[[((l + 1) % 64) + 5 for _ in range(2) for l in range(64)], [1] * 128])


grid_sync_cases()


# ---------------------------------------------------------------------------------------------
# Traps (DESIGN.md section 4.5): the dispatch fails with TRAP, naming the kind and the path of
# the lowest-numbered node (preorder) that trapped.

def trap(kind, at):
    return {"error": "TRAP", "trap": kind, "at": at}


def trap_cases():
    def binop_trap(name, notes, o, a_vals, b_vals, kind):
        prog = program(name, 64, [buf("a", 0, "read_only", "i32", len(a_vals)),
                                  buf("b", 1, "read_only", "i32", len(b_vals)),
                                  buf("q", 2, "write_only", "i32", len(a_vals))],
                       [let("i", gid()), guard(length("a")),
                        let("x", load("a", V("i"))), let("y", load("b", V("i"))),
                        store("q", V("i"), op(o, V("x"), V("y")))])
        case(name, notes, prog, [{"values": a_vals}, {"values": b_vals}],
             expect=trap(kind, "entry[4].store"))

    base_a = [7 * k - 300 for k in range(100)]
    base_b = [(k % 9) + 1 for k in range(100)]
    b_zero = list(base_b)
    b_zero[37] = 0
    binop_trap("trap_int_div_zero", "i32 division by zero in one invocation (gid 37) traps "
               "with int_div_zero at the store that computes it.", "div", base_a, b_zero,
               "int_div_zero")
    binop_trap("trap_int_mod_zero", "i32 remainder by zero traps with int_div_zero too.",
               "mod", base_a, b_zero, "int_div_zero")
    a_min = list(base_a)
    a_min[70] = INT_MIN
    b_m1 = list(base_b)
    b_m1[70] = -1
    binop_trap("trap_int_overflow_div", "i32 MIN / -1 traps with int_overflow_div.", "div",
               a_min, b_m1, "int_overflow_div")
    binop_trap("trap_int_overflow_mod", "i32 MIN % -1 traps with int_overflow_div.", "mod",
               a_min, b_m1, "int_overflow_div")

    name = "trap_loop_limit"
    counts = [10] * 64
    counts[21] = 5000
    prog = program(name, 64, [buf("n", 0, "read_only", "u32", 64),
                              buf("y", 1, "write_only", "u32", 64)],
                   [let("i", gid()),
                    let("s", U(0)),
                    loop("k", U(0), load("n", V("i")), [assign("s", op("add", V("s"), V("k")))]),
                    store("y", V("i"), V("s"))])
    case(name, "An invocation that runs more loop iterations than config.max_loop_iterations "
         "(1000) traps with loop_limit at its loop; the others stay within the limit.",
         prog, [{"values": counts}], config={"max_loop_iterations": 1000},
         expect=trap("loop_limit", "entry[2].loop"))

    name = "loop_limit_exact"
    prog = program(name, 64, [buf("y", 0, "write_only", "u32", 64)],
                   [let("i", gid()),
                    let("s", U(0)),
                    loop("k", U(0), U(1000), [assign("s", op("add", V("s"), U(1)))]),
                    store("y", V("i"), V("s"))])
    case(name, "Exactly max_loop_iterations (1000) iterations do not trap.", prog, None,
         config={"max_loop_iterations": 1000}, expect=[[1000] * 64])

    name = "trap_loop_limit_total"
    prog = program(name, 64, [buf("y", 0, "write_only", "u32", 64)],
                   [let("i", gid()),
                    let("s", U(0)),
                    loop("k", U(0), U(600), [assign("s", op("add", V("s"), U(1)))]),
                    loop("k2", U(0), U(600), [assign("s", op("add", V("s"), U(1)))]),
                    store("y", V("i"), V("s"))])
    case(name, "The loop limit counts the iterations of all loops of an invocation: two loops "
         "of 600 exceed a limit of 1000 in the second loop.", prog, None,
         config={"max_loop_iterations": 1000}, expect=trap("loop_limit", "entry[3].loop"))

    name = "trap_select_unchosen_arm"
    prog = program(name, 64, [buf("a", 0, "read_only", "i32", 64),
                              buf("y", 1, "write_only", "i32", 64)],
                   [let("i", gid()),
                    let("x", load("a", V("i"))),
                    store("y", V("i"), ["select", op("ne", V("x"), I(0)),
                                        op("div", I(100), V("x")), I(-1)])])
    case(name, "select evaluates both arms, so a division by zero in the arm that is not "
         "chosen still traps.", prog, [{"iota": "i32", "count": 64, "start": -20}],
         expect=trap("int_div_zero", "entry[2].store"))

    name = "trap_lowest_node"
    a_vals = [1000 + k for k in range(64)]
    b_vals = [3] * 64
    c_vals = [5] * 64
    b_vals[60] = 0
    c_vals[3] = 0
    prog = program(name, 64, [buf("a", 0, "read_only", "i32", 64),
                              buf("b", 1, "read_only", "i32", 64),
                              buf("c", 2, "read_only", "i32", 64),
                              buf("y", 3, "write_only", "i32", 64)],
                   [let("i", gid()),
                    let("x", load("a", V("i"))),
                    let("m", op("mod", V("x"), load("b", V("i")))),
                    let("d", op("div", V("x"), load("c", V("i")))),
                    store("y", V("i"), op("add", V("m"), V("d")))])
    case(name, "Several invocations trap at different nodes: the report names the lowest-numbered "
         "node (entry[2], trapped by gid 60), not the first invocation to trap (gid 3 at "
         "entry[3]).", prog, [{"values": a_vals}, {"values": b_vals}, {"values": c_vals}],
         expect=trap("int_div_zero", "entry[2].let"))

    name = "trap_nested_path"
    prog = program(name, 64, [buf("a", 0, "read_only", "i32", 64),
                              buf("y", 1, "write_only", "i32", 64)],
                   [let("i", gid()),
                    region("nested", [
                        let("x", load("a", V("i"))),
                        let("s", I(0)),
                        loop("k", U(0), U(4), [
                            if_(op("eq", V("k"), U(2)), [
                                assign("s", op("div", V("x"),
                                               op("sub", ["cast", "i32", V("k")],
                                                  ["select", op("eq", V("i"), U(9)), I(2),
                                                   I(1)])))])]),
                        store("y", V("i"), V("s"))])])
    case(name, "A trap deep in the tree (region, loop, if) is reported with the full node path "
         "of the statement.", prog, [{"iota": "i32", "count": 64}],
         expect=trap("int_div_zero", "entry[1].region.body[2].loop.body[0].if.then[0].assign"))

    name = "trap_second_phase"
    prog = program(name, 64, [buf("a", 0, "read_write", "i32", 64)],
                   [block([let("i", gid()),
                           store("a", V("i"), op("sub", load("a", V("i")), I(10)))]),
                    barrier("grid_sync"),
                    block([let("j", gid()),
                           store("a", V("j"), op("div", I(1000), load("a", V("j"))))])])
    case(name, "A trap in the segment after a grid_sync fails the whole dispatch with TRAP.",
         prog, [{"iota": "i32", "count": 64}], expect={"error": "TRAP", "trap": "int_div_zero"})


trap_cases()
long_loop_cases()


# ---------------------------------------------------------------------------------------------
# Subgroups: results depend on the subgroup size, so each case names the size it assumes and
# exists once per size. Lanes are the invocations of a workgroup taken S at a time in local id
# order (lane = lid % S).

def subgroup_cases(S):
    n = 128
    groups = lambda vals: [vals[g * S:(g + 1) * S] for g in range(len(vals) // S)]  # noqa: E731

    def per_lane(vals, f):
        out = []
        for grp in groups(vals):
            r = f(grp)
            out += [r] * len(grp)
        return out

    name = "subgroup_reduce_u32_sg%d" % S
    gx = {"random": "u32", "count": n, "seed": 131}
    gm = {"random": "u32", "count": n, "seed": 132, "min": 1, "max": 3}
    xs, ms = gen_eval(gx, "u32"), gen_eval(gm, "u32")
    ops = ["add", "mul", "min", "max", "and", "or", "xor"]
    buffers = [buf("x", 0, "read_only", "u32", n), buf("m", 1, "read_only", "u32", n)]
    entry = [let("i", gid()), let("v", load("x", V("i"))), let("w", load("m", V("i")))]
    expect = []
    folds = {"add": lambda g: u32(sum(g)), "mul": lambda g: u32(math.prod(g)),
             "min": min, "max": max,
             "and": lambda g: functools.reduce(lambda a, b: a & b, g),
             "or": lambda g: functools.reduce(lambda a, b: a | b, g),
             "xor": lambda g: functools.reduce(lambda a, b: a ^ b, g)}
    for k, o in enumerate(ops):
        buffers.append(buf("r_" + o, 2 + k, "write_only", "u32", n))
        src = "w" if o == "mul" else "v"
        entry.append(store("r_" + o, V("i"), ["subgroup_reduce", o, V(src)]))
        expect.append(per_lane(ms if o == "mul" else xs, folds[o]))
    case(name, "Every subgroup reduction on u32 (wrapping add and mul), each lane getting the "
         "result of its subgroup of %d." % S, program(name, 64, buffers, entry), [gx, gm],
         expect=expect, subgroup_size=S)

    name = "subgroup_reduce_i32_f32_sg%d" % S
    gi = {"random": "i32", "count": n, "seed": 133, "min": -1000, "max": 1000}
    gf = {"concat": [{"random": "f32", "count": n - 8, "seed": 134, "min": -5.0, "max": 5.0},
                     {"values": ["nan", "-0", 0.0, "inf", "-inf", 1.0, "nan", "0x00000001"]}]}
    iv, fv = gen_eval(gi, "i32"), gen_eval(gf, "f32")
    buffers = [buf("xi", 0, "read_only", "i32", n), buf("xf", 1, "read_only", "f32", n)]
    entry = [let("i", gid()), let("a", load("xi", V("i"))), let("f", load("xf", V("i")))]
    expect = []
    b = 2
    for o in ["add", "min", "max", "and", "or", "xor"]:
        buffers.append(buf("i_" + o, b, "write_only", "i32", n))
        b += 1
        entry.append(store("i_" + o, V("i"), ["subgroup_reduce", o, V("a")]))
        fold = {"add": lambda g: u32(sum(s32(v) for v in g)),
                "min": lambda g: u32(min(s32(v) for v in g)),
                "max": lambda g: u32(max(s32(v) for v in g)),
                "and": lambda g: functools.reduce(lambda x, y: x & y, g),
                "or": lambda g: functools.reduce(lambda x, y: x | y, g),
                "xor": lambda g: functools.reduce(lambda x, y: x ^ y, g)}[o]
        expect.append(shown(per_lane(iv, fold), "i32"))
    for o in ["add", "mul", "min", "max"]:
        buffers.append(buf("f_" + o, b, "write_only", "f32", n))
        b += 1
        entry.append(store("f_" + o, V("i"), ["subgroup_reduce", o, V("f")]))
        if o in ("min", "max"):
            fold = lambda g, o=o: functools.reduce(  # noqa: E731
                lambda x, y: fminmax(x, y, o == "min"), g)
        else:
            # semantics.md §8: ascending lane order, rounding after every step.
            fold = lambda g, o=o: functools.reduce(fadd if o == "add" else fmul, g)  # noqa: E731
        expect.append(shown(per_lane(fv, fold), "f32"))
    case(name, "Subgroup reductions on i32 (signed min/max) and f32 (min/max ignore NaN and "
         "order -0 below +0; add and mul combine the lanes in ascending order, rounding after "
         "every step).", program(name, 64, buffers, entry), [gi, gf],
         expect=expect, subgroup_size=S)

    name = "subgroup_lanes_shuffle_ballot_sg%d" % S
    gx = {"random": "u32", "count": n, "seed": 135}
    xs = gen_eval(gx, "u32")
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", n),
                              buf("lane", 1, "write_only", "u32", n),
                              buf("size", 2, "write_only", "u32", n),
                              buf("rot", 3, "write_only", "u32", n),
                              buf("ballot", 4, "write_only", "u32", n),
                              buf("partial", 5, "write_only", "u32", n),
                              buf("fshuf", 6, "write_only", "f32", n)],
                   [let("i", gid()),
                    let("v", load("x", V("i"))),
                    let("ln", ["subgroup_lane"]),
                    store("lane", V("i"), V("ln")),
                    store("size", V("i"), ["subgroup_size"]),
                    store("rot", V("i"), ["subgroup_shuffle", V("v"),
                                          op("mod", op("add", V("ln"), U(1)), ["subgroup_size"])]),
                    store("ballot", V("i"), ["subgroup_ballot", op("bit_and", V("v"), U(1))]),
                    if_(op("lt", V("ln"), U(3)), [
                        store("partial", V("i"),
                              op("add", op("shl", ["subgroup_ballot", B(True)], U(8)),
                                 ["subgroup_reduce", "add", U(1)]))]),
                    store("fshuf", V("i"), ["subgroup_shuffle", ["cast", "f32", V("ln")],
                                            op("sub", ["subgroup_size"], U(1))])])
    lanes = [i % S for i in range(n)]
    rot = []
    ballot = []
    for g in range(n // S):
        grp = xs[g * S:(g + 1) * S]
        rot += [grp[(k + 1) % S] for k in range(S)]
        mask = sum(1 << k for k in range(S) if grp[k] & 1) & M32
        ballot += [mask] * S
    case(name, "subgroup_lane and subgroup_size, a rotating shuffle, a ballot over all lanes, "
         "a ballot and a reduction inside an if that only lanes 0..2 enter (only those lanes "
         "take part: mask 0b111, sum 3), and a shuffle of an f32.",
         prog, [gx], expect=[lanes, [S] * n, rot, ballot,
                             [((7 << 8) + 3) if (i % S) < 3 else 0 for i in range(n)],
                             [S - 1] * n],
         subgroup_size=S)

    name = "subgroup_sum_atomic_sg%d" % S
    gx = {"random": "u32", "count": 1000, "seed": 136, "min": 0, "max": 1000000}
    xs = gen_eval(gx, "u32")
    prog = program(name, 64, [buf("x", 0, "read_only", "u32", 0),
                              buf("total", 1, "read_write", "u32", 1, output=True)],
                   [let("part", ["subgroup_reduce", "add", load("x", gid())]),
                    if_(op("eq", ["subgroup_lane"], U(0)), [
                        let("prev", atomic("add", "total", U(0), V("part")))])])
    case(name, "Subgroup sums feeding one atomic per subgroup: the total is the same at every "
         "subgroup size (the 24 invocations past the input load 0).", prog, [gx],
         expect=[[u32(sum(xs))]], subgroup_size=S)


subgroup_cases(8)
subgroup_cases(32)


# ---------------------------------------------------------------------------------------------
# Output

def fmt(o, ind=0, width=100, lead=0):
    """JSON text, indented by two spaces a level: compact where it fits in `width` columns
    (`lead` columns are already used on the first line), otherwise one item per line, with runs
    of scalars packed several to a line and IR nodes keeping their kind on the first line."""
    flat = json.dumps(o, separators=(", ", ": "))
    if ind + lead + len(flat) <= width or not isinstance(o, (list, dict)) or not o:
        return flat
    pad = " " * (ind + 2)
    if isinstance(o, dict):
        items = []
        for k, v in o.items():
            key = json.dumps(k) + ": "
            items.append(pad + key + fmt(v, ind + 2, width, len(key)))
        return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"
    if all(not isinstance(x, (list, dict)) for x in o) and not isinstance(o[0], str):
        lines, cur = [], []
        for x in o:
            t = json.dumps(x)
            if cur and len(pad) + len(", ".join(cur + [t])) + 1 > width:
                lines.append(pad + ", ".join(cur))
                cur = []
            cur.append(t)
        lines.append(pad + ", ".join(cur))
        return "[\n" + ",\n".join(lines) + "\n" + " " * ind + "]"
    if isinstance(o[0], str):
        # an IR node or expression: its kind (and a leading name) stay on the first line
        k = 2 if len(o) > 1 and isinstance(o[1], str) else 1
        head = ", ".join(json.dumps(x) for x in o[:k])
        rest = [pad + fmt(x, ind + 2, width) for x in o[k:]]
        return "[" + head + ",\n" + ",\n".join(rest) + "]"
    return "[\n" + ",\n".join(pad + fmt(x, ind + 2, width) for x in o) + "\n" + " " * ind + "]"


# ---------------------------------------------------------------------------------------------
# Exactness against constant operands (docs/semantics.md section 10: found by tests/difffuzz)

def exactness_cases():
    gx = {"witness": "f32"}
    xs = gen_eval(gx, "f32")
    n = len(xs)
    one, two, zero, nzero = 0x3F800000, 0x40000000, 0x00000000, 0x80000000

    def prog(name, outs):
        bufs = [buf("x", 0, "read_only", "f32", n)]
        bufs += [buf(o, 1 + k, "write_only", "f32", n) for k, (o, _) in enumerate(outs)]
        body = [let("i", gid()), guard(length("x")), let("v", load("x", V("i")))]
        body += [store(o, V("i"), e) for o, e in outs]
        return program(name, 64, bufs, body)

    outs = [("neg_zero_right", op("mul", V("v"), F(-0.0))),
            ("zero_left", op("mul", F(0.0), V("v"))),
            ("cast_false_left", op("mul", ["cast", "f32", B(False)], V("v"))),
            ("eq_product_zero", ["select", op("eq", op("mul", F(0.0), V("v")), F(0.0)),
                                 F(1.0), F(2.0)]),
            ("one_left", op("mul", F(1.0), V("v"))),
            ("inf_right", op("mul", V("v"), F("inf")))]
    case("exact_mul_constant", "f32 mul with a constant operand keeps IEEE special values: "
         "x * -0, 0 * x and (cast false) * x give signed zeros and NaN for inf and NaN, so "
         "0 * x == 0 is false for them; 1 * x and x * inf too. Drivers fold such products "
         "(lavapipe: 0 * x to 0) unless every operation keeps signed zeros, inf and NaN.",
         prog("exact_mul_constant", outs), [gx],
         expect=[shown([fmul(x, nzero) for x in xs], "f32"),
                 shown([fmul(zero, x) for x in xs], "f32"),
                 shown([fmul(zero, x) for x in xs], "f32"),
                 shown([one if fcmp(fmul(zero, x), zero, "eq") else two for x in xs], "f32"),
                 shown([fmul(one, x) for x in xs], "f32"),
                 shown([fmul(x, 0x7F800000) for x in xs], "f32")])

    outs = [("plus_zero_right", op("add", V("v"), F(0.0))),
            ("plus_zero_left", op("add", F(0.0), V("v"))),
            ("plus_neg_zero", op("add", V("v"), F(-0.0))),
            ("minus_zero", op("sub", V("v"), F(0.0))),
            ("zero_minus", op("sub", F(0.0), V("v"))),
            ("self_minus", op("sub", V("v"), V("v")))]
    case("exact_add_constant", "f32 add and sub with a constant zero operand, and x - x, keep "
         "IEEE results: -0 + 0 is +0, -0 - 0 is -0, inf - inf and NaN give NaN. Drivers that "
         "treat x + 0 as x, or x - x as 0, break them.",
         prog("exact_add_constant", outs), [gx],
         expect=[shown([fadd(x, zero) for x in xs], "f32"),
                 shown([fadd(zero, x) for x in xs], "f32"),
                 shown([fadd(x, nzero) for x in xs], "f32"),
                 shown([fsub(x, zero) for x in xs], "f32"),
                 shown([fsub(zero, x) for x in xs], "f32"),
                 shown([fsub(x, x) for x in xs], "f32")])

    outs = [("zero_factor_zero_addend", ["fma", V("v"), F(0.0), F(0.0)]),
            ("zero_factor", ["fma", F(0.0), V("v"), F(1.5)]),
            ("neg_one_factor_zero_addend", ["fma", V("v"), F(-1.0), F(0.0)]),
            ("inf_factor", ["fma", V("v"), F("inf"), F(-2.0)]),
            ("inf_addend", ["fma", V("v"), F(2.0), F("-inf")]),
            ("neg_zero_addend", ["fma", V("v"), F(0.5), F(-0.0)])]
    case("exact_fma_constant", "fma with a constant zero, one or infinite operand keeps IEEE "
         "results: fma(x, 0, 0) is NaN for inf and NaN, fma(0, x, c) is NaN for inf x, "
         "fma(x, -1, +0) is +0 for x = +0 and -0 + +0 = +0, inf times a finite factor keeps its "
         "sign. Drivers fold an fma with a constant zero factor or addend (lavapipe: "
         "fma(NaN, 0, 0) to 0) unless the special operands are decided before it.",
         prog("exact_fma_constant", outs), [gx],
         expect=[shown([ffma(x, zero, zero) for x in xs], "f32"),
                 shown([ffma(zero, x, 0x3FC00000) for x in xs], "f32"),
                 shown([ffma(x, 0xBF800000, zero) for x in xs], "f32"),
                 shown([ffma(x, 0x7F800000, 0xC0000000) for x in xs], "f32"),
                 shown([ffma(x, two, 0xFF800000) for x in xs], "f32"),
                 shown([ffma(x, 0x3F000000, nzero) for x in xs], "f32")])

    # Selects, and ifs that assign in both branches, between the words of +-0.0 and +-1.0 (of
    # f32 and of u32): lavapipe turns them into a conversion of the condition, matching -0.0 as
    # 0.0, so select(c, -0.0, 1.0) gave +0. The same with the words as spec constants, which the
    # driver folds only once the pipeline is specialized.
    m1 = 0xBF800000
    words = {"neg_zero": (-0.0, nzero), "one": (1.0, one), "zero": (0.0, zero),
             "neg_one": (-1.0, m1)}

    def select_constant_case(name, const, config, notes):
        outs, expect = [], []
        body = [let("i", gid()), guard(length("x")), let("v", load("x", V("i"))),
                let("c", op("lt", V("v"), F(0.0)))]
        neg = [fcmp(x, zero, "lt") for x in xs]
        pairs = [("neg_zero", "one"), ("one", "neg_zero"), ("zero", "neg_one"),
                 ("neg_one", "zero")]
        for k, (na, nb) in enumerate(pairs):
            a, b = const(na), const(nb)
            want = shown([words[na][1] if c else words[nb][1] for c in neg], "f32")
            out = f"sel_{na}_{nb}"
            outs.append((out, "f32"))
            body.append(store(out, V("i"), ["select", V("c"), a, b]))
            expect.append(want)
            if k < 2:
                out, t = f"if_{na}_{nb}", f"t{k}"
                outs.append((out, "f32"))
                body += [let(t, F(2.0)), if_(V("c"), [assign(t, a)], [assign(t, b)]),
                         store(out, V("i"), V(t))]
                expect.append(want)
        outs.append(("sel_u32_words", "u32"))
        body.append(store("sel_u32_words", V("i"), ["select", V("c"), U(nzero), U(one)]))
        expect.append(shown([nzero if c else one for c in neg], "u32"))
        bufs = [buf("x", 0, "read_only", "f32", n)]
        bufs += [buf(o, 1 + k, "write_only", ty, n) for k, (o, ty) in enumerate(outs)]
        case(name, notes, program(name, 64, bufs, body), [gx], config=config, expect=expect)

    select_constant_case(
        "exact_select_constant", lambda w: F(words[w][0]), None,
        "select, and an if that assigns in both branches, between the words of -0.0 and 1.0 "
        "or of +0.0 and -1.0 keep their bits, as f32 and as u32. Drivers turn a select between "
        "0.0 and 1.0 into a conversion of the condition and may match -0.0 as 0.0 (lavapipe: "
        "select(c, -0.0, 1.0) gave +0).")
    select_constant_case(
        "exact_select_spec_constant", lambda w: ["spec", w, "f32", F(2.0)],
        {"spec": {w: f"0x{words[w][1]:08x}" for w in words}},
        "as exact_select_constant, with each f32 word a spec constant, which the driver folds "
        "once the pipeline is specialized (difffuzz program 0d9e7c15dd21bddc: lavapipe gave +0 "
        "for select(c, spec -0.0, 1.0) after it took the `| vy_z` that both arms shared out of "
        "the select).")

    # min and max of two constants: the library function returns an operand from one of its
    # branches, and a driver that folds the calls merges those returns into a select between
    # constants, with the fault above (difffuzz program a66116f8bdf7549c: lavapipe gave +0 for
    # min(1.0, -1.4e-45), whose subnormal literal is -0).
    cwords = [nzero, zero, one, m1, 0x80000001, INF, NAN]

    def literal(w):
        if is_nan_bits(w):
            return F("nan")
        if w & 0x7FFFFFFF == INF:
            return F("-inf" if w >> 31 else "inf")
        return F(bits_to_float(w))

    def min_max_constant_case(name, const, config, notes):
        pairs = [(a, b) for a in range(len(cwords)) for b in range(len(cwords))]
        bufs = [buf("o_min", 0, "write_only", "f32", len(pairs)),
                buf("o_max", 1, "write_only", "f32", len(pairs))]
        body = []
        for k, (a, b) in enumerate(pairs):
            body.append(store("o_min", U(k), op("min", const(a), const(b))))
            body.append(store("o_max", U(k), op("max", const(a), const(b))))
        expect = [shown([fminmax(cwords[a], cwords[b], want) for a, b in pairs], "f32")
                  for want in (True, False)]
        case(name, notes, program(name, 1, bufs, body), config=config, expect=expect)

    min_max_constant_case(
        "exact_min_max_constant", lambda k: literal(cwords[k]), None,
        "min and max of every pair of the constants -0, +0, 1, -1, a negative subnormal (which "
        "is -0), inf and NaN: the zero of the right sign, the other operand for a NaN. A driver "
        "that folds the calls turns the branches returning 1.0 or -0.0 into a conversion of a "
        "condition (difffuzz program a66116f8bdf7549c: lavapipe gave +0 for min(1.0, "
        "-1.4e-45)).")
    min_max_constant_case(
        "exact_min_max_spec_constant", lambda k: ["spec", f"w{k}", "f32", F(2.0)],
        {"spec": {f"w{k}": f"0x{w:08x}" for k, w in enumerate(cwords)}},
        "as exact_min_max_constant, with each word a spec constant, which the driver folds "
        "once the pipeline is specialized.")


def nan_seen_case():
    """A NaN that add, sub, mul, neg or abs leave loose is canonicalized where its bits are
    seen: a store (workgroup memory included) and a bitcast."""
    name = "nan_canonical_where_seen"
    xs = [0x7FC00000, 0xFFC00000, 0x7F800001, 0x3F800000, INF, NINF, 0x80000000, 0x7FFFFFFF]
    outs = ["o_cast", "o_bits", "o_add", "o_sel", "o_floor", "o_min", "o_wg", "o_mul"]
    types = ["f32", "u32", "f32", "f32", "f32", "f32", "u32", "u32"]
    bufs = [buf("x", 0, "read_only", "f32", 8)]
    bufs += [buf(o, 1 + k, "write_only", types[k], 8) for k, o in enumerate(outs)]
    bufs.append(buf("w", 9, "workgroup", "f32", 8))
    n = V("n")
    prog = program(name, 8, bufs,
                   [let("i", gid()), let("n", op("neg", load("x", V("i")))),
                    store("o_cast", V("i"), ["cast", "f32", n]),
                    store("o_bits", V("i"), ["bitcast", "u32", ["cast", "f32", n]]),
                    store("o_add", V("i"), ["cast", "f32", op("add", load("x", V("i")),
                                                             load("x", U(4)))]),
                    store("o_sel", V("i"), ["select", op("lt", V("i"), U(99)), n, F(1.0)]),
                    store("o_floor", V("i"), op("floor", n)),
                    store("o_min", V("i"), op("min", n, n)),
                    store("w", lid(), n), barrier(),
                    store("o_wg", V("i"), ["bitcast", "u32", load("w", lid())]),
                    store("o_mul", V("i"), ["bitcast", "u32", op("mul", n, F(2.0))])])
    negs = [fneg(x) for x in xs]
    two = 0x40000000
    expect = [shown([canon(v) for v in negs], "f32"),
              [canon(v) for v in negs],
              shown([fadd(x, INF) for x in xs], "f32"),
              shown(negs, "f32"),
              shown([fround_like(v, "floor") for v in negs], "f32"),
              shown([fminmax(v, v, True) for v in negs], "f32"),
              [canon(v) for v in negs],
              [fmul(v, two) for v in negs]]
    case(name, "neg of a NaN, a cast of an f32 to f32 and of a sum with a NaN, a select, floor, "
         "min, a round trip through workgroup memory and a product: each word stored or bitcast "
         "is the canonical NaN, whatever NaN the device's add, sub and mul give (difffuzz "
         "programs 2114f922ff0ef073, 85d5a1a1fa2603b8 and 98e223331c2cd3d3 on an H200: a cast "
         "to f32 passed a loose NaN on as canonical, and 0x7FFFFFFF reached memory).",
         prog, [{"values": shown(xs, "f32")}], expect=expect)


def constant_subnormal_case():
    """Products and sums of constants that a driver folds as it compiles, keeping the
    subnormals its device flushes at run time."""
    name = "subnormal_of_constants"
    sp = ["spec", "sp_f", "f32", F(-1.0)]
    tiny = 0x00800000  # the smallest normal
    prog = program(name, 1, [buf("o_b", 0, "write_only", "bool", 3),
                             buf("o_f", 1, "write_only", "f32", 3)],
                   [store("o_b", U(0), op("le", op("mul", F(0.10000000149011612), sp), F(0.0))),
                    store("o_f", U(0), op("mul", F(0.10000000149011612), sp)),
                    store("o_f", U(1), op("sub", sp, ["spec", "sp_g", "f32", F(0.0)])),
                    store("o_b", U(1), op("eq", op("sub", sp, ["spec", "sp_g", "f32", F(0.0)]),
                                          F(0.0))),
                    store("o_f", U(2), op("add", op("mul", sp, F(0.5)), sp))])
    g = 0x00800001
    want_f = [fmul(0x3DCCCCCD, tiny), fsub(tiny, g), fadd(fmul(tiny, 0x3F000000), tiny)]
    want_b = [1 if bits_to_float(want_f[0]) <= 0 else 0,
              1 if bits_to_float(fsub(tiny, g)) == 0 else 0, 0]
    case(name, "With the spec constants at the smallest normal number and the next one up, "
         "0.1 * sp_f, sp_f - sp_g and sp_f * 0.5 have subnormal exact results, which flush to "
         "zeros: a driver that folds these constant operations as it compiles keeps the "
         "subnormal that its device flushes at run time (difffuzz program 3242b3c1616161d1 on "
         "an H200: 0.1 * sp_f <= 0 was false), so an operation of constants flushes its "
         "result itself.",
         prog, config={"spec": {"sp_f": "0x%08x" % tiny, "sp_g": "0x%08x" % g}},
         expect=[[w == 1 for w in want_b], shown(want_f, "f32")])


def mul_at_smallest_normal_case():
    """Products of loaded operands whose exact value lies just below the smallest normal
    number: they round up to it, tie to it, or round to a subnormal that flushes to zero."""
    name = "mul_at_smallest_normal"
    near = [0x01000000 - k for k in range(1, 5)]       # 2^-125 - k * 2^-148
    halves = [0x3F000000, 0x3F000001, 0x3EFFFFFF, 0x3EFFFFFE]  # 0.5 and its neighbours
    xs, ys = [], []
    for a in near:
        for b in halves:
            for sa, sb in ((0, 0), (1, 0), (0, 1), (1, 1)):
                xs.append(a | sa << 31)
                ys.append(b | sb << 31)
    xs += [0x00800000, 0x00800000, 0, 0x80000000, 0x3F800000]
    ys += [0x3F800000, 0x3F000000, 0x00800000, 0x3F000000, 0x80000000]
    n = len(xs)
    prog = program(name, 64, [buf("a", 0, "read_only", "f32", n),
                              buf("b", 1, "read_only", "f32", n),
                              buf("o", 2, "write_only", "f32", n)],
                   [let("i", gid()), guard(U(n)),
                    store("o", V("i"), op("mul", load("a", V("i")), load("b", V("i"))))])
    case(name, "a * b for loaded operands near 2^-125 and 0.5: exact products just below "
         "2^-126 that round up to it or tie to it (ties to even: 2^-126), and ones that round "
         "to a subnormal and flush to the zero of their sign; a device that flushes before "
         "rounding gives zero for all of them, and the code generator decides them again.",
         prog, [{"values": shown(xs, "f32")}, {"values": shown(ys, "f32")}],
         expect=[shown([fmul(a, b) for a, b in zip(xs, ys)], "f32")])


def speculated_products_case():
    """A loop of products accumulated into a sum and a count, run where a product may be 0 from
    nonzero operands (the first run of a speculated loop notes it, and the loop runs again)."""
    name = "speculated_products"
    one, tie, least = 0x3F800000, 0x3F7FFFFF, 0x00800000   # 1, 1 - 2^-24, 2^-126
    rows = [
        # two products that tie to 2^-126 (a device that flushes first gives 0), and zeros
        ([tie, least, 0, 0x80000000], [least, tie, 0x40A00000, 0x40A00000]),
        # ordinary products: no product is 0
        ([one, 0x40000000, 0x40400000, 0x40800000], [0x3F000000, 0x3E800000, 0x40000000, one]),
        # zero operands only: products of 0 that are right as they come
        ([0, 0x80000000, 0x40E00000, 0], [0x40400000, 0, 0, 0xC0000000]),
        # a product that rounds to a subnormal (flushed either way), then 1
        ([0x3F000000, one, 0, 0], [0x00800001, one, 0, 0]),
        # a negative tie, then zeros
        ([tie | 0x80000000, 0, 0, 0], [least, 0, 0, 0]),
        # infinity times zero: NaN from the first product on
        ([0x7F800000, one, one, one], [0, one, one, one]),
        # a normal product below 2^-125 (the first run notes it too), then zeros
        ([0x3FC00000, 0, 0, 0], [least, 0, 0, 0]),
        # subnormal operands, which read as zero, times numbers that would make them normal
        ([0x00400000, 0x00000001, 0, 0], [0x40000000, 0x7F000000, 0, 0]),
    ]
    xs = [w for a, _ in rows for w in a]
    ys = [w for _, b in rows for w in b]
    n = len(rows)
    sums, counts = [], []
    for a, b in rows:
        acc = 0
        for x, y in zip(a, b):
            acc = fadd(acc, fmul(x, y))
        sums.append(acc)
        counts.append(len(a))
    idx = op("add", op("mul", V("i"), U(4)), V("k"))
    prog = program(name, 64, [buf("a", 0, "read_only", "f32", 4 * n),
                              buf("b", 1, "read_only", "f32", 4 * n),
                              buf("o", 2, "write_only", "f32", n),
                              buf("c", 3, "write_only", "u32", n)],
                   [let("i", gid()), guard(U(n)),
                    let("acc", F(0.0)), let("cnt", U(0)),
                    loop("k", U(0), U(4),
                         [assign("acc", op("add", V("acc"),
                                           op("mul", load("a", idx), load("b", idx)))),
                          assign("cnt", op("add", V("cnt"), U(1)))]),
                    store("o", V("i"), V("acc")),
                    store("c", V("i"), V("cnt"))])
    case(name, "acc = acc + a * b and cnt = cnt + 1 over a loop of four products, where two "
         "products tie to 2^-126 (a device that flushes before rounding gives 0 and the loop "
         "runs again from its saved sum and count), where products of zero operands are 0 and "
         "need no second run, where a product rounds to a subnormal or is NaN, where a normal product "
         "below 2^-125 makes the loop run again needlessly, and where subnormal operands read "
         "as zero.",
         prog, [{"values": shown(xs, "f32")}, {"values": shown(ys, "f32")}],
         expect=[shown(sums, "f32"), shown(counts, "u32")])


mul_at_smallest_normal_case()
speculated_products_case()
constant_subnormal_case()
nan_seen_case()
exactness_cases()


def written_by_hand(file):
    """A case file that this script did not write: its expectation's source starts with
    "hand" (a case minimized from a fuzzer's finding, kept as written)."""
    with open(os.path.join(OUT, file)) as f:
        c = json.load(f)
    return str(c.get("expect", {}).get("source", "")).startswith("hand")


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".json") and old[:-5] not in CASES and not written_by_hand(old):
            os.remove(os.path.join(OUT, old))
    for name, c in sorted(CASES.items()):
        text = fmt(c) + "\n"
        assert json.loads(text) == c, name
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            f.write(text)
    checked = sum(1 for c in CASES.values() if "outputs" in c.get("expect", {}))
    print("make_corpus: %d cases, %d with expected outputs, %d expecting traps"
          % (len(CASES), checked, sum(1 for c in CASES.values()
                                     if "error" in c.get("expect", {}))), file=sys.stderr)


if __name__ == "__main__":
    main()
