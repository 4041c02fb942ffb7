"""A compile profile as one read-only model, whatever it came from: a live profiler's
stages, `pipeline_profile.json` or `trace.json` (`load`), and what every report and
command reads off it: self time, the unaccounted rest, folded families (`view`)."""
