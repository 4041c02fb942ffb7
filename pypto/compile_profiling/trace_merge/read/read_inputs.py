"""Step 1 of a merge: find what each input path is and read all of it, checked.

Inputs, in any mix: our `trace.json` (absolute CLOCK_MONOTONIC µs), a `report/` dir or
`pipeline_profile.json` (durations only), a work dir / `dfx_outputs/` / capture leaf
(`read_simpler.discover_captures`, including `rank<r>/d<k>/`), and loose Simpler files
(records, `deps.json`, `name_map_*.json`, `merged_swimlane*.json`, a run log), which are
grouped by their directory into one capture. Every file is read and checked here, before
anything is placed or laid out, so a bad file fails the merge with a `TraceInputError`
naming it and nothing is written.
"""

from __future__ import annotations

import logging
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pypto.compile_profiling.foundation.input_files import (
    load_json_input,
    refuse_output_among_inputs,
    stat_input,
)
from pypto.compile_profiling.trace_merge.read import read_simpler as rs
from pypto.compile_profiling.trace_merge.read.read_records import check_clock_range
from pypto.compile_profiling.trace_merge.read.simpler_schema import MAX_CLOCK_NS
from pypto.compile_profiling.trace_merge.read.wall_anchor import (
    WallClockAnchor,
    wall_anchor_from_other_data,
)
from pypto.errors import TraceInputError

CLOCK = "CLOCK_MONOTONIC"
log = logging.getLogger(__name__)


@dataclass(slots=True)
class CompileTrace:
    """Our `trace.json`: X events as columns (exact host CLOCK_MONOTONIC ns), names of
    processes and threads, and the host facts in `otherData`."""

    path: str
    host: str | None
    wall_anchor: WallClockAnchor | None
    other: dict
    pid: list[int] = field(default_factory=list)
    tid: list[int] = field(default_factory=list)
    start_ns: list[int] = field(default_factory=list)
    end_ns: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    cat: list[str] = field(default_factory=list)
    args: list[dict | None] = field(default_factory=list)
    process_names: dict[int, str] = field(default_factory=dict)
    process_sort: dict[int, int] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    thread_sort: dict[tuple[int, int], int] = field(default_factory=dict)


@dataclass(slots=True)
class StageDurations:
    """One stage of a `pipeline_profile.json` (durations only)."""

    name: str
    seconds: float
    children: list[StageDurations]


@dataclass(slots=True)
class ProfileReport:
    path: str
    stages: list[StageDurations]


@dataclass(slots=True)
class Inputs:
    """Everything the merge was given, read and checked."""

    traces: list[CompileTrace] = field(default_factory=list)
    reports: list[ProfileReport] = field(default_factory=list)
    captures: list[rs.Capture] = field(default_factory=list)


# --------------------------------------------------------------------------- classification

def _kind_by_name(name: str) -> str | None:
    if name == "pipeline_profile.json":
        return "profile"
    kind = rs.file_kind(name)
    if kind is None and name.endswith((".json", ".json.gz")):
        return "json"          # decided by its content
    return kind


def _sniff(doc: object) -> str | None:
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("traceEvents"), list):
        other = doc.get("otherData")
        if isinstance(other, dict) and other.get("clock") == CLOCK:
            return "trace"
        return "chrome"
    if isinstance(doc.get("stages"), list):
        return "profile"
    return None


_NOT_AN_INPUT = ("not a recognised input (expected a trace.json, pipeline_profile.json, a "
                 "Simpler capture file or directory, or a run log .txt/.log)")


def read_inputs(paths: list[str | os.PathLike], *,
                output: str | os.PathLike | None = None) -> Inputs:
    """Classify every input path, then read it all (see the module docstring).

    `output`: where the result will be written; `OutputPathError` when that is one of the
    input files (same file by name, hard link or symlink), before anything is read.
    """
    if not paths:
        raise TraceInputError("<inputs>", "no inputs given")
    json_files: list[tuple[Path, str]] = []     # (path, kind: "json" or "profile")
    loose: dict[str, rs.CaptureFiles] = {}
    leaves: list[rs.CaptureFiles] = []
    for raw in paths:
        p = Path(raw)
        if not stat.S_ISDIR(stat_input(p).st_mode):    # special files, loops: refused here
            _classify_file(p, json_files, loose)
            continue
        report = _report_dir(p) or _report_dir(p / "report")
        if report is not None:
            json_files.append((report, "json"))
        if report is None or (p / "dfx_outputs").is_dir():
            try:
                leaves.extend(rs.discover_captures(p))
            except TraceInputError:
                if report is None:
                    raise
    for group in loose.values():
        _add_companions(group)
    leaves.extend(loose.values())
    if output is not None:
        refuse_output_among_inputs(output, [p for p, _ in json_files]
                                   + [f for files in leaves for f in rs.files_of(files)])
    inputs = Inputs()
    for p, kind in json_files:
        _read_json_input(inputs, p, kind)
    for files in leaves:
        # Simpler's converted trace renders the records: beside them it adds nothing
        inputs.captures.append(rs.read_capture(files, converted=not files.records))
    return inputs


def _report_dir(d: Path) -> Path | None:
    """A report dir's `trace.json` (exact) wins over its `pipeline_profile.json`. `lexists`:
    a trace.json that is a FIFO or a symlink loop is taken, so its reader refuses it."""
    for name in ("trace.json", "pipeline_profile.json"):
        if os.path.lexists(d / name):
            return d / name
    return None


def _classify_file(p: Path, json_files: list, loose: dict) -> None:
    kind = _kind_by_name(p.name)
    if kind is None:
        raise TraceInputError(p, _NOT_AN_INPUT)
    if kind in ("json", "profile"):
        json_files.append((p, kind))
        return
    group = loose.get(str(p.parent))
    if group is None:
        group = loose[str(p.parent)] = rs.CaptureFiles(str(p.parent))
    rs.add_loose_file(group, kind, str(p))
    if kind == "listed_only":
        log.info("not a timeline, listed only: %s", p)


COMPANION_KINDS = ("deps", "name_map", "dispatch_program", "dispatch_identity")


def _add_companions(group: rs.CaptureFiles) -> None:
    """A records file given alone reads the files beside it that describe the same tasks
    (`deps.json`, `name_map_*.json`, `dispatch_*.json`), unless one of that kind was given:
    without deps.json the same records would give another critical path and verdict. The
    run's host logs are not taken: a host side comes only when asked for."""
    if group.records is None:
        return
    given = {k for k in COMPANION_KINDS if getattr(group, k if k != "name_map" else
                                                    "name_maps", None)}
    try:
        names = sorted(os.listdir(group.directory))
    except OSError:
        return
    for name in names:
        kind = rs.file_kind(name)
        path = os.path.join(group.directory, name)
        if kind in COMPANION_KINDS and kind not in given and os.path.isfile(path) \
                and not os.path.islink(path):
            rs.add_loose_file(group, kind, path)
            log.info("read %s beside %s", path, group.records)


def _read_json_input(inputs: Inputs, p: Path, kind: str) -> None:
    doc = load_json_input(p)
    sniffed = _sniff(doc)
    if kind == "profile" and sniffed != "profile":
        raise TraceInputError(p, "not a pipeline_profile.json (needs a 'stages' list)")
    if sniffed == "trace":
        inputs.traces.append(compile_trace_from_doc(p, doc))
    elif sniffed == "profile":
        inputs.reports.append(ProfileReport(str(p), _stages(doc["stages"], p, "stages", 0)))
    elif sniffed == "chrome":
        raise TraceInputError(p, "a Chrome trace that is neither a PyPTO trace.json "
                                 f"(otherData.clock = {CLOCK}) nor a merged_swimlane*.json: "
                                 "its clock is unknown, cannot place it")
    else:
        raise TraceInputError(p, _NOT_AN_INPUT)


# --------------------------------------------------------------------------- pipeline_profile.json

_MAX_STAGE_DEPTH = 10_000


def _stages(raw: object, path, where: str, depth: int) -> list[StageDurations]:
    """Checked stages, iteratively deep (no recursion limit for deep stage trees)."""
    out: list[StageDurations] = []
    todo = [(raw, where, out)]
    while todo:
        items, w, dest = todo.pop()
        if not isinstance(items, list):
            raise TraceInputError(path, f"{w}: expected a list")
        if w.count(".children") > _MAX_STAGE_DEPTH:
            raise TraceInputError(path, f"{w}: stages nested more than {_MAX_STAGE_DEPTH} deep")
        for i, st in enumerate(items):
            wi = f"{w}[{i}]"
            if not isinstance(st, dict):
                raise TraceInputError(path, f"{wi}: expected an object")
            name, sec = st.get("name"), st.get("seconds")
            if not isinstance(name, str):
                raise TraceInputError(path, f"{wi}.name: expected a string")
            if type(sec) not in (int, float) or not math.isfinite(sec) or not 0 <= sec < 1e9:
                raise TraceInputError(path, f"{wi}.seconds: expected a finite number of "
                                            f"seconds >= 0, got {sec!r}")
            stage = StageDurations(name, float(sec), [])
            dest.append(stage)
            todo.append((st.get("children", []), f"{wi}.children", stage.children))
    return out


# --------------------------------------------------------------------------- trace.json

_MAX_NS = MAX_CLOCK_NS    # the records reader's range rule, per event (floats, not columns)


def _time_ns(ev: dict, key: str, path, i: int, default=None) -> int:
    v = ev.get(key, default)
    if type(v) not in (int, float) or not math.isfinite(v) or not 0 <= v * 1000 < _MAX_NS:
        raise TraceInputError(path, f"traceEvents[{i}].{key}: expected a finite number of "
                                    f"microseconds >= 0, got {v!r}")
    return round(v * 1000)


def _int_field(ev: dict, key: str, path, i: int) -> int:
    v = ev.get(key, 0)
    if type(v) is not int or not 0 <= v < 1 << 63:
        raise TraceInputError(path, f"traceEvents[{i}].{key}: expected a non-negative integer")
    return v


def compile_trace_from_doc(path: str | os.PathLike, doc: dict) -> CompileTrace:
    """Our trace.json's parsed document -> `CompileTrace` (checked; errors name `path`)."""
    other = doc["otherData"]
    host = other.get("host") if isinstance(other.get("host"), str) else None
    anchor = wall_anchor_from_other_data(other, str(path))
    if anchor is not None:         # the records' range rule, as on a run log's anchors
        if anchor.mono_ns < 0:     # (a monotonic clock never reads below 0)
            raise TraceInputError(path, f"otherData.clock_anchor: monotonic_ns "
                                        f"{anchor.mono_ns} is negative")
        for what, value in (("monotonic_ns", anchor.mono_ns), ("|wall_ns|", abs(anchor.wall_ns))):
            check_clock_range(path, "otherData.clock_anchor", np.array([value], dtype=np.uint64),
                              MAX_CLOCK_NS, what, lambda i: "")
    ct = CompileTrace(str(path), host, anchor, other)
    for i, ev in enumerate(doc["traceEvents"]):
        if not isinstance(ev, dict):
            raise TraceInputError(path, f"traceEvents[{i}]: expected an object")
        ph = ev.get("ph")
        if ph == "X":
            pid, tid = _int_field(ev, "pid", path, i), _int_field(ev, "tid", path, i)
            start = _time_ns(ev, "ts", path, i)
            dur = ev.get("dur", 0)
            if type(dur) in (int, float) and dur < 0:
                raise TraceInputError(path, f"traceEvents[{i}].dur: negative duration {dur!r}")
            if type(dur) not in (int, float) or not math.isfinite(dur):
                raise TraceInputError(path, f"traceEvents[{i}].dur: expected a finite number "
                                            f"of microseconds, got {dur!r}")
            end_us = ev["ts"] + dur
            if not end_us * 1000 < _MAX_NS:
                raise TraceInputError(path, f"traceEvents[{i}].dur: {dur!r} us is out of range")
            end = round(end_us * 1000)
            name = ev.get("name")
            if not isinstance(name, str):
                raise TraceInputError(path, f"traceEvents[{i}].name: expected a string")
            args = ev.get("args")
            ct.pid.append(pid)
            ct.tid.append(tid)
            ct.start_ns.append(start)
            ct.end_ns.append(end)
            ct.name.append(name)
            ct.cat.append(ev["cat"] if isinstance(ev.get("cat"), str) else "")
            ct.args.append(args if isinstance(args, dict) and args else None)
        elif ph == "M":
            pid = _int_field(ev, "pid", path, i)
            args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
            kind = ev.get("name")
            if kind == "process_name" and isinstance(args.get("name"), str):
                ct.process_names[pid] = args["name"]
            elif kind == "process_sort_index" and type(args.get("sort_index")) is int:
                ct.process_sort[pid] = args["sort_index"]
            elif kind == "thread_name" and isinstance(args.get("name"), str):
                ct.thread_names[(pid, _int_field(ev, "tid", path, i))] = args["name"]
            elif kind == "thread_sort_index" and type(args.get("sort_index")) is int:
                ct.thread_sort[(pid, _int_field(ev, "tid", path, i))] = args["sort_index"]
    return ct
