"""Which of PyTorch's OpInfos exercise each inference-meaningful Core ATen op.

An OpInfo (``torch.testing._internal.common_methods_invocations.op_db``) is named after the public
torch function it tests (``nn.functional.conv2d``); after ``torch.export`` and decomposition its
samples reach one Core ATen op (``aten::convolution``). ``OPINFOS`` names, for each core op, the
OpInfos (``name`` or ``name/variant``) whose samples measure it. A core op absent from ``OPINFOS``
is measured by the OpInfo of the same name.
"""

from __future__ import annotations

OPINFOS: dict[str, tuple[str, ...]] = {
    "aten::_adaptive_avg_pool2d": ("nn.functional.adaptive_avg_pool2d",),
    "aten::_adaptive_avg_pool3d": ("nn.functional.adaptive_avg_pool3d",),
    "aten::_cdist_forward": ("cdist",),
    "aten::_embedding_bag": ("nn.functional.embedding_bag",),
    "aten::_fft_c2r": ("fft.irfft", "fft.irfft2", "fft.irfftn"),
    "aten::_fft_r2c": ("fft.rfft", "fft.rfft2", "fft.rfftn"),
    "aten::_log_softmax": ("log_softmax", "log_softmax/with_dtype"),
    "aten::_native_batch_norm_legit": ("_native_batch_norm_legit",),
    "aten::_native_batch_norm_legit_no_training": ("nn.functional.batch_norm",),
    "aten::_pdist_forward": ("nn.functional.pdist",),
    "aten::_softmax": ("softmax", "softmax/with_dtype", "nn.functional.softmin"),
    "aten::_to_copy": ("to", "float", "int", "long", "bool", "half", "byte", "char", "short"),
    "aten::adaptive_avg_pool1d": ("nn.functional.adaptive_avg_pool1d",),
    "aten::add": ("add", "__radd__"),
    "aten::addmm": ("addmm", "addmm/decomposed"),
    "aten::alias": ("alias_copy",),
    "aten::any": ("any", "all"),
    "aten::arange": ("arange",),
    "aten::avg_pool1d": ("nn.functional.avg_pool1d",),
    "aten::avg_pool2d": ("nn.functional.avg_pool2d",),
    "aten::avg_pool3d": ("nn.functional.avg_pool3d",),
    "aten::clamp": ("clamp", "clamp_min", "clamp_max"),
    "aten::clone": ("clone", "contiguous"),
    "aten::col2im": ("nn.functional.fold",),
    "aten::constant_pad_nd": ("constant_pad_nd", "nn.functional.pad/constant"),
    "aten::convolution": (
        "nn.functional.conv1d",
        "nn.functional.conv2d",
        "nn.functional.conv3d",
        "nn.functional.conv_transpose1d",
        "nn.functional.conv_transpose2d",
        "nn.functional.conv_transpose3d",
    ),
    "aten::copy": ("copy",),
    "aten::diagonal": ("diagonal",),
    "aten::div": (
        "div/no_rounding_mode",
        "div/trunc_rounding",
        "div/floor_rounding",
        "true_divide",
    ),
    "aten::elu": ("nn.functional.elu",),
    "aten::embedding": ("nn.functional.embedding",),
    "aten::empty": ("empty", "empty_like", "new_empty"),
    "aten::expand": ("expand", "expand_as", "broadcast_to"),
    "aten::fill": ("fill",),
    "aten::flip": ("flip", "fliplr", "flipud"),
    "aten::full": ("full", "ones", "zeros", "new_full", "new_ones", "new_zeros"),
    "aten::full_like": ("full_like", "ones_like", "zeros_like"),
    "aten::gelu": ("nn.functional.gelu",),
    "aten::grid_sampler_2d": ("nn.functional.grid_sample", "grid_sampler_2d"),
    "aten::hardtanh": ("nn.functional.hardtanh",),
    "aten::index": ("__getitem__",),
    "aten::leaky_relu": ("nn.functional.leaky_relu",),
    "aten::masked_scatter": ("masked_scatter",),
    "aten::max": ("max/reduction_no_dim", "max/reduction_with_dim"),
    "aten::max_pool2d_with_indices": ("nn.functional.max_pool1d", "nn.functional.max_pool2d"),
    "aten::max_pool3d_with_indices": ("nn.functional.max_pool3d",),
    "aten::maximum": ("maximum", "max/binary"),
    "aten::min": ("min/reduction_no_dim", "min/reduction_with_dim"),
    "aten::minimum": ("minimum", "min/binary"),
    "aten::mul": ("mul", "__rmul__"),
    "aten::native_dropout": ("nn.functional.dropout",),
    "aten::native_group_norm": ("nn.functional.group_norm",),
    "aten::native_layer_norm": ("nn.functional.layer_norm", "native_layer_norm"),
    "aten::pow": ("pow", "__rpow__"),
    "aten::reflection_pad1d": ("nn.functional.pad/reflect",),
    "aten::reflection_pad2d": ("nn.functional.pad/reflect",),
    "aten::reflection_pad3d": ("nn.functional.pad/reflect",),
    "aten::relu": ("nn.functional.relu",),
    "aten::remainder": ("remainder", "__rmod__"),
    "aten::replication_pad2d": ("nn.functional.pad/replicate",),
    "aten::replication_pad3d": ("nn.functional.pad/replicate",),
    "aten::round": ("round", "round/decimals_0", "round/decimals_3", "round/decimals_neg_3"),
    "aten::scatter_reduce": (
        "scatter_reduce/sum",
        "scatter_reduce/prod",
        "scatter_reduce/mean",
        "scatter_reduce/amax",
        "scatter_reduce/amin",
    ),
    "aten::select": ("select",),
    "aten::slice": ("narrow",),
    "aten::sort": ("sort", "argsort", "msort"),
    "aten::split_with_sizes": ("split_with_sizes", "split", "split/list_args"),
    "aten::squeeze": ("squeeze", "squeeze/multiple"),
    "aten::sub": ("sub", "rsub", "__rsub__"),
    "aten::sym_numel": ("numel",),
    "aten::sym_size": ("size",),
    "aten::upsample_bilinear2d": (
        "nn.functional.interpolate/bilinear",
        "nn.functional.upsample_bilinear",
    ),
    "aten::upsample_nearest2d": (
        "nn.functional.interpolate/nearest",
        "nn.functional.upsample_nearest",
    ),
    "aten::var": ("var", "var/unbiased", "std", "std/unbiased"),
    "aten::view": ("view", "view_as", "reshape", "reshape_as"),
}


def opinfo_names(core_op: str) -> tuple[str, ...]:
    """The OpInfo names measuring ``core_op`` (default: the op's own name)."""
    return OPINFOS.get(core_op, (core_op.split("::", 1)[1],))
