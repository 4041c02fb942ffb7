"""Annotation objects (`pl.Tensor[[64, 64], pl.FP32]`, `pl.Out[...]`, ...).

Python evaluates method annotations when the class body runs, so these subscripts must work at
run time; the parser reads the annotations from the source, not from these objects.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pypto.ir_core.types import DataType


class MemorySpace(str, enum.Enum):
    DDR = "DDR"
    Vec = "Vec"
    Mat = "Mat"
    Left = "Left"
    Right = "Right"
    Acc = "Acc"


@dataclass(frozen=True)
class ShapedAnnotation:
    kind: str
    shape: tuple
    dtype: DataType


@dataclass(frozen=True)
class WrappedAnnotation:
    direction: str
    inner: ShapedAnnotation


class _Shaped:
    kind = ""

    def __class_getitem__(cls, item) -> ShapedAnnotation:
        shape, dtype = item[0], item[1]
        return ShapedAnnotation(cls.kind, tuple(shape), dtype)


class Tensor(_Shaped):
    """A tensor in global memory: `pl.Tensor[[rows, cols], pl.FP32]`."""

    kind = "Tensor"


class Tile(_Shaped):
    """An on-chip tile: `pl.Tile[[rows, cols], pl.FP32]`."""

    kind = "Tile"


class Scalar:
    """A scalar parameter: `pl.Scalar[pl.FP32]`."""

    def __class_getitem__(cls, dtype) -> ShapedAnnotation:
        return ShapedAnnotation("Scalar", (), dtype)


class Out:
    """A tensor parameter the function writes: `pl.Out[pl.Tensor[...]]`."""

    def __class_getitem__(cls, inner) -> WrappedAnnotation:
        return WrappedAnnotation("out", inner)


class InOut:
    """A tensor parameter the function reads and writes."""

    def __class_getitem__(cls, inner) -> WrappedAnnotation:
        return WrappedAnnotation("inout", inner)
