#!/usr/bin/env bash
# GPU check of the cuda kernel pack: conformance + ResNet-18/50 benchmarks vs torch.
# Run from the repository root on the GPU machine (nothing pip-installed; PYTHONPATH instead).
# Results: $OUT/cuda_results.json and $OUT/cuda_results.md (or the directory given as $1).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
DEST="${1:-${OUT:-$ROOT/gpu_results}}"
mkdir -p "$DEST"
export PYTHONPATH="$ROOT:$ROOT/kernelpacks/cuda/src:$ROOT/conformance/src${PYTHONPATH:+:$PYTHONPATH}"
unset NUMBA_ENABLE_CUDASIM
nvidia-smi > "$DEST/nvidia-smi.txt" 2>&1 || true
python -c "import numba, numba.cuda as c; print('numba', numba.__version__, 'gpu', c.is_available())" \
    > "$DEST/env.txt" 2>&1 || true
shift || true
python "$ROOT/kernelpacks/cuda/scripts/gpu_bench.py" --out "$DEST" "$@" 2>&1 | tee "$DEST/gpu_bench.log"
exit "${PIPESTATUS[0]}"
