"""A histogram of u32 values into 256 bins, counted with atomics.

    python3 -m vyre.examples.histogram [SOCKET]

Each invocation adds 1 to the bin of its value (value mod 256) with an atomic add, in a read_write
output that the daemon zero-fills. Exits 1 if the counts differ from numpy.bincount's.
"""
import sys

import numpy as np

import vyre

BINS = 256


def build():
    k = vyre.Kernel("histogram", workgroup_size=128)
    data = k.input("data", "u32")
    bins = k.output("bins", "u32", BINS, access="read_write")
    i = k.let("i", k.gid(0))
    # Invocations past the end of data would load 0 and count it: they return first.
    with k.if_(i >= data.len()):
        k.return_()
    bucket = k.let("bucket", data[i] % BINS)
    k.let("prev", bins.atomic_add(bucket, 1))
    return k


def run(vy, data):
    """The counts of data % 256, as 256 u32."""
    return vy.dispatch(build(), [data])[0]


def reference(data):
    return np.bincount(data % BINS, minlength=BINS).astype(np.uint32)


def main(argv):
    data = np.random.default_rng(7).integers(0, 2**32, 100_000, dtype=np.uint32)
    with vyre.connect(argv[1] if len(argv) > 1 else None, "example_histogram") as vy:
        counts = run(vy, data)
    want = reference(data)
    print("bins[0:8] =", counts[:8], " total:", int(counts.sum()))
    if not np.array_equal(counts, want):
        bad = np.flatnonzero(counts != want)
        print("MISMATCH in %d bins, first bin %d: %d, expected %d"
              % (bad.size, bad[0], counts[bad[0]], want[bad[0]]))
        return 1
    print("histogram: %d values in %d bins correct" % (data.size, BINS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
