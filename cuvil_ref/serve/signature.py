"""A served model's tensors: protocol names, datatypes and shapes, and request validation.

With ``max_batch_size > 0`` dimension 0 of every input and output must be the model's symbolic
batch dimension (compile with ``dynamic_batch=True``); a request may carry up to
``max_batch_size`` rows and the batcher concatenates requests along it. With
``max_batch_size == 0`` requests carry exactly the model's shape. Symbolic dimensions that a
shape bucket covers are padded up to the bucket size; other symbolic dimensions must agree within
one batch (requests are grouped by shape).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cuvil_ref.ir.graph import Module, Value
from cuvil_ref.ir.types import Dim
from cuvil_ref.serve.config import Bucket, ConfigError, ModelConfig
from cuvil_ref.serve.errors import InvalidRequest
from cuvil_ref.serve.tensors import datatype_of, shape_text


@dataclass(frozen=True)
class TensorSig:
    """One input or output: protocol name, IR value, datatype and shape (symbols as str)."""

    name: str
    ir_name: str
    datatype: str
    dtype: np.dtype
    shape: tuple[Dim, ...]

    def metadata(self) -> dict[str, object]:
        """The protocol's tensor metadata (symbolic dims as -1)."""
        return {
            "name": self.name,
            "datatype": self.datatype,
            "shape": [d if isinstance(d, int) else -1 for d in self.shape],
        }


@dataclass(frozen=True)
class Prepared:
    """A validated request: arrays in model input order, its rows, its batch key, its sizes."""

    arrays: tuple[np.ndarray, ...]
    rows: int
    key: tuple[object, ...]
    strip: Mapping[str, tuple[int, int]]  # output name -> (dim, original size)


def _sigs(
    values: Sequence[Value], names: tuple[str, ...] | None, what: str, path: object
) -> tuple[TensorSig, ...]:
    if names is not None and len(names) != len(values):
        raise ConfigError(
            path,
            what,
            f"lists {len(names)} names but the model has {len(values)} {what} "
            f"({', '.join(v.name for v in values)})",
        )
    return tuple(
        TensorSig(
            names[i] if names else v.name,
            v.name,
            datatype_of(v.type.dtype),
            v.type.dtype.numpy,
            tuple(v.type.shape),
        )
        for i, v in enumerate(values)
    )


class Signature:
    """Validates requests against the model and the config (names, dtypes, shapes, batch)."""

    def __init__(self, module: Module, config: ModelConfig) -> None:
        path = config.path or config.name
        self.inputs = _sigs(module.inputs, config.inputs, "inputs", path)
        self.outputs = _sigs(module.outputs, config.outputs, "outputs", path)
        self.max_batch_size = config.max_batch_size
        self.buckets: dict[str, Bucket] = {}
        if self.max_batch_size > 0:
            dims = {t.shape[0] if t.shape else None for t in (*self.inputs, *self.outputs)}
            if len(dims) != 1 or isinstance(next(iter(dims)), int) or None in dims:
                raise ConfigError(
                    path,
                    "max_batch_size",
                    f"is {self.max_batch_size}, so dim 0 of every input and output must be the "
                    "model's one symbolic batch dim, but the model has "
                    + ", ".join(f"{t.name}: {shape_text(t.shape)}" for t in self.inputs)
                    + " -> "
                    + ", ".join(f"{t.name}: {shape_text(t.shape)}" for t in self.outputs)
                    + "; compile with dynamic_batch=True, or use max_batch_size 0",
                )
        by_name = {t.name: t for t in self.inputs}
        out_names = {t.name: t for t in self.outputs}
        for i, b in enumerate(config.shape_buckets):
            field = f"shape_buckets[{i}]"
            sig = by_name.get(b.input)
            if sig is None:
                raise ConfigError(
                    path, f"{field}.input", f"'{b.input}' is not an input; inputs: {list(by_name)}"
                )
            if b.dim >= len(sig.shape) or isinstance(sig.shape[b.dim], int):
                raise ConfigError(
                    path,
                    f"{field}.dim",
                    f"dim {b.dim} of '{b.input}' {shape_text(sig.shape)} is not a symbolic dim; "
                    "buckets pad a variable dimension",
                )
            for o, d in b.outputs.items():
                if o not in out_names or d >= len(out_names[o].shape):
                    raise ConfigError(
                        path,
                        f"{field}.outputs",
                        f"'{o}' dim {d} is not a dim of an output; outputs: "
                        + ", ".join(f"{t.name} {shape_text(t.shape)}" for t in self.outputs),
                    )
            self.buckets[b.input] = b

    def metadata(self) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        return [t.metadata() for t in self.inputs], [t.metadata() for t in self.outputs]

    def prepare(self, given: Mapping[str, np.ndarray]) -> Prepared:
        """Check the request's tensors; pad bucketed dims; return them in model order."""
        want = [t.name for t in self.inputs]
        unknown = [n for n in given if n not in want]
        if unknown:
            raise InvalidRequest(
                f"unknown input {unknown[0]!r}; the model's inputs are "
                + ", ".join(f"'{t.name}' {t.datatype} {shape_text(t.shape)}" for t in self.inputs)
            )
        missing = [n for n in want if n not in given]
        if missing:
            raise InvalidRequest(
                f"missing input '{missing[0]}'; the model's inputs are "
                + ", ".join(f"'{t.name}' {t.datatype} {shape_text(t.shape)}" for t in self.inputs)
            )
        arrays, symbols = [], {}
        strip: dict[str, tuple[int, int]] = {}
        rows = 1
        for t in self.inputs:
            a = given[t.name]
            if a.dtype != t.dtype:
                raise InvalidRequest(
                    f"input '{t.name}': datatype must be {t.datatype}, received "
                    f"{_datatype_name(a.dtype)}"
                )
            self._check_shape(t, a.shape, symbols)
            if self.max_batch_size > 0:
                rows = int(a.shape[0])
            bucket = self.buckets.get(t.name)
            if bucket is not None:
                a = self._pad(t, a, bucket, strip)
            arrays.append(a)
        if self.max_batch_size > 0:
            if rows < 1 or rows > self.max_batch_size:
                raise InvalidRequest(
                    f"batch size {rows} is outside [1, {self.max_batch_size}] (max_batch_size of "
                    "this model); split the request"
                )
            key = tuple(a.shape[1:] for a in arrays)
        else:
            key = tuple(a.shape for a in arrays)
        return Prepared(tuple(arrays), rows, key, strip)

    def _check_shape(self, t: TensorSig, shape: tuple[int, ...], symbols: dict[str, int]) -> None:
        ok = len(shape) == len(t.shape) and all(
            not isinstance(d, int) or d == s for d, s in zip(t.shape, shape)
        )
        if not ok:
            raise InvalidRequest(
                f"input '{t.name}': shape {list(shape)} does not match the model's "
                f"{shape_text(t.shape)} (-1: any size)"
            )
        for d, s in zip(t.shape, shape):
            if isinstance(d, str):
                if d in symbols and symbols[d] != s and d not in self._bucketed_symbols():
                    raise InvalidRequest(
                        f"input '{t.name}': dim '{d}' is {s} here but {symbols[d]} in another input"
                    )
                symbols.setdefault(d, s)

    def _bucketed_symbols(self) -> set[str]:
        by_name = {t.name: t for t in self.inputs}
        return {str(by_name[b.input].shape[b.dim]) for b in self.buckets.values()}

    def _pad(
        self, t: TensorSig, a: np.ndarray, b: Bucket, strip: dict[str, tuple[int, int]]
    ) -> np.ndarray:
        n = int(a.shape[b.dim])
        size = b.size_for(n)
        if size is None:
            raise InvalidRequest(
                f"input '{t.name}': dim {b.dim} is {n}, larger than the largest shape bucket "
                f"{b.sizes[-1]} (buckets: {list(b.sizes)})"
            )
        for o, d in b.outputs.items():
            strip[o] = (d, n)
        if size == n:
            return a
        pads = [(0, 0)] * a.ndim
        pads[b.dim] = (0, size - n)
        return np.pad(a, pads, constant_values=np.asarray(b.pad_value).astype(a.dtype))


def _datatype_name(dtype: np.dtype) -> str:
    from cuvil_ref.serve.tensors import DATATYPES

    for name, d in DATATYPES.items():
        if d == dtype:
            return name
    return str(dtype)
