"""The load generators drive a real ``cuvil serve``: bounded runs, every request answered."""

from __future__ import annotations

import shutil

import pytest

from cuvil_ref.serve.loadgen import run_wrk


@pytest.mark.skipif(shutil.which("wrk") is None, reason="needs Debian's wrk (apt-get install wrk)")
def test_wrk_run_counts_requests_and_failures(server, tmp_path) -> None:
    stats = run_wrk(server.http, connections=2, seconds=2, out_dir=tmp_path, shape=(1, 784))
    assert stats["generator"] == "wrk" and stats["exit_code"] == 0
    assert stats["requests"] > 10 and stats["failures"] == 0
    assert 0 < stats["p50_ms"] <= stats["p99_ms"]


@pytest.mark.skipif(shutil.which("wrk") is None, reason="needs Debian's wrk (apt-get install wrk)")
def test_wrk_counts_error_statuses_as_failures(server, tmp_path) -> None:
    stats = run_wrk(server.http, connections=1, seconds=1, out_dir=tmp_path, model="no_such_model")
    assert stats["requests"] > 0 and stats["failures"] == stats["requests"]
