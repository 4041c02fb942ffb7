"""Command-line scripts runnable from a source checkout (`python3 tools/<name>.py`)."""
