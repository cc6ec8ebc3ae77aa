"""Cases for the fused ops the optimizer emits: conv/linear/matmul epilogues (bias, every
activation, residual before or after it), elementwise chains, and the NHWC pooling variants."""

from __future__ import annotations

from collections.abc import Iterator

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_conformance.generators import register_generator

ACTIVATIONS = [
    {"activation": "none"},
    {"activation": "relu"},
    {"activation": "relu6"},
    {"activation": "gelu"},
    {"activation": "gelu_tanh"},
    {"activation": "silu"},
    {"activation": "hardswish"},
    {"activation": "clamp", "activation_min": -0.5, "activation_max": 1.5},
]
ORDERS = ["residual_then_activation", "activation_then_residual"]


def _epilogues(quick: bool) -> Iterator[tuple[dict[str, object], bool]]:
    acts = ACTIVATIONS[:2] if quick else ACTIVATIONS
    for act in acts:
        yield act, False
    for order in ORDERS[:1] if quick else ORDERS:
        yield {"activation": "relu", "has_residual": True, "order": order}, True


def fused_conv_cases(op: str, quick: bool) -> Iterator[Case]:
    for attrs, residual in _epilogues(quick):
        x, o = (1, 4, 7, 7), 6
        ins = [InputSpec(x), InputSpec((o, 4, 3, 3), const=True), InputSpec((o,), const=True)]
        if residual:
            ins.append(InputSpec((1, o, 4, 4)))
        full = {"stride": (2, 2), "padding": (1, 1, 1, 1), **attrs}
        yield make_case(op, ins, full, reduce_len=36)
    if not quick:  # NHWC data layout, depthwise
        ins = [
            InputSpec((1, 6, 6, 4)),
            InputSpec((4, 1, 3, 3), const=True),
            InputSpec((4,), const=True),
        ]
        yield make_case(
            op,
            ins,
            {"padding": (1, 1, 1, 1), "groups": 4, "data_layout": "NHWC", "activation": "relu6"},
            reduce_len=9,
        )


def fused_linear_cases(op: str, quick: bool) -> Iterator[Case]:
    for attrs, residual in _epilogues(quick):
        ins = [InputSpec((3, 9)), InputSpec((5, 9), const=True), InputSpec((5,), const=True)]
        if residual:
            ins.append(InputSpec((3, 5)))
        yield make_case(op, ins, attrs, reduce_len=9)


def fused_matmul_cases(op: str, quick: bool) -> Iterator[Case]:
    for attrs, residual in _epilogues(quick):
        ins = [InputSpec((2, 3, 7)), InputSpec((7, 4)), InputSpec((4,), const=True)]
        if residual:
            ins.append(InputSpec((2, 3, 4)))
        yield make_case(op, ins, attrs, reduce_len=7)


PROGRAMS = [
    "relu",
    "mul(rhs=2.0, dtype='f32'); relu",
    "add(rhs=0.5, dtype='f32'); sigmoid; mul(rhs=3.0, dtype='f32')",
    "neg; exp; tanh",
    "sub(rhs=1.0, dtype='f32'); abs; sqrt",
]


def fused_elementwise_cases(op: str, quick: bool) -> Iterator[Case]:
    for program in PROGRAMS[:2] if quick else PROGRAMS:
        yield make_case(op, [InputSpec((3, 5), "f32", "normal")], {"program": program})
        if not quick:
            yield make_case(
                op, [InputSpec((4, 6), "f32", "edge")], {"program": program}, label="edge"
            )


def nhwc_pool_cases(op: str, quick: bool) -> Iterator[Case]:
    if op == "adaptive_avg_pool2d_nhwc":
        grid = [((1, 7, 7, 3), {"output_size": (1, 1)}), ((2, 10, 7, 2), {"output_size": (3, 4)})]
    elif op == "max_pool2d_nhwc":
        grid = [
            ((1, 8, 8, 3), {"kernel": (2, 2)}),
            ((1, 9, 9, 2), {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)}),
        ]
    else:
        grid = [
            ((1, 8, 8, 3), {"kernel": (2, 2)}),
            (
                (1, 9, 9, 2),
                {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1), "count_include_pad": False},
            ),
        ]
    for shape, attrs in grid[:1] if quick else grid:
        k = attrs.get("kernel", (shape[1], shape[2]))
        yield make_case(op, [InputSpec(shape)], attrs, reduce_len=k[0] * k[1])


for _op, _gen in {
    "fused_conv2d": fused_conv_cases,
    "fused_linear": fused_linear_cases,
    "fused_matmul": fused_matmul_cases,
    "fused_elementwise": fused_elementwise_cases,
    "max_pool2d_nhwc": nhwc_pool_cases,
    "avg_pool2d_nhwc": nhwc_pool_cases,
    "adaptive_avg_pool2d_nhwc": nhwc_pool_cases,
}.items():
    register_generator(_op, _gen)
