"""Tests of the Displays in cr_sklearn.plotting (Agg backend)."""

import numpy as np
import pytest
from conftest import FAST
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cr_sklearn import CRClassifier, CROrdinalRegressor

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from cr_sklearn.plotting import (  # noqa: E402
    ActivationDisplay,
    GradientNormDisplay,
    LossCurveDisplay,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def two_layer(pima):
    X, y = pima
    params = {**FAST, "hidden_layer_sizes": (6, 4), "early_stopping": True}
    return CRClassifier(**params).fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_activation_grid_refuses_a_member_model(pima):
    X, y = pima
    members = CRClassifier(**FAST, n_members=3).fit(X[:200], y[:200])
    with pytest.raises(ValueError, match="n_members=3 cross-fitted members"):
        ActivationDisplay.from_estimator(members, X)


def test_activation_grid_one_curve_per_neuron(two_layer, pima):
    X, _ = pima
    display = ActivationDisplay.from_estimator(two_layer, X, n_neurons=5)
    # Layer 1 has 6 neurons (5 shown), layer 2 has 4: the 5th cell is off.
    assert display.ax_.shape == (2, 5)
    assert [len(lines) for lines in display.lines_] == [5, 4]
    assert not display.ax_[1, 4].axison
    for row, lines in zip(display.ax_, display.lines_, strict=False):
        for ax, line in zip(row, lines, strict=False):
            assert list(ax.lines) == [line]
            assert len(line.get_xdata()) == 100
    assert display.ax_[0, 0].get_ylabel() == "layer 1"
    assert display.ax_[1, 0].get_xlabel() == "pre-activation z"
    assert display.ax_[0, 0].get_title().startswith("neuron ")
    assert display.figure_ is display.ax_[0, 0].figure


def test_activation_curves_are_the_learned_polynomials(two_layer, pima):
    X, _ = pima
    display = ActivationDisplay.from_estimator(two_layer, X, order="index")
    act = two_layer.module_.activations[0]
    import torch

    grid = display.grids[0]
    with torch.no_grad():
        expected = act(torch.as_tensor(grid, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(display.values[0], expected, rtol=1e-4, atol=1e-4)
    # The range is the one the data produced in the first layer.
    module = two_layer.module_
    z = module.hidden[0](module.transform_input(torch.as_tensor(X))).numpy()
    np.testing.assert_allclose(grid[0], z.min(0), atol=1e-3)
    np.testing.assert_allclose(grid[-1], z.max(0), atol=1e-3)


def test_activation_pipeline_and_ordinal(pima):
    X, y = pima
    pipe = make_pipeline(
        StandardScaler(), CRClassifier(**{**FAST, "hidden_layer_sizes": (3,)})
    ).fit(X, y)
    display = ActivationDisplay.from_estimator(pipe, X)
    assert display.ax_.shape == (1, 3)
    ordinal = CROrdinalRegressor(**{**FAST, "hidden_layer_sizes": (4,)}).fit(X, y)
    assert len(ActivationDisplay.from_estimator(ordinal, X).lines_[0]) == 4


def test_activation_errors(two_layer, pima):
    X, _ = pima
    with pytest.raises(TypeError, match="not a fitted CR estimator"):
        ActivationDisplay.from_estimator(
            LogisticRegression(max_iter=1000).fit(X, pima[1]), X
        )
    with pytest.raises(ValueError, match="order"):
        ActivationDisplay.from_estimator(two_layer, X, order="random")
    _, small = plt.subplots(1, 2, squeeze=False)
    with pytest.raises(ValueError, match="at least"):
        ActivationDisplay.from_estimator(two_layer, X, ax=small)


def test_gradient_norms_single(two_layer, pima):
    X, _ = pima
    display = GradientNormDisplay.from_estimator(two_layer, X, bins=20)
    tau = display.taus_["CRClassifier"]
    expected = two_layer.input_gradient_norms(X)
    assert tau == pytest.approx(np.percentile(expected, 99) / expected.mean())
    assert len(display.ax_.patches) == 1  # one filled step histogram
    mean_line, tail_line = display.lines_["CRClassifier"]
    assert mean_line.get_xdata()[0] == pytest.approx(1.0)
    assert tail_line.get_xdata()[0] == pytest.approx(tau)
    assert f"{tau:.3f}" in display.ax_.get_title()
    assert display.ax_.get_xlabel() == "input-gradient norm / mean"
    assert display.ax_.get_ylabel() == "samples"


def test_gradient_norms_several(two_layer, pima):
    X, y = pima
    logreg = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    display = GradientNormDisplay.from_estimators(
        [two_layer, logreg], X, histtype="bar", bins=10
    )
    assert list(display.taus_) == ["CRClassifier", "LogisticRegression"]
    assert display.taus_["LogisticRegression"] == pytest.approx(1.0)
    assert len(display.ax_.patches) == 20  # 10 bars per model
    assert len(display.ax_.lines) == 4  # mean and p99 per model
    labels = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert any("LogisticRegression (tau=1.00)" in label for label in labels)
    raw = GradientNormDisplay.from_estimators({"CR": two_layer}, X, normalize=False)
    assert raw.ax_.get_xlabel() == "input-gradient norm"
    with pytest.raises(ValueError, match="empty"):
        GradientNormDisplay.from_estimators({}, X)


def test_loss_curve(two_layer):
    display = LossCurveDisplay.from_estimator(two_layer)
    n = two_layer.n_iter_
    np.testing.assert_allclose(
        display.lines_["train_loss"].get_ydata(),
        [row["train_loss"] for row in two_layer.net_.history],
    )
    assert len(display.lines_["valid_loss"].get_xdata()) == n
    # Losses and the restored epoch on the left axis, the score on the right.
    assert len(display.ax_.lines) == 4
    assert len(display.score_ax_.lines) == 1
    np.testing.assert_allclose(
        display.lines_["valid_score"].get_ydata(), two_layer.validation_scores_
    )
    penalty = [two_layer.dreg_lambda * row["penalty"] for row in two_layer.net_.history]
    np.testing.assert_allclose(display.lines_["penalty"].get_ydata(), penalty)
    assert display.ax_.get_xlabel() == "epoch"
    assert display.ax_.get_ylabel() == "loss"
    assert display.score_ax_.get_ylabel() == "validation score"


def test_loss_curve_without_validation_or_penalty(pima):
    X, y = pima
    params = {**FAST, "max_iter": 4, "early_stopping": False, "dreg": None}
    clf = CRClassifier(**params).fit(X, y)
    display = LossCurveDisplay.from_estimator(clf)
    assert sorted(display.lines_) == ["train_loss"]
    assert display.score_ax_ is None
    _, ax = plt.subplots()
    assert LossCurveDisplay.from_estimator(clf, ax=ax).ax_ is ax


def test_gradient_norm_legend_stays_off_the_data(two_layer, pima):
    X, y = pima
    models = {"CR": two_layer, "LogReg": LogisticRegression(max_iter=500).fit(X, y)}
    display = GradientNormDisplay.from_estimators(models, X)
    fig = display.figure_
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = display.ax_.get_legend().get_window_extent(renderer)
    axes = display.ax_.get_window_extent(renderer)
    assert not legend.overlaps(axes)
    tight = fig.get_tightbbox(renderer)
    width, height = fig.get_size_inches()
    assert tight.x1 <= width + 1e-6 and tight.y1 <= height + 1e-6
