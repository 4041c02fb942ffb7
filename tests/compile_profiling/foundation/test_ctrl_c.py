"""`foundation.ctrl_c`: a Ctrl-C inside a finalizer is held and raised after, never lost."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from pypto.compile_profiling.foundation.ctrl_c import ctrl_c_deferred


class _Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)      # the Ctrl-C lands inside the finalizer
        for _ in range(1000):                    # Python code: the handler runs in here
            pass


@pytest.fixture
def as_a_command(monkeypatch):
    """SIGINT handled as in a command (Python's default), whatever the test runner set."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    yield unraisable
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_inside_a_finalizer_is_raised_after_the_block(as_a_command):
    with pytest.raises(KeyboardInterrupt), ctrl_c_deferred():
        obj = _Finalized()
        del obj                                   # its __del__ runs now, inside the block
    assert as_a_command == []                     # nothing "ignored"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    obj = _Finalized()
    del obj                                       # without it: the Ctrl-C is lost
    assert [u.exc_type for u in as_a_command] == [KeyboardInterrupt]


def test_no_ctrl_c_no_interrupt_and_the_handler_is_back(as_a_command):
    with ctrl_c_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
