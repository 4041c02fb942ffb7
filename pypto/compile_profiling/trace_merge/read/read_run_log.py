"""Reader of Simpler run logs: `[STRACE]` host spans and `[CLOCK_ANCHOR]` lines, and of
`host_phase_records.jsonl`.

A log line is `<any prefix>[STRACE] v=1 pid=<n> tid=<n> inv=<n> hid=<hex> depth=<n>
name=<dotted.name> ts=<ns> dur=<ns> [k=v ...]`; `ts` is CLOCK_MONOTONIC ns, except on spans
tagged `clk=dev` (device clock, own origin). `[CLOCK_ANCHOR] v=1 pid=<n> mono_ns=<ns>
wall_ns=<ns>` maps a process's monotonic clock to wall time. `[HOSTLOG_DROPS] v=1 pid=<n>
new=<n> total=<n> queue_full=<n> ...` says the process's host logger lost records (a running
total per process: the latest report counts). Other lines are ignored.

The spans are kept as columns (`RunLog`: one NumPy array per field, names, `hid`s and the
other `k=v` sets as small tables the rows index), not as an object per line: a 1M-line log
held about 3x its size as objects, and Simpler's logs grow with every invocation.
`RunLog.spans` still hands out `StraceSpan` views, one at a time, for code that wants them.

Fields are split on whitespace and at the first `=` (`str.split`/`str.partition`): linear
in the line length (a backtracking `(\\S+?)=(\\S*)` pattern took 25 s on one 50,000-character
token). A line in the order Simpler writes it (the nine fields above, one space apart, each
value printable ASCII) is cut by one pattern and its integers checked and converted a whole
block of lines at a time; any other line takes the general path, with the same result.
The file is read a block at a time; a NUL byte or a line longer than `MAX_LINE_BYTES`
means it is not a text log, and is rejected at once.

Every time in the log reaches a clock conversion, so every one is range-checked here with
the records reader's rule (`read_records.check_clock_range`: under 2^62 ns, `ts + dur`
included; `|wall_ns|` too), and nothing downstream can overflow.
"""

from __future__ import annotations

import io
import os
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.foundation.input_files import open_input
from pypto.compile_profiling.trace_merge.read import simpler_schema as schema
from pypto.compile_profiling.trace_merge.read.json_pieces import JsonPieces, safe_str
from pypto.compile_profiling.trace_merge.read.read_records import check_clock_range
from pypto.errors import TraceInputError

__all__ = ["DROP_REASONS", "LOG_VERSIONS", "MAX_LINE_BYTES", "HostLogDrops", "HostPhaseBatch",
           "LogClockAnchor", "RunLog", "StraceSpan", "read_host_phase_records", "read_run_log"]

LOG_VERSIONS = ("1",)
MAX_LINE_BYTES = 8 << 20
_BLOCK = 1 << 20
_INT64_MAX = (1 << 63) - 1
_STRACE = "[STRACE] "
_ANCHOR = "[CLOCK_ANCHOR] "
_STRACE_KNOWN = {"v", "pid", "tid", "inv", "hid", "depth", "name", "ts", "dur"}
# A [STRACE] line as Simpler writes it (groups 1-10: the nine fields and the rest of the
# line), else any [STRACE] line (group 11), else a [CLOCK_ANCHOR] line (group 12), else
# Simpler's host logger's loss report, [HOSTLOG_DROPS] (group 13). A value
# is printable ASCII with no space, and ends where `str.split` would end it (ASCII
# whitespace, the line's end); anything else falls to the general path. Linear: no value
# can hold the space that starts the next field, so a failed match backs off at once.
_V = rb"([!-~]*)"
_LINE = re.compile(
    rb"\[STRACE\] (?:v=" + _V + rb" pid=" + _V + rb" tid=" + _V + rb" inv=" + _V
    + rb" hid=" + _V + rb" depth=" + _V + rb" name=" + _V + rb" ts=" + _V + rb" dur=" + _V
    + rb"(?=[ \t\n\r\x0b\x0c\x1c-\x1f]|\Z)([^\n]*)|([^\n]*))|\[CLOCK_ANCHOR\] ([^\n]*)"
    + rb"|\[HOSTLOG_DROPS\] ([^\n]*)")
_NOT_DIGITS = bytes(b for b in range(256) if not 48 <= b <= 57)   # bytes.translate deletes


@dataclass(slots=True, eq=False)
class StraceSpan:
    """One `[STRACE]` span. `ts_ns` is CLOCK_MONOTONIC unless `device_clock` (clk=dev)."""

    pid: int
    tid: int
    inv: int | None
    hid: str | None
    depth: int
    name: str
    ts_ns: int
    dur_ns: int
    device_clock: bool
    attrs: dict[str, str]        # every other k=v of the line (clk included); shared: read only
    line: int


DROP_REASONS = ("queue_full", "claim_exhausted", "output_failed", "not_admitted")


@dataclass(slots=True, eq=False)
class HostLogDrops:
    """Simpler's `[HOSTLOG_DROPS]`: records process `pid`'s host logger lost (the running
    `total`, and by reason), from its latest report in the log."""

    pid: int
    total: int
    by_reason: dict[str, int]
    line: int


@dataclass(slots=True, eq=False)
class LogClockAnchor:
    """`[CLOCK_ANCHOR]`: the monotonic <-> wall-clock relation of process `pid`."""

    pid: int
    mono_ns: int
    wall_ns: int
    line: int


def _ints(n: int = 0) -> np.ndarray:
    return np.zeros(n, dtype=np.int64)


@dataclass(slots=True, eq=False)
class RunLog:
    """A run log's `[STRACE]` spans as columns, row i = the i-th span in log order, and its
    clock anchors. `inv` is -1 and `hid` -1 where the line has none; `name`, `hid` and
    `attrs` index `names`, `hids` and `attr_sets` (each distinct value once)."""

    path: str
    pid: np.ndarray = field(default_factory=_ints)
    tid: np.ndarray = field(default_factory=_ints)
    inv: np.ndarray = field(default_factory=_ints)
    depth: np.ndarray = field(default_factory=_ints)
    ts_ns: np.ndarray = field(default_factory=_ints)
    dur_ns: np.ndarray = field(default_factory=_ints)
    line: np.ndarray = field(default_factory=_ints)
    device_clock: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    name: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    hid: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    attrs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    names: list[str] = field(default_factory=list)
    hids: list[str] = field(default_factory=list)
    attr_sets: list[dict[str, str]] = field(default_factory=list)
    clock_anchors: list[LogClockAnchor] = field(default_factory=list)
    host_log_drops: dict[int, HostLogDrops] = field(default_factory=dict)   # pid -> latest

    def __len__(self) -> int:
        return len(self.ts_ns)

    @property
    def spans(self) -> _Spans:
        """Every span, as `StraceSpan`s made when asked for."""
        return _Spans(self, None)

    def spans_at(self, rows: np.ndarray) -> _Spans:
        """The spans of `rows` (indices, in that order), made when asked for."""
        return _Spans(self, np.asarray(rows, dtype=np.int64))

    def rows_named(self, test, device_clock: bool | None = None) -> np.ndarray:
        """The rows (in log order) whose name passes `test(name)`, of one clock if given:
        one call per distinct name, not per span."""
        hit = np.array([bool(test(n)) for n in self.names], dtype=bool)
        mask = hit[self.name] if len(hit) else np.zeros(len(self), dtype=bool)
        if device_clock is not None:
            mask &= self.device_clock == device_clock
        return np.flatnonzero(mask)

    def span(self, i: int) -> StraceSpan:
        inv, hid = int(self.inv[i]), int(self.hid[i])
        return StraceSpan(int(self.pid[i]), int(self.tid[i]), None if inv < 0 else inv,
                          None if hid < 0 else self.hids[hid], int(self.depth[i]),
                          self.names[self.name[i]], int(self.ts_ns[i]), int(self.dur_ns[i]),
                          bool(self.device_clock[i]), self.attr_sets[self.attrs[i]],
                          int(self.line[i]))


class _Spans(Sequence):
    """A read-only sequence of a `RunLog`'s spans (all, or some rows): each `StraceSpan` is
    made when it is read, so walking a million spans never holds a million objects."""

    __slots__ = ("_log", "_rows")
    _CHUNK = 4096

    def __init__(self, log: RunLog, rows: np.ndarray | None):
        self._log, self._rows = log, rows

    def __len__(self) -> int:
        return len(self._log) if self._rows is None else len(self._rows)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("span index out of range")
        i %= n
        return self._log.span(i if self._rows is None else int(self._rows[i]))

    def __iter__(self) -> Iterator[StraceSpan]:
        log, n = self._log, len(self)
        for lo in range(0, n, self._CHUNK):        # columns to Python a chunk at a time
            rows = (np.arange(lo, min(lo + self._CHUNK, n)) if self._rows is None
                    else self._rows[lo:lo + self._CHUNK])
            names, hids, sets = log.names, log.hids, log.attr_sets
            for pid, tid, inv, hid, depth, name, ts, dur, dev, attrs, line in zip(
                    log.pid[rows].tolist(), log.tid[rows].tolist(), log.inv[rows].tolist(),
                    log.hid[rows].tolist(), log.depth[rows].tolist(),
                    log.name[rows].tolist(), log.ts_ns[rows].tolist(),
                    log.dur_ns[rows].tolist(), log.device_clock[rows].tolist(),
                    log.attrs[rows].tolist(), log.line[rows].tolist()):
                yield StraceSpan(pid, tid, None if inv < 0 else inv,
                                 None if hid < 0 else hids[hid], depth, names[name], ts, dur,
                                 dev, sets[attrs], line)


def _blocks(path) -> Iterator[tuple[int, bytes]]:
    """(number of lines before it, text of whole lines) of the file, a block at a time; the
    last line may lack its newline. A NUL byte or an overlong line is refused."""
    with open_input(path) as f:
        pending = b""
        lineno = 0
        offset = 0
        while True:
            block = f.read(_BLOCK)
            if not block:
                break
            nul = block.find(b"\0")
            if nul >= 0:
                raise TraceInputError(path, f"binary data (a NUL byte at byte {offset + nul}): "
                                            "not a text run log")
            offset += len(block)
            text = pending + block
            cut = text.rfind(b"\n") + 1
            pending = text[cut:]
            lines = text.count(b"\n", 0, cut)
            if len(pending) > MAX_LINE_BYTES:
                raise TraceInputError(path, f"line {lineno + lines + 1}: longer than "
                                            f"{MAX_LINE_BYTES >> 20} MB: not a run log")
            if cut:
                yield lineno, text[:cut]
            lineno += lines
        if pending:
            yield lineno, pending


def _lines(path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line, read a block at a time."""
    for before, text in _blocks(path):
        parts = text.split(b"\n")
        if parts[-1] == b"":
            parts.pop()
        for k, raw in enumerate(parts, before + 1):
            yield k, raw.decode("utf-8", "replace")


def _fields(text: str) -> dict[str, str]:
    out = {}
    for tok in text.split():
        k, eq, v = tok.partition("=")
        if eq and k:
            out.setdefault(k, v)
    return out


def _int(f: dict, key: str, path, lineno: int, marker: str, *, signed: bool = False) -> int:
    v = f.get(key)
    if v is None:
        raise TraceInputError(path, f"line {lineno}: {marker} without {key}=")
    digits = v[1:] if signed and v.startswith("-") else v
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 19 \
            or int(digits) > _INT64_MAX:
        raise TraceInputError(path, f"line {lineno}: {marker} {key}={v[:40]!r} is not a "
                                    + ("64-bit integer" if signed else
                                       "non-negative 64-bit integer"))
    return int(v)


def _version(f: dict, path, lineno: int, marker: str) -> None:
    v = f.get("v")
    if v is None:
        raise TraceInputError(path, f"line {lineno}: {marker} without v=")
    if v not in LOG_VERSIONS:
        raise TraceInputError(path, f"line {lineno}: unknown {marker} version v={v[:20]}")


def _span_fields(f: dict, path, lineno: int) -> tuple:
    """One [STRACE] line's fields, checked: (pid, tid, inv or -1, hid or None, depth, name,
    ts, dur, the other k=v)."""
    m = "[STRACE]"
    _version(f, path, lineno, m)
    name = f.get("name")
    if not name:
        raise TraceInputError(path, f"line {lineno}: [STRACE] without name=")
    pid, tid = _int(f, "pid", path, lineno, m), _int(f, "tid", path, lineno, m)
    inv = _int(f, "inv", path, lineno, m) if "inv" in f else -1
    depth = _int(f, "depth", path, lineno, m) if "depth" in f else 0
    return (pid, tid, inv, f.get("hid"), depth, safe_str(name), _int(f, "ts", path, lineno, m),
            _int(f, "dur", path, lineno, m),
            {k: v for k, v in f.items() if k not in _STRACE_KNOWN})


class _Columns:
    """The spans read so far: machine integers in `array`s (no object per value), tables."""

    def __init__(self, path):
        self.path = path
        self.cols = {k: array("q") for k in ("pid", "tid", "inv", "depth", "ts_ns", "dur_ns",
                                             "line")}
        self.ix = {k: array("i") for k in ("name", "hid", "attrs")}
        self.names: dict[str, int] = {}
        self.hids: dict[str, int] = {}
        self.attr_index: dict[object, int] = {}    # the rest of a line (bytes) or k=v items
        self.attr_sets: list[dict[str, str]] = []

    def attrs_of(self, key: object, attrs: dict[str, str] | None = None) -> int:
        k = self.attr_index.get(key)
        if k is None:
            if attrs is None:                      # the rest of a line Simpler wrote
                attrs = {a: v for a, v in _fields(key.decode("utf-8", "replace")).items()
                         if a not in _STRACE_KNOWN}
            k = self.attr_index[key] = len(self.attr_sets)
            self.attr_sets.append({a: safe_str(v) for a, v in attrs.items()})
        return k

    def add_block(self, canon: list[tuple], general: list[tuple]) -> None:
        """Append one block's spans in line order: `canon` rows are (line, the ten groups)
        of lines in Simpler's order, checked here a column at a time; `general` rows (line,
        fields dict) are checked one by one. Errors name the first bad line."""
        path = self.path
        if not canon and not general:
            return
        if canon:
            lines, v, pid, tid, inv, hid, depth, name, ts, dur, rest = zip(*canon)
            ints = [self._digits(c) for c in (pid, tid, inv, depth, ts, dur)]
            if (any(x is None for x in ints) or set(v) != {b"1"} or b"" in set(name)):
                # some line is bad: find the first, in line order, with the exact checks
                for lineno, raw in sorted([*((c[0], _canon_fields(c)) for c in canon),
                                           *general]):
                    _span_fields(raw, path, lineno)
                raise AssertionError("a bad [STRACE] line the exact checks did not find")
        rows = [(lineno, _span_fields(f, path, lineno)) for lineno, f in general]
        if canon:
            names, hids, attrs = self.names, self.hids, self.attrs_of
            block = {"line": np.array(lines, dtype=np.int64),
                     "name": [names.setdefault(x.decode("ascii"), len(names)) for x in name],
                     "hid": [hids.setdefault(x.decode("ascii"), len(hids)) for x in hid],
                     "attrs": [attrs(x) for x in rest]}
            block.update(zip(("pid", "tid", "inv", "depth", "ts_ns", "dur_ns"), ints))
        if rows:
            extra = self._general_rows(rows)
            if not canon:
                block = extra
            else:                                  # both kinds: back into line order
                order = np.argsort(np.concatenate([block["line"], extra["line"]]),
                                   kind="stable")
                block = {k: np.concatenate([np.asarray(block[k]), np.asarray(extra[k])])[order]
                         for k in block}
        for k, col in self.cols.items():
            col.frombytes(np.asarray(block[k], dtype=np.int64).tobytes())
        for k, col in self.ix.items():
            col.frombytes(np.asarray(block[k], dtype=np.int32).tobytes())

    def _general_rows(self, rows: list[tuple]) -> dict:
        names, hids = self.names, self.hids
        out = {k: [] for k in ("line", "pid", "tid", "inv", "hid", "depth", "name", "ts_ns",
                               "dur_ns", "attrs")}
        for lineno, (pid, tid, inv, hid, depth, name, ts, dur, attrs) in rows:
            for k, x in (("line", lineno), ("pid", pid), ("tid", tid), ("inv", inv),
                         ("depth", depth), ("ts_ns", ts), ("dur_ns", dur)):
                out[k].append(x)
            out["name"].append(names.setdefault(name, len(names)))
            out["hid"].append(-1 if hid is None else hids.setdefault(safe_str(hid), len(hids)))
            out["attrs"].append(self.attrs_of(tuple(attrs.items()), attrs))
        return {k: np.array(v, dtype=np.int64) for k, v in out.items()}

    @staticmethod
    def _digits(col: tuple[bytes, ...]) -> np.ndarray | None:
        """A column of decimal texts as int64, or None when one is not a non-negative
        64-bit integer (empty, not ASCII digits, over 19 digits or over 2^63 - 1)."""
        if (b"".join(col).translate(None, _NOT_DIGITS) != b"".join(col)
                or min(map(len, col)) == 0 or max(map(len, col)) > 19):
            return None
        values = np.fromiter(map(int, col), dtype=np.uint64, count=len(col))
        if int(values.max()) > _INT64_MAX:
            return None
        return values.astype(np.int64)

    def finish(self, log: RunLog) -> RunLog:
        for k, col in self.cols.items():
            setattr(log, k, np.frombuffer(col, dtype=np.int64))
        for k, col in self.ix.items():
            setattr(log, k, np.frombuffer(col, dtype=np.int32))
        dev = np.array([a.get("clk") == "dev" for a in self.attr_sets], dtype=bool)
        log.device_clock = dev[log.attrs] if len(dev) else np.zeros(0, dtype=bool)
        log.names, log.hids, log.attr_sets = list(self.names), list(self.hids), self.attr_sets
        return log


def _canon_fields(c: tuple) -> dict[str, str]:
    """The fields dict of a line cut by the pattern, as the general path would make it."""
    f = dict(zip(("v", "pid", "tid", "inv", "hid", "depth", "name", "ts", "dur"),
                 (x.decode("ascii") for x in c[1:10])))
    for k, v in _fields(c[10].decode("utf-8", "replace")).items():
        f.setdefault(k, v)
    return f


def read_run_log(path: str | os.PathLike) -> RunLog:
    """The `[STRACE]` spans and `[CLOCK_ANCHOR]`s of a Simpler run log, checked."""
    cols = _Columns(path)
    anchors: list[LogClockAnchor] = []
    drops: dict[int, HostLogDrops] = {}
    for before, text in _blocks(path):
        canon: list[tuple] = []
        general: list[tuple] = []
        lineno, at = before + 1, 0
        for m in _LINE.finditer(text):
            lineno += text.count(b"\n", at, m.start())
            at = m.start()
            g = m.groups()
            if g[0] is not None:
                canon.append((lineno, *g[:10]))
            elif g[10] is not None:
                general.append((lineno, _fields(g[10].decode("utf-8", "replace"))))
            elif g[12] is not None:
                f = _fields(g[12].decode("utf-8", "replace"))
                mk = "[HOSTLOG_DROPS]"
                _version(f, path, lineno, mk)
                pid = _int(f, "pid", path, lineno, mk)
                total = _int(f, "total", path, lineno, mk)
                reasons = {r: _int(f, r, path, lineno, mk) for r in DROP_REASONS if r in f}
                seen = drops.get(pid)
                if seen is None or total >= seen.total:   # a running total: keep the latest
                    drops[pid] = HostLogDrops(pid, total, reasons, lineno)
            else:
                body = g[11]
                i = body.find(b"[STRACE] ")
                if i >= 0:                        # both markers: [STRACE] wins, as it did
                    general.append((lineno, _fields(body[i + 9:].decode("utf-8", "replace"))))
                    continue
                cols.add_block(canon, general)     # spans before it, so errors keep order
                canon, general = [], []
                f = _fields(body.decode("utf-8", "replace"))
                mk = "[CLOCK_ANCHOR]"
                _version(f, path, lineno, mk)
                anchors.append(LogClockAnchor(
                    _int(f, "pid", path, lineno, mk), _int(f, "mono_ns", path, lineno, mk),
                    _int(f, "wall_ns", path, lineno, mk, signed=True), lineno))
        if canon or general:
            cols.add_block(canon, general)
    log = cols.finish(RunLog(str(path), clock_anchors=anchors, host_log_drops=drops))
    if not len(log) and not anchors:
        raise TraceInputError(path, "no [STRACE] or [CLOCK_ANCHOR] lines: not a Simpler run log")
    _check_ranges(log)
    return log


def _check_ranges(log: RunLog) -> None:
    """The records reader's range rule on every time of the log: each under 2^62 ns, and
    so `ts + dur` (no sum can overflow once both are), `mono_ns` and `|wall_ns|`."""
    path, limit = log.path, schema.MAX_CLOCK_NS

    def at(lines):
        return lambda i: f"line {int(lines[i])}"

    check_clock_range(path, "", log.ts_ns, limit, "[STRACE] ts", at(log.line))
    check_clock_range(path, "", log.dur_ns, limit, "[STRACE] dur", at(log.line))
    check_clock_range(path, "", log.ts_ns + log.dur_ns, limit, "[STRACE] ts + dur",
                      at(log.line))
    if log.clock_anchors:
        a = log.clock_anchors
        lines = [x.line for x in a]
        for what, values in (("mono_ns", [x.mono_ns for x in a]),
                             ("|wall_ns|", [abs(x.wall_ns) for x in a])):
            check_clock_range(path, "", np.array(values, dtype=np.uint64), limit,
                              f"[CLOCK_ANCHOR] {what}", at(lines))


# --------------------------------------------------------------------------- host phases

@dataclass(slots=True, eq=False)
class HostPhaseBatch:
    """One line of `host_phase_records.jsonl`: host phases (CLOCK_MONOTONIC ns) of one
    invocation, as columns."""

    pid: int
    inv: int | None
    dropped: int
    phase: list[str]
    start_ns: np.ndarray
    end_ns: np.ndarray
    tid: np.ndarray              # -1 where a record has none
    detail: list[int | None]


def read_host_phase_records(path: str | os.PathLike) -> list[HostPhaseBatch]:
    """Every line of `host_phase_records.jsonl`, checked (a line is one JSON object)."""
    out = []
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        jp = JsonPieces(io.BytesIO(line.encode("utf-8", "surrogateescape")), f"{path}:{lineno}")
        b = jp.value("$", schema.HostPhaseLine)
        jp.finish()
        recs = b.records
        for i, r in enumerate(recs):
            if r.end_ns < r.start_ns:
                raise TraceInputError(path, f"line {lineno}: $.records[{i}]: end_ns "
                                            f"{r.end_ns} is before start_ns {r.start_ns}")
        out.append(HostPhaseBatch(
            b.pid, b.inv, b.dropped, [safe_str(r.phase) for r in recs],
            np.array([r.start_ns for r in recs], dtype=np.int64),
            np.array([r.end_ns for r in recs], dtype=np.int64),
            np.array([-1 if r.tid is None else r.tid for r in recs], dtype=np.int64),
            [r.detail for r in recs]))
    if not out:
        raise TraceInputError(path, "no records")
    return out
