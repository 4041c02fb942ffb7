"""The profile as reports: `pipeline_profile.txt` (summary) and `pipeline_profile.json` (tree).

The JSON keeps upstream's structure (`total_seconds`, nested `stages` of
`name`/`seconds`/`children`) and only adds fields.
"""

from __future__ import annotations

import json
import os
import socket
from collections import Counter
from typing import TYPE_CHECKING, Any

import pypto
from pypto.compile_profiling.atomic_io import atomic_write_text, ensure_dir

if TYPE_CHECKING:
    from pypto.compile_profiling.profiler import CompileProfiler, StageRecord

REPORT_TEXT = "pipeline_profile.txt"
REPORT_JSON = "pipeline_profile.json"
TRACE_JSON = "trace.json"


def profile_dict(prof: CompileProfiler, stages: list[StageRecord]) -> dict[str, Any]:
    """`{"total_seconds", "stages": [...]}` plus clock and process facts."""
    return {
        "total_seconds": round(prof.total_seconds, 6),
        "stages": [s.to_dict() for s in stages],
        "clock": "CLOCK_MONOTONIC",
        "pid": prof.pid,
        "host": socket.gethostname(),
        "pypto_version": pypto.__version__,
    }


def fmt_time(seconds: float) -> str:
    """Upstream's duration format: us below 1 ms, ms below 1 s, else seconds."""
    if seconds < 0.001:
        return f"{seconds * 1_000_000:.0f}us"
    if seconds < 1.0:
        return f"{seconds * 1_000:.1f}ms"
    return f"{seconds:.3f}s"


def format_summary(stages: list[StageRecord], total: float) -> str:
    """The text summary: title, rule, total, then one indented line per stage."""
    lines = ["PyPTO Compile Profile", "=" * 22, f"Total: {fmt_time(total)}", ""]
    _format_level(lines, stages, total, depth=1)
    return "\n".join(lines) + "\n"


def _format_level(lines: list[str], stages: list[StageRecord], total: float, depth: int) -> None:
    counts = Counter(s.name for s in stages)
    seen: Counter[str] = Counter()
    indent = "  " * depth
    for stage in stages:
        label = stage.name.replace("\r", "\\r").replace("\n", "\\n")
        if counts[label] > 1:
            seen[label] += 1
            label = f"{label} [{seen[label]}/{counts[label]}]"
        duration = stage.duration
        pct = f"({duration / total * 100:5.1f}%)" if total > 0 else ""
        flags = ""
        if stage.error is not None:
            flags += f"  FAILED ({stage.error})"
        if stage.is_open:
            flags += "  (still open)"
        lines.append(f"{indent}{label:<28s} {fmt_time(duration):>10s}  {pct}{flags}")
        _format_level(lines, stage.children, total, depth + 1)


def write_report(prof: CompileProfiler, report_dir: str | os.PathLike) -> None:
    """Write the summary, the JSON tree and `trace.json` into `report_dir`, each atomically."""
    from pypto.compile_profiling.chrome_trace import write_chrome_trace

    directory = ensure_dir(report_dir)
    stages = prof.stages
    total = prof.total_seconds
    atomic_write_text(directory / REPORT_TEXT, format_summary(stages, total))
    data = profile_dict(prof, stages)
    atomic_write_text(directory / REPORT_JSON, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    write_chrome_trace(prof, directory / TRACE_JSON, stages=stages)
