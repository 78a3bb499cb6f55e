"""Tests of factorial_study and FactorialResult."""

import itertools

import numpy as np
import pytest
from sklearn.datasets import make_classification

from cr_sklearn import CRClassifier
from cr_sklearn.study import FactorialResult, factorial_study
from cr_sklearn.study._factorial import _condition_data

pytest.importorskip("pandas")


def _params(est, X, y):
    p = est.get_params()
    return float(p["dropout"] + 10 * p["weight_decay"] + 100 * (p["dreg"] is None))


def test_factorial_design_and_regularizer_parameters():
    X, y = make_classification(n_samples=80, n_features=4, random_state=0)
    result = factorial_study(
        {"toy": (X, y)},
        activations=["relu"],
        regularizers=["none", "dreg", "dropout", "weight_decay"],
        conditions=["clean", "label_noise_40"],
        seeds=[0, 1],
        estimator=CRClassifier(hidden_layer_sizes=(4,), max_iter=2),
        scoring={"acc": "accuracy", "params": _params},
    )
    assert isinstance(result, FactorialResult)
    frame = result.to_frame()
    assert len(frame) == 1 * 4 * 2 * 2 * 2
    assert (frame["n_test"] == 20).all() and (frame["n_train"] == 60).all()
    params = frame[frame.metric == "params"].groupby("regularizer")["value"].unique()
    assert list(params["none"]) == [100.0]
    assert list(params["dreg"]) == [0.0]
    assert list(params["dropout"]) == [100.2]
    assert list(params["weight_decay"]) == [101.0]
    acc = frame[frame.metric == "acc"]["value"]
    assert acc.between(0, 1).all()


def test_auto_members_train_one_network_in_every_cell():
    # From 1,000 training rows "auto" trains members, except where the
    # regulariser needs one network: the cells would differ in kind.
    X, y = make_classification(n_samples=1400, n_features=4, random_state=0)
    result = factorial_study(
        {"toy": (X, y)},
        activations=["relu"],
        regularizers=["dreg", "spectral_norm"],
        conditions=["clean"],
        seeds=[0],
        estimator=CRClassifier((4,), max_iter=2, n_members="auto"),
        scoring={"members": lambda est, X, y: float(est.n_members_)},
    )
    frame = result.to_frame()
    assert (frame["n_train"] >= 1000).all()
    assert list(frame["value"]) == [1.0, 1.0]


def test_conditions_corrupt_train_labels_only_and_noise_inputs():
    X, y = make_classification(n_samples=400, n_features=4, random_state=1)
    X_tr, y_tr, X_te, y_te = _condition_data(X, y, {}, 0, 0.25, (1, 2))
    X_tr2, y_tr2, X_te2, y_te2 = _condition_data(
        X, y, {"label_noise": 0.4}, 0, 0.25, (1, 2)
    )
    np.testing.assert_array_equal(X_tr, X_tr2)  # same split
    np.testing.assert_array_equal(y_te, y_te2)  # test labels stay true
    assert (y_tr != y_tr2).mean() == pytest.approx(0.4, abs=0.01)
    X_tr3, y_tr3, X_te3, _ = _condition_data(X, y, {"snr_db": -10}, 0, 0.25, (1, 2))
    np.testing.assert_array_equal(y_tr3, y_tr)
    ratio = np.var(X_te3 - X_te, axis=0) / np.var(X, axis=0)
    assert ratio.min() > 5  # -10 dB: ten times the power, on the test rows too
    with pytest.raises(ValueError, match="Unknown condition settings"):
        _condition_data(X, y, {"blur": 1}, 0, 0.25, (1, 2))


def test_factorial_bad_arguments():
    X, y = make_classification(n_samples=40, random_state=0)
    data = {"toy": (X, y)}
    with pytest.raises(ValueError, match="Unknown regularizer"):
        factorial_study(data, regularizers=["lasso"])
    with pytest.raises(ValueError, match="Unknown condition"):
        factorial_study(data, conditions=["rain"])
    with pytest.raises(ValueError, match="seeds"):
        factorial_study(data, seeds=[])
    with pytest.raises(ValueError, match="Unknown dataset"):
        factorial_study(["no-such-data"])


def _synthetic_result():
    """'dreg' wins every block by 0.02; 'none' and 'dropout' tie."""
    rng = np.random.RandomState(0)
    records = []
    blocks = itertools.product(
        ["d1", "d2"], ["clean", "noisy"], ["relu", "poly"], [0, 1]
    )
    for ds, cond, act, seed in blocks:
        base = rng.uniform(0.6, 0.9)
        for reg, value in {"none": base, "dreg": base + 0.02, "dropout": base}.items():
            records.append(
                dict(
                    dataset=ds,
                    condition=cond,
                    activation=act,
                    regularizer=reg,
                    seed=seed,
                    n_train=75,
                    n_test=25,
                    metric="accuracy",
                    value=value,
                    fit_time=0.1,
                )
            )
    return FactorialResult(
        records,
        datasets=["d1", "d2"],
        conditions=["clean", "noisy"],
        activations=["relu", "poly"],
        regularizers=["none", "dreg", "dropout"],
        metrics=["accuracy"],
    )


def test_ranks_cells_and_compare():
    result = _synthetic_result()
    ranks = result.ranks()
    assert ranks["dreg"] == 1.0
    assert ranks["none"] == ranks["dropout"] == 2.5
    by = result.ranks(by="condition")
    assert list(by.columns) == ["all", "clean", "noisy"]
    assert (by.loc["dreg"] == 1.0).all()
    cells = result.cells()
    assert cells.shape == (8, 3)
    assert list(cells.columns) == ["none", "dreg", "dropout"]
    np.testing.assert_allclose(cells["dreg"] - cells["none"], 0.02)
    cmp = result.compare("dreg")
    assert list(cmp["regularizer"]) == ["none", "dropout"]
    assert (cmp["wins"] == 16).all() and (cmp["losses"] == 0).all()
    np.testing.assert_allclose(cmp["mean_diff"], 0.02)
    assert (cmp["p_adjusted"] < 0.01).all()
    per_condition = result.compare("dreg", by="condition")
    assert len(per_condition) == 4 and (per_condition["n_pairs"] == 8).all()
    with pytest.raises(ValueError, match="Unknown reference"):
        result.compare("lasso")
    with pytest.raises(ValueError, match="by must be"):
        result.ranks(by="seed")


def test_factorial_markdown_report():
    text = _synthetic_result().to_markdown()
    assert text.count("### ") == 4
    assert "| d1 | clean | relu |" in text
    assert "| none | +0.020 | 16/0 |" in text
