"""The vyred that the Python suites run against: one daemon per test module, in a temporary folder.

The daemon comes from $VYRED_BIN; $VYRED_TEST_BACKEND=reference runs it on the reference
backend, anything else on its default (Vulkan where a device opens). It gets a temporary folder
for its socket, cache and log, and a datagram socket playing systemd's NOTIFY_SOCKET so the tests
start once it says READY=1. After the tests it is stopped with SIGTERM and must exit 0 (a
sanitizer report in an instrumented build makes that fail too). run_module() runs a test module
this way and prints its summary line.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CLIENT_DIR = os.path.join(SOURCE_ROOT, "client", "python")
PROGRAMS_DIR = os.path.join(SOURCE_ROOT, "tests", "programs")


def expected_backend():
    """The backend every device of the daemon must have in this run."""
    if os.environ.get("VYRED_TEST_BACKEND") == "reference":
        return "reference"
    return os.environ.get("VYRED_TEST_EXPECT_BACKEND") or "vulkan"


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


def start():
    """A daemon that has said READY=1."""
    daemon = Daemon()
    if not daemon.wait_note("READY=1", 120):
        daemon.dump_log()
        daemon.cleanup()
        raise RuntimeError("vyred did not become ready (exit status %r)" % daemon.proc.poll())
    return daemon


def stop(daemon):
    """Stop it with SIGTERM; it must exit 0 after STOPPING=1."""
    status = daemon.stop()
    stopping = daemon.wait_note("STOPPING=1", 1)
    try:
        if status != 0 or not stopping:
            daemon.dump_log()
            raise AssertionError("vyred did not end cleanly on SIGTERM: exit status %r, "
                                 "STOPPING=1 %s" % (status, "seen" if stopping else "missing"))
        print("vyred stopped on SIGTERM with exit status 0", file=sys.stderr)
    finally:
        daemon.cleanup()


def run_module(label):
    """unittest.main for the calling module, then one summary line; exits 0 when it passed."""
    runner = unittest.TextTestRunner(verbosity=2)
    result = unittest.main(module="__main__", testRunner=runner, exit=False).result
    ok = result.wasSuccessful()
    print("%s: %d run, %d failed, %d errors -> %s"
          % (label, result.testsRun, len(result.failures), len(result.errors),
             "OK" if ok else "FAIL"))
    sys.exit(0 if ok else 1)
