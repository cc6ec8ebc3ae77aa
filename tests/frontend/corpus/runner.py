"""Compile one corpus entry with ``cuvil.torch.compile`` (default capture) and compare with eager.

``run_entry`` returns a :class:`Result`: the capture path used, IR node count, compile time,
and the worst relative error (``max |cuvil - eager| / max |eager|`` over every output tensor) on
the example inputs and on fresh inputs of the same shapes -- or the error Cuvil raised.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

import cuvil_ref as cuvil
from cuvil_ref.errors import CuvilError
from tests.frontend.corpus.models import Entry

TOLERANCE = 1e-4


@dataclass
class Result:
    name: str
    family: str
    capture: str = ""
    nodes: int = 0
    compile_ms: float = 0.0
    max_rel_error: float | None = None
    error: str = ""
    error_type: str = ""

    @property
    def ok(self) -> bool:
        return (
            not self.error and self.max_rel_error is not None and (self.max_rel_error <= TOLERANCE)
        )


def relative_error(got: Any, want: Any) -> float:
    g = [x for x in pytree.tree_leaves(got) if isinstance(x, torch.Tensor)]
    w = [x for x in pytree.tree_leaves(want) if isinstance(x, torch.Tensor)]
    if len(g) != len(w):
        raise AssertionError(f"{len(g)} output tensors, eager gives {len(w)}")
    worst = 0.0
    for a, b in zip(g, w):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise AssertionError(
                f"output {a.dtype}{list(a.shape)} vs eager {b.dtype}{list(b.shape)}"
            )
        if b.numel() == 0:
            continue
        if not b.is_floating_point():
            worst = max(worst, 0.0 if torch.equal(a, b) else float("inf"))
            continue
        scale = b.detach().abs().max().item()
        diff = (a.detach().double() - b.detach().double()).abs().max().item()
        worst = max(worst, diff / max(scale, 1e-12))
    return worst


def run_entry(entry: Entry, **compile_kwargs: Any) -> Result:
    result = Result(entry.name, entry.family)
    try:
        model = entry.build()
    except Exception as exc:  # the corpus itself is broken: say so loudly
        raise RuntimeError(f"corpus entry {entry.name} does not build: {exc}") from exc
    args, kwargs = entry.inputs(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            cm = cuvil.torch.compile(
                model, example_inputs=args, example_kwargs=kwargs or None, **compile_kwargs
            )
            result.compile_ms = (time.perf_counter() - t0) * 1e3
            result.capture = cm.report()["capture"]
            result.nodes = len(cm.module.graph.nodes)
            worst = 0.0
            for seed in (0, 1):
                a, k = entry.inputs(seed)
                with torch.no_grad():
                    want = model(*a, **k)
                worst = max(worst, relative_error(cm(*a, **k), want))
            result.max_rel_error = worst
    except CuvilError as exc:
        result.error, result.error_type = str(exc), type(exc).__name__
    except AssertionError as exc:
        result.error, result.error_type = str(exc), "mismatch"
    return result
