"""The PyPTO DSL (`import pypto.language as pl`): types, op names and the `@pl.program` parser."""

from pypto.ir.nodes import FunctionType
from pypto.ir.types import FP16, FP32, INDEX, INT32, DataType
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
from pypto.language.program import function, parse_program, program
from pypto.language.typing import InOut, MemorySpace, Out, Scalar, Tensor, Tile

__all__ = [
    "FP16", "FP32", "INDEX", "INT32", "DataType", "FunctionType", "InOut", "MemorySpace", "Out",
    "Scalar", "Tensor", "Tile", "add", "create_tensor", "div", "exp", "function", "load",
    "matmul", "maximum", "mul", "parse_program", "program", "range", "row_max", "row_sum",
    "store", "sub",
]
