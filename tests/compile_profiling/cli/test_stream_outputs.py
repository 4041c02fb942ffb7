"""Outputs that are streams are written through, never replaced: `-o` a private symlink to
`/proc/self/fd/1` (never the real `/dev/stdout`) with stdout a regular file (`> ci.log`)
or a pipe, `/proc/self/fd/2`, and `--analyze` the same, for every command that writes. The
link is still the link afterwards and the bytes are in the log."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from simpler_fixtures import FIXTURES

CAPTURE = FIXTURES / "hbg_bgemm_l4_depgen"
PROFILE = [sys.executable, "-m", "pypto.compile_profiling"]
MERGE = [sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces"]


def _link(tmp_path, name: str, fd: int):
    link = tmp_path / name
    os.symlink(f"/proc/self/fd/{fd}", link)
    return link


def _run(argv, log=None):
    """The command with stdout to `log` (a regular file) or a pipe; (code, stdout, stderr)."""
    if log is None:
        r = subprocess.run(argv, capture_output=True, text=True, check=False)
        return r.returncode, r.stdout, r.stderr
    with open(log, "w") as f:
        r = subprocess.run(argv, stdout=f, stderr=subprocess.PIPE, text=True, check=False)
    return r.returncode, log.read_text(), r.stderr


COMMANDS = {
    "analyze": lambda out: [*PROFILE, "analyze", str(CAPTURE), "-o", str(out)],
    "analyze-json": lambda out: [*PROFILE, "analyze", str(CAPTURE), "--format", "json",
                                 "-o", str(out)],
    "kernels": lambda out: [*PROFILE, "kernels", str(CAPTURE), "-o", str(out)],
    "html": lambda out: [*PROFILE, "html", str(CAPTURE), "-o", str(out)],
    "merge": lambda out: [*MERGE, str(CAPTURE), "-o", str(out), "-q"],
}
MARK = {"analyze": "hbg_bgemm_l4_depgen: ", "analyze-json": '"schema"',
        "kernels": "func_0_a", "html": "<!DOCTYPE html>", "merge": '"traceEvents"'}


@pytest.mark.parametrize("stdout_is", ["file", "pipe"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_link_to_stdout_is_written_through(tmp_path, command, stdout_is):
    link = _link(tmp_path, "out", 1)
    code, out, err = _run(COMMANDS[command](link),
                          tmp_path / "ci.log" if stdout_is == "file" else None)
    assert code == 0, err
    assert MARK[command] in out
    assert os.path.islink(link) and os.readlink(link) == "/proc/self/fd/1"
    assert "wrote" not in err or "wrote to" in err     # never "wrote <a file>"


def test_a_link_to_stderr_and_the_analysis_beside_a_merge_are_written_through(tmp_path):
    err_link, report = _link(tmp_path, "err", 2), _link(tmp_path, "report", 1)
    out = tmp_path / "merged.json"
    code, log, err = _run([*MERGE, str(CAPTURE), "-o", str(out), "--analyze", str(report),
                           "-q"], tmp_path / "ci.log")
    assert code == 0, err
    assert log.startswith("hbg_bgemm_l4_depgen: ") and out.stat().st_size > 0
    assert os.path.islink(report)
    code, log, err = _run([*PROFILE, "analyze", str(CAPTURE), "-o", str(err_link)],
                          tmp_path / "ci2.log")
    assert code == 0 and log == "" and err.startswith("hbg_bgemm_l4_depgen: ")
    assert os.path.islink(err_link)


def test_a_file_writer_never_replaces_a_stream(tmp_path):
    """The atomic writer itself (reports, traces) refuses a stream rather than renaming a
    file over it."""
    from pypto.compile_profiling.foundation.atomic_io import atomic_write_text
    from pypto.errors import OutputPathError

    link = _link(tmp_path, "out", 1)
    with pytest.raises(OutputPathError, match="is a stream"):
        atomic_write_text(link, "report")
    assert os.path.islink(link)


def test_a_reader_that_stops_early_ends_the_merge_with_141_and_no_wrote_line():
    """`merge -o - | head -c 100` for a trace between 64 KiB and 1 MiB: the copy to stdout
    is whole writes to its descriptor, so the closed pipe is seen (141, as SIGPIPE), never
    "wrote to stdout" and 0."""
    p = subprocess.Popen([*MERGE, str(CAPTURE), "-o", "-"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    head = p.stdout.read(100)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() == 141 and len(head) == 100
    assert "wrote" not in err and "Traceback" not in err
    size = len(subprocess.run([*MERGE, str(CAPTURE), "-o", "-", "-q"], capture_output=True,
                              check=True).stdout)
    assert 64 << 10 < size < 1 << 20          # the size the buffered copy got wrong
