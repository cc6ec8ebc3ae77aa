"""The shared op -> kernel-template table: registered ops only, and a pack's table is exactly the
ops whose family and formula its emitters implement."""

from __future__ import annotations

from cuvil_ref.ops import REGISTRY
from cuvil_ref.plugin.kit.templates import TEMPLATES, Emitter, formula, lowerings


def test_every_template_names_a_registered_op() -> None:
    assert sorted(op for op in TEMPLATES if op not in REGISTRY) == []


def test_lowerings_follow_families_and_formulas() -> None:
    def lower(*args: object) -> None:
        return None

    table = lowerings(
        {"reduce": Emitter(lower, formulas=frozenset({"sum", "max"})), "view": Emitter(lower)}
    )
    assert sorted(table) == ["amax", "flatten", "reshape", "squeeze", "sum", "unsqueeze"]
    assert formula("amax") == "max" and formula("maximum") == "max"
    assert formula("qavg_pool2d") == "avg" and TEMPLATES["qavg_pool2d"].family == "qpool2d"
