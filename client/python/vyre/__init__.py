"""vyre: the Python client of vyred, the GPU dispatch daemon (docs/python.md).

    import numpy as np
    import vyre

    k = vyre.Kernel("saxpy", workgroup_size=256)
    alpha, x, y = k.uniform("alpha", "f32", 1), k.input("x", "f32"), k.inout("y", "f32")
    i = k.let("i", k.gid(0))
    with k.if_(i < y.len()):
        y[i] = vyre.fma(alpha[0], x[i], y[i])

    with vyre.connect() as vy:                  # path, else $VYRED_SOCKET, else the default
        out = vy.dispatch(k, [np.float32([2.0]), xs, ys])[0]     # a numpy float32 array

client.py holds the connection (Client, Result, ShmRegion, Pending), arrays.py the conversions
between buffer data and arrays, kernel.py the program builder (Kernel, Expr and the operators as
functions: vyre.fma, vyre.select, vyre.cast, vyre.exp, vyre.min...), errors.py the exceptions.
"""

from . import kernel as _kernel
from .arrays import TYPES, have_numpy
from .client import (DEFAULT_SOCKET, PROTOCOL, Client, Pending, PendingParts, Result, ShmRegion,
                     connect, pack_f32, pack_i32, pack_u32, resident, socket_path, unpack_f32,
                     unpack_i32, unpack_u32)
from .errors import CLIENT_ERRORS, KernelError, VyConnectionError, VyError
from .kernel import (Buffer, Expr, Kernel, bitcast, bool_, cast, f32, fma, gid, i32, lid, literal,
                     select, subgroup_ballot, subgroup_lane, subgroup_reduce, subgroup_shuffle,
                     subgroup_size, u32, wgid)

__version__ = "0.1.0"

# Every IR operator as a function under its Python name: vyre.add, vyre.abs_diff, vyre.exp,
# vyre.logical_and (the IR's "and"), vyre.min (the IR's min, not Python's)...
globals().update(_kernel.FUNCTIONS)

__all__ = [
    "CLIENT_ERRORS", "DEFAULT_SOCKET", "PROTOCOL", "TYPES", "Buffer", "Client", "Expr", "Kernel",
    "KernelError", "Pending", "PendingParts", "Result", "ShmRegion", "VyConnectionError",
    "VyError", "bitcast", "bool_", "cast", "connect", "f32", "fma", "gid", "have_numpy", "i32", "lid",
    "literal", "pack_f32", "pack_i32", "pack_u32", "resident", "select", "socket_path",
    "subgroup_ballot", "subgroup_lane", "subgroup_reduce", "subgroup_shuffle", "subgroup_size",
    "u32", "unpack_f32", "unpack_i32", "unpack_u32", "wgid",
] + sorted(_kernel.FUNCTIONS)
