#!/usr/bin/env bash
# vyred developer entry point.
#
#   ./dev.sh demo    build, then run the demo: check a program, start vyred, run it through
#                    the daemon twice (a cache miss, then a hit), print the results, stop it
#   ./dev.sh test    build with -Werror and ASan+UBSan, run every test suite and the fuzz
#                    targets for a bounded time, and end with "tests: N passed, M failed"
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
# nothing is). Environment: VYRED_FUZZ_SECONDS (default 60 per target, 0 skips fuzzing).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

packages=(
	build-essential meson ninja-build pkg-config python3
	libuv1-dev libmsgpack-dev libvulkan-dev libvulkan-volk-dev libshaderc-dev glslang-dev
	libcriterion-dev libsystemd-dev libxxhash-dev libjson-c-dev libinih-dev libsodium-dev
	mesa-vulkan-drivers vulkan-validationlayers spirv-tools vulkan-tools
	clang clang-format libclang-rt-14-dev scdoc man-db gnuplot-nox python3-msgpack systemd
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

# Count tests from meson's log: a Criterion executable counts its cases (from its synthesis
# line), any other test counts once.
count_tests() {
	python3 - "$@" <<'PY'
import json, re, sys
passed = failed = 0
for log in sys.argv[1:]:
    try:
        lines = open(log).read().splitlines()
    except FileNotFoundError:
        continue
    for line in lines:
        t = json.loads(line)
        out = (t.get("stdout") or "") + (t.get("stderr") or "")
        m = re.findall(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)", out)
        if m:
            tested, ok, bad, crash = map(int, m[-1])
            passed += ok
            failed += tested - ok
        elif t.get("result") == "SKIP":
            continue
        elif t.get("result") == "OK":
            passed += 1
        else:
            failed += 1
        if m and t.get("result") not in ("OK", "SKIP") and int(m[-1][0]) == int(m[-1][1]):
            failed += 1  # every case passed but the executable failed (a leak or a crash at exit)
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
	meson test -C build-test --print-errorlogs --num-processes 2 || status=1

	local logs=(build-test/meson-logs/testlog.json)
	if command -v clang >/dev/null && [ "${VYRED_FUZZ_SECONDS:-60}" != 0 ]; then
		CC=clang configure build-fuzz --buildtype=debug -Dfuzz=true -Dtests=false \
			-Db_sanitize=address,undefined -Db_lundef=false
		ninja -C build-fuzz
		meson test -C build-fuzz --suite fuzz --print-errorlogs --num-processes 1 \
			--timeout-multiplier 3 || status=1
		logs+=(build-fuzz/meson-logs/testlog.json)
	fi
	read -r passed failed < <(count_tests "${logs[@]}")
	echo "tests: $passed passed, $failed failed"
	[ "$failed" -eq 0 ] || status=1
	return $status
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
	echo "usage: ./dev.sh demo|test|build|bench [OUTDIR]|difffuzz [--count N] [--seed S]|mutate [OPTIONS]" >&2
	exit 2
	;;
esac
