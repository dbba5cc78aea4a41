#!/usr/bin/env python3
"""Turns the operator schema files (*.schemas, one block per schema version)
into the C table lib/ir/schema.c searches.

Run by the build (meson custom_target); needs only Python 3, which meson itself
runs on.  Usage: gen_schemas.py OUT.c IN.schemas [IN.schemas ...]

Block format (blank lines separate blocks, '#' starts a comment line):
    op DOMAIN NAME SINCE_VERSION        DOMAIN: ai.onnx, ai.onnx.ml, ai.poprt, ...
    attr NAME TYPE [required]           TYPE: int float string tensor graph ints
                                        floats strings tensors graphs sparse_tensor
                                        sparse_tensors type_proto type_protos
    in NAME TYPE [optional|variadic|variadic-heterogeneous]
    out NAME TYPE [optional|variadic|variadic-heterogeneous]
    tc PARAM TYPE,TYPE,...
A formal's TYPE is a type parameter declared by a tc line or one concrete
type.  Types: tensor(E), seq(tensor(E)), optional(tensor(E)),
optional(seq(tensor(E))), map(K,V), seq(map(K,V)), sparse_tensor(E), with
E an ONNX element type name; E may also be a group (@float, @num, @all, ...,
see GROUPS) to keep hand-written blocks short.  Anything else in a line
(defaults, descriptions after the known words) is an error: the table must
mean exactly what it says.
"""
import sys

DTYPES = ["undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
          "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
          "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
          "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2"]
CODE = {n: i for i, n in enumerate(DTYPES)}

_F = ["float16", "float", "double"]
_INT = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]
_NUM = _INT + _F
_ALL = _NUM + ["string", "bool", "complex64", "complex128"]
_F8 = ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"]
GROUPS = {
    "@float": _F, "@float_bf16": _F + ["bfloat16"],
    "@int": _INT, "@num": _NUM, "@num_bf16": _NUM + ["bfloat16"],
    "@all": _ALL, "@all_bf16": _ALL + ["bfloat16"],
    "@float8": _F8,
    "@all_ir9": _ALL + ["bfloat16"] + _F8,
    "@all_ir10": _ALL + ["bfloat16"] + _F8 + ["uint4", "int4"],
    "@all_ir11": _ALL + ["bfloat16"] + _F8 + ["uint4", "int4", "float4e2m1"],
    "@all_ir12": _ALL + ["bfloat16"] + _F8 + ["uint4", "int4", "float4e2m1", "float8e8m0",
                                              "uint2", "int2"],
}
# typeset slots, in the order of poprt__typeset's fields
SLOTS = ["tensor", "seq", "opt_tensor", "opt_seq", "map_str", "map_i64", "seq_map_str",
         "seq_map_i64"]
ATTR_TYPES = {"float": 1, "int": 2, "string": 3, "tensor": 4, "graph": 5, "floats": 6,
              "ints": 7, "strings": 8, "tensors": 9, "graphs": 10, "sparse_tensor": 11,
              "sparse_tensors": 12, "type_proto": 13, "type_protos": 14}
HOW = {"": 0, "optional": 1, "variadic": 2, "variadic-heterogeneous": 3}


class Bad(Exception):
    pass


def elems(s):
    if s in GROUPS:
        return [CODE[e] for e in GROUPS[s]]
    if s not in CODE or s == "undefined":
        raise Bad("unknown element type '%s'" % s)
    return [CODE[s]]


def split_top(s):
    """Splits at commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur:
        out.append(cur)
    return out


def inner(s, prefix):
    if s.startswith(prefix + "(") and s.endswith(")"):
        return s[len(prefix) + 1:-1]
    return None


def classify(s):
    """(slot, element names) of one type string."""
    for wrap, slot in (("tensor", 0), ("sparse_tensor", 0)):
        e = inner(s, wrap)
        if e is not None:
            return slot, e
    for outer, base in (("seq", 1), ("optional", 2)):
        e = inner(s, outer)
        if e is None:
            continue
        t = inner(e, "tensor")
        if t is not None:
            return base, t
        q = inner(e, "seq") if outer == "optional" else None
        t = inner(q, "tensor") if q is not None else None
        if t is not None:
            return 3, t
        m = inner(e, "map") if outer == "seq" else None
        if m is not None:
            return map_slot(m, 6)
        raise Bad("type '%s'" % s)
    m = inner(s, "map")
    if m is not None:
        return map_slot(m, 4)
    raise Bad("type '%s'" % s)


def map_slot(m, first):
    k, v = split_top(m)
    if k not in ("string", "int64"):
        raise Bad("map key type '%s'" % k)
    return first + (k == "int64"), v


def add_type(ts, s):
    """Adds one type string to the typeset ts (a list of 8 masks)."""
    slot, e = classify(s)
    for c in elems(e):
        ts[slot] |= 1 << c


def parse(path):
    blocks, cur = [], None
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            w = line.split()
            try:
                if w[0] == "op":
                    if len(w) != 4:
                        raise Bad("op line needs DOMAIN NAME VERSION")
                    cur = {"domain": "" if w[1] == "ai.onnx" else w[1], "name": w[2],
                           "since": int(w[3]), "attrs": [], "in": [], "out": [], "tc": {},
                           "where": "%s:%d" % (path, no)}
                    blocks.append(cur)
                elif cur is None:
                    raise Bad("line before the first op line")
                elif w[0] == "attr":
                    if len(w) not in (3, 4) or w[2] not in ATTR_TYPES or \
                            (len(w) == 4 and w[3] != "required"):
                        raise Bad("attr line: NAME TYPE [required]")
                    cur["attrs"].append((w[1], ATTR_TYPES[w[2]], len(w) == 4))
                elif w[0] in ("in", "out"):
                    if len(w) not in (3, 4) or (len(w) == 4 and w[3] not in HOW):
                        raise Bad("%s line: NAME TYPE [optional|variadic|...]" % w[0])
                    cur[w[0]].append((w[1], w[2], HOW[w[3] if len(w) == 4 else ""]))
                elif w[0] == "tc":
                    if len(w) != 3:
                        raise Bad("tc line: PARAM TYPE,TYPE,...")
                    ts = [0] * 8
                    for t in split_top(w[2]):
                        add_type(ts, t)
                    cur["tc"][w[1]] = ts
                else:
                    raise Bad("unknown line kind '%s'" % w[0])
            except (Bad, ValueError) as e:
                raise SystemExit("%s:%d: %s" % (path, no, e))
    return blocks


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    out_path, inputs = sys.argv[1], sys.argv[2:]
    blocks = []
    for p in inputs:
        blocks += parse(p)
    blocks.sort(key=lambda b: (b["domain"], b["name"], b["since"]))
    seen = set()
    typesets, ts_index = [], {}

    def ts_id(ts):
        key = tuple(ts)
        if key not in ts_index:
            ts_index[key] = len(typesets)
            typesets.append(key)
        return ts_index[key]

    body = []
    for k, b in enumerate(blocks):
        key = (b["domain"], b["name"], b["since"])
        if key in seen:
            raise SystemExit("%s: %s %s %d is defined twice" % ((b["where"],) + key))
        seen.add(key)
        params, pnames = [], {}
        for name, ts in b["tc"].items():
            pnames[name] = len(params)
            params.append(ts_id(ts))

        def formals(lst, what):
            rows = []
            for name, typ, how in lst:
                if typ in pnames:
                    p = pnames[typ]
                else:
                    ts = [0] * 8
                    try:
                        add_type(ts, typ)
                    except Bad as e:
                        raise SystemExit("%s: %s '%s': %s (not a declared type parameter "
                                         "either)" % (b["where"], what, name, e))
                    p = len(params)
                    params.append(ts_id(ts))
                rows.append("{%s, %d, %d}" % (cstr(name), p, how))
            return rows

        ins = formals(b["in"], "input")
        outs = formals(b["out"], "output")
        if len(params) > 255 or len(ins) > 255 or len(outs) > 255 or len(b["attrs"]) > 255:
            raise SystemExit("%s: too many entries" % b["where"])
        arr = []
        if ins:
            arr.append("static const poprt__formal in%d[] = {%s};" % (k, ", ".join(ins)))
        if outs:
            arr.append("static const poprt__formal out%d[] = {%s};" % (k, ", ".join(outs)))
        if b["attrs"]:
            arr.append("static const poprt__attr_decl at%d[] = {%s};" % (k, ", ".join(
                "{%s, %d, %d}" % (cstr(n), t, int(r)) for n, t, r in b["attrs"])))
        if params:
            arr.append("static const uint16_t tc%d[] = {%s};" % (k, ", ".join(map(str, params))))
        b["c"] = arr
        b["row"] = "{%s, %s, %d, %d, %d, %d, %d, %s, %s, %s, %s}" % (
            cstr(b["domain"]), cstr(b["name"]), b["since"], len(ins), len(outs),
            len(b["attrs"]), len(params), "in%d" % k if ins else "NULL",
            "out%d" % k if outs else "NULL", "at%d" % k if b["attrs"] else "NULL",
            "tc%d" % k if params else "NULL")
    lines = ["/* Generated by lib/ir/schemas/gen_schemas.py from the lib/ir/schemas/ files:",
             " * do not edit; edit the .schemas files. */",
             "#include \"ir/schema.h\"", "",
             "const poprt__typeset poprt__typesets[] = {"]
    for ts in typesets:
        lines.append("    {{%s}}," % ", ".join("0x%xu" % m for m in ts))
    lines.append("};")
    for b in blocks:
        lines += b["c"]
    lines.append("const poprt__schema poprt__schemas[] = {")
    for b in blocks:
        lines.append("    %s," % b["row"])
    lines.append("};")
    lines.append("const size_t poprt__n_schemas = %d;" % len(blocks))
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
