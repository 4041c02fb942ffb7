"""The DSL's op names. They only have meaning inside a `@pl.program` class, which is parsed
from source, so calling one directly is a mistake and says so."""

from __future__ import annotations

from pypto.errors import PyptoError

# op name -> one-line meaning (the parser holds the typing rules)
DSL_OPS = {
    "load": "copy a window of a global tensor into a tile",
    "store": "copy a tile into a window of a global tensor; returns the tensor",
    "add": "element-wise a + b (tile or scalar b)",
    "sub": "element-wise a - b",
    "mul": "element-wise a * b",
    "div": "element-wise a / b",
    "maximum": "element-wise max(a, b)",
    "exp": "element-wise e**a",
    "matmul": "matrix product of two 2-D tiles (cube core)",
    "row_sum": "sum of each row -> [rows, 1]",
    "row_max": "max of each row -> [rows, 1]",
    "create_tensor": "allocate an intermediate global tensor (orchestration only)",
    "range": "compile-time loop range: for i in pl.range(n)",
}


def _dsl_only(name: str):
    def op(*args, **kwargs):
        raise PyptoError(f"pl.{name} only has meaning inside a @pl.program function")

    op.__name__ = name
    op.__doc__ = DSL_OPS[name]
    return op


load = _dsl_only("load")
store = _dsl_only("store")
add = _dsl_only("add")
sub = _dsl_only("sub")
mul = _dsl_only("mul")
div = _dsl_only("div")
maximum = _dsl_only("maximum")
exp = _dsl_only("exp")
matmul = _dsl_only("matmul")
row_sum = _dsl_only("row_sum")
row_max = _dsl_only("row_max")
create_tensor = _dsl_only("create_tensor")
range = _dsl_only("range")
