"""What if: a captured run replayed, as it was or with an edit (more or fewer cores, faster
kernels, a faster scheduler, no dependencies).

Two engines, one scheduling model (`compile_profiling.schedule`):

- **rules**: a capture of the simulated device in modelled time states the rules and the step
  costs that made it (`device_timing.schedule_rules`, `schedule_ticks`); it is replayed with
  those very rules (`schedule.rules.simulate`), on its tasks' durations, its dependencies and
  its device's layout. Unedited, the replay is the capture to the tick; edited, it is what a
  run with that change makes, up to the rounding of an edited duration to whole ticks.
- **calibrated**: any other capture with AICPU records (swimlane level 2 and up): Simpler's
  scheduler is not known rule by rule, so the capture is replayed on its own per-block
  latencies and decisions (`schedule.calibrated`). Unedited it reproduces the capture; an
  edit moves what it changes.

Either way the replay error (the unedited replay's makespan against the capture's) is
measured and goes with every prediction made from the replay.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from math import ceil
from types import SimpleNamespace

import numpy as np

from pypto.compile_profiling.analysis.critical_path import (
    TOLERANCE_CYCLES,
    DependencyEdges,
    ObservedPath,
    observed_path,
)
from pypto.compile_profiling.analysis.tasks import TaskTable, engine_name
from pypto.compile_profiling.foundation.str_enum import StrEnum
from pypto.compile_profiling.schedule import calibrated
from pypto.compile_profiling.schedule.rules import (
    STEPS,
    ScheduleCosts,
    core_layout,
    simulate,
    ticks_of,
)

__all__ = ["CALIBRATED_RISK", "PIECES", "Edit", "Engine", "Replay", "ReplayInput", "edit_kinds",
           "model_risk", "replay", "replay_input", "replayed_makespan"]

PIECES = ("completion", "dispatch", "launch")    # the scheduler latency, as analyze cuts it
# the rules' steps each piece is made of: the end seen (poll); the completion handled and the
# send (complete, dispatch); the core starting what it was sent (launch)
_PIECE_STEPS = {"completion": ("poll",), "dispatch": ("complete", "dispatch"),
                "launch": ("launch",)}
_RULES = "pypto.compile_profiling.schedule.rules"


class Engine(StrEnum):
    RULES = "rules"
    CALIBRATED = "calibrated"


@dataclass(frozen=True)
class Edit:
    """A change to replay: cores per engine (`AIV` -> 16), kernel families faster by a factor
    (2: twice as fast; 0: no time at all), scheduler latency pieces scaled (`launch` -> 0),
    no dependencies. The empty edit replays the capture as it was."""

    cores: tuple[tuple[str, int], ...] = ()
    faster: tuple[tuple[str, float], ...] = ()
    sched: tuple[tuple[str, float], ...] = ()
    no_deps: bool = False

    @property
    def empty(self) -> bool:
        return not (self.cores or self.faster or self.sched or self.no_deps)

    def words(self) -> str:
        """The edit in a user's words (`16 AIV cores, gemm 2x faster`)."""
        out = [f"{n} {e} core{'s' * (n != 1)}" for e, n in self.cores]
        out += [f"{'kernels of unknown name' if f == 'unknown' else f} taking no time"
                if k == 0 else f"{f} {k:g}x faster" for f, k in self.faster]
        if {p for p, _ in self.sched} == set(PIECES) and len({k for _, k in self.sched}) == 1:
            k = self.sched[0][1]
            out.append("no scheduler latency" if k == 0 else f"scheduler latency x{k:g}")
        else:
            out += [f"no {p} latency" if k == 0 else f"{p} latency x{k:g}"
                    for p, k in self.sched]
        if self.no_deps:
            out.append("no dependencies")
        return ", ".join(out) or "as captured"


@dataclass(slots=True, eq=False)
class _Rules:
    """A modelled capture's rules: its step costs (ticks; ns where stated), device layout
    counts, orchestration, and its tasks in submission order as the rules take them."""

    costs: ScheduleCosts
    step_ns: dict[str, float] | None
    counts: dict[str, int]             # core type name -> cores
    threads: int
    device_orchestrator: bool
    submitted: np.ndarray              # task index (TaskTable order) per submission position
    ticks: np.ndarray                  # per submission position


# The calibrated engine's largest error against real re-runs, by kind of edit, on the 12
# modelled programs of benchmarks/validate_whatif.py (rounded up; tests/.../test_whatif.py
# checks they still hold): a calibrated prediction's interval is widened by it. The rules
# engine's error there is 0.
CALIBRATED_RISK = {"cores": 0.48, "faster": 0.02, "sched": 0.37, "no_deps": 0.19}


def edit_kinds(edit: Edit) -> list[str]:
    """The kinds of change an edit makes (`CALIBRATED_RISK`'s keys)."""
    return [k for k, on in (("cores", edit.cores), ("faster", edit.faster),
                            ("sched", edit.sched), ("no_deps", edit.no_deps)) if on]


def model_risk(engine: Engine, edit: Edit) -> float:
    """How far off an engine's prediction of `edit` has been seen to be (a fraction)."""
    if engine is Engine.RULES:
        return 0.0
    return max((CALIBRATED_RISK[k] for k in edit_kinds(edit)), default=0.0)



@dataclass(slots=True, eq=False)
class ReplayInput:
    """What a capture's replays start from: its tasks, each task's kernel family, the
    dependencies the run obeyed, the blocks as columns, the engine, and the observed
    makespan (cycles)."""

    tasks: TaskTable
    families: tuple[list[str], np.ndarray]    # the kernel families, and each task's index
    edges: DependencyEdges
    blocks: calibrated.Blocks
    engine: Engine
    makespan: int
    rules: _Rules | None = None
    host_built: bool = False           # the graph was submitted whole before the device ran
    _calibration: calibrated.Calibration | None = None
    _baseline: Replay | None = None

    @property
    def calibration(self) -> calibrated.Calibration:
        if self._calibration is None:
            self._calibration = calibrated.calibrate(self.blocks)
        return self._calibration

    def baseline(self) -> Replay:
        """The unedited replay (made once). The calibrated engine's, on a capture with no
        dispatch earlier than its rules allow, is the capture itself block by block: every
        delay, latency and slack was read off it on the same walk (`calibrated` module
        docstring; `tests/.../test_replay.py` replays every real capture to check it). It
        is taken as such: one replay less per command (whatif with one edit at 100K tasks:
        1.75 -> 1.48 s CPU, bench_analysis.py)."""
        if self._baseline is None:
            b = self.blocks
            if self.engine is Engine.CALIBRATED and not self.calibration.violations:
                self._baseline = Replay(Edit(), Engine.CALIBRATED, b.dispatch, b.start,
                                        b.end, b.finish, b.core)
            else:
                self._baseline = replay(self, Edit())
        return self._baseline

    @property
    def error(self) -> float:
        """The unedited replay's makespan against the capture's, as a signed fraction."""
        return (self.baseline().makespan - self.makespan) / self.makespan if self.makespan \
            else 0.0

    def engine_names(self) -> list[str]:
        return [engine_name(t) for t in self.tasks.core_types]


@dataclass(slots=True, eq=False)
class Replay:
    """One replay: every block's dispatch, start, end, finish (cycles) and core."""

    edit: Edit
    engine: Engine
    dispatch: np.ndarray
    start: np.ndarray
    end: np.ndarray
    finish: np.ndarray
    core: np.ndarray
    no_deps: bool = False
    _path: ObservedPath | None = field(default=None, repr=False)

    @property
    def makespan(self) -> int:
        return int(self.end.max() - self.start.min()) if len(self.end) else 0

    def table(self, inp: ReplayInput) -> TaskTable:
        """The capture's task table with the replay's times and cores."""
        tt = inp.tasks
        n = len(tt)
        start = np.full(n, np.iinfo(np.int64).max, np.int64)
        end = np.full(n, np.iinfo(np.int64).min, np.int64)
        np.minimum.at(start, tt.row_task, self.start)
        np.maximum.at(end, tt.row_task, self.end)
        return dataclasses.replace(tt, start=start, end=end, row_start=self.start,
                                   row_end=self.end, row_core=self.core)

    def path(self, inp: ReplayInput) -> ObservedPath:
        """The critical path of the replayed schedule, its stalls cut as analyze cuts them."""
        if self._path is None:
            tt = self.table(inp)
            n = len(tt)
            disp = np.full(n, np.iinfo(np.int64).max, np.int64)
            fin = np.full(n, -1, np.int64)
            np.minimum.at(disp, tt.row_task, self.dispatch)
            np.maximum.at(fin, tt.row_task, self.finish)
            empty = np.zeros(0, np.int64)
            edges = DependencyEdges(empty, empty) if self.no_deps else inp.edges
            # a host-built graph is all submitted when the replayed device starts
            submit = np.full(n, int(self.dispatch.min()), np.int64) if inp.host_built else None
            self._path = observed_path(tt, edges, TOLERANCE_CYCLES, disp, fin, submit)
        return self._path


# --------------------------------------------------------------------------- building

def replay_input(tt: TaskTable, row_dispatch: np.ndarray, row_finish: np.ndarray,
                 has_cpu: np.ndarray, edges: DependencyEdges, rec,
                 families: tuple[list[str], np.ndarray]) -> ReplayInput | str:
    """The replay input of one capture, or why it has none (one line)."""
    if not len(tt):
        return "no task ran"
    if not has_cpu.all():
        return ("a replay needs every block's AICPU dispatch and finish (swimlane level 2 and "
                f"up); {int(np.count_nonzero(~has_cpu))} blocks have none")
    core = tt.row_core.astype(np.int64)
    order = np.lexsort((core, row_dispatch))                # the capture's dispatch order
    by_core = order[np.argsort(core[order], kind="stable")]
    same = core[by_core][1:] == core[by_core][:-1]
    pre_sent = row_dispatch[by_core][1:] < tt.row_end[by_core][:-1]
    n = len(tt)
    p, s = edges.pred, edges.succ
    o = np.argsort(s, kind="stable")
    pred_ptr = np.searchsorted(s[o], np.arange(n + 1)).astype(np.int64)
    device = [tt.core_types.index(t) for t in rec.core_types if t in tt.core_types]
    if len(device) != len(rec.core_types) or int(core.max()) >= len(device):
        return "the records' core list does not cover the cores they name"
    known = bool(rec.core_to_thread) and len(rec.core_to_thread) == len(device)
    owners = list(rec.core_to_thread) if known else list(range(len(device)))
    send = _send_cycles(rec, owners, core, row_dispatch) if known else [0] * len(device)
    blocks = calibrated.Blocks(tt.row_task.astype(np.int64), tt.row_type.astype(np.int64), core,
                               row_dispatch.astype(np.int64), tt.row_start.astype(np.int64),
                               tt.row_end.astype(np.int64), row_finish.astype(np.int64), order,
                               pred_ptr, p[o].astype(np.int64), device, owners,
                               int(bool((same & pre_sent).any())), send)
    makespan = int(tt.end.max() - tt.start.min())
    rules = _rules_of(tt, rec)
    return ReplayInput(tt, families, edges, blocks,
                       Engine.RULES if rules is not None else Engine.CALIBRATED, makespan, rules,
                       host_built=rec.orchestrator_source == "host" or bool(rec.host_orchestrator))


def _send_cycles(rec, owners: list[int], core: np.ndarray, dispatch: np.ndarray
                 ) -> list[int]:
    """Per scheduler thread, the cycles one send keeps it busy: the median over its
    `dispatch` phases of the phase's length per block sent (0 without phases: level 2), and
    never more than the least gap between two of its sends (the capture's sends must fit)."""
    threads = max(owners) + 1
    out = [0] * threads
    for ph in rec.scheduler:
        if "dispatch" not in ph.kinds or not 0 <= ph.thread < threads:
            continue
        sent = next((a for a in ph.args if a.key == "tasks_processed"), None)
        if sent is None or not isinstance(sent.values, np.ndarray):
            continue
        sel = (ph.kind == ph.kinds.index("dispatch")) & (sent.values > 0)
        if sent.present is not None:
            sel &= sent.present
        if sel.any():
            per = (ph.end - ph.start)[sel] / sent.values[sel]
            out[ph.thread] = round(float(np.median(per)))
    owner = np.asarray(owners, np.int64)[core]
    for t in range(threads):
        gaps = np.diff(np.sort(dispatch[owner == t]))
        if len(gaps):
            out[t] = min(out[t], int(gaps.min()))
    return out


def _rules_of(tt: TaskTable, rec) -> _Rules | None:
    """A modelled capture's rules, when it states them and fits them (one block a task)."""
    timing = (rec.metadata or {}).get("device_timing") or {}
    ticks = timing.get("schedule_ticks")
    if (timing.get("mode") != "modelled" or timing.get("schedule_rules") != _RULES
            or not isinstance(ticks, dict) or set(ticks) != set(STEPS)
            or not all(type(v) is int and v >= 1 for v in ticks.values())
            or (tt.blocks != 1).any() or not rec.core_to_thread
            or len(rec.core_to_thread) != len(rec.core_types)):
        return None
    counts = {t: rec.core_types.count(t) for t in ("aic", "aiv")}
    threads = max(rec.core_to_thread) + 1
    if core_layout(counts["aic"], counts["aiv"], threads) != (list(rec.core_types),
                                                             list(rec.core_to_thread)):
        return None                           # not the layout the rules build: not ours
    local = tt.ids & 0xFFFFFFFF
    submitted = np.argsort(local, kind="stable")
    ns = timing.get("schedule_ns")
    runtime = (rec.metadata or {}).get("runtime")
    return _Rules(ScheduleCosts(**{k: ticks[k] for k in STEPS}),
                  ns if isinstance(ns, dict) and set(ns) == set(STEPS) else None,
                  counts, threads, runtime == "tensormap_and_ringbuffer", submitted,
                  (tt.end - tt.start)[submitted])


# --------------------------------------------------------------------------- replaying

def replay(inp: ReplayInput, edit: Edit = Edit()) -> Replay:
    """`inp` replayed with `edit` (the empty edit: as captured), by its engine."""
    if inp.engine is Engine.RULES:
        return _replay_rules(inp, edit)
    return _replay_calibrated(inp, edit)


def _type_index(inp: ReplayInput, engine: str) -> int:
    names = [t.lower() for t in inp.tasks.core_types]
    if engine.lower() in names:
        return names.index(engine.lower())
    raise ValueError(f"no {engine} cores in this capture (it has "
                     f"{', '.join(inp.engine_names())})")


def _duration_factor(inp: ReplayInput, edit: Edit) -> np.ndarray | None:
    """Per task: its duration's factor under `edit.faster` (None: no change)."""
    if not edit.faster:
        return None
    names, code = inp.families
    factor = np.ones(len(code))
    for family, k in edit.faster:
        if family not in names:
            raise ValueError(f"no kernel family {family!r} in this capture (it has "
                             f"{', '.join(names)})")
        factor[code == names.index(family)] = 0.0 if k == 0 else 1.0 / k
    return factor


def _edited_device(inp: ReplayInput, edit: Edit) -> tuple[list[int], list[int]] | None:
    """Core types and owning threads of the device with `edit.cores`: built as the rules
    build a device (`core_layout`) where the capture's is such a one; else each engine keeps
    its first cores (by id) and new ones follow the last, owned in turn by the threads that
    own that engine's cores."""
    if not edit.cores:
        return None
    b = inp.blocks
    names = [t.lower() for t in inp.tasks.core_types]
    want = {_type_index(inp, e): n for e, n in edit.cores}
    base_t, base_o = b.device_core_types, b.device_owners
    threads = max(base_o, default=0) + 1
    counts = {names[t]: base_t.count(t) for t in set(base_t)}
    if set(names) <= {"aic", "aiv"} and core_layout(
            counts.get("aic", 0), counts.get("aiv", 0), threads) == (
            [names[t] for t in base_t], list(base_o)):
        counts.update({names[t]: n for t, n in want.items()})
        types, owners = core_layout(counts.get("aic", 0), counts.get("aiv", 0), threads)
        return [names.index(t) for t in types], owners
    types, owners = list(base_t), list(base_o)
    for typ, n in want.items():
        ids = [c for c, t in enumerate(base_t) if t == typ]
        for c in ids[n:]:
            types[c] = -1
        cycle = [base_o[c] for c in ids] or [0]
        for k in range(max(0, n - len(ids))):
            types.append(typ)
            owners.append(cycle[(len(ids) + k) % len(cycle)])
    return types, owners


def replayed_makespan(inp: ReplayInput, edit: Edit) -> int:
    """`replay(inp, edit).makespan`, without keeping every block's times where the engine
    can (the calibrated one: a quarter less CPU a replay, for a verdict's candidates)."""
    if inp.engine is Engine.RULES:
        return _replay_rules(inp, edit).makespan
    return calibrated.replayed_makespan(inp.blocks, inp.calibration, _calibrated_edit(inp, edit))


def _calibrated_edit(inp: ReplayInput, edit: Edit) -> calibrated.Edited:
    factor = _duration_factor(inp, edit)
    sched = dict(edit.sched)
    return calibrated.Edited(device=_edited_device(inp, edit),
                             duration_factor=None if factor is None else factor[inp.blocks.task],
                             delay=sched.get("dispatch", 1.0), launch=sched.get("launch", 1.0),
                             poll=sched.get("completion", 1.0), no_deps=edit.no_deps)


def _replay_calibrated(inp: ReplayInput, edit: Edit) -> Replay:
    d, s, en, f, core = calibrated.replay(inp.blocks, inp.calibration,
                                          _calibrated_edit(inp, edit))
    return Replay(edit, Engine.CALIBRATED, d, s, en, f, core, edit.no_deps)


def _replay_rules(inp: ReplayInput, edit: Edit) -> Replay:
    r = inp.rules
    tt = inp.tasks
    counts = dict(r.counts)
    for e, n in edit.cores:
        _type_index(inp, e)
        counts[e.lower()] = n
    types, owner = core_layout(counts.get("aic", 0), counts.get("aiv", 0), r.threads)
    factor = _duration_factor(inp, edit)
    ticks = r.ticks if factor is None else \
        np.ceil(r.ticks * factor[r.submitted]).astype(np.int64)
    position = np.empty(len(tt), np.int64)
    position[r.submitted] = np.arange(len(tt))
    tasks = [SimpleNamespace(index=k, task_id=k, core_type=tt.core_types[tt.row_type[
        tt.first_row[t]]], succs=[], pending=0, timing_slot=None)
        for k, t in enumerate(r.submitted.tolist())]
    if not edit.no_deps:
        for p, s in zip(position[inp.edges.pred].tolist(), position[inp.edges.succ].tolist()):
            tasks[p].succs.append(s)
            tasks[s].pending += 1
    sched = simulate(types, owner, r.threads, tasks, ticks.tolist(), _costs(r, edit, tt),
                     device_orchestrator=r.device_orchestrator)
    n = len(tt.row_task)
    d, s, en, f, core = (np.zeros(n, np.int64) for _ in range(5))
    row_of = tt.first_row[r.submitted]                 # one block a task: its only row
    for c, (rows, cpu) in enumerate(zip(sched.core_rows, sched.aicpu_rows)):
        for (k, _reg, _recv, start, end), (_r, disp, fin) in zip(rows, cpu):
            i = row_of[k]
            d[i], s[i], en[i], f[i], core[i] = disp, start, end, fin, c
    return Replay(edit, Engine.RULES, d, s, en, f, core, edit.no_deps)


def _costs(r: _Rules, edit: Edit, tt: TaskTable) -> ScheduleCosts:
    """The step costs under `edit.sched`: each piece's steps scaled, in whole ticks as the
    device rounds them (from the stated ns where the capture has them)."""
    if not edit.sched:
        return r.costs
    ticks = r.costs.as_dict()
    for piece, k in edit.sched:
        for step in _PIECE_STEPS[piece]:
            ticks[step] = ticks_of(r.step_ns[step] * k, tt.freq_hz) if r.step_ns else \
                max(1, ceil(ticks[step] * k))
    return ScheduleCosts(**ticks)
