#!/usr/bin/env bash
# Install Cuvil's five distributions (editable) and the test tools into the current Python.
# torch is pinned: `pip install torch==2.13.0` takes the CPU build; an unpinned torch would pull a
# multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${PYTHON:-python3} -m pip"
$PIP install --quiet --disable-pip-version-check "torch==2.13.0"
$PIP install --quiet --disable-pip-version-check \
    -e ".[torch,test,sign,serve,serve-test]" \
    -e conformance \
    -e kernelpacks/npu_sim \
    -e kernelpacks/cuda \
    -e kernelpacks/hip
# test fixture, never shipped: planted-bug packs that prove the conformance suite can fail
$PIP install --quiet --disable-pip-version-check -e conformance/tests/mutants
