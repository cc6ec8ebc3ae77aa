"""Capture errors name the torch op, the module path, the user's source line and what to do."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from cuvil_ref.errors import CaptureError, UnsupportedOpError
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.frontend.source_lines import user_frame
from cuvil_ref.zoo import get_model


class Head(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(x, dim=1).values  # not in Cuvil's op set


class WithHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.head = Head()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.fc(x))


class Branchy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # data-dependent control flow
            return x * 2
        return x


def test_training_mode_says_call_eval() -> None:
    model, shape = get_model("digits_cnn")
    model.train()
    with pytest.raises(
        CaptureError, match=r"training mode .*'bn1' \(BatchNorm2d\).*model\.eval\(\)"
    ):
        torch_to_cuvilir(model, input_shape=shape)


@pytest.mark.parametrize(("capture", "op"), [("fx", "cummax"), ("export", "aten.cummax")])
def test_unsupported_op_names_op_module_line_and_docs(capture: str, op: str) -> None:
    with pytest.raises(UnsupportedOpError) as info:
        torch_to_cuvilir(WithHead().eval(), input_shape=(2, 4), capture=capture)
    msg = str(info.value)
    assert op in msg
    assert "module 'head'" in msg
    assert "test_errors.py:" in msg and "torch.cummax(x, dim=1)" in msg
    assert "is not supported by Cuvil; supported ops: see docs/ops.md" in msg
    assert "Nearest supported: max" in msg


def test_fx_control_flow_suggests_export() -> None:
    with pytest.raises(CaptureError) as info:
        torch_to_cuvilir(Branchy().eval(), input_shape=(3,), capture="fx")
    msg = str(info.value)
    assert "torch.fx could not trace Branchy" in msg
    assert "test_errors.py:" in msg and "if x.sum() > 0" in msg
    assert "use capture='export'" in msg


def test_export_failure_is_a_capture_error_with_advice() -> None:
    with pytest.raises(CaptureError) as info:
        torch_to_cuvilir(Branchy().eval(), input_shape=(3,), capture="export")
    msg = str(info.value)
    assert "torch.export could not export Branchy" in msg
    assert "no data-dependent Python branches" in msg


def test_bad_arguments_are_named() -> None:
    with pytest.raises(CaptureError, match="exactly one of input_shape"):
        torch_to_cuvilir(nn.ReLU().eval())
    with pytest.raises(CaptureError, match="capture='jit' is not one of"):
        torch_to_cuvilir(nn.ReLU().eval(), input_shape=(2,), capture="jit")
    with pytest.raises(CaptureError, match="axis 3 is out of range"):
        torch_to_cuvilir(nn.ReLU().eval(), input_shape=(2,), dynamic_dims={3: "n"})


def test_shape_errors_carry_the_location() -> None:
    class Bad(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.matmul(x, x)

    with pytest.raises(CaptureError, match=r"while converting .*matmul.*test_errors\.py:"):
        torch_to_cuvilir(Bad().eval(), input_shape=(2, 3), capture="fx")


def test_user_frame_skips_torch_frames() -> None:
    trace = (
        '  File "/home/u/model.py", line 7, in forward\n    y = self.conv(x)\n'
        f'  File "{torch.__file__.rsplit("/", 1)[0]}/nn/modules/conv.py", line 5, in forward\n'
        "    return F.conv2d(x)\n"
    )
    frame = user_frame(trace)
    assert frame is not None and (frame.line, frame.code) == (7, "y = self.conv(x)")
