"""The dynamic batcher in isolation, on an event loop in this process.

The executable is a stand-in with a controllable duration (the batcher's contract is only
``run(list of arrays) -> list of arrays``): it records the batch sizes it sees and returns
``2 * x``, so each request can be checked to get its own rows back.
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from cuvil_ref.serve.batcher import Batcher
from cuvil_ref.serve.config import DynamicBatching
from cuvil_ref.serve.errors import DeadlineExceeded, ExecutionError, ModelNotReady, QueueFull
from cuvil_ref.serve.instances import Instance
from cuvil_ref.serve.signature import Prepared


class _Program:
    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.batches: list[int] = []
        self.threads: set[str] = set()

    def run(self, arrays):
        self.batches.append(arrays[0].shape[0])
        self.threads.add(threading.current_thread().name)
        time.sleep(self.seconds)
        return [arrays[0] * 2]


def _req(rows: int, value: float = 1.0) -> Prepared:
    x = np.full((rows, 3), value, np.float32)
    return Prepared((x,), rows, ((3,),), {})


def _batcher(program: _Program, max_batch: int = 8, instances: int = 1, **policy) -> Batcher:
    insts = [Instance(program, f"t{i}") for i in range(instances)]  # type: ignore[arg-type]
    return Batcher("m/1", insts, max_batch, DynamicBatching(**policy))


def test_concurrent_requests_share_a_batch_and_get_their_rows() -> None:
    async def main():
        prog = _Program()
        b = _batcher(prog, max_batch=8, max_queue_delay_us=20000)
        pending = [b.submit(_req(1, float(i)), None) for i in range(6)]
        outs = await asyncio.gather(*(p.future for p in pending))
        await b.close()
        return prog, outs

    prog, outs = asyncio.run(main())
    assert prog.batches == [6]
    for i, (y,) in enumerate(outs):
        assert np.array_equal(y, np.full((1, 3), 2.0 * i, np.float32))
    assert all(name.startswith("cuvil-exec-") for name in prog.threads)  # never the loop


def test_max_batch_and_preferred_sizes_split_batches() -> None:
    async def main(**policy):
        prog = _Program()
        b = _batcher(prog, max_batch=4, max_queue_delay_us=20000, **policy)
        pending = [b.submit(_req(1), None) for i in range(7)]
        await asyncio.gather(*(p.future for p in pending))
        await b.close()
        return prog.batches

    assert asyncio.run(main()) == [4, 3]
    assert asyncio.run(main(preferred_batch_size=[2])) == [2, 2, 2, 1]


def test_different_shapes_are_not_mixed() -> None:
    async def main():
        prog = _Program()
        b = _batcher(prog, max_queue_delay_us=5000)
        a = b.submit(_req(1), None)
        other = Prepared((np.ones((1, 5), np.float32),), 1, ((5,),), {})
        c = b.submit(other, None)
        await asyncio.gather(a.future, c.future)
        await b.close()
        return prog.batches

    assert asyncio.run(main()) == [1, 1]


def test_queue_bound_raises_queue_full_with_retry_after() -> None:
    async def main():
        b = _batcher(_Program(0.05), max_batch=1, max_queue_size=2)
        first = b.submit(_req(1), None)
        await asyncio.sleep(0.01)  # first is running; the queue is empty
        b.submit(_req(1), None)
        b.submit(_req(1), None)
        with pytest.raises(QueueFull) as info:
            b.submit(_req(1), None)
        await b.close()
        return first, info.value

    first, err = asyncio.run(main())
    assert first.future.done() and err.retry_after >= 1 and err.http_status == 503


def test_expired_requests_get_504_before_running() -> None:
    async def main():
        prog = _Program(0.05)
        b = _batcher(prog, max_batch=1)
        busy = b.submit(_req(1), None)
        await asyncio.sleep(0.01)
        late = b.submit(_req(1), time.monotonic() + 0.001)
        await busy.future
        with pytest.raises(DeadlineExceeded):
            await late.future
        await b.close()
        return prog.batches

    assert asyncio.run(main()) == [1]  # the expired request never ran


def test_cancelled_requests_are_dropped() -> None:
    async def main():
        prog = _Program(0.05)
        b = _batcher(prog, max_batch=1)
        busy = b.submit(_req(1), None)
        await asyncio.sleep(0.01)
        gone = b.submit(_req(1), None)
        gone.future.cancel()
        kept = b.submit(_req(1), None)
        await asyncio.gather(busy.future, kept.future)
        await b.close()
        return prog.batches

    assert asyncio.run(main()) == [1, 1]


def test_two_instances_run_in_parallel() -> None:
    async def main():
        prog = _Program(0.2)
        b = _batcher(prog, max_batch=1, instances=2)
        start = time.monotonic()
        pending = [b.submit(_req(1), None) for _ in range(2)]
        await asyncio.gather(*(p.future for p in pending))
        elapsed = time.monotonic() - start
        await b.close()
        return prog, elapsed

    prog, elapsed = asyncio.run(main())
    assert len(prog.threads) == 2 and elapsed < 0.39  # 2 x 0.2 s in parallel, not in series


def test_close_drains_then_refuses() -> None:
    async def main():
        b = _batcher(_Program(0.02), max_batch=1)
        pending = [b.submit(_req(1), None) for _ in range(3)]
        await b.close()
        with pytest.raises(ModelNotReady):
            b.submit(_req(1), None)
        return pending

    assert all(p.future.done() and not p.future.exception() for p in asyncio.run(main()))


def test_execution_errors_answer_the_batch() -> None:
    class Broken(_Program):
        def run(self, arrays):
            raise ValueError("kernel exploded")

    async def main():
        b = _batcher(Broken())
        p = b.submit(_req(1), None)
        with pytest.raises(ExecutionError) as info:
            await p.future
        ok = _batcher(_Program())
        q = ok.submit(_req(1), None)
        await q.future
        await b.close()
        await ok.close()
        return info.value

    err = asyncio.run(main())
    assert err.http_status == 500 and "kernel exploded" in str(err)
