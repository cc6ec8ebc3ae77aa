"""What Cuvil claims of the Core ATen opset, and what it leaves out on purpose (with the reason).

The Core ATen opset is the set of ATen ops whose tags include ``torch.Tag.core``: the vocabulary
that ``run_decompositions`` ends in and that ExecuTorch and Inductor treat as complete. Cuvil
covers every *inference-meaningful* core op; ``EXCLUDED`` lists the others.
``docs/aten-coverage.md`` is generated from this module, the converter tables and a run of
PyTorch's own OpInfo samples (``python scripts/aten_coverage.py``).
"""

from __future__ import annotations

_BACKWARD = "backward op: gradients are training, Cuvil compiles inference graphs"
_RANDOM = "random sampling: an inference graph is deterministic (call model.eval())"
_STORAGE = "storage internals: Cuvil tensors are values without strides, storage or offsets"

#: Core ops outside Cuvil's scope, with the reason (the docs show it).
EXCLUDED: dict[str, str] = {
    "aten::_adaptive_avg_pool2d_backward": _BACKWARD,
    "aten::avg_pool2d_backward": _BACKWARD,
    "aten::convolution_backward": _BACKWARD,
    "aten::embedding_dense_backward": _BACKWARD,
    "aten::max_pool2d_with_indices_backward": _BACKWARD,
    "aten::native_group_norm_backward": _BACKWARD,
    "aten::native_layer_norm_backward": _BACKWARD,
    "aten::rand": _RANDOM,
    "aten::randn": _RANDOM,
    "aten::randperm": _RANDOM,
    "aten::empty_strided": _STORAGE,
    "aten::resize_": _STORAGE + " (in-place resize)",
    "aten::sym_is_contiguous": _STORAGE,
    "aten::sym_storage_offset": _STORAGE,
    "aten::sym_stride": _STORAGE,
    "aten::_fft_r2c": (
        "complex results: Cuvil's IR has no complex dtype (an rfft's output cannot be a graph "
        "value; a real-to-complex-to-real round trip inside a model is refused at capture)"
    ),
    "aten::_fft_c2r": "complex inputs: Cuvil's IR has no complex dtype",
    "aten::nonzero": (
        "its output size depends on the input's values, and Cuvil's shapes are static or "
        "symbolic in input sizes: converted when the input is a compile-time constant, "
        "otherwise refused with a CaptureError naming the op (use where/masked_fill instead)"
    ),
    "aten::_local_scalar_dense": (
        "reads a tensor's value into Python (`.item()`), which makes the rest of the graph "
        "depend on data at capture time"
    ),
}


def core_aten_ops() -> list[str]:
    """Every Core ATen op name (``aten::cos``; overloads folded) of the installed torch."""
    import torch

    names = set()
    for qualified in torch._C._dispatch_get_all_op_names():
        if not qualified.startswith("aten::"):
            continue
        base, _, overload = qualified[len("aten::") :].partition(".")
        packet = getattr(torch.ops.aten, base, None)
        op = getattr(packet, overload or "default", None) if packet is not None else None
        if op is not None and torch.Tag.core in op.tags:
            names.add(f"aten::{base}")
    return sorted(names)


def inference_core_ops() -> list[str]:
    """The Core ATen ops Cuvil must cover: all of them but ``EXCLUDED``."""
    return [name for name in core_aten_ops() if name not in EXCLUDED]


__all__ = ["EXCLUDED", "core_aten_ops", "inference_core_ops"]
