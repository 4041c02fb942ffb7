"""Property: random element-wise kernels compile (with buffer reuse) to code that computes
exactly what NumPy computes; a wrong liveness or address would corrupt shared buffers."""

from __future__ import annotations

import tempfile

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto import ir
from pypto.codegen import load_compiled

T = "pl.Tensor[[8, 16], pl.FP32]"
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum}


@st.composite
def chains(draw):
    """A list of steps (op, lhs index, rhs index or scalar) over tiles t0 = a, t1 = b."""
    steps = []
    for i in range(draw(st.integers(1, 12))):
        n = i + 2
        op = draw(st.sampled_from([*BINARY, "exp"]))
        lhs = draw(st.integers(0, n - 1))
        rhs = draw(st.one_of(st.integers(0, n - 1), st.sampled_from([0.5, 1.0, -2.0, 0.0])))
        steps.append((op, lhs, rhs))
    stored = draw(st.integers(0, len(steps) + 1))
    return steps, stored


def source(steps, stored) -> str:
    body = ["        t0 = pl.load(a, [0, 0], [8, 16])", "        t1 = pl.load(b, [0, 0], [8, 16])"]
    for i, (op, lhs, rhs) in enumerate(steps):
        if op == "exp":
            body.append(f"        t{i + 2} = pl.exp(pl.mul(t{lhs}, 0.01))")
        else:
            r = f"t{rhs}" if isinstance(rhs, int) else repr(rhs)
            body.append(f"        t{i + 2} = pl.{op}(t{lhs}, {r})")
    body.append(f"        out = pl.store(t{len(steps) + 1}, [0, 0], out)")
    body.append(f"        out2 = pl.store(t{stored}, [0, 0], out2)")
    return (
        "@pl.program\nclass Chain:\n    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def k(self, a: {T}, b: {T}, out: pl.Out[{T}], out2: pl.Out[{T}]) -> {T}:\n"
        + "\n".join(body) + "\n        return out\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, a: {T}, b: {T}, out: pl.Out[{T}], out2: pl.Out[{T}]) -> {T}:\n"
        "        out = self.k(a, b, out, out2)\n        return out\n")


def expected(steps, stored, a, b):
    t = [a, b]
    for op, lhs, rhs in steps:
        if op == "exp":
            t.append(np.exp(t[lhs] * np.float32(0.01)))
        else:
            r = t[rhs] if isinstance(rhs, int) else np.float32(rhs)
            t.append(BINARY[op](t[lhs], r).astype(np.float32))
    return t[-1], t[stored]


@settings(max_examples=25, deadline=None)
@given(chains())
def test_random_elementwise_kernels_match_numpy(chain):
    steps, stored = chain
    rng = np.random.default_rng(len(steps))
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    with tempfile.TemporaryDirectory() as out_dir:
        compiled = load_compiled(ir.compile(pl.parse_program(source(steps, stored)), output_dir=out_dir))
        tensors = {"a": a.copy(), "b": b.copy(), "out": np.zeros((8, 16), np.float32),
                   "out2": np.zeros((8, 16), np.float32)}
        for task in compiled.build_tasks(tensors):
            compiled.kernels[task.kernel].fn(*task.args)
    want, want2 = expected(steps, stored, a, b)
    np.testing.assert_allclose(tensors["out"], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(tensors["out2"], want2, rtol=1e-6, atol=1e-6)
