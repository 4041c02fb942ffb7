"""Small compiled programs for runtime/device tests, built through the LoadedProgram contract
(docs/internals.md "Compiled program contract") with real NumPy kernels. No tests in this module.

Functions are module-level so a `LoadedProgram` made here pickles by reference (the
device child process imports this module).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from pypto.codegen import CompiledKernel, LoadedProgram, ParamSpec, TaskCall

# -- kernels -----------------------------------------------------------------------------------

def k_add(a, b, out):
    np.add(a, b, out=out)


def k_add_scalar(a, s, out):
    np.add(a, s, out=out)


def k_mul(a, b, out):
    np.multiply(a, b, out=out)


def k_matmul(a, b, out):
    np.matmul(a, b, out=out)


def k_acc(acc, x):
    acc += x


def k_fail(a, out):
    raise FloatingPointError("overflow in lane 3")


def _p(name, shape, direction, dtype="float32"):
    return ParamSpec(name, shape, dtype, direction)


def _kernels(shape) -> dict:
    return {
        "kernel_add": CompiledKernel(0, "kernel_add", "aiv",
                                     [_p("a", shape, "in"), _p("b", shape, "in"),
                                      _p("out", shape, "out")], k_add),
        "kernel_add_scalar": CompiledKernel(1, "kernel_add_scalar", "aiv",
                                            [_p("a", shape, "in"), _p("s", None, "scalar"),
                                             _p("out", shape, "out")], k_add_scalar),
        "kernel_mul": CompiledKernel(2, "kernel_mul", "aiv",
                                     [_p("a", shape, "in"), _p("b", shape, "in"),
                                      _p("out", shape, "out")], k_mul),
        "kernel_matmul": CompiledKernel(3, "kernel_matmul", "aic",
                                        [_p("a", shape, "in"), _p("b", shape, "in"),
                                         _p("out", shape, "out")], k_matmul),
        "kernel_acc": CompiledKernel(4, "kernel_acc", "aiv",
                                     [_p("acc", shape, "inout"), _p("x", shape, "in")], k_acc),
        "kernel_fail": CompiledKernel(5, "kernel_fail", "aiv",
                                      [_p("a", shape, "in"), _p("out", shape, "out")], k_fail),
    }


# -- the vector DAG (f = (a+b+1)*(a+b+2) + (a+b)), five tasks like Simpler's vector example -----

def dag_tasks(shape, t: dict) -> list:
    tmp = [np.empty(shape, np.float32) for _ in range(4)]
    return [TaskCall("kernel_add", [t["a"], t["b"], tmp[0]]),
            TaskCall("kernel_add_scalar", [tmp[0], 1.0, tmp[1]]),
            TaskCall("kernel_add_scalar", [tmp[0], 2.0, tmp[2]]),
            TaskCall("kernel_mul", [tmp[1], tmp[2], tmp[3]]),
            TaskCall("kernel_add", [tmp[3], tmp[0], t["f"]])]


def dag_program(shape=(64, 64)) -> LoadedProgram:
    params = [_p("a", shape, "in"), _p("b", shape, "in"), _p("f", shape, "out")]
    return LoadedProgram("VectorDAG", "", _kernels(shape), "main", params,
                           functools.partial(dag_tasks, shape))


def dag_specs(shape=(64, 64)) -> list[dict]:
    return [{"name": "a", "shape": shape, "dtype": "float32", "init_value": 2.0},
            {"name": "b", "shape": shape, "dtype": "float32", "init_value": 3.0},
            {"name": "f", "shape": shape, "dtype": "float32", "is_output": True}]


def dag_golden(tensors: dict, params: dict) -> None:
    s = tensors["a"] + tensors["b"]
    tensors["f"][:] = (s + 1) * (s + 2) + s


# -- a mixed AIC/AIV program: out = sum_i (a @ b_i) over n tiles, accumulated in place ----------

def mixed_tasks(n: int, shape, t: dict) -> list:
    calls = []
    for i in range(n):
        prod = np.empty(shape, np.float32)
        calls.append(TaskCall("kernel_matmul", [t["a"], t["b"], prod]))
        calls.append(TaskCall("kernel_acc", [t["out"], prod]))
    return calls


def mixed_program(n=6, shape=(16, 16)) -> LoadedProgram:
    params = [_p("a", shape, "in"), _p("b", shape, "in"), _p("out", shape, "inout")]
    return LoadedProgram("MixedAcc", "", _kernels(shape), "main", params,
                           functools.partial(mixed_tasks, n, shape))


def mixed_golden(n, tensors, params):
    tensors["out"][:] = n * (tensors["a"] @ tensors["b"])


# -- five kernels: the vector DAG beside one matmul tile accumulated --------------------------

def five_kernel_tasks(shape, t: dict) -> list:
    return dag_tasks(shape, t) + mixed_tasks(1, shape, t)


def five_kernel_program(shape=(16, 16)) -> LoadedProgram:
    params = [_p("a", shape, "in"), _p("b", shape, "in"), _p("f", shape, "out"),
              _p("out", shape, "inout")]
    return LoadedProgram("FiveKernels", "", _kernels(shape), "main", params,
                           functools.partial(five_kernel_tasks, shape))


def five_kernel_specs(shape=(16, 16)) -> list[dict]:
    return dag_specs(shape) + [{"name": "out", "shape": shape, "dtype": "float32",
                                "init_value": 1.0, "is_output": True}]


def five_kernel_golden(tensors: dict, params: dict) -> None:
    dag_golden(tensors, params)
    tensors["out"][:] = tensors["out"] + tensors["a"] @ tensors["b"]


# -- wide: many independent chains, for the scheduler and the benchmark -----------------------

def wide_tasks(n_tasks: int, width: int, shape, t: dict) -> list:
    """`width` independent chains of add-scalar tasks; each chain ends by writing its row of f."""
    calls = []
    per_chain = max(1, n_tasks // width)
    for c in range(width):
        cur = t["a"][c]
        for i in range(per_chain):
            nxt = t["f"][c] if i == per_chain - 1 else np.empty(shape[1:], np.float32)
            calls.append(TaskCall("kernel_add_scalar_row", [cur, 1.0, nxt]))
            cur = nxt
    return calls


def wide_program(n_tasks=200, width=8, cols=32) -> LoadedProgram:
    shape = (width, cols)
    row = (cols,)
    kernels = {"kernel_add_scalar_row": CompiledKernel(
        0, "kernel_add_scalar_row", "aiv",
        [_p("a", row, "in"), _p("s", None, "scalar"), _p("out", row, "out")], k_add_scalar)}
    params = [_p("a", shape, "in"), _p("f", shape, "out")]
    return LoadedProgram("Wide", "", kernels, "main", params,
                           functools.partial(wide_tasks, n_tasks, width, shape))


def failing_program(shape=(8,)) -> LoadedProgram:
    params = [_p("a", shape, "in"), _p("f", shape, "out")]
    return LoadedProgram("Failing", "", _kernels(shape), "main", params,
                           functools.partial(_failing_tasks))


def _failing_tasks(t):
    return [TaskCall("kernel_fail", [t["a"], t["f"]])]


# -- a fan in modelled time: head -> N branches -> a chain of accumulations, and one side task
# off the critical path; each kernel's modelled cycles chosen by the test -------------------

FAN_CYCLES = {"head": 3_600, "branch": 36_000, "side": 1_800, "tail": 1_800}  # 1.8 GHz cycles


def fan_tasks(branches, shape, t: dict) -> list:
    head = np.empty(shape, np.float32)
    calls = [TaskCall("head", [t["a"], t["b"], head])]
    outs = []
    for _ in range(branches):
        outs.append(np.empty(shape, np.float32))
        calls.append(TaskCall("branch", [head, t["b"], outs[-1]]))
    calls.append(TaskCall("side", [t["a"], t["b"], np.empty(shape, np.float32)]))
    calls += [TaskCall("tail", [t["out"], o]) for o in outs]
    return calls


def fan_program(branches=8, shape=(8, 8), **cycles) -> LoadedProgram:
    """`cycles`: a kernel's modelled cycles in place of `FAN_CYCLES`' (head, branch, side,
    tail)."""
    c = {**FAN_CYCLES, **cycles}
    two_in = [_p("a", shape, "in"), _p("b", shape, "in"), _p("out", shape, "out")]
    kernels = {"head": CompiledKernel(0, "head", "aiv", two_in, k_add, c["head"]),
               "branch": CompiledKernel(1, "branch", "aiv", two_in, k_mul, c["branch"]),
               "side": CompiledKernel(2, "side", "aiv", two_in, k_add, c["side"]),
               "tail": CompiledKernel(3, "tail", "aiv", [_p("acc", shape, "inout"),
                                                         _p("x", shape, "in")], k_acc,
                                      c["tail"])}
    params = [_p("a", shape, "in"), _p("b", shape, "in"), _p("out", shape, "inout")]
    return LoadedProgram("Fan", "", kernels, "main", params,
                         functools.partial(fan_tasks, branches, shape))


def fan_specs(shape=(8, 8)) -> list[dict]:
    return [{"name": "a", "shape": shape, "dtype": "float32", "init_value": 2.0},
            {"name": "b", "shape": shape, "dtype": "float32", "init_value": 3.0},
            {"name": "out", "shape": shape, "dtype": "float32", "init_value": 0.0,
             "is_output": True}]


def fan_golden(branches: int, tensors: dict, params: dict) -> None:
    tensors["out"][:] = branches * (tensors["a"] + tensors["b"]) * tensors["b"]


# -- a reader shared by our files and the fixtures (strict where the formats are fixed) --------

def load_swimlane(path: Path) -> dict[str, Any]:
    doc = json.loads(Path(path).read_text())
    return doc


def host_ns_mapper(meta: dict):
    """formats.md §2.2: per position the min-rtt valid sample, host = before + rtt/2; linear."""
    anchors = meta["clock_anchors"]
    best = {}
    for s in anchors["samples"]:
        if s["error"] is not None or s["device_cycles"] is None:
            continue
        p = s["position"]
        if p not in best or s["rtt_ns"] < best[p]["rtt_ns"]:
            best[p] = s
    a, b = best["pre_host_orchestration"], best["post_device_execution"]
    h0 = a["host_before_ns"] + a["rtt_ns"] / 2
    h1 = b["host_before_ns"] + b["rtt_ns"] / 2
    c0, c1 = a["device_cycles"], b["device_cycles"]
    slope = (h1 - h0) / (c1 - c0)
    return (lambda c: h0 + (c - c0) * slope), (c0, c1)


# -- a DSL program with Simpler task-timing slots: slot 3 on the first task, slot 5 on the two
# that follow it (a duplicate slot: their windows merged), the last one untagged ------------

SLOTTED_SOURCE = '''
import pypto.language as pl

R, C = 64, 64


@pl.program
class Slotted:
    @pl.function(type=pl.FunctionType.InCore)
    def kadd(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        ta = pl.load(a, [0, 0], [R, C])
        tb = pl.load(b, [0, 0], [R, C])
        out = pl.store(pl.add(ta, tb), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             f: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t0 = pl.create_tensor([R, C], dtype=pl.FP32)
        t1 = pl.create_tensor([R, C], dtype=pl.FP32)
        t2 = pl.create_tensor([R, C], dtype=pl.FP32)
        t0 = self.kadd(a, b, t0, timing_slot=3)
        t1 = self.kadd(t0, b, t1, timing_slot=5)
        t2 = self.kadd(t0, a, t2, timing_slot=5)
        f = self.kadd(t1, t2, f)
        return f
'''
SLOTTED_TAGS = {0: 3, 1: 5, 2: 5}      # task index -> slot


def slotted_program():
    """The `Slotted` program parsed (a fresh `ir.Program`)."""
    import pypto.language as pl

    return pl.parse_program(SLOTTED_SOURCE, "slotted.py")
