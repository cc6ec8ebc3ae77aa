"""Pieces shared by the lowerings: dtype sets, epilogue decoding, window geometry, checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node


def dtypes(*names: str) -> frozenset[DType]:
    """A dtype set for a lowering record, from the IR's dtype names."""
    return frozenset(DType(n) for n in names)


FLOAT = dtypes("f32", "f16", "bf16")
F32 = dtypes("f32")
INT8 = dtypes("i8")
#: Dtypes data-movement ops handle (numpy moves any of them).
ANY = dtypes("f32", "f16", "bf16", "i8", "u8", "i32", "i64", "bool")
INF = float("inf")

#: Why gelu(approximate='tanh') is declined (plain, in epilogues).
GELU_TANH = (
    "gelu approximate='tanh' not supported: the interpreter's 1 + tanh(u) cancels in float32 "
    "for x < 0, and an accurate kernel differs from it by more than the bound there"
)

# The kernels' activation codes (cuvil_kernels_cpu.kernels.mathf.ACT_*), repeated here so that
# checking a node never imports numba.
ACT_NONE, ACT_GELU, ACT_SILU, ACT_HARDSWISH, ACT_SIGMOID = 0, 1, 2, 3, 4
RES_NONE, RES_BEFORE, RES_AFTER = 0, 1, 2


@dataclass(frozen=True)
class Epilogue:
    """A fused op's epilogue as the kernels take it: clamp bounds, activation code, residual."""

    lo: float = -INF
    hi: float = INF
    act: int = ACT_NONE
    res_mode: int = RES_NONE

    def args(self) -> tuple[np.float32, np.float32, int, int]:
        return np.float32(self.lo), np.float32(self.hi), self.act, self.res_mode


_CLAMPS = {"none": (-INF, INF), "relu": (0.0, INF), "relu6": (0.0, 6.0)}
_ACTS = {"gelu": ACT_GELU, "silu": ACT_SILU, "hardswish": ACT_HARDSWISH}


def epilogue_of(node: Node) -> Epilogue:
    """The epilogue of a fused_* node (none for the plain op)."""
    a = node.attrs
    if not node.op.startswith("fused_"):
        return Epilogue()
    act = a["activation"]
    res = RES_NONE
    if a["has_residual"]:
        res = RES_BEFORE if a["order"] == "residual_then_activation" else RES_AFTER
    if act in _CLAMPS:
        lo, hi = _CLAMPS[act]
        return Epilogue(lo, hi, ACT_NONE, res)
    if act == "clamp":
        lo = a["activation_min"]
        hi = a["activation_max"]
        return Epilogue(-INF if lo is None else lo, INF if hi is None else hi, ACT_NONE, res)
    return Epilogue(act=_ACTS[act], res_mode=res)


def epilogue_check(node: Node) -> str | None:
    if node.op.startswith("fused_") and node.attrs["activation"] == "gelu_tanh":
        return GELU_TANH
    return None


def pads4(padding: Sequence[int]) -> tuple[int, int, int, int]:
    p = tuple(int(v) for v in padding)
    return (p[0], p[1], p[0], p[1]) if len(p) == 2 else (p[0], p[1], p[2], p[3])


def geometry(kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
             dilation: Sequence[int]) -> np.ndarray:  # fmt: skip
    """(KH, KW, sh, sw, pt, pl, dh, dw) as the kernels take it."""
    p = pads4(padding)
    return np.array([*kernel, *stride, p[0], p[1], *dilation], dtype=np.int64)


def same_dtypes(node: Node) -> str | None:
    dts = {v.type.dtype.value for v in node.inputs}
    if len(dts) > 1:
        return f"{node.op}: mixed input dtypes {sorted(dts)} not supported"
    return None


def attr(attrs: Mapping[str, Any], name: str, default: Any) -> Any:
    value = attrs.get(name, default)
    return default if value is None else value
