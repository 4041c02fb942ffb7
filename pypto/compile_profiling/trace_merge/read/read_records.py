"""Simpler's swimlane records file of either layout -> checked NumPy columns.

`read_records(path)` reads `chip_swimlane_records.json` (older name
`l2_swimlane_records.json`) as Simpler's writer of August 2026 or today's writes it, into
one `SwimlaneRecords` (docs/simpler_layouts.md). The layout is decided from what the file
holds, never from a version number alone: `scheduler_tasks` / `scheduler_records` sections
or 7-column AICore rows are today's, `aicpu_tasks` / `aicpu_scheduler_phases` August's
(`schema_version`, where a section has one, must be 1). One reader per concept serves
both, so the same concept comes out as the same columns: AICore rows (5, 6 or 7 columns),
scheduler task rows (`aicpu_tasks` or `scheduler_tasks.records`, 4 or 5 columns),
scheduler phases (August thread lists, or today's streams whose records are joined with
their `metrics` by `record_index`), orchestrator phases, host orchestrator phases and
uploads, and today's `aicpu_lifecycle_records`.

Today's records carry `run_epoch`, the run that produced them. The run's epoch is
`metadata.collection.run_epoch` when given, else the one most AICore rows carry (then
scheduler rows, then phases); records of another epoch (a predecessor run's late buffer)
are set aside, counted in `set_aside` and one warning, never drawn as this run's. Phase
kinds the reader does not know are kept under their own name and counted in one warning;
unknown members are skipped. Every value that reaches a clock conversion is range-checked
here, once (`simpler_schema.MAX_CLOCK_NS`), and core ids against `metadata.core_types`.

One bad record costs one record. A record that cannot be interpreted (a row of another
width or with a value that is no count, a phase or metric record that does not fit its
schema, a negative duration, a core outside the core table, a cycle past the range rule, a
lifecycle entry that does not fit) is skipped alone; a list field of another length than
the rest of its column (`shared_at_end` of 2 values where the others have 3) is dropped
for that record alone. What was skipped is counted, per array, in one warning per file
that quotes the first case as the strict reader would have refused it. What makes the
file as a whole uninterpretable (not JSON, a section of the wrong type, a missing
section, the metadata, both layouts at once) is a `TraceInputError` naming the file and
the JSON path.

The big arrays are read a piece at a time (`json_pieces`) with the typed decoders of
`simpler_schema`, each piece going straight into column chunks, so a 1M-task capture never
exists as Python objects at once.

Rules learned from the real captures, where the format notes are silent:
- Level gating: a stream the level does not collect (e.g. scheduler phases at level 2) is
  ignored if present and named in `SwimlaneRecords.ignored_streams` (today's writer gates
  its sections itself: `STREAM_LEVEL_TODAY`).
- AICore rows have 6 columns in August files (the 6th `receive_to_start_cycles`); older
  5-column rows get 0 there; one file never mixes widths.
- Host-orchestrated captures carry `host_orchestrator_phases` and `host_device_uploads` in
  host CLOCK_MONOTONIC ns (`PhaseColumns.clock == "host_ns"`), not device cycles.
- Phase kinds are free strings. Orchestrator phases have no kind: each is a "submit".
"""

from __future__ import annotations

import os

import msgspec
import numpy as np

from pypto.compile_profiling.foundation.input_files import open_input
from pypto.compile_profiling.trace_merge.read import simpler_schema as schema
from pypto.compile_profiling.trace_merge.read.json_pieces import (
    JsonPieces,
    safe_str,
    word_error,
)
from pypto.compile_profiling.trace_merge.read.record_phases import phase_stream
from pypto.compile_profiling.trace_merge.read.record_rows import (
    Skipped,
    bad_rows,
    check_clock_range,
    check_rows,
    decode_rows,
    out_of_range,
    row_columns,
)
from pypto.compile_profiling.trace_merge.read.records_today import (
    lifecycle_streams,
    scheduler_records,
    scheduler_tasks,
)
from pypto.compile_profiling.trace_merge.read.swimlane_records import PhaseColumns, SwimlaneRecords
from pypto.errors import TraceInputError

__all__ = ["PhaseColumns", "SwimlaneRecords", "check_clock_range", "metadata_fields",
           "read_metadata", "read_records"]


ABSENT = schema.ABSENT
_TODAY_KEYS = ("scheduler_tasks", "scheduler_records", "aicpu_lifecycle_records")


# --------------------------------------------------------------------------- rows


# --------------------------------------------------------------------------- record columns


# --------------------------------------------------------------------------- today's sections


# --------------------------------------------------------------------------- the file

def metadata_fields(meta: schema.SwimlaneMetadata, core_types: list[str]) -> dict:
    """The `SwimlaneRecords` fields taken from the file's metadata as they are (`core_types`
    as the caller made them text), for every reader that builds one."""
    return {
        "freq_hz": meta.clock_freq_hz,
        "num_cores": meta.num_cores if meta.num_cores is not None else len(core_types),
        "core_types": core_types, "core_to_thread": meta.core_to_thread,
        "clock_anchors": meta.clock_anchors,
        "host_timestamp_quantization_ns": meta.host_timestamp_quantization_ns,
        "orchestrator_source": meta.orchestrator_source,
        "host_orchestration_origin_ns": meta.host_orchestration_origin_ns}


def read_metadata(jp: JsonPieces, where: str) -> tuple[dict, schema.SwimlaneMetadata]:
    """The records file's `metadata` at `where`: (as written, checked against its schema);
    a `TraceInputError` naming the file and the field when it does not fit."""
    raw = jp.value(where)
    try:
        return raw, msgspec.convert(raw, schema.SwimlaneMetadata)
    except msgspec.ValidationError as exc:
        raise TraceInputError(jp.path, word_error(exc, where, doc=raw)) from None


def read_records(path: str | os.PathLike, times_only: bool = False) -> SwimlaneRecords:
    """Read and check a records file of either layout (see the module docstring).

    `times_only`: phases as their kind, times and `run_epoch` only, today's `metrics` not
    read (what placement needs: the other fields are skipped by the decoder, never built);
    the rows, the checks and the choice of this run's records are the full read's."""
    path = str(path)
    warnings: list[str] = []
    skipped = Skipped()
    level_key, level, raw_meta, meta, rows, streams, producer = _sections(
        path, times_only, warnings, skipped)
    today, ignored = _gated(rows, streams, level)

    none = np.zeros(0, np.int64)
    aic, aic_width, aic_at = rows.get("aicore_tasks", (np.zeros((0, 7), np.int64), 7, none))
    cpu_key = "scheduler_tasks" if "scheduler_tasks" in rows else "aicpu_tasks"
    cpu_where = "$.scheduler_tasks.records" if cpu_key == "scheduler_tasks" else "$.aicpu_tasks"
    cpu_arr, _, cpu_at = rows.get(cpu_key, (np.zeros((0, 5), np.int64), 5, none))
    if aic.shape[1] < 7:                                  # a 5/6-wide August file: no epoch
        aic = np.hstack([aic, np.full((len(aic), 1), ABSENT, np.int64)])
    if cpu_arr.shape[1] < 5:
        cpu_arr = np.hstack([cpu_arr, np.full((len(cpu_arr), 1), ABSENT, np.int64)])
    aicore = row_columns(aic, schema.AICORE_COLUMNS)
    aicpu = row_columns(cpu_arr, schema.SCHEDULER_TASK_COLUMNS)
    aicore["index"], aicpu["index"] = aic_at, cpu_at     # JSON positions, until checked
    del aic, cpu_arr
    if cpu_key not in rows:                   # no task timing (or gated by the level)
        producer = None
    elif cpu_key == "aicpu_tasks":
        producer = "aicpu"
    core_types = [safe_str(t) for t in meta.core_types]
    if meta.num_cores is not None and meta.num_cores != len(core_types):
        raise TraceInputError(path, f"$.metadata.num_cores: {meta.num_cores}, but "
                                    f"metadata.core_types lists {len(core_types)} cores")
    check_rows(aicore, aicpu, cpu_where, len(core_types), path, skipped)
    scheduler = streams.get("scheduler_records", streams.get("aicpu_scheduler_phases", []))
    orchestrator = streams.get("aicpu_orchestrator_phases", [])
    host_orch = streams.get("host_orchestrator_phases", [])
    uploads = streams.get("host_device_uploads", [])
    lifecycle = streams.get("aicpu_lifecycle_records", [])
    _check_ranges(meta.clock_freq_hz, aicore, aicpu, cpu_where,
                  [*scheduler, *orchestrator, *lifecycle], skipped)
    del aicore["index"], aicpu["index"]
    said = skipped.warning(path)
    if said:
        warnings.append(said)

    run_epoch, set_aside = _this_run(path, meta, aicore, aicpu, cpu_key, scheduler,
                                     orchestrator, warnings)
    _warn_unknown_kinds(path, scheduler, warnings)

    rec = SwimlaneRecords(
        path=path, level=level, level_key=level_key, **metadata_fields(meta, core_types),
        metadata=raw_meta, aicore=aicore, aicore_columns=aic_width, aicpu=aicpu,
        scheduler=scheduler, orchestrator=orchestrator, host_orchestrator=host_orch,
        host_uploads=uploads, ignored_streams=ignored,
        layout="today" if today else "august",
        runtime=None if meta.runtime is None else safe_str(meta.runtime),
        host_clock_domain_id=None if meta.host_clock_domain_id is None
        else safe_str(meta.host_clock_domain_id),
        scheduler_task_producer=producer,
        run_epoch=run_epoch, set_aside=set_aside, lifecycle=lifecycle, warnings=warnings)
    return rec


def _sections(path: str, times_only: bool, warnings: list[str], skipped: Skipped):
    """The file walked once, each section decoded as it comes; -> (level key, level, the
    metadata as read and decoded, row arrays by key, phase streams by key, the scheduler
    task rows' producer). The checks that need the whole file: one line naming it."""
    level_key = level = meta = raw_meta = None
    rows: dict[str, tuple[np.ndarray, int]] = {}
    streams: dict[str, list[PhaseColumns]] = {}
    producer = None
    with open_input(path) as f:
        jp = JsonPieces(f, path)
        for key in jp.members("a Simpler swimlane records file"):
            where = f"$.{key}"
            if key in schema.LEVEL_KEYS:
                level_key, level = key, jp.value(where, schema.SwimlaneLevel)
            elif key == "metadata":
                raw_meta, meta = read_metadata(jp, where)
            elif key == "aicore_tasks":
                rows[key] = decode_rows(jp, where, (5, 6, 7), skipped)
            elif key == "aicpu_tasks":
                rows[key] = decode_rows(jp, where, (4,), skipped)
            elif key == "scheduler_tasks":
                rows[key], producer = scheduler_tasks(jp, where, skipped)
            elif key == "scheduler_records":
                streams[key] = scheduler_records(jp, where, warnings, skipped, times_only)
            elif key == "aicpu_lifecycle_records":
                streams[key] = lifecycle_streams(jp, where, warnings, skipped)
            elif key in schema.PHASE_STREAMS:
                spec = schema.PHASE_STREAMS[key]
                streams[key] = phase_stream(jp, key, schema.times_schema(spec) if times_only
                                            else spec, skipped)
            else:
                jp.skip(where)
    if level_key is None:
        raise TraceInputError(path, "missing 'chip_swimlane_level' (or the older "
                                    "'l2_swimlane_level'): not a Simpler swimlane records file")
    if meta is None:
        raise TraceInputError(path, "$: missing 'metadata'")
    for old, new in (("aicpu_tasks", "scheduler_tasks"),
                     ("aicpu_scheduler_phases", "scheduler_records")):
        if old in (*rows, *streams) and new in (*rows, *streams):
            raise TraceInputError(path, f"$: both '{old}' (August layout) and '{new}' (today's) "
                                        "are present; which one is this run's is ambiguous")
    return level_key, level, raw_meta, meta, rows, streams, producer


def _gated(rows: dict, streams: dict, level: int) -> tuple[bool, list[str]]:
    """Which layout the file is (today's or August's), and the sections its level does not
    record (dropped here, named in `ignored_streams` when they held records)."""
    today = any(k in rows or k in streams for k in _TODAY_KEYS) or (
        "aicore_tasks" in rows and rows["aicore_tasks"][1] == 7)
    gates = schema.STREAM_LEVEL_TODAY if today else schema.STREAM_LEVEL
    ignored = [k for k in (*rows, *streams) if gates.get(k, 1) > level
               and (len(rows[k][0]) if k in rows else any(len(s) for s in streams[k]))]
    for k in (*rows, *streams):
        if gates.get(k, 1) > level:
            (rows if k in rows else streams).pop(k)

    return today, ignored


def _this_run(path: str, meta, aicore: dict, aicpu: dict, cpu_key: str, scheduler: list,
              orchestrator: list, warnings: list[str]) -> tuple[int | None, dict[str, int]]:
    """This run's `run_epoch`, and the records of other runs set aside (counted by
    section, said in one warning)."""
    run_epoch = _run_epoch(meta, aicore, aicpu, [*scheduler, *orchestrator])
    set_aside: dict[str, int] = {}
    if run_epoch is not None:
        _keep_run(aicore, run_epoch, "aicore_tasks", set_aside)
        _keep_run(aicpu, run_epoch, cpu_key, set_aside)
        for key, group in (("scheduler_records", scheduler),
                           ("aicpu_orchestrator_phases", orchestrator)):
            for s in group:
                _keep_run_phases(s, run_epoch, key, set_aside)
    if set_aside:
        what = ", ".join(f"{n} {k}" for k, n in set_aside.items())
        warnings.append(f"{path}: {sum(set_aside.values())} records of another run (run_epoch "
                        f"other than this run's {run_epoch}) set aside, not drawn: {what}")
    return run_epoch, set_aside


def _check_ranges(freq: int, aicore: dict, aicpu: dict, cpu_where: str,
                  device_streams: list[PhaseColumns], skipped: Skipped) -> None:
    """The one range rule on every device cycle value (host ns are bounded by type): a
    record past it is skipped alone."""
    limit = schema.max_cycles(freq)
    for where, cols, checks in (("$.aicore_tasks", aicore, (("start_cycles", 3),
                                                             ("end_cycles", 4))),
                                (cpu_where, aicpu, (("dispatch_cycles", 2),
                                                    ("finish_cycles", 3)))):
        for key, col in checks:
            bad, why = out_of_range(cols[key], limit, key)
            bad_rows(cols, cols["index"], bad, skipped, where,
                      lambda i, c=cols, k=key, j=col, w=where, y=why: (
                          f"{w}[{int(c['index'][i])}][{j}]: {y(int(c[k][i]))}"))
    for st in device_streams:
        # end >= start was checked per record, so the end is the one to bound
        bad, why = out_of_range(st.end, limit, "end_cycles")
        if bad.any():
            at = st.index if st.index is not None else np.arange(len(st.end))
            for i in np.flatnonzero(bad).tolist():
                skipped.add(st.source, f"{st.source}[{int(at[i])}]: {why(int(st.end[i]))}")
            t = st.take(np.flatnonzero(~bad))
            st.start, st.end, st.kind, st.args, st.epoch, st.index = (
                t.start, t.end, t.kind, t.args, t.epoch, t.index)


def _run_epoch(meta, aicore: dict, aicpu: dict, streams: list[PhaseColumns]) -> int | None:
    """This run's epoch: metadata.collection's, else the most common among the AICore rows
    (ties: the later run), then the scheduler rows, then the phases; None when no record
    carries one (an August file)."""
    if meta.collection is not None:
        return meta.collection.run_epoch
    for col in (aicore["run_epoch"], aicpu["run_epoch"],
                *(s.epoch for s in streams if s.epoch is not None)):
        known = col[col != ABSENT]
        if len(known):
            vals, counts = np.unique(known, return_counts=True)
            return int(vals[counts == counts.max()].max())
    return None


def _keep_run(cols: dict[str, np.ndarray], run: int, key: str, set_aside: dict) -> None:
    ep = cols["run_epoch"]
    keep = (ep == run) | (ep == ABSENT)
    if not keep.all():
        set_aside[key] = set_aside.get(key, 0) + int((~keep).sum())
        for k in cols:
            cols[k] = cols[k][keep]


def _keep_run_phases(s: PhaseColumns, run: int, key: str, set_aside: dict) -> None:
    if s.epoch is None:
        return
    keep = (s.epoch == run) | (s.epoch == ABSENT)
    if keep.all():
        return
    set_aside[key] = set_aside.get(key, 0) + int((~keep).sum())
    t = s.take(np.flatnonzero(keep))
    s.start, s.end, s.kind, s.args, s.epoch = t.start, t.end, t.kind, t.args, t.epoch


def _warn_unknown_kinds(path: str, scheduler: list[PhaseColumns], warnings: list[str]) -> None:
    counts: dict[str, int] = {}
    for s in scheduler:
        for code, name in enumerate(s.kinds):
            if name not in schema.KNOWN_PHASE_KINDS:
                n = int(np.count_nonzero(s.kind == code))
                if n:
                    counts[name] = counts.get(name, 0) + n
    if counts:
        names = ", ".join(sorted(counts)[:8]) + (", ..." if len(counts) > 8 else "")
        warnings.append(f"{path}: {sum(counts.values())} scheduler phases of {len(counts)} "
                        f"kind(s) this reader does not know ({names}), drawn under their own "
                        "names")
