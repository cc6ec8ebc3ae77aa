"""The op registry: every op is declared once, as an :class:`OpDef`.

An OpDef holds everything about an op — name, version, inputs, typed attributes with defaults,
shape/dtype inference, the numpy reference semantics and a doc string with the formula. The
verifier, interpreter, printer, parser, frontends, conformance suite and ``docs/ops.md`` all read
it; nothing else describes an op.

Reference functions are called as ``reference(*arrays, **attrs)`` and return one array or a tuple.
Inference functions are called as ``infer(types, attrs)`` with a tuple of :class:`TensorType` and
the normalized attrs, and return a tuple of output types.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_ref.errors import IRError, ShapeError, UnknownOpError
from cuvil_ref.ir.dtypes import ALL_DTYPES, DType
from cuvil_ref.ir.frozen import FrozenDict, freeze
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops.families import check_family, check_tolerance, default_family, default_tolerance
from cuvil_ref.ops.grid import NO_GRID, Conformance


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

#: Attribute kinds and the Python values they accept. ``dims`` are ints or symbol names.
ATTR_KINDS: dict[str, str] = {
    "int": "an int",
    "float": "a float",
    "bool": "a bool",
    "str": "a string",
    "ints": "a tuple of ints",
    "floats": "a tuple of floats",
    "dims": "a tuple of ints or symbolic dim names",
    "dtype": "a dtype name such as 'f32'",
    "int?": "an int or None",
    "float?": "a float or None",
    "ints?": "a tuple of ints or None",
}


@dataclass(frozen=True)
class Attr:
    """A typed attribute with an optional default and allowed choices."""

    name: str
    kind: str
    default: Any = REQUIRED
    doc: str = ""
    choices: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ATTR_KINDS:
            raise IRError(f"attribute {self.name}: unknown kind {self.kind!r}")

    def check(self, op: str, value: Any) -> Any:
        """Validate and normalize ``value``; raise naming the op, the attribute and the kind."""
        v = _coerce(self.kind, value)
        if v is _BAD:
            raise IRError(
                f"op '{op}': attribute '{self.name}' must be {ATTR_KINDS[self.kind]}, got {value!r}"
            )
        if self.choices is not None and v not in self.choices:
            raise IRError(
                f"op '{op}': attribute '{self.name}' = {v!r} is not one of {list(self.choices)}"
            )
        return v


_BAD: Any = object()


def _coerce(kind: str, value: Any) -> Any:
    if kind.endswith("?"):
        return None if value is None else _coerce(kind[:-1], value)
    if kind == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            return _BAD
        return int(value)
    if kind == "float":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            return _BAD
        return float(value)
    if kind == "bool":
        return bool(value) if isinstance(value, (bool, np.bool_)) else _BAD
    if kind == "str":
        return value if isinstance(value, str) else _BAD
    if kind == "dtype":
        if isinstance(value, DType):
            return value.value
        return value if isinstance(value, str) and value in {d.value for d in DType} else _BAD
    if kind in ("ints", "floats", "dims"):
        if not isinstance(value, (tuple, list)):
            return _BAD
        item = {"ints": "int", "floats": "float", "dims": "int"}[kind]
        out = []
        for x in value:
            if kind == "dims" and isinstance(x, str):
                out.append(x)
                continue
            c = _coerce(item, x)
            if c is _BAD:
                return _BAD
            out.append(c)
        return tuple(out)
    return _BAD


#: ``infer(types, attrs)``; a control-flow op's is ``infer(types, attrs, regions)``.
InferFn = Callable[..., tuple[TensorType, ...]]
ReferenceFn = Callable[..., Any]
#: ``twin(torch, *tensors, **attrs)``: the op computed by PyTorch eager (``torch`` is the module,
#: passed in so that declaring a twin never imports torch).
TorchTwinFn = Callable[..., Any]


@dataclass(frozen=True)
class OpDef:
    """The single declaration of an op.

    ``inputs`` names the operands; a name starting with ``*`` is variadic (one or more; ``*xs?``:
    zero or more), a name ending in ``?`` is optional (may be absent at the end). ``dtypes`` lists
    the input dtypes the op accepts (used by the verifier and to generate conformance cases).
    ``category`` groups ops in the docs and lets packs claim families (``elementwise``,
    ``reduction``, ``linalg``...).

    ``regions`` names the regions of a control-flow op (``("then", "else")``): each node of the op
    holds that many :class:`~cuvil_ref.ir.graph.Graph` regions. Such an op's ``infer`` is called
    as ``infer(types, attrs, regions)`` and its ``reference`` as ``reference(*arrays,
    regions=..., run=..., **attrs)``, where ``run(region, arrays)`` evaluates a region and returns
    its outputs (see ``cuvil_ref.ops.control_flow``).

    Per-op knowledge for testing lives here too, so nothing else lists ops:

    * ``family``: the signature's shape (``unary``, ``binary``, ``conv2d``, ``pool2d``...; see
      ``cuvil_ref.ops.families.FAMILIES``); default from the category and the inputs.
    * ``tolerance``: how close a float result must be (``exact``, ``ulp:N``, ``reduction``,
      ``reduction+ulp:N``); default from the category. Integer results are always bit-exact.
    * ``conformance``: the attribute grid, extra edge values and input domain the conformance
      suite and the graph fuzzer test (``cuvil_ref.ops.grid``).
    * ``torch_twin``: the same op in PyTorch eager, ``twin(torch, *tensors, **attrs)``, or None;
      the fuzzer's torch mode compares the reference with it.
    """

    name: str
    inputs: tuple[str, ...]
    infer: InferFn
    reference: ReferenceFn
    doc: str
    attrs: tuple[Attr, ...] = ()
    version: int = 1
    category: str = "misc"
    dtypes: frozenset[DType] = field(default_factory=lambda: ALL_DTYPES)
    num_outputs: int = 1  # -1: variable, decided by infer
    family: str = ""
    tolerance: str = ""
    conformance: Conformance = NO_GRID
    torch_twin: TorchTwinFn | None = None
    regions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # frozen: defaults that depend on other fields are filled once, here
        if not self.family:
            object.__setattr__(self, "family", default_family(self.category, self.inputs))
        if not self.tolerance:
            object.__setattr__(self, "tolerance", default_tolerance(self.category))
        problem = check_family(self.family) or check_tolerance(self.tolerance)
        if problem:
            raise IRError(f"op '{self.name}': {problem}")
        known = {a.name for a in self.attrs}
        for p in self.conformance.grid:
            unknown = sorted(set(p.attrs) - known)
            if unknown:
                raise IRError(
                    f"op '{self.name}': conformance point '{p.rule}' sets unknown attribute(s) "
                    f"{', '.join(unknown)} (the op has: {', '.join(sorted(known)) or 'none'})"
                )

    def attr(self, name: str) -> Attr:
        for a in self.attrs:
            if a.name == name:
                return a
        raise KeyError(name)

    def input_arity(self) -> tuple[int, int | None]:
        """(minimum, maximum) number of inputs; maximum None for variadic ops."""
        required = sum(1 for n in self.inputs if not n.endswith("?"))
        if any(n.startswith("*") for n in self.inputs):
            return required, None
        return required, len(self.inputs)

    def normalize_attrs(self, attrs: Mapping[str, Any] | None) -> FrozenDict:
        """Fill defaults, validate kinds, reject unknown names (with a suggestion)."""
        given = dict(attrs or {})
        known = {a.name for a in self.attrs}
        for name in given:
            if name not in known:
                hint = difflib.get_close_matches(name, known, n=1)
                extra = f"; did you mean '{hint[0]}'?" if hint else ""
                raise IRError(
                    f"op '{self.name}' has no attribute '{name}' "
                    f"(it has: {', '.join(sorted(known)) or 'none'}){extra}"
                )
        out: dict[str, Any] = {}
        for a in self.attrs:
            if a.name in given:
                out[a.name] = a.check(self.name, given[a.name])
            elif a.default is REQUIRED:
                raise IRError(f"op '{self.name}': attribute '{a.name}' is required")
            else:
                out[a.name] = freeze(a.default)
        return FrozenDict(out)

    def check_arity(self, n: int) -> None:
        lo, hi = self.input_arity()
        if n < lo or (hi is not None and n > hi):
            want = f"at least {lo}" if hi is None else (f"{lo}" if lo == hi else f"{lo} to {hi}")
            raise ShapeError(
                f"op '{self.name}' takes {want} inputs ({', '.join(self.inputs)}), got {n}"
            )

    def check_regions(self, regions: Sequence[Any]) -> None:
        if len(regions) != len(self.regions):
            names = ", ".join(f"@{r}" for r in self.regions) or "none"
            raise ShapeError(
                f"op '{self.name}' holds {len(self.regions)} regions ({names}), got {len(regions)}"
            )

    def infer_types(
        self,
        types: Sequence[TensorType],
        attrs: Mapping[str, Any] | None,
        regions: Sequence[Any] = (),
    ) -> tuple[TensorType, ...]:
        """Validate arity, regions and dtypes, then run ``infer``; errors become ShapeError naming
        the op."""
        self.check_arity(len(types))
        self.check_regions(regions)
        norm = (
            attrs
            if isinstance(attrs, FrozenDict) and len(attrs) == len(self.attrs)
            else (self.normalize_attrs(attrs))
        )
        for i, t in enumerate(types):
            if t.dtype not in self.dtypes:
                allowed = ", ".join(sorted(d.value for d in self.dtypes))
                raise ShapeError(
                    f"op '{self.name}': input {i} has dtype {t.dtype.value}; allowed: {allowed}"
                )
        try:
            if self.regions:
                out = self.infer(tuple(types), norm, tuple(regions))
            else:
                out = self.infer(tuple(types), norm)
        except (ShapeError, IRError):
            raise
        except Exception as exc:  # an infer bug or bad shapes: name the op and the input types
            shown = ", ".join(str(t) for t in types)
            raise ShapeError(f"op '{self.name}' cannot take ({shown}): {exc}") from exc
        return tuple(out)

    def evaluate(
        self,
        arrays: Sequence[np.ndarray],
        attrs: Mapping[str, Any],
        regions: Sequence[Any] = (),
        run: Callable[[Any, Sequence[np.ndarray]], Sequence[np.ndarray]] | None = None,
    ) -> tuple[Any, ...]:
        """Run the reference semantics; always returns a tuple of arrays. A control-flow op
        also takes its ``regions`` and ``run(region, arrays)``, which evaluates one."""
        if self.regions:
            if run is None:
                raise IRError(f"op '{self.name}' needs a region runner to be evaluated")
            result = self.reference(*arrays, regions=tuple(regions), run=run, **attrs)
        else:
            result = self.reference(*arrays, **attrs)
        return tuple(result) if isinstance(result, (tuple, list)) else (result,)


class OpRegistry:
    """Name -> OpDef. There is one registry, ``REGISTRY``; ops add themselves on import."""

    def __init__(self) -> None:
        self._ops: dict[str, OpDef] = {}

    def register(self, opdef: OpDef) -> OpDef:
        if opdef.name in self._ops:
            raise IRError(f"op '{opdef.name}' is declared twice")
        self._ops[opdef.name] = opdef
        return opdef

    def get(self, name: str) -> OpDef:
        try:
            return self._ops[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._ops, n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise UnknownOpError(
                f"unknown op '{name}'{hint} ({len(self._ops)} ops are registered; see docs/ops.md)"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def __iter__(self) -> Iterator[OpDef]:
        return iter(sorted(self._ops.values(), key=lambda d: (d.category, d.name)))

    def __len__(self) -> int:
        return len(self._ops)

    def names(self) -> list[str]:
        return sorted(self._ops)


REGISTRY = OpRegistry()


def register(opdef: OpDef) -> OpDef:
    """Add ``opdef`` to the global registry and return it."""
    return REGISTRY.register(opdef)


def get_op(name: str) -> OpDef:
    """The OpDef called ``name``; raises UnknownOpError with close matches."""
    return REGISTRY.get(name)
