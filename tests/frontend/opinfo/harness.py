"""Run PyTorch's own OpInfo samples through ``cuvil.torch.compile`` and judge each one.

A sample (``SampleInput``: ``input``, ``args``, ``kwargs``) becomes a tiny ``nn.Module`` whose
tensor leaves are its inputs and whose other arguments are baked in; it is compiled with the
default capture and called on the same tensors. Outcomes:

* ``pass``    -- same dtype, shape and values as torch eager (floats within ``RTOL``/``ATOL``,
  NaN where torch has NaN; integers and bools exact). Where PyTorch leaves the order of equal
  elements unspecified (``sort``/``argsort`` with ``stable=False``, ``topk``) the indices may
  order ties differently but must select exactly torch's values;
* ``refused`` -- a ``CuvilError`` (allowed: the message must name the op);
* ``wrong``   -- a result that differs from torch (never allowed);
* ``crash``   -- any other exception escaping from Cuvil (never allowed);
* ``skip``    -- the sample is not a tensor function (torch itself raises, or returns no tensor),
  or torch's result is undefined behaviour: a dtype conversion of a float outside the integer
  type's range (PyTorch documents it as undefined; Cuvil's ``cast`` saturates), or it is random
  (training-mode dropout, which Cuvil refuses).
"""

from __future__ import annotations

import signal
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

import cuvil_ref as cuvil
from cuvil_ref.errors import CuvilError

RTOL = 1e-4
ATOL = 1e-5
#: float32 plus the integer and bool dtypes an op is defined for
DTYPES = (
    torch.float32,
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
)
SAMPLE_TIMEOUT_S = 60


@dataclass
class Outcome:
    status: str  # pass | refused | wrong | crash | skip
    message: str = ""
    ir_ops: dict[str, int] = field(default_factory=dict)


def opinfo_db() -> dict[str, Any]:
    """``name`` and ``name/variant`` -> OpInfo."""
    from torch.testing._internal.common_methods_invocations import op_db

    out = {}
    for op in op_db:
        key = op.name + (f"/{op.variant_test_name}" if op.variant_test_name else "")
        out[key] = op
    return out


def samples(opinfo: Any, dtype: torch.dtype) -> Iterator[Any]:
    """``sample_inputs`` then ``reference_inputs`` (which repeats the former plus extra cases)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen = (
            opinfo.reference_inputs("cpu", dtype, requires_grad=False)
            if opinfo.reference_inputs_func is not None
            else opinfo.sample_inputs("cpu", dtype, requires_grad=False)
        )
        yield from gen


def dtypes_for(opinfo: Any) -> list[torch.dtype]:
    supported = opinfo.supported_dtypes("cpu")
    return [d for d in DTYPES if d in supported]


class SampleModule(torch.nn.Module):
    """``forward(*tensors)`` calls the OpInfo's op on the sample with those tensors put back."""

    def __init__(self, fn: Any, leaves: list[Any], spec: Any, tensor_slots: list[int]) -> None:
        super().__init__()
        self.fn = fn
        self.leaves = leaves
        self.spec = spec
        self.slots = tensor_slots

    def forward(self, *tensors: torch.Tensor) -> Any:
        return self.call(tensors)

    def call(self, tensors: tuple[torch.Tensor, ...]) -> Any:
        leaves = list(self.leaves)
        for slot, t in zip(self.slots, tensors):
            leaves[slot] = t
        inp, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.fn(inp, *args, **kwargs)


# Forwards with one named parameter per tensor, so that capture='auto' can fall back to
# torch.fx (which cannot trace ``*tensors``) when torch.export refuses a sample.
def _forward0(self: SampleModule) -> Any:
    return self.call(())


def _forward1(self: SampleModule, a: torch.Tensor) -> Any:
    return self.call((a,))


def _forward2(self: SampleModule, a: torch.Tensor, b: torch.Tensor) -> Any:
    return self.call((a, b))


def _forward3(self: SampleModule, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> Any:
    return self.call((a, b, c))


def _forward4(
    self: SampleModule, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor
) -> Any:
    return self.call((a, b, c, d))


_FIXED_ARITY = {
    n: type(f"SampleModule{n}", (SampleModule,), {"forward": f})
    for n, f in enumerate((_forward0, _forward1, _forward2, _forward3, _forward4))
}


def _module(opinfo: Any, sample: Any) -> tuple[SampleModule, list[torch.Tensor]]:
    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    slots = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    tensors = [leaves[i] for i in slots]
    kept = [None if i in slots else x for i, x in enumerate(leaves)]
    cls = _FIXED_ARITY.get(len(tensors), SampleModule)
    return cls(opinfo.op, kept, spec, slots).eval(), tensors


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _same(actual: Any, expected: Any, values: bool = True) -> str | None:
    """None if ``actual`` matches torch's ``expected`` (dtypes, shapes and, if ``values``, the
    values); else why not."""
    exp_leaves = [x for x in pytree.tree_leaves(expected) if isinstance(x, torch.Tensor)]
    act_leaves = [x for x in pytree.tree_leaves(actual) if isinstance(x, torch.Tensor)]
    if len(exp_leaves) != len(act_leaves):
        return f"{len(act_leaves)} tensors returned, torch returns {len(exp_leaves)}"
    for i, (a, e) in enumerate(zip(act_leaves, exp_leaves)):
        if a.dtype != e.dtype or tuple(a.shape) != tuple(e.shape):
            return f"output {i}: {a.dtype}{list(a.shape)}, torch gives {e.dtype}{list(e.shape)}"
        if not values:
            continue
        try:
            torch.testing.assert_close(a, e, rtol=RTOL, atol=ATOL, equal_nan=True)
        except AssertionError as exc:
            lines = [ln for ln in str(exc).splitlines() if ln.strip()]
            return f"output {i}: " + " ".join(lines[:4])
    return None


def _tie_dim(opinfo: Any, sample: Any) -> int | None:
    """The dim along which PyTorch leaves the order of equal elements unspecified for this
    sample (``sort``/``argsort`` with ``stable=False``, ``topk``), or None (exact order)."""
    args, kwargs = tuple(sample.args), dict(sample.kwargs)
    if opinfo.name in ("sort", "argsort") and not kwargs.get("stable", False):
        return int(kwargs.get("dim", args[0] if args else -1))
    if opinfo.name == "topk":
        return int(kwargs.get("dim", args[1] if len(args) > 1 else -1))
    return None


def _same_up_to_ties(actual: Any, expected: Any, x: torch.Tensor, dim: int) -> str | None:
    """Values exactly as torch; indices may order equal elements differently, but must be
    distinct along ``dim`` and select the same elements of ``x`` (``x.gather(dim, indices)``)."""
    act = [t for t in pytree.tree_leaves(actual) if isinstance(t, torch.Tensor)]
    exp = [t for t in pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
    if len(act) != len(exp) or x.dim() == 0:
        return _same(actual, expected)
    why = _same(act[:-1], exp[:-1]) or _same(act[-1], exp[-1], values=False)
    if why:
        return why
    idx = act[-1]
    if idx.numel() and bool((idx.sort(dim).values.diff(dim=dim) == 0).any()):
        return "indices repeat along the sorted dim"
    try:
        picked = x.gather(dim, idx)
    except RuntimeError as exc:
        return f"indices do not index the input: {exc}"
    why = _same(picked, x.gather(dim, exp[-1]))
    return f"indices select other elements than torch's: {why}" if why else None


def run_sample(opinfo: Any, sample: Any, values: bool = True) -> Outcome:
    """Compile one sample with the default capture and compare it with torch eager."""
    module, tensors = _module(opinfo, sample)
    try:
        with torch.no_grad():
            expected = module(*tensors)
    except Exception as exc:
        return Outcome("skip", f"torch raises {type(exc).__name__}")
    if not [x for x in pytree.tree_leaves(expected) if isinstance(x, torch.Tensor)]:
        return Outcome("skip", "returns no tensor")
    if opinfo.name in RANDOM_IN_TRAINING and sample.kwargs.get("training", True):
        return Outcome("skip", "random in torch (training-mode dropout)")
    if opinfo.name in CONVERSIONS and _out_of_range_conversion(tensors, expected):
        return Outcome("skip", "float outside the integer range: undefined behaviour in torch")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SAMPLE_TIMEOUT_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cm = cuvil.torch.compile(module, example_inputs=tuple(tensors), cache=False)
            actual = cm(*tensors)
        ops: dict[str, int] = {}
        for node in cm.module.graph.nodes:
            ops[node.op] = ops.get(node.op, 0) + 1
    except CuvilError as exc:
        return Outcome("refused", f"{type(exc).__name__}: {str(exc)[:400]}")
    except _Timeout:
        return Outcome("crash", f"timeout after {SAMPLE_TIMEOUT_S} s")
    except Exception as exc:
        return Outcome("crash", f"{type(exc).__name__}: {str(exc)[:400]}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    dim = _tie_dim(opinfo, sample) if values else None
    if dim is not None and isinstance(sample.input, torch.Tensor):
        why = _same_up_to_ties(actual, expected, sample.input, dim)
    else:
        why = _same(actual, expected, values)
    return Outcome("wrong", why, ops) if why else Outcome("pass", "", ops)


#: OpInfos whose training-mode samples draw random numbers (nothing to compare with).
RANDOM_IN_TRAINING = frozenset({"nn.functional.dropout", "nn.functional.alpha_dropout"})

#: OpInfos that convert dtypes: float -> int outside the int's range is undefined in torch.
CONVERSIONS = frozenset({"byte", "char", "short", "int", "long", "to", "_to_copy", "type_as"})


def _out_of_range_conversion(tensors: list[torch.Tensor], expected: Any) -> bool:
    outs = [x for x in pytree.tree_leaves(expected) if isinstance(x, torch.Tensor)]
    ints = [x.dtype for x in outs if not x.dtype.is_floating_point and x.dtype != torch.bool]
    floats = [x for x in tensors if x.dtype.is_floating_point and x.numel()]
    if not ints or not floats:
        return False
    info = torch.iinfo(ints[0])
    for x in floats:
        x = x.double()
        low, high = float(info.min) - 1.0, float(info.max) + 1.0
        if bool((~torch.isfinite(x) | (x <= low) | (x >= high)).any()):
            return True
    return False


#: OpInfos whose outputs are unspecified (``empty``): only dtype and shape are compared.
UNSPECIFIED_VALUES = frozenset({"empty", "empty_like", "new_empty"})


def run_opinfo(name: str, opinfo: Any, limit: int | None = None) -> Iterator[tuple[str, Outcome]]:
    """Every (dtype, outcome) of an OpInfo's samples, at most ``limit`` per dtype."""
    for dtype in dtypes_for(opinfo):
        for k, sample in enumerate(samples(opinfo, dtype)):
            if limit is not None and k >= limit:
                break
            out = run_sample(opinfo, sample, values=name not in UNSPECIFIED_VALUES)
            yield str(dtype).replace("torch.", ""), out
