"""The work counter: the step's own thread takes items from the front, helpers from the back,
every item once; a helper leaving a step waits (bounded) for the caller's signal."""

from __future__ import annotations

import threading
import time

import numpy as np
from cuvil_kernels_cpu.kernels import atomics
from cuvil_kernels_cpu.kernels.atomics import WORDS, grab, thread_id
from cuvil_kernels_cpu.kernels.isa import kernel

FRONT, BACK = 1, 2


@kernel
def _take(owner, n_items, work):  # type: ignore[no-untyped-def]
    """owner[i] += FRONT or BACK for every item this thread takes."""
    side = 1 if thread_id() == work[1] else 2
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        owner[item] += side


def test_front_and_back_split_the_items_into_a_prefix_and_a_suffix() -> None:
    for n in (0, 1, 7, 300):
        owner = np.zeros(n, np.int64)
        work = np.zeros(WORDS, np.int64)
        atomics.reset(work, threading.get_ident())
        barrier = threading.Barrier(2)

        def helper(owner: np.ndarray = owner, work: np.ndarray = work,
                   barrier: threading.Barrier = barrier) -> None:  # fmt: skip
            barrier.wait()
            _take(owner, owner.size, work)

        t = threading.Thread(target=helper)
        t.start()
        barrier.wait()
        _take(owner, n, work)
        t.join()
        assert set(np.unique(owner)) <= {FRONT, BACK}  # every item exactly once
        front = int((owner == FRONT).sum())
        assert (owner[:front] == FRONT).all() and (owner[front:] == BACK).all()


def test_alone_the_front_thread_takes_items_in_order() -> None:
    work = np.zeros(WORDS, np.int64)
    atomics.reset(work, threading.get_ident())
    order = []
    for _ in range(6):
        order.append(grab(work, 5))
    assert order == [0, 1, 2, 3, 4, 5]
    atomics.reset(work, threading.get_ident() + 1)  # now this thread is a helper
    assert [grab(work, 3) for _ in range(3)] == [2, 1, 0]


def test_a_one_word_counter_is_shared_from_the_front() -> None:
    work = np.zeros(1, np.int64)
    assert [grab(work, 3) for _ in range(5)] == [0, 1, 2, 3, 3]


def test_a_helper_leaving_a_step_waits_for_the_callers_signal() -> None:
    work = np.zeros(WORDS, np.int64)
    atomics.reset(work, threading.get_ident(), spin_polls=1 << 60)  # "forever" for this test
    done = threading.Event()

    def helper() -> None:
        assert grab(work, 0) == 0  # nothing to take: it waits in native code
        done.set()

    t = threading.Thread(target=helper, daemon=True)
    t.start()
    time.sleep(0.05)
    assert not done.is_set()  # still waiting (2**60 polls cannot have run out)
    work[atomics.WAITING] = 1  # the caller's signal (spin.wait_done stores it)
    t.join(timeout=10)
    assert done.is_set()
    atomics.reset(work, threading.get_ident(), spin_polls=0)
    assert work[atomics.WAITING] == 0
    out = []
    t = threading.Thread(target=lambda: out.append(grab(work, 0)))  # no budget: no wait
    t.start()
    t.join(timeout=10)
    assert out == [0]
