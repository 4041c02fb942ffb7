"""The declared schemas of Simpler's files, as msgspec Structs.

msgspec decodes and checks in one C pass: a value of the wrong type, a negative cycle
count or an integer beyond int64 fails with its JSON path (`$.tasks[17].kernel_ids[2]`),
and unknown members of a big record are skipped without building Python objects (deps.json's
per-task `args` are most of that file). Measured at 100K tasks (one scheduler thread,
87,500 records): decoding into `SchedulerPhase` takes 0.09 s, 1.8x less than
`orjson.loads` of the same text into dicts (0.17 s), checks included.

Where the format notes and the real captures disagree, the captures win; the choices made
where both are silent are written beside the field. Record streams keep every field the
file holds: the phase Structs forbid unknown fields, so a record with a field not declared
here is noticed and read by the reader's lenient path (kept as a generic column), never
dropped. Optional counters default to `ABSENT` (-1, impossible for a value that must be
>= 0) so the reader can tell "absent" from a value with one vectorised comparison.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

__all__ = ["ABSENT", "LEVEL_KEYS", "PHASE_STREAMS", "STREAM_LEVEL", "AnchorSample",
           "ClockAnchors", "ConvertedEvent", "Count", "DepsEdge", "DepsTask",
           "DispatchProgramFile", "HostOrchestratorPhase", "HostPhaseLine", "HostPhaseRecord",
           "HostUpload", "Int64", "NameMapFile", "OrchestratorPhase", "PhaseSchema",
           "SchedulerPhase", "SwimlaneMetadata", "TimeUs"]

INT64_MAX = (1 << 63) - 1
Int64 = Annotated[int, Meta(ge=-(1 << 63), le=INT64_MAX)]
Count = Annotated[int, Meta(ge=0, le=INT64_MAX)]           # cycles, host ns, ids, counters
Frequency = Annotated[int, Meta(gt=0, le=INT64_MAX)]       # device counter Hz: never assumed
KernelId = Annotated[int, Meta(ge=-1, le=INT64_MAX)]       # -1: that core type is unused
TimeUs = Annotated[float, Meta(ge=0, le=1e15)]             # converted trace µs (< 31 years)
ABSENT = -1

LEVEL_KEYS = ("chip_swimlane_level", "l2_swimlane_level")  # new name, older name
SwimlaneLevel = Literal[1, 2, 3, 4]

# The level that first collects each stream (1 AICore; 2 + AICPU; 3 + scheduler; 4 + orch).
STREAM_LEVEL = {"aicore_tasks": 1, "aicpu_tasks": 2, "aicpu_scheduler_phases": 3,
                "aicpu_orchestrator_phases": 4, "host_orchestrator_phases": 4,
                "host_device_uploads": 4}
AICORE_COLUMNS = ("core_id", "task_id", "reg_task_id", "start_cycles", "end_cycles",
                  "receive_to_start_cycles")    # older files: the first 5 only
AICPU_COLUMNS = ("core_id", "reg_task_id", "dispatch_cycles", "finish_cycles")


# --------------------------------------------------------------------------- metadata

class AnchorSample(Struct):
    """One host/device clock read pair; host times are CLOCK_MONOTONIC ns."""

    position: str
    sample_idx: Count
    host_before_ns: Count
    host_after_ns: Count
    device_cycles: Count | None = None          # null when the read failed
    raw_device_timestamp: Count | None = None
    rtt_ns: Count | None = None
    uncertainty_ns: Count | None = None
    error: Any = None                           # null or an object saying what failed


class ClockAnchors(Struct):
    """`metadata.clock_anchors` (host-orchestrated captures only, in the real files)."""

    schema_version: Literal[1]
    samples: list[AnchorSample]
    provider: str | None = None
    device_timestamp_unit: str | None = None
    raw_device_timestamp_unit: str | None = None
    samples_per_position: Count | None = None


class SwimlaneMetadata(Struct):
    """`metadata` of a records file; members not named here are kept in the raw dict."""

    clock_freq_hz: Frequency
    core_types: list[str]
    num_cores: Count | None = None              # default: len(core_types)
    core_to_thread: list[Int64] | None = None
    clock_anchors: ClockAnchors | None = None
    orchestrator_source: str | None = None      # "host": host-orchestrated run
    host_orchestration_origin_ns: Count | None = None
    host_timestamp_quantization_ns: Count = 0
    host_capture: dict[str, Any] | None = None


# --------------------------------------------------------------------------- phase records

class SchedulerPhase(Struct, forbid_unknown_fields=True, gc=False):
    """`aicpu_scheduler_phases[thread][i]`; kinds are free strings (complete, dispatch,
    release, resolve, drain; older files scan, poll, idle, fanout)."""

    kind: str
    start_cycles: Count
    end_cycles: Count
    loop_iter: Count = ABSENT
    tasks_processed: Count = ABSENT
    pop_hit: Count = ABSENT                     # on dispatch phases only
    pop_miss: Count = ABSENT
    shared_at_start: list[Int64] | None = None
    shared_at_end: list[Int64] | None = None


class OrchestratorPhase(Struct, forbid_unknown_fields=True, gc=False):
    """`aicpu_orchestrator_phases[thread][i]`: one task submission, device cycles."""

    start_cycles: Count
    end_cycles: Count
    submit_idx: Count = ABSENT
    task_id: Count = ABSENT


class HostOrchestratorPhase(Struct, forbid_unknown_fields=True, gc=False):
    """`host_orchestrator_phases[thread][i]`: one submission by the host, host ns."""

    start_host_ns: Count
    end_host_ns: Count
    submit_idx: Count = ABSENT
    task_id: Count = ABSENT


class HostUpload(Struct, forbid_unknown_fields=True, gc=False):
    """`host_device_uploads[i]` (a flat list in the real files, not one per thread)."""

    phase: str
    start_host_ns: Count
    end_host_ns: Count
    detail: Int64 | None = None


class PhaseSchema(Struct, frozen=True):
    """How to read one phase stream: its record Struct, time fields and kind."""

    record: type
    start: str
    end: str
    kind: str | None           # the field naming the phase, or None: every phase is `default_kind`
    default_kind: str
    clock: str                 # "device_cycles" | "host_ns"
    per_thread: bool = True    # a list per thread (else one flat list)


PHASE_STREAMS = {
    "aicpu_scheduler_phases": PhaseSchema(SchedulerPhase, "start_cycles", "end_cycles",
                                          "kind", "", "device_cycles"),
    "aicpu_orchestrator_phases": PhaseSchema(OrchestratorPhase, "start_cycles", "end_cycles",
                                             None, "submit", "device_cycles"),
    "host_orchestrator_phases": PhaseSchema(HostOrchestratorPhase, "start_host_ns",
                                            "end_host_ns", None, "submit", "host_ns"),
    "host_device_uploads": PhaseSchema(HostUpload, "start_host_ns", "end_host_ns", "phase", "",
                                       "host_ns", per_thread=False),
}


# --------------------------------------------------------------------------- deps.json

class DepsTask(Struct, gc=False):
    """`tasks[i]`; `task_id` is a decimal string of a 64-bit `(ring << 32) | local` (read
    with msgspec's lax mode, so plain integers are accepted too). Other members (`args`,
    `scope`, ...) are skipped unparsed."""

    task_id: Count
    kernel_ids: Annotated[list[KernelId], Meta(max_length=3)] | None = None  # aic, aiv0, aiv1
    block_num: Count = 1


class DepsEdge(Struct, gc=False):
    """`edges[i]`: pred -> succ (decimal-string task ids); other members skipped."""

    pred: Count
    succ: Count


# --------------------------------------------------------------------------- small files

class NameMapFile(Struct):
    """`name_map_<case>.json`; keys of `callable_id_to_name` are checked by the reader
    (plain ASCII decimal integers)."""

    callable_id_to_name: dict[str, str]
    level: Int64 | None = None
    orchestrator_name: str | None = None


class DispatchProgramFile(Struct):
    """`dispatch_program.json` of a distributed leaf: which program ran there."""

    program: Annotated[str, Meta(min_length=1)]


class DispatchIdentityFile(Struct):
    """`dispatch_identity.json` beside a distributed leaf's capture (Simpler's ChipWorker
    sidecar): which dispatch it served. The host log's root `chip.run` span names the same
    dispatch as `run_id` / `dispatch_id` / `slot_id` / `generation`; here the last three are
    `endpoint_dispatch_id` / `pipeline_slot` / `pipeline_generation`. `host_pid`: the
    process that ran it (older sidecars have none). Other keys are not read."""

    schema_version: Int64 | None = None
    run_id: Count | None = None
    endpoint_dispatch_id: Count | None = None
    pipeline_slot: Count | None = None
    pipeline_generation: Count | None = None
    host_pid: Count | None = None
    chip_rank: Count | None = None
    local_capture_index: Count | None = None


class HostPhaseRecord(Struct, gc=False):
    """One record of `host_phase_records.jsonl`."""

    phase: str
    start_ns: Count
    end_ns: Count
    tid: Count | None = None
    detail: Int64 | None = None


class HostPhaseLine(Struct):
    """One line of `host_phase_records.jsonl`: host phases on CLOCK_MONOTONIC."""

    pid: Count
    records: list[HostPhaseRecord]
    inv: Count | None = None
    clock: Literal["host_monotonic_ns"] = "host_monotonic_ns"
    dropped: Count = 0


class ConvertedEvent(Struct):
    """One event of Simpler's converted trace (`merged_swimlane*.json`): µs from the
    capture's own origin; other members (args, id, bp, ...) are kept as read."""

    ph: str
    ts: TimeUs | None = None
    dur: TimeUs | None = None
    pid: Int64 = 0
    tid: Int64 = 0
    name: str = ""
    cat: str = ""
    args: dict[str, Any] | None = None
    id: Any = None                  # X: the slice's id; s/f: the flow's id
    bind_id: Any = None             # s/f: the id of the slice the flow end is bound to
