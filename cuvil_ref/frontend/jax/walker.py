"""Walk a jaxpr and emit Cuvil IR: one converter per JAX primitive (``primitives.TABLE``).

A jaxpr is a list of equations ``outvars = primitive[params] invars``; invars are variables or
literals. Call-like primitives (``pjit``/``jit``, ``custom_jvp_call``, ``custom_vjp_call``,
``closed_call``, ``remat``) are inlined: their inner jaxpr is walked with the outer values bound to
its inputs. ``cond`` and ``while`` become the IR's ``if``/``while`` ops, their sub-programs walked
into regions (``control_flow.py``). Every node carries the user's source line from the
equation's ``source_info``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError, CuvilError, UnsupportedOpError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Provenance, Value
from cuvil_ref.ir.types import TensorType

#: parameter holding the inner jaxpr of each call-like primitive
INLINED = {
    "pjit": "jaxpr",
    "jit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
    "remat": "jaxpr",
    "checkpoint": "jaxpr",
    "custom_lin": None,
}


def dtype_of(aval: Any) -> DType:
    try:
        return DType.from_numpy(np.dtype(aval.dtype))
    except ValueError as exc:
        raise CaptureError(f"JAX dtype {aval.dtype} has no Cuvil dtype") from exc


def type_of(aval: Any) -> TensorType:
    return TensorType(tuple(int(d) for d in aval.shape), dtype_of(aval))


class JaxConverter:
    """Emits ops with the current equation's provenance; holds the builder."""

    def __init__(self, builder: GraphBuilder | None = None) -> None:
        #: a region of ``cond``/``while`` is walked by a converter around the region's builder
        self.builder = builder if builder is not None else GraphBuilder()
        self.provenance: Provenance | None = None
        self.name = "v"
        self.eqn: Any = None

    def op(self, op: str, inputs: Sequence[Value], **attrs: Any) -> Value:
        from cuvil_ref.ops import REGISTRY

        if op not in REGISTRY:
            raise UnsupportedOpError(
                f"JAX primitive '{self.eqn.primitive.name}' needs Cuvil op '{op}', which this "
                "installation does not have"
            )
        return self.builder.op(op, list(inputs), attrs, name=self.name, provenance=self.provenance)

    def constant(self, array: Any, hint: str = "const") -> Value:
        return self.builder.constant(hint, np.asarray(array))

    def scalar(self, value: Any, dtype: DType) -> Value:
        return self.builder.constant("scalar", np.asarray(value, dtype=dtype.numpy))

    @property
    def out_types(self) -> list[TensorType]:
        return [type_of(v.aval) for v in self.eqn.outvars]


def _source(eqn: Any) -> str | None:
    try:
        from jax._src import source_info_util

        text = source_info_util.summarize(eqn.source_info)
    except Exception:  # source info is best effort
        return None
    return text or None


def walk(cx: JaxConverter, jaxpr: Any, consts: Sequence[Any], args: Sequence[Value]) -> list[Any]:
    """Convert ``jaxpr`` with ``args`` bound to its invars; returns the Values of its outvars."""
    from cuvil_ref.frontend.jax.control_flow import TABLE as CONTROL_FLOW
    from cuvil_ref.frontend.jax.primitives import TABLE

    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        if type(v).__name__ == "Literal":
            return (
                cx.scalar(v.val, dtype_of(v.aval))
                if np.ndim(v.val) == 0
                else cx.constant(np.asarray(v.val, dtype=np.dtype(v.aval.dtype)), "literal")
            )
        return env[v]

    for var, const in zip(jaxpr.constvars, consts):
        env[var] = const if isinstance(const, Value) else cx.constant(np.asarray(const), "const")
    for var, arg in zip(jaxpr.invars, args):
        env[var] = arg
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        src = _source(eqn)
        cx.eqn, cx.name = eqn, name
        cx.provenance = Provenance(name, None, src)
        invals = [read(v) for v in eqn.invars]
        try:
            if name in INLINED and INLINED[name] is not None:
                inner = eqn.params[INLINED[name]]
                closed_consts = getattr(inner, "consts", ())
                inner_jaxpr = getattr(inner, "jaxpr", inner)
                outs = walk(cx, inner_jaxpr, closed_consts, invals)
            elif name in TABLE or name in CONTROL_FLOW:
                result = (TABLE.get(name) or CONTROL_FLOW[name])(cx, *invals, **eqn.params)
                outs = list(result) if isinstance(result, (tuple, list)) else [result]
            else:
                raise UnsupportedOpError(
                    f"JAX primitive '{name}' (at {src or 'source line unknown'}) is not supported "
                    "by Cuvil; see docs/frontends.md for the supported primitives"
                )
        except CuvilError as exc:
            if f"'{name}'" in str(exc) and "at " in str(exc):
                raise
            raise type(exc)(
                f"while converting JAX primitive '{name}' (at {src or 'source line unknown'}): "
                f"{exc}"
            ) from exc
        for var, out in zip(eqn.outvars, outs):
            if type(var).__name__ != "DropVar":
                env[var] = out
    return [read(v) for v in jaxpr.outvars]
