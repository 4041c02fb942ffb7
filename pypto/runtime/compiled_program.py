"""What `ir.compile` returns: the output directory, callable with the program's tensors.

As upstream's `CompiledProgram`, `compiled(a, b, f)` runs the program on the (simulated)
device with `f` written in place, `f = compiled(a, b)` allocates the outputs and returns them
(when the orchestration function returns a value), and `compiled(..., config=RunConfig(...))`
chooses the platform, swimlane level and so on per call. It is also the output directory
itself, a `str`, as our `ir.compile` returned before: `os.path.join(compiled, "kernels")`,
`load_compiled(compiled)` and `compiled == "build_output/..."` keep working.

A call binds the arguments and executes on a fresh simulated device (`runtime.execute`);
the loader and the device are imported at the first call, so compiling never loads them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pypto.errors import ExecutionError

__all__ = ["CompiledProgram"]


class CompiledProgram(str):
    """The output directory of one compile, callable (see the module docstring).

    `program`: the lowered `ir.Program`; `work_dir`: where a call writes `dfx_outputs/` and
    reports (default: the output directory); `platform`: the default platform of calls made
    without a config.
    """


    def __new__(cls, output_dir: str | os.PathLike, program: Any = None, *,
                work_dir: str | os.PathLike | None = None, platform: str = "a2a3sim"):
        self = super().__new__(cls, os.fspath(output_dir))
        self.program = program
        self.work_dir = os.fspath(work_dir) if work_dir is not None else str.__str__(self)
        self.platform = platform
        self._loaded = None
        return self

    @property
    def output_dir(self) -> str:
        return str.__str__(self)

    def __fspath__(self) -> str:
        return str.__str__(self)

    def __reduce__(self):  # pickled as what it is, not as a plain str
        return (_rebuild, (str.__str__(self), self.program, self.work_dir, self.platform))

    def load(self):
        """The generated kernels and orchestration imported (once): a `LoadedProgram`."""
        if self._loaded is None:
            from pypto.codegen.loader import load_compiled

            self._loaded = load_compiled(self.output_dir)
        return self._loaded

    def __call__(self, *args: Any, config: Any = None) -> Any:
        """Run the program with `args` (NumPy arrays, or torch CPU tensors, and scalars, in
        the orchestration's parameter order). Returns None when every parameter was given
        (outputs written in place), else the outputs it allocated (one, or a tuple)."""
        return call_compiled(self, args, config)


def _rebuild(output_dir: str, program: Any, work_dir: str, platform: str) -> CompiledProgram:
    return CompiledProgram(output_dir, program, work_dir=work_dir, platform=platform)


def call_compiled(compiled: CompiledProgram, args: tuple, config: Any) -> Any:
    """`compiled(*args, config=...)`: bind the arguments, execute on the simulated device
    (recorded as `device_execution` when a profiler is active), return what was allocated."""
    from pypto.compile_profiling import get_active_profiler
    from pypto.compile_profiling.foundation.atomic_io import ensure_dir
    from pypto.runtime.call_args import bind_call
    from pypto.runtime.config import RunConfig, checked_config
    from pypto.runtime.execute import execute_on_device
    from pypto.runtime.tensors import Param

    config = checked_config(config if config is not None
                             else RunConfig(platform=compiled.platform))
    loaded = compiled.load()
    name = loaded.name
    program = compiled.program
    returns_value = bool(getattr(getattr(program, "orchestration", None), "return_types",
                                 None) or getattr(getattr(program, "orchestration", None),
                                                  "returns", None))
    params = [Param(p.name, p.shape, p.dtype, p.direction) for p in loaded.params]
    bound = bind_call(args, params, returns_value or program is None, name)
    work_dir = ensure_dir(Path(compiled.work_dir))
    outcome, _ = execute_on_device(loaded, bound.tensors, config, work_dir, name,
                                   get_active_profiler(), compiled.output_dir)
    if outcome.error is not None:
        raise ExecutionError(f"{name}: device execution failed: {outcome.error}")
    if bound.returned is None:
        return None
    return bound.returned[0] if len(bound.returned) == 1 else tuple(bound.returned)
