"""Strict JSON text of any value a timeline holds, as bytes: what orjson writes, or, when
orjson refuses the value (lone surrogates, integers beyond 64 bits, nesting deeper than it
allows, keys that are not strings), the text of a cleaned copy (`json_safe`): bad text is
backslash-escaped, too-big integers and too-deep values become their repr. NaN and
infinities are written as null (orjson's own rule); objects JSON cannot hold become their
repr. Both trace writers encode values through here."""

from __future__ import annotations

import reprlib

import numpy as np
import orjson

from pypto.compile_profiling.foundation.safe_json import clean_text as safe_text

__all__ = ["dumps_strict", "json_safe", "safe_text"]

_OPTIONS = orjson.OPT_SERIALIZE_NUMPY
_MAX_DEPTH = 200  # orjson refuses nesting deeper than 254 levels
_INT_MIN, _UINT_MAX = -(1 << 63), (1 << 64) - 1


def _repr(v) -> str:
    """`repr(v)`, bounded (reprlib) when the value is too deep for plain `repr`."""
    try:
        return repr(v)
    except RecursionError:
        return reprlib.repr(v)
    except Exception as e:  # noqa: BLE001 - a broken __repr__ must not stop the export
        return f"<{type(v).__name__}: repr failed: {type(e).__name__}>"


def json_safe(v, depth: int = 0):
    """A copy of `v` that orjson can always encode as strict JSON (see the module doc)."""
    t = type(v)
    if isinstance(v, str):
        return safe_text(str(v))
    if v is None or t is bool or t is float or isinstance(v, orjson.Fragment):
        return v  # orjson writes NaN/inf as null
    if isinstance(v, int):
        return int(v) if _INT_MIN <= v <= _UINT_MAX else str(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, np.generic):
        return json_safe(v.item(), depth)
    if depth >= _MAX_DEPTH:
        return safe_text(_repr(v))
    if isinstance(v, dict):
        return {safe_text(k if type(k) is str else str(k)): json_safe(x, depth + 1)
                for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x, depth + 1) for x in v]
    if isinstance(v, np.ndarray):
        return json_safe(v.tolist(), depth)
    return safe_text(_repr(v))


def _default(v):
    """orjson's hook for types it does not know: their repr (as JSON text)."""
    return _repr(v)


def dumps_strict(obj) -> bytes:
    """`orjson.dumps(obj)`, or of its cleaned copy if orjson refuses it: always strict JSON."""
    try:
        return orjson.dumps(obj, default=_default, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return orjson.dumps(json_safe(obj), default=_default, option=_OPTIONS)
