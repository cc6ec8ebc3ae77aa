#!/usr/bin/env bash
# GPU check of the hip kernel pack, for a GPU machine with torch, numba-cuda and cupy installed
# and this repository copied (no pip install: PYTHONPATH points at the source trees).
# Runs the pack's conformance suite (--quick) and the ResNet-18/50 benchmarks in one go and
# writes hip_gpu_check.{json,md} and hip_conformance.{json,md} to $1, else $OUT, else ./hip_gpu_results.
# Usage: kernelpacks/hip/scripts/gpu_check.sh [OUT_DIR] [extra gpu_bench.py args...]
set -u
OUT_DIR="${1:-${OUT:-hip_gpu_results}}"
shift || true
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
export PYTHONPATH="$REPO:$REPO/kernelpacks/hip/src:$REPO/conformance/src${PYTHONPATH:+:$PYTHONPATH}"
export CUVIL_CACHE_DIR="${CUVIL_CACHE_DIR:-/tmp/cuvil-hip-cache}"  # compiled kernels, not results
mkdir -p "$OUT_DIR"
{ nvidia-smi || rocm-smi || echo "no GPU tool found"; } > "$OUT_DIR/device.txt" 2>&1
python -c "import cupy, torch; print('cupy', cupy.__version__, 'torch', torch.__version__)" \
  > "$OUT_DIR/versions.txt" 2>&1
python "$REPO/kernelpacks/hip/scripts/gpu_bench.py" --out "$OUT_DIR" "$@" 2>&1 | tee "$OUT_DIR/gpu_check.log"
exit "${PIPESTATUS[0]}"
