#!/usr/bin/python3
"""End-to-end tests of the Python client (the vyre package of client/python) against a real vyred:
the protocol as the client speaks it, with bytes in and out (test_arrays.py has numpy, shm views
and the examples). vyred_daemon.py says how the daemon is run; its devices must be of the
backend the run expects: $VYRED_TEST_BACKEND when it is reference, else
$VYRED_TEST_EXPECT_BACKEND, else vulkan; a daemon that fell back to the reference fails.
"""
import json
import os
import struct
import sys
import unittest

import vyred_daemon
from vyred_daemon import CLIENT_DIR

sys.path.insert(0, CLIENT_DIR)
import vyre  # noqa: E402

SAXPY = {
    "vyre": 1, "name": "py_saxpy", "workgroup_size": [64, 1, 1],
    "buffers": [
        {"name": "params", "binding": 0, "access": "uniform", "type": "f32", "count": 1},
        {"name": "x", "binding": 1, "access": "read_only", "type": "f32", "count": 0},
        {"name": "y", "binding": 2, "access": "read_write", "type": "f32", "count": 0},
    ],
    "entry": [
        ["let", "i", ["gid", 0]],
        ["if", ["ge", ["var", "i"], ["len", "y"]], [["return"]], []],
        ["let", "alpha", ["load", "params", ["u32", 0]]],
        ["store", "y", ["var", "i"],
         ["fma", ["var", "alpha"], ["load", "x", ["var", "i"]], ["load", "y", ["var", "i"]]]],
    ],
}

N = 1000

SQUARE = {
    "vyre": 1, "name": "py_square", "workgroup_size": [64, 1, 1],
    "buffers": [
        {"name": "v", "binding": 0, "access": "read_only", "type": "f32", "count": N},
        {"name": "w", "binding": 1, "access": "write_only", "type": "f32", "count": N},
    ],
    "entry": [
        ["let", "i", ["gid", 0]],
        ["if", ["ge", ["var", "i"], ["u32", N]], [["return"]], []],
        ["let", "a", ["load", "v", ["var", "i"]]],
        ["store", "w", ["var", "i"], ["mul", ["var", "a"], ["var", "a"]]],
    ],
}

# Two validation errors: a store into a read_only buffer and a store into an undeclared one.
INVALID = {
    "vyre": 1, "name": "py_invalid", "workgroup_size": [64, 1, 1],
    "buffers": [{"name": "x", "binding": 0, "access": "read_only", "type": "f32", "count": 0}],
    "entry": [
        ["store", "x", ["u32", 0], ["f32", 1.0]],
        ["store", "missing", ["u32", 0], ["f32", 1.0]],
    ],
}


def f32(v):
    """v rounded to binary32 (every sum and product here is exact in binary64 first)."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def saxpy_expected(alpha, x, y):
    return [f32(alpha * a + b) for a, b in zip(x, y)]


DAEMON = None


def setUpModule():
    global DAEMON
    DAEMON = vyred_daemon.start()


def tearDownModule():
    vyred_daemon.stop(DAEMON)


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.vy = vyre.connect(DAEMON.sock, "test_vyre", timeout=120)

    def tearDown(self):
        self.vy.close()

    def test_hello_reports_server_devices_and_limits(self):
        self.assertTrue(self.vy.server.startswith("vyred "), self.vy.server)
        self.assertEqual(self.vy.hello_info["protocol"], 1)
        self.assertGreaterEqual(len(self.vy.devices), 1)
        self.assertGreater(self.vy.limits["max_inflight"], 0)
        self.assertIsNone(self.vy.ping())

    def test_every_device_is_of_the_backend_the_run_expects(self):
        want = vyred_daemon.expected_backend()
        self.assertEqual([d["backend"] for d in self.vy.devices],
                         [want] * len(self.vy.devices), self.vy.devices)

    def test_dispatch_takes_json_text_and_returns_outputs(self):
        x = [float(i) for i in range(N)]
        y = [0.25 * i for i in range(N)]
        # A workgroup size no other test uses: no pipeline of this program exists before, so the
        # first dispatch compiles it (miss) and the second finds it in memory (hit).
        program = dict(SAXPY, name="py_saxpy_json", workgroup_size=[48, 1, 1])
        inputs = [vyre.pack_f32([-1.5]), vyre.pack_f32(x), vyre.pack_f32(y)]
        reply = self.vy.dispatch(json.dumps(program), inputs)
        self.assertEqual(vyre.unpack_f32(reply["outputs"][0]), saxpy_expected(-1.5, x, y))
        self.assertEqual(reply["cache"], "miss")
        self.assertIn("wall_ns", reply["timing"])
        again = self.vy.dispatch(json.dumps(program), inputs)
        self.assertEqual(vyre.unpack_f32(again["outputs"][0]), saxpy_expected(-1.5, x, y))
        self.assertEqual(again["cache"], "hit")

    def test_resident_chain_stays_on_the_device(self):
        vy = self.vy
        alpha = 0.75
        x = [i * 0.25 for i in range(N)]
        y = [3.0 - i for i in range(N)]
        hx = vy.alloc(4 * N)
        hy = vy.alloc(4 * N)
        self.assertNotEqual(hx, hy)
        vy.upload(hx, vyre.pack_f32(x))
        vy.upload(hy, vyre.pack_f32(y))
        params = vyre.pack_f32([alpha])

        first = vy.dispatch(SAXPY, [params, vyre.resident(hx), vyre.resident(hy)],
                            outputs_to=[hy])
        self.assertEqual(first["outputs"], [None], "an output sent to a resident buffer is nil")
        y1 = saxpy_expected(alpha, x, y)

        squared = vy.dispatch(SQUARE, [vyre.resident(hy)])
        self.assertEqual(vyre.unpack_f32(squared["outputs"][0]), [f32(v * v) for v in y1])

        vy.dispatch(SAXPY, [params, vyre.resident(hx), vyre.resident(hy)], outputs_to=[hy])
        y2 = saxpy_expected(alpha, x, y1)
        self.assertEqual(vyre.unpack_f32(vy.download(hy)), y2)
        self.assertEqual(vyre.unpack_f32(vy.download(hy, offset=8, length=16)), y2[2:6])
        self.assertEqual(vyre.unpack_f32(vy.download(hx)), x, "a read-only input is unchanged")

        handles = {b["handle"] for b in vy.buffers()}
        self.assertLessEqual({hx, hy}, handles)
        vy.free(hx)
        vy.free(hy)
        with self.assertRaises(vyre.VyError) as caught:
            vy.download(hy)
        self.assertEqual(caught.exception.code, "NOT_FOUND")

    def test_alloc_places_a_buffer_on_the_device_it_names(self):
        vy = self.vy
        h = vy.alloc(64, device=0)
        rows = {b["handle"]: b for b in vy.buffers()}
        self.assertEqual(rows[h]["device"], 0)
        vy.free(h)
        missing = len(vy.devices)
        with self.assertRaises(vyre.VyError) as caught:
            vy.alloc(64, device=missing)
        self.assertEqual(caught.exception.code, "BAD_REQUEST")
        self.assertEqual(caught.exception.at, "config.device")
        self.assertIn("device %d does not exist" % missing, caught.exception.message)

    def test_invalid_program_raises_vyerror_with_fix(self):
        with self.assertRaises(vyre.VyError) as caught:
            self.vy.dispatch(INVALID, [vyre.pack_f32([1.0])])
        e = caught.exception
        self.assertEqual(e.code, "INVALID_PROGRAM")
        self.assertEqual(e.num, 1006)
        self.assertEqual(e.retry, "after_fix")
        self.assertTrue(e.fix, "every error carries a Fix")
        self.assertTrue(e.message.endswith("Fix: " + e.fix), e.message)
        self.assertTrue(e.at and e.at.startswith("entry["), e.at)
        self.assertEqual(len(e.errors), 2, [str(x) for x in e.errors])
        self.assertEqual(sorted(x.at for x in e.errors), ["entry[0].store", "entry[1].store"])
        self.assertTrue(all(x.fix for x in e.errors))
        # The connection goes on serving after an error.
        self.assertIsNone(self.vy.ping())

    def test_request_errors_name_the_field(self):
        with self.assertRaises(vyre.VyError) as caught:
            self.vy.dispatch(SAXPY, [vyre.pack_f32([1.0])])
        self.assertEqual(caught.exception.code, "BAD_REQUEST")
        self.assertEqual(caught.exception.at, "inputs")
        with self.assertRaises(vyre.VyError) as caught:
            self.vy.call("ping", bogus=1)
        self.assertEqual(caught.exception.code, "BAD_REQUEST")

    def test_pipelined_requests_are_matched_by_id(self):
        vy = self.vy
        n = 64
        count = 3 * vy.limits["max_inflight"] + 7
        x = [float(i) for i in range(n)]
        y = [1.0] * n
        pending = []
        for k in range(count):
            pending.append((k, vy.dispatch(SAXPY, [vyre.pack_f32([float(k)]), vyre.pack_f32(x),
                                                   vyre.pack_f32(y)], wait=False)))
            if k % 10 == 0:
                pending.append((None, vy.ping(wait=False)))
        ids = [p.id for _, p in pending]
        self.assertEqual(len(set(ids)), len(ids))
        for k, p in reversed(pending):
            got = p.result()
            if k is None:
                self.assertIsNone(got)
            else:
                self.assertEqual(vyre.unpack_f32(got["outputs"][0]),
                                 saxpy_expected(float(k), x, y), "request %d" % k)

    def test_pipelined_large_replies_pass_backpressure(self):
        vy = self.vy
        n = 128 * 1024
        x = vyre.pack_f32([1.0] * n)
        y = vyre.pack_f32([2.0] * n)
        before = vy.stats()["daemon"]["backpressure_pauses"]
        pending = [vy.dispatch(SAXPY, [vyre.pack_f32([float(k)]), x, y], wait=False)
                   for k in range(12)]
        for k, p in enumerate(pending):
            out = p.result()["outputs"][0]
            self.assertEqual(len(out), 4 * n)
            self.assertEqual(set(vyre.unpack_f32(out)), {k + 2.0}, "request %d" % k)
        self.assertGreater(vy.stats()["daemon"]["backpressure_pauses"], before,
                           "the replies outgrew write_high_water")

    def test_shm_region_feeds_a_dispatch(self):
        vy = self.vy
        x = [0.5 * i for i in range(N)]
        y = [2.0 * i - 7.0 for i in range(N)]
        region = vy.shm_attach(8 * N)
        region.write(vyre.pack_f32(x), 0)
        region.write(vyre.pack_f32(y), 4 * N)
        reply = vy.dispatch(SAXPY, [vyre.pack_f32([1.25]), region.input(0, 4 * N),
                                    region.input(4 * N, 4 * N)])
        self.assertEqual(vyre.unpack_f32(reply["outputs"][0]), saxpy_expected(1.25, x, y))
        self.assertEqual(vyre.unpack_f32(bytes(region.buf[4 * N:])), y,
                         "the daemon never writes into a region")
        self.assertGreaterEqual(vy.stats()["resident"]["shm_regions"], 1)
        region.detach()
        with self.assertRaises(vyre.VyError) as caught:
            vy.dispatch(SAXPY, [vyre.pack_f32([1.0]), {"shm": [region.region, 0, 4 * N]},
                                vyre.pack_f32(y)])
        self.assertEqual(caught.exception.code, "NOT_FOUND")

    def test_compile_then_dispatch_by_program_id(self):
        first = self.vy.compile(SQUARE)
        self.assertRegex(first["program_id"], "^[0-9a-f]{32}$")
        again = self.vy.compile(SQUARE)
        self.assertEqual(again["program_id"], first["program_id"])
        self.assertEqual(again["cache"], "hit")
        v = [float(i) - 500.0 for i in range(N)]
        reply = self.vy.dispatch(program_id=first["program_id"], inputs=[vyre.pack_f32(v)])
        self.assertEqual(vyre.unpack_f32(reply["outputs"][0]), [f32(a * a) for a in v])

    def test_stats_and_tables_describe_this_client(self):
        self.vy.dispatch(SQUARE, [vyre.pack_f32([1.0] * N)])
        stats = self.vy.stats()
        self.assertEqual(stats["daemon"]["pid"], DAEMON.proc.pid)
        self.assertGreaterEqual(stats["requests"]["by_op"]["dispatch"], 1)
        self.assertGreaterEqual(stats["clients"]["count"], 1)
        mine = [c for c in self.vy.clients() if c.get("self")]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["name"], "test_vyre")
        self.assertEqual(mine[0]["pid"], os.getpid())
        listed = self.vy.cache_list()
        self.assertGreaterEqual(len(listed["pipelines"]), 1)
        cleared = self.vy.cache_clear()
        self.assertGreaterEqual(cleared["pipelines"], 1)
        self.assertEqual(self.vy.cache_list()["pipelines"], [])

    def test_connect_failure_is_a_connection_error(self):
        with self.assertRaises(vyre.VyConnectionError) as caught:
            vyre.connect(os.path.join(DAEMON.dir, "absent.sock"))
        e = caught.exception
        self.assertIsInstance(e, ConnectionError)
        self.assertEqual((e.code, e.num, e.retry), ("CONNECT_FAILED", 2001, "later"))
        self.assertTrue(e.message.endswith("Fix: " + e.fix), e.message)

    def test_busy_poll_is_set_by_argument_or_environment_and_replies_still_come(self):
        old = os.environ.get("VYRE_BUSY_POLL_US")
        try:
            os.environ["VYRE_BUSY_POLL_US"] = "300"
            with vyre.connect(DAEMON.sock, "test_vyre_busy_env", timeout=120) as c:
                self.assertAlmostEqual(c.busy_poll, 300e-6)
                self.assertIsNone(c.ping())
            os.environ["VYRE_BUSY_POLL_US"] = "many"
            with vyre.connect(DAEMON.sock, "test_vyre_busy_bad", timeout=120) as c:
                self.assertEqual(c.busy_poll, 0)
        finally:
            if old is None:
                os.environ.pop("VYRE_BUSY_POLL_US", None)
            else:
                os.environ["VYRE_BUSY_POLL_US"] = old
        with vyre.connect(DAEMON.sock, "test_vyre_busy", timeout=120,
                          busy_poll_us=10 ** 9) as c:
            self.assertAlmostEqual(c.busy_poll, 0.1, msg="capped at 100 ms")
            x = [1.0, 2.0, 3.0, 4.0]
            y = [10.0, 20.0, 30.0, 40.0]
            reply = c.dispatch(json.dumps(SAXPY),
                               [vyre.pack_f32([2.0]), vyre.pack_f32(x), vyre.pack_f32(y)])
            self.assertEqual(vyre.unpack_f32(reply["outputs"][0]), saxpy_expected(2.0, x, y))

    def test_bad_frame_breaks_only_its_connection(self):
        broken = vyre.connect(DAEMON.sock, "test_vyre_broken", timeout=120)
        # A frame whose payload is not a map: the daemon answers BAD_FRAME and hangs up.
        broken._send(b"\x00\x00\x00\x01\xc0", [], 0)
        with self.assertRaises(vyre.VyError) as caught:
            while True:
                broken.ping()
        self.assertIn(caught.exception.code, ("BAD_FRAME", "DISCONNECTED"))
        self.assertEqual(caught.exception.retry, "reconnect")
        with self.assertRaises(vyre.VyError) as again:
            broken.ping()
        self.assertIs(again.exception, caught.exception, "a broken connection stays broken")
        self.assertIsNone(self.vy.ping(), "another connection goes on")


if __name__ == "__main__":
    vyred_daemon.run_module("python client tests")
