"""Readers of Simpler's host-side files: the converted Chrome trace
(`merged_swimlane*.json`), run logs (`[STRACE]` spans and `[CLOCK_ANCHOR]` lines) and
`host_phase_records.jsonl`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from pypto.compile_profiling.input_files import read_input_bytes, sniff_json, sniff_text
from pypto.compile_profiling.simpler_json import (
    _is_int,
    _kind,
    _opt_int,
    _req,
    _req_int,
    load_json_file,
    parse_json_bytes,
)
from pypto.compile_profiling.simpler_records import PhaseStream, _phase_stream
from pypto.errors import TraceInputError

STRACE_VERSIONS = ("1",)


# --------------------------------------------------------------------------- converted trace

@dataclass(slots=True)
class MergedSwimlane:
    """Simpler's converted Chrome trace (`merged_swimlane*.json`): events as read.

    Timestamps are microseconds from the capture's own origin; pids 1-5 are views.
    """

    path: str
    events: list[dict]
    metadata: dict | None


def read_merged_swimlane(path: str | os.PathLike, data: object = None) -> MergedSwimlane:
    if data is None:
        data = load_json_file(path)
    if isinstance(data, list):
        events, meta = data, None
    elif isinstance(data, dict):
        events = _req(data, "traceEvents", path, "trace")
        meta = data.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise TraceInputError(path, f"metadata: expected an object, got {_kind(meta)}")
    else:
        raise TraceInputError(path, f"expected a Chrome trace object, got {_kind(data)}")
    if not isinstance(events, list):
        raise TraceInputError(path, f"traceEvents: expected a list, got {_kind(events)}")
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise TraceInputError(path, f"traceEvents[{i}]: expected an object, got {_kind(ev)}")
        ph = ev.get("ph")
        if not isinstance(ph, str):
            raise TraceInputError(path, f"traceEvents[{i}]: missing or invalid 'ph'")
        if ph in ("X", "s", "f", "t", "C", "B", "E", "i", "I"):
            ts = ev.get("ts")
            if type(ts) not in (int, float):
                raise TraceInputError(path, f"traceEvents[{i}].ts: expected a number, "
                                            f"got {_kind(ts)}")
            if ph == "X":
                dur = ev.get("dur", 0)
                if type(dur) not in (int, float):
                    raise TraceInputError(path, f"traceEvents[{i}].dur: expected a number, "
                                                f"got {_kind(dur)}")
                if dur < 0:
                    raise TraceInputError(path, f"traceEvents[{i}].dur: negative duration {dur}")
        if "pid" in ev and not _is_int(ev["pid"]):
            raise TraceInputError(path, f"traceEvents[{i}].pid: expected an integer")
        if "tid" in ev and not _is_int(ev["tid"]):
            raise TraceInputError(path, f"traceEvents[{i}].tid: expected an integer")
    return MergedSwimlane(str(path), events, meta)


# --------------------------------------------------------------------------- host log

@dataclass(slots=True)
class StraceSpan:
    """One `[STRACE]` host span. `ts_ns` is CLOCK_MONOTONIC unless `device_clock`."""

    pid: int
    tid: int
    name: str
    ts_ns: int
    dur_ns: int
    depth: int
    inv: int | None
    hid: str | None
    device_clock: bool           # tagged clk=dev: offset on the device's own origin
    attrs: dict[str, str]
    line: int


@dataclass(slots=True)
class LogClockAnchor:
    """`[CLOCK_ANCHOR] v=1 pid=<pid> mono_ns=<ns> wall_ns=<ns>`: monotonic <-> wall time."""

    pid: int
    mono_ns: int
    wall_ns: int
    line: int


@dataclass(slots=True)
class HostLog:
    path: str
    spans: list[StraceSpan]
    clock_anchors: list[LogClockAnchor]


def _kv_fields(text: str) -> dict[str, str]:
    r"""`key=value` tokens of a log line (the value may hold `=`; the last repeat wins).

    Split, not a regex: the old `(\S+?)=(\S*)` retried from every start position of a
    long token without `=`, quadratic in its length (50,000 characters: 25 s).
    """
    fields = {}
    for token in text.split():
        key, eq, value = token.partition("=")
        if eq and key:
            fields[key] = value
    return fields


def read_host_log(path: str | os.PathLike) -> HostLog:
    """Parse `[STRACE]` and `[CLOCK_ANCHOR]` lines of a Simpler run log.

    Other lines are ignored; the markers may be preceded by any prefix.
    """
    text = read_input_bytes(path, sniff=sniff_text).decode("utf-8", errors="replace")
    spans: list[StraceSpan] = []
    anchors: list[LogClockAnchor] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        i = line.find("[STRACE] ")
        if i >= 0:
            spans.append(_parse_strace(line[i + 9:], path, lineno))
            continue
        i = line.find("[CLOCK_ANCHOR] ")
        if i >= 0:
            f = _kv_fields(line[i + 15:])
            anchors.append(LogClockAnchor(_log_int(f, "pid", path, lineno, "[CLOCK_ANCHOR]"),
                                          _log_int(f, "mono_ns", path, lineno, "[CLOCK_ANCHOR]"),
                                          _log_int(f, "wall_ns", path, lineno, "[CLOCK_ANCHOR]"),
                                          lineno))
            if f.get("v", "1") not in STRACE_VERSIONS:
                raise TraceInputError(path, f"line {lineno}: unknown [CLOCK_ANCHOR] version "
                                            f"v={f['v']}")
    if not spans and not anchors:
        raise TraceInputError(path, "no [STRACE] or [CLOCK_ANCHOR] lines: not a Simpler run log")
    return HostLog(str(path), spans, anchors)


def _log_int(f: dict, key: str, path, lineno: int, marker: str) -> int:
    v = f.get(key)
    if v is None:
        raise TraceInputError(path, f"line {lineno}: {marker} without {key}=")
    try:
        return int(v)
    except ValueError:
        raise TraceInputError(path, f"line {lineno}: {marker} {key}={v!r} is not an "
                                    "integer") from None


_STRACE_KNOWN = {"v", "pid", "tid", "inv", "hid", "depth", "name", "ts", "dur"}


def _parse_strace(rest: str, path, lineno: int) -> StraceSpan:
    f = _kv_fields(rest)
    v = f.get("v")
    if v is None:
        raise TraceInputError(path, f"line {lineno}: [STRACE] without v=")
    if v not in STRACE_VERSIONS:
        raise TraceInputError(path, f"line {lineno}: unknown [STRACE] version v={v}")
    name = f.get("name")
    if not name:
        raise TraceInputError(path, f"line {lineno}: [STRACE] without name=")
    ts = _log_int(f, "ts", path, lineno, "[STRACE]")
    dur = _log_int(f, "dur", path, lineno, "[STRACE]")
    if dur < 0:
        raise TraceInputError(path, f"line {lineno}: [STRACE] negative duration dur={dur}")
    if ts < 0:
        raise TraceInputError(path, f"line {lineno}: [STRACE] negative ts={ts}")
    inv = _log_int(f, "inv", path, lineno, "[STRACE]") if "inv" in f else None
    depth = _log_int(f, "depth", path, lineno, "[STRACE]") if "depth" in f else 0
    attrs = {k: val for k, val in f.items() if k not in _STRACE_KNOWN}
    return StraceSpan(_log_int(f, "pid", path, lineno, "[STRACE]"),
                      _log_int(f, "tid", path, lineno, "[STRACE]"), name, ts, dur, depth, inv,
                      f.get("hid"), attrs.get("clk") == "dev", attrs, lineno)


@dataclass(slots=True)
class HostPhaseBatch:
    """One line of host_phase_records.jsonl: host-side phases on CLOCK_MONOTONIC."""

    pid: int
    inv: int | None
    clock: str
    dropped: int
    phases: PhaseStream           # names = phase; records carry tid/detail


def read_host_phase_records(path: str | os.PathLike) -> list[HostPhaseBatch]:
    data = read_input_bytes(path, sniff=sniff_json)
    out = []
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        obj = parse_json_bytes(line, f"{path}:{lineno}")
        where = f"line {lineno}"
        if not isinstance(obj, dict):
            raise TraceInputError(path, f"{where}: expected an object, got {_kind(obj)}")
        clock = obj.get("clock", "host_monotonic_ns")
        if clock != "host_monotonic_ns":
            raise TraceInputError(path, f"{where}: unknown clock {clock!r}")
        stream = _phase_stream(_req(obj, "records", path, where), 0, path, f"{where}.records",
                               start_key="start_ns", end_key="end_ns", name_key="phase",
                               default_name="", clock="host_ns")
        for i, r in enumerate(stream.records):
            if "tid" in r and not _is_int(r["tid"]):
                raise TraceInputError(path, f"{where}.records[{i}].tid: expected an integer")
        out.append(HostPhaseBatch(_req_int(obj, "pid", path, where), _opt_int(obj, "inv", path,
                                  where), clock, obj.get("dropped", 0) or 0, stream))
    if not out:
        raise TraceInputError(path, "no records")
    return out
