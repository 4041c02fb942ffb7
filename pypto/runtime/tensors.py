"""Program tensors: specs checked against the program signature, creation, and the golden check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.errors import RuntimeConfigError
from pypto.runtime.config import TensorSpec


@dataclass(frozen=True, slots=True)
class Param:
    """One orchestration parameter as the runtime needs it."""

    name: str
    shape: tuple[int, ...] | None
    dtype: str
    direction: str  # in | out | inout | scalar


def normalize_specs(specs: Any) -> list[TensorSpec]:
    """`TensorSpec`s from specs or plain dicts (examples' `tensor_specs()` return dicts)."""
    if isinstance(specs, (str, bytes)) or not hasattr(specs, "__iter__"):
        raise RuntimeConfigError(f"tensor_specs must be a list of TensorSpec, got "
                                 f"{type(specs).__name__}")
    out = []
    for s in specs:
        if isinstance(s, TensorSpec):
            out.append(s)
        elif isinstance(s, Mapping):
            try:
                out.append(TensorSpec(**s))
            except TypeError as e:
                raise RuntimeConfigError(f"bad tensor spec {dict(s)!r}: {e}") from e
        else:
            raise RuntimeConfigError(f"tensor_specs entries must be TensorSpec, got "
                                     f"{type(s).__name__}")
    names = [s.name for s in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RuntimeConfigError(f"tensor_specs name {', '.join(map(repr, dup))} more than once")
    if not any(s.is_output for s in out):
        raise RuntimeConfigError("tensor_specs has no output (set is_output=True on the "
                                 "tensors golden writes)")
    return out


def signature_of(program: Any) -> list[Param] | None:
    """The orchestration signature of an `ir.Program` or a `LoadedProgram`; None if unknown."""
    orch = getattr(program, "orchestration", None)
    if orch is not None and hasattr(orch, "params"):  # ir.Program (before compiling)
        out = []
        for p in orch.params:
            t = p.var.type
            shape = tuple(t.shape) if hasattr(t, "shape") else None
            out.append(Param(p.var.name, shape, t.dtype.numpy, p.direction))
        return out
    params = getattr(program, "params", None)
    if isinstance(params, list) and all(hasattr(p, "direction") for p in params):
        return [Param(p.name, tuple(p.shape) if p.shape is not None else None,
                      np.dtype(p.dtype).name, p.direction) for p in params]
    return None


def check_specs(specs: list[TensorSpec], signature: list[Param], program_name: str) -> None:
    """Every parameter has a matching spec (name, shape, dtype) and outputs are parameters."""
    by_name = {s.name: s for s in specs}
    params = {p.name: p for p in signature}
    problems = []
    for p in signature:
        s = by_name.get(p.name)
        if s is None:
            problems.append(f"no tensor spec for parameter {p.name!r}")
            continue
        if p.direction == "scalar":
            if not s.is_scalar:
                problems.append(f"{p.name!r} is a scalar parameter; its spec needs shape ()")
            continue
        if s.shape != p.shape:
            problems.append(f"{p.name!r} has shape {s.shape} in tensor_specs but {p.shape} in "
                            "the program")
        if s.dtype != p.dtype:
            problems.append(f"{p.name!r} has dtype {s.dtype} in tensor_specs but {p.dtype} in "
                            "the program")
        if p.direction == "out" and not s.is_output:
            problems.append(f"{p.name!r} is an output of the program; set is_output=True")
        if s.is_output and p.direction == "in":
            problems.append(f"{p.name!r} is marked is_output but the program only reads it")
    for name in by_name:
        if name not in params:
            problems.append(f"tensor spec {name!r} is not a parameter of the program "
                            f"(parameters: {', '.join(params) or 'none'})")
    if problems:
        raise RuntimeConfigError(f"tensor_specs do not match {program_name}: "
                                 + "; ".join(problems))


def create_tensors(specs: list[TensorSpec]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors by name incl. scalars, scalar params by name)."""
    tensors = {s.name: s.create() for s in specs}
    params = {s.name: tensors[s.name] for s in specs if s.is_scalar}
    return tensors, params


def compare_outputs(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray],
                    names: list[str], rtol: float, atol: float) -> str | None:
    """None when every output matches, else one readable line per mismatching output."""
    problems = []
    for name in names:
        a, e = actual[name], expected[name]
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        if close.all():
            continue
        bad = int(close.size - np.count_nonzero(close))
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        diff[close] = -1.0
        worst = np.unravel_index(int(np.nanargmax(diff)), diff.shape)
        problems.append(
            f"output {name!r}: {bad} of {close.size} elements differ beyond rtol={rtol}, "
            f"atol={atol}; worst at index {tuple(int(i) for i in worst)}: got "
            f"{a[worst]!r}, expected {e[worst]!r} (|diff| {diff[worst]:.6g})")
    return "; ".join(problems) if problems else None
