"""Converter for ONNX's ``TfIdfVectorizer`` over integer tokens (Cuvil has no string dtype).

The count of a pool n-gram ``g`` of size ``n`` is the number of start positions ``s`` whose
tokens ``x[s], x[s + d], ..., x[s + (n - 1) d]`` equal ``g``, summed over the skip distances
``d = 1 .. max_skip_count + 1`` (unigrams once, at ``d = 1``), as ONNX's reference counts them.
For each size and distance the comparison runs for every pool n-gram of that size at once
(``[B, L, P]`` booleans), and a one-hot matrix sums the counts into ``ngram_indexes``' slots.
``weights[j]`` weighs the j-th pool n-gram, as the spec and ONNX Runtime say (ONNX's reference
indexes them by output slot instead; the two agree when ``ngram_indexes`` is ``0, 1, ...``).
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.frontend.onnx.context import OnnxContext, OnnxNode
from cuvil_ref.frontend.onnx.shape import static_dims, x_of
from cuvil_ref.frontend.onnx.table import OnnxConverter, onnx_op
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Value

TABLE: dict[str, OnnxConverter] = {}


def _pool(cx: OnnxContext, node: OnnxNode) -> dict[int, tuple[np.ndarray, list[int]]]:
    """Pool n-grams by size: (their tokens ``[P, n]``, their pool ordinals)."""
    pool = node.attr("pool_int64s")
    if pool is None:
        raise cx.error("TfIdfVectorizer with pool_strings: Cuvil has no string dtype")
    pool = [int(v) for v in pool]
    starts = [int(v) for v in node.attr("ngram_counts")]
    lo, hi = int(node.attr("min_gram_length")), int(node.attr("max_gram_length"))
    grams: dict[int, tuple[np.ndarray, list[int]]] = {}
    ordinal = 0
    for size, start in enumerate(starts, start=1):
        end = starts[size] if size < len(starts) else len(pool)
        count = (end - start) // size
        if lo <= size <= hi and count:
            tokens = np.array(pool[start : start + count * size], np.int64).reshape(count, size)
            grams[size] = (tokens, list(range(ordinal, ordinal + count)))
        ordinal += count
    return grams


@onnx_op(TABLE, "TfIdfVectorizer", 9)
def tfidf_vectorizer(cx: OnnxContext, node: OnnxNode) -> Value:
    x = x_of(node)
    if not x.type.dtype.is_int:
        raise cx.error(f"TfIdfVectorizer of a {x.type.dtype.value} tensor: Cuvil takes int tokens")
    dims = static_dims(cx, x, "TfIdfVectorizer")
    if len(dims) not in (1, 2):
        raise cx.error(f"TfIdfVectorizer of a rank-{len(dims)} tensor: it takes [C] or [B, C]")
    rows = cx.op("reshape", [cx.cast(x, DType.i64)], shape=(1, dims[0]) if len(dims) == 1 else dims)
    batch, length = (1, dims[0]) if len(dims) == 1 else dims
    slots = [int(v) for v in node.attr("ngram_indexes")]
    width = max(slots) + 1
    max_skip = int(node.attr("max_skip_count", 0))
    total: Value | None = None
    for size, (tokens, ordinals) in _pool(cx, node).items():
        hot = np.zeros((len(ordinals), width), np.float32)
        for row, o in enumerate(ordinals):
            hot[row, slots[o]] += 1.0
        distances = [1] if size == 1 else range(1, max_skip + 2)
        for d in distances:
            span = length - (size - 1) * d
            if span <= 0:
                continue
            match: Value | None = None
            for k in range(size):
                part = cx.op("slice", [rows], axis=1, start=k * d, end=k * d + span)
                part = cx.op("unsqueeze", [part], axis=2)  # [B, L, 1] against [1, 1, P]
                want = cx.constant(tokens[:, k].reshape(1, 1, -1), "ngram_tokens")
                eq = cx.op("eq", [part, want])
                match = eq if match is None else cx.op("logical_and", [match, eq])
            assert match is not None
            counts = cx.op("sum", [cx.cast(match, DType.f32)], axes=(1,))  # [B, P]
            counts = cx.op("matmul", [counts, cx.constant(hot, "ngram_slots")])
            total = counts if total is None else cx.op("add", [total, counts])
    if total is None:
        total = cx.constant(np.zeros((batch, width), np.float32), "tfidf")
    mode = str(node.attr("mode"))
    weights = node.attr("weights")
    w = None
    if weights:  # the weight of the j-th pool n-gram (the spec, ONNX Runtime) at its slot
        if len(weights) != len(slots):
            raise cx.error(f"{len(weights)} weights for {len(slots)} n-grams: give one each")
        by_slot = np.zeros(width, np.float32)
        by_slot[slots] = np.array(weights, np.float32)
        w = cx.constant(by_slot, "weights")
    if mode == "IDF":
        total = cx.cast(cx.op("gt", [total, cx.scalar(0.0, DType.f32)]), DType.f32)
        total = cx.op("mul", [total, w]) if w is not None else total
    elif mode == "TFIDF":
        total = cx.op("mul", [total, w]) if w is not None else total
    elif mode != "TF":
        raise cx.error(f"TfIdfVectorizer mode {mode!r} is not TF, IDF or TFIDF")
    return cx.op("reshape", [total], shape=(width,)) if len(dims) == 1 else total


__all__ = ["TABLE"]
