"""Elementwise kernels and fused elementwise chains, compiled into one kernel body.

A chain starts from ``in0`` and applies steps in order; a step is a unary op ``("relu", None)``
or a binary op with an operand, either another input index ``("add", 1)`` or a float constant
``("mul", 0.5)``. All inputs and the output have the same element count (the lowering
materializes broadcasts). Compute is fp32 whatever the storage dtype.

Launch: 1-D grid-stride loop, ``block_size`` threads; each thread handles ``loop_unroll_factor``
elements per iteration (manually unrolled).
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels.epilogue import ACTIVATIONS, activation_expr
from cuvil_kernels_hip.prelude import float_literal, storage_type
from cuvil_kernels_hip.source import KernelOptions, KernelSource, assemble, entry_name

UNARY: dict[str, str] = {
    "neg": "(-(@))",
    "abs": "fabsf(@)",
    "exp": "expf(@)",
    "log": "logf(@)",
    "sqrt": "sqrtf(@)",
    "rsqrt": "rsqrtf(@)",
    "reciprocal": "(1.0f / (@))",
    "erf": "erff(@)",
    "identity": "(@)",
    **{name: expr for name, expr in ACTIVATIONS.items() if name != "none"},
}

BINARY: dict[str, str] = {
    "add": "((@) + (#))",
    "sub": "((@) - (#))",
    "mul": "((@) * (#))",
    "div": "((@) / (#))",
    "max": "cuvil_max_nan((@), (#))",
    "min": "cuvil_min_nan((@), (#))",
    "pow": "powf((@), (#))",
}

Step = tuple[str, "int | float | None"]


def _step_expr(step: Step, num_inputs: int) -> str:
    op, operand = step
    if op in UNARY:
        if operand is not None:
            raise ValueError(
                f"elementwise chain: unary op {op!r} takes no operand, got {operand!r}"
            )
        return activation_expr(op, "v") if op in ACTIVATIONS else UNARY[op].replace("@", "v")
    if op not in BINARY:
        raise ValueError(
            f"elementwise chain: op {op!r} is unknown; unary ops are {sorted(UNARY)}, "
            f"binary ops are {sorted(BINARY)}"
        )
    if isinstance(operand, bool) or operand is None:
        raise ValueError(f"elementwise chain: binary op {op!r} needs an input index or a float")
    if isinstance(operand, int):
        if not 0 <= operand < num_inputs:
            raise ValueError(
                f"elementwise chain: op {op!r} reads input {operand}, but there are "
                f"{num_inputs} inputs"
            )
        rhs = f"a{operand}"
    else:
        rhs = float_literal(float(operand))
    return BINARY[op].replace("@", "v").replace("#", rhs)


def elementwise_source(
    steps: tuple[Step, ...], num_inputs: int, dtype: str, options: KernelOptions
) -> KernelSource:
    """Generate one kernel computing the chain ``steps`` over ``num_inputs`` inputs."""
    family = "elementwise"
    st = storage_type(dtype, family)
    if not steps:
        raise ValueError("elementwise chain: needs at least one step")
    if num_inputs < 1:
        raise ValueError("elementwise chain: needs at least one input")
    params: dict[str, object] = {"steps": steps, "num_inputs": num_inputs}
    entry = entry_name(family, dtype, params, options)
    exprs = [_step_expr(s, num_inputs) for s in steps]
    u_count = options.loop_unroll_factor
    ins = ", ".join(f"const {st.ctype}* __restrict__ in{i}" for i in range(num_inputs))
    loads = " ".join(f"float a{i} = {st.load.format(x=f'in{i}[i]')};" for i in range(num_inputs))
    chain = " ".join(f"v = {e};" for e in exprs)
    body_one = (
        f"{{ long long i = base + {{u}} * stride; if (i < n) {{ {loads} float v = a0; {chain} "
        f"out[i] = {st.store.format(v='v')}; }} }}"
    )
    unrolled_body = "\n".join("    " + body_one.replace("{u}", str(u)) for u in range(u_count))
    body = f"""
extern "C" __global__ void CUVIL_LAUNCH_BOUNDS({options.block_size})
{entry}({ins}, {st.ctype}* __restrict__ out, long long n) {{
  const long long stride = (long long)gridDim.x * blockDim.x;
  // {u_count} elements per thread per iteration (loop_unroll_factor)
  for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x; base < n;
       base += stride * {u_count}) {{
{unrolled_body}
  }}
}}
"""
    return assemble(
        family,
        dtype,
        params,
        options,
        body,
        entry,
        launch="grid=ceil(n / (block*unroll)) capped, block=block_size; args=(*inputs, out, n)",
    )
