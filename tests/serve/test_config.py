"""Model configs and the repository: every error names the file, the field and what works."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cuvil_ref.serve.config import parse_config, read_config
from cuvil_ref.serve.errors import ConfigError
from cuvil_ref.serve.repository import add_model, scan_repository

BAD = [
    ({"max_batch_sise": 8}, "max_batch_sise", ["did you mean 'max_batch_size'", "accepted fields"]),
    ({"max_batch_size": -1}, "max_batch_size", ["an integer >= 0", "-1"]),
    ({"max_batch_size": True}, "max_batch_size", ["an integer >= 0"]),
    ({"instance_count": 0}, "instance_count", ["an integer >= 1"]),
    ({"opt_level": 5}, "opt_level", ["0, 1, 2 or 3"]),
    ({"target": 3}, "target", ["target name"]),
    ({"dynamic_batching": {"max_queue_delay": 5}}, "dynamic_batching.max_queue_delay",
     ["max_queue_delay_us"]),
    ({"dynamic_batching": {"preferred_batch_size": [0]}}, "dynamic_batching.preferred_batch_size",
     ["integers >= 1"]),
    ({"max_batch_size": 4, "dynamic_batching": {"preferred_batch_size": [8]}},
     "dynamic_batching.preferred_batch_size", ["exceed max_batch_size 4"]),
    ({"version_policy": {"newest": 1}}, "version_policy.newest", ["latest, specific"]),
    ({"version_policy": {"specific": []}}, "version_policy.specific", ["at least one"]),
    ({"inputs": [{"nam": "x"}]}, "inputs[0].nam", ["did you mean 'name'"]),
    ({"inputs": [{"name": "x"}, {"name": "x"}]}, "inputs[1].name", ["given twice"]),
    ({"shape_buckets": [{"input": "x", "sizes": [8]}]}, "shape_buckets[0].dim", ["required"]),
    ({"shape_buckets": [{"input": "x", "dim": 1, "sizes": []}]}, "shape_buckets[0].sizes",
     ["at least one"]),
    ({"postprocess": [{"op": "argsort"}]}, "postprocess[0].op", ["softmax", "topk"]),
    ({"name": "other"}, "name", ["model folder is 'm'"]),
    ({"warmup": "yes"}, "warmup", ["true or false"]),
    ({"ray": {"num_replica": 2}}, "ray.num_replica", ["did you mean 'num_replicas'"]),
    ({"ray": {"num_replicas": 0}}, "ray.num_replicas", ["an integer >= 1"]),
    ({"ray": {"max_ongoing_requests": "many"}}, "ray.max_ongoing_requests", ["integer"]),
    ({"ray": {"autoscaling_config": 4}}, "ray.autoscaling_config", ["object of Ray Serve"]),
    ({"ray": {"num_replicas": 2, "autoscaling_config": {}}}, "ray.autoscaling_config",
     ["give one of the two"]),
]  # fmt: skip


@pytest.mark.parametrize(("data", "field", "words"), BAD, ids=[b[1] for b in BAD])
def test_config_errors_name_file_field_and_accepted(data, field, words) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, name="m", path="repo/m/config.json")
    message = str(info.value)
    assert message.startswith(f"repo/m/config.json: field '{field}'"), message
    for w in words:
        assert w in message, message


def test_defaults_and_toml(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    assert read_config(d).max_batch_size == 0 and read_config(d).instance_count == 1
    (d / "config.toml").write_text(
        "max_batch_size = 4\n[dynamic_batching]\nmax_queue_delay_us = 100\n"
        "preferred_batch_size = [2, 4]\n[version_policy]\nlatest = 2\n"
    )
    c = read_config(d)
    assert c.max_batch_size == 4 and c.dynamic_batching.preferred_batch_size == (2, 4)
    assert c.version_policy.select([1, 2, 3]) == [2, 3]
    (d / "config.toml").write_text("max_batch_size = [")
    with pytest.raises(ConfigError, match="config.toml: is not valid TOML"):
        read_config(d)
    (d / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="both config.json and config.toml"):
        read_config(d)


def test_bad_json_names_the_file(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text('{"max_batch_size": 8,}')
    with pytest.raises(ConfigError, match=r"m/config.json: is not valid JSON"):
        read_config(d)


def test_version_policies() -> None:
    specific = parse_config({"version_policy": {"specific": [1, 3]}}, name="m")
    assert specific.version_policy.select([1, 2, 3]) == [1, 3]
    assert parse_config({"version_policy": "all"}, name="m").version_policy.select([2, 1]) == [1, 2]
    assert parse_config({}, name="m").version_policy.select([1, 5, 2]) == [5]


def _tiny_module():
    from cuvil_ref.ir import GraphBuilder, Module, TensorType
    from cuvil_ref.ir.dtypes import DType

    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 4), DType.f32))
    w = b.constant("w", np.arange(8, dtype=np.float32).reshape(4, 2))
    y = b.op("matmul", [x, w])
    return Module(b.build([y]), "tiny")


def test_add_model_and_scan(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    m = _tiny_module()
    p1 = add_model(repo, "tiny", m, max_batch_size=4)
    p2 = add_model(repo, "tiny", m)
    assert p1 == repo / "tiny" / "1" / "model.cuvilir" and p2.parent.name == "2"
    assert json.loads((repo / "tiny" / "config.json").read_text())["max_batch_size"] == 4
    (entry,) = scan_repository(repo)
    assert entry.versions == (1, 2) and entry.selected == (2,)
    p3 = add_model(repo, "copy", p1, version=7)  # from an artifact file, verified first
    assert p3.read_bytes() == p1.read_bytes()
    with pytest.raises(ConfigError, match="exists already"):
        add_model(repo, "tiny", m, version=1)
    with pytest.raises(ConfigError, match="field 'max_batch_size'"):
        add_model(repo, "bad", m, max_batch_size="8")


def test_scan_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a directory"):
        scan_repository(tmp_path / "missing")
    (tmp_path / "empty_model").mkdir()
    with pytest.raises(ConfigError, match="has no version folder"):
        scan_repository(tmp_path)


def test_batching_needs_a_symbolic_batch_dim(tmp_path: Path) -> None:
    from cuvil_ref.ir import GraphBuilder, Module, TensorType
    from cuvil_ref.ir.dtypes import DType
    from cuvil_ref.serve.signature import Signature

    b = GraphBuilder()
    x = b.input("x", TensorType((1, 4), DType.f32))
    static = Module(b.build([b.op("relu", [x])]), "static")
    with pytest.raises(ConfigError, match="dynamic_batch=True, or use max_batch_size 0"):
        Signature(static, parse_config({"max_batch_size": 8}, name="static"))
    Signature(static, parse_config({"max_batch_size": 0}, name="static"))


def test_ray_deployment_options() -> None:
    """The config's ``ray`` object over the application's defaults; Ray may hold as many
    requests per replica as the batcher can queue, and one way of scaling is asked for."""
    from cuvil_ref.serve.ray import deployment_options

    config = parse_config(
        {"max_batch_size": 8, "dynamic_batching": {"max_queue_size": 64},
         "ray": {"num_replicas": 3}},
        name="m",
    )  # fmt: skip
    assert parse_config(config.to_json(), name="m") == config
    opts = deployment_options(config, {"num_replicas": 2, "ray_actor_options": {"num_cpus": 1}})
    assert opts == {"num_replicas": 3, "ray_actor_options": {"num_cpus": 1},
                    "max_ongoing_requests": 64 + 8}  # fmt: skip
    auto = parse_config({"ray": {"autoscaling_config": {"max_replicas": 4}}}, name="m")
    opts = deployment_options(auto, {"num_replicas": 2})
    assert opts["autoscaling_config"] == {"max_replicas": 4} and "num_replicas" not in opts
    with pytest.raises(ConfigError, match="both num_replicas and autoscaling_config"):
        deployment_options(parse_config({}, name="m"),
                           {"num_replicas": 2, "autoscaling_config": {}})  # fmt: skip
