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
        "total_seconds": round(prof.total_seconds_of(stages), 6),
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


NAME_COLUMN = 30  # upstream: two spaces of indent plus a 28-character name


def format_summary(stages: list[StageRecord], total: float) -> str:
    """The text summary: title, rule, total, then one line per stage, indented two spaces per
    depth; durations line up in one column, pushed right when a name needs more room."""
    rows: list[tuple[str, StageRecord]] = []
    _collect_rows(rows, stages, depth=1)
    width = max([NAME_COLUMN] + [len(label) + 1 for label, _ in rows])
    lines = ["PyPTO Compile Profile", "=" * 22, f"Total: {fmt_time(total)}", ""]
    for label, stage in rows:
        duration = stage.duration
        pct = f"({duration / total * 100:5.1f}%)" if total > 0 else ""
        flags = ""
        if stage.error is not None:
            flags += f"  FAILED ({stage.error})"
        if stage.is_open:
            flags += "  (still open)"
        lines.append(f"{label:<{width}s}{fmt_time(duration):>10s}  {pct}{flags}")
    return "\n".join(lines) + "\n"


def _collect_rows(rows: list, stages: list[StageRecord], depth: int) -> None:
    """(indented label, stage) in tree order; repeated sibling names get `[i/n]`."""
    counts = Counter(s.name for s in stages)
    seen: Counter[str] = Counter()
    indent = "  " * depth
    for stage in stages:
        label = stage.name.replace("\r", "\\r").replace("\n", "\\n")
        if counts[stage.name] > 1:
            seen[stage.name] += 1
            label = f"{label} [{seen[stage.name]}/{counts[stage.name]}]"
        rows.append((indent + label, stage))
        _collect_rows(rows, stage.children, depth + 1)


_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


def format_profile_json(data: dict[str, Any]) -> str:
    """`pipeline_profile.json` text: one stage per line, children indented below their parent.

    As readable as `indent=2` for a stage tree, and several times faster to produce (the C
    encoder writes each stage's fields; only the tree layout is done here).
    """
    head = {k: v for k, v in data.items() if k != "stages"}
    out = [_encode(head)[:-1] + ', "stages": [']
    _stage_lines(out, data["stages"], "  ")
    out.append("]}")
    return "\n".join(out) + "\n"


def _stage_lines(out: list[str], stages: list[dict], indent: str) -> None:
    last = len(stages) - 1
    for i, stage in enumerate(stages):
        children = stage["children"]
        fields = _encode({k: v for k, v in stage.items() if k != "children"})[:-1]
        comma = "," if i < last else ""
        if children:
            out.append(f'{indent}{fields}, "children": [')
            _stage_lines(out, children, indent + "  ")
            out.append(f"{indent}]}}{comma}")
        else:
            out.append(f'{indent}{fields}, "children": []}}{comma}')


def write_report(prof: CompileProfiler, report_dir: str | os.PathLike) -> None:
    """Write the summary, the JSON tree and `trace.json` into `report_dir`, each atomically."""
    from pypto.compile_profiling.chrome_trace import write_chrome_trace

    directory = ensure_dir(report_dir)
    stages = prof.stages
    total = prof.total_seconds_of(stages)
    atomic_write_text(directory / REPORT_TEXT, format_summary(stages, total))
    data = profile_dict(prof, stages)
    atomic_write_text(directory / REPORT_JSON, format_profile_json(data))
    write_chrome_trace(prof, directory / TRACE_JSON, stages=stages)
