"""Run compiled PyPTO programs on a simulated Ascend device that writes Simpler's DFX files.

`run(program, tensor_specs, golden, config)` compiles, computes the golden reference, executes
on the simulator (threads as AICore cores, AICPU schedulers, a free-running 50 MHz counter)
and compares; with `RunConfig(compile_profiling=True)` the whole trip is profiled, and with
`enable_chip_swimlane` / `enable_dep_gen` the device writes `<work_dir>/dfx_outputs/`.
"""

from pypto.runtime.config import RunConfig, RunResult, TensorSpec
from pypto.runtime.runner import run

__all__ = ["RunConfig", "RunResult", "TensorSpec", "run"]
