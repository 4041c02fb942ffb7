"""A generated program with many kernels (64 by default), to show parallel kernel codegen.

Kernel j computes y = max(x * 0.5 + (j + 1), 0) over four row blocks of a 64 x 128 tensor; the
orchestration chains them, so task j reads what task j - 1 wrote. The class source is built as
text and goes through the real parser with `pl.parse_program`.
"""

from __future__ import annotations

import numpy as np

import pypto.language as pl

ROWS, COLS, BLOCK = 64, 128, 16
DEFAULT_KERNELS = 64


def program_source(num_kernels: int = DEFAULT_KERNELS, name: str = "ManyKernels") -> str:
    """The `@pl.program` class source for `num_kernels` chained kernels."""
    t = f"pl.Tensor[[{ROWS}, {COLS}], pl.FP32]"
    lines = ["import pypto.language as pl", "", "", "@pl.program", f"class {name}:"]
    for j in range(num_kernels):
        lines += [
            "    @pl.function(type=pl.FunctionType.InCore)",
            f"    def step_{j}(self, x: {t}, y: pl.Out[{t}]) -> {t}:",
            f"        for i in pl.range({ROWS // BLOCK}):",
            f"            v = pl.load(x, [i * {BLOCK}, 0], [{BLOCK}, {COLS}])",
            f"            v = pl.add(pl.mul(v, 0.5), {float(j + 1)})",
            f"            y = pl.store(pl.maximum(v, 0.0), [i * {BLOCK}, 0], y)",
            "        return y",
            "",
        ]
    lines += [
        "    @pl.function(type=pl.FunctionType.Orchestration)",
        f"    def main(self, x: {t}, y: pl.Out[{t}]) -> {t}:",
        "        cur = x",
    ]
    for j in range(num_kernels - 1):
        lines += [f"        t{j} = pl.create_tensor([{ROWS}, {COLS}], dtype=pl.FP32)",
                  f"        cur = self.step_{j}(cur, t{j})"]
    lines += [f"        y = self.step_{num_kernels - 1}(cur, y)", "        return y", ""]
    return "\n".join(lines)


def build_program(num_kernels: int = DEFAULT_KERNELS, name: str = "ManyKernels"):
    """Parse the generated source into an `ir.Program`."""
    return pl.parse_program(program_source(num_kernels, name), f"<generated {name}>")


ManyKernels = build_program()


def tensor_specs() -> list[dict]:
    rng = np.random.default_rng(3)
    return [
        {"name": "x", "shape": (ROWS, COLS), "dtype": "float32",
         "init_value": rng.standard_normal((ROWS, COLS)).astype(np.float32), "is_output": False},
        {"name": "y", "shape": (ROWS, COLS), "dtype": "float32", "init_value": 0.0,
         "is_output": True},
    ]


def golden(tensors: dict, params: dict | None = None, num_kernels: int = DEFAULT_KERNELS) -> None:
    v = tensors["x"].astype(np.float32)
    for j in range(num_kernels):
        v = np.maximum(v * np.float32(0.5) + np.float32(j + 1), np.float32(0))
    tensors["y"][:] = v


if __name__ == "__main__":
    print(ManyKernels)
