"""Register-tiled GEMM micro-kernels, written as LLVM IR through Numba intrinsics.

Numba's auto-vectorizer does not keep a GEMM tile of accumulators in registers, and the BLAS
numpy ships was measured here at about half the speed of a tile kernel on this AVX-512 CPU
(docs/benchmarks.md). So the inner loop is emitted directly: per step ``k`` it loads ``NV``
16-lane vectors of the packed B panel, broadcasts one A value per row, and does ``MR * NV``
fused multiply-adds into accumulators that live in registers for the whole loop.

``tile_f32(a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init)`` (strides in
elements; all pointers are raw addresses taken with ``arr.ctypes.data``)::

    acc[i, j] = init[i, j] + sum_{p < k} a[i * lda + p] * b[p * ldb + j]   i < MR, j < NR (FMA)
    v = acc + bias[j]
    v += res[i * ldr + j]             if flags & RES_BEFORE
    v = hi if v > hi else (lo if v < lo else v)    (NaN stays NaN; lo=-inf, hi=inf: identity)
    v += res[i * ldr + j]             if flags & RES_AFTER
    c[i * ldc + j] = v

``flags & B_AHEAD``: the k loop also prefetches B ``isa.B_PREFETCH`` bytes ahead (where that
is not 0).

``init`` is 0 (start from zeros) or a contiguous ``MR x NR`` tile of partial sums, so a tile
can be accumulated over several calls (the direct convolution's kernel rows): pass a zero
bias and the identity clamp to all but the last. The clamp is two selects, not
``maxnum``/``minnum``, so NaN propagates as in ``np.maximum``.

The exact int8 tile is in :mod:`cuvil_kernels_cpu.kernels.tile_int8`.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from cuvil_kernels_cpu.kernels.isa import B_PREFETCH, MR, NV

RES_BEFORE = 1
RES_AFTER = 2
#: flags bit: prefetch B :data:`~cuvil_kernels_cpu.kernels.isa.B_PREFETCH` bytes ahead of the
#: reads (a panel's first pass over weights that come from memory; later passes find them in
#: cache, where the extra instruction and the lines fetched past the panel cost a little)
B_AHEAD = 4

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_I8 = ir.IntType(8)
_F32 = ir.FloatType()
_VF = ir.VectorType(_F32, 16)
_VI = ir.VectorType(_I32, 16)


def _fn(builder: ir.IRBuilder, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    mod = builder.module
    fn = mod.globals.get(name)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(ret, args), name)
    return fn


def _splat(builder: ir.IRBuilder, scalar: ir.Value, vtype: ir.VectorType) -> ir.Value:
    undef = ir.Constant(vtype, ir.Undefined)
    one = builder.insert_element(undef, scalar, ir.Constant(_I32, 0))
    zeros = ir.Constant(ir.VectorType(_I32, vtype.count), [0] * vtype.count)
    return builder.shuffle_vector(one, undef, zeros)


def _vload(builder: ir.IRBuilder, base: ir.Value, index: ir.Value, vtype: ir.VectorType) -> Any:
    ptr = builder.gep(base, [index])
    return builder.load(builder.bitcast(ptr, vtype.as_pointer()), align=4)


def _vstore(builder: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value) -> None:
    ptr = builder.gep(base, [index])
    builder.store(value, builder.bitcast(ptr, value.type.as_pointer()), align=4)


def _const(n: int) -> ir.Constant:
    return ir.Constant(_I64, n)


def _prefetch(builder: ir.IRBuilder, ptr: ir.Value, locality: int) -> None:
    """``llvm.prefetch`` (read, data) of the line at ``ptr``: a hint that never faults, so an
    address past an array's end is harmless. ``locality`` 3 is ``prefetcht0`` (into L1), 2
    ``prefetcht1`` (L2 and out)."""
    i8p = _I8.as_pointer()
    fn = _fn(builder, "llvm.prefetch.p0i8", ir.VoidType(), [i8p, _I32, _I32, _I32])
    at = builder.bitcast(ptr, i8p)
    builder.call(fn, [at, ir.Constant(_I32, 0), ir.Constant(_I32, locality), ir.Constant(_I32, 1)])


def _k_loop(
    builder: ir.IRBuilder,
    count: ir.Value,
    n_acc: int,
    vtype: ir.VectorType,
    body: Any,
    start: list[ir.Value] | None = None,
) -> list[ir.Value]:
    """``for p in range(count): accs = body(p, accs)`` with the accumulators in SSA registers,
    starting from ``start`` (zeros by default); returns the final accumulators."""
    zero = ir.Constant(vtype, None)
    init = start if start is not None else [zero] * n_acc
    pre = builder.block
    loop = builder.append_basic_block("tile_loop")
    done = builder.append_basic_block("tile_done")
    builder.cbranch(builder.icmp_signed(">", count, _const(0)), loop, done)
    builder.position_at_end(loop)
    p = builder.phi(_I64)
    p.add_incoming(_const(0), pre)
    accs = []
    for i in range(n_acc):
        phi = builder.phi(vtype)
        phi.add_incoming(init[i], pre)
        accs.append(phi)
    new = body(p, accs)
    end = builder.block  # the body may have added blocks (a nested loop): the back edge is here
    p_next = builder.add(p, _const(1))
    p.add_incoming(p_next, end)
    for phi, value in zip(accs, new, strict=True):
        phi.add_incoming(value, end)
    builder.cbranch(builder.icmp_signed("<", p_next, count), loop, done)
    builder.position_at_end(done)
    out = []
    for i, value in enumerate(new):
        phi = builder.phi(vtype)
        phi.add_incoming(init[i], pre)
        phi.add_incoming(value, end)
        out.append(phi)
    return out


def _when(builder: ir.IRBuilder, cond: ir.Value, values: list[ir.Value], fn: Any) -> list[ir.Value]:
    """``values = fn(values) if cond else values`` as a branch with phis."""
    before = builder.block
    then = builder.append_basic_block("tile_then")
    merge = builder.append_basic_block("tile_merge")
    builder.cbranch(cond, then, merge)
    builder.position_at_end(then)
    changed = fn(values)
    then_end = builder.block
    builder.branch(merge)
    builder.position_at_end(merge)
    out = []
    for old, new in zip(values, changed, strict=True):
        phi = builder.phi(old.type)
        phi.add_incoming(old, before)
        phi.add_incoming(new, then_end)
        out.append(phi)
    return out


def _lane_mask(builder: ir.IRBuilder, tail: ir.Value) -> ir.Value:
    """``<16 x i1>``: lane l is on when l < tail."""
    lanes = ir.Constant(ir.VectorType(_I64, 16), list(range(16)))
    undef = ir.Constant(ir.VectorType(_I64, 16), ir.Undefined)
    one = builder.insert_element(undef, tail, ir.Constant(_I32, 0))
    splat = builder.shuffle_vector(one, undef, ir.Constant(_VI, [0] * 16))
    return builder.icmp_signed("<", lanes, splat)


def _masked_load(builder: ir.IRBuilder, base: ir.Value, index: ir.Value, mask: ir.Value) -> Any:
    ptr = builder.bitcast(builder.gep(base, [index]), _VF.as_pointer())
    name = "llvm.masked.load.v16f32.p0"
    fn = _fn(builder, name, _VF, [ptr.type, _I32, mask.type, _VF])
    return builder.call(fn, [ptr, ir.Constant(_I32, 4), mask, ir.Constant(_VF, None)])


def _masked_store(builder: ir.IRBuilder, value: ir.Value, base: ir.Value, index: ir.Value,
                  mask: ir.Value) -> None:  # fmt: skip
    ptr = builder.bitcast(builder.gep(base, [index]), _VF.as_pointer())
    name = "llvm.masked.store.v16f32.p0"
    fn = _fn(builder, name, ir.VoidType(), [_VF, ptr.type, _I32, mask.type])
    builder.call(fn, [value, ptr, ir.Constant(_I32, 4), mask])


def _residual_clamp(builder: ir.IRBuilder, v: list[ir.Value], add_res: Any, lo: ir.Value,
                    hi: ir.Value, flags: ir.Value) -> list[ir.Value]:  # fmt: skip
    """The fused epilogue after the bias, on 16-lane vectors: ``add_res(v)`` if ``flags &
    RES_BEFORE``, the clamp to ``lo``/``hi`` (two selects: NaN stays NaN), ``add_res(v)`` if
    ``flags & RES_AFTER`` (module docstring). Every kernel that stores from registers applies
    the epilogue through this one function, so they agree bit for bit."""

    def has(bit: int) -> ir.Value:
        return builder.icmp_signed("!=", builder.and_(flags, _const(bit)), _const(0))

    v = _when(builder, has(RES_BEFORE), v, add_res)
    lo_s, hi_s = _splat(builder, lo, v[0].type), _splat(builder, hi, v[0].type)
    v = [builder.select(builder.fcmp_ordered("<", x, lo_s), lo_s, x) for x in v]
    v = [builder.select(builder.fcmp_ordered(">", x, hi_s), hi_s, x) for x in v]
    return _when(builder, has(RES_AFTER), v, add_res)


def _tile_f32(nv: int, masked: bool = False, mr: int = MR, segmented: bool = False,
              lanes: int = 16) -> Any:  # fmt: skip
    """The float32 tile intrinsic with ``nv`` 16-lane column vectors (1 to 4) and ``mr`` rows
    (``MR``; fewer for the last rows of an output, so they are not computed in vain).

    ``lanes`` 8 (with ``nv`` 1): one 8-lane vector of columns, the last 8 columns of a panel
    without AVX-512 (``O = 24`` is a 16-column panel and this), where the 16-lane tile would
    compute twice the columns and store them masked (``vmaskmovps``, slow on Zen 2).

    ``masked``: one more argument, ``tail`` (1 to 16): only the first ``tail`` lanes of the
    last column vector are read from ``res`` and stored to ``c`` (AVX-512 masked moves), so a
    panel narrower than the tile (O = 24 in MobileNetV2) is stored in place.

    ``segmented``: two more arguments, ``nseg`` and ``sa``: the k loop runs ``nseg`` times over
    A rows that start ``sa`` elements further each time, B read on contiguously (``nseg * k``
    rows), the accumulators kept in registers throughout -- a direct convolution's kernel rows
    in one call (``sa`` the input's row pitch) instead of one call per kernel row."""

    assert lanes == 16 or (nv == 1 and not masked and not segmented)
    ip, f4 = types.intp, types.float32
    args_t = (ip, ip, ip, ip, ip, ip, ip, ip, ip, ip, f4, f4, ip, ip)

    def typer(typingctx, a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init):  # type: ignore[no-untyped-def]  # noqa: E501
        return types.void(*args_t), codegen

    def typer_masked(typingctx, a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init,
                     tail):  # type: ignore[no-untyped-def]  # fmt: skip
        return types.void(*args_t, ip), codegen

    def typer_segmented(typingctx, a, lda, b, ldb, k, c, ldc, bias, res, ldr, lo, hi, flags, init,
                        nseg, sa):  # type: ignore[no-untyped-def]  # fmt: skip
        return types.void(*args_t, ip, ip), codegen

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        a_i, lda_v, b_i, ldb_v, k_v, c_i, ldc_v, bias_i, res_i, ldr_v, lo_v, hi_v = args[:12]
        fl, init_i = args[12], args[13]
        mask = _lane_mask(builder, args[14]) if masked else None
        fp = _F32.as_pointer()
        a0, b0 = builder.inttoptr(a_i, fp), builder.inttoptr(b_i, fp)
        vt = ir.VectorType(_F32, lanes)
        fma = _fn(builder, f"llvm.fma.v{lanes}f32", vt, [vt, vt, vt])
        rows = [builder.mul(_const(i), lda_v) for i in range(mr)]

        seg = [_const(0), _const(0)]  # (A offset, B row) of the current segment
        ahead = [False]  # whether the loop being emitted prefetches B (flags & B_AHEAD)

        def body(p: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            boff = builder.mul(builder.add(seg[1], p), ldb_v)
            bv = [_vload(builder, b0, builder.add(boff, _const(16 * j)), vt) for j in range(nv)]
            if ahead[0]:
                for j in range(nv):
                    at = builder.add(boff, _const(B_PREFETCH // 4 + 16 * j))
                    _prefetch(builder, builder.gep(b0, [at]), 3)
            ap = builder.add(seg[0], p)
            new = []
            for i in range(mr):
                s = builder.load(builder.gep(a0, [builder.add(rows[i], ap)]), align=4)
                av = _splat(builder, s, vt)
                new.extend(builder.call(fma, [av, bv[j], accs[i * nv + j]]) for j in range(nv))
            return new

        def segment(q: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            seg[0], seg[1] = builder.mul(q, args[15]), builder.mul(q, k_v)
            return _k_loop(builder, k_v, mr * nv, vt, body, accs)

        zero = ir.Constant(vt, None)
        start = [zero] * (mr * nv)
        init0 = builder.inttoptr(init_i, fp)

        def load_init(vals: list[ir.Value]) -> list[ir.Value]:
            return [_vload(builder, init0, _const(i * 16 * NV + 16 * j), vt)
                    for i in range(mr) for j in range(nv)]  # fmt: skip

        start = _when(builder, builder.icmp_signed("!=", init_i, _const(0)), start, load_init)

        def k_loops(vals: list[ir.Value]) -> list[ir.Value]:
            if segmented:
                return _k_loop(builder, args[14], mr * nv, vt, segment, vals)
            return _k_loop(builder, k_v, mr * nv, vt, body, vals)

        if B_PREFETCH:  # two loops, one run: with the prefetch where the caller asks for it
            on = builder.icmp_signed("!=", builder.and_(fl, _const(B_AHEAD)), _const(0))
            ahead[0] = True
            acc = _when(builder, on, start, k_loops)
            ahead[0] = False
            acc = _when(builder, builder.not_(on), acc, k_loops)
        else:
            acc = k_loops(start)
        bias0 = builder.inttoptr(bias_i, fp)
        bvec = [_vload(builder, bias0, _const(16 * j), vt) for j in range(nv)]
        v = [builder.fadd(acc[i * nv + j], bvec[j]) for i in range(mr) for j in range(nv)]
        r0 = builder.inttoptr(res_i, fp)

        def add_res(vals: list[ir.Value]) -> list[ir.Value]:
            out = []
            for i in range(mr):
                base = builder.mul(_const(i), ldr_v)
                for j in range(nv):
                    at = builder.add(base, _const(16 * j))
                    if mask is not None and j == nv - 1:
                        rv = _masked_load(builder, r0, at, mask)
                    else:
                        rv = _vload(builder, r0, at, vt)
                    out.append(builder.fadd(vals[i * nv + j], rv))
            return out

        v = _residual_clamp(builder, v, add_res, lo_v, hi_v, fl)
        c0 = builder.inttoptr(c_i, fp)
        for i in range(mr):
            base = builder.mul(_const(i), ldc_v)
            for j in range(nv):
                at = builder.add(base, _const(16 * j))
                if mask is not None and j == nv - 1:
                    _masked_store(builder, v[i * nv + j], c0, at, mask)
                else:
                    _vstore(builder, v[i * nv + j], c0, at)
        return context.get_dummy_value()

    return intrinsic(typer_masked if masked else typer_segmented if segmented else typer)


tile_f32_1 = _tile_f32(1)
tile_f32_2 = _tile_f32(2)
tile_f32_3 = _tile_f32(3)
tile_f32_4 = _tile_f32(4)
#: the same with the last vector's residual load and store masked to its first ``tail`` lanes
tile_f32_masked_1 = _tile_f32(1, masked=True)
tile_f32_masked_2 = _tile_f32(2, masked=True)
tile_f32_masked_3 = _tile_f32(3, masked=True)
tile_f32_masked_4 = _tile_f32(4, masked=True)
#: MR rows of one 8-lane column vector (the last 8 columns of a panel, without AVX-512)
tile_f32_half = _tile_f32(1, lanes=8)
#: full-width tiles of 1 .. 5 rows (MR is 6 on every ISA), for the last rows of an output
tile_f32_r1, tile_f32_r2, tile_f32_r3, tile_f32_r4, tile_f32_r5 = (
    _tile_f32(NV, mr=r) for r in range(1, 6)
)
#: full-width tiles of 1 .. MR rows over ``nseg`` segments of A (direct convolution kernel rows)
tile_f32_s1, tile_f32_s2, tile_f32_s3, tile_f32_s4, tile_f32_s5, tile_f32_s6 = (
    _tile_f32(NV, mr=r, segmented=True) for r in range(1, MR + 1)
)
#: the same, MR rows of 1 .. 3 column vectors (a panel narrower than the tile: O = 32)
tile_f32_seg_1, tile_f32_seg_2, tile_f32_seg_3 = (
    _tile_f32(nv, segmented=True) for nv in range(1, 4)
)
#: the full-width tile (NV vectors)
tile_f32 = (tile_f32_1, tile_f32_2, tile_f32_3, tile_f32_4)[NV - 1]


@intrinsic
def keep_alive(typingctx, arr):  # type: ignore[no-untyped-def]
    """No code; a use of ``arr`` here. Numba frees an array a kernel allocated right after the
    array's last use in the source: one that is then read and written only through a raw
    address taken earlier (``arr.ctypes.data``, the way every tile and lane intrinsic here takes
    its operands) is freed while still in use, and the allocator hands the block to the next
    ``np.empty`` -- another thread's scratch, or its own bookkeeping (measured on a 2-core AMD
    host, 2026-12-07: the Winograd kernel's two threads got the same buffer, wrong outputs and
    ``double free or corruption``). A kernel that keeps raw addresses of its own scratch calls
    this on each such array after its last raw use."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return context.get_dummy_value()

    return types.void(arr), codegen


@intrinsic
def prefetch_l2(typingctx, addr):  # type: ignore[no-untyped-def]
    """Ask for the cache line at ``addr`` (a raw address) to be brought into L2 (``prefetcht1``):
    a hint, never a fault, so an address past an array's end is harmless."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        _prefetch(builder, builder.inttoptr(args[0], _I8.as_pointer()), 2)
        return context.get_dummy_value()

    return types.void(types.intp), codegen


def _dw_tile(pix: int, nv: int) -> Any:
    """Depthwise tiles: ``count`` runs of ``pix`` consecutive output pixels x ``nv`` channel
    vectors along one output row.

    ``dw_tile(x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res, lo, hi,
    flags, count)`` (strides in elements, pointers at the first tile's first pixel and channel,
    and at its window's first tap)::

        acc[p, c] = sum_{i < rows, j < cols} x[i * dh * xrow + p * xpix + j * dw * opix + c]
                                             * w[i * wrow + j * wtap + c]     (row-major taps)
        out[p * opix + c] = epilogue(acc[p, c] + bias[c])     (residual read at res + p * opix)

    then the next tile starts ``pix * xpix`` further in ``x`` and ``pix * opix`` in ``out`` and
    ``res``. Every tap named is read: a window crossing the border is passed as its part inside
    the input (fewer ``rows``/``cols``, pointers moved to its first tap). ``opix`` is also the
    channel count C of x. Kernel rows are the outer loop and columns the inner one, so there is
    no division per tap (a 64-bit divide costs more than the tap's fused multiply-adds)."""

    def typer(typingctx, x, xrow, xpix, w, wtap, wrow, rows, cols, dh, dw, out, opix, bias, res,
              lo, hi, flags, count):  # type: ignore[no-untyped-def]  # fmt: skip
        ip, f4 = types.intp, types.float32
        sig = types.void(ip, ip, ip, ip, ip, ip, ip, ip, ip, ip, ip, ip, ip, ip, f4, f4, ip, ip)
        return sig, codegen

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        (x_i, xrow, xpix, w_i, wtap, wrow, rows, cols, dh, dw, o_i, opix, b_i, r_i, lo_v, hi_v,
         fl, count) = args  # fmt: skip
        fp = _F32.as_pointer()
        w0, b0 = builder.inttoptr(w_i, fp), builder.inttoptr(b_i, fp)
        fma = _fn(builder, "llvm.fma.v16f32", _VF, [_VF, _VF, _VF])
        bv = [_vload(builder, b0, _const(16 * q), _VF) for q in range(nv)]
        lo_s, hi_s = _splat(builder, lo_v, _VF), _splat(builder, hi_v, _VF)
        x_step = builder.mul(_const(pix), xpix)
        o_step = builder.mul(_const(pix), opix)

        def has(bit: int) -> ir.Value:
            return builder.icmp_signed("!=", builder.and_(fl, _const(bit)), _const(0))

        def one_tile(t: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
            x0 = builder.gep(builder.inttoptr(x_i, fp), [builder.mul(t, x_step)])
            ooff = builder.mul(t, o_step)
            o0 = builder.gep(builder.inttoptr(o_i, fp), [ooff])
            r0 = builder.gep(builder.inttoptr(r_i, fp), [ooff])

            def row(i: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
                xr = builder.mul(builder.mul(i, dh), xrow)
                wr = builder.mul(i, wrow)

                def col(j: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
                    base = builder.add(xr, builder.mul(builder.mul(j, dw), opix))
                    woff = builder.add(wr, builder.mul(j, wtap))
                    wv = [_vload(builder, w0, builder.add(woff, _const(16 * q)), _VF)
                          for q in range(nv)]  # fmt: skip
                    new = []
                    for p in range(pix):
                        pb = builder.add(base, builder.mul(_const(p), xpix))
                        for q in range(nv):
                            xv = _vload(builder, x0, builder.add(pb, _const(16 * q)), _VF)
                            new.append(builder.call(fma, [xv, wv[q], accs[p * nv + q]]))
                    return new

                return _k_loop(builder, cols, pix * nv, _VF, col, accs)

            acc = _k_loop(builder, rows, pix * nv, _VF, row)
            v = [builder.fadd(acc[p * nv + q], bv[q]) for p in range(pix) for q in range(nv)]

            def add_res(vals: list[ir.Value]) -> list[ir.Value]:
                out = []
                for p in range(pix):
                    pb = builder.mul(_const(p), opix)
                    for q in range(nv):
                        rv = _vload(builder, r0, builder.add(pb, _const(16 * q)), _VF)
                        out.append(builder.fadd(vals[p * nv + q], rv))
                return out

            v = _when(builder, has(RES_BEFORE), v, add_res)
            v = [builder.select(builder.fcmp_ordered("<", e, lo_s), lo_s, e) for e in v]
            v = [builder.select(builder.fcmp_ordered(">", e, hi_s), hi_s, e) for e in v]
            v = _when(builder, has(RES_AFTER), v, add_res)
            for p in range(pix):
                pb = builder.mul(_const(p), opix)
                for q in range(nv):
                    _vstore(builder, v[p * nv + q], o0, builder.add(pb, _const(16 * q)))
            return []

        _k_loop(builder, count, 0, _VF, one_tile)
        return context.get_dummy_value()

    return intrinsic(typer)


#: Output pixels per depthwise tile.
DW_PIX = 6
dw_tile_6_1, dw_tile_6_2, dw_tile_6_3, dw_tile_6_4 = (_dw_tile(DW_PIX, v) for v in (1, 2, 3, 4))
dw_tile_1_1, dw_tile_1_2, dw_tile_1_3, dw_tile_1_4 = (_dw_tile(1, v) for v in (1, 2, 3, 4))
