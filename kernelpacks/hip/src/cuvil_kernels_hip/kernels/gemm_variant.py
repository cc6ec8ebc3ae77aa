"""Which GEMM kernel variant to use: tensor cores (WMMA) or the SIMT tiled loop, and why.

WMMA (``nvcuda::wmma`` 16x16x16 fragments) is legal only on CUDA targets that list the
``tensor_core`` feature, for fp16/bf16/int8 operands, with M, N and K all multiples of 16 (the
fragment shape; it also keeps every fragment pointer 32-byte aligned). bf16 fragments need
sm_80+, int8 sm_72+. On HIP the plain path is used: rocWMMA is not packaged in Debian, and the
MFMA builtins are left for a later step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TENSOR_CORE_DTYPES = ("float16", "bfloat16", "int8")
FRAGMENT = 16
MIN_SM = {"float16": 70, "bfloat16": 80, "int8": 72}


@dataclass(frozen=True)
class GemmVariant:
    """The chosen variant (``"wmma"`` or ``"simt"``) and a sentence saying why."""

    name: str
    reason: str

    @property
    def tensor_core(self) -> bool:
        return self.name == "wmma"


def _is_hip(features: frozenset[str]) -> bool:
    return any(f == "hip" or f == "rocm" or f.startswith("gfx") for f in features)


def _sm_version(features: frozenset[str]) -> int | None:
    versions = [int(m.group(1)) for f in features if (m := re.fullmatch(r"sm_(\d+)", f))]
    return max(versions) if versions else None


def choose_gemm_variant(
    dtype: str, m: int, n: int, k: int, features: frozenset[str] | set[str] | tuple[str, ...]
) -> GemmVariant:
    """Pick the GEMM variant for operand ``dtype`` and problem size ``m x n x k``."""
    feats = frozenset(features)
    if "tensor_core" not in feats:
        return GemmVariant("simt", "target features do not list 'tensor_core'")
    if _is_hip(feats):
        return GemmVariant(
            "simt", "HIP target: rocWMMA is unavailable and MFMA is not generated; plain tiled path"
        )
    if dtype not in TENSOR_CORE_DTYPES:
        return GemmVariant(
            "simt", f"dtype {dtype} has no tensor-core path (needs one of {TENSOR_CORE_DTYPES})"
        )
    odd = [f"{name}={v}" for name, v in (("M", m), ("N", n), ("K", k)) if v % FRAGMENT]
    if odd:
        return GemmVariant(
            "simt", f"{', '.join(odd)} not a multiple of {FRAGMENT} (WMMA fragment size)"
        )
    sm = _sm_version(feats)
    if sm is not None and sm < MIN_SM[dtype]:
        return GemmVariant("simt", f"{dtype} WMMA needs sm_{MIN_SM[dtype]}+, target is sm_{sm}")
    return GemmVariant(
        "wmma", f"{dtype} operands, M, N, K multiples of {FRAGMENT}, target has tensor cores"
    )
