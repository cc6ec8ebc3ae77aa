"""Batch streams end to end: the same bits as the whole batch, the choice in the report, the
option, and concurrent callers."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from cuvil_ref.errors import CuvilError
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.zoo import get_model


def _mobilenet(batch: int) -> tuple[object, np.ndarray]:
    model, _ = get_model("mobilenet_v2")
    x = torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    return torch_to_cuvilir(model, example_inputs=(x,)), x.numpy()


def _compile(module: object, **options: object) -> object:
    return compile_module(module, "cpu", opt_level=3, cache=False,
                          options={"threads": 2, **options})  # fmt: skip


def test_streams_give_the_bits_of_the_whole_batch() -> None:
    module, x = _mobilenet(5)
    whole = _compile(module, batch_split="off")
    split = _compile(module, batch_split="on")
    record = split.report()["metrics"]["batch_split"]
    assert record["split"] is True and record["streams"] == 2
    assert record["sub_batch_sizes"] == [1] and record["sub_batches"] == 5
    np.testing.assert_array_equal(split.run([x])[0], whole.run([x])[0])
    layers = split.report()["metrics"]
    assert layers["layers_are"].startswith("per stream") and layers["layers"]
    assert whole.report()["metrics"]["batch_split"] == {"split": False, "why": "batch_split=off"}


def test_auto_records_what_it_measured() -> None:
    module, x = _mobilenet(4)
    program = _compile(module)  # batch_split="auto"
    record = program.report()["metrics"]["batch_split"]
    assert record["why"].startswith("measured") or "too short" in record["why"]
    if "measured_ms" in record:
        ms = record["measured_ms"]
        assert record["split"] == (ms["whole"] >= ms["streams"] * 0.97)
    want = _compile(module, batch_split="off").run([x])[0]
    np.testing.assert_array_equal(program.run([x])[0], want)


def test_one_thread_or_one_image_runs_whole() -> None:
    module, _ = _mobilenet(1)
    rec = _compile(module, batch_split="on").report()["metrics"]["batch_split"]
    assert rec == {"split": False, "why": "2 thread(s), batch 1"}


def test_a_bad_value_names_the_option_and_its_choices() -> None:
    module, _ = _mobilenet(2)
    with pytest.raises(CuvilError, match="batch_split.*'auto', 'on', 'off'"):
        _compile(module, batch_split="maybe")


def test_concurrent_callers_of_a_split_module_get_their_own_results() -> None:
    module, x = _mobilenet(4)
    split = _compile(module, batch_split="on")
    want = _compile(module, batch_split="off")
    inputs = [x + np.float32(i) for i in range(4)]
    wants = [want.run([a])[0] for a in inputs]
    got: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        for _ in range(3):
            got[i] = split.run([inputs[i]])[0]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for i in range(4):
        np.testing.assert_array_equal(got[i], wants[i])


def test_auto_candidates_are_powers_of_two_that_feed_every_stream() -> None:
    from cuvil_kernels_cpu.streams import sub_batch_candidates

    assert sub_batch_candidates(8, 2) == [1, 2, 4]
    assert sub_batch_candidates(5, 2) == [1, 2]
    assert sub_batch_candidates(3, 2) == [1]
    assert sub_batch_candidates(2, 4) == []


def test_auto_keeps_the_fastest_sub_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    from cuvil_kernels_cpu import streams

    monkeypatch.setattr(streams, "MIN_RUN_S", 0.0)  # time even this small model
    module, x = _mobilenet(4)
    program = _compile(module)
    want = _compile(module, batch_split="off").run([x])[0]
    np.testing.assert_array_equal(program.run([x])[0], want)
    record = program.report()["metrics"]["batch_split"]
    by_size = record["measured_ms"]["streams_by_sub_batch"]
    assert set(by_size) == {"1", "2"}
    best = min(by_size, key=by_size.__getitem__)
    assert record["sub_batch_sizes"] == [int(best)]
    assert record["sub_batches"] == 4 // int(best)
    assert record["measured_ms"]["streams"] == by_size[best]
