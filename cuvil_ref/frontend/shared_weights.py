"""Zero-copy weights: IR constants that view a torch model's own tensor memory.

Copying every parameter out of torch costs more than the rest of a transformer's conversion
(BERT-base: 440 MB of fresh pages). ``cuvil.torch.compile`` therefore lets the captured
module's constants *view* the parameters' memory (read-only numpy views) and keeps the
promise that a compiled module is a snapshot of the weights at compile time by watching them:
:class:`SharedWeights` records each viewed tensor with torch's version counter, which every
in-place write through torch bumps (``p.mul_()`` under ``no_grad``, ``load_state_dict``,
``torch.nn.init``, optimizer steps). A compiled module whose weights changed refuses to run
(:class:`~cuvil_ref.errors.WeightsChangedError`) instead of mixing old folded constants with
new raw ones; rebinding a parameter (``m.weight = Parameter(...)``, ``p.data = t``) leaves the
viewed memory alone, so the snapshot stays valid.

Not shared (copied instead): tensors that are not contiguous CPU tensors, and inference-mode
tensors, which have no version counter to watch.

Not detected: writes that bypass torch's version counter -- in place through ``p.data``
(``p.data.copy_(w)``; torch does not count those either, which is why autograd misses them),
through a numpy array from ``p.numpy()``, or through the raw storage. Such a write after
compile reaches the compiled module's raw weights but not what was folded from them, so do not
write weights that way after compiling (or compile again). Torch's own frozen compilation makes
the same demand (Inductor's ``freezing``: "after freezing, weights can no longer be updated").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.errors import WeightsChangedError


class SharedWeights:
    """The torch tensors whose memory a captured module's constants view, with the version
    counter of each at capture time."""

    def __init__(self) -> None:
        self._tensors: list[Any] = []
        self._names: list[str] = []
        self._versions: list[int] = []
        self._total = 0

    def __len__(self) -> int:
        return len(self._tensors)

    def view(self, name: str, tensor: Any) -> np.ndarray | None:
        """A read-only numpy view of ``tensor``'s memory, recorded under ``name``; None when the
        tensor cannot be shared safely (the caller copies it)."""
        import torch

        if tensor.device.type != "cpu" or not tensor.is_contiguous():
            return None
        try:
            version = tensor._version
        except RuntimeError:  # an inference-mode tensor: no version counter to watch
            return None
        t = tensor.detach()
        if t.dtype == torch.bfloat16:
            from cuvil_ref.ir.dtypes import DType

            array = t.view(torch.int16).numpy().view(DType.bf16.numpy)
        else:
            array = t.numpy()
        array.flags.writeable = False  # this view only; torch's own tensor stays writable
        self._tensors.append(tensor)
        self._names.append(name)
        self._versions.append(version)
        self._total += version
        return array

    def check(self) -> None:
        """Raise WeightsChangedError if any shared tensor was written in place since capture.

        Version counters never decrease, so one sum compared against the capture-time sum
        detects any write; the names are looked up only then."""
        if sum(t._version for t in self._tensors) == self._total:
            return
        changed = [
            n for n, t, v in zip(self._names, self._tensors, self._versions) if t._version != v
        ]
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if changed[5:] else "")
        raise WeightsChangedError(
            f"the model's weights were changed in place after compile ({shown}); the compiled "
            "module is a snapshot of the weights at compile time and shares their memory, so it "
            "cannot run with the changed values. Compile the model again to use the new weights"
        )
