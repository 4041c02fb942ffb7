"""PassManager: runs named passes in order and lets instruments observe each one.

Instruments are how profiling and IR dumps hook in (as upstream's CallbackInstrument), so no
pass carries timing or dumping code of its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from pypto.ir_core.nodes import Program
from pypto.ir_core.pass_base import Pass
from pypto.ir_core.printer import print_program
from pypto.ir_core.visit import program_size


class PassInstrument:
    """Callbacks around a pass pipeline; override what you need."""

    def run_begin(self, program: Program) -> None: ...
    def before_pass(self, p: Pass, program: Program) -> None: ...
    def after_pass(self, p: Pass, program: Program) -> None: ...
    def pass_failed(self, p: Pass, exc: BaseException) -> None: ...
    def run_end(self, program: Program, exc: BaseException | None) -> None: ...


class CallbackInstrument(PassInstrument):
    """Plain callables before and after each pass: `before(pass, program)`, `after(pass, program)`."""

    def __init__(self, before: Callable[[Pass, Program], None] | None = None,
                 after: Callable[[Pass, Program], None] | None = None):
        self._before, self._after = before, after

    def before_pass(self, p: Pass, program: Program) -> None:
        if self._before:
            self._before(p, program)

    def after_pass(self, p: Pass, program: Program) -> None:
        if self._after:
            self._after(p, program)


class ProfilingInstrument(PassInstrument):
    """Records a `passes` stage with one child per pass; args carry IR sizes before/after."""

    def __init__(self, profiler):
        self.prof = profiler
        # (program, size) of the last program sized: a pass's output is the next one's input
        self._size_of: tuple[Program | None, int] = (None, 0)

    def _size(self, program: Program) -> int:
        if self._size_of[0] is not program:
            self._size_of = (program, program_size(program))
        return self._size_of[1]

    def run_begin(self, program: Program) -> None:
        self.prof._begin_stage("passes", {"program": program.name, "ir_size": self._size(program)})

    def before_pass(self, p: Pass, program: Program) -> None:
        self.prof._begin_stage(p.name, {"ir_size_before": self._size(program)}, "pass")

    def after_pass(self, p: Pass, program: Program) -> None:
        self.prof._end_stage({"ir_size_after": self._size(program)})

    def pass_failed(self, p: Pass, exc: BaseException) -> None:
        self.prof._end_stage(error=type(exc).__name__)

    def run_end(self, program: Program, exc: BaseException | None) -> None:
        if exc is None:
            self.prof._end_stage()
        else:
            self.prof._end_stage(error=type(exc).__name__)


class DumpInstrument(PassInstrument):
    """Writes the IR before the first pass (`00_Input.txt`) and after each (`NN_<Pass>.txt`)."""

    def __init__(self, dump_dir: str):
        self.dump_dir = dump_dir
        self.index = 0

    def _write(self, label: str, program: Program) -> None:
        from pypto.compile_profiling.foundation.atomic_io import atomic_write_text

        os.makedirs(self.dump_dir, exist_ok=True)
        path = os.path.join(self.dump_dir, f"{self.index:02d}_{label}.txt")
        atomic_write_text(path, print_program(program))

    def run_begin(self, program: Program) -> None:
        self._write("Input", program)

    def after_pass(self, p: Pass, program: Program) -> None:
        self.index += 1
        self._write(p.name, program)


class PassManager:
    """Runs `passes` in order on a program, calling every instrument around each pass."""

    def __init__(self, passes: Sequence[Pass] | None = None,
                 instruments: Sequence[PassInstrument] = ()):
        if passes is None:
            from pypto.ir_core.passes import default_pipeline

            passes = default_pipeline()
        self.passes = list(passes)
        self.instruments = list(instruments)

    def run(self, program: Program) -> Program:
        inst = self.instruments
        for i in inst:
            i.run_begin(program)
        try:
            for p in self.passes:
                for i in inst:
                    i.before_pass(p, program)
                try:
                    result = p(program)
                except BaseException as exc:
                    for i in reversed(inst):
                        i.pass_failed(p, exc)
                    raise
                for i in reversed(inst):
                    i.after_pass(p, result)
                program = result
        except BaseException as exc:
            for i in reversed(inst):
                i.run_end(program, exc)
            raise
        for i in reversed(inst):
            i.run_end(program, None)
        return program
