"""Every zoo model, captured at a small input size: opt_levels 1-3 stay within f32 rounding of 0.

Image models run at 32x32 instead of 224x224 (their adaptive pooling accepts any size) to keep
the suite fast. Skipped only when the zoo or the frontend cannot be imported.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.graph import Module
from cuvil_ref.passes.pipeline import optimize

pytest.importorskip("torch")  # the zoo's models are torch modules (the [torch] extra)

from cuvil_ref.frontend import torch_to_cuvilir  # noqa: E402
from cuvil_ref.zoo import MODELS, entry, get_model  # noqa: E402

SMALL_IMAGE = 32


def _small(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) == 4 and shape[-1] > SMALL_IMAGE:
        return (*shape[:2], SMALL_IMAGE, SMALL_IMAGE)
    return shape


@pytest.fixture(scope="module", params=MODELS)
def captured(request: pytest.FixtureRequest) -> tuple[Module, np.ndarray, np.ndarray]:
    import torch

    model, shape = get_model(request.param)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal(_small(shape)).astype(np.float32))
    module = torch_to_cuvilir(model, example_inputs=(x,), capture=entry(request.param).captures[0])
    (want,) = interpret(module, [x.numpy()])
    return module, x.numpy(), want


@pytest.mark.parametrize("level", [1, 2, 3])
def test_opt_level_keeps_outputs(
    captured: tuple[Module, np.ndarray, np.ndarray], level: int
) -> None:
    module, x, want = captured
    optimized, _ = optimize(module, opt_level=level, verify_each=True)
    (got,) = interpret(optimized, [x])
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = max(float(np.max(np.abs(want))), 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)
    if level >= 2:
        assert len(optimized.graph.nodes) <= len(module.graph.nodes)
