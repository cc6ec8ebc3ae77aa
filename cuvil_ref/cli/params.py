"""Click parameter types and shared options: input shapes, ``key=value`` options, targets."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import click


class ShapeType(click.ParamType):
    """``1,3,224,224`` -> ``(1, 3, 224, 224)``; every size a positive integer."""

    name = "shape"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        parts = [p.strip() for p in str(value).replace("x", ",").split(",")]
        try:
            dims = tuple(int(p) for p in parts)
        except ValueError:
            self.fail(
                f"{value!r} is not a shape; write sizes separated by commas, e.g. 1,3,224,224",
                param,
                ctx,
            )
        if not dims or any(d <= 0 for d in dims):
            self.fail(f"{value!r}: every size must be a positive integer", param, ctx)
        return dims


class KeyValueType(click.ParamType):
    """``key=value``; the value is read as JSON when it parses (``4``, ``true``), else a string."""

    name = "key=value"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        key, sep, raw = str(value).partition("=")
        if not sep or not key.strip():
            self.fail(f"{value!r} is not key=value (e.g. loop_unroll_factor=4)", param, ctx)
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw
        return key.strip(), parsed


SHAPE = ShapeType()
KEY_VALUE = KeyValueType()

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def input_shape_option() -> Decorator:
    return click.option(
        "--input-shape",
        "input_shapes",
        type=SHAPE,
        multiple=True,
        help="Shape of one model input, e.g. 1,3,224,224; repeat once per input "
        "(default: the zoo model's or the .pt2 file's example shape).",
    )


def target_option(default: str | None = "ref") -> Decorator:
    return click.option(
        "--target",
        "-t",
        default=default,
        show_default=default is not None,
        help="Target name or alias (see `cuvil targets`), or a JSON target-spec file.",
    )


def target_request(target: str | None, target_spec: str | None) -> str:
    """The one target the user asked for (``--target`` or ``--target-spec``)."""
    if target and target_spec:
        raise click.UsageError("give --target or --target-spec, not both")
    return target_spec or target or "ref"


def options_dict(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise click.UsageError(f"--option {key} is given twice")
        out[key] = value
    return out
