"""docs/ops.md is generated from the registry: every op, its signature, defaults, doc and dtypes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuvil_ref.docs_gen import DEFAULT_OUTPUT, main, render_ops_markdown, signature
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ops import REGISTRY
from cuvil_ref.ops.registry import Attr, OpDef

FAKE = OpDef(
    name="fake_pool",
    inputs=("x", "*rest", "bias?"),
    infer=lambda types, attrs: (types[0],),
    reference=lambda x, **attrs: x,
    doc="""y = pool(x) | with a pipe

    Second paragraph of the doc.""",
    attrs=(
        Attr("kernel", "ints", doc="window size"),
        Attr("mode", "str", "max", "reduction", choices=("max", "avg")),
        Attr("eps", "float", -0.0),
        Attr("axis", "int?", None),
    ),
    version=3,
    category="zz_test",
    dtypes=frozenset({DType.i8, DType.f32}),
    num_outputs=-1,
)


def test_signature_shows_inputs_kinds_and_defaults() -> None:
    expected = (
        'fake_pool(x, *rest, bias?) {kernel: ints, mode: str = "max", eps: float = -0.0, '
        "axis: int? = none}"
    )
    assert signature(FAKE) == expected


def test_op_section_lists_everything_about_the_op() -> None:
    text = render_ops_markdown([FAKE])
    assert "1 ops in 1 categories" in text
    assert "## zz_test" in text and "### fake_pool" in text
    assert "| [`fake_pool`](#fake_pool) | zz_test | 3 |" in text
    assert "y = pool(x) \\| with a pipe" in text  # escaped inside the summary table
    assert "Second paragraph of the doc." in text
    assert "**version:** 3" in text and "**input dtypes:** f32, i8" in text
    assert "variable number of outputs" in text
    assert "| `kernel` | ints (a tuple of ints) | required | window size |" in text
    assert '| `mode` | str (a string) | `"max"` | reduction (one of "max", "avg") |' in text


def test_every_registered_op_is_documented() -> None:
    text = render_ops_markdown()
    for d in REGISTRY:
        assert f"\n### {d.name}\n" in text
        assert signature(d) in text
        assert f"\n## {d.category}\n" in text
    assert render_ops_markdown() == text  # deterministic


def test_write_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "docs" / "ops.md"
    assert main(["--check", "--output", str(out)]) == 1  # missing
    assert "missing" in capsys.readouterr().err
    assert main(["--output", str(out)]) == 0
    assert main(["--check", "--output", str(out)]) == 0
    out.write_text(out.read_text() + "edited by hand\n")
    assert main(["--check", "--output", str(out)]) == 1
    assert "stale: run `python -m cuvil_ref.docs_gen`" in capsys.readouterr().err


def test_committed_ops_md_is_current() -> None:
    assert DEFAULT_OUTPUT.exists(), "docs/ops.md is missing: run python -m cuvil_ref.docs_gen"
    assert main(["--check"]) == 0, "docs/ops.md is stale: run python -m cuvil_ref.docs_gen"
