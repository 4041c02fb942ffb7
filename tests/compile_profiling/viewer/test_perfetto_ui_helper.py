"""The UI test helper itself (tests/support/perfetto_ui.py): a load the UI gives up on fails at
once with the UI's own words, never after the helper's whole timeout."""

from __future__ import annotations

import pytest
from merge_inputs import FIXTURES
from perfetto_ui import TraceLoadError

from pypto.compile_profiling.cli.merge_traces import main as merge_main


@pytest.mark.perfetto_ui
def test_a_download_the_ui_cannot_finish_fails_at_once_with_its_alert(perfetto_ui, tmp_path):
    """As a browser past its in-memory blob limit does: the download stops, the UI shows an
    `alert` and goes back home. The helper raises with the alert's text; waiting for its
    timeout (10 minutes here) or the stall grace would say "timed out" / "stopped loading"."""
    trace = tmp_path / "m.pftrace"
    assert merge_main([str(FIXTURES / "tmr_vector_example_l4_depgen"), "-o", str(trace),
                       "-q"]) == 0
    for _ in range(2):     # a page booted by this load, then one that showed a trace before
        with pytest.raises(TraceLoadError) as failed:
            perfetto_ui.load(trace, timeout_s=600, cut_after=trace.stat().st_size // 2)
        text = str(failed.value)
        first = text.splitlines()[0]
        # a fresh page (`?url=`, as `open` hands it) says it in an alert; a page that showed a
        # trace before (`openTraceFromUrl`) in its "Oops" dialog
        assert first in ((f"{trace}: the UI could not load it: alert: Could not load local "
                         "trace TypeError: Failed to fetch"),
                         f"{trace}: the UI could not open the trace"), text
        assert "Failed to fetch" in text or "TypeError: network error" in text, text
        with perfetto_ui.load(trace) as t:            # the next load still works
            assert t.slice_count() > 0
