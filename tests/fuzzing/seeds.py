"""Valid inputs the fuzzers start from: small modules that use every feature of the text and the
artifact (symbolic dims, layouts, quantized types, inline and by-reference constants of several
dtypes, NaN payloads, nested metadata, provenance, int8 quantized ops, a signature)."""

from __future__ import annotations

import functools
import struct

import numpy as np

from cuvil_ref.artifacts.module_io import module_members
from cuvil_ref.ir import GraphBuilder, Module, Provenance, TensorType


def _float_module() -> Module:
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 2, 3, 3)))
    w = b.constant("conv.weight", rng.standard_normal((3, 2, 3, 3)).astype(np.float32))
    bias = b.constant("conv.bias", rng.standard_normal(3).astype(np.float32))
    where = Provenance(source="model.py:12", module_path="conv", torch_node="conv2d")
    y = b.op("conv2d", [x, w, bias], {"stride": (1, 1), "padding": (1, 1, 1, 1)}, provenance=where)
    y = b.op("fused_elementwise", [y], {"program": "mul(rhs=2.0, dtype='f32'); relu"})
    y = b.op("flatten", [y], {"start_dim": 1})
    fc = b.constant("fc.weight", rng.standard_normal((4, 27)).astype(np.float32))
    half = b.constant("half", np.array([0.5, -0.0, np.inf, -1.5], dtype=np.float16))
    y = b.op("linear", [y, fc, b.op("cast", [half], {"dtype": "f32"})])
    y = b.op("clamp", [y], {"min": -3.0, "max": 3.0})
    idx = b.constant("idx", np.array([3, 1, 2], dtype=np.int64))
    z = b.op("index_select", [y, idx], {"axis": 1})
    mask = b.op("gt", [z, b.constant("zero", np.zeros((), np.float32))])
    payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]
    meta = {"producer": "fuzz seed", "nested": {"a": (1, 2.5, "x", None, True)}, "nan": payload}
    return Module(b.build([b.op("softmax", [z], {"axis": -1}), mask]), "seed", meta)


def _quantized_module() -> Module:
    from cuvil_ref.quant.api import quantize_module

    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 8)))
    w1 = b.constant("fc1.weight", rng.standard_normal((6, 8)).astype(np.float32))
    b1 = b.constant("fc1.bias", rng.standard_normal(6).astype(np.float32))
    w2 = b.constant("fc2.weight", rng.standard_normal((3, 6)).astype(np.float32))
    h = b.op("relu", [b.op("linear", [x, w1, b1])])
    y = b.op("linear", [h, w2])
    batches = [(rng.standard_normal((2, 8)).astype(np.float32),) for _ in range(2)]
    qmod, _ = quantize_module(Module(b.build([y]), "q"), "int8", calibration_data=batches)
    return qmod


@functools.lru_cache(maxsize=1)
def seed_modules() -> tuple[Module, ...]:
    return (_float_module(), _quantized_module())


@functools.lru_cache(maxsize=1)
def seed_artifacts() -> tuple[dict[str, bytes], ...]:
    """The members of each seed's artifact; the last seed also carries a signature member."""
    meta = {"target": "ref", "options": {"opt_level": 2}}
    seeds = [module_members(m, meta) for m in seed_modules()]
    signed = dict(seeds[-1])
    signed["signature.json"] = (
        b'{"algorithm": "ed25519", "public_key": "'
        + b"00" * 32
        + b'", "signature": "'
        + b"11" * 64
        + b'"}'
    )
    return (*seeds, signed)


def seed_texts() -> tuple[str, ...]:
    """The seeds' textual IR with every constant inline (so the text alone parses)."""
    from cuvil_ref.ir.printer import print_module

    return tuple(print_module(m, inline_limit=10_000) for m in seed_modules())
