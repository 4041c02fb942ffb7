"""Vector DAG: f = (a + b + 1) * (a + b + 2) + (a + b) in five tasks, as in Simpler's vector example.

t0 = a + b;  t1 = t0 + 1;  t2 = t0 + 2;  t3 = t1 * t2;  f = t3 + t0
"""

from __future__ import annotations

import pypto.language as pl

ROWS, COLS = 128, 128


@pl.program
class VectorDAG:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel_add(
        self,
        a: pl.Tensor[[ROWS, COLS], pl.FP32],
        b: pl.Tensor[[ROWS, COLS], pl.FP32],
        out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        ta: pl.Tile[[ROWS, COLS], pl.FP32] = pl.load(a, [0, 0], [ROWS, COLS])
        tb: pl.Tile[[ROWS, COLS], pl.FP32] = pl.load(b, [0, 0], [ROWS, COLS])
        out = pl.store(pl.add(ta, tb), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def kernel_add_scalar(
        self,
        a: pl.Tensor[[ROWS, COLS], pl.FP32],
        scalar: pl.Scalar[pl.FP32],
        out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        ta = pl.load(a, [0, 0], [ROWS, COLS])
        out = pl.store(pl.add(ta, scalar), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def kernel_mul(
        self,
        a: pl.Tensor[[ROWS, COLS], pl.FP32],
        b: pl.Tensor[[ROWS, COLS], pl.FP32],
        out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        ta = pl.load(a, [0, 0], [ROWS, COLS])
        tb = pl.load(b, [0, 0], [ROWS, COLS])
        out = pl.store(pl.mul(ta, tb), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[ROWS, COLS], pl.FP32],
        b: pl.Tensor[[ROWS, COLS], pl.FP32],
        f: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        t0 = pl.create_tensor([ROWS, COLS], dtype=pl.FP32)
        t1 = pl.create_tensor([ROWS, COLS], dtype=pl.FP32)
        t2 = pl.create_tensor([ROWS, COLS], dtype=pl.FP32)
        t3 = pl.create_tensor([ROWS, COLS], dtype=pl.FP32)
        t0 = self.kernel_add(a, b, t0)
        t1 = self.kernel_add_scalar(t0, 1.0, t1)
        t2 = self.kernel_add_scalar(t0, 2.0, t2)
        t3 = self.kernel_mul(t1, t2, t3)
        f = self.kernel_add(t3, t0, f)
        return f


def tensor_specs() -> list[dict]:
    """Inputs a = 2, b = 3 (so f = 6 * 7 + 5 = 47 everywhere) and the output f."""
    shape = (ROWS, COLS)
    return [
        {"name": "a", "shape": shape, "dtype": "float32", "init_value": 2.0, "is_output": False},
        {"name": "b", "shape": shape, "dtype": "float32", "init_value": 3.0, "is_output": False},
        {"name": "f", "shape": shape, "dtype": "float32", "init_value": 0.0, "is_output": True},
    ]


def golden(tensors: dict, params: dict | None = None) -> None:
    """Reference result computed with NumPy, written into tensors["f"]."""
    s = tensors["a"] + tensors["b"]
    tensors["f"][:] = (s + 1) * (s + 2) + s


if __name__ == "__main__":
    print(VectorDAG)
