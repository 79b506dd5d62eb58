#!/usr/bin/python3
"""The vyre package with numpy against a real vyred (vyred_daemon.py says how it runs): arrays of
every type in and out, shm regions as numpy views, resident buffers to and from arrays, kernels
built with vyre.Kernel, and every example of vyre.examples checked against numpy.
"""
import array
import os
import subprocess
import sys
import unittest

import vyred_daemon
from vyred_daemon import CLIENT_DIR

sys.path.insert(0, CLIENT_DIR)
try:
    import numpy as np
except ImportError:
    sys.exit("numpy is missing, so the python arrays suite cannot run. "
             "Fix: apt-get install python3-numpy")
import vyre  # noqa: E402
from vyre.examples import histogram, prefix_sum, resident_chain, saxpy, softmax  # noqa: E402

N = 1000
DAEMON = None


def setUpModule():
    global DAEMON
    DAEMON = vyred_daemon.start()


def tearDownModule():
    vyred_daemon.stop(DAEMON)


def every_type_kernel():
    """Four inputs, one of each type, and four outputs of the same types."""
    k = vyre.Kernel("py_every_type", workgroup_size=64)
    u, s = k.input("u", "u32"), k.input("s", "i32")
    f, b = k.input("f", "f32"), k.input("b", "bool")
    ou, os_ = k.output("ou", "u32", N), k.output("os", "i32", N)
    of, ob = k.output("of", "f32", N), k.output("ob", "bool", N)
    i = k.let("i", k.gid(0))
    ou[i] = u[i] * 3 + 1
    os_[i] = -s[i]
    of[i] = f[i] * 0.5
    ob[i] = ~b[i]
    return k


def inputs_of_every_type():
    rng = np.random.default_rng(1)
    return (rng.integers(0, 2**32, N, dtype=np.uint32),
            rng.integers(-2**31, 2**31, N, dtype=np.int32),
            (np.arange(N, dtype=np.float32) - 500.0) * 0.75,
            rng.integers(0, 2, N).astype(bool))


def double_kernel():
    k = vyre.Kernel("py_double", workgroup_size=64)
    x, y = k.input("x", "f32"), k.output("y", "f32", N)
    i = k.let("i", k.gid(0))
    y[i] = x[i] * 2.0
    return k


class Recorder:
    """Wraps a client's submit to keep the fields of every request it sends."""

    def __init__(self, vy):
        self.sent = []
        self._submit = vy.submit

        def submit(op, **fields):
            self.sent.append((op, fields))
            return self._submit(op, **fields)

        vy.submit = submit


class ArraysTest(unittest.TestCase):
    def setUp(self):
        self.vy = vyre.connect(DAEMON.sock, "test_arrays", timeout=300)

    def tearDown(self):
        self.vy.close()

    def test_every_device_is_of_the_backend_the_run_expects(self):
        want = vyred_daemon.expected_backend()
        self.assertEqual([d["backend"] for d in self.vy.devices], [want] * len(self.vy.devices))

    def test_arrays_of_every_type_in_and_out(self):
        u, s, f, b = inputs_of_every_type()
        result = self.vy.dispatch(every_type_kernel(), [u, s, f, b])
        self.assertEqual(len(result), 4)
        ou, os_, of, ob = result
        self.assertEqual([o.dtype for o in result],
                         [np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.float32),
                          np.dtype(bool)])
        self.assertEqual([o.shape for o in result], [(N,)] * 4)
        np.testing.assert_array_equal(ou, u * np.uint32(3) + np.uint32(1))
        np.testing.assert_array_equal(os_, -s)
        np.testing.assert_array_equal(of, f * np.float32(0.5))
        np.testing.assert_array_equal(ob, ~b)
        self.assertIs(result.by_name["ob"], ob)
        self.assertEqual(len(result["outputs"][3]), 4 * N, "the reply's fields stay bytes")
        ou[0] = 7
        self.assertEqual(ou[0], 7, "outputs are writable arrays")

    def test_kernel_with_inline_ids_and_a_uniform_sized_by_its_input(self):
        k = vyre.Kernel("py_saxpy_inline", workgroup_size=256)
        alpha, x, y = k.uniform("alpha", "f32"), k.input("x", "f32"), k.inout("y", "f32")
        i = k.gid(0)
        with k.if_(i < y.len()):
            y[i] = vyre.fma(alpha[0], x[i], y[i])
        self.assertEqual(k.program()["entry"], [
            ["if", ["lt", ["gid", 0], ["len", "y"]], [
                ["store", "y", ["gid", 0], ["fma", ["load", "alpha", ["u32", 0]],
                                            ["load", "x", ["gid", 0]],
                                            ["load", "y", ["gid", 0]]]]], []]])
        xs = np.arange(N, dtype=np.float32) * 0.5
        ys = np.full(N, 3.0, dtype=np.float32)
        out = self.vy.dispatch(k, [np.float32([2]), xs, ys])[0]
        np.testing.assert_array_equal(out, xs * 2 + 3)

    def test_inputs_are_sent_without_a_copy(self):
        rec = Recorder(self.vy)
        x = np.arange(N, dtype=np.float32)
        self.vy.dispatch(double_kernel(), [x])
        sent = rec.sent[-1][1]["inputs"][0]
        self.assertIsInstance(sent, memoryview)
        self.assertIs(sent.obj, x, "the input travels as a view of the array's memory")

    def test_numbers_lists_and_buffer_objects_are_inputs(self):
        x = list(range(N))
        reply = self.vy.dispatch(double_kernel(), [x])
        np.testing.assert_array_equal(reply[0], np.arange(N, dtype=np.float32) * 2)
        reply = self.vy.dispatch(double_kernel(), [array.array("f", x)])
        np.testing.assert_array_equal(reply[0], np.arange(N, dtype=np.float32) * 2)
        two_d = np.arange(N, dtype=np.float32).reshape(10, 100)
        np.testing.assert_array_equal(self.vy.dispatch(double_kernel(), [two_d])[0],
                                      two_d.ravel() * 2)

    def test_inputs_of_the_wrong_type_are_refused_with_a_fix(self):
        cases = [
            (np.arange(N, dtype=np.float64),
             "input 0 (x, f32) is a ndarray array of dtype float64, holding no vyre type; vyre "
             "buffers hold 4-byte little-endian f32", "convert it with .astype(numpy.float32)"),
            (np.arange(N, dtype=np.int32),
             "input 0 (x, f32) is a ndarray array of dtype int32, holding i32; vyre buffers "
             "hold 4-byte little-endian f32", "convert it with .astype(numpy.float32)"),
            (np.arange(2 * N, dtype=np.float32)[::2], "input 0 (x, f32) is not contiguous in "
             "memory (a ndarray array of dtype float32)", "pass numpy.ascontiguousarray(...) "
             "of it"),
        ]
        for value, message, fix in cases:
            with self.subTest(message=message):
                with self.assertRaises(vyre.VyError) as caught:
                    self.vy.dispatch(double_kernel(), [value])
                e = caught.exception
                self.assertEqual((e.code, e.num, e.retry), ("INVALID_ARGUMENT", 2004,
                                                            "after_fix"))
                self.assertEqual(e.message, "%s. Fix: %s" % (message, fix))
                self.assertEqual(e.fix, fix)
        self.assertIsNone(self.vy.ping(), "nothing was sent")

    def test_program_id_dispatch_types_its_outputs(self):
        k = double_kernel()
        program_id = self.vy.compile(k)["program_id"]
        x = np.linspace(-1, 1, N, dtype=np.float32)
        out = self.vy.dispatch(program_id=program_id, inputs=[x])[0]
        self.assertEqual(out.dtype, np.float32)
        np.testing.assert_array_equal(out, x * 2)
        # Another connection never compiled it: it gets the bytes.
        with vyre.connect(DAEMON.sock, "test_arrays_other", timeout=300) as other:
            raw = other.dispatch(program_id=program_id, inputs=[x])[0]
        self.assertEqual(raw, (x * 2).tobytes())

    def test_pipelined_dispatches_answer_results(self):
        k = double_kernel()
        x = np.arange(N, dtype=np.float32)
        pending = [self.vy.dispatch(k, [x + j], wait=False) for j in range(8)]
        for j, p in enumerate(pending):
            np.testing.assert_array_equal(p.result()[0], (x + j) * 2)

    def test_without_numpy_outputs_are_bytes(self):
        code = ("import sys; sys.modules['numpy'] = None; sys.path.insert(0, %r)\n"
                "import vyre, struct\n"
                "k = vyre.Kernel('py_double', workgroup_size=64)\n"
                "x, y = k.input('x', 'f32'), k.output('y', 'f32', 4)\n"
                "i = k.let('i', k.gid(0))\n"
                "y[i] = x[i] * 2.0\n"
                "with vyre.connect(%r) as vy:\n"
                "    out = vy.dispatch(k, [vyre.pack_f32([1, 2, 3, 4])])[0]\n"
                "print(type(out).__name__, vyre.unpack_f32(out), vyre.have_numpy())\n"
                % (CLIENT_DIR, DAEMON.sock))
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout, "bytes [2.0, 4.0, 6.0, 8.0] False\n")
        # The saxpy example too.
        code = ("import sys, runpy; sys.modules['numpy'] = None; sys.path.insert(0, %r)\n"
                "sys.argv = ['saxpy', %r]\n"
                "runpy.run_module('vyre.examples.saxpy', run_name='__main__')\n"
                % (CLIENT_DIR, DAEMON.sock))
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual(run.stdout.splitlines()[-1], "saxpy: 1000 elements correct")


class ShmTest(unittest.TestCase):
    def setUp(self):
        self.vy = vyre.connect(DAEMON.sock, "test_arrays_shm", timeout=300)

    def tearDown(self):
        self.vy.close()

    def test_region_views_are_dispatch_inputs_in_place(self):
        vy = self.vy
        rec = Recorder(vy)
        region = vy.shm_attach(8 * N)
        x = region.array("f32", 0, N)
        y = region.array("f32", 4 * N)
        self.assertEqual((x.shape, y.shape, x.dtype), ((N,), (N,), np.dtype(np.float32)))
        x[:] = np.arange(N, dtype=np.float32) * 0.5
        y[:] = 1.0 - np.arange(N, dtype=np.float32)
        result = vy.dispatch(saxpy.build(), [np.float32([2.5]), x, y])
        self.assertEqual(rec.sent[-1][1]["inputs"][1:],
                         [{"shm": [region.region, 0, 4 * N]},
                          {"shm": [region.region, 4 * N, 4 * N]}])
        np.testing.assert_array_equal(result[0], saxpy.reference(2.5, x, y))
        # A slice is its own place in the region.
        part = vy.dispatch(double_kernel(), [x[100:200]], config={"grid": [2, 1, 1]})
        self.assertEqual(rec.sent[-1][1]["inputs"], [{"shm": [region.region, 400, 400]}])
        np.testing.assert_array_equal(part[0][:100], x[100:200] * 2)
        # Detached, the region's views stay readable and travel as bytes again.
        region.detach()
        self.assertEqual(float(x[3]), 1.5)
        vy.dispatch(double_kernel(), [x])
        self.assertIsInstance(rec.sent[-1][1]["inputs"][0], memoryview)

    def test_region_views_of_the_wrong_type_are_refused(self):
        with self.vy.shm_attach(4 * N) as region:
            words = region.array("u32")
            with self.assertRaises(vyre.VyError) as caught:
                self.vy.dispatch(double_kernel(), [words])
            self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")
            with self.assertRaises(vyre.VyError) as caught:
                region.array("f32", 2)
            self.assertEqual(caught.exception.fix,
                             "give an offset that is a multiple of 4 inside the region")


class ResidentTest(unittest.TestCase):
    def setUp(self):
        self.vy = vyre.connect(DAEMON.sock, "test_arrays_resident", timeout=300)

    def tearDown(self):
        self.vy.close()

    def test_arrays_upload_and_download_by_type(self):
        vy = self.vy
        u, s, f, b = inputs_of_every_type()
        for typ, data in (("u32", u), ("i32", s), ("f32", f), ("bool", b)):
            with self.subTest(type=typ):
                h = vy.alloc_from(data)
                got = vy.download(h, type=typ)
                self.assertEqual(got.dtype, data.dtype)
                np.testing.assert_array_equal(got, data)
                out = np.empty_like(data)
                self.assertIs(vy.download(h, out=out), out)
                np.testing.assert_array_equal(out, data)
                part = vy.download(h, offset=8, length=16, type=typ)
                np.testing.assert_array_equal(part, data[2:6])
                vy.free(h)

    def test_large_transfers_go_in_parts(self):
        vy = self.vy
        rec = Recorder(vy)
        n = 300_000
        data = np.arange(n, dtype=np.uint32) * np.uint32(2654435761)
        vy.max_frame = (256 << 10) + 4096
        vy.hello_info["limits"]["max_download"] = 200 << 10
        h = vy.alloc(4 * n)
        vy.upload(h, data)
        uploads = [f for op, f in rec.sent if op == "upload"]
        self.assertEqual([(f["offset"], len(f["data"])) for f in uploads],
                         [(0, 262144), (262144, 262144), (524288, 262144), (786432, 262144),
                          (1048576, 151424)])
        out = vy.download(h, out=np.zeros(n, np.uint32))
        # Parts answered BUSY (more reply bytes than write_high_water waiting) go again.
        parts = sorted({(f["offset"], f["length"]) for op, f in rec.sent if op == "download"})
        self.assertEqual(parts, [(0, 204800), (204800, 204800), (409600, 204800),
                                 (614400, 204800), (819200, 204800), (1024000, 176000)])
        np.testing.assert_array_equal(out, data)
        vy.free(h)

    def test_resident_chain_example_matches_numpy(self):
        rng = np.random.default_rng(9)
        x = rng.normal(0.0, 1.0, 2048).astype(np.float32)
        y = rng.normal(0.0, 1.0, 2048).astype(np.float32)
        np.testing.assert_array_equal(resident_chain.run(self.vy, x, y, rounds=2),
                                      resident_chain.reference(x, y, rounds=2))
        self.assertEqual(self.vy.buffers(), [], "the example frees its buffers")


def first_python_block(path, after):
    """The first ```python block of a document after the line `after`."""
    with open(path) as f:
        text = f.read()
    text = text[text.index(after):]
    start = text.index("```python\n") + len("```python\n")
    return text[start:text.index("```", start)]


class GraphTest(unittest.TestCase):
    """graph_create and graph_run with Kernels: numpy in and out, typed by the bound buffers."""

    def setUp(self):
        self.vy = vyre.connect(DAEMON.sock, "test_graphs", timeout=300)

    def tearDown(self):
        self.vy.close()

    def test_a_chain_of_kernels_runs_as_one_request(self):
        k = vyre.Kernel("py_graph_step", workgroup_size=64)
        x, y = k.input("x", "f32", N), k.output("y", "f32", N)
        i = k.let("i", k.gid(0))
        with k.if_(i < y.len()):
            y[i] = x[i] * 2.0 + 1.0
        steps = [{"program": k, "bind": {"x": {"input": 0}, "y": {"temp": "a"}}},
                 {"program": k, "bind": {"x": {"temp": "a"}, "y": {"temp": "b"}}},
                 {"program": k, "bind": {"x": {"temp": "b"}, "y": {"output": 0}}}]
        g = self.vy.graph_create(steps, name="py-chain")
        self.assertEqual((g.steps, g.inputs, g.outputs, g.barriers), (3, 1, 1, 2))
        xs = np.linspace(-4.0, 4.0, N, dtype=np.float32)
        want = ((xs * 2 + 1) * 2 + 1) * 2 + 1
        r = self.vy.graph_run(g, [xs], config={"timing": True})
        self.assertEqual(r[0].dtype, np.float32)
        np.testing.assert_array_equal(r[0], want)
        self.assertEqual(len(r.timing["steps_ns"]), 3)
        self.assertIn(g.graph, [row["graph"] for row in self.vy.graphs()])
        self.vy.graph_free(g)
        with self.assertRaises(vyre.VyError) as e:
            self.vy.graph_run(g, [xs])
        self.assertEqual(e.exception.code, "NOT_FOUND")

    def test_a_step_error_names_its_place(self):
        k = double_kernel()
        with self.assertRaises(vyre.VyError) as e:
            self.vy.graph_create([{"program": k, "bind": {"x": {"input": 0}}}])
        self.assertEqual(e.exception.code, "BAD_REQUEST")
        self.assertEqual(e.exception.at, "steps[0].bind")
        self.assertIn("buffer y of step 0 is not bound", str(e.exception))


class DocsTest(unittest.TestCase):
    """The Python examples of README.md and docs/python.md run and print what they say."""

    def run_block(self, code, cwd):
        env = dict(os.environ, PYTHONPATH=CLIENT_DIR, VYRED_SOCKET=DAEMON.sock)
        run = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd,
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        return run.stdout

    def test_readme_example(self):
        root = vyred_daemon.SOURCE_ROOT
        code = first_python_block(os.path.join(root, "README.md"), "## A 30-second example")
        self.assertIn('vyre.connect("/tmp/vyred.sock")', code)
        code = code.replace('"/tmp/vyred.sock"', repr(DAEMON.sock))
        self.assertEqual(self.run_block(code, root), "[12. 24. 36.]\n")

    def test_python_md_first_example(self):
        root = vyred_daemon.SOURCE_ROOT
        code = first_python_block(os.path.join(root, "docs", "python.md"), "# Python")
        self.assertEqual(self.run_block(code, root), "[1. 3. 5. 7.]\n")


class ExamplesTest(unittest.TestCase):
    def setUp(self):
        self.vy = vyre.connect(DAEMON.sock, "test_examples", timeout=300)

    def tearDown(self):
        self.vy.close()

    def test_saxpy_matches_numpy(self):
        x = np.arange(4096, dtype=np.float32) * 0.25
        y = 3.0 - np.arange(4096, dtype=np.float32)
        np.testing.assert_array_equal(saxpy.run(self.vy, -1.5, x, y)[0],
                                      saxpy.reference(-1.5, x, y))

    def test_histogram_matches_numpy(self):
        data = np.random.default_rng(2).integers(0, 2**32, 5000, dtype=np.uint32)
        data[:300] = 17
        counts = histogram.run(self.vy, data)
        self.assertEqual(counts.dtype, np.uint32)
        np.testing.assert_array_equal(counts, histogram.reference(data))
        self.assertGreaterEqual(counts[17], 300)

    def test_prefix_sum_matches_numpy(self):
        data = np.random.default_rng(4).integers(0, 2**32, 3000, dtype=np.uint32)
        out, block_sums = prefix_sum.run(self.vy, data)
        np.testing.assert_array_equal(out, prefix_sum.reference(data))
        np.testing.assert_array_equal(
            block_sums, [np.sum(data[b:b + 256], dtype=np.uint32) for b in range(0, 3000, 256)])

    def test_functions_of_two_operands_match_numpy(self):
        rng = np.random.default_rng(5)
        x = rng.uniform(0.1, 10.0, 2048).astype(np.float32)
        y = rng.uniform(-5.0, 5.0, 2048).astype(np.float32)
        k = vyre.Kernel("py_two_operands", workgroup_size=64)
        a, b = k.input("a", "f32", 2048), k.input("b", "f32", 2048)
        outs = [k.output(n, "f32", 2048) for n in ("p", "h", "t", "m")]
        i = k.let("i", k.gid(0))
        u, v = k.let("u", a[i]), k.let("v", b[i])
        outs[0][i] = u ** v
        outs[1][i] = vyre.hypot(v, u)
        outs[2][i] = vyre.atan2(v, u)
        outs[3][i] = v % u
        p, h, t, m = self.vy.dispatch(k, [x, y])
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        # within 1 ULP of the double result rounded to f32 (docs/semantics.md section 6.2)
        for got, want in ((p, np.power(x64, y64)), (h, np.hypot(y64, x64)),
                          (t, np.arctan2(y64, x64))):
            want32 = want.astype(np.float32)
            ulps = np.abs(got.view(np.int32).astype(np.int64) - want32.view(np.int32))
            self.assertLessEqual(int(ulps.max()), 1)
        # mod is exact: C's fmodf
        np.testing.assert_array_equal(m, np.fmod(y, x))

    def test_softmax_matches_numpy(self):
        x = np.random.default_rng(3).normal(0.0, 3.0, (64, 256)).astype(np.float32)
        y = softmax.run(self.vy, x)
        self.assertEqual((y.shape, y.dtype), ((64, 256), np.dtype(np.float32)))
        np.testing.assert_allclose(y, softmax.reference(x), rtol=softmax.RTOL, atol=0)
        np.testing.assert_allclose(y.sum(axis=1, dtype=np.float64), np.ones(64), rtol=1e-5)

    def test_examples_run_as_modules(self):
        env = dict(os.environ, PYTHONPATH=CLIENT_DIR, VYRED_SOCKET=DAEMON.sock)
        for name, line in (("saxpy", "saxpy: 1000 elements correct"),
                           ("softmax", "softmax: 64 rows of 256 correct within 1e-05")):
            with self.subTest(example=name):
                run = subprocess.run([sys.executable, "-m", "vyre.examples." + name], env=env,
                                     capture_output=True, text=True, timeout=300)
                sys.stderr.write(run.stdout)
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                self.assertEqual(run.stdout.splitlines()[-1], line)


if __name__ == "__main__":
    vyred_daemon.run_module("python arrays tests")
