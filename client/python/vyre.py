"""A client of vyred, the vyre GPU dispatch daemon, in pure Python.

It speaks protocol version 1 as docs/protocol.md describes it, with nothing but the standard
library and the msgpack package (Debian: python3-msgpack):

    import vyre
    with vyre.connect() as vy:                  # path, else $VYRED_SOCKET, else the default
        out = vy.dispatch(program, [vyre.pack_f32([2.0]), x_bytes, y_bytes])
        y = vyre.unpack_f32(out["outputs"][0])

Every request method waits for its reply and returns the result fields as a dict (or the one
value that matters: a handle, bytes); with wait=False it returns a Pending at once instead, so
many requests can be in flight on one connection and their replies are matched by id. A failed
request raises VyError, which carries the daemon's error object (code, num, message, fix, retry,
at, errors). Errors found in the client have codes of their own, numbered from 2001 as in the C
library: CONNECT_FAILED and DISCONNECTED (raised as VyConnectionError, a VyError that is also a
ConnectionError), BAD_REPLY, INVALID_ARGUMENT, SYSTEM_ERROR and NO_REPLY.

A Client belongs to one thread at a time; open one connection per thread.
"""

import array
import fcntl
import json
import mmap
import os
import select
import socket
import struct
import sys
import time

import msgpack

PROTOCOL = 1
DEFAULT_SOCKET = "/run/vyred/vyred.sock"

_HEADER = struct.Struct(">I")
_READ_CHUNK = 1 << 20
# shm_attach requires F_SEAL_SHRINK (the daemon maps the region and must never fault on it); the
# other two seals keep the size fixed for good, which is what a region of a given size means.
_SHM_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


# The client's own error codes: number and retry class (the same as libvyre's).
CLIENT_ERRORS = {
    "CONNECT_FAILED": (2001, "later"),
    "DISCONNECTED": (2002, "reconnect"),
    "BAD_REPLY": (2003, "reconnect"),
    "INVALID_ARGUMENT": (2004, "after_fix"),
    "SYSTEM_ERROR": (2005, "later"),
    "NO_REPLY": (2006, "later"),
}


class VyError(Exception):
    """An error reply of the daemon, or an error found in the client (CLIENT_ERRORS).

    code: the wire name ("INVALID_PROGRAM"); num: its number (1006); message: what failed, ending
    with the Fix line; fix: the fix alone; retry: "never", "later", "after_fix" or "reconnect";
    at: where in the request or program (None when there is no location); errors: one VyError
    per problem where validation found several (else empty); request_id: the id of the request.
    """

    def __init__(self, code, message, fix="", num=0, retry="never", at=None, errors=(),
                 request_id=None):
        super().__init__(message)
        self.code = code
        self.num = num
        self.message = message
        self.fix = fix
        self.retry = retry
        self.at = at
        self.errors = list(errors)
        self.request_id = request_id

    @classmethod
    def from_wire(cls, obj, request_id=None):
        """The exception for an error object as the daemon sends it."""
        if not isinstance(obj, dict):
            obj = {}
        return cls(
            code=obj.get("code", "INTERNAL"),
            message=obj.get("message", "the daemon sent an error without a message"),
            fix=obj.get("fix", ""),
            num=obj.get("num", 1999),
            retry=obj.get("retry", "later"),
            at=obj.get("at"),
            errors=[cls.from_wire(e, request_id) for e in obj.get("errors") or ()],
            request_id=request_id,
        )

    def __str__(self):
        where = " (at %s)" % self.at if self.at else ""
        return "%s%s: %s" % (self.code, where, self.message)

    @classmethod
    def client(cls, code, message, fix, request_id=None):
        """An error found in the client; `code` is a key of CLIENT_ERRORS."""
        num, retry = CLIENT_ERRORS[code]
        return cls(code, "%s. Fix: %s" % (message, fix), fix=fix, num=num, retry=retry,
                   request_id=request_id)


class VyConnectionError(VyError, ConnectionError):
    """CONNECT_FAILED (nobody answers at the socket) or DISCONNECTED (the connection broke or
    was closed). Resident buffers and shm regions of a broken connection are gone."""


def socket_path(path=None):
    """The socket a client connects to: `path`, else $VYRED_SOCKET, else the default."""
    return path or os.environ.get("VYRED_SOCKET") or DEFAULT_SOCKET


def connect(path=None, name=None, timeout=None):
    """Open a connection and send hello; returns a Client (usable as a context manager)."""
    return Client(path, name, timeout)


def resident(handle):
    """A dispatch input naming a resident buffer."""
    return {"resident": handle}


def pack_f32(values):
    """Little-endian IEEE-754 binary32 bytes of a sequence of numbers."""
    return struct.pack("<%df" % len(values), *values)


def unpack_f32(data):
    """The floats of little-endian binary32 bytes."""
    return list(struct.unpack("<%df" % (len(data) // 4), data))


def pack_u32(values):
    return struct.pack("<%dI" % len(values), *values)


def unpack_u32(data):
    return list(struct.unpack("<%dI" % (len(data) // 4), data))


def pack_i32(values):
    return struct.pack("<%di" % len(values), *values)


def unpack_i32(data):
    return list(struct.unpack("<%di" % (len(data) // 4), data))


class Pending:
    """A request sent and not yet answered. result() waits for the reply and returns what the
    request method would have returned, or raises its VyError."""

    def __init__(self, client, request_id, convert):
        self._client = client
        self.id = request_id
        self._convert = convert

    def done(self):
        """Whether the reply has arrived (reads what the socket holds, without waiting)."""
        return self._client._poll(self.id)

    def result(self, timeout=None):
        reply = self._client._wait(self.id, timeout)
        return self._convert(reply) if self._convert else reply


class ShmRegion:
    """A sealed memfd attached to one connection with shm_attach.

    Write the input bytes into `buf` (a writable mmap of `size` bytes), then pass
    region.input(offset, length) as a dispatch input: the daemon reads the bytes in place.
    Do not change bytes that a dispatch still in flight reads. detach() ends the region.
    """

    def __init__(self, client, region, size, buf):
        self.client = client
        self.region = region
        self.size = size
        self.buf = buf

    def write(self, data, offset=0):
        data = memoryview(data).cast("B")
        if offset < 0 or offset + len(data) > self.size:
            raise ValueError("%d bytes at offset %d do not fit a region of %d bytes"
                             % (len(data), offset, self.size))
        self.buf[offset:offset + len(data)] = data

    def input(self, offset=0, length=None):
        """The dispatch input {"shm": [region, offset, length]}; length defaults to the rest."""
        if length is None:
            length = self.size - offset
        return {"shm": [self.region, offset, length]}

    def detach(self):
        """shm_detach, then unmap; dispatches already sent still read the daemon's mapping."""
        if self.buf is None:
            return
        try:
            self.client.shm_detach(self.region)
        finally:
            self.buf.close()
            self.buf = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


def _program_field(program):
    """The wire form of a program given as a dict (the JSON form as Python data) or JSON text."""
    if isinstance(program, (str, bytes, bytearray)):
        return json.loads(program)
    if isinstance(program, dict):
        return program
    raise TypeError("a program is a dict or JSON text, not %s" % type(program).__name__)


def _input_field(value):
    if isinstance(value, ShmRegion):
        return value.input()
    if isinstance(value, dict):
        return value
    if isinstance(value, (bytes, bytearray)):
        return value
    try:
        return memoryview(value).cast("B")
    except TypeError:
        raise TypeError("an input is bytes, a buffer object, vyre.resident(handle) or "
                        "region.input(...), not %s" % type(value).__name__) from None


def _drop(reply):
    return None


class Client:
    """One connection to vyred. See the module's description."""

    def __init__(self, path=None, name=None, timeout=None):
        self.path = socket_path(path)
        self.timeout = timeout
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self._sock.connect(self.path)
        except OSError as e:
            self._sock.close()
            raise VyConnectionError.client(
                "CONNECT_FAILED",
                "cannot connect to vyred at %s: %s" % (self.path, e.strerror or e),
                "start vyred, or set VYRED_SOCKET to the path of its socket") from e
        self._next_id = 1
        self._rbuf = bytearray()
        self._replies = {}
        self._outstanding = set()
        self._broken = None
        # Until hello answers, one request at a time; then the daemon's own limit.
        self._window = 1
        self.max_frame = 256 << 20
        if not name:
            # The program's name, cut to the 128 bytes hello accepts.
            base = os.path.basename(sys.argv[0] if sys.argv else "") or "python"
            name = base.encode()[:128].decode(errors="ignore")
        try:
            self.hello_info = self.call("hello", protocol=PROTOCOL, client=name)
        except BaseException:
            self._sock.close()
            raise
        limits = self.hello_info.get("limits", {})
        self._window = max(1, int(limits.get("max_inflight", 1)))
        self.max_frame = int(limits.get("max_frame", self.max_frame))

    # --- the answer to hello ---

    @property
    def server(self):
        return self.hello_info.get("server")

    @property
    def devices(self):
        return self.hello_info.get("devices", [])

    @property
    def limits(self):
        return self.hello_info.get("limits", {})

    # --- generic requests ---

    def submit(self, op, fds=(), convert=None, **fields):
        """Send one request without waiting; returns its Pending. Before sending, waits while
        the connection already has limits.max_inflight requests in flight (so the daemon never
        answers BUSY to this client). `fds` go with the frame in one sendmsg (SCM_RIGHTS)."""
        while len(self._outstanding) >= self._window:
            self._read(block=True, deadline=self._deadline(None))
        request_id = self._next_id
        self._next_id += 1
        request = {"id": request_id, "op": op}
        request.update(fields)
        # f32 literals and spec values go as 32-bit floats: exactly the value the program uses.
        body = msgpack.packb(request, use_single_float=True)
        if len(body) > self.max_frame:
            raise VyError.client(
                "INVALID_ARGUMENT",
                "the %s request takes %d bytes, more than max_frame (%d)"
                % (op, len(body), self.max_frame),
                "send large inputs through resident buffers (upload in parts) or shm regions",
                request_id)
        self._send(_HEADER.pack(len(body)) + body, list(fds), request_id)
        self._outstanding.add(request_id)
        return Pending(self, request_id, convert)

    def call(self, op, **fields):
        """Send one request and return its result fields (without id and ok)."""
        return self.submit(op, **fields).result()

    def _request(self, op, wait, convert=None, **fields):
        pending = self.submit(op, convert=convert, **fields)
        return pending.result() if wait else pending

    # --- operations ---

    def ping(self, wait=True):
        return self._request("ping", wait, _drop)

    def compile(self, program, config=None, wait=True):
        """Returns {"program_id", "cache", "compile_ns", "device"}."""
        fields = {"program": _program_field(program)}
        if config:
            fields["config"] = config
        return self._request("compile", wait, **fields)

    def dispatch(self, program=None, inputs=(), config=None, outputs_to=None, program_id=None,
                 wait=True):
        """Run a program (a dict or JSON text) or a compiled program_id. `inputs`: one per input
        buffer in binding order, each bytes (or any buffer object), vyre.resident(handle), or
        region.input(offset, length). `outputs_to`: one entry per output, None or a handle.
        Returns {"outputs": [bytes or None], "timing": {...}, "cache": ...}."""
        if (program is None) == (program_id is None):
            raise TypeError("dispatch takes a program or a program_id, not both or neither")
        if program is not None:
            fields = {"program": _program_field(program)}
        else:
            fields = {"program_id": program_id}
        fields["inputs"] = [_input_field(v) for v in inputs]
        if config:
            fields["config"] = config
        if outputs_to is not None:
            fields["outputs_to"] = list(outputs_to)
        return self._request("dispatch", wait, **fields)

    def alloc(self, size, name=None, wait=True):
        """A resident buffer of `size` bytes (zero-filled) on the device; returns its handle.
        With a name, another connection of the same user attaches the same buffer."""
        fields = {"size": size}
        if name is not None:
            fields["name"] = name
        return self._request("alloc", wait, lambda r: r["handle"], **fields)

    def upload(self, handle, data, offset=0, wait=True):
        fields = {"handle": handle, "data": _input_field(data)}
        if offset:
            fields["offset"] = offset
        return self._request("upload", wait, _drop, **fields)

    def download(self, handle, offset=0, length=None, wait=True):
        """The bytes of a resident buffer (from offset to its end unless length is given)."""
        fields = {"handle": handle}
        if offset:
            fields["offset"] = offset
        if length is not None:
            fields["length"] = length
        return self._request("download", wait, lambda r: r["data"], **fields)

    def free(self, handle, wait=True):
        return self._request("free", wait, _drop, handle=handle)

    def shm_attach(self, size, name="vyre"):
        """Create a sealed memfd of `size` bytes, attach it, and return its ShmRegion."""
        if size <= 0:
            raise VyError.client("INVALID_ARGUMENT", "a region of %d bytes" % size,
                                 "give the region a size of 1 byte or more")
        fd = -1
        buf = None
        try:
            fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SHM_SEALS)
            buf = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            if fd >= 0:
                os.close(fd)
            raise VyError.client("SYSTEM_ERROR", "creating a region of %d bytes failed: %s"
                                 % (size, e.strerror or e),
                                 "check the memory limits of this process") from e
        try:
            region = self.submit("shm_attach", fds=[fd], size=size).result()["region"]
        except BaseException:
            buf.close()
            raise
        finally:
            os.close(fd)
        return ShmRegion(self, region, size, buf)

    def shm_detach(self, region, wait=True):
        if isinstance(region, ShmRegion):
            region = region.region
        return self._request("shm_detach", wait, _drop, region=region)

    def stats(self, wait=True):
        return self._request("stats", wait)

    def clients(self, wait=True):
        return self._request("clients", wait, lambda r: r["clients"])

    def buffers(self, wait=True):
        return self._request("buffers", wait, lambda r: r["buffers"])

    def cache_list(self, wait=True):
        """{"pipelines": [...], "programs": [...]}."""
        return self._request("cache_list", wait)

    def cache_clear(self, wait=True):
        """Admin only; returns {"pipelines": n, "programs": n} removed."""
        return self._request("cache_clear", wait)

    # --- lifetime ---

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()

    # --- transport ---

    def _deadline(self, timeout):
        t = self.timeout if timeout is None else timeout
        return None if t is None else time.monotonic() + t

    def _check_open(self, request_id=None):
        if self._broken is not None:
            raise self._broken
        if self._sock is None:
            raise VyConnectionError.client("DISCONNECTED", "the connection is closed",
                                           "open a new connection", request_id)

    def _send(self, frame, fds, request_id):
        """Write the whole frame; the descriptors travel with its first bytes. While the socket
        is full, replies are read and kept, so a daemon that waits for this client to read never
        waits on a client that waits for it to read."""
        self._check_open(request_id)
        view = memoryview(frame)
        off = 0
        while off < len(view):
            try:
                if fds:
                    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
                    n = self._sock.sendmsg([view[off:]], anc, socket.MSG_DONTWAIT)
                    fds = None
                else:
                    n = self._sock.send(view[off:], socket.MSG_DONTWAIT)
                off += n
            except (BlockingIOError, InterruptedError):
                poller = select.poll()
                poller.register(self._sock, select.POLLIN | select.POLLOUT)
                if any(ev & (select.POLLIN | select.POLLHUP) for _, ev in poller.poll()):
                    self._read(block=False, deadline=None)
            except OSError as e:
                self._fail("sending a request failed: %s" % (e.strerror or e), request_id)

    def _fail(self, message, request_id=None, code="DISCONNECTED"):
        """The connection is unusable from now on: every later call raises the same error."""
        if self._broken is None:
            fix = "open a new connection (resident buffers and shm regions must be made again)"
            cls = VyConnectionError if code == "DISCONNECTED" else VyError
            self._broken = cls.client(code, message, fix, request_id)
        self.close()
        raise self._broken

    def _read(self, block, deadline):
        """Read what the socket holds (waiting for something when `block`), and file every
        complete reply under its id."""
        self._check_open()
        if block:
            wait = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            poller = select.poll()
            poller.register(self._sock, select.POLLIN)
            if not poller.poll(wait):
                raise VyError.client(
                    "NO_REPLY", "no reply within the client's timeout; the request is still "
                    "pending", "wait again, or give the client a longer timeout")
        want = _READ_CHUNK
        if len(self._rbuf) >= _HEADER.size:
            (n,) = _HEADER.unpack_from(self._rbuf)
            want = max(want, min(n + _HEADER.size - len(self._rbuf), 64 << 20))
        try:
            chunk = self._sock.recv(want, 0 if block else socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._fail("reading a reply failed: %s" % (e.strerror or e))
        if not chunk:
            self._fail("vyred closed the connection")
        self._rbuf += chunk
        self._parse()

    def _parse(self):
        pos = 0
        buf = self._rbuf
        while len(buf) - pos >= _HEADER.size:
            (n,) = _HEADER.unpack_from(buf, pos)
            end = pos + _HEADER.size + n
            if len(buf) < end:
                break
            try:
                with memoryview(buf)[pos + _HEADER.size:end] as body:
                    reply = msgpack.unpackb(body, raw=False, strict_map_key=False)
            except (ValueError, msgpack.UnpackException) as e:
                self._fail("a reply is not one msgpack map: %s" % e, code="BAD_REPLY")
            pos = end
            self._file(reply)
        if pos:
            del buf[:pos]

    def _file(self, reply):
        if not isinstance(reply, dict) or "id" not in reply:
            self._fail("a reply has no id", code="BAD_REPLY")
        request_id = reply["id"]
        if request_id in self._outstanding:
            self._outstanding.discard(request_id)
            self._replies[request_id] = reply
            return
        # A reply to no request of ours: the daemon could not read a frame (id 0) and is
        # closing the connection; every request still waiting fails with that error.
        err = reply.get("error")
        if not reply.get("ok") and err:
            self._broken = VyError.from_wire(err, request_id)

    def _poll(self, request_id):
        if request_id not in self._replies and self._broken is None:
            self._read(block=False, deadline=None)
        return request_id in self._replies

    def _wait(self, request_id, timeout):
        deadline = self._deadline(timeout)
        while request_id not in self._replies:
            if request_id not in self._outstanding:
                raise ValueError("request %d has no reply to wait for (already taken?)"
                                 % request_id)
            self._read(block=True, deadline=deadline)
        reply = self._replies.pop(request_id)
        if not reply.get("ok"):
            raise VyError.from_wire(reply.get("error"), request_id)
        return {k: v for k, v in reply.items() if k not in ("id", "ok")}
