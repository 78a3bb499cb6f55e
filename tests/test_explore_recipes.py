"""The recipe exploration script's encodings and command line
(``benchmarks/explore_recipes.py``, imported by path)."""

import json

import numpy as np
import pytest
from conftest import load_benchmark, narrow_test_fold

explore = load_benchmark("explore_recipes")


def test_kept_raw_columns_come_before_their_ramps():
    x = np.arange(9.0).reshape(-1, 1)  # quantile edges 0, 2, 4, 6, 8
    binary = np.array([0.0, 1.0] * 4 + [0.0]).reshape(-1, 1)
    X = np.hstack([x, binary])
    plain = explore._Ramps(n_bins=4).fit(X)
    np.testing.assert_allclose(
        plain.transform([[3.0, 1.0]]),
        [[1, 0.5, 0, 0, 1]],  # ramps, then binary
    )
    kept = explore._Ramps(n_bins=4, keep_raw=True).fit(X)
    # The binary column passes through once; the encoded one keeps its value.
    np.testing.assert_allclose(kept.transform([[3.0, 1.0]]), [[3.0, 1, 0.5, 0, 0, 1]])


def test_spline_encoding_spans_the_same_piecewise_linear_functions():
    rng = np.random.default_rng(0)
    X = np.hstack([rng.normal(size=(200, 2)), rng.integers(0, 2, (200, 1))])
    ramps = explore._Ramps(n_bins=4).fit(X).transform(X)
    splines = explore._SplineEncoding(n_bins=4).fit(X).transform(X)
    # Each basis (with a constant) is a linear map of the other: least squares
    # reproduces the ramps from the splines exactly.
    design = np.hstack([splines, np.ones((len(X), 1))])
    coef, *_ = np.linalg.lstsq(design, ramps, rcond=None)
    np.testing.assert_allclose(design @ coef, ramps, atol=1e-8)


def test_only_names_recipes_of_the_round():
    with pytest.raises(SystemExit):
        explore.main(["--round", "encode", "--only", "no-such-recipe"])


def test_report_from_saved_scores_needs_no_fit(tmp_path):
    score = {"acc": 0.8, "ll": 0.4, "time": 0.1, "tau": 1.2, "epochs": 100}
    rows = {"default": {"iris": [score, score]}, "ple4": {"iris": [score, score]}}
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps(rows))
    output = tmp_path / "report.md"
    explore.main(
        ["--round", "encode", "--from-scores", str(scores), "--output", str(output)]
    )
    text = output.read_text()
    assert "| iris | 80.00 / 0.400 | 80.00 / 0.400 |" in text


def test_the_rounds_build_on_the_previous_defaults_and_default_is_current():
    recipes = explore.with_defaults(explore.ROUNDS["encode"])
    assert recipes["default"] == (explore.plain, {})
    # A pipeline recipe: the previous defaults, its own dropout on top.
    _, params = recipes["ple4_do0.3"]
    assert params["encoding_bins"] is None and params["dropout"] == 0.3
    # The in-network recipes state their own encoding.
    assert recipes["in4e"][1] == {"encoding_bins": 4, "dropout": 0.1}
    for name, (_, params) in recipes.items():
        if name != "default":
            assert set(explore.PREVIOUS_DEFAULTS) <= set(params), name


def test_scheduled_recipe_anneals_the_step_to_zero_over_max_iter():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    params = {"max_iter": 4, "learning_rate_init": 3e-3, "encoding_bins": None}
    model, info = explore.scheduled(X, y, 0, params)
    assert info["epochs"] == 4
    # CosineAnnealingLR stepped once per epoch: lr0 * (1 + cos(pi t / 4)) / 2.
    lrs = [row["event_lr"] for row in model.net_.history]
    np.testing.assert_allclose(lrs, 3e-3 * (1 + np.cos(np.pi * np.arange(4) / 4)) / 2)
    assert model.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_smoothed_recipe_trains_towards_the_smoothed_targets(n_classes):
    import torch

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.arange(60) % n_classes
    params = {"max_iter": 1, "encoding_bins": None, "eps": 0.2}
    model, _ = explore.smoothed(X, y, 0, params)
    criterion = model.net_.criterion_
    # The loss of one sample of class 0 is least where the model gives that
    # class 1 - eps + eps / n_classes (the smoothed target), not 1.
    target = torch.tensor([0])
    grid = torch.linspace(-6, 6, 2401)
    if n_classes == 2:
        losses = criterion(grid[:, None], target.expand(len(grid)))
        best = 1 - torch.sigmoid(grid[losses.argmin()])
    else:
        logits = torch.zeros(len(grid), n_classes)
        logits[:, 0] = grid
        losses = criterion(logits, target.expand(len(grid)))
        best = torch.softmax(logits[losses.argmin()], 0)[0]
    assert float(best) == pytest.approx(1 - 0.2 + 0.2 / n_classes, abs=2e-3)


def test_scaled_penalty_recipe_scales_dreg_lambda_with_the_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(250, 2))
    y = (X[:, 0] > 0).astype(int)
    params = {"max_iter": 1, "encoding_bins": None, "power": 0.5}
    model, info = explore.scaled_penalty(X, y, 0, params)
    # A quarter of the reference rows: twice the default strength.
    assert info["dreg_lambda"] == pytest.approx(2e-2)
    assert model.dreg_lambda == pytest.approx(2e-2)


@pytest.mark.parametrize("recipe", ["plain", "encoded"])
def test_tau_is_by_the_one_rule_of_gradient_norms(recipe):
    from types import SimpleNamespace

    import pandas as pd
    from sklearn.preprocessing import FunctionTransformer

    from cr_sklearn import gradient_norms, gradient_tail_ratio

    X, y, train, test = narrow_test_fold()
    X = pd.DataFrame(X)
    suite = SimpleNamespace(make_preprocessing=lambda X: FunctionTransformer())
    fitted = {}

    def keep(X, y, seed, params):
        model, info = getattr(explore, recipe)(X, y, seed, params)
        fitted["model"] = model
        return model, info

    score = explore.run_one(suite, keep, {"max_iter": 3}, X, y, train, test, 0)
    X_test = X.to_numpy()[test]
    model = fitted["model"]
    if recipe == "encoded":
        # The encoding is an earlier step: the norms are by its columns.
        model, X_test = model.model, model.encoding.transform(X_test)
    expected = gradient_tail_ratio(gradient_norms(model, X_test))
    assert score["tau"] == pytest.approx(expected, rel=1e-9)
    # By the training fold's spreads (the estimator's default scale) tau
    # differs on this table: the check above tells the two apart.
    by_training = gradient_tail_ratio(model.input_gradient_norms(X_test))
    assert abs(by_training - expected) > 1e-3
