"""Reading: every input of a merge, read and checked, nothing placed yet.

`read_inputs.read_inputs(paths)` finds what each path is (a compile trace or profile, a
capture leaf of Simpler's DFX outputs, a run log, host phase records) and reads it:
records into NumPy columns (`read_records`, `record_phases`, `json_pieces`), the run log's
spans (`read_run_log`), Simpler's converted traces (`read_converted`), what each field means
(`simpler_schema`), and each source's wall-clock anchor (`wall_anchor`). It hands `place`
an `Inputs`: each source with its own clock, as recorded; bad input is one
`TraceInputError` naming the file, before anything is placed.
"""
