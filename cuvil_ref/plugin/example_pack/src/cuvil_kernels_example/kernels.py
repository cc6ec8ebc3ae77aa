"""The pack's kernels: ``kernel(node, inputs, out)`` computes ``node`` into the array ``out``.

These are numpy, so the pack runs anywhere; a real pack's kernels launch on its device and write
into device buffers the same way. Each reproduces the op's reference semantics (``docs/ops.md``):
relu keeps NaN, arithmetic broadcasts like numpy, GEMMs accumulate in float32.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuvil_ref.ir.graph import Node

Kernel = Callable[[Node, list[np.ndarray], np.ndarray], None]


def relu(node: Node, args: list[np.ndarray], out: np.ndarray) -> None:
    """y = max(x, 0); NaN stays NaN (np.maximum propagates it)."""
    np.maximum(args[0], np.float32(0), out=out)


def relu6(node: Node, args: list[np.ndarray], out: np.ndarray) -> None:
    """y = min(max(x, 0), 6)."""
    np.minimum(np.maximum(args[0], np.float32(0)), np.float32(6), out=out)


BINARY_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def binary(node: Node, args: list[np.ndarray], out: np.ndarray) -> None:
    """y = a op b with numpy broadcasting."""
    with np.errstate(all="ignore"):
        BINARY_UFUNCS[node.op](args[0], args[1], out=out)


def linear(node: Node, args: list[np.ndarray], out: np.ndarray) -> None:
    """y = x @ weight^T (+ bias)."""
    with np.errstate(all="ignore"):
        np.matmul(args[0], args[1].T, out=out)
        if len(args) > 2:
            out += args[2]


def matmul(node: Node, args: list[np.ndarray], out: np.ndarray) -> None:
    """y = a @ b (batched, broadcasting)."""
    with np.errstate(all="ignore"):
        np.matmul(args[0], args[1], out=out)


def view(node: Node, args: list[np.ndarray], out: np.ndarray) -> None:
    """reshape/flatten/squeeze/unsqueeze: the same bytes. The memory plan usually gives ``out``
    the input's own buffer, and the copy is then a copy onto itself."""
    out[...] = args[0].reshape(out.shape)
