"""Buffer data: Python values to the bytes of a vyre buffer, and bytes back to arrays.

Every element of a vyre buffer is 4 bytes, little-endian: u32, i32, f32, or bool as a u32 word
(1 or 0; any nonzero word reads as true). An input is any object with the buffer protocol (a
numpy array, array.array, bytes, memoryview): when it holds 4-byte elements of the buffer's type,
or plain bytes, its memory is sent as it is, without a copy in Python. Bool arrays (one byte per
element) are widened to words, which is a copy. With numpy installed, outputs are numpy arrays of
the buffer's type; without it, bytes.
"""

import array
import numbers
import struct

from .errors import VyError

try:
    import numpy
except ImportError:
    numpy = None

TYPES = ("u32", "i32", "f32", "bool")

# The numpy dtype of each type's elements as they travel (bool travels as u32 words) and the
# dtype of the arrays handed back.
WIRE_DTYPES = {"u32": "<u4", "i32": "<i4", "f32": "<f4", "bool": "<u4"}
DTYPE_NAMES = {"u32": "numpy.uint32", "i32": "numpy.int32", "f32": "numpy.float32",
               "bool": "numpy.bool_"}
_STRUCT_CODES = {"u32": "I", "i32": "i", "f32": "f", "bool": "I"}


def have_numpy():
    return numpy is not None


def _invalid(message, fix):
    return VyError.client("INVALID_ARGUMENT", message, fix)


def element_type(view):
    """What a memoryview holds: a vyre type, "bytes" (one-byte elements of no type), or None (an
    element that matches no vyre type: float64, int64, big-endian...)."""
    fmt = view.format
    if fmt[:1] in ("@", "=", "<"):
        fmt = fmt[1:]
    size = view.itemsize
    if fmt in ("B", "b", "c") and size == 1:
        return "bytes"
    if fmt == "?" and size == 1:
        return "bool"
    if size != 4:
        return None
    return {"f": "f32", "I": "u32", "L": "u32", "i": "i32", "l": "i32"}.get(fmt)


def _describe(value, view):
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return "a %s array of dtype %s" % (type(value).__name__, dtype)
    return "a %s of elements of format %r" % (type(value).__name__, view.format)


def _bool_words(view):
    """One u32 word, 1 or 0, per byte of a bool view."""
    flat = view.cast("B")
    if numpy is not None:
        return memoryview(numpy.frombuffer(flat, numpy.uint8).astype("<u4")).cast("B")
    return memoryview(array.array("I", (1 if b else 0 for b in flat))).cast("B")


def _pack_values(values, typ, what):
    code = _STRUCT_CODES[typ]
    if typ == "bool":
        values = [1 if v else 0 for v in values]
    try:
        return struct.pack("<%d%s" % (len(values), code), *values)
    except struct.error as e:
        raise _invalid("%s is %s, and a value of %r does not fit it (%s)"
                       % (what, typ, list(values)[:4], e),
                       "give %s values, or an array of %s" % (typ, DTYPE_NAMES[typ])) from None


def to_wire(value, typ=None, what="the data"):
    """The bytes of `value` for a buffer of type `typ` (None when the type is unknown): a
    bytes-like object that shares the value's memory where it can.

    Raises VyError INVALID_ARGUMENT when the value's elements are not of the buffer's type (a
    float64 array for an f32 buffer), or when it is not contiguous."""
    if isinstance(value, (bytes, bytearray)):
        return value
    if isinstance(value, (numbers.Number, list, tuple)) and not hasattr(value, "dtype"):
        if typ is None:
            raise _invalid("%s is a Python %s, and its element type is not known"
                           % (what, type(value).__name__),
                           "pass a numpy array, or pack it with vyre.pack_f32 (pack_u32, "
                           "pack_i32)")
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        return _pack_values(values, typ, what)
    try:
        view = memoryview(value)
    except TypeError:
        raise _invalid("%s is a %s, which is not buffer data" % (what, type(value).__name__),
                       "pass a numpy array, bytes, any object with the buffer protocol, "
                       "vyre.resident(handle) or region.input(...)") from None
    if not view.c_contiguous:
        raise _invalid("%s is not contiguous in memory (%s)" % (what, _describe(value, view)),
                       "pass numpy.ascontiguousarray(...) of it")
    held = element_type(view)
    if held == "bytes":
        return view.cast("B") if view.ndim != 1 or view.format != "B" else view
    if held == "bool" and typ in (None, "bool"):
        return _bool_words(view)
    if held is None or (typ is not None and held != typ and not (typ == "bool" and
                                                                 held == "u32")):
        want = typ or "u32, i32, f32 or bool"
        fix = ("convert it with .astype(%s)" % DTYPE_NAMES[typ] if typ else
               "convert it to 4-byte elements with .astype(numpy.float32) (or numpy.uint32, "
               "numpy.int32)")
        raise _invalid("%s is %s, holding %s; vyre buffers hold 4-byte little-endian %s"
                       % (what, _describe(value, view), held or "no vyre type", want), fix)
    return view.cast("B")


def from_wire(data, typ):
    """An output as the caller gets it: None stays None; with numpy and a known type, a new
    writable numpy array of the type (bool: numpy.bool_), one element per 4 bytes; else the
    bytes."""
    if data is None or typ is None or numpy is None:
        return data
    words = numpy.frombuffer(data, WIRE_DTYPES[typ])
    if typ == "bool":
        return words != 0
    return words.copy()


def copy_into(out, data, start=0):
    """Write downloaded words into the array `out`, from byte `start` of the buffer data it
    holds: a bool array gets one bool per word, any other array the bytes as they are."""
    view = memoryview(out)
    if view.readonly or not view.c_contiguous:
        raise _invalid("the array to download into is %s" % ("read-only" if view.readonly else
                                                              "not contiguous"),
                       "download into a writable, contiguous array (numpy.empty(n, dtype))")
    target = view.cast("B")
    if element_type(view) == "bool":
        first, count = start // 4, len(data) // 4
        if numpy is not None:
            flags = numpy.frombuffer(data, "<u4") != 0
            numpy.frombuffer(target, numpy.uint8)[first:first + count] = flags
        else:
            target[first:first + count] = bytes(1 if w else 0 for w in memoryview(data).cast("I"))
        return
    target[start:start + len(data)] = data


def wire_size(out):
    """How many bytes of buffer data fill the array `out` (a bool element is one word)."""
    view = memoryview(out)
    if element_type(view) == "bool":
        return 4 * view.nbytes
    return view.nbytes


def program_roles(program):
    """([(name, type)] of the inputs, [(name, type)] of the outputs) of a program given as its
    dict, in binding order (protocol.md, Inputs and outputs)."""
    buffers = program.get("buffers") if isinstance(program, dict) else None
    if not isinstance(buffers, list):
        return None
    try:
        ordered = sorted((b for b in buffers if b.get("access") != "workgroup"),
                         key=lambda b: (b["binding"], b["name"]))
        inputs, outputs = [], []
        for b in ordered:
            typ = b["type"] if b["type"] in TYPES else None
            access = b["access"]
            if access in ("read_only", "read_write", "uniform") and not b.get("output"):
                inputs.append((b["name"], typ))
            if access in ("read_write", "write_only") or b.get("output") or b.get("live_out"):
                outputs.append((b["name"], typ))
    except (KeyError, TypeError, AttributeError):
        return None
    return inputs, outputs
