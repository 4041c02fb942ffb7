"""The nine passes of the default pipeline, in the order upstream PyPTO runs them."""

from pypto.ir.passes.allocate_memory_addr import AllocateMemoryAddr
from pypto.ir.passes.constant_folding import ConstantFolding
from pypto.ir.passes.convert_to_ssa import ConvertToSSA
from pypto.ir.passes.dead_code_elimination import DeadCodeElimination
from pypto.ir.passes.flatten_call_expr import FlattenCallExpr
from pypto.ir.passes.infer_tile_memory_space import InferTileMemorySpace
from pypto.ir.passes.init_memref import InitMemRef
from pypto.ir.passes.memory_reuse import MemoryReuse
from pypto.ir.passes.unroll_loops import UnrollLoops


def default_pipeline() -> list:
    """Fresh instances of the default pass list."""
    return [
        UnrollLoops(), ConvertToSSA(), FlattenCallExpr(), ConstantFolding(),
        DeadCodeElimination(), InferTileMemorySpace(), InitMemRef(), MemoryReuse(),
        AllocateMemoryAddr(),
    ]


__all__ = [
    "AllocateMemoryAddr", "ConstantFolding", "ConvertToSSA", "DeadCodeElimination",
    "FlattenCallExpr", "InferTileMemorySpace", "InitMemRef", "MemoryReuse", "UnrollLoops",
    "default_pipeline",
]
