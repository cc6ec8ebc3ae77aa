"""What a lowering builds: buffers, steps (pre-bindable kernel calls) and the layout each value
is stored in.

A partition is lowered once per input-shape signature into a :class:`Program`: a list of
:class:`Step` -- each a kernel and the buffers it reads and writes -- over :class:`Buf` records.
Nothing is allocated here; :mod:`cuvil_kernels_cpu.arena` places the buffers (in the memory
plan's arena) and binds every step to its arrays, so a run is a loop of calls.

**Layouts.** Convolutions and pools run on NHWC. A rank-4 value the IR types as NCHW but that
an NHWC kernel produced is *stored* NHWC (``Buf.nhwc``); pointwise consumers keep it that way,
and :meth:`LowerContext.logical` inserts one transposing copy only where a consumer needs the
IR's own layout (a reshape, a matmul, a partition output). So a graph captured at
``opt_level=2`` (NCHW) or an int8 graph runs with as few transposes as the NHWC IR the layout
pass makes at ``opt_level=3``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_ref.ir.graph import Graph, Node, Value

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
#: dtypes the Numba layout kernels take (others, e.g. bfloat16 storage, use numpy's copy)
_NUMBA_DTYPES = {
    np.dtype(t) for t in (np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)
}

#: Byte alignment of every arena buffer and packed constant: a cache line, and one AVX-512
#: vector, so a vector load never splits two lines.
ALIGN = 64


def aligned(array: np.ndarray) -> np.ndarray:
    """``array`` contiguous and starting on an ``ALIGN``-byte boundary (copied if it is not)."""
    arr = np.ascontiguousarray(array)
    if arr.ctypes.data % ALIGN == 0:
        return arr
    raw = np.empty(arr.nbytes + ALIGN, np.uint8)
    shift = (-raw.ctypes.data) % ALIGN
    out = raw[shift : shift + arr.nbytes].view(arr.dtype).reshape(arr.shape)
    out[...] = arr
    return out


@dataclass
class Buf:
    """A value as the pack stores it.

    ``kind``: ``input`` (copied in per run), ``const`` (a constant array, ``array`` set),
    ``value`` (made by a step: arena or output), ``view`` (a reshape of ``base``'s storage).
    ``shape`` is the physical shape: NHWC when ``nhwc`` is set for an IR-NCHW value.
    ``permuted``: for a view that is not contiguous, ``(pre, perm)``: ``base`` reshaped to
    ``pre``, transposed by ``perm``, then reshaped to ``shape`` without a copy
    (:func:`strided_view`); only kernels that take strided arrays are given one (see
    :meth:`LowerContext.permuted_view`)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    kind: str = "value"
    nhwc: bool = False
    array: np.ndarray | None = None
    base: str | None = None
    permuted: tuple[tuple[int, ...], tuple[int, ...]] | None = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class Step:
    """One kernel call: ``fn(*arrays(args), *static)``; ``writes`` are the buffers it fills.

    ``algo`` names the algorithm (``gemm``, ``im2col``, ``winograd``, ``depthwise``...), shown in
    the per-layer table with ``flops`` (multiply-adds x 2; 0 for data movement). ``in_place``:
    the kernel may write its output over its first input (pointwise)."""

    node: str
    op: str
    algo: str
    fn: Callable[..., Any]
    args: list[str]
    writes: list[str]
    static: tuple[Any, ...] = ()
    flops: int = 0
    in_place: bool = False
    source: str | None = None


@dataclass
class Program:
    """A lowered partition for one input-shape signature."""

    bufs: dict[str, Buf]
    steps: list[Step]
    inputs: list[str]
    outputs: list[str]
    choices: dict[str, dict[str, Any]] = field(default_factory=dict)


class LowerContext:
    """Collects the buffers and steps of one lowering (see the module docstring)."""

    def __init__(self, graph: Graph, bindings: Mapping[str, int], options: Mapping[str, Any]):
        self.graph = graph
        self.bindings = dict(bindings)
        self.options = options
        self.bufs: dict[str, Buf] = {}
        self.steps: list[Step] = []
        self.choices: dict[str, dict[str, Any]] = {}
        self.packed: dict[Any, Any] = options.get("_packed_cache", {})
        self._counter = 0
        self._converted: dict[tuple[str, str], str] = {}
        self.node: Node | None = None
        #: softmax output name -> the scale/mask it computes itself (:mod:`.attention`); the
        #: nodes it absorbs (``absorbed``) are not lowered
        self.scores: dict[str, Any] = {}
        self.absorbed: set[str] = set()
        #: transpose outputs lowered as permuted views (:mod:`.views`)
        self.permuted: set[str] = set()

    # -- values ------------------------------------------------------------------------------
    def shape(self, value: Value) -> tuple[int, ...]:
        """``value``'s IR shape with symbolic dims bound."""
        out = []
        for d in value.type.shape:
            out.append(int(self.bindings[d]) if isinstance(d, str) else int(d))
        return tuple(out)

    def buf(self, value: Value | str) -> Buf:
        name = value if isinstance(value, str) else value.name
        return self.bufs[name]

    def constant(self, value: Value) -> np.ndarray | None:
        """The constant array behind ``value``, or None when it is computed."""
        b = self.bufs.get(value.name)
        return b.array if b is not None and b.kind == "const" else None

    def fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}.{self._counter}"

    def new(self, name: str, shape: tuple[int, ...], dtype: Any, nhwc: bool = False) -> Buf:
        buf = Buf(name, tuple(int(d) for d in shape), np.dtype(dtype), nhwc=nhwc)
        self.bufs[name] = buf
        return buf

    def output(self, value: Value, nhwc: bool = False) -> Buf:
        """Declare the buffer of node output ``value`` (physical NHWC when ``nhwc``)."""
        shape = self.shape(value)
        if nhwc:
            shape = tuple(shape[p] for p in TO_NHWC)
        return self.new(value.name, shape, value.type.dtype.numpy, nhwc)

    def view(self, value: Value, src: str, shape: tuple[int, ...] | None = None) -> Buf:
        """``value`` is ``src``'s storage reshaped (no step, no copy)."""
        base = self.bufs[src]
        root = base.base or src
        buf = Buf(value.name, shape or self.shape(value), base.dtype, "view", base=root)
        self.bufs[value.name] = buf
        return buf

    def reshaped(self, name: str, shape: tuple[int, ...]) -> str:
        """A view of ``name``'s storage with another shape (same element count; a permuted
        view only where the new shape needs no copy)."""
        base = self.bufs[name]
        if base.shape == tuple(shape):
            return name
        if base.kind == "const":
            assert base.array is not None
            return self.const_buf(base.array.reshape(shape), f"{name}.r")
        if base.permuted is not None:
            strided_view(np.zeros(1, np.uint8), base.permuted, tuple(shape))  # or ValueError
        new = self.fresh(f"{name}.r")
        self.bufs[new] = Buf(new, tuple(int(d) for d in shape), base.dtype, "view",
                             base=base.base or name, permuted=base.permuted)  # fmt: skip
        return new

    def permuted_view(self, value: Value, src: str, perm: tuple[int, ...]) -> Buf:
        """``value`` is ``src`` (contiguous, IR layout) transposed by ``perm`` without a copy:
        for a transpose whose every user reads strided operands (:mod:`.views`)."""
        base = self.bufs[src]
        assert base.permuted is None and not base.nhwc
        buf = Buf(value.name, self.shape(value), base.dtype, "view", base=base.base or src,
                  permuted=(base.shape, tuple(perm)))  # fmt: skip
        self.bufs[value.name] = buf
        return buf

    def const_buf(self, array: np.ndarray, hint: str) -> str:
        name = self.fresh(hint)
        arr = aligned(array)
        arr.flags.writeable = False
        self.bufs[name] = Buf(name, arr.shape, arr.dtype, "const", array=arr)
        return name

    # -- layouts -------------------------------------------------------------------------------
    def logical(self, value: Value) -> str:
        """A buffer holding ``value`` in the IR's layout (transposing an NHWC-stored one)."""
        b = self.bufs[value.name]
        if not b.nhwc:
            return value.name
        key = ("logical", value.name)
        if key not in self._converted:
            name = self.fresh(f"{value.name}.nchw")
            n, h, w, c = b.shape
            self.new(name, (n, c, h, w), b.dtype)
            self.transpose4(value.name, name, b.dtype, TO_NCHW, layout_of=value.name)
            self._converted[key] = name
        return self._converted[key]

    def nhwc(self, value: Value) -> str:
        """A buffer holding the rank-4 IR-NCHW ``value`` stored NHWC."""
        b = self.bufs[value.name]
        if b.nhwc:
            return value.name
        key = ("nhwc", value.name)
        if key not in self._converted:
            if b.kind == "const":
                assert b.array is not None
                name = self.const_buf(b.array.transpose(TO_NHWC), f"{value.name}.nhwc")
            else:
                name = self.fresh(f"{value.name}.nhwc")
                n, c, h, w = b.shape
                self.new(name, (n, h, w, c), b.dtype, nhwc=True)
                self.transpose4(value.name, name, b.dtype, TO_NHWC, layout_of=value.name)
            self._converted[key] = name
        return self._converted[key]

    def transpose4(
        self, src: str, dst: str, dtype: Any, perm: tuple[int, ...], layout_of: str | None = None
    ) -> None:
        """A step ``dst = src.transpose(perm)`` for ``perm`` TO_NHWC or TO_NCHW: the row-parallel
        kernel where Numba has the dtype, else numpy's copy. ``layout_of``: the value whose
        layout changes, when the step is a conversion rather than the current node's op."""
        from cuvil_kernels_cpu.kernels import layout

        algo = "to_nhwc" if perm == TO_NHWC else "to_nchw"
        where: dict[str, Any] = {"op": "layout", "node": layout_of} if layout_of else {}
        if np.dtype(dtype) in _NUMBA_DTYPES:
            fn = layout.nchw_to_nhwc if perm == TO_NHWC else layout.nhwc_to_nchw
            self.add(fn, [src], [dst], algo=algo, **where)
        else:
            self.add(_transpose_copy, [src], [dst], algo=algo, static=(perm,), **where)

    def f32(self, name: str) -> str:
        """A float32 buffer with ``name``'s values (a widening copy for f16/bf16 storage)."""
        b = self.bufs[name]
        if b.dtype == np.float32:
            return name
        key = ("f32", name)
        if key not in self._converted:
            if b.kind == "const":
                assert b.array is not None
                wide = self.const_buf(b.array.astype(np.float32), f"{name}.f32")
            else:
                wide = self.fresh(f"{name}.f32")
                self.new(wide, b.shape, np.float32, nhwc=b.nhwc)
                self.add(_cast_copy, [name], [wide], algo="widen", op="cast", node=name)
            self._converted[key] = wide
        return self._converted[key]

    def f32_output(self, out: Buf) -> tuple[str, Callable[[], None]]:
        """Where an f32 kernel should write ``out``, and a finisher that rounds it once into
        ``out``'s f16/bf16 storage (a no-op for f32 outputs). Call the finisher after the
        kernel's step is added."""
        if out.dtype == np.float32:
            return out.name, lambda: None
        wide = self.fresh(f"{out.name}.f32")
        self.new(wide, out.shape, np.float32, nhwc=out.nhwc)

        def finish() -> None:
            self.add(_cast_copy, [wide], [out.name], algo="round", op="cast", node=out.name)

        return wide, finish

    # -- steps ---------------------------------------------------------------------------------
    def add(
        self,
        fn: Callable[..., Any],
        args: list[str],
        writes: list[str],
        *,
        algo: str,
        static: tuple[Any, ...] = (),
        flops: int = 0,
        in_place: bool = False,
        op: str | None = None,
        node: str | None = None,
    ) -> Step:
        current = self.node
        step = Step(
            node=node or (current.outputs[0].name if current else writes[0]),
            op=op or (current.op if current else "?"),
            algo=algo,
            fn=fn,
            args=list(args),
            writes=list(writes),
            static=static,
            flops=flops,
            in_place=in_place,
            source=current.provenance.source if current and current.provenance else None,
        )
        self.steps.append(step)
        return step

    def choose(self, info: dict[str, Any]) -> None:
        """Record the algorithm choice (and why) for the current node, for the report."""
        assert self.node is not None
        self.choices[self.node.outputs[0].name] = info


def strided_view(root: np.ndarray, permuted: tuple[tuple[int, ...], tuple[int, ...]],
                 shape: tuple[int, ...]) -> np.ndarray:  # fmt: skip
    """``root``'s storage reshaped to ``permuted[0]``, transposed by ``permuted[1]`` and
    reshaped to ``shape`` -- a view, never a copy (ValueError where that needs one). ``root``
    may be a placeholder of any size: only the strides are looked at then."""
    pre, perm = permuted
    flat = root.reshape(-1)
    if flat.size >= int(np.prod(pre, dtype=np.int64)):
        arr = flat[: int(np.prod(pre, dtype=np.int64))].reshape(pre)
    else:  # a placeholder: strides of a contiguous ``pre``, no memory is read
        step = [flat.itemsize] * len(pre)
        for i in range(len(pre) - 2, -1, -1):
            step[i] = step[i + 1] * pre[i + 1]
        arr = np.lib.stride_tricks.as_strided(flat, pre, tuple(step))
    view = arr.transpose(perm).view()
    try:
        view.shape = shape  # raises where the reshape would need a copy
    except AttributeError as exc:
        raise ValueError(f"a permuted view {pre} {perm} cannot be reshaped to {shape}") from exc
    return view


def _cast_copy(src: np.ndarray, dst: np.ndarray) -> None:
    """dst = src rounded (or widened) to dst's dtype: one IEEE round-to-nearest-even."""
    np.copyto(dst, src, casting="unsafe")


def _transpose_copy(src: np.ndarray, dst: np.ndarray, perm: tuple[int, ...]) -> None:
    """dst = src.transpose(perm) (numpy's strided copy; releases the GIL)."""
    np.copyto(dst, src.transpose(perm))
