"""An independent, plain-Python computation of the critical-path and overhead definitions
(docs/analysis.md) over a capture's raw JSON, for the tests to check the NumPy code against
on the small real captures (a helper module, no tests).

It follows the definitions literally, with dicts keyed by the task id as a string (so the
string tie rule falls out of Python's own comparison), a FIFO topological sort and a
backward walk, one task at a time: slow, obvious, and sharing no code with the package.
"""

from __future__ import annotations

import collections
import itertools
import json
from pathlib import Path

TOL = 2


def load(case: Path) -> tuple[dict, dict | None]:
    rec = json.loads((case / "chip_swimlane_records.json").read_text())
    deps_path = case / "deps.json"
    deps = json.loads(deps_path.read_text()) if deps_path.exists() else None
    return rec, deps


def critical_path(rec: dict, deps: dict | None, tol: int = TOL) -> dict:
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    per_core: dict[int, list[tuple[int, int, str]]] = {}
    for row in rec["aicore_tasks"]:
        core, token, st, en = row[0], str(row[1]), row[3], row[4]
        start[token] = min(start.get(token, st), st)
        end[token] = max(end.get(token, en), en)
        per_core.setdefault(core, []).append((st, en, token))
    preds: dict[str, list[str]] = {}
    seen = set()
    for e in (deps or {}).get("edges", []):
        p, s = str(int(e["pred"])), str(int(e["succ"]))
        if p == s or p not in start or s not in start or (p, s) in seen:
            continue
        seen.add((p, s))
        if end[p] <= start[s] + tol and start[p] < start[s]:
            preds.setdefault(s, []).append(p)
    # resource predecessor: who last freed the core a task's first block ran on
    core_prev: dict[str, tuple[str, int]] = {}
    for blocks in per_core.values():
        best_end, best_task = None, None
        for st, en, t in sorted(blocks):
            if best_task is not None and best_task != t and best_end <= st + tol \
                    and st == start[t] and (t not in core_prev or best_end > core_prev[t][1]):
                core_prev[t] = (best_task, best_end)
            if best_end is None or en > best_end:
                best_end, best_task = en, t
    # static path: FIFO topological order, longest finish
    succs: dict[str, list[str]] = collections.defaultdict(list)
    indeg = dict.fromkeys(start, 0)
    for s, ps in preds.items():
        for p in ps:
            succs[p].append(s)
            indeg[s] += 1
    queue = collections.deque(t for t in start if indeg[t] == 0)
    order = []
    while queue:
        u = queue.popleft()
        order.append(u)
        for v in succs[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)
    assert len(order) == len(start)
    finish: dict[str, int] = {}
    choice: dict[str, str | None] = {}
    for v in order:
        best, best_f = None, 0
        for p in preds.get(v, ()):
            if finish[p] > best_f:
                best, best_f = p, finish[p]
        finish[v] = best_f + end[v] - start[v]
        choice[v] = best
    sink = max(finish, key=finish.__getitem__)
    static = []
    v = sink
    while v is not None:
        static.append(v)
        v = choice[v]
    # observed path: walk back from the task that ends last
    v = max(end, key=end.__getitem__)
    walk = []
    while v is not None:
        # "data" sorts before "core" in max() on a tie, so spell the tie rule out
        cands = [(end[p], p, 1, "data") for p in preds.get(v, ())]
        cp = core_prev.get(v)
        if cp is not None and start[cp[0]] < start[v]:
            cands.append((cp[1], cp[0], 0, "core"))
        if not cands:
            walk.append((v, "start"))
            break
        _, p, _, kind = max(cands)
        walk.append((v, kind))
        v = p
    walk.reverse()
    dispatch, fin = aicpu_times(rec)
    submitted = submissions(rec, dispatch)
    t0, t1 = min(start.values()), max(end.values())
    frontier, compute = t0, 0
    stall, parts = collections.Counter(), collections.Counter()
    prev = None
    for t, kind in walk:
        e, s = frontier, max(start[t], frontier)
        stall[kind] += s - e
        for part, width in cut(e, s, None if prev is None else fin.get(prev),
                               dispatch.get(t), first=prev is None,
                               submitted=submitted.get(t)):
            parts[part] += width
        compute += max(0, end[t] - max(start[t], frontier))
        frontier = max(frontier, end[t])
        prev = t
    return {"makespan": t1 - t0, "static_length": finish[sink], "static_tasks": len(static),
            "static_path": static[::-1], "observed": [t for t, _ in walk],
            "held_by": [k for _, k in walk], "compute": compute, "stall": dict(stall),
            "parts": dict(parts)}


def aicpu_times(rec: dict) -> tuple[dict[str, int], dict[str, int]]:
    """Per task (id as a string) its earliest AICPU dispatch and latest finish, joined on
    (core, reg_task_id); a task with a block that has no AICPU row has neither."""
    cpu = {(r[0], r[1]): (r[2], r[3]) for r in rec.get("aicpu_tasks", [])}
    dispatch: dict[str, int] = {}
    fin: dict[str, int] = {}
    missing = set()
    for row in rec["aicore_tasks"]:
        token = str(row[1])
        got = cpu.get((row[0], row[2]))
        if got is None:
            missing.add(token)
            continue
        dispatch[token] = min(dispatch.get(token, got[0]), got[0])
        fin[token] = max(fin.get(token, got[1]), got[1])
    for token in missing:
        dispatch.pop(token, None)
        fin.pop(token, None)
    return dispatch, fin


def submissions(rec: dict, dispatch: dict[str, int]) -> dict[str, int]:
    """Per task (id as a string) when it was submitted, where that is known: a graph built
    on the host, every task at the run's first dispatch; a device orchestrator's task at the
    end of its `submit` phase."""
    if rec["metadata"].get("orchestrator_source") == "host" and dispatch:
        first = min(dispatch.values())
        return dict.fromkeys(dispatch, first)
    out = {}
    for thread in rec.get("aicpu_orchestrator_phases", []):
        for ph in thread:
            if "task_id" in ph:
                out.setdefault(str(ph["task_id"]), ph["end_cycles"])
    return out


def cut(e: int, s: int, pred_finish: int | None, own_dispatch: int | None, *, first: bool,
        submitted: int | None = None):
    """The pieces of a stall [e, s) in the order they happen (docs/analysis.md); the first
    (front) gap cut at the task's own dispatch, before it at its submission."""
    if first:
        if own_dispatch is None:
            return [("front", s - e)]
        d = min(max(own_dispatch, e), s)
        r = d if submitted is None else min(max(submitted, e), d)
        return [("front", r - e), ("dispatch", d - r), ("launch", s - d)]
    d = s if own_dispatch is None else min(max(own_dispatch, e), s)
    f = e if pred_finish is None else min(max(pred_finish, e), d)
    out = [("launch", s - d)]
    if pred_finish is None:
        out.append(("unknown", d - e))
    else:
        out.append(("completion", f - e))
        out.append(("dispatch" if own_dispatch is not None else "unknown", d - f))
    return out


def starvation(rec: dict, deps: dict) -> dict:
    """Per engine the starved share of the makespan, and the all / some shares, by a sweep
    over every distinct time point."""
    types = rec["metadata"]["core_types"]
    rows = rec["aicore_tasks"]
    cpu = {(r[0], r[1]): r for r in rec["aicpu_tasks"]}
    cores: dict[str, set] = collections.defaultdict(set)
    tasks: dict[str, dict] = {}
    for row in rows:
        core, token, reg, _st, en = row[:5]
        ty = types[core]
        cores[ty].add(core)
        t = tasks.setdefault(str(token), {"types": set(), "disp": None, "end": en})
        t["types"].add(ty)
        t["end"] = max(t["end"], en)
        c = cpu.get((core, reg))
        if c is not None:
            t["disp"] = c[2] if t["disp"] is None else min(t["disp"], c[2])
    producers = collections.defaultdict(set)
    for e in deps["edges"]:
        p, s = str(int(e["pred"])), str(int(e["succ"]))
        if p != s:
            producers[s].add(p)
    w0 = min(r[3] for r in rows)
    w1 = max(r[4] for r in rows)
    runs = [(max(w0, min(r[3], w1)), max(w0, min(r[4], w1)), types[r[0]]) for r in rows]
    waits = []
    submitted = submissions(rec, {k: v["disp"] for k, v in tasks.items()
                                  if v["disp"] is not None})
    for tid, t in tasks.items():
        ran = [tasks[p]["end"] for p in producers.get(tid, ()) if p in tasks]
        ready = max(ran) if ran else min(submitted.get(tid, t["disp"]), t["disp"])
        r, d = max(w0, min(ready, w1)), max(w0, min(t["disp"], w1))
        if d > r:
            waits.append((r, d, t["types"]))
    engines = [ty for ty in ("aic", "aiv") if cores.get(ty)]
    points = sorted({w0, w1, *(x for a, b, _ in runs if b > a for x in (a, b)),
                     *(x for a, b, _ in waits for x in (a, b))})
    run_delta = {ty: collections.Counter() for ty in engines}
    wait_delta = {ty: collections.Counter() for ty in engines}
    for a, b, ty in runs:
        if b > a and ty in run_delta:
            run_delta[ty][a] += 1
            run_delta[ty][b] -= 1
    for a, b, ts in waits:
        for ty in ts:
            if ty in wait_delta:
                wait_delta[ty][a] += 1
                wait_delta[ty][b] -= 1
    share = dict.fromkeys([*engines, "all", "some"], 0)
    busy = dict.fromkeys(engines, 0)
    ready = dict.fromkeys(engines, 0)
    for a, b in itertools.pairwise(points):
        starved, working = {}, {}
        for ty in engines:
            busy[ty] += run_delta[ty][a]
            ready[ty] += wait_delta[ty][a]
            working[ty] = ready[ty] > 0
            starved[ty] = len(cores[ty]) - busy[ty] > 0 and ready[ty] > 0
            share[ty] += (b - a) * starved[ty]
        share["all"] += (b - a) * all(starved.values())
        share["some"] += (b - a) * (any(working.values()) and
                                    all(starved[ty] for ty in engines if working[ty]))
    return {k: v / (w1 - w0) for k, v in share.items()}
