"""IR types: data types, tensors in global memory, on-chip tiles, scalars, memory references."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod


@dataclass(frozen=True, slots=True)
class DataType:
    """An element type; `numpy` is the NumPy name the runtime and the executable form use."""

    name: str
    numpy: str
    nbytes: int
    cpp: str

    def __repr__(self) -> str:
        return f"pl.{self.name}"


FP32 = DataType("FP32", "float32", 4, "float")
FP16 = DataType("FP16", "float16", 2, "half")
INT32 = DataType("INT32", "int32", 4, "int32_t")
INDEX = DataType("INDEX", "int64", 8, "int64_t")  # loop variables and offsets

DTYPES = {d.name: d for d in (FP32, FP16, INT32, INDEX)}

# On-chip memory spaces of one Ascend core and their capacity in bytes (910B-class figures).
MEMORY_CAPACITY = {
    "Vec": 192 * 1024,  # unified buffer (vector core)
    "Mat": 512 * 1024,  # L1
    "Left": 64 * 1024,  # L0A, matmul left operand
    "Right": 64 * 1024,  # L0B, matmul right operand
    "Acc": 128 * 1024,  # L0C, matmul accumulator
}
ALIGNMENT = 32  # bytes; every on-chip buffer starts on this boundary


@dataclass(frozen=True, slots=True)
class MemRef:
    """Where a tile lives on chip: a buffer (shared by tiles after MemoryReuse) and its address."""

    space: str
    buffer: int
    size: int  # bytes this buffer must hold (the largest tile assigned to it)
    offset: int = -1  # byte address inside `space`; -1 until AllocateMemoryAddr


@dataclass(frozen=True, slots=True)
class TensorType:
    """A tensor in global (DDR) memory."""

    shape: tuple[int, ...]
    dtype: DataType


@dataclass(frozen=True, slots=True)
class TileType:
    """A tile in on-chip memory; `memory_space` is set by InferTileMemorySpace, `memref` by InitMemRef."""

    shape: tuple[int, ...]
    dtype: DataType
    memory_space: str | None = None
    memref: MemRef | None = None

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * self.dtype.nbytes


@dataclass(frozen=True, slots=True)
class ScalarType:
    dtype: DataType


Type = TensorType | TileType | ScalarType


def same_shape_dtype(a: Type, b: Type) -> bool:
    """Whether two types agree on kind, shape and dtype (memory placement ignored)."""
    if type(a) is not type(b) or a.dtype != b.dtype:
        return False
    return isinstance(a, ScalarType) or a.shape == b.shape


def type_str(t: Type) -> str:
    """The DSL spelling of a type, as the printer writes it."""
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype.name}]"
    shape = ", ".join(str(d) for d in t.shape)
    if isinstance(t, TensorType):
        return f"pl.Tensor[[{shape}], pl.{t.dtype.name}]"
    space = f", pl.MemorySpace.{t.memory_space}" if t.memory_space else ""
    return f"pl.Tile[[{shape}], pl.{t.dtype.name}{space}]"
