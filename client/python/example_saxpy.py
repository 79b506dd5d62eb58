#!/usr/bin/python3
"""y = alpha * x + y on the GPU through vyred.

    example_saxpy.py [SOCKET]    (default: $VYRED_SOCKET, else /run/vyred/vyred.sock)

Prints the first outputs and the timing, and exits 1 if any output differs from the same sum
computed here in binary32.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vyre  # noqa: E402

SAXPY = {
    "vyre": 1, "name": "saxpy", "workgroup_size": [256, 1, 1],
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


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def main():
    n = 1000
    alpha = 2.5
    x = [i * 0.5 for i in range(n)]
    y = [1.0 - i for i in range(n)]
    with vyre.connect(sys.argv[1] if len(sys.argv) > 1 else None, "example_saxpy") as vy:
        print("connected to %s on %s" % (vy.server, vy.devices[0]["name"]))
        reply = vy.dispatch(SAXPY, [vyre.pack_f32([alpha]), vyre.pack_f32(x), vyre.pack_f32(y)],
                            config={"timing": True})
    out = vyre.unpack_f32(reply["outputs"][0])
    # fma rounds once; these products and sums are exact in binary64, so one rounding to
    # binary32 gives the same value.
    want = [f32(alpha * xi + yi) for xi, yi in zip(x, y)]
    print("y[0:4] =", out[:4], " cache:", reply["cache"], " timing:", reply["timing"])
    bad = [i for i in range(n) if out[i] != want[i]]
    if bad:
        print("MISMATCH at %d of %d elements, first y[%d] = %r, expected %r"
              % (len(bad), n, bad[0], out[bad[0]], want[bad[0]]))
        return 1
    print("saxpy: %d elements correct" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
