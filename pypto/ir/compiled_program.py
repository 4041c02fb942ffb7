"""What `ir.compile` returns: the output directory, callable with the program's tensors.

As upstream's `CompiledProgram`, `compiled(a, b, f)` runs the program on the (simulated)
device with `f` written in place, `f = compiled(a, b)` allocates the outputs and returns them
(when the orchestration function returns a value), and `compiled(..., config=RunConfig(...))`
chooses the platform, swimlane level and so on per call. It is also the output directory
itself, a `str`, as our `ir.compile` returned before: `os.path.join(compiled, "kernels")`,
`load_compiled(compiled)` and `compiled == "build_output/..."` keep working.

The runtime is imported at the first call only, so compiling never loads it.
"""

from __future__ import annotations

import os
from typing import Any

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
            from pypto.codegen import load_compiled

            self._loaded = load_compiled(self.output_dir)
        return self._loaded

    def __call__(self, *args: Any, config: Any = None) -> Any:
        """Run the program with `args` (NumPy arrays, or torch CPU tensors, and scalars, in
        the orchestration's parameter order). Returns None when every parameter was given
        (outputs written in place), else the outputs it allocated (one, or a tuple)."""
        from pypto.runtime.runner import call_compiled

        return call_compiled(self, args, config)


def _rebuild(output_dir: str, program: Any, work_dir: str, platform: str) -> CompiledProgram:
    return CompiledProgram(output_dir, program, work_dir=work_dir, platform=platform)
