"""Simpler-format DFX files from one simulated execution.

Writes, under `<work_dir>/dfx_outputs/`, what today's Simpler writes for the same flags
(docs/simpler_layouts.md): `chip_swimlane_records.json` (swimlane level 1-4) in today's
records layout (7-column `aicore_tasks` with `run_epoch`, `scheduler_tasks`, and
`scheduler_records` streams whose queue figures are in `metrics`; section order and row
shapes as Simpler's writer golden), `deps.json` (dep_gen) and `name_map_<case>.json` (any
DFX flag). Beyond today's writer, host-orchestrated runs keep `metadata.clock_anchors`, so
they stay calibrated. Device stamps are converted to counter cycles here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pypto.compile_profiling.foundation.atomic_io import atomic_writer, ensure_dir
from pypto.runtime.device import DeviceRun
from pypto.runtime.device_clock import clock_anchors_block
from pypto.runtime.task_graph import kernel_ids_slots, simpler_dtype

SWIMLANE_FILE = "chip_swimlane_records.json"
DEPS_FILE = "deps.json"
NAME_MAP_LEVEL = 2  # Simpler's name maps carry the hierarchy level of a chip run (L2)


def write_dfx_outputs(run: DeviceRun, dfx_dir: str | os.PathLike, *, level: int,
                      dep_gen: bool, case_name: str, kernels: dict[str, Any],
                      orchestration_name: str | None,
                      not_simulated: dict | None = None) -> list[Path]:
    """Write the files the flags ask for; returns their paths. The settings the simulator
    could not honour go into the capture's metadata."""
    out = ensure_dir(dfx_dir)
    written = []
    if level >= 1:
        written.append(write_swimlane_records(run, out / SWIMLANE_FILE, level,
                                              not_simulated=not_simulated))
    if dep_gen:
        written.append(write_deps(run, out / DEPS_FILE))
    if level >= 1 or dep_gen:
        written.append(write_name_map(out / f"name_map_{case_name}.json", kernels,
                                      orchestration_name))
    return written


PLATFORM = "a2a3"          # the simulated device: a2a3's 50 MHz counter, 3 AICPU schedulers
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def host_clock_domain_id() -> str | None:
    """The host's boot identity as Simpler's writer names it (`linux-boot-id:<id>`), None
    where it cannot be read (Simpler then leaves the field out)."""
    try:
        boot = _BOOT_ID.read_text().strip()
    except OSError:
        return None
    ok = boot and all(c.isalnum() or c == "-" for c in boot)
    return f"linux-boot-id:{boot}" if ok else None


def swimlane_document(run: DeviceRun, level: int, *,
                      not_simulated: dict | None = None) -> dict:
    """The `chip_swimlane_records.json` content as a dict (rows as lists)."""
    cyc = run.counter.cycles_at
    rec = run.records
    layout = run.layout
    epoch = run.run_epoch
    host_mode = rec.orchestrator == "host"
    meta: dict[str, Any] = {"runtime": "host_build_graph" if host_mode
                            else "tensormap_and_ringbuffer",
                            "clock_freq_hz": run.counter.freq_hz,
                            "num_cores": layout.num_cores,
                            "core_types": list(layout.core_types)}
    if not_simulated:    # ours, only when asked: what this capture lacks that Simpler's has
        meta["not_simulated"] = dict(not_simulated)
    if host_mode:
        origin = rec.orch_phases[0][2] if rec.orch_phases else run.host_orch_start_ns
        meta.update({"orchestrator_source": "host",
                     "orchestrator_clock_domain": "host_monotonic_ns",
                     "device_clock_domain": "device_syscnt_cycles",
                     "host_timestamp_resolution_ns": 1,
                     "host_timestamp_quantization_ns": 0,
                     "host_orchestration_origin_ns": origin,
                     "timeline_relation": "host_orchestration_precedes_device"})
        if level >= 4:
            n = len(run.graph.tasks)
            recorded = len(rec.orch_phases)
            meta["host_capture"] = {"status": "complete", "expected_records": n,
                                    "recorded_records": recorded,
                                    "pool_records": recorded + len(rec.host_phases),
                                    "dropped_records": n - recorded, "error": None}
        domain = host_clock_domain_id()
        if domain is not None:
            meta["host_clock_domain_id"] = domain
        meta["clock_anchors"] = clock_anchors_block(rec.anchors)
    if level >= 2:
        meta["core_to_thread"] = list(layout.core_to_thread)
    meta["device_timing"] = dict(run.timing)    # ours, last: measured, or modelled (how)
    doc: dict[str, Any] = {"chip_swimlane_level": level, "metadata": meta}
    doc["aicore_tasks"] = [
        [core, tid, reg, cyc(start), cyc(end), cyc(start) - cyc(recv), epoch]
        for core, rows in enumerate(rec.core_rows) for tid, reg, recv, start, end in rows]
    if level >= 2:
        doc["scheduler_tasks"] = {"producer": "aicpu", "records": [
            [core, reg, cyc(d), cyc(f), epoch]
            for core, rows in enumerate(rec.aicpu_rows) for reg, d, f in rows]}
    if level >= 3:   # idle schedulers (and the orchestrator thread's slot) are left out
        doc["scheduler_records"] = {"streams": [
            _stream(t, phases, cyc, epoch) for t, phases in enumerate(rec.sched_phases)
            if phases]}
    if level >= 4:
        if host_mode:
            doc["host_orchestrator_phases"] = [[
                {"submit_idx": i, "task_id": tid, "start_host_ns": s, "end_host_ns": e}
                for i, tid, s, e in rec.orch_phases]]
            doc["host_device_uploads"] = [
                {"phase": name, "start_host_ns": s, "end_host_ns": e, "detail": detail}
                for name, s, e, detail, upload in rec.host_phases if upload]
        else:
            doc["aicpu_orchestrator_phases"] = [[
                {"submit_idx": i, "task_id": tid, "start_cycles": cyc(s), "end_cycles": cyc(e),
                 "run_epoch": epoch}
                for i, tid, s, e in rec.orch_phases]]
    return doc


def _stream(thread: int, phases: list[tuple], cyc, epoch: int) -> dict:
    """One scheduler thread as today's stream: the records, their queue figures by
    `record_index` under `metrics`, and the capture accounting (nothing is ever dropped)."""
    records, metrics = [], []
    for i, (kind, s, e, loop_iter, n, hit, miss, sh0, sh1) in enumerate(phases):
        records.append({"start_cycles": cyc(s), "end_cycles": cyc(e), "run_epoch": epoch,
                        "loop_iter": loop_iter, "kind": kind, "tasks_processed": n,
                        "task_id": None})
        m: dict[str, Any] = {"record_index": i}
        if kind == "dispatch":
            m.update(pop_hit=hit, pop_miss=miss)
        m.update(shared_at_start=list(sh0), shared_at_end=list(sh1))
        metrics.append(m)
    return {"platform": PLATFORM, "producer": "aicpu", "scheduler_id": thread,
            "worker_id": thread, "core_type": "aicpu", "physical_core_id": None,
            "capture": {"committed": len(records), "dropped": 0, "truncated": False},
            "records": records, "metrics": metrics}


def write_swimlane_records(run: DeviceRun, path: Path, level: int, *,
                           not_simulated: dict | None = None) -> Path:
    """Write the records file as Simpler's writer lays it out: one row, record or metric
    per line."""
    doc = swimlane_document(run, level, not_simulated=not_simulated)
    dumps = json.dumps
    with atomic_writer(path, "w") as f:
        f.write(f'{{\n  "chip_swimlane_level": {level},\n')
        f.write('  "metadata": ' + _metadata_text(doc["metadata"]))
        for key, value in doc.items():
            if key in ("chip_swimlane_level", "metadata"):
                continue
            f.write(f",\n  {dumps(key)}: ")
            if key in ("aicore_tasks", "host_device_uploads"):
                _write_rows(f, value, "    ")
            elif key == "scheduler_tasks":
                f.write(f'{{\n    "producer": {dumps(value["producer"])},\n    "records": ')
                _write_rows(f, value["records"], "    ", "    ")
                f.write("\n  }")
            elif key == "scheduler_records":
                f.write('{\n    "streams": [')
                for i, stream in enumerate(value["streams"]):
                    head = {k: v for k, v in stream.items() if k not in ("records", "metrics")}
                    f.write(("," if i else "") + "\n      " + dumps(head, separators=(", ", ": "))[:-1]
                            + ', "records": ')
                    _write_rows(f, stream["records"], "        ", "      ")
                    f.write(', "metrics": ')
                    _write_rows(f, stream["metrics"], "        ", "      ")
                    f.write("}")
                f.write("\n    ]\n  }" if value["streams"] else "]\n  }")
            else:  # list of per-thread lists
                if not value:
                    f.write("[]")
                    continue
                f.write("[\n")
                for i, inner in enumerate(value):
                    f.write("    ")
                    _write_rows(f, inner, "      ", "    ")
                    f.write(",\n" if i + 1 < len(value) else "\n")
                f.write("  ]")
        f.write("\n}\n")
    return path


def _metadata_text(meta: dict) -> str:
    """Metadata as in the captures: one key per line, anchor samples one per line."""
    dumps = json.dumps
    sep = (", ", ": ")
    lines = []
    for k, v in meta.items():
        if k == "clock_anchors":
            inner = [f"      {dumps(ik)}: {dumps(iv, separators=sep)}"
                     for ik, iv in v.items() if ik != "samples"]
            samples = ",\n".join("        " + dumps(x, separators=sep) for x in v["samples"])
            inner.append('      "samples": [\n' + samples + "\n      ]")
            lines.append(f"    {dumps(k)}: {{\n" + ",\n".join(inner) + "\n    }")
        else:
            lines.append(f"    {dumps(k)}: {dumps(v, separators=sep)}")
    return "{\n" + ",\n".join(lines) + "\n  }"


def _write_rows(f, rows: list, indent: str, close_indent: str = "  ") -> None:
    if not rows:
        f.write("[]")
        return
    dumps = json.dumps
    f.write("[\n" + indent)
    f.write((",\n" + indent).join(dumps(r, separators=(", ", ": ")) for r in rows))
    f.write("\n" + close_indent + "]")


def deps_document(run: DeviceRun) -> dict:
    """`deps.json` content: tasks (ids as strings, 3-slot kernel_ids), tensors, edges."""
    graph = run.graph
    tasks = []
    for task, args in zip(graph.tasks, graph.task_args):
        tasks.append({"task_id": str(task.task_id), "scope": "auto", "early_dispatch": False,
                      "kernel_ids": kernel_ids_slots(task.func_id, task.core_type),
                      "block_num": 1,
                      "args": [{k: v for k, v in a.items() if k != "_tensor"} for a in args]})
    tensors = [{"tensor_id": str(t.tensor_id), "buffer_addr": str(t.addr), "version": 0,
                "dtype": simpler_dtype(t.dtype), "buffer_numel": str(t.numel)}
               for t in graph.tensors]
    edges = []
    for e in graph.edges:
        c = graph.tensors[e.tensor]
        d: dict[str, Any] = {"pred": str(graph.tasks[e.pred].task_id),
                             "succ": str(graph.tasks[e.succ].task_id), "arg": e.arg,
                             "source": e.source}
        if e.source == "tensormap":
            d["overlap"] = "covered" if e.covered else "partial"
        d.update({"tensor_id": str(c.tensor_id), "consumer_dtype": simpler_dtype(c.dtype),
                  "consumer_shape": list(c.shape), "consumer_start_offset": str(c.start_offset),
                  "consumer_strides": list(c.strides)})
        if e.source == "tensormap":
            p = graph.tensors[e.producer_tensor]
            d.update({"producer_shape": list(p.shape),
                      "producer_start_offset": str(p.start_offset),
                      "producer_strides": list(p.strides)})
        edges.append(d)
    return {"tasks": tasks, "tensors": tensors, "edges": edges}


def write_deps(run: DeviceRun, path: Path) -> Path:
    with atomic_writer(path, "w") as f:
        json.dump(deps_document(run), f, separators=(",", ":"))
    return path


def write_name_map(path: Path, kernels: dict[str, Any], orchestration_name: str | None) -> Path:
    """`{"level", "orchestrator_name", "callable_id_to_name"}` keyed by kernel func_id."""
    names = {str(k.func_id): k.name for k in sorted(kernels.values(), key=lambda k: k.func_id)}
    doc = {"level": NAME_MAP_LEVEL, "orchestrator_name": orchestration_name,
           "callable_id_to_name": names}
    with atomic_writer(path, "w") as f:
        f.write(json.dumps(doc, indent=2) + "\n")
    return path
