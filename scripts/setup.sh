#!/usr/bin/env bash
# Install Cuvil's seven distributions (six and the example pack) (editable) and the test tools into the current Python.
# torch is pinned: `pip install torch==2.13.0` takes the CPU build; an unpinned torch would pull a
# multi-GB CUDA build. As root on Debian, also installs hipcc (kernel compile check) and prometheus
# (`bash scripts/test.sh` prints SKIP for the HIP archs where it is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${PYTHON:-python3} -m pip"
# Debian packages: hipcc (HIP compile checks), prometheus (a real server evaluates the Grafana
# dashboard's queries in tests/serve) and wrk (the serving benchmark's C load generator).
for pkg in hipcc prometheus wrk; do
    if ! command -v "$pkg" >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            (apt-get update -qq && apt-get install -y -qq "$pkg" >/dev/null) \
                || echo "note: could not install $pkg; the tests that need it will be skipped"
        else
            echo "note: $pkg is not installed (apt-get install $pkg); the tests that need it skip"
        fi
    fi
done
$PIP install --quiet --disable-pip-version-check "torch==2.13.0"
$PIP install --quiet --disable-pip-version-check \
    -e ".[torch,test,sign,serve,serve-test,ray,jax,onnx,onnx-test]" \
    -e conformance \
    -e kernelpacks/npu_sim \
    -e kernelpacks/cuda \
    -e kernelpacks/hip \
    -e "kernelpacks/cpu[bench]" \
    -e cuvil_ref/plugin/example_pack
# test fixture, never shipped: planted-bug packs that prove the conformance suite can fail
$PIP install --quiet --disable-pip-version-check -e conformance/tests/mutants
# KServe's resource schemas for the offline manifest check (deploy/kserve/validate.py reads the
# SDK wheel as data; nothing of it is installed or run).
if ! ls .cache/schemas/kserve-0.21.0-*.whl >/dev/null 2>&1; then
    $PIP download --quiet --disable-pip-version-check --no-deps "kserve==0.21.0" -d .cache/schemas \
        || echo "note: could not download the KServe SDK wheel; the KServe manifest tests skip"
fi
