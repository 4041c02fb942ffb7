"""Showing a trace in the Perfetto UI: where the UI is and the port it may fetch from
(`perfetto_ui`, light enough for any command's argument parser), and the hardened local
server both commands' `--open` use (`server`)."""
