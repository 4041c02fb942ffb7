#!/usr/bin/env python3
"""Check `pypto-profile whatif` against real re-runs: every prediction beside what the run
with that change made, in modelled time (tests/support/whatif_programs.py: 12 programs whose
bottleneck is known by construction, 5 edits each).

    python3 benchmarks/validate_whatif.py [--programs a,b] [--markdown]

For each program: one base run (seeded jitter); per edit, the prediction from the base run's
capture (the rules engine, which modelled captures get) and from the calibrated engine (the
one real captures get, forced here on the same capture), then a re-run with the change made
for real (same seed) and its makespan. Printed: both predictions' errors against the re-run,
and the largest error of each engine. Not a timing benchmark: the figures are exact and
repeat run to run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "support")]

from whatif_programs import PROGRAMS, edits_of, makespan_ns, run_graph

from pypto.compile_profiling.analysis import analyze
from pypto.compile_profiling.analysis.replay import Engine, ReplayInput
from pypto.compile_profiling.analysis.whatif import parse_edit, run_prediction


def _calibrated(inp: ReplayInput) -> ReplayInput:
    """The same capture, replayed as if its rules were not known."""
    return ReplayInput(inp.tasks, inp.families, inp.edges, inp.blocks, Engine.CALIBRATED,
                       inp.makespan)


def validate(names: list[str], root: Path) -> list[dict]:
    rows = []
    for name in names:
        graph = PROGRAMS[name]
        base = run_graph(graph, root / name / "base")
        (rank,) = analyze([str(base)], with_overhead=False).ranks
        inp = rank.replay
        assert inp is not None and inp.engine is Engine.RULES, (name, rank.no_replay)
        cal = _calibrated(inp)
        observed = makespan_ns(base)
        for k, edit in enumerate(edits_of(graph)):
            e = parse_edit(**{"cores": [], "faster": [], "sched": [], "no_deps": False,
                              **edit.options})
            rules = run_prediction(str(base), inp, e)
            calib = run_prediction(str(base), cal, e)
            actual = makespan_ns(run_graph(edit.graph, root / name / f"edit{k}", **edit.config))
            rows.append({"program": name, "edit": edit.name, "observed_ns": observed,
                         "actual_ns": actual, "rules_ns": rules.ns(rules.predicted),
                         "calibrated_ns": calib.ns(calib.predicted),
                         "replay_error": inp.error, "calibrated_replay_error": cal.error})
    return rows


def _err(pred: float, actual: float) -> float:
    return (pred - actual) / actual * 100


def table(rows: list[dict], markdown: bool) -> str:
    head = ("program", "edit", "observed", "re-run", "rules", "err %", "calibrated", "err %")
    body = [(r["program"], r["edit"], f"{r['observed_ns'] / 1e3:.2f} us",
             f"{r['actual_ns'] / 1e3:.2f} us", f"{r['rules_ns'] / 1e3:.2f} us",
             f"{_err(r['rules_ns'], r['actual_ns']):+.2f}",
             f"{r['calibrated_ns'] / 1e3:.2f} us",
             f"{_err(r['calibrated_ns'], r['actual_ns']):+.2f}") for r in rows]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|---|---|---:|---:|---:|---:|---:|---:|"]
        lines += ["| " + " | ".join(b) + " |" for b in body]
    else:
        widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
        lines = ["  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i])
                           for i, c in enumerate(r)) for r in (head, *body)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", help="comma-separated names (default: all)")
    ap.add_argument("--markdown", action="store_true", help="the table as markdown")
    a = ap.parse_args(argv)
    names = a.programs.split(",") if a.programs else list(PROGRAMS)
    with tempfile.TemporaryDirectory() as tmp:
        rows = validate(names, Path(tmp))
    print(table(rows, a.markdown))
    rules = max(abs(_err(r["rules_ns"], r["actual_ns"])) for r in rows)
    calib = max(abs(_err(r["calibrated_ns"], r["actual_ns"])) for r in rows)
    replay = max(abs(r["replay_error"]) for r in rows) * 100
    print(f"\n{len({r['program'] for r in rows})} programs x {len(rows) // len(names)} edits: "
          f"rules engine largest error {rules:.2f} % (unedited replay error {replay:.2f} %); "
          f"calibrated engine largest error {calib:.2f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
