"""The 1-D transforms of Winograd F(4x4, 3x3) on 16 channels at once, as LLVM IR intrinsics.

Each call reads six 16-lane vectors ``src + i * ss`` (``i < 6``; addresses raw, strides in
float32 elements), combines them with one row set of the transform and writes the results to
``dst + k * ds``; only the first ``tail`` lanes (1 to 16) are read and written (AVX-512 masked
moves), so a channel count that is not a multiple of 16 needs no scalar remainder.

* :func:`bt_lanes`: the six rows of ``B^T`` (input transform), six outputs;
* :func:`at_lanes`: the four rows of ``A^T`` (output transform), four outputs;
* :func:`at_store_lanes`: the same, then the GEMM tile's fused epilogue (bias, then
  ``microkernel._residual_clamp``: residual before or after, clamp) applied and the first
  ``nout`` outputs stored into the output tensor: each output pixel is written once, with no
  per-pixel call (an epilogue call per output pixel took 0.39 ms of the 56x56x64 layer).

A 2-D transform is two passes: over the six rows of a tile (strided by the input's row pitch),
then over the six columns of each result. Written as Numba loops, one statement storing into
six arrays while reading six others, LLVM did not vectorize the transforms (each store would
need a runtime alias check against every load): they took 1.24 + 0.70 ms of a 2.12 ms
56x56x64 layer whose 36 GEMMs took 0.58 (one thread, 2026-12-06).

Arithmetic is float32 throughout (no FMA contraction, so the result does not depend on the
ISA). The scalar loops these replace computed in float64 wherever a literal multiplied (Numba
promotes): the first version of these lanes did the same and gave bit-identical outputs, at
twice the cost (0.40 against 0.20 ms for the 56x56x64 layer's input transform); in float32 the
layer errors against a float64 convolution were unchanged (2.9e-5 against 3.3e-5 at 56x56x64,
7.0e-5 against 6.6e-5 at 7x7x512, about 5 % of the bound or less).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from cuvil_kernels_cpu.kernels.microkernel import (
    _F32,
    _VF,
    _const,
    _lane_mask,
    _masked_load,
    _masked_store,
    _residual_clamp,
)


def _k(builder: ir.IRBuilder, c: float, v: ir.Value) -> ir.Value:
    return builder.fmul(ir.Constant(_VF, [c] * 16), v)


def _bt(b: ir.IRBuilder, d: list[ir.Value]) -> list[ir.Value]:
    """The six rows of ``B^T`` applied to ``d``."""
    d0, d1, d2, d3, d4, d5 = d
    return [
        b.fadd(b.fsub(_k(b, 4.0, d0), _k(b, 5.0, d2)), d4),
        b.fadd(b.fadd(_k(b, -4.0, b.fadd(d1, d2)), d3), d4),
        b.fadd(b.fsub(_k(b, 4.0, b.fsub(d1, d2)), d3), d4),
        b.fadd(b.fsub(_k(b, 2.0, b.fsub(d3, d1)), d2), d4),
        b.fadd(b.fsub(_k(b, 2.0, b.fsub(d1, d3)), d2), d4),
        b.fadd(b.fsub(_k(b, 4.0, d1), _k(b, 5.0, d3)), d5),
    ]


def _at(b: ir.IRBuilder, m: list[ir.Value]) -> list[ir.Value]:
    """The four rows of ``A^T`` applied to ``m``."""
    m0, m1, m2, m3, m4, m5 = m
    return [
        b.fadd(b.fadd(b.fadd(b.fadd(m0, m1), m2), m3), m4),
        b.fadd(b.fsub(m1, m2), _k(b, 2.0, b.fsub(m3, m4))),
        b.fadd(b.fadd(m1, m2), _k(b, 4.0, b.fadd(m3, m4))),
        b.fadd(b.fadd(b.fsub(m1, m2), _k(b, 8.0, b.fsub(m3, m4))), m5),
    ]


def _load6(builder: ir.IRBuilder, src_i: ir.Value, ss: ir.Value, mask: ir.Value) -> list[ir.Value]:
    src = builder.inttoptr(src_i, _F32.as_pointer())
    return [_masked_load(builder, src, builder.mul(_const(i), ss), mask) for i in range(6)]


def _lanes(rows: Callable[[ir.IRBuilder, list[ir.Value]], list[ir.Value]]) -> Any:
    ip = types.intp

    def typer(typingctx, src, ss, dst, ds, tail):  # type: ignore[no-untyped-def]
        return types.void(ip, ip, ip, ip, ip), codegen

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        src_i, ss, dst_i, ds, tail = args
        dst = builder.inttoptr(dst_i, _F32.as_pointer())
        mask = _lane_mask(builder, tail)
        for k, v in enumerate(rows(builder, _load6(builder, src_i, ss, mask))):
            _masked_store(builder, v, dst, builder.mul(_const(k), ds), mask)
        return context.get_dummy_value()

    return intrinsic(typer)


def _at_store() -> Any:
    ip, f4 = types.intp, types.float32

    def typer(typingctx, src, ss, dst, ds, tail, bias, res, rs, lo, hi, flags, nout):  # type: ignore[no-untyped-def]  # noqa: E501
        return types.void(ip, ip, ip, ip, ip, ip, ip, ip, f4, f4, ip, ip), codegen

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        src_i, ss, dst_i, ds, tail, bias_i, res_i, rs, lo, hi, flags, nout = args
        fp = _F32.as_pointer()
        dst, res = builder.inttoptr(dst_i, fp), builder.inttoptr(res_i, fp)
        mask = _lane_mask(builder, tail)
        bias = _masked_load(builder, builder.inttoptr(bias_i, fp), _const(0), mask)
        for k, y in enumerate(_at(builder, _load6(builder, src_i, ss, mask))):
            # output k exists (the last tile of a row may be cut by the image edge)
            with builder.if_then(builder.icmp_signed("<", _const(k), nout)):
                at = builder.mul(_const(k), rs)

                def add_res(vals: list[ir.Value], at: ir.Value = at) -> list[ir.Value]:
                    return [builder.fadd(vals[0], _masked_load(builder, res, at, mask))]

                v = _residual_clamp(builder, [builder.fadd(y, bias)], add_res, lo, hi, flags)
                _masked_store(builder, v[0], dst, builder.mul(_const(k), ds), mask)
        return context.get_dummy_value()

    return intrinsic(typer)


#: ``bt_lanes(src, ss, dst, ds, tail)``: six vectors in, the six rows of ``B^T`` out
bt_lanes = _lanes(_bt)
#: ``at_lanes(src, ss, dst, ds, tail)``: six vectors in, the four rows of ``A^T`` out
at_lanes = _lanes(_at)
#: ``at_store_lanes(src, ss, dst, ds, tail, bias, res, rs, lo, hi, flags, nout)``: ``at_lanes``,
#: then ``dst[k] = epilogue(out_k + bias)`` for ``k < nout`` (``res + k * rs`` the residual)
at_store_lanes = _at_store()
