"""Placing: every source on the reference host's CLOCK_MONOTONIC, and how sure that is.

`placement.place(inputs)` takes what `read` handed over and decides, per source, the offset
that puts it on one axis: compile processes and run logs by their hosts' wall-clock anchors
(`clock_alignment`), each capture by its clock anchors when it has them, else by span
containment inside its run's invocation (`containment`, `pairing`, `run_log_choice`,
`place_device`), host phases beside them (`place_host`), and refuses sources that cannot be
from one run (`place_check`). It hands `lay_out` a `Plan` (`plan`): where everything goes,
with the method and uncertainty of each placement, and nothing drawn yet.
"""
