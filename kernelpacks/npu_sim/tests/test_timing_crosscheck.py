"""Every ResNet-18 layer (224x224, batch 1) against an independent first-order model.

The model here is written from the array's definition, not from the pack's code: a
weight-stationary R x C array runs folds of R x C weights; without shadow weight registers a
fold costs 2R + C + M - 2 (SCALE-Sim), with them the folds of one instruction chain at
max(M, C + 1) after one preload R and before one fill/drain R + C - 2. DRAM moves the bytes the
schedule loads and stores at the channel's rate. A layer then takes about
max(array, DRAM) plus its first load and last store (layers do not overlap), and at most their
sum; its bound is whichever of the two is larger. The simulator must agree on the array time
within 1 %, on the total within 10 % where one side dominates (1.5x), and on the bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from cuvil_kernels_npu_sim import (
    NPU_V3,
    config_from_dict,
    layer_metrics,
    lower_qadd,
    lower_qavg_pool2d,
    lower_qconv2d,
    lower_qlinear,
    lower_qmax_pool2d,
    simulate,
)

CONVS = [("stem", 3, 64, 224, 7, 2, 3)]
_cin, _size = 64, 56
for _stage, _cout in enumerate((64, 128, 256, 512), 1):
    for _block in range(2):
        _stride = 2 if _stage > 1 and _block == 0 else 1
        CONVS.append((f"layer{_stage}.{_block}.conv1", _cin, _cout, _size, 3, _stride, 1))
        _out = _size // _stride
        CONVS.append((f"layer{_stage}.{_block}.conv2", _cout, _cout, _out, 3, 1, 1))
        if _stride == 2:
            CONVS.append((f"layer{_stage}.{_block}.downsample", _cin, _cout, _size, 1, 2, 0))
        _cin, _size = _cout, _out


def first_order_array(g, t, cfg, chained: bool) -> int:  # noqa: ANN001  (pack records)
    """Array cycles of a conv's schedule: one instruction per (spatial, co, ci) step."""
    r, c = cfg.array_rows, cfg.array_cols
    total = 0
    for oh0 in range(0, g.oh, t.oh_t):
        for ow0 in range(0, g.ow, t.ow_t):
            m = min(t.oh_t, g.oh - oh0) * min(t.ow_t, g.ow - ow0)
            for co0 in range(0, g.cout, t.co_t):
                co = min(t.co_t, g.cout - co0)
                for ci0 in range(0, g.cin, t.ci_t):
                    ci = min(t.ci_t, g.cin - ci0)
                    folds = math.ceil(g.kh * g.kw * ci / r) * math.ceil(co / c)
                    if chained:
                        total += r + (folds - 1) * max(m, c + 1) + m + r + c - 2
                    else:
                        total += folds * (2 * r + c + m - 2)
    return total


def _check(res, array: float, first_bytes: float, last_bytes: float) -> None:  # noqa: ANN001
    cfg = res.program.config
    bw, lat = cfg.dram_bytes_per_cycle, cfg.dram_latency
    m = layer_metrics(res)
    dram = res.stats.dram_charged_bytes / bw
    assert res.stats.dram_bytes >= res.program.compulsory_dram_bytes * 0.999
    edges = (first_bytes + last_bytes) / bw + 2 * lat
    # double buffering overlaps the two, so the layer takes between max and sum of them; when
    # one side clearly dominates the first-order figure is max plus the edges
    assert 0.99 * max(array, dram) <= m["cycles"] <= array + dram + edges, res.program.name
    if max(array, dram) >= 1.5 * min(array, dram):
        # compute bound: the first load and the last store stick out; memory bound: the
        # transfers already include them, and only the latency is exposed
        predicted = array + edges if array > dram else dram + 2 * lat
        assert m["cycles"] == pytest.approx(predicted, rel=0.10), (res.program.name, predicted)
    want = "memory" if dram > array else "compute"
    if abs(dram - array) > 0.05 * max(dram, array):  # a near tie may go either way
        assert m["bound"] in ((want, "fill/drain") if want == "compute" else (want,))


@pytest.mark.parametrize("double_buffer", [True, False])
def test_resnet18_convs_match_first_order_model(double_buffer: bool) -> None:
    cfg = config_from_dict({"weight_double_buffer": double_buffer})
    rng = np.random.default_rng(0)
    for name, cin, cout, size, k, s, p in CONVS:
        x = rng.integers(-128, 128, (1, cin, size, size), dtype=np.int8)
        w = rng.integers(-127, 128, (cout, cin, k, k), dtype=np.int8)
        prog = lower_qconv2d(
            x.shape, w, None, 1 << 30, 45, x_zp=0, out_zp=0, stride=s, padding=p,
            target=cfg, name=name,
        )  # fmt: skip
        res = simulate(prog, {"x": x}, check_hazards=False)
        g, t = prog.info["geometry"], prog.info["tiling"]
        array = first_order_array(g, t, cfg, double_buffer)
        sim_array = res.stats.stream_cycles + res.stats.fill_cycles
        assert sim_array == pytest.approx(array, rel=0.01), name
        first = g.in_rows(t.oh_t) * g.in_cols(t.ow_t) * t.ci_t + k * k * t.ci_t * t.co_t
        _check(res, array, first, t.oh_t * t.ow_t * t.co_t)
        if not double_buffer:
            # every fold pays its own fill/drain: it dominates only the short-stream layers
            assert layer_metrics(res)["fill_drain_cycles"] > 0


def test_resnet18_other_layers_match_first_order_model() -> None:
    """max pool, the residual adds, global average pool and the classifier."""
    cfg, rng = NPU_V3, np.random.default_rng(1)
    lanes = cfg.alu_lanes
    x = rng.integers(-128, 128, (1, 64, 112, 112), dtype=np.int8)
    res = simulate(lower_qmax_pool2d(x.shape, 3, 2, 1), {"x": x}, check_hazards=False)
    g = res.program.info["geometry"]
    alu = 9 * 64 * 56 * 56 / lanes  # one MOV/MAX per tap and output element
    tile = res.program.info["oh_t"]
    _check(res, alu, g.in_rows(tile) * g.in_cols(g.ow) * 64, tile * g.ow * 64)
    for c, hw in ((64, 56), (128, 28), (256, 14), (512, 7)):
        a = rng.integers(-128, 128, (1, c, hw, hw), dtype=np.int8)
        b = rng.integers(-128, 128, (1, c, hw, hw), dtype=np.int8)
        prog = lower_qadd(a.shape, a_zp=0, b_zp=0, m_a=1 << 29, m_b=1 << 29, shift=30, out_zp=0)
        res = simulate(prog, {"a": a, "b": b}, check_hazards=False)
        piece = min(a.size, 256 * (cfg.acc_words // (6 * 256)))
        _check(res, 2 * a.size / lanes, 2 * piece, piece)  # MOV + REQADD per element
    x = rng.integers(-128, 128, (1, 512, 7, 7), dtype=np.int8)
    prog = lower_qavg_pool2d(x.shape, 7, 7, 0, x_zp=0, out_zp=0, multipliers={49: (1 << 30, 36)})
    res = simulate(prog, {"x": x}, check_hazards=False)
    _check(res, 51 * 512 / lanes, x.size, 512)
    x = rng.integers(-128, 128, (1, 512), dtype=np.int8)
    w = rng.integers(-127, 128, (1000, 512), dtype=np.int8)
    prog = lower_qlinear(x.shape, w, None, 1 << 30, 40, x_zp=0, out_zp=0)
    res = simulate(prog, {"x": x}, check_hazards=False)
    g, t = prog.info["geometry"], prog.info["tiling"]
    array = first_order_array(g, t, cfg, True)
    assert res.stats.stream_cycles + res.stats.fill_cycles == pytest.approx(array, rel=0.01)
    _check(res, array, 512 + 512 * t.co_t, t.co_t)
    # M = 1: each of the 512 folds waits C + 1 cycles for its weights, about as long as the
    # 512 KB of weights take over DRAM; never "compute"
    assert layer_metrics(res)["bound"] in ("fill/drain", "memory")
