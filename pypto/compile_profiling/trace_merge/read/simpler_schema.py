"""The declared schemas of Simpler's files, as msgspec Structs.

msgspec decodes and checks in one C pass: a value of the wrong type, a negative cycle
count or an integer beyond int64 fails with its JSON path (`$.tasks[17].kernel_ids[2]`),
and unknown members of a big record are skipped without building Python objects (deps.json's
per-task `args` are most of that file). Measured at 100K tasks (one scheduler thread,
87,500 records): decoding into `SchedulerPhase` takes 0.09 s, 1.8x less than
`orjson.loads` of the same text into dicts (0.17 s), checks included.

Both layouts of the records file are declared here (docs/simpler_layouts.md): August 2026's
(`aicpu_tasks`, `aicpu_scheduler_phases`) and today's (`scheduler_tasks`,
`scheduler_records` streams with their `metrics`, `run_epoch` on every record). One Struct per
concept serves both: a scheduler phase is a `SchedulerPhase` whether it came whole from an
August thread list or from a today's stream record joined with its metrics entry.

Where the format notes and the real captures disagree, the captures win; the choices made
where both are silent are written beside the field. Record streams keep every field the
file holds: the phase Structs forbid unknown fields, so a record with a field not declared
here is noticed and read by the reader's lenient path (kept as a generic column), never
dropped. Optional counters default to `ABSENT` (-1, impossible for a value that must be
>= 0) so the reader can tell "absent" from a value with one vectorised comparison.

Every value that reaches a clock conversion obeys one rule, checked once at the reader:
it must be under `MAX_CLOCK_NS` (2^62 ns, 146 years) once converted to ns, so no
conversion or offset on the reference axis can overflow int64. Host ns fields carry the
bound in their type (`HostNs`); device cycles depend on the capture's frequency and are
checked against `max_cycles(freq_hz)` after the file is read.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

__all__ = ["ABSENT", "AICORE_COLUMNS", "KNOWN_PHASE_KINDS", "LEVEL_KEYS", "LIFECYCLE_PHASES",
           "MAX_CLOCK_NS", "PHASE_STREAMS", "SCHEDULER_TASK_COLUMNS", "STREAM_FIELDS",
           "STREAM_LEVEL", "STREAM_LEVEL_TODAY", "AnchorSample", "ClockAnchors", "Collection",
           "ConvertedEvent", "Count", "DepsEdge", "DepsTask", "DispatchIdentityFile",
           "DispatchProgramFile", "HostNs",
           "HostOrchestratorPhase", "HostPhaseLine", "HostPhaseRecord", "HostUpload", "Int64",
           "LifecycleRecord", "NameMapFile", "OrchestratorPhase", "PhaseSchema",
           "SchedulerMetric", "SchedulerPhase", "StreamCapture", "SwimlaneMetadata", "TimeUs",
           "max_cycles"]

INT64_MAX = (1 << 63) - 1
Int64 = Annotated[int, Meta(ge=-(1 << 63), le=INT64_MAX)]
Count = Annotated[int, Meta(ge=0, le=INT64_MAX)]           # cycles, host ns, ids, counters
Frequency = Annotated[int, Meta(gt=0, le=INT64_MAX)]       # device counter Hz: never assumed
KernelId = Annotated[int, Meta(ge=-1, le=INT64_MAX)]       # -1: that core type is unused
TimeUs = Annotated[float, Meta(ge=0, le=1e15)]             # converted trace µs (< 31 years)
MAX_CLOCK_NS = 1 << 62                                      # the one range rule (module doc)
HostNs = Annotated[int, Meta(ge=0, lt=MAX_CLOCK_NS)]        # host CLOCK_MONOTONIC ns
ABSENT = -1


def max_cycles(freq_hz: int) -> int:
    """The first device cycle count past the range rule at `freq_hz`: a cycle value must be
    below it, so its ns (cycles * 1e9 / freq_hz) stays under `MAX_CLOCK_NS`."""
    return -(-MAX_CLOCK_NS * freq_hz // 1_000_000_000)

LEVEL_KEYS = ("chip_swimlane_level", "l2_swimlane_level")  # new name, older name
SwimlaneLevel = Literal[1, 2, 3, 4]

# The level that first collects each stream (1 AICore; 2 + AICPU; 3 + scheduler; 4 + orch),
# in the August layout. Today's writer gates its own sections: scheduler_tasks from level 2,
# scheduler_records and the orchestrator/host sections from level 3 (an HBG host record pool
# can be on at level 3), the lifecycle extension from level 2.
STREAM_LEVEL = {"aicore_tasks": 1, "aicpu_tasks": 2, "aicpu_scheduler_phases": 3,
                "aicpu_orchestrator_phases": 4, "host_orchestrator_phases": 4,
                "host_device_uploads": 4}
STREAM_LEVEL_TODAY = {"aicore_tasks": 1, "scheduler_tasks": 2, "aicpu_lifecycle_records": 2,
                      "scheduler_records": 3, "aicpu_orchestrator_phases": 3,
                      "host_orchestrator_phases": 3, "host_device_uploads": 3}
# Rows as columns; run_epoch is ABSENT (-1) where the file's rows are narrower (5 or 6
# AICore columns, 4 scheduler-task columns: no run identity recorded).
AICORE_COLUMNS = ("core_id", "task_id", "reg_task_id", "start_cycles", "end_cycles",
                  "receive_to_start_cycles", "run_epoch")
SCHEDULER_TASK_COLUMNS = ("core_id", "reg_task_id", "dispatch_cycles", "finish_cycles",
                          "run_epoch")
AICPU_COLUMNS = SCHEDULER_TASK_COLUMNS          # the August name of the same rows

# Scheduler phase kinds Simpler's runtimes record (tensormap_and_ringbuffer and
# host_build_graph vocabularies, both producers) and the retired names of older files.
KNOWN_PHASE_KINDS = frozenset({
    "complete", "dispatch", "release", "resolve", "resolve_standalone", "async_poll",
    "state_probe", "worksteal", "refill", "dummy", "dummy_task", "predicated_skip",
    "early_dispatch", "drain", "drain_prepare", "drain_publish", "graph_prepare",
    "bootstrap", "idle",
    "scan", "poll", "fanout", "prestage", "fanin", "ready_claim", "ready_steal",
    "direct_refill"})


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


class Collection(Struct):
    """`metadata.collection` (today's continuous-collection sessions): whose run this file
    is; other members skipped."""

    run_epoch: Count


class SwimlaneMetadata(Struct):
    """`metadata` of a records file; members not named here are kept in the raw dict."""

    clock_freq_hz: Frequency
    core_types: list[str]
    num_cores: Count | None = None              # default: len(core_types)
    core_to_thread: list[Int64] | None = None
    clock_anchors: ClockAnchors | None = None
    orchestrator_source: str | None = None      # "host": host-orchestrated run
    host_orchestration_origin_ns: HostNs | None = None
    host_timestamp_quantization_ns: Count = 0
    host_capture: dict[str, Any] | None = None
    runtime: str | None = None                  # today: the runtime that minted task ids
    host_clock_domain_id: str | None = None     # today: the host's boot identity
    collection: Collection | None = None


# --------------------------------------------------------------------------- phase records

class SchedulerPhase(Struct, forbid_unknown_fields=True, gc=False):
    """One scheduler phase: `aicpu_scheduler_phases[thread][i]` (August), or
    `scheduler_records.streams[s].records[i]` (today) joined with the `metrics` entry whose
    `record_index` is i (pop_hit, pop_miss, shared_at_*). Kinds are free strings
    (`KNOWN_PHASE_KINDS`); `task_id` names a task on dummy_task / predicated_skip /
    graph_prepare records and on an AICore scheduler's task phases, null elsewhere."""

    kind: str
    start_cycles: Count
    end_cycles: Count
    loop_iter: Count = ABSENT
    tasks_processed: Count = ABSENT
    pop_hit: Count = ABSENT                     # on dispatch phases only
    pop_miss: Count = ABSENT
    shared_at_start: list[Int64] | None = None  # [AIC, AIV, MIX] ready-queue depth
    shared_at_end: list[Int64] | None = None
    task_id: Count | None = None
    run_epoch: Count = ABSENT                   # today's records; absent in August's


class SchedulerMetric(Struct, forbid_unknown_fields=True, gc=False):
    """`scheduler_records.streams[s].metrics[j]`: the queue figures of record
    `record_index` (pop counters on dispatch records only)."""

    record_index: Count
    pop_hit: Count = ABSENT
    pop_miss: Count = ABSENT
    shared_at_start: list[Int64] | None = None
    shared_at_end: list[Int64] | None = None


class StreamCapture(Struct):
    """`streams[s].capture`: records the device committed, dropped (no buffer, queue full),
    and whether the stream is therefore truncated."""

    committed: Count
    dropped: Count
    truncated: bool


# The small members of a today's scheduler stream, with their types; others are skipped.
STREAM_FIELDS = {"platform": str | None, "runtime": str | None,
                 "producer": Literal["aicpu", "aicore"], "scheduler_id": Int64 | None,
                 "worker_id": Int64 | None, "core_type": str | None,
                 "physical_core_id": Int64 | None, "capture": StreamCapture | None}


class OrchestratorPhase(Struct, forbid_unknown_fields=True, gc=False):
    """`aicpu_orchestrator_phases[thread][i]`: one task submission, device cycles."""

    start_cycles: Count
    end_cycles: Count
    submit_idx: Count = ABSENT
    task_id: Count = ABSENT
    run_epoch: Count = ABSENT                   # today's records


# `aicpu_lifecycle_records[i]` (a5 host_build_graph, one per AICPU thread): each phase is a
# start/end pair of cycle fields; 0 means not recorded (followers skip `config`).
LIFECYCLE_PHASES = (
    ("handshake", "handshake_start_cycles", "handshake_complete_cycles"),
    ("config", "config_start_cycles", "topology_complete_cycles"),
    ("context_publish", "context_publish_start_cycles", "context_publish_complete_cycles"),
    ("bootstrap_wait", "bootstrap_wait_start_cycles", "bootstrap_complete_cycles"),
    ("register_release", "register_release_start_cycles", "register_release_end_cycles"),
    ("exit_signal", "exit_signal_start_cycles", "exit_signal_end_cycles"),
    ("exit_wait", "exit_wait_start_cycles", "exit_wait_end_cycles"))


class LifecycleRecord(Struct, gc=False):
    """One AICPU thread's control-plane phases (other members skipped)."""

    aicpu_thread_id: Count
    handshake_start_cycles: Count = 0
    handshake_complete_cycles: Count = 0
    config_start_cycles: Count = 0
    topology_complete_cycles: Count = 0
    context_publish_start_cycles: Count = 0
    context_publish_complete_cycles: Count = 0
    bootstrap_wait_start_cycles: Count = 0
    bootstrap_complete_cycles: Count = 0
    register_release_start_cycles: Count = 0
    register_release_end_cycles: Count = 0
    exit_signal_start_cycles: Count = 0
    exit_signal_end_cycles: Count = 0
    exit_wait_start_cycles: Count = 0
    exit_wait_end_cycles: Count = 0


class HostOrchestratorPhase(Struct, forbid_unknown_fields=True, gc=False):
    """`host_orchestrator_phases[thread][i]`: one submission by the host, host ns."""

    start_host_ns: HostNs
    end_host_ns: HostNs
    submit_idx: Count = ABSENT
    task_id: Count = ABSENT


class HostUpload(Struct, forbid_unknown_fields=True, gc=False):
    """`host_device_uploads[i]` (a flat list in the real files, not one per thread)."""

    phase: str
    start_host_ns: HostNs
    end_host_ns: HostNs
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
    nullable: tuple[str, ...] = ()   # int fields that may be null (read as ABSENT)


PHASE_STREAMS = {
    "aicpu_scheduler_phases": PhaseSchema(SchedulerPhase, "start_cycles", "end_cycles",
                                          "kind", "", "device_cycles", nullable=("task_id",)),
    "aicpu_orchestrator_phases": PhaseSchema(OrchestratorPhase, "start_cycles", "end_cycles",
                                             None, "submit", "device_cycles"),
    "host_orchestrator_phases": PhaseSchema(HostOrchestratorPhase, "start_host_ns",
                                            "end_host_ns", None, "submit", "host_ns"),
    "host_device_uploads": PhaseSchema(HostUpload, "start_host_ns", "end_host_ns", "phase", "",
                                       "host_ns", per_thread=False),
}


@functools.cache
def times_schema(spec: PhaseSchema) -> PhaseSchema:
    """`spec` reduced to what placement reads: the kind, the two times and `run_epoch`; the
    record's other fields are skipped by the decoder, never built (unknown fields allowed,
    since those are the fields left out)."""
    fields = {f.name: f for f in msgspec.structs.fields(spec.record)}
    keep = [n for n in (spec.kind, spec.start, spec.end) if n is not None]
    record = msgspec.defstruct(
        spec.record.__name__ + "Times",
        [(n, fields[n].type) for n in keep] + [("run_epoch", Count, ABSENT)],
        forbid_unknown_fields=False, gc=False)
    return PhaseSchema(record, spec.start, spec.end, spec.kind, spec.default_kind, spec.clock,
                       spec.per_thread)


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
    start_ns: HostNs
    end_ns: HostNs
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
