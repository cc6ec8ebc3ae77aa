"""Converters with PyTorch's functional signatures: ``conv2d(cx, input, weight, bias=None, ...)``.

Each function takes the :class:`Converter` and the arguments of the torch call (tensors already
replaced by IR Values), normalizes the many ways PyTorch lets you spell an argument (int or tuple
padding, ``"same"``, negative dims, ``-1`` sizes, Python scalars) and emits Cuvil ops. The op table
maps torch targets (functions, methods, modules, ATen ops) onto these.

This module is the one namespace the op table uses (``fn.conv2d``); the converters live by family:

- :mod:`~cuvil_ref.frontend.convert_args`: argument helpers (``pair``, ``dims_arg``, ...)
- :mod:`~cuvil_ref.frontend.convert_elementwise`: unary/binary ops, comparisons, where, casts
- :mod:`~cuvil_ref.frontend.convert_reduce`: reductions, argmax/argmin, var/std, softmax
- :mod:`~cuvil_ref.frontend.convert_nn`: activations with attrs, dropout, norms, linear, conv, pools
"""

from __future__ import annotations

from cuvil_ref.frontend.convert_args import dim_of, dims_arg, pair, rank, sizes_arg, static_dim
from cuvil_ref.frontend.convert_elementwise import (
    add,
    binary,
    binary_op,
    bool_op,
    cast,
    clamp,
    div,
    floordiv,
    identity,
    invert,
    masked_fill,
    neg,
    rsub,
    sub,
    to,
    unary,
    where,
)
from cuvil_ref.frontend.convert_nn import (
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    addmm,
    avg_pool2d,
    batch_norm,
    conv2d,
    conv_padding,
    dropout,
    elu,
    gelu,
    group_norm,
    hardtanh,
    layer_norm,
    leaky_relu,
    linear,
    matmul,
    max_pool2d,
    pad,
    rms_norm,
    softplus,
)
from cuvil_ref.frontend.convert_reduce import (
    amax,
    amin,
    argmax,
    argmin,
    log_softmax,
    max_,
    mean,
    min_,
    prod,
    softmax,
    std,
    sum_,
    var,
)

__all__ = [
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "add",
    "addmm",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "avg_pool2d",
    "batch_norm",
    "binary",
    "binary_op",
    "bool_op",
    "cast",
    "clamp",
    "conv2d",
    "conv_padding",
    "dim_of",
    "dims_arg",
    "div",
    "dropout",
    "elu",
    "floordiv",
    "gelu",
    "group_norm",
    "hardtanh",
    "identity",
    "invert",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "masked_fill",
    "matmul",
    "max_",
    "max_pool2d",
    "mean",
    "min_",
    "neg",
    "pad",
    "pair",
    "prod",
    "rank",
    "rms_norm",
    "rsub",
    "sizes_arg",
    "softmax",
    "softplus",
    "static_dim",
    "std",
    "sub",
    "sum_",
    "to",
    "unary",
    "var",
    "where",
]
