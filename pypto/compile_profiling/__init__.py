"""Compile profiling for the PyPTO pipeline: stages, reports, Chrome/Perfetto traces, merging.

Opt in with `PYPTO_COMPILE_PROFILING=1`, `ir.compile(..., profiling=True)`,
`with CompileProfiler() as prof:`, or `RunConfig(compile_profiling=True)`.
"""

from pypto.compile_profiling.profiler import (
    ENV_DIR_VAR,
    ENV_VAR,
    CompileProfiler,
    StageRecord,
    bind_to_current,
    default_profile_dir,
    get_active_profiler,
    refresh_from_environment,
)

__all__ = [
    "ENV_DIR_VAR",
    "ENV_VAR",
    "CompileProfiler",
    "StageRecord",
    "bind_to_current",
    "default_profile_dir",
    "get_active_profiler",
    "refresh_from_environment",
]
