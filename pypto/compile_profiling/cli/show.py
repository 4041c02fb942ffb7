"""`pypto-profile show`: the stage tree with total and self time, families folded."""

from __future__ import annotations

import shlex

from pypto.compile_profiling.cli.arguments import EXIT_OK, add_output_option, count
from pypto.compile_profiling.cli.output import write_output


def add_parser(sub) -> None:
    s = sub.add_parser("show", help="stage tree with total and self time, folded families",
                       description="The stage tree: total and self time per stage, share of "
                                   "the total, (unaccounted) time outside every stage, "
                                   "families of repeated stages folded, the slowest stages.")
    s.add_argument("path", metavar="PATH")
    s.add_argument("--top", type=count, default=10, metavar="N",
                   help="list the N stages with the most self time (default 10, 0: none)")
    s.add_argument("--expand", action="store_true", help="list the members of folded families")
    s.add_argument("--json", action="store_true", help="JSON instead of text")
    add_output_option(s, "the view")


def run(args) -> int:
    from pypto.compile_profiling.profile_data.load import load_profile
    from pypto.compile_profiling.profile_data.view import slowest_stages, view_dict, view_rows
    from pypto.compile_profiling.report import fmt_time, format_profile_summary

    profile = load_profile(args.path)
    top = slowest_stages(profile.stages, args.top)
    if args.json:
        import json

        doc = view_dict(profile, view_rows(profile.stages, args.expand), top)
        if profile.other_slices:
            doc["other_slices"] = profile.other_slices
        text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    else:
        text = format_profile_summary(profile, args.expand)
        if not profile.timed:
            text += "\n(durations only: self time assumes stages ran one after another)\n"
        if profile.other_slices:
            text += "\n" + not_shown_note(args.path, profile.other_slices) + "\n"
        if top:
            text += f"\nSlowest {len(top)} stages by self time:\n"
            for s in top:
                text += f"  {fmt_time(s.self_ns / 1e9):>9s}  {s.path}\n"
    write_output(args.output, text, [args.path])
    return EXIT_OK


def not_shown_note(path: str, others: dict[str, int]) -> str:
    """A merged trace's device and host slices are no compile stages: say what was left out."""
    from pypto.about import tool_command

    tool = tool_command("pypto-profile")
    total = sum(others.values())
    shown = ", ".join(f"{name} ({n:,})" for name, n in list(others.items())[:4])
    more = f", and {len(others) - 4} more" if len(others) > 4 else ""
    return (f"(a merged trace: only its compile stages are shown; {total:,} other slices in "
            f"{len(others)} process(es) are not: {shown}{more}. See them all with "
            f"`{tool} open {shlex.quote(path)}`; per-kernel device time with `{tool} "
            "kernels WORK_DIR`)")
