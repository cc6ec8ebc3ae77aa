"""The fused GEMM/conv epilogue: ``act(acc + bias [+ residual])`` or ``act(acc + bias) + residual``.

An :class:`Epilogue` is part of a kernel's cache key; its activation is one of
:data:`scalar_ops.ACTIVATIONS` (``clamp`` uses ``act_min``/``act_max``).
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_kernels_cuda.kernels import scalar_ops


@dataclass(frozen=True)
class Epilogue:
    """What to apply to each accumulated output before it is stored."""

    activation: str = "identity"
    act_min: float = 0.0
    act_max: float = 0.0
    residual_before_activation: bool = False

    def __post_init__(self) -> None:
        if self.activation not in scalar_ops.ACTIVATIONS:
            raise KeyError(
                f"epilogue activation {self.activation!r} is not fusable; use one of "
                f"{', '.join(scalar_ops.ACTIVATIONS)} or run it as a separate elementwise op"
            )

    def key(self) -> tuple[str, bool]:
        return (self.activation, self.residual_before_activation)


#: The default: store the accumulator as is.
NO_EPILOGUE = Epilogue()
