#!/usr/bin/python3
"""The kernel builder (client/python/vyre/kernel.py) without a daemon.

Every program of tests/programs is built again with vyre.Kernel, and its JSON must equal the
hand-written file: as data, and as the text json.dumps(indent=2) writes (the files are written
that way). The operator tables of the builder must be those of docs/ir.md. Programs the builder
must refuse raise KernelError with the expression and the Fix pinned.
"""
import json
import os
import re
import sys
import unittest

from vyred_daemon import CLIENT_DIR, PROGRAMS_DIR, SOURCE_ROOT

sys.path.insert(0, CLIENT_DIR)
import vyre  # noqa: E402
from vyre import kernel as kmod  # noqa: E402

DOCS_IR = os.path.join(SOURCE_ROOT, "docs", "ir.md")


def build_vector_add():
    k = vyre.Kernel("vector_add", workgroup_size=64)
    a, b = k.input("a", "f32", 1024), k.input("b", "f32", 1024)
    c = k.output("c", "f32", 1024)
    i = k.let("i", k.gid(0))
    c[i] = a[i] + b[i]
    return k


def build_saxpy():
    k = vyre.Kernel("saxpy", workgroup_size=256)
    params, x, y = k.uniform("params", "f32", 1), k.input("x", "f32"), k.inout("y", "f32")
    i = k.let("i", k.gid(0))
    with k.if_(i >= y.len()):
        k.return_()
    alpha = k.let("alpha", params[0])
    y[i] = vyre.fma(alpha, x[i], y[i])
    return k


def build_histogram_atomic():
    k = vyre.Kernel("histogram_atomic", workgroup_size=128)
    data = k.input("data", "u32")
    bins = k.output("bins", "u32", 256, access="read_write")
    i = k.let("i", k.gid(0))
    with k.if_(i >= data.len()):
        k.return_()
    bucket = k.let("bucket", data[i] & 255)
    k.let("prev", bins.atomic_add(bucket, 1))
    return k


def build_atomic_ops():
    k = vyre.Kernel("atomic_ops", workgroup_size=64)
    values = k.input("values", "u32", 256)
    cells = k.inout("cells", "u32", 8)
    first = k.output("first", "u32", 2)
    i = k.let("i", k.gid(0))
    with k.if_(i >= values.len()):
        k.return_()
    v = k.let("v", values[i])
    for slot, op in enumerate(("add", "and", "or", "xor", "min", "max")):
        k.let("old_" + op, cells.atomic(op, slot, v))
    with k.if_(i == 0):
        first[0] = cells.atomic_exchange(6, 7)
        first[1] = cells.atomic_compare_exchange(7, 0, 9)
    return k


def build_workgroup_reduce():
    k = vyre.Kernel("workgroup_reduce", workgroup_size=64)
    x = k.input("x", "f32", 1024)
    sums = k.output("sums", "f32", 16)
    scratch = k.workgroup("scratch", "f32", 64)
    l = k.let("l", k.lid(0))
    scratch[l] = x[k.gid(0)]
    k.barrier()
    with k.loop("step", 0, 6) as step:
        stride = k.let("stride", vyre.u32(32) >> step)
        with k.if_(l < stride):
            scratch[l] = scratch[l] + scratch[l + stride]
        k.barrier()
    with k.if_(l == 0):
        sums[k.wgid(0)] = scratch[0]
    return k


def build_grid_sync_two_phase():
    k = vyre.Kernel("grid_sync_two_phase", workgroup_size=64)
    data = k.inout("data", "u32", 1024)
    out = k.output("out", "u32", 1024)
    with k.block():
        i = k.let("i", k.gid(0))
        data[i] = data[i] * 3
    k.grid_sync()
    with k.block():
        i = k.let("i", k.gid(0))
        nxt = k.let("next", (i + 1) % data.len())
        out[i] = data[i] + data[nxt]
    return k


def build_every_node():
    k = vyre.Kernel("every_node", workgroup_size=64)
    src, dst = k.input("src", "u32", 256), k.inout("dst", "u32", 256)
    tile = k.workgroup("tile", "u32", 64)
    with k.region("stage_one"):
        i = k.let("i", k.gid(0))
        l = k.let("l", k.lid(0))
        tile[l] = src[i]
        k.barrier("acq_rel")
        total = k.let("sum", vyre.u32(0))
        with k.loop("k", 0, 4) as j:
            total += tile[(l + j) & 63]
        with k.if_(total > 1000):
            dst[i] = total
        with k.else_():
            with k.block():
                half = k.let("half", total >> 1)
                dst[i] = half
    k.barrier("grid_sync")
    with k.block():
        i = k.let("i", k.gid(0))
        with k.if_(i >= dst.len()):
            k.return_()
        dst[i] = dst[i] + 1
    return k


def build_spec_scale():
    k = vyre.Kernel("spec_scale", workgroup_size=64)
    x, y = k.input("x", "f32", 1024), k.output("y", "f32", 1024)
    i = k.let("i", k.gid(0))
    y[i] = x[i] * k.spec("scale", "f32", 2.0)
    return k


def build_loop_sum():
    k = vyre.Kernel("loop_sum", workgroup_size=64)
    m, rows = k.input("m", "f32"), k.output("rows", "f32", 64)
    r = k.let("r", k.gid(0))
    base = k.let("base", r * k.spec("cols", "u32", 16))
    acc = k.let("acc", 0.0)
    with k.loop("j", 0, k.spec("cols", "u32", 16)) as j:
        acc += m[base + j]
    rows[r] = acc
    return k


def build_early_return():
    k = vyre.Kernel("early_return", workgroup_size=64)
    needles, hay = k.input("needles", "u32", 64), k.input("hay", "u32")
    found = k.output("found", "u32", 64)
    i = k.let("i", k.gid(0))
    needle = k.let("needle", needles[i])
    with k.loop("j", 0, hay.len()) as j:
        with k.if_(hay[j] == needle):
            found[i] = j
            k.return_()
    found[i] = 4294967295
    return k


def build_bool_mask():
    k = vyre.Kernel("bool_mask", workgroup_size=64)
    x, allowed = k.input("x", "f32", 256), k.input("allowed", "bool", 256)
    keep, dropped = k.output("keep", "bool", 256), k.output("dropped", "u32", 256)
    i = k.let("i", k.gid(0))
    positive = k.let("positive", x[i] > 0.0)
    ok = k.let("ok", allowed[i] & positive)
    keep[i] = ok
    dropped[i] = vyre.cast("u32", ~ok)
    return k


def build_bitcast_keys():
    k = vyre.Kernel("bitcast_keys", workgroup_size=64)
    x = k.input("x", "f32")
    keys, next_up = k.output("keys", "u32", 1024), k.output("next_up", "f32", 1024)
    i = k.let("i", k.gid(0))
    with k.if_(i >= x.len()):
        k.return_()
    bits = k.let("bits", vyre.bitcast("u32", x[i]))
    sign = k.let("sign", vyre.bitcast("u32", vyre.bitcast("i32", bits) >> vyre.u32(31)))
    keys[i] = bits ^ (sign | vyre.u32(2147483648))
    next_up[i] = vyre.bitcast("f32", bits + vyre.u32(1))
    return k


def build_select_clamp():
    k = vyre.Kernel("select_clamp", workgroup_size=64)
    x, y = k.input("x", "i32", 4096), k.output("y", "i32", 4096)
    i = k.let("i", k.gid(0))
    v = k.let("v", x[i])
    lo = k.let("lo", k.spec("lo", "i32", -100))
    hi = k.let("hi", k.spec("hi", "i32", 100))
    y[i] = vyre.select(v < lo, lo, vyre.min(v, hi))
    return k


def build_nonfinite_literals():
    k = vyre.Kernel("nonfinite_literals", workgroup_size=64)
    x, present = k.input("x", "f32", 256), k.input("present", "bool", 256)
    sort_key, masked = k.output("sort_key", "f32", 256), k.output("masked", "f32", 256)
    root = k.output("root", "f32", 256)
    i = k.let("i", k.gid(0))
    v = k.let("v", x[i])
    sort_key[i] = vyre.select(vyre.is_nan(v), float("inf"), v)
    masked[i] = vyre.select(present[i], v, float("-inf"))
    root[i] = vyre.select(v < 0.0, float("nan"), vyre.sqrt(v))
    return k


BINARY_ROWS = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a // b,
    lambda a, b: a % b, lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b,
    lambda a, b: a << b, lambda a, b: a >> b,
    lambda a, b: vyre.cast("u32", a == b), lambda a, b: vyre.cast("u32", a != b),
    lambda a, b: vyre.cast("u32", a < b), lambda a, b: vyre.cast("u32", a <= b),
    lambda a, b: vyre.cast("u32", a > b), lambda a, b: vyre.cast("u32", a >= b),
    lambda a, b: vyre.cast("u32", vyre.logical_and(a, b)),
    lambda a, b: vyre.cast("u32", vyre.logical_or(a, b)),
    vyre.min, vyre.max, vyre.abs_diff, vyre.sat_add, vyre.sat_sub, vyre.sat_mul, vyre.rotl,
    vyre.rotr, vyre.mul_high,
]


def build_binary_ops():
    k = vyre.Kernel("binary_ops", workgroup_size=64)
    ba, bb = k.input("a", "u32", 64), k.input("b", "u32", 64)
    out = k.output("out", "u32", 1728)
    i = k.let("i", k.gid(0))
    a, b = k.let("a", ba[i]), k.let("b", bb[i])
    o = k.let("o", i * 27)
    for n, row in enumerate(BINARY_ROWS):
        out[o + n if n else o] = row(a, b)
    return k


def build_unary_ops():
    k = vyre.Kernel("unary_ops", workgroup_size=64)
    ints, floats = k.input("ints", "u32", 64), k.input("floats", "f32", 64)
    signed = k.input("signed", "i32", 64)
    int_out, float_out = k.output("int_out", "u32", 832), k.output("float_out", "f32", 1472)
    signed_out = k.output("signed_out", "i32", 192)
    i = k.let("i", k.gid(0))
    w, v, n = k.let("w", ints[i]), k.let("v", floats[i]), k.let("n", signed[i])
    uo, fo, so = k.let("uo", i * 13), k.let("fo", i * 23), k.let("so", i * 3)
    int_rows = [~w, vyre.popcount(w), vyre.clz(w), vyre.ctz(w), vyre.reverse_bits(w),
                vyre.unpack4_low(w), vyre.unpack4_high(w), vyre.unpack8_low(w),
                vyre.unpack8_high(w), vyre.cast("u32", vyre.logical_not(w)),
                vyre.cast("u32", vyre.is_nan(v)), vyre.cast("u32", vyre.is_inf(v)),
                vyre.cast("u32", vyre.is_finite(v))]
    float_rows = [-v, abs(v)] + [getattr(vyre, f)(v) for f in (
        "sign", "floor", "ceil", "round", "trunc", "sqrt", "inverse_sqrt", "reciprocal", "exp",
        "exp2", "log", "log2", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "tanh")]
    signed_rows = [-n, abs(n), vyre.sign(n)]
    for buf, at, rows in ((int_out, uo, int_rows), (float_out, fo, float_rows),
                          (signed_out, so, signed_rows)):
        for m, value in enumerate(rows):
            buf[at + m if m else at] = value
    return k


def build_cast_matrix():
    k = vyre.Kernel("cast_matrix", workgroup_size=64)
    types = ("u32", "i32", "f32", "bool")
    srcs = [k.input("src_" + t, t, 64) for t in types]
    dsts = [k.output("to_" + t, t, 256) for t in types]
    i = k.let("i", k.gid(0))
    o = k.let("o", i * 4)
    values = [k.let("v_" + t, s[i]) for t, s in zip(types, srcs)]
    for t, dst in zip(types, dsts):
        for m, v in enumerate(values):
            dst[o + m if m else o] = vyre.cast(t, v)
    return k


def build_transpose_2d():
    k = vyre.Kernel("transpose_2d", workgroup_size=(8, 8))
    src, dst = k.input("src", "f32", 4096), k.output("dst", "f32", 4096)
    owner = k.output("owner", "u32", 4096)
    tile = k.workgroup("tile", "f32", 64)
    x, y = k.let("x", k.gid(0)), k.let("y", k.gid(1))
    lx, ly = k.let("lx", k.lid(0)), k.let("ly", k.lid(1))
    tile[ly * 8 + lx] = src[y * 64 + x]
    k.barrier("release")
    k.barrier("acquire")
    tx = k.let("tx", k.wgid(1) * 8 + lx)
    ty = k.let("ty", k.wgid(0) * 8 + ly)
    dst[ty * 64 + tx] = tile[lx * 8 + ly]
    owner[y * 64 + x] = k.wgid(1) * 8 + k.wgid(0)
    return k


def build_hints_layout():
    k = vyre.Kernel("hints_layout", workgroup_size=128)
    stream = {"alignment": 64, "coalesce_axis": 0, "locality": "streaming"}
    params = k.uniform("params", "u32", 4)
    table = k.input("table", "f32", live_out=True,
                    hints={"alignment": 256, "locality": "random"})
    x = k.input("x", "u32", hints=stream)
    y = k.output("y", "f32", 1024, hints=stream)
    i = k.let("i", k.gid(0))
    scale = k.let("scale", vyre.cast("f32", params[0]))
    slot = k.let("slot", x[i] % table.len())
    y[i] = table[slot] * scale
    return k


def build_subgroup_sum():
    k = vyre.Kernel("subgroup_sum", workgroup_size=64)
    x, total = k.input("x", "u32"), k.output("total", "u32", 1, access="read_write")
    part = k.let("part", vyre.subgroup_reduce("add", x[k.gid(0)]))
    with k.if_(vyre.subgroup_lane() == 0):
        k.let("prev", total.atomic_add(0, part))
    return k


def build_subgroup_ops():
    k = vyre.Kernel("subgroup_ops", workgroup_size=64)
    x, bits = k.input("x", "f32", 256), k.input("bits", "u32", 256)
    rotated, votes = k.output("rotated", "f32", 256), k.output("votes", "u32", 256)
    stats, masks = k.output("stats", "f32", 768), k.output("masks", "u32", 768)
    i = k.let("i", k.gid(0))
    v, w = k.let("v", x[i]), k.let("w", bits[i])
    right = k.let("right", (vyre.subgroup_lane() + 1) % vyre.subgroup_size())
    rotated[i] = vyre.subgroup_shuffle(v, right)
    votes[i] = vyre.subgroup_ballot(v > 0.0)
    at = k.let("k", i * 3)
    for buf, value, ops in ((stats, v, ("min", "max", "mul")), (masks, w, ("and", "or", "xor"))):
        for m, op in enumerate(ops):
            buf[at + m if m else at] = vyre.subgroup_reduce(op, value)
    return k


BUILDERS = {name[len("build_"):]: f for name, f in globals().items()
            if name.startswith("build_")}


class ProgramsTest(unittest.TestCase):
    def test_every_program_file_has_a_builder(self):
        files = sorted(f[:-5] for f in os.listdir(PROGRAMS_DIR) if f.endswith(".json"))
        self.assertEqual(sorted(BUILDERS), files)

    def test_built_programs_equal_the_files(self):
        for name, build in sorted(BUILDERS.items()):
            with self.subTest(program=name):
                with open(os.path.join(PROGRAMS_DIR, name + ".json")) as f:
                    text = f.read()
                k = build()
                self.assertEqual(k.program(), json.loads(text))
                self.assertEqual(k.json(indent=2) + "\n", text)

    def test_program_is_a_fresh_copy(self):
        k = build_saxpy()
        k.program()["entry"].clear()
        self.assertEqual(len(k.program()["entry"]), 4)


def doc_table(section, stop):
    """The first column of the tables in a section of docs/ir.md, as written in backquotes."""
    with open(DOCS_IR) as f:
        text = f.read()
    body = text[text.index(section):]
    body = body[:body.index(stop)]
    return [m.group(1) for m in re.finditer(r"^\| `([a-z_0-9]+)` \|", body, re.M)]


class CoverageTest(unittest.TestCase):
    """The builder reaches every operator of docs/ir.md: its tables are the document's."""

    def test_binary_operators_are_those_of_ir_md(self):
        self.assertEqual(list(kmod.BINARY), doc_table("### 8.6 Binary operators", "```json"))

    def test_unary_operators_are_those_of_ir_md(self):
        self.assertEqual(list(kmod.UNARY), doc_table("### 8.7 Unary operators", "```json"))

    def test_atomics_reductions_and_orderings_are_those_of_ir_md(self):
        self.assertEqual(list(kmod.ATOMICS), doc_table("### 8.11 atomic", "```json"))
        self.assertEqual(list(kmod.REDUCTIONS), doc_table("#### subgroup_reduce", "```json"))
        self.assertEqual(list(kmod.ORDERINGS) + ["grid_sync"],
                         doc_table("### 7.9 barrier", "For the usual pattern"))

    def test_every_operator_is_a_function_of_the_package(self):
        for op in list(kmod.BINARY) + list(kmod.UNARY):
            name = kmod.PY_NAMES.get(op, op)
            with self.subTest(op=op):
                args = (vyre.u32(1), vyre.u32(2))[:2 if op in kmod.BINARY else 1]
                if op in ("neg", "abs", "sign") or kmod.UNARY.get(op) == ("f32",):
                    args = (vyre.f32(1.0),)
                if kmod.BINARY.get(op) == ("f32",):
                    args = (vyre.f32(1.0), vyre.f32(2.0))
                self.assertEqual(getattr(vyre, name)(*args).ir[0], op)


class TypeErrorTest(unittest.TestCase):
    """Each refusal raises KernelError (INVALID_PROGRAM, after_fix, also a TypeError) naming the
    expression as Python and carrying a Fix."""

    def setUp(self):
        self.k = vyre.Kernel("t", workgroup_size=64)
        self.x = self.k.input("x", "f32")
        self.n = self.k.input("n", "u32")
        self.y = self.k.output("y", "f32", 64)
        self.i = self.k.let("i", self.k.gid(0))

    def refused(self, build, message, fix, expr):
        with self.assertRaises(vyre.KernelError) as caught:
            build()
        e = caught.exception
        self.assertIsInstance(e, TypeError)
        self.assertIsInstance(e, vyre.VyError)
        self.assertEqual((e.code, e.num, e.retry), ("INVALID_PROGRAM", 1006, "after_fix"))
        self.assertEqual(e.expr, expr)
        self.assertEqual(e.fix, fix)
        want = "%s, in %s. Fix: %s" % (message, expr, fix) if expr else "%s. Fix: %s" % (
            message, fix)
        self.assertEqual(e.message, want)
        self.assertEqual(str(e), "INVALID_PROGRAM: " + want)

    def test_operands_of_two_types_are_refused(self):
        x, i = self.x, self.i
        self.refused(lambda: x[i] * i, "mul takes two operands of one type; here f32 and u32",
                     'convert one of them, e.g. vyre.cast("f32", i)', "x[i] * i")

    def test_python_int_beside_an_f32_is_refused(self):
        x, i = self.x, self.i
        self.refused(lambda: x[i] + 1, "the Python int 1 where an f32 is expected",
                     "write 1.0 (or vyre.f32(1))", "x[i] + 1")

    def test_python_float_beside_a_u32_is_refused(self):
        i = self.i
        self.refused(lambda: i < 2.5, "the Python float 2.5 where a u32 is expected",
                     'write a u32 value, or convert with vyre.cast("u32", ...)', "i < 2.5")

    def test_true_division_of_integers_is_refused(self):
        i = self.i
        self.refused(lambda: i / 2, "/ takes f32 operands; here u32",
                     "use // for u32 and i32 division (the IR's div, which truncates toward "
                     "zero)", "i / 2")

    def test_power_of_integers_is_refused(self):
        i = self.i
        self.refused(lambda: i ** 2, "** takes f32 operands; here u32",
                     "pow is an f32 operation: convert with vyre.cast(\"f32\", ...), or "
                     "multiply", "i ** 2")

    def test_unary_operator_on_a_type_it_does_not_take_is_refused(self):
        i = self.i
        self.refused(lambda: vyre.exp(i + 1), "exp takes f32; here u32",
                     'convert the operand with vyre.cast("f32", i + 1)', "vyre.exp(i + 1)")
        self.refused(lambda: vyre.abs(i), "abs takes i32 or f32; here u32",
                     'convert the operand with vyre.cast("i32", i)', "vyre.abs(i)")
        # neg takes a u32 too (it wraps: docs/ir.md 8.7), and bitcast no bool.
        self.assertEqual((-i).ir, ["neg", ["var", "i"]])
        self.refused(lambda: vyre.bitcast("f32", i < 3), "bitcast takes a u32, i32 or f32; "
                     "here bool", 'cast a bool first: vyre.cast("u32", i < 3)',
                     'vyre.bitcast(\'f32\', i < 3)')

    def test_literal_out_of_range_is_refused(self):
        i = self.i
        self.refused(lambda: i - (-1), "-1 is not a u32 (0 to 4294967295)",
                     "give a value from 0 to 4294967295, or use i32", "i - -1")

    def test_python_truth_value_is_refused(self):
        i = self.i
        self.refused(lambda: bool(i < 3),
                     "an expression has no truth value in Python; Python's if, and, or, not and "
                     "chained comparisons cannot look inside it",
                     "branch with `with k.if_(cond):`, choose with vyre.select(cond, a, b), "
                     "combine with & | ~ (bool) or vyre.logical_and", "i < 3")

    def test_store_of_the_wrong_type_is_refused(self):
        y, n, i = self.y, self.n, self.i

        def store():
            y[i] = n[i]

        self.refused(store, "y holds f32, the value is u32",
                     'convert it: vyre.cast("f32", n[i])', "y[i] = n[i]")

    def test_store_into_read_only_and_load_from_write_only_are_refused(self):
        x, y, i = self.x, self.y, self.i

        def store():
            x[i] = 1.0

        self.refused(store, "a store into x, which is read_only",
                     "declare it with k.inout (read_write)", "x[i] = 1.0")
        self.refused(lambda: y[i], "a load from y, which is write_only",
                     'declare it read_write: k.output("y", "f32", 64, access="read_write")',
                     "y[i]")

    def test_index_of_the_wrong_type_is_refused(self):
        x, i = self.x, self.i
        self.refused(lambda: x[vyre.cast("i32", i)], "the index of x is a u32; here i32",
                     'convert it: vyre.cast("u32", vyre.cast(\'i32\', i))',
                     "x[vyre.cast('i32', i)]")

    def test_atomic_on_an_f32_buffer_is_refused(self):
        x, i = self.x, self.i
        self.refused(lambda: x.atomic_add(i, 1),
                     "atomics work on read_write u32 buffers; x is read_only f32",
                     'declare x read_write of u32 (k.output(..., access="read_write") for a '
                     "zero-filled one)", "x.atomic_add(i, 1)")

    def test_atomic_that_no_node_uses_is_refused(self):
        k = vyre.Kernel("t")
        bins = k.output("bins", "u32", 4, access="read_write")
        bins.atomic_add(0, 1)
        self.refused(k.program, "atomic bins.atomic_add(0, 1) is built but no node uses it, "
                     "so it never happens", "use it in a node, e.g. k.let(None, "
                     "bins.atomic_add(0, 1))", None)
        k = vyre.Kernel("t")
        bins = k.output("bins", "u32", 4, access="read_write")
        k.let(None, bins.atomic_add(1, 1))
        self.assertEqual(k.program()["entry"], [["let", "_t0", ["atomic", "add", "bins",
                                                                 ["u32", 1], ["u32", 1]]]])

    def test_variable_outside_its_block_is_refused(self):
        k, y, i = self.k, self.y, self.i
        with k.if_(i < 10):
            inner = k.let("inner", 2.0)

        def store():
            y[i] = inner

        self.refused(store, "variable inner is used outside the block that declares it",
                     "declare it before the block (k.let outside the with statement)",
                     "y[i] = inner")

    def test_variable_across_a_grid_sync_is_refused(self):
        k, y, i = self.k, self.y, self.i
        k.grid_sync()

        def store():
            y[i] = 1.0

        self.refused(store, "variable i was declared before a grid_sync, and variables do not "
                     "cross one", "declare it again after the grid_sync, and pass values "
                     "between the phases through a buffer", "y[i] = 1.0")

    def test_grid_sync_inside_a_loop_is_refused(self):
        k = self.k
        with k.loop("j", 0, 4):
            self.refused(k.grid_sync, "a grid_sync sits at the top level of the entry (or in a "
                         "region that is the entry's only node), not inside loop",
                         "move it out of the if, loop or block", None)

    def test_shadowing_and_assigning_a_counter_are_refused(self):
        k = self.k
        self.refused(lambda: k.let("i", 1.0), 'k.let(\'i\') declares i, which is already '
                     "visible here (the IR has no shadowing)", "choose another name", None)
        with k.loop("j", 0, 4) as j:
            self.refused(lambda: k.assign(j, 1), "j is a loop counter, which cannot be "
                         "assigned", 'copy it into a variable: k.let("v", j)', "k.assign(j, 1)")

    def test_else_without_if_is_refused(self):
        self.refused(self.k.else_, "k.else_() comes right after a `with k.if_(...)` block, in "
                     "the same block", "move it under its if_", None)

    def test_spec_constant_with_two_defaults_is_refused(self):
        k = self.k
        k.spec("scale", "f32", 2.0)
        self.refused(lambda: k.spec("scale", "f32", 3.0),
                     'spec constant scale was declared as ["f32", 2.0], now as ["f32", 3.0]',
                     "give every use of scale the same type and default",
                     "k.spec('scale', 'f32', 3.0)")


class OperatorTest(unittest.TestCase):
    """Python's operators map to the IR's by the operands' type, and a Python number takes the
    type of the expression beside it."""

    def test_operators_by_type(self):
        k = vyre.Kernel("t")
        u = k.let("u", vyre.u32(1))
        s = k.let("s", vyre.i32(-1))
        f = k.let("f", 1.5)
        b = k.let("b", True)
        cases = [
            (u & 3, ["bit_and", ["var", "u"], ["u32", 3]]),
            (b & (u > 2), ["and", ["var", "b"], ["gt", ["var", "u"], ["u32", 2]]]),
            (b | b, ["or", ["var", "b"], ["var", "b"]]),
            (~b, ["not", ["var", "b"]]),
            (~s, ["bit_not", ["var", "s"]]),
            (s // -2, ["div", ["var", "s"], ["i32", -2]]),
            (f / 4.0, ["div", ["var", "f"], ["f32", 4.0]]),
            (f % -2.0, ["mod", ["var", "f"], ["f32", -2.0]]),
            (f ** 2.0, ["pow", ["var", "f"], ["f32", 2.0]]),
            (10.0 ** f, ["pow", ["f32", 10.0], ["var", "f"]]),
            (2.0 * f, ["mul", ["f32", 2.0], ["var", "f"]]),
            (1 - u, ["sub", ["u32", 1], ["var", "u"]]),
            (s << u, ["shl", ["var", "s"], ["var", "u"]]),
            (s >> 1, ["shr", ["var", "s"], ["u32", 1]]),
            (f != float("nan"), ["ne", ["var", "f"], ["f32", "nan"]]),
            (abs(s), ["abs", ["var", "s"]]),
            (-f, ["neg", ["var", "f"]]),
        ]
        for expr, ir in cases:
            with self.subTest(expr=expr.text):
                self.assertEqual(expr.ir, ir)
        self.assertEqual([e.type for e, _ in cases[:6]],
                         ["u32", "bool", "bool", "bool", "i32", "i32"])

    def test_in_place_operators_assign_the_variable(self):
        k = vyre.Kernel("t")
        acc = k.let("acc", vyre.u32(0))
        acc += 5
        acc <<= 1
        g = k.let("g", 2.0)
        g **= 0.5
        self.assertEqual(k.program()["entry"][1:], [
            ["assign", "acc", ["add", ["var", "acc"], ["u32", 5]]],
            ["assign", "acc", ["shl", ["var", "acc"], ["u32", 1]]],
            ["let", "g", ["f32", 2.0]],
            ["assign", "g", ["pow", ["var", "g"], ["f32", 0.5]]],
        ])


if __name__ == "__main__":
    runner = unittest.TextTestRunner(verbosity=2)
    result = unittest.main(testRunner=runner, exit=False).result
    ok = result.wasSuccessful()
    print("kernel builder tests: %d run, %d failed, %d errors -> %s"
          % (result.testsRun, len(result.failures), len(result.errors), "OK" if ok else "FAIL"))
    sys.exit(0 if ok else 1)
