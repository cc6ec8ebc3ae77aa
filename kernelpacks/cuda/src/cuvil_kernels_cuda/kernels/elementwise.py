"""Elementwise kernels: generic ``map`` (a fused chain of unary steps), ``zip`` and ``where``.

Each kernel is built once per op (chain) and cached; inputs are strided tensors (see
:mod:`.common`), so broadcasting, transposed and sliced inputs cost no copy. Storage may be float32
or float16; arithmetic is always float32 and the output is float16 only if every input is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import cuda, float32

from cuvil_kernels_cuda.kernels import common, scalar_ops
from cuvil_kernels_cuda.kernels.indexing import strided_pos

Key = tuple[str, bool]


@dataclass(frozen=True)
class Step:
    """One step of a fused chain: a unary op (``a``, ``b`` = its parameters, e.g. clamp bounds),
    or a binary op with a scalar operand: ``v op a``, or ``a op v`` when ``reverse``."""

    op: str
    a: float = 0.0
    b: float = 0.0
    reverse: bool = False

    def key(self) -> Key:
        if self.op in scalar_ops.UNARY:
            return ("u:" + self.op, False)
        if self.op in scalar_ops.BINARY:
            return ("b:" + self.op, self.reverse)
        known = sorted(scalar_ops.UNARY) + sorted(scalar_ops.BINARY)
        raise KeyError(f"elementwise op {self.op!r} is unknown; known ops: {', '.join(known)}")


def _one_step(prev: Any, j: int, key: Key) -> Any:
    kind, name = key[0][:1], key[0][2:]
    if kind == "u":
        f = scalar_ops.UNARY[name]

        def step(v, p):  # noqa: ANN001, ANN202
            return f(prev(v, p), p[j, 0], p[j, 1])

    elif key[1]:
        g = scalar_ops.BINARY[name]

        def step(v, p):  # noqa: ANN001, ANN202
            return g(p[j, 0], prev(v, p))

    else:
        g = scalar_ops.BINARY[name]

        def step(v, p):  # noqa: ANN001, ANN202
            return g(prev(v, p), p[j, 0])

    return cuda.jit(device=True)(step)


@cuda.jit(device=True)
def _start(v, p):  # noqa: ANN001, ANN202
    return v


def compose(keys: tuple[Key, ...]) -> Any:
    """One device function ``chain(v, params)`` applying every step in order (cached)."""

    def build() -> Any:
        fn = _start
        for j, key in enumerate(keys):
            fn = _one_step(fn, j, key)
        return fn

    return common.cached(("chain", keys), build)


def _build_map(keys: tuple[Key, ...]) -> Any:
    chain = compose(keys)

    @cuda.jit
    def map_kernel(out, n, shape, x, xs, xo, p):  # noqa: ANN001, ANN202
        i = cuda.grid(1)
        if i < n:
            out[i] = chain(float32(x[strided_pos(i, shape, xs, xo)]), p)

    return map_kernel


def _build_zip(op: str, keys: tuple[Key, ...]) -> Any:
    f = scalar_ops.BINARY[op]
    chain = compose(keys)

    @cuda.jit
    def zip_kernel(out, n, shape, a, as_, ao, b, bs, bo, p):  # noqa: ANN001, ANN202
        i = cuda.grid(1)
        if i < n:
            va = float32(a[strided_pos(i, shape, as_, ao)])
            vb = float32(b[strided_pos(i, shape, bs, bo)])
            out[i] = chain(f(va, vb), p)

    return zip_kernel


@cuda.jit
def _where_kernel(out, n, shape, c, cs, co, a, as_, ao, b, bs, bo):  # noqa: ANN001, ANN202
    i = cuda.grid(1)
    if i < n:
        if c[strided_pos(i, shape, cs, co)]:
            out[i] = a[strided_pos(i, shape, as_, ao)]
        else:
            out[i] = b[strided_pos(i, shape, bs, bo)]


def _params(steps: Sequence[Step]) -> Any:
    table = np.zeros((max(len(steps), 1), 2), dtype=np.float32)
    for j, s in enumerate(steps):
        table[j] = (s.a, s.b)
    return cuda.to_device(table)


def _launch_shape(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(shape) if len(shape) else (1,)


def fused(x: Any, steps: Sequence[Step], out: Any = None) -> Any:
    """Apply ``steps`` in order to every element of ``x`` in one launch (generic ``map``)."""
    keys = tuple(s.key() for s in steps)
    t = common.strided(x, "fused")
    dtype = common.check_float("fused", t.dtype)
    res = common.new_output(t.shape, dtype, out, "fused")
    n = t.size
    if n:
        kernel = common.cached(("map", keys), lambda: _build_map(keys))
        shape = _launch_shape(t.shape)
        strides = t.strides if t.shape else (0,)
        tpb = common.threads_1d()
        common.launch(kernel, common.blocks_for(n, tpb), tpb,
            common.flat(res), n, common.i64(shape), t.data, common.i64(strides), t.offset,
            _params(steps),
        )  # fmt: skip
    return res


def unary(op: str, x: Any, a: float = 0.0, b: float = 0.0, out: Any = None) -> Any:
    """One unary op (``clamp`` takes ``a``=min, ``b``=max): ``exp``, ``gelu``, ``relu6``, ..."""
    if op not in scalar_ops.UNARY:
        raise KeyError(f"unary op {op!r} is unknown; known: {', '.join(sorted(scalar_ops.UNARY))}")
    return fused(x, (Step(op, a, b),), out)


def binary(op: str, a: Any, b: Any, post: Sequence[Step] = (), out: Any = None) -> Any:
    """``op(a, b)`` with numpy broadcasting (generic ``zip``), then the fused ``post`` steps."""
    if op not in scalar_ops.BINARY:
        known = ", ".join(sorted(scalar_ops.BINARY))
        raise KeyError(f"binary op {op!r} is unknown; known: {known}")
    keys = tuple(s.key() for s in post)
    ta, tb = common.strided(a, op), common.strided(b, op)
    dtype = common.check_float(op, ta.dtype, tb.dtype)
    shape = _broadcast_shape(op, ta.shape, tb.shape)
    res = common.new_output(shape, dtype, out, op)
    n = int(np.prod(shape, dtype=np.int64))
    if n:
        kernel = common.cached(("zip", op, keys), lambda: _build_zip(op, keys))
        ls = _launch_shape(shape)
        tpb = common.threads_1d()
        common.launch(kernel, common.blocks_for(n, tpb), tpb,
            common.flat(res), n, common.i64(ls),
            ta.data, common.i64(ta.broadcast_to(ls)), ta.offset,
            tb.data, common.i64(tb.broadcast_to(ls)), tb.offset,
            _params(post),
        )  # fmt: skip
    return res


def where(cond: Any, a: Any, b: Any, out: Any = None) -> Any:
    """``a`` where ``cond`` is true else ``b``, broadcast; any dtype, a and b must agree."""
    tc, ta, tb = (common.strided(v, "where") for v in (cond, a, b))
    if ta.dtype != tb.dtype:
        raise TypeError(f"where: a is {ta.dtype} but b is {tb.dtype}; cast one of them first")
    shape = _broadcast_shape("where", _broadcast_shape("where", tc.shape, ta.shape), tb.shape)
    res = common.new_output(shape, ta.dtype, out, "where")
    n = int(np.prod(shape, dtype=np.int64))
    if n:
        ls = _launch_shape(shape)
        tpb = common.threads_1d()
        common.launch(_where_kernel, common.blocks_for(n, tpb), tpb,
            common.flat(res), n, common.i64(ls),
            tc.data, common.i64(tc.broadcast_to(ls)), tc.offset,
            ta.data, common.i64(ta.broadcast_to(ls)), ta.offset,
            tb.data, common.i64(tb.broadcast_to(ls)), tb.offset,
        )  # fmt: skip
    return res


def _broadcast_shape(op: str, s1: tuple[int, ...], s2: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(s1, s2))
    except ValueError:
        raise ValueError(f"{op}: shapes {s1} and {s2} do not broadcast") from None
