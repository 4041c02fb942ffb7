"""Laying out: the `Plan` drawn as one `Timeline` for the exporters.

`layout.lay_out(plan, selection)` turns each placed source into processes, lanes and slice
columns (`builder`, `lanes`): compile stages and host spans (`layout_host`), each capture's
device views (`layout_device`, from its joined rows, `device_rows`, with names from
`device_labels`), arrows (`device_flows`), counters and kernel totals (`device_counters`,
`kernel_totals`), converted traces (`layout_converted`); `side_by_side` puts two runs' timelines
one above the other. It hands the writers of `timeline` a `Timeline`, and the summary and
warnings to the caller.
"""
