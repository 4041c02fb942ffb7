"""Load a compiled output directory into callables (the codegen -> runtime contract).

Only files codegen wrote are executed: the kernel and orchestration modules named in
kernel_config.json, imported from the output directory under fresh module names.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pypto.codegen.driver import CONFIG_FILE
from pypto.errors import CompileError, RuntimeConfigError

_load_counter = itertools.count()


@dataclass
class ParamSpec:
    name: str
    shape: tuple[int, ...] | None  # None for scalars
    dtype: str  # "float32" | "float16" | "int32"
    direction: str  # "in" | "out" | "inout" | "scalar"


def _modelled_cycles(path: str, kernel: dict) -> int | None:
    """A kernel's `modelled_cycles` (None: not stated), a whole number of AICore cycles from
    1 to `MAX_MODELLED_CYCLES` (a minute of one core: `MAX_HOLD_S`, the longest a modelled
    run holds the host)."""
    from pypto.codegen.cost_model import MAX_MODELLED_CYCLES

    v = kernel.get("modelled_cycles")
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_MODELLED_CYCLES:
        raise CompileError(f"{path}: kernel {kernel.get('name')!r}: modelled_cycles must be a "
                           f"whole number of cycles from 1 to {MAX_MODELLED_CYCLES}, got {v!r}")
    return v


@dataclass
class CompiledKernel:
    func_id: int
    name: str
    core_type: str  # "aic" | "aiv"
    params: list[ParamSpec]
    fn: Callable[..., None]
    modelled_cycles: int | None = None   # AICore cycles in modelled time (codegen.cost_model)


@dataclass
class TaskCall:
    kernel: str
    args: list
    timing_slot: int | None = None   # Simpler's task-timing slot (0-15), when tagged


@dataclass
class LoadedProgram:
    name: str
    output_dir: str
    kernels: dict[str, CompiledKernel]
    orchestration_name: str
    params: list[ParamSpec]
    build_tasks: Callable[[dict[str, Any]], list[TaskCall]]


def _params(raw: list[dict]) -> list[ParamSpec]:
    return [ParamSpec(p["name"], None if p["shape"] is None else tuple(p["shape"]), p["dtype"],
                      p["direction"]) for p in raw]


def _import(path: str, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CompileError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError:
        raise CompileError(f"{path}: missing from the compiled output") from None
    return module


def _checked(build: Callable, params: list[ParamSpec], program: str) -> Callable:
    def build_tasks(tensors: dict[str, Any]) -> list[TaskCall]:
        for p in params:
            if p.name not in tensors:
                raise RuntimeConfigError(f"program {program!r}: no value for parameter {p.name!r}")
            if p.shape is not None:
                a = tensors[p.name]
                if tuple(getattr(a, "shape", ())) != p.shape or str(getattr(a, "dtype", "")) != p.dtype:
                    raise RuntimeConfigError(
                        f"program {program!r}: parameter {p.name!r} must be a {p.dtype} array of "
                        f"shape {p.shape}, got {getattr(a, 'dtype', type(a).__name__)} "
                        f"{getattr(a, 'shape', '')}")
        return [TaskCall(call[0], list(call[1]), call[2] if len(call) > 2 else None)
                for call in build(tensors)]

    return build_tasks


def load_compiled(output_dir: str | os.PathLike) -> LoadedProgram:
    """Import the kernels and orchestration that `ir.compile` wrote to `output_dir`."""
    output_dir = os.fspath(output_dir)
    path = os.path.join(output_dir, CONFIG_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except OSError as e:
        raise CompileError(f"{path}: cannot read compiled output ({e.strerror or e})") from None
    except json.JSONDecodeError as e:
        raise CompileError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    try:
        uid = next(_load_counter)
        kernels = {}
        for k in config["kernels"]:
            mod = _import(os.path.join(output_dir, k["executable"]),
                          f"_pypto_compiled_{uid}_{config['program']}_{k['name']}")
            kernels[k["name"]] = CompiledKernel(k["func_id"], k["name"], k["core_type"],
                                                _params(k["params"]), getattr(mod, k["name"]),
                                                _modelled_cycles(path, k))
        orch = config["orchestration"]
        mod = _import(os.path.join(output_dir, orch["executable"]),
                      f"_pypto_compiled_{uid}_{config['program']}_orchestration")
        params = _params(orch["params"])
    except (KeyError, TypeError, AttributeError) as e:
        raise CompileError(f"{path}: incomplete compiled output ({type(e).__name__}: {e})") from None
    return LoadedProgram(config["program"], output_dir, kernels, orch["name"], params,
                           _checked(mod.build_tasks, params, config["program"]))
