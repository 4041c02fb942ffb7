"""Which host invocation ran which capture: every run log's invocations (`HostWindow`s) are
one pool, and each capture is paired with one of them, in this order (Simpler's):

1. dispatch identity: the capture's `dispatch_identity.json` names its process
   (`host_pid`) and its dispatch (run_id, dispatch_id, slot_id, generation), which the root
   `chip.run` span of exactly one invocation carries;
2. its own run log, when that holds one invocation that launched device work;
3. a window fit, only for what the first two leave: every way of matching the remaining
   captures to the free invocations (those of their own log, if they have one) is scored by
   how much wider the invocations' sub-phase windows are than the capture's streams, and
   the best is taken only when it beats the next by `MARGIN` times; an ambiguous or
   infeasible fit is refused, as is one with more than `MAX_ASSIGNMENTS` ways to score.

A capture left with no invocation (no run log at all) is placed without one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import permutations

from pypto.compile_profiling.trace_merge.place.containment import (
    NS_PER_S,
    CaptureWindows,
    HostWindow,
    NotOneRun,
    contain,
)

__all__ = ["MARGIN", "MAX_ASSIGNMENTS", "Candidate", "Pairing", "PairingError", "pair"]

MARGIN = 4.0
MAX_ASSIGNMENTS = 200_000


class PairingError(Exception):
    """No trustworthy pairing: `path` is the capture the message is about."""

    def __init__(self, path: str, problem: str):
        self.path, self.problem = path, problem
        super().__init__(f"{path}: {problem}")


@dataclass(slots=True)
class Candidate:
    """A capture to pair: its windows, its own run log's invocations, its sidecar."""

    path: str                                   # names it in messages
    windows: CaptureWindows | None              # None: nothing to fit (no device records)
    own: list[HostWindow]                       # invocations of its own run log
    host_pid: int | None = None                 # from dispatch_identity.json
    identity: tuple[int, int, int, int] | None = None
    sidecar: str | None = None                  # the sidecar's path


@dataclass(slots=True)
class Pairing:
    window: HostWindow
    how: str


def pair(cands: list[Candidate], pool: list[HostWindow]
         ) -> tuple[dict[int, Pairing], list[str]]:
    """-> ({index into cands: its pairing}, warnings). Raises `PairingError`."""
    warnings: list[str] = []
    taken: set[int] = set()
    out: dict[int, Pairing] = {}
    index = {w: i for i, w in enumerate(pool)}
    narrowed: dict[int, list[int]] = {}
    # 1. dispatch identity
    claims: dict[int, list[int]] = {}
    for c, cand in enumerate(cands):
        if cand.host_pid is None and cand.identity is None:
            continue
        match = [i for i, w in enumerate(pool)
                 if (cand.host_pid is None or w.pid == cand.host_pid)
                 and (cand.identity is None or w.identity == cand.identity)]
        if len(match) == 1:
            claims.setdefault(match[0], []).append(c)
        elif match:
            narrowed[c] = match
        else:
            warnings.append(f"{cand.sidecar}: no run log given holds the invocation it names "
                            f"({_sidecar_text(cand)}); paired by the timing instead")
    for i, cs in claims.items():
        if len(cs) == 1:
            out[cs[0]] = Pairing(pool[i], "dispatch identity (dispatch_identity.json: "
                                 f"{_sidecar_text(cands[cs[0]])})")
            taken.add(i)
        else:
            warnings.append(f"{', '.join(str(cands[c].sidecar) for c in cs)}: name the same "
                            "invocation; paired by the timing instead")
    # 2. a run log of its own with one invocation
    for c, cand in enumerate(cands):
        if c in out:
            continue
        own = [index[w] for w in cand.own if index[w] not in taken]
        if len(own) == 1 and len(cand.own) == 1:
            out[c] = Pairing(pool[own[0]], "its own run log")
            taken.add(own[0])
        elif own:
            narrowed[c] = [i for i in narrowed.get(c, own) if i in own] or own
    # 3. the window fit
    free = [c for c in range(len(cands)) if c not in out and cands[c].windows is not None]
    if free and len(taken) < len(pool):
        out.update(_fit(cands, pool, free, taken, narrowed))
    return out, warnings


def _sidecar_text(cand: Candidate) -> str:
    parts = []
    if cand.host_pid is not None:
        parts.append(f"host_pid {cand.host_pid}")
    if cand.identity is not None:
        parts.append("run_id {} dispatch_id {} slot_id {} generation {}".format(*cand.identity))
    return ", ".join(parts)


def _cost(w: HostWindow, cap: CaptureWindows) -> float:
    """How much wider the invocation's windows are than the capture's streams (Simpler's
    score); infinite when the capture cannot lie in it."""
    try:
        if contain(w, cap).dropped:
            return math.inf
    except NotOneRun:
        return math.inf
    f = cap.freq_hz
    cost, matched = 0.0, 0
    for name, (first, last) in cap.windows.items():
        if name not in w.phases:
            continue
        span = (last - first) * NS_PER_S / f
        if span > w.phases[name][1]:
            return math.inf
        cost += w.phases[name][1] - span
        matched += 1
    if not matched:
        span = (cap.extent[1] - cap.extent[0]) * NS_PER_S / f
        if span > w.device_wall_ns:
            return math.inf
        cost = w.device_wall_ns - span
    return cost


def _fit(cands, pool, free: list[int], taken: set[int], narrowed: dict[int, list[int]]
         ) -> dict[int, Pairing]:
    slots = sorted({i for c in free for i in narrowed.get(c, range(len(pool)))} - taken)
    if not slots:
        return {}
    if len(free) > len(slots):
        # more captures than invocations: the ones no invocation can hold stay unpaired
        free = [c for c in free if any(_cost(pool[i], cands[c].windows) < math.inf
                                       for i in slots)][:len(slots)]
        if not free:
            return {}
    count = math.perm(len(slots), len(free))
    if count > MAX_ASSIGNMENTS:
        raise PairingError(cands[free[0]].path, f"{len(free)} capture(s) carry no "
                           f"dispatch_identity.json and the run logs hold {len(slots)} "
                           f"invocations: {count} ways to pair them, too many to score; give "
                           "each capture its dispatch_identity.json or its own run log")
    allowed = {c: set(narrowed.get(c, slots)) for c in free}
    costs = {(c, i): _cost(pool[i], cands[c].windows) for c in free for i in slots
             if i in allowed[c]}
    ranked = []
    for perm in permutations(slots, len(free)):
        if all(i in allowed[c] for c, i in zip(free, perm)):
            ranked.append((sum(costs[(c, i)] for c, i in zip(free, perm)), perm))
    ranked.sort(key=lambda r: r[0])
    if not ranked or math.isinf(ranked[0][0]):
        logs = sorted({pool[i].log.path for i in slots})
        raise PairingError(cands[free[0]].path, "no invocation in " + ", ".join(logs) +
                           " can hold it: the run log and the capture are not from one run")
    best, perm = ranked[0]
    runner_up = next((cost for cost, p in ranked[1:] if p != perm), math.inf)
    if runner_up <= max(best * MARGIN, best):
        raise PairingError(cands[free[0]].path, (
            f"pairs ambiguously with the run log's invocations (the best fit is off by "
            f"{best / 1e3:.1f} us of window, the next by {runner_up / 1e3:.1f} us): runs of the "
            "same shape cannot be told apart by their timing; give each capture its "
            "dispatch_identity.json or its own run log"))
    margin = "" if math.isinf(runner_up) else f", next fit {(runner_up - best) / 1e3:.1f} us worse"
    return {c: Pairing(pool[i], f"window fit (its windows {costs[(c, i)] / 1e3:.1f} us "
                                f"narrower than the invocation's{margin})")
            for c, i in zip(free, perm)}
