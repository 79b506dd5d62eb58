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
  math             y = f(x) for sin, cos, exp, log, tanh, sqrt, exp2 and log2, y = a / b,
                   y = a + b and y = pow(a, b)
                   on float32 CUDA tensors of --math-elements elements, each written into an
                   existing y (out=y), inputs drawn as vybench's math group draws them; timed
                   with CUDA events, median of --runs runs after 0.3 s of warm-up runs; the
                   anchors of vybench's math rows. 8 bytes per element, 12 for div, add and pow.

--parts names the parts to measure (default: all; elementwise_all only with two devices or more).

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
# Seconds of warm-up runs before a bandwidth figure's timed runs, as vybench's VY_BENCH_WARM_NS.
WARM_S = 0.3
PARTS = ("elementwise", "tiny_sync", "tiny_roundtrip", "elementwise_all", "math")


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


# The operands of vybench's math group (bench/fig_math.c): ("uniform", from, to) is
# from + (to - from) * u for u uniform in [0, 1); ("binades", lo, hi) is 2^e * (1 + m), e an
# integer from lo to hi and m a uniform 23-bit fraction, so that every binade comes equally often.
MATH = (
    ("sin", "torch.sin(x, out=y)", (("uniform", -100, 100),)),
    ("cos", "torch.cos(x, out=y)", (("uniform", -100, 100),)),
    ("exp", "torch.exp(x, out=y)", (("uniform", -80, 80),)),
    ("log", "torch.log(x, out=y)", (("binades", -100, 99),)),
    ("tanh", "torch.tanh(x, out=y)", (("uniform", -10, 10),)),
    ("sqrt", "torch.sqrt(x, out=y)", (("binades", -100, 99),)),
    ("div", "torch.div(a, b, out=y)", (("uniform", -100, 100), ("uniform", 1, 100))),
    ("add", "torch.add(a, b, out=y)", (("uniform", -100, 100), ("uniform", -100, 100))),
    ("pow", "torch.pow(a, b, out=y)", (("uniform", 10, 0), ("uniform", -8, 8))),
    ("exp2", "torch.exp2(x, out=y)", (("uniform", -120, 120),)),
    ("log2", "torch.log2(x, out=y)", (("binades", -100, 99),)),
)
# Allowed distance from the float64 result, in units of the f32 spacing at that result: CUDA's
# float functions are within 4 ULP (sqrt and division exact), so a wrong operation or operand
# fails by far more.
MATH_ULP = 8


def math_operand(torch, n, spec):
    kind, lo, hi = spec
    if kind == "uniform":
        return lo + (hi - lo) * torch.rand(n, dtype=torch.float32, device="cuda")
    e = torch.randint(lo + 127, hi + 128, (n,), dtype=torch.int32, device="cuda")
    m = torch.randint(0, 1 << 23, (n,), dtype=torch.int32, device="cuda")
    return ((e << 23) | m).view(torch.float32)


def math_call(torch, op, args, y):
    fn = {"sin": torch.sin, "cos": torch.cos, "exp": torch.exp, "log": torch.log,
          "tanh": torch.tanh, "sqrt": torch.sqrt, "div": torch.div, "add": torch.add,
          "pow": torch.pow,
          "exp2": torch.exp2, "log2": torch.log2}[op]
    return fn(*args, out=y)


def math_check(torch, op, args, y):
    """y against the same operation in float64, a slice at a time; None when every element is
    within MATH_ULP of it."""
    n = y.numel()
    step = 1 << 24
    for at in range(0, n, step):
        # The float64 result rounded to float32 first, so that a result beyond FLT_MAX wants inf.
        want = math_call(torch, op, [a[at:at + step].double() for a in args], None)
        want = want.float().double()
        got = y[at:at + step].double()
        spacing = torch.clamp(want.abs() * 2.0 ** -23, min=2.0 ** -126)
        bad = ~(((got - want).abs() <= MATH_ULP * spacing) | (got == want))
        if bool(bad.any().item()):
            i = int(bad.nonzero()[0].item())
            operands = ", ".join(f"{float(a[at + i].item())!r}" for a in args)
            return (f"math: {op}({operands}) gave {float(got[i].item())!r}, "
                    f"float64 gives {float(want[i].item())!r}")
    return None


def math_part(torch, n, runs):
    out = {"elements": n, "runs": runs, "warm_s": WARM_S, "ops": {}}
    for op, call, specs in MATH:
        args = [math_operand(torch, n, spec) for spec in specs]
        y = torch.empty(n, dtype=torch.float32, device="cuda")
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(runs)]
        warm_from = time.perf_counter()
        warm = 0
        while warm == 0 or time.perf_counter() - warm_from < WARM_S:
            math_call(torch, op, args, y)
            torch.cuda.synchronize()
            warm += 1
        for start, end in events:
            start.record()
            math_call(torch, op, args, y)
            end.record()
            end.synchronize()
        problem = math_check(torch, op, args, y)
        if problem:
            return None, problem
        median_ms = sorted(a.elapsed_time(b) for a, b in events)[runs // 2]
        per = 4.0 * (len(args) + 1)
        out["ops"][op] = {
            "call": call,
            "bytes_per_element": per,
            "warm_runs": warm,
            "median_ms": median_ms,
            "gbps": per * n / (median_ms * 1e6),
            "elements_per_s": n / (median_ms * 1e-3),
        }
        del args, y
    return out, None


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
    ap.add_argument("--math-elements", type=int, default=64 << 20)
    ap.add_argument("--parts", default=",".join(PARTS))
    a = ap.parse_args()
    parts = a.parts.split(",")
    unknown = [p for p in parts if p not in PARTS]
    if unknown or a.runs < 1:
        ap.error(f"unknown parts {unknown} (known: {', '.join(PARTS)})" if unknown
                 else "--runs must be at least 1")
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
    measures = {
        "elementwise": lambda: elementwise(torch, a.elements, a.runs),
        "tiny_sync": lambda: tiny_sync(torch, a.iterations),
        "tiny_roundtrip": lambda: tiny_roundtrip(torch, a.iterations),
        "elementwise_all": lambda: elementwise_all(torch, a.elements, a.runs),
        "math": lambda: math_part(torch, a.math_elements, a.runs),
    }
    for name in PARTS:
        if name not in parts or (name == "elementwise_all" and torch.cuda.device_count() < 2):
            continue
        result, problem = measures[name]()
        if problem:
            emit({"status": "wrong", "reason": problem})
        out[name] = result
    emit(out)


if __name__ == "__main__":
    main()
