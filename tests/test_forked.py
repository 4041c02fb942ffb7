"""Forked helper processes: results, our own errors and dead children come back faithfully."""

from __future__ import annotations

import os
import pickle

import pytest

from pypto.compile_profiling.forked import ForkedCall, ForkedChildFailed, ForkedPart
from pypto.errors import ParserError, ProfileWriteError, TraceInputError


def test_result_comes_back():
    with ForkedCall(lambda: {"pid": os.getpid(), "n": 42}) as call:
        got = call.result()
    assert got["n"] == 42 and got["pid"] != os.getpid()


def test_our_errors_are_raised_in_the_parent_with_their_parts():
    def fail():
        raise TraceInputError("deps.json", "tasks[3].task_id: not a decimal string")

    with ForkedCall(fail) as call, pytest.raises(TraceInputError) as info:
        call.result()
    assert info.value.path == "deps.json" and "tasks[3]" in info.value.problem
    assert str(info.value) == "deps.json: tasks[3].task_id: not a decimal string"


def test_library_errors_survive_pickling_with_their_fields():
    for err in (TraceInputError("a.json", "truncated"), ParserError("bad op", "p.py", 3, 4)):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err) and vars(back) == vars(err)


def test_a_child_that_dies_is_reported():
    with ForkedCall(lambda: os._exit(3)) as call, pytest.raises(ForkedChildFailed):
        call.result()


def test_unpicklable_result_is_reported_not_lost():
    with ForkedCall(lambda: (lambda: None)) as call, pytest.raises(ForkedChildFailed) as info:
        call.result()
    assert "unpicklable" in str(info.value)


def test_cancel_stops_and_reaps_a_running_child():
    import time

    call = ForkedCall(lambda: time.sleep(60))
    pid = call._pid
    call.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: no such child any more


def test_forked_part_appends_the_childs_bytes(tmp_path):
    out_path = tmp_path / "out.txt"
    with open(out_path, "w", encoding="utf-8") as out, \
            ForkedPart(lambda f: f.write("second ✓\n".encode()), tmp_path) as part:
        out.write("first\n")
        assert part.copy_into(out) == len("second ✓\n".encode())
    assert out_path.read_text(encoding="utf-8") == "first\nsecond ✓\n"


def test_forked_part_turns_a_dead_child_into_a_write_error(tmp_path):
    with open(tmp_path / "out.txt", "w") as out, \
            ForkedPart(lambda f: os._exit(1), tmp_path) as part, \
            pytest.raises(ProfileWriteError):
        part.copy_into(out)
