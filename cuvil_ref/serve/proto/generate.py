"""Regenerate the gRPC stubs beside ``grpc_predict_v2.proto`` with grpcio-tools.

Run ``python -m cuvil_ref.serve.proto.generate`` after editing the .proto; the generated
``grpc_predict_v2_pb2.py`` and ``grpc_predict_v2_pb2_grpc.py`` are committed (so installing
``cuvil-ref[serve]`` needs no compiler). ``tests/serve/test_proto.py`` checks they match the
.proto. ``generate(out_dir)`` writes them elsewhere (the test uses a temporary folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO = Path(__file__).with_name("grpc_predict_v2.proto")
ROOT = PROTO.parents[3]  # the folder that holds cuvil_ref/


def generate(out_dir: Path = ROOT) -> list[Path]:
    """Run protoc on the .proto; returns the generated files (under ``out_dir``)."""
    from grpc_tools import protoc

    rel = PROTO.relative_to(ROOT)
    args = [
        "grpc_tools.protoc",
        f"-I{ROOT}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        str(rel),
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {PROTO}")
    base = out_dir / rel.parent
    return [base / "grpc_predict_v2_pb2.py", base / "grpc_predict_v2_pb2_grpc.py"]


if __name__ == "__main__":
    for path in generate():
        print(path)
    sys.exit(0)
