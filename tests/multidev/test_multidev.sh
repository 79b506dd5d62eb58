#!/usr/bin/env bash
# A vyred on several devices, checked end to end: the daemon starts with fault injection on, the
# devices it opened are shown by `vyrectl devices` and `vyrectl stats` (each must list all of them,
# on the expected backend), multidev makes its checks (routing, resident buffers and graphs kept on
# their device, a device loss on one device while device 0 keeps serving), the daemon's log must
# name the loss and the recovery, and SIGTERM must stop the daemon with status 0.
#
# Environment:
#   VYRED_BIN, VYRECTL, MULTIDEV   the daemon, vyrectl and tests/multidev/multidev
#   VYRED_TEST_BACKEND         reference, vulkan, or default (the daemon's own choice, which must be
#                              VYRED_TEST_EXPECT_BACKEND: vulkan when unset)
#   VYRED_TEST_DEVICES         the daemon's devices key (default: all)
#   VYRED_TEST_EXPECT_DEVICES  how many devices it must open (default: at least 2)
#   MULTIDEV_OUT               a folder that keeps what was seen: devices.txt, stats.txt,
#                              multidev.txt and vyred.log (default: nothing is kept)
#   PYTHON                     python3, for reading vyrectl's JSON (default: python3)
# Exit status: 0 when every check passed, 1 when one failed, 77 (skip) when the daemon opened
# fewer than two devices and none were required.
set -u

: "${VYRED_BIN:?set VYRED_BIN to the vyred binary}"
: "${VYRECTL:?set VYRECTL to the vyrectl binary}"
: "${MULTIDEV:?set MULTIDEV to the multidev binary}"
PY=${PYTHON:-python3}
backend=${VYRED_TEST_BACKEND:-default}
devices=${VYRED_TEST_DEVICES:-all}
expect=${VYRED_TEST_EXPECT_DEVICES:-}
want_backend=$backend
[ "$backend" = default ] && want_backend=${VYRED_TEST_EXPECT_BACKEND:-vulkan}

T=$(mktemp -d "${TMPDIR:-/tmp}/multidev-test.XXXXXX")
sock=$T/vyred.sock
log=$T/vyred.log
daemon_pid=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	if [ -n "$daemon_pid" ]; then
		kill -KILL "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	if [ -n "${MULTIDEV_OUT:-}" ]; then
		mkdir -p "$MULTIDEV_OUT"
		cp "$log" "$MULTIDEV_OUT/vyred.log" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT

# shellcheck source-path=SCRIPTDIR source=checks.sh
. "$(dirname "$0")/checks.sh"

keep() {
	if [ -n "${MULTIDEV_OUT:-}" ]; then
		mkdir -p "$MULTIDEV_OUT"
		cat >>"$MULTIDEV_OUT/$1"
	else
		cat >/dev/null
	fi
}

ctl() {
	"$VYRECTL" --socket "$sock" --timeout 60 "$@"
}

args=(--socket "$sock" --cache-dir "$T/cache" --device "$devices" --log-level info
	--set fault_injection=true)
[ "$backend" != default ] && args+=(--backend "$backend")
"$VYRED_BIN" "${args[@]}" >"$log" 2>&1 &
daemon_pid=$!
for _ in $(seq 600); do
	ctl ping --count 1 >/dev/null 2>&1 && break
	kill -0 "$daemon_pid" 2>/dev/null || break
	sleep 0.1
done
if ! ctl ping --count 1 >/dev/null 2>&1; then
	echo "FAIL - vyred ${args[*]} did not start; its log:"
	sed 's/^/  | /' "$log"
	exit 1
fi

# The devices it opened, as vyrectl shows them (tables kept for the record, JSON checked).
ctl devices | tee "$T/devices.txt" | keep devices.txt
ctl --json devices >"$T/devices.json"
n=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' \
	"$T/devices.json" 2>/dev/null || echo 0)
if [ -z "$expect" ] && [ "$n" -lt 2 ]; then
	echo "SKIP - vyred --device $devices opened $n device(s); these checks need two or more"
	exit 77
fi
if [ -n "$expect" ]; then
	[ "$n" = "$expect" ]
	check $? "vyrectl devices lists $n devices, $expect expected"
fi
"$PY" -c 'import json,sys
d=json.load(open(sys.argv[1]))
assert [v["index"] for v in d] == list(range(len(d))), d
assert all(v["backend"] == sys.argv[2] for v in d), [v["backend"] for v in d]' \
	"$T/devices.json" "$want_backend"
check $? "vyrectl devices: indices 0 to $((n - 1)), every one on the $want_backend backend"
ctl stats | keep stats.txt
ctl --json stats >"$T/stats.json"
"$PY" -c 'import json,sys
d=json.load(open(sys.argv[1]))["devices"]
assert len(d) == int(sys.argv[2]) and all(v["lost"] == 0 for v in d), d' "$T/stats.json" "$n"
check $? "vyrectl stats lists the $n devices, none lost"

"$MULTIDEV" --socket "$sock" --devices "$n" >"$T/multidev.txt" 2>&1
rc=$?
cat "$T/multidev.txt"
keep multidev.txt <"$T/multidev.txt"
check $rc "multidev: every check passed (exit $rc)"

# Afterwards: the per-device counters, one loss on device 1.
echo "== after the checks" | keep stats.txt
ctl stats | tee "$T/stats-after.txt" | keep stats.txt
ctl --json stats >"$T/stats.json"
"$PY" -c 'import json,sys
d=json.load(open(sys.argv[1]))["devices"]
assert [v["lost"] for v in d] == [0, 1] + [0] * (len(d) - 2), [v["lost"] for v in d]
assert all(v["dispatches"] > 0 for v in d), [v["dispatches"] for v in d]' "$T/stats.json"
check $? "vyrectl stats: device 1 was lost once, no other device; every device ran dispatches"
grep -q "device 1: fault device_lost injected" "$log"
check $? "the log names the fault injected on device 1"
grep -Eq "device 1 \(.*\) was lost and has been recovered" "$log"
check $? "the log names device 1's loss and recovery"

kill -TERM "$daemon_pid"
wait "$daemon_pid"
rc=$?
daemon_pid=
check $rc "SIGTERM stops vyred with status 0 (got $rc)"
echo "# $checks checks, $failures failed"
[ "$failures" = 0 ]
