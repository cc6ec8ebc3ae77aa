"""Unrolling of the GEMM/DWCONV micro-op loops (the `loop_unroll_factor` lowering option).

An array instruction runs its micro-op body (`uop`, `nuop`) for every point of its hardware loop
nest e0 x e1 (output rows x output columns), stepping INP by (is0, is1) and ACC by (as0, as1).
Unrolling by f copies the body f times, copy i shifted by i iterations of the outer loop with
extent > 1 (e0, or e1 when e0 == 1): the instruction then runs e // f hardware iterations with
f-times strides, and the e % f leftover iterations run as one more instruction with the plain
body. Each micro-op still computes the same output pixels from the same inputs, so results are
bit-identical; what changes is the program: f times the micro-op table entries (bounded by
`uop_entries`), fewer hardware loop iterations, and smaller per-micro-op streams. On this
weight-stationary array every micro-op reloads its weights and streams only its own rows, so the
timing model charges unrolling honestly: a chained fold takes max(M, array_cols + 1) cycles
(GEMM) and a DWCONV micro-op re-fills its line buffer, hence cycles never go down with f > 1 and
go up once M per micro-op drops below the array height.
"""

from __future__ import annotations

from dataclasses import dataclass

UNROLL_MAX = 16

Uop = tuple[int, int, int]  # (acc, inp, wgt)


@dataclass(frozen=True)
class ArrayLoop:
    """The loop nest and micro-op body of one GEMM/DWCONV instruction."""

    e0: int
    e1: int
    is0: int
    is1: int
    as0: int
    as1: int
    uops: tuple[Uop, ...]


def _shift(uops: tuple[Uop, ...], acc: int, inp: int) -> tuple[Uop, ...]:
    return tuple((a + acc, i + inp, w) for a, i, w in uops)


def unroll_loop(loop: ArrayLoop, factor: int) -> list[ArrayLoop]:
    """`loop` with its outer loop (e0, or e1 when e0 == 1) unrolled `factor` times: one or two
    instructions covering exactly the same iterations (the second runs the e % factor leftover)."""
    if not 1 <= factor <= UNROLL_MAX:
        raise ValueError(f"loop_unroll_factor must be in [1, {UNROLL_MAX}], got {factor}")
    axis0 = loop.e0 > 1
    extent = loop.e0 if axis0 else loop.e1
    istep, astep = (loop.is0, loop.as0) if axis0 else (loop.is1, loop.as1)
    f = min(factor, extent)
    if f == 1:
        return [loop]
    main, rest = divmod(extent, f)
    body = tuple(u for i in range(f) for u in _shift(loop.uops, i * astep, i * istep))
    # a single hardware iteration keeps the original strides (the field value is then unused)
    mi, ma = (istep * f, astep * f) if main > 1 else (istep, astep)
    if axis0:
        out = [ArrayLoop(main, loop.e1, mi, loop.is1, ma, loop.as1, body)]
    else:
        out = [ArrayLoop(loop.e0, main, loop.is0, mi, loop.as0, ma, body)]
    if rest:
        tail = _shift(loop.uops, main * f * astep, main * f * istep)
        if axis0:
            out.append(ArrayLoop(rest, loop.e1, istep, loop.is1, astep, loop.as1, tail))
        else:
            out.append(ArrayLoop(loop.e0, rest, loop.is0, istep, loop.as0, astep, tail))
    return out
