"""An independent check of `deltafs cat --where`.

Usage: wherecheck.py DELTAFS TABLE TYPES.json

Reads every row of TABLE's latest version with `deltafs cat` (no filter),
builds predicates for each column of a filterable type (TYPES.json maps
column names to Delta type names) from the values found there, and for
each one compares `deltafs cat --where SQL` with the unfiltered rows this
script keeps by its own evaluation of the predicate: SQL three-valued
logic, NULL for a comparison with NULL, NaN greatest and equal to itself.
Prints one line per mismatch and exits 1 when there is any; the last line
says how many predicates were checked.
"""
import base64
import json
import math
import subprocess
import sys
from decimal import Decimal

BIN, TABLE, TYPES = sys.argv[1:4]
types = json.load(open(TYPES))


def cat(where=None):
    args = [BIN, "cat", TABLE]
    if where is not None:
        args += ["--where", where]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"deltafs cat --where {where!r}: exit {p.returncode}: {p.stderr.strip()}")
    return [line for line in p.stdout.split("\n") if line]


INTS = {"long", "integer", "short", "byte"}
FLOATS = {"float", "double"}


def norm(typ, v):
    """A value of cat's JSON as a comparable Python value (None: null)."""
    if v is None:
        return None
    if typ in INTS:
        return int(v)
    if typ in FLOATS:
        if isinstance(v, str):
            return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
        return float(v)
    if typ.startswith("decimal"):
        return Decimal(v)
    if typ == "binary":
        return base64.b64decode(v)
    if typ == "string":
        # Code point order is UTF-8 byte order.
        return v.encode("utf-8")
    return v  # boolean; date and timestamps as fixed-width text


def key(typ, v):
    if typ in FLOATS:
        return (1, 0.0) if math.isnan(v) else (0, v)
    return v


def cmp(typ, a, b):
    ka, kb = key(typ, a), key(typ, b)
    return (ka > kb) - (ka < kb)


def sql_lit(typ, v):
    if typ in INTS:
        return str(v)
    if typ in FLOATS:
        return repr(v)
    if typ.startswith("decimal"):
        return str(v)
    if typ == "binary":
        return "X'" + v.hex() + "'"
    if typ == "string":
        return "'" + v.decode("utf-8").replace("'", "''") + "'"
    if typ == "boolean":
        return "TRUE" if v else "FALSE"
    if typ == "date":
        return f"DATE '{v}'"
    return f"TIMESTAMP '{v}'"


def sql_col(name):
    return "`" + name.replace("`", "``") + "`"


# Predicates: (sql, tree). Trees: ("cmp", col, op, lit), ("in", col, lits,
# has_null), ("isnull", col), ("not", x), ("and", x, y), ("or", x, y),
# ("col", col) for a bare boolean column.
def ev(t, row):
    k = t[0]
    if k == "cmp":
        _, c, op, lit = t
        x = row[c]
        if x is None:
            return None
        r = cmp(types[c], x, lit)
        return {"=": r == 0, "<>": r != 0, "<": r < 0, "<=": r <= 0, ">": r > 0, ">=": r >= 0}[op]
    if k == "in":
        _, c, lits, has_null = t
        x = row[c]
        if x is None:
            return None
        if any(cmp(types[c], x, v) == 0 for v in lits):
            return True
        return None if has_null else False
    if k == "isnull":
        return row[t[1]] is None
    if k == "col":
        return row[t[1]]
    if k == "not":
        x = ev(t[1], row)
        return None if x is None else not x
    a, b = ev(t[1], row), ev(t[2], row)
    if k == "and":
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def predicates(col, typ, vals):
    c = sql_col(col)
    out = [(f"{c} IS NULL", ("isnull", col)), (f"{c} IS NOT NULL", ("not", ("isnull", col)))]
    if typ == "boolean":
        out += [(c, ("col", col)), (f"NOT {c}", ("not", ("col", col))), (f"{c} = FALSE", ("cmp", col, "=", False))]
        return out
    finite = [v for v in vals if not (typ in FLOATS and (math.isnan(v) or math.isinf(v)))]
    if not finite:
        return out
    finite.sort(key=lambda v: key(typ, v))
    lo, mid, hi = finite[0], finite[len(finite) // 2], finite[-1]
    L = lambda v: sql_lit(typ, v)
    for op in ["=", "<>", "<", "<=", ">", ">="]:
        out.append((f"{c} {op} {L(mid)}", ("cmp", col, op, mid)))
    out += [
        (f"{c} > {L(hi)}", ("cmp", col, ">", hi)),
        (f"{L(lo)} > {c}", ("cmp", col, "<", lo)),
        (f"{c} IN ({L(lo)}, {L(hi)})", ("in", col, [lo, hi], False)),
        (f"{c} NOT IN ({L(mid)}, NULL)", ("not", ("in", col, [mid], True))),
        (f"{c} BETWEEN {L(lo)} AND {L(mid)}", ("and", ("cmp", col, ">=", lo), ("cmp", col, "<=", mid))),
        (f"NOT ({c} = {L(mid)}) OR {c} IS NULL", ("or", ("not", ("cmp", col, "=", mid)), ("isnull", col))),
        (f"{c} = NULL", ("cmp-null",)),
    ]
    return out


def main():
    lines = cat()
    rows = []
    for line in lines:
        raw = json.loads(line, parse_float=Decimal)
        rows.append({c: norm(t, raw.get(c)) for c, t in types.items()})
    preds = []
    for col, typ in types.items():
        vals = [r[col] for r in rows if r[col] is not None]
        preds += predicates(col, typ, vals)
    cols = list(types)
    if len(cols) >= 2:
        a, b = cols[0], cols[1]
        preds.append((f"{sql_col(a)} IS NOT NULL AND NOT {sql_col(b)} IS NULL",
                      ("and", ("not", ("isnull", a)), ("not", ("isnull", b)))))
    bad = 0
    for sql, tree in preds:
        if tree[0] == "cmp-null":
            want = []  # a comparison with NULL is never TRUE
        else:
            want = [line for line, row in zip(lines, rows) if ev(tree, row) is True]
        got = cat(sql)
        if got != want:
            bad += 1
            print(f"MISMATCH {TABLE} --where {sql!r}: deltafs {len(got)} rows, python {len(want)}")
    print(f"checked {len(preds)} predicates over {len(rows)} rows")
    sys.exit(1 if bad else 0)


main()
