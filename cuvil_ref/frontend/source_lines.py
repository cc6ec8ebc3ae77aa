"""The user's source line of a captured node, read from the stack trace torch recorded.

torch records the whole Python stack at the moment a node was created (``node.stack_trace``,
outermost frame first). The innermost frames are torch's own (``nn/modules/module.py``,
``fx/proxy.py``); the line the user wrote is the last frame outside torch and outside the
cuvil_ref package. ``torch.fx.symbolic_trace`` records stacks only with
``record_stack_traces = True``.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')
# Frames inside the cuvil_ref package (capture, compile) are never the user's — except the model
# zoo, whose models are user code like any other.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ZOO_DIR = os.path.join(_PACKAGE_DIR, "zoo") + os.sep
# Code torch generates (``<eval_with_key>.3``) and frozen importlib frames are not the user's;
# other pseudo-files (``<stdin>``, ``<ipython-input-...>``, ``<string>``) are.
_GENERATED = ("<eval_with_key", "<frozen")


@dataclass(frozen=True)
class SourceLine:
    """One frame: file, line number, function and the code text (may be empty)."""

    file: str
    line: int
    func: str
    code: str = ""

    def short(self) -> str:
        """``path:LINE in func`` with the path relative to the working directory when inside it."""
        path = self.file
        try:
            rel = os.path.relpath(path)
            if not rel.startswith(".."):
                path = rel
        except ValueError:  # different drive (Windows)
            pass
        return f"{path}:{self.line} in {self.func}"

    def describe(self) -> str:
        """``path:LINE in func: code`` for error messages."""
        return f"{self.short()}: {self.code}" if self.code else self.short()


@functools.lru_cache(maxsize=1)
def _ignored_dirs() -> tuple[str, ...]:
    dirs = [_PACKAGE_DIR + os.sep]
    try:
        import torch

        dirs.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    except ImportError:  # pragma: no cover - the frontend needs torch anyway
        pass
    return tuple(dirs)


def parse_frames(stack_trace: str | None) -> list[SourceLine]:
    """All frames of a formatted stack trace, outermost first."""
    frames: list[SourceLine] = []
    if not stack_trace:
        return frames
    lines = stack_trace.splitlines()
    for i, text in enumerate(lines):
        m = _FRAME.match(text)
        if m is None:
            continue
        code = ""
        if i + 1 < len(lines) and _FRAME.match(lines[i + 1]) is None:
            code = lines[i + 1].strip()
        frames.append(SourceLine(m["file"], int(m["line"]), m["func"].strip(), code))
    return frames


def user_frame(stack_trace: str | None) -> SourceLine | None:
    """The innermost frame outside torch and the Cuvil frontend, or None if there is none."""
    return _user_frame(stack_trace) if stack_trace else None


# The nodes of a model's repeated layers share their stack traces (the same lines, called from
# the same loop), so a 12-layer encoder parses each distinct trace once instead of 12 times.
@functools.lru_cache(maxsize=1024)
def _user_frame(stack_trace: str) -> SourceLine | None:
    ignored = _ignored_dirs()
    for frame in reversed(parse_frames(stack_trace)):
        path = os.path.abspath(frame.file)
        if frame.file.startswith("<"):
            if not frame.file.startswith(_GENERATED):
                return frame
            continue
        if not path.startswith(ignored) or path.startswith(_ZOO_DIR):
            return frame
    return None
