"""`pypto-profile html`: one self-contained HTML page of a run (no network)."""

from __future__ import annotations

import sys

from pypto.compile_profiling.cli.arguments import EXIT_OK, Refused, Usage
from pypto.compile_profiling.cli.kernels import work_dir_kernels
from pypto.compile_profiling.cli.output import write_output
from pypto.compile_profiling.cli.show import not_shown_note
from pypto.errors import OutputPathError, TraceInputError

HTML_SUFFIXES = (".html", ".htm", ".html.gz", ".htm.gz")

def add_parser(sub) -> None:
    h = sub.add_parser("html", help="one self-contained HTML page (no network)",
                       description="Icicle chart per thread lane (hover for details), the "
                                   "folded summary and, for a work dir, the kernel table and "
                                   "the run explained (analyze); a device capture alone "
                                   "(dfx_outputs/, a capture directory) gives the device half. "
                                   "BASE... -- NEW...: a comparison of whole runs instead, "
                                   "side-by-side bars for the device makespan, the critical "
                                   "path's composition and the kernel families, each with "
                                   "its change and interval (docs/comparing.md).")
    h.add_argument("paths", nargs="+", metavar="PATH", help="PATH, or BASE... -- NEW...")
    h.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the page to write: a name ending in .html or .htm (.html.gz to "
                        "compress), or - for stdout")


def run(args) -> int:
    from pypto.compile_profiling.foundation.streams import stream_of
    from pypto.compile_profiling.profile_data.load import load_profile
    from pypto.compile_profiling.profile_tool.html import profile_html

    if args.output != "-" and not args.output.lower().endswith(HTML_SUFFIXES) and \
            stream_of(args.output) is None:          # a stream the user names: written to
        raise OutputPathError(args.output, "html writes an HTML page; name the output "
                                           ".html or .htm (.html.gz to compress), or - for "
                                           "stdout")
    if args.new_paths is not None:
        return _comparison(args)
    if len(args.paths) != 1:
        raise Usage("html takes one PATH, or BASE... -- NEW... to compare runs")
    args.path = args.paths[0]
    from pypto.compile_profiling.analysis import analyze
    from pypto.compile_profiling.analysis.report import analysis_dict

    try:
        profile = load_profile(args.path)
    except TraceInputError as e:          # a capture directory alone: the device half
        try:
            run = analyze([args.path])
        except TraceInputError:
            raise e from None
        write_output(args.output, profile_html(None, None, analysis_dict(run), run),
                     [args.path])
        print(f"note: {args.path}: no compile profile here; the page shows the device "
              "side", file=sys.stderr)
        return EXIT_OK
    kernels, notes = work_dir_kernels(profile, args.path)
    analysis = run = None
    if kernels is not None:               # a work dir with device outputs: explain the run
        try:
            run = analyze([profile.work_dir])
            analysis = analysis_dict(run)
        except TraceInputError as e:
            notes.append(f"no run analysis: {e}")
    if profile.other_slices:
        notes.append(not_shown_note(args.path, profile.other_slices).strip("()"))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    write_output(args.output, profile_html(profile, kernels, analysis, run), [args.path])
    return EXIT_OK


def _comparison(args) -> int:
    """`html BASE... -- NEW...`: the whole-run comparison as a page (`compare_html`)."""
    from pypto.compile_profiling.profile_tool.compare_html import compare_html
    from pypto.compile_profiling.profile_tool.run_diff import diff_runs
    from pypto.compile_profiling.profile_tool.run_figures import is_whole_run, load_runs_figures

    base_paths, new_paths = args.paths, args.new_paths
    if not new_paths:
        raise Usage("html: no NEW path after --")
    missing = [p for p in base_paths + new_paths if not is_whole_run(p)]
    if missing:
        raise Refused(f"{missing[0]}: no device capture here; html BASE -- NEW compares "
                      "whole runs (compile profiles alone: pypto-profile diff)")
    base, new = load_runs_figures(base_paths), load_runs_figures(new_paths)
    write_output(args.output, compare_html(diff_runs(base, new)), base_paths + new_paths)
    return EXIT_OK
