"""Compile a tiny function of tensors with the default capture and compare it with torch eager:
same structure, dtypes and shapes, values exact for integers and bools and within 1e-5 for floats
(NaN where torch has NaN)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree

import cuvil_ref as cuvil


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> Any:
        return self.fn(*xs)


def compiled(fn: Callable[..., Any], *xs: torch.Tensor) -> Any:
    """The compiled module for ``fn`` at ``xs`` (default capture, no cache)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cuvil.torch.compile(Fn(fn).eval(), example_inputs=xs, cache=False)


def matches_eager(fn: Callable[..., Any], *xs: torch.Tensor) -> Any:
    """Compile ``fn``, run it on ``xs`` and assert it equals ``fn(*xs)``; returns the result."""
    cm = compiled(fn, *xs)
    got, want = cm(*xs), fn(*xs)
    g, w = pytree.tree_leaves(got), pytree.tree_leaves(want)
    assert len(g) == len(w)
    for a, e in zip(g, w):
        assert a.dtype == e.dtype, (a.dtype, e.dtype)
        assert a.shape == e.shape, (a.shape, e.shape)
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6, equal_nan=True)
    return got
