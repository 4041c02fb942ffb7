"""The records file's row arrays (AICore rows, scheduler task rows) decoded a piece at a
time into int64 columns, a row that cannot be interpreted skipped alone and counted, and
every value that reaches a clock conversion range-checked once."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import msgspec
import numpy as np

from pypto.compile_profiling.trace_merge.read import simpler_schema as schema
from pypto.compile_profiling.trace_merge.read.json_pieces import (
    SEP_ROWS,
    JsonPieces,
    word_error,
)
from pypto.errors import TraceInputError

ABSENT = schema.ABSENT


_ROW_TYPE = list[schema.Count]


class Skipped:
    """A file's bad records, each skipped alone: per array the count and the first reason
    (as the strict reader would have refused the file for it)."""

    def __init__(self) -> None:
        self.by_where: dict[str, list] = {}

    def add(self, where: str, reason: str, n: int = 1) -> None:
        entry = self.by_where.setdefault(where, [0, reason])
        entry[0] += n

    def warning(self, path: str) -> str | None:
        if not self.by_where:
            return None
        total = sum(n for n, _ in self.by_where.values())
        parts = [f"{n} in {where} (the first: {reason})"
                 for where, (n, reason) in self.by_where.items()]
        return (f"{path}: {total} bad record(s) skipped, each alone, the rest read as usual: "
                + "; ".join(parts))


class Invalid:
    """A record that did not decode, standing in its place until its array's builder
    skips it; `reason` continues its JSON path (`[2]: expected int, got str`)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


class Mixed(list):
    """A piece decoded record by record: some of its elements may be `Invalid` (a piece
    that decoded whole is a plain list, and is not looked at one by one)."""

    extras: list[dict] | None = None


def decode_each(objs: list, typ) -> list:
    """Each element of a plainly decoded piece converted to `typ` on its own; one that
    does not fit is an `Invalid` with msgspec's reason."""
    out = Mixed()
    for o in objs:
        try:
            out.append(msgspec.convert(o, typ))
        except msgspec.ValidationError as exc:
            out.append(Invalid(word_error(exc, "", doc=o)))
    return out


class _RowDecoder:
    """Rows of counts, decoded whole (the fast path); a piece with a row that does not fit
    is decoded again row by row, the bad ones `Invalid`."""

    type = list[_ROW_TYPE]
    _strict = msgspec.json.Decoder(list[_ROW_TYPE])
    _plain = msgspec.json.Decoder(list)

    def decode(self, piece):
        try:
            return self._strict.decode(piece)
        except msgspec.ValidationError:
            return decode_each(self._plain.decode(piece), _ROW_TYPE)

    def convert(self, obj):
        try:
            return msgspec.convert(obj, self.type)
        except msgspec.ValidationError:
            return decode_each(obj, _ROW_TYPE)


_ROWS = _RowDecoder()


def decode_rows(jp: JsonPieces, where: str, widths: tuple[int, ...], skipped: Skipped
          ) -> tuple[np.ndarray, int, np.ndarray]:
    """An array of integer rows -> ((n, max(widths)) int64, the width found on disk (columns
    a narrower file lacks are 0, except the last, run_epoch, which is ABSENT), each kept
    row's index). The file's width is its first good row's; a row of another width, or with
    a value that is no count, is skipped alone."""
    parts, index, width = [], [], None
    expected = " or ".join(filter(None, (", ".join(map(str, widths[:-1])), str(widths[-1]))))
    for base, rows in jp.array(where, _ROWS, SEP_ROWS):
        lens = set(map(len, rows)) if type(rows) is not Mixed else set()
        only = lens.pop() if len(lens) == 1 else None
        if only in widths and (width is None or only == width):
            good = range(len(rows))              # the usual piece: one width, all counts
            width = only
        else:
            good = [i for i, r in enumerate(rows) if type(r) is not Invalid
                    and len(r) in widths and (width is None or len(r) == width)]
            if width is None and good:
                width = len(rows[good[0]])
                good = [i for i in good if len(rows[i]) == width]
        if len(good) < len(rows):
            for i in sorted(set(range(len(rows))) - set(good)):
                r = rows[i]
                if type(r) is Invalid:
                    why = f"{where}[{base + i}]{r.reason}"
                elif len(r) in widths:
                    why = (f"{where}[{base + i}]: {len(r)} columns, expected {width}, like the "
                           "rows before it")
                else:
                    why = f"{where}[{base + i}]: {len(r)} columns, expected {expected}"
                skipped.add(where, why)
            rows = [rows[i] for i in good]
        n = len(rows)
        if n:
            parts.append(np.fromiter(itertools.chain.from_iterable(rows), np.int64,
                                     n * width).reshape(n, width))
            index.append(base + (np.arange(n, dtype=np.int64) if type(good) is range
                                 else np.array(good, dtype=np.int64)))
        del rows
    full = max(widths)
    arr = np.concatenate(parts) if parts else np.zeros((0, full), np.int64)
    if arr.shape[1] < full:
        pad = np.zeros((len(arr), full - arr.shape[1]), np.int64)
        pad[:, -1] = ABSENT
        arr = np.hstack([arr, pad])
    idx = np.concatenate(index) if index else np.zeros(0, np.int64)
    return arr, (width or full), idx


def row_columns(arr: np.ndarray, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {k: np.ascontiguousarray(arr[:, j]) for j, k in enumerate(names)}


def bad_rows(cols: dict, idx: np.ndarray, bad: np.ndarray, skipped: Skipped, where: str,
              why) -> None:
    """Drop the rows `bad` of `cols` (and `idx`, their JSON positions, in place at key
    "index"), each counted in `skipped` (`why(i)`: the reason for kept row i)."""
    if not bad.any():
        return
    for i in np.flatnonzero(bad).tolist():
        skipped.add(where, why(i))
    keep = ~bad
    for k in cols:
        cols[k] = cols[k][keep]


def check_rows(aicore: dict, cpu: dict, cpu_where: str, ncores: int, path,
                skipped: Skipped) -> None:
    """Rows whose core is not in the core table, that end before they start, or whose
    receive time is after their start: skipped alone (a table with no cores at all for its
    rows is the file's problem: refused)."""
    for where, cols in (("$.aicore_tasks", aicore), (cpu_where, cpu)):
        core = cols["core_id"]
        if len(core) and not ncores:
            raise TraceInputError(path, f"{where}: {len(core)} rows, but metadata.core_types "
                                        "lists no cores")
        idx = cols["index"]
        bad_rows(cols, idx, core >= ncores, skipped, where, lambda i, c=cols, x=idx, w=where: (
            f"{w}[{x[i]}][0]: core_id {int(c['core_id'][i])} is not in "
            f"metadata.core_types ({ncores} cores)"))
    a = aicore
    bad_rows(a, a["index"], a["end_cycles"] < a["start_cycles"], skipped, "$.aicore_tasks",
              lambda i, x=a["index"]: (
                  f"$.aicore_tasks[{x[i]}]: end_cycles {int(a['end_cycles'][i])} is before "
                  f"start_cycles {int(a['start_cycles'][i])} (negative duration)"))
    bad_rows(a, a["index"], a["receive_to_start_cycles"] > a["start_cycles"], skipped,
              "$.aicore_tasks", lambda i, x=a["index"]: (
                  f"$.aicore_tasks[{x[i]}][5]: receive_to_start_cycles "
                  f"{int(a['receive_to_start_cycles'][i])} exceeds start_cycles "
                  f"{int(a['start_cycles'][i])}"))
    c = cpu
    bad_rows(c, c["index"], c["finish_cycles"] < c["dispatch_cycles"], skipped, cpu_where,
              lambda i, x=c["index"]: (
                  f"{cpu_where}[{x[i]}]: finish_cycles {int(c['finish_cycles'][i])} is before "
                  f"dispatch_cycles {int(c['dispatch_cycles'][i])} (negative duration)"))


def check_clock_range(path, where: str, values: np.ndarray, limit: int, what: str,
                      index=None) -> None:
    """The one range rule: every value converted to ns must stay under MAX_CLOCK_NS
    (`limit`: `schema.max_cycles(freq)` for device cycles, `MAX_CLOCK_NS` for ns). Shared
    with the run-log reader. `index(i)`: the path suffix of element i (default `[i]`)."""
    if len(values) and int(values.max()) >= limit:
        i = int(np.argmax(values >= limit))
        at = index(i) if index else f"[{i}]"
        clock = "" if limit == schema.MAX_CLOCK_NS else f"; at this clock, below {limit}"
        raise TraceInputError(path, f"{where}{at}: {what} {int(values[i])} is out of range "
                                    f"(device and host times must stay under 2^62 ns{clock})")


def out_of_range(values: np.ndarray, limit: int, what: str) -> tuple[np.ndarray, Callable]:
    """The mask of `values` past the range rule, and the reason for one of them."""
    bad = values >= limit
    return bad, lambda v: (f"{what} {v} is out of range (device and host times must stay "
                           f"under 2^62 ns; at this clock, below {limit})")
