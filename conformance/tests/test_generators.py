"""Cases come from the op declarations: every declared rule has cases, --quick keeps one of each,
and the conformance package names no op."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from cuvil_conformance import generate_cases
from cuvil_conformance.cases import InputSpec

from cuvil_ref.ops import REGISTRY, families

PACKAGE = Path(__import__("cuvil_conformance").__file__).parent


def _rules(quick: bool) -> dict[str, set[str]]:
    cases, missing = generate_cases(quick=quick)
    assert missing == []
    out: dict[str, set[str]] = defaultdict(set)
    for c in cases:
        out[c.op].add(c.rule)
    return out


def test_every_declared_rule_has_cases_in_full_and_quick() -> None:
    full, quick = _rules(False), _rules(True)
    for opdef in REGISTRY:
        if opdef.regions:  # control flow: no single-node cases (see generate_cases)
            assert opdef.name not in full and not opdef.conformance.grid, opdef.name
            continue
        declared = {p.rule for p in opdef.conformance.grid}
        assert declared <= full[opdef.name], (opdef.name, declared - full[opdef.name])
        # --quick keeps at least one case of every attribute class / semantic rule
        assert declared <= quick[opdef.name], (opdef.name, declared - quick[opdef.name])
        assert quick[opdef.name] == full[opdef.name], opdef.name


@pytest.mark.parametrize(
    ("op", "rules"),
    [
        ("max_pool2d", {"padding", "ceil_mode", "dilation", "nan_one_operand"}),
        ("avg_pool2d", {"count_include_pad", "ceil_mode", "divisor_override"}),
        ("conv2d", {"groups", "depthwise", "dilation", "asymmetric_padding"}),
        ("quantize", {"tie", "saturation", "zero_point", "per_channel"}),
        ("requantize", {"tie", "saturation", "zero_point"}),
        ("qconv2d", {"padding_zero_point", "per_tensor", "groups", "saturation"}),
        ("softmax", {"large_logits", "nan_one_operand"}),
        ("layer_norm", {"low_variance"}),
        ("maximum", {"nan_one_operand"}),
        ("argmax", {"tie", "nan_one_operand"}),
        ("fused_conv2d", {"epilogue_bound"}),
    ],
)
def test_documented_rules_have_separating_cases(op: str, rules: set[str]) -> None:
    assert rules <= _rules(True)[op]


def test_no_op_is_named_in_the_conformance_package() -> None:
    """Per-op knowledge lives on the OpDef: generators and the tolerance policy hold no op list
    (family names, which a few ops share, are allowed)."""
    ops = set(REGISTRY.names()) - set(families.FAMILIES)
    for path in [*PACKAGE.glob("generators/*.py"), PACKAGE / "tolerance.py"]:
        named = {
            n.value
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in ops
        }
        assert not named, f"{path.name} names ops {sorted(named)}"


def test_value_kinds_do_what_they_say() -> None:
    rng = np.random.default_rng(0)
    a = InputSpec((6, 7), "f32", "nan_one:3:0").generate(rng)
    b = InputSpec((6, 7), "f32", "nan_one:3:1").generate(rng)
    assert np.isnan(a).sum() == 14 and not (np.isnan(a) & np.isnan(b)).any()
    ties = InputSpec((100,), "f32", "ties:0.25").generate(rng) / np.float32(0.25)
    assert np.all(ties - np.floor(ties) == 0.5)
    low = InputSpec((768,), "f32", "lowvar:1000").generate(rng).astype(np.float64)
    assert abs(low.mean() - 1000) < 1 and 2 < low.std() < 5
    grid = InputSpec((50,), "f32", "grid:0.25").generate(rng)
    assert np.all(grid * 4 == np.round(grid * 4)) and np.abs(grid).max() <= 3
    assert (InputSpec((20,), "i8", "neg").generate(rng) < 0).all()


def test_every_grid_point_builds_and_interprets() -> None:
    """A point whose attributes or shapes the op rejects would be an error of the suite."""
    from cuvil_ref.interpreter import interpret

    cases, _ = generate_cases(quick=True)
    for c in cases:
        graph, inputs = c.build()
        interpret(graph, inputs)
