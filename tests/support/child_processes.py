"""A CLI child a test started with pipes, ended however the test went."""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen) -> None:
    """Kill `proc` if it still runs, reap it, close its pipes (a test's `finally`)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
