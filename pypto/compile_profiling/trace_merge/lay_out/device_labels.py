"""How Simpler names what it draws: task labels (`t3`, `r1t3`), kernel names (the name map,
else `func_<id>_<letters>`), scheduler phase and submit labels, and a scheduler thread's
role (scheduler or resolution) from the kinds of its phases."""

from __future__ import annotations

import numpy as np

from pypto.compile_profiling.trace_merge.lay_out.device_rows import packable


def task_displays(task_ids: np.ndarray) -> list[str]:
    """Simpler's task label of each id: `t<local>` on ring 0, else `r<ring>t<local>`."""
    ids = np.asarray(task_ids, dtype=np.int64)
    ring, local = ((ids >> 32) & 0xFF).tolist(), (ids & 0xFFFFFFFF).tolist()
    return [f"r{r}t{x}" if r else f"t{x}" for r, x in zip(ring, local)]


def func_letter_name(func_id: int) -> str:
    """Simpler's name for a kernel without a name-map entry: 0 -> func_0_a, 26 -> func_26_aa."""
    letters = []
    m = func_id + 1
    while m > 0:
        m, rem = divmod(m - 1, 26)
        letters.append(chr(ord("a") + rem))
    return f"func_{func_id}_{''.join(reversed(letters))}"


def kernel_name(func_id: int, names: dict[int, str] | None) -> str | None:
    if func_id < 0:
        return None
    if names and func_id in names:
        return names[func_id]
    return func_letter_name(func_id)


# Scheduler phase roles, in both of Simpler's runtimes' vocabularies (its
# scheduler_thread_role): a thread doing only resolution work, on its own (a standalone
# resolve) or owning no core, is a resolution thread, not a scheduler.
_WORK_KINDS = frozenset({"complete", "dispatch", "release", "state_probe", "worksteal",
                         "refill", "early_dispatch", "drain", "graph_prepare"})


_RESOLUTION_KINDS = frozenset({"resolve", "resolve_standalone", "async_poll", "dummy"})


# Labels as Simpler's converter shows them: an AICore scheduler names its phases for the
# reader; an AICPU one shows the recorded name, the two below as their report labels.
_AICPU_DISPLAY = {"resolve_standalone": "resolve", "dummy_task": "dummy"}


# One task's marker, sampled as its completion begins: Simpler draws these on the AICPU's
# own worker lane (`AICPU_<n>`), not among the scheduler's phases they would cut across.
MARKER_KINDS = frozenset({"dummy_task", "predicated_skip"})


_AICORE_DISPLAY = {"complete": "Completion", "resolve": "Resolve", "state_probe": "StateProbe",
                   "dispatch": "Dispatch", "worksteal": "Worksteal", "refill": "Refill"}


def thread_role(s, assigned: set[int]) -> str:
    """"resolution" for a stream with resolution work and no scheduler work whose resolve
    stands alone (not inside a complete or dummy phase) or whose thread owns no core
    (`assigned`: the threads of `core_to_thread`); else "scheduler"."""
    seen = np.bincount(s.kind, minlength=len(s.kinds)) > 0
    present = {k for k, on in zip(s.kinds, seen.tolist()) if on}
    if not present & _RESOLUTION_KINDS or present & _WORK_KINDS:
        return "scheduler"
    if "resolve_standalone" in present or (assigned and s.thread not in assigned):
        return "resolution"
    # a resolve is nested when a complete/dummy phase starts at or before it and ends after
    kind_of = np.array(s.kinds, dtype=object)[s.kind] if len(s.kinds) else np.array([])
    parents = np.flatnonzero(np.isin(kind_of, ["complete", "dummy"]))
    res = np.flatnonzero(kind_of == "resolve")
    if not len(res):
        return "scheduler"
    if not len(parents):
        return "resolution"
    o = np.argsort(s.start[parents], kind="stable")
    p_start, p_end = s.start[parents][o], s.end[parents][o]
    k = np.searchsorted(p_start, s.start[res], "right") - 1
    nested = (k >= 0) & (s.end[res] < p_end[np.maximum(k, 0)])
    return "scheduler" if nested.all() else "resolution"


def scheduler_lane(s, role: str) -> str:
    if s.producer == "aicore":
        worker = s.stream.get("worker_id")
        return f"Scheduler_{worker if worker is not None else s.thread}"
    return f"Sched_{s.thread}" + (" (resolution)" if role == "resolution" else "")


def scheduler_names(s) -> tuple[list[str], np.ndarray]:
    """`kind(tasks_processed)`, or the kind alone; a phase naming a task (`task_id`:
    dummy_task, predicated_skip, graph_prepare, an AICore scheduler's task phases) is
    `kind(t5)`; an AICore scheduler's phase without a task is its display name alone
    (`Dispatch(t23)`, `Bootstrap`), as Simpler's converter labels them. One string per
    distinct label."""
    aicore = getattr(s, "producer", "aicpu") == "aicore"
    display = [(_AICORE_DISPLAY if aicore else _AICPU_DISPLAY).get(k, k) for k in s.kinds]
    n = len(s.kind)
    tid = s.arg("task_id")
    has_task = np.zeros(n, dtype=bool)
    if tid is not None and isinstance(tid.values, np.ndarray):
        has_task = np.ones(n, dtype=bool) if tid.present is None else tid.present.copy()
    tp = s.arg("tasks_processed")
    if aicore or tp is None or not isinstance(tp.values, np.ndarray):
        key = np.full(n, -1, dtype=np.int64)
    else:
        present = tp.present if tp.present is not None else np.ones(n, dtype=bool)
        key = np.where(present, tp.values, -1)
    kind = s.kind.astype(np.int64)
    plain = ~has_task
    if plain.all() and (key < 0).all() and display == list(s.kinds):
        return list(s.kinds), s.kind.astype(np.int32)
    k_p, v_p = kind[plain], key[plain]
    if packable((k_p, 16), (v_p + 1, 47)):  # 800k rows: 1.57 -> 0.08 s CPU (row-wise)
        packed, inv = np.unique((k_p << 47) | (v_p + 1), return_inverse=True)
        pairs = np.column_stack((packed >> 47, (packed & ((1 << 47) - 1)) - 1))
    else:
        pairs, inv = np.unique(np.column_stack((k_p, v_p)), axis=0, return_inverse=True)
    names = [f"{display[k]}({v})" if v >= 0 else display[k] for k, v in pairs.tolist()]
    out = np.empty(n, dtype=np.int32)
    out[plain] = inv.reshape(-1)
    if has_task.any():
        t_pairs, t_inv = np.unique(np.column_stack((kind[has_task], tid.values[has_task])),
                                   axis=0, return_inverse=True)
        shown = task_displays(t_pairs[:, 1])
        out[has_task] = len(names) + t_inv.reshape(-1)
        names += [f"{display[k]}({d})" for k, d in zip(t_pairs[:, 0].tolist(), shown)]
    return names, out


def submit_names(s) -> tuple[list[str], np.ndarray]:
    """`submit(t3)` for records with a task id, else the stream's kind; one string per
    distinct (kind, task id), made after `np.unique` (1M records, all distinct: 1.27 s CPU
    for one label per record interned by a dict -> 0.47 s, min of 3)."""
    tid = s.arg("task_id")
    if tid is None or not isinstance(tid.values, np.ndarray):
        return list(s.kinds), s.kind.astype(np.int32)
    present = tid.present if tid.present is not None else np.ones(len(s.kind), dtype=bool)
    task = np.where(present & (tid.values >= 0), tid.values, -1)
    keys, inv = np.unique(np.where(task >= 0, task, -1 - s.kind.astype(np.int64)),
                          return_inverse=True)
    ids = keys[keys >= 0]
    labels = [s.kinds[-1 - k] for k in keys[keys < 0].tolist()] + \
        [f"submit({d})" for d in task_displays(ids)]
    return labels, inv.reshape(-1).astype(np.int32)
