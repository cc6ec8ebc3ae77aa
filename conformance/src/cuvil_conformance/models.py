"""Model cases: whole zoo models compiled for the target and compared with the interpreter.

Float targets compile the fp32 model; targets that run only int8 graphs (their preferences say
``requires_quantize="int8"``) compile it with ``quantize="int8"`` and must match bit for bit.
Shapes are small so the suite stays fast; big models belong in benchmarks.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from cuvil_conformance.runner import CaseResult
from cuvil_conformance.tolerance import Metrics, Rule, compare
from cuvil_ref.interpreter import interpret
from cuvil_ref.plugin.host import PluginHost
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import TargetPreferences

# (zoo name, input shape) — small inputs; the zoo's default shapes are for benchmarks.
MODELS: list[tuple[str, tuple[int, ...]]] = [
    ("mlp", (2, 784)),
    ("digits_cnn", (2, 1, 8, 8)),
    ("resnet18", (1, 3, 32, 32)),
    ("mobilenet_v2", (1, 3, 32, 32)),
    ("transformer_block", (1, 8, 64)),  # the zoo block is 64 wide
]
QUICK = {"mlp", "digits_cnn"}


@dataclass(frozen=True)
class ModelCase:
    name: str
    shape: tuple[int, ...]

    @property
    def id(self) -> str:
        return f"model:{self.name}/" + "x".join(str(d) for d in self.shape)

    @property
    def op(self) -> str:
        return f"model:{self.name}"

    def run(self, spec: TargetSpec, host: PluginHost) -> CaseResult:
        t0 = time.perf_counter()
        result = CaseResult(self.id, self.op, "f32", "error")
        try:
            import torch

            from cuvil_ref.frontend import torch_to_cuvilir
            from cuvil_ref.lowering.compiler import compile_module
            from cuvil_ref.zoo import get_model

            model, _ = get_model(self.name)
            gen = torch.Generator().manual_seed(0)
            x = torch.randn(*self.shape, generator=gen)
            module = torch_to_cuvilir(model, example_inputs=(x,))
            prefs = host.call("cuvil_preferences", spec, target=spec) or TargetPreferences()
            quantize = prefs.requires_quantize
            calib = [(torch.randn(*self.shape, generator=gen),) for _ in range(2)] + [(x,)]
            program = compile_module(
                module,
                spec,
                quantize=quantize,
                calibration_data=[tuple(t.numpy() for t in b) for b in calib] if quantize else None,
            )
            arr = x.numpy()
            got = program.run([arr])
            want = interpret(program.module, [arr])
        except Exception as exc:
            result.reason = f"{type(exc).__name__}: {exc}"
            result.seconds = time.perf_counter() - t0
            return result
        on_target = sum(
            len(p.graph.nodes) for p in program.plan.partitions if p.target == spec.name
        )
        total = sum(len(p.graph.nodes) for p in program.plan.partitions)
        result.seconds = time.perf_counter() - t0
        if spec.name != "ref" and on_target == 0:
            result.status = "unsupported"
            result.reason = "no node of the model ran on the target (everything fell back to ref)"
            return result
        rule = Rule("exact") if quantize else Rule("reduction", 1)
        k = 4096  # model-level accumulation length bound for float targets
        reasons, metrics = [], Metrics()
        for i, (g, w) in enumerate(zip(got, want)):
            c = compare(np.asarray(g), np.asarray(w), rule, k)
            metrics = metrics.worst(c.metrics)
            result.metrics = metrics
            if not c.ok:
                reasons.append(f"output {i}: {c.reason}")
        result.status = "failed" if reasons else "passed"
        result.reason = "; ".join(reasons) or f"{on_target}/{total} nodes on {spec.name}"
        result.bound = rule.describe()
        return result


def model_cases(quick: bool = False) -> Iterator[ModelCase]:
    for name, shape in MODELS:
        if quick and name not in QUICK:
            continue
        yield ModelCase(name, shape)
