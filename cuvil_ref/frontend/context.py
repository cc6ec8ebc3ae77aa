"""The conversion context shared by both capture paths and the op table.

A converter receives a :class:`Converter` and the torch call's arguments, in which every tensor
has already been replaced by its IR :class:`Value`, and returns a Value, a tuple of Values or a
plain Python object (a shape, an int, a dtype). Sizes read from a symbolic dim are
:class:`SymDim` objects so that Python arithmetic on them (``d // heads``, ``b * t``) keeps working.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.shared_weights import SharedWeights
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Provenance, Value


@dataclass(frozen=True)
class SymDim:
    """A size known only at run time: a named symbol (``batch``) or an expression of symbols.

    Only a plain symbol can appear in an IR shape; an expression (``batch*4``) becomes ``-1`` in a
    reshape, where the op infers it.
    """

    expr: str
    name: str | None = None

    @staticmethod
    def of(dim: int | str) -> int | SymDim:
        return SymDim(dim, dim) if isinstance(dim, str) else dim

    def _combine(self, op: str, other: Any, swap: bool = False) -> SymDim:
        if not isinstance(other, (int, SymDim)) or isinstance(other, bool):
            return NotImplemented
        a, b = (other, self) if swap else (self, other)
        ea = a.expr if isinstance(a, SymDim) else str(a)
        eb = b.expr if isinstance(b, SymDim) else str(b)
        return SymDim(f"({ea}{op}{eb})")

    def __add__(self, o: Any) -> SymDim:
        return self if o == 0 else self._combine("+", o)

    def __radd__(self, o: Any) -> SymDim:
        return self if o == 0 else self._combine("+", o, True)

    def __sub__(self, o: Any) -> SymDim:
        return self if o == 0 else self._combine("-", o)

    def __rsub__(self, o: Any) -> SymDim:
        return self._combine("-", o, True)

    def __mul__(self, o: Any) -> SymDim:
        return self if o == 1 else self._combine("*", o)

    def __rmul__(self, o: Any) -> SymDim:
        return self if o == 1 else self._combine("*", o, True)

    def __floordiv__(self, o: Any) -> SymDim:
        return self if o == 1 else self._combine("//", o)

    def __rfloordiv__(self, o: Any) -> SymDim:
        return self._combine("//", o, True)

    def __eq__(self, o: object) -> bool:
        return isinstance(o, SymDim) and o.expr == self.expr

    def __hash__(self) -> int:
        return hash(self.expr)

    def __index__(self) -> int:
        raise CaptureError(
            f"the size '{self.expr}' is dynamic but is used as a Python int here; make that dim "
            "static (drop it from dynamic_dims) or use tensor ops instead of Python arithmetic"
        )

    def __str__(self) -> str:
        return self.expr


def ir_dim(d: Any) -> int | str:
    """An IR dim (int or symbol name) from an int, a SymDim or a torch SymInt-like value."""
    if isinstance(d, SymDim):
        if d.name is None:
            raise CaptureError(f"the dynamic size '{d.expr}' cannot be a static dim of a type")
        return d.name
    return int(d)


def reshape_dims(sizes: Sequence[Any]) -> tuple[int | str, ...]:
    """A reshape target: ints, symbol names, and at most one -1 (an expression becomes -1)."""
    out: list[int | str] = []
    for s in sizes:
        if isinstance(s, SymDim):
            out.append(s.name if s.name is not None else -1)
        else:
            out.append(int(s))
    if out.count(-1) > 1:
        raise CaptureError(
            f"reshape to {[str(s) for s in sizes]}: more than one size is unknown at capture time;"
            " give all but one as static ints or as the input's own dynamic dims"
        )
    return tuple(out)


class Converter:
    """Wraps a GraphBuilder: emits ops with the current node's provenance and holds weights.
    A region of a control-flow op is converted with a Converter of its own around the region's
    builder (``GraphBuilder.region``)."""

    def __init__(
        self, builder: GraphBuilder | None = None, shared: SharedWeights | None = None
    ) -> None:
        self.builder = builder if builder is not None else GraphBuilder()
        #: when set, weights are viewed rather than copied and recorded here
        #: (``shared_weights.py``); None copies every tensor
        self.shared = shared
        self.provenance: Provenance | None = None
        self.node_name: str = "v"
        #: torch's own result for the node being converted (export: ``node.meta["val"]``, a
        #: FakeTensor or a tuple of them; None where unknown, e.g. under torch.fx)
        self.expected: Any = None
        #: which outputs of the node being converted the graph reads (export: the indices of its
        #: ``getitem`` users), or None when unknown -- converters of multi-output ATen ops
        #: (``max_pool2d_with_indices``, ``native_layer_norm``...) emit only what is read
        self.used_outputs: frozenset[int] | None = None
        #: torch's values of the node's positional arguments (export: each argument node's
        #: ``meta["val"]``, None for non-nodes or where unknown) -- ``as_strided`` reads its
        #: input's strides there
        self.arg_vals: tuple[Any, ...] = ()
        #: what the export path folded at capture (``capture_fold.CaptureFolder.summary``)
        self.folded: dict[str, Any] = {}
        #: valid range of each symbolic input dim, as torch.export inferred it
        self.dim_ranges: dict[str, list[int | None]] = {}
        self._named_constants: dict[str, Value] = {}

    def wants(self, output: int) -> bool:
        """Whether output ``output`` of the node being converted is read (True when unknown)."""
        return self.used_outputs is None or output in self.used_outputs

    def op(self, op: str, inputs: Sequence[Value | None], **attrs: Any) -> Value:
        """Emit one single-output op (``None`` inputs are dropped: absent optional operands)."""
        ins = [v for v in inputs if v is not None]
        return self.builder.op(op, ins, attrs, name=self.node_name, provenance=self.provenance)

    def op_multi(self, op: str, inputs: Sequence[Value], **attrs: Any) -> tuple[Value, ...]:
        return self.builder.op_multi(
            op, list(inputs), attrs, name=self.node_name, provenance=self.provenance
        )

    def weight(self, name: str, tensor: Any) -> Value:
        """A named constant for a parameter or buffer (shared when the same path recurs)."""
        if name not in self._named_constants:
            self._named_constants[name] = self.builder.constant(name, self._array(name, tensor))
        return self._named_constants[name]

    def constant(self, array: Any, hint: str = "const") -> Value:
        return self.builder.constant(hint, self._array(hint, array))

    def _array(self, name: str, value: Any) -> np.ndarray:
        """A read-only array of ``value``: a view of a torch tensor's memory where ``shared``
        allows it, else a copy."""
        if self.shared is not None and _is_torch_tensor(value):
            view = self.shared.view(name, value)
            if view is not None:
                return view
        return to_numpy(value)

    def scalar(self, value: Any, like: Value | None = None) -> Value:
        """A 0-d constant for a Python scalar, typed as PyTorch would for ``tensor op scalar``:
        the tensor's dtype, except a float scalar with an integer/bool tensor gives f32."""
        if isinstance(value, Value):
            return value
        if isinstance(value, SymDim):
            raise CaptureError(
                f"the dynamic size '{value.expr}' is used as a tensor value; make it static"
            )
        dtype = like.type.dtype if like is not None else None
        if isinstance(value, bool):
            dt = dtype if dtype is not None else DType.bool
        elif isinstance(value, int):
            dt = dtype if dtype is not None and dtype != DType.bool else DType.i64
        else:
            floaty = dtype is not None and dtype.numpy.kind == "f" or dtype == DType.bf16
            dt = dtype if floaty else DType.f32
        return self.builder.constant("scalar", np.asarray(value, dtype=dt.numpy))


def _is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")  # a tensor can only exist once torch is imported
    return torch is not None and isinstance(value, torch.Tensor)


def to_numpy(tensor: Any) -> np.ndarray:
    """A numpy copy of a torch tensor (or array-like); bf16 goes through ml_dtypes."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return np.asarray(tensor)
    if isinstance(tensor, torch.Tensor):
        t = tensor.detach().cpu()
        if t.dtype == torch.bfloat16:
            out = t.view(torch.int16).numpy().view(DType.bf16.numpy).copy()
        else:
            out = t.numpy().copy()
        out.flags.writeable = False  # a private copy, frozen: the IR need not copy it again
        return out
    return np.asarray(tensor)


def dtype_to_torch(dtype: DType) -> Any:
    """The torch dtype of a Cuvil DType; one the torch frontend does not map raises CaptureError."""
    import torch

    table = {v: k for k, v in _torch_table(torch).items()}
    if dtype not in table:
        names = ", ".join(d.value for d in table)
        raise CaptureError(
            f"Cuvil dtype {dtype.value} has no torch equivalent here; mapped: {names}"
        )
    return table[dtype]


def dtype_from_torch(dtype: Any) -> DType:
    """The Cuvil DType of a torch dtype; unsupported ones raise CaptureError naming them."""
    import torch

    table = _torch_table(torch)
    if dtype not in table:
        names = ", ".join(str(t) for t in table)
        raise CaptureError(f"torch dtype {dtype} is not supported by Cuvil; supported: {names}")
    return table[dtype]


def _torch_table(torch: Any) -> dict[Any, DType]:
    return {
        torch.float64: DType.f64,
        torch.float32: DType.f32,
        torch.float16: DType.f16,
        torch.bfloat16: DType.bf16,
        torch.int8: DType.i8,
        torch.uint8: DType.u8,
        torch.int16: DType.i16,
        torch.int32: DType.i32,
        torch.int64: DType.i64,
        torch.bool: DType.bool,
    }
