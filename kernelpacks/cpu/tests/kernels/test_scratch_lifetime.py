"""A kernel's own scratch stays allocated while its raw addresses are in use.

Numba frees an array a kernel allocated right after the array's last use in the source; the
tile and lane intrinsics take raw addresses, so scratch used only through an address taken
before the item loop was freed at once and its block given to the next allocation. With one
malloc arena shared by the threads (``MALLOC_ARENA_MAX=1``; a busy process reaches the same
state once its threads outnumber glibc's arenas) the second thread's scratch landed on the
first's: wrong outputs, then ``double free or corruption``. The check runs in a child process,
where the arena setting applies and a corrupted heap cannot take the test run down with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import threading
    import numpy as np
    from cuvil_kernels_cpu.kernels import winograd as W

    rng = np.random.default_rng(0)
    n, h, c, o = 2, 8, 64, 70
    x = rng.standard_normal((n, h, h, c)).astype(np.float32)
    u = W.transform_weights(rng.standard_normal((o, c, 3, 3)).astype(np.float32))
    bias = rng.standard_normal(u.shape[1] * u.shape[3]).astype(np.float32)
    res = np.zeros((1, 1, 1, 1), np.float32)
    pads = np.array([1, 1], np.int64)

    def run(out, work):
        W.winograd_conv(x, u, bias, res, out, pads, np.float32(0), np.float32(np.inf), 0, 0,
                        W.MR, u.shape[1], work)

    want = np.empty((n, h, h, o), np.float32)
    run(want, np.zeros(1, np.int64))
    bad = 0
    for _ in range(60):
        out = np.full_like(want, np.nan)
        work = np.zeros(1, np.int64)  # one counter: the two threads split the items
        threads = [threading.Thread(target=run, args=(out, work)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bad += not np.array_equal(out, want)
    print("mismatches", bad)
    """
)


def test_winograd_scratch_is_not_shared_between_threads() -> None:
    env = {**os.environ, "MALLOC_ARENA_MAX": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "mismatches 0" in done.stdout, done.stdout
