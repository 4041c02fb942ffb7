"""`run()`: compile a program, compute the golden reference, execute on the simulated device,
compare, and (when asked) profile the whole trip and write Simpler-format DFX files.

Stages when profiled: `compile` (wrapping `ir.compile`, whose `passes`/`codegen` nest
inside, then `load_compiled`, importing the generated kernel modules), `golden_write`,
`device_execution` (with the child's own stage under it when the device runs in a child
process). The first call's imports are `import:<module>` stages (see
`compile_profiling.import_stages`).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from pypto.compile_profiling import CompileProfiler, get_active_profiler
from pypto.compile_profiling.foundation.atomic_io import atomic_writer, ensure_dir
from pypto.compile_profiling.report_location import log_report_location
from pypto.errors import PyptoError, RuntimeConfigError
from pypto.runtime.config import RunConfig, RunResult
from pypto.runtime.device_process import (
    ChildRequest,
    DeviceSettings,
    run_device,
    run_device_in_child,
)
from pypto.runtime.tensors import (
    check_specs,
    compare_outputs,
    create_tensors,
    normalize_specs,
    signature_of,
)

log = logging.getLogger(__name__)

DFX_DIR = "dfx_outputs"
REPORT_DIR = "report"
GOLDEN_DIR = "golden"


def _is_compiled(program: Any) -> bool:
    return callable(getattr(program, "build_tasks", None)) and isinstance(
        getattr(program, "kernels", None), dict)


def program_name(program: Any) -> str:
    name = getattr(program, "name", None)
    return name if isinstance(name, str) and name else type(program).__name__


def run(program: Any, tensor_specs: Any, golden: Any, config: RunConfig | None = None) -> RunResult:
    """Compile `program`, run it on the simulated device, and check it against `golden`.

    `program`: a `@pl.program` (compiled here with `ir.compile`) or an already compiled
    `LoadedProgram`. `golden(tensors, params)` writes the expected outputs in place.
    Bad configs or specs raise `RuntimeConfigError` before anything runs; failures of the
    compiler, the golden function or a kernel come back as `passed=False` with `error`.
    """
    t_begin = time.perf_counter()
    config = config if config is not None else RunConfig()
    if not isinstance(config, RunConfig):
        raise RuntimeConfigError(f"config must be a RunConfig, got {type(config).__name__}")
    if not callable(golden):
        raise RuntimeConfigError(f"golden must be callable golden(tensors, params), got "
                                 f"{type(golden).__name__}")
    specs = normalize_specs(tensor_specs)
    name = program_name(program)
    signature = signature_of(program)
    if signature is not None:
        check_specs(specs, signature, name)
    work_dir = _work_dir(config, name)

    prof = get_active_profiler()
    own = None
    if prof is None and config.compile_profiling:
        own = prof = CompileProfiler()
        own.__enter__()
    try:
        result = _run(program, specs, golden, config, name, work_dir, prof)
    finally:
        if own is not None:
            own.__exit__(None, None, None)
    result.execution_time = time.perf_counter() - t_begin
    if prof is not None:
        result.profile = prof.to_dict()
        try:
            prof.write_report(work_dir / REPORT_DIR)
        except PyptoError as e:
            log.warning("profile report not written: %s", e)
            result.error = (result.error + "; " if result.error else "") + \
                f"profile report not written: {e}"
        else:
            log_report_location(work_dir / REPORT_DIR)
    return result


def _work_dir(config: RunConfig, name: str) -> Path:
    if config.work_dir:
        d = Path(config.work_dir)
    elif config.save_kernels_dir:
        d = Path(config.save_kernels_dir)
    else:
        stamp = datetime.now().strftime("%Y%m%d_%H%M%S_%f")
        d = Path("build_output") / f"{name}_{stamp}"
    try:
        return ensure_dir(d).resolve()
    except PyptoError as e:
        raise RuntimeConfigError(str(e)) from e


def _stage(prof: CompileProfiler | None, name: str, args: dict | None = None,
           cat: str | None = None):
    return prof.stage(name, args, cat) if prof is not None else contextlib.nullcontext()


def _run(program: Any, specs, golden, config: RunConfig, name: str, work_dir: Path,
         prof: CompileProfiler | None) -> RunResult:
    kernels_dir: Path | None = None
    temp_kernels = False
    try:
        # 1. compile
        if _is_compiled(program):
            compiled = program
        else:
            if config.save_kernels:
                kernels_dir = Path(config.save_kernels_dir or work_dir / "kernels")
                ensure_dir(kernels_dir)
            else:
                kernels_dir = Path(tempfile.mkdtemp(prefix="kernels_", dir=work_dir))
                temp_kernels = True
            try:
                with _stage(prof, "compile", {"program": name}, "compile"):
                    from pypto import ir
                    from pypto.codegen import load_compiled

                    out = ir.compile(program, output_dir=str(kernels_dir),
                                     **config.compile_options)
                    kernels_dir = Path(out) if isinstance(out, (str, Path)) else kernels_dir
                    # importing the generated kernel modules: one per kernel, not free
                    with _stage(prof, "load_compiled", None, "compile"):
                        compiled = load_compiled(kernels_dir)
            except PyptoError as e:
                return RunResult(False, f"compile failed: {e}", work_dir=str(work_dir))
        signature = signature_of(compiled)
        if signature is not None:
            check_specs(specs, signature, name)

        # 2. tensors and golden reference
        tensors, params = create_tensors(specs)
        outputs = [s.name for s in specs if s.is_output]
        try:
            with _stage(prof, "golden_write", {"outputs": outputs}):
                expected = _golden(golden, tensors, params, outputs, work_dir / GOLDEN_DIR)
        except _GoldenFailed as e:
            return RunResult(False, str(e), work_dir=str(work_dir))

        # 3. device
        settings = DeviceSettings(config.num_aic_cores, config.num_aiv_cores,
                                  config.num_sched_threads, config.clock_freq_hz,
                                  config.swimlane_level, config.runtime, config.enable_dep_gen,
                                  str(work_dir / DFX_DIR), config.case_name or name)
        dev_args = {"platform": config.platform, "runtime": config.runtime,
                    "chip_swimlane_level": config.swimlane_level,
                    "device_process": config.device_process}
        with _stage(prof, "device_execution", dev_args, "device"):
            t0 = time.perf_counter()
            if config.device_process:
                req = ChildRequest(str(kernels_dir) if kernels_dir is not None else None,
                                   None if kernels_dir is not None else compiled, tensors,
                                   settings)
                outcome = run_device_in_child(req)
                if outcome.stage is not None and prof is not None:
                    prof.set_process_name(outcome.pid, "PyPTO simulated device")
                    prof.add_stage_record(outcome.stage)
            else:
                outcome = run_device(compiled, tensors, settings)
            device_time = time.perf_counter() - t0
        if outcome.error is not None:
            return RunResult(False, f"device execution failed: {outcome.error}",
                             work_dir=str(work_dir), device_time=device_time)

        # 4. check
        actual = {k: tensors[k] for k in outputs}
        error = compare_outputs(actual, expected, outputs, config.rtol, config.atol)
        return RunResult(error is None, error, work_dir=str(work_dir), device_time=device_time,
                         outputs=actual)
    finally:
        if temp_kernels and kernels_dir is not None:
            shutil.rmtree(kernels_dir, ignore_errors=True)


class _GoldenFailed(Exception):
    pass


def _golden(golden, tensors: dict, params: dict, outputs: list[str], out_dir: Path) -> dict:
    """Run `golden` on copies of the inputs; write inputs and expected outputs as .npy files."""
    ref = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in tensors.items()}
    try:
        golden(ref, dict(params))
    except Exception as e:
        raise _GoldenFailed(f"golden raised {type(e).__name__}: {e}") from e
    for k in outputs:
        problem = _golden_output_problem(ref.get(k, _MISSING), tensors[k])
        if problem:
            raise _GoldenFailed(f"golden output {k!r}: {problem}")
    try:
        ensure_dir(out_dir)
        for k, v in tensors.items():
            if isinstance(v, np.ndarray) and k not in outputs:
                _save_npy(out_dir / f"{k}.npy", v)
        for k in outputs:
            _save_npy(out_dir / f"{k}_golden.npy", ref[k])
    except PyptoError as e:
        raise _GoldenFailed(f"golden files not written: {e}") from e
    return {k: ref[k] for k in outputs}


_MISSING = object()


def _golden_output_problem(value: Any, tensor: np.ndarray) -> str | None:
    """Why the golden's value for an output cannot be compared with the device's, or None.
    (`golden` should write the outputs in place; replacing one is fine if it still fits.)"""
    want = f"a {tensor.dtype} array of shape {tensor.shape}"
    if value is _MISSING:
        return f"removed by golden (expected {want})"
    if not isinstance(value, np.ndarray):
        return f"expected {want}, got {type(value).__name__}"
    if value.shape != tensor.shape:
        return f"expected {want}, got shape {value.shape}"
    if value.dtype.kind not in "biuf":
        return f"expected {want}, got dtype {value.dtype}"
    return None


def _save_npy(path: Path, arr: np.ndarray) -> None:
    with atomic_writer(path, "wb") as f:
        np.save(f, arr, allow_pickle=False)
