"""Two runs on one timeline, one above the other (`pypto-merge-traces --compare BASE NEW`).

Each run is merged on its own (`merge_traces`, by `trace_merge.compare.compare_runs`); then
the new run's times are moved so that
both start together at the chosen point, its process and thread ids are moved past the base
run's (two runs of one process share pids), and every process is named `base: ...` or
`new: ...`, the base run's first. The timelines are columns, so this costs one array
addition per block, whatever the number of slices.

Alignment points:
- `device`: the first AICore task of each run (the default: device time compares directly);
- `compile`: the first compile stage of each run (needs each run's compile trace).
"""

from __future__ import annotations

from pypto.compile_profiling.timeline.model import Timeline
from pypto.compile_profiling.trace_merge.kinds import ALIGN_AT
from pypto.errors import TraceInputError

__all__ = ["ALIGN_AT", "align_point", "side_by_side"]

_CATS = {"device": ("aicore",), "compile": ("compile", "parse")}
_WHAT = {"device": "device task (no AICore records)",
         "compile": "compile stage (no compile trace among its inputs)"}


def align_point(timeline: Timeline, at: str, where: str) -> int:
    """The ns where `timeline` lines up: its first slice of the alignment point's kind."""
    starts = [int(b.start_ns.min()) for b in timeline.blocks
              if b.cat in _CATS[at] and len(b.start_ns)]
    if not starts:
        raise TraceInputError(where, f"no {_WHAT[at]} to align the runs at: "
                                     f"{'try --align compile' if at == 'device' else 'try --align device'}")
    return min(starts)


def side_by_side(base: Timeline, new: Timeline, *, at: str = "device",
                 names: tuple[str, str] = ("BASE", "NEW"),
                 labels: tuple[str, str] = ("base", "new")) -> Timeline:
    """One timeline holding `base` and `new` (both are changed and taken over: the new
    run's blocks and counters are moved in place). `names`: the runs' paths, for errors
    and the metadata."""
    if at not in ALIGN_AT:
        raise ValueError(f"align at one of {ALIGN_AT}, got {at!r}")
    shift = align_point(base, at, names[0]) - align_point(new, at, names[1])
    pid_step = max((p.pid for p in base.processes), default=0) + 1
    tid_step = max((t.tid for t in base.tracks), default=0) + 1
    order_step = max((p.sort_index for p in base.processes), default=0) + 1
    for p in base.processes:
        p.name = f"{labels[0]}: {p.name}"
    for p in new.processes:
        p.name = f"{labels[1]}: {p.name}"
        p.pid += pid_step
        p.sort_index += order_step
    for t in new.tracks:
        t.tid += tid_step
    for b in new.blocks:
        b.start_ns = b.start_ns + shift
    for c in new.counters:
        c.ts_ns = c.ts_ns + shift
    metadata = {"compare": {"aligned_at": at, "new_moved_ns": shift,
                            labels[0]: names[0], labels[1]: names[1]},
                labels[0]: base.metadata, labels[1]: new.metadata}
    return Timeline(base.processes + new.processes, base.tracks + new.tracks,
                    base.blocks + new.blocks, base.flows + new.flows,
                    base.counters + new.counters, metadata)
