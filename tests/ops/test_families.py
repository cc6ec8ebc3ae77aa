"""Op families name registered ops only, and agree with the declarations' categories."""

from __future__ import annotations

import ast
from pathlib import Path

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


#: Where a group of ops must come from ``families`` rather than be spelled out: the core's
#: optimizer, quantizer, lowering and plugin kit, and the packs' lowering modules (their kernel
#: libraries, under ``kernels/``, name the formulas they implement).
_REPO = Path(__file__).resolve().parents[2]
_SCANNED = ("ops", "passes", "quant", "lowering", "plugin")
_PACKS = ("cuda", "hip", "npu_sim")


def _spelled_groups(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """(line, names) of every literal that spells three or more op names as a group: a set, a
    membership test against a tuple or list, or a module constant. An ``Emitter``'s
    ``formulas`` are kernel formula names (some equal op names) and are not groups of ops."""
    formulas = {
        id(inner)
        for call in ast.walk(tree)
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "Emitter"
        for arg in (*call.args, *(k.value for k in call.keywords))
        for inner in ast.walk(arg)
    }
    literals: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Set) and id(node) not in formulas:
            literals.append(node)
        elif isinstance(node, ast.Compare):
            literals += [c for c in node.comparators if isinstance(c, ast.Tuple | ast.List)]
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Tuple):
            literals.append(node.value)
    found = []
    for lit in literals:
        names = [
            e.value
            for e in getattr(lit, "elts", [])
            if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value in REGISTRY
        ]
        if len(names) >= 3:
            found.append((lit.lineno, names))
    return found


def test_no_op_group_is_spelled_out_outside_families() -> None:
    roots = [_REPO / "cuvil_ref" / name for name in _SCANNED]
    roots += [p for name in _PACKS if (p := _REPO / "kernelpacks" / name / "src").is_dir()]
    offenders = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.name == "families.py" or "kernels" in path.relative_to(root).parts:
                continue
            for line, names in _spelled_groups(ast.parse(path.read_text("utf-8"))):
                offenders.append(f"{path.relative_to(_REPO)}:{line}: {names}")
    assert offenders == [], "import these groups from cuvil_ref.ops.families:\n" + "\n".join(
        offenders
    )
