"""Which device views and which kinds of arrows a merge draws (`--views`, `--flows`).

`VIEW_HELP` / `FLOW_HELP` say what each is, in one place: `--help` is built from them.
A view is drawn only where the capture holds its data; an arrow only when the views at both
its ends are drawn; each kind of arrow is its own category.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pypto.compile_profiling.foundation.str_enum import StrEnum

# derived_views(builder, plan, [(capture plan, device rows)], selection, warnings)
DerivedViews = Callable[[Any, Any, list, "Selection", list], None]

class View(StrEnum):
    """A device view, by its `--views` name."""

    WORKER = "worker"
    SETUP = "setup"
    SCHEDULER_VIEW = "scheduler-view"
    SCHEDULER = "scheduler"
    ORCHESTRATOR = "orchestrator"
    READY_QUEUE = "ready-queue"
    UTILISATION = "utilisation"
    CRITICAL_PATH = "critical-path"
    OVERHEAD = "overhead"
    LIFECYCLE = "lifecycle"


class FlowKind(StrEnum):
    """A kind of arrow, by its `--flows` name."""

    DEPENDENCY = "dependency"
    DISPATCH = "dispatch"
    COMPLETE = "complete"
    SUBMIT_DISPATCH = "submit-dispatch"
    COMPLETE_READY = "complete-ready"
    KERNEL_CODEGEN = "kernel-codegen"


VIEW_HELP = {
    View.WORKER: '"· AICore": a lane per core (AIC_<n>/AIV_<n>), a bar per task, kernel start '
                 "to end",
    View.SETUP: "on the worker lanes, the receive -> start wait before each kernel (the "
                "AICore's cache flush and ack after it read the task), where it is > 0",
    View.SCHEDULER_VIEW: '"· Scheduler view": a lane per core, a bar per task from the '
                         "AICPU's dispatch to the AICPU seeing it finish",
    View.SCHEDULER: '"· AICPU scheduler": a lane per scheduler thread (and per resolution '
                    'thread), a bar per phase ("· AICore scheduler" when AICores schedule)',
    View.ORCHESTRATOR: '"· Orchestrator": the AICPU orchestrator\'s submit bars; "<rank> · Host '
                       'Orchestrator": the host orchestrator\'s submits and H2D uploads',
    View.READY_QUEUE: "counters of the shared ready queue's depth (AIC, AIV, MIX)",
    View.UTILISATION: "per-core busy fraction over time (counters)",
    View.CRITICAL_PATH: '"· Critical path": the observed critical path as one track, a slice per '
                        "path task and per stall (named by kind), arrows along it; with a host "
                        "source, the end-to-end segments on the host side",
    View.OVERHEAD: "0/1 counters on the Critical path process: per engine starved (a free "
                   "core while ready work of its type waits undispatched), all / some engines "
                   "starved",
    View.LIFECYCLE: '"· AICPU lifecycle": a lane per AICPU thread, its handshake, '
                    "configuration, bootstrap and shutdown phases (today's captures)",
}
FLOW_HELP = {
    FlowKind.DEPENDENCY: "deps.json edges, producer -> consumer (worker, mirrored on the scheduler "
                         "view)",
    FlowKind.DISPATCH: "the scheduler's dispatch phase -> the task (worker and scheduler view)",
    FlowKind.COMPLETE: "the task -> the scheduler's complete phase that saw it finish",
    FlowKind.SUBMIT_DISPATCH: "the orchestrator's submit -> the dispatch phase that dispatched it",
    FlowKind.COMPLETE_READY: "the complete phase that released a task's last input -> the "
                             "dispatch phase that dispatched it",
    FlowKind.KERNEL_CODEGEN: "a kernel's kernel_codegen:<kernel> compile stage -> every device task "
                             "of that kernel (with a compile trace; one arrow per task)",
}
VIEWS = tuple(VIEW_HELP)
# Drawn by `pypto.compile_profiling.analysis` (which imports the merge, never the other way):
# the caller of `merge_traces` passes its `TIMELINE_VIEWS` as `derived_views`. Not drawn by
# default (they cost an analysis of every capture): asked for by name or with `all`.
DERIVED_VIEWS = (View.CRITICAL_PATH, View.OVERHEAD)
FLOWS = tuple(FLOW_HELP)


# A merge for the Perfetto UI (JSON or protobuf) of more device tasks than SCALE_TASKS, whose
# views and arrows were not named, draws only AT_SCALE_VIEWS and AT_SCALE_FLOWS, and says so.
# Why: the UI, not the merge, is what a user waits for at scale. 1M tasks in the offline UI
# (docs/performance.md, benchmarks/bench_open.py): every view and arrow, 6.45M slices, 7.0M
# arrows, 4.2M counter samples, load in about 2.5x the merge's own time; these, 1M slices and
# 0.75M arrows, in about 1.3x. What they leave out is a `--window` or `--views all` away.
SCALE_TASKS = 200_000
AT_SCALE_VIEWS = frozenset({View.WORKER, View.UTILISATION, View.LIFECYCLE})
AT_SCALE_FLOWS = frozenset({FlowKind.DEPENDENCY})


@dataclass(frozen=True, slots=True)
class Selection:
    """The views and arrow kinds to draw (default: all)."""

    views: frozenset[str] = frozenset(VIEWS)
    flows: frozenset[str] = frozenset(FLOWS)

    def view(self, name: str) -> bool:
        return name in self.views

    def flow(self, name: str) -> bool:
        return name in self.flows


ALL = Selection()


def parse_names(names: str | Iterable[str], known: tuple[str, ...], what: str
                ) -> frozenset[str]:
    """`all`, `none`, a comma-separated subset of `known` or an iterable of names (empty:
    none); ValueError (one clear line) otherwise."""
    if not isinstance(names, str):
        names = ",".join(names) or "none"
    words = [w.strip().lower().replace("_", "-") for w in names.split(",") if w.strip()]
    if words == ["all"]:
        return frozenset(known)
    if words == ["none"]:
        return frozenset()
    bad = [w for w in words if w not in known]
    if bad or not words:
        named = ", ".join(map(repr, bad)) if bad else "(empty list)"
        raise ValueError(f"unknown {what[:-1]} {named} (choose from {', '.join(known)}, "
                         "or all / none)")
    return frozenset(words)
