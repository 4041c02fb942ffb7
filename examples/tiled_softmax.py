"""Tiled attention scores: out = softmax(q @ k) row by row, in a cube (aic) and a vector (aiv) kernel.

Both kernels loop over row blocks with `pl.range`, so UnrollLoops has loops to unroll and
MemoryReuse can recycle each iteration's tile buffers in the next one.
"""

from __future__ import annotations

import numpy as np

import pypto.language as pl

M, K, N = 64, 128, 64  # q: [M, K], k: [K, N], scores/out: [M, N]
MM_ROWS = 32  # rows per matmul block
SM_ROWS = 16  # rows per softmax block


@pl.program
class TiledSoftmax:
    @pl.function(type=pl.FunctionType.InCore)
    def qk_matmul(
        self,
        q: pl.Tensor[[M, K], pl.FP32],
        k: pl.Tensor[[K, N], pl.FP32],
        scores: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        for i in pl.range(M // MM_ROWS):
            q_blk: pl.Tile[[MM_ROWS, K], pl.FP32] = pl.load(q, [i * MM_ROWS, 0], [MM_ROWS, K])
            k_all: pl.Tile[[K, N], pl.FP32] = pl.load(k, [0, 0], [K, N])
            s_blk: pl.Tile[[MM_ROWS, N], pl.FP32] = pl.matmul(q_blk, k_all)
            scores = pl.store(s_blk, [i * MM_ROWS, 0], scores)
        return scores

    @pl.function(type=pl.FunctionType.InCore)
    def row_softmax(
        self,
        scores: pl.Tensor[[M, N], pl.FP32],
        out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        for i in pl.range(M // SM_ROWS):
            x: pl.Tile[[SM_ROWS, N], pl.FP32] = pl.load(scores, [i * SM_ROWS, 0], [SM_ROWS, N])
            row_max: pl.Tile[[SM_ROWS, 1], pl.FP32] = pl.row_max(x)
            e = pl.exp(pl.sub(x, row_max))
            total = pl.row_sum(e)
            out = pl.store(pl.div(e, total), [i * SM_ROWS, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        q: pl.Tensor[[M, K], pl.FP32],
        k: pl.Tensor[[K, N], pl.FP32],
        out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        scores = pl.create_tensor([M, N], dtype=pl.FP32)
        scores = self.qk_matmul(q, k, scores)
        out = self.row_softmax(scores, out)
        return out


def tensor_specs() -> list[dict]:
    """Seeded random q and k (scaled so the scores stay small), and the output."""
    rng = np.random.default_rng(7)
    return [
        {"name": "q", "shape": (M, K), "dtype": "float32",
         "init_value": (rng.standard_normal((M, K)) * 0.1).astype(np.float32), "is_output": False},
        {"name": "k", "shape": (K, N), "dtype": "float32",
         "init_value": (rng.standard_normal((K, N)) * 0.1).astype(np.float32), "is_output": False},
        {"name": "out", "shape": (M, N), "dtype": "float32", "init_value": 0.0, "is_output": True},
    ]


def golden(tensors: dict, params: dict | None = None) -> None:
    s = tensors["q"].astype(np.float64) @ tensors["k"].astype(np.float64)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    tensors["out"][:] = e / e.sum(axis=1, keepdims=True)


if __name__ == "__main__":
    print(TiledSoftmax)
