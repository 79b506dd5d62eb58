#!/usr/bin/env bash
# vyred developer entry point.
#
#   ./dev.sh demo    build, then run the demo: check a program, start vyred, run it through
#                    the daemon twice (a cache miss, then a hit), print the results, stop it
#   ./dev.sh test    build with -Werror and ASan+UBSan, run every test suite and the fuzz
#                    targets for a bounded time, and end with "tests: N passed, M failed, ..."
#                    (every skip named; a stage that could not run fails the run: docs/testing.md)
#   ./dev.sh ulp [--exhaustive] [--threads N] [--only OP,...] [--compare vulkan]
#                    release build into build-ulp/, then the ULP report of the math library:
#                    its sample, or every f32 input of every function (hours on 2 cores);
#                    --compare also runs each input on the GPU, which must give the same bits
#   ./dev.sh build   build only (build/)
#   ./dev.sh bench [OUTDIR]
#                    release build into build-bench/, run the benchmark suite against its
#                    anchors and print its table; results (JSON, plot) in OUTDIR (default
#                    build-bench/bench-results)
#   ./dev.sh difffuzz [--count N] [--seed S] [--jobs N] [--backend ID]...
#                    release build into build-difffuzz/, then the differential fuzzer: N random
#                    programs (default 1000) from seed S (default: a new one, printed) on the
#                    reference and every backend that opens, compared byte for byte
#                    (tests/difffuzz; docs/semantics.md section 10)
#   ./dev.sh mutate [OPTIONS]
#                    mutation testing: plant each mutant of tests/mutants.ini in a scratch copy
#                    (build-mutate/), rebuild, run the suites it names, and print caught /
#                    survived with a score (tools/mutate.py --help; docs/testing.md)
#
# On a fresh Debian 12 machine it first installs whatever package is missing (quietly when
# nothing is). Environment: VYRED_FUZZ_SECONDS (default 30 per target; 0 leaves fuzzing out,
# which fails the run as a stage not run).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

packages=(
	build-essential meson ninja-build pkg-config python3
	libuv1-dev libmsgpack-dev libvulkan-dev libvulkan-volk-dev libshaderc-dev glslang-dev
	libcriterion-dev libsystemd-dev libxxhash-dev libjson-c-dev libinih-dev libsodium-dev
	mesa-vulkan-drivers vulkan-validationlayers spirv-tools vulkan-tools
	clang clang-format libclang-rt-14-dev scdoc man-db gnuplot-nox python3-msgpack systemd
	python3-numpy python3-pip python3-venv
	yamllint python3-yaml python3-kubernetes
)

install_missing() {
	local missing=()
	for p in "${packages[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "dev.sh: installing ${missing[*]}"
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# configure DIR [meson options...]: set up DIR once, reconfigure when options change.
configure() {
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

build_default() {
	configure build --buildtype=debugoptimized
	ninja -C build >/dev/null
}

# Count tests from meson's logs: a Criterion executable counts its cases (from its synthesis
# line), any other test counts once. Prints "PASSED FAILED" on the last line of stdout, and before
# it the lines of the summary: each test meson skipped (a test that could not run, counted as
# failed), each conformance run its device skipped, and how long each fuzz target ran.
count_tests() {
	python3 - "$@" <<'PY'
import json, re, sys
passed = failed = 0
notes, fuzz = [], []
for log in sys.argv[1:]:
    try:
        lines = open(log).read().splitlines()
    except FileNotFoundError:
        continue
    for line in lines:
        t = json.loads(line)
        out = (t.get("stdout") or "") + (t.get("stderr") or "")
        m = re.findall(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)", out)
        for case in re.findall(r"^skipped: (.*)$", out, re.M):
            notes.append(f"skipped: {t['name']}: {case}")
        runs = re.findall(r"Done (\d+) runs in (\d+) second", out)
        if t.get("name", "").startswith("fuzz_"):
            fuzz.append(f"{t['name']} {runs[-1][1]} s, {runs[-1][0]} runs" if runs
                        else f"{t['name']} did not finish ({t.get('duration', 0):.0f} s)")
        if m:
            tested, ok, bad, crash = map(int, m[-1])
            passed += ok
            failed += tested - ok
        elif t.get("result") == "SKIP":
            failed += 1
            last = [l for l in out.splitlines() if l.strip()][-1:] or ["(no output)"]
            notes.append(f"not run: {t['name']} (meson skipped it: {last[0].strip()})")
        elif t.get("result") == "OK":
            passed += 1
        else:
            failed += 1
        if t.get("result") not in ("OK", "SKIP"):
            # name each failing case and its first message, so the end of the log says what broke
            shown = 0
            for fl in re.findall(r"^\[FAIL\] (.*)$", out, re.M)[:8]:
                notes.append(f"failed: {t['name']}: {fl.strip()}")
                shown += 1
            for msg in re.findall(r"^\[----\] (.*Assertion Failed.*|  .+)$", out, re.M)[:12]:
                notes.append(f"failed: {t['name']}:   {msg.strip()[:300]}")
                shown += 1
            if not shown:
                tail = [l for l in out.splitlines() if l.strip()][-3:] or ["(no output)"]
                notes += [f"failed: {t['name']}: {l.strip()[:300]}" for l in tail]
        if m and t.get("result") not in ("OK", "SKIP") and int(m[-1][0]) == int(m[-1][1]):
            failed += 1  # every case passed but the executable failed (a leak or a crash at exit)
for n in notes:
    print(n)
if fuzz:
    print("fuzz: " + "; ".join(fuzz))
print(f"{passed} {failed}")
PY
}

run_tests() {
	configure build-test --buildtype=debug -Dwerror=true -Db_sanitize=address,undefined \
		-Db_lundef=false
	ninja -C build-test
	export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
	export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
	export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
	# every Vulkan run of the suite under VK_LAYER_KHRONOS_validation and spirv-val
	export VYRED_VULKAN_VALIDATION=1
	local status=0
	# Stages that cannot run here: each is named in the summary and fails the run.
	local unrun=()
	# The *-default suites must run on Vulkan wherever a Vulkan device exists (lavapipe comes
	# with mesa-vulkan-drivers), and conformance must compare it with the reference: a daemon
	# that falls back to the reference then fails them.
	local vkinfo
	vkinfo=$(vulkaninfo --summary 2>/dev/null || true)
	if grep -q '^[[:space:]]*deviceName' <<<"$vkinfo"; then
		export VYRED_TEST_EXPECT_BACKEND=vulkan
	else
		export VYRED_TEST_EXPECT_BACKEND=reference
		unrun+=("vulkan: vulkaninfo --summary finds no Vulkan device, so the *-default suites ran on the reference and conformance compared no backend with it. Fix: apt-get install mesa-vulkan-drivers vulkan-tools")
	fi
	# The cross-user cases run clients as other uids, which only root can.
	if [ "$(id -u)" -ne 0 ]; then
		export VYRED_TEST_ALLOW_NO_ROOT=1
		unrun+=("isolation: the cross-user cases skipped, not root. Fix: sudo ./dev.sh test")
	else
		unset VYRED_TEST_ALLOW_NO_ROOT
	fi
	meson test -C build-test --print-errorlogs --num-processes 2 || status=1

	local logs=(build-test/meson-logs/testlog.json)
	local fuzz_seconds=${VYRED_FUZZ_SECONDS:-30}
	if ! command -v clang >/dev/null; then
		unrun+=("fuzz: clang is missing, so no fuzz target ran. Fix: apt-get install clang libclang-rt-14-dev")
	elif [ "$fuzz_seconds" = 0 ]; then
		unrun+=("fuzz: VYRED_FUZZ_SECONDS=0, so no fuzz target ran")
	else
		CC=clang configure build-fuzz --buildtype=debug -Dfuzz=true -Dtests=false \
			-Db_sanitize=address,undefined -Db_lundef=false
		ninja -C build-fuzz
		VYRED_FUZZ_SECONDS=$fuzz_seconds meson test -C build-fuzz --suite fuzz \
			--print-errorlogs --num-processes 1 --timeout-multiplier 3 || status=1
		logs+=(build-fuzz/meson-logs/testlog.json)
	fi
	local summary passed failed
	summary=$(count_tests "${logs[@]}")
	read -r passed failed <<<"$(tail -n 1 <<<"$summary")"
	echo
	head -n -1 <<<"$summary" | grep -v '^fuzz: ' || true
	local u
	for u in "${unrun[@]}"; do
		echo "not run: $u"
	done
	local skipped
	skipped=$(grep -c '^skipped: ' <<<"$summary" || true)
	echo "tests: $passed passed, $failed failed, $skipped cases skipped by their device," \
		"${#unrun[@]} stages not run$(sed -n 's/^fuzz: /; fuzz: /p' <<<"$summary")"
	[ "$failed" -eq 0 ] && [ ${#unrun[@]} -eq 0 ] || status=1
	return $status
}

run_ulp() {
	configure build-ulp --buildtype=release
	ninja -C build-ulp tests/ulp/ulp_report >/dev/null
	build-ulp/tests/ulp/ulp_report "$@"
}

run_demo() {
	build_default
	local example=tests/programs/saxpy.json
	echo "== vyrectl check $example"
	./build/client/vyrectl check "$example"
	echo
	echo "== vyred: start, run $example twice, show outputs and cache stats, stop"
	daemon/demo.sh build/daemon/vyred "$example"
}

run_difffuzz() {
	configure build-difffuzz --buildtype=release -Dtests=true
	ninja -C build-difffuzz tests/difffuzz/difffuzz
	local args=(--count 1000 --seed random)
	exec build-difffuzz/tests/difffuzz/difffuzz "${args[@]}" "$@"
}

run_bench() {
	configure build-bench --buildtype=release -Dtests=false
	ninja -C build-bench bench/vybench daemon/vyred
	VYBENCH_BUILD=build-bench bench/run.sh "${1:-build-bench/bench-results}"
}

cmd=${1:-}
case "$cmd" in
demo)
	install_missing
	run_demo
	;;
test)
	install_missing
	run_tests
	;;
build)
	install_missing
	build_default
	;;
bench)
	install_missing
	run_bench "${2:-}"
	;;
ulp)
	shift
	install_missing
	run_ulp "$@"
	;;
difffuzz)
	shift
	install_missing
	run_difffuzz "$@"
	;;
mutate)
	shift
	install_missing
	exec python3 tools/mutate.py "$@"
	;;
*)
	echo "usage: ./dev.sh demo|test|build|bench [OUTDIR]|difffuzz [--count N] [--seed S]|mutate [OPTIONS]|ulp [OPTIONS]" >&2
	exit 2
	;;
esac
