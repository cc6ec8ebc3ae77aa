"""The bounded spin-waits: they see another thread's store, and give up after their polls."""

from __future__ import annotations

import threading
import time

import numpy as np
from cuvil_kernels_cpu.kernels import spin


def test_wait_equal_sees_another_threads_store() -> None:
    word = np.zeros(1, np.int64)

    def later() -> None:
        time.sleep(0.002)
        word[0] = 7

    t = threading.Thread(target=later)
    t.start()
    assert spin.wait_equal(word.ctypes.data, 7, 1 << 40)
    t.join()


def test_waits_give_up_after_their_polls() -> None:
    ctrl = np.zeros(4, np.int64)
    addr = ctrl.ctypes.data
    assert not spin.wait_equal(addr, 1, 1000)
    assert spin.wait_change(addr, 0, 1000) == 0
    counter = np.zeros(1, np.int64)
    ctrl[1] = counter.ctypes.data
    assert spin.wait_posted(addr, 0, addr + 8, addr + 16, addr + 24, 1000) == 0


def test_wait_posted_publishes_done_and_returns_the_new_post() -> None:
    counter = np.ones(1, np.int64)  # the poster has started taking items
    ctrl = np.array([5, counter.ctypes.data, 0, 0], np.int64)
    addr = ctrl.ctypes.data
    assert spin.wait_posted(addr, 4, addr + 8, addr + 16, addr + 24, 1000) == 5
    assert ctrl[2] == 4
