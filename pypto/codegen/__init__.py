"""Code generation: C++-like kernel/orchestration sources, kernel_config.json, and the NumPy
executable form with its loader (`load_compiled`)."""

from pypto.codegen.driver import WORKERS_ENV, codegen_workers, generate
from pypto.codegen.loader import (
    CompiledKernel,
    LoadedProgram,
    ParamSpec,
    TaskCall,
    load_compiled,
)

__all__ = [
    "WORKERS_ENV", "CompiledKernel", "LoadedProgram", "ParamSpec", "TaskCall",
    "codegen_workers", "generate", "load_compiled",
]
