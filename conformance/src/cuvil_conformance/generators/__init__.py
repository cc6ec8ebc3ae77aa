"""Case generators, keyed by op family; the per-op knowledge comes from the op declarations.

``generate_cases`` walks the op registry. Each op's family (``OpDef.family``) picks a generator
here; the generator reads the op's declared grid, edge values and domain (``OpDef.conformance``),
so this package holds no list of ops. Families not named in ``FAMILY_GENERATORS`` build one case
per declared grid point that gives its shapes. An op that yields no case is returned in
``missing`` and reported by the runner as uncovered -- never silently skipped.

``--quick`` keeps the first grid point of every rule, so a quick run still has a case of every
attribute class and semantic rule (padding, ceil_mode, groups, ties, NaN with one NaN operand...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from cuvil_conformance.cases import Case, dedupe
from cuvil_conformance.generators import elementwise, points, reductions
from cuvil_ref.ops import REGISTRY, OpDef

FamilyGenerator = Callable[[OpDef, bool], Iterator[Case]]
#: An out-of-tree generator for one op: ``(op name, quick) -> cases``.
Generator = Callable[[str, bool], Iterator[Case]]

FAMILY_GENERATORS: dict[str, FamilyGenerator] = {
    "unary": elementwise.unary_cases,
    "binary": elementwise.binary_cases,
    "divide": elementwise.division_cases,
    "reduce": reductions.reduce_cases,
    "reduce_var": reductions.reduce_cases,
    "reduce_arg": reductions.reduce_cases,
    "shape": points.shape_cases,
    "factory": points.factory_cases,
}

_EXTRA: dict[str, Generator] = {}


def register_generator(op: str, generator: Generator) -> None:
    """Add cases for one op beyond its declared grid (for packs testing their own ops)."""
    _EXTRA[op] = generator


def cases_for(opdef: OpDef, quick: bool = False) -> list[Case]:
    """Every case of one op: its family generator plus any registered extra generator."""
    family = FAMILY_GENERATORS.get(opdef.family, points.explicit_cases)
    cases = list(family(opdef, quick))
    if opdef.name in _EXTRA:
        cases.extend(_EXTRA[opdef.name](opdef.name, quick))
    return cases


def suite_ops() -> list[str]:
    """The ops a whole-registry run covers: every op but those holding regions."""
    return [n for n in REGISTRY.names() if not REGISTRY.get(n).regions]


def generate_cases(
    ops: Sequence[str] | None = None, quick: bool = False
) -> tuple[list[Case], list[str]]:
    """(cases, ops without cases) for the given ops (default: the whole registry but the
    control-flow ops, which hold regions: no pack lowers them -- they run their regions, which
    the lowering partitions like any graph -- and ``tests/ir/test_regions.py`` checks them)."""
    names = list(ops) if ops else suite_ops()
    cases: list[Case] = []
    missing: list[str] = []
    for name in names:
        found = cases_for(REGISTRY.get(name), quick)
        if not found:
            missing.append(name)
        cases.extend(found)
    return dedupe(cases), missing


def all_cases(quick: bool = False) -> Iterable[Case]:
    return generate_cases(None, quick)[0]

