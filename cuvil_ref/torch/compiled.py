"""``CompiledModule``: a compiled model that is called exactly like the original one.

It binds the call's arguments to the model's ``forward`` signature, checks them against the IR's
input types (count, rank, static sizes, symbolic sizes consistent across inputs, dtype), runs the
program on its target and rebuilds the model's output structure (tensor, tuple, list, dict,
nested). Torch tensors in give torch tensors out; numpy arrays in give numpy arrays out.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import InputError
from cuvil_ref.frontend import input_names, output_structure, structure
from cuvil_ref.frontend.shared_weights import SharedWeights
from cuvil_ref.ir.graph import Module
from cuvil_ref.ir.types import format_shape
from cuvil_ref.lowering.program import CompiledProgram


class CompiledModule:
    """A captured, compiled model bound to a target; call it like the original model."""

    def __init__(
        self,
        program: CompiledProgram,
        *,
        capture: str,
        signature: inspect.Signature | None = None,
        options: dict[str, Any] | None = None,
        weights: SharedWeights | None = None,
    ) -> None:
        self.program = program
        #: the model's tensors whose memory the program's constants view (None: all copied);
        #: checked before every use of the constants, since the module is a snapshot
        self._weights = weights
        self._capture = capture
        self._signature = signature
        self._options = dict(options or {})
        self._structure = output_structure(program.module)
        self._input_names = input_names(program.module)
        ranges = program.module.metadata.get("dim_ranges")
        self._dim_ranges: dict[str, list[int | None]] = json.loads(ranges) if ranges else {}

    @property
    def module(self) -> Module:
        """The compiled (optimized, possibly quantized) IR module: the oracle for this model.
        Raises WeightsChangedError once the model's weights, which its constants may view,
        were changed in place."""
        self.check_weights()
        return self.program.module

    def check_weights(self) -> None:
        """Raise WeightsChangedError if the model's weights were written in place since
        compile (see ``cuvil_ref.frontend.shared_weights``)."""
        if self._weights is not None:
            self._weights.check()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.check_weights()
        values = self._bind(args, kwargs)
        arrays, torch_in = [], not values  # no inputs at all: a torch model gives torch
        for x in values:
            array, is_torch = _to_numpy(x)
            torch_in = torch_in or is_torch
            arrays.append(array)
        self.check_inputs(arrays)
        outs = self.program.run(arrays)
        if torch_in:
            import torch

            tensors = [torch.from_numpy(np.require(o, requirements=["C", "W"])) for o in outs]
            return structure.rebuild(self._structure, tensors)
        return structure.rebuild(self._structure, outs)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        n = len(self.program.module.inputs)
        if self._input_names is not None and self._signature is not None:
            return self._bind_by_name(args, kwargs)
        if self._signature is None or not kwargs:
            if kwargs:
                raise InputError(
                    f"keyword arguments {sorted(kwargs)} given, but the model's "
                    "signature is unknown; pass inputs positionally"
                )
            if len(args) != n:
                raise InputError(self._count_message(len(args)))
            return list(args)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InputError(f"cannot bind the call to the model's signature: {exc}") from exc
        values = list(bound.arguments.values())
        if len(values) != n:
            raise InputError(self._count_message(len(values)))
        return values

    def _bind_by_name(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """Bind the call to the model's forward signature and pick the compiled inputs by
        parameter name (keyword inputs such as ``attention_mask`` included)."""
        assert self._signature is not None and self._input_names is not None
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InputError(
                f"cannot bind the call to the model's signature: {exc}; "
                f"{self._count_message(len(args) + len(kwargs))}"
            ) from exc
        given: dict[str, Any] = {}
        for k, v in bound.arguments.items():
            kind = self._signature.parameters[k].kind
            if kind == inspect.Parameter.VAR_KEYWORD:
                given.update({kk: vv for kk, vv in v.items() if vv is not None})
            elif v is not None:
                given[k] = v
        wanted = self._input_names
        missing = [k for k in wanted if k not in given]
        if missing:
            raise InputError(
                f"the model was compiled with inputs {wanted}; this call does not give {missing}"
            )
        extra = [k for k in given if k not in wanted]
        if extra:
            raise InputError(
                f"the model was compiled without {extra} (its inputs: {wanted}); compile with "
                "example_kwargs that include them to use them"
            )
        return [given[k] for k in wanted]

    def _count_message(self, got: int) -> str:
        want = ", ".join(f"{v.name}: {v.type}" for v in self.program.module.inputs)
        return f"expected {len(self.program.module.inputs)} inputs ({want}), received {got}"

    def check_inputs(self, arrays: Sequence[np.ndarray]) -> None:
        """Raise InputError stating expected vs received count, shape or dtype."""
        if len(arrays) != len(self.program.module.inputs):
            raise InputError(self._count_message(len(arrays)))
        bound: dict[str, tuple[int, str]] = {}
        for i, (v, a) in enumerate(zip(self.program.module.inputs, arrays)):
            want = v.type
            label = f"input {i} ('{v.name}')"
            if a.dtype != want.dtype.numpy:
                raise InputError(
                    f"{label}: expected dtype {want.dtype.value}, received {a.dtype} "
                    f"(shape {list(a.shape)})"
                )
            ok = a.ndim == len(want.shape)
            for d, size in zip(want.shape, a.shape):
                if isinstance(d, int):
                    ok = ok and d == size
                elif d in bound and bound[d][0] != size:
                    raise InputError(
                        f"{label}: dim '{d}' is {size} here but {bound[d][0]} in {bound[d][1]}"
                    )
                else:
                    bound[d] = (int(size), label)
            for d, size in zip(want.shape, a.shape):
                if isinstance(d, str) and d in self._dim_ranges:
                    lo, hi = self._dim_ranges[d]
                    # torch.export reports sizes from 2 up (it specializes 0 and 1); the graph is
                    # valid for smaller sizes unless the model itself needs more
                    if (hi is not None and size > hi) or (lo is not None and lo > 2 and size < lo):
                        raise InputError(
                            f"{label}: dim '{d}' is {size}, outside the range [{lo}, "
                            f"{'inf' if hi is None else hi}] the model was exported for"
                        )
            if not ok:
                raise InputError(
                    f"{label}: expected shape [{format_shape(want.shape)}] (symbolic dims accept "
                    f"any size), received {list(a.shape)}"
                )

    def run_async(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        """Like calling the module, but returns a Future (the brief's launch_async)."""
        return _POOL.submit(self, *args, **kwargs)

    def report(self) -> dict[str, Any]:
        """target, partitions, per-pass timings, memory, quantization, cache and pack metrics."""
        data = self.program.report()
        data["capture"] = self._capture
        folded = self.program.module.metadata.get("folded_at_capture")
        data["folded_at_capture"] = json.loads(folded) if folded else {"nodes": 0}
        data["options"] = dict(self._options)
        return data

    def save(self, path: str, **kwargs: Any) -> None:
        """Write the compiled IR as a ``.cuvilir`` artifact (target and options in meta.json)."""
        kwargs.setdefault("target", self.program.target.to_json())
        kwargs.setdefault("options", {"opt_level": self.program.report_data.get("opt_level")})
        self.module.save(path, **kwargs)  # ``module`` checks the weights first

    def __repr__(self) -> str:
        module = self.program.module
        ins = ", ".join(str(v.type) for v in module.inputs)
        return f"CompiledModule(@{module.name}({ins}), target={self.program.target.name!r})"


_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="cuvil-call")


def _to_numpy(x: Any) -> tuple[np.ndarray, bool]:
    if isinstance(x, np.ndarray):
        return x, False
    torch = sys.modules.get("torch")  # a tensor can only exist once torch is imported
    if torch is not None and isinstance(x, torch.Tensor):
        from cuvil_ref.frontend.context import to_numpy

        return to_numpy(x), True
    raise InputError(f"inputs must be torch tensors or numpy arrays, received {type(x).__name__}")
