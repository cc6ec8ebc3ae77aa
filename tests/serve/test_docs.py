"""The curl and tritonclient examples of docs/serving.md run against a real server."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "serving.md"


def _blocks(lang: str) -> list[str]:
    text = DOC.read_text()
    return [b for b in re.findall(rf"```{lang}\n(.*?)```", text, re.S) if "localhost:" in b]


def _local(code: str, server) -> str:
    return code.replace("localhost:8000", server.http).replace("localhost:8001", server.grpc)


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_python_examples_run(server, index: int, capsys) -> None:
    code = _local(_blocks("python")[index], server)
    exec(compile(code, f"docs/serving.md python block {index}", "exec"), {})
    printed = capsys.readouterr().out
    assert re.search(r"\(\d+, 10\)", printed), printed


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.parametrize("index", range(len(_blocks("bash"))))
def test_curl_examples_run(server, index: int, tmp_path: Path) -> None:
    for line in _local(_blocks("bash")[index], server).strip().splitlines():
        proc = subprocess.run(
            line, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, (line, proc.stderr)
        if line.startswith("curl") and proc.stdout.strip().startswith("{"):
            doc = json.loads(proc.stdout)
            assert "error" not in doc, doc
        elif line.startswith("curl"):
            assert "error" not in proc.stdout, proc.stdout
