#!/usr/bin/env python3
"""Mutation testing of vyred: plant one known bug at a time, see whether the suites catch it.

The mutants are hand-written in tests/mutants.ini (docs/testing.md describes the format). For each
selected mutant the script edits a scratch copy of the tree (the tracked files of the checkout, as
they are in the working tree), rebuilds the one build configured there, runs the meson tests that
the mutant names with a time cap, puts the file back, and records one outcome:

  caught     a named test failed
  timeout    the tests ran past --timeout and were killed; counted as caught (the unmutated
             tests finish far under the cap, so the mutant made them hang)
  survived   every named test passed
  equivalent the tests passed, and the mutant says why no test can tell it apart (its
             `equivalent` key): reported, left out of the score
  build broke  the mutant did not compile (a mistake in the mutant, not a catch)
  site gone  the original text is not in the file any more
  ambiguous  the original text occurs more than once in the file

Score: (caught + timeout) / (caught + timeout + survived). Python 3 standard library only.
"""

import argparse
import configparser
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAUGHT = ("caught", "timeout")
KEYS = ("file", "find", "replace", "suites", "filter", "why", "equivalent")


def unescape(text):
    """INI values hold C on one line: \\t is a tab, \\n a newline, \\\\ a backslash."""
    return re.sub(r"\\([tn\\])", lambda m: {"t": "\t", "n": "\n", "\\": "\\"}[m.group(1)], text)


def load_mutants(path):
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",),
                                       comment_prefixes=("#",), empty_lines_in_values=False)
    parser.optionxform = str
    with open(path, encoding="utf-8") as f:
        parser.read_file(f)
    mutants = []
    for mid in parser.sections():
        sec = parser[mid]
        missing = [k for k in ("file", "find", "replace", "suites", "why") if k not in sec]
        if missing:
            sys.exit(f"mutate: {path}: [{mid}] lacks {', '.join(missing)}")
        unknown = [k for k in sec if k not in KEYS]
        if unknown:
            sys.exit(f"mutate: {path}: [{mid}] has unknown keys {', '.join(unknown)}")
        find = unescape(sec["find"])
        replace = unescape(sec["replace"])
        if find == replace:
            sys.exit(f"mutate: {path}: [{mid}] replaces its text with the same text")
        mutants.append({
            "id": mid,
            "file": sec["file"],
            "find": find,
            "replace": replace,
            "suites": sec["suites"].split(),
            "filter": sec.get("filter", "").strip(),
            "why": " ".join(sec["why"].split()),
            "equivalent": " ".join(sec.get("equivalent", "").split()),
        })
    return mutants


def site(tree, mutant):
    """The mutant's status against the tree: None when it applies, else why it does not."""
    path = os.path.join(tree, mutant["file"])
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return "site gone", None
    n = text.count(mutant["find"])
    if n == 0:
        return "site gone", text
    if n > 1:
        return "ambiguous", text
    return None, text


def tracked_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                         capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p]


def sync_tree(src):
    """Copy the checkout's tracked files into src; unchanged files keep their time stamps, so the
    scratch build recompiles only what changed since the last run (or a mutant left behind)."""
    os.makedirs(src, exist_ok=True)
    copied = 0
    for rel in tracked_files():
        a = os.path.join(ROOT, rel)
        b = os.path.join(src, rel)
        if not os.path.isfile(a) or os.path.islink(a):
            continue
        with open(a, "rb") as f:
            data = f.read()
        try:
            with open(b, "rb") as f:
                if f.read() == data:
                    continue
        except FileNotFoundError:
            os.makedirs(os.path.dirname(b), exist_ok=True)
        with open(b, "wb") as f:
            f.write(data)
        shutil.copymode(a, b)
        copied += 1
    return copied


def run_capped(cmd, timeout, log, env=None):
    """Run cmd in its own process group, output appended to log; return its status or None when
    it ran past timeout (the whole group is then killed)."""
    with open(log, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                             env=env)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return None
        except BaseException:
            # Interrupted (Ctrl-C): take the group down too; the caller puts the file back.
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise


def configure(build, src, sanitize, log):
    if os.path.isfile(os.path.join(build, "build.ninja")):
        return
    cmd = ["meson", "setup", build, src, "--buildtype=debug", "-Dwerror=false"]
    if sanitize:
        cmd += ["-Db_sanitize=address,undefined", "-Db_lundef=false"]
    if run_capped(cmd, 600, log) != 0:
        sys.exit(f"mutate: meson setup failed; see {log}")


def introspect(build, what):
    return json.loads(subprocess.run(["meson", "introspect", "--" + what, build], check=True,
                                     capture_output=True, text=True).stdout)


def test_targets(build):
    """Map every test name to the ninja targets it needs (its executable and its depends), so a
    mutant rebuilds only what its tests run."""
    files = {}
    for t in introspect(build, "targets"):
        files[t["id"]] = [os.path.relpath(f, build) for f in t["filename"]]
    return {t["name"]: sorted({f for d in t["depends"] for f in files.get(d, [])})
            for t in introspect(build, "tests")}


def test_names(build):
    """Map every test name and suite name to the test names it selects."""
    names = {}
    for t in introspect(build, "tests"):
        names.setdefault(t["name"], set()).add(t["name"])
        for s in t["suite"]:
            names.setdefault(s, set()).add(t["name"])
            names.setdefault(s.split(":", 1)[-1], set()).add(t["name"])
    return names


def select_tests(names, suites):
    chosen = set()
    for s in suites:
        if s not in names:
            sys.exit(f"mutate: no meson test or suite is called {s!r}")
        chosen |= names[s]
    return sorted(chosen)


def test_env(sanitize):
    env = dict(os.environ)
    if sanitize:
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1:strict_string_checks=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        env.setdefault("LSAN_OPTIONS", f"suppressions={ROOT}/tests/lsan.supp:print_suppressions=0")
    return env


def run_tests(build, tests, args, log, env, case_filter=""):
    cmd = ["meson", "test", "-C", build, "--no-rebuild", "--print-errorlogs",
           "--num-processes", str(args.jobs)] + tests
    if case_filter:
        cmd += [f"--test-args=--filter={case_filter}"]
    return run_capped(cmd, args.timeout, log, env)


def build_tree(build, args, log, targets=()):
    cmd = ["ninja", "-C", build, "-j", str(args.jobs)] + list(targets)
    return run_capped(cmd, args.build_timeout, log)


def print_table(results):
    w = max([len(r["id"]) for r in results] + [2])
    print(f"{'id':<{w}}  {'outcome':<11}  {'secs':>5}  tests")
    for r in results:
        print(f"{r['id']:<{w}}  {r['outcome']:<11}  {r.get('seconds', 0):>5.0f}  "
              f"{' '.join(r.get('tests', []))}")


def summary(results):
    count = {}
    for r in results:
        count[r["outcome"]] = count.get(r["outcome"], 0) + 1
    caught = sum(count.get(k, 0) for k in CAUGHT)
    judged = caught + count.get("survived", 0)
    score = caught / judged if judged else 1.0
    return count, caught, judged, score


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See docs/testing.md.")
    ap.add_argument("--mutants", default=os.path.join(ROOT, "tests", "mutants.ini"),
                    help="the mutant list (default tests/mutants.ini)")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--check", action="store_true",
                    help="only check that each mutant's text occurs once in the checkout")
    ap.add_argument("--only", help="comma-separated mutant ids")
    ap.add_argument("--sample", type=int, help="a random sample of N mutants")
    ap.add_argument("--seed", type=int, help="the sample's seed (default: random, printed)")
    ap.add_argument("--jobs", type=int, default=1, help="ninja -j and meson test processes")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds the tests of one mutant may run (default 300)")
    ap.add_argument("--build-timeout", type=float, default=900,
                    help="seconds one rebuild may take (default 900)")
    ap.add_argument("--sanitize", action="store_true",
                    help="build with ASan+UBSan as CI does (a separate scratch build)")
    ap.add_argument("--scratch", default=os.path.join(ROOT, "build-mutate"),
                    help="the scratch folder (default build-mutate/, kept between runs)")
    ap.add_argument("--skip-baseline", action="store_true",
                    help="do not first run the chosen tests on the unmutated tree")
    ap.add_argument("--report", help="the JSON report (default SCRATCH/report.json)")
    ap.add_argument("--min-score", type=float, default=0.0,
                    help="exit 1 when the score (0..1) is below this")
    args = ap.parse_args()

    mutants = load_mutants(args.mutants)
    ids = [m["id"] for m in mutants]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        sys.exit(f"mutate: duplicate ids {sorted(dup)}")
    if args.only:
        want = args.only.split(",")
        unknown = [i for i in want if i not in ids]
        if unknown:
            sys.exit(f"mutate: no mutant called {', '.join(unknown)}")
        mutants = [m for m in mutants if m["id"] in want]
    if args.sample is not None and args.sample < len(mutants):
        seed = args.seed if args.seed is not None else random.randrange(1 << 32)
        print(f"mutate: sample of {args.sample} with --seed {seed}")
        mutants = random.Random(seed).sample(mutants, args.sample)

    if args.list:
        for m in mutants:
            print(f"{m['id']}  {m['file']}  [{' '.join(m['suites'])}]\n    {m['why']}")
            if m["equivalent"]:
                print(f"    equivalent: {m['equivalent']}")
        print(f"{len(mutants)} mutants")
        return 0

    if args.check:
        bad = 0
        for m in mutants:
            status, _ = site(ROOT, m)
            if status:
                bad += 1
                print(f"{m['id']}: {status} ({m['file']})")
        print(f"mutate: {len(mutants) - bad} of {len(mutants)} mutants apply")
        return 1 if bad else 0

    scratch = os.path.abspath(args.scratch)
    src = os.path.join(scratch, "src")
    build = os.path.join(scratch, "build-asan" if args.sanitize else "build")
    os.makedirs(scratch, exist_ok=True)
    log = os.path.join(scratch, "mutate.log")
    open(log, "w").close()
    env = test_env(args.sanitize)
    started = time.time()

    n = sync_tree(src)
    print(f"mutate: scratch tree {src} ({n} files copied); log {log}")
    configure(build, src, args.sanitize, log)
    t = time.time()
    if build_tree(build, args, log) != 0:
        sys.exit(f"mutate: the unmutated tree does not build; see {log}")
    print(f"mutate: unmutated build {time.time() - t:.0f} s")
    names = test_names(build)
    needs = test_targets(build)
    for m in mutants:
        m["tests"] = select_tests(names, m["suites"])
        m["targets"] = sorted({f for t in m["tests"] for f in needs.get(t, [])})

    if not args.skip_baseline:
        # One run per case filter: the whole of each test where a mutant names no filter.
        groups = {}
        for m in mutants:
            groups.setdefault(m["filter"], set()).update(m["tests"])
        t = time.time()
        for case_filter, tests in sorted(groups.items()):
            wanted = sorted(tests)
            status = run_tests(build, wanted, args, log, env, case_filter)
            if status != 0:
                what = " ".join(wanted) + (f" --filter={case_filter}" if case_filter else "")
                sys.exit(f"mutate: the unmutated tree fails its tests ({what}); see {log}")
        every = sorted({t for m in mutants for t in m["tests"]})
        print(f"mutate: baseline {' '.join(every)} passed in {time.time() - t:.0f} s")

    results = []
    for i, m in enumerate(mutants, 1):
        t = time.time()
        r = {"id": m["id"], "file": m["file"], "tests": m["tests"], "why": m["why"]}
        status, text = site(src, m)
        path = os.path.join(src, m["file"])
        if status:
            r["outcome"] = status
        else:
            with open(log, "a") as out:
                out.write(f"\n==== {m['id']}\n")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(m["find"], m["replace"], 1))
            try:
                if build_tree(build, args, log, m["targets"]) != 0:
                    r["outcome"] = "build broke"
                else:
                    rc = run_tests(build, m["tests"], args, log, env, m["filter"])
                    r["outcome"] = "timeout" if rc is None else "survived" if rc == 0 else "caught"
                    if r["outcome"] == "survived" and m["equivalent"]:
                        r["outcome"] = "equivalent"
                    elif r["outcome"] != "survived" and m["equivalent"]:
                        print(f"mutate: {m['id']} is marked equivalent but was caught; "
                              "drop its equivalent key", flush=True)
            finally:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
        r["seconds"] = time.time() - t
        results.append(r)
        print(f"[{i}/{len(mutants)}] {m['id']}: {r['outcome']} ({r['seconds']:.0f} s)", flush=True)

    print()
    print_table(results)
    count, caught, judged, score = summary(results)
    elapsed = time.time() - started
    print()
    print("mutate: " + ", ".join(f"{v} {k}" for k, v in sorted(count.items())))
    print(f"mutate: score {caught}/{judged} = {100 * score:.1f}% in {elapsed / 60:.1f} min")
    survivors = [r["id"] for r in results if r["outcome"] == "survived"]
    if survivors:
        print("mutate: survived: " + " ".join(survivors))
    report = args.report or os.path.join(scratch, "report.json")
    with open(report, "w") as f:
        json.dump({"score": score, "caught": caught, "judged": judged, "counts": count,
                   "seconds": elapsed, "sanitize": args.sanitize, "results": results}, f, indent=1)
    print(f"mutate: report {report}")
    return 1 if score < args.min_score else 0


if __name__ == "__main__":
    sys.exit(main())
