"""The columnar timeline model (`model`) and its exporters: Chrome JSON (`write_json`, rows
made by `json_rows`), native Perfetto protobuf (`write_proto`) and a Parquet dataset
directory of tables (`write_parquet`, with `pyarrow` from the `scale` extra). The merge
(`trace_merge`) lays its inputs out as a `Timeline`, and so does a compile profile
(`pypto.compile_profiling.profile_timeline`); nothing here imports either.

    write_timeline(timeline, "merged.pftrace")      # or .json / .json.gz / .parquet (a dir)
"""

from __future__ import annotations

import os

from pypto.compile_profiling.foundation.gc_pause import gc_paused
from pypto.compile_profiling.timeline.model import (
    ArgColumn,
    CounterTrack,
    FlowBlock,
    Process,
    SliceBlock,
    SliceRow,
    Timeline,
    Track,
)
from pypto.errors import ProfileWriteError

__all__ = ["FORMATS", "ArgColumn", "CounterTrack", "FlowBlock", "Process", "SliceBlock",
           "SliceRow", "Timeline", "Track", "format_for_path", "write_timeline"]

FORMATS = ("json", "perfetto", "parquet")
_EXTENSIONS = {".json": "json", ".json.gz": "json", ".pftrace": "perfetto",
               ".perfetto-trace": "perfetto", ".parquet": "parquet"}


def format_for_path(path: str | os.PathLike, format: str | None = None) -> str:
    """`json`, `perfetto` or `parquet`: the explicit `format`, else from the extension."""
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
                            "(use .json, .json.gz, .pftrace, .perfetto-trace or .parquet, or "
                            "give a format)")


def write_timeline(timeline: Timeline, path: str | os.PathLike, format: str | None = None
                   ) -> int:
    """Write `timeline` as Chrome JSON, Perfetto protobuf or a Parquet dataset directory
    (atomically); return its size in bytes."""
    fmt = format_for_path(path, format)
    with gc_paused():
        if fmt == "parquet":
            from pypto.compile_profiling.timeline.write_parquet import write_parquet_dataset

            return write_parquet_dataset(timeline, path)
        if fmt == "json":
            from pypto.compile_profiling.timeline.write_json import write_chrome_json

            write_chrome_json(timeline, path)
        else:
            from pypto.compile_profiling.timeline.write_proto import write_perfetto_trace

            write_perfetto_trace(timeline, path)
    return os.path.getsize(path)
