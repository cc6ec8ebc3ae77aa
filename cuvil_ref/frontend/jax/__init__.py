"""JAX import: ``jax_to_cuvilir(fn, *example_args)`` captures a ``jax.numpy``/``lax`` program.

The program is traced with ``jax.make_jaxpr`` on the example arguments (arrays, or pytrees of
arrays); its jaxpr is converted equation by equation (``walker.py``, ``primitives.py``), with
closed-over arrays becoming constants. The result is a verified Cuvil Module whose inputs are the
flattened example arguments and whose outputs keep the function's output structure (recorded as
JSON, as for torch models). Needs the optional extra ``pip install cuvil-ref[jax]``.
"""

from __future__ import annotations

from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.ir.graph import Module
from cuvil_ref.ir.verifier import verify


def jax_to_cuvilir(fn: Any, *example_args: Any, name: str | None = None) -> Module:
    """Capture the JAX function ``fn`` on ``example_args`` as a Cuvil Module."""
    try:
        import jax
    except ImportError as exc:
        raise CaptureError("JAX import needs jax: pip install 'cuvil-ref[jax]'") from exc
    from cuvil_ref.frontend import structure
    from cuvil_ref.frontend.jax.walker import JaxConverter, type_of, walk

    try:
        closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*example_args)
    except Exception as exc:
        raise CaptureError(
            f"jax.make_jaxpr could not trace {getattr(fn, '__name__', fn)}: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        ) from exc
    flat_args, _ = jax.tree_util.tree_flatten(example_args)
    cx = JaxConverter()
    inputs = [
        cx.builder.input(f"arg{i}", type_of(v.aval)) for i, v in enumerate(closed.jaxpr.invars)
    ]
    if len(inputs) != len(flat_args):
        raise CaptureError("the traced program's inputs do not match the example arguments")
    outs = walk(cx, closed.jaxpr, closed.consts, inputs)
    leaves, treedef = jax.tree_util.tree_flatten(out_shape)
    recorded = _structure(treedef, len(leaves))
    module = Module(
        cx.builder.build(outs),
        name=name or getattr(fn, "__name__", "jax_fn"),
        metadata={
            "producer": "cuvil_ref.frontend.jax",
            "jax_version": jax.__version__,
            "output_structure": structure.dumps(recorded),
        },
    )
    verify(module)
    return module


def _structure(treedef: Any, n: int) -> dict[str, Any]:
    """JAX's output pytree as Cuvil's recorded structure (tuples, lists, dicts; leaves in
    order)."""
    import jax

    counter = iter(range(n))

    def build(node: Any) -> dict[str, Any]:
        kids = node.children()
        if node.num_leaves == 1 and not kids:
            return {"kind": "tensor", "index": next(counter)}
        items = [build(k) for k in kids]
        data = node.node_data()
        kind = data[0] if data is not None else None
        if kind is tuple:
            return {"kind": "tuple", "items": items}
        if kind is list:
            return {"kind": "list", "items": items}
        if kind is dict:
            return {"kind": "dict", "keys": list(data[1]), "items": items}
        if node.num_nodes == 1 and node.num_leaves == 0:
            return {"kind": "none"}
        raise CaptureError(
            f"JAX output container {kind} is not supported; return tuples, lists or dicts of arrays"
        )

    del jax
    return build(treedef)


__all__ = ["jax_to_cuvilir"]
