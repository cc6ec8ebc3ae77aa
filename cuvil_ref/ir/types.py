"""Tensor types: shape (ints and named symbolic dims), dtype, layout tag, quantization params.

A dimension is an ``int`` (static) or a ``str`` naming a symbolic size such as ``"batch"``. Two
values with the same symbol have the same size at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cuvil_ref.errors import IRError
from cuvil_ref.ir.dtypes import DType

Dim = int | str
Shape = tuple[Dim, ...]

#: Layout tags understood by passes; ``None`` means the default contiguous row-major layout
#: (NCHW for 4-D activations). Targets may add their own (e.g. ``"NCHWc8"``).
KNOWN_LAYOUTS = frozenset({"NCHW", "NHWC", "NCHWc8", "OIHW", "HWIO"})


@dataclass(frozen=True)
class QuantParams:
    """Affine quantization: ``real = scale * (q - zero_point)``.

    ``axis`` is ``None`` for per-tensor params (one scale, one zero point) or the channel axis for
    per-channel params (one entry per channel).
    """

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None

    def __post_init__(self) -> None:
        if len(self.scale) != len(self.zero_point):
            raise IRError(
                f"QuantParams: {len(self.scale)} scales but {len(self.zero_point)} zero points"
            )
        if self.axis is None and len(self.scale) != 1:
            raise IRError("QuantParams: per-tensor params need exactly one scale (or set axis)")
        for s in self.scale:
            if not s > 0:
                raise IRError(f"QuantParams: scale must be positive and finite, got {s}")

    @staticmethod
    def per_tensor(scale: float, zero_point: int) -> QuantParams:
        return QuantParams((float(scale),), (int(zero_point),), None)

    def __str__(self) -> str:
        if self.axis is None:
            return f"q<{self.scale[0]!r}:{self.zero_point[0]}>"
        scales = ",".join(repr(s) for s in self.scale)
        zps = ",".join(str(z) for z in self.zero_point)
        return f"q<axis={self.axis};{scales}:{zps}>"


@dataclass(frozen=True)
class TensorType:
    """The static type of a tensor value."""

    shape: Shape
    dtype: DType = DType.f32
    layout: str | None = None
    quant: QuantParams | None = field(default=None)

    def __post_init__(self) -> None:
        shape = tuple(self.shape)
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, (int, str)):
                raise IRError(f"TensorType: dimension {d!r} must be an int or a symbol name")
            if isinstance(d, int) and d < 0:
                raise IRError(f"TensorType: negative dimension {d} in shape {shape}")
            if isinstance(d, str) and not d.isidentifier():
                raise IRError(f"TensorType: symbolic dimension {d!r} must be an identifier")
        object.__setattr__(self, "shape", shape)
        if not isinstance(self.dtype, DType):
            raise IRError(f"TensorType: dtype must be a DType, got {self.dtype!r}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def symbols(self) -> frozenset[str]:
        return frozenset(d for d in self.shape if isinstance(d, str))

    def numel(self) -> int:
        """Number of elements; requires a static shape."""
        n = 1
        for d in self.shape:
            if not isinstance(d, int):
                raise IRError(f"numel of a symbolic shape {format_shape(self.shape)}")
            n *= d
        return n

    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def with_shape(self, shape: Sequence[Dim]) -> TensorType:
        return TensorType(tuple(shape), self.dtype, self.layout, self.quant)

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(self.shape, dtype, self.layout, self.quant)

    def with_layout(self, layout: str | None) -> TensorType:
        return TensorType(self.shape, self.dtype, layout, self.quant)

    def with_quant(self, quant: QuantParams | None) -> TensorType:
        return TensorType(self.shape, self.dtype, self.layout, quant)

    def __str__(self) -> str:
        text = f"{self.dtype.value}[{format_shape(self.shape)}]"
        if self.quant is not None:
            text += str(self.quant)
        if self.layout:
            text += f"@{self.layout}"
        return text


def format_shape(shape: Sequence[Dim]) -> str:
    return ",".join(str(d) for d in shape)
