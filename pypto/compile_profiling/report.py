"""The profile as reports: `pipeline_profile.txt` (summary) and `pipeline_profile.json` (tree).

The JSON keeps upstream's structure (`total_seconds`, nested `stages` of
`name`/`seconds`/`children`) and only adds fields.
"""

from __future__ import annotations

import os
import socket
from collections import Counter
from typing import TYPE_CHECKING, Any

import pypto
from pypto.compile_profiling.atomic_io import replace_file_set
from pypto.compile_profiling.safe_json import dumps

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
        if stage.interrupted:
            flags += "  (interrupted)"
        if stage.out_of_order:
            flags += "  (closed out of order)"
        lines.append(f"{label:<{width}s}{fmt_time(duration):>10s}  {pct}{flags}")
    return "\n".join(lines) + "\n"


def _collect_rows(rows: list, stages: list[StageRecord], depth: int) -> None:
    """(indented label, stage) in tree order; repeated sibling names get `[i/n]`.
    Iterative, so any nesting depth works."""
    stack = [(stages, depth, 0, None, None)]
    while stack:
        siblings, level, i, counts, seen = stack.pop()
        if counts is None:
            counts, seen = Counter(s.name for s in siblings), Counter()
        if i >= len(siblings):
            continue
        stage = siblings[i]
        stack.append((siblings, level, i + 1, counts, seen))
        label = stage.name.replace("\r", "\\r").replace("\n", "\\n")
        if counts[stage.name] > 1:
            seen[stage.name] += 1
            label = f"{label} [{seen[stage.name]}/{counts[stage.name]}]"
        rows.append(("  " * level + label, stage))
        if stage.children:
            stack.append((stage.children, level + 1, 0, None, None))


_encode = dumps


def format_profile_json(data: dict[str, Any], unit: str = "  ") -> str:
    """`pipeline_profile.json` text: one stage per line, children indented below their parent.

    As readable as `indent=2` for a stage tree, and several times faster to produce (the C
    encoder writes each stage's fields; only the tree layout is done here).
    """
    head = {k: v for k, v in data.items() if k != "stages"}
    out = [_encode(head)[:-1] + ', "stages": [']
    _stage_lines(out, data["stages"], unit, unit)
    out.append("]}")
    return "\n".join(out) + "\n"


def _stage_lines(out: list[str], stages: list[dict], indent: str, unit: str = "  ") -> None:
    """One line per stage, children indented below their parent. Iterative (any depth):
    the stack holds sibling lists still to write and closing lines still to emit."""
    stack: list = [(stages, 0, indent)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        siblings, i, pad = item
        if i >= len(siblings):
            continue
        stage = siblings[i]
        comma = "" if i == len(siblings) - 1 else ","
        stack.append((siblings, i + 1, pad))
        children = stage["children"]
        fields = _encode({k: v for k, v in stage.items() if k != "children"})[:-1]
        if children:
            out.append(f'{pad}{fields}, "children": [')
            stack.append(f"{pad}]}}{comma}")
            stack.append((children, 0, pad + unit))
        else:
            out.append(f'{pad}{fields}, "children": []}}{comma}')


def json_text(data: dict[str, Any], indent: int | None = 2) -> str:
    """A profile dict as JSON text: one stage per line (indented by `indent` per depth), or
    all on one line when `indent` is None. Any depth, strict JSON whatever the args hold."""
    if indent is None:
        return "".join(format_profile_json(data, "").splitlines())
    return format_profile_json(data, " " * indent)[:-1]


def write_report(prof: CompileProfiler, report_dir: str | os.PathLike) -> None:
    """Write the summary, the JSON tree and `trace.json` into `report_dir`, all or nothing:
    the directory holds the previous complete set or the new one (`replace_file_set`)."""
    from pypto.compile_profiling.chrome_trace import write_trace_to
    from pypto.compile_profiling.stage_tree import gc_paused

    with gc_paused():
        stages = prof.stages
        total = prof.total_seconds_of(stages)
        summary = format_summary(stages, total)
        tree = format_profile_json(profile_dict(prof, stages))
        replace_file_set(report_dir, {
            REPORT_TEXT: lambda f: f.write(summary),
            REPORT_JSON: lambda f: f.write(tree),
            TRACE_JSON: lambda f: write_trace_to(f, prof, stages),
        })
