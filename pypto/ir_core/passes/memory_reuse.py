"""MemoryReuse: let tiles whose lifetimes do not overlap share one buffer (per memory space).

Liveness on the straight-line body: a tile lives from its definition to its last use. A
buffer is free for a new tile only once its occupant's last use is strictly before the new
tile's definition, so an op never writes a buffer one of its own operands is still in.
"""

from __future__ import annotations

from pypto.errors import CompileError
from pypto.ir_core.nodes import Assign, For, Function, FunctionType
from pypto.ir_core.pass_base import FunctionPass
from pypto.ir_core.passes.init_memref import retype_tiles
from pypto.ir_core.types import MemRef, TileType
from pypto.ir_core.visit import used_names


def last_uses(func: Function) -> dict[str, int]:
    last: dict[str, int] = {}
    for i, s in enumerate(func.body):
        for name in used_names(s):
            last[name] = i
    return last


class MemoryReuse(FunctionPass):
    name = "MemoryReuse"

    def run_function(self, func: Function) -> Function:
        if func.func_type is not FunctionType.InCore:
            return func
        if any(isinstance(s, For) for s in func.body):
            raise CompileError(f"MemoryReuse: kernel {func.name!r} still has loops; "
                               "run UnrollLoops first")
        last = last_uses(func)
        sizes: list[int] = []  # buffer id -> bytes
        spaces: list[str] = []
        free: dict[str, list[int]] = {}  # space -> free buffer ids
        owner: dict[str, int] = {}  # tile -> buffer id
        live: list[tuple[int, str]] = []  # (last use, tile) of tiles holding a buffer
        for i, s in enumerate(func.body):
            for end, name in [x for x in live if x[0] < i]:
                live.remove((end, name))
                free.setdefault(spaces[owner[name]], []).append(owner[name])
            if not (isinstance(s, Assign) and isinstance(s.target.type, TileType)):
                continue
            t = s.target.type
            if t.memref is None:
                raise CompileError(f"MemoryReuse: tile {s.target.name!r} in {func.name!r} has no "
                                   "MemRef; run InitMemRef first")
            need, pool = t.nbytes, free.setdefault(t.memref.space, [])
            fits = [b for b in pool if sizes[b] >= need]
            if fits:
                buf = min(fits, key=lambda b: sizes[b])
            elif pool:
                buf = max(pool, key=lambda b: sizes[b])
                sizes[buf] = need  # grow: cheaper than a new buffer
            else:
                buf = len(sizes)
                sizes.append(need)
                spaces.append(t.memref.space)
            if buf in pool:
                pool.remove(buf)
            owner[s.target.name] = buf
            live.append((last.get(s.target.name, i), s.target.name))
        memrefs = {name: MemRef(spaces[b], b, sizes[b]) for name, b in owner.items()}
        return retype_tiles(func, memrefs)
