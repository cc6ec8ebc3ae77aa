"""Bounded spin-waits on shared int64 words, with the GIL released.

The team's threads (:mod:`cuvil_kernels_cpu.team`) hand each other steps through a few int64
words. Waiting for a word to change by sleeping on a semaphore costs a futex wake per step --
measured here at 20-40 us per parallel step with two threads, as long as a small layer itself --
so a waiting thread first spins in native code (the GIL free for the others) for a bounded
number of polls, calling ``sched_yield`` every few microseconds so that on a loaded machine a
thread of ours sharing the core is not starved by the spin, and only then sleeps.

Loads are atomic (sequentially consistent), so the compiler cannot hoist them out of the loop.
There is no ``pause`` between polls: in this KVM guest a ``pause`` loop trips the hypervisor's
pause-loop exit, and a helper spinning on one was measured returning milliseconds late.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from cuvil_kernels_cpu.kernels.isa import serial_kernel

_I64 = ir.IntType(64)


@intrinsic
def _load(typingctx, addr):  # type: ignore[no-untyped-def]
    sig = types.int64(types.intp)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        ptr = builder.inttoptr(args[0], _I64.as_pointer())
        return builder.load_atomic(ptr, "seq_cst", 8)

    return sig, codegen


@intrinsic
def _store(typingctx, addr, value):  # type: ignore[no-untyped-def]
    sig = types.void(types.intp, types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        ptr = builder.inttoptr(args[0], _I64.as_pointer())
        builder.store_atomic(args[1], ptr, "seq_cst", 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _yield(typingctx):  # type: ignore[no-untyped-def]
    """``sched_yield()``: let a thread that shares this core run (the symbol is resolved by
    name when the code is loaded, so the on-disk cache stays valid across processes)."""
    sig = types.void()

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        mod = builder.module
        fn = mod.globals.get("sched_yield")
        if fn is None:
            fn = ir.Function(mod, ir.FunctionType(ir.IntType(32), []), "sched_yield")
        builder.call(fn, [])
        return context.get_dummy_value()

    return sig, codegen


#: Polls between two ``sched_yield`` calls (a few microseconds).
YIELD_EVERY = 8192


@serial_kernel
def wait_change(addr, old, polls):  # type: ignore[no-untyped-def]
    """Poll the int64 at ``addr`` until it differs from ``old`` (at most ``polls`` times);
    returns its last value (``old`` when the polls ran out)."""
    v = _load(addr)
    i = 0
    while v == old and i < polls:
        v = _load(addr)
        i += 1
        if i % YIELD_EVERY == 0:
            _yield()
    return v


@serial_kernel
def wait_equal(addr, want, polls):  # type: ignore[no-untyped-def]
    """Poll the int64 at ``addr`` until it equals ``want`` (at most ``polls`` times); returns
    whether it did."""
    i = 0
    while _load(addr) != want:
        if i >= polls:
            return False
        i += 1
        if i % YIELD_EVERY == 0:
            _yield()
    return True


@serial_kernel
def wait_done(waiting, done, want, polls):  # type: ignore[no-untyped-def]
    """The caller's wait for a helper that joined a step: first it stores 1 at ``waiting``
    (the step's work array word that releases the helpers spinning at the end of their kernel,
    :func:`cuvil_kernels_cpu.kernels.atomics.grab`) -- here, with the GIL released, so a helper
    takes the GIL back without sleeping on it -- then it polls ``done`` until it equals
    ``want`` (at most ``polls`` times); returns whether it did."""
    _store(waiting, 1)
    return wait_equal(done, want, polls)


@serial_kernel
def wait_posted(posted, old, work, done, wide, polls):  # type: ignore[no-untyped-def]
    """A helper's wait for its next step. First it stores ``old`` (the step it finished) at
    ``done`` -- here, with the GIL already released, so the poster that spins for it takes the
    GIL back without sleeping on it. Then it polls ``posted`` until it differs from ``old``, and
    then the step's work counter (its address in the int64 at ``work``) until the poster has
    started taking items -- it has then released the GIL, so the helper takes the GIL without
    sleeping on it. At most ``polls`` polls in each phase; returns the posted value.

    Where the step's work array has the item count (the int64 at ``wide`` is nonzero:
    :mod:`cuvil_kernels_cpu.kernels.atomics`), a step whose items are all taken by the time the
    poster has started is not joined: ``done`` is set to it and the wait goes on for the next
    one, without returning to Python (and the GIL)."""
    while True:
        _store(done, old)
        seq = wait_change(posted, old, polls)
        if seq == old:
            return seq
        counter = _load(work)
        i = 0
        while i < polls and _load(counter) == 0 and _load(posted) == seq:
            i += 1
            if i % YIELD_EVERY == 0:
                _yield()
        if _load(wide) == 0 or _load(posted) != seq:
            return seq
        taken = _load(counter)
        taken = (taken & 0xFFFFFFFF) + (taken >> 32)
        items = _load(counter + 32)
        if taken == 0 or items == 0 or taken < items:  # (0: not published, join)
            return seq
        old = seq  # every item taken: nothing to join
