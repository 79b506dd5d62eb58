#!/bin/sh
# Run one libFuzzer target for a bounded time; meson runs it as a test of suite 'fuzz'.
#
#   run-fuzz.sh TARGET CORPUS ARTIFACTS
#
# TARGET runs for VYRED_FUZZ_SECONDS seconds (read now, not when meson configured; default 30,
# 0 skips the test) from the seed corpus CORPUS. New inputs go to a scratch copy of the corpus
# that is removed afterwards, so the source tree never changes. An input that makes the target
# fail is kept under ARTIFACTS, and libFuzzer prints its path.
set -eu

if [ $# -ne 3 ]; then
	echo "usage: run-fuzz.sh TARGET CORPUS ARTIFACTS" >&2
	exit 2
fi
target=$1
corpus=$2
artifacts=$3
name=$(basename "$target")

secs=${VYRED_FUZZ_SECONDS:-30}
case $secs in
'' | *[!0-9]*)
	echo "run-fuzz.sh: VYRED_FUZZ_SECONDS is '$secs'. Fix: set it to a whole number of seconds." >&2
	exit 2
	;;
esac
if [ "$secs" -eq 0 ]; then
	echo "run-fuzz.sh: VYRED_FUZZ_SECONDS=0, $name skipped"
	exit 77
fi
if [ ! -d "$corpus" ]; then
	echo "run-fuzz.sh: no seed corpus at $corpus. Fix: run tests/fuzz/make_corpus.py." >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vyred-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cp -R "$corpus" "$work/corpus"
mkdir -p "$artifacts"

# libFuzzer stops itself after max_total_time; the outer limit only ends a target that hangs
# outside an input (where -timeout does not reach), with room for its final report. libFuzzer
# reports a finding with exit status 77 unless told otherwise, and 77 is what meson reads as a
# skipped test, hence -error_exitcode and -timeout_exitcode.
status=0
timeout --kill-after=10 $((secs + 120)) "$target" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=2048 -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
	-artifact_prefix="$artifacts/$name-" "$work/corpus" || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
	echo "run-fuzz.sh: $name ran past $((secs + 120)) s and was stopped" >&2
	exit 1
fi
if [ "$status" -ne 0 ]; then
	echo "run-fuzz.sh: $name found a failing input; it is saved under $artifacts/" >&2
	exit 1
fi
