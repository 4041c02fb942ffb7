"""Readers of Simpler's capture files: every file of a capture leaf in, checked NumPy
columns out.

`discover_captures(path)` finds the leaves (a flat `dfx_outputs/` or each `rank<r>/d<k>/`)
and `read_capture(files)` reads and checks every file of one leaf into a `Capture`:
records (`chip_swimlane_records.json`, older `l2_swimlane_records.json`), `deps.json`,
`name_map_*.json`, `dispatch_program.json`, `dispatch_identity.json`, `merged_swimlane*.json`
(Simpler's converted trace), the run log and `host_phase_records.jsonl`. `pmu.csv`,
`args_dump/` and `scope_stats/` are listed, not parsed. Readers do no alignment and no layout.

Every problem is a `TraceInputError(path, problem)`, the problem naming the JSON path as
the whole file counts it (`$.tasks[17].kernel_ids[2]: expected int, got str`). The records
file (either Simpler layout: `read_records`) and deps.json are read a piece at a time
(`json_pieces`) with the typed decoders of `simpler_schema`, each piece going straight into
column chunks, so a 1M-task capture never exists as Python objects at once.

Measured (`benchmarks/bench_readers.py`: the real `tmr_bgemm_case0_l4_depgen` repeated in
time; `read_records` + `read_deps` against `orjson.loads` of the same two files, GC paused,
2 shared cores): 100K tasks 1.42 s CPU and 85 MB peak vs 1.44 s and 892 MB; 1M tasks
(593 + 704 MB of JSON) 13.3 s CPU and 531 MB peak vs 17.7 s and 8,784 MB.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

import msgspec
import numpy as np

from pypto.compile_profiling.foundation.input_files import (
    check_input_dir,
    entry_is_dir,
    list_input_dir,
    open_input,
)
from pypto.compile_profiling.trace_merge.read import simpler_schema as schema
from pypto.compile_profiling.trace_merge.read.json_pieces import (
    SEP_OBJECTS,
    JsonPieces,
    safe_str,
    word_error,
)
from pypto.compile_profiling.trace_merge.read.read_converted import (
    ConvertedCounter,
    ConvertedFlow,
    ConvertedSlice,
    ConvertedTrace,
    read_converted_trace,
)
from pypto.compile_profiling.trace_merge.read.read_records import (
    PhaseColumns,
    SwimlaneRecords,
    read_records,
)
from pypto.compile_profiling.trace_merge.read.read_run_log import (
    HostPhaseBatch,
    RunLog,
    read_host_phase_records,
    read_run_log,
)
from pypto.errors import TraceInputError

__all__ = [
    "LISTED_ONLY_NAMES", "RECORD_FILE_NAMES", "Capture", "CaptureFiles", "ConvertedCounter",
    "ConvertedFlow", "ConvertedSlice", "ConvertedTrace",
    "DepsGraph", "DispatchIdentity", "DispatchProgram", "NameMap", "PhaseColumns", "SwimlaneRecords",
    "add_loose_file", "discover_captures", "read_capture", "read_converted_trace", "read_deps",
    "read_dispatch_identity", "read_dispatch_program", "read_name_map", "read_records",
]

log = logging.getLogger(__name__)

RECORD_FILE_NAMES = ("chip_swimlane_records.json", "l2_swimlane_records.json")
LISTED_ONLY_NAMES = ("pmu.csv", "args_dump", "scope_stats")
SMALL_FILE_BYTES = 64 << 20      # name maps, dispatch_program.json: far below this


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
    converted: list[str] = field(default_factory=list)        # merged_swimlane*.json
    run_logs: list[str] = field(default_factory=list)         # host_log*.txt, *.log
    host_phase_records: str | None = None
    dispatch_program: str | None = None
    dispatch_identity: str | None = None
    listed_only: list[str] = field(default_factory=list)      # pmu.csv, args_dump/, scope_stats/
    records_ignored: list[str] = field(default_factory=list)  # a second records file

    @property
    def label(self) -> str:
        """`r<rank>` / `r<rank>d<k>` in the distributed layout, else the directory name."""
        if self.rank is not None:
            return f"r{self.rank}" + (f"d{self.dispatch}" if self.dispatch is not None else "")
        return Path(self.directory).name

    def usable(self) -> bool:
        return bool(self.records or self.converted or self.deps or self.run_logs)


_RANK_RE = re.compile(r"rank(\d+)$")
_DISPATCH_RE = re.compile(r"d(\d+)$")


def file_kind(name: str) -> str | None:
    """What a capture file is, by its name (None: not a capture file)."""
    if name in RECORD_FILE_NAMES:
        return "records"
    if name == "deps.json":
        return "deps"
    if name.startswith("name_map") and name.endswith(".json"):
        return "name_map"
    if name.startswith("merged_swimlane") and name.endswith(".json"):
        return "converted"
    if name == "dispatch_program.json":
        return "dispatch_program"
    if name == "dispatch_identity.json":
        return "dispatch_identity"
    if name == "host_phase_records.jsonl":
        return "host_phase_records"
    if (name.startswith("host_log") and name.endswith(".txt")) or name.endswith(".log"):
        return "run_log"
    if name in LISTED_ONLY_NAMES:
        return "listed_only"
    return None


def files_of(files: CaptureFiles) -> list[str]:
    """Every file of a capture leaf (what an output must not overwrite)."""
    return [f for f in (files.records, files.deps, files.host_phase_records,
                        files.dispatch_program, files.dispatch_identity, *files.name_maps, *files.converted,
                        *files.run_logs) if f]


def add_loose_file(files: CaptureFiles, kind: str, path: str) -> None:
    """Put `path` (a file of `kind`, see `file_kind`) into `files`."""
    if kind == "records":
        if files.records is None:
            files.records = path
        elif Path(path).name == RECORD_FILE_NAMES[0]:   # today's name over the older one
            files.records_ignored.append(files.records)
            files.records = path
        else:
            files.records_ignored.append(path)
    elif kind in ("deps", "dispatch_program", "dispatch_identity", "host_phase_records"):
        setattr(files, kind, path)
    elif kind == "name_map":
        files.name_maps.append(path)
    elif kind == "converted":
        files.converted.append(path)
    elif kind == "run_log":
        files.run_logs.append(path)
    elif kind == "listed_only":
        files.listed_only.append(path)
    else:
        raise ValueError(f"unknown capture file kind {kind!r}")


def _classify_dir(directory: Path) -> CaptureFiles:
    files = CaptureFiles(str(directory))
    parts = directory.parts
    if len(parts) > 1 and _DISPATCH_RE.match(parts[-1]) and _RANK_RE.match(parts[-2]):
        files.rank = int(_RANK_RE.match(parts[-2]).group(1))
        files.dispatch = int(_DISPATCH_RE.match(parts[-1]).group(1))
    elif parts and _RANK_RE.match(parts[-1]):
        files.rank = int(_RANK_RE.match(parts[-1]).group(1))
    for e in list_input_dir(directory):
        kind = file_kind(e.name)
        if kind is not None and (kind == "listed_only" or not entry_is_dir(e)):
            add_loose_file(files, kind, e.path)
    return files


def discover_captures(path: str | os.PathLike) -> list[CaptureFiles]:
    """Capture leaves under a work dir, a `dfx_outputs/` dir or a leaf dir; leaves of the
    distributed layout `rank<r>/d<k>/` sorted by (rank, dispatch). Nothing usable is an
    error. Symlinked directories are not followed (no loops)."""
    check_input_dir(path)
    root = Path(path)
    if (root / "dfx_outputs").is_dir():
        root = root / "dfx_outputs"
    found = []
    walk_errors: list[OSError] = []
    for dirpath, dirnames, _ in os.walk(root, onerror=walk_errors.append):
        dirnames[:] = sorted(d for d in dirnames if d not in LISTED_ONLY_NAMES)
        files = _classify_dir(Path(dirpath))
        if files.usable():
            found.append(files)
    if walk_errors:
        exc = walk_errors[0]
        raise TraceInputError(exc.filename or path,
                              f"cannot list directory: {exc.strerror or exc}")
    if not found:
        raise TraceInputError(path, "no Simpler capture files found (looked for "
                                    "chip_swimlane_records.json, l2_swimlane_records.json, "
                                    "merged_swimlane*.json, deps.json, host_log*.txt)")
    found.sort(key=lambda f: (f.rank if f.rank is not None else -1,
                              f.dispatch if f.dispatch is not None else -1, f.directory))
    return found


# --------------------------------------------------------------------------- deps.json

@dataclass(slots=True, eq=False)
class DepsGraph:
    """deps.json's task graph as columns. Task ids are 64-bit `(ring << 32) | local`.
    `kernel_ids[i]` = (aic, aiv0, aiv1) of task i, -1 where unused or not given;
    `block_num` >= 1; edges `pred[j] -> succ[j]`, duplicates removed, in file order."""

    path: str
    task_id: np.ndarray
    kernel_ids: np.ndarray
    block_num: np.ndarray
    pred: np.ndarray
    succ: np.ndarray


_TASKS = msgspec.json.Decoder(list[schema.DepsTask], strict=False)
_EDGES = msgspec.json.Decoder(list[schema.DepsEdge], strict=False)
# A task starts with its task_id in Simpler's files: cutting only there keeps cuts out of
# the nested `args` objects (a cut elsewhere is still found and extended, just slower).
_SEP_TASKS = re.compile(rb'\}\s*,\s*(\{)\s*"task_id"')
_NO_KERNELS = [-1, -1, -1]


def read_deps(path: str | os.PathLike) -> DepsGraph:
    """Read and check deps.json: task ids, kernel ids, block_num and edges (other members,
    such as each task's `args` and the `tensors` list, are skipped unparsed)."""
    path = str(path)
    tids, kids, bnums, preds, succs = [], [], [], [], []
    seen = set()
    with open_input(path) as f:
        jp = JsonPieces(f, path)
        for key in jp.members("deps.json"):
            if key == "tasks":
                for _, tasks in jp.array("$.tasks", _TASKS, _SEP_TASKS):
                    n = len(tasks)
                    tids.append(np.fromiter(map(attrgetter("task_id"), tasks), np.int64, n))
                    bnums.append(np.fromiter(map(attrgetter("block_num"), tasks), np.int64, n))
                    k = [_NO_KERNELS if v is None else v if len(v) == 3 else v + [-1] * (3 - len(v))
                         for v in map(attrgetter("kernel_ids"), tasks)]
                    kids.append(np.fromiter(itertools.chain.from_iterable(k), np.int64,
                                            3 * n).reshape(n, 3))
                    del tasks, k
            elif key == "edges":
                for _, edges in jp.array("$.edges", _EDGES, SEP_OBJECTS):
                    n = len(edges)
                    preds.append(np.fromiter(map(attrgetter("pred"), edges), np.int64, n))
                    succs.append(np.fromiter(map(attrgetter("succ"), edges), np.int64, n))
                    del edges
            else:
                jp.skip(f"$.{key}")
                continue
            seen.add(key)
    for key in ("tasks", "edges"):
        if key not in seen:
            raise TraceInputError(path, f"$: missing '{key}' (not a Simpler deps.json)")

    def cat(parts, shape=(0,)):
        return np.concatenate(parts) if parts else np.zeros(shape, np.int64)

    pred, succ = cat(preds), cat(succs)
    if len(pred):
        pairs = np.empty(len(pred), dtype=[("p", np.int64), ("s", np.int64)])
        pairs["p"], pairs["s"] = pred, succ
        _, first = np.unique(pairs, return_index=True)
        if len(first) < len(pred):
            first.sort()
            pred, succ = pred[first], succ[first]
    return DepsGraph(path, cat(tids), cat(kids, (0, 3)), np.maximum(cat(bnums), 1), pred, succ)


# --------------------------------------------------------------------------- small files

def _small_json(path, type_, what: str):
    """A small JSON file (a name map, dispatch_program.json), read and checked whole."""
    with open_input(path) as f:
        jp = JsonPieces(f, path, max_piece_bytes=SMALL_FILE_BYTES)
        if jp.peek() != b"{":
            next(jp.members(what))        # words the error (empty, not an object)
        value = jp.value("$")
        jp.finish()
    try:
        return msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        raise TraceInputError(path, word_error(exc, "$", doc=value)) from None


@dataclass(slots=True, eq=False)
class NameMap:
    """name_map_<case>.json: kernel (callable) id -> name, valid within one program."""

    path: str
    level: int | None
    orchestrator_name: str | None
    names: dict[int, str]


def read_name_map(path: str | os.PathLike) -> NameMap:
    nm = _small_json(path, schema.NameMapFile, "a name map")
    names = {}
    for k, v in nm.callable_id_to_name.items():
        digits = k.removeprefix("-")
        if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
            raise TraceInputError(path, f"$.callable_id_to_name: key {safe_str(k)[:40]!r} is "
                                        "not an integer id")
        names[int(k)] = safe_str(v)
    orch = None if nm.orchestrator_name is None else safe_str(nm.orchestrator_name)
    return NameMap(str(path), nm.level, orch, names)


@dataclass(slots=True, eq=False)
class DispatchProgram:
    """dispatch_program.json of a distributed leaf: which program ran in this dispatch."""

    path: str
    program: str


def read_dispatch_program(path: str | os.PathLike) -> DispatchProgram:
    dp = _small_json(path, schema.DispatchProgramFile, "dispatch_program.json")
    return DispatchProgram(str(path), safe_str(dp.program))


@dataclass(slots=True, eq=False)
class DispatchIdentity:
    """dispatch_identity.json: `key` is the dispatch as the host log's root span names it
    (run_id, dispatch_id, slot_id, generation), None when the sidecar lacks a part or
    names a synchronous launch (run_id and dispatch_id 0); `host_pid` the process."""

    path: str
    key: tuple[int, int, int, int] | None
    host_pid: int | None


def read_dispatch_identity(path: str | os.PathLike) -> DispatchIdentity:
    d = _small_json(path, schema.DispatchIdentityFile, "dispatch_identity.json")
    parts = (d.run_id, d.endpoint_dispatch_id, d.pipeline_slot, d.pipeline_generation)
    key = None if None in parts or parts[0] == parts[1] == 0 else parts
    return DispatchIdentity(str(path), key, d.host_pid)



# --------------------------------------------------------------------------- a capture

@dataclass(slots=True, eq=False)
class Capture:
    """One capture leaf, every file read and checked."""

    files: CaptureFiles
    records: SwimlaneRecords | None = None
    deps: DepsGraph | None = None
    name_map: NameMap | None = None
    dispatch_program: DispatchProgram | None = None
    dispatch_identity: DispatchIdentity | None = None
    run_log: RunLog | None = None     # its run's log (of several: chosen when placed)
    run_logs: list[RunLog] = field(default_factory=list)    # every run log beside it
    converted: list[ConvertedTrace] = field(default_factory=list)
    host_phases: list[HostPhaseBatch] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_capture(files: CaptureFiles, *, converted: bool = True) -> Capture:
    """Read every file of one leaf (see the module docstring). `converted=False` leaves
    Simpler's converted traces unread (listed in `files.converted` only): beside the raw
    records they add nothing, and at 1M tasks they hold ~5M events as Python objects."""
    cap = Capture(files)
    if files.records:
        cap.records = read_records(files.records)
        cap.warnings.extend(cap.records.warnings)
        for other in files.records_ignored:
            cap.warnings.append(f"{files.directory}: read {Path(files.records).name}; "
                                f"{Path(other).name} beside it was ignored (one records "
                                f"file per capture; {RECORD_FILE_NAMES[0]} is today's name)")
    if files.deps:
        cap.deps = read_deps(files.deps)
    if files.name_maps:
        cap.name_map = read_name_map(files.name_maps[0])
        if len(files.name_maps) > 1:
            cap.warnings.append(f"{files.directory}: {len(files.name_maps)} name maps, using "
                                f"{Path(files.name_maps[0]).name}")
    if files.dispatch_program:
        cap.dispatch_program = read_dispatch_program(files.dispatch_program)
    if files.dispatch_identity:
        cap.dispatch_identity = read_dispatch_identity(files.dispatch_identity)
    if files.run_logs:            # of several, `place` keeps the capture's own run's
        cap.run_logs = [read_run_log(p) for p in files.run_logs]
        cap.run_log = cap.run_logs[0] if len(cap.run_logs) == 1 else None
    if converted:
        cap.converted = [read_converted_trace(p) for p in files.converted]
    if files.host_phase_records:
        cap.host_phases = read_host_phase_records(files.host_phase_records)
    for p in files.listed_only:
        log.info("not a timeline, listed only: %s", p)
    return cap
