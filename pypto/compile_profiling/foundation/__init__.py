"""The floor everything stands on: inputs opened safely (`input_files`), outputs written
whole or not at all (`atomic_io`), strict JSON whatever a value holds (`safe_json`), and the
garbage collector held while big acyclic structures are built (`gc_pause`), durations in one
unit and round axis ticks (`units`). Nothing here
imports anything else of `pypto.compile_profiling`."""
