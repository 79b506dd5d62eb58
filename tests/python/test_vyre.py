#!/usr/bin/python3
"""End-to-end tests of the Python client (client/python/vyre.py) against a real vyred.

The daemon comes from $VYRED_BIN; $VYRED_TEST_BACKEND=reference runs it on the reference
backend, anything else on its default (Vulkan where a device opens). Its device must be of the
backend the run expects: $VYRED_TEST_BACKEND when it is reference, else
$VYRED_TEST_EXPECT_BACKEND, else vulkan; a daemon that fell back to the reference fails. It gets a temporary folder
for its socket, cache and log, and a datagram socket playing systemd's NOTIFY_SOCKET so the tests
start once it says READY=1. After the tests it is stopped with SIGTERM and must exit 0 (a
sanitizer report in an instrumented build makes that fail too).
"""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "client", "python"))
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


class Daemon:
    """One vyred in a temporary folder."""

    def __init__(self):
        self.bin = os.environ.get("VYRED_BIN", "vyred")
        self.dir = tempfile.mkdtemp(prefix="vyred-py-")
        self.sock = os.path.join(self.dir, "vyred.sock")
        self.log = os.path.join(self.dir, "vyred.log")
        conf = os.path.join(self.dir, "vyred.conf")
        # Low water marks, so that pipelined large replies really meet the daemon's backpressure.
        with open(conf, "w") as f:
            f.write("[limits]\nwrite_high_water = 256K\nwrite_low_water = 64K\n")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(os.path.join(self.dir, "notify"))
        self.notes = []
        args = [self.bin, "--config", conf, "--socket", self.sock, "--cache-dir",
                os.path.join(self.dir, "cache"), "--log-level", "debug"]
        if os.environ.get("VYRED_TEST_BACKEND") == "reference":
            args += ["--backend", "reference"]
        env = dict(os.environ, NOTIFY_SOCKET=os.path.join(self.dir, "notify"))
        for k in ("LISTEN_FDS", "LISTEN_PID", "VYRED_SOCKET"):
            env.pop(k, None)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=log, env=env)

    def wait_note(self, note, timeout):
        end = time.monotonic() + timeout
        while note not in self.notes:
            left = end - time.monotonic()
            if left <= 0 or self.proc.poll() is not None and not self._drain(0.05):
                return note in self.notes
            self._drain(min(left, 0.5))
        return True

    def _drain(self, timeout):
        self.notify.settimeout(timeout)
        try:
            data = self.notify.recv(4096)
        except socket.timeout:
            return False
        self.notes.extend(data.decode(errors="replace").split("\n"))
        return True

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def dump_log(self):
        with open(self.log, errors="replace") as f:
            sys.stderr.write("---- vyred log (%s) ----\n%s---- end of log ----\n"
                             % (self.log, f.read()[-20000:]))

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.notify.close()
        shutil.rmtree(self.dir, ignore_errors=True)


DAEMON = None


def setUpModule():
    global DAEMON
    DAEMON = Daemon()
    if not DAEMON.wait_note("READY=1", 120):
        DAEMON.dump_log()
        DAEMON.cleanup()
        raise RuntimeError("vyred did not become ready (exit status %r)" % DAEMON.proc.poll())


def tearDownModule():
    status = DAEMON.stop()
    stopping = DAEMON.wait_note("STOPPING=1", 1)
    try:
        if status != 0 or not stopping:
            DAEMON.dump_log()
            raise AssertionError("vyred did not end cleanly on SIGTERM: exit status %r, "
                                 "STOPPING=1 %s" % (status, "seen" if stopping else "missing"))
        print("vyred stopped on SIGTERM with exit status 0", file=sys.stderr)
    finally:
        DAEMON.cleanup()


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
        if os.environ.get("VYRED_TEST_BACKEND") == "reference":
            want = "reference"
        else:
            want = os.environ.get("VYRED_TEST_EXPECT_BACKEND") or "vulkan"
        self.assertEqual([d["backend"] for d in self.vy.devices],
                         [want] * len(self.vy.devices), self.vy.devices)

    def test_saxpy_example_runs_through_vyred_socket(self):
        env = dict(os.environ, VYRED_SOCKET=DAEMON.sock)
        run = subprocess.run([sys.executable, os.path.join(CLIENT_DIR, "example_saxpy.py")],
                             env=env, capture_output=True, text=True, timeout=120)
        sys.stderr.write(run.stdout)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("1000 elements correct", run.stdout)

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
    runner = unittest.TextTestRunner(verbosity=2)
    result = unittest.main(testRunner=runner, exit=False).result
    ok = result.wasSuccessful()
    print("python client tests: %d run, %d failed, %d errors -> %s"
          % (result.testsRun, len(result.failures), len(result.errors), "OK" if ok else "FAIL"))
    sys.exit(0 if ok else 1)
