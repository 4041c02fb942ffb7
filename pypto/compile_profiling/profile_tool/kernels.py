"""Per kernel, what it cost to compile beside what it cost on the device.

Compile side: the `kernel_codegen:<kernel>` stages of the profile (their total, and the
stages nested in them). Device side: the AICore task records of `dfx_outputs/` (swimlane
level 1 or more): how many tasks ran the kernel, on which core type, and their device time
(sum, mean and max over the records; a multi-block task runs on several cores and counts
once per core). Kernels are joined by name (the name map's names are the kernel names).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

from pypto.compile_profiling.foundation.terminal import printable
from pypto.compile_profiling.profile_data.model import Profile, walk
from pypto.compile_profiling.profile_data.view import self_ns
from pypto.compile_profiling.trace_merge.lay_out.kernel_totals import (
    DeviceKernelCost,
    work_dir_device_costs,
)
from pypto.errors import TraceInputError

KERNEL_STAGE_PREFIX = "kernel_codegen:"


@dataclass(slots=True)
class KernelRow:
    """One kernel, compile and device side (either may be missing)."""

    kernel: str
    codegen_ns: int | None = None
    self_ns: int | None = None       # codegen time inside no nested stage
    nested: dict[str, int] = field(default_factory=dict)   # stage name -> ns, inside codegen
    device: DeviceKernelCost | None = None


def compile_kernel_costs(profile: Profile) -> dict[str, KernelRow]:
    """`kernel_codegen:<kernel>` stages by kernel, with the stages nested inside them."""
    rows: dict[str, KernelRow] = {}
    for st, _depth, _parent in walk(profile.stages):
        if not st.name.startswith(KERNEL_STAGE_PREFIX):
            continue
        kernel = st.name[len(KERNEL_STAGE_PREFIX):]
        row = rows.setdefault(kernel, KernelRow(kernel, 0, 0))
        row.codegen_ns += st.duration_ns
        row.self_ns += self_ns(st)
        for child, _d, _p in walk(st.children):
            row.nested[child.name] = row.nested.get(child.name, 0) + child.duration_ns
    return rows


def kernel_rows(profile: Profile | None, device: list[DeviceKernelCost]) -> list[KernelRow]:
    """Compile and device costs joined by kernel name; slowest on the device first, then
    kernels with no device time by compile cost."""
    rows = compile_kernel_costs(profile) if profile is not None else {}
    for cost in device:
        rows.setdefault(cost.kernel, KernelRow(cost.kernel)).device = cost
    return sorted(rows.values(), key=lambda r: (
        -(r.device.total_ns if r.device else -1.0), -(r.codegen_ns or 0), r.kernel))


def load_work_dir_kernels(path: str, profile: Profile) -> tuple[list[KernelRow], list[str]]:
    """The kernel table of a `run()` work dir (its profile already loaded)."""
    if profile.work_dir is None:
        raise TraceInputError(path, "not a work dir (expected the directory run() wrote, "
                                    "with report/ and dfx_outputs/)")
    device, notes = work_dir_device_costs(profile.work_dir)
    return kernel_rows(profile, device), notes


# --------------------------------------------------------------------------- output

COLUMNS = ("kernel", "codegen_ms", "self_ms", "nested_stages", "tasks", "core_type",
           "device_total_us", "device_mean_us", "device_max_us")


def _record(r: KernelRow) -> dict:
    d = r.device
    return {
        "kernel": r.kernel,
        "codegen_ms": None if r.codegen_ns is None else r.codegen_ns / 1e6,
        "self_ms": None if r.self_ns is None else r.self_ns / 1e6,
        "nested_stages": {k: v / 1e6 for k, v in r.nested.items()},
        "tasks": d.tasks if d else None,
        "executions": d.executions if d else None,
        "core_type": "+".join(sorted(d.core_types)) if d else None,
        "device_total_us": d.total_ns / 1e3 if d else None,
        "device_mean_us": d.total_ns / d.executions / 1e3 if d else None,
        "device_max_us": d.max_ns / 1e3 if d else None,
    }


def _cells(r: KernelRow, nested_column: bool = True) -> list[str]:
    rec = _record(r)

    def num(v, fmt):
        return "-" if v is None else format(v, fmt)

    nested = ", ".join(f"{k} {v:.2f}ms" for k, v in rec["nested_stages"].items()) or "-"
    return [r.kernel, num(rec["codegen_ms"], ".2f"), num(rec["self_ms"], ".2f"),
            *([nested] if nested_column else []), num(rec["tasks"], "d"),
            rec["core_type"] or "-", num(rec["device_total_us"], ".1f"),
            num(rec["device_mean_us"], ".2f"), num(rec["device_max_us"], ".2f")]


HEADERS = ["kernel", "codegen ms", "self ms", "nested stages", "tasks", "core",
           "device total us", "mean us", "max us"]
TEXT_HEADERS = [h for h in HEADERS if h != "nested stages"]


def _nested_line(rows: list[KernelRow]) -> str:
    """The text table's last line: what the codegen time holds besides its self time (each
    stage per kernel is in the other formats)."""
    names = list(dict.fromkeys(k for r in rows for k in r.nested))
    if not names:
        return ""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"codegen ms = self ms + nested stages ({shown}); each: --format csv/json\n"


def format_kernels(rows: list[KernelRow], fmt: str) -> str:
    """The kernel table as `text`, `markdown`, `csv` or `json`."""
    if fmt == "json":
        return json.dumps({"kernels": [_record(r) for r in rows]}, indent=1,
                          ensure_ascii=False) + "\n"
    table = [_cells(r) for r in rows]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in rows:
            rec = _record(r)
            rec["nested_stages"] = ";".join(f"{k}={v:.3f}" for k, v in
                                            rec["nested_stages"].items())
            w.writerow(["" if rec[c] is None else rec[c] for c in COLUMNS])
        return buf.getvalue()
    if fmt == "markdown":
        lines = ["| " + " | ".join(HEADERS) + " |", "|---|---:|---:|---|---:|---|---:|---:|---:|"]
        for cells in table:
            lines.append("| " + " | ".join(printable(c).replace("|", "\\|") for c in cells)
                         + " |")
        return "\n".join(lines) + "\n"
    # text: fits a terminal, so the nested stages are summed up in one line under the table
    table = [[printable(c) for c in _cells(r, nested_column=False)] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in table)) if table else len(h)
              for i, h in enumerate(TEXT_HEADERS)]
    left = {0, 4}
    out = []
    for cells in [TEXT_HEADERS, *table]:
        out.append("  ".join(c.ljust(widths[i]) if i in left else c.rjust(widths[i])
                             for i, c in enumerate(cells)).rstrip())
    nested = _nested_line(rows)
    return "\n".join(out) + "\n" + (printable(nested[:-1]) + "\n" if nested else "")

