"""The two commands, `pypto-merge-traces` (`merge_traces`) and `pypto-profile` (`profile`):
argument parsing, messages and exit codes over the library; nothing else."""
