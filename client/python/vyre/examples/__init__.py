"""Complete programs using vyred from Python, each runnable as `python3 -m vyre.examples.NAME
[SOCKET]` (the socket defaults to $VYRED_SOCKET, else /run/vyred/vyred.sock), each checking its
result against numpy and exiting 1 on a difference:

- saxpy: y = alpha * x + y, the first program to try;
- histogram: counting with atomics into a zero-filled output;
- prefix_sum: a scan in workgroup memory, then across workgroups after a grid_sync;
- softmax: per row, a max and a sum reduced in workgroup memory, with exp;
- resident_chain: dispatches chained on resident buffers, with no data through the socket
  between them.

Each module has build() (the Kernel), run(vy, ...) (its dispatch on a connection) and
reference(...) (the same computed with numpy). They need numpy, except saxpy, which also runs
without it.
"""
