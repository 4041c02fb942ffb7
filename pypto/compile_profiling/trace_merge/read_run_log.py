"""Reader of Simpler run logs: `[STRACE]` host spans and `[CLOCK_ANCHOR]` lines, and of
`host_phase_records.jsonl`.

A log line is `<any prefix>[STRACE] v=1 pid=<n> tid=<n> inv=<n> hid=<hex> depth=<n>
name=<dotted.name> ts=<ns> dur=<ns> [k=v ...]`; `ts` is CLOCK_MONOTONIC ns, except on spans
tagged `clk=dev` (device clock, own origin). `[CLOCK_ANCHOR] v=1 pid=<n> mono_ns=<ns>
wall_ns=<ns>` maps a process's monotonic clock to wall time. Other lines are ignored.

Fields are split on whitespace and at the first `=` (`str.split`/`str.partition`): linear
in the line length (a backtracking `(\\S+?)=(\\S*)` pattern took 25 s on one 50,000-character
token). The file is read a block at a time; a NUL byte or a line longer than
`MAX_LINE_BYTES` means it is not a text log, and is rejected at once.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.foundation.input_files import open_input
from pypto.compile_profiling.trace_merge import simpler_schema as schema
from pypto.compile_profiling.trace_merge.json_pieces import JsonPieces, safe_str
from pypto.errors import TraceInputError

__all__ = ["LOG_VERSIONS", "MAX_LINE_BYTES", "HostPhaseBatch", "LogClockAnchor", "RunLog",
           "StraceSpan", "read_host_phase_records", "read_run_log"]

LOG_VERSIONS = ("1",)
MAX_LINE_BYTES = 8 << 20
_BLOCK = 1 << 20
_INT64_MAX = (1 << 63) - 1
_STRACE = "[STRACE] "
_ANCHOR = "[CLOCK_ANCHOR] "
_STRACE_KNOWN = {"v", "pid", "tid", "inv", "hid", "depth", "name", "ts", "dur"}


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
    attrs: dict[str, str]        # every other k=v of the line (clk included)
    line: int


@dataclass(slots=True, eq=False)
class LogClockAnchor:
    """`[CLOCK_ANCHOR]`: the monotonic <-> wall-clock relation of process `pid`."""

    pid: int
    mono_ns: int
    wall_ns: int
    line: int


@dataclass(slots=True, eq=False)
class RunLog:
    path: str
    spans: list[StraceSpan] = field(default_factory=list)
    clock_anchors: list[LogClockAnchor] = field(default_factory=list)


def _lines(path) -> tuple[int, str]:
    """(line number, text) of each line, read a block at a time."""
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
            parts = (pending + block).split(b"\n")
            pending = parts.pop()
            if len(pending) > MAX_LINE_BYTES:
                raise TraceInputError(path, f"line {lineno + len(parts) + 1}: longer than "
                                            f"{MAX_LINE_BYTES >> 20} MB: not a run log")
            for raw in parts:
                lineno += 1
                yield lineno, raw.decode("utf-8", "replace")
        if pending:
            yield lineno + 1, pending.decode("utf-8", "replace")


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


def read_run_log(path: str | os.PathLike) -> RunLog:
    """The `[STRACE]` spans and `[CLOCK_ANCHOR]`s of a Simpler run log, checked."""
    log = RunLog(str(path))
    for lineno, line in _lines(path):
        i = line.find(_STRACE)
        if i >= 0:
            log.spans.append(_span(_fields(line[i + len(_STRACE):]), path, lineno))
            continue
        i = line.find(_ANCHOR)
        if i >= 0:
            f = _fields(line[i + len(_ANCHOR):])
            m = "[CLOCK_ANCHOR]"
            _version(f, path, lineno, m)
            log.clock_anchors.append(LogClockAnchor(
                _int(f, "pid", path, lineno, m), _int(f, "mono_ns", path, lineno, m),
                _int(f, "wall_ns", path, lineno, m, signed=True), lineno))
    if not log.spans and not log.clock_anchors:
        raise TraceInputError(path, "no [STRACE] or [CLOCK_ANCHOR] lines: not a Simpler run log")
    return log


def _span(f: dict, path, lineno: int) -> StraceSpan:
    m = "[STRACE]"
    _version(f, path, lineno, m)
    name = f.get("name")
    if not name:
        raise TraceInputError(path, f"line {lineno}: [STRACE] without name=")
    attrs = {k: v for k, v in f.items() if k not in _STRACE_KNOWN}
    return StraceSpan(
        pid=_int(f, "pid", path, lineno, m), tid=_int(f, "tid", path, lineno, m),
        inv=_int(f, "inv", path, lineno, m) if "inv" in f else None,
        hid=f.get("hid"), depth=_int(f, "depth", path, lineno, m) if "depth" in f else 0,
        name=safe_str(name), ts_ns=_int(f, "ts", path, lineno, m),
        dur_ns=_int(f, "dur", path, lineno, m), device_clock=attrs.get("clk") == "dev",
        attrs=attrs, line=lineno)


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
