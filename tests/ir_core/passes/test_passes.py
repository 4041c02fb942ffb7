"""Each pass on a small program: the IR before and after, as the printer shows it."""

from __future__ import annotations

import textwrap

import pytest

import pypto.language as pl
from pypto.errors import CompileError
from pypto.ir import PassManager
from pypto.ir_core.passes import (
    AllocateMemoryAddr,
    ConstantFolding,
    ConvertToSSA,
    DeadCodeElimination,
    FlattenCallExpr,
    InferTileMemorySpace,
    InitMemRef,
    MemoryReuse,
    UnrollLoops,
    default_pipeline,
)
from pypto.ir_core.printer import print_function

T = "pl.Tensor[[64, 64], pl.FP32]"


def program(kernel_body: str, params: str = f"a: {T}, out: pl.Out[{T}]", args: str = "a, out"):
    src = (
        "@pl.program\nclass P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def k(self, {params}) -> {T}:\n{textwrap.indent(textwrap.dedent(kernel_body), ' ' * 8)}"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, a: {T}, out: pl.Out[{T}]) -> {T}:\n"
        f"        out = self.k({args})\n        return out\n"
    )
    return pl.parse_program(src, "p.py")


def body(prog, name: str = "k") -> str:
    """The function body as printed, without its signature, dedented."""
    lines = print_function(prog.functions[name]).splitlines()[2:]
    return textwrap.dedent("\n".join(lines)).strip()


def run(prog, *passes):
    return PassManager(list(passes)).run(prog)


def test_unroll_loops_copies_body_with_constant_index():
    prog = program("""\
        for i in pl.range(2):
            t = pl.load(a, [i * 32, 0], [32, 64])
            out = pl.store(t, [i * 32, 0], out)
        return out
        """)
    assert body(prog) == textwrap.dedent("""\
        for i in pl.range(2):
            t: pl.Tile[[32, 64], pl.FP32] = pl.load(a, [i * 32, 0], [32, 64])
            out: pl.Tensor[[64, 64], pl.FP32] = pl.store(t, [i * 32, 0], out)
        return out""")
    assert body(run(prog, UnrollLoops())) == textwrap.dedent("""\
        t: pl.Tile[[32, 64], pl.FP32] = pl.load(a, [0 * 32, 0], [32, 64])
        out: pl.Tensor[[64, 64], pl.FP32] = pl.store(t, [0 * 32, 0], out)
        t: pl.Tile[[32, 64], pl.FP32] = pl.load(a, [1 * 32, 0], [32, 64])
        out: pl.Tensor[[64, 64], pl.FP32] = pl.store(t, [1 * 32, 0], out)
        return out""")


def test_unroll_nested_loops_with_step():
    prog = program("""\
        for i in pl.range(0, 64, 32):
            for j in pl.range(2):
                t = pl.load(a, [i, j * 32], [32, 32])
                out = pl.store(t, [i, j * 32], out)
        return out
        """)
    after = run(prog, UnrollLoops(), ConvertToSSA(), ConstantFolding())
    offsets = [line.split("pl.load(a, ")[1].split("]")[0] + "]"
               for line in body(after).splitlines() if "pl.load" in line]
    assert offsets == ["[0, 0]", "[0, 32]", "[32, 0]", "[32, 32]"]


def test_convert_to_ssa_renames_reassignments_and_their_uses():
    prog = program("""\
        t = pl.load(a, [0, 0], [64, 64])
        t = pl.add(t, 1.0)
        t = pl.mul(t, t)
        out = pl.store(t, [0, 0], out)
        return out
        """)
    assert body(run(prog, ConvertToSSA())) == textwrap.dedent("""\
        t: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])
        t_1: pl.Tile[[64, 64], pl.FP32] = pl.add(t, 1.0)
        t_2: pl.Tile[[64, 64], pl.FP32] = pl.mul(t_1, t_1)
        out_1: pl.Tensor[[64, 64], pl.FP32] = pl.store(t_2, [0, 0], out)
        return out_1""")


def test_convert_to_ssa_requires_unrolled_loops():
    prog = program("""\
        for i in pl.range(2):
            t = pl.load(a, [0, 0], [64, 64])
        return out
        """)
    with pytest.raises(CompileError, match="run UnrollLoops first"):
        run(prog, ConvertToSSA())


def test_flatten_call_expr_hoists_nested_calls():
    prog = program("""\
        t = pl.load(a, [0, 0], [64, 64])
        out = pl.store(pl.exp(pl.add(t, 1.0)), [0, 0], out)
        return out
        """)
    assert body(run(prog, FlattenCallExpr())) == textwrap.dedent("""\
        t: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])
        tmp_1: pl.Tile[[64, 64], pl.FP32] = pl.add(t, 1.0)
        tmp_2: pl.Tile[[64, 64], pl.FP32] = pl.exp(tmp_1)
        out: pl.Tensor[[64, 64], pl.FP32] = pl.store(tmp_2, [0, 0], out)
        return out""")


def test_constant_folding_folds_offsets_and_drops_identities():
    prog = program("""\
        t = pl.load(a, [(2 + 2) * 8, 0 * 5], [32, 64])
        u = pl.mul(t, 1.0)
        v = pl.add(u, 0.0)
        out = pl.store(pl.exp(v), [32 - 32 * 1, 0], out)
        return out
        """)
    after = run(prog, FlattenCallExpr(), ConstantFolding())
    assert body(after) == textwrap.dedent("""\
        t: pl.Tile[[32, 64], pl.FP32] = pl.load(a, [32, 0], [32, 64])
        tmp_1: pl.Tile[[32, 64], pl.FP32] = pl.exp(t)
        out: pl.Tensor[[64, 64], pl.FP32] = pl.store(tmp_1, [0, 0], out)
        return out""")


def test_constant_folding_rejects_out_of_bounds_window_after_unrolling():
    prog = program("""\
        for i in pl.range(3):
            t = pl.load(a, [i * 32, 0], [32, 64])
        return out
        """)
    with pytest.raises(CompileError, match=r"p.py:\d+:\d+: pl.load window at \[64, 0\]"):
        run(prog, UnrollLoops(), ConstantFolding())


def test_dead_code_elimination_keeps_stores_and_drops_unused_chains():
    prog = program("""\
        t = pl.load(a, [0, 0], [64, 64])
        unused = pl.exp(pl.add(t, 2.0))
        out = pl.store(t, [0, 0], out)
        return out
        """)
    after = run(prog, FlattenCallExpr(), DeadCodeElimination())
    assert body(after) == textwrap.dedent("""\
        t: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])
        out: pl.Tensor[[64, 64], pl.FP32] = pl.store(t, [0, 0], out)
        return out""")


def test_dead_code_elimination_drops_unused_intermediate_tensor_but_keeps_tasks():
    src = (
        "@pl.program\nclass P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def k(self, a: {T}, out: pl.Out[{T}]) -> {T}:\n"
        "        out = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)\n        return out\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, a: {T}, out: pl.Out[{T}]) -> {T}:\n"
        "        spare = pl.create_tensor([64, 64], dtype=pl.FP32)\n"
        "        self.k(a, out)\n        return out\n")
    after = run(pl.parse_program(src), DeadCodeElimination())
    assert body(after, "main") == "self.k(a, out)\nreturn out"


def test_infer_tile_memory_space_places_matmul_operands():
    prog = program("""\
        x = pl.load(a, [0, 0], [64, 64])
        y = pl.load(a, [0, 0], [64, 64])
        z = pl.matmul(x, y)
        w = pl.load(a, [0, 0], [64, 64])
        out = pl.store(z, [0, 0], out)
        out = pl.store(pl.exp(w), [0, 0], out)
        return out
        """)
    text = body(run(prog, ConvertToSSA(), FlattenCallExpr(), InferTileMemorySpace()))
    assert "x: pl.Tile[[64, 64], pl.FP32, pl.MemorySpace.Left]" in text
    assert "y: pl.Tile[[64, 64], pl.FP32, pl.MemorySpace.Right]" in text
    assert "z: pl.Tile[[64, 64], pl.FP32, pl.MemorySpace.Acc]" in text
    assert "w: pl.Tile[[64, 64], pl.FP32, pl.MemorySpace.Vec]" in text
    assert "tmp_1: pl.Tile[[64, 64], pl.FP32, pl.MemorySpace.Vec] = pl.exp(w)" in text


def test_infer_tile_memory_space_rejects_conflicting_uses():
    prog = program("""\
        x = pl.load(a, [0, 0], [64, 64])
        z = pl.matmul(x, x)
        return out
        """)
    with pytest.raises(CompileError, match="tile 'x' is used as Left, Right"):
        run(prog, InferTileMemorySpace())


def _tiles(prog):
    """name -> MemRef for every tile of kernel k."""
    return {s.target.name: s.target.type.memref for s in prog.functions["k"].body
            if hasattr(s, "target") and hasattr(s.target.type, "memref")}


CHAIN = """\
    t = pl.load(a, [0, 0], [64, 64])
    u = pl.add(t, 1.0)
    v = pl.exp(u)
    w = pl.mul(v, 2.0)
    out = pl.store(w, [0, 0], out)
    return out
    """


def test_init_memref_gives_each_tile_its_own_buffer():
    before = run(program(CHAIN), InferTileMemorySpace())
    assert all(m is None for m in _tiles(before).values())
    after = run(before, InitMemRef())
    refs = _tiles(after)
    assert [m.buffer for m in refs.values()] == [0, 1, 2, 3]
    assert all(m.size == 64 * 64 * 4 and m.space == "Vec" and m.offset == -1 for m in refs.values())
    assert "# Vec buf2 unallocated (16384 B)" in body(after)


def test_memory_reuse_shares_buffers_of_disjoint_lifetimes():
    before = run(program(CHAIN), InferTileMemorySpace(), InitMemRef())
    after = run(before, MemoryReuse())
    refs = _tiles(after)
    # t dies at u's definition, u at v's: a buffer is reused one statement after its last use
    assert {n: m.buffer for n, m in refs.items()} == {"t": 0, "u": 1, "v": 0, "w": 1}
    assert len({m.buffer for m in refs.values()}) == 2 < len({m.buffer for m in _tiles(before).values()})


def test_memory_reuse_never_shares_between_live_tiles():
    prog = program("""\
        t = pl.load(a, [0, 0], [64, 64])
        u = pl.add(t, 1.0)
        v = pl.mul(u, t)
        out = pl.store(v, [0, 0], out)
        return out
        """)
    refs = _tiles(run(prog, InferTileMemorySpace(), InitMemRef(), MemoryReuse()))
    assert len({refs["t"].buffer, refs["u"].buffer, refs["v"].buffer}) == 3


def test_memory_reuse_grows_a_smaller_free_buffer():
    prog = program("""\
        t = pl.load(a, [0, 0], [32, 64])
        u = pl.exp(t)
        v = pl.load(a, [0, 0], [64, 64])
        w = pl.add(v, 1.0)
        out = pl.store(u, [0, 0], out)
        out = pl.store(w, [0, 0], out)
        return out
        """)
    refs = _tiles(run(prog, ConvertToSSA(), InferTileMemorySpace(), InitMemRef(), MemoryReuse()))
    assert refs["v"].buffer == refs["t"].buffer and refs["v"].size == 64 * 64 * 4


def test_allocate_memory_addr_lays_out_aligned_offsets():
    prog = program("""\
        t = pl.load(a, [0, 0], [3, 5])
        u = pl.load(a, [0, 0], [3, 5])
        out = pl.store(pl.add(t, u), [0, 0], out)
        return out
        """)
    after = run(prog, FlattenCallExpr(), InferTileMemorySpace(), InitMemRef(), AllocateMemoryAddr())
    assert [m.offset for m in _tiles(after).values()] == [0, 64, 128]  # 60 B rounded up to 64
    assert "# Vec buf1 @0x40 (60 B)" in body(after)


def test_allocate_memory_addr_rejects_kernel_that_does_not_fit():
    big = "pl.Tensor[[256, 256], pl.FP32]"
    src = (
        "@pl.program\nclass P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def huge(self, a: {big}, out: pl.Out[{big}]) -> {big}:\n"
        "        t = pl.load(a, [0, 0], [256, 256])\n"
        "        out = pl.store(t, [0, 0], out)\n        return out\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, a: {big}, out: pl.Out[{big}]) -> {big}:\n"
        "        out = self.huge(a, out)\n        return out\n")
    with pytest.raises(CompileError) as info:
        PassManager(default_pipeline()).run(pl.parse_program(src))
    assert "kernel 'huge' needs 262144 bytes of Vec memory but a core has 196608 bytes" in str(info.value)


def test_default_pipeline_order_and_idempotence_on_examples():
    from examples.tiled_softmax import TiledSoftmax

    names = [p.name for p in default_pipeline()]
    assert names == ["UnrollLoops", "ConvertToSSA", "FlattenCallExpr", "ConstantFolding",
                     "DeadCodeElimination", "InferTileMemorySpace", "InitMemRef", "MemoryReuse",
                     "AllocateMemoryAddr"]
    lowered = PassManager().run(TiledSoftmax)
    softmax = print_function(lowered.functions["row_softmax"])
    assert "for " not in softmax and softmax.count("pl.load(") == 4
    # 4 unrolled iterations x 6 tiles share 3 Vec buffers
    assert {line.split("buf")[1].split()[0] for line in softmax.splitlines() if "buf" in line} == {"0", "1", "2"}
