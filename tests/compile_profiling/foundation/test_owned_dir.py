"""`foundation.owned_dir`: a failed write of a staged tree names the output asked for."""

from __future__ import annotations

import errno

import pytest

from pypto.compile_profiling.foundation.owned_dir import stage_beside, writing_into
from pypto.errors import OutputPathError, ProfileWriteError


def test_a_failure_inside_the_stage_names_the_target(tmp_path):
    target = tmp_path / "ds"
    stage = stage_beside(target)
    with pytest.raises(ProfileWriteError) as failed, writing_into(stage, target):
        raise OSError(errno.ENOSPC, "No space left on device", str(stage / "slice" / "p.parquet"))
    assert str(failed.value) == f"{target}/slice/p.parquet: cannot write: No space left on device"
    with pytest.raises(ProfileWriteError) as failed, writing_into(stage, target):
        raise ProfileWriteError(f"{stage}/x: cannot write: Permission denied")
    assert str(failed.value) == f"{target}/x: cannot write: Permission denied"
    with pytest.raises(ProfileWriteError) as failed, writing_into(stage, target):
        raise OSError(errno.EIO, "Input/output error")
    assert str(failed.value) == f"{target}: cannot write: Input/output error"


def test_a_refused_output_passes_through_as_it_is(tmp_path):
    stage, target = tmp_path / "s", tmp_path / "t"
    refused = OutputPathError(target, "is a FIFO")
    with pytest.raises(OutputPathError) as failed, writing_into(stage, target):
        raise refused
    assert failed.value is refused
