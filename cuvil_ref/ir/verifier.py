"""The verifier: SSA, topological order, valid attributes, and types equal to their inference.

Errors name the node (``%y = conv2d(%x, ...)``) and its source line when known.
"""

from __future__ import annotations

from cuvil_ref.errors import CuvilError, VerificationError
from cuvil_ref.ir.graph import Graph, Module


def verify(program: Module | Graph) -> None:
    """Raise :class:`VerificationError` on the first broken invariant."""
    from cuvil_ref.ops import get_op

    graph = program.graph if isinstance(program, Module) else program
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
                raise VerificationError(
                    f"{where}: input %{v.name} is not defined before use "
                    "(not an input, constant or earlier node output)"
                )
            if defined[v.name] != v.type:
                raise VerificationError(
                    f"{where}: input %{v.name} has type {v.type} here but {defined[v.name]} "
                    "where it is defined"
                )
        try:
            opdef = get_op(node.op)
            attrs = opdef.normalize_attrs(node.attrs)
            if attrs != node.attrs:
                raise VerificationError(f"attrs {dict(node.attrs)} are not normalized")
            inferred = opdef.infer_types([v.type for v in node.inputs], attrs)
        except VerificationError as exc:
            raise VerificationError(f"{where}: {exc}") from exc
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
