#!/usr/bin/env bash
# Run every test of all six distributions (each distribution's suite in its own pytest run).
#   bash scripts/test.sh            the full run: lint, mypy, every suite, a bounded graph fuzz,
#                                   the kernel compile check
#   bash scripts/test.sh --quick    the edit-loop run (a few minutes): lint and every suite without
#                                   the tests marked `slow` (big zoo models, the CUDA simulator's
#                                   end-to-end and conformance runs, offline compiles); no mypy or
#                                   compile check
# Other arguments go to every pytest run, e.g. `bash scripts/test.sh -x -q`.
# The compile check needs nvcc and hipcc (`apt-get install hipcc`, which scripts/setup.sh does
# when run as root); without one it prints SKIP for that compiler's archs, unless
# CUVIL_REQUIRE_COMPILERS=1 (set by .ci/run), which makes a missing compiler a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
QUICK=0
ARGS=()
for arg in "$@"; do
    if [ "$arg" = "--quick" ]; then QUICK=1; else ARGS+=("$arg"); fi
done
SELECT=()
if [ "$QUICK" = 1 ]; then SELECT=(-m "not slow"); fi
status=0
run() {
    echo "=== $1"
    shift
    "$PY" -m pytest "$@" ${SELECT[@]+"${SELECT[@]}"} ${ARGS[@]+"${ARGS[@]}"} || status=1
}
echo "=== lint (ruff)"
"$PY" -m ruff check . || status=1
if [ "$QUICK" = 0 ]; then
    echo "=== types (mypy cuvil_ref)"
    "$PY" -m mypy || status=1
fi
run "cuvil-ref" tests -q
run "cuvil-conformance" conformance/tests -q
run "cuvil-kernels-npu-sim" kernelpacks/npu_sim/tests -q
NUMBA_ENABLE_CUDASIM=1 run "cuvil-kernels-cuda" kernelpacks/cuda/tests -q
run "cuvil-kernels-hip" kernelpacks/hip/tests -q
run "cuvil-kernels-cpu" kernelpacks/cpu/tests -q
run "cuvil-kernels-example" cuvil_ref/plugin/example_pack/tests -q
if [ "$QUICK" = 0 ]; then
    echo "=== conformance graph fuzzer, bounded (ref, torch twins, npu-v3, cuda simulator)"
    FUZZ="$PY -m cuvil_conformance.cli fuzz --seed 1 --save-dir ${TMPDIR:-/tmp}/cuvil-fuzz-failures"
    # Bounded by time and by graph count: with a fixed seed the same graphs on any machine
    # (longer exploratory campaigns run outside CI; see docs/conformance.md).
    $FUZZ --target ref --seconds 60 --max-graphs 5000 || status=1
    $FUZZ --target ref --mode torch --seconds 30 --max-graphs 3900 || status=1
    $FUZZ --target npu-v3 --seconds 60 --max-graphs 1500 || status=1
    NUMBA_ENABLE_CUDASIM=1 $FUZZ --target cuda --seconds 120 --batch 10 --max-graphs 170 \
        || status=1
    echo "=== hip/cuda kernel compile check (nvcc sm_80/sm_90, hipcc gfx90a/gfx942)"
    MISSING=(--allow-missing)
    if [ "${CUVIL_REQUIRE_COMPILERS:-0}" = 1 ]; then MISSING=(); fi
    "$PY" kernelpacks/hip/scripts/compile_check.py --jobs 2 ${MISSING[@]+"${MISSING[@]}"} \
        || status=1
fi
exit $status
