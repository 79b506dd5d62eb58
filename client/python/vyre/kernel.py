"""The kernel builder: vyre programs written as Python expressions.

    k = vyre.Kernel("saxpy", workgroup_size=256)
    alpha, x, y = k.uniform("alpha", "f32", 1), k.input("x", "f32"), k.inout("y", "f32")
    i = k.let("i", k.gid(0))
    with k.if_(i < y.len()):
        y[i] = vyre.fma(alpha[0], x[i], y[i])
    k.program()        # the program as docs/ir.md defines it: a dict, ready for json.dumps

Every Python operation appends exactly one IR expression or node: `+` is add, `x[i]` is a load,
`y[i] = v` is a store, `with k.loop(...)` is a loop. Typing follows docs/ir.md section 9: there is
no implicit conversion, so an operation on operands of types it does not take raises KernelError
at the Python line that builds it, naming the expression and saying how to fix it. A Python number
beside an expression becomes a literal of that expression's type (an int for u32 or i32, a float
for f32, a bool for bool); any other mix is an error. The builder also refuses what it can see
without running the program: stores into buffers that cannot be stored to, loads from write_only
buffers, atomics outside read_write u32 buffers, variables used outside their scope or across a
grid_sync, a name declared twice. The daemon validates the rest (uniform control flow, limits).
"""

import copy
import json
import math
import numbers
import re

from .errors import KernelError

TYPES = ("u32", "i32", "f32", "bool")
ACCESS = ("read_only", "read_write", "write_only", "uniform", "workgroup")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_RANGE = {"u32": (0, 4294967295), "i32": (-2147483648, 2147483647)}

_NUM = ("u32", "i32", "f32")
_INT = ("u32", "i32")
_F = ("f32",)
_U = ("u32",)

# The operand types of each binary operator (docs/ir.md 8.6). Shifts and rotates take a u32 count
# whatever the type of their first operand; comparisons give a bool.
BINARY = {
    "add": _NUM, "sub": _NUM, "mul": _NUM, "div": _NUM, "mod": _NUM,
    "bit_and": _INT, "bit_or": _INT, "bit_xor": _INT,
    "shl": _INT, "shr": _INT, "rotl": _INT, "rotr": _INT,
    "eq": TYPES, "ne": TYPES, "lt": _NUM, "le": _NUM, "gt": _NUM, "ge": _NUM,
    "and": ("u32", "i32", "bool"), "or": ("u32", "i32", "bool"),
    "min": _NUM, "max": _NUM,
    "abs_diff": _INT, "sat_add": _INT, "sat_sub": _INT, "sat_mul": _U, "mul_high": _INT,
    "hypot": _F, "atan2": _F, "pow": _F,
}
SHIFTS = ("shl", "shr", "rotl", "rotr")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")

# The operand types of each unary operator (docs/ir.md 8.7); the predicates give a bool.
UNARY = {
    "neg": ("u32", "i32", "f32"), "bit_not": _INT, "not": ("u32", "i32", "bool"),
    "popcount": _INT, "clz": _INT, "ctz": _INT, "reverse_bits": _INT,
    "abs": ("i32", "f32"), "sign": ("i32", "f32"),
    "floor": _F, "ceil": _F, "round": _F, "trunc": _F, "sqrt": _F, "inverse_sqrt": _F,
    "reciprocal": _F, "exp": _F, "exp2": _F, "exp10": _F, "expm1": _F, "log": _F, "log2": _F,
    "log10": _F, "log1p": _F, "cbrt": _F, "sin": _F, "cos": _F, "tan": _F, "asin": _F, "acos": _F, "atan": _F, "sinh": _F, "cosh": _F, "tanh": _F,
    "erf": _F, "erfc": _F, "exp_cr": _F, "exp2_cr": _F, "log_cr": _F, "log2_cr": _F,
    "is_nan": _F, "is_inf": _F, "is_finite": _F,
    "unpack4_low": _U, "unpack4_high": _U, "unpack8_low": _U, "unpack8_high": _U,
}
PREDICATES = ("is_nan", "is_inf", "is_finite")

ATOMICS = ("add", "and", "or", "xor", "min", "max", "exchange", "compare_exchange")
REDUCTIONS = {"add": _NUM, "mul": _NUM, "min": _NUM, "max": _NUM, "and": _INT, "or": _INT,
              "xor": _INT}
ORDERINGS = ("seq_cst", "acq_rel", "release", "acquire")
LOCALITIES = ("temporal", "streaming", "random")

# The Python names of the IR operators that are Python keywords.
PY_NAMES = {"and": "logical_and", "or": "logical_or", "not": "logical_not"}

# Fixes for the mistakes that Python habits lead to.
_OPERATOR_FIXES = {
    ("/", "u32"): "use // for u32 and i32 division (the IR's div, which truncates toward zero)",
    ("/", "i32"): "use // for u32 and i32 division (the IR's div, which truncates toward zero)",
    ("//", "f32"): "use / for f32 division (and vyre.floor(a / b) to round it down)",
    ("**", "u32"): "pow is an f32 operation: convert with vyre.cast(\"f32\", ...), or multiply",
    ("**", "i32"): "pow is an f32 operation: convert with vyre.cast(\"f32\", ...), or multiply",
    ("^", "bool"): "write a != b: it is the exclusive or of two bools",
}


def _types_text(types):
    return " or ".join(types) if len(types) < 3 else ", ".join(types[:-1]) + " or " + types[-1]


class _Decl:
    """A declared variable or loop counter: its name, the block that declares it, and the
    grid_sync segment it belongs to."""

    __slots__ = ("name", "block", "segment", "counter", "type")

    def __init__(self, name, block, segment, counter, typ):
        self.name = name
        self.block = block
        self.segment = segment
        self.counter = counter
        self.type = typ


class _Atomic:
    """Marks an atomic expression until a node uses it (an atomic acts only inside a node)."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class Expr:
    """An IR expression: `ir` (its JSON form as Python data), `type` (u32, i32, f32 or bool) and
    `text` (the expression written as Python, for messages). Python's operators build new
    expressions; an expression has no truth value in Python (use k.if_ or vyre.select).

    The expressions that k.let and k.loop return read a variable (`name` is its name). On them
    the in-place operators assign: `acc += v` appends ["assign", "acc", ["add", ["var", "acc"],
    v]]. (Variables are expressions of this one class, so that Python never swaps the operands
    of a comparison between a variable and another expression.)"""

    __slots__ = ("ir", "type", "text", "atom", "decls", "atomics", "kernel", "decl")
    __hash__ = None

    def __init__(self, ir, typ, text, atom=True, decls=frozenset(), atomics=frozenset()):
        self.ir = ir
        self.type = typ
        self.text = text
        self.atom = atom
        self.decls = decls
        self.kernel = None
        self.decl = None
        self.atomics = atomics

    def __repr__(self):
        return "<vyre.Expr %s: %s>" % (self.type, self.text)

    def __bool__(self):
        raise KernelError("an expression has no truth value in Python; Python's if, and, or, "
                          "not and chained comparisons cannot look inside it",
                          "branch with `with k.if_(cond):`, choose with vyre.select(cond, a, b), "
                          "combine with & | ~ (bool) or vyre.logical_and", self.text)

    __iter__ = None

    def __add__(self, o):
        return _binary("add", self, o, "+")

    def __radd__(self, o):
        return _binary("add", o, self, "+")

    def __sub__(self, o):
        return _binary("sub", self, o, "-")

    def __rsub__(self, o):
        return _binary("sub", o, self, "-")

    def __mul__(self, o):
        return _binary("mul", self, o, "*")

    def __rmul__(self, o):
        return _binary("mul", o, self, "*")

    def __truediv__(self, o):
        return _binary("div", self, o, "/", only=_F)

    def __rtruediv__(self, o):
        return _binary("div", o, self, "/", only=_F)

    def __floordiv__(self, o):
        return _binary("div", self, o, "//", only=_INT)

    def __rfloordiv__(self, o):
        return _binary("div", o, self, "//", only=_INT)

    def __mod__(self, o):
        return _binary("mod", self, o, "%")

    def __pow__(self, o):
        return _binary("pow", self, o, "**")

    def __rpow__(self, o):
        return _binary("pow", o, self, "**")

    def __rmod__(self, o):
        return _binary("mod", o, self, "%")

    def __and__(self, o):
        return _binary(_logic("and", self, o), self, o, "&")

    def __rand__(self, o):
        return _binary(_logic("and", self, o), o, self, "&")

    def __or__(self, o):
        return _binary(_logic("or", self, o), self, o, "|")

    def __ror__(self, o):
        return _binary(_logic("or", self, o), o, self, "|")

    def __xor__(self, o):
        return _binary("bit_xor", self, o, "^")

    def __rxor__(self, o):
        return _binary("bit_xor", o, self, "^")

    def __lshift__(self, o):
        return _binary("shl", self, o, "<<")

    def __rlshift__(self, o):
        return _binary("shl", o, self, "<<")

    def __rshift__(self, o):
        return _binary("shr", self, o, ">>")

    def __rrshift__(self, o):
        return _binary("shr", o, self, ">>")

    def __eq__(self, o):
        return _binary("eq", self, o, "==")

    def __ne__(self, o):
        return _binary("ne", self, o, "!=")

    def __lt__(self, o):
        return _binary("lt", self, o, "<")

    def __le__(self, o):
        return _binary("le", self, o, "<=")

    def __gt__(self, o):
        return _binary("gt", self, o, ">")

    def __ge__(self, o):
        return _binary("ge", self, o, ">=")

    def __neg__(self):
        return _unary("neg", self, "-")

    def __pos__(self):
        return self

    def __invert__(self):
        return _unary("not" if self.type == "bool" else "bit_not", self, "~")

    def __abs__(self):
        return _unary("abs", self, "abs")

    @property
    def name(self):
        """The name of the variable this expression reads, else None."""
        return self.decl.name if self.decl is not None else None

    def _update(self, value):
        self.kernel.assign(self, value)
        return self

    def __iadd__(self, o):
        return self._update(self + o) if self.decl else NotImplemented

    def __isub__(self, o):
        return self._update(self - o) if self.decl else NotImplemented

    def __imul__(self, o):
        return self._update(self * o) if self.decl else NotImplemented

    def __itruediv__(self, o):
        return self._update(self / o) if self.decl else NotImplemented

    def __ifloordiv__(self, o):
        return self._update(self // o) if self.decl else NotImplemented

    def __imod__(self, o):
        return self._update(self % o) if self.decl else NotImplemented

    def __ipow__(self, o):
        return self._update(self ** o) if self.decl else NotImplemented

    def __iand__(self, o):
        return self._update(self & o) if self.decl else NotImplemented

    def __ior__(self, o):
        return self._update(self | o) if self.decl else NotImplemented

    def __ixor__(self, o):
        return self._update(self ^ o) if self.decl else NotImplemented

    def __ilshift__(self, o):
        return self._update(self << o) if self.decl else NotImplemented

    def __irshift__(self, o):
        return self._update(self >> o) if self.decl else NotImplemented


def _variable(kernel, decl):
    """The expression ["var", name] of a variable or loop counter."""
    e = Expr(["var", decl.name], decl.type, decl.name, decls=frozenset([decl]))
    e.kernel = kernel
    e.decl = decl
    return e


def _text(value):
    return value.text if isinstance(value, Expr) else repr(value)


def _wrap(value):
    text = _text(value)
    return text if not isinstance(value, Expr) or value.atom else "(%s)" % text


def _join(*parts):
    decls, atomics = frozenset(), frozenset()
    for p in parts:
        decls |= p.decls
        atomics |= p.atomics
    return decls, atomics


def _f32_value(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _numpy_type(value):
    """The vyre type of a numpy scalar (numpy.float32(2)), else None."""
    dtype = getattr(value, "dtype", None)
    if dtype is None or getattr(value, "shape", None) != ():
        return None
    return {("f", 4): "f32", ("u", 4): "u32", ("i", 4): "i32", ("b", 1): "bool"}.get(
        (dtype.kind, dtype.itemsize))


def literal(typ, value, text=None, shown=None):
    """The literal [typ, value] (docs/ir.md section 5). An f32 takes any real number, or NaN
    and the infinities (written "nan", "inf", "-inf"); u32 and i32 take ints in their range; a
    bool takes True or False. (text: the expression named by errors; shown: how the literal
    reads in later messages.)"""
    text = text or "vyre.%s(%r)" % (typ if typ != "bool" else "bool_", value)
    shown = shown or text
    if typ not in TYPES:
        raise KernelError("no type %r" % (typ,), "use one of u32, i32, f32, bool", text)
    if typ == "bool":
        if not isinstance(value, (bool,)) and _numpy_type(value) != "bool":
            raise KernelError("a bool literal is True or False, not %r" % (value,),
                              "write True or False", text)
        return Expr(["bool", bool(value)], "bool", shown)
    if isinstance(value, bool) or _numpy_type(value) == "bool":
        raise KernelError("%r is a Python bool, not a %s" % (value, typ),
                          "write a number, or cast a bool with vyre.cast(\"%s\", ...)" % typ,
                          text)
    if typ == "f32":
        if not isinstance(value, numbers.Real):
            raise KernelError("an f32 literal is a number, not %r" % (value,),
                              "write a float", text)
        return Expr(["f32", _f32_value(value)], "f32", shown)
    if not isinstance(value, numbers.Integral):
        raise KernelError("%r is not an integer, so not a %s" % (value, typ),
                          "write an int, or convert an f32 expression with vyre.cast(\"%s\", ...)"
                          % typ, text)
    lo, hi = _RANGE[typ]
    if not lo <= int(value) <= hi:
        raise KernelError("%d is not a %s (%d to %d)" % (value, typ, lo, hi),
                          "give a value from %d to %d%s" % (lo, hi, ", or use i32" if typ == "u32"
                                                            and value < 0 else ""), text)
    return Expr([typ, int(value)], typ, shown)


def u32(value):
    """The u32 literal ["u32", value]."""
    return literal("u32", value)


def i32(value):
    """The i32 literal ["i32", value]."""
    return literal("i32", value)


def f32(value):
    """The f32 literal ["f32", value]."""
    return literal("f32", value)


def bool_(value):
    """The bool literal ["bool", value]."""
    return literal("bool", value)


def _lift(value, want, text):
    """`value` as an expression of type `want` (None: whatever a Python value says alone).
    Python numbers become literals of the wanted type; the type of an expression is checked by
    the caller."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, Buffer):
        raise KernelError("buffer %s is used as a value" % value.name,
                          "load an element with %s[index], or take its length with %s.len()"
                          % (value.name, value.name), text)
    own = _numpy_type(value)
    if own is None and isinstance(value, bool):
        own = "bool"
    if own is None and isinstance(value, numbers.Integral):
        if want in _INT:
            return literal(want, value, text, repr(value))
        if want is None:
            raise KernelError("the Python int %r has no vyre type of its own" % (value,),
                              "write vyre.u32(%r) or vyre.i32(%r)" % (value, value), text)
        if want == "f32":
            raise KernelError("the Python int %r where an f32 is expected" % (value,),
                              "write %r.0 (or vyre.f32(%r))" % (value, value), text)
        raise KernelError("the Python int %r where a bool is expected" % (value,),
                          "write True or False", text)
    if own is None and isinstance(value, numbers.Real):
        own = "f32"
    if own is None:
        raise KernelError("%r (a %s) is not an expression" % (value, type(value).__name__),
                          "use expressions of the kernel, Python numbers or bools", text)
    if want is not None and own != want:
        raise KernelError("the Python %s %r where a %s is expected"
                          % (type(value).__name__, value, want),
                          "write a %s value, or convert with vyre.cast(\"%s\", ...)"
                          % (want, want), text)
    if hasattr(value, "dtype"):
        value = value.item()
    return literal(own, value, text, repr(value))


def _logic(op, a, b):
    """& and | are the logical and/or on bools and the bitwise ones on integers."""
    for side in (a, b):
        if isinstance(side, Expr):
            return op if side.type == "bool" else "bit_" + op
    return "bit_" + op


def _binary(op, a, b, sym=None, only=None):
    if sym is None:
        text = "vyre.%s(%s, %s)" % (PY_NAMES.get(op, op), _text(a), _text(b))
    else:
        text = "%s %s %s" % (_wrap(a), sym, _wrap(b))
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        raise KernelError("%s of two Python values" % op,
                          "make one side an expression, e.g. vyre.u32(%s)" % _text(a), text)
    if op in SHIFTS:
        if not isinstance(a, Expr):
            raise KernelError("the value shifted by %s is a Python number, whose type is not "
                              "known" % op, "write vyre.u32(%r) or vyre.i32(%r)" % (a, a), text)
        b = _lift(b, "u32", text)
    else:
        a = _lift(a, b.type if isinstance(b, Expr) else None, text)
        b = _lift(b, a.type, text)
    allowed = only or BINARY[op]
    if op in SHIFTS:
        if a.type not in allowed:
            raise KernelError("%s shifts a u32 or i32; here %s" % (op, a.type),
                              "cast it: vyre.cast(\"u32\", %s)" % a.text, text)
        if b.type != "u32":
            raise KernelError("the count of %s is a u32; here %s" % (op, b.type),
                              "cast it: vyre.cast(\"u32\", %s)" % b.text, text)
    elif a.type != b.type:
        raise KernelError("%s takes two operands of one type; here %s and %s"
                          % (op, a.type, b.type),
                          "convert one of them, e.g. vyre.cast(\"%s\", %s)"
                          % (a.type, b.text), text)
    elif a.type not in allowed:
        sym_op = sym if sym and sym not in ("&", "|") else op
        fix = _OPERATOR_FIXES.get((sym, a.type)) or (
            "give it %s operands (convert with vyre.cast)" % _types_text(allowed))
        raise KernelError("%s takes %s operands; here %s"
                          % (sym_op if sym else op, _types_text(allowed), a.type), fix, text)
    # abs_diff of two i32 values reaches 4294967295, which only a u32 holds (docs/ir.md 8.6).
    result = "bool" if op in COMPARISONS else "u32" if op == "abs_diff" else a.type
    decls, atomics = _join(a, b)
    return Expr([op, a.ir, b.ir], result, text, atom=sym is None, decls=decls, atomics=atomics)


def _unary(op, a, sym=None):
    if sym == "-":
        text = "-%s" % _wrap(a)
    elif sym == "~":
        text = "~%s" % _wrap(a)
    elif sym is not None:
        text = "%s(%s)" % (sym, _text(a))
    else:
        text = "vyre.%s(%s)" % (PY_NAMES.get(op, op), _text(a))
    a = _lift(a, None, text)
    allowed = UNARY[op]
    if a.type not in allowed:
        raise KernelError("%s takes %s; here %s" % (op, _types_text(allowed), a.type),
                          "convert the operand with vyre.cast(\"%s\", %s)"
                          % (allowed[0], a.text), text)
    result = "bool" if op in PREDICATES else a.type
    return Expr([op, a.ir], result, text, atom=sym not in ("-", "~"), decls=a.decls,
                atomics=a.atomics)


def _make_binary(op):
    def build(a, b):
        return _binary(op, a, b)

    build.__name__ = build.__qualname__ = PY_NAMES.get(op, op)
    build.__doc__ = "The IR's %s: [\"%s\", a, b] on %s operands (docs/ir.md 8.6)." % (
        op, op, _types_text(BINARY[op]))
    return build


def _make_unary(op):
    def build(a):
        return _unary(op, a)

    build.__name__ = build.__qualname__ = PY_NAMES.get(op, op)
    build.__doc__ = "The IR's %s: [\"%s\", a] on %s (docs/ir.md 8.7)." % (
        op, op, _types_text(UNARY[op]))
    return build


# vyre.add, vyre.min, vyre.logical_and, vyre.exp... : every operator as a function, by its
# Python name.
FUNCTIONS = {}
for _op in BINARY:
    FUNCTIONS[PY_NAMES.get(_op, _op)] = _make_binary(_op)
for _op in UNARY:
    FUNCTIONS[PY_NAMES.get(_op, _op)] = _make_unary(_op)
del _op


def _condition(cond, what, text):
    cond = _lift(cond, "bool" if isinstance(cond, bool) else None, text)
    if cond.type not in ("bool", "u32", "i32"):
        raise KernelError("the condition of %s is a bool, a u32 or an i32; here %s"
                          % (what, cond.type),
                          "compare it, e.g. %s != %s" % (_wrap(cond),
                                                         "0.0" if cond.type == "f32" else "0"),
                          text)
    return cond


def select(cond, a, b):
    """["select", cond, a, b]: a where cond (bool, u32 or i32) is true, else b; both always
    evaluated."""
    text = "vyre.select(%s, %s, %s)" % (_text(cond), _text(a), _text(b))
    cond = _condition(cond, "select", text)
    a = _lift(a, b.type if isinstance(b, Expr) else None, text)
    b = _lift(b, a.type, text)
    if a.type != b.type:
        raise KernelError("the arms of select have one type; here %s and %s" % (a.type, b.type),
                          "convert one arm, e.g. vyre.cast(\"%s\", %s)" % (a.type, b.text), text)
    decls, atomics = _join(cond, a, b)
    return Expr(["select", cond.ir, a.ir, b.ir], a.type, text, decls=decls, atomics=atomics)


def cast(typ, value):
    """["cast", typ, value]: the value converted to typ (docs/ir.md 8.9)."""
    text = "vyre.cast(%r, %s)" % (typ, _text(value))
    if typ not in TYPES:
        raise KernelError("no type %r" % (typ,), "cast to u32, i32, f32 or bool", text)
    value = _lift(value, None, text)
    return Expr(["cast", typ, value.ir], typ, text, decls=value.decls, atomics=value.atomics)


def bitcast(typ, value):
    """["bitcast", typ, value]: the 32 bits of a u32, i32 or f32 value read as typ (docs/ir.md
    8.14); read as f32, they are canonical (a NaN is the canonical NaN, a subnormal a zero)."""
    text = "vyre.bitcast(%r, %s)" % (typ, _text(value))
    words = ("u32", "i32", "f32")
    if typ not in words:
        raise KernelError("bitcast to %r" % (typ,), "bitcast to u32, i32 or f32", text)
    value = _lift(value, None, text)
    if value.type not in words:
        raise KernelError("bitcast takes a u32, i32 or f32; here %s" % value.type,
                          "cast a bool first: vyre.cast(\"u32\", %s)" % value.text, text)
    return Expr(["bitcast", typ, value.ir], typ, text, decls=value.decls,
                atomics=value.atomics)


def fma(a, b, c):
    """["fma", a, b, c]: a * b + c on f32 with one rounding."""
    text = "vyre.fma(%s, %s, %s)" % (_text(a), _text(b), _text(c))
    args = [_lift(v, "f32", text) for v in (a, b, c)]
    for name, v in zip("abc", args):
        if v.type != "f32":
            raise KernelError("fma takes three f32 operands; %s is %s" % (name, v.type),
                              "convert it: vyre.cast(\"f32\", %s)" % v.text, text)
    decls, atomics = _join(*args)
    return Expr(["fma"] + [v.ir for v in args], "f32", text, decls=decls, atomics=atomics)


def _axis(kind, axis):
    text = "vyre.%s(%r)" % (kind, axis)
    if isinstance(axis, bool) or not isinstance(axis, int) or axis not in (0, 1, 2):
        raise KernelError("the axis of %s is 0, 1 or 2, not %r" % (kind, axis),
                          "give 0 (x), 1 (y) or 2 (z)", text)
    return Expr([kind, axis], "u32", text)


def gid(axis=0):
    """["gid", axis]: the global invocation id along axis 0, 1 or 2."""
    return _axis("gid", axis)


def lid(axis=0):
    """["lid", axis]: the invocation id within its workgroup."""
    return _axis("lid", axis)


def wgid(axis=0):
    """["wgid", axis]: the workgroup id."""
    return _axis("wgid", axis)


def subgroup_reduce(op, value):
    """["subgroup_reduce", op, value]: add, mul, min, max (u32, i32, f32) or and, or, xor
    (u32, i32) over the active lanes of the subgroup."""
    text = "vyre.subgroup_reduce(%r, %s)" % (op, _text(value))
    if op not in REDUCTIONS:
        raise KernelError("no subgroup reduction %r" % (op,),
                          "use one of %s" % ", ".join(REDUCTIONS), text)
    value = _lift(value, None, text)
    if value.type not in REDUCTIONS[op]:
        raise KernelError("subgroup_reduce %s takes %s; here %s"
                          % (op, _types_text(REDUCTIONS[op]), value.type),
                          "convert the value with vyre.cast", text)
    return Expr(["subgroup_reduce", op, value.ir], value.type, text, decls=value.decls,
                atomics=value.atomics)


def subgroup_shuffle(value, lane):
    """["subgroup_shuffle", value, lane]: the value of lane `lane` (a u32) of the subgroup."""
    text = "vyre.subgroup_shuffle(%s, %s)" % (_text(value), _text(lane))
    value = _lift(value, None, text)
    lane = _lift(lane, "u32", text)
    if lane.type != "u32":
        raise KernelError("the lane of subgroup_shuffle is a u32; here %s" % lane.type,
                          "convert it: vyre.cast(\"u32\", %s)" % lane.text, text)
    decls, atomics = _join(value, lane)
    return Expr(["subgroup_shuffle", value.ir, lane.ir], value.type, text, decls=decls,
                atomics=atomics)


def subgroup_ballot(cond):
    """["subgroup_ballot", cond]: a u32 with bit k set where lane k's cond is true."""
    text = "vyre.subgroup_ballot(%s)" % _text(cond)
    cond = _condition(cond, "subgroup_ballot", text)
    return Expr(["subgroup_ballot", cond.ir], "u32", text, decls=cond.decls,
                atomics=cond.atomics)


def subgroup_lane():
    """["subgroup_lane"]: this invocation's lane in its subgroup."""
    return Expr(["subgroup_lane"], "u32", "vyre.subgroup_lane()")


def subgroup_size():
    """["subgroup_size"]: the number of lanes of a subgroup."""
    return Expr(["subgroup_size"], "u32", "vyre.subgroup_size()")


class Buffer:
    """A buffer of a Kernel. buf[i] loads element i, buf[i] = v stores, buf.len() is its length,
    and the atomic_* methods are the atomics (on read_write u32 buffers)."""

    def __init__(self, kernel, name, binding, access, typ, count, output, live_out, hints):
        self.kernel = kernel
        self.name = name
        self.binding = binding
        self.access = access
        self.type = typ
        self.count = count
        self.output = output
        self.live_out = live_out
        self.hints = hints

    # buf[i] builds a load for any i, so Python must not iterate a buffer by indexing it.
    __iter__ = None

    def __repr__(self):
        return "<vyre.Buffer %s: %s %s[%s], binding %d>" % (
            self.name, self.access, self.type, self.count or "by input", self.binding)

    def _index(self, index, text):
        index = _lift(index, "u32", text)
        if index.type != "u32":
            raise KernelError("the index of %s is a u32; here %s" % (self.name, index.type),
                              "convert it: vyre.cast(\"u32\", %s)" % index.text, text)
        return index

    def __getitem__(self, index):
        text = "%s[%s]" % (self.name, _text(index))
        if self.access == "write_only":
            raise KernelError("a load from %s, which is write_only" % self.name,
                              "declare it read_write: k.output(\"%s\", \"%s\", %d, "
                              "access=\"read_write\")" % (self.name, self.type, self.count), text)
        index = self._index(index, text)
        return Expr(["load", self.name, index.ir], self.type, text, decls=index.decls,
                    atomics=index.atomics)

    def __setitem__(self, index, value):
        self.kernel.store(self, index, value)

    def len(self):
        """["len", name]: the buffer's element count in this dispatch, a u32."""
        return Expr(["len", self.name], "u32", "%s.len()" % self.name)

    def atomic(self, op, index, value, expected=None):
        """["atomic", op, name, index, value] (compare_exchange: [..., index, expected, value]):
        the old element; the buffer is read_write u32. Use it in a node, k.let("old", ...) for
        its effect alone."""
        args = ", ".join(_text(v) for v in ((index, expected, value) if op == "compare_exchange"
                                           else (index, value)))
        text = "%s.atomic_%s(%s)" % (self.name, op, args)
        if op not in ATOMICS:
            raise KernelError("no atomic %r" % (op,), "use one of %s" % ", ".join(ATOMICS), text)
        if (op == "compare_exchange") != (expected is not None):
            raise KernelError("compare_exchange, and only it, takes an expected value",
                              "call atomic_compare_exchange(index, expected, value)", text)
        if self.access != "read_write" or self.type != "u32":
            raise KernelError("atomics work on read_write u32 buffers; %s is %s %s"
                              % (self.name, self.access, self.type),
                              "declare %s read_write of u32 (k.output(..., access=\"read_write\") "
                              "for a zero-filled one)" % self.name, text)
        index = self._index(index, text)
        parts = [index]
        if expected is not None:
            parts.append(_lift(expected, "u32", text))
        parts.append(_lift(value, "u32", text))
        for p in parts[1:]:
            if p.type != "u32":
                raise KernelError("the operands of an atomic are u32; here %s" % p.type,
                                  "convert it: vyre.cast(\"u32\", %s)" % p.text, text)
        decls, atomics = _join(*parts)
        mark = _Atomic(text)
        self.kernel._unused_atomics.add(mark)
        return Expr(["atomic", op, self.name] + [p.ir for p in parts], "u32", text,
                    decls=decls, atomics=atomics | {mark})

    def atomic_add(self, index, value):
        return self.atomic("add", index, value)

    def atomic_and(self, index, value):
        return self.atomic("and", index, value)

    def atomic_or(self, index, value):
        return self.atomic("or", index, value)

    def atomic_xor(self, index, value):
        return self.atomic("xor", index, value)

    def atomic_min(self, index, value):
        return self.atomic("min", index, value)

    def atomic_max(self, index, value):
        return self.atomic("max", index, value)

    def atomic_exchange(self, index, value):
        return self.atomic("exchange", index, value)

    def atomic_compare_exchange(self, index, expected, value):
        return self.atomic("compare_exchange", index, value, expected)

    def _json(self):
        out = {"name": self.name, "binding": self.binding, "access": self.access,
               "type": self.type, "count": self.count}
        if self.output:
            out["output"] = True
        if self.live_out:
            out["live_out"] = True
        if self.hints is not None:
            out["hints"] = dict(self.hints)
        return out


class _Block:
    __slots__ = ("kind", "nodes", "names", "parent_node")

    def __init__(self, kind, nodes, parent_node=None):
        self.kind = kind
        self.nodes = nodes
        self.names = set()
        self.parent_node = parent_node


class _Scope:
    """What `with k.if_(...)`, k.else_(), k.loop(...), k.block() and k.region(...) give: the
    node goes into the current block when the with statement starts, and the statements inside
    fill its body."""

    def __init__(self, kernel, node, block, value=None, on_exit=None):
        self.kernel = kernel
        self.node = node
        self.block = block
        self.value = value
        self.on_exit = on_exit

    def __enter__(self):
        k = self.kernel
        if self.node is not None:
            k._append(self.node)
        k._stack.append(self.block)
        return self.value

    def __exit__(self, *exc):
        k = self.kernel
        if k._stack and k._stack[-1] is self.block:
            k._stack.pop()
        if self.on_exit is not None:
            self.on_exit()
        return False


class Kernel:
    """A vyre program built statement by statement (see the module's description).

    Kernel(name=None, workgroup_size=64): name is the program's label (1 to 64 bytes), and
    workgroup_size an int (x) or up to three ints (x, y, z). Buffers are declared with input,
    uniform, inout, output and workgroup (or buffer); their bindings count up from 0 in the order
    of declaration unless given. program() gives the program as a dict, json() as JSON text; a
    Kernel is also accepted wherever the client takes a program.
    """

    def __init__(self, name=None, workgroup_size=64):
        if name is not None and (not isinstance(name, str) or not 1 <= len(name.encode()) <= 64):
            raise KernelError("the program's name is 1 to 64 bytes of text, not %r" % (name,),
                              "give a shorter name, or none")
        if isinstance(workgroup_size, int):
            workgroup_size = [workgroup_size]
        size = list(workgroup_size) + [1] * (3 - len(workgroup_size))
        if len(size) != 3 or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1
                                     for n in size):
            raise KernelError("workgroup_size is up to three ints of at least 1, not %r"
                              % (workgroup_size,), "give e.g. 64 or (8, 8)")
        self.name = name
        self.workgroup_size = size
        self._buffers = []
        self._entry = []
        self._stack = [_Block("entry", self._entry)]
        self._specs = {}
        self._segment = 0
        self._unused_atomics = set()
        self._last_if = None
        self._temp = 0

    def __repr__(self):
        return "<vyre.Kernel %s: %d buffers, %d nodes at the top>" % (
            self.name, len(self._buffers), len(self._entry))

    # --- buffers ---

    def buffer(self, name, type, access, count=0, binding=None, output=False, live_out=False,
               hints=None):
        """Declare a buffer with every field of docs/ir.md section 4; returns its Buffer.
        hints: None, or a dict of alignment, coalesce_axis and locality (defaults 0, None,
        "temporal")."""
        where = "buffer %r" % (name,)
        if not isinstance(name, str) or not _NAME.match(name):
            raise KernelError("%s: a buffer name matches [A-Za-z_][A-Za-z0-9_]{0,63}" % where,
                              "rename the buffer")
        if any(b.name == name for b in self._buffers):
            raise KernelError("%s is declared twice" % where, "give each buffer its own name")
        if type not in TYPES:
            raise KernelError("%s: no type %r" % (where, type), "use u32, i32, f32 or bool")
        if access not in ACCESS:
            raise KernelError("%s: no access %r" % (where, access),
                              "use one of %s" % ", ".join(ACCESS))
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 4294967295:
            raise KernelError("%s: count is an element count from 0 (sized by its input) to "
                              "4294967295, not %r" % (where, count), "give an int")
        no_input = access in ("write_only", "workgroup") or output
        if no_input and count == 0:
            raise KernelError("%s: a %s buffer receives no input, so it needs a count above 0"
                              % (where, "output" if output else access),
                              "give its element count")
        if output and access != "read_write":
            raise KernelError("%s: output is for read_write buffers (a %s buffer is returned "
                              "or not by its access alone)" % (where, access),
                              "declare it with k.output(name, type, count, "
                              "access=\"read_write\")")
        if binding is None:
            binding = max((b.binding for b in self._buffers), default=-1) + 1
        if not isinstance(binding, int) or isinstance(binding, bool) or binding < 0:
            raise KernelError("%s: binding is an int of 0 or more, not %r" % (where, binding),
                              "leave binding out to count from 0")
        if access != "workgroup" and any(b.binding == binding and b.access != "workgroup"
                                         for b in self._buffers):
            raise KernelError("%s: binding %d is taken" % (where, binding),
                              "leave binding out, or give an unused one")
        if hints is not None:
            hints = self._hints(where, hints)
        buf = Buffer(self, name, binding, access, type, count, bool(output), bool(live_out),
                     hints)
        self._buffers.append(buf)
        return buf

    @staticmethod
    def _hints(where, hints):
        unknown = set(hints) - {"alignment", "coalesce_axis", "locality"}
        if unknown:
            raise KernelError("%s: no hint %s" % (where, ", ".join(sorted(unknown))),
                              "use alignment, coalesce_axis and locality")
        out = {"alignment": hints.get("alignment", 0),
               "coalesce_axis": hints.get("coalesce_axis"),
               "locality": hints.get("locality", "temporal")}
        a = out["alignment"]
        if not isinstance(a, int) or a < 0 or a & (a - 1):
            raise KernelError("%s: alignment is 0 or a power of two, not %r" % (where, a),
                              "give 0, 4, 16, 64, 256...")
        if out["coalesce_axis"] not in (None, 0, 1, 2):
            raise KernelError("%s: coalesce_axis is 0, 1, 2 or None" % where,
                              "give the invocation axis, or None")
        if out["locality"] not in LOCALITIES:
            raise KernelError("%s: locality is one of %s" % (where, ", ".join(LOCALITIES)),
                              "give one of them")
        return out

    def input(self, name, type, count=0, **fields):
        """A read_only buffer: an input of the dispatch."""
        return self.buffer(name, type, "read_only", count, **fields)

    def uniform(self, name, type, count=0, **fields):
        """A uniform buffer: small read-only parameters that every invocation reads."""
        return self.buffer(name, type, "uniform", count, **fields)

    def inout(self, name, type, count=0, **fields):
        """A read_write buffer: an input of the dispatch that is returned as an output."""
        return self.buffer(name, type, "read_write", count, **fields)

    def output(self, name, type, count, access="write_only", **fields):
        """An output the daemon allocates zero-filled: write_only, or with access="read_write"
        a read_write buffer with output: true (one the program also loads, or an atomic
        counter)."""
        if access == "read_write":
            fields["output"] = True
        elif access != "write_only":
            raise KernelError("buffer %r: an output is write_only or read_write, not %r"
                              % (name, access), "give access=\"read_write\" or leave it out")
        return self.buffer(name, type, access, count, **fields)

    def workgroup(self, name, type, count, **fields):
        """A workgroup buffer: on-chip memory, one zeroed copy per workgroup."""
        return self.buffer(name, type, "workgroup", count, **fields)

    # --- expressions that belong to the kernel ---

    gid = staticmethod(gid)
    lid = staticmethod(lid)
    wgid = staticmethod(wgid)

    def spec(self, name, type, default):
        """["spec", name, type, [type, default]]: a constant fixed when the program is compiled
        (config.spec sets it per dispatch). Every use of a name has one type and default."""
        text = "k.spec(%r, %r, %r)" % (name, type, default)
        if not isinstance(name, str) or not _NAME.match(name):
            raise KernelError("a spec constant's name matches [A-Za-z_][A-Za-z0-9_]{0,63}",
                              "rename it", text)
        if type not in TYPES:
            raise KernelError("no type %r" % (type,), "use u32, i32, f32 or bool", text)
        value = literal(type, default, text)
        seen = self._specs.setdefault(name, value.ir)
        if seen != value.ir:
            raise KernelError("spec constant %s was declared as %s, now as %s"
                              % (name, json.dumps(seen), json.dumps(value.ir)),
                              "give every use of %s the same type and default" % name, text)
        return Expr(["spec", name, type, value.ir], type, text)

    # --- nodes ---

    def _check(self, exprs, text):
        for e in exprs:
            for d in e.decls:
                if not any(b is d.block for b in self._stack):
                    raise KernelError("variable %s is used outside the block that declares it"
                                      % d.name, "declare it before the block (k.let outside "
                                      "the with statement)", text)
                if d.segment != self._segment:
                    raise KernelError("variable %s was declared before a grid_sync, and "
                                      "variables do not cross one" % d.name,
                                      "declare it again after the grid_sync, and pass values "
                                      "between the phases through a buffer", text)

    def _append(self, node, exprs=(), text=None):
        self._check(exprs, text)
        for e in exprs:
            self._unused_atomics -= e.atomics
        self._stack[-1].nodes.append(node)
        self._last_if = None

    def _declare(self, name, what):
        if not isinstance(name, str) or not _NAME.match(name):
            raise KernelError("%s: a variable name matches [A-Za-z_][A-Za-z0-9_]{0,63}, not %r"
                              % (what, name), "rename it")
        if any(name in b.names for b in self._stack):
            raise KernelError("%s declares %s, which is already visible here (the IR has no "
                              "shadowing)" % (what, name), "choose another name")

    def let(self, name, value):
        """["let", name, value]: declare a variable; returns the expression that reads it. The
        value's type is the variable's for good (a Python float is f32, a bool is bool; an int
        needs vyre.u32 or vyre.i32). name=None picks a fresh name (_t0, _t1...), for an atomic
        done for its effect: k.let(None, bins.atomic_add(b, 1))."""
        if name is None:
            while any("_t%d" % self._temp in b.names for b in self._stack):
                self._temp += 1
            name = "_t%d" % self._temp
            self._temp += 1
        text = "k.let(%r, %s)" % (name, _text(value))
        self._declare(name, "k.let(%r)" % name)
        value = _lift(value, None, text)
        self._append(["let", name, value.ir], [value], text)
        block = self._stack[-1]
        block.names.add(name)
        return _variable(self, _Decl(name, block, self._segment, False, value.type))

    def assign(self, var, value):
        """["assign", name, value]: give a variable a new value of its type."""
        text = "k.assign(%s, %s)" % (_text(var), _text(value))
        if not isinstance(var, Expr) or var.decl is None or var.kernel is not self:
            raise KernelError("assign takes a variable of this kernel (from k.let)",
                              "declare the variable with k.let first", text)
        if var.decl.counter:
            raise KernelError("%s is a loop counter, which cannot be assigned" % var.name,
                              "copy it into a variable: k.let(\"v\", %s)" % var.name, text)
        value = _lift(value, var.type, text)
        if value.type != var.type:
            raise KernelError("variable %s is %s, the value %s" % (var.name, var.type,
                                                                    value.type),
                              "convert the value: vyre.cast(\"%s\", %s)" % (var.type, value.text),
                              text)
        self._append(["assign", var.name, value.ir], [var, value], text)

    def store(self, buffer, index, value):
        """["store", name, index, value]; buffer[index] = value says the same."""
        text = "%s[%s] = %s" % (buffer.name, _text(index), _text(value))
        if buffer.kernel is not self:
            raise KernelError("buffer %s belongs to another kernel" % buffer.name,
                              "declare it in this one", text)
        if buffer.access in ("read_only", "uniform"):
            fix = ("declare it with k.inout (read_write)" if buffer.access == "read_only" else
                   "store into a read_write or write_only buffer")
            raise KernelError("a store into %s, which is %s" % (buffer.name, buffer.access),
                              fix, text)
        index = buffer._index(index, text)
        value = _lift(value, buffer.type, text)
        if value.type != buffer.type:
            raise KernelError("%s holds %s, the value is %s" % (buffer.name, buffer.type,
                                                                value.type),
                              "convert it: vyre.cast(\"%s\", %s)" % (buffer.type, value.text),
                              text)
        self._append(["store", buffer.name, index.ir, value.ir], [index, value], text)

    def if_(self, cond):
        """with k.if_(cond): the then arm of ["if", cond, then, else]; cond is a bool or a u32.
        A `with k.else_():` right after it fills the else arm."""
        text = "k.if_(%s)" % _text(cond)
        cond = _condition(cond, "if", text)
        self._check([cond], text)
        self._unused_atomics -= cond.atomics
        node = ["if", cond.ir, [], []]
        block = _Block("then", node[2], node)
        parent = self._stack[-1]

        def done():
            self._last_if = (parent, node)

        scope = _Scope(self, node, block, on_exit=done)
        return scope

    def else_(self):
        """with k.else_(): the else arm of the if_ that ended just before."""
        parent = self._stack[-1]
        last = self._last_if
        if last is None or last[0] is not parent or not parent.nodes or \
                parent.nodes[-1] is not last[1]:
            raise KernelError("k.else_() comes right after a `with k.if_(...)` block, in the "
                              "same block", "move it under its if_")
        node = last[1]
        self._last_if = None
        return _Scope(self, None, _Block("else", node[3], node))

    def loop(self, name, start, stop):
        """with k.loop(name, start, stop) as i: ["loop", name, start, stop, body], the body run
        for i = start .. stop - 1 (u32 bounds, evaluated once)."""
        text = "k.loop(%r, %s, %s)" % (name, _text(start), _text(stop))
        self._declare(name, "k.loop(%r)" % name)
        start = _lift(start, "u32", text)
        stop = _lift(stop, "u32", text)
        for bound in (start, stop):
            if bound.type != "u32":
                raise KernelError("the bounds of a loop are u32; here %s" % bound.type,
                                  "convert it: vyre.cast(\"u32\", %s)" % bound.text, text)
        self._check([start, stop], text)
        self._unused_atomics -= start.atomics | stop.atomics
        node = ["loop", name, start.ir, stop.ir, []]
        block = _Block("loop", node[4], node)
        block.names.add(name)
        counter = _variable(self, _Decl(name, block, self._segment, True, "u32"))
        return _Scope(self, node, block, counter)

    def block(self):
        """with k.block(): ["block", body], a new scope."""
        node = ["block", []]
        return _Scope(self, node, _Block("block", node[1], node))

    def region(self, generator):
        """with k.region(generator): ["region", generator, body], a block that records which
        routine produced its body (1 to 64 bytes of text)."""
        if not isinstance(generator, str) or not 1 <= len(generator.encode()) <= 64:
            raise KernelError("a region's generator is 1 to 64 bytes of text, not %r"
                              % (generator,), "give a shorter name")
        node = ["region", generator, []]
        return _Scope(self, node, _Block("region", node[2], node))

    def return_(self):
        """["return"]: end this invocation."""
        self._append(["return"])

    def barrier(self, ordering="seq_cst"):
        """["barrier"] (seq_cst) or ["barrier", ordering] with acq_rel, release or acquire: a
        workgroup barrier. barrier("grid_sync") is grid_sync()."""
        if ordering == "grid_sync":
            return self.grid_sync()
        if ordering not in ORDERINGS:
            raise KernelError("no barrier ordering %r" % (ordering,),
                              "use one of %s, or k.grid_sync()" % ", ".join(ORDERINGS))
        self._append(["barrier"] if ordering == "seq_cst" else ["barrier", ordering])
        return None

    def grid_sync(self):
        """["barrier", "grid_sync"]: every invocation of the grid waits. Only at the top level
        of the entry, or in a region that is the entry's only node; variables declared before
        it cannot be used after it."""
        here = self._stack[-1]
        top = len(self._stack) == 1
        in_region = (len(self._stack) == 2 and here.kind == "region" and
                     len(self._entry) == 1 and self._entry[0] is here.parent_node)
        if not (top or in_region):
            raise KernelError("a grid_sync sits at the top level of the entry (or in a region "
                              "that is the entry's only node), not inside %s" % here.kind,
                              "move it out of the if, loop or block")
        self._append(["barrier", "grid_sync"])
        self._segment += 1

    # --- the program ---

    def program(self):
        """The program as Python data: the dict of docs/ir.md, keys and buffers in the order
        of the canonical form (section 14)."""
        if len(self._stack) > 1:
            raise KernelError("the program is asked for inside a with block (%s)"
                              % self._stack[-1].kind, "ask for it after the with statements")
        if self._unused_atomics:
            mark = next(iter(self._unused_atomics))
            raise KernelError("atomic %s is built but no node uses it, so it never happens"
                              % mark.text, "use it in a node, e.g. k.let(None, %s)" % mark.text)
        prog = {"vyre": 1}
        if self.name is not None:
            prog["name"] = self.name
        prog["workgroup_size"] = list(self.workgroup_size)
        prog["buffers"] = [b._json() for b in sorted(self._buffers,
                                                     key=lambda b: (b.binding, b.name))]
        prog["entry"] = copy.deepcopy(self._entry)
        return prog

    def json(self, indent=None):
        """The program as JSON text (json.dumps of program(), with `indent`)."""
        return json.dumps(self.program(), indent=indent)
