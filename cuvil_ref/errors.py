"""Every error Cuvil raises on purpose.

Each error names what it is about (the op, the node and its source line, the pass, the target, the
file) and, where one exists, what would work instead. Callers catch :class:`CuvilError`.

Messages are bounded: a message longer than :data:`MAX_MESSAGE` characters keeps its head and tail
(a hostile file must not make an error message megabytes long), and :func:`shorten` clips the
pieces of input (names, tokens, lines) that messages quote.
"""

from __future__ import annotations

#: The longest message a CuvilError carries; longer ones keep their head and tail.
MAX_MESSAGE = 4000


def shorten(text: str, limit: int = 80) -> str:
    """``text`` clipped to about ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    keep = max(limit - 30, 8)
    return f"{text[: keep // 2]}...({len(text) - keep} characters)...{text[-(keep - keep // 2) :]}"


class CuvilError(Exception):
    """Base class of all Cuvil errors."""

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str) and len(args[0]) > MAX_MESSAGE:
            args = (shorten(args[0], MAX_MESSAGE), *args[1:])
        super().__init__(*args)


class IRError(CuvilError):
    """A malformed IR object (bad type, bad attribute, unknown value)."""


class VerificationError(IRError):
    """The verifier found a broken invariant; the message names the node and its source line."""


class ShapeError(IRError):
    """Shape or dtype inference rejected an op's inputs or attributes."""


class UnknownOpError(IRError):
    """An op name that the registry does not know."""


class ParseError(IRError):
    """The textual IR could not be parsed; the message gives line and column."""


class InterpretError(CuvilError):
    """An op failed while the reference interpreter executed it."""


class InputError(CuvilError):
    """Inputs given to a compiled module or the interpreter do not match its signature."""


class WeightsChangedError(CuvilError):
    """A compiled module's weights were written in place after compile (it is a snapshot)."""


class CaptureError(CuvilError):
    """A PyTorch model could not be captured (training mode, control flow, unsupported op...)."""


class TorchExportError(CaptureError):
    """torch.export (or its decomposition) could not trace the model; torch.fx may still."""


class UnsupportedOpError(CaptureError):
    """A torch op or module with no Cuvil mapping."""


class PassError(CuvilError):
    """An optimization pass failed or broke the IR; the message names the pass."""


class TargetError(CuvilError):
    """An unknown, unavailable or misconfigured target."""


class ArtifactError(CuvilError):
    """Base class for .cuvilir artifact problems."""


class ArtifactFormatError(ArtifactError):
    """A malformed or truncated artifact."""


class ArtifactIntegrityError(ArtifactError):
    """An artifact whose digests or signature do not match its content."""


class ArtifactVersionError(ArtifactError):
    """An artifact written in an incompatible format version."""


class QuantizationError(CuvilError):
    """Quantization could not proceed (bad calibration data, impossible ranges...)."""
