"""The errors of the vyre package: VyError (the daemon's error objects and the client's own),
VyConnectionError, and KernelError (a program that the kernel builder refuses to build)."""

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


class KernelError(VyError, TypeError):
    """A program the builder (vyre.Kernel) refuses: an operation on operands of types it does not
    take, a store into a buffer that cannot be stored to, a variable out of its scope. It has the
    code of the daemon's answer to the same mistake, INVALID_PROGRAM (1006, retry after_fix), and
    is raised where the Python line builds the expression. expr: the expression, written as
    Python (None when the error is about a node as a whole)."""

    def __init__(self, message, fix, expr=None):
        if expr is not None:
            message = "%s, in %s" % (message, expr)
        super().__init__("INVALID_PROGRAM", "%s. Fix: %s" % (message, fix), fix=fix, num=1006,
                         retry="after_fix")
        self.expr = expr
