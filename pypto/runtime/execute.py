"""One execution of a compiled program on a fresh simulated device, shared by `run` and a
`CompiledProgram`'s call: the `device_execution` stage, settings the simulator cannot honour
noted once, the device in this process or a child."""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import Any

from pypto.compile_profiling import CompileProfiler
from pypto.runtime.config import NOT_SIMULATED, RunConfig
from pypto.runtime.device_process import (
    ChildRequest,
    DeviceSettings,
    run_device,
    run_device_in_child,
)

log = logging.getLogger(__name__)

DFX_DIR = "dfx_outputs"


def stage_or_none(prof: CompileProfiler | None, name: str, args: dict | None = None,
           cat: str | None = None):
    return prof.stage(name, args, cat) if prof is not None else contextlib.nullcontext()


_noted: set[str] = set()      # NOT_SIMULATED settings noted in this process


def note_not_simulated(config: RunConfig) -> dict:
    """Log each setting the simulator cannot honour, once per process; returns them all."""
    asked = config.not_simulated
    for k, v in asked.items():
        if k not in _noted:
            _noted.add(k)
            log.warning("RunConfig(%s=%r): the simulated device produces no %s; accepted and "
                        "recorded as not_simulated", k, v, NOT_SIMULATED[k])
    return asked


def execute_on_device(program: Any, tensors: dict, config: RunConfig, work_dir: Path, name: str,
                      prof: CompileProfiler | None, kernels_dir: str | None = None):
    """One execution on a fresh simulated device (in this process or a child): outputs land in
    `tensors`; `device_execution` stage. Returns (DeviceOutcome, device seconds)."""
    not_simulated = note_not_simulated(config)
    settings = DeviceSettings(config.num_aic_cores, config.num_aiv_cores,
                              config.num_sched_threads, config.clock_freq_hz,
                              config.swimlane_level, config.runtime, config.enable_dep_gen,
                              str(work_dir / DFX_DIR), config.case_name or name,
                              device_id=config.device_id, not_simulated=not_simulated,
                              host_log_queue=config.host_log_queue,
                              timing=(config.device_timing, config.timing_jitter,
                                      config.timing_seed, config.scheduler_costs))
    dev_args = {"platform": config.platform, "runtime": config.runtime,
                "chip_swimlane_level": config.swimlane_level,
                "device_process": config.device_process, "device_id": config.device_id,
                "device_timing": config.device_timing}
    if not_simulated:
        dev_args["not_simulated"] = not_simulated
    with stage_or_none(prof, "device_execution", dev_args, "device"):
        t0 = time.perf_counter()
        if config.device_process:
            req = ChildRequest(kernels_dir, None if kernels_dir is not None else program,
                               tensors, settings)
            outcome = run_device_in_child(req)
            if outcome.stage is not None and prof is not None:
                prof.set_process_name(outcome.pid, "PyPTO simulated device")
                prof.add_stage_record(outcome.stage)
        else:
            outcome = run_device(program, tensors, settings)
        device_time = time.perf_counter() - t0
    return outcome, device_time
