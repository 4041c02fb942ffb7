"""Compile profiling for the PyPTO pipeline: stages, reports, Chrome/Perfetto traces, merging.

Opt in with `PYPTO_COMPILE_PROFILING=1`, `ir.compile(..., profiling=True)`,
`with CompileProfiler() as prof:`, or `RunConfig(compile_profiling=True)`.

The package holds the profiler core (`profiler`, `stage_tree`, `report`, `chrome_trace`,
`profile_timeline`) and, one subpackage per job, `foundation/` (safe inputs and outputs),
`profile_data/` (a profile as a read-only model), `timeline/` (the columnar timeline and its
writers), `trace_merge/` (compile traces and Simpler captures on one clock), `profile_tool/`,
`viewer/` and `cli/` (the two commands). See docs/DESIGN.md.
"""

import sys
import types

# Every name is loaded from its module on first use: the merge, which lives in this package,
# then loads none of the profiler, and the profiler (asked for by every `@pl.program`) none
# of the merge's NumPy, msgspec and protobuf.
_LAZY = {
    "ENV_DIR_VAR": "profiler", "ENV_VAR": "profiler", "CompileProfiler": "profiler",
    "StageRecord": "profiler", "bind_to_current": "profiler",
    "default_profile_dir": "profiler", "get_active_profiler": "profiler",
    "refresh_from_environment": "profiler",
    "MergeResult": "trace_merge", "merge_traces": "trace_merge",
    "format_for_path": "timeline", "write_timeline": "timeline",
    "profile_to_timeline": "profile_timeline",
    "write_profile_perfetto": "profile_timeline",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        value = getattr(importlib.import_module(f"pypto.compile_profiling.{module}"), name)
        globals()[name] = value  # found directly from now on
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [  # the names of _LAZY
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


class _Package(types.ModuleType):
    """This package as a module object that also answers upstream's `_env_profiler` (the
    process-wide profiler, which upstream's tests reset by assigning None)."""

    @property
    def _env_profiler(self):
        from pypto.compile_profiling import profiler

        return profiler._process_profiler

    @_env_profiler.setter
    def _env_profiler(self, prof) -> None:
        from pypto.compile_profiling import profiler

        profiler.set_process_profiler(prof)


sys.modules[__name__].__class__ = _Package
