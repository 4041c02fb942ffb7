"""Which device views and which kinds of arrows a merge draws (`--views`, `--flows`).

`VIEW_HELP` / `FLOW_HELP` say what each is, in one place: `--help` is built from them.
A view is drawn only where the capture holds its data; an arrow only when the views at both
its ends are drawn; each kind of arrow is its own category.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# derived_views(builder, plan, [(capture plan, device rows)], selection, warnings)
DerivedViews = Callable[[Any, Any, list, "Selection", list], None]

VIEW_HELP = {
    "worker": '"· AICore": a lane per core (AIC_<n>/AIV_<n>), a bar per task, kernel start '
              "to end",
    "setup": "on the worker lanes, the receive -> start wait before each kernel (the "
             "AICore's cache flush and ack after it read the task), where it is > 0",
    "scheduler-view": '"· Scheduler view": a lane per core, a bar per task from the '
                      "AICPU's dispatch to the AICPU seeing it finish",
    "scheduler": '"· AICPU scheduler": a lane per scheduler thread (and per resolution '
                 'thread), a bar per phase ("· AICore scheduler" when AICores schedule)',
    "orchestrator": '"· Orchestrator": the AICPU orchestrator\'s submit bars; "<rank> · Host '
                    'Orchestrator": the host orchestrator\'s submits and H2D uploads',
    "ready-queue": "counters of the shared ready queue's depth (AIC, AIV, MIX)",
    "utilisation": "per-core busy fraction over time (counters)",
    "critical-path": '"· Critical path": the observed critical path as one track, a slice per '
                     "path task and per stall (named by kind), arrows along it; with a host "
                     "source, the end-to-end segments on the host side",
    "overhead": "0/1 counters on the Critical path process: per engine starved (a free "
                "core while ready work of its type waits undispatched), all / some engines "
                "starved",
    "lifecycle": '"· AICPU lifecycle": a lane per AICPU thread, its handshake, '
                 "configuration, bootstrap and shutdown phases (today's captures)",
}
FLOW_HELP = {
    "dependency": "deps.json edges, producer -> consumer (worker, mirrored on the scheduler "
                  "view)",
    "dispatch": "the scheduler's dispatch phase -> the task (worker and scheduler view)",
    "complete": "the task -> the scheduler's complete phase that saw it finish",
    "submit-dispatch": "the orchestrator's submit -> the dispatch phase that dispatched it",
    "complete-ready": "the complete phase that released a task's last input -> the "
                      "dispatch phase that dispatched it",
    "kernel-codegen": "a kernel's kernel_codegen:<kernel> compile stage -> every device task "
                      "of that kernel (with a compile trace; one arrow per task)",
}
VIEWS = tuple(VIEW_HELP)
# Drawn by `pypto.compile_profiling.analysis` (which imports the merge, never the other way):
# the caller of `merge_traces` passes its `TIMELINE_VIEWS` as `derived_views`. Not drawn by
# default (they cost an analysis of every capture): asked for by name or with `all`.
DERIVED_VIEWS = ("critical-path", "overhead")
FLOWS = tuple(FLOW_HELP)


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
