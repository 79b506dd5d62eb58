"""Check a file against the Prometheus text exposition format 0.0.4, line by line.

usage: promcheck.py FILE [--expect 'NAME{label="value",...}OP NUMBER']...

The format's rules: every line is a HELP line, a TYPE line, another comment or a sample; names
match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* (not starting with __);
label values are quoted with only the escapes \\\\, \\" and \\n, and are valid UTF-8; values
parse as floats (NaN, +Inf, -Inf included); a family has at most one HELP and one TYPE line, its
TYPE comes before its samples and names a known type; a family's samples stay together (no family
appears twice); no sample repeats a name and label set; a summary's samples are its name with a
quantile label between 0 and 1 (in increasing order within a label set), or NAME_sum or
NAME_count; counters are not negative.

vyred's own conventions are checked too: every family has HELP and TYPE, names start with vyred_,
counters end in _total, and no name carries a unit other than a base unit (_ns, _ms, _us).

--expect finds the samples whose name is NAME and whose labels include the given ones (values
written with the format's escapes), and requires at least one, each with a value OP NUMBER, where
OP is one of == >= > <= <.

Prints one line of figures on success; prints every problem and exits 1 otherwise.
"""

import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
VALUE_RE = re.compile(r'"((?:[^"\\\n]|\\[\\"n])*)"')
HELP_RE = re.compile(r"^# HELP (" + NAME + r") (.*)$")
TYPE_RE = re.compile(r"^# TYPE (" + NAME + r") (\S+)$")
SAMPLE_RE = re.compile(r"^(" + NAME + r")(\{[^\n]*\})? (\S+)(?: (-?[0-9]+))?$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
EXPECT_RE = re.compile(r"^(" + NAME + r")(\{.*\})?(==|>=|<=|>|<)(\S+)$")


def unescape(text):
    return re.sub(r"\\(.)", lambda m: {"\\": "\\", '"': '"', "n": "\n"}[m.group(1)], text)


def parse_labels(text):
    """The label set of '{a="x",b="y"}' as a dict, or raise ValueError."""
    body = text[1:-1]
    labels = {}
    pos = 0
    while pos < len(body):
        m = re.compile(LABEL + "=").match(body, pos)
        if not m:
            raise ValueError("bad label name at %r" % body[pos:])
        name = m.group(0)[:-1]
        if name.startswith("__"):
            raise ValueError("reserved label name %s" % name)
        pos = m.end()
        v = VALUE_RE.match(body, pos)
        if not v:
            raise ValueError("bad label value for %s at %r" % (name, body[pos:]))
        if name in labels:
            raise ValueError("label %s repeated" % name)
        labels[name] = unescape(v.group(1))
        pos = v.end()
        if pos < len(body):
            if body[pos] != ",":
                raise ValueError("expected ',' at %r" % body[pos:])
            pos += 1
            if pos == len(body):
                break
    return labels


def parse_value(text):
    if text in ("NaN", "+Inf", "-Inf", "Inf"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", text):
        raise ValueError("value %r is not a float" % text)
    return float(text)


def family_of(name, types):
    """The family a sample name belongs to: itself, or a summary/histogram it is a part of."""
    for suffix, kinds in (("_sum", ("summary", "histogram")), ("_count", ("summary", "histogram")),
                          ("_bucket", ("histogram",))):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) in kinds:
            return name[: -len(suffix)], suffix
    return name, ""


def check(lines):
    problems = []
    helps, types, order = {}, {}, []
    seen_samples = set()
    samples = []
    closed = set()
    current = None
    last_quantile = {}
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip("\n")

        def bad(msg):
            problems.append("line %d: %s: %r" % (no, msg, line))

        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            bad("not UTF-8")
            continue
        if line == "":
            continue
        if line.startswith("#"):
            m = HELP_RE.match(line)
            t = TYPE_RE.match(line)
            if line.startswith("# HELP "):
                if not m:
                    bad("malformed HELP line")
                    continue
                if m.group(1) in helps:
                    bad("second HELP for %s" % m.group(1))
                if re.search(r"\\[^\\n]", m.group(2)):
                    bad("bad escape in HELP text")
                helps[m.group(1)] = m.group(2)
                fam = m.group(1)
            elif line.startswith("# TYPE "):
                if not t:
                    bad("malformed TYPE line")
                    continue
                fam, kind = t.group(1), t.group(2)
                if kind not in TYPES:
                    bad("unknown type %s" % kind)
                if fam in types:
                    bad("second TYPE for %s" % fam)
                if any(family_of(s[0], types)[0] == fam for s in samples):
                    bad("TYPE for %s after its samples" % fam)
                types[fam] = kind
            else:
                continue
            if fam != current:
                if fam in closed:
                    bad("family %s appears again" % fam)
                if current is not None:
                    closed.add(current)
                current = fam
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            bad("not a sample line")
            continue
        name, label_text, value_text = m.group(1), m.group(2), m.group(3)
        try:
            labels = parse_labels(label_text) if label_text else {}
            value = parse_value(value_text)
        except ValueError as e:
            bad(str(e))
            continue
        fam, suffix = family_of(name, types)
        if fam != current:
            if fam in closed:
                bad("family %s appears again" % fam)
            if current is not None:
                closed.add(current)
            current = fam
        key = (name, tuple(sorted(labels.items())))
        if key in seen_samples:
            bad("sample repeated")
        seen_samples.add(key)
        kind = types.get(fam, "untyped")
        if kind == "summary" and not suffix:
            q = labels.get("quantile")
            if q is None:
                bad("summary sample without quantile")
            else:
                qv = parse_value(q)
                if not 0 <= qv <= 1:
                    bad("quantile out of range")
                rest = tuple(sorted((k, v) for k, v in labels.items() if k != "quantile"))
                if last_quantile.get((fam, rest), -1) >= qv:
                    bad("quantiles not in increasing order")
                last_quantile[(fam, rest)] = qv
        if kind == "counter" and value < 0:
            bad("negative counter")
        samples.append((name, labels, value))
    for fam in set(types) | set(helps):
        if fam not in types:
            problems.append("%s: HELP without TYPE" % fam)
        if fam not in helps:
            problems.append("%s: TYPE without HELP" % fam)
        if not fam.startswith("vyred_"):
            problems.append("%s: name does not start with vyred_" % fam)
        if types.get(fam) == "counter" and not fam.endswith("_total"):
            problems.append("%s: counter name does not end in _total" % fam)
        if re.search(r"_(ns|ms|us)(_|$)", fam):
            problems.append("%s: name carries a unit that is not a base unit" % fam)
    for name, _, _ in samples:
        if family_of(name, types)[0] not in types:
            problems.append("%s: sample without TYPE" % name)
    return problems, types, samples


def expectation(spec, samples):
    m = EXPECT_RE.match(spec)
    if not m:
        return "malformed --expect %r" % spec
    name, label_text, op, number = m.groups()
    want = parse_labels(label_text) if label_text else {}
    limit = float(number)
    found = [s for s in samples if s[0] == name and all(s[1].get(k) == v for k, v in want.items())]
    if not found:
        return "no sample matches %s" % spec
    ops = {"==": lambda a, b: a == b, ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b,
           ">": lambda a, b: a > b, "<": lambda a, b: a < b}
    for s in found:
        if math.isnan(s[2]) or not ops[op](s[2], limit):
            return "%s: sample %s%s has value %r" % (spec, s[0], s[1], s[2])
    return None


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        print("%s: not UTF-8: %s" % (argv[1], e))
        return 1
    if text and not text.endswith("\n"):
        print("%s: the last line does not end with a newline" % argv[1])
        return 1
    problems, types, samples = check(text.split("\n")[:-1] if text else [])
    rest = argv[2:]
    while rest:
        if rest[0] != "--expect" or len(rest) < 2:
            print("unknown argument %r" % rest[0], file=sys.stderr)
            return 2
        p = expectation(rest[1], samples)
        if p:
            problems.append(p)
        rest = rest[2:]
    for p in problems:
        print(p)
    if problems:
        return 1
    print("prometheus: %d families, %d samples, format 0.0.4 clean" % (len(types), len(samples)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
