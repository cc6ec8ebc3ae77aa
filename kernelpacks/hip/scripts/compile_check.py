"""Generate every representative kernel and compile it with nvcc (sm_80, sm_90) and hipcc
(gfx90a, gfx942), in parallel; print a table and exit non-zero on any failure.

The sources are the registry's representative configs plus every distinct source the lowering
emits for the representative graphs of ``cuvil_kernels_hip.lowered_sources`` (all supported
conformance cases, and the zoo's MLP, digits CNN and ResNet-18 at small size, with and without
tensor cores); ``--registry-only`` keeps just the configs, ``--quick-cases`` the quick cases.

A missing compiler is a failure unless ``--allow-missing`` is given, in which case its columns
say SKIP and the reason is printed. Debian's hipcc (clang 15) does not know gfx942; the gfx942
column is then compiled for gfx940 (same ISA family) and the substitution is printed.

Usage: python kernelpacks/hip/scripts/compile_check.py [--allow-missing] [--jobs N]
       [--arch sm_80 ...] [--filter SUBSTRING] [--show-log] [--registry-only] [--quick-cases]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]
for _path in (Path(__file__).resolve().parents[1] / "src", _ROOT / "conformance" / "src", _ROOT):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from cuvil_kernels_hip.offline_compile import (  # noqa: E402
    CUDA_ARCHS,
    HIP_ARCHS,
    CompileResult,
    compile_source,
    compiler_available,
    compiler_for,
    resolve_hip_arch,
)
from cuvil_kernels_hip.registry import representative_configs  # noqa: E402
from cuvil_kernels_hip.source import KernelSource  # noqa: E402


def collect_sources(
    filter_text: str, registry_only: bool, quick_cases: bool
) -> tuple[list[tuple[str, KernelSource]], list[str]]:
    """(label, source) pairs to compile, distinct by source hash, and notes."""
    found: dict[str, tuple[str, KernelSource]] = {}
    for cfg in representative_configs():
        if filter_text in cfg.label:
            src = cfg.generate()
            found.setdefault(src.sha256, (cfg.label, src))
    notes: list[str] = []
    if not registry_only:
        from cuvil_kernels_hip.lowered_sources import lowered_sources, representative_graphs

        graphs, notes = representative_graphs(quick=quick_cases)
        for sha, (label, src) in lowered_sources(graphs).items():
            if filter_text in label:
                found.setdefault(sha, (label, src))
    return list(found.values()), notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="skip (not fail) archs whose compiler is not on PATH",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--arch", action="append", help="archs to build (default: all four)")
    parser.add_argument("--filter", default="", help="only configs whose label contains this")
    parser.add_argument("--show-log", action="store_true", help="print logs of failures in full")
    parser.add_argument(
        "--registry-only", action="store_true", help="skip the sources lowered from graphs"
    )
    parser.add_argument(
        "--quick-cases", action="store_true", help="lower only the quick conformance cases"
    )
    args = parser.parse_args(argv)
    archs = tuple(args.arch or (*CUDA_ARCHS, *HIP_ARCHS))
    start = time.perf_counter()

    build_arch: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for arch in archs:
        compiler = compiler_for(arch)
        if not compiler_available(compiler):
            skipped[arch] = f"{compiler} is not on PATH"
            continue
        build_arch[arch] = arch
        if compiler == "hipcc":
            actual, note = resolve_hip_arch(arch)
            build_arch[arch] = actual
            if note:
                print(f"note: {note}")
    if skipped and not args.allow_missing:
        for arch, why in skipped.items():
            print(f"FAIL {arch}: {why} (rerun with --allow-missing to skip it)")
        return 2
    for arch, why in skipped.items():
        print(f"SKIP {arch}: {why}")

    labelled, notes = collect_sources(args.filter, args.registry_only, args.quick_cases)
    for note in notes:
        print(f"note: {note}")
    labels = [label for label, _ in labelled]
    sources = [src for _, src in labelled]
    if not sources:
        print(f"FAIL: no source matches --filter {args.filter!r}")
        return 2
    jobs = [(i, arch) for i in range(len(sources)) for arch in archs if arch in build_arch]

    def run(job: tuple[int, str]) -> tuple[int, str, CompileResult]:
        i, arch = job
        return i, arch, compile_source(sources[i].code, build_arch[arch])

    results: dict[tuple[int, str], CompileResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for i, arch, res in pool.map(run, jobs):
            results[(i, arch)] = res

    width = min(100, max(len(label) for label in labels)) + 2
    print("config".ljust(width) + "".join(a.ljust(9) for a in archs) + "sha256[:12]")
    failures = 0
    for i, (label, src) in enumerate(labelled):
        cells = []
        for arch in archs:
            res = results.get((i, arch))
            cell = "SKIP" if res is None else ("ok" if res.ok else "FAIL")
            failures += res is not None and not res.ok
            cells.append(cell.ljust(9))
        print(label[: width - 2].ljust(width) + "".join(cells) + src.sha256[:12])
    for (i, arch), res in sorted(results.items()):
        if not res.ok:
            log = res.log if args.show_log else res.log[:2000]
            print(f"\n--- FAIL {labels[i]} on {arch} ({' '.join(res.command)}):\n{log}")
    elapsed = time.perf_counter() - start
    print(
        f"\n{len(sources)} sources x {len(build_arch)} archs = {len(jobs)} compiles, "
        f"{failures} failed, {elapsed:.1f}s with {args.jobs} jobs"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
