#!/usr/bin/env bash
# vyrectl against a real vyred: every command, its output checked (JSON parsed, Prometheus text
# checked line by line by promcheck.py, run's outputs compared with numbers computed here), the
# exit statuses of failures (usage 2, invalid program 3, file 4, no daemon 5, daemon error 1) and
# --help of every command.
#
# Environment: VYRED_BIN (the daemon), VYRECTL (the tool), VYRECTL_UNITS (the unit tests of its
# renderings, run first), VYRED_TEST_BACKEND (reference, or default for the daemon's own choice),
# VYRED_TEST_EXPECT_BACKEND (the backend a default daemon must run on: vulkan when unset), PYTHON
# (a python3 with the msgpack package: a second client with an awkward name holds a connection and
# a named buffer, which tests label escaping and the buffers table; without msgpack the script
# fails).
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
: "${VYRED_BIN:?set VYRED_BIN to the vyred binary}"
: "${VYRECTL:?set VYRECTL to the vyrectl binary}"
: "${VYRECTL_UNITS:?set VYRECTL_UNITS to the test_vyrectl_units binary}"
PY=${PYTHON:-python3}
backend=${VYRED_TEST_BACKEND:-default}
saxpy=$src/tests/programs/saxpy.json

T=$(mktemp -d "${TMPDIR:-/tmp}/vyrectl-test.XXXXXX")
sock=$T/vyred.sock
daemon_pid=
helper_pid=
checks=0
failures=0
started=$(date +%s%N)

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	[ -n "$helper_pid" ] && kill "$helper_pid" 2>/dev/null
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT

fail() {
	failures=$((failures + 1))
	echo "FAIL: $*" >&2
}

# ctl RC ARGS...: run vyrectl, stdout to $T/out and stderr to $T/err, and require exit status RC.
ctl() {
	local want=$1
	shift
	last="vyrectl $*"
	checks=$((checks + 1))
	"$VYRECTL" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" != "$want" ]; then
		fail "$last exited $rc, expected $want"
		sed 's/^/  stdout| /' "$T/out" | head -20 >&2
		sed 's/^/  stderr| /' "$T/err" | head -20 >&2
		return 1
	fi
	return 0
}

# d RC ARGS...: ctl against the test daemon.
d() {
	local want=$1
	shift
	ctl "$want" --socket "$sock" "$@"
}

# grep_in FILE PATTERN: the output of the last command matches an extended regex.
grep_in() {
	checks=$((checks + 1))
	if ! grep -Eq -- "$2" "$T/$1"; then
		fail "$last: $1 does not match /$2/"
		sed "s/^/  $1| /" "$T/$1" | head -20 >&2
	fi
}

# holds MESSAGE COMMAND...: one check that COMMAND succeeds about the last vyrectl run.
holds() {
	local msg=$1
	shift
	checks=$((checks + 1))
	"$@" || fail "$last: $msg"
}

# json PYTHON [ARGS...]: parse the last stdout as JSON into `d` and run the assertions in PYTHON
# (ARGS are sys.argv[2:]).
json() {
	checks=$((checks + 1))
	if ! "$PY" -c "import json, sys
d = json.load(open(sys.argv[1]))
$1" "$T/out" "${@:2}" 2>"$T/pyerr"; then
		fail "$last: JSON check failed: $1"
		sed 's/^/  | /' "$T/pyerr" >&2
		head -c 2000 "$T/out" | sed 's/^/  stdout| /' >&2
	fi
}

# --- vyrectl's renderings on their own ---------------------------------------------------------

checks=$((checks + 1))
if ! "$VYRECTL_UNITS" >"$T/units" 2>&1; then
	fail "the unit tests of vyrectl's renderings failed:"
	sed 's/^/  | /' "$T/units" >&2
fi

# --- the daemon --------------------------------------------------------------------------------

: >"$T/vyred.conf"
args=(--config "$T/vyred.conf" --socket "$sock" --cache-dir "$T/cache")
[ "$backend" != default ] && args+=(--backend "$backend")
"$VYRED_BIN" "${args[@]}" >"$T/vyred.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 300); do
	"$VYRECTL" --socket "$sock" ping --count 1 >/dev/null 2>&1 && break
	if ! kill -0 "$daemon_pid" 2>/dev/null; then
		echo "vyred exited at start; its log:" >&2
		cat "$T/vyred.log" >&2
		exit 1
	fi
	sleep 0.1
done

# --- help and usage ------------------------------------------------------------------------------

commands="status stats devices clients buffers graphs cache ping run compile check graph"
ctl 0 --help && grep_in out '^exit status:' && grep_in out '  5  no daemon'
for c in $commands; do
	grep_in out "^  $c "
done
ctl 0 help && grep_in out '^usage: vyrectl'
for c in $commands; do
	ctl 0 "$c" --help && grep_in out "^usage: vyrectl $c" && grep_in out 'Exit statuses'
	ctl 0 help "$c" && grep_in out "^usage: vyrectl $c"
	ctl 0 "$c" -h && grep_in out "^usage: vyrectl $c"
done
ctl 0 --version && grep_in out '^vyrectl [0-9]+\.[0-9]+\.[0-9]+'
ctl 2
ctl 2 frobnicate && grep_in err 'unknown command'
ctl 2 help frobnicate
ctl 2 --bogus status
ctl 2 stats --bogus && grep_in err 'Fix: see vyrectl stats --help'
ctl 2 status extra-argument
ctl 2 ping --count 0
ctl 2 ping --count many
ctl 2 ping --count
ctl 2 stats --json --prometheus
ctl 2 check --json "$saxpy"
ctl 2 check
ctl 2 cache
ctl 2 cache frobnicate
ctl 2 --timeout -1 status
ctl 2 run "$saxpy" --grid 0 -i params=1 -i x=1 -i y=1
ctl 2 run "$saxpy" --grid 1,2,3,4 -i params=1 -i x=1 -i y=1
ctl 2 run "$saxpy" --format octal -i params=1 -i x=1 -i y=1
ctl 2 run "$saxpy" -i params=1 -i x=1 && grep_in err 'no --input for buffer y'
ctl 2 run "$saxpy" -i params=1 -i x=1 -i y=1 -i z=1 && grep_in err '"z" is not in the program'
ctl 2 run "$saxpy" -i params=1 -i params=2 -i x=1 -i y=1 && grep_in err 'given twice'
ctl 2 run "$saxpy" -i params=f32:abc -i x=1 -i y=1 && grep_in err 'not an f32 number'
ctl 2 run "$saxpy" -i params=u32:-1 -i x=1 -i y=1
ctl 2 run "$saxpy" -i params=hex:abc -i x=1 -i y=1
ctl 2 run "$saxpy" -i noequals

# --- no daemon: 5, with a Fix line ----------------------------------------------------------------

for c in status "stats --prometheus" devices clients buffers graphs "cache list" ping "compile $saxpy"; do
	# shellcheck disable=SC2086
	ctl 5 --socket "$T/nobody.sock" $c && grep_in err '^Fix: '
done
ctl 5 --socket "$T/nobody.sock" run "$saxpy" -i params=1 -i x=1 -i y=1 && grep_in err 'nobody.sock'
checks=$((checks + 1))
VYRED_SOCKET=$T/nobody.sock "$VYRECTL" ping >/dev/null 2>"$T/err"
[ $? = 5 ] || fail "ping with \$VYRED_SOCKET unreachable did not exit 5"
checks=$((checks + 1))
VYRED_SOCKET=$sock "$VYRECTL" ping --count 2 >/dev/null 2>"$T/err" ||
	fail "ping through \$VYRED_SOCKET failed: $(cat "$T/err")"

# --- programs that fail: 3 (invalid), 4 (files) --------------------------------------------------

cat >"$T/bad.json" <<'EOF'
{"vyre": 1, "name": "bad", "workgroup_size": [64, 1, 1],
 "buffers": [{"name": "x", "binding": 0, "access": "read_only", "type": "u32", "count": 4}],
 "entry": [["store", "x", ["u32", 0], ["u32", 1]]]}
EOF
echo '{"vyre": 1, "buffers": [' >"$T/broken.json"
ctl 3 check "$T/bad.json" && grep_in err 'Fix:'
ctl 3 check "$T/broken.json"
d 3 compile "$T/bad.json" && grep_in err 'not valid' && grep_in err 'Fix:'
d 3 run "$T/bad.json" -i x=1,2,3,4 && grep_in err 'not valid'
d 3 compile "$T/broken.json"
ctl 4 check "$T/missing.json" && grep_in err 'Fix:'
d 4 compile "$T/missing.json"
d 4 run "$T/missing.json" -i x=1
d 4 run "$saxpy" -i params=1 -i x=@"$T/missing.bin" -i y=1 && grep_in err 'missing.bin'
ctl 0 check "$saxpy" && grep_in out '^valid +yes'
saxpy_id=$(sed -n 's/^id  *//p' "$T/out")

# --- the daemon answers an error: 1, with its message and Fix -------------------------------------

d 1 run "$saxpy" -i params=1,2 -i x=1 -i y=1 && grep_in err 'BAD_REQUEST' && grep_in err '^Fix: '

# --- a second client with an awkward name, holding a named buffer ---------------------------------

awkward=$'ctl "quoted" \\ back\nslash'
if "$PY" -c 'import msgpack' 2>/dev/null; then
	PYTHONPATH=$src/client/python "$PY" - "$sock" "$awkward" >"$T/helper.out" 2>&1 <<'EOF' &
import sys, time
import vyre
c = vyre.connect(sys.argv[1], name=sys.argv[2])
c.alloc(4096, name="vyrectl-test")
print("ready", flush=True)
time.sleep(120)
EOF
	helper_pid=$!
	for _ in $(seq 100); do
		grep -q ready "$T/helper.out" 2>/dev/null && break
		sleep 0.05
	done
	grep -q ready "$T/helper.out" || fail "the python helper did not connect: $(cat "$T/helper.out")"
	have_helper=1
else
	fail "$PY has no msgpack, so label escaping and named buffers cannot be checked. Fix: apt-get install python3-msgpack"
	have_helper=0
fi

# --- run and compile -----------------------------------------------------------------------------

# saxpy on 1000 elements: y = 1.5 * x + y with x = i / 4 and y = i - 500, exact in f32.
"$PY" - "$T" <<'EOF'
import struct, sys
t = sys.argv[1]
n = 1000
x = [i * 0.25 for i in range(n)]
y = [float(i - 500) for i in range(n)]
out = [1.5 * x[i] + y[i] for i in range(n)]
open(t + "/x.bin", "wb").write(struct.pack("<%df" % n, *x))
open(t + "/y.hex", "w").write(struct.pack("<%df" % n, *y).hex())
open(t + "/want.bin", "wb").write(struct.pack("<%df" % n, *out))
open(t + "/want.hex", "w").write(struct.pack("<%df" % n, *out).hex())
open(t + "/want.txt", "w").write(" ".join("%g" % v for v in out))
grid = out[:256] + y[256:]
open(t + "/want_grid1.txt", "w").write(" ".join("%g" % v for v in grid))
EOF
yhex=$(cat "$T/y.hex")
inputs=(-i params=f32:1.5 -i x=@"$T/x.bin" -i "y=hex:$yhex")

d 0 compile "$saxpy" && grep_in out '^cache +(miss|disk|hit)' && grep_in out "^id +$saxpy_id\$"
d 0 compile "$saxpy" --json &&
	json "assert d['program_id'] == '$saxpy_id' and d['cache'] == 'hit', d
assert d['program'] == 'saxpy' and d['device'] == 0 and d['compile_ns'] == 0"

d 0 run "$saxpy" "${inputs[@]}" --json &&
	json "want = [float(v) for v in open('$T/want.txt').read().split()]
o = d['outputs']
assert len(o) == 1 and o[0]['name'] == 'y' and o[0]['type'] == 'f32' and o[0]['bytes'] == 4000
assert o[0]['values'] == want, [(i, a, b) for i, (a, b) in enumerate(zip(o[0]['values'], want)) if a != b][:5]
assert d['cache'] in ('hit', 'disk', 'miss') and d['program'] == 'saxpy'
assert set(d['timing']) >= {'wall_ns', 'queue_ns', 'compile_ns', 'device_ns'}"
d 0 run "$saxpy" "${inputs[@]}" && grep_in out '^y f32\[1000\]$' && grep_in err 'cache (hit|disk|miss)'
holds "the table of y differs from 1.5 * x + y" "$PY" -c "import sys
got = [float(v) for l in open(sys.argv[1]).read().splitlines()[1:] for v in l.split()]
want = [float(v) for v in open(sys.argv[2]).read().split()]
sys.exit(got != want)" "$T/out" "$T/want.txt"
d 0 run "$saxpy" "${inputs[@]}" --format raw &&
	holds "stdout is not the bytes of 1.5 * x + y" cmp -s "$T/out" "$T/want.bin"
d 0 run "$saxpy" "${inputs[@]}" --format hex && tail -n +2 "$T/out" | tr -d ' \n' >"$T/got.hex" &&
	holds "the hex differs from 1.5 * x + y" cmp -s "$T/got.hex" "$T/want.hex"
d 0 run "$saxpy" "${inputs[@]}" --format u32 --json &&
	json "import struct
want = list(struct.unpack('<1000I', open('$T/want.bin', 'rb').read()))
assert d['outputs'][0]['values'] == want and d['outputs'][0]['format'] == 'u32'"
d 0 run "$saxpy" "${inputs[@]}" --format hex --json &&
	json "assert d['outputs'][0]['hex'] == open('$T/want.hex').read()"
d 0 run "$saxpy" "${inputs[@]}" --grid 1 --json &&
	json "want = [float(v) for v in open('$T/want_grid1.txt').read().split()]
assert d['outputs'][0]['values'] == want"
# The same numbers from typed and untyped lists: 0x3fc00000 is 1.5f.
d 0 run "$saxpy" -i params=u32:0x3fc00000 -i x=0,0.25,0.5,-1 -i y=i32:0,0,0,0 --format i32 --json &&
	json "import struct
want = [struct.unpack('<i', struct.pack('<f', v))[0] for v in (0.0, 0.375, 0.75, -1.5)]
assert d['outputs'][0]['values'] == want, d['outputs']"
d 0 run "$saxpy" -i params=1 -i x=f32:nan,inf,-0,1e-45 -i y=0,0,0,0 --json &&
	json "assert d['outputs'][0]['values'] == ['nan', 'inf', 0.0, 0.0], d['outputs'][0]['values']"
# An empty input is zero elements: the output is empty too.
d 0 run "$saxpy" -i params=2 -i x=f32: -i y= --json &&
	json "assert d['outputs'][0]['bytes'] == 0 and d['outputs'][0]['values'] == []"

# --- status, stats, devices ----------------------------------------------------------------------

d 0 status && grep_in out '^vyred [0-9.]+ \(protocol 1\), pid [0-9]+, running, up ' &&
	grep_in out '^devices +[1-9]' && grep_in out '^cache +hit rate [0-9.]+%' &&
	grep_in out '^queue +depth [0-9]+' && cp "$T/out" "$T/status.txt"
d 0 status --json &&
	json "assert d['protocol'] == 1 and d['state'] == 'running' and d['pid'] > 0
assert d['server'].startswith('vyred ') and d['version'] and d['socket'] == '$sock'
assert len(d['devices']) >= 1 and all('name' in v and 'backend' in v for v in d['devices'])
assert d['clients'] >= 1 and d['queue_depth'] >= 0 and d['requests'] > 0
pc = d['pipeline_cache']
assert pc['hits'] >= 1 and 0 < pc['hit_rate'] <= 1 and pc['hit_rate'] == pc['hits'] / (pc['hits'] + pc['misses'])"
# The devices are of the backend the run expects: a default daemon that fell back to the reference
# fails here unless VYRED_TEST_EXPECT_BACKEND says the machine has no Vulkan device.
want_backend=reference
[ "$backend" != reference ] && want_backend=${VYRED_TEST_EXPECT_BACKEND:-vulkan}
json "assert [v['backend'] for v in d['devices']] == ['$want_backend'] * len(d['devices']), d['devices']"

d 0 stats && grep_in out '^DEVICES' && grep_in out '^CACHES' && grep_in out '^pipeline_cache ' &&
	grep_in out '^inbound: .* held \([0-9]+ waits\), .* kept for the next frame; [0-9]+ frames reused, [0-9]+ imported$' &&
	grep_in out '^CLIENTS' && grep_in out '^REQUESTS' && grep_in out '^dispatch +[0-9]+'
d 0 stats --json &&
	json "for k in ('daemon', 'devices', 'pipeline_cache', 'spec_cache', 'program_cache', 'resident',
          'clients', 'queue', 'requests', 'latency'):
    assert k in d, k
assert d['requests']['by_op']['dispatch'] >= 8 and d['requests']['by_error']['BAD_REQUEST'] >= 1
assert d['latency']['dispatch']['count'] >= 8 and d['pipeline_cache']['entries'] >= 1
assert any(c['self'] and c['name'] == 'vyrectl' for c in d['clients']['list'])"
# The hit rate that status printed is the one the cache counters give (no compile in between).
json "import re
m = re.search(r'^cache +hit rate ([0-9.]+)%: [0-9]+ pipelines, ([0-9]+) hits, ([0-9]+) misses',
              open(sys.argv[2]).read(), re.M)
pc = d['pipeline_cache']
assert m and (int(m[2]), int(m[3])) == (pc['hits'], pc['misses']), (m and m[0], pc)
assert m[1] == '%.1f' % (100 * pc['hits'] / (pc['hits'] + pc['misses'])), (m[0], pc)" "$T/status.txt"
cp "$T/out" "$T/stats.json"
if [ "$have_helper" = 1 ]; then
	json "assert any(c['name'] == sys.argv[2] for c in d['clients']['list'])" "$awkward"
fi

d 0 stats --prometheus
checks=$((checks + 1))
expect=(--expect 'vyred_requests_total{op="dispatch"}>=8'
	--expect 'vyred_request_errors_total{code="BAD_REQUEST"}>=1'
	--expect 'vyred_request_errors_total{code="BUSY"}>=0'
	--expect 'vyred_request_duration_seconds_count{op="dispatch"}>=8'
	--expect 'vyred_request_duration_seconds{op="dispatch",quantile="0.5"}>0'
	--expect 'vyred_request_duration_seconds{op="dispatch",quantile="0.99"}<60'
	--expect 'vyred_device_info{device="0"}==1'
	--expect 'vyred_device_dispatches_total{device="0"}>=8'
	--expect 'vyred_device_busy_seconds_total{device="0"}>0'
	--expect 'vyred_pipeline_cache_hits_total>=1'
	--expect 'vyred_pipeline_cache_compile_seconds_count>=0'
	--expect 'vyred_daemon_uptime_seconds>0'
	--expect 'vyred_inbound_kept_bytes>=0'
	--expect 'vyred_frames_reused_total>=0'
	--expect 'vyred_clients>=1'
	--expect 'vyred_client_info{name="vyrectl",state="open"}==1'
	--expect 'vyred_client_requests_total>=1')
# The same durations as stats --json gave them, in seconds: no dispatch ran in between.
while IFS= read -r e; do
	expect+=(--expect "$e")
done < <("$PY" - "$T/stats.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
secs = lambda ns: "%d.%09d" % divmod(ns, 10**9)
lat = d["latency"]["dispatch"]
print('vyred_request_duration_seconds{op="dispatch",quantile="0.5"}==' + secs(lat["p50_ns"]))
print('vyred_request_duration_seconds{op="dispatch",quantile="0.99"}==' + secs(lat["p99_ns"]))
print('vyred_request_duration_max_seconds{op="dispatch"}==' + secs(lat["max_ns"]))
print('vyred_device_busy_seconds_total{device="0"}==' + secs(d["devices"][0]["busy_ns"]))
EOF
)
if [ "$have_helper" = 1 ]; then
	expect+=(--expect 'vyred_client_info{name="ctl \"quoted\" \\ back\nslash"}==1'
		--expect 'vyred_resident_named_buffers>=1'
		--expect 'vyred_resident_bytes>=4096')
fi
if ! "$PY" "$here/promcheck.py" "$T/out" "${expect[@]}" >"$T/prom" 2>&1; then
	fail "stats --prometheus breaks the exposition format:"
	sed 's/^/  | /' "$T/prom" >&2
else
	prom_figures=$(cat "$T/prom")
fi

d 0 devices && grep_in out '^device 0: ' && grep_in out '^  float +fma fused: (yes|no)'
d 0 devices --json &&
	json "assert isinstance(d, list) and d[0]['index'] == 0
assert {'name', 'backend', 'driver', 'float', 'memory_total', 'dispatches', 'busy_ns'} <= set(d[0])"

# --- clients, buffers, cache, ping -----------------------------------------------------------------

d 0 clients && grep_in out '^ +id +pid +uid +name' && grep_in out '^ *\*[0-9]+ .* vyrectl '
d 0 clients --json &&
	json "me = [c for c in d if c['self']]
assert len(me) == 1 and me[0]['name'] == 'vyrectl' and me[0]['requests'] >= 1"
d 0 graphs && grep_in out '^graph +name +steps +inputs +outputs'
d 0 graphs --json && json "assert d == []"

# --- graph run: three steps of y = 2x + 1 through temps, as one request ----------------------------

chain=$src/tests/vyrectl/graph/chain.json
d 0 graph run "$chain" -i 0=1,2,3,4 && grep_in out '^output 0 u32\[4\]' &&
	grep_in out '^  15 23 31 39$' && grep_in err '3 steps, 2 barriers'
d 0 graph run "$chain" -i 0=0,0,0,0 --json &&
	json "assert d['outputs'][0]['values'] == [7, 7, 7, 7] and d['steps'] == 3"
d 2 graph run "$chain" && grep_in err 'no --input for graph input 0 \(u32, bound to x\)'
d 2 graph run "$chain" -i 1=1,2,3,4 && grep_in err 'a graph input \(0 to 0\)'
d 2 graph frobnicate "$chain" && grep_in err 'is "run"'
d 1 graph run "$chain" -i 0=1,2,3 && grep_in err 'inputs\[0\]' && grep_in err 'Fix:'
echo '{"steps": []}' >"$T/empty-graph.json"
d 3 graph run "$T/empty-graph.json" && grep_in err '1 to 256 "steps"'
d 0 graphs --json && json "assert d == []"
d 0 buffers && grep_in out '^handle +size +name'
d 0 buffers --json && json "assert isinstance(d, list)"
if [ "$have_helper" = 1 ]; then
	json "b = [b for b in d if b['name'] == 'vyrectl-test']
assert len(b) == 1 and b[0]['size'] == 4096 and b[0]['handle'] > 0 and not b[0]['lost']"
	d 0 buffers && grep_in out '^0x[0-9a-f]{16} +4.00 KiB +vyrectl-test '
fi

d 0 cache list && grep_in out '^PIPELINES \([1-9]' && grep_in out "^$saxpy_id +saxpy "
d 0 cache list --json &&
	json "assert any(p['program_id'] == '$saxpy_id' and p['state'] == 'ready' for p in d['pipelines'])
assert any(p['program_id'] == '$saxpy_id' for p in d['programs'])"
d 0 cache clear && grep_in out '^cleared [1-9][0-9]* pipelines and [1-9][0-9]* programs$'
d 0 cache list --json && json "assert d['pipelines'] == [] and d['programs'] == []"
d 0 cache clear --json && json "assert d == {'pipelines': 0, 'programs': 0}"
d 0 run "$saxpy" "${inputs[@]}" --json && json "assert d['cache'] in ('disk', 'miss'), d['cache']"

d 0 ping --count 20 &&
	grep_in out '^20 pings to .*: min [0-9.]+ µs, p50 [0-9.]+ µs, p99 [0-9.]+ µs, max [0-9.]+ µs$'
d 0 ping -n 25 --json &&
	json "assert d['count'] == 25 and d['socket'] == '$sock'
assert 0 < d['min_us'] <= d['p50_us'] <= d['p99_us'] <= d['max_us']
assert d['min_us'] <= d['mean_us'] <= d['max_us']"
# The global options work before the command as well as after it.
ctl 0 --json --socket "$sock" ping -n 3 && json "assert d['count'] == 3"
ctl 0 --socket="$sock" --timeout 10 status

elapsed_ms=$((($(date +%s%N) - started) / 1000000))
elapsed=$(printf '%d.%03d' $((elapsed_ms / 1000)) $((elapsed_ms % 1000)))
if [ "$failures" -gt 0 ]; then
	echo "vyrectl ($backend backend): $failures of $checks checks failed" >&2
	echo "--- vyred log (tail) ---" >&2
	tail -20 "$T/vyred.log" >&2
	exit 1
fi
echo "vyrectl ($backend backend): $checks checks passed in ${elapsed}s"
[ -n "${prom_figures:-}" ] && echo "$prom_figures"
exit 0
