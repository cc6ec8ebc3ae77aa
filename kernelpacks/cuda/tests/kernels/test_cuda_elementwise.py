"""map / zip / where / fused chains against torch, with NaN/inf, broadcasting, views and fp16."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cuvil_kernels_cuda.device import to_host as host
from cuvil_kernels_cuda.kernels import elementwise as ew

SPECIAL = np.array([-3.5, -1.0, -0.0, 0.0, 0.25, 1.0, 2.5, 7.0, 100.0, np.nan, np.inf, -np.inf])

TORCH_UNARY = {
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "relu": torch.relu,
    "relu6": F.relu6,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "silu": F.silu,
    "hardswish": F.hardswish,
    "erf": torch.erf,
}


@pytest.mark.parametrize("op", sorted(TORCH_UNARY))
def test_unary_matches_torch_including_nan_inf(op: str) -> None:
    x = SPECIAL.astype(np.float32).reshape(3, 4)
    got = host(ew.unary(op, x))
    want = TORCH_UNARY[op](torch.tensor(x)).numpy()
    if op == "gelu":
        # cuvil_ref pins gelu(+inf) = +inf (torch's vectorized f32 kernel says NaN).
        want = np.where(np.isposinf(x), np.float32(np.inf), want)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)


def test_clamp_takes_bounds() -> None:
    x = SPECIAL.astype(np.float32)
    got = host(ew.unary("clamp", x, a=-1.5, b=2.0))
    np.testing.assert_array_equal(got, torch.clamp(torch.tensor(x), -1.5, 2.0).numpy())


TORCH_BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
    "max": torch.maximum,
    "min": torch.minimum,
}


@pytest.mark.parametrize("op", sorted(TORCH_BINARY))
def test_binary_broadcasts_strided_views(op: str, rng: np.random.Generator) -> None:
    a = rng.standard_normal((4, 3)).astype(np.float32).T  # (3, 4) transposed view
    b = np.array([0.0, 2.0, -1.0, 3.0], np.float32)[::-1]  # negative-stride view, broadcast
    a[0, :3] = [np.nan, np.inf, -np.inf]
    got = host(ew.binary(op, a, b))
    want = TORCH_BINARY[op](torch.tensor(a), torch.tensor(b.copy())).numpy()
    assert got.shape == (3, 4)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)


def test_pow_special_cases_match_torch() -> None:
    x = np.array([-8.0, -2.0, -2.0, 0.0, 0.0, 1.0, np.nan, 10.0, -10.0, 2.0], np.float32)
    y = np.array([1 / 3, 3.0, 2.0, -1.0, 0.0, np.nan, 0.0, 50.0, 51.0, -200.0], np.float32)
    got = host(ew.binary("pow", x, y))
    want = torch.pow(torch.tensor(x), torch.tensor(y)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, equal_nan=True)


def test_fused_chain_is_one_kernel_with_scalar_steps() -> None:
    x = np.array([[-2.0, 0.5, 3.0, np.nan]], np.float32)
    steps = [ew.Step("mul", 2.0), ew.Step("sub", 1.0, reverse=True), ew.Step("clamp", -2.0, 2.0),
             ew.Step("exp")]  # fmt: skip
    got = host(ew.fused(x, steps))
    want = np.exp(np.clip(1.0 - 2.0 * x, -2.0, 2.0))
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_binary_with_post_chain() -> None:
    a = np.array([1.0, -4.0, 2.0], np.float32)
    got = host(ew.binary("add", a, np.float32(1.0), post=[ew.Step("relu")]))
    np.testing.assert_array_equal(got, [2.0, 0.0, 3.0])


def test_where_broadcasts_any_dtype() -> None:
    c = np.array([[True], [False]])
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = host(ew.where(c, a, np.int32(-1)))
    np.testing.assert_array_equal(got, np.where(c, a, -1))


def test_fp16_storage_fp32_math(rng: np.random.Generator) -> None:
    a = rng.standard_normal((3, 5)).astype(np.float16)
    b = rng.standard_normal((5,)).astype(np.float16)
    got = ew.binary("mul", a, b, post=[ew.Step("gelu")])
    assert got.dtype == np.float16
    want = F.gelu(torch.tensor(a, dtype=torch.float32) * torch.tensor(b, dtype=torch.float32))
    # One float16 rounding of an fp32 result: half an fp16 ulp, relative 2**-11.
    np.testing.assert_allclose(host(got).astype(np.float32), want.numpy(), rtol=2**-11, atol=1e-7)


def test_errors_name_the_op() -> None:
    with pytest.raises(KeyError, match="cosh"):
        ew.unary("cosh", np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="float64"):
        ew.unary("exp", np.zeros(2, np.float64))
    with pytest.raises(ValueError, match="broadcast"):
        ew.binary("add", np.zeros(2, np.float32), np.zeros(3, np.float32))
