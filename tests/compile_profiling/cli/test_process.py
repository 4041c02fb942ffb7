"""Both commands end a SIGTERM as a Ctrl-C: one line, the output not half-written, 143
(`cli.process`, shared by `pypto-merge-traces` and `pypto-profile`)."""

from __future__ import annotations

import signal
import subprocess
import sys

from local_ports import free_port
from merge_inputs import FIXTURES


def test_pypto_profile_ends_a_sigterm_with_one_line_and_143(tmp_path):
    trace = tmp_path / "m.json"
    subprocess.run([sys.executable, "-m", "pypto.compile_profiling.cli.merge_traces",
                    str(FIXTURES / "tmr_vector_example_l4_depgen"), "-o", str(trace), "-q"],
                   check=True)
    child = subprocess.Popen([sys.executable, "-m", "pypto.compile_profiling", "open",
                              str(trace), "--no-browser", "--port", str(free_port())],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = child.stdout.readline()           # serving: it waits for the browser now
        assert url.startswith("http://127.0.0.1:"), url
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 143, err
    assert err.splitlines()[-1] == "interrupted by SIGTERM", err
    assert "Traceback" not in err
