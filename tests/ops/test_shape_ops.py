"""Shape ops against torch (values must be equal), negative axes, zero-size dims, and inference
with symbolic dims (kept where the result is one symbol, ShapeError otherwise)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run1, t

X = randn(2, 3, 4, 5)

CASES: list[tuple[str, dict[str, Any], Callable[[torch.Tensor], torch.Tensor]]] = [
    ("reshape", {"shape": (6, 20)}, lambda a: a.reshape(6, 20)),
    ("reshape", {"shape": (-1, 5)}, lambda a: a.reshape(-1, 5)),
    ("reshape", {"shape": (2, 3, -1)}, lambda a: a.reshape(2, 3, -1)),
    ("flatten", {}, torch.flatten),
    ("flatten", {"start_dim": 1}, lambda a: torch.flatten(a, 1)),
    ("flatten", {"start_dim": -3, "end_dim": -2}, lambda a: torch.flatten(a, -3, -2)),
    ("flatten", {"start_dim": 2, "end_dim": 2}, lambda a: torch.flatten(a, 2, 2)),
    ("permute", {"perm": (0, 2, 3, 1)}, lambda a: a.permute(0, 2, 3, 1)),
    ("permute", {"perm": (-1, 0, -2, 1)}, lambda a: a.permute(-1, 0, -2, 1)),
    ("transpose", {"dim0": 1, "dim1": -1}, lambda a: a.transpose(1, -1)),
    ("slice", {"axis": 1, "start": 1}, lambda a: a[:, 1:]),
    ("slice", {"axis": -1, "start": -3, "end": -1}, lambda a: a[..., -3:-1]),
    ("slice", {"axis": 2, "start": 1, "end": 100, "step": 2}, lambda a: a[:, :, 1:100:2]),
    ("slice", {"axis": 3, "start": -100, "end": 2}, lambda a: a[..., -100:2]),
    ("slice", {"axis": 0, "start": 5, "end": 9}, lambda a: a[5:9]),
    ("slice", {"axis": 1, "start": 2, "end": 1}, lambda a: a[:, 2:1]),
    ("slice", {"axis": 2, "end": 2**63 - 1}, lambda a: a[:, :, 0:]),
    ("unsqueeze", {"axis": 0}, lambda a: a.unsqueeze(0)),
    ("unsqueeze", {"axis": -1}, lambda a: a.unsqueeze(-1)),
    ("unsqueeze", {"axis": 2}, lambda a: a.unsqueeze(2)),
    ("expand", {"shape": (3, 2, 3, 4, 5)}, lambda a: a.expand(3, 2, 3, 4, 5)),
    ("expand", {"shape": (-1, -1, 4, 5)}, lambda a: a.expand(-1, -1, 4, 5)),
    ("pad", {"pads": (1, 2)}, lambda a: F.pad(a, (1, 2))),
    (
        "pad",
        {"pads": (1, 0, 0, 2, 3, 1), "value": -1.5},
        lambda a: F.pad(a, (1, 0, 0, 2, 3, 1), value=-1.5),
    ),
    ("pad", {"pads": (-1, 2, 0, -3)}, lambda a: F.pad(a, (-1, 2, 0, -3))),
    ("pad", {"pads": (0, 0, 0, 0, 0, 0, 1, 1)}, lambda a: F.pad(a, (0, 0, 0, 0, 0, 0, 1, 1))),
]


@pytest.mark.parametrize(
    ("op", "attrs", "fn"), CASES, ids=lambda c: str(c) if isinstance(c, str) else ""
)
def test_shape_op_matches_torch(
    op: str, attrs: dict[str, Any], fn: Callable[[torch.Tensor], torch.Tensor]
) -> None:
    close(run1(op, [X], attrs), fn(t(X)))


def test_squeeze_and_expand_of_size_one_dims() -> None:
    x = randn(1, 3, 1, 2)
    close(run1("squeeze", [x]), t(x).squeeze())
    close(run1("squeeze", [x], {"axes": (-2,)}), t(x).squeeze(-2))
    close(run1("squeeze", [x], {"axes": (1, 2)}), t(x).squeeze((1, 2)))  # dim 1 is not 1: kept
    close(run1("expand", [x], {"shape": (4, 3, 5, 2)}), t(x).expand(4, 3, 5, 2))


def test_zero_size_and_int_dtypes() -> None:
    z = np.zeros((0, 4), dtype=np.int32)
    close(run1("reshape", [z], {"shape": (4, 0)}), t(z).reshape(4, 0))
    close(run1("flatten", [z]), torch.flatten(t(z)))
    close(
        run1("pad", [z], {"pads": (1, 1, 1, 0), "value": 7.0}), F.pad(t(z), (1, 1, 1, 0), value=7)
    )
    b = np.array([[True, False]])
    close(run1("transpose", [b], {"dim0": 0, "dim1": 1}), t(b).T)


def test_symbolic_batch_flatten_and_reshape() -> None:
    x = randn(3, 512, 1, 1)
    shapes = [("batch", 512, 1, 1)]
    close(run1("flatten", [x], {"start_dim": 1}, shapes=shapes), torch.flatten(t(x), 1))
    close(run1("reshape", [x], {"shape": ("batch", -1)}, shapes=shapes), t(x).reshape(3, -1))
    close(run1("reshape", [x], {"shape": (-1, 512)}, shapes=shapes), t(x).reshape(-1, 512))
    close(run1("permute", [x], {"perm": (1, 0, 2, 3)}, shapes=shapes), t(x).permute(1, 0, 2, 3))


@pytest.mark.parametrize(
    ("op", "shape", "attrs", "want"),
    [
        ("flatten", ("batch", 512, 1, 1), {"start_dim": 1}, ("batch", 512)),
        ("flatten", (1, "n", 1), {}, ("n",)),
        ("reshape", ("batch", 512, 1, 1), {"shape": ("batch", -1)}, ("batch", 512)),
        ("reshape", ("b", 4, 6), {"shape": (-1, 6)}, None),  # -1 would be b*4
        ("reshape", ("b", "s", 8), {"shape": ("s", "b", 2, 4)}, ("s", "b", 2, 4)),
        ("reshape", ("b", 8), {"shape": (2, -1, "b")}, (2, 4, "b")),
        ("slice", ("b", 5), {"axis": 0, "end": 2**63 - 1}, ("b", 5)),
        ("slice", ("b", 5), {"axis": 1, "start": -2}, ("b", 2)),
        ("squeeze", ("b", 1, 3), {"axes": (1,)}, ("b", 3)),
        ("unsqueeze", ("b", 3), {"axis": -1}, ("b", 3, 1)),
        ("expand", (1, "s"), {"shape": ("b", -1)}, ("b", "s")),
        ("concat", ("b", 3), {"axis": 1}, ("b", 3)),
        ("pad", ("b", 3), {"pads": (1, 1)}, ("b", 5)),
    ],
)
def test_symbolic_inference(op: str, shape: tuple, attrs: dict, want: tuple | None) -> None:
    opdef = get_op(op)
    if want is None:
        with pytest.raises(ShapeError, match="make those dims static"):
            opdef.infer_types([TensorType(shape)], attrs)
    else:
        assert opdef.infer_types([TensorType(shape)], attrs)[0].shape == want


@pytest.mark.parametrize(
    ("op", "shape", "attrs", "match"),
    [
        ("flatten", ("batch", 3), {}, "batch"),
        ("reshape", (2, 3), {"shape": (4, 2)}, "element counts"),
        ("reshape", (2, 3), {"shape": (-1, -1)}, "one -1"),
        ("reshape", (2, 3), {"shape": (-1, 4)}, "cannot be inferred"),
        ("reshape", ("b", 3), {"shape": ("c", -1)}, "not a factor"),
        ("permute", (2, 3), {"perm": (0, 0)}, "permutation"),
        ("transpose", (2, 3), {"dim0": 0, "dim1": 2}, "out of range"),
        ("concat", (2, 3), {"axis": 2}, "out of range"),
        ("split", (5, 2), {"sizes": (2, 2)}, "add up"),
        ("slice", ("b", 2), {"axis": 0, "start": 1}, "symbolic"),
        ("slice", (4,), {"axis": 0, "step": 0}, "step"),
        ("squeeze", ("b", 1), {}, "give the axes"),
        ("unsqueeze", (2, 3), {"axis": 4}, "out of range"),
        ("expand", (2, 3), {"shape": (4, 3)}, "not 1"),
        ("expand", (2, 3), {"shape": (-1, 2, 3)}, "leading"),
        ("pad", (2, 3), {"pads": (1, 1, 1)}, "pairs"),
        ("pad", (2, 3), {"pads": (-2, -2)}, "negative"),
        ("pad", ("b", 3), {"pads": (0, 0, 1, 0)}, "symbolic"),
    ],
)
def test_shape_errors(op: str, shape: tuple, attrs: dict, match: str) -> None:
    with pytest.raises(ShapeError, match=match):
        get_op(op).infer_types([TensorType(shape)], attrs)
