"""Rows of the profile view: a family whose members ran at the same time on several threads
says its total is a sum, with its wall time, so a child row larger than its parent is
explained, in the text summary and in `show --json`."""

from __future__ import annotations

from pypto.compile_profiling.profile_data.model import Profile, Stage
from pypto.compile_profiling.profile_data.view import view_dict, view_rows
from pypto.compile_profiling.report import format_profile_summary

MS = 1_000_000


def _codegen(parallel: bool) -> Profile:
    """`codegen` (10 ms) holding four 4 ms kernel stages: on two threads at once (8 ms of
    wall time, 16 ms summed) or one after the other on one thread (16 ms of 20 ms)."""
    kernels = []
    for i in range(4):
        tid = 1 + i % 2 if parallel else 1
        start = (i // 2) * 4 * MS if parallel else i * 4 * MS
        kernels.append(Stage(f"kernel_codegen:k{i}", start, start + 4 * MS, pid=7, tid=tid))
    end = 10 * MS if parallel else 20 * MS
    return Profile("p", [Stage("codegen", 0, end, kernels, pid=7, tid=1)], end)


def test_a_family_run_on_two_threads_at_once_says_its_total_is_a_sum_with_its_wall_time():
    profile = _codegen(parallel=True)
    parent, family = view_rows(profile.stages)
    assert family.label == "kernel_codegen:*" and family.total_ns == 16 * MS > parent.total_ns
    assert family.summed and family.wall_ns == 8 * MS and family.threads == 2
    lines = format_profile_summary(profile).splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("kernel_codegen:* x4"))
    assert "16.0ms" in lines[at]
    assert lines[at + 1].strip() == "= sum over 2 threads at once; wall 8.0ms"
    assert lines[at + 1].index("=") == 30          # under the totals column, not a row
    row = view_dict(profile, view_rows(profile.stages), [])["rows"][1]
    assert row["wall_ms"] == 8.0 and row["threads"] == 2 and row["total_ms"] == 16.0


def test_a_family_run_one_after_another_is_not_called_a_sum():
    profile = _codegen(parallel=False)
    _, family = view_rows(profile.stages)
    assert family.total_ns == 16 * MS == family.wall_ns and not family.summed
    assert "sum over" not in format_profile_summary(profile)
    assert "wall_ms" not in view_dict(profile, view_rows(profile.stages), [])["rows"][1]
