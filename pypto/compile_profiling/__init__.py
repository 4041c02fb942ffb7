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

# The merge and the timeline exporters pull in NumPy, msgspec, protobuf and the Simpler
# readers: each name is loaded from its module on first use, so that importing the profiler
# (done by every `@pl.program`) stays cheap.
_LAZY = {
    "MergeResult": "trace_merge", "merge_traces": "trace_merge",
    "format_for_path": "timeline", "write_timeline": "timeline",
    "profile_to_timeline": "profile_timeline",
    "write_profile_perfetto": "profile_timeline",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        return getattr(importlib.import_module(f"pypto.compile_profiling.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [  # the profiler's names and the lazily loaded ones (_LAZY)
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
