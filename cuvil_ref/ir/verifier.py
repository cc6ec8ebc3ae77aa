"""The verifier: SSA, topological order, valid attributes, types equal to their inference, and
regions (their signatures and their scopes).

Errors name the node (``%y = conv2d(%x, ...)``) and its source line when known. A region is
verified as a graph of its own: its values are scoped to it, so a node inside it that reads a
value of the enclosing graph is refused with a hint to pass the value as an operand; an error
inside a region names the region and the node holding it.
"""

from __future__ import annotations

from collections.abc import Set

from cuvil_ref.errors import CuvilError, VerificationError
from cuvil_ref.ir.graph import Graph, Module, Node


def verify(program: Module | Graph) -> None:
    """Raise :class:`VerificationError` on the first broken invariant."""
    graph = program.graph if isinstance(program, Module) else program
    verify_graph(graph)


def verify_graph(graph: Graph, outer: Set[str] = frozenset()) -> None:
    """Verify ``graph``; ``outer`` holds the names visible in enclosing graphs (for the hint a
    region gets when it reads one of them)."""
    defined: dict[str, object] = {}
    for v in graph.inputs:
        if v.name in defined:
            raise VerificationError(f"graph input %{v.name} is declared twice")
        defined[v.name] = v.type
    for name in graph.constants:
        if name in defined:
            raise VerificationError(f"constant %{name} reuses the name of a graph input")
        defined[name] = graph.constant_value(name).type
    for node in graph.nodes:
        where = node.describe()
        for v in node.inputs:
            if v.name not in defined:
                if v.name in outer:
                    raise VerificationError(
                        f"{where}: input %{v.name} belongs to an enclosing graph; a region reads "
                        "outer values only through its op's operands (pass it as an operand and "
                        "read the region's parameter)"
                    )
                raise VerificationError(
                    f"{where}: input %{v.name} is not defined before use "
                    "(not an input, constant or earlier node output)"
                )
            if defined[v.name] != v.type:
                raise VerificationError(
                    f"{where}: input %{v.name} has type {v.type} here but {defined[v.name]} "
                    "where it is defined"
                )
        _verify_regions(node, outer | defined.keys())
        _verify_types(node, where)
        for v in node.outputs:
            if v.name in defined:
                raise VerificationError(f"{where}: %{v.name} is defined twice (not SSA)")
            defined[v.name] = v.type
    for v in graph.outputs:
        if v.name not in defined:
            raise VerificationError(f"graph output %{v.name} is never defined")
        if defined[v.name] != v.type:
            raise VerificationError(
                f"graph output %{v.name} is typed {v.type} but defined as {defined[v.name]}"
            )


def _verify_regions(node: Node, visible: Set[str]) -> None:
    from cuvil_ref.ops import get_op

    if not node.regions:
        return
    try:
        names = get_op(node.op).regions
    except CuvilError as exc:
        raise VerificationError(f"{node.describe()}: {exc}") from exc
    if len(names) != len(node.regions):
        shown = ", ".join(f"@{n}" for n in names) or "none"
        raise VerificationError(
            f"{node.describe()}: holds {len(node.regions)} regions but op '{node.op}' has "
            f"{len(names)} ({shown})"
        )
    for name, region in zip(names, node.regions, strict=True):
        try:
            verify_graph(region, visible)
        except VerificationError as exc:
            raise VerificationError(f"{exc} (in region @{name} of {node.describe()})") from exc


def _verify_types(node: Node, where: str) -> None:
    from cuvil_ref.ops import get_op

    try:
        opdef = get_op(node.op)
        attrs = opdef.normalize_attrs(node.attrs)
        if attrs != node.attrs:
            raise VerificationError(f"attrs {dict(node.attrs)} are not normalized")
        inferred = opdef.infer_types([v.type for v in node.inputs], attrs, node.regions)
    except CuvilError as exc:
        raise VerificationError(f"{where}: {exc}") from exc
    if len(inferred) != len(node.outputs):
        raise VerificationError(
            f"{where}: {len(node.outputs)} outputs but op '{node.op}' gives {len(inferred)}"
        )
    for v, t in zip(node.outputs, inferred, strict=True):
        # layout and quantization tags are annotations; shape and dtype must match exactly.
        if (v.type.shape, v.type.dtype) != (t.shape, t.dtype):
            raise VerificationError(
                f"{where}: output %{v.name} is typed {v.type} but op '{node.op}' infers {t}"
            )
