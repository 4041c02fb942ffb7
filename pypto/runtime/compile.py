"""`ir.compile`: pass pipeline then codegen, with profiling and IR dumps as opt-ins.

Does not record a `compile` stage itself (the runtime's `run` wraps it in one).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator

from pypto.compile_profiling import CompileProfiler, get_active_profiler
from pypto.compile_profiling.report_location import log_report_location
from pypto.errors import CompileError
from pypto.ir_core.nodes import Program
from pypto.ir_core.pass_manager import DumpInstrument, PassManager, ProfilingInstrument
from pypto.runtime.compiled_program import CompiledProgram

log = logging.getLogger(__name__)


@contextlib.contextmanager
def profiler_for(enabled: bool) -> Iterator[tuple[CompileProfiler | None, bool]]:
    """(the profiler a compile or a run records into, whether it is the block's own): the
    active one (explicit or from the environment); else, when `enabled`, a new one, active
    for the block and ended with it; else None."""
    prof = get_active_profiler()
    if prof is not None or not enabled:
        yield prof, False
        return
    with CompileProfiler() as own:
        yield own, True


def default_output_dir(program_name: str) -> str:
    stamp = time.strftime("%Y%m%d_%H%M%S") + f"_{time.time_ns() % 1_000_000_000:09d}"
    return os.path.join("build_output", f"{program_name}_{stamp}")


def compile_program(program: Program, output_dir: str | None = None, profiling: bool = False,
                    dump_passes: bool = False, passes: list | None = None,
                    codegen_workers: int | None = None, work_dir: str | None = None,
                    platform: str = "a2a3sim") -> CompiledProgram:
    """Lower `program` and write its code to `output_dir`; returns the directory as a
    `CompiledProgram` (a `str`, callable with the program's tensors; `work_dir` and
    `platform` are where and on what its calls run by default).

    With `profiling=True` a profiler is created for the call unless one is active, and the
    report goes to `<output_dir>/report/`, also when a pass or codegen fails (then the error
    propagates). An active profiler (explicit or from the environment) always records.
    """
    from pypto.codegen.driver import generate

    if not isinstance(program, Program):
        raise CompileError(f"ir.compile expects the Program a @pl.program class becomes, "
                           f"got {type(program).__name__}")
    out = os.fspath(output_dir) if output_dir is not None else default_output_dir(program.name)
    os.makedirs(out, exist_ok=True)
    prof, failed = None, True
    try:
        with profiler_for(profiling) as (prof, _):
            instruments = []
            if prof is not None:
                instruments.append(ProfilingInstrument(prof))
            if dump_passes:
                instruments.append(DumpInstrument(os.path.join(out, "passes_dump")))
            lowered = PassManager(passes, instruments).run(program)
            generate(lowered, out, profiler=prof, max_workers=codegen_workers)
        failed = False
    finally:
        if profiling and prof is not None:
            report = os.path.join(out, "report")
            try:
                prof.write_report(report)
            except Exception as exc:
                if not failed:
                    raise
                log.warning("compile profile not written after a failed compile: %s", exc)
            else:
                log_report_location(report)
    return CompiledProgram(out, program, work_dir=work_dir, platform=platform)
