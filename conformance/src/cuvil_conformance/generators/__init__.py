"""Case generators, keyed by op name, with category rules for table-declared ops.

``generate_cases`` walks the op registry: every registered op gets cases from its entry here or,
for simple elementwise ops, from its category rule. An op with neither is returned in
``missing`` and reported by the runner as uncovered — never silently skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from cuvil_conformance.cases import Case, dedupe
from cuvil_conformance.generators import elementwise, nn, reductions, shape
from cuvil_ref.ops import REGISTRY, OpDef

Generator = Callable[[str, bool], Iterator[Case]]

GENERATORS: dict[str, Generator] = {
    "where": elementwise.where_cases,
    "sum": reductions.reduce_cases,
    "mean": reductions.reduce_cases,
    "amax": reductions.reduce_cases,
    "amin": reductions.reduce_cases,
    "prod": reductions.reduce_cases,
    "var": reductions.var_cases,
    "std": reductions.var_cases,
    "argmax": reductions.arg_cases,
    "argmin": reductions.arg_cases,
    "softmax": reductions.softmax_cases,
    "log_softmax": reductions.softmax_cases,
    "topk": reductions.topk_cases,
    "layer_norm": nn.layer_norm_cases,
    "rms_norm": nn.rms_norm_cases,
    "batch_norm": nn.batch_norm_cases,
    "group_norm": nn.group_norm_cases,
    "matmul": nn.matmul_cases,
    "linear": nn.linear_cases,
    "conv2d": nn.conv_cases,
    "max_pool2d": nn.max_pool_cases,
    "avg_pool2d": nn.avg_pool_cases,
    "adaptive_avg_pool2d": nn.adaptive_cases,
    "adaptive_max_pool2d": nn.adaptive_cases,
    "reshape": shape.reshape_cases,
    "flatten": shape.flatten_cases,
    "permute": shape.permute_cases,
    "transpose": shape.transpose_cases,
    "squeeze": shape.squeeze_cases,
    "unsqueeze": shape.unsqueeze_cases,
    "expand": shape.expand_cases,
    "slice": shape.slice_cases,
    "narrow": shape.narrow_cases,
    "arange": shape.arange_cases,
    "pad": shape.pad_cases,
    "concat": shape.concat_cases,
    "split": shape.split_cases,
    "index_select": shape.index_select_cases,
    "gather": shape.gather_cases,
    "embedding": shape.embedding_cases,
}


def register_generator(op: str, generator: Generator) -> None:
    """Add cases for an op declared outside the core op set (used by families that land later)."""
    GENERATORS[op] = generator


def _category_rule(opdef: OpDef) -> Generator | None:
    if opdef.category in ("elementwise", "activation"):
        if opdef.inputs == ("x",):
            return elementwise.unary_cases
        if opdef.inputs == ("a", "b"):
            return elementwise.binary_cases
    return None


def generator_for(opdef: OpDef) -> Generator | None:
    _load_extra_generators()
    return GENERATORS.get(opdef.name) or _category_rule(opdef)


def generate_cases(
    ops: Sequence[str] | None = None, quick: bool = False
) -> tuple[list[Case], list[str]]:
    """(cases, ops without a generator) for the given ops (default: the whole registry)."""
    names = list(ops) if ops else REGISTRY.names()
    cases: list[Case] = []
    missing: list[str] = []
    for name in names:
        opdef = REGISTRY.get(name)
        gen = generator_for(opdef)
        if gen is None:
            missing.append(name)
            continue
        cases.extend(gen(name, quick))
    return dedupe(cases), missing


_EXTRA_LOADED = False


def _load_extra_generators() -> None:
    """Import generator modules for op families that may be absent in older cuvil-ref builds."""
    global _EXTRA_LOADED
    if _EXTRA_LOADED:
        return
    _EXTRA_LOADED = True
    import importlib

    for mod in ("quantized", "fused", "qtransformer", "core_aten"):
        try:
            importlib.import_module(f"cuvil_conformance.generators.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"cuvil_conformance.generators.{mod}":
                raise


def all_cases(quick: bool = False) -> Iterable[Case]:
    return generate_cases(None, quick)[0]
