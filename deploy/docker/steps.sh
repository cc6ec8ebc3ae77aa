#!/bin/sh
# The install steps of the container image (deploy/docker/Dockerfile), one place for both the
# image and the test that runs them in a fresh virtual environment (tests/deploy/test_docker.py):
#   sh steps.sh wheels SRC OUT    build the wheels of cuvil-ref and the packs the image ships
#   sh steps.sh install WHEELS    install them with only the runtime extras (no torch, no tests)
# $PYTHON chooses the interpreter (default python3); the image sets PIP_NO_CACHE_DIR=1.
set -eu
PY="${PYTHON:-python3}"
PACKS="kernelpacks/npu_sim kernelpacks/cpu"  # the int8 NPU simulator and the fast CPU pack
case "${1:-}" in
wheels)
    src="$2"
    out="$3"
    mkdir -p "$out"
    for dist in . $PACKS; do
        "$PY" -m pip wheel --no-deps --wheel-dir "$out" "$src/$dist"
    done
    ;;
install)
    wheels="$2"
    core=$(ls "$wheels"/cuvil_ref-*.whl)
    packs=$(ls "$wheels"/cuvil_kernels_*.whl)
    # cuvil-ref[serve] for the server, [sign] to verify release signatures (--trusted-key).
    # shellcheck disable=SC2086  # $packs is a list of wheel paths
    "$PY" -m pip install --find-links "$wheels" "$core[serve,sign]" $packs
    ;;
*)
    echo "usage: sh steps.sh wheels SRC OUT | sh steps.sh install WHEELS" >&2
    exit 2
    ;;
esac
