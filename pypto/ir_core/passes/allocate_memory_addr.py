"""AllocateMemoryAddr: lay buffers out at aligned addresses inside each core's fixed on-chip
memories; a kernel that does not fit is rejected with its name and the bytes it needs."""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir_core.nodes import Assign, Function, FunctionType
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.passes.init_memref import retype_tiles
from pypto.ir_core.types import ALIGNMENT, MEMORY_CAPACITY, MemRef, TileType
from pypto.ir_core.visit import iter_stmts


def align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


class AllocateMemoryAddr(FunctionPass):
    name = "AllocateMemoryAddr"

    def __init__(self, capacity: dict[str, int] | None = None):
        self.capacity = dict(capacity or MEMORY_CAPACITY)

    def run_function(self, func: Function) -> Function:
        if func.func_type is not FunctionType.InCore:
            return func
        buffers: dict[int, MemRef] = {}
        tiles: dict[str, MemRef] = {}
        for s in iter_stmts(func.body):
            if isinstance(s, Assign) and isinstance(s.target.type, TileType):
                m = s.target.type.memref
                if m is None:
                    raise CompileError(f"AllocateMemoryAddr: tile {s.target.name!r} in "
                                       f"{func.name!r} has no MemRef; run InitMemRef first")
                buffers[m.buffer] = m
                tiles[s.target.name] = m
        used: dict[str, int] = {}
        placed: dict[int, MemRef] = {}
        for b in sorted(buffers):
            m = buffers[b]
            placed[b] = dataclasses.replace(m, offset=used.get(m.space, 0))
            used[m.space] = used.get(m.space, 0) + align(m.size)
        for space, need in used.items():
            cap = self.capacity[space]
            if need > cap:
                raise CompileError(f"AllocateMemoryAddr: kernel {func.name!r} needs {need} bytes of "
                                   f"{space} memory but a core has {cap} bytes")
        return retype_tiles(func, {name: placed[m.buffer] for name, m in tiles.items()})
