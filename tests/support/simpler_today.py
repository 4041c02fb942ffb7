"""A documented, reversible rewrite of a real (August 2026) Simpler capture into today's
records layout (a helper module, no tests).

No capture of today's Simpler can be made here, so the 9 real captures are rewritten the
way today's writer lays the same records out (docs/simpler_layouts.md), and the merge must
draw both layouts of each the same. The rewrite changes the records file only:

- `metadata` gains `runtime` first (`host_build_graph` for a host-orchestrated capture,
  else `tensormap_and_ringbuffer`); everything else stays, `clock_anchors` included (today's
  writer no longer writes them, but without them the two layouts would be placed
  differently and could not be compared slice for slice).
- `aicore_tasks` rows gain a 7th column, `run_epoch` (`RUN_EPOCH` for every row).
- `aicpu_tasks` becomes `scheduler_tasks: {producer: "aicpu", records}` with `run_epoch`
  as a 5th column; left out at level 1 when empty, as today's writer does.
- `aicpu_scheduler_phases` becomes `scheduler_records: {streams}`: one stream per thread
  slot (`scheduler_id` = `worker_id` = the slot, platform a2a3, producer aicpu, core_type
  aicpu, `capture` committed = its records, nothing dropped). A stream's `records` hold
  start_cycles, end_cycles, run_epoch, loop_iter, kind, tasks_processed, task_id (null);
  its `metrics` hold, by `record_index`, the rest of the August record (pop_hit/pop_miss
  on dispatch, shared_at_start, shared_at_end). Empty slots stay, as streams without
  records (today's writer leaves an idle scheduler out; the reader takes both), so the
  number of slots survives the round trip.
- `aicpu_orchestrator_phases` records gain `run_epoch` after `end_cycles`.

`to_august(to_today(doc)) == doc`, member order included.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

RUN_EPOCH = 1
_RECORD_HEAD = ("kind", "start_cycles", "end_cycles", "loop_iter", "tasks_processed")

__all__ = ["RUN_EPOCH", "to_august", "to_today", "write_today"]


def _replace_key(doc: dict, old: str, new: str | None, value=None) -> dict:
    """`doc` with member `old` replaced by `new: value` at the same place (None: dropped)."""
    out = {}
    for k, v in doc.items():
        if k != old:
            out[k] = v
        elif new is not None:
            out[new] = value
    return out


def _stream(slot: int, records: list[dict]) -> dict:
    recs, metrics = [], []
    for i, r in enumerate(records):
        if tuple(r)[:len(_RECORD_HEAD)] != _RECORD_HEAD:
            raise ValueError(f"aicpu_scheduler_phases[{slot}][{i}]: members {list(r)} do not "
                             f"start with {list(_RECORD_HEAD)}")
        recs.append({"start_cycles": r["start_cycles"], "end_cycles": r["end_cycles"],
                     "run_epoch": RUN_EPOCH, "loop_iter": r["loop_iter"], "kind": r["kind"],
                     "tasks_processed": r["tasks_processed"], "task_id": None})
        metrics.append({"record_index": i, **{k: v for k, v in r.items()
                                              if k not in _RECORD_HEAD}})
    return {"platform": "a2a3", "producer": "aicpu", "scheduler_id": slot, "worker_id": slot,
            "core_type": "aicpu", "physical_core_id": None,
            "capture": {"committed": len(records), "dropped": 0, "truncated": False},
            "records": recs, "metrics": metrics}


def to_today(doc: dict) -> dict:
    """The August records document `doc` laid out as today's writer does (module doc)."""
    meta = doc["metadata"]
    runtime = ("host_build_graph" if meta.get("orchestrator_source") == "host"
               else "tensormap_and_ringbuffer")
    out = dict(doc)
    out["metadata"] = {"runtime": runtime, **meta}
    for row in doc["aicore_tasks"]:
        if len(row) != 6:
            raise ValueError(f"aicore_tasks row {row}: 6 columns expected")
    out["aicore_tasks"] = [[*row, RUN_EPOCH] for row in doc["aicore_tasks"]]
    rows = doc["aicpu_tasks"]
    if rows or doc["chip_swimlane_level"] >= 2:
        out = _replace_key(out, "aicpu_tasks", "scheduler_tasks", {
            "producer": "aicpu", "records": [[*row, RUN_EPOCH] for row in rows]})
    else:
        out = _replace_key(out, "aicpu_tasks", None)
    if "aicpu_scheduler_phases" in doc:
        out = _replace_key(out, "aicpu_scheduler_phases", "scheduler_records", {
            "streams": [_stream(t, recs)
                        for t, recs in enumerate(doc["aicpu_scheduler_phases"])]})
    if "aicpu_orchestrator_phases" in doc:
        out["aicpu_orchestrator_phases"] = [[{**r, "run_epoch": RUN_EPOCH} for r in thread]
                                            for thread in doc["aicpu_orchestrator_phases"]]
    return out


def to_august(doc: dict) -> dict:
    """Undo `to_today`: the August records document it was made from."""
    out = dict(doc)
    meta = dict(doc["metadata"])
    meta.pop("runtime")
    out["metadata"] = meta
    out["aicore_tasks"] = [row[:6] for row in doc["aicore_tasks"]]
    rows = [row[:4] for row in doc["scheduler_tasks"]["records"]] \
        if "scheduler_tasks" in doc else []
    if "scheduler_tasks" in out:
        out = _replace_key(out, "scheduler_tasks", "aicpu_tasks", rows)
    else:                                     # level 1: back after aicore_tasks
        keys = list(out)
        at = keys.index("aicore_tasks") + 1
        out = {**{k: out[k] for k in keys[:at]}, "aicpu_tasks": rows,
               **{k: out[k] for k in keys[at:]}}
    if "scheduler_records" in doc:
        threads = []
        for s in doc["scheduler_records"]["streams"]:
            metrics = {m["record_index"]: m for m in s["metrics"]}
            threads.append([{"kind": r["kind"], "start_cycles": r["start_cycles"],
                             "end_cycles": r["end_cycles"], "loop_iter": r["loop_iter"],
                             "tasks_processed": r["tasks_processed"],
                             **{k: v for k, v in metrics[i].items() if k != "record_index"}}
                            for i, r in enumerate(s["records"])])
        out = _replace_key(out, "scheduler_records", "aicpu_scheduler_phases", threads)
    if "aicpu_orchestrator_phases" in doc:
        out["aicpu_orchestrator_phases"] = [[{k: v for k, v in r.items() if k != "run_epoch"}
                                             for r in thread]
                                            for thread in doc["aicpu_orchestrator_phases"]]
    return out


def write_today(src: Path, dst: Path) -> Path:
    """Copy the capture leaf `src` to `dst` with its records file in today's layout (the
    other files unchanged); -> `dst`."""
    dst.mkdir(parents=True, exist_ok=True)
    for p in src.iterdir():
        if p.is_file() and p.name != "chip_swimlane_records.json":
            shutil.copyfile(p, dst / p.name)
    doc = json.loads((src / "chip_swimlane_records.json").read_text())
    (dst / "chip_swimlane_records.json").write_text(json.dumps(to_today(doc)))
    return dst
