"""An inclusive prefix sum of u32 values, in two phases separated by a grid_sync.

    python3 -m vyre.examples.prefix_sum [SOCKET]

Phase 1: each workgroup scans its 256 elements in workgroup memory (log2(256) steps, each
between barriers) and writes its total to block_sums. grid_sync: every workgroup has finished.
Phase 2: each invocation adds the totals of the blocks before its own. Sums wrap modulo 2^32, as
numpy.cumsum does in uint32. Exits 1 on a difference.
"""
import sys

import numpy as np

import vyre

WG = 256
STEPS = 8  # log2(WG)


def build(n):
    """The scan of exactly n elements."""
    blocks = -(-n // WG)
    k = vyre.Kernel("prefix_sum", workgroup_size=WG)
    data = k.input("data", "u32", n)
    out = k.output("out", "u32", n, access="read_write")
    sums = k.output("block_sums", "u32", blocks, access="read_write")
    tile = k.workgroup("tile", "u32", WG)
    with k.block():
        l = k.let("l", k.lid(0))
        g = k.let("g", k.gid(0))
        tile[l] = data[g]
        k.barrier()
        with k.loop("step", 0, STEPS) as step:
            d = k.let("d", vyre.u32(1) << step)
            v = k.let("v", tile[l])
            with k.if_(l >= d):
                v += tile[l - d]
            k.barrier()
            tile[l] = v
            k.barrier()
        out[g] = tile[l]
        with k.if_(l == WG - 1):
            sums[k.wgid(0)] = tile[l]
    k.grid_sync()
    with k.block():
        g = k.let("g", k.gid(0))
        offset = k.let("offset", vyre.u32(0))
        with k.loop("j", 0, k.wgid(0)) as j:
            offset += sums[j]
        out[g] = out[g] + offset
    return k


def run(vy, data):
    """The inclusive prefix sums of data (u32), and the total of each block of 256."""
    result = vy.dispatch(build(len(data)), [data])
    return result.by_name["out"], result.by_name["block_sums"]


def reference(data):
    return np.cumsum(data, dtype=np.uint32)


def main(argv):
    data = np.random.default_rng(11).integers(0, 2**32, 10_000, dtype=np.uint32)
    with vyre.connect(argv[1] if len(argv) > 1 else None, "example_prefix_sum") as vy:
        out, _ = run(vy, data)
    want = reference(data)
    print("out[-4:] =", out[-4:])
    if not np.array_equal(out, want):
        bad = np.flatnonzero(out != want)
        print("MISMATCH at %d of %d elements, first out[%d] = %d, expected %d"
              % (bad.size, data.size, bad[0], out[bad[0]], want[bad[0]]))
        return 1
    print("prefix_sum: %d elements correct" % data.size)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
