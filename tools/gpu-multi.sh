#!/usr/bin/env bash
# One pass of the checks of vyred on a machine with several GPUs, for a machine that has no
# compiler or package registry (docs/operations.md, "Several GPUs"):
#   (a) vyred --check, then a vyred opened on every GPU (devices = all) shown by vyrectl devices
#       and vyrectl stats, which must list the expected number of devices, all on Vulkan;
#   (b) against that daemon, tests/multidev/multidev: routing by config.device and by load,
#       resident buffers and graphs kept on their device, and a device loss injected on device 1
#       while a client dispatches on device 0 in a loop (only device 1's request fails, naming
#       it; device 1 recovers and serves again; device 0 never fails);
#   (c) bench/run.sh once: every figure, with dispatch_rate_16_all and stream_bandwidth_all
#       beside their one-device anchors.
#
#   tools/gpu-multi.sh --pack PACK BUILD
#   tools/gpu-multi.sh PACK OUT [DEVICES]
#
# --pack gathers the stripped binaries of BUILD (a release build with the tests enabled: vyred,
# vyrectl, vybench, multidev, libvyre) into PACK, laid out like a build folder so that their run
# paths find libvyre, and keeps PACK out of git. On the GPU machine, from the repository root
# (the multidev script and the bench scripts are read from the tree), after `source .gpu/env.sh`,
# the second form writes into OUT: check.txt, devices.txt and stats.txt (vyrectl's tables, stats
# before and after the checks), multidev.txt, vyred.log (the checked daemon's log), bench.txt and
# bench.json. DEVICES is how many devices the daemon must open (default 2); GPU_MULTI_DEVICES
# is the devices key of the checked daemon and of the bench's every-device daemon (default all;
# 0,0 tries the script on a machine with one device, twice). The exit status is 0
# when (a), (b) and (c) all passed, 1 otherwise (benchmarks fail only on a wrong result or a
# figure group that could not be measured, never on a missed target).
set -uo pipefail

files="daemon/vyred client/vyrectl bench/vybench tests/multidev/multidev client/libvyre.so.1"

if [ "${1:-}" = "--pack" ]; then
	pack=${2:?usage: tools/gpu-multi.sh --pack PACK BUILD}
	build=${3:?usage: tools/gpu-multi.sh --pack PACK BUILD}
	for f in $files; do
		if [ ! -e "$build/$f" ]; then
			echo "gpu-multi: $build/$f is missing. Fix: ninja -C $build daemon/vyred" \
				"client/vyrectl bench/vybench tests/multidev/multidev (a build with" \
				"-Dtests=true)" >&2
			exit 1
		fi
	done
	rm -rf "$pack"
	for f in $files; do
		mkdir -p "$pack/$(dirname "$f")"
		cp -L "$build/$f" "$pack/$f"
		strip "$pack/$f" 2>/dev/null || true
	done
	exclude=$(git rev-parse --git-path info/exclude 2>/dev/null)
	rel=$(realpath --relative-to="$(git rev-parse --show-toplevel 2>/dev/null || pwd)" "$pack")
	if [ -n "$exclude" ] && [ "${rel#..}" = "$rel" ] && ! git check-ignore -q "$pack"; then
		echo "/$rel/" >>"$exclude"
	fi
	du -sh "$pack"
	find "$pack" -type f | sort
	exit 0
fi

pack=$(realpath "${1:?usage: tools/gpu-multi.sh PACK OUT [DEVICES]}")
out=${2:?usage: tools/gpu-multi.sh PACK OUT [DEVICES]}
want=${3:-2}
list=${GPU_MULTI_DEVICES:-all}
mkdir -p "$out"
out=$(realpath "$out")
status=0
T=$(mktemp -d /tmp/gpu-multi.XXXXXX)
trap 'rm -rf "$T"' EXIT

echo "== (a) vyred --check on every device"
"$pack/daemon/vyred" --check --device "$list" --backend vulkan --socket "$T/check.sock" \
	--cache-dir "$T/check-cache" >"$out/check.txt" 2>&1
rc=$?
cat "$out/check.txt"
echo "vyred --check: exit $rc"
[ "$rc" = 0 ] || status=1

echo "== (a, b) vyrectl devices and stats, then multidev, on a vyred with devices = $list"
VYRED_BIN=$pack/daemon/vyred VYRECTL=$pack/client/vyrectl MULTIDEV=$pack/tests/multidev/multidev \
	VYRED_TEST_BACKEND=vulkan VYRED_TEST_DEVICES=$list VYRED_TEST_EXPECT_DEVICES=$want \
	MULTIDEV_OUT=$out bash tests/multidev/test_multidev.sh 2>&1 | grep -v '^  '
rc=$?
echo "multidev: exit $rc"
[ "$rc" = 0 ] || status=1

echo "== (c) bench/run.sh (the single-device figures on device 0, the _all ones on every device)"
VYBENCH_BUILD=$pack bench/run.sh "$T/bench" --all-devices "$list" >"$out/bench.txt" 2>&1
rc=$?
cp "$T/bench/bench.json" "$out/bench.json" 2>/dev/null
grep -E '^(figure|tiny dispatches/s, 16|elementwise f32 y=x\+y)' "$out/bench.txt"
grep -E '^  (tiny dispatches/s, 16 clients, every|elementwise f32 y=x\+y, every)' "$out/bench.txt"
echo "bench: exit $rc"
[ "$rc" = 0 ] || status=1

echo "gpu-multi: $([ "$status" = 0 ] && echo PASS || echo FAIL)"
exit $status
