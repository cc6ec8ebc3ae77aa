"""Op families name registered ops only, and agree with the declarations' categories."""

from __future__ import annotations

import pytest

from cuvil_ref.ops import REGISTRY, families, get_op

SETS = {
    name: value
    for name, value in vars(families).items()
    if name.isupper() and isinstance(value, frozenset) and name != "POINTWISE_CATEGORIES"
}


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_member_is_a_registered_op(name: str) -> None:
    missing = sorted(op for op in SETS[name] if op not in REGISTRY)
    assert missing == [], f"families.{name} names unregistered ops {missing}"


def test_families_agree_with_categories() -> None:
    pointwise = (
        families.UNARY_MATH | families.ARITHMETIC | families.CLAMPS | families.SMOOTH_ACTIVATIONS
    )
    assert all(families.is_pointwise(get_op(op)) for op in pointwise | families.COMPARISONS)
    assert not any(families.is_pointwise(get_op(op)) for op in families.VIEWS)
    assert {get_op(op).category for op in families.DATA_MOVEMENT} == {"shape"}
    assert {get_op(op).category for op in families.QUANTIZED | families.QUANT_BOUNDARY} == {
        "quantized"
    }
    assert families.COMMUTATIVE <= families.ARITHMETIC and families.RELUS <= families.CLAMPS
