"""Running the simulated device, in this process or in a child process.

The child (`python -m pypto.runtime.device_process`) gets a pickled request on stdin: how to
get the program (load codegen output from a directory, or a picklable `LoadedProgram`), the
input tensors and the device settings. It runs the device, writes the DFX files, and pickles
back the outputs plus a `StageRecord` of its own work (its pid, its threads), which the parent
adds to its profile so traces show the device as a second process.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto.compile_profiling.foundation.owned_dir import (
    replace_owned,
    stage_beside,
    write_manifest,
    writing_into,
)
from pypto.compile_profiling.trace_merge.read.read_simpler import file_kind
from pypto.errors import PyptoError
from pypto.runtime.device import DeviceExecutionError, DeviceLayout, SimulatedDevice
from pypto.runtime.host_log import write_host_log
from pypto.runtime.swimlane_writer import write_dfx_outputs

_pc = time.perf_counter_ns


@dataclass
class DeviceSettings:
    """Everything the device needs besides program and tensors (picklable)."""

    num_aic_cores: int
    num_aiv_cores: int
    num_sched_threads: int
    clock_freq_hz: int
    level: int
    runtime: str
    dep_gen: bool
    dfx_dir: str
    case_name: str
    drift_ppm: float = 0.0
    device_id: int = 0
    not_simulated: dict = field(default_factory=dict)   # recorded in the capture's metadata
    host_log_queue: int = 4096    # records the simulated host logger's queue holds
    # RunConfig's device_timing, timing_jitter, timing_seed, scheduler_costs
    timing: tuple = ("measured", 0.0, None, None)


@dataclass
class DeviceOutcome:
    """Result of one device execution (also what the child sends back)."""

    error: str | None
    outputs: dict[str, Any]
    task_count: int = 0
    start_ns: int = 0
    end_ns: int = 0
    files: list[str] = field(default_factory=list)
    pid: int = 0
    stage: Any = None            # StageRecord of the child's own work (child only)
    write_start_ns: int = 0      # writing the DFX files
    write_end_ns: int = 0


def run_device(program: Any, host_tensors: dict[str, Any], s: DeviceSettings) -> DeviceOutcome:
    """Execute `program` on a fresh simulated device; outputs land in `host_tensors`."""
    layout = DeviceLayout.build(s.num_aic_cores, s.num_aiv_cores, s.num_sched_threads)
    device = SimulatedDevice(layout, s.clock_freq_hz, s.level, s.runtime, s.dep_gen, s.drift_ppm,
                             timing=s.timing)
    try:
        run = device.execute(program, host_tensors)
    except (DeviceExecutionError, PyptoError) as e:
        return DeviceOutcome(str(e), host_tensors, pid=os.getpid())
    t0 = _pc()
    files = []
    error = run.error
    # also after a failure: what was recorded helps debugging. Tagged tasks (timing slots)
    # are their own switch, as in Simpler: their spans are in the host log.
    if s.level >= 1 or s.dep_gen or run.task_slots:
        try:
            files = _write_dfx(run, program, s)
        except (PyptoError, OSError) as e:
            error = (error + "; " if error else "") + f"DFX outputs not written: {e}"
    return DeviceOutcome(error, host_tensors, len(run.graph.tasks), run.start_ns, run.end_ns,
                         files, os.getpid(), None, t0, _pc())


DFX_MANIFEST = ".pypto_dfx_outputs"     # lists the files one simulated run wrote there


def _ours(name: str) -> bool:
    """The names a simulated run writes into `dfx_outputs/` (a directory without a manifest,
    written before there was one)."""
    return file_kind(name) in ("records", "deps", "name_map", "run_log")


def _write_dfx(run: Any, program: Any, s: DeviceSettings) -> list[str]:
    """This run's DFX files, as the whole of `dfx_dir`: written into a staging directory and
    put in its place, so an earlier run's files (its host log above all) never stay beside
    the new capture, where the merge would take them for this run's. A `dfx_dir` holding
    files no simulated run wrote is not replaced (one line, nothing deleted)."""
    target = Path(s.dfx_dir)
    stage = stage_beside(target)
    try:
        with writing_into(stage, target):
            names = [p.name for p in write_dfx_outputs(
                run, stage, level=s.level, dep_gen=s.dep_gen, case_name=s.case_name,
                kernels=program.kernels, not_simulated=s.not_simulated,
                orchestration_name=getattr(program, "orchestration_name", None))]
            names.append(write_host_log(run, stage, getattr(program, "name", None) or s.case_name,
                                        device_id=s.device_id, queue=s.host_log_queue).name)
            write_manifest(stage, DFX_MANIFEST, "pypto simulated device: the DFX outputs of one run")
            replace_owned(stage, target, DFX_MANIFEST, _ours, "a simulated run's dfx_outputs",
                          unmarked=True)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    return [str(target / n) for n in names]


# -- child process ---------------------------------------------------------------------------

@dataclass
class ChildRequest:
    program_dir: str | None       # load with pypto.codegen.load_compiled(program_dir)
    program: Any                  # or this picklable LoadedProgram
    tensors: dict[str, Any]
    settings: DeviceSettings


def run_device_in_child(request: ChildRequest, timeout: float | None = None) -> DeviceOutcome:
    """Run the device in a child Python process; returns its outcome (with its StageRecord)."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
    proc = subprocess.run([sys.executable, "-m", "pypto.runtime.device_process"], input=data,
                          capture_output=True, env=env,
                          timeout=timeout, check=False)
    if proc.returncode != 0 or not proc.stdout:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        return DeviceOutcome(f"device process failed (exit {proc.returncode}): "
                             + (" | ".join(tail) or "no output"), request.tensors)
    outcome: DeviceOutcome = pickle.loads(proc.stdout)
    for k, v in outcome.outputs.items():  # copy results into the caller's arrays
        dst = request.tensors.get(k)
        if hasattr(dst, "shape") and hasattr(v, "shape"):
            dst[...] = v
    outcome.outputs = request.tensors
    return outcome


def _child_main() -> int:
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries only the pickled outcome
    request: ChildRequest = pickle.loads(sys.stdin.buffer.read())
    from pypto.compile_profiling import StageRecord

    start = _pc()
    t_load0 = _pc()
    if request.program_dir is not None:
        from pypto.codegen import load_compiled

        program = load_compiled(request.program_dir)
    else:
        program = request.program
    t_load1 = _pc()
    outcome = run_device(program, request.tensors, request.settings)
    end = _pc()
    me = threading.current_thread().name
    tid = threading.get_native_id()

    def rec(name: str, a: int, b: int, children=(), args=None) -> StageRecord:
        return StageRecord(name, a / 1e9, b / 1e9, list(children), start_ns=a, end_ns=b,
                           pid=os.getpid(), tid=tid, thread_name=me, cat="device", args=args)

    children = [rec("load_program", t_load0, t_load1)]
    if outcome.start_ns:
        children.append(rec("simulate", outcome.start_ns, outcome.end_ns,
                            args={"tasks": outcome.task_count}))
        if outcome.files:
            children.append(rec("write_dfx_outputs", outcome.write_start_ns,
                                outcome.write_end_ns, args={"files": len(outcome.files)}))
    outcome.stage = rec("device_process", start, end, children,
                        args={"pid": os.getpid(), "tasks": outcome.task_count,
                              "error": outcome.error})
    # only outputs travel back
    outcome.outputs = {k: v for k, v in outcome.outputs.items() if hasattr(v, "shape")}
    out.write(pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))
    out.flush()
    return 0


if __name__ == "__main__":  # run via the imported module so pickled classes resolve by name
    from pypto.runtime import device_process as _module  # noqa: PLW0406

    sys.exit(_module._child_main())


__all__ = ["ChildRequest", "DeviceOutcome", "DeviceSettings", "run_device",
           "run_device_in_child"]
