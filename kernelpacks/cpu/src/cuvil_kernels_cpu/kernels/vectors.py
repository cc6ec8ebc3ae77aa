"""Hints to LLVM's loop vectorizer: ``wide_vectors()`` and ``opaque_count(n)``.

``wide_vectors()``: let LLVM vectorize the calling kernel's loops with 512-bit vectors.

On Intel cores with AVX-512, LLVM's cost model prefers 256-bit vectors (the ``prefer-256-bit``
tuning of skylake-avx512 and its successors), so Numba's loops -- exp in softmax, the sums of
layer_norm -- run 8 lanes wide although the GEMM tiles already keep the cores in 512-bit mode.
A kernel that calls :func:`wide_vectors` gets the function attribute
``"prefer-vector-width"="512"``: measured here, the float32 ``exp`` loop of softmax went from
132 to 85 us over BERT's ``[12, 128, 128]`` scores on one thread, bit-identical. Without
AVX-512 the call does nothing. The attribute belongs to the function being compiled, so the
call goes in the kernel itself (helpers are inlined into it).

``opaque_count(n)``: ``n``, hidden from LLVM's constant propagation. A helper inlined where its
loop count is a small constant (a GEMM tile's 16 columns without AVX-512) has its loop fully
unrolled before the vectorizer runs, and a loop body as large as GELU's is then not put back
into vectors: measured on a 2-core AMD EPYC (AVX2, 2026-12-07), the GELU over BERT's FFN tiles
ran at 22 ns a value inside the GEMM against 4.5 called on its own. Through ``opaque_count`` the
count stays a runtime value and the loop is vectorized as it is elsewhere.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from cuvil_kernels_cpu.kernels.isa import HAS_AVX512

#: llvmlite checks function attribute names against a fixed list; a ``"key"="value"`` string
#: attribute is valid LLVM IR in the same place, so it is added to the set in its printed form.
_ATTRIBUTE = '"prefer-vector-width"="512"'


@intrinsic
def wide_vectors(typingctx):  # type: ignore[no-untyped-def]
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        if HAS_AVX512:
            set.add(builder.function.attributes, _ATTRIBUTE)
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def opaque_count(typingctx, n):  # type: ignore[no-untyped-def]
    if not isinstance(n, types.Integer):
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        ty = args[0].type
        # an empty asm statement that "computes" its output from its input: no code, no side
        # effect, but LLVM cannot see the value through it
        asm = ir.InlineAsm(ir.FunctionType(ty, [ty]), "", "=r,0", side_effect=False)
        return builder.call(asm, [args[0]])

    return n(n), codegen
