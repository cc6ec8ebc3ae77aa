"""Calibration: batch normalization, observers, and the errors a user can run into."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cuvil_ref  # noqa: F401  (registers the ops)
from cuvil_ref.errors import QuantizationError
from cuvil_ref.ir import DType, Graph, GraphBuilder, Module, TensorType
from cuvil_ref.ops.qarith import MIN_SCALE, choose_qparams
from cuvil_ref.quant import quantize_module
from cuvil_ref.quant.calibrate import OBSERVERS, calibrate, normalize_batches, sqnr_db


def tiny(op: str = "relu") -> Graph:
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 4), DType.f32))
    w = b.constant("w", np.eye(4, dtype=np.float32))
    return b.build([b.op(op, [b.op("linear", [x, w])])])


def data(n: int = 2, seed: int = 0) -> list[tuple[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(3, 4)).astype(np.float32),) for _ in range(n)]


def test_normalize_batches_accepts_common_shapes() -> None:
    g = tiny()
    x = np.ones((2, 4), np.float64)
    (single,) = normalize_batches(g, x)  # one array is one batch, cast to f32
    assert single[0].dtype == np.float32
    assert len(normalize_batches(g, [x, x, x])) == 3
    assert len(normalize_batches(g, [(x,), (x,)])) == 2
    assert len(normalize_batches(g, (x,))) == 1  # an example-inputs tuple
    torch = pytest.importorskip("torch")
    (t,) = normalize_batches(g, [torch.ones(2, 4)])
    assert isinstance(t[0], np.ndarray)


def test_normalize_batches_errors() -> None:
    g = tiny()
    with pytest.raises(QuantizationError, match="empty"):
        normalize_batches(g, [])
    with pytest.raises(QuantizationError, match="batch 0 has 3 arrays but the graph takes 1"):
        normalize_batches(g, [(np.ones((2, 4)), np.ones((2, 4)), np.ones(1))])


def test_nan_in_calibration_data_is_named() -> None:
    bad = np.ones((2, 4), np.float32)
    bad[1, 2] = np.nan
    with pytest.raises(QuantizationError, match=r"batch 1, input %x contains NaN"):
        quantize_module(Module(tiny()), calibration_data=[np.ones((2, 4), np.float32), bad])


def test_nan_inside_the_graph_is_named() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 2), DType.f32))
    out = b.op("sqrt", [x], name="root")
    with pytest.raises(QuantizationError, match="%root.*NaN"):
        calibrate(b.build([out]), [(np.array([[1, -1], [2, 3]], np.float32),)])


def test_missing_calibration_data_warns_then_raises() -> None:
    with (
        pytest.warns(UserWarning, match="representative"),
        pytest.raises(QuantizationError, match="calibration_data"),
    ):
        quantize_module(Module(tiny()))


def test_example_inputs_used_when_no_calibration_data() -> None:
    (x,) = data(1)[0]
    with pytest.warns(UserWarning, match="representative"):
        qmod, report = quantize_module(Module(tiny()), example_inputs=(x,))
    assert report["calibration_batches"] == 1 and "qlinear" in qmod.graph.op_histogram()


def test_all_zero_activation_gets_min_scale() -> None:
    qparams = calibrate(tiny(), [(np.zeros((3, 4), np.float32),)])
    assert {name: float(s) for name, (s, _) in qparams.items()} == {
        "x": MIN_SCALE,
        "linear": MIN_SCALE,
        "relu": MIN_SCALE,
    }
    assert all(zp == -128 for _, zp in qparams.values())
    qmod, _ = quantize_module(Module(tiny()), calibration_data=[np.zeros((3, 4), np.float32)])
    assert "qlinear" in qmod.graph.op_histogram()


@pytest.mark.parametrize("observer", sorted(OBSERVERS))
def test_every_observer_calibrates(observer: str) -> None:
    qmod, report = quantize_module(
        Module(tiny("sigmoid")), calibration_data=data(3), observer=observer
    )
    assert report["observer"] == observer
    assert report["output_sqnr_db"][0] > 25


def test_observer_choice_matters_and_options_pass_through() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2000, 4)).astype(np.float32)
    x[0, 0] = 100.0  # one outlier
    minmax = calibrate(tiny(), [(x,)], "minmax")["x"]
    pct = calibrate(tiny(), [(x,)], "percentile", percentile=99.0)["x"]
    assert minmax == choose_qparams(float(x.min()), 100.0, False)
    assert pct[0] < minmax[0] / 5
    with pytest.raises(QuantizationError, match="unknown observer 'best'"):
        quantize_module(Module(tiny()), calibration_data=data(), observer="best")
    with pytest.raises(QuantizationError, match="does not take options"):
        calibrate(tiny(), data(), "minmax", bogus=1)


def test_sqnr_db() -> None:
    ref = np.array([3.0, 4.0])
    assert sqnr_db(ref, ref) == math.inf
    assert sqnr_db(ref, ref + np.array([0.3, 0.4])) == pytest.approx(20.0)
    assert sqnr_db(np.zeros(2), ref) == -math.inf


def test_unsupported_mode_is_rejected() -> None:
    with pytest.raises(QuantizationError, match="'int4'"):
        quantize_module(Module(tiny()), "int4", data())
