"""One run's figures for a whole-run comparison: its compile profile, and per device capture
(rank) the makespan, kernel families, the critical path's composition, the verdict and
every task's duration, keyed so that runs of the same program pair up.

Figures come from `analyze` (the device) and `load_profile` (the compile stages), so a
comparison says nothing `analyze` and `show` would not. Tasks pair across runs by kernel
family and order: the k-th task of family `gemm` (in task-id order, which is submission
order) is `gemm#k` in every run; in a program that did not change, that is the same
dispatch.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pypto.compile_profiling.profile_data.model import Profile
from pypto.errors import TraceInputError

__all__ = ["RankFigures", "RunFigures", "load_run_figures"]


@dataclass(slots=True, eq=False)
class RankFigures:
    """One capture of one run, in ns of device time (end to end: host ns)."""

    label: str
    makespan_ns: float
    verdict: str | None                    # "compute-bound", "host-bound", ... (None: not
    device_verdict: str | None             # decided for this run); host-bound's device one
    family_tasks: dict[str, int]           # family -> tasks
    family_core_ns: dict[str, float]       # family -> block time summed over cores
    family_path_ns: dict[str, float]       # family -> compute on the observed path
    path: dict[str, float]                 # "compute AIC", "scheduler dispatch", ... -> ns
    end_to_end: dict[str, float]           # CATEGORIES -> ns (empty: no host side)
    # per family, its tasks in task-id order (the k-th is `family#k`): duration in ns, and
    # whether it is on the observed path
    task_ns: dict[str, np.ndarray]
    task_on_path: dict[str, np.ndarray]
    timing: str | None = None              # the capture's device_timing mode, when stated


@dataclass(slots=True, eq=False)
class RunFigures:
    source: str
    profile: Profile | None                # the compile profile, when the run has one
    ranks: list[RankFigures] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _has_capture(p: Path) -> bool:
    """A records file under either name Simpler writes (`read_simpler.RECORD_FILE_NAMES`,
    the older `l2_swimlane_records` too), or a directory holding one: itself, its
    `rank<r>/d<k>/` leaves, or anywhere under its `dfx_outputs/`."""
    from pypto.compile_profiling.trace_merge.read.read_simpler import RECORD_FILE_NAMES

    stems = tuple(n.removesuffix(".json") for n in RECORD_FILE_NAMES)
    if p.is_file():
        return p.name.startswith(stems)
    dfx = p / "dfx_outputs"
    return any(any(p.glob(f"{stem}*.json")) or any(p.glob(f"rank*/d*/{stem}*.json"))
               or (dfx.is_dir() and any(dfx.glob(f"**/{stem}*.json"))) for stem in stems)


def _is_dataset(p: Path) -> bool:
    from pypto.compile_profiling.timeline.write_parquet import DATASET_MARKER

    return p.is_dir() and ((p / DATASET_MARKER).exists() or any(p.glob("*.parquet")))


def _timing_mode(metadata: dict | None) -> str | None:
    """The capture's `device_timing` mode (ours; Simpler's captures state none)."""
    timing = metadata.get("device_timing") if isinstance(metadata, dict) else None
    return timing.get("mode") if isinstance(timing, dict) else None


def rank_figures(r, decided: bool = True) -> RankFigures:
    """The figures of one `RankAnalysis` (`decided`: analysed with its verdict)."""
    from pypto.compile_profiling.analysis import kernel_family
    from pypto.compile_profiling.analysis.verdict import engine_label

    tt = r.tasks
    n = len(tt)
    scale = 1e9 / r.freq_hz
    # one name per kernel id, then per family: NumPy over the tasks, no per-task Python
    _, first, kernel_of_task = np.unique(tt.kernel, return_index=True, return_inverse=True)
    kernel_names = tt.kernel_names(first, r.names)
    names = list(dict.fromkeys(kernel_family(k) for k in kernel_names))
    fam_of_kernel = np.array([names.index(kernel_family(k)) for k in kernel_names],
                             dtype=np.int64)
    codes = fam_of_kernel[kernel_of_task.reshape(-1)] if n else np.zeros(0, np.int64)
    tasks = np.bincount(codes, minlength=len(names))
    block_ns = (tt.row_end - tt.row_start).astype(np.float64) * scale
    core = np.bincount(codes[tt.row_task], weights=block_ns, minlength=len(names))
    on_path = np.zeros(n, dtype=bool)
    path_fam = np.zeros(len(names))
    path: dict[str, float] = {}
    obs = r.observed
    if obs is not None and len(obs.tasks):
        on_path[obs.tasks] = True
        compute_ns = obs.compute.astype(np.float64) * scale
        np.add.at(path_fam, codes[obs.tasks], compute_ns)
        masks = tt.types[obs.tasks].tolist()
        for mask, ns in zip(masks, compute_ns.tolist()):
            key = "compute " + engine_label(mask, tt.core_types)
            path[key] = path.get(key, 0.0) + ns
        for part, cycles in obs.stall_by_part().items():
            path[f"stall {part}"] = cycles * scale
    e2e = r.end_to_end
    v = r.verdict
    order = np.lexsort((tt.ids, codes))                 # by family, then task id
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    dur = tt.duration.astype(np.float64) * scale
    task_ns = {f: dur[order[bounds[j]:bounds[j + 1]]] for j, f in enumerate(names)}
    task_on = {f: on_path[order[bounds[j]:bounds[j + 1]]] for j, f in enumerate(names)}
    return RankFigures(
        r.label, float(r.makespan_cycles) * scale, str(v.kind) if decided else None,
        None if v.device is None or not decided else str(v.device.kind),
        dict(zip(names, tasks.tolist())), dict(zip(names, core.tolist())),
        dict(zip(names, path_fam.tolist())), path,
        {} if e2e is None else {k: float(v) for k, v in e2e.totals.items()},
        task_ns, task_on, _timing_mode(r.capture_metadata))



def load_run_figures(path: str | os.PathLike, with_verdict: bool = True) -> RunFigures:
    """The figures of the run at `path`: a work dir (`report/` and/or `dfx_outputs/`), a
    capture (`dfx_outputs/`, `rank<r>/d<k>/`, `chip_swimlane_records.json`), or a compile
    profile. Raises `TraceInputError` when `path` holds neither. `with_verdict=False`
    leaves the verdict undecided (its replays are most of the analysis's CPU)."""
    from pypto.compile_profiling.analysis import analyze
    from pypto.compile_profiling.profile_data.load import load_profile

    p = Path(path)
    if not p.exists():
        raise TraceInputError(path, "no such file or directory")
    if _is_dataset(p):
        raise TraceInputError(path, "a Parquet dataset holds no dependency records, so its "
                                    "critical path cannot be compared: give the work dir or "
                                    "capture it was merged from")
    run = RunFigures(str(path), load_profile(p) if _has_profile(p) else None)
    if _has_capture(p):
        # the overhead figures are not compared: left out, half the analysis's CPU
        # (benchmarks/bench_compare.py, 5 + 5 runs of 100k tasks: diff 1.50x -> 1.36x the
        # CPU of reading the runs)
        result = analyze([str(p)], with_overhead=False, with_verdict=with_verdict)
        run.ranks = [rank_figures(r, with_verdict) for r in result.ranks]
        run.notes = list(result.warnings)
    if run.profile is None and not run.ranks:
        raise TraceInputError(path, "neither a compile profile nor a device capture here "
                                    "(expected a work dir, dfx_outputs/, a capture or a "
                                    "pipeline_profile.json / trace.json)")
    return run


def _has_profile(p: Path) -> bool:
    from pypto.compile_profiling.profile_data.load import is_profile_location

    if p.is_file():
        return not _has_capture(p) and is_profile_location(p)
    return is_profile_location(p)


def is_whole_run(path: str | os.PathLike) -> bool:
    """True when `path` (or, for a directory of runs, one of its runs) has a device capture,
    or is a merged Parquet dataset: a comparison of it is a whole-run one."""
    p = Path(path)
    if _has_capture(p) or _is_dataset(p):
        return True
    return p.is_dir() and any(_has_capture(d) for d in runs_in(p))


def runs_in(p: Path) -> list[Path]:
    """The runs in a directory of runs (its subdirectories holding a capture or a compile
    profile, in name order); [] when `p` is a run itself."""
    from pypto.compile_profiling.profile_data.load import is_profile_location

    if not p.is_dir() or _has_capture(p) or is_profile_location(p) or _is_dataset(p):
        return []
    return sorted(d for d in p.iterdir()
                  if d.is_dir() and (_has_capture(d) or is_profile_location(d)
                                     or _is_dataset(d)))   # a dataset: refused, not skipped


def load_runs_figures(paths: Iterable[str | os.PathLike]) -> list[RunFigures]:
    """The runs of one side of a comparison: each path one run, or a directory of runs (its
    subdirectories that hold a run, in name order). The verdict is decided on the side's
    median run (by its device makespan, the lower middle of an even count) only: its
    replays cost more than the rest of a run's figures (benchmarks/bench_compare.py, 5 + 5
    runs of 100k tasks: diff with every run's verdict 3.03x the CPU of reading the runs,
    with the median runs' 1.83x, with none 1.2x)."""
    where = []
    for path in paths:
        runs = runs_in(Path(path))
        where += runs if runs else [path]
    out = [load_run_figures(p, with_verdict=False) for p in where]
    timed = [i for i, r in enumerate(out) if r.ranks]
    if timed:
        timed.sort(key=lambda i: (sum(k.makespan_ns for k in out[i].ranks), i))
        mid = timed[(len(timed) - 1) // 2]
        out[mid].ranks = load_run_figures(where[mid]).ranks
    return out
