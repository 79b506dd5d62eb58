"""The connection to vyred: protocol version 1 as docs/protocol.md describes it, with the standard
library, the msgpack package (Debian: python3-msgpack) and, where it is installed, numpy.

    import numpy as np
    import vyre
    with vyre.connect() as vy:                  # path, else $VYRED_SOCKET, else the default
        y = vy.dispatch(program, [np.float32([2.0]), xs, ys])[0]

A program is a vyre.Kernel, a dict (the JSON form as Python data) or JSON text. Inputs are numpy
arrays or any other buffer data (arrays.py says what is accepted and when it is copied);
dispatch answers a Result whose items are the outputs as numpy arrays of their buffers' types.

Every request method waits for its reply and returns the result (a Result, a dict, or the one
value that matters: a handle, an array, bytes); with wait=False it returns a Pending at once
instead, so many requests can be in flight on one connection and their replies are matched by
id. A failed request raises VyError, which carries the daemon's error object (code, num,
message, fix, retry, at, errors). Errors found in the client have codes of their own, numbered
from 2001 as in the C library: CONNECT_FAILED and DISCONNECTED (raised as VyConnectionError, a
VyError that is also a ConnectionError), BAD_REPLY, INVALID_ARGUMENT, SYSTEM_ERROR and NO_REPLY.

Thread-safety: a Client belongs to one thread at a time; open one connection per thread.
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

from .arrays import TYPES, WIRE_DTYPES, copy_into, from_wire, numpy, program_roles, to_wire, \
    wire_size
from .errors import VyConnectionError, VyError
from .kernel import Kernel

PROTOCOL = 1
DEFAULT_SOCKET = "/run/vyred/vyred.sock"

_HEADER = struct.Struct(">I")
_READ_CHUNK = 1 << 20
# The longest busy-poll a client takes (microseconds), as libvyre's VY_BUSY_POLL_MAX_US.
_BUSY_POLL_MAX_US = 100000
# shm_attach requires F_SEAL_SHRINK (the daemon maps the region and must never fault on it); the
# other two seals keep the size fixed for good, which is what a region of a given size means.
_SHM_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
# Room left in a frame for the fields of an upload around its data.
_FRAME_SLACK = 4096
# The download size of one request when hello does not say (protocol.md: limits.max_download).
_DEFAULT_MAX_DOWNLOAD = 64 << 20


def socket_path(path=None):
    """The socket a client connects to: `path`, else $VYRED_SOCKET, else the default."""
    return path or os.environ.get("VYRED_SOCKET") or DEFAULT_SOCKET


def connect(path=None, name=None, timeout=None, busy_poll_us=None):
    """Open a connection and send hello; returns a Client (usable as a context manager).
    `busy_poll_us`: see Client."""
    return Client(path, name, timeout, busy_poll_us)


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


class PendingParts:
    """Several requests that make one operation (an upload or a download sent in parts): done()
    when every part is answered; result() waits for all of them and returns what the operation
    returns, or raises the first part's error. A part answered BUSY (a download whose bytes would
    pass the daemon's write_high_water while earlier parts wait to be read) is sent again once
    the others are answered: then nothing of this operation is held, and it runs."""

    def __init__(self, client, requests, combine):
        self._client = client
        self._requests = requests
        self.parts = [client.submit(op, **fields) for op, fields in requests]
        self.id = self.parts[0].id
        self._combine = combine

    def done(self):
        return all(p.done() for p in self.parts)

    def result(self, timeout=None):
        replies, error, again = [], None, []
        for k, p in enumerate(self.parts):
            try:
                replies.append(p.result(timeout))
            except VyError as e:
                if isinstance(e, VyConnectionError) or e.code == "NO_REPLY":
                    raise
                replies.append(None)
                if e.code == "BUSY":
                    again.append(k)
                else:
                    error = error or e
        if error is not None:
            raise error
        for k in again:
            op, fields = self._requests[k]
            replies[k] = self._client.submit(op, **fields).result(timeout)
        return self._combine(replies)


class Result:
    """The reply of a dispatch.

    result[k] (and iterating, len): output k as the caller gets it, in binding order: a numpy
    array of the buffer's type and element count when numpy is installed and the program's
    buffers are known (a Kernel, a dict, JSON text, or a program_id this connection compiled),
    else bytes; None for an output sent to a resident buffer (outputs_to). by_name: the same
    outputs by buffer name. result["outputs"], result["timing"], result["cache"]: the reply's
    fields as the daemon sent them (outputs as bytes); timing and cache are attributes too.
    """

    def __init__(self, reply, roles):
        self.reply = reply
        raw = reply.get("outputs") or []
        if roles is not None and len(roles) == len(raw):
            self.outputs = [from_wire(d, t) for d, (_, t) in zip(raw, roles)]
            self.by_name = {n: o for o, (n, _) in zip(self.outputs, roles)}
        else:
            self.outputs = list(raw)
            self.by_name = {}
        self.timing = reply.get("timing", {})
        self.cache = reply.get("cache")

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.reply[key]
        return self.outputs[key]

    def __contains__(self, key):
        return key in self.reply

    def get(self, key, default=None):
        return self.reply.get(key, default)

    def keys(self):
        return self.reply.keys()

    def __len__(self):
        return len(self.outputs)

    def __iter__(self):
        return iter(self.outputs)

    def __repr__(self):
        return "Result(%d outputs, cache=%r, timing=%r)" % (len(self.outputs), self.cache,
                                                           self.timing)


class Graph:
    """A graph made by Client.graph_create: `graph` (the handle), `steps`, `inputs`,
    `outputs`, `barriers`, and the (name, type) of the buffer each input and output is bound to
    (input_roles, output_roles), which type the arrays of graph_run."""

    def __init__(self, reply, types):
        self.graph = reply["graph"]
        self.steps = reply.get("steps")
        self.inputs = reply.get("inputs", 0)
        self.outputs = reply.get("outputs", 0)
        self.barriers = reply.get("barriers")
        self.input_roles = [("input %d" % k, types.get(("input", k)))
                            for k in range(self.inputs)]
        outs = [("output %d" % j, types.get(("output", j))) for j in range(self.outputs)]
        self.output_roles = outs if all(t for _, t in outs) else None

    def __repr__(self):
        return "Graph(%#x, %s steps, %s inputs, %s outputs)" % (self.graph, self.steps,
                                                               self.inputs, self.outputs)


class ShmRegion:
    """A sealed memfd attached to one connection with shm_attach.

    With numpy, region.array(type, offset, count) is a numpy view of the region: write into it,
    then pass the view (or any contiguous slice of it) as a dispatch input, and the daemon reads
    those bytes in place: nothing is copied, in Python or through the socket. Without numpy,
    write bytes into `buf` (a writable mmap of `size` bytes) or with write(), and pass
    region.input(offset, length). Do not change bytes that a dispatch still in flight reads.
    detach() ends the region; views made by array() keep the mapping alive until they go.
    """

    def __init__(self, client, region, size, buf):
        self.client = client
        self.region = region
        self.size = size
        self.buf = buf
        self._bytes = None
        self._addr = None

    def write(self, data, offset=0):
        data = memoryview(to_wire(data, None, "the data to write")).cast("B")
        if offset < 0 or offset + len(data) > self.size:
            raise ValueError("%d bytes at offset %d do not fit a region of %d bytes"
                             % (len(data), offset, self.size))
        self.buf[offset:offset + len(data)] = data

    def input(self, offset=0, length=None):
        """The dispatch input {"shm": [region, offset, length]}; length defaults to the rest."""
        if length is None:
            length = self.size - offset
        return {"shm": [self.region, offset, length]}

    def array(self, type="f32", offset=0, count=None):
        """A writable numpy view of `count` elements of `type` (u32, i32 or f32; bool buffers
        take u32 words, 1 or 0) from byte `offset` (a multiple of 4); count defaults to the rest
        of the region. Passed as a dispatch input, the view travels as {"shm": [...]}."""
        if numpy is None:
            raise VyError.client("INVALID_ARGUMENT", "region.array needs numpy, which is not "
                                 "installed", "install numpy (Debian: python3-numpy), or write "
                                 "with region.write and pass region.input(offset, length)")
        if type not in TYPES:
            raise VyError.client("INVALID_ARGUMENT", "no element type %r" % (type,),
                                 "give one of u32, i32, f32, bool")
        if self.buf is None:
            raise VyError.client("INVALID_ARGUMENT", "region %d is detached" % self.region,
                                 "attach a new region with shm_attach")
        if offset < 0 or offset % 4 or offset > self.size:
            raise VyError.client("INVALID_ARGUMENT", "offset %d in a region of %d bytes"
                                 % (offset, self.size),
                                 "give an offset that is a multiple of 4 inside the region")
        if count is None:
            count = (self.size - offset) // 4
        if count < 0 or offset + 4 * count > self.size:
            raise VyError.client("INVALID_ARGUMENT", "%d elements at offset %d do not fit a "
                                 "region of %d bytes" % (count, offset, self.size),
                                 "ask for at most %d elements" % ((self.size - offset) // 4))
        if self._bytes is None:
            self._bytes = numpy.frombuffer(self.buf, numpy.uint8)
            self._addr = self._bytes.__array_interface__["data"][0]
        return self._bytes[offset:offset + 4 * count].view(WIRE_DTYPES[type])

    def _locate(self, arr):
        """The (offset, length) of a contiguous numpy array inside this region, else None."""
        if self._addr is None or self.buf is None:
            return None
        root = arr
        while isinstance(root, numpy.ndarray) and root.base is not None:
            root = root.base
        if isinstance(root, memoryview):
            root = root.obj
        if root is not self.buf:
            return None
        offset = arr.__array_interface__["data"][0] - self._addr
        if offset < 0 or offset + arr.nbytes > self.size:
            return None
        return offset, arr.nbytes

    def detach(self):
        """shm_detach, then unmap; dispatches already sent still read the daemon's mapping."""
        if self.buf is None:
            return
        try:
            self.client.shm_detach(self.region)
        finally:
            self.client._regions.pop(self.region, None)
            buf, self.buf, self._bytes, self._addr = self.buf, None, None, None
            try:
                buf.close()
            except BufferError:
                # Views from array() still use the mapping; it goes with the last of them.
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


def _program_field(program):
    """The wire form of a program given as a Kernel, a dict (the JSON form as Python data) or
    JSON text."""
    if isinstance(program, Kernel):
        return program.program()
    if isinstance(program, (str, bytes, bytearray)):
        return json.loads(program)
    if isinstance(program, dict):
        return program
    raise TypeError("a program is a vyre.Kernel, a dict or JSON text, not %s"
                    % type(program).__name__)


def _drop(reply):
    return None


class Client:
    """One connection to vyred. See the module's description."""

    def __init__(self, path=None, name=None, timeout=None, busy_poll_us=None):
        self.path = socket_path(path)
        self.timeout = timeout
        # Waiting for a reply first polls the socket without sleeping for this long (seconds):
        # a reply that comes meanwhile is read without a sleeping thread's wake-up, for the
        # cost of the core that spins. None takes $VYRE_BUSY_POLL_US (as libvyre does), else 0.
        if busy_poll_us is None:
            try:
                busy_poll_us = int(os.environ.get("VYRE_BUSY_POLL_US", "0"))
            except ValueError:
                busy_poll_us = 0
        self.busy_poll = min(max(0, busy_poll_us), _BUSY_POLL_MAX_US) / 1e6
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
        self._regions = {}
        # The buffers of each program this connection compiled, by program id, so that a
        # dispatch by program_id can type its inputs and outputs.
        self._roles = {}
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
        """Returns {"program_id", "cache", "compile_ns", "device"}. The connection remembers
        the program's buffers, so that dispatch(program_id=...) types its outputs."""
        fields = {"program": _program_field(program)}
        if config:
            fields["config"] = config
        roles = program_roles(fields["program"])

        def remember(reply):
            if roles is not None and "program_id" in reply:
                self._roles[reply["program_id"]] = roles
            return reply

        return self._request("compile", wait, remember, **fields)

    def dispatch(self, program=None, inputs=(), config=None, outputs_to=None, program_id=None,
                 wait=True):
        """Run a program (a Kernel, a dict or JSON text) or a compiled program_id, and return
        its Result.

        `inputs`: one per input buffer in binding order, each a numpy array or other buffer
        data (its elements must be of the buffer's type), a number or a list of numbers (packed
        in the buffer's type), a numpy view of a shm region (sent as the region's bytes in
        place), vyre.resident(handle), or region.input(offset, length). `outputs_to`: one entry
        per output, None or a handle. `config`: protocol.md's config (grid, spec, timing...)."""
        if (program is None) == (program_id is None):
            raise TypeError("dispatch takes a program or a program_id, not both or neither")
        if program is not None:
            fields = {"program": _program_field(program)}
            roles = program_roles(fields["program"])
        else:
            fields = {"program_id": program_id}
            roles = self._roles.get(program_id)
        wanted = roles[0] if roles else []
        fields["inputs"] = [self._input_field(v, wanted[k] if k < len(wanted) else None, k)
                            for k, v in enumerate(inputs)]
        if config:
            fields["config"] = config
        if outputs_to is not None:
            fields["outputs_to"] = list(outputs_to)
        out_roles = roles[1] if roles else None
        return self._request("dispatch", wait, lambda r: Result(r, out_roles), **fields)

    def _input_field(self, value, role, k):
        if isinstance(value, ShmRegion):
            return value.input()
        if isinstance(value, dict):
            return value
        name, typ = role if role else (None, None)
        what = "input %d (%s, %s)" % (k, name, typ) if name else "input %d" % k
        if numpy is not None and isinstance(value, numpy.ndarray) and self._regions:
            for region in self._regions.values():
                place = region._locate(value)
                if place is not None:
                    # Checked as any input is (element type, contiguity), then sent in place.
                    to_wire(value, typ, what)
                    return region.input(*place)
        return to_wire(value, typ, what)

    def alloc(self, size, name=None, wait=True, device=None):
        """A resident buffer of `size` bytes (zero-filled) on the device; returns its handle.
        With a name, another connection of the same user attaches the same buffer. `device`
        (an index into devices) places it; otherwise the daemon picks the least-loaded device.
        Dispatches and graphs that use the buffer run on its device."""
        fields = {"size": size}
        if name is not None:
            fields["name"] = name
        if device is not None:
            fields["config"] = {"device": device}
        return self._request("alloc", wait, lambda r: r["handle"], **fields)

    def alloc_from(self, data, name=None, device=None):
        """A resident buffer holding `data` (a numpy array or other buffer data): alloc of its
        size, then upload. Returns the handle."""
        payload = to_wire(data, None, "the data")
        handle = self.alloc(len(memoryview(payload).cast("B")), name, device=device)
        self.upload(handle, payload)
        return handle

    def upload(self, handle, data, offset=0, wait=True):
        """Write `data` (a numpy array or other buffer data; a bool array as words) into a
        resident buffer at byte `offset`. Data larger than one frame goes in several requests,
        pipelined; with wait=False the answer is then a PendingParts."""
        payload = memoryview(to_wire(data, None, "the upload data")).cast("B")
        part = max(4, (self.max_frame - _FRAME_SLACK) // 4 * 4)
        if len(payload) <= part:
            fields = {"handle": handle, "data": payload}
            if offset:
                fields["offset"] = offset
            return self._request("upload", wait, _drop, **fields)
        requests = [("upload", {"handle": handle, "offset": offset + at,
                                "data": payload[at:at + part]})
                    for at in range(0, len(payload), part)]
        pending = PendingParts(self, requests, _drop)
        return pending.result() if wait else pending

    def download(self, handle, offset=0, length=None, wait=True, type=None, out=None):
        """The contents of a resident buffer from byte `offset`: `length` bytes, or to its end.

        As bytes by default; with type="u32", "i32", "f32" or "bool", an array of that type
        (numpy, where installed); with out=array, written into that writable contiguous array
        (as many bytes as it holds; a bool array takes one word per element), which is returned.
        A download into `out` larger than limits.max_download goes in several requests."""
        if type is not None and type not in TYPES:
            raise VyError.client("INVALID_ARGUMENT", "no element type %r" % (type,),
                                 "give one of u32, i32, f32, bool")
        if out is None:
            fields = {"handle": handle}
            if offset:
                fields["offset"] = offset
            if length is not None:
                fields["length"] = length
            return self._request("download", wait, lambda r: from_wire(r["data"], type),
                                 **fields)
        total = wire_size(out)
        if length is not None and length != total:
            raise VyError.client("INVALID_ARGUMENT", "a download of %d bytes into an array of "
                                 "%d bytes" % (length, total),
                                 "leave length out when downloading into an array")
        part = max(4, int(self.limits.get("max_download", _DEFAULT_MAX_DOWNLOAD)) // 4 * 4)
        starts = list(range(0, total, part)) or [0]
        requests = [("download", {"handle": handle, "offset": offset + at,
                                  "length": min(part, total - at)}) for at in starts]

        def combine(replies):
            for at, reply in zip(starts, replies):
                copy_into(out, reply["data"], at)
            return out

        pending = PendingParts(self, requests, combine)
        return pending.result() if wait else pending

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
        shm = ShmRegion(self, region, size, buf)
        self._regions[region] = shm
        return shm

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

    # --- graphs (docs/graphs.md) ---

    def graph_create(self, steps, name=None, wait=True):
        """Make a graph of steps run with one request; returns a Graph.

        `steps`: one dict per step with "program" (a Kernel, a dict or JSON text) or
        "program_id", "bind" ({buffer: {"input": k} | {"output": j} | {"temp": name} |
        {"resident": handle}} for every non-workgroup buffer), and optionally "config" (grid,
        workgroup_size, spec, max_loop_iterations)."""
        wire = []
        types = {}
        for k, step in enumerate(steps):
            if not isinstance(step, dict) or "bind" not in step:
                raise TypeError("step %d is a dict with \"program\" or \"program_id\" and "
                                "\"bind\"" % k)
            field = {"bind": step["bind"]}
            if "program" in step:
                field["program"] = _program_field(step["program"])
                buffers = field["program"].get("buffers") or []
            else:
                field["program_id"] = step["program_id"]
                roles = self._roles.get(step["program_id"])
                buffers = ([{"name": n, "type": t} for n, t in roles[0] + roles[1]]
                           if roles else [])
            if "config" in step:
                field["config"] = step["config"]
            by_name = {b.get("name"): b.get("type") for b in buffers}
            for buf, slot in step["bind"].items():
                for kind in ("input", "output"):
                    if isinstance(slot, dict) and kind in slot:
                        types.setdefault((kind, slot[kind]), by_name.get(buf))
            wire.append(field)
        fields = {"steps": wire}
        if name is not None:
            fields["name"] = name
        return self._request("graph_create", wait, lambda r: Graph(r, types), **fields)

    def graph_run(self, graph, inputs=(), config=None, wait=True):
        """Run a graph once and return its Result: one output per graph output (numpy arrays
        of the types of the buffers that write them, where numpy is installed). `inputs`: one
        per graph input (arrays, buffer data, numbers or lists, shm views); `config`:
        timeout_ms (for the whole run), label, timing (per-step device times in
        result.timing["steps_ns"])."""
        handle = graph.graph if isinstance(graph, Graph) else graph
        ins = graph.input_roles if isinstance(graph, Graph) else []
        outs = graph.output_roles if isinstance(graph, Graph) else None
        fields = {"graph": handle,
                  "inputs": [self._input_field(v, ins[k] if k < len(ins) else None, k)
                             for k, v in enumerate(inputs)]}
        if config:
            fields["config"] = config
        return self._request("graph_run", wait, lambda r: Result(r, outs), **fields)

    def graph_free(self, graph, wait=True):
        handle = graph.graph if isinstance(graph, Graph) else graph
        return self._request("graph_free", wait, _drop, graph=handle)

    def graphs(self, wait=True):
        """The caller's graphs (rows of graph, name, steps, inputs, outputs, runs, ...)."""
        return self._request("graphs", wait, lambda r: r["graphs"])

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
            if self.busy_poll and wait != 0:
                spin_until = time.monotonic() + self.busy_poll
                while not poller.poll(0) and time.monotonic() < spin_until:
                    pass
                if wait is not None:
                    wait = max(0, int((deadline - time.monotonic()) * 1000))
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
