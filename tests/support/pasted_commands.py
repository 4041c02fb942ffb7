"""Commands run as a user pastes them into a new shell (`sh -c`, no virtual environment on
PATH), with a `$BROWSER` that fetches what the Perfetto UI would: for the tests of the
README's command blocks and of the hints the main job prints."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

FETCH = """
import sys, urllib.parse, urllib.request
url = sys.argv[1]
trace = urllib.parse.parse_qs(url.split("?", 1)[1])["url"][0]   # what the UI would fetch
with urllib.request.urlopen(trace, timeout=30) as r:
    r.read()
"""


def shell_env(home: Path, **more: str) -> dict[str, str]:
    """A new shell's environment: PATH without the venv, HOME in `home`, and $BROWSER a
    program (written there) that fetches the trace a Perfetto UI link names."""
    browser = home / "browser"          # $BROWSER names one program, run with the URL
    browser.write_text(f"#!{sys.executable}\n{FETCH}")
    browser.chmod(0o755)
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "BROWSER": str(browser), **more}


def run_pasted(command: str, cwd: Path, env: dict[str, str], *, timeout: float,
               merged: bool = False) -> tuple[int, str, str]:
    """(status, stdout, stderr) of `command` run by `sh` in its own process group (stderr
    into stdout with `merged`); whatever it leaves running (a server) is killed."""
    shell = subprocess.Popen(["sh", "-c", command], cwd=cwd, env=env, text=True,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                             start_new_session=True)
    try:
        out, err = shell.communicate(timeout=timeout)
    finally:
        if shell.poll() is None:            # never leave a server on the port behind
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
    return shell.returncode, out, err or ""
