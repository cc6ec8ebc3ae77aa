"""Numpy files for the CLI: inputs for ``cuvil run``, calibration data, saved outputs.

Files are read with ``allow_pickle=False``: a ``.npy``/``.npz`` file is data and never runs code.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cuvil_ref.errors import CuvilError, InputError
from cuvil_ref.ir.graph import Module
from cuvil_ref.ir.types import TensorType


def read_arrays(path: str) -> list[np.ndarray]:
    """The arrays of a ``.npy`` (one) or ``.npz`` (all, in file order) file."""
    if not Path(path).is_file():
        raise CuvilError(f"array file {path!r} does not exist")
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise CuvilError(f"{path!r} is not a .npy/.npz array file: {exc}") from None
    if isinstance(data, np.lib.npyio.NpzFile):
        with data:
            arrays = [data[k] for k in data.files]
        if not arrays:
            raise CuvilError(f"{path!r} holds no arrays")
        return arrays
    return [data]


def read_inputs(paths: Sequence[str], module: Module) -> list[np.ndarray]:
    """One array per module input, from ``--input`` files (each ``.npy`` one, ``.npz`` several)."""
    arrays = [a for p in paths for a in read_arrays(p)]
    want = module.inputs
    if len(arrays) != len(want):
        sig = ", ".join(f"%{v.name}: {v.type}" for v in want)
        raise InputError(
            f"the module takes {len(want)} input(s) ({sig}); the --input files hold "
            f"{len(arrays)} array(s)"
        )
    return arrays


def calibration_batches(path: str, module: Module) -> list[tuple[np.ndarray, ...]]:
    """Calibration batches from ``path``: one array per model input (an ``.npz`` in input order).

    For an input of shape S an array may be one batch (shape S), a stack of batches (shape
    ``(N, *S)``), or samples along the batch axis (shape ``(M, *S[1:])``, cut into batches of
    ``S[0]``; with a symbolic batch dim the whole array is one batch).
    """
    arrays = read_arrays(path)
    if len(arrays) != len(module.inputs):
        raise CuvilError(
            f"calibration file {path!r} holds {len(arrays)} array(s), the model has "
            f"{len(module.inputs)} input(s); use an .npz with one array per input, in order"
        )
    per_input = [_batches(a, v.type, path, v.name) for a, v in zip(arrays, module.inputs)]
    counts = {len(b) for b in per_input}
    if len(counts) != 1:
        raise CuvilError(
            f"calibration file {path!r}: the inputs give different numbers of batches "
            f"{sorted(counts)}"
        )
    return list(zip(*per_input))


def _batches(array: np.ndarray, t: TensorType, path: str, name: str) -> list[np.ndarray]:
    shape = t.shape
    a = array.astype(t.dtype.numpy, copy=False) if t.dtype.is_float else array

    def fits(got: tuple[int, ...], want: Sequence[int | str]) -> bool:
        return len(got) == len(want) and all(
            isinstance(w, str) or w == g for g, w in zip(got, want)
        )

    if fits(a.shape, shape):
        return [a]
    if fits(a.shape[1:], shape):
        return list(a)
    if a.ndim == len(shape) and fits(a.shape[1:], shape[1:]) and isinstance(shape[0], int):
        b = shape[0]
        if a.shape[0] % b == 0:
            return [a[i : i + b] for i in range(0, a.shape[0], b)]
    raise CuvilError(
        f"calibration file {path!r}: array of shape {list(a.shape)} does not fit input %{name} "
        f"of type {t}; give shape {list(shape)}, (N, {', '.join(map(str, shape))}) or samples "
        "along the batch axis"
    )


def write_outputs(path: str, outputs: Sequence[np.ndarray], names: Sequence[str]) -> None:
    """``.npy`` for a single output, ``.npz`` (keys = output value names) for any number."""
    if path.endswith(".npz"):
        np.savez(path, **dict(zip(names, outputs)))  # type: ignore[arg-type]  # numpy stub
    elif path.endswith(".npy"):
        if len(outputs) != 1:
            raise CuvilError(
                f"the module has {len(outputs)} outputs; a .npy file holds one, use an .npz path"
            )
        np.save(path, outputs[0])
    else:
        raise CuvilError(f"output file {path!r} must end in .npy or .npz")
