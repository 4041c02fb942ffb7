"""Readers for Simpler's runtime-profiling files: foreign files in, plain records out.

Every reader is strict: a file that is unreadable, truncated, of the wrong shape or with
impossible values raises `pypto.errors.TraceInputError(path, problem)` with a one-line
problem text, never another exception. Readers do no alignment and no layout; they only
turn files into records (see `clock_alignment` and `device_timeline` for the next steps).

Big streams stay compact: AICore/AICPU rows are NumPy int64 arrays (one row per record),
phase streams keep NumPy start/end columns plus their records. Big files are read piece by
piece (`_walk_object`): the Python objects of only a few MB exist at once, phase records are
kept as their own JSON text (`PhaseRecord`, a mapping decoded on use), deps.json's unused
per-task `args` are stripped before parsing, and a big deps.json is read in a forked child
while the records file is read (`load_capture`). Anything the piecewise reader does not
expect makes it fall back to parsing the file whole, which also words the error.

Formats: shared/docs/formats.md §2 and the real captures in shared/fixtures/simpler/.
Choices where the docs are silent:
- `l2_swimlane_records.json` (key `l2_swimlane_level`) has the same schema as
  `chip_swimlane_records.json` (key `chip_swimlane_level`); 5-column AICore rows get
  `receive_to_start_cycles = 0`.
- Level gating: streams a level does not collect (e.g. scheduler phases at level 2) are
  ignored if present, and listed in `SwimlaneRecords.ignored_streams`.
- Scheduler phase `kind`s are free strings (new: complete/dispatch/release/resolve/drain,
  old: scan/poll/idle/fanout); unknown kinds are kept, not rejected.

Call sequence: `discover_captures(path)` -> `CaptureFiles` per leaf -> `load_capture(files)` ->
`Capture` -> `device_timeline.add_device_capture`. This module finds and loads capture leaves;
the readers live in modules by job and are all re-exported here:
- `simpler_json`: JSON parsing, the piecewise walker, shared validation helpers;
- `simpler_records`: swimlane records (`read_swimlane_records`);
- `simpler_deps`: deps.json, name maps, dispatch_program.json (and deps.json in a child);
- `simpler_host_log`: the converted trace, run logs and host_phase_records.jsonl.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from pypto.compile_profiling.simpler_deps import (
    DepsGraph,
    DispatchProgram,
    NameMap,
    _DepsInChild,
    read_deps,
    read_dispatch_program,
    read_name_map,
)
from pypto.compile_profiling.simpler_host_log import (
    STRACE_VERSIONS,
    HostLog,
    HostPhaseBatch,
    LogClockAnchor,
    MergedSwimlane,
    StraceSpan,
    read_host_log,
    read_host_phase_records,
    read_merged_swimlane,
)
from pypto.compile_profiling.simpler_json import _orjson, load_json_file, parse_json_bytes
from pypto.compile_profiling.simpler_records import (
    AIC_CORE,
    AIC_END,
    AIC_R2S,
    AIC_REG,
    AIC_START,
    AIC_TOKEN,
    ANCHOR_SCHEMA_VERSIONS,
    CPU_CORE,
    CPU_DISPATCH,
    CPU_FINISH,
    CPU_REG,
    LEVEL_KEYS,
    AnchorSample,
    ClockAnchors,
    PhaseRecord,
    PhaseStream,
    SwimlaneMetadata,
    SwimlaneRecords,
    read_swimlane_records,
)
from pypto.errors import TraceInputError

__all__ = [
    "AIC_CORE", "AIC_END", "AIC_R2S", "AIC_REG", "AIC_START", "AIC_TOKEN",
    "ANCHOR_SCHEMA_VERSIONS", "CPU_CORE", "CPU_DISPATCH", "CPU_FINISH", "CPU_REG",
    "LEVEL_KEYS", "LISTED_ONLY_NAMES", "RECORD_FILE_NAMES", "STRACE_VERSIONS",
    "AnchorSample", "Capture", "CaptureFiles", "ClockAnchors", "DepsGraph", "DispatchProgram",
    "HostLog", "HostPhaseBatch", "LogClockAnchor", "MergedSwimlane", "NameMap", "PhaseRecord",
    "PhaseStream", "StraceSpan", "SwimlaneMetadata", "SwimlaneRecords",
    "discover_captures", "load_capture", "load_json_file", "parse_json_bytes", "read_deps",
    "read_dispatch_program", "read_host_log", "read_host_phase_records",
    "read_merged_swimlane", "read_name_map", "read_swimlane_records",
]
# Private names imported `as` themselves above are re-exported for the tests that use them.

log = logging.getLogger(__name__)

RECORD_FILE_NAMES = ("chip_swimlane_records.json", "l2_swimlane_records.json")
LISTED_ONLY_NAMES = ("pmu.csv", "args_dump", "scope_stats")


# --------------------------------------------------------------------------- discovery

@dataclass(slots=True)
class CaptureFiles:
    """The files of one capture leaf (a flat `dfx_outputs/` or one `rank<r>/d<k>/`)."""

    directory: str
    rank: int | None = None
    dispatch: int | None = None
    records: str | None = None
    deps: str | None = None
    name_maps: list[str] = field(default_factory=list)
    merged_swimlanes: list[str] = field(default_factory=list)
    host_logs: list[str] = field(default_factory=list)
    host_phase_records: str | None = None
    dispatch_program: str | None = None
    listed_only: list[str] = field(default_factory=list)   # pmu.csv, args_dump/, scope_stats/

    @property
    def label(self) -> str:
        """`r<rank>` / `r<rank>d<k>` in the distributed layout, else the directory name."""
        if self.rank is not None:
            return f"r{self.rank}" + (f"d{self.dispatch}" if self.dispatch is not None else "")
        return Path(self.directory).name

    def usable(self) -> bool:
        return bool(self.records or self.merged_swimlanes or self.deps or self.host_logs)


_RANK_RE = re.compile(r"rank(\d+)$")
_DISPATCH_RE = re.compile(r"d(\d+)$")


def _classify_dir(directory: Path) -> CaptureFiles:
    files = CaptureFiles(str(directory))
    parts = directory.parts
    if parts and _DISPATCH_RE.match(parts[-1]) and len(parts) > 1 and _RANK_RE.match(parts[-2]):
        files.rank = int(_RANK_RE.match(parts[-2]).group(1))
        files.dispatch = int(_DISPATCH_RE.match(parts[-1]).group(1))
    elif parts and _RANK_RE.match(parts[-1]):
        files.rank = int(_RANK_RE.match(parts[-1]).group(1))
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise TraceInputError(directory, f"cannot list directory: {exc.strerror or exc}") from None
    for e in entries:
        name = e.name
        if e.is_dir():
            if name in LISTED_ONLY_NAMES:
                files.listed_only.append(e.path)
            continue
        if name in RECORD_FILE_NAMES:
            if files.records is None or name == RECORD_FILE_NAMES[0]:
                files.records = e.path
        elif name == "deps.json":
            files.deps = e.path
        elif name.startswith("name_map") and name.endswith(".json"):
            files.name_maps.append(e.path)
        elif name.startswith("merged_swimlane") and name.endswith(".json"):
            files.merged_swimlanes.append(e.path)
        elif name == "dispatch_program.json":
            files.dispatch_program = e.path
        elif name == "host_phase_records.jsonl":
            files.host_phase_records = e.path
        elif (name.startswith("host_log") and name.endswith(".txt")) or name.endswith(".log"):
            files.host_logs.append(e.path)
        elif name in LISTED_ONLY_NAMES:
            files.listed_only.append(e.path)
    return files


def discover_captures(path: str | os.PathLike) -> list[CaptureFiles]:
    """Find capture leaves under a work dir, a `dfx_outputs/` dir or a leaf dir.

    Leaves of the distributed layout `rank<r>/d<k>/` come back sorted by (rank, dispatch).
    A directory with nothing usable is an error.
    """
    root = Path(path)
    if not root.exists():
        raise TraceInputError(path, "no such file or directory")
    if not root.is_dir():
        raise TraceInputError(path, "expected a directory")
    if (root / "dfx_outputs").is_dir():
        root = root / "dfx_outputs"
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in LISTED_ONLY_NAMES)
        files = _classify_dir(Path(dirpath))
        if files.usable():
            found.append(files)
    if not found:
        raise TraceInputError(path, "no Simpler capture files found (looked for "
                                    "chip_swimlane_records.json, l2_swimlane_records.json, "
                                    "merged_swimlane*.json, deps.json, host_log*.txt)")
    found.sort(key=lambda f: (f.rank if f.rank is not None else -1,
                              f.dispatch if f.dispatch is not None else -1, f.directory))
    return found


@dataclass(slots=True)
class Capture:
    """One capture leaf, read: what `device_timeline.add_device_capture` consumes."""

    files: CaptureFiles
    records: SwimlaneRecords | None = None
    deps_graph: DepsGraph | None = None
    name_map: NameMap | None = None
    dispatch_program: DispatchProgram | None = None
    host_log: HostLog | None = None
    warnings: list[str] = field(default_factory=list)
    deps_pending: _DepsInChild | None = None   # deps.json still being read by a child

    @property
    def deps(self) -> DepsGraph | None:
        """deps.json's graph; waits for the child reading it if there is one (errors in the
        file are raised here)."""
        if self.deps_pending is not None:
            pending, self.deps_pending = self.deps_pending, None
            self.deps_graph = pending.result()
        return self.deps_graph

    @deps.setter
    def deps(self, value: DepsGraph | None) -> None:
        if self.deps_pending is not None:
            self.deps_pending.cancel()
            self.deps_pending = None
        self.deps_graph = value


_PARALLEL_DEPS_BYTES = 4 << 20   # a deps.json this big is read in a child, beside the records



def _deps_in_child(files: CaptureFiles) -> _DepsInChild | None:
    if not (files.deps and files.records and _orjson is not None and hasattr(os, "fork")):
        return None
    try:
        if os.path.getsize(files.deps) < _PARALLEL_DEPS_BYTES:
            return None
        return _DepsInChild(files.deps)
    except OSError:
        return None


def load_capture(files: CaptureFiles, *, read_host_log_file: bool = True) -> Capture:
    """Read the parseable files of one leaf (merged_swimlane*.json is left to its reader)."""
    cap = Capture(files)
    pending = _deps_in_child(files)
    try:
        if files.records:
            cap.records = read_swimlane_records(files.records)
        if pending is None and files.deps:
            cap.deps = read_deps(files.deps)
        _load_small_files(cap, files, read_host_log_file)
    except BaseException:
        if pending is not None:
            pending.cancel()
        raise
    # The child's result is collected on first use of `cap.deps` (device_timeline lays out
    # the phase streams first, so reading deps.json overlaps that too).
    cap.deps_pending = pending
    return cap


def _load_small_files(cap: Capture, files: CaptureFiles, read_host_log_file: bool) -> None:
    if files.name_maps:
        cap.name_map = read_name_map(files.name_maps[0])
        if len(files.name_maps) > 1:
            cap.warnings.append(f"{files.directory}: {len(files.name_maps)} name maps, using "
                                f"{Path(files.name_maps[0]).name}")
    if files.dispatch_program:
        cap.dispatch_program = read_dispatch_program(files.dispatch_program)
    if read_host_log_file and files.host_logs:
        cap.host_log = read_host_log(files.host_logs[0])
    for p in files.listed_only:
        log.info("not a timeline, listed only: %s", p)
