#!/usr/bin/env bash
# The vyred demo: start the daemon on a temporary socket and cache, run one example program
# through it twice (a pipeline-cache miss, then a hit), print the outputs and the cache
# counters, and stop the daemon with SIGTERM, checking that it exits cleanly.
#
#   daemon/demo.sh [VYRED_BINARY] [PROGRAM_JSON]
#
# The client is a page of Python speaking protocol 1 (python3-msgpack), as any language can.
# The daemon picks its backend as usual: Vulkan (lavapipe where there is no GPU), else the
# reference interpreter.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

vyred=${1:-build/daemon/vyred}
program=${2:-tests/programs/saxpy.json}

python=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import msgpack' 2>/dev/null; then
		python=$p
		break
	fi
done
if [ -z "$python" ]; then
	echo "demo: no python3 with msgpack. Fix: apt-get install python3-msgpack" >&2
	exit 1
fi

tmp=$(mktemp -d /tmp/vyred-demo-XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "== starting $vyred on $tmp/vyred.sock"
"$vyred" --config /dev/null --socket "$tmp/vyred.sock" --cache-dir "$tmp/cache" \
	2>"$tmp/vyred.log" &
pid=$!

"$python" - "$tmp/vyred.sock" "$program" <<'PY'
import array, json, socket, struct, sys, time
import msgpack

path, program_file = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_UNIX)
for _ in range(600):
    try:
        sock.connect(path)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("demo: vyred did not start listening")

next_id = 0
def call(op, **fields):
    global next_id
    next_id += 1
    body = msgpack.packb(dict(id=next_id, op=op, **fields), use_bin_type=True)
    sock.sendall(struct.pack(">I", len(body)) + body)
    def read(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                sys.exit("demo: vyred closed the connection")
            data += chunk
        return data
    (length,) = struct.unpack(">I", read(4))
    reply = msgpack.unpackb(read(length), raw=False)
    if not reply["ok"]:
        e = reply["error"]
        sys.exit(f"demo: {op} failed: {e['code']}: {e['message']}")
    return reply

hello = call("hello", protocol=1, client="demo")
dev = hello["devices"][0]
print(f"== {hello['server']}, device 0: {dev['backend']} on {dev['name']}")

program = json.load(open(program_file))
# Inputs for every input buffer, in binding order (read_only, read_write and uniform buffers).
inputs, shown = [], []
for b in sorted(program["buffers"], key=lambda b: b["binding"]):
    if b["access"] not in ("read_only", "read_write", "uniform") or b.get("output"):
        continue
    n = b["count"] or 8
    code = {"f32": "f", "i32": "i"}.get(b["type"], "I")
    values = [2.0] if b["access"] == "uniform" and n == 1 else [float(i) for i in range(n)]
    if b["name"] == "y":
        values = [100.0 + 10 * i for i in range(n)]
    values = array.array(code, [v if code == "f" else int(v) for v in values])
    inputs.append(values.tobytes())
    shown.append(f"{b['name']} = {list(values)}")
print(f"== {program.get('name', program_file)}: " + "; ".join(shown))

# Outputs come back in binding order: output, write_only, read_write and live_out buffers.
out_codes = [{"f32": "f", "i32": "i"}.get(b["type"], "I")
             for b in sorted(program["buffers"], key=lambda b: b["binding"])
             if b["access"] != "workgroup" and (b.get("output") or b.get("live_out") or
                                                b["access"] in ("write_only", "read_write"))]
for attempt in (1, 2):
    reply = call("dispatch", program=program, inputs=inputs)
    outs = [list(array.array(code, data)) if data is not None else None
            for code, data in zip(out_codes, reply["outputs"])]
    t = reply["timing"]
    print(f"dispatch {attempt}: cache={reply['cache']:4} compile={t['compile_ns'] / 1e6:.1f} ms "
          f"wall={t['wall_ns'] / 1e6:.2f} ms outputs={outs}")

stats = call("stats")
pc = stats["pipeline_cache"]
print(f"== pipeline cache: {pc['entries']} entries, {pc['misses']} miss, {pc['hits']} hit, "
      f"{pc['disk_hits']} from disk, compile p50 {pc['compile_ns_p50'] / 1e6:.1f} ms")
sock.close()
PY

echo "== stopping vyred (SIGTERM)"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
sed 's/^<[0-9]>/  log: /' "$tmp/vyred.log"
if [ "$status" -ne 0 ]; then
	echo "demo: vyred exited with status $status" >&2
	exit 1
fi
echo "== vyred exited cleanly"
