"""Compile a function of tensors with ``cuvil.torch.compile`` (default capture) and compare it
with torch eager; return the IR op names so tests can say which ops a converter chose."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree

import cuvil_ref as cuvil


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


def compile_and_compare(fn: Callable[..., Any], *args: torch.Tensor) -> list[str]:
    """IR op names of the compiled graph, after asserting equality with eager (dtypes, shapes,
    values within 1e-4 relative / 1e-5 absolute; integers exactly)."""
    module = Fn(fn).eval()
    cm = cuvil.torch.compile(module, example_inputs=args, cache=False)
    with torch.no_grad():
        want = module(*args)
    got = cm(*args)
    for g, w in zip(pytree.tree_leaves(got), pytree.tree_leaves(want), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, equal_nan=True)
    return [n.op for n in cm.module.graph.nodes]
