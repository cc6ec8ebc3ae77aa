"""The model's own interface: keyword inputs, and outputs in the model's own pytree structure
(ModelOutput, namedtuple, torch.return_types, dataclass, nested containers with None), recorded
in the artifact as JSON and rebuilt without the class when it is not loaded."""

from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutputWithPooling

import cuvil_ref as cuvil
from cuvil_ref.errors import InputError
from cuvil_ref.frontend import output_structure, structure

Pair = collections.namedtuple("Pair", "first second")


@dataclasses.dataclass
class Stats:
    mean: torch.Tensor
    spread: torch.Tensor


torch.utils._pytree.register_dataclass(Stats)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
        h = self.fc(input_ids)
        if attention_mask is not None:
            h = h * attention_mask
        return BaseModelOutputWithPooling(last_hidden_state=h, pooler_output=h.mean(1))


def _leaves_close(got: Any, want: Any) -> None:
    g, w = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    assert len(g) == len(w)
    assert [type(a) for a in g] == [type(b) for b in w]
    for a, b in zip(g, w):
        if not isinstance(b, torch.Tensor):
            assert a == b
            continue
        torch.testing.assert_close(a, b.detach(), rtol=1e-5, atol=1e-6)


def test_model_output_and_keyword_inputs() -> None:
    model = Encoder().eval()
    x, mask = torch.randn(2, 3, 4), (torch.rand(2, 3, 1) > 0.3).float()
    cm = cuvil.torch.compile(model, example_inputs=(x,), example_kwargs={"attention_mask": mask})
    out, want = cm(x, attention_mask=mask), model(x, attention_mask=mask)
    assert type(out) is BaseModelOutputWithPooling
    torch.testing.assert_close(out.last_hidden_state, want.last_hidden_state.detach())
    torch.testing.assert_close(out[0], want[0].detach())
    torch.testing.assert_close(out["pooler_output"], want.pooler_output.detach())
    assert json.loads(cm.module.metadata["input_names"]) == ["input_ids", "attention_mask"]


def test_keyword_inputs_as_a_dict_and_call_errors() -> None:
    model = Encoder().eval()
    x, mask = torch.randn(2, 3, 4), torch.ones(2, 3, 1)
    cm = cuvil.torch.compile(model, example_inputs={"input_ids": x, "attention_mask": mask})
    _leaves_close(cm(input_ids=x, attention_mask=mask), model(x, mask))
    with pytest.raises(InputError, match=r"does not give \['attention_mask'\]"):
        cm(x)
    plain = cuvil.torch.compile(model, example_inputs=(x,))
    with pytest.raises(InputError, match=r"compiled without \['attention_mask'\]"):
        plain(x, attention_mask=mask)
    with pytest.raises(cuvil.CuvilError, match="does not take"):
        cuvil.torch.compile(model, example_inputs=(x,), example_kwargs={"mask": mask})


def test_namedtuple_return_types_dataclass_none_and_constants() -> None:
    class M(nn.Module):
        def forward(self, x: torch.Tensor):
            top = torch.max(x, dim=1)  # torch.return_types.max
            return Pair(x + 1, {"z": [x * 2, None], "k": 3}), Stats(x.mean(0), top.values)

    model, x = M().eval(), torch.randn(3, 4)
    out, want = cuvil.torch.compile(model, example_inputs=(x,))(x), model(x)
    pair, stats = out
    assert type(pair) is Pair and type(stats) is Stats
    assert pair.second["z"][1] is None and pair.second["k"] == 3
    _leaves_close(out, want)


def test_loaded_artifact_rebuilds_without_the_class(tmp_path: Path) -> None:
    model = Encoder().eval()
    x = torch.randn(2, 3, 4)
    mod = cuvil.torch.compile(model, example_inputs=(x,)).module
    mod.save(str(tmp_path / "e.cuvilir"))
    loaded = cuvil.load(str(tmp_path / "e.cuvilir"))
    recorded = output_structure(loaded)
    assert recorded["type"] == "transformers.modeling_outputs.BaseModelOutputWithPooling"
    outs = cuvil.interpret(loaded, [x.numpy()])
    saved = dict(structure._LIVE_TYPES)
    structure._LIVE_TYPES.clear()  # as in a process that never imported the class
    try:
        rec = structure.rebuild(recorded, outs)
    finally:
        structure._LIVE_TYPES.update(saved)
    assert isinstance(rec, structure.Record)
    assert rec.last_hidden_state is outs[0] and rec[1] is outs[1] and rec.to_tuple() == tuple(outs)
    with pytest.raises(AttributeError, match="no field 'logits'"):
        _ = rec.logits


def test_legacy_literal_structure_still_reads() -> None:
    legacy = structure.loads("(0, [1, {'y': 2}])", 3)
    assert structure.rebuild(legacy, ["a", "b", "c"]) == ("a", ["b", {"y": "c"}])
