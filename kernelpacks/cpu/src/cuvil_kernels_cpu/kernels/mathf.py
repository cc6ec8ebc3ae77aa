"""Vectorizable float32 math for kernel epilogues: exp, erf, gelu, silu, sigmoid, hardswish.

libm's ``expf``/``erf`` are scalar calls LLVM cannot vectorize; a BERT FFN evaluates gelu on
millions of values per inference, so these are branch-free polynomial versions that LLVM turns
into SIMD code inside the kernels' loops (512 bits wide in the activation blocks, which call
:func:`~cuvil_kernels_cpu.kernels.vectors.wide_vectors`: the GELU of a BERT FFN tile went from
643 to 499 us over ``[126, 3072]`` on one thread, bit-identical).

Accuracy (checked against float64 in ``tests/kernels/test_mathf.py``):

* ``exp_f32``: Cody-Waite reduction ``x = n ln2 + r`` and a degree-6 polynomial, about 1 ulp;
  exact ``+inf`` above 88.72, ``0`` below -104, NaN -> NaN, subnormal results by a two-step
  power-of-two scale.
* ``erfc_pos``: Numerical Recipes' ``erfcc`` (fractional error below 1.2e-7 in exact arithmetic)
  evaluated in float32, so ``gelu(x) = x/2 * erfc(-x/sqrt 2)`` keeps its relative accuracy in the
  negative tail where ``1 + erf`` would cancel.

They are used where the conformance bound is a reduction bound (fused GEMM/conv epilogues,
softmax); the plain activation ops are evaluated with numpy, bit for bit as the interpreter.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import intrinsic

from cuvil_kernels_cpu.kernels.isa import serial_kernel
from cuvil_kernels_cpu.kernels.vectors import opaque_count, wide_vectors

# Activation codes shared by the kernels (epilogue ``act`` argument).
ACT_NONE = 0  # identity or a clamp (lo/hi)
ACT_GELU = 1
ACT_SILU = 2
ACT_HARDSWISH = 3
ACT_SIGMOID = 4


@intrinsic
def i32_as_f32(typingctx, v):  # type: ignore[no-untyped-def]
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        from llvmlite import ir

        return builder.bitcast(args[0], ir.FloatType())

    return sig, codegen


@intrinsic
def f32_as_i32(typingctx, v):  # type: ignore[no-untyped-def]
    sig = types.int32(types.float32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        from llvmlite import ir

        return builder.bitcast(args[0], ir.IntType(32))

    return sig, codegen


def _plain_float_op(name: str):  # type: ignore[no-untyped-def]
    """An intrinsic for one float32 ``fmul``/``fdiv`` with no fast-math flags, so that LLVM
    never contracts it into an FMA with a later add, even inside a fastmath kernel."""

    @intrinsic
    def op(typingctx, a, b):  # type: ignore[no-untyped-def]
        sig = types.float32(types.float32, types.float32)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            return getattr(builder, name)(args[0], args[1])

        return sig, codegen

    return op


#: ``a * b`` and ``a / b`` rounded once, exactly as numpy's float32 ufuncs compute them.
exact_mul = _plain_float_op("fmul")
exact_div = _plain_float_op("fdiv")


@intrinsic
def _fma(typingctx, a, b, c):  # type: ignore[no-untyped-def]
    """``a * b + c`` with one rounding (``llvm.fma.f32``): LLVM vectorizes it, and without
    fastmath it does not contract ``p * r + c`` by itself."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        from llvmlite import ir

        f32 = ir.FloatType()
        mod = builder.module
        fn = mod.globals.get("llvm.fma.f32")
        if fn is None:
            fn = ir.Function(mod, ir.FunctionType(f32, [f32, f32, f32]), "llvm.fma.f32")
        return builder.call(fn, list(args))

    return sig, codegen


_LOG2E = np.float32(1.4426950408889634)
_LN2_HI = np.float32(0.693145751953125)
_LN2_LO = np.float32(1.428606765330187e-06)
_EXP_MAX = np.float32(88.72283)
_EXP_MIN = np.float32(-104.0)
_INF = np.float32(np.inf)
_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)
_C2 = np.float32(0.5)
_C3 = np.float32(1.6666666e-1)
_C4 = np.float32(4.1666652e-2)
_C5 = np.float32(8.333028e-3)
_C6 = np.float32(1.3888465e-3)
_C7 = np.float32(1.9852762e-4)


@serial_kernel
def exp_f32(x: np.float32) -> np.float32:
    """e**x in float32 (see the module docstring for its accuracy)."""
    xc = min(max(x, _EXP_MIN), _EXP_MAX)
    n = np.floor(xc * _LOG2E + _HALF)  # float32 all the way (math.floor goes through int64)
    r = (xc - n * _LN2_HI) - n * _LN2_LO
    p = _C7
    p = _fma(p, r, _C6)
    p = _fma(p, r, _C5)
    p = _fma(p, r, _C4)
    p = _fma(p, r, _C3)
    p = _fma(p, r, _C2)
    p = _fma(p, r, _ONE)
    p = _fma(p, r, _ONE)
    ni = np.int32(n)
    n1 = ni >> 1
    n2 = ni - n1
    s1 = i32_as_f32(np.int32((n1 + 127) << 23))
    s2 = i32_as_f32(np.int32((n2 + 127) << 23))
    y = p * s1 * s2
    y = _INF if x > _EXP_MAX else y
    y = _ZERO if x < _EXP_MIN else y
    return x if x != x else y


@serial_kernel
def erfc_pos(z: np.float32) -> np.float32:
    """erfc(z) for z >= 0 (Numerical Recipes' erfcc, in float32)."""
    t = _ONE / (_ONE + _HALF * z)
    # Estrin's scheme: the same polynomial as pairs in t, combined by t^2, t^4, t^8 -- a chain
    # of 4 dependent operations after t instead of Horner's 9
    t2 = t * t
    t4 = t2 * t2
    p01 = _fma(np.float32(1.00002368), t, np.float32(-1.26551223))
    p23 = _fma(np.float32(0.09678418), t, np.float32(0.37409196))
    p45 = _fma(np.float32(0.27886807), t, np.float32(-0.18628806))
    p67 = _fma(np.float32(1.48851587), t, np.float32(-1.13520398))
    p89 = _fma(np.float32(0.17087277), t, np.float32(-0.82215223))
    low = _fma(p23, t2, p01)
    high = _fma(p67, t2, p45)
    poly = _fma(_fma(p89, t4, high), t4, low)
    return t * exp_f32(_fma(-z, z, poly))


_RSQRT2 = np.float32(math.sqrt(0.5))


@serial_kernel
def gelu_f32(x: np.float32) -> np.float32:
    """x/2 * (1 + erf(x / sqrt 2)), as x/2 * erfc(-x / sqrt 2) for x < 0 (no cancellation)."""
    z = x * _RSQRT2
    c = erfc_pos(abs(z))
    phi2 = c if x < _ZERO else _TWO - c  # 2 * Phi(x)
    y = x * _HALF * phi2  # NaN for a NaN x, whatever phi2 is
    # gelu(+inf) = +inf; gelu(-inf) = -inf * 0 = NaN as the reference. No ``x if x != x``
    # select at the end (y is already NaN there): selecting x itself let LLVM store only the
    # lanes that change, a masked store (``vmaskmovps``), which is slow on AMD Zen 2: measured
    # there on one thread, 2.69 -> 2.34 ns a value over long rows, 4.06 -> 3.03 in GEMM tiles
    return x if x == _INF else y


@serial_kernel
def sigmoid_f32(x: np.float32) -> np.float32:
    return _ONE / (_ONE + exp_f32(-x))


@serial_kernel
def silu_f32(x: np.float32) -> np.float32:
    return x / (_ONE + exp_f32(-x))


_THREE = np.float32(3.0)
_SIX = np.float32(6.0)


@serial_kernel
def hardswish_f32(x: np.float32) -> np.float32:
    """x * min(max(x + 3, 0), 6) / 6, in the interpreter's order of float32 operations."""
    h = x + _THREE
    h = _ZERO if h < _ZERO else h
    h = _SIX if h > _SIX else h
    return x * (h / _SIX)


@serial_kernel
def activate(x: np.float32, act: int) -> np.float32:
    """The epilogue activation ``act`` (an ``ACT_*`` code) of one value."""
    if act == ACT_GELU:
        return gelu_f32(x)
    if act == ACT_SILU:
        return silu_f32(x)
    if act == ACT_HARDSWISH:
        return hardswish_f32(x)
    if act == ACT_SIGMOID:
        return sigmoid_f32(x)
    return x


@serial_kernel
def clamp_f32(x: np.float32, lo: np.float32, hi: np.float32) -> np.float32:
    """min(max(x, lo), hi) with NaN propagating (as np.maximum/np.minimum)."""
    y = lo if x < lo else x
    return hi if y > hi else y


@serial_kernel
def _gelu_block(a, r0, nr, c0, nc):  # type: ignore[no-untyped-def]
    wide_vectors()
    nc = opaque_count(nc)  # a tile's 16 columns: vectorized, not unrolled (vectors.py)
    for i in range(nr):
        row = a[r0 + i, c0 : c0 + nc]
        for j in range(nc):
            row[j] = gelu_f32(row[j])


@serial_kernel
def _silu_block(a, r0, nr, c0, nc):  # type: ignore[no-untyped-def]
    wide_vectors()
    nc = opaque_count(nc)  # a tile's 16 columns: vectorized, not unrolled (vectors.py)
    for i in range(nr):
        row = a[r0 + i, c0 : c0 + nc]
        for j in range(nc):
            row[j] = silu_f32(row[j])


@serial_kernel
def _hardswish_block(a, r0, nr, c0, nc):  # type: ignore[no-untyped-def]
    wide_vectors()
    nc = opaque_count(nc)  # a tile's 16 columns: vectorized, not unrolled (vectors.py)
    for i in range(nr):
        row = a[r0 + i, c0 : c0 + nc]
        for j in range(nc):
            row[j] = hardswish_f32(row[j])


@serial_kernel
def _sigmoid_block(a, r0, nr, c0, nc):  # type: ignore[no-untyped-def]
    wide_vectors()
    nc = opaque_count(nc)  # a tile's 16 columns: vectorized, not unrolled (vectors.py)
    for i in range(nr):
        row = a[r0 + i, c0 : c0 + nc]
        for j in range(nc):
            row[j] = sigmoid_f32(row[j])


@serial_kernel
def activate_block(a, r0, nr, c0, nc, res, act, add_res):  # type: ignore[no-untyped-def]
    """a[r0:r0+nr, c0:c0+nc] = act(...) (+ res[same]) in place, one small function per
    activation. Loops index row views from 0: an index Numba cannot prove non-negative gets a
    negative-index wraparound check that stops LLVM from vectorizing (measured 13x slower)."""
    if act == ACT_GELU:
        _gelu_block(a, r0, nr, c0, nc)
    elif act == ACT_SILU:
        _silu_block(a, r0, nr, c0, nc)
    elif act == ACT_HARDSWISH:
        _hardswish_block(a, r0, nr, c0, nc)
    elif act == ACT_SIGMOID:
        _sigmoid_block(a, r0, nr, c0, nc)
    if add_res:
        for i in range(nr):
            row = a[r0 + i, c0 : c0 + nc]
            rr = res[r0 + i, c0 : c0 + nc]
            for j in range(nc):
                row[j] = row[j] + rr[j]


@serial_kernel
def activate_row(v, res, out, act, add_res):  # type: ignore[no-untyped-def]
    """out[j] = act(v[j]) (+ res[j]) over 1-D rows (copied first when they differ)."""
    if out.ctypes.data != v.ctypes.data:
        for j in range(out.size):
            out[j] = v[j]
    activate_block(out.reshape(1, out.size), 0, 1, 0, out.size, res.reshape(1, res.size), act,
                   add_res)  # fmt: skip


@serial_kernel
def epilogue_row(v, bias, res, out, lo, hi, act, res_mode):  # type: ignore[no-untyped-def]
    """out[j] = the fused epilogue of v[j] + bias[j]: residual before (res_mode 1) or after
    (2) the clamp ``lo``/``hi`` or the activation ``act``. Branches are hoisted out of the
    loops (one loop per case) so LLVM vectorizes each."""
    wide_vectors()
    n = out.size
    if act == ACT_NONE:
        if res_mode == 1:
            for j in range(n):
                out[j] = clamp_f32((v[j] + bias[j]) + res[j], lo, hi)
        elif res_mode == 2:
            for j in range(n):
                out[j] = clamp_f32(v[j] + bias[j], lo, hi) + res[j]
        else:
            for j in range(n):
                out[j] = clamp_f32(v[j] + bias[j], lo, hi)
        return
    if res_mode == 1:
        for j in range(n):
            out[j] = (v[j] + bias[j]) + res[j]
    else:
        for j in range(n):
            out[j] = v[j] + bias[j]
    activate_row(out, res, out, act, res_mode == 2)
