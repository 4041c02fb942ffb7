#!/usr/bin/env python3
"""Merge compile traces and Simpler captures for Perfetto: `pypto-merge-traces` from a checkout.

Runs without installing the package (`python3 tools/merge_traces.py ...` from the repo root);
all the work is in `pypto.compile_profiling.cli.merge_traces`.
"""

import os
import sys

if __package__ in (None, ""):  # run as a script: make the checkout importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypto.compile_profiling.cli.merge_traces import main

if __name__ == "__main__":
    sys.exit(main())
