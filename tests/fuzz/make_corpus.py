#!/usr/bin/python3
"""Write the seed corpora of the libFuzzer targets (tests/fuzz/corpus/).

    tests/fuzz/make_corpus.py          rewrite corpus/program, corpus/request and corpus/frame

Seeds are small msgpack documents built here with python3-msgpack: valid programs covering every
node kind and most expression kinds, one valid request per operation, streams of frames in the
input format of fuzz_frame.c (a control byte and chunk sizes first), and a few deliberately
broken documents of each kind. The output is deterministic, so rerunning it changes nothing
unless this script changed.
"""

import os
import struct
import sys

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def pack(obj, single_float=True):
    return msgpack.packb(obj, use_bin_type=True, use_single_float=single_float)


def buf(name, binding, access, typ, count, output=None, live_out=None, hints=None):
    b = {"name": name, "binding": binding, "access": access, "type": typ, "count": count}
    if output is not None:
        b["output"] = output
    if live_out is not None:
        b["live_out"] = live_out
    if hints is not None:
        b["hints"] = hints
    return b


def program(entry, buffers, wg=(64, 1, 1), name=None):
    p = {"vyre": 1}
    if name is not None:
        p["name"] = name
    p["workgroup_size"] = list(wg)
    p["buffers"] = buffers
    p["entry"] = entry
    return p


def u32(v):
    return ["u32", v]


def gid0():
    return ["gid", 0]


def guarded(buffer, body):
    """if gid.x < len(buffer) then body"""
    return ["if", ["lt", gid0(), ["len", buffer]], body, []]


BINOPS = ("add sub mul div mod bit_and bit_or bit_xor shl shr eq ne lt le gt ge and or min max "
          "abs_diff sat_add sat_sub sat_mul rotl rotr mul_high").split()
UNOPS_F32 = ("neg abs sign floor ceil round trunc sqrt inverse_sqrt reciprocal exp exp2 log log2 "
             "sin cos tan asin acos atan sinh cosh tanh").split()
UNOPS_U32 = "bit_not not popcount clz ctz reverse_bits unpack4_low unpack4_high unpack8_low " \
            "unpack8_high".split()


def valid_programs():
    progs = {}
    xs = [buf("x", 0, "read_only", "f32", 0), buf("y", 1, "read_write", "f32", 0)]
    progs["saxpy"] = program([
        ["let", "i", gid0()],
        guarded("y", [["store", "y", ["var", "i"],
                       ["fma", ["spec", "a", "f32", ["f32", 2.0]], ["load", "x", ["var", "i"]],
                        ["load", "y", ["var", "i"]]]]]),
    ], xs, name="saxpy")
    progs["loop_sum"] = program([
        ["let", "acc", ["i32", 0]],
        ["loop", "k", u32(0), ["len", "src"],
         [["assign", "acc", ["add", ["var", "acc"], ["load", "src", ["var", "k"]]]]]],
        ["store", "dst", u32(0), ["var", "acc"]],
    ], [buf("src", 0, "read_only", "i32", 16), buf("dst", 1, "write_only", "i32", 1, output=True)],
        wg=(1, 1, 1))
    progs["atomics"] = program([
        ["let", "old", ["atomic", "add", "h", u32(0), u32(1)]],
        ["let", "cas", ["atomic", "compare_exchange", "h", u32(1), ["var", "old"], u32(7)]],
        ["let", "m", ["atomic", "max", "h", u32(2), ["var", "cas"]]],
        ["store", "h", u32(3), ["atomic", "exchange", "h", u32(4), ["var", "m"]]],
    ], [buf("h", 0, "read_write", "u32", 8)])
    progs["workgroup_barrier"] = program([
        ["store", "tile", ["lid", 0], ["load", "inp", gid0()]],
        ["barrier"],
        ["barrier", "acq_rel"],
        ["store", "out", gid0(),
         ["load", "tile", ["sub", u32(63), ["lid", 0]]]],
        ["store", "out", ["wgid", 0], ["load", "tile", u32(0)]],
    ], [buf("inp", 0, "read_only", "u32", 256),
        buf("out", 1, "write_only", "u32", 256, output=True),
        buf("tile", 2, "workgroup", "u32", 64)])
    progs["subgroups"] = program([
        ["let", "v", ["load", "a", gid0()]],
        ["store", "a", gid0(), ["subgroup_reduce", "add", ["var", "v"]]],
        ["store", "a", ["add", gid0(), u32(1)],
         ["subgroup_shuffle", ["var", "v"], ["subgroup_lane"]]],
        ["store", "a", u32(0), ["subgroup_ballot", ["eq", ["var", "v"], u32(0)]]],
        ["store", "a", u32(1), ["subgroup_size"]],
    ], [buf("a", 0, "read_write", "u32", 0)], wg=(32, 1, 1))
    progs["regions_blocks"] = program([
        ["region", "matmul_tile", [
            ["block", [["let", "t", u32(3)], ["store", "o", ["var", "t"], u32(9)]]],
            ["barrier", "release"],
        ]],
        ["barrier", "grid_sync"],
        ["block", [["if", ["ge", ["wgid", 0], u32(4)], [["return"]], [["barrier", "acquire"]]]]],
        ["barrier", "seq_cst"],
    ], [buf("o", 0, "read_write", "u32", 16, live_out=True)])
    progs["specs"] = program([
        ["let", "a", ["spec", "su", "u32", ["u32", 4294967295]]],
        ["let", "b", ["spec", "si", "i32", ["i32", -2147483648]]],
        ["let", "c", ["spec", "sf", "f32", ["f32", -0.0]]],
        ["let", "d", ["spec", "sb", "bool", ["bool", True]]],
        ["store", "o", u32(0),
         ["select", ["var", "d"], ["var", "a"], ["cast", "u32", ["var", "b"]]]],
        ["store", "o", u32(1), ["cast", "u32", ["var", "c"]]],
    ], [buf("o", 0, "write_only", "u32", 2, output=True)], wg=(1, 1, 1))
    progs["hints"] = program([["store", "o", gid0(), ["load", "i", gid0()]]], [
        buf("i", 3, "read_only", "f32", 1024,
            hints={"alignment": 64, "coalesce_axis": 0, "locality": "streaming"}),
        buf("o", 1, "write_only", "f32", 1024, output=True,
            hints={"alignment": 16, "coalesce_axis": None, "locality": "random"}),
        buf("u", 0, "uniform", "u32", 4, hints={}),
    ], wg=(8, 8, 1), name="copy with hints")
    entry = []
    for k, op in enumerate(UNOPS_F32):
        entry.append(["let", "f%d" % k, [op, ["load", "x", u32(k)]]])
    entry.append(["store", "b", u32(0), ["is_nan", ["var", "f0"]]])
    entry.append(["store", "b", u32(1), ["is_inf", ["f32", float("inf")]]])
    entry.append(["store", "b", u32(2), ["is_finite", ["f32", float("-inf")]]])
    progs["float_unary"] = program(entry, [buf("x", 0, "read_only", "f32", 32),
                                           buf("b", 1, "read_write", "bool", 3)])
    entry = []
    for k, op in enumerate(UNOPS_U32):
        entry.append(["let", "u%d" % k, [op, ["load", "x", u32(k)]]])
    progs["int_unary"] = program(entry, [buf("x", 0, "read_only", "u32", 16)])
    entry = []
    for k, op in enumerate(BINOPS):
        entry.append(["let", "r%d" % k, [op, ["load", "x", u32(k)], u32(k)]])
    progs["binary_u32"] = program(entry, [buf("x", 0, "read_only", "u32", 32)])
    progs["bool_logic"] = program([
        ["let", "p", ["and", ["lt", gid0(), u32(5)], ["not", ["bool", False]]]],
        ["store", "flags", gid0(), ["or", ["var", "p"], ["load", "flags", gid0()]]],
        ["store", "n", gid0(), ["neg", ["i32", 5]]],
        ["store", "n", u32(1), ["abs", ["cast", "i32", ["load", "flags", u32(0)]]]],
    ], [buf("flags", 0, "read_write", "bool", 8), buf("n", 1, "read_write", "i32", 8)])
    progs["literals"] = program([
        ["let", "a", ["f32", float("nan")]],
        ["let", "b", ["f32", 1e-45]],
        ["let", "c", ["f32", 3.4028234663852886e38]],
        ["let", "d", ["f32", "inf"]],
        ["let", "e", ["f32", "-inf"]],
        ["let", "f", ["f32", "nan"]],
        ["let", "g", ["f32", 3]],
        ["let", "h", ["i32", 2147483647]],
        ["let", "i", ["u32", 0]],
    ], [], wg=(1, 1, 1))
    deep_if = [["store", "o", u32(0), u32(1)]]
    for _ in range(60):
        deep_if = [["if", ["bool", True], deep_if, []]]
    progs["nested_ifs_60"] = program(deep_if, [buf("o", 0, "read_write", "u32", 1)])
    expr = ["u32", 1]
    for _ in range(120):
        expr = ["add", expr, u32(1)]
    progs["deep_expr_120"] = program([["store", "o", u32(0), expr]],
                                     [buf("o", 0, "read_write", "u32", 1)])
    progs["empty"] = program([], [], wg=(1, 1, 1))
    return progs


def broken_programs(valid):
    saxpy = valid["saxpy"]
    out = {}
    good = pack(saxpy)
    out["truncated"] = good[:len(good) // 2]
    out["trailing_byte"] = good + b"\xc0"
    out["unknown_field"] = pack(dict(saxpy, extra=1))
    bad_buf = dict(saxpy, buffers=[dict(saxpy["buffers"][0], bindng=0)])
    out["unknown_buffer_field"] = pack(bad_buf)
    out["binding_is_string"] = pack(dict(saxpy, buffers=[dict(saxpy["buffers"][0], binding="0")]))
    out["float64_literal"] = pack(saxpy, single_float=False)
    out["huge_array_count"] = b"\x85\xa4vyre\x01\xa5entry\xdd\xff\xff\xff\xff"
    out["huge_map_count"] = b"\xdf\xff\xff\xff\xff\xa4vyre\x01"
    out["huge_str"] = b"\x81\xdb\xff\xff\xff\xffvyre"
    out["huge_bin"] = b"\x81\xa4name\xc6\xff\xff\xff\xff"
    out["reserved_byte"] = b"\x81\xa4vyre\xc1"
    too_many = [buf("b%d" % k, k, "read_only", "u32", 1) for k in range(33)]
    out["33_buffers"] = pack(program([], too_many))
    deep = []
    for _ in range(70):
        deep = [["block", deep]]
    out["nesting_70"] = pack(program(deep, []))
    expr = ["u32", 1]
    for _ in range(140):
        expr = ["neg", expr]
    out["expr_140"] = pack(program([["let", "v", expr]], []))
    out["type_error"] = pack(program([["let", "v", ["add", ["u32", 1], ["f32", 1.0]]]], []))
    out["scope_error"] = pack(program([["assign", "nope", ["u32", 1]]], []))
    return out


def requests(valid):
    prog = valid["saxpy"]
    config = {"grid": [4, 1, 1], "workgroup_size": [64, 1, 1],
              "spec": {"a": 2.5, "n": 3, "m": -1, "flag": True},
              "max_loop_iterations": 1 << 20, "timeout_ms": 5000, "label": "seed",
              "device": 0, "backend": "reference", "timing": True}
    reqs = {
        "hello": {"id": 1, "op": "hello", "protocol": 1, "client": "corpus"},
        "ping": {"id": 2, "op": "ping"},
        "compile": {"id": 3, "op": "compile", "program": prog, "config": config},
        "dispatch_program": {"id": 4, "op": "dispatch", "program": prog,
                             "inputs": [b"\x00\x00\x80\x3f" * 4, {"resident": 77},
                                        {"shm": [5, 0, 16]}],
                             "config": {"backend": "vulkan"}, "outputs_to": [None, 9]},
        "dispatch_id": {"id": 5, "op": "dispatch", "program_id": "0123456789abcdef" * 2,
                        "inputs": [b"\x01\x02\x03\x04"]},
        "alloc": {"id": 6, "op": "alloc", "size": 4096, "name": "shared"},
        "upload": {"id": 7, "op": "upload", "handle": 12345, "data": b"\xde\xad\xbe\xef",
                   "offset": 8},
        "download": {"id": 8, "op": "download", "handle": 12345, "offset": 0, "length": 4},
        "free": {"id": 9, "op": "free", "handle": 12345},
        "stats": {"id": 10, "op": "stats"},
        "clients": {"id": 11, "op": "clients"},
        "buffers": {"id": 12, "op": "buffers"},
        "cache_list": {"id": 13, "op": "cache_list"},
        "cache_clear": {"id": 14, "op": "cache_clear"},
        "shm_attach": {"id": 15, "op": "shm_attach", "size": 1 << 20},
        "shm_detach": {"id": 16, "op": "shm_detach", "region": 3},
        "compile_loop": {"id": 17, "op": "compile", "program": valid["loop_sum"]},
        "dispatch_atomics": {"id": 18, "op": "dispatch", "program": valid["atomics"],
                             "inputs": [bytes(32)]},
    }
    docs = {name: pack(r) for name, r in reqs.items()}
    docs["unknown_op"] = pack({"id": 20, "op": "reboot"})
    docs["missing_id"] = pack({"op": "ping"})
    docs["unknown_field"] = pack({"id": 21, "op": "ping", "verbose": True})
    docs["unknown_config_field"] = pack({"id": 22, "op": "compile", "program": prog,
                                         "config": {"gird": [1, 1, 1]}})
    docs["bad_program"] = pack({"id": 23, "op": "compile",
                                "program": dict(prog, workgroup_size="64")})
    docs["not_a_map"] = pack([1, "ping"])
    docs["trailing_bytes"] = pack({"id": 24, "op": "ping"}) + b"\x00"
    docs["truncated"] = docs["compile"][:40]
    docs["huge_inputs"] = b"\x83\xa2id\x01\xa2op\xa8dispatch\xa6inputs\xdd\xff\xff\xff\xff"
    docs["duplicate_field"] = b"\x84\xa2id\x01\xa2op\xa4free\xa6handle\x01\xa6handle\x02"
    return docs


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def frame_streams(reqs):
    """Inputs of fuzz_frame: control byte, chunk sizes, then the stream."""
    streams = {}

    def add(name, control, sizes, stream):
        assert len(sizes) == (control & 7) + 1
        streams[name] = bytes([control]) + bytes(sizes) + stream

    add("one_ping_bytewise", 0, [0], frame(reqs["ping"]))
    add("one_compile_whole", 0, [255], frame(reqs["compile"]))
    add("hello_then_dispatch", 1, [3, 250], frame(reqs["hello"]) + frame(reqs["dispatch_program"]))
    add("every_op", 2, [16, 1, 64],
        b"".join(frame(reqs[k]) for k in ("hello", "ping", "alloc", "upload", "download", "free",
                                          "stats", "clients", "buffers", "cache_list",
                                          "cache_clear", "shm_attach", "shm_detach")))
    add("pipelined_small_max", 8 | 3, [7, 7, 200, 1], b"".join(
        frame(reqs[k]) for k in ("ping", "compile", "dispatch_id", "compile_loop")))
    add("broken_requests", 4, [9, 2, 30, 5, 100], b"".join(
        frame(reqs[k]) for k in ("unknown_op", "missing_id", "unknown_field", "not_a_map",
                                 "trailing_bytes", "bad_program", "ping")))
    add("zero_length", 0, [1], frame(reqs["ping"]) + b"\x00\x00\x00\x00" + frame(reqs["ping"]))
    add("two_gib", 0, [2], b"\x80\x00\x00\x00" + reqs["ping"])
    add("all_ones_length", 1, [0, 3], b"\xff\xff\xff\xff")
    add("announced_large_sent_little", 0, [255], b"\x0c\x80\x00\x00" + bytes(10))
    add("over_small_max", 8, [50], frame(reqs["ping"]) + frame(bytes(5000)))
    add("truncated_frame", 0, [4], frame(reqs["compile"])[:-3])
    add("header_split", 7, [0, 0, 0, 0, 0, 0, 0, 0], frame(reqs["stats"]) * 3)
    add("large_payload", 0, [254], frame(pack({"id": 30, "op": "upload", "handle": 1,
                                               "data": bytes(70000)})))
    # every request seed alone in a frame, fed in chunks of 1 to 8 bytes
    for k, name in enumerate(sorted(reqs)):
        add("single_" + name, 0, [k % 8], frame(reqs[name]))
    return streams


def write_dir(name, docs):
    d = os.path.join(CORPUS, name)
    os.makedirs(d, exist_ok=True)
    for entry in os.listdir(d):
        os.unlink(os.path.join(d, entry))
    for doc_name, data in sorted(docs.items()):
        with open(os.path.join(d, doc_name), "wb") as f:
            f.write(data)


def main():
    if len(sys.argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    valid = valid_programs()
    programs = {name: pack(p) for name, p in valid.items()}
    programs.update(broken_programs(valid))
    reqs = requests(valid)
    write_dir("program", programs)
    write_dir("request", reqs)
    write_dir("frame", frame_streams(reqs))
    print("corpus: %d programs, %d requests, %d frame streams" % (
        len(programs), len(reqs), len(frame_streams(reqs))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
