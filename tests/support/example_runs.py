"""The README's main example (`examples/many_kernels.py`, 64 kernels) compiled and run into a
work dir, for the tests that need a real run's `report/` and `dfx_outputs/`."""

from __future__ import annotations

from pathlib import Path

from examples import many_kernels
from pypto.runtime import RunConfig, run


def run_many_kernels(work_dir: Path, **config) -> Path:
    """`work_dir` after a profiled run at swimlane level 4 with dependencies (`config`: more
    `RunConfig` fields); fails the test if the run did not pass."""
    cfg = RunConfig(work_dir=str(work_dir), compile_profiling=True, enable_chip_swimlane=4,
                    enable_dep_gen=True, case_name="many_kernels", **config)
    result = run(many_kernels.ManyKernels, many_kernels.tensor_specs(), many_kernels.golden, cfg)
    assert result.passed, result.error
    return Path(work_dir)
