"""The exact int8 register tile, written as LLVM IR through a Numba intrinsic.

``tile_u8s8(a, lda, b, steps, c, ldc)`` is the exact int8 tile: ``a`` holds unsigned bytes (the
int8 activation plus 128), ``b`` the signed weights packed ``[steps][NR_I8][K_STEP_I8]``, and
``c[i, j] = sum_{p < K_STEP_I8*steps} a[i*lda + p] * b[p, j]`` in int32 (no saturation anywhere:
every product fits 16 bits and the reduction is bounded by the int32 accumulator bound). With
AVX-512 VNNI this is one ``vpdpbusd`` per 64 products (int8 weights, 4 per step). With AVX2 the
weights are stored as int16 pairs (2 per step) and each step is one ``vpmaddwd`` per 8 columns
on the two activation bytes widened to int16 -- ``vpmaddubsw`` would take the bytes as they are
but saturates its int16 pair sums (255 * 127 * 2 > 32767). Otherwise the sum is spelled out
with widening multiplies and adds.

The tile's strides are in elements and its pointers raw addresses, as for the float32 tile
(:mod:`cuvil_kernels_cpu.kernels.microkernel`, whose IR helpers it shares).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from cuvil_kernels_cpu.kernels.isa import HAS_VNNI, INT8_PAIRS, K_STEP_I8, MR_I8, NV_I8
from cuvil_kernels_cpu.kernels.microkernel import (
    _I8,
    _I32,
    _VI,
    _const,
    _fn,
    _k_loop,
    _splat,
    _vload,
    _vstore,
)

_VW = ir.VectorType(ir.IntType(16), 32)


def _dot4_portable(builder: ir.IRBuilder, acc: ir.Value, a4: ir.Value, b: ir.Value) -> ir.Value:
    """``vpdpbusd`` spelled out: acc[l] += sum_q u8(a4[l])[q] * s8(b[l])[q]."""
    v64 = ir.VectorType(_I8, 64)
    w64 = ir.VectorType(_I32, 64)
    au = builder.zext(builder.bitcast(a4, v64), w64)
    bs = builder.sext(builder.bitcast(b, v64), w64)
    prod = builder.mul(au, bs)
    undef = ir.Constant(w64, ir.Undefined)
    total = acc
    for q in range(4):
        mask = ir.Constant(_VI, [4 * lane + q for lane in range(16)])
        total = builder.add(total, builder.shuffle_vector(prod, undef, mask))
    return total


def _pmaddwd(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """``vpmaddwd`` on 32 int16 lanes (two AVX2 halves): lane l of the result is
    ``a[2l] * b[2l] + a[2l+1] * b[2l+1]`` in int32 -- exact for int16 operands."""
    v16 = ir.VectorType(ir.IntType(16), 16)
    v8 = ir.VectorType(_I32, 8)
    fn = _fn(builder, "llvm.x86.avx2.pmadd.wd", v8, [v16, v16])
    undef = ir.Constant(_VW, ir.Undefined)
    halves = []
    for h in range(2):
        lanes = ir.Constant(_VI, [16 * h + q for q in range(16)])
        pa = builder.shuffle_vector(a, undef, lanes)
        pb = builder.shuffle_vector(b, undef, lanes)
        halves.append(builder.call(fn, [pa, pb]))
    return builder.shuffle_vector(halves[0], halves[1], ir.Constant(_VI, list(range(16))))


@intrinsic
def tile_u8s8(typingctx, a, lda, b, steps, c, ldc):  # type: ignore[no-untyped-def]
    """One MR_I8 x NR_I8 exact int8 tile into int32 ``c`` (see the module docstring)."""
    ip = types.intp
    sig = types.void(ip, ip, ip, ip, ip, ip)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        a_i, lda_v, b_i, steps_v, c_i, ldc_v = args
        a0 = builder.inttoptr(a_i, _I8.as_pointer())
        b0 = builder.inttoptr(b_i, _I32.as_pointer())
        rows = [builder.mul(_const(i), lda_v) for i in range(MR_I8)]
        nr = 16 * NV_I8
        if HAS_VNNI:
            vnni = _fn(builder, "llvm.x86.avx512.vpdpbusd.512", _VI, [_VI, _VI, _VI])

            def dot(acc: ir.Value, a_step: ir.Value, bv: ir.Value) -> ir.Value:
                return builder.call(vnni, [acc, _splat(builder, a_step, _VI), bv])
        elif INT8_PAIRS:
            pair = ir.VectorType(_I8, 2)
            wide = ir.VectorType(ir.IntType(16), 2)

            def dot(acc: ir.Value, a_step: ir.Value, bv: ir.Value) -> ir.Value:
                # the step's two activation bytes as two int16 lanes, broadcast
                a2 = builder.bitcast(builder.zext(builder.bitcast(a_step, pair), wide), _I32)
                av = builder.bitcast(_splat(builder, a2, _VI), _VW)
                return builder.add(acc, _pmaddwd(builder, av, builder.bitcast(bv, _VW)))
        else:

            def dot(acc: ir.Value, a_step: ir.Value, bv: ir.Value) -> ir.Value:
                return _dot4_portable(builder, acc, _splat(builder, a_step, _VI), bv)

        step_t = ir.IntType(8 * K_STEP_I8)

        def body(p: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            boff = builder.mul(p, _const(nr))  # in int32 units: [NR][K_STEP] weights per step
            bv = [_vload(builder, b0, builder.add(boff, _const(16 * j)), _VI) for j in range(NV_I8)]
            koff = builder.mul(p, _const(K_STEP_I8))
            new = []
            for i in range(MR_I8):
                ptr = builder.gep(a0, [builder.add(rows[i], koff)])
                s = builder.load(builder.bitcast(ptr, step_t.as_pointer()), align=1)
                new.extend(dot(accs[i * NV_I8 + j], s, bv[j]) for j in range(NV_I8))
            return new

        acc = _k_loop(builder, steps_v, MR_I8 * NV_I8, _VI, body)
        c0 = builder.inttoptr(c_i, _I32.as_pointer())
        for i in range(MR_I8):
            base = builder.mul(_const(i), ldc_v)
            for j in range(NV_I8):
                _vstore(builder, acc[i * NV_I8 + j], c0, builder.add(base, _const(16 * j)))
        return context.get_dummy_value()

    return sig, codegen
