#!/usr/bin/env python3
"""PyTorch's side of vybench: what a user would pick instead of vyred, measured in the same run.

vybench runs this script and merges the one JSON object it prints on stdout:

  elementwise      y.add_(x) on float32 CUDA tensors of --elements elements, timed with CUDA
                   events, median of --runs runs after one warm-up; 12 bytes per element.
  elementwise_all  the same y.add_(x) on every CUDA device at once (each device's runs queued
                   together, then all waited for): each device's median, their sum, and the
                   device count; only with two devices or more. The anchor of vybench's
                   stream_bandwidth_all: how far this machine lets its GPUs stream together.
  tiny_sync        y = x + 1 on 64 int32 elements already on the device, then
                   torch.cuda.synchronize(): the launch-and-wait round trip.
  tiny_roundtrip   the same op with the input copied to the device and the result copied back,
                   which is the work a vyred tiny dispatch does.

Results are checked before their times count. Without PyTorch or without CUDA the object is
{"status": "absent", "reason": ...} and the script exits 0, so the suite goes on without it.
"""
import argparse
import json
import math
import sys
import time

TINY_N = 64
WARMUP = 20


def emit(obj):
    print(json.dumps(obj))
    sys.exit(0)


def percentile(sorted_ns, p):
    """Nearest rank, as vybench computes it."""
    rank = max(1, min(len(sorted_ns), math.ceil(p / 100.0 * len(sorted_ns))))
    return sorted_ns[rank - 1]


def summary(samples_ns):
    s = sorted(samples_ns)
    return {
        "iterations": len(s),
        "p50_us": percentile(s, 50) / 1e3,
        "p99_us": percentile(s, 99) / 1e3,
        "min_us": s[0] / 1e3,
    }


def elementwise(torch, n, runs):
    x = torch.ones(n, dtype=torch.float32, device="cuda")
    y = torch.zeros(n, dtype=torch.float32, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times_ms = []
    for r in range(runs + 1):
        start.record()
        y.add_(x)
        end.record()
        end.synchronize()
        if r > 0:
            times_ms.append(start.elapsed_time(end))
    if not bool(torch.all(y == float(runs + 1)).item()):
        return None, "elementwise: y does not hold the number of runs"
    median_ms = sorted(times_ms)[len(times_ms) // 2]
    return {
        "elements": n,
        "runs": runs,
        "median_ms": median_ms,
        "gbps": 12.0 * n / (median_ms * 1e6),
    }, None


def elementwise_all(torch, n, runs):
    devices = torch.cuda.device_count()
    side = []
    for d in range(devices):
        dev = f"cuda:{d}"
        with torch.cuda.device(d):
            side.append({
                "x": torch.ones(n, dtype=torch.float32, device=dev),
                "y": torch.zeros(n, dtype=torch.float32, device=dev),
                "events": [(torch.cuda.Event(enable_timing=True),
                            torch.cuda.Event(enable_timing=True)) for _ in range(runs + 1)],
            })
    for d in range(devices):
        torch.cuda.synchronize(d)
    # Every device's runs are queued before any is waited for, so that all stream together.
    for r in range(runs + 1):
        for d, s in enumerate(side):
            with torch.cuda.device(d):
                start, end = s["events"][r]
                start.record()
                s["y"].add_(s["x"])
                end.record()
    per = []
    for d, s in enumerate(side):
        torch.cuda.synchronize(d)
        if not bool(torch.all(s["y"] == float(runs + 1)).item()):
            return None, f"elementwise_all: y on device {d} does not hold the number of runs"
        times_ms = sorted(a.elapsed_time(b) for a, b in s["events"][1:])
        per.append(12.0 * n / (times_ms[len(times_ms) // 2] * 1e6))
    return {
        "elements": n,
        "runs": runs,
        "devices": devices,
        "gbps_by_device": per,
        "gbps": sum(per),
    }, None


def tiny_sync(torch, iterations):
    x = torch.arange(TINY_N, dtype=torch.int32, device="cuda")
    samples = []
    y = None
    for it in range(WARMUP + iterations):
        t0 = time.perf_counter_ns()
        y = x + 1
        torch.cuda.synchronize()
        dt = time.perf_counter_ns() - t0
        if it >= WARMUP:
            samples.append(dt)
    if not bool(torch.equal(y.cpu(), torch.arange(1, TINY_N + 1, dtype=torch.int32))):
        return None, "tiny_sync: wrong result"
    return summary(samples), None


def tiny_roundtrip(torch, iterations):
    base = torch.arange(TINY_N, dtype=torch.int32)
    samples = []
    for it in range(WARMUP + iterations):
        x = base + it
        t0 = time.perf_counter_ns()
        y = (x.to("cuda") + 1).cpu()
        dt = time.perf_counter_ns() - t0
        if not bool(torch.equal(y, x + 1)):
            return None, "tiny_roundtrip: wrong result"
        if it >= WARMUP:
            samples.append(dt)
    return summary(samples), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=64 << 20)
    ap.add_argument("--iterations", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    try:
        import torch
    except Exception as e:  # an import of a large package fails in many ways
        emit({"status": "absent", "reason": f"import torch failed: {e}"})
    if not torch.cuda.is_available():
        emit({"status": "absent", "reason": "torch.cuda.is_available() is False"})
    out = {
        "status": "present",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
    }
    parts = (
        ("elementwise", lambda: elementwise(torch, a.elements, a.runs)),
        ("tiny_sync", lambda: tiny_sync(torch, a.iterations)),
        ("tiny_roundtrip", lambda: tiny_roundtrip(torch, a.iterations)),
    )
    if torch.cuda.device_count() >= 2:
        parts += (("elementwise_all", lambda: elementwise_all(torch, a.elements, a.runs)),)
    for name, measure in parts:
        result, problem = measure()
        if problem:
            emit({"status": "wrong", "reason": problem})
        out[name] = result
    emit(out)


if __name__ == "__main__":
    main()
