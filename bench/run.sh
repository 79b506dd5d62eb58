#!/usr/bin/env bash
# Run the benchmark suite (bench/README.md) from an existing build and draw its latency plot.
#
#   bench/run.sh [OUTDIR [VYBENCH ARGS...]]
#
# OUTDIR (default: $VYBENCH_BUILD/bench-results) receives bench.json, latency.dat, latency.png
# and vyred.log. VYBENCH_BUILD names the build folder holding bench/vybench and daemon/vyred
# (default: build-bench in the repository, which `./dev.sh bench` builds with
# buildtype=release); VYRED_BIN overrides the daemon. Further arguments go to vybench, for
# example `--quick` or `-o max_inflight=128`. The exit status is vybench's.
set -euo pipefail
src=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
build=${VYBENCH_BUILD:-$src/build-bench}
out=${1:-$build/bench-results}
[ $# -gt 0 ] && shift

vybench=$build/bench/vybench
vyred=${VYRED_BIN:-$build/daemon/vyred}
for f in "$vybench" "$vyred"; do
	if [ ! -x "$f" ]; then
		echo "bench/run.sh: $f is missing. Fix: ninja -C $build bench/vybench daemon/vyred" >&2
		exit 1
	fi
done

mkdir -p "$out"
status=0
"$vybench" --vyred "$vyred" --out "$out" --torch-script "$src/bench/torch_anchor.py" "$@" ||
	status=$?

if [ -s "$out/latency.dat" ]; then
	if command -v gnuplot >/dev/null; then
		gnuplot -e "datafile='$out/latency.dat'; outfile='$out/latency.png'" \
			"$src/bench/plot.gp" && echo "plot: $out/latency.png"
	else
		echo "bench/run.sh: gnuplot not found, no latency plot. Fix: apt-get install gnuplot-nox"
	fi
fi
exit $status
