"""`pypto-profile kernels`: per kernel, its compile cost beside its device cost."""

from __future__ import annotations

import os
import sys

from pypto.compile_profiling.cli.arguments import EXIT_OK, add_output_option
from pypto.compile_profiling.cli.output import write_output
from pypto.errors import TraceInputError


def add_parser(sub) -> None:
    k = sub.add_parser("kernels", help="per kernel: compile cost beside device cost",
                       description="One row per kernel: its kernel_codegen stage (and nested "
                                   "stages) and its device tasks from dfx_outputs/ (count, "
                                   "core type, total/mean/max AICore time), slowest on the "
                                   "device first. WORK_DIR: a run() work dir; or Simpler's "
                                   "dfx_outputs/ or a capture directory alone, for the device "
                                   "side only.")
    k.add_argument("work_dir", metavar="WORK_DIR")
    k.add_argument("--format", choices=("text", "markdown", "csv", "json"), default="text")
    add_output_option(k, "the table")


def run(args) -> int:
    from pypto.compile_profiling.profile_data.load import DFX_DIR, is_profile_location, load_profile
    from pypto.compile_profiling.profile_tool.kernels import format_kernels, kernel_rows
    from pypto.compile_profiling.trace_merge.lay_out.kernel_totals import work_dir_device_costs

    path = args.work_dir
    if is_profile_location(path):
        profile = load_profile(path)
        rows, notes = work_dir_kernels(profile, path)
        if rows is None:
            raise TraceInputError(path, f"no {DFX_DIR}/ here (kernels needs the work dir of a "
                                        "run() with enable_chip_swimlane >= 1)")
    elif os.path.isdir(path) and _has_captures(path):
        # Simpler's outputs without a compile profile: the device side alone
        device, notes = work_dir_device_costs(path)
        notes.insert(0, f"{path}: no compile profile (report/) here: device costs only")
        rows = kernel_rows(None, device)
    else:
        raise TraceInputError(path, f"no report/ or {DFX_DIR}/ here (expected the work dir of "
                                    "a run(), or Simpler's dfx_outputs/)")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    write_output(args.output, format_kernels(rows, args.format), [path])
    return EXIT_OK


def work_dir_kernels(profile, path: str):
    """The kernel table of a work dir, or None when it has no device outputs."""
    from pypto.compile_profiling.profile_data.load import DFX_DIR
    from pypto.compile_profiling.profile_tool.kernels import load_work_dir_kernels

    if profile.work_dir is None or not os.path.isdir(os.path.join(profile.work_dir, DFX_DIR)):
        return None, []
    return load_work_dir_kernels(path, profile)


def _has_captures(path: str) -> bool:
    """A work dir's `dfx_outputs/`, or a capture directory itself (flat or `rank<r>/`)."""
    from pypto.compile_profiling.profile_data.load import DFX_DIR
    from pypto.compile_profiling.trace_merge.read.read_simpler import RECORD_FILE_NAMES

    if os.path.isdir(os.path.join(path, DFX_DIR)):
        return True
    names = os.listdir(path)
    return any(n in RECORD_FILE_NAMES or n == "deps.json" or n.startswith("rank")
               for n in names)
