"""Several timelines as one ZIP of Perfetto protobuf traces (`name.pftrace` each), which the
Perfetto UI and trace processor open as one trace (ZIP archives are read since UI v52, the
one our tests load them in), each file keeping its own processes.

Why a ZIP beside the single merged trace: each run's trace stays a file of its own, to open
alone or hand on, while the archive still opens as one timeline. The parts must not share
process or thread ids (`trace_merge.lay_out.side_by_side` moves the second run's)."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

from pypto.compile_profiling.foundation.atomic_io import (
    atomic_writer,
    check_output_path,
    ensure_dir,
)
from pypto.compile_profiling.foundation.owned_dir import writing_into
from pypto.compile_profiling.timeline.model import Timeline
from pypto.errors import ProfileWriteError

__all__ = ["write_trace_archive"]


def write_trace_archive(parts: dict[str, Timeline], path: str | os.PathLike) -> int:
    """Write each timeline as `<name>.pftrace` into the ZIP at `path` (atomically: the parts
    are made in a temporary directory beside it); return the archive's size in bytes."""
    from pypto.compile_profiling.timeline.write_proto import write_perfetto_trace

    target = Path(path)
    check_output_path(target)
    parent = ensure_dir(target.parent if str(target.parent) else Path("."))
    try:
        tmp_dir = tempfile.TemporaryDirectory(dir=parent, prefix=".pypto-archive-")
    except OSError as e:        # as the other writers say it: the directory, and why
        raise ProfileWriteError(f"{parent}: cannot write here: {e.strerror or e}") from None
    with tmp_dir as tmp, writing_into(Path(tmp), target):
        files = []
        for name, timeline in parts.items():
            part = Path(tmp) / f"{name}.pftrace"
            write_perfetto_trace(timeline, part)
            files.append(part)
        with atomic_writer(target, "wb") as f, \
                zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for part in files:
                archive.write(part, part.name)
    return os.path.getsize(target)
