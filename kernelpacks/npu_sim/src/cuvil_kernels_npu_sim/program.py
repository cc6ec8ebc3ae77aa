"""A lowered layer: instructions, micro-ops and the DRAM image they run against.

DRAM is one flat byte array. `Region`s name its parts: inputs (written by the host before a run),
outputs (read back after) and constants (weights, per-channel tables, the micro-op table). An
activation region with `layout="NHWC"` stores a logical NCHW tensor channels-last; `to_dram` and
`from_dram` convert at the host boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cuvil_kernels_npu_sim.config import NpuConfig
from cuvil_kernels_npu_sim.isa import Insn, encode_program


@dataclass(frozen=True)
class Region:
    """`shape` is the logical shape (NCHW for an NHWC-stored activation)."""

    name: str
    offset: int
    shape: tuple[int, ...]
    dtype: str  # "int8" | "int32"
    kind: str  # "input" | "output" | "const"
    layout: str = "plain"  # "plain" | "NHWC"

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def to_dram(region: Region, array: np.ndarray) -> np.ndarray:
    """The bytes the host writes for `array` (checked against the region's shape and dtype)."""
    array = np.asarray(array)
    if array.shape != region.shape:
        raise ValueError(
            f"region {region.name!r}: expected shape {region.shape}, got {array.shape}"
        )
    if array.dtype != np.dtype(region.dtype):
        raise ValueError(
            f"region {region.name!r}: expected dtype {region.dtype}, got {array.dtype}"
        )
    if region.layout == "NHWC":
        array = np.moveaxis(array, 1, -1)
    return np.ascontiguousarray(array).view(np.uint8).reshape(-1)


def from_dram(region: Region, dram: np.ndarray) -> np.ndarray:
    raw = dram[region.offset : region.offset + region.nbytes].view(region.dtype)
    if region.layout == "NHWC":
        n, c, *spatial = region.shape
        return np.ascontiguousarray(np.moveaxis(raw.reshape(n, *spatial, c), -1, 1))
    return raw.reshape(region.shape).copy()


@dataclass(frozen=True)
class Program:
    """What `lower_*` returns and `simulate` runs.

    `macs` counts useful multiply-accumulates; `compulsory_dram_bytes` is every byte the layer
    must touch, moved once: each constant and output whole, and of an input only what some
    window reads (`touched`: a stride-2 1x1 convolution reads a quarter of its input; padding
    is not in DRAM). That is the roofline's memory term.
    """

    name: str
    config: NpuConfig
    insns: tuple[Insn, ...]
    regions: dict[str, Region]
    const_image: np.ndarray  # uint8, the whole DRAM with constants filled in
    macs: int
    info: dict[str, object] = field(default_factory=dict)
    touched: dict[str, int] = field(default_factory=dict)  # region -> bytes a window reads

    @property
    def inputs(self) -> list[str]:
        return [r.name for r in self.regions.values() if r.kind == "input"]

    @property
    def outputs(self) -> list[str]:
        return [r.name for r in self.regions.values() if r.kind == "output"]

    @property
    def compulsory_dram_bytes(self) -> int:
        return sum(
            self.touched.get(r.name, r.nbytes) for r in self.regions.values() if r.name != "uops"
        )

    def binary(self) -> bytes:
        return encode_program(list(self.insns))

    def roofline_cycles(self) -> float:
        cfg = self.config
        return max(
            self.macs / cfg.peak_macs_per_cycle,
            self.compulsory_dram_bytes / cfg.dram_bytes_per_cycle,
        )
