#!/usr/bin/env bash
# The whole GPU check for a lent machine's short lease, in one command from the repository root:
# both GPU packs' ResNet benchmarks, then their quick conformance suites, each step under its own
# time limit (T_CUDA, T_HIP, T_CONF seconds), nothing pip-installed (PYTHONPATH and
# cuvil_ref.plugin.source_pack instead). After every step all results so far are packed into
# DEST/gpu_results.tgz (DEST: $1, else $OUT), so a step cut off by its limit loses only itself.
#   device run:  bash scripts/gpu_check_all.sh            (about 9 minutes at most)
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${1:-${OUT:?give an output folder or set OUT}}"
R="$(mktemp -d)/gpures"
mkdir -p "$R/cuda" "$R/hip" "$R/conf" "$DEST"
export PYTHONUNBUFFERED=1 CUVIL_CACHE_DIR="${CUVIL_CACHE_DIR:-/tmp/cuvil-cache}"
export PYTHONPATH="$ROOT:$ROOT/kernelpacks/cuda/src:$ROOT/kernelpacks/hip/src:$ROOT/conformance/src"
# the packs' scripts call `python`; some GPU images have only python3
command -v python > /dev/null || { mkdir -p "$R/bin"; ln -s "$(command -v python3)" "$R/bin/python"; }
export PATH="$R/bin:$PATH"
step() { echo "$(date +%T) $1" >> "$R/steps.txt"; tar czf "$DEST/gpu_results.tgz" -C "$R/.." gpures; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
python -c "import torch, numba, numba.cuda as c, cupy, numpy
print('torch', torch.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__,
      'numpy', numpy.__version__, 'numba sees a gpu', c.is_available())" > "$R/versions.txt" 2>&1
step "start"
timeout -k 5 "${T_CUDA:-170}" bash "$ROOT/kernelpacks/cuda/scripts/gpu_check.sh" "$R/cuda" \
  --skip-conformance --iters 10 > "$R/cuda/stdout.txt" 2>&1
step "cuda bench rc=$?"
timeout -k 5 "${T_HIP:-150}" bash "$ROOT/kernelpacks/hip/scripts/gpu_check.sh" "$R/hip" \
  --skip-conformance --iters 20 > "$R/hip/stdout.txt" 2>&1
step "hip bench rc=$?"
for t in cuda hip; do
  timeout -k 5 "${T_CONF:-80}" python -c "import sys
from cuvil_ref.plugin.source_pack import use_source_pack
from cuvil_conformance.cli import main
use_source_pack('$t', 'cuvil_kernels_$t.plugin')
main(sys.argv[1:])" run --target "$t" --quick --report-json "$R/conf/$t.json" \
    --report-md "$R/conf/$t.md" > "$R/conf/$t.txt" 2>&1
  step "$t conformance rc=$?"
done
cat "$R/steps.txt"
