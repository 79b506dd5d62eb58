#!/usr/bin/python3
"""The vyre package installs the ways docs/python.md says, without network access.

In a new venv that sees the system's packages (Debian's python3-msgpack, python3-numpy and
python3-pip), `pip install --no-index client/python` builds it with its own backend
(build_backend/vyre_build.py, standard library only) and installs it; `python -m
vyre.examples.saxpy` from that venv then prints the right result from a running vyred
(vyred_daemon.py). The editable wheel and the sdist of the same backend are checked too.
"""
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

import vyred_daemon
from vyred_daemon import CLIENT_DIR

DAEMON = None


def setUpModule():
    global DAEMON
    DAEMON = vyred_daemon.start()


def tearDownModule():
    vyred_daemon.stop(DAEMON)


def run(args, **kw):
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore",
               PIP_NO_CACHE_DIR="1", VYRED_SOCKET=DAEMON.sock)
    env.pop("PYTHONPATH", None)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, **kw)


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="vyre-venv-")
        cls.venv = os.path.join(cls.dir, "venv")
        # Without a pip of its own, the venv runs the system's (python3-pip), which it sees
        # with the other system packages: the same pip, and seconds less to make.
        made = run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    cls.venv])
        if made.returncode != 0:
            raise RuntimeError("python3 -m venv failed: %s. Fix: apt-get install python3-venv"
                               % made.stderr)
        cls.python = os.path.join(cls.venv, "bin", "python")
        cls.pip = [cls.python, "-m", "pip"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def where(self):
        found = run([self.python, "-c", "import vyre; print(vyre.__file__)"], cwd=self.dir)
        self.assertEqual(found.returncode, 0, found.stderr)
        return found.stdout.strip()

    def test_pip_installs_offline_and_the_example_runs(self):
        installed = run(self.pip + ["install", "--no-index", CLIENT_DIR], cwd=self.dir)
        self.assertEqual(installed.returncode, 0, installed.stdout + installed.stderr)
        site = os.path.join(self.venv, "lib")
        self.assertTrue(self.where().startswith(site), self.where())
        example = run([self.python, "-m", "vyre.examples.saxpy"], cwd=self.dir)
        sys.stderr.write(example.stdout)
        self.assertEqual(example.returncode, 0, example.stdout + example.stderr)
        self.assertEqual(example.stdout.splitlines()[-1], "saxpy: 1000 elements correct")
        shown = run(self.pip + ["show", "vyre"], cwd=self.dir)
        self.assertIn("Requires: msgpack", shown.stdout)

    def backend(self):
        sys.path.insert(0, os.path.join(CLIENT_DIR, "build_backend"))
        try:
            import vyre_build
        finally:
            sys.path.pop(0)
        return vyre_build

    def test_editable_wheel_puts_the_source_folder_on_the_path(self):
        name = self.backend().build_editable(self.dir)
        self.assertEqual(name, "vyre-0.1.0-py3-none-any.whl")
        with zipfile.ZipFile(os.path.join(self.dir, name)) as z:
            self.assertEqual(sorted(z.namelist()), [
                "vyre-0.1.0.dist-info/METADATA", "vyre-0.1.0.dist-info/RECORD",
                "vyre-0.1.0.dist-info/WHEEL", "vyre-0.1.0.dist-info/top_level.txt",
                "vyre_editable.pth"])
            self.assertEqual(z.read("vyre_editable.pth").decode(), CLIENT_DIR + "\n")
            self.assertIn("Requires-Dist: msgpack\n",
                          z.read("vyre-0.1.0.dist-info/METADATA").decode())

    def test_sdist_holds_the_package_and_its_backend(self):
        vyre_build = self.backend()
        name = vyre_build.build_sdist(self.dir)
        self.assertEqual(name, "vyre-0.1.0.tar.gz")
        with tarfile.open(os.path.join(self.dir, name)) as t:
            names = t.getnames()
        self.assertIn("vyre-0.1.0/PKG-INFO", names)
        self.assertIn("vyre-0.1.0/pyproject.toml", names)
        self.assertIn("vyre-0.1.0/build_backend/vyre_build.py", names)
        self.assertIn("vyre-0.1.0/vyre/examples/saxpy.py", names)
        self.assertEqual(sorted(n for n in names if n.endswith(".py") and "/vyre/" in n),
                         sorted("vyre-0.1.0/" + p for p, _ in vyre_build._package_files()))


if __name__ == "__main__":
    vyred_daemon.run_module("python install tests")
