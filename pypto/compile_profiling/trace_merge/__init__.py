"""Merge compile traces and Simpler device captures into one Perfetto timeline.

    result = merge_traces(["build/report/trace.json", "build/work"])
    write_timeline(result.timeline, "merged.pftrace")      # or .json / .json.gz
    print("\\n".join(result.summary_lines))

One direction, one module per step:
`read_inputs` (every input read and checked, Simpler files through `read_simpler`) ->
`place` (every clock decision) -> `layout` (the `Timeline`, final names and ids) ->
`write_json` / `write_proto`. Nothing is moved or renamed after it is laid out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pypto.compile_profiling.stage_tree import gc_paused
from pypto.compile_profiling.trace_merge.timeline import Timeline
from pypto.errors import ProfileWriteError

__all__ = ["FORMATS", "MergeResult", "format_for_path", "merge_traces", "profile_to_timeline",
           "write_profile_perfetto", "write_timeline"]

FORMATS = ("json", "perfetto")
_EXTENSIONS = {".json": "json", ".json.gz": "json", ".pftrace": "perfetto",
               ".perfetto-trace": "perfetto"}


@dataclass
class MergeResult:
    """The merged timeline, the human summary (one line each) and the warnings."""

    timeline: Timeline
    summary_lines: list[str]
    warnings: list[str]


def merge_traces(inputs: Iterable[str | os.PathLike], *, offset_us: float | None = None,
                 progress: Callable[[str], None] | None = None,
                 output: str | os.PathLike | None = None,
                 views: Iterable[str] | None = None,
                 flows: Iterable[str] | None = None) -> MergeResult:
    """Read every input, place each source on one host CLOCK_MONOTONIC axis, lay them out.

    Raises `TraceInputError` (naming the file) for unreadable or invalid input, before
    anything is laid out. `progress(message)` is called as each step starts. `output`: the
    path the result will be written to; `OutputPathError` if it is one of the input files.
    `views` / `flows`: the device views and kinds of arrows to draw (names in
    `trace_merge.views.VIEWS` / `FLOWS`; default all that the captures support).
    """
    from pypto.compile_profiling.trace_merge.views import FLOWS, VIEWS, Selection, parse_names

    sel = Selection(
        frozenset(VIEWS) if views is None else parse_names(views, VIEWS, "views"),
        frozenset(FLOWS) if flows is None else parse_names(flows, FLOWS, "flows"))
    from pypto.compile_profiling.trace_merge.layout import lay_out
    from pypto.compile_profiling.trace_merge.place import place
    from pypto.compile_profiling.trace_merge.read_inputs import read_inputs

    say = progress or (lambda _msg: None)
    with gc_paused():
        say("reading inputs")
        found = read_inputs(list(inputs), output=output)
        say("placing sources")
        plan = place(found, offset_us=offset_us)
        say("laying out")
        timeline, summary, warnings = lay_out(plan, sel)
    return MergeResult(timeline, summary, warnings)


def format_for_path(path: str | os.PathLike, format: str | None = None) -> str:
    """`json` or `perfetto`: the explicit `format`, else from the extension."""
    if format is not None:
        if format not in FORMATS:
            raise ProfileWriteError(f"{path}: unknown format {format!r} "
                                    f"(expected one of {', '.join(FORMATS)})")
        return format
    name = str(path).lower()
    for ext, fmt in _EXTENSIONS.items():
        if name.endswith(ext):
            return fmt
    raise ProfileWriteError(f"{path}: cannot tell the output format from the extension "
                            "(use .json, .json.gz, .pftrace or .perfetto-trace, or give a "
                            "format)")


def write_timeline(timeline: Timeline, path: str | os.PathLike, format: str | None = None
                   ) -> int:
    """Write `timeline` as Chrome JSON or Perfetto protobuf (atomically); return its size."""
    fmt = format_for_path(path, format)
    with gc_paused():
        if fmt == "json":
            from pypto.compile_profiling.trace_merge.write_json import write_chrome_json

            write_chrome_json(timeline, path)
        else:
            from pypto.compile_profiling.trace_merge.write_proto import write_perfetto_trace

            write_perfetto_trace(timeline, path)
    return os.path.getsize(path)


def profile_to_timeline(profiler) -> Timeline:
    """A `CompileProfiler`'s stages as a Timeline (same processes/threads as its trace.json)."""
    from pypto.compile_profiling.trace_merge.profile_timeline import profile_to_timeline as build

    return build(profiler)


def write_profile_perfetto(profiler, path: str | os.PathLike) -> int:
    """Write a `CompileProfiler`'s stages as a Perfetto protobuf trace; return its size."""
    return write_timeline(profile_to_timeline(profiler), path, "perfetto")
