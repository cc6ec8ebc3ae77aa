"""The work counter the kernels share their items through (an atomic fetch-and-add).

A parallel kernel is called by every thread of a :class:`cuvil_kernels_cpu.team.Team` with the
same arguments; each call takes items with :func:`grab` until they run out, so the items are
split dynamically among whoever is running -- a thread the OS has not scheduled yet simply takes
none. ``work`` is a one-element int64 array, reset to 0 before each step.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from cuvil_kernels_cpu.kernels.isa import serial_kernel


@intrinsic
def _fetch_add(typingctx, addr):  # type: ignore[no-untyped-def]
    sig = types.int64(types.intp)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        i64 = ir.IntType(64)
        ptr = builder.inttoptr(args[0], i64.as_pointer())
        return builder.atomic_rmw("add", ptr, ir.Constant(i64, 1), "seq_cst")

    return sig, codegen


@serial_kernel
def grab(work):  # type: ignore[no-untyped-def]
    """The next item index (callers stop once it reaches their item count)."""
    return _fetch_add(work.ctypes.data)
