"""RiskCoverageDisplay: curves, references and figure layout (Agg backend)."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cr_sklearn import (
    CRClassifier,
    CROrdinalRegressor,
    RiskCoverageDisplay,
    aurc_score,
    risk_coverage_curve,
)

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SMALL = dict(hidden_layer_sizes=(8,), max_iter=20, random_state=0)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def split(pima):
    X, y = pima
    return X[:400], y[:400], X[400:600], y[400:600]


@pytest.fixture(scope="module")
def models(split):
    X, y, _, _ = split
    cr = CRClassifier(**SMALL).fit(X, y)
    logreg = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    return cr, logreg


def _area_under(line):
    x, y = line.get_xdata(), line.get_ydata()
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))


def test_one_curve_per_signal_and_the_references(models, split):
    cr, _ = models
    _, _, X, y = split
    display = RiskCoverageDisplay.from_estimator(cr, X, y)
    names = ["max_proba", "input_sensitivity", "input_distance", "mc_dropout"]
    assert list(display.lines_) == names
    assert display.line_ is display.lines_["max_proba"]
    assert len(display.ax_.lines) == len(names) + 2  # + oracle and random
    assert display.figure_ is display.ax_.figure
    y_pred = cr.predict(X)
    error_rate = np.mean(y_pred != y)
    for name, line in display.lines_.items():
        # The drawn line is the exact curve: its area is the AURC.
        assert _area_under(line) == pytest.approx(display.aurc[name], abs=2e-3)
        assert line.get_xdata()[-1] == 1.0
        assert line.get_ydata()[-1] == pytest.approx(error_rate)
    proba = cr.predict_proba(X).max(axis=1)
    assert display.aurc["max_proba"] == pytest.approx(aurc_score(y, y_pred, proba))
    coverage, risk, _ = risk_coverage_curve(y, y_pred, proba)
    line = display.lines_["max_proba"]
    np.testing.assert_allclose(np.interp(coverage, *line.get_data()), risk)
    np.testing.assert_allclose(display.random_line_.get_ydata(), error_rate)
    # The oracle is the lowest curve.
    assert _area_under(display.oracle_line_) <= min(
        _area_under(line) for line in display.lines_.values()
    )
    labels = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert labels[0].startswith("max probability (AURC ")
    assert any(label.startswith("oracle (AURC") for label in labels)
    assert any(label.startswith("random (AURC") for label in labels)
    assert display.ax_.get_xlabel().startswith("coverage")
    assert display.ax_.get_ylabel() == "risk: error rate of the kept"
    assert display.ax_.get_xlim() == (0.0, 1.0)


def test_legend_outside_the_data_area_and_tight_layout(models, split, tmp_path):
    cr, logreg = models
    _, _, X, y = split
    display = RiskCoverageDisplay.from_estimator(cr, X, y, name="CR")
    RiskCoverageDisplay.from_estimator(logreg, X, y, ax=display.ax_)
    fig = display.figure_
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = display.ax_.get_legend().get_window_extent(renderer)
    axes = display.ax_.get_window_extent(renderer)
    # The legend sits right of the axes: no overlap with the data area.
    assert legend.x0 >= axes.x1
    assert not legend.overlaps(axes)
    # Everything drawn fits the figure (nothing cut at the edges).
    tight = fig.get_tightbbox(renderer)
    box = fig.bbox_inches
    assert tight.x0 >= box.x0 - 1e-6 and tight.y0 >= box.y0 - 1e-6
    assert tight.x1 <= box.x1 + 1e-6 and tight.y1 <= box.y1 + 1e-6
    path = tmp_path / "risk_coverage.png"
    fig.savefig(path)
    assert path.stat().st_size > 0


def test_two_models_on_one_axis(models, split):
    cr, logreg = models
    _, _, X, y = split
    first = RiskCoverageDisplay.from_estimator(cr, X, y, signals=["max_proba"])
    second = RiskCoverageDisplay.from_estimator(
        logreg, X, y, signals=["max_proba", "gradient_norm"], ax=first.ax_
    )
    assert second.ax_ is first.ax_
    assert len(first.ax_.lines) == 3 + 4
    labels = [t.get_text() for t in first.ax_.get_legend().get_texts()]
    # The second model is named after its class when the axes hold curves.
    assert "LogisticRegression: max probability" in labels[3]
    assert any(label.startswith("LogisticRegression: oracle") for label in labels)
    # Its references are drawn in another grey.
    assert first.oracle_line_.get_color() != second.oracle_line_.get_color()
    # A linear model's gradient norm is constant: a flat line at its risk.
    flat = second.lines_["gradient_norm"].get_ydata()
    np.testing.assert_allclose(flat, np.mean(logreg.predict(X) != y))


def test_from_predictions_array_dict_and_options():
    rng = np.random.RandomState(0)
    y_true = rng.randint(2, size=100)
    y_pred = np.where(rng.rand(100) < 0.8, y_true, 1 - y_true)
    good = (y_pred == y_true) + rng.normal(scale=0.5, size=100)
    display = RiskCoverageDisplay.from_predictions(y_true, y_pred, good)
    assert list(display.lines_) == ["confidence"]
    display = RiskCoverageDisplay.from_predictions(
        y_true,
        y_pred,
        {"good": good, "noise": rng.rand(100)},
        plot_oracle=False,
        plot_random=False,
        name="model",
    )
    assert list(display.lines_) == ["good", "noise"]
    assert display.oracle_line_ is None and display.random_line_ is None
    assert len(display.ax_.lines) == 2
    labels = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert labels[0].startswith("model: good (AURC ")
    assert display.aurc["good"] < display.aurc["noise"]
    _, ax = plt.subplots()
    assert RiskCoverageDisplay.from_predictions(y_true, y_pred, good, ax=ax).ax_ is ax
    with pytest.raises(ValueError, match="empty"):
        RiskCoverageDisplay.from_predictions(y_true, y_pred, {})
    with pytest.raises(ValueError, match="same length"):
        RiskCoverageDisplay.from_predictions(
            y_true, y_pred, {"a": good, "b": good[:-1]}
        )
    with pytest.raises(ValueError, match="NaN"):
        RiskCoverageDisplay.from_predictions(y_true, y_pred, np.full(100, np.nan))


def test_ordinal_estimator_draws_the_rank_error():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(240, 3))
    y = np.digitize(X[:, 0] + rng.normal(scale=0.5, size=240), [-0.5, 0.5])
    model = CROrdinalRegressor(**SMALL).fit(X, y)
    display = RiskCoverageDisplay.from_estimator(model, X, y)
    assert display.loss == "absolute"
    assert display.ax_.get_ylabel() == "risk: mean absolute error (ranks)"
    labels = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert labels[0].startswith("mass within one class (AURC ")
    assert "margin" in display.lines_
