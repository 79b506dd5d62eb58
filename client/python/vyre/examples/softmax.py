"""Softmax of each row of a matrix: exp(x - max) / sum, one workgroup per row.

    python3 -m vyre.examples.softmax [SOCKET]

Each of the row's invocations loads one element; the row's maximum and then the sum of the
exponentials are reduced in workgroup memory, halving the active invocations at each step between
barriers. exp is accurate to 1 ULP and the sum's order is a tree's, so the result is compared
with numpy's (in float64) to a relative tolerance of 1e-5. Exits 1 beyond it.
"""
import sys

import numpy as np

import vyre

RTOL = 1e-5


def build(rows, cols):
    """Softmax over rows of `cols` elements (a power of two from 2 to 1024)."""
    steps = cols.bit_length() - 1
    if cols < 2 or cols != 1 << steps:
        raise ValueError("cols is a power of two from 2 to 1024, not %d" % cols)
    k = vyre.Kernel("softmax", workgroup_size=cols)
    x = k.input("x", "f32", rows * cols)
    y = k.output("y", "f32", rows * cols)
    scratch = k.workgroup("scratch", "f32", cols)
    l = k.let("l", k.lid(0))
    g = k.let("g", k.gid(0))
    v = k.let("v", x[g])

    def reduce(combine):
        with k.loop("step", 0, steps) as step:
            stride = k.let("stride", vyre.u32(cols // 2) >> step)
            with k.if_(l < stride):
                scratch[l] = combine(scratch[l], scratch[l + stride])
            k.barrier()

    scratch[l] = v
    k.barrier()
    reduce(vyre.max)
    m = k.let("m", scratch[0])
    k.barrier()
    e = k.let("e", vyre.exp(v - m))
    scratch[l] = e
    k.barrier()
    reduce(lambda a, b: a + b)
    y[g] = e / scratch[0]
    return k


def run(vy, x):
    """Softmax of each row of the 2D float32 array x."""
    rows, cols = x.shape
    return vy.dispatch(build(rows, cols), [x])[0].reshape(rows, cols)


def reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main(argv):
    x = np.random.default_rng(3).normal(0.0, 3.0, (64, 256)).astype(np.float32)
    with vyre.connect(argv[1] if len(argv) > 1 else None, "example_softmax") as vy:
        y = run(vy, x)
    want = reference(x)
    error = float(np.max(np.abs(y - want) / want))
    print("row 0 [0:4] =", y[0, :4], " largest relative error: %.3g" % error)
    if not error <= RTOL:
        print("MISMATCH: relative error %.3g above %g" % (error, RTOL))
        return 1
    print("softmax: %d rows of %d correct within %g" % (x.shape[0], x.shape[1], RTOL))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
