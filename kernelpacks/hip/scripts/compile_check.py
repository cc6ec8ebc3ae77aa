"""Generate every representative kernel and compile it with nvcc (sm_80, sm_90) and hipcc
(gfx90a, gfx942), in parallel; print a table and exit non-zero on any failure.

A missing compiler is a failure unless ``--allow-missing`` is given, in which case its columns
say SKIP and the reason is printed. Debian's hipcc (clang 15) does not know gfx942; the gfx942
column is then compiled for gfx940 (same ISA family) and the substitution is printed.

Usage: python kernelpacks/hip/scripts/compile_check.py [--allow-missing] [--jobs N]
       [--arch sm_80 ...] [--filter SUBSTRING] [--show-log]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

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

    configs = [c for c in representative_configs() if args.filter in c.label]
    sources = [c.generate() for c in configs]
    jobs = [(i, arch) for i in range(len(sources)) for arch in archs if arch in build_arch]

    def run(job: tuple[int, str]) -> tuple[int, str, CompileResult]:
        i, arch = job
        return i, arch, compile_source(sources[i].code, build_arch[arch])

    results: dict[tuple[int, str], CompileResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for i, arch, res in pool.map(run, jobs):
            results[(i, arch)] = res

    width = max(len(c.label) for c in configs) + 2
    print("config".ljust(width) + "".join(a.ljust(9) for a in archs) + "sha256[:12]")
    failures = 0
    for i, (cfg, src) in enumerate(zip(configs, sources)):
        cells = []
        for arch in archs:
            res = results.get((i, arch))
            cell = "SKIP" if res is None else ("ok" if res.ok else "FAIL")
            failures += res is not None and not res.ok
            cells.append(cell.ljust(9))
        print(cfg.label.ljust(width) + "".join(cells) + src.sha256[:12])
    for (i, arch), res in sorted(results.items()):
        if not res.ok:
            log = res.log if args.show_log else res.log[:2000]
            print(f"\n--- FAIL {configs[i].label} on {arch} ({' '.join(res.command)}):\n{log}")
    elapsed = time.perf_counter() - start
    print(
        f"\n{len(sources)} sources x {len(build_arch)} archs = {len(jobs)} compiles, "
        f"{failures} failed, {elapsed:.1f}s with {args.jobs} jobs"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
