"""The UI shows the run as the work flows, compile, then host, then device: `open` reads the
processes' order from the head of the trace and hands the UI startup commands that build a
workspace in that order. Checked in the offline UI, in both formats, top to bottom on screen."""

from __future__ import annotations

import gzip
import json
import shutil
import time
import urllib.parse
from pathlib import Path

import pytest
from merge_inputs import CALIBRATED, FIXTURES, compile_trace_around

from pypto.compile_profiling.timeline import write_timeline
from pypto.compile_profiling.trace_merge import merge_traces
from pypto.compile_profiling.viewer.process_order import (
    HEAD_BYTES,
    WORKSPACE,
    process_order,
    startup_commands,
)

CASE = CALIBRATED[0]      # a host-orchestrated capture: host orchestrator and device lanes


@pytest.fixture(scope="module")
def merged(tmp_path_factory) -> dict[str, Path]:
    """The compile trace, run log and capture of one run merged, in both formats."""
    d = tmp_path_factory.mktemp("order")
    compile_trace_around(FIXTURES / CASE, d / "trace.json")
    tl = merge_traces([d / "trace.json", FIXTURES / CASE]).timeline
    out = {}
    for ext in (".json", ".pftrace"):
        out[ext] = d / f"merged{ext}"
        write_timeline(tl, out[ext])
    out["expected"] = [(p.name, p.pid) for p in sorted(tl.processes, key=lambda p: p.sort_index)]
    return out


def _head(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(HEAD_BYTES)


def _kind(name: str) -> str:
    return ("compile" if name.startswith("PyPTO compile") else
            "host" if "Host Orchestrator" in name or name.startswith(("host", "Host")) else
            "device" if name.startswith("Device ") else "other")


@pytest.mark.parametrize("ext", [".json", ".pftrace"])
def test_the_order_is_read_from_the_files_head_compile_then_host_then_device(merged, ext):
    order = process_order(_head(merged[ext]))
    assert order == merged["expected"]
    kinds = [_kind(name) for name, _ in order]
    assert kinds[0] == "compile" and "host" in kinds and kinds[-1] == "device"
    assert kinds == sorted(kinds, key=["compile", "host", "device"].index)


def test_a_gzipped_json_gives_the_same_order(merged, tmp_path):
    gz = tmp_path / "m.json.gz"
    gz.write_bytes(gzip.compress(merged[".json"].read_bytes()))
    assert process_order(_head(gz)) == merged["expected"]


@pytest.mark.parametrize("head", [b"", b"not a trace", b'{"traceEvents": [{"ph": "X"}]}',
                                  b"\x1f\x8bnot gzip", b"\x0a\x05\xff\xff\xff\xff\xff",
                                  b'{"traceEvents": [{"ph": "M", "name": "process_name", "pid":'])
def test_a_file_that_names_no_process_at_its_start_gets_no_commands(head):
    assert process_order(head) == [] and startup_commands([]) == ""


def test_the_commands_copy_each_group_in_order_then_switch_to_the_workspace():
    order = [("PyPTO compile", 10), ("r0 · Host Orchestrator", 8),
             ("Device r0 · AICore (calibrated ±238 ns)", 2)]
    arg = startup_commands(order)
    assert arg.startswith("&startupCommands=") and "&" not in arg[1:] and "#" not in arg
    commands = json.loads(urllib.parse.unquote(arg.split("=", 1)[1]))
    assert [c["args"][0] for c in commands[:-1]] == [
        "^PyPTO compile.* 10$", "^r0 · Host Orchestrator.* 8$", "^Device r0 · AICore.* 2$"]
    assert {c["id"] for c in commands[:-1]} == {
        "dev.perfetto.CopyTracksToWorkspaceByRegexWithAncestors"}
    assert all(c["args"][1] == WORKSPACE for c in commands[:-1])
    assert commands[-1] == {"id": "dev.perfetto.SwitchWorkspace", "args": [WORKSPACE]}
    pattern = startup_commands([("a+b (x) [y] *z?", 3)])
    assert json.loads(urllib.parse.unquote(pattern.split("=", 1)[1]))[0]["args"][0] == \
        "^a\\+b.* 3$"


_GROUPS_ON_SCREEN = """() => Array.from(document.querySelectorAll('.pf-track__title-popup'))
  .map(e => [e.textContent, e.getBoundingClientRect().top])"""
_LOADED = "() => !!(window.app && window.app.trace && !window.app.isLoadingTrace)"


@pytest.mark.perfetto_ui
@pytest.mark.parametrize("ext", [".json", ".pftrace"])
def test_open_shows_compile_then_host_then_device_top_to_bottom(perfetto_ui, merged, ext,
                                                                 tmp_path):
    """As `pypto-profile open --offline` opens it: the UI's own files and the trace from one
    local server, at the URL it prints. The screenshot is kept beside the test's files."""
    from pypto.compile_profiling.viewer.server import TraceServer

    trace = tmp_path / merged[ext].name
    shutil.copyfile(merged[ext], trace)
    with TraceServer(0, offline=True) as server:
        server.set_trace(str(trace))
        page = perfetto_ui.browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            page.route("**/*", lambda route: route.continue_()
                       if route.request.url.startswith(f"http://127.0.0.1:{server.port}/")
                       else route.abort())
            page.goto(server.ui_url)
            page.wait_for_function(_LOADED, timeout=90_000)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:     # the startup commands run after the load
                title = page.evaluate("() => window.app.trace.workspace.title")
                if title == WORKSPACE:
                    break
                page.wait_for_timeout(100)
            assert title == WORKSPACE
            page.wait_for_timeout(500)             # let the workspace's tracks draw
            page.screenshot(path=str(tmp_path / f"order{ext}.png"))
            shown = sorted(page.evaluate(_GROUPS_ON_SCREEN), key=lambda x: x[1])
        finally:
            page.close()
    names = [name for name, _ in shown]
    want = [f"{name} {pid}" for name, pid in merged["expected"]]
    assert names[:len(want)] == want, names
    kinds = [_kind(name) for name in names[:len(want)]]
    assert kinds[0] == "compile" and kinds[-1] == "device" and "host" in kinds
    assert kinds == sorted(kinds, key=["compile", "host", "device"].index)
    assert (tmp_path / f"order{ext}.png").stat().st_size > 10_000
