#!/usr/bin/env bash
# One pass of the checks that need a real GPU, for a machine that has one but no compiler or
# package registry: the device's float profile as the probe finds it, the emit suite's comparison
# of that profile with the named one, the conformance corpus, the differential fuzzer for a
# bounded time, and the benchmarks of one or two builds (an A/B in one run).
#
#   tools/gpu-check.sh PACK OUT [FUZZ_SECONDS [FUZZ_SEED]]
#
# PACK is a folder made by `tools/gpu-check.sh --pack PACK BUILD [BASELINE_BUILD [NAME=BUILD]...]`
# on the build machine: stripped binaries of BUILD (release: daemon/vyred, bench/vybench, the
# conformance runner, difffuzz, the ULP report, libvyre) under PACK/cur, of BASELINE_BUILD under
# PACK/base when given, and of each NAME=BUILD under PACK/NAME (the steps between the two, for
# an A/B/C).
# OUT receives conformance.txt, difffuzz.txt, emit.txt and one bench JSON per build and pass
# (bench-SIDE-N.json, interleaved: base, the named steps, cur, then again). Run it from the
# repository root (the corpus, the bench scripts and the emit test are read from the tree).
# FUZZ_SECONDS written as until:EPOCH runs the fuzzer until that time (date +%s), so that one
# call can give the fuzzer whatever the steps before it left of the call's limit.
# Environment: GPU_CHECK_PASSES, the bench passes of each build (default 2); GPU_CHECK_FUZZ_ARGS,
# more arguments of the fuzzer (for example --queued); GPU_CHECK_BENCH_ARGS, more arguments of
# bench/run.sh (for example "--groups math"); GPU_CHECK_ULP, functions for the ULP report to
# compare with the GPU on every input (for example "exp,sin"; in ulp.txt, one line each as it
# ends), within GPU_CHECK_ULP_SECONDS (default 300); GPU_CHECK_ULP_PLAIN, functions whose code
# on the GPU to compare with the GPU's plain code on every input (no reference run: seconds a
# function; in ulp-plain.txt), within the same limit.
# At the end everything in OUT is packed into OUT/gpu-check.tgz and the loose files removed (the
# device tool brings back only a few files; GPU_CHECK_KEEP=1 keeps them).
set -uo pipefail

if [ "${1:-}" = "--pack" ]; then
	pack=$2
	build=$3
	base=${4:-}
	rm -rf "$pack"
	sides=("cur=$build")
	[ -n "$base" ] && sides+=("base=$base")
	[ $# -gt 4 ] && sides+=("${@:5}")
	for pair in "${sides[@]}"; do
		side=${pair%%=*}
		b=${pair#*=}
		for f in daemon/vyred bench/vybench tests/conformance/conformance \
			tests/difffuzz/difffuzz tests/ulp/ulp_report client/libvyre.so.1; do
			[ -e "$b/$f" ] || continue
			mkdir -p "$pack/$side/$(dirname "$f")"
			cp -L "$b/$f" "$pack/$side/$f"
			strip "$pack/$side/$f" 2>/dev/null || true
		done
	done
	ls -R "$pack" | head -40
	exit 0
fi

pack=${1:?usage: tools/gpu-check.sh PACK OUT [FUZZ_SECONDS [FUZZ_SEED]]}
out=${2:?usage: tools/gpu-check.sh PACK OUT [FUZZ_SECONDS [FUZZ_SEED]]}
fuzz_seconds=${3:-300}
fuzz_seed=${4:-$(date +%s)}
cur=$pack/cur
mkdir -p "$out"

echo "== the device's float profile"
"$cur/daemon/vyred" --emit-glsl tests/programs/saxpy.json --profile device | head -4 |
	tee "$out/emit.txt"
echo "== emit suite (the device profile against the named one)"
VYRED_BIN=$cur/daemon/vyred VY_SOURCE_DIR=$PWD bash tests/emit/test_emit_glsl.sh >>"$out/emit.txt" 2>&1
echo "emit: exit $?" | tee -a "$out/emit.txt"

echo "== conformance"
"$cur/tests/conformance/conformance" tests/conformance/cases >"$out/conformance.txt" 2>&1
echo "conformance: exit $?"
grep -E '^FAIL' "$out/conformance.txt" | head -20
tail -n 3 "$out/conformance.txt"

echo "== bench (interleaved A/B)"
steps=$(find "$pack" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | grep -vx -e base -e cur | sort)
for pass in $(seq "${GPU_CHECK_PASSES:-2}"); do
	# shellcheck disable=SC2086 # the step names are words
	for side in base $steps cur; do
		[ -x "$pack/$side/bench/vybench" ] || continue
		# shellcheck disable=SC2086 # the extra arguments are words
		VYBENCH_BUILD=$pack/$side bench/run.sh "/tmp/gpu-check-bench-$side-$pass" \
			${GPU_CHECK_BENCH_ARGS:-} >"$out/bench-$side-$pass.log" 2>&1
		echo "bench $side pass $pass: exit $?"
		cp "/tmp/gpu-check-bench-$side-$pass/bench.json" "$out/bench-$side-$pass.json" 2>/dev/null
	done
done

if [ -n "${GPU_CHECK_ULP:-}" ]; then
	echo "== ULP report, every input, compared with the GPU: $GPU_CHECK_ULP"
	timeout -k 10 "${GPU_CHECK_ULP_SECONDS:-300}" stdbuf -oL "$cur/tests/ulp/ulp_report" \
		--exhaustive --threads "$(nproc)" --only "$GPU_CHECK_ULP" --compare vulkan \
		>"$out/ulp.txt" 2>&1
	echo "ulp: exit $?"
	grep -E 'differ|outside|all 2\^32|pairs' "$out/ulp.txt" | cut -c1-140
fi

if [ -n "${GPU_CHECK_ULP_PLAIN:-}" ]; then
	echo "== ULP report, every input, on the GPU against its plain code: $GPU_CHECK_ULP_PLAIN"
	timeout -k 10 "${GPU_CHECK_ULP_SECONDS:-300}" stdbuf -oL "$cur/tests/ulp/ulp_report" \
		--exhaustive --threads "$(nproc)" --only "$GPU_CHECK_ULP_PLAIN" --on vulkan \
		--compare vulkan --plain >"$out/ulp-plain.txt" 2>&1
	echo "ulp (plain): exit $?"
	grep -E 'differ|outside|all 2\^32|pairs' "$out/ulp-plain.txt" | cut -c1-140
fi

if [ "${fuzz_seconds#until:}" != "$fuzz_seconds" ]; then
	fuzz_seconds=$((${fuzz_seconds#until:} - $(date +%s)))
	[ "$fuzz_seconds" -gt 0 ] || fuzz_seconds=1
fi
echo "== difffuzz: seed $fuzz_seed for $fuzz_seconds s, one job per core"
# shellcheck disable=SC2086 # the extra arguments are words
timeout -k 30 "$fuzz_seconds" "$cur/tests/difffuzz/difffuzz" --seed "$fuzz_seed" --count 1000000 \
	--jobs "$(nproc)" ${GPU_CHECK_FUZZ_ARGS:-} >"$out/difffuzz.txt" 2>&1
grep -E 'MISMATCH|programs,' "$out/difffuzz.txt" | tail -n 3

if [ "${GPU_CHECK_KEEP:-0}" != 1 ]; then
	tar -C "$out" -czf "/tmp/gpu-check-$$.tgz" . &&
		find "$out" -mindepth 1 -delete &&
		mv "/tmp/gpu-check-$$.tgz" "$out/gpu-check.tgz"
	echo "results: $out/gpu-check.tgz"
fi
