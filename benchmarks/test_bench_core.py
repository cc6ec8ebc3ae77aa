"""Core benchmarks: capture, compile, interpret, memory plan (issues 'core' and 'passes')."""

from __future__ import annotations

import numpy as np
import pytest

import cuvil_ref as cuvil
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.lowering.compiler import compile_module
from cuvil_ref.zoo import get_model


def _model(name: str, torch_mod, shape=None):
    model, default = get_model(name)
    x = torch_mod.randn(*(shape or default), generator=torch_mod.Generator().manual_seed(0))
    return model, x


@pytest.mark.benchmark(group="capture-resnet50")
def test_capture_resnet50(benchmark, torch_mod) -> None:
    model, x = _model("resnet50", torch_mod)
    mod = benchmark.pedantic(
        lambda: torch_to_cuvilir(model, example_inputs=(x,)),
        rounds=3,
        iterations=1,
        warmup_rounds=1,
    )
    benchmark.extra_info["target_s"] = 1.5
    assert len(mod.graph.nodes) > 100


@pytest.mark.benchmark(group="compile-resnet50-O3")
def test_compile_resnet50_opt3(benchmark, torch_mod) -> None:
    model, x = _model("resnet50", torch_mod)

    def run():
        return compile_module(
            torch_to_cuvilir(model, example_inputs=(x,)), "ref", opt_level=3, cache=False
        )

    prog = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    mem = prog.report()["memory"]
    benchmark.extra_info.update(
        {
            "target_s": 1.5,
            "planned_peak_bytes": mem["planned_peak_bytes"],
            "naive_sum_bytes": mem["naive_sum_bytes"],
        }
    )


@pytest.fixture(scope="module")
def resnet18(torch_mod):
    model, x = _model("resnet18", torch_mod)
    return model, x, x.numpy()


@pytest.mark.benchmark(group="resnet18-b1-224")
def test_resnet18_torch_eager(benchmark, resnet18, torch_mod) -> None:
    model, x, _ = resnet18
    benchmark.pedantic(lambda: model(x), rounds=20, iterations=1, warmup_rounds=3)


@pytest.mark.benchmark(group="resnet18-b1-224")
def test_resnet18_interpret_captured(benchmark, resnet18) -> None:
    model, x, xn = resnet18
    mod = torch_to_cuvilir(model, example_inputs=(x,))
    out = benchmark.pedantic(
        lambda: cuvil.interpret(mod, [xn]), rounds=10, iterations=1, warmup_rounds=2
    )
    ref = model(x).numpy()
    assert np.max(np.abs(out[0] - ref)) <= 1e-4 * max(1.0, float(np.max(np.abs(ref))))


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.benchmark(group="resnet18-b1-224")
def test_resnet18_ref_target(benchmark, resnet18, opt_level) -> None:
    model, x, xn = resnet18
    prog = compile_module(
        torch_to_cuvilir(model, example_inputs=(x,)), "ref", opt_level=opt_level, cache=False
    )
    benchmark.pedantic(lambda: prog.run([xn]), rounds=10, iterations=1, warmup_rounds=2)


@pytest.mark.benchmark(group="resnet18-int8-vs-fp32-interp")
def test_resnet18_interpret_fp32(benchmark, resnet18) -> None:
    model, x, xn = resnet18
    prog = compile_module(
        torch_to_cuvilir(model, example_inputs=(x,)), "ref", opt_level=2, cache=False
    )
    benchmark.pedantic(
        lambda: cuvil.interpret(prog.module, [xn]), rounds=5, iterations=1, warmup_rounds=1
    )


@pytest.mark.benchmark(group="resnet18-int8-vs-fp32-interp")
def test_resnet18_interpret_int8(benchmark, resnet18, torch_mod) -> None:
    model, x, xn = resnet18
    calib = [
        (torch_mod.randn(1, 3, 224, 224, generator=torch_mod.Generator().manual_seed(i)).numpy(),)
        for i in range(2)
    ]
    prog = compile_module(
        torch_to_cuvilir(model, example_inputs=(x,)),
        "ref",
        quantize="int8",
        calibration_data=calib,
        opt_level=2,
        cache=False,
    )
    benchmark.pedantic(
        lambda: cuvil.interpret(prog.module, [xn]), rounds=5, iterations=1, warmup_rounds=1
    )
