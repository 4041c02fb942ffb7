"""Strict JSON text of whatever a user put in a stage name or args, never an exception.

Reports and traces must stay strict JSON and valid UTF-8 whatever the args hold, so:
NaN and +-inf become `null`; values JSON has no type for (objects, sets, bytes, integers past
64 bits) become their `repr`; keys that are not strings become their `str`; lone surrogates
become the backslash escape text (`"\\ud800"` as six characters); containers nested deeper
than `MAX_DEPTH` are cut to a note. orjson does the common case (about 5x faster than the
standard library's encoder on stage records); only what it refuses takes the slow path.
"""

from __future__ import annotations

import math

import orjson

MAX_DEPTH = 64
_OPTIONS = orjson.OPT_NON_STR_KEYS


def _fallback(obj: object) -> str:
    """orjson's `default`: the repr, even of an object whose repr fails."""
    try:
        return clean_text(repr(obj))
    except Exception:  # noqa: BLE001 - a user's broken __repr__ must not lose the report
        return f"<{type(obj).__qualname__} object>"


def dumps(value: object) -> str:
    """Compact strict JSON text of `value`."""
    try:
        return orjson.dumps(value, default=_fallback, option=_OPTIONS).decode()
    except TypeError:  # surrogates, huge ints, too deep
        return orjson.dumps(sanitize(value), option=_OPTIONS).decode()


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced by their backslash escape (valid UTF-8). The one
    rule for text that cannot be UTF-8: used by the readers and both trace writers."""
    if text.isascii():    # the common case, and 10x cheaper than the encode below
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def sanitize(value: object, depth: int = 0) -> object:
    """A copy of `value` that orjson encodes as strict JSON (see the module docstring)."""
    if isinstance(value, str):
        return clean_text(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 64) else repr(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_DEPTH:
            return f"<nested deeper than {MAX_DEPTH} levels>"
        if isinstance(value, dict):
            return {clean_text(k if isinstance(k, str) else _key(k)): sanitize(v, depth + 1)
                    for k, v in value.items()}
        return [sanitize(v, depth + 1) for v in value]
    return _fallback(value)


def _key(key: object) -> str:
    try:
        return str(key)
    except Exception:  # noqa: BLE001
        return _fallback(key)
