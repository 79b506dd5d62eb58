"""y = alpha * x + y through vyred: numpy arrays in, a numpy array out.

    python3 -m vyre.examples.saxpy [SOCKET]

Prints the first outputs and the timing, and exits 1 if any output differs from numpy's.
"""
import sys

import numpy as np

import vyre


def build():
    """The program of tests/programs/saxpy.json."""
    k = vyre.Kernel("saxpy", workgroup_size=256)
    params = k.uniform("params", "f32", 1)
    x = k.input("x", "f32")
    y = k.inout("y", "f32")
    i = k.let("i", k.gid(0))
    with k.if_(i >= y.len()):
        k.return_()
    alpha = k.let("alpha", params[0])
    y[i] = vyre.fma(alpha, x[i], y[i])
    return k


def run(vy, alpha, x, y):
    """alpha * x + y for float32 arrays x and y, with one rounding (fma)."""
    return vy.dispatch(build(), [np.float32([alpha]), x, y], config={"timing": True})


def reference(alpha, x, y):
    # The products of two float32 values are exact in float64; for the inputs of main() the
    # sums are too, so rounding once to float32 gives what fma gives.
    return (np.float64(np.float32(alpha)) * x + y).astype(np.float32)


def main(argv):
    n = 1000
    alpha = 2.5
    x = np.arange(n, dtype=np.float32) * 0.5
    y = 1.0 - np.arange(n, dtype=np.float32)
    with vyre.connect(argv[1] if len(argv) > 1 else None, "example_saxpy") as vy:
        print("connected to %s on %s" % (vy.server, vy.devices[0]["name"]))
        result = run(vy, alpha, x, y)
    out = result[0]
    print("y[0:4] =", out[:4], " cache:", result.cache, " timing:", result.timing)
    bad = np.flatnonzero(out != reference(alpha, x, y))
    if bad.size:
        print("MISMATCH at %d of %d elements, first y[%d] = %r, expected %r"
              % (bad.size, n, bad[0], out[bad[0]], reference(alpha, x, y)[bad[0]]))
        return 1
    print("saxpy: %d elements correct" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
