"""Shared pytest setup: the repo root and `tests/support/` (the helpers shared by the tests)
on sys.path, and session fixtures used by several tests."""

from __future__ import annotations

import collections
import os
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# A job started in the background of a non-interactive shell (nohup, some CI scripts) runs with
# SIGINT ignored, and every child inherits that: the tests that press Ctrl-C on a CLI child
# would wait for nothing. A Python handler here is reset to the default in children at exec,
# so they get Python's usual KeyboardInterrupt again.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO_ROOT = Path(__file__).resolve().parent.parent
SUPPORT_DIR = Path(__file__).resolve().parent / "support"
for _path in (str(REPO_ROOT), str(SUPPORT_DIR)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# Hypothesis's per-example deadline and "too slow" health check measure the machine's load,
# not our code: off, as in Hypothesis's own "ci" profile (loaded by itself under CI, where it
# also derandomizes the examples).
if not settings().derandomize:
    settings.register_profile(
        "busy-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("busy-machine")


_started_ui: list = []  # the session's PerfettoUI once a test asked for it


@pytest.fixture(scope="session")
def perfetto_ui():
    """One offline Perfetto UI (HTTP server + headless Chromium) shared by the whole session.

    Fails when a requirement is missing and the CI environment variable is set, skips otherwise.
    """
    from perfetto_ui import PerfettoUI, missing_requirements

    problem = missing_requirements()
    if problem is not None:
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail(f"perfetto_ui: {problem} (required when CI is set)", pytrace=False)
        pytest.skip(f"perfetto_ui: {problem}")
    with PerfettoUI() as ui:
        _started_ui.append(ui)
        yield ui
        _started_ui.clear()


@pytest.fixture(autouse=True)
def _close_traces_the_test_loaded(request):
    """After each test, close the traces loaded during it, so the next test reuses the booted
    UI page instead of booting another. Traces loaded by module- or session-scoped fixtures
    (set up before this one) stay open for the tests that share them."""
    if _started_ui and not _started_ui[0].running and _uses_the_ui(request.node):
        _started_ui[0].start()  # a UI test after pytest_runtest_teardown closed it
    before = {id(t) for t in _started_ui[0].open_traces} if _started_ui else set()
    yield
    if _started_ui:
        for trace in _started_ui[0].open_traces:
            if id(trace) not in before:
                trace.close("the test that loaded it ended")


def _uses_the_ui(item) -> bool:
    return item.get_closest_marker("perfetto_ui") is not None


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the xdist_group marks
def pytest_collection_modifyitems(session, config, items):
    """Run the Perfetto UI tests last, and together.

    Last: the session's browser is driven through Playwright's sync API, which keeps an event
    loop running on the main thread from its first use until it is closed: a test after it
    that calls `asyncio.run` on the main thread would fail ("cannot be called from a running
    event loop"), depending only on test order. `pytest_runtest_teardown` below closes it
    after the last UI test of a run of them, so the order no longer matters.

    Together: under pytest-xdist (`-n`, with `--dist loadgroup` as pyproject.toml sets) they
    form one group that runs on one worker, so one browser boots the UI once instead of once
    per worker; that group is the largest, so it is handed out first."""
    items.sort(key=_uses_the_ui)
    for item in items:
        if _uses_the_ui(item):
            item.add_marker(pytest.mark.xdist_group("perfetto_ui"))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last of a run of UI tests (its fixtures torn down), stop the browser and its
    event loop: under xdist that worker goes on with other tests."""
    if _started_ui and _uses_the_ui(item) and (nextitem is None or not _uses_the_ui(nextitem)):
        _started_ui[0].close()


def _test_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class _PerFileProgress:
    """Under pytest-xdist, one progress line per test file, printed when its last test has
    finished (on whichever worker): `tests/test_x.py .....  [ 42%]`, as a serial run prints
    them, instead of xdist's stream of dots that names no file. Files end out of order."""

    def __init__(self, reporter):
        self.reporter = reporter
        reporter._show_progress_info = False  # the lines below say how far the run is
        self.total: collections.Counter = collections.Counter()
        self.done: collections.Counter = collections.Counter()
        self.letters: dict[str, list[str]] = collections.defaultdict(list)
        self.finished = 0
        self._raw = False

    @pytest.hookimpl
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.total:  # every worker collects the same tests
            self.total.update(_test_file(nodeid) for nodeid in ids)

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report, config):
        category, letter, word = yield
        # the terminal reporter writes no letter of its own; the word stays for the summary
        return (category, letter if self._raw else "", word)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        self._raw = True
        try:
            letter = self.reporter.config.hook.pytest_report_teststatus(
                report=report, config=self.reporter.config)[1]
        finally:
            self._raw = False
        path = _test_file(report.nodeid)
        if letter:
            self.letters[path].append(letter)
        if report.when != "teardown":
            return
        self.done[path] += 1
        self.finished += 1
        if self.done[path] == self.total[path]:
            percent = self.finished * 100 // max(1, sum(self.total.values()))
            width = max(20, self.reporter._tw.fullwidth - len(path) - 9)
            letters = "".join(self.letters.pop(path))
            lines = [letters[i:i + width] for i in range(0, len(letters), width)] or [""]
            self.reporter.ensure_newline()
            for i, chunk in enumerate(lines):
                head = path if i == 0 else " " * len(path)
                tail = f"[{percent:3d}%]" if i == len(lines) - 1 else ""
                self.reporter.write_line(f"{head} {chunk:<{width}} {tail}".rstrip())


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if (reporter is not None and config.pluginmanager.hasplugin("dsession")
            and config.get_verbosity(getattr(config, "VERBOSITY_TEST_CASES", "test_cases")) <= 0):
        config.pluginmanager.register(_PerFileProgress(reporter), "per-file-progress")
