"""`run()`: compile a program and run it on the simulated device, in upstream's two forms.

- `run(program, *tensors, config=None)` (upstream today): compiles, runs when tensors are
  given (outputs written into them), and returns the `CompiledProgram`, which can be called
  again with new tensors (`compiled(*tensors, config=...)`, `call_compiled`).
- `run(program, tensor_specs, golden, config=None)` (the golden-checking form): creates the
  tensors from the specs, computes the golden reference, executes and compares; returns a
  `RunResult`.

Stages when profiled (`RunConfig(compile_profiling=True)`, or any active profiler):
`compile` (wrapping `ir.compile`, whose `passes`/`codegen` nest inside), `load_compiled`
(importing the generated kernel modules), `golden_write` (golden form), `device_execution`
(with the child's own stage under it when the device runs in a child process). The first
call's imports are `import:<module>` stages (see `compile_profiling.import_stages`).
Settings the simulator cannot honour (`config.NOT_SIMULATED`) are recorded and noted once.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from pypto.compile_profiling import CompileProfiler
from pypto.compile_profiling.foundation.atomic_io import atomic_writer, ensure_dir
from pypto.compile_profiling.report_location import log_report_location
from pypto.errors import PyptoError, RuntimeConfigError, RuntimeConfigTypeError
from pypto.runtime.compile import compile_program, profiler_for
from pypto.runtime.compiled_program import CompiledProgram, call_compiled
from pypto.runtime.config import RunConfig, RunResult, TensorSpec, checked_config
from pypto.runtime.execute import execute_on_device, stage_or_none
from pypto.runtime.tensors import (
    check_specs,
    compare_outputs,
    create_tensors,
    normalize_specs,
    signature_of,
)

log = logging.getLogger(__name__)

REPORT_DIR = "report"
GOLDEN_DIR = "golden"


def _is_compiled(program: Any) -> bool:
    return callable(getattr(program, "build_tasks", None)) and isinstance(
        getattr(program, "kernels", None), dict)


def program_name(program: Any) -> str:
    name = getattr(program, "name", None)
    if isinstance(program, CompiledProgram) and program.program is not None:
        name = getattr(program.program, "name", None)
    return name if isinstance(name, str) and name else type(program).__name__


def _golden_form(args: tuple) -> bool:
    """`run(program, tensor_specs, golden[, config])` positionally: a list of specs, then a
    callable (tensors are never lists, specs never arrays)."""
    if len(args) not in (2, 3) or not isinstance(args[0], (list, tuple)) \
            or not callable(args[1]) or (len(args) == 3 and not isinstance(args[2], RunConfig)):
        return False
    return all(isinstance(s, (TensorSpec, Mapping)) for s in args[0])


def run(program: Any, *args: Any, config: RunConfig | None = None, tensor_specs: Any = None,
        golden: Any = None) -> Any:
    """Compile `program` and run it on the simulated device.

    `run(program, *tensors, config=None)`: NumPy arrays (or torch CPU tensors) and scalars in
    the orchestration's parameter order, or none (compile only); outputs are written into the
    given tensors. Returns the `CompiledProgram`, callable again with new tensors. A failure
    raises (`CompileError`, `ExecutionError`, or a `RuntimeConfigError` for bad arguments).

    `run(program, tensor_specs, golden, config=None)` (also as keywords): the golden-checking
    form, which returns a `RunResult` (see `run_checked`).
    """
    if tensor_specs is not None or golden is not None:
        if len(args) > 1 or (args and not isinstance(args[0], RunConfig)):
            raise RuntimeConfigTypeError("run(program, tensor_specs=..., golden=...) takes no "
                                         "tensors besides them")
        if config is None and args:
            config = args[0]
        return run_checked(program, tensor_specs, golden, config)
    if _golden_form(args):
        cfg = args[2] if len(args) == 3 else config
        return run_checked(program, args[0], args[1], cfg)
    return _run_tensors(program, args, config)


def _run_tensors(program: Any, tensors: tuple, config: RunConfig | None) -> CompiledProgram:
    """Upstream's `run(program, *tensors, config=None)`."""
    config = checked_config(config)
    name = program_name(program)
    if isinstance(program, CompiledProgram):
        work_dir = Path(program.work_dir)
    else:
        work_dir = _work_dir(config, name)
    prof, owned = None, False
    try:
        with profiler_for(config.compile_profiling) as (prof, owned):
            if isinstance(program, CompiledProgram):
                compiled = program
            else:
                out = Path(config.save_kernels_dir) if config.save_kernels_dir \
                    else work_dir / "kernels"
                compiled = _compile(program, config, name, ensure_dir(out), work_dir, prof)
            if tensors and not config.codegen_only:
                call_compiled(compiled, tensors, config)
    finally:
        if owned:
            _write_report(prof, work_dir)
    return compiled


def _compile(program: Any, config: RunConfig, name: str, out: Path, work_dir: Path,
             prof: CompileProfiler | None) -> CompiledProgram:
    """`ir.compile` into `out` (a `compile` stage), then the kernels loaded (`load_compiled`)."""
    with stage_or_none(prof, "compile", {"program": name}, "compile"):
        options = dict(config.compile_options)
        if config.dump_passes:
            options.setdefault("dump_passes", True)
        compiled = compile_program(program, output_dir=str(out), work_dir=str(work_dir),
                                   platform=config.platform, **options)
        # importing the generated kernel modules: one per kernel, not free
        with stage_or_none(prof, "load_compiled", None, "compile"):
            compiled.load()
    return compiled


def run_checked(program: Any, tensor_specs: Any, golden: Any,
                config: RunConfig | None = None) -> RunResult:
    """Compile `program`, run it on the simulated device, and check it against `golden`.

    `program`: a `@pl.program` (compiled here with `ir.compile`) or an already compiled
    program. `golden(tensors, params)` writes the expected outputs in place.
    Bad configs or specs raise `RuntimeConfigError` before anything runs; failures of the
    compiler, the golden function or a kernel come back as `passed=False` with `error`.
    """
    t_begin = time.perf_counter()
    config = checked_config(config)
    if not callable(golden):
        raise RuntimeConfigError(f"golden must be callable golden(tensors, params), got "
                                 f"{type(golden).__name__}")
    if config.codegen_only:
        raise RuntimeConfigError("codegen_only: the golden form has nothing to check without "
                                 "executing; compile only with run(program, config=...)")
    specs = normalize_specs(tensor_specs)
    name = program_name(program)
    signature = signature_of(program)
    if signature is not None:
        check_specs(specs, signature, name)
    work_dir = _work_dir(config, name)

    with profiler_for(config.compile_profiling) as (prof, _):
        result = _run(program, specs, golden, config, name, work_dir, prof)
    result.execution_time = time.perf_counter() - t_begin
    result.not_simulated = config.not_simulated
    if prof is not None:
        result.profile = prof.to_dict()
        problem = _write_report(prof, work_dir)
        if problem:
            result.error = (result.error + "; " if result.error else "") + problem
    return result


def _write_report(prof: CompileProfiler, work_dir: Path) -> str | None:
    """The profile to `<work_dir>/report/` (logged); the problem, when it could not be."""
    try:
        prof.write_report(work_dir / REPORT_DIR)
    except PyptoError as e:
        log.warning("profile report not written: %s", e)
        return f"profile report not written: {e}"
    log_report_location(work_dir / REPORT_DIR)
    return None


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


def _run(program: Any, specs, golden, config: RunConfig, name: str, work_dir: Path,
         prof: CompileProfiler | None) -> RunResult:
    kernels_dir: Path | None = None
    temp_kernels = False
    try:
        # 1. compile
        if isinstance(program, CompiledProgram):
            compiled, kernels_dir = program.load(), Path(program.output_dir)
        elif _is_compiled(program):
            compiled = program
        else:
            if config.save_kernels:
                kernels_dir = Path(config.save_kernels_dir or work_dir / "kernels")
                ensure_dir(kernels_dir)
            else:
                kernels_dir = Path(tempfile.mkdtemp(prefix="kernels_", dir=work_dir))
                temp_kernels = True
            try:
                compiled = _compile(program, config, name, kernels_dir, work_dir, prof).load()
            except PyptoError as e:
                return RunResult(False, f"compile failed: {e}", work_dir=str(work_dir))
        signature = signature_of(compiled)
        if signature is not None:
            check_specs(specs, signature, name)

        # 2. tensors and golden reference
        tensors, params = create_tensors(specs)
        outputs = [s.name for s in specs if s.is_output]
        try:
            with stage_or_none(prof, "golden_write", {"outputs": outputs}):
                expected = _golden(golden, tensors, params, outputs, work_dir / GOLDEN_DIR)
        except _GoldenFailed as e:
            return RunResult(False, str(e), work_dir=str(work_dir))

        # 3. device
        outcome, device_time = execute_on_device(
            compiled, tensors, config, work_dir, name, prof,
            str(kernels_dir) if kernels_dir is not None else None)
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
