"""A call's positional arguments bound to the program's parameters, as upstream binds them.

`compiled(a, b, f)` gives every parameter (outputs written in place); `f = compiled(a, b)`
gives the inputs only, when the orchestration function returns a value: the pure outputs
(`pl.Out`) are allocated and handed back. Tensors are NumPy arrays or torch CPU tensors
(viewed through `.numpy()`, so results land in the caller's tensor; torch is never imported
here, and is no dependency); scalars are Python or NumPy numbers. Shapes and dtypes are
checked against the program: a wrong one is one line naming the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.errors import RuntimeConfigError, RuntimeConfigTypeError
from pypto.runtime.tensors import Param

__all__ = ["BoundCall", "bind_call"]


@dataclass(slots=True)
class BoundCall:
    """`tensors`: every parameter by name (NumPy views of the caller's objects);
    `returned`: the allocated outputs to hand back (None: an in-place call)."""

    tensors: dict[str, Any]
    returned: list[Any] | None


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "numpy")


def _as_array(x: Any, p: Param, program: str) -> np.ndarray:
    where = f"{program}: parameter {p.name!r}"
    if _is_torch(x):
        device = getattr(getattr(x, "device", None), "type", "cpu")
        if device != "cpu":
            raise RuntimeConfigError(f"{where}: a torch tensor on {device!r}; the simulated "
                                     "device takes host (CPU) tensors")
        x = x.detach().numpy()           # shares the tensor's memory: results land there
    if not isinstance(x, np.ndarray):
        raise RuntimeConfigTypeError(f"{where} is a tensor; got {type(x).__name__} (pass a "
                                     "NumPy array or a torch CPU tensor)")
    if tuple(x.shape) != p.shape or x.dtype.name != p.dtype:
        raise RuntimeConfigError(f"{where} must be a {p.dtype} array of shape {p.shape}, got "
                                 f"{x.dtype.name} {tuple(x.shape)}")
    return x


def _as_scalar(x: Any, p: Param, program: str) -> Any:
    if _is_torch(x) or isinstance(x, np.ndarray) and x.ndim:
        raise RuntimeConfigTypeError(f"{program}: parameter {p.name!r} is a scalar "
                                     f"({p.dtype}); got a tensor")
    if not isinstance(x, (int, float, np.number, bool)):
        raise RuntimeConfigTypeError(f"{program}: parameter {p.name!r} is a scalar "
                                     f"({p.dtype}); got {type(x).__name__}")
    return np.dtype(p.dtype).type(x)


def bind_call(args: tuple, params: list[Param], returns_value: bool, program: str) -> BoundCall:
    """Bind `args` to `params` (see the module docstring)."""
    outs = [p for p in params if p.direction == "out"]
    n_inputs = len(params) - len(outs)
    if len(args) == len(params):
        given, allocated = list(zip(params, args)), None
    elif returns_value and outs and len(args) == n_inputs:
        inputs = iter(args)
        allocated = {p.name: np.zeros(p.shape, dtype=p.dtype) for p in outs}
        given = [(p, allocated[p.name] if p.name in allocated else next(inputs)) for p in params]
    else:
        expected = f"{len(params)} (in place)"
        if returns_value and outs:
            expected += f" or {n_inputs} (outputs returned)"
        raise RuntimeConfigTypeError(f"{program} expects {expected} arguments, got {len(args)} "
                                     f"(parameters: {', '.join(p.name for p in params)})")
    torch_in = any(_is_torch(a) for a in args)
    tensors = {p.name: (_as_scalar(x, p, program) if p.shape is None
                        else _as_array(x, p, program)) for p, x in given}
    returned = None
    if allocated is not None:
        returned = [_torch_from(allocated[p.name]) if torch_in else allocated[p.name]
                    for p in outs]
    return BoundCall(tensors, returned)


def _torch_from(array: np.ndarray) -> Any:
    """A torch tensor sharing `array`'s memory (torch is loaded: the caller passed one)."""
    import torch

    return torch.from_numpy(array)
