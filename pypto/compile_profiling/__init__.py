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

# The merge (`trace_merge`) pulls in NumPy, msgspec and the Simpler readers: load it on first
# use, so that importing the profiler (done by every `@pl.program`) stays cheap.
_MERGE_API = {
    "MergeResult", "format_for_path", "merge_traces", "profile_to_timeline",
    "write_profile_perfetto", "write_timeline",
}


def __getattr__(name: str):
    if name in _MERGE_API:
        from pypto.compile_profiling import trace_merge

        return getattr(trace_merge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [  # the profiler's names and the lazily loaded _MERGE_API
    "ENV_DIR_VAR",
    "ENV_VAR",
    "CompileProfiler",
    "MergeResult",
    "StageRecord",
    "bind_to_current",
    "default_profile_dir",
    "format_for_path",
    "get_active_profiler",
    "merge_traces",
    "profile_to_timeline",
    "refresh_from_environment",
    "write_profile_perfetto",
    "write_timeline",
]
