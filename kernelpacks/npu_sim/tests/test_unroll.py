"""`loop_unroll_factor`: the GEMM/DWCONV micro-op loops are unrolled into the micro-op body,
which changes the emitted program but never the results (lowerings, plugin, and the product
brief's `cuvil.torch.compile` call)."""

from __future__ import annotations

import numpy as np
import pytest
import spec_reference as ref
from cuvil_kernels_npu_sim import config_from_dict, lower_qconv2d, simulate
from cuvil_kernels_npu_sim.isa import Op
from cuvil_kernels_npu_sim.program import Program
from cuvil_kernels_npu_sim.unroll import ArrayLoop, unroll_loop
from qgraphs import conv_flatten_linear

from cuvil_ref.errors import TargetError
from cuvil_ref.interpreter import interpret
from cuvil_ref.plugin.host import PluginHost

ARRAY_OPS = (Op.GEMM, Op.DWCONV)


def _points(loops: list[ArrayLoop]) -> list[tuple[int, int, int]]:
    """Every (acc, inp, wgt) address triple the loops visit, sorted (with repeats)."""
    out = []
    for lp in loops:
        for i0 in range(lp.e0):
            for i1 in range(lp.e1):
                for a, i, w in lp.uops:
                    out.append((a + i0 * lp.as0 + i1 * lp.as1, i + i0 * lp.is0 + i1 * lp.is1, w))
    return sorted(out)


@pytest.mark.parametrize("e0,e1", [(7, 3), (4, 5), (1, 6), (1, 1), (16, 2)])
@pytest.mark.parametrize("factor", [1, 2, 3, 4, 8, 16])
def test_unroll_visits_the_same_points(e0: int, e1: int, factor: int) -> None:
    loop = ArrayLoop(e0, e1, 100, 3, 40, 8, ((0, 0, 0), (0, 1000, 50)))
    parts = unroll_loop(loop, factor)
    assert _points(parts) == _points([loop])
    f = min(factor, e0 if e0 > 1 else e1)
    assert len(parts[0].uops) == f * len(loop.uops)
    assert len(parts) == 1 + (((e0 if e0 > 1 else e1) % f) != 0)


def _conv(factor: int, rng: np.random.Generator, **conv: int) -> tuple[Program, np.ndarray]:
    cin, cout = conv.pop("cin"), conv.pop("cout")
    groups = conv.get("groups", 1)
    x = rng.integers(-128, 128, (1, cin, 9, 9), dtype=np.int8)
    w = rng.integers(-127, 128, (cout, cin // groups, 3, 3), dtype=np.int8)
    bias = rng.integers(-3000, 3000, cout).astype(np.int32)
    pairs = [ref.quantize_multiplier(0.004 + 0.001 * i) for i in range(cout)]
    mult, shift = [m for m, _ in pairs], [s for _, s in pairs]
    cfg = config_from_dict({"loop_unroll_factor": factor})
    prog = lower_qconv2d(x.shape, w, bias, mult, shift, x_zp=-3, out_zp=2, target=cfg, **conv)
    want = ref.qconv2d(
        x, w, bias, mult, shift, -3, 2,
        stride=(conv.get("stride", 1),) * 2,
        padding=(conv.get("padding", 0),) * 2,
        dilation=(conv.get("dilation", 1),) * 2,
        groups=groups,
    )  # fmt: skip
    got = simulate(prog, {"x": x}).outputs["y"]
    np.testing.assert_array_equal(got, want)
    return prog, got


def _counts(prog: Program) -> tuple[int, int, int]:
    """(array instructions, micro-op table entries, micro-op executions)."""
    array = [i for i in prog.insns if i.op in ARRAY_OPS]
    runs = sum(i["nuop"] * i["e0"] * i["e1"] for i in array)
    return len(array), prog.regions["uops"].shape[0], runs


@pytest.mark.parametrize(
    "conv",
    [
        {"cin": 8, "cout": 16, "padding": 1},
        {"cin": 6, "cout": 5, "padding": 2, "dilation": 2},
        {"cin": 40, "cout": 40, "padding": 1, "groups": 40},  # DWCONV, line buffer
        {"cin": 8, "cout": 8, "padding": 1, "stride": 2, "groups": 8},
    ],
)
def test_conv_program_changes_results_do_not(conv: dict[str, int]) -> None:
    base, y1 = _conv(1, np.random.default_rng(3), **dict(conv))
    n1, t1, r1 = _counts(base)
    tiling = base.info["tiling"]
    extent = tiling.oh_t if tiling.oh_t > 1 else tiling.ow_t
    base_body = max(i["nuop"] for i in base.insns if i.op in ARRAY_OPS)
    for factor in (2, 4, 8):
        prog, y = _conv(factor, np.random.default_rng(3), **dict(conv))
        np.testing.assert_array_equal(y, y1)
        n, t, r = _counts(prog)
        assert r == r1  # the same micro-op executions, fewer hardware loop iterations
        assert n >= n1 and t > t1
        body = max(i["nuop"] for i in prog.insns if i.op in ARRAY_OPS)
        assert body == min(factor, extent) * base_body
    four, _ = _conv(4, np.random.default_rng(3), **dict(conv))
    assert _counts(four)[:2] != _counts(base)[:2]
    assert base.binary() != four.binary()


def test_unrolled_cycles_never_drop(rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, (1, 8, 9, 9), dtype=np.int8)
    prog1, _ = _conv(1, np.random.default_rng(5), cin=8, cout=16, padding=1)
    prog4, _ = _conv(4, np.random.default_rng(5), cin=8, cout=16, padding=1)
    s1, s4 = simulate(prog1, {"x": x}).stats, simulate(prog4, {"x": x}).stats
    # 9 output rows of 9 pixels: 4 rows per micro-op is 36 >= 32 array rows, 1 row is 9 < 32
    assert s4.cycles > s1.cycles and s4.macs == s1.macs


def _lower(host: PluginHost, options: dict[str, object]):  # noqa: ANN202
    spec = host.resolve({"target": "npu-v3", "options": options})
    graph = conv_flatten_linear(np.random.default_rng(11))
    for node in graph.nodes:
        answer = host.call("cuvil_supports_node", spec, target=spec, node=node, graph=graph)
        assert answer.supported, answer.reason
    exe = host.call("cuvil_lower_partition", spec, target=spec, graph=graph, options=spec.options)
    return graph, exe


def test_plugin_factors_are_bit_exact(npu_host: PluginHost) -> None:
    x = np.random.default_rng(12).integers(-128, 128, (1, 4, 6, 6), dtype=np.int8)
    conv = {}
    for factor in (1, 2, 4, 8):
        graph, exe = _lower(npu_host, {"loop_unroll_factor": factor})
        np.testing.assert_array_equal(exe.run([x])[0], interpret(graph, [x])[0])
        conv[factor] = exe.layers[0].program
        assert conv[factor].config.loop_unroll_factor == factor
    assert _counts(conv[4])[:2] != _counts(conv[1])[:2]
    assert npu_host.resolve("npu-v3").options["loop_unroll_factor"] == 1


@pytest.mark.parametrize("value", [0, 17, "4", 2.0, True, -1])
def test_invalid_factor_names_option_and_range(npu_host: PluginHost, value: object) -> None:
    with pytest.raises(TargetError, match=r"'loop_unroll_factor' must be an int in \[1, 16\]"):
        npu_host.resolve({"target": "npu-v3", "options": {"loop_unroll_factor": value}})
    with pytest.raises(TargetError, match="loop_unroll_factor"):
        npu_host.resolve({"target": "npu-v2", "options": {"loop_unroll_factor": value}})


def test_config_rejects_bad_factor() -> None:
    with pytest.raises(ValueError, match=r"loop_unroll_factor must be an int in \[1, 16\]"):
        config_from_dict({"loop_unroll_factor": 17})


def test_product_brief_call_is_bit_exact(npu_host: PluginHost) -> None:
    torch = pytest.importorskip("torch")
    import cuvil_ref
    from cuvil_ref.zoo import get_model

    model, shape = get_model("digits_cnn")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=gen)
    batches = [torch.randn(*shape, generator=gen) for _ in range(3)]
    cm = cuvil_ref.torch.compile(
        model,
        target="npu-v3",
        quantize="int8",
        enable_fusion=True,
        example_inputs=(x,),
        calibration_data=batches,
        opt_level=3,
        enable_layout_opt=True,
        options={"loop_unroll_factor": 4},
    )
    got = cm(x)
    (want,) = cuvil_ref.interpret(cm.module, [x])
    np.testing.assert_array_equal(got.detach().numpy(), np.asarray(want))
    lowered = [lp for lp in cm.program.lowered if lp.partition.target == "npu-v3"]
    (layer, *_) = [lay for lay in lowered[0].executable.layers if lay.op == "qconv2d"]
    assert layer.program.config.loop_unroll_factor == 4
