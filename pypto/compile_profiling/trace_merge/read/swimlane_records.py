"""What `read_records` makes of Simpler's swimlane records file: one `SwimlaneRecords` of
checked NumPy columns, its phase streams as `PhaseColumns` (docs/simpler_layouts.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pypto.compile_profiling.timeline.model import ArgColumn
from pypto.compile_profiling.trace_merge.read import simpler_schema as schema

ABSENT = schema.ABSENT


@dataclass(slots=True, eq=False)
class PhaseColumns:
    """One thread's phase records as columns: `start`/`end` (int64, in `clock` units:
    "device_cycles" or "host_ns"), `kind` (int32 index into `kinds`) and every other field
    of the records in `args` (int fields as int64 arrays, `present` set when some records
    lack them; list fields as (n, k) int64 arrays when every record has k values, else a
    list with None where absent). A today's scheduler stream also says who wrote it
    (`producer`: "aicpu" or "aicore"; `stream`: its platform, scheduler_id, worker_id,
    core_type, physical_core_id as given) and what the device kept of it (`capture`:
    committed, dropped, truncated). `source`: the JSON path of the records."""

    thread: int
    clock: str
    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    kinds: list[str]
    args: list[ArgColumn] = field(default_factory=list)
    source: str = ""
    producer: str = "aicpu"
    stream: dict = field(default_factory=dict)
    capture: dict | None = None
    epoch: np.ndarray | None = None      # run_epoch per record (ABSENT: none recorded)
    index: np.ndarray | None = None      # each record's position in its JSON array

    def __len__(self) -> int:
        return len(self.start)

    def arg(self, key: str) -> ArgColumn | None:
        return next((a for a in self.args if a.key == key), None)

    def take(self, idx: np.ndarray) -> PhaseColumns:
        """The records `idx` (ascending) of this stream, as a stream of their own (args
        absent from all of them dropped)."""
        args = [t for t in (take_arg(a, idx) for a in self.args) if t is not None]
        return PhaseColumns(self.thread, self.clock, self.start[idx], self.end[idx],
                            self.kind[idx], self.kinds, args, self.source, self.producer,
                            self.stream, self.capture,
                            None if self.epoch is None else self.epoch[idx],
                            None if self.index is None else self.index[idx])


@dataclass(slots=True, eq=False)
class SwimlaneRecords:
    """One records file, read and checked. `aicore` columns: core_id, task_id (the task
    token), reg_task_id, start_cycles, end_cycles, receive_to_start_cycles, run_epoch;
    `aicpu` (the scheduler task rows, whoever produced them): core_id, reg_task_id,
    dispatch_cycles, finish_cycles, run_epoch (all int64; join the two on (core_id,
    reg_task_id), not on the token; run_epoch is ABSENT where not recorded). Only this
    run's records are in the columns (`run_epoch`, `set_aside`)."""

    path: str
    level: int
    level_key: str
    freq_hz: int
    num_cores: int
    core_types: list[str]
    core_to_thread: list[int] | None
    clock_anchors: schema.ClockAnchors | None   # fields by name, as build_clock_mapping reads
    host_timestamp_quantization_ns: int
    orchestrator_source: str | None
    host_orchestration_origin_ns: int | None
    metadata: dict                              # the metadata object as read
    aicore: dict[str, np.ndarray]
    aicore_columns: int                         # 5, 6 (August) or 7 (today), as on disk
    aicpu: dict[str, np.ndarray]
    scheduler: list[PhaseColumns]               # device cycles, one per scheduler thread
    orchestrator: list[PhaseColumns]            # AICPU orchestrator, device cycles
    host_orchestrator: list[PhaseColumns]       # host ns
    host_uploads: list[PhaseColumns]            # host ns (one list in the file: thread 0)
    ignored_streams: list[str] = field(default_factory=list)
    layout: str = "august"                      # "august" | "today"
    runtime: str | None = None                  # metadata.runtime (today)
    host_clock_domain_id: str | None = None
    scheduler_task_producer: str | None = None  # "aicpu" | "aicore"; None: no task timing
    run_epoch: int | None = None                # this run's; None: no identity recorded
    set_aside: dict[str, int] = field(default_factory=dict)   # other runs' records, by key
    lifecycle: list[PhaseColumns] = field(default_factory=list)  # per AICPU thread, cycles
    warnings: list[str] = field(default_factory=list)


def take_arg(a: ArgColumn, idx: np.ndarray) -> ArgColumn | None:
    """Rows `idx` of a column (None when none of them holds a value; no `present` mask when
    all do)."""
    taken = a.take(idx)
    if taken.present is not None:
        if not taken.present.any():
            return None
        if taken.present.all():
            taken.present = None
    return taken
