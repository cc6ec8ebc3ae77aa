"""Cases for the integer transformer ops of docs/semantics.md §11: qsoftmax, qlayer_norm, qlut.

Tables and per-channel constants come from the same host builders the quantizer uses
(``cuvil_ref.ops.qtransformer``), at realistic scales: short and long rows, a row of equal
values (qsoftmax: uniform; qlayer_norm: zero variance, where only eps_q keeps the root
positive), saturating output scales, and negative gammas.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_conformance.generators import register_generator
from cuvil_ref.ops import get_op
from cuvil_ref.ops.qtransformer import exp_table, layer_norm_params, lut_table


def qsoftmax_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [((4, 16), 0.05, "full"), ((2, 3, 128), 0.1, "full"), ((3, 7), 0.5, "edge")]
    for shape, scale, kind in grid[:1] if quick else grid:
        yield make_case(op, [InputSpec(shape, "i8", kind)], {"table": exp_table(scale)})
    if not quick:  # along a middle axis (the reference allows any axis)
        attrs = {"axis": 1, "table": exp_table(0.02)}
        yield make_case(op, [InputSpec((2, 5, 3), "i8", "full")], attrs)


def qlayer_norm_cases(op: str, quick: bool) -> Iterator[Case]:
    rng = np.random.default_rng(14)
    grid = [((4, 32), 0.05, 3, 0.04, -2), ((2, 3, 64), 0.02, -10, 0.1, 5), ((3, 8), 1.0, 0, 0.5, 0)]
    for shape, sx, zx, so, zo in grid[:1] if quick else grid:
        n = shape[-1]
        gamma = rng.standard_normal(n).astype(np.float32)
        beta = (0.3 * rng.standard_normal(n)).astype(np.float32)
        params = layer_norm_params(gamma, beta, 1e-5, sx, so, n)
        attrs = {"x_zp": zx, **params, "out_scale": so, "out_zp": zo}
        yield make_case(op, [InputSpec(shape, "i8", "full")], attrs)
        if not quick:
            yield make_case(op, [InputSpec(shape, "i8", "edge")], {**attrs, "qmin": zo})


def _float_fn(name: str) -> Callable[[np.ndarray], np.ndarray]:
    opdef = get_op(name)
    attrs = opdef.normalize_attrs({})
    return lambda v: opdef.evaluate([v], attrs)[0]


def qlut_cases(op: str, quick: bool) -> Iterator[Case]:
    grid = [
        ("gelu", 0.05, 3, 0.03, -20),
        ("sigmoid", 0.1, 0, 1 / 256, -128),
        ("tanh", 0.02, -5, 0.008, 0),
    ]
    for fn, sx, zx, so, zo in grid[:1] if quick else grid:
        table = lut_table(_float_fn(fn), sx, zx, so, zo)
        full = {"table": table, "fn": fn, "out_scale": so, "out_zp": zo}
        yield make_case(op, [InputSpec((3, 300), "i8", "full")], full)


for _op, _gen in {
    "qsoftmax": qsoftmax_cases,
    "qlayer_norm": qlayer_norm_cases,
    "qlut": qlut_cases,
}.items():
    register_generator(_op, _gen)
