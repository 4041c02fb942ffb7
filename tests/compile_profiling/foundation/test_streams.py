"""`foundation.streams`: which outputs are streams, written through, never replaced."""

from __future__ import annotations

import os

from pypto.compile_profiling.foundation.streams import DEVICE, stream_of


def test_standard_streams_descriptors_and_links_to_them_are_streams(tmp_path):
    assert stream_of("/dev/stdout") == 1 and stream_of("/dev/stderr") == 2
    assert stream_of("/dev/fd/7") == 7 and stream_of("/proc/self/fd/1") == 1
    link = tmp_path / "out"
    link.symlink_to("/proc/self/fd/1")
    hop = tmp_path / "hop"
    hop.symlink_to(link)
    assert stream_of(link) == 1 and stream_of(hop) == 1
    assert stream_of("/dev/null") == DEVICE


def test_files_and_links_to_files_are_not(tmp_path):
    f = tmp_path / "trace.json"
    f.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(f)
    assert stream_of(f) is None and stream_of(link) is None
    assert stream_of(tmp_path / "missing.json") is None
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    assert stream_of(loop) is None
