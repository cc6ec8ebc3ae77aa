"""The target-independent compile pipeline for an IR module.

``compile_module``: quantize (optional) -> optimize (passes by opt_level and target preferences)
-> partition by target capability -> plan memory per partition -> lower each partition through
its pack (control flow the target does not claim: its regions, each compiled the same way).
``cuvil_ref.torch.compile`` captures a torch model and calls this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cuvil_ref import cache as cache_mod
from cuvil_ref.errors import TargetError
from cuvil_ref.gc_pause import without_gc
from cuvil_ref.ir.graph import Module
from cuvil_ref.lowering.partition import HOST, REF, PartitionPlan, partition_graph
from cuvil_ref.lowering.program import CompiledProgram, LoweredPartition
from cuvil_ref.passes.memory_plan import memory_report, plan_memory
from cuvil_ref.plugin.host import PluginHost, get_host
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import Executable, TargetPreferences

QUANTIZE_MODES = (None, "int8", "fp16", "bf16", "mixed")


@without_gc
def compile_module(
    module: Module,
    target: str | Mapping[str, Any] | TargetSpec = "ref",
    *,
    quantize: str | None = None,
    opt_level: int = 2,
    enable_fusion: bool = True,
    enable_layout_opt: bool = True,
    options: Mapping[str, Any] | None = None,
    calibration_data: Iterable[Any] | None = None,
    fallback: str = "allow",
    quant_options: Mapping[str, Any] | None = None,
    cache: bool | None = None,
) -> CompiledProgram:
    """Compile ``module`` for ``target``; see ``cuvil_ref.torch.compile`` for the options."""
    host = get_host()
    spec = host.resolve(merge_options(target, options))
    avail = host.availability(spec)
    if not avail.available:
        raise TargetError(f"target '{spec.name}' is not available on this machine: {avail.reason}")
    if quantize not in QUANTIZE_MODES:
        raise TargetError(f"quantize must be one of {list(QUANTIZE_MODES)}, got {quantize!r}")
    if not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise TargetError(f"opt_level must be an int in 0..3, got {opt_level!r}")
    prefs = host.call("cuvil_preferences", spec, target=spec) or TargetPreferences()
    already = module.metadata.get("quantization")
    if quantize is not None and already is not None:
        raise TargetError(
            f"the module is already quantized ({already}); compile it with quantize=None"
        )
    if prefs.requires_quantize and prefs.requires_quantize not in (quantize, already):
        raise TargetError(
            f"target '{spec.name}' runs only {prefs.requires_quantize} graphs; pass "
            f"quantize='{prefs.requires_quantize}' (with calibration_data=...)"
        )
    report: dict[str, Any] = {"opt_level": opt_level, "quantize": quantize}
    use_cache = cache_mod.cache_enabled(cache) and (
        quantize is None or calibration_data is not None
    )
    key = None
    hit = None
    if use_cache:
        from cuvil_ref import __version__
        from cuvil_ref.plugin.hookspecs import PLUGIN_API_VERSION

        key = cache_mod.compile_key(
            module,
            {
                "target": spec.to_json(),
                "quantize": quantize,
                "opt_level": opt_level,
                "fusion": enable_fusion,
                "layout": enable_layout_opt,
                "prefs": repr(prefs),
                "quant_options": dict(quant_options or {}),
                "calibration": _calibration_digest(calibration_data) if quantize else None,
                "versions": [__version__, PLUGIN_API_VERSION, host.pack_of(spec.name).version],
            },
        )
        hit = cache_mod.lookup(key)
    if hit is not None:
        module, cached = hit
        report.update({k: cached[k] for k in ("quantization", "passes") if k in cached})
    else:
        module, opt_report = _optimize(
            module,
            spec,
            prefs,
            quantize,
            opt_level,
            enable_fusion,
            enable_layout_opt,
            calibration_data,
            quant_options,
        )
        report.update(opt_report)
        if key is not None:
            cache_mod.store(key, module, opt_report)
    report["cache"] = {
        "enabled": use_cache,
        "key": key,
        "hit": hit is not None,
        **cache_mod.stats(),
    }

    plan = partition_graph(module.graph, spec, host, fallback=fallback)
    lower_options = dict(spec.options)
    lower_options["opt_level"] = opt_level
    lowered = lower_partitions(plan, spec, host, lower_options, fallback)
    report["memory"] = memory_report([lp.memory for lp in lowered])
    return CompiledProgram(module, spec, plan, lowered, report)


def lower_partitions(
    plan: PartitionPlan,
    spec: TargetSpec,
    host: PluginHost,
    options: Mapping[str, Any],
    fallback: str,
) -> list[LoweredPartition]:
    """Plan memory for each partition and lower it: through its pack, or, for control flow the
    target does not claim (``host``), by compiling the regions (``lowering/control_flow.py``)."""
    lowered = []
    for part in plan.partitions:
        # Memory is planned per partition, in the order the partition runs its nodes; the pack
        # uses that plan as given.
        memory = plan_memory(part.graph)
        if part.target == HOST:
            from cuvil_ref.lowering.control_flow import lower_control_flow

            exe: Executable | None = lower_control_flow(part.graph, spec, host, options, fallback)
        else:
            part_spec = spec if part.target == spec.name else host.resolve(REF)
            exe = host.call(
                "cuvil_lower_partition",
                part_spec,
                target=part_spec,
                graph=part.graph,
                options={**options, "memory_plan": memory},
            )
        if exe is None:
            raise TargetError(f"pack for target '{part.target}' returned no executable")
        lowered.append(LoweredPartition(part, exe, memory))
    return lowered


def _optimize(
    module: Module,
    spec: TargetSpec,
    prefs: TargetPreferences,
    quantize: str | None,
    opt_level: int,
    enable_fusion: bool,
    enable_layout_opt: bool,
    calibration_data: Iterable[Any] | None,
    quant_options: Mapping[str, Any] | None,
) -> tuple[Module, dict[str, Any]]:
    """Quantize (optionally) and run the pass pipeline under one pass manager; returns the module
    and its report."""
    from cuvil_ref.passes import PassManager, build_pipeline

    passes = build_pipeline(opt_level, enable_fusion, enable_layout_opt, prefs)
    report: dict[str, Any] = {"quantization": None}
    step = None
    if quantize is not None:
        from cuvil_ref.quant.quantize_pass import quantize_pass

        qpass, step = quantize_pass(quantize, calibration_data, quant_options)
        passes = [qpass, *passes]
    module, timings = PassManager(passes).run(module)
    if step is not None:
        report["quantization"] = step.report
        metadata = {**module.metadata, "quantization": quantize}
        module = Module(module.graph, module.name, metadata)
    report["passes"] = timings
    return module, report


def _calibration_digest(data: Iterable[Any] | None) -> str | None:
    """Digest of calibration batches (lists/tuples of arrays only; iterators are not re-read)."""
    import hashlib

    import numpy as np

    if data is None or not isinstance(data, (list, tuple)):
        return None if data is None else f"iterator:{id(data)}"
    h = hashlib.sha256()
    for batch in data:
        items = batch if isinstance(batch, (list, tuple)) else (batch,)
        for item in items:
            arr = np.asarray(item.detach().cpu().numpy() if hasattr(item, "detach") else item)
            h.update(arr.tobytes())
    return h.hexdigest()


def merge_options(
    target: str | Mapping[str, Any] | TargetSpec, options: Mapping[str, Any] | None
) -> Any:
    if not options:
        return target
    from cuvil_ref.plugin.target_spec import parse_target_spec

    spec = parse_target_spec(target)
    merged = dict(spec.options)
    merged.update(options)
    return {
        "target": spec.name,
        **({"arch": spec.arch} if spec.arch else {}),
        "features": list(spec.features),
        "options": merged,
    }
