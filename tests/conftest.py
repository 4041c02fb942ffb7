"""Shared pytest setup: the repo root on sys.path, and session fixtures used by several tests."""

from __future__ import annotations

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
TESTS_DIR = Path(__file__).resolve().parent
for _path in (str(REPO_ROOT), str(TESTS_DIR)):
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
def _close_traces_the_test_loaded():
    """After each test, close the traces loaded during it, so the next test reuses the booted
    UI page instead of booting another. Traces loaded by module- or session-scoped fixtures
    (set up before this one) stay open for the tests that share them."""
    before = {id(t) for t in _started_ui[0].open_traces} if _started_ui else set()
    yield
    if _started_ui:
        for trace in _started_ui[0].open_traces:
            if id(trace) not in before:
                trace.close("the test that loaded it ended")


def pytest_collection_modifyitems(session, config, items):
    """Run the Perfetto UI tests last. The session's browser is driven through Playwright's
    sync API, which keeps an event loop running on the main thread from its first use to the
    end of the session: a test after it that calls `asyncio.run` on the main thread would
    fail ("cannot be called from a running event loop"), depending only on test order."""
    items.sort(key=lambda item: item.get_closest_marker("perfetto_ui") is not None)
