"""The nine passes of the default pipeline, in the order upstream PyPTO runs them."""

from pypto.ir_core.passes.allocate_memory_addr import AllocateMemoryAddr
from pypto.ir_core.passes.constant_folding import ConstantFolding
from pypto.ir_core.passes.convert_to_ssa import ConvertToSSA
from pypto.ir_core.passes.dead_code_elimination import DeadCodeElimination
from pypto.ir_core.passes.flatten_call_expr import FlattenCallExpr
from pypto.ir_core.passes.infer_tile_memory_space import InferTileMemorySpace
from pypto.ir_core.passes.init_memref import InitMemRef
from pypto.ir_core.passes.memory_reuse import MemoryReuse
from pypto.ir_core.passes.unroll_loops import UnrollLoops


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
