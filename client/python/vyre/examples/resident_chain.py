"""Dispatches chained on resident buffers: the data crosses the socket once each way.

    python3 -m vyre.examples.resident_chain [SOCKET]

x is uploaded once into a resident buffer; then, three times, one dispatch squares it into the
resident buffer w, and another updates the resident y in place with y = 2 * w + y (outputs_to
names the buffers that receive the outputs, so the replies carry nothing). Finally y is
downloaded into a numpy array and compared with the same steps done by numpy in float32.
"""
import sys

import numpy as np

import vyre


def build_square(n):
    k = vyre.Kernel("square", workgroup_size=64)
    v = k.input("v", "f32", n)
    w = k.output("w", "f32", n)
    i = k.let("i", k.gid(0))
    a = k.let("a", v[i])
    w[i] = a * a
    return k


def build_axpy():
    k = vyre.Kernel("axpy", workgroup_size=64)
    alpha = k.uniform("alpha", "f32", 1)
    x = k.input("x", "f32")
    y = k.inout("y", "f32")
    i = k.let("i", k.gid(0))
    with k.if_(i >= y.len()):
        k.return_()
    y[i] = vyre.fma(alpha[0], x[i], y[i])
    return k


def run(vy, x, y, rounds=3):
    """y after `rounds` times w = x * x, y = 2 * w + y, on the device."""
    n = len(x)
    square, axpy = build_square(n), build_axpy()
    hx = vy.alloc_from(x)
    hw = vy.alloc(4 * n)
    hy = vy.alloc_from(y)
    try:
        for _ in range(rounds):
            vy.dispatch(square, [vyre.resident(hx)], outputs_to=[hw])
            vy.dispatch(axpy, [np.float32([2.0]), vyre.resident(hw), vyre.resident(hy)],
                        outputs_to=[hy])
        return vy.download(hy, out=np.empty(n, np.float32))
    finally:
        for h in (hx, hw, hy):
            vy.free(h)


def reference(x, y, rounds=3):
    # 2 * w is exact, so the one rounding of fma is that of the float32 addition.
    y = y.copy()
    for _ in range(rounds):
        y = np.float32(2.0) * (x * x) + y
    return y


def main(argv):
    rng = np.random.default_rng(5)
    x = rng.normal(0.0, 1.0, 4096).astype(np.float32)
    y = rng.normal(0.0, 1.0, 4096).astype(np.float32)
    with vyre.connect(argv[1] if len(argv) > 1 else None, "example_resident_chain") as vy:
        out = run(vy, x, y)
    want = reference(x, y)
    print("y[0:4] =", out[:4])
    if not np.array_equal(out, want):
        bad = np.flatnonzero(out != want)
        print("MISMATCH at %d of %d elements, first y[%d] = %r, expected %r"
              % (bad.size, x.size, bad[0], out[bad[0]], want[bad[0]]))
        return 1
    print("resident_chain: %d elements correct after 3 rounds" % x.size)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
