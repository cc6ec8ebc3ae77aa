"""Generated kernel sources: the options they depend on and the record a generator returns.

A generator is a pure function of (family, dtype, shape-independent params, options). Shapes are
kernel arguments, never baked in, so one compiled module serves every shape of a family. The
sha256 of the full source text is the cache key for compiled binaries.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from cuvil_kernels_hip.prelude import PRELUDE

UNROLL_FACTORS = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class KernelOptions:
    """Target-spec options that change generated code.

    ``loop_unroll_factor`` sets ``#pragma unroll N`` and the number of manually unrolled copies of
    each hot loop body. ``block_size`` is the thread count of 1-D kernels. ``features`` are the
    target-spec features (``"tensor_core"``, ``"sm_90"``, ``"gfx90a"``...).
    """

    loop_unroll_factor: int = 4
    block_size: int = 256
    features: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.loop_unroll_factor not in UNROLL_FACTORS:
            raise ValueError(
                f"loop_unroll_factor={self.loop_unroll_factor} is not supported by the hip "
                f"kernel pack; use one of {UNROLL_FACTORS}"
            )
        if self.block_size not in (64, 128, 256, 512, 1024):
            raise ValueError(
                f"block_size={self.block_size} is not supported; use 64, 128, 256, 512 or 1024"
            )

    @staticmethod
    def from_target(options: dict[str, object], features: tuple[str, ...] = ()) -> KernelOptions:
        """Build options from a target spec's ``options`` dict and ``features`` list."""
        unroll = options.get("loop_unroll_factor", 4)
        block = options.get("block_size", 256)
        if not isinstance(unroll, int) or not isinstance(block, int):
            raise ValueError(
                f"target options loop_unroll_factor={unroll!r} and block_size={block!r} "
                "must be integers"
            )
        return KernelOptions(unroll, block, frozenset(features))


@dataclass(frozen=True)
class KernelSource:
    """One generated translation unit: its text, its ``extern "C"`` entry points, how to launch.

    ``launch`` says how to size the grid in words (for the lowering and the reader); ``params``
    records the shape-independent parameters the source was generated from.
    """

    family: str
    dtype: str
    entry: str
    code: str
    params: tuple[tuple[str, object], ...]
    options: KernelOptions
    launch: str

    @property
    def sha256(self) -> str:
        """Stable cache key: sha256 of the full source text."""
        return hashlib.sha256(self.code.encode("utf-8")).hexdigest()

    @property
    def entries(self) -> tuple[str, ...]:
        """All entry names (one per source today; a tuple so modules can grow)."""
        return (self.entry,)


def entry_name(family: str, dtype: str, params: dict[str, object], options: KernelOptions) -> str:
    """A readable, unique ``extern "C"`` name: family, dtype and a short hash of the config."""
    config = repr((sorted(params.items()), options.loop_unroll_factor, options.block_size))
    digest = hashlib.sha256(f"{family}|{dtype}|{config}".encode()).hexdigest()[:10]
    return f"cuvil_{family}_{dtype}_{digest}"


def assemble(
    family: str,
    dtype: str,
    params: dict[str, object],
    options: KernelOptions,
    body: str,
    entry: str,
    launch: str,
) -> KernelSource:
    """Prefix the prelude and a provenance comment to ``body`` and wrap it as a KernelSource."""
    header = (
        f"// cuvil hip kernel pack: family={family} dtype={dtype} "
        f"params={sorted(params.items())!r} unroll={options.loop_unroll_factor} "
        f"block={options.block_size}\n"
    )
    code = header + PRELUDE + body
    return KernelSource(family, dtype, entry, code, tuple(sorted(params.items())), options, launch)


def unrolled(factor: int, template: str, indent: str = "    ") -> str:
    """``factor`` copies of ``template`` with ``{u}`` replaced by 0..factor-1 (manual unroll)."""
    return "\n".join(indent + template.replace("{u}", str(u)) for u in range(factor))
