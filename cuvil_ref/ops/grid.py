"""What the conformance suite and the fuzzer must test of an op, declared with the op.

An op's :class:`OpDef` carries a :class:`Conformance` record: its **attribute grid** (the
attribute values worth testing, each point tagged with the semantic rule it exercises), the
**edge values** its inputs should contain beyond the generic ones (±0, NaN, ±Inf, subnormals,
ties, integer limits), and the **domain** of its float inputs. The conformance generators and the
graph fuzzer (``cuvil_conformance``) read it; nothing there lists ops.

A grid point names only what matters for its rule. Shapes, dtypes and value kinds left empty are
chosen by the generator of the op's family (``cuvil_ref.ops.families``); a point that needs
particular shapes (a window that overhangs the padding, a group count that divides the channels)
gives them. ``rule`` is the attribute class the point belongs to (``padding``, ``ceil_mode``,
``dilation``, ``groups``, ``nan_one_operand``, ``tie``...): ``cuvil-conformance run --quick`` keeps
at least one point of every rule, so a quick run still checks every documented semantic rule.

Value kinds (``values``) are those of ``cuvil_conformance.cases.InputSpec``: ``normal``,
``positive``, ``unit``, ``edge``, ``full``, ``small``, ``bool``, ``index:N``, ``nan_one:K`` (one
NaN in every K elements, at different places in each input), ``ties:S`` (exact halfway points
``(k + 1/2) * S``), ``lowvar:M`` (mean M, standard deviation 1e-2), ``large:M`` (logits of
magnitude about M), ``grid:S`` (multiples of S in [-3, 3]: sums of their products are exact in
f32), ``neg`` (negative values only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_ref.ir.frozen import FrozenDict, freeze

Shape = tuple[int, ...]


@dataclass(frozen=True)
class GridPoint:
    """One point of an op's conformance grid.

    ``attrs``: attribute values (defaults fill the rest). ``rule``: the semantic rule or attribute
    class exercised. ``shapes``/``dtypes``/``values``: per input, empty for the family default.
    ``consts``: indices of inputs that are weights (graph constants). ``hints``: parameters a
    family generator needs that are not attributes (e.g. the float scales a quantized op's
    multipliers derive from). ``exact_accumulation``: the inputs make every sum exact in f32, so
    float results are held to the elementwise bound (no accumulation allowance).
    """

    attrs: FrozenDict = field(default_factory=FrozenDict)
    rule: str = "basic"
    shapes: tuple[Shape, ...] = ()
    dtypes: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    consts: tuple[int, ...] = ()
    hints: FrozenDict = field(default_factory=FrozenDict)
    label: str = ""
    exact_accumulation: bool = False


def point(
    rule: str = "basic",
    *,
    attrs: Mapping[str, Any] | None = None,
    shapes: tuple[Shape, ...] = (),
    dtypes: tuple[str, ...] | str = (),
    values: tuple[str, ...] | str = (),
    consts: tuple[int, ...] = (),
    hints: Mapping[str, Any] | None = None,
    label: str = "",
    exact_accumulation: bool = False,
    **kwattrs: Any,
) -> GridPoint:
    """A :class:`GridPoint`; attributes may be given as keywords (``point("groups", groups=2)``).

    A single string for ``dtypes`` or ``values`` applies to every input.
    """
    merged = {**(attrs or {}), **kwattrs}
    n = len(shapes)
    if isinstance(dtypes, str):
        dtypes = (dtypes,) * max(n, 1)
    if isinstance(values, str):
        values = (values,) * max(n, 1)
    return GridPoint(
        FrozenDict({k: freeze(v) for k, v in merged.items()}),
        rule,
        tuple(tuple(s) for s in shapes),
        tuple(dtypes),
        tuple(values),
        tuple(consts),
        FrozenDict({k: freeze(v) for k, v in (hints or {}).items()}),
        label,
        exact_accumulation,
    )


@dataclass(frozen=True)
class Conformance:
    """An op's conformance knowledge: attribute grid, extra edge values, input domain.

    An empty grid means one point with the default attributes. ``domain`` is ``any`` or
    ``positive`` (log, sqrt: the generator draws positive floats for the shape cases; the edge
    cases still hold negatives and zeros).
    """

    grid: tuple[GridPoint, ...] = ()
    edges: tuple[float, ...] = ()
    domain: str = "any"

    def points(self) -> tuple[GridPoint, ...]:
        return self.grid or (GridPoint(),)

    def rules(self) -> list[str]:
        """The distinct rules of the grid, in declaration order."""
        return list(dict.fromkeys(p.rule for p in self.points()))

    def quick_points(self) -> tuple[GridPoint, ...]:
        """The first point of every rule: what ``--quick`` keeps."""
        seen: set[str] = set()
        out = []
        for p in self.points():
            if p.rule not in seen:
                seen.add(p.rule)
                out.append(p)
        return tuple(out)


def grid(*points: GridPoint, edges: tuple[float, ...] = (), domain: str = "any") -> Conformance:
    """A :class:`Conformance` from points (the common spelling in op declarations)."""
    return Conformance(tuple(points), tuple(float(e) for e in edges), domain)


NO_GRID = Conformance()


def torch_fn(path: str, **rename: str) -> Any:
    """A ``torch_twin`` calling the torch function at dotted ``path`` (``"nn.functional.gelu"``
    is looked up under the ``torch`` module) with the op's attributes as keywords, renamed by
    ``rename`` (``torch_fn("softmax", axis="dim")``); an attribute renamed to ``""`` is dropped.
    """

    def twin(torch: Any, *tensors: Any, **attrs: Any) -> Any:
        fn = torch
        for part in path.split("."):
            fn = getattr(fn, part)
        kwargs = {rename.get(k, k): v for k, v in attrs.items() if rename.get(k, k)}
        return fn(*tensors, **kwargs)

    twin.__qualname__ = f"torch.{path}"
    return twin
