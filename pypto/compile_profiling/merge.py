"""Merge compile traces and Simpler device captures into one `Timeline` (the library API).

    result = merge_traces(["build/report/trace.json", "build/work"])
    write_timeline(result.timeline, "merged.pftrace")      # or .json
    print("\\n".join(result.summary_lines))

Inputs, in any mix: our `trace.json` (Chrome JSON, absolute CLOCK_MONOTONIC µs); a
`report/` dir or `pipeline_profile.json` (durations only); a work dir, `dfx_outputs/` dir or
capture leaf (found by `simpler_readers.discover_captures`); loose Simpler files
(`chip_swimlane_records.json`, `l2_swimlane_records.json`, `merged_swimlane*.json`,
`deps.json`, `name_map_*.json`, a run log with `[STRACE]`/`[CLOCK_ANCHOR]` lines), grouped
by their directory into one capture. Every input is read (strictly) before anything is laid
out, so a bad file fails the whole merge with `TraceInputError` naming it.

Alignment, in this order of trust:
1. our compile traces are host CLOCK_MONOTONIC: exact. The first one is the reference axis;
   a trace whose `otherData.host` differs is moved by the wall-clock anchors of both
   (`clock_alignment.monotonic_offset_ns`), and says so;
2. captures whose clock anchors are usable are calibrated (`device_timeline`), host-side
   streams and `[STRACE]` spans are exact; a capture/log from another host (its
   `[CLOCK_ANCHOR]` wall-minus-monotonic differs from the reference's by more than
   `SAME_HOST_TOLERANCE_NS`) is shifted by the wall-clock anchors;
3. a `pipeline_profile.json` has only durations: its stages are laid end to end (children
   from their parent's start), and the whole is placed so that its `device_execution`
   starts where the earliest calibrated capture's host-side records start, else at the
   start of the timeline, else at 0; it is always labelled estimated;
4. captures without usable anchors and `merged_swimlane*.json` are ESTIMATED: their first
   device record goes to the start of the `device_execution` stage (the n-th capture to the
   n-th stage when the counts match), or `offset_us` after it when given (after time 0 when
   there is no such stage); their processes say "(estimated)" and a warning is issued.
Layout: compile processes first, then host processes of Simpler logs, then the device
processes per capture (rank order). Flows: deps (added by `device_timeline`) and one from
each `kernel_codegen:<name>` slice to the first device task of that kernel.
"""

from __future__ import annotations

import bisect
import json
import logging
import math
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pypto.compile_profiling import device_timeline as dt
from pypto.compile_profiling import simpler_readers as sr
from pypto.compile_profiling.clock_alignment import (
    ClockAnchorsUnusable,
    WallClockAnchor,
    build_clock_mapping,
    monotonic_offset_ns,
    wall_anchor_from_log,
    wall_anchor_from_other_data,
)
from pypto.compile_profiling.input_files import (
    list_input_dir,
    refuse_output_among_inputs,
    stat_input,
)
from pypto.compile_profiling.timeline import Process, Slice, Timeline
from pypto.compile_profiling.timeline_json import gc_paused
from pypto.errors import ProfileWriteError, TraceInputError

__all__ = [
    "FORMATS",
    "MergeResult",
    "format_for_path",
    "merge_traces",
    "profile_to_timeline",
    "write_profile_perfetto",
    "write_timeline",
]

log = logging.getLogger(__name__)

FORMATS = ("json", "perfetto")
_EXTENSIONS = {".json": "json", ".pftrace": "perfetto", ".perfetto-trace": "perfetto"}
SAME_HOST_TOLERANCE_NS = 1_000_000_000  # wall-minus-monotonic agreement that means "one host"
KERNEL_CODEGEN_PREFIX = "kernel_codegen:"
DEVICE_EXECUTION = "device_execution"
CLOCK = "CLOCK_MONOTONIC"


@dataclass
class MergeResult:
    """The merged timeline, the human summary (one line each) and the warnings."""

    timeline: Timeline
    summary_lines: list[str]
    warnings: list[str]


# --------------------------------------------------------------------------- output

def format_for_path(path: str | os.PathLike, format: str | None = None) -> str:
    """`json` or `perfetto`: the explicit `format`, else from the extension."""
    if format is not None:
        if format not in FORMATS:
            raise ProfileWriteError(f"{path}: unknown format {format!r} "
                                    f"(expected one of {', '.join(FORMATS)})")
        return format
    name = str(path).lower()
    for ext, fmt in _EXTENSIONS.items():
        if name.endswith(ext):
            return fmt
    raise ProfileWriteError(f"{path}: cannot tell the output format from the extension "
                            "(use .json, .pftrace or .perfetto-trace, or give a format)")


def write_timeline(timeline: Timeline, path: str | os.PathLike,
                   format: str | None = None, *, parallel: bool | None = None) -> int:
    """Write `timeline` as Chrome JSON or Perfetto protobuf (atomically); return bytes written.

    `parallel`: whether a big timeline may be rendered by a second, forked process (None:
    only from a single-threaded process; see the exporters)."""
    fmt = format_for_path(path, format)
    if fmt == "json":
        from pypto.compile_profiling.timeline_json import write_chrome_json

        write_chrome_json(timeline, path, parallel=parallel)
    else:
        from pypto.compile_profiling.timeline_proto import write_perfetto_trace

        write_perfetto_trace(timeline, path, parallel=parallel)
    return os.path.getsize(path)


# --------------------------------------------------------------------------- compile traces

@dataclass
class _CompileTrace:
    path: str
    doc: dict
    other: dict
    processes: list[Process] = field(default_factory=list)
    slices: list[Slice] = field(default_factory=list)
    offset_ns: int = 0
    alignment: str = "exact (host CLOCK_MONOTONIC)"


def _is_compile_trace(doc: object) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)
            and isinstance(doc.get("otherData"), dict)
            and doc["otherData"].get("clock") == CLOCK)


def _num(ev: dict, key: str, path, i: int, default=None) -> float:
    v = ev.get(key, default)
    if type(v) not in (int, float) or not math.isfinite(v):
        raise TraceInputError(path, f"traceEvents[{i}].{key}: expected a number, got "
                                    f"{type(v).__name__ if v is not None else 'nothing'}")
    return v


def _int_field(ev: dict, key: str, path, i: int) -> int:
    v = ev.get(key, 0)
    if type(v) is not int:
        raise TraceInputError(path, f"traceEvents[{i}].{key}: expected an integer")
    return v


def _add_compile_trace(timeline: Timeline, ct: _CompileTrace) -> None:
    """Our trace.json: real processes/threads (OS ids in args, fresh uids), exact times."""
    path, events = ct.path, ct.doc["traceEvents"]
    proc_names: dict[int, str] = {}
    proc_sort: dict[int, int] = {}
    thread_names: dict[tuple[int, int], str] = {}
    thread_sort: dict[tuple[int, int], int] = {}
    xs: list[tuple[int, int, int, int, dict]] = []
    skipped = 0
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise TraceInputError(path, f"traceEvents[{i}]: expected an object")
        ph = ev.get("ph")
        if ph == "X":
            pid, tid = _int_field(ev, "pid", path, i), _int_field(ev, "tid", path, i)
            ts, dur = _num(ev, "ts", path, i), _num(ev, "dur", path, i, 0)
            if dur < 0:
                raise TraceInputError(path, f"traceEvents[{i}].dur: negative duration {dur}")
            if not isinstance(ev.get("name"), str):
                raise TraceInputError(path, f"traceEvents[{i}].name: expected a string")
            start = round(ts * 1000)
            xs.append((pid, tid, start, round((ts + dur) * 1000) - start, ev))
        elif ph == "M":
            pid = _int_field(ev, "pid", path, i)
            args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
            kind = ev.get("name")
            if kind == "process_name" and isinstance(args.get("name"), str):
                proc_names[pid] = args["name"]
            elif kind == "process_sort_index" and type(args.get("sort_index")) is int:
                proc_sort[pid] = args["sort_index"]
            elif kind == "thread_name" and isinstance(args.get("name"), str):
                thread_names[(pid, _int_field(ev, "tid", path, i))] = args["name"]
            elif kind == "thread_sort_index" and type(args.get("sort_index")) is int:
                thread_sort[(pid, _int_field(ev, "tid", path, i))] = args["sort_index"]
        else:
            skipped += 1
    pids = sorted({x[0] for x in xs} | set(proc_names), key=lambda p: (proc_sort.get(p, 1 << 30), p))
    host = ct.other.get("host")
    procs: dict[int, Process] = {}
    for pid in pids:
        args = {"os_pid": pid, "source": path, "clock": CLOCK, "alignment": ct.alignment}
        if host:
            args["host"] = host
        procs[pid] = timeline.add_process(proc_names.get(pid, f"PyPTO process {pid}"),
                                          os_pid=pid, args=args)
    ct.processes = list(procs.values())
    tids = sorted({(x[0], x[1]) for x in xs} | set(thread_names),
                  key=lambda k: (thread_sort.get(k, 1 << 30), k))
    tracks = {}
    for n, key in enumerate(tids):
        tracks[key] = timeline.add_track(procs[key[0]], thread_names.get(key, f"thread {key[1]}"),
                                         sort_index=thread_sort.get(key, n), os_tid=key[1])
    off = ct.offset_ns
    for pid, tid, start, dur, ev in xs:
        args = ev.get("args") if isinstance(ev.get("args"), dict) else None
        ct.slices.append(timeline.add_slice(tracks[(pid, tid)], ev["name"], start + off, dur,
                                            ev.get("cat") if isinstance(ev.get("cat"), str)
                                            else "", args))
    if skipped:
        log.info("%s: %d events other than X/M ignored", path, skipped)


# --------------------------------------------------------------------------- pipeline_profile.json

@dataclass
class _Report:
    path: str
    doc: dict


def _is_profile_json(doc: object) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("stages"), list) and "traceEvents" not in doc


def _check_stages(stages, path, where="stages") -> None:
    if not isinstance(stages, list):
        raise TraceInputError(path, f"{where}: expected a list")
    for i, st in enumerate(stages):
        w = f"{where}[{i}]"
        if not isinstance(st, dict):
            raise TraceInputError(path, f"{w}: expected an object")
        if not isinstance(st.get("name"), str):
            raise TraceInputError(path, f"{w}.name: expected a string")
        sec = st.get("seconds")
        if type(sec) not in (int, float) or not math.isfinite(sec):
            raise TraceInputError(path, f"{w}.seconds: expected a number")
        if sec < 0:
            raise TraceInputError(path, f"{w}.seconds: negative duration {sec}")
        _check_stages(st.get("children", []), path, f"{w}.children")


def _find_stage_offset(stages, name: str, start: float = 0.0) -> float | None:
    """Start (ns, relative) of the first stage called `name` in the end-to-end layout."""
    t = start
    for st in stages:
        if st["name"] == name:
            return t
        found = _find_stage_offset(st.get("children", []), name, t)
        if found is not None:
            return found
        t += st["seconds"] * 1e9
    return None


def _add_report(timeline: Timeline, rep: _Report, origin_ns: float, how: str) -> tuple[Process, list[Slice]]:
    proc = timeline.add_process(
        "PyPTO compile (pipeline_profile.json, estimated)", estimated=True,
        args={"source": rep.path, "estimated": True,
              "alignment": f"estimated: durations only, stages laid end to end; {how}"})
    track = timeline.add_track(proc, "stages")
    slices: list[Slice] = []

    def lay(stages, t: float, limit: float | None) -> None:
        for st in stages:
            dur = st["seconds"] * 1e9
            if limit is not None:  # rounded child durations may add up past the parent
                t = min(t, limit)
                dur = min(dur, limit - t)
            slices.append(timeline.add_slice(track, st["name"], t, dur, "compile",
                                             {"seconds": st["seconds"], "estimated": True}))
            lay(st.get("children", []), t, t + dur)
            t += dur

    lay(rep.doc["stages"], origin_ns, None)
    return proc, slices


# --------------------------------------------------------------------------- input classification

@dataclass
class _Inputs:
    traces: list[_CompileTrace] = field(default_factory=list)
    reports: list[_Report] = field(default_factory=list)
    capture_files: list[sr.CaptureFiles] = field(default_factory=list)
    preloaded: dict[str, object] = field(default_factory=dict)   # path -> parsed JSON
    read_lines: list[str] = field(default_factory=list)

    def files(self) -> list[str]:
        """Every input file found (read now, or a capture file beside them)."""
        out = [t.path for t in self.traces] + [r.path for r in self.reports]
        for c in self.capture_files:
            out += [f for f in (c.records, c.deps, c.host_phase_records, c.dispatch_program)
                    if f]
            out += c.name_maps + c.merged_swimlanes + c.host_logs
        return out


_LOOSE_KINDS = ("records", "deps", "name_map", "merged", "host_log")


def _sniff_json(doc: object) -> str | None:
    if _is_compile_trace(doc):
        return "trace"
    if _is_profile_json(doc):
        return "profile"
    if isinstance(doc, dict):
        if any(k in doc for k in sr.LEVEL_KEYS):
            return "records"
        if "tasks" in doc and "edges" in doc:
            return "deps"
        if "callable_id_to_name" in doc:
            return "name_map"
        if "traceEvents" in doc:
            return "chrome"
    return None


def _kind_by_name(name: str) -> str | None:
    if name in sr.RECORD_FILE_NAMES:
        return "records"
    if name == "deps.json":
        return "deps"
    if name.startswith("name_map") and name.endswith(".json"):
        return "name_map"
    if name.startswith("merged_swimlane") and name.endswith(".json"):
        return "merged"
    if name == "pipeline_profile.json":
        return "profile"
    if name.endswith((".txt", ".log")):
        return "host_log"
    return None


def _add_report_dir(inputs: _Inputs, d: Path) -> bool:
    """A `report/` dir: its trace.json (exact) wins over pipeline_profile.json (estimated)."""
    trace, profile = d / "trace.json", d / "pipeline_profile.json"
    # lexists: a trace.json that is a FIFO, a loop... is read, hence refused by name
    if os.path.lexists(trace):
        _add_file(inputs, trace, forced="trace")
        return True
    if os.path.lexists(profile):
        _add_file(inputs, profile, forced="profile")
        return True
    return False


def _add_file(inputs: _Inputs, p: Path, loose: dict | None = None, forced: str | None = None) -> None:
    path = str(p)
    kind = forced or _kind_by_name(p.name)
    doc = None
    if kind in (None, "trace", "profile"):
        if p.suffix.lower() != ".json" and kind is None:
            raise TraceInputError(path, "not a recognised input (expected a trace.json, "
                                        "pipeline_profile.json, Simpler capture file or "
                                        "directory, or a run log .txt/.log)")
        doc = sr.load_json_file(path)
        sniffed = _sniff_json(doc)
        if kind is None:
            kind = sniffed
        if kind == "trace" and sniffed != "trace":
            raise TraceInputError(path, "not a PyPTO trace.json (needs traceEvents and "
                                        f"otherData.clock = {CLOCK})")
        if kind == "profile" and sniffed != "profile":
            raise TraceInputError(path, "not a pipeline_profile.json (needs a 'stages' list)")
    if kind == "trace":
        inputs.traces.append(_CompileTrace(path, doc, doc["otherData"]))
    elif kind == "profile":
        _check_stages(doc["stages"], path)
        inputs.reports.append(_Report(path, doc))
    elif kind == "chrome":
        raise TraceInputError(path, "a Chrome trace that is neither a PyPTO trace.json "
                                    f"(otherData.clock = {CLOCK}) nor a merged_swimlane*.json: "
                                    "its clock is unknown, cannot place it")
    elif kind in _LOOSE_KINDS:
        if doc is not None:
            inputs.preloaded[path] = doc
        if loose is None:
            raise AssertionError("loose file outside a group")
        group = loose.setdefault(str(p.parent), sr.CaptureFiles(str(p.parent)))
        if kind == "records":
            if group.records is not None:
                raise TraceInputError(path, f"a second swimlane records file in {p.parent} "
                                            "(give each capture's directory instead)")
            group.records = path
        elif kind == "deps":
            group.deps = path
        elif kind == "name_map":
            group.name_maps.append(path)
        elif kind == "merged":
            group.merged_swimlanes.append(path)
        else:
            group.host_logs.append(path)
    else:
        raise TraceInputError(path, "not a recognised input (expected a trace.json, "
                                    "pipeline_profile.json or a Simpler capture file)")


def _classify(paths: Iterable[str | os.PathLike]) -> _Inputs:
    inputs = _Inputs()
    loose: dict[str, sr.CaptureFiles] = {}
    for raw in paths:
        p = Path(raw)
        if stat.S_ISDIR(stat_input(p).st_mode):   # special files, loops: refused here
            list_input_dir(p)                       # so is a directory we cannot list
            found = _add_report_dir(inputs, p)
            if not found and (p / "report").is_dir():
                found = _add_report_dir(inputs, p / "report")
            has_capture = (p / "dfx_outputs").is_dir() or not found
            if has_capture:
                try:
                    inputs.capture_files.extend(sr.discover_captures(p))
                except TraceInputError:
                    if not found:
                        raise
        else:
            _add_file(inputs, p, loose)
    inputs.capture_files.extend(loose.values())
    return inputs


def _load_capture(files: sr.CaptureFiles, preloaded: dict) -> sr.Capture:
    if not any(f in preloaded for f in [files.records, files.deps, *files.name_maps]):
        return sr.load_capture(files)
    cap = sr.Capture(files)
    if files.records:
        cap.records = sr.read_swimlane_records(files.records, preloaded.pop(files.records, None))
    if files.deps:
        cap.deps = sr.read_deps(files.deps, preloaded.pop(files.deps, None))
    if files.name_maps:
        cap.name_map = sr.read_name_map(files.name_maps[0], preloaded.pop(files.name_maps[0], None))
    if files.host_logs:
        cap.host_log = sr.read_host_log(files.host_logs[0])
    return cap


# --------------------------------------------------------------------------- merge

def _fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "unknown"
    return f"{ns:.0f} ns" if ns < 10_000 else f"{ns / 1000:.1f} us"


def _calibratable(cap: sr.Capture) -> str | None:
    """None when the capture's anchors can calibrate it, else the reason they cannot."""
    meta = cap.records.metadata
    if meta.clock_anchors is None:
        return "no clock anchors in the capture"
    try:
        build_clock_mapping(meta.clock_anchors, meta.clock_freq_hz,
                            host_quantization_ns=meta.host_timestamp_quantization_ns)
    except ClockAnchorsUnusable as exc:
        return f"clock anchors unusable: {exc.reason}"
    return None


def _shift_processes(timeline: Timeline, processes: Iterable[Process], offset_ns: float) -> None:
    if not offset_ns:
        return
    ids = {id(p) for p in processes}
    for s in timeline.slices:
        if id(s.track.process) in ids:
            s.ts_ns += offset_ns


def merge_traces(inputs: Iterable[str | os.PathLike], *, offset_us: float | None = None,
                 progress: Callable[[str], None] | None = None,
                 output: str | os.PathLike | None = None) -> MergeResult:
    """Read every input, align each source on one host CLOCK_MONOTONIC axis, lay them out.

    Raises `TraceInputError` (naming the file) for unreadable or invalid input.
    `progress(message)` is called as each step starts (the CLI shows slow steps).
    `output`: the path the result will be written to; `OutputPathError` if it is one of
    the input files (found before the big files are read).
    """
    # Reading and laying out a big capture makes millions of objects that live to the end:
    # with the cyclic GC on, each full collection rescans all of them, for no garbage.
    with gc_paused():
        return _merge(list(inputs), offset_us, progress or (lambda _msg: None), output)


def _merge(inputs: list, offset_us: float | None, say: Callable[[str], None],
           output: str | os.PathLike | None = None) -> MergeResult:
    """The body of `merge_traces`."""
    if not inputs:
        raise TraceInputError("<inputs>", "no inputs given")
    say("scanning inputs")
    found = _classify(inputs)
    if output is not None:
        refuse_output_among_inputs(output, found.files())
    timeline = Timeline()
    summary: list[str] = []
    warnings: list[str] = []
    sources_meta: list[dict] = []

    # ---- read all captures first: a bad file fails before anything is laid out
    captures: list[sr.Capture] = []
    for files in found.capture_files:
        say(f"reading {files.directory}")
        captures.append(_load_capture(files, found.preloaded))

    # ---- 1. compile traces (reference axis)
    reference: WallClockAnchor | None = None
    ref_host = None
    for ct in found.traces:
        anchor = wall_anchor_from_other_data(ct.other, ct.path)
        host = ct.other.get("host")
        if reference is None:
            reference, ref_host = anchor, host
        elif anchor is not None and host and ref_host and host != ref_host:
            ct.offset_ns = monotonic_offset_ns(reference, anchor)
            ct.alignment = (f"cross-host: host {host} moved by wall-clock anchors "
                            f"({ct.offset_ns:+d} ns; assumes synchronised wall clocks)")
        elif host and ref_host and host != ref_host:
            msg = (f"{ct.path}: from host {host}, but without clock anchors it cannot be "
                   f"aligned with {ref_host}; placed on its own monotonic clock")
            warnings.append(msg)
            ct.alignment = "unaligned other host (no clock anchor)"
        say(f"adding {ct.path}")
        _add_compile_trace(timeline, ct)
        summary.append(f"{ct.path}: compile trace, {len(ct.slices)} slices in "
                       f"{len(ct.processes)} process(es); {ct.alignment}")
        sources_meta.append({"path": ct.path, "kind": "compile_trace", "alignment": ct.alignment,
                             "offset_ns": ct.offset_ns})
    compile_slices = [s for ct in found.traces for s in ct.slices]
    compile_processes = [p for ct in found.traces for p in ct.processes]

    # ---- reference from a host log when there is no compile trace
    if reference is None:
        for cap in captures:
            if cap.host_log is not None and cap.host_log.clock_anchors:
                reference = wall_anchor_from_log(cap.host_log.clock_anchors[0])
                break

    def host_offset(cap: sr.Capture) -> tuple[int, str]:
        if reference is None or cap.host_log is None or not cap.host_log.clock_anchors:
            return 0, "exact (host CLOCK_MONOTONIC)"
        off = monotonic_offset_ns(reference, wall_anchor_from_log(cap.host_log.clock_anchors[0]))
        if abs(off) <= SAME_HOST_TOLERANCE_NS:
            return 0, "exact (host CLOCK_MONOTONIC, same host by its [CLOCK_ANCHOR])"
        return off, (f"cross-host: moved by [CLOCK_ANCHOR] wall-clock anchors ({off:+d} ns; "
                     "assumes synchronised wall clocks)")

    # ---- 2. host logs (exact) and calibrated captures
    host_processes: list[Process] = []
    device_processes: list[Process] = []
    results: list[dt.DeviceCaptureResult] = []
    estimated_caps: list[tuple[sr.Capture, str]] = []
    merged_only: list[sr.Capture] = []
    offsets: dict[int, tuple[int, str]] = {}
    flat = [c for c in captures if c.files.rank is None
            and Path(c.files.directory).name == "dfx_outputs"]
    for cap in captures:
        offsets[id(cap)] = host_offset(cap)
        off, how = offsets[id(cap)]
        label = _label(cap, single=len(flat) == 1)
        warnings.extend(cap.warnings)
        for other in cap.files.listed_only:  # pmu.csv, args_dump/, scope_stats/
            summary.append(f"{other}: not a timeline, listed only")
        if cap.host_log is not None:
            say(f"adding {cap.host_log.path}")
            before = set(map(id, timeline.processes))
            res = dt.add_host_log(timeline, cap.host_log, offset_ns=off)
            host_processes.extend(p for p in res.processes if id(p) not in before)
            warnings.extend(res.warnings)
            extra = (f", {res.device_clock_spans_skipped} clk=dev spans left to the device "
                     "timeline" if res.device_clock_spans_skipped else "")
            summary.append(f"{cap.host_log.path}: run log, {res.spans_added} [STRACE] host "
                           f"spans; {how}{extra}")
            sources_meta.append({"path": cap.host_log.path, "kind": "host_log",
                                 "alignment": how, "offset_ns": off})
        if cap.records is None:
            if cap.files.merged_swimlanes:
                merged_only.append(cap)
            elif cap.deps is not None or cap.name_map is not None:
                warnings.append(f"{cap.files.directory}: deps.json / name map without swimlane "
                                "records: nothing to draw them on")
            continue
        why_not = _calibratable(cap)
        if why_not is not None:
            estimated_caps.append((cap, why_not))
            continue
        say(f"placing {cap.records.path} (calibrated)")
        res = dt.add_device_capture(timeline, cap, rank_label=label,
                                    placement=dt.Placement.calibrated())
        _shift_processes(timeline, res.processes, off)
        _label_calibrated(res)
        results.append(res)
        device_processes.extend(res.processes)
        warnings.extend(res.warnings)
        summary.append(_capture_line(cap, res, how if off else ""))
        sources_meta.append(_capture_meta(cap, res, off))

    # ---- 3. pipeline_profile.json reports (durations only)
    report_processes: list[Process] = []
    exec_starts = sorted(s.ts_ns for s in compile_slices if s.name == DEVICE_EXECUTION)
    for rep in found.reports:
        rel = _find_stage_offset(rep.doc["stages"], DEVICE_EXECUTION)
        calibrated_ids = {id(p) for r in results for p in r.processes}
        calibrated_starts = [s.ts_ns for s in timeline.slices
                             if id(s.track.process) in calibrated_ids]
        if calibrated_starts and rel is not None:
            origin, how = min(calibrated_starts) - rel, (
                "its device_execution put at the first record of the calibrated capture")
        elif timeline.slices:
            origin = min(s.ts_ns for s in timeline.slices)
            how = "its start put at the start of the other inputs"
        else:
            origin, how = 0.0, "its start put at time 0"
        proc, slices = _add_report(timeline, rep, origin, how)
        report_processes.append(proc)
        compile_slices.extend(slices)
        exec_starts.extend(s.ts_ns for s in slices if s.name == DEVICE_EXECUTION)
        w = f"{rep.path}: pipeline_profile.json has no absolute times: stage layout ESTIMATED ({how})"
        warnings.append(w)
        summary.append(f"{rep.path}: compile profile (durations only), {len(slices)} stages; "
                       f"ESTIMATED, {how}")
        sources_meta.append({"path": rep.path, "kind": "pipeline_profile",
                             "alignment": f"estimated: {how}", "estimated": True})
    exec_starts.sort()

    # ---- 4. estimated captures and Simpler-converted traces
    n_estimated = len(estimated_caps) + len(merged_only)
    host_starts = [min(s.ts_ns for s in timeline.slices)] if timeline.slices else []

    def origin_for(index: int) -> tuple[float, str]:
        base_reason = ""
        if exec_starts:
            i = index if len(exec_starts) == n_estimated else 0
            base, base_reason = exec_starts[i], "start of the device_execution stage"
        elif host_starts:
            base = host_starts[0]
            base_reason = "start of the host records (no device_execution stage among the inputs)"
        else:
            base, base_reason = 0.0, "time 0 (no device_execution stage among the inputs)"
        if offset_us is not None:
            return base + offset_us * 1000.0, f"{offset_us:g} us after {base_reason} (--offset-us)"
        return base, base_reason

    for index, (cap, why_not) in enumerate(estimated_caps):
        origin, reason = origin_for(index)
        say(f"placing {cap.records.path} (estimated)")
        res = dt.add_device_capture(timeline, cap, rank_label=_label(cap, len(flat) == 1),
                                    placement=dt.Placement.estimated(origin, f"{reason}; {why_not}"))
        off, how = offsets[id(cap)]
        # device streams were put at `origin` (already our axis); host-clock streams of a
        # capture from another host still need that host's offset
        _shift_processes(timeline, [p for p in res.processes if not p.estimated], off)
        results.append(res)
        device_processes.extend(res.processes)
        warnings.extend(res.warnings)
        summary.append(_capture_line(cap, res, how if off else ""))
        sources_meta.append(_capture_meta(cap, res, off))
    for k, cap in enumerate(merged_only):
        origin, reason = origin_for(len(estimated_caps) + k)
        for mpath in cap.files.merged_swimlanes:
            say(f"reading {mpath}")
            merged = sr.read_merged_swimlane(mpath, found.preloaded.pop(mpath, None))
            res = dt.add_merged_swimlane(timeline, merged, rank_label=_label(cap, len(flat) == 1),
                                         origin_host_ns=origin,
                                         reason=f"{reason}; Simpler's converted trace has no "
                                                "host clock")
            device_processes.extend(res.processes)
            warnings.extend(res.warnings)
            summary.append(f"{mpath}: Simpler converted trace ({cap.files.label}), "
                           f"{res.slices} slices, {res.flows} flows; ESTIMATED at {reason}")
            sources_meta.append({"path": mpath, "kind": "merged_swimlane",
                                 "alignment": f"estimated: {reason}", "estimated": True})

    # ---- flows: kernel_codegen:<name> -> first device task of that kernel
    codegen: dict[str, list[Slice]] = {}
    for s in compile_slices:
        if s.name.startswith(KERNEL_CODEGEN_PREFIX):
            codegen.setdefault(s.name[len(KERNEL_CODEGEN_PREFIX):], []).append(s)
    kernel_flows = 0
    for res in results:
        for kname, task in res.first_task_slice_by_kernel_name.items():
            cands = codegen.get(kname)
            if not cands:
                continue
            cands.sort(key=lambda s: s.ts_ns)
            i = bisect.bisect_right([c.ts_ns for c in cands], task.ts_ns) - 1
            timeline.add_flow(cands[max(i, 0)], task, "kernel_codegen→first task")
            kernel_flows += 1

    # ---- layout: compile first, then Simpler host processes, then devices
    ordered = compile_processes + report_processes
    seen = set(map(id, ordered))
    rest_host = [p for p in host_processes if id(p) not in seen]
    seen.update(map(id, rest_host))
    devs = [p for p in device_processes if id(p) not in seen]
    seen.update(map(id, devs))
    others = [p for p in timeline.processes if id(p) not in seen]
    for n, p in enumerate(ordered + rest_host + others + devs):
        p.sort_index = n

    warnings = list(dict.fromkeys(warnings + timeline.warnings))
    timeline.metadata.update({
        "clock": CLOCK,
        "producer": "pypto.compile_profiling.merge",
        "reference_host": ref_host,
        "sources": sources_meta,
        "alignment": {m["path"]: m["alignment"] for m in sources_meta},
        "estimated": any(m.get("estimated") for m in sources_meta),
        "kernel_codegen_flows": kernel_flows,
        "warnings": warnings,
    })
    if reference is not None:
        timeline.metadata["reference_clock_anchor"] = {"monotonic_ns": reference.mono_ns,
                                                       "wall_ns": reference.wall_ns}
    if kernel_flows:
        summary.append(f"linked {kernel_flows} kernel_codegen stage(s) to their first device task")
    return MergeResult(timeline, summary, warnings)


def _label(cap: sr.Capture, single: bool) -> str:
    """`r<rank>[d<k>]` in the distributed layout; a lone flat `dfx_outputs/` is `r0`; else the
    work dir's (or capture dir's) name, so two work dirs stay apart."""
    d = Path(cap.files.directory)
    if cap.files.rank is None and d.name == "dfx_outputs":
        return "r0" if single else d.parent.name
    return cap.files.label


def _label_calibrated(res: dt.DeviceCaptureResult) -> None:
    """Say on each calibrated device process how sure its placement is (visible in the UI)."""
    for p in res.processes:
        info = p.args.get("alignment")
        if isinstance(info, dict) and info.get("status") == "calibrated":
            p.name += f" (calibrated ±{_fmt_ns(info.get('uncertainty_ns'))})"


def _capture_line(cap: sr.Capture, res: dt.DeviceCaptureResult, host_note: str) -> str:
    rec = cap.records
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v)
    if res.estimated:
        how = f"ESTIMATED ({res.alignment.get('reason', 'no usable clock anchors')})"
    else:
        how = (f"calibrated by clock anchors ({res.alignment_method}, "
               f"uncertainty ±{_fmt_ns(res.uncertainty_ns)})")
    if host_note:
        how += f"; {host_note}"
    return f"{rec.path}: capture {res.rank_label}, level {rec.level}: {counts}; {how}"


def _capture_meta(cap: sr.Capture, res: dt.DeviceCaptureResult, offset_ns: float) -> dict:
    return {"path": cap.records.path, "kind": "swimlane_records", "rank": res.rank_label,
            "alignment": res.alignment_method if not res.estimated
            else f"estimated: {res.alignment.get('reason', '')}",
            "estimated": res.estimated, "uncertainty_ns": res.uncertainty_ns,
            "details": res.alignment, "host_offset_ns": offset_ns}


# --------------------------------------------------------------------------- the profile alone

def profile_to_timeline(profiler) -> Timeline:
    """A `CompileProfiler`'s stages as a Timeline (same processes/threads as its trace.json)."""
    from pypto.compile_profiling.chrome_trace import trace_text

    doc = json.loads(trace_text(profiler))
    timeline = Timeline()
    ct = _CompileTrace("<profile>", doc, doc.get("otherData", {}))
    _add_compile_trace(timeline, ct)
    timeline.metadata.update({k: v for k, v in ct.other.items()})
    return timeline


def write_profile_perfetto(profiler, path: str | os.PathLike) -> int:
    """Write a `CompileProfiler`'s stages as a Perfetto protobuf trace; return its size."""
    return write_timeline(profile_to_timeline(profiler), path, "perfetto")
