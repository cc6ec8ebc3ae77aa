#!/usr/bin/env bash
# Run every test of all five distributions (each distribution's suite in its own pytest run).
# Extra arguments go to every pytest run, e.g. `bash scripts/test.sh -x -q`.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
status=0
run() {
    echo "=== $1"
    shift
    "$PY" -m pytest "$@" || status=1
}
echo "=== lint (ruff)"
"$PY" -m ruff check . || status=1
run "cuvil-ref" tests -q "$@"
run "cuvil-conformance" conformance/tests -q "$@"
run "cuvil-kernels-npu-sim" kernelpacks/npu_sim/tests -q "$@"
NUMBA_ENABLE_CUDASIM=1 run "cuvil-kernels-cuda" kernelpacks/cuda/tests -q "$@"
run "cuvil-kernels-hip" kernelpacks/hip/tests -q "$@"
echo "=== conformance graph fuzzer, bounded (ref, torch twins, npu-v3, cuda simulator)"
FUZZ="$PY -m cuvil_conformance.cli fuzz --seed 1 --save-dir ${TMPDIR:-/tmp}/cuvil-fuzz-failures"
$FUZZ --target ref --seconds 60 || status=1
$FUZZ --target ref --mode torch --seconds 30 || status=1
$FUZZ --target npu-v3 --seconds 60 || status=1
NUMBA_ENABLE_CUDASIM=1 $FUZZ --target cuda --seconds 120 --batch 10 || status=1
echo "=== hip/cuda kernel compile check (nvcc sm_80/sm_90, hipcc gfx90a/gfx942)"
"$PY" kernelpacks/hip/scripts/compile_check.py --jobs 2 || status=1
exit $status
