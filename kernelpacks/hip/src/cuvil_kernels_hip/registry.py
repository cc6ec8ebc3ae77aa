"""The registry of kernel families and the representative configurations the compile check uses.

``FAMILIES`` maps a family name to its generator; ``representative_configs()`` lists one
``KernelConfig`` per interesting (family, dtype, params, options) point: every dtype, every op of
each family, each epilogue activation, both GEMM variants and several unroll factors. The compile
check script and the compile tests both read this list, so adding a config here checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cuvil_kernels_hip.kernels.conv2d import conv2d_source
from cuvil_kernels_hip.kernels.elementwise import elementwise_source
from cuvil_kernels_hip.kernels.epilogue import Epilogue
from cuvil_kernels_hip.kernels.gemm import gemm_source
from cuvil_kernels_hip.kernels.normalization import NORM_OPS, normalization_source
from cuvil_kernels_hip.kernels.pooling import POOL_MODES, pooling_source
from cuvil_kernels_hip.kernels.qgemm import qconv2d_source, qgemm_source
from cuvil_kernels_hip.kernels.qpool import QPOOL_MODES, qpool_source
from cuvil_kernels_hip.kernels.quant_elementwise import (
    QUANT_ELEMENTWISE_OPS,
    quant_elementwise_source,
)
from cuvil_kernels_hip.kernels.reduction import REDUCE_OPS, reduction_source
from cuvil_kernels_hip.source import KernelOptions, KernelSource

FAMILIES: dict[str, Callable[..., KernelSource]] = {
    "elementwise": elementwise_source,
    "reduction": reduction_source,
    "normalization": normalization_source,
    "gemm": gemm_source,
    "conv2d": conv2d_source,
    "pool2d": pooling_source,
    "quant_elementwise": quant_elementwise_source,
    "qgemm": qgemm_source,
    "qconv2d": qconv2d_source,
    "qpool2d": qpool_source,
}

FLOAT_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class KernelConfig:
    """One generator call: ``FAMILIES[family](*args, options=options, **kwargs)``."""

    family: str
    args: tuple[object, ...]
    kwargs: tuple[tuple[str, object], ...]
    options: KernelOptions

    def generate(self) -> KernelSource:
        return FAMILIES[self.family](*self.args, options=self.options, **dict(self.kwargs))

    @property
    def label(self) -> str:
        parts = [str(a) for a in self.args if not isinstance(a, tuple)]
        for key, value in self.kwargs:
            if isinstance(value, Epilogue):
                flags = ("+b" if value.bias else "") + ("+r" if value.residual else "")
                parts.append(f"ep={value.activation}{flags}")
            else:
                parts.append(f"{key}={value}")
        parts.append(f"unroll={self.options.loop_unroll_factor}")
        return f"{self.family}({', '.join(parts)})"


def _cfg(family: str, *args: object, unroll: int = 4, **kwargs: object) -> KernelConfig:
    return KernelConfig(family, args, tuple(sorted(kwargs.items())), KernelOptions(unroll))


def representative_configs() -> list[KernelConfig]:
    """Every config the compile check builds (about 60 sources)."""
    chain = (("add", 1), ("mul", 0.5), ("gelu", None), ("max", 2), ("sigmoid", None))
    cfgs: list[KernelConfig] = []
    for i, dt in enumerate(FLOAT_DTYPES):
        unroll = (1, 4, 8)[i]
        cfgs.append(_cfg("elementwise", chain, 3, dt, unroll=unroll))
        cfgs.append(_cfg("elementwise", (("relu", None),), 1, dt, unroll=2))
        cfgs += [_cfg("reduction", op, dt, unroll=unroll) for op in REDUCE_OPS]
        cfgs += [_cfg("normalization", op, dt, unroll=unroll) for op in NORM_OPS]
        cfgs += [_cfg("pool2d", mode, dt, unroll=unroll) for mode in POOL_MODES]
        cfgs.append(_cfg("gemm", dt, epilogue=Epilogue(True, "relu"), trans_b=True, unroll=unroll))
        cfgs.append(_cfg("conv2d", dt, epilogue=Epilogue(True, "silu", True), unroll=unroll))
    cfgs.append(_cfg("normalization", "layer_norm", "float32", affine=False))
    cfgs.append(_cfg("pool2d", "avg", "float32", count_include_pad=False))
    for act, micro, unroll in (
        ("none", 1, 1),
        ("relu6", 2, 2),
        ("gelu", 4, 8),
        ("hardswish", 2, 16),
        ("gelu_tanh", 4, 4),
    ):
        cfgs.append(
            _cfg("gemm", "float32", epilogue=Epilogue(True, act, True), micro=micro, unroll=unroll)
        )
        cfgs.append(
            _cfg(
                "conv2d",
                "float16",
                epilogue=Epilogue(True, act),
                micro=min(micro, 2),
                unroll=unroll,
            )
        )
    for dt, unroll in (("float16", 2), ("bfloat16", 4)):
        cfgs.append(
            _cfg("gemm", dt, epilogue=Epilogue(True, "gelu", True), variant="wmma", unroll=unroll)
        )
        cfgs.append(_cfg("gemm", dt, trans_b=True, variant="wmma", unroll=unroll))
    cfgs += [_cfg("quant_elementwise", op) for op in QUANT_ELEMENTWISE_OPS]
    cfgs.append(_cfg("quant_elementwise", "quantize", float_dtype="float16"))
    cfgs.append(_cfg("quant_elementwise", "dequantize", float_dtype="bfloat16"))
    cfgs.append(_cfg("qgemm", unroll=2))
    cfgs.append(_cfg("qgemm", bias=False, per_channel=False, b_zero_point=True, trans_b=False))
    cfgs.append(_cfg("qgemm", variant="wmma", unroll=4))
    cfgs.append(_cfg("qconv2d", unroll=4))
    cfgs.append(_cfg("qconv2d", bias=False, micro=1, unroll=1))
    cfgs += [_cfg("qpool2d", mode) for mode in QPOOL_MODES]
    cfgs.append(_cfg("qpool2d", "avg", count_include_pad=False, unroll=2))
    return cfgs
