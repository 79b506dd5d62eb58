#!/usr/bin/env bash
# Start the INSTALLED vyred the way vyred.socket and vyred.service do, through
# systemd-socket-activate: the ExecStart= line of the installed service (its paths pointed into
# the DESTDIR), a socket made with the installed socket unit's SocketMode= and DirectoryMode=
# (under a temporary folder instead of /run), and a NOTIFY_SOCKET. Then a small Python client
# speaks protocol 1 through the activated socket: hello, then a dispatch of
# tests/programs/saxpy.json sent in its JSON form (the msgpack program map is the same tree),
# and checks the outputs. Last, SIGTERM must stop the daemon cleanly.
#
# The installed configuration file is used with every documented default uncommented, which
# also shows that each of those lines parses.
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
command -v systemd-socket-activate >/dev/null ||
	vy_skip "systemd-socket-activate is not installed (apt-get install systemd)"
py=$(vy_python_msgpack) || vy_skip "no python3 with msgpack (apt-get install python3-msgpack)"
vy_setup
vy_install

service=$dest$VYRED_UNITDIR/vyred.service
socket=$dest$VYRED_UNITDIR/vyred.socket
if [ ! -f "$service" ] || [ ! -f "$socket" ]; then
	echo "FAIL: vyred.service or vyred.socket is not installed in $VYRED_UNITDIR" >&2
	exit 1
fi
listen=$(vy_unit_value "$socket" ListenStream)
mode=$(vy_unit_value "$socket" SocketMode)
dirmode=$(vy_unit_value "$socket" DirectoryMode)
if [ -z "$listen" ] || [ -z "$mode" ] || [ -z "$dirmode" ]; then
	echo "FAIL: vyred.socket lacks ListenStream=, SocketMode= or DirectoryMode=" >&2
	exit 1
fi

config=$tmp/vyred.conf
sed -E 's/^#([a-z_]+ =)/\1/' "$dest$VYRED_SYSCONFDIR/vyred/vyred.conf" >"$config"

# ExecStart= as installed, with installed paths taken from the DESTDIR and the configuration
# file replaced by the uncommented copy; the disk cache goes to the temporary folder.
read -r -a exec_start <<<"$(vy_unit_value "$service" ExecStart)"
daemon=()
for w in "${exec_start[@]}"; do
	case $w in
	"$VYRED_SYSCONFDIR/vyred/vyred.conf") daemon+=("$config") ;;
	"$VYRED_PREFIX"/*) daemon+=("$dest$w") ;;
	*) daemon+=("$w") ;;
	esac
done
daemon+=(--cache-dir "$tmp/cache" --log-level debug)
backend=${VYRED_TEST_BACKEND:-}
if [ -n "$backend" ] && [ "$backend" != default ]; then
	daemon+=(--backend "$backend")
fi

run=$tmp/run
mkdir -m "$dirmode" "$run"
sock=$run/$(basename "$listen")
activate=(systemd-socket-activate -l "$sock" -E "NOTIFY_SOCKET=$tmp/notify")
# systemd-socket-activate gives the daemon only the variables it is told to pass.
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS VYRED_VULKAN_VALIDATION VK_ICD_FILENAMES \
	VK_DRIVER_FILES VK_LOADER_DEBUG; do
	[ -n "${!v:-}" ] && activate+=(-E "$v")
done

# The client stops the daemon itself; this is for a run cut short (a timeout, an interrupt).
stop_daemon() {
	local pid
	pid=$(cat "$tmp/pid" 2>/dev/null) || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
	fi
}
vy_cleanup_hook=stop_daemon

"$py" - "$sock" "$mode" "$VYRED_SOURCE_ROOT/tests/programs/saxpy.json" "$tmp" \
	"${activate[@]}" "${daemon[@]}" <<'PY'
import json, os, signal, socket, stat, struct, subprocess, sys, time
import msgpack

sock_path, mode, program_path, tmp = sys.argv[1:5]
argv = sys.argv[5:]
mode = int(mode, 8)
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what, file=sys.stderr)


notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(os.path.join(tmp, "notify"))
notes = []


def read_notes(wait_for, timeout):
    end = time.monotonic() + timeout
    while wait_for not in notes and time.monotonic() < end:
        notify.settimeout(max(0.01, end - time.monotonic()))
        try:
            notes.extend(notify.recv(4096).decode().split("\n"))
        except socket.timeout:
            pass
    return wait_for in notes


def call(conn, request):
    body = msgpack.packb(request)
    conn.sendall(struct.pack(">I", len(body)) + body)
    head = conn.recv(4, socket.MSG_WAITALL)
    if len(head) != 4:
        raise ConnectionError("the daemon closed the connection")
    (n,) = struct.unpack(">I", head)
    reply = msgpack.unpackb(conn.recv(n, socket.MSG_WAITALL))
    if reply.get("id") != request["id"]:
        raise ValueError("reply to id %r, expected %r" % (reply.get("id"), request["id"]))
    return reply


log = open(os.path.join(tmp, "vyred.log"), "wb")
proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
with open(os.path.join(tmp, "pid"), "w") as f:
    f.write(str(proc.pid))
try:
    # systemd-socket-activate binds and listens at once, then execs the daemon on the first
    # connection. SocketMode= is applied before that, as the socket unit does.
    for _ in range(1000):
        if os.path.exists(sock_path) or proc.poll() is not None:
            break
        time.sleep(0.01)
    os.chmod(sock_path, mode)
    st = os.lstat(sock_path)
    if not stat.S_ISSOCK(st.st_mode) or stat.S_IMODE(st.st_mode) != mode:
        fail("%s is %o, not a socket of mode %o" % (sock_path, st.st_mode, mode))
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(90)
    for _ in range(500):
        try:
            conn.connect(sock_path)
            break
        except ConnectionRefusedError:
            time.sleep(0.01)
    else:
        raise TimeoutError("nobody listens on %s" % sock_path)
    hello = call(conn, {"id": 1, "op": "hello", "protocol": 1, "client": "install-test"})
    if not hello.get("ok") or hello.get("protocol") != 1:
        fail("hello: %r" % hello)

    with open(program_path) as f:
        program = json.load(f)
    n, alpha = 1000, 2.0
    x = [float(i) for i in range(n)]
    y = [float(3 * i + 1) for i in range(n)]
    reply = call(conn, {
        "id": 2, "op": "dispatch", "program": program,
        "inputs": [struct.pack("<f", alpha), struct.pack("<%df" % n, *x),
                   struct.pack("<%df" % n, *y)],
    })
    if not reply.get("ok"):
        fail("dispatch: %r" % reply.get("error"))
    else:
        outputs = reply["outputs"]
        want = [alpha * a + b for a, b in zip(x, y)]
        if len(outputs) != 1 or list(struct.unpack("<%df" % n, outputs[0])) != want:
            fail("saxpy outputs differ from alpha * x + y")
    conn.close()

    if not read_notes("READY=1", 10):
        fail("no READY=1 notification: %r" % notes)
    if "MAINPID=%d" % proc.pid not in notes:
        fail("MAINPID is not the activated process %d: %r" % (proc.pid, notes))
    proc.send_signal(signal.SIGTERM)
    try:
        status = proc.wait(60)
    except subprocess.TimeoutExpired:
        status = None
        fail("the daemon did not stop within 60 s of SIGTERM")
    if status is not None and status != 0:
        fail("the daemon exited with status %d after SIGTERM" % status)
    if not read_notes("STOPPING=1", 1):
        fail("no STOPPING=1 notification: %r" % notes)
except Exception as e:
    fail("%s: %s" % (type(e).__name__, e))
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    log.close()
if failures:
    sys.stderr.write(open(os.path.join(tmp, "vyred.log")).read())
    sys.exit(1)
PY
status=$?
[ "$status" -eq 0 ] || vy_fail "the activated daemon did not serve the dispatch as it should"
vy_finish
