"""Capture errors that name the torch op, the module path, the user's source line and a fix.

Every message has the same shape, so users learn to read it once::

    <what went wrong> (torch node 'softmin', module 'head', at model.py:12 in forward: y = ...);
    <what to do>
"""

from __future__ import annotations

import difflib
import traceback
from dataclasses import dataclass

from cuvil_ref.errors import CaptureError, UnsupportedOpError
from cuvil_ref.frontend.source_lines import SourceLine, user_frame
from cuvil_ref.ir.graph import Provenance


@dataclass(frozen=True)
class Location:
    """Where a torch node came from; ``describe()`` is spliced into error messages."""

    torch_node: str | None = None
    module_path: str | None = None
    source: SourceLine | None = None

    def provenance(self) -> Provenance:
        return Provenance(
            self.torch_node, self.module_path, self.source.short() if self.source else None
        )

    def describe(self) -> str:
        parts = []
        if self.torch_node:
            parts.append(f"torch node '{self.torch_node}'")
        parts.append(f"module '{self.module_path}'" if self.module_path else "the top-level module")
        parts.append(f"at {self.source.describe()}" if self.source else "source line unknown")
        return ", ".join(parts)


def unsupported(target: str, where: Location, known: list[str]) -> UnsupportedOpError:
    """The error for a torch op with no Cuvil mapping, with the nearest supported names."""
    parts = target.replace("aten::", "aten.").split(" ")[0].split(".")
    short = (parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[-1]).rstrip("_")
    near = difflib.get_close_matches(short, known, n=3, cutoff=0.5)
    hint = f" Nearest supported: {', '.join(near)}." if near else ""
    return UnsupportedOpError(
        f"'{target}' ({where.describe()}) is not supported by Cuvil; supported ops: see "
        f"docs/ops.md.{hint} Rewrite that line with supported ops, or run this part of the model "
        "outside the compiled module."
    )


def training_mode_error(modules: list[tuple[str, str]]) -> CaptureError:
    """``modules``: (path, class name) of submodules still in training mode."""
    shown = ", ".join(f"'{p or '<top>'}' ({c})" for p, c in modules[:5])
    more = f" and {len(modules) - 5} more" if len(modules) > 5 else ""
    return CaptureError(
        f"the model is in training mode (modules {shown}{more}); Cuvil compiles inference "
        "graphs: call model.eval() before capture"
    )


def exception_source(exc: BaseException) -> SourceLine | None:
    """The user's line in an exception's traceback (last frame outside torch and Cuvil)."""
    text = "".join(traceback.format_tb(exc.__traceback__))
    return user_frame(text)


def located(exc: Exception, target: str, where: Location) -> CaptureError:
    """Re-raise a conversion failure naming the torch op and its location."""
    cls = type(exc) if isinstance(exc, CaptureError) else CaptureError
    return cls(f"while converting '{target}' ({where.describe()}): {exc}")
