"""The work counter the kernels share their items through: the caller takes items from the
front, the team's helpers from the back.

A parallel kernel is called by every thread of a :class:`cuvil_kernels_cpu.team.Team` with the
same arguments; each call takes items with :func:`grab` until they run out, so the items are
split dynamically among whoever is running -- a thread the OS has not scheduled yet simply takes
none.

**Front and back.** ``work[0]`` packs two counts in one int64, items taken from the front (low
32 bits) and from the back (high 32 bits); one atomic add claims an item on either side, and a
claim is valid while the two counts together stay under the item count. The thread whose id
(``pthread_self``) is ``work[1]`` -- the one running the step, set per step -- takes items
0, 1, 2...; the helpers take n-1, n-2... So from one step to the next each thread mostly works
on the same part of the data (the top rows of one layer's output and of the next layer's
input), which stays in its own L2; with one shared counter the items fell to the threads at
random and half of every step's input came from the other core, through L3.

**Leaving a step.** A helper that finds the items exhausted does not return at once: it spins
(``work[2]`` polls at most, with the GIL released) until the caller has come back from its own
call and is waiting, with the GIL released, for the helpers (``work[3]`` set by
:func:`cuvil_kernels_cpu.kernels.spin.wait_done`). Both threads return from their kernels into
Python at about the same time; the one that found the GIL taken slept on it, and waking it cost
10-15 us in this KVM guest -- per step, as long as a small MobileNetV2 layer. Now the helper
takes the GIL only while the caller waits without it.

**Joining a step.** :func:`grab` publishes the item count in ``work[4]``; a helper that sees
the caller started and every item already taken does not join at all
(:func:`cuvil_kernels_cpu.kernels.spin.wait_posted`): it stays in native code for the next step.

``work`` has :data:`WORDS` int64 words, reset per step by :func:`reset`. A one-word array (the
tests call kernels with ``np.zeros(1, np.int64)``) is a plain shared counter, all from the front.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from cuvil_kernels_cpu.kernels.isa import serial_kernel

#: words of a work array: packed counts, front thread id, helper spin budget, caller waiting,
#: the step's item count (published by :func:`grab`, read by a helper deciding to join)
WORDS = 5
_FRONT, _SPIN, WAITING, ITEMS = 1, 2, 3, 4
_BACK_ONE = np.int64(1) << np.int64(32)
_LOW = np.int64(0xFFFFFFFF)
_I64 = ir.IntType(64)


@intrinsic
def _fetch_add(typingctx, addr, inc):  # type: ignore[no-untyped-def]
    sig = types.int64(types.intp, types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        ptr = builder.inttoptr(args[0], _I64.as_pointer())
        return builder.atomic_rmw("add", ptr, args[1], "seq_cst")

    return sig, codegen


@intrinsic
def _load(typingctx, addr):  # type: ignore[no-untyped-def]
    sig = types.int64(types.intp)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        ptr = builder.inttoptr(args[0], _I64.as_pointer())
        return builder.load_atomic(ptr, "seq_cst", 8)

    return sig, codegen


@intrinsic
def thread_id(typingctx):  # type: ignore[no-untyped-def]
    """``pthread_self()``, the value ``threading.get_ident()`` gives on Linux (the symbol is
    resolved by name when the code is loaded, so the on-disk cache stays valid)."""
    sig = types.int64()

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        mod = builder.module
        fn = mod.globals.get("pthread_self")
        if fn is None:
            fn = ir.Function(mod, ir.FunctionType(_I64, []), "pthread_self")
        return builder.call(fn, [])

    return sig, codegen


@serial_kernel
def grab(work, n_items):  # type: ignore[no-untyped-def]
    """The next item index for this thread, or ``n_items`` once they are all taken."""
    addr = work.ctypes.data
    if work.size < WORDS:
        item = _fetch_add(addr, np.int64(1))
        return item if item < n_items else n_items
    work[ITEMS] = n_items
    if thread_id() == work[_FRONT]:
        old = _fetch_add(addr, np.int64(1))
        taken = (old & _LOW) + (old >> 32)
        return old & _LOW if taken < n_items else n_items
    old = _fetch_add(addr, _BACK_ONE)
    back = old >> 32
    if (old & _LOW) + back < n_items:
        return n_items - 1 - back
    # exhausted: stay in native code until the caller waits for us without the GIL
    flag = addr + 8 * WAITING
    polls = work[_SPIN]
    i = 0
    while i < polls and _load(flag) == 0:
        i += 1
    return n_items


def reset(work: np.ndarray, front: int, spin_polls: int = 0) -> None:
    """Before a step: no item taken, ``front`` (a ``threading.get_ident()``) takes from the
    front, helpers spin at most ``spin_polls`` polls when they leave."""
    if work.size >= WORDS:
        work[1] = front
        work[2] = spin_polls
        work[3] = 0
    work[0] = 0
