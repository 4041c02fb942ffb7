"""User-facing run settings: `RunConfig`, `TensorSpec`, `RunResult`.

Everything here is checked when it is built (or in `validate_*`), so a bad setting fails
with one clear `RuntimeConfigError` before anything is compiled or executed.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pypto.errors import RuntimeConfigError, RuntimeConfigTypeError

#: Simulated platforms: name -> device counter frequency (Hz). a2a3 counts at 50 MHz, a5 at 1 GHz.
SIM_PLATFORMS: dict[str, int] = {"a2a3sim": 50_000_000, "a5sim": 1_000_000_000}
#: Real hardware platforms we know by name but cannot drive here.
HARDWARE_PLATFORMS = ("a2a3", "a5")
#: Simpler's orchestration modes.
RUNTIMES = ("host_build_graph", "tensormap_and_ringbuffer")
#: Dtypes a tensor may have (NumPy names).
SUPPORTED_DTYPES = ("float32", "float16", "int32", "int64", "uint8", "int8", "int16", "float64")
MAX_SWIMLANE_LEVEL = 4
#: Where the simulated device's durations come from (docs/modelled_time.md).
DEVICE_TIMINGS = ("measured", "modelled")


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
    """A swimlane request as its level: `True` is the full level, as upstream."""
    if isinstance(value, bool):
        return MAX_SWIMLANE_LEVEL if value else 0
    return _level(value, flag, MAX_SWIMLANE_LEVEL, "0=off, 1=AICore timing, 2=+dispatch/"
                  "finish, 3=+scheduler phases, 4=+orchestrator phases")


def _level(value: Any, flag: str, top: int | None, meaning: str) -> int:
    """An int setting in [0, top] (no top: any non-negative); bool counts as 0/1."""
    if not isinstance(value, (int, np.integer)):
        raise RuntimeConfigTypeError(f"{flag} must be an int ({meaning}), got "
                                     f"{type(value).__name__} {value!r}")
    if value < 0 or (top is not None and value > top):
        span = f"in [0, {top}]" if top is not None else ">= 0"
        raise RuntimeConfigError(f"{flag} must be {span} ({meaning}), got {value!r}")
    return int(value)


def _flag(value: Any, flag: str) -> bool:
    """A switch: a bool (or the ints 0 and 1)."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer))
                                              and value in (0, 1)):
        return bool(value)
    raise RuntimeConfigTypeError(f"{flag} must be a bool, got {type(value).__name__} "
                                 f"{value!r}")


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


#: Settings a real Simpler device honours and the simulated one cannot: field -> what is not
#: produced. Accepted, recorded as `not_simulated` (device_execution stage args, the capture's
#: metadata, `RunResult.not_simulated`) and noted once per process.
NOT_SIMULATED = {
    "enable_pmu": "AICore PMU counters (pmu.csv)",
    "enable_dump_args": "the per-task argument dump (args_dump/)",
    "enable_scope_stats": "scope ring-fill statistics (scope_stats/)",
    "dump_ptoas_passes": "ptoas pass dumps (no ptoas here: kernels are generated directly)",
}


@dataclass
class RunConfig:
    """How `run()` compiles, executes and profiles a program (upstream's fields, checked when
    built: a wrong type is a `TypeError`, a wrong value a `ValueError`, both one line).

    `platform`: `a2a3sim` (default) or `a5sim` run on the simulated device; `a2a3`/`a5` need
    real hardware and are refused. `device_id`: the simulated device's id (in the capture's
    metadata and the run log). `runtime`: Simpler's orchestration mode (`host_build_graph`
    default, or `tensormap_and_ringbuffer`). `enable_chip_swimlane`: level 0-4 (`True` = 4;
    `enable_l2_swimlane` is its deprecated alias). `enable_pmu` (event type, 0 = off),
    `enable_dump_args` (0-2, `True` = 1), `enable_scope_stats`, `dump_ptoas_passes`: accepted
    and recorded, but the simulator produces nothing for them (`NOT_SIMULATED`).
    `dump_passes`: IR dumps per pass. `codegen_only`: compile, never execute.
    `device_process=True` runs the device in a child process (a second pid in traces).
    `host_log_queue`: the simulated host logger's queue (records; Simpler's holds 4096): a
    run emitting more loses the rest, and its log says so (`[HOSTLOG_DROPS]`).
    `device_timing`: `"measured"` (default: the simulated cores' real durations) or
    `"modelled"` (each kernel lasts its modelled cycles and the schedule is simulated event
    by event: captures reproduce to the cycle; docs/modelled_time.md); `timing_jitter` (a
    fraction, modelled time only) scales each task by a random factor drawn from
    `timing_seed`, for runs that differ as real runs do; `scheduler_costs` (modelled time
    only) sets the ns a scheduler step costs, by step name (`dispatch`, `launch`, `poll`,
    `complete`, `submit`; the rest keep docs/modelled_time.md's), for runs that ask what a
    faster or slower scheduler would do.
    `work_dir`: where everything goes (default `save_kernels_dir`, else
    `build_output/<program>_<timestamp>`).
    """

    __test__ = False

    platform: str = "a2a3sim"
    device_id: int = 0
    runtime: str = "host_build_graph"
    compile_profiling: bool = False
    save_kernels: bool = False
    save_kernels_dir: str | None = None
    work_dir: str | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    dump_passes: bool = False
    dump_ptoas_passes: bool = False
    codegen_only: bool = False
    enable_chip_swimlane: int | bool = 0
    enable_dump_args: int | bool = 0
    enable_pmu: int = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False
    device_process: bool = False
    num_aic_cores: int = 8
    num_aiv_cores: int = 16
    num_sched_threads: int = 3
    host_log_queue: int = 4096
    case_name: str | None = None
    compile_options: dict = field(default_factory=dict)
    device_timing: str = "measured"
    timing_jitter: float = 0.0
    timing_seed: int | None = None
    scheduler_costs: dict | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.platform, str):
            raise RuntimeConfigTypeError(f"platform must be a str, got "
                                         f"{type(self.platform).__name__}")
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
        self.device_id = _level(self.device_id, "device_id", None, "a device index")
        self.enable_chip_swimlane = _swimlane_level(self.enable_chip_swimlane,
                                                    "enable_chip_swimlane")
        self.enable_dump_args = _level(self.enable_dump_args, "enable_dump_args", 2,
                                       "0=off, 1=partial (dump_tag-marked), 2=full")
        self.enable_pmu = _level(self.enable_pmu, "enable_pmu", None,
                                 "an AICore PMU event type, 0=off")
        for name in ("compile_profiling", "save_kernels", "dump_passes", "dump_ptoas_passes",
                     "codegen_only", "enable_dep_gen", "enable_scope_stats", "device_process"):
            setattr(self, name, _flag(getattr(self, name), name))
        for name in ("rtol", "atol"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 or math.isnan(v):
                raise RuntimeConfigError(f"{name} must be a non-negative number, got {v!r}")
        for name, low in (("num_aic_cores", 0), ("num_aiv_cores", 0), ("num_sched_threads", 1),
                          ("host_log_queue", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low or v > 4096:
                raise RuntimeConfigError(f"{name} must be an int >= {low}, got {v!r}")
        if self.num_aic_cores + self.num_aiv_cores == 0:
            raise RuntimeConfigError("the device needs at least one core")
        if self.case_name is not None and not str(self.case_name).replace("-", "_").isidentifier():
            raise RuntimeConfigError(f"case_name must be a plain name, got {self.case_name!r}")
        if self.device_timing not in DEVICE_TIMINGS:
            raise RuntimeConfigError(f"device_timing must be one of {', '.join(DEVICE_TIMINGS)}, "
                                     f"got {self.device_timing!r}")
        j = self.timing_jitter
        if not isinstance(j, (int, float)) or isinstance(j, bool) or not 0 <= j <= 1:
            raise RuntimeConfigError(f"timing_jitter must be a fraction from 0 to 1, got {j!r}")
        if j and self.device_timing != "modelled":
            raise RuntimeConfigError("timing_jitter applies to modelled time only: set "
                                     "device_timing='modelled' or leave timing_jitter at 0")
        s = self.timing_seed
        if s is not None and (not isinstance(s, int) or isinstance(s, bool) or s < 0):
            # Python's random seeds -1 and 1 alike: a negative seed would repeat another's
            raise RuntimeConfigError(f"timing_seed must be a non-negative int or None, "
                                     f"got {s!r}")
        self.scheduler_costs = _scheduler_costs(self.scheduler_costs, self.device_timing)
        if not isinstance(self.compile_options, dict):
            raise RuntimeConfigTypeError(f"compile_options must be a dict, got "
                                         f"{type(self.compile_options).__name__}")
        if self.any_dfx and not self.save_kernels:
            self.save_kernels = True     # the dfx outputs stay with their kernels, as upstream

    @property
    def enable_l2_swimlane(self) -> int:
        """Deprecated alias of `enable_chip_swimlane` (reading it is silent, as upstream, so
        `dataclasses.replace` stays quiet; assigning it and the constructor keyword warn)."""
        return self.enable_chip_swimlane

    @enable_l2_swimlane.setter
    def enable_l2_swimlane(self, value: int | bool) -> None:
        warnings.warn(_L2_ALIAS, DeprecationWarning, stacklevel=2)
        self.enable_chip_swimlane = _swimlane_level(value, "enable_l2_swimlane")

    @property
    def swimlane_level(self) -> int:
        return int(self.enable_chip_swimlane)

    @property
    def clock_freq_hz(self) -> int:
        return SIM_PLATFORMS[self.platform]

    @property
    def any_dfx(self) -> bool:
        """Any of upstream's five DFX switches on (they share `dfx_outputs/`)."""
        return (self.swimlane_level > 0 or self.enable_dep_gen or self.enable_dump_args > 0
                or self.enable_pmu > 0 or self.enable_scope_stats)

    @property
    def not_simulated(self) -> dict[str, Any]:
        """The settings asked for that the simulated device cannot honour (`NOT_SIMULATED`)."""
        return {k: getattr(self, k) for k in NOT_SIMULATED if getattr(self, k)}


_L2_ALIAS = ("RunConfig.enable_l2_swimlane is deprecated; use enable_chip_swimlane (same "
             "levels: Simpler renamed the L2 layer to 'chip')")
_RUN_CONFIG_INIT = RunConfig.__init__


@functools.wraps(_RUN_CONFIG_INIT)
def _run_config_init(self: RunConfig, *args: Any, **kwargs: Any) -> None:
    """`RunConfig(...)` that also takes the deprecated `enable_l2_swimlane` keyword. Not a
    field, so `dataclasses.replace()`, `fields()` and `asdict()` never carry it."""
    if "enable_l2_swimlane" in kwargs:
        alias = kwargs.pop("enable_l2_swimlane")
        warnings.warn(_L2_ALIAS, DeprecationWarning, stacklevel=2)
        if "enable_chip_swimlane" in kwargs:
            raise RuntimeConfigError("enable_chip_swimlane and its deprecated alias "
                                     "enable_l2_swimlane are both set; use only "
                                     "enable_chip_swimlane")
        kwargs["enable_chip_swimlane"] = _swimlane_level(alias, "enable_l2_swimlane")
    _RUN_CONFIG_INIT(self, *args, **kwargs)


RunConfig.__init__ = _run_config_init  # type: ignore[method-assign]


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
    not_simulated: dict[str, Any] = field(default_factory=dict)   # see NOT_SIMULATED

    def __str__(self) -> str:
        t = f" ({self.execution_time:.3f}s)" if self.execution_time is not None else ""
        return ("PASS" if self.passed else f"FAIL: {self.error}") + t


GoldenFn = Callable[[dict, dict], None]


def checked_config(config: Any) -> RunConfig:
    """`config`, or the default `RunConfig()` for None; anything else is one clear error."""
    config = config if config is not None else RunConfig()
    if not isinstance(config, RunConfig):
        raise RuntimeConfigTypeError(f"config must be a RunConfig, got {type(config).__name__}")
    return config


SCHEDULER_STEPS = ("dispatch", "launch", "poll", "complete", "submit")
MAX_STEP_NS = 1e9          # a second a step: far past any scheduler, still a whole-tick count


def _scheduler_costs(costs, timing: str) -> dict | None:
    """`RunConfig.scheduler_costs` checked: ns per step name, each finite, 0 to 1 s."""
    if costs is None:
        return None
    if not isinstance(costs, dict):
        raise RuntimeConfigTypeError(f"scheduler_costs must be a dict of ns per step, got "
                                     f"{type(costs).__name__}")
    if timing != "modelled":
        raise RuntimeConfigError("scheduler_costs applies to modelled time only: set "
                                 "device_timing='modelled'")
    out = {}
    for step, ns in costs.items():
        if step not in SCHEDULER_STEPS:
            raise RuntimeConfigError(f"scheduler_costs: unknown step {step!r} (expected "
                                     f"{', '.join(SCHEDULER_STEPS)})")
        if (not isinstance(ns, (int, float)) or isinstance(ns, bool) or math.isnan(ns)
                or not 0 <= ns <= MAX_STEP_NS):
            raise RuntimeConfigError(f"scheduler_costs[{step!r}] must be ns from 0 to "
                                     f"{MAX_STEP_NS:.0e}, got {ns!r}")
        out[step] = float(ns)
    return out
