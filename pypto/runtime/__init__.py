"""Run compiled PyPTO programs on a simulated Ascend device that writes Simpler's DFX files.

`run(program, *tensors, config=None)` compiles and runs (upstream's form; the golden-checking
form `run(program, tensor_specs, golden, config)` too), executing on the simulator (threads as
AICore cores, AICPU schedulers, a free-running 50 MHz counter); with
`RunConfig(compile_profiling=True)` the whole trip is profiled, and with
`enable_chip_swimlane` / `enable_dep_gen` the device writes `<work_dir>/dfx_outputs/`.

Its names are imported on first use: `ir.compile` imports `pypto.runtime.compile` and
should not pay for the simulated device.
"""

import importlib

__all__ = ["RunConfig", "RunResult", "TensorSpec", "run"]

_WHERE = {"RunConfig": "config", "RunResult": "config", "TensorSpec": "config", "run": "runner"}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
