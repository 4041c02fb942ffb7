"""The profile as reports: `pipeline_profile.txt` (summary) and `pipeline_profile.json` (tree).

The JSON keeps upstream's structure (`total_seconds`, nested `stages` of
`name`/`seconds`/`children`) and only adds fields; `schema_version` says which fields (the
JSON Schema is docs/pipeline_profile.schema.json). The text adds to upstream's columns the
self time of each stage, folded families of repeated stages and an "(unaccounted)" row (see
`profile_data.view`).
"""

from __future__ import annotations

import os
import socket
import time
from typing import TYPE_CHECKING, Any

import pypto
from pypto.compile_profiling.foundation.atomic_io import replace_file_set
from pypto.compile_profiling.foundation.safe_json import dumps
from pypto.compile_profiling.profile_data.model import Profile, stages_from_records
from pypto.compile_profiling.profile_data.view import UNACCOUNTED, Row, unaccounted_ns, view_rows

if TYPE_CHECKING:
    from pypto.compile_profiling.stage_log import ProfileSource
    from pypto.compile_profiling.stage_record import StageRecord

REPORT_TEXT = "pipeline_profile.txt"
REPORT_JSON = "pipeline_profile.json"
TRACE_JSON = "trace.json"
#: Version of the `pipeline_profile.json` layout; raised when a field changes meaning or goes.
#: Adding a field keeps the version (readers ignore fields they do not know).
PROFILE_SCHEMA_VERSION = 1


def profile_dict(prof: ProfileSource, stages: list[StageRecord]) -> dict[str, Any]:
    """`{"total_seconds", "stages": [...]}` plus clock and process facts."""
    return {
        "schema_version": PROFILE_SCHEMA_VERSION,
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
_HIDE_UNACCOUNTED_NS = 1000  # below a microsecond it is rounding, not time spent elsewhere


def format_summary(stages: list[StageRecord], total: float) -> str:
    """The text summary of a live profiler's stages (see `format_profile_summary`)."""
    profile = Profile("", stages_from_records(stages, time.perf_counter_ns()), round(total * 1e9))
    return format_profile_summary(profile)


def format_profile_summary(profile: Profile, expand: bool = False) -> str:
    """Title, rule, total, then one line per stage (or folded family), indented two spaces per
    depth: total and share of the profile as upstream, then self time; a family adds its
    count, mean and max; where its members ran at the same time on several threads, a line
    under its total says the total is summed over them, and gives its wall time. Durations line up in one column, pushed
    right when a name needs more room. Time outside every stage ends the list as
    "(unaccounted)"."""
    rows = view_rows(profile.stages, expand)
    labels = [_row_label(r) for r in rows]
    width = max([NAME_COLUMN, len(UNACCOUNTED) + 3] + [len(x) + 1 for x in labels])
    total = profile.total_ns
    lines = ["PyPTO Compile Profile", "=" * 22, f"Total: {fmt_time(total / 1e9)}", ""]
    for label, row in zip(labels, rows):
        lines.append(_line(label, width, row.total_ns, row.self_ns, total) + _row_extra(row))
        if row.summed:     # under its total: what the sum is, and the wall time it took
            threads = row.threads
            lines.append(f"{'':<{width}s}= sum over {threads} thread{'s' if threads != 1 else ''}"
                         f" at once; wall {fmt_time(row.wall_ns / 1e9)}")
    unaccounted = unaccounted_ns(profile)
    if unaccounted >= _HIDE_UNACCOUNTED_NS:
        lines.append(_line("  " + UNACCOUNTED, width, unaccounted, unaccounted, total))
    return "\n".join(lines) + "\n"


def _row_label(row: Row) -> str:
    label = row.label.replace("\r", "\\r").replace("\n", "\\n")
    if row.folded:
        label += f" x{row.count}"
    return "  " * row.depth + label


def _line(label: str, width: int, total_ns: int, self_ns: int, profile_ns: int) -> str:
    pct = f"({total_ns / profile_ns * 100:5.1f}%)" if profile_ns > 0 else " " * 8
    return (f"{label:<{width}s}{fmt_time(total_ns / 1e9):>10s}  {pct}  "
            f"self {fmt_time(self_ns / 1e9):>8s}")


def _row_extra(row: Row) -> str:
    if not row.folded:  # fast path for the usual single finished stage
        m = row.members[0]
        if m.error is None and not (m.is_open or m.interrupted or m.out_of_order):
            return ""
    extra = ""
    if row.folded:
        extra += f"  mean {fmt_time(row.mean_ns / 1e9)}  max {fmt_time(row.max_ns / 1e9)}"
    if row.failed is not None:
        extra += f"  FAILED ({row.failed})"
    if row.still_open:
        extra += "  (still open)"
    if any(m.interrupted for m in row.members):
        extra += "  (interrupted)"
    if any(m.out_of_order for m in row.members):
        extra += "  (closed out of order)"
    return extra


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


def write_report(prof: ProfileSource, report_dir: str | os.PathLike) -> None:
    """Write the summary, the JSON tree and `trace.json` into `report_dir`, all or nothing:
    the directory holds the previous complete set or the new one (`replace_file_set`)."""
    from pypto.compile_profiling.chrome_trace import write_trace_to
    from pypto.compile_profiling.foundation.gc_pause import gc_paused

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
