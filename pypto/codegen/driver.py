"""Codegen driver: kernels in parallel on a thread pool, then the orchestration and the config.

Profiled as a `codegen` stage with one `kernel_codegen:<kernel>` child per kernel (recorded on
the pool worker that ran it, bound under `codegen`), each with `kernel_source` and
`kernel_executable` children, and an `orchestration_codegen` child. Upstream's names where
the step is the same (docs/reports.md maps upstream's `ir_to_mlir` and `ptoas`).
"""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor

from pypto.codegen.common import core_type, param_specs, returned_param
from pypto.codegen.cost_model import kernel_cycles
from pypto.codegen.kernel_cpp import cpp_kernel_source
from pypto.codegen.kernel_numpy import numpy_kernel_source
from pypto.codegen.orchestration import cpp_orchestration_source, python_orchestration_source
from pypto.compile_profiling import CompileProfiler, get_active_profiler
from pypto.compile_profiling.foundation.atomic_io import atomic_write_text
from pypto.errors import CompileError
from pypto.ir_core.nodes import Function, Program

log = logging.getLogger(__name__)

WORKERS_ENV = "PYPTO_CODEGEN_MAX_WORKERS"

CONFIG_FILE = "kernel_config.json"


def codegen_workers(requested: int | None = None) -> int:
    """Pool size: `requested`, else $PYPTO_CODEGEN_MAX_WORKERS, else min(8, CPUs)."""
    if requested is None:
        raw = os.environ.get(WORKERS_ENV, "").strip()
        if not raw:
            return min(8, os.cpu_count() or 1)
        try:
            requested = int(raw)
        except ValueError:
            raise CompileError(f"{WORKERS_ENV}={raw!r} is not a positive integer") from None
    if requested < 1:
        raise CompileError(f"codegen workers must be a positive integer, got {requested}")
    return requested


def _write_kernel(output_dir: str, program_name: str, func_id: int, func: Function,
                  prof: CompileProfiler | None = None) -> dict:
    """Generate and write one kernel's C++ and NumPy sources; returns its config entry.

    Profiled as two children of its `kernel_codegen:<kernel>`:
    `kernel_source` (the PTO-ISA C++ text) and `kernel_executable` (the simulator's kernel).
    """
    kernels = os.path.join(output_dir, "kernels")
    for stage, generate, suffix in (("kernel_source", cpp_kernel_source, "cpp"),
                                    ("kernel_executable", numpy_kernel_source, "py")):
        if prof is None:
            atomic_write_text(os.path.join(kernels, f"{func.name}.{suffix}"),
                              generate(func, program_name))
            continue
        with prof.stage(stage, None, "codegen"):
            atomic_write_text(os.path.join(kernels, f"{func.name}.{suffix}"),
                              generate(func, program_name))
    return {"func_id": func_id, "name": func.name, "core_type": core_type(func),
            "source": f"kernels/{func.name}.cpp", "executable": f"kernels/{func.name}.py",
            "params": param_specs(func), "modelled_cycles": kernel_cycles(func)}


def generate(program: Program, output_dir: str, profiler: CompileProfiler | None = None,
             max_workers: int | None = None) -> dict:
    """Write kernels, orchestration and kernel_config.json for a lowered program; returns the config.

    `profiler` defaults to the active one; pass it when the caller already looked it up.
    """
    prof = profiler if profiler is not None else get_active_profiler()
    kernels = program.kernels
    workers = min(codegen_workers(max_workers), max(1, len(kernels)))
    os.makedirs(os.path.join(output_dir, "kernels"), exist_ok=True)

    def one(func_id: int, func: Function) -> dict:
        if prof is None:
            return _write_kernel(output_dir, program.name, func_id, func)
        with prof.stage(f"kernel_codegen:{func.name}", {"func_id": func_id}, "codegen"):
            return _write_kernel(output_dir, program.name, func_id, func, prof)

    if prof is not None:
        prof._begin_stage("codegen", {"kernels": len(kernels), "workers": workers}, "codegen")
    try:
        if workers == 1:
            entries = [one(i, f) for i, f in enumerate(kernels)]
        else:
            # bound: each worker's kernel_codegen stage nests under `codegen`, on its own lane
            task = one if prof is None else prof.bind(one)
            with ThreadPoolExecutor(workers, thread_name_prefix="pypto-codegen") as pool:
                entries = list(pool.map(task, range(len(kernels)), kernels))
        if prof is None:
            config = _write_orchestration(program, output_dir, entries)
        else:
            with prof.stage("orchestration_codegen", None, "codegen"):
                config = _write_orchestration(program, output_dir, entries)
    except BaseException as exc:
        if prof is not None:
            prof._end_stage(error=type(exc).__name__)
        raise
    if prof is not None:
        prof._end_stage()
    log.debug("codegen wrote %d kernels to %s", len(kernels), output_dir)
    return config


def _write_orchestration(program: Program, output_dir: str, entries: list[dict]) -> dict:
    orch = program.orchestration
    kernels = {f.name: f for f in program.kernels}
    returns = {name: returned_param(f) for name, f in kernels.items()}
    func_ids = {e["name"]: e["func_id"] for e in entries}
    directions = {name: [p.direction for p in f.params] for name, f in kernels.items()}
    atomic_write_text(os.path.join(output_dir, "orchestration.py"),
                      python_orchestration_source(orch, program.name, returns))
    atomic_write_text(os.path.join(output_dir, "orchestration.cpp"),
                      cpp_orchestration_source(orch, program.name, func_ids, directions, returns))
    config = {
        "program": program.name,
        "orchestration": {"name": orch.name, "source": "orchestration.cpp",
                          "executable": "orchestration.py", "params": param_specs(orch)},
        "kernels": entries,
    }
    atomic_write_text(os.path.join(output_dir, CONFIG_FILE), json.dumps(config, indent=2) + "\n")
    return config
