"""What the Perfetto UI can be handed, said before a user waits for it.

The UI (`?url=` as `pypto-profile open` hands it, or a file opened by hand) first downloads
the whole trace into an in-memory blob. A browser without an on-disk profile (a private
window, a guest, any automated one) cannot hold a blob over 2 GiB: measured in the offline UI
v52 in headless Chromium, a 2047.9 MiB file downloads, a 2048.1 MiB one ends in the alert
"Could not load local trace TypeError: Failed to fetch" a few seconds in, and the UI's home
page. A browser with a normal profile spills the blob to disk and goes on, for minutes, and
keeps a copy of the trace in its cache. That holds for every format; the numbers are in
docs/merging.md ("Big runs").
"""

from __future__ import annotations

__all__ = ["FETCH_LIMIT_BYTES", "too_big_for_ui"]

FETCH_LIMIT_BYTES = 2 * 2**30


def too_big_for_ui(path: str, size: int, *, merged_here: bool) -> str | None:
    """One line, when a trace of `size` bytes is past what the UI can be handed (else None):
    the size, the limit and the ways out. `merged_here`: said by the merge that wrote it (so
    its own options are the first way out), else by `open`."""
    if size <= FETCH_LIMIT_BYTES:
        return None
    cut = ("--window START:END or --ranks LIST merge a part of it" if merged_here else
           "pypto-merge-traces INPUT... --window START:END (or --ranks LIST) merges a part")
    smaller = "" if path.endswith(".pftrace") else "; .pftrace is about 4x smaller than JSON"
    return (f"{path} is {size / 1e6:,.1f} MB ({size / 2**20:,.1f} MiB), past the "
            f"{FETCH_LIMIT_BYTES / 2**20:,.0f} MiB (2 GiB) the Perfetto UI can download in a browser without a disk profile (a private window, automation; "
            "a normal one takes minutes and keeps a copy in its cache). Ways out: "
            f"{cut}{smaller}; Parquet (--format parquet) and pypto-profile query ask about the "
            "whole run; Perfetto's own native trace_processor --httpd TRACE serves it to "
            "ui.perfetto.dev (it takes port 9001, pypto-profile open's default)")
