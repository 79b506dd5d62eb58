"""y = alpha * x + y through vyred: numpy arrays in, a numpy array out.

    python3 -m vyre.examples.saxpy [SOCKET]

Prints the first outputs and the timing, and exits 1 if any output differs from the same sum
computed here. It runs without numpy too, with array.array in and bytes out.
"""
import array
import sys

import vyre

try:
    import numpy as np
except ImportError:
    np = None


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
    """The Result of alpha * x + y for f32 arrays x and y, with one rounding (fma)."""
    return vy.dispatch(build(), [[alpha], x, y], config={"timing": True})


def reference(alpha, x, y):
    """alpha * x + y in float32, as an array.array("f"). The products of two float32 values
    are exact in float64; for the inputs of main() the sums are too, so rounding once to float32
    gives what fma gives."""
    alpha = array.array("f", [alpha])[0]
    return array.array("f", (alpha * float(a) + float(b) for a, b in zip(x, y)))


def main(argv):
    n = 1000
    alpha = 2.5
    if np is not None:
        x = np.arange(n, dtype=np.float32) * 0.5
        y = 1.0 - np.arange(n, dtype=np.float32)
    else:
        x = array.array("f", (0.5 * i for i in range(n)))
        y = array.array("f", (1.0 - i for i in range(n)))
    with vyre.connect(argv[1] if len(argv) > 1 else None, "example_saxpy") as vy:
        print("connected to %s on %s" % (vy.server, vy.devices[0]["name"]))
        result = run(vy, alpha, x, y)
    out = result[0]
    if np is None:
        out = array.array("f", out)
    want = reference(alpha, x, y)
    print("y[0:4] =", list(out[:4]), " cache:", result.cache, " timing:", result.timing)
    bad = [i for i in range(n) if out[i] != want[i]]
    if bad:
        print("MISMATCH at %d of %d elements, first y[%d] = %r, expected %r"
              % (len(bad), n, bad[0], out[bad[0]], want[bad[0]]))
        return 1
    print("saxpy: %d elements correct" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
