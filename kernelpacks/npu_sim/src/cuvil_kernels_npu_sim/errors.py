"""Exceptions the simulator raises; each message names the instruction (index and text)."""

from __future__ import annotations


class NpuSimError(RuntimeError):
    """Base class of simulator errors."""


class ScratchpadBoundsError(NpuSimError):
    """An instruction reads or writes outside a scratchpad, the micro-op table or DRAM."""


class AccumulatorOverflowError(NpuSimError):
    """A GEMM or ALU result does not fit the int32 accumulator (or a STORE does not fit int8)."""


class HazardError(NpuSimError):
    """Two queues touched the same scratchpad bytes with no dependence token ordering them."""


class DeadlockError(NpuSimError):
    """No queue can proceed: each waits for a token that is never pushed."""
