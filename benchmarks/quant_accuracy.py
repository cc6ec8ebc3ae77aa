"""INT8 accuracy of Cuvil's PTQ side by side with torch.ao's own PTQ (x86 backend), as Markdown.

    python benchmarks/quant_accuracy.py            # 224x224 ResNet-18 / MobileNetV2 (docs)
    python benchmarks/quant_accuracy.py --size 64  # what tests/quant/test_accuracy.py runs

* **Digits**: a small CNN trained on ``sklearn.datasets.load_digits()`` (fixed seed, a few epochs);
  top-1 accuracy of fp32, Cuvil int8 and torch.ao int8 on a held-out split.
* **ResNet-18 / MobileNetV2** (``cuvil_ref.zoo``, random weights): output SQNR versus fp32 of Cuvil
  int8 and torch.ao int8, both calibrated on the same batches and measured on other batches.

torch.ao: ``prepare_fx`` / ``convert_fx`` on a deep copy with ``get_default_qconfig_mapping("x86")``
(activations quint8 with ``reduce_range=True``, per-channel qint8 weights), run with
``torch.backends.quantized.engine = "x86"``. The test imports these functions.
"""

from __future__ import annotations

import argparse
import copy
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.interpreter import interpret
from cuvil_ref.quant import quantize_module
from cuvil_ref.quant.calibrate import sqnr_db
from cuvil_ref.zoo import get_model

SEED = 0


@dataclass(frozen=True)
class Digits:
    """load_digits split into train / test tensors (N x 1 x 8 x 8, pixel values / 16)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_digits_split(test_fraction: float = 0.3) -> Digits:
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    y = torch.tensor(data.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(SEED))
    n_test = int(len(y) * test_fraction)
    test, train = perm[:n_test], perm[n_test:]
    return Digits(x[train], y[train], x[test], y[test])


def train_digits_cnn(data: Digits, epochs: int = 8) -> torch.nn.Module:
    """The zoo's digits CNN trained with Adam (fixed seed); returned in eval mode."""
    torch.manual_seed(SEED)
    model, _ = get_model("digits_cnn")
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(SEED)
    for _ in range(epochs):
        for idx in torch.randperm(len(data.y_train), generator=gen).split(64):
            loss = torch.nn.functional.cross_entropy(model(data.x_train[idx]), data.y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


def torch_ao_ptq(model: torch.nn.Module, calibration: list[torch.Tensor]) -> Any:
    """torch.ao FX post-training int8 (x86 backend) of a copy of ``model``."""
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.backends.quantized.engine = "x86"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_fx(
            copy.deepcopy(model).eval(), get_default_qconfig_mapping("x86"), (calibration[0],)
        )
        with torch.no_grad():
            for batch in calibration:
                prepared(batch)
        return convert_fx(prepared)


def cuvil_int8(model: torch.nn.Module, calibration: list[torch.Tensor]) -> Any:
    """Cuvil int8 PTQ (min/max observers, per-channel weights); returns ``f(x) -> ndarray``."""
    module = torch_to_cuvilir(model, example_inputs=(calibration[0],), dynamic_batch=True)
    qmod, _ = quantize_module(module, "int8", [(b.numpy(),) for b in calibration])

    def run(x: torch.Tensor) -> np.ndarray:
        return interpret(qmod, [x.numpy()])[0]

    return run


def digits_figures(epochs: int = 8) -> dict[str, float]:
    """Top-1 accuracy (%) of fp32, Cuvil int8 and torch.ao int8 on the digits test split."""
    data = load_digits_split()
    model = train_digits_cnn(data, epochs)
    calibration = list(data.x_train[:256].split(64))
    with torch.no_grad():
        fp32 = model(data.x_test).argmax(1)
        ao = torch_ao_ptq(model, calibration)(data.x_test).argmax(1)
    ours = torch.from_numpy(cuvil_int8(model, calibration)(data.x_test)).argmax(1)

    def acc(pred: torch.Tensor) -> float:
        return 100.0 * float((pred == data.y_test).float().mean())

    return {"fp32": acc(fp32), "cuvil_int8": acc(ours), "torch_ao_int8": acc(ao)}


def model_sqnr(name: str, size: int, batches: int = 4, batch: int = 2) -> dict[str, float]:
    """Output SQNR (dB) vs fp32 of Cuvil int8 and torch.ao int8 for a zoo model at ``size``."""
    model, _ = get_model(name)
    gen = torch.Generator().manual_seed(SEED)
    calibration = [torch.randn(batch, 3, size, size, generator=gen) for _ in range(batches)]
    evaluation = torch.randn(batch, 3, size, size, generator=gen)
    with torch.no_grad():
        ref = model(evaluation).numpy()
        ao = torch_ao_ptq(model, calibration)(evaluation).numpy()
    ours = cuvil_int8(model, calibration)(evaluation)
    return {"cuvil_int8": sqnr_db(ref, ours), "torch_ao_int8": sqnr_db(ref, ao)}


def markdown(digits: dict[str, float], sqnr: dict[str, dict[str, float]], size: int) -> str:
    lines = [
        "| digits CNN (sklearn load_digits) | top-1 % |",
        "|---|---|",
        *(f"| {k} | {v:.2f} |" for k, v in digits.items()),
        "",
        f"| model ({size}x{size}, random weights) | Cuvil int8 SQNR dB "
        "| torch.ao x86 int8 SQNR dB |",
        "|---|---|---|",
        *(
            f"| {name} | {f['cuvil_int8']:.2f} | {f['torch_ao_int8']:.2f} |"
            for name, f in sqnr.items()
        ),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="input height = width")
    args = parser.parse_args()
    digits = digits_figures()
    sqnr = {name: model_sqnr(name, args.size) for name in ("resnet18", "mobilenet_v2")}
    print(markdown(digits, sqnr, args.size))
    assert all(math.isfinite(v) for v in digits.values())


if __name__ == "__main__":
    main()
