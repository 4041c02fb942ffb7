"""Read a compile profile from any place a user points at, into one `Profile`.

Accepted (each also gzip-compressed, e.g. `trace.json.gz`; recognised by content):
- a work dir (`run()`'s, holding `report/` and maybe `dfx_outputs/`) or an `ir.compile`
  output dir (holding `report/`); a file or dir inside `report/` knows its work dir too;
- a report dir (`pipeline_profile.json` and/or `trace.json`): `pipeline_profile.json` wins,
  unless it has no absolute times (upstream's durations-only layout) and `trace.json` is there;
- `pipeline_profile.json`: its stage tree as written. Without `start_ns` (upstream's layout)
  stages are laid end to end from their durations (`Profile.timed` is False);
- `trace.json`, ours or a merged one: complete (`X`) events carrying `args.path` (ours do) are
  rebuilt into the tree by path, so pool-worker stages hang under the stage they ran for;
  in a merged trace the other slices (device, Simpler host) are no compile stages: they are
  counted per process in `Profile.other_slices`, not shown. A trace without paths nests
  events by time on each thread.

Bad input raises `TraceInputError(path, problem)`: special files are refused before they are
read, sizes are bounded (also after decompression), numbers must be finite.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from pypto.compile_profiling.foundation.input_files import load_json_input
from pypto.compile_profiling.profile_data.model import Profile, Stage
from pypto.errors import TraceInputError

REPORT_JSON = "pipeline_profile.json"
TRACE_JSON = "trace.json"
REPORT_DIR = "report"
DFX_DIR = "dfx_outputs"
_TRACE_ARGS_DROPPED = ("path", "share_pct", "failed", "error", "open")


# --------------------------------------------------------------------------- where

def _is_profile_dir(d: Path) -> bool:
    return any((d / n).is_file() or (d / (n + ".gz")).is_file() for n in (REPORT_JSON, TRACE_JSON))


def _find(d: Path, name: str) -> Path | None:
    for candidate in (d / name, d / (name + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def is_profile_location(path: str | os.PathLike) -> bool:
    """True for a file, a report dir or a dir holding `report/` (what `load_profile` reads)."""
    p = Path(path)
    if not p.is_dir():
        return p.exists()
    return _is_profile_dir(p) or _is_profile_dir(p / REPORT_DIR)


def load_profile(path: str | os.PathLike) -> Profile:
    """The profile at `path` (see the module docstring for what `path` may be)."""
    p = Path(path)
    if p.is_dir():
        work_dir = None
        report = p
        if not _is_profile_dir(p):
            if not _is_profile_dir(p / REPORT_DIR):
                raise TraceInputError(path, f"no {REPORT_JSON} or {TRACE_JSON} here or in "
                                            f"{REPORT_DIR}/ (expected a work dir, a report "
                                            "dir, or one of those files)")
            report, work_dir = p / REPORT_DIR, p
        elif p.name == REPORT_DIR:
            work_dir = p.parent
        profile_json, trace_json = _find(report, REPORT_JSON), _find(report, TRACE_JSON)
        profile = None
        if profile_json is not None:
            profile = load_profile_file(profile_json)
        if trace_json is not None and (profile is None or not profile.timed):
            profile = load_profile_file(trace_json)
        assert profile is not None
        if work_dir is not None:
            profile.work_dir = str(work_dir)
        return profile
    profile = load_profile_file(p)
    if p.parent.name == REPORT_DIR:  # work_dir/report/<file>: the run's other outputs are there
        profile.work_dir = str(p.parent.parent)
    return profile


def trace_for(path: str | os.PathLike) -> Path:
    """The file to show in Perfetto for `path`: itself, or the `trace.json` of a work dir,
    report dir or `pipeline_profile.json` (which has no timeline of its own)."""
    p = Path(path)
    if p.is_dir():
        for d in (p, p / REPORT_DIR):
            found = _find(d, TRACE_JSON)
            if found is not None:
                return found
        raise TraceInputError(path, f"no {TRACE_JSON} here or in {REPORT_DIR}/")
    if p.name in (REPORT_JSON, REPORT_JSON + ".gz"):
        found = _find(p.parent, TRACE_JSON)
        if found is None:
            raise TraceInputError(path, f"has no timeline; no {TRACE_JSON} beside it to open")
        return found
    return p


def load_profile_file(path: str | os.PathLike) -> Profile:
    """A `pipeline_profile.json` or a Chrome trace (`trace.json`, merged), gzipped or not."""
    if str(path).endswith((".pftrace", ".perfetto-trace")):
        raise TraceInputError(path, "a Perfetto protobuf trace: give its trace.json or "
                                    "pipeline_profile.json (`open` shows this file)")
    doc = load_json_input(path)
    if isinstance(doc, dict) and isinstance(doc.get("stages"), list):
        return _from_profile_json(doc, path)
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        return _from_trace(doc["traceEvents"], doc.get("otherData"), path)
    if isinstance(doc, list):
        return _from_trace(doc, None, path)
    raise TraceInputError(path, "not a compile profile (expected pipeline_profile.json with "
                                "'stages' or a Chrome trace with 'traceEvents')")


# --------------------------------------------------------------------------- checks

def _text(value: object, path, where: str, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise TraceInputError(path, f"{where}: expected a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them visible, printable and valid
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


MAX_SECONDS = 1e9       # about 31 years, as the merge's readers bound a time (1e15 us)


def _number(value: object, path, where: str, minimum: float | None = None,
            maximum: float | None = None) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        raise TraceInputError(path, f"{where}: expected a finite number, got {value!r}"[:200])
    if minimum is not None and value < minimum:
        raise TraceInputError(path, f"{where}: {value} is below {minimum}")
    if maximum is not None and abs(value) > maximum:
        raise TraceInputError(path, f"{where}: {value:g} is beyond {maximum:g} (not a time "
                                    "a profile can hold)")
    return value


def _int(value: object, path, where: str, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if type(value) is not int:
        raise TraceInputError(path, f"{where}: expected an integer, got {value!r}"[:200])
    return value


# --------------------------------------------------------------------------- pipeline_profile.json

def _from_profile_json(doc: dict, path) -> Profile:
    meta = {k: doc[k] for k in ("schema_version", "host", "pid", "pypto_version", "clock")
            if k in doc}
    timed = True
    roots: list[Stage] = []
    seconds: dict[int, float] = {}   # by id(): a Stage compares by value
    work = [(doc["stages"], roots, "stages")]
    while work:
        items, out, where = work.pop()
        if not isinstance(items, list):
            raise TraceInputError(path, f"{where}: expected a list")
        for i, d in enumerate(items):
            w = f"{where}[{i}]"
            if not isinstance(d, dict):
                raise TraceInputError(path, f"{w}: expected an object")
            name = _text(d.get("name"), path, f"{w}.name")
            sec = _number(d.get("seconds"), path, f"{w}.seconds", 0, MAX_SECONDS)
            start, end = d.get("start_ns"), d.get("end_ns")
            is_open = d.get("open") is True
            if type(start) is int and (type(end) is int or (end is None and is_open)):
                end = end if end is not None else start + round(sec * 1e9)
                if end < start:
                    raise TraceInputError(path, f"{w}: end_ns {end} before start_ns {start}")
            else:
                timed, start, end = False, 0, 0
            args = d.get("args")
            if args is not None and not isinstance(args, dict):
                raise TraceInputError(path, f"{w}.args: expected an object")
            error = d.get("error")
            st = Stage(name, start, end, [], _int(d.get("pid"), path, f"{w}.pid", 0),
                       _int(d.get("tid"), path, f"{w}.tid", 0),
                       _text(d.get("thread_name"), path, f"{w}.thread_name", ""),
                       _text(d.get("cat"), path, f"{w}.cat", ""), args,
                       None if error is None else _text(error, path, f"{w}.error"), is_open)
            seconds[id(st)] = sec
            out.append(st)
            children = d.get("children", [])
            if children:
                work.append((children, st.children, f"{w}.children"))
    if not timed:
        _lay_end_to_end(roots, seconds)
    total = doc.get("total_seconds")
    if total is None:
        total_ns = _span(roots)
    else:
        total_ns = round(_number(total, path, "total_seconds", 0, MAX_SECONDS) * 1e9)
    return Profile(str(path), roots, total_ns, timed, meta)


def _lay_end_to_end(roots: list[Stage], seconds: dict[int, float]) -> None:
    """Durations only: each stage starts where its previous sibling ended (children from the
    parent's start), clipped to the parent (rounded durations may add up past it)."""
    work: list[tuple[list[Stage], int, int | None]] = [(roots, 0, None)]
    while work:
        stages, t, limit = work.pop()
        for st in stages:
            dur = round(seconds[id(st)] * 1e9)
            if limit is not None:
                t = min(t, limit)
                dur = min(dur, limit - t)
            st.start_ns, st.end_ns = t, t + dur
            if st.children:
                work.append((st.children, t, t + dur))
            t += dur


def _span(stages: list[Stage]) -> int:
    if not stages:
        return 0
    return max(s.end_ns for s in stages) - min(s.start_ns for s in stages)


# --------------------------------------------------------------------------- trace.json

def _from_trace(events: list, other: object, path) -> Profile:
    thread_names: dict[tuple[int, int], str] = {}
    process_names: dict[object, str] = {}
    slices: list[tuple[Stage, str | None]] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise TraceInputError(path, f"traceEvents[{i}]: expected an object")
        ph = ev.get("ph")
        if ph == "M" and ev.get("name") in ("thread_name", "process_name"):
            args = ev.get("args")
            if isinstance(args, dict) and isinstance(args.get("name"), str):
                if ev["name"] == "thread_name":
                    thread_names[(ev.get("pid"), ev.get("tid"))] = args["name"]
                else:
                    process_names[ev.get("pid")] = args["name"]
            continue
        if ph != "X":
            continue
        w = f"traceEvents[{i}]"
        name = _text(ev.get("name"), path, f"{w}.name")
        ts = _number(ev.get("ts"), path, f"{w}.ts", None, MAX_SECONDS * 1e6)
        dur = _number(ev.get("dur", 0), path, f"{w}.dur", 0, MAX_SECONDS * 1e6)
        pid = _int(ev.get("pid"), path, f"{w}.pid", 0)
        tid = _int(ev.get("tid"), path, f"{w}.tid", 0)
        args = ev.get("args")
        args = dict(args) if isinstance(args, dict) else {}
        stage_path = args.get("path") if isinstance(args.get("path"), str) else None
        error = args.get("error") if args.get("failed") is True else None
        start = round(ts * 1000)
        st = Stage(name, start, start + round(dur * 1000), [], pid, tid, "",
                   _text(ev.get("cat"), path, f"{w}.cat", ""),
                   {k: v for k, v in args.items() if k not in _TRACE_ARGS_DROPPED} or None,
                   None if error is None else str(error), args.get("open") is True)
        slices.append((st, stage_path))
    for st, _ in slices:
        st.thread_name = thread_names.get((st.pid, st.tid), "")
    with_path = [(st, p) for st, p in slices if p is not None]
    others: dict[str, int] = {}
    if with_path:
        roots = _tree_by_path(with_path)
        for st, p in slices:   # a merged trace: the device's and the host's slices
            if p is None:
                name = process_names.get(st.pid) or f"process {st.pid}"
                others[name] = others.get(name, 0) + 1
    else:
        roots = _tree_by_time([st for st, _ in slices])
    total_ns = _span(roots)
    meta: dict = {}
    if isinstance(other, dict):
        total = other.get("total_seconds")
        where = "otherData.total_seconds"
        compiled = [s for s in other.get("sources") or [] if isinstance(s, dict)
                    and s.get("kind") == "compile_trace" and "total_seconds" in s]
        if total is None and len(compiled) == 1:   # a merged trace of one compile profile
            total, where = compiled[0]["total_seconds"], "otherData.sources[].total_seconds"
        if total is not None:
            total_ns = round(_number(total, path, where, 0, MAX_SECONDS) * 1e9)
        meta = {k: other[k] for k in ("host", "pid", "pypto_version", "clock") if k in other}
    return Profile(str(path), roots, total_ns, True, meta, other_slices=others)


def _tree_by_path(slices: list[tuple[Stage, str]]) -> list[Stage]:
    """Each stage's parent: the latest-starting stage whose path is its path minus its name
    and whose interval holds its start."""
    slices.sort(key=lambda sp: (sp[0].start_ns, -sp[0].end_ns))
    last: dict[str, Stage] = {}
    roots: list[Stage] = []
    for st, p in slices:
        parent = None
        suffix = "/" + st.name
        if p.endswith(suffix):
            candidate = last.get(p[:-len(suffix)])
            if candidate is not None and candidate.start_ns <= st.start_ns <= candidate.end_ns:
                parent = candidate
        (parent.children if parent is not None else roots).append(st)
        last[p] = st
    return roots


def _tree_by_time(stages: list[Stage]) -> list[Stage]:
    """Nesting by time on each (pid, tid): a slice inside the previous one is its child."""
    stages.sort(key=lambda s: (s.pid, s.tid, s.start_ns, -s.end_ns))
    roots: list[Stage] = []
    stack: list[Stage] = []
    lane = None
    for st in stages:
        if (st.pid, st.tid) != lane:
            lane, stack = (st.pid, st.tid), []
        while stack and st.start_ns >= stack[-1].end_ns:
            stack.pop()
        (stack[-1].children if stack else roots).append(st)
        stack.append(st)
    roots.sort(key=lambda s: s.start_ns)
    return roots


# --------------------------------------------------------------------------- runs

def load_runs(path: str | os.PathLike) -> list[Profile]:
    """One profile, or each run in a directory of runs (e.g. `pypto_profile/`): its
    subdirectories that hold a profile, in name order."""
    p = Path(path)
    if p.is_dir() and not is_profile_location(p):
        runs = sorted(d for d in p.iterdir() if d.is_dir() and is_profile_location(d))
        if runs:
            return [load_profile(d) for d in runs]
    return [load_profile(p)]
