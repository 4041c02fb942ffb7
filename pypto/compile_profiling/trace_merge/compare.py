"""Two runs merged, each on its own, and laid one above the other (`pypto-merge-traces
--compare BASE NEW`): a driver above the merge's face, as a caller of `merge_traces` is."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from pypto.compile_profiling.timeline.model import Timeline
from pypto.compile_profiling.trace_merge import MergeResult, merge_traces
from pypto.compile_profiling.trace_merge.lay_out.side_by_side import side_by_side

__all__ = ["ComparedRuns", "compare_runs"]


@dataclass
class ComparedRuns:
    """Both runs on one timeline (`timeline`), and each run's own merge (its timeline
    already moved and renamed to match), in `MergeResult`'s words, each line prefixed."""

    timeline: Timeline
    runs: dict[str, MergeResult]

    def _each(self, lines: Callable[[MergeResult], list[str]]) -> list[str]:
        return [f"{label}: {line}" for label, r in self.runs.items() for line in lines(r)]

    def brief(self, most: int = 5) -> list[str]:
        return self._each(lambda r: r.brief(most))

    def summary(self, more_kernels: str = "") -> list[str]:
        return self._each(lambda r: r.summary(more_kernels))

    @property
    def warnings(self) -> list[str]:
        return self._each(lambda r: r.warnings)

    @property
    def kernel_lines(self) -> list[str]:
        return self._each(lambda r: r.kernel_lines)

    @property
    def parts(self) -> dict[str, Timeline]:
        """Each run's timeline alone (for a trace archive)."""
        return {label: r.timeline for label, r in self.runs.items()}


def compare_runs(base: str | os.PathLike, new: str | os.PathLike, *, at: str = "device",
                 progress: Callable[[str], None] | None = None, **merge_options
                 ) -> ComparedRuns:
    """Merge the run at `base` and the run at `new` (each what `merge_traces` takes as one
    input: a work dir, dfx_outputs/, a capture...) and lay them `side_by_side`."""
    say = progress or (lambda _m: None)
    results = {}
    for label, path in (("base", base), ("new", new)):
        results[label] = merge_traces([path], progress=lambda m, lb=label: say(f"{lb}: {m}"),
                                      **merge_options)
    timeline = side_by_side(results["base"].timeline, results["new"].timeline, at=at,
                            names=(str(base), str(new)))
    return ComparedRuns(timeline, results)
