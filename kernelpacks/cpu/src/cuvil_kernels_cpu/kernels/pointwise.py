"""float32 add, sub, mul and div over flat arrays, in chunks shared among the team's threads.

numpy's ufuncs run on one thread; with two threads a transformer's elementwise steps (the
attention scale over ``[heads, seq, seq]`` scores, residual adds) then leave the other core
idle. The same IEEE float32 operations here give bit-identical results (no fastmath: NaN,
infinities and signed zeros behave as in numpy). ``b`` is as large as ``a`` or one element (a
scalar operand); ``out`` may be ``a`` itself.
"""

from __future__ import annotations

from cuvil_kernels_cpu.kernels.atomics import grab
from cuvil_kernels_cpu.kernels.isa import kernel

ADD, SUB, MUL, DIV = 0, 1, 2, 3
CODES = {"add": ADD, "sub": SUB, "mul": MUL, "div": DIV}
#: Elements per item (64 KiB of float32).
CHUNK = 16384


@kernel
def binary_f32(a, b, out, op, work):  # type: ignore[no-untyped-def]
    """out = a (op) b, flat; ``op`` one of ADD, SUB, MUL, DIV."""
    n = out.size
    n_items = (n + CHUNK - 1) // CHUNK
    scalar = b.size == 1
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        lo = item * CHUNK
        m = min(n, lo + CHUNK) - lo
        x = a[lo : lo + m]
        o = out[lo : lo + m]
        if scalar:
            s = b[0]
            if op == ADD:
                for i in range(m):
                    o[i] = x[i] + s
            elif op == SUB:
                for i in range(m):
                    o[i] = x[i] - s
            elif op == MUL:
                for i in range(m):
                    o[i] = x[i] * s
            else:
                for i in range(m):
                    o[i] = x[i] / s
        else:
            y = b[lo : lo + m]
            if op == ADD:
                for i in range(m):
                    o[i] = x[i] + y[i]
            elif op == SUB:
                for i in range(m):
                    o[i] = x[i] - y[i]
            elif op == MUL:
                for i in range(m):
                    o[i] = x[i] * y[i]
            else:
                for i in range(m):
                    o[i] = x[i] / y[i]


@kernel
def where_f32(cond, a, b, out, work):  # type: ignore[no-untyped-def]
    """out = a if cond else b, flat; ``cond`` repeats with period ``cond.size`` (broadcast over
    leading axes, e.g. an attention mask ``[1, 1, S, S]`` over ``[1, heads, S, S]`` scores);
    ``a`` and ``b`` are as large as ``out`` or one element."""
    n = out.size
    period = cond.size
    n_items = (n + CHUNK - 1) // CHUNK
    sa = a.size == 1
    sb = b.size == 1
    while True:
        item = grab(work, n_items)
        if item >= n_items:
            break
        i = item * CHUNK
        hi = min(n, i + CHUNK)
        j = i % period
        while i < hi:
            # one run of the condition without wrapping: the inner loops vectorize
            m = min(hi - i, period - j)
            c = cond[j : j + m]
            o = out[i : i + m]
            if sa and sb:
                x, y = a[0], b[0]
                for t in range(m):
                    o[t] = x if c[t] else y
            elif sb:
                av, y = a[i : i + m], b[0]
                for t in range(m):
                    o[t] = av[t] if c[t] else y
            elif sa:
                x, bv = a[0], b[i : i + m]
                for t in range(m):
                    o[t] = x if c[t] else bv[t]
            else:
                av, bv = a[i : i + m], b[i : i + m]
                for t in range(m):
                    o[t] = av[t] if c[t] else bv[t]
            i += m
            j = 0
