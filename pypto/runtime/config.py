"""User-facing run settings: `RunConfig`, `TensorSpec`, `RunResult`.

Everything here is checked when it is built (or in `validate_*`), so a bad setting fails
with one clear `RuntimeConfigError` before anything is compiled or executed.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pypto.errors import RuntimeConfigError

#: Simulated platforms: name -> device counter frequency (Hz). a2a3 counts at 50 MHz, a5 at 1 GHz.
SIM_PLATFORMS: dict[str, int] = {"a2a3sim": 50_000_000, "a5sim": 1_000_000_000}
#: Real hardware platforms we know by name but cannot drive here.
HARDWARE_PLATFORMS = ("a2a3", "a5")
#: Simpler's orchestration modes.
RUNTIMES = ("host_build_graph", "tensormap_and_ringbuffer")
#: Dtypes a tensor may have (NumPy names).
SUPPORTED_DTYPES = ("float32", "float16", "int32", "int64", "uint8", "int8", "int16", "float64")
MAX_SWIMLANE_LEVEL = 4


def normalize_dtype(dtype: Any, what: str) -> str:
    """NumPy dtype name for `dtype` (a string, NumPy type or dtype); unknown -> error."""
    try:
        name = np.dtype(dtype).name
    except TypeError as e:
        raise RuntimeConfigError(f"{what}: unknown dtype {dtype!r}") from e
    if name not in SUPPORTED_DTYPES:
        raise RuntimeConfigError(
            f"{what}: unsupported dtype {dtype!r} (supported: {', '.join(SUPPORTED_DTYPES)})")
    return name


def _swimlane_level(value: Any, flag: str) -> int:
    if isinstance(value, bool):
        return MAX_SWIMLANE_LEVEL if value else 0
    if not isinstance(value, (int, np.integer)) or not 0 <= int(value) <= MAX_SWIMLANE_LEVEL:
        raise RuntimeConfigError(f"{flag} must be a level 0-{MAX_SWIMLANE_LEVEL} or a bool, "
                                 f"got {value!r}")
    return int(value)


@dataclass
class TensorSpec:
    """One program tensor: its name (= orchestration parameter), shape, dtype and start value.

    `init_value`: None (zeros), a scalar (filled), a NumPy array (copied; shape must match),
    a no-argument callable returning an array, or one of NumPy's factories
    (`np.zeros`, `np.ones`, `np.random.rand`, `np.random.randn`) called with the shape.
    A spec with `shape=()` is a scalar parameter; its value goes to `golden` in `params`.
    """

    __test__ = False

    name: str
    shape: tuple[int, ...] | list[int]
    dtype: Any
    init_value: Any = None
    is_output: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise RuntimeConfigError(f"TensorSpec name must be an identifier, got {self.name!r}")
        try:
            self.shape = tuple(int(d) for d in self.shape)
        except (TypeError, ValueError) as e:
            raise RuntimeConfigError(f"TensorSpec {self.name!r}: shape must be a sequence of "
                                     f"ints, got {self.shape!r}") from e
        if any(d <= 0 for d in self.shape):
            raise RuntimeConfigError(f"TensorSpec {self.name!r}: shape {self.shape} has a "
                                     "non-positive dimension")
        self.dtype = normalize_dtype(self.dtype, f"TensorSpec {self.name!r}")
        if isinstance(self.init_value, np.ndarray) and self.init_value.shape != self.shape:
            raise RuntimeConfigError(
                f"TensorSpec {self.name!r}: init_value has shape {self.init_value.shape}, "
                f"spec says {self.shape}")

    @property
    def is_scalar(self) -> bool:
        return self.shape == ()

    def create(self) -> Any:
        """A fresh value for this spec (array, or Python/NumPy scalar for scalar specs)."""
        dt = np.dtype(self.dtype)
        if self.is_scalar:
            return dt.type(0 if self.init_value is None else self.init_value)
        if self.init_value is None or self.is_output:
            return np.zeros(self.shape, dtype=dt)
        v = self.init_value
        if isinstance(v, (int, float, np.number, bool)):
            return np.full(self.shape, v, dtype=dt)
        if isinstance(v, np.ndarray):
            return np.array(v, dtype=dt, copy=True)
        if callable(v):
            if v in (np.zeros, np.ones, np.empty):
                out = v(self.shape, dtype=dt)
            elif v in (np.random.rand, np.random.randn, np.random.random_sample):
                out = v(*self.shape) if v is not np.random.random_sample else v(self.shape)
            else:
                out = v()
            arr = np.asarray(out, dtype=dt)
            if arr.shape != self.shape:
                raise RuntimeConfigError(f"TensorSpec {self.name!r}: init_value() returned shape "
                                         f"{arr.shape}, spec says {self.shape}")
            return np.array(arr, copy=True)
        raise RuntimeConfigError(
            f"TensorSpec {self.name!r}: unsupported init_value type {type(v).__name__}")


@dataclass
class RunConfig:
    """How `run()` compiles, executes and profiles a program.

    `platform`: `a2a3sim` (default) or `a5sim` run on the simulated device; `a2a3`/`a5` need
    real hardware and are refused. `runtime`: Simpler's orchestration mode
    (`host_build_graph` default, or `tensormap_and_ringbuffer`). `enable_chip_swimlane`:
    level 0-4 (`True` = 4). `enable_l2_swimlane` is its deprecated alias.
    `device_process=True` runs the device in a child process (a second pid in traces).
    `work_dir`: where everything goes (default `save_kernels_dir`, else
    `build_output/<program>_<timestamp>`).
    """

    __test__ = False

    platform: str = "a2a3sim"
    runtime: str = "host_build_graph"
    compile_profiling: bool = False
    save_kernels: bool = False
    save_kernels_dir: str | None = None
    work_dir: str | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    enable_chip_swimlane: int | bool = 0
    enable_l2_swimlane: int | bool | None = None
    enable_dep_gen: bool = False
    device_process: bool = False
    num_aic_cores: int = 8
    num_aiv_cores: int = 16
    num_sched_threads: int = 3
    case_name: str | None = None
    compile_options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.platform in HARDWARE_PLATFORMS:
            raise RuntimeConfigError(
                f"platform {self.platform!r} needs an Ascend NPU, which is not available here; "
                f"use one of the simulators: {', '.join(SIM_PLATFORMS)}")
        if self.platform not in SIM_PLATFORMS:
            raise RuntimeConfigError(f"unknown platform {self.platform!r} (expected one of "
                                     f"{', '.join((*SIM_PLATFORMS, *HARDWARE_PLATFORMS))})")
        if self.runtime not in RUNTIMES:
            raise RuntimeConfigError(
                f"unknown runtime {self.runtime!r} (expected one of {', '.join(RUNTIMES)})")
        if self.enable_l2_swimlane is not None:
            if self.enable_chip_swimlane not in (0, False):
                raise RuntimeConfigError("enable_chip_swimlane and its deprecated alias "
                                         "enable_l2_swimlane are both set; use only "
                                         "enable_chip_swimlane")
            warnings.warn("RunConfig.enable_l2_swimlane is deprecated; use enable_chip_swimlane",
                          DeprecationWarning, stacklevel=3)
            self.enable_chip_swimlane = _swimlane_level(self.enable_l2_swimlane,
                                                        "enable_l2_swimlane")
            self.enable_l2_swimlane = None
        self.enable_chip_swimlane = _swimlane_level(self.enable_chip_swimlane,
                                                    "enable_chip_swimlane")
        for name in ("rtol", "atol"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 or math.isnan(v):
                raise RuntimeConfigError(f"{name} must be a non-negative number, got {v!r}")
        for name, low in (("num_aic_cores", 0), ("num_aiv_cores", 0), ("num_sched_threads", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low or v > 4096:
                raise RuntimeConfigError(f"{name} must be an int >= {low}, got {v!r}")
        if self.num_aic_cores + self.num_aiv_cores == 0:
            raise RuntimeConfigError("the device needs at least one core")
        if self.case_name is not None and not str(self.case_name).replace("-", "_").isidentifier():
            raise RuntimeConfigError(f"case_name must be a plain name, got {self.case_name!r}")

    @property
    def swimlane_level(self) -> int:
        return int(self.enable_chip_swimlane)

    @property
    def clock_freq_hz(self) -> int:
        return SIM_PLATFORMS[self.platform]

    @property
    def any_dfx(self) -> bool:
        return self.swimlane_level > 0 or self.enable_dep_gen


@dataclass
class RunResult:
    """Outcome of `run()`. `execution_time`: wall seconds of the whole run (compile to check)."""

    __test__ = False

    passed: bool
    error: str | None = None
    execution_time: float | None = None
    profile: dict | None = None
    work_dir: str | None = None
    device_time: float | None = None
    outputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __str__(self) -> str:
        t = f" ({self.execution_time:.3f}s)" if self.execution_time is not None else ""
        return ("PASS" if self.passed else f"FAIL: {self.error}") + t


GoldenFn = Callable[[dict, dict], None]
