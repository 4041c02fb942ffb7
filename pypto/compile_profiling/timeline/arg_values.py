"""The one rule for a slice argument, shared by both trace writers: a value's kind, and how
each format renders that kind.

| kind     | values                                          | JSON (`write_json`)     | protobuf (`write_proto`) |
|----------|-------------------------------------------------|-------------------------|--------------------------|
| `INT`    | int in [-2**63, 2**63), NumPy signed ints        | its digits              | `int_value`              |
| `UINT`   | int in [2**63, 2**64), NumPy unsigned ints       | its digits              | `uint_value`             |
| `DOUBLE` | float, NumPy floats                             | orjson's shortest text; NaN, +-inf: `null` | `double_value` (NaN, +-inf kept) |
| `BOOL`   | bool, NumPy bool                                | `true` / `false`        | `bool_value`             |
| `STRING` | str (lone surrogates as their escape text); an int beyond 64 bits as its digits | the JSON string | `string_value` |
| `JSON`   | anything else: None, lists (a 2D column's rows), dicts, objects (their repr, as a JSON string) | its strict JSON text (`json_values.dumps_strict`): `null`, `[1,2]`... | `string_value` holding that text |

A column's kind is its dtype's when the dtype says it (`column_kind`), else each value's
(`arg_value`): the writers' column fast paths render a kind as the table says, and
`tests/compile_profiling/timeline/test_arg_values.py` checks both writers against this table for hostile values.
Keys are text (`arg_key`).
"""

from __future__ import annotations

import numpy as np
import orjson

from pypto.compile_profiling.timeline.json_values import dumps_strict, safe_text
from pypto.compile_profiling.timeline.model import ArgColumn

__all__ = ["BOOL", "DOUBLE", "INT", "JSON", "PROTO_FIELD", "STRING", "UINT", "arg_key",
           "arg_value", "array_kind", "column_kind", "json_text", "proto_field"]

INT, UINT, DOUBLE, BOOL, STRING, JSON = "int", "uint", "double", "bool", "string", "json"
_INT_MIN, _INT_MAX, _UINT_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1

# the protobuf rendering: the `DebugAnnotation` field of each kind (its value as `arg_value`
# gives it, JSON text decoded)
PROTO_FIELD = {INT: "int_value", UINT: "uint_value", DOUBLE: "double_value",
               BOOL: "bool_value", STRING: "string_value", JSON: "string_value"}
_KIND_OF_DTYPE = {"i": INT, "u": UINT, "f": DOUBLE, "b": BOOL}


def arg_key(key) -> str:
    """An argument's key as text (a key that is not a string: its `str`)."""
    return safe_text(key if type(key) is str else str(key))


def _int_value(v: int) -> tuple[str, object]:
    if _INT_MIN <= v <= _INT_MAX:
        return INT, v
    if v <= _UINT_MAX and v >= 0:
        return UINT, v
    return STRING, str(v)


def arg_value(v) -> tuple[str, object]:
    """(kind, value): the value an int, float, bool, str (safe text) or, for `JSON`, the
    strict JSON text (bytes)."""
    t = type(v)
    if t is str:
        return STRING, safe_text(v)
    if t is bool:
        return BOOL, v
    if t is int:
        return _int_value(v)
    if t is float:
        return DOUBLE, v
    if v is None:
        return JSON, b"null"
    if isinstance(v, np.generic):
        if isinstance(v, np.bool_):
            return BOOL, bool(v)
        if isinstance(v, np.signedinteger):
            return INT, int(v)
        if isinstance(v, np.unsignedinteger):
            return UINT, int(v)
        if isinstance(v, np.floating):
            return DOUBLE, float(v)
        return arg_value(v.item())
    if isinstance(v, str):
        return STRING, safe_text(str.__str__(v))
    if isinstance(v, int):
        return _int_value(int(v))
    if isinstance(v, float):
        return DOUBLE, float(v)
    if isinstance(v, np.ndarray):
        v = v.tolist()
    return JSON, dumps_strict(v)


def json_text(v) -> bytes:
    """The JSON rendering of `v` (see the module table)."""
    kind, value = arg_value(v)
    if kind is JSON:
        return value
    if kind is INT or kind is UINT:
        return b"%d" % value
    return orjson.dumps(value)  # DOUBLE (NaN, inf: null), BOOL, STRING


def proto_field(v) -> tuple[str, object]:
    """The protobuf rendering of `v`: (`DebugAnnotation` field, value)."""
    kind, value = arg_value(v)
    return PROTO_FIELD[kind], value.decode() if kind is JSON else value


def array_kind(values) -> str | None:
    """The kind of every value of `values` when its type says it: a 1D NumPy array of ints,
    unsigned ints, floats or bools, or `JSON` for a 2D numeric one (each row a list); None
    when the values say it one by one (lists, other arrays)."""
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iufb":
        return None
    if values.ndim == 1:
        return _KIND_OF_DTYPE[values.dtype.kind]
    return JSON if values.ndim == 2 else None


def column_kind(col: ArgColumn) -> str | None:
    """`array_kind` of the column's values; None for a table column (its strings say it)."""
    return None if col.table is not None else array_kind(col.values)
