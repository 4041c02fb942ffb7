"""`foundation.gc_pause`: the collector held inside, as it was after, even on an error."""

from __future__ import annotations

import gc

import pytest

from pypto.compile_profiling.foundation.gc_pause import gc_paused


def test_the_collector_is_held_inside_and_restored_after():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError
    assert gc.isenabled()


def test_a_collector_held_before_stays_held():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
