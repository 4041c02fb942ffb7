"""The PyPTO DSL (`import pypto.language as pl`): types, op names and the `@pl.program` parser.

The subset this reference compiler accepts:
- `@pl.program` on a class of `@pl.function(type=pl.FunctionType.InCore)` kernels and exactly
  one `pl.FunctionType.Orchestration` function; `pl.parse_program(source, filename)` parses
  class source text (generated programs, whole notebook cells with their constants) the same
  way; `pl.register_source(source, filename)` lets `@pl.program` in `exec`'d strings find
  their source. The full reference is docs/dsl.md.
- Types: `pl.Tensor[[d0, d1], pl.FP32]` (FP16, INT32), `pl.Out[...]`, `pl.InOut[...]`,
  `pl.Scalar[pl.FP32]`, and `pl.Tile[[d0, d1], dtype]` annotations on assignments.
- Kernels: `pl.load(t, offsets, shape)`, `pl.store(tile, offsets, out)`,
  `pl.add/sub/mul/div/maximum` (tile-tile, tile-scalar, or [M, N] with an [M, 1] row operand),
  `pl.exp`, `pl.matmul`, `pl.row_sum/row_max`, and `for i in pl.range(...)` with compile-time
  bounds; integer arithmetic on indices.
- Orchestration: `pl.create_tensor(shape, dtype=...)` and `self.kernel(...)` calls (one task
  each) with tensors and scalar literals; loops are allowed and unrolled.
Anything else is a `pypto.errors.ParserError` naming file:line:col.
"""

from pypto.ir_core.nodes import FunctionType
from pypto.ir_core.types import FP16, FP32, INDEX, INT32, DataType
from pypto.language.ops import (
    add,
    create_tensor,
    div,
    exp,
    load,
    matmul,
    maximum,
    mul,
    range,
    row_max,
    row_sum,
    store,
    sub,
)
from pypto.language.program import function, parse_program, program, register_source
from pypto.language.typing import InOut, MemorySpace, Out, Scalar, Tensor, Tile

__all__ = [
    "FP16", "FP32", "INDEX", "INT32", "DataType", "FunctionType", "InOut", "MemorySpace", "Out",
    "Scalar", "Tensor", "Tile", "add", "create_tensor", "div", "exp", "function", "load",
    "matmul", "maximum", "mul", "parse_program", "program", "range", "register_source",
    "row_max", "row_sum", "store", "sub",
]
