#!/usr/bin/env bash
# One GPU that the Vulkan loader lists twice: with the lavapipe manifest given twice
# (VK_DRIVER_FILES names two copies of it), the loader enumerates the same device twice, with one
# device UUID. `devices = all` must open it once, log that it skipped the second entry, and show
# its UUID in `vyrectl devices`; `devices = 0,1`, written out, opens both entries as asked.
#
# Environment: VYRED_BIN, VYRECTL (the daemon and vyrectl), PYTHON (default python3).
# Exit status: 0 when every check passed, 1 when one failed, 77 (skip) without lavapipe's manifest.
set -u

: "${VYRED_BIN:?set VYRED_BIN to the vyred binary}"
: "${VYRECTL:?set VYRECTL to the vyrectl binary}"
PY=${PYTHON:-python3}
manifest=
for dir in /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/share/vulkan/icd.d; do
	for f in "$dir"/lvp_icd*.json; do
		[ -e "$f" ] && manifest=$f && break 2
	done
done
if [ -z "$manifest" ]; then
	echo "SKIP - no lavapipe manifest (lvp_icd*.json). Fix: apt-get install mesa-vulkan-drivers"
	exit 77
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/same-gpu.XXXXXX")
daemon_pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	if [ -n "$daemon_pid" ]; then
		kill -KILL "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
cp "$manifest" "$T/first.json"
cp "$manifest" "$T/second.json"
export VK_DRIVER_FILES=$T/first.json:$T/second.json

# shellcheck source-path=SCRIPTDIR source=checks.sh
. "$(dirname "$0")/checks.sh"

# Start a daemon on DEVICES, write `vyrectl --json devices` to OUT, stop it; the log stays in LOG.
devices_of() {
	local devices=$1 out=$2 log=$3 sock=$T/vyred.sock
	"$VYRED_BIN" --socket "$sock" --cache-dir "$T/cache" --backend vulkan \
		--device "$devices" --log-level info >"$log" 2>&1 &
	daemon_pid=$!
	for _ in $(seq 600); do
		"$VYRECTL" --socket "$sock" ping --count 1 >/dev/null 2>&1 && break
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	"$VYRECTL" --socket "$sock" --json devices >"$out" 2>>"$log"
	local rc=$?
	"$VYRECTL" --socket "$sock" devices >>"$log" 2>&1
	kill -TERM "$daemon_pid"
	wait "$daemon_pid"
	daemon_pid=
	return $rc
}

devices_of all "$T/all.json" "$T/all.log"
check $? "vyrectl devices answers a daemon with devices = all"
"$PY" -c 'import json,re,sys
d=json.load(open(sys.argv[1]))
assert len(d) == 1, [v["name"] for v in d]
assert re.fullmatch("[0-9a-f]{32}", d[0]["uuid"]), d[0]["uuid"]' "$T/all.json"
check $? "devices = all opens the twice-listed device once, and shows its 32-digit UUID"
grep -q "is device 0 again (the same device UUID): not opened twice" "$T/all.log"
check $? "the log says the second entry was skipped"
grep -Eq "ids .*uuid [0-9a-f]{32}" "$T/all.log"
check $? "vyrectl devices prints the UUID"

devices_of 0,1 "$T/list.json" "$T/list.log"
check $? "vyrectl devices answers a daemon with devices = 0,1"
"$PY" -c 'import json,sys
d=json.load(open(sys.argv[1]))
assert len(d) == 2 and d[0]["uuid"] == d[1]["uuid"], [(v["index"], v["uuid"]) for v in d]' \
	"$T/list.json"
check $? "devices = 0,1 opens both entries as written, one UUID"

if [ "$failures" != 0 ]; then
	sed 's/^/  | /' "$T/all.log" "$T/list.log"
fi
echo "# $checks checks, $failures failed"
[ "$failures" = 0 ]
