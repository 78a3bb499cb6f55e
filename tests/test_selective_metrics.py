"""Risk-coverage curves, AURC and E-AURC against brute-force references."""

import itertools

import numpy as np
import pytest
from scipy import integrate
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cr_sklearn import (
    CRClassifier,
    aurc_score,
    eaurc_score,
    make_aurc_scorer,
    neg_aurc_scorer,
    risk_coverage_curve,
)


# -- brute-force references --------------------------------------------------
def brute_curve(losses, confidence, weight):
    """Keep ``confidence >= t`` for every distinct ``t``, highest first."""
    coverage, risk, thresholds = [], [], []
    for t in sorted(set(confidence.tolist()), reverse=True):
        if weight[confidence == t].sum() == 0:
            continue
        keep = confidence >= t
        coverage.append(weight[keep].sum() / weight.sum())
        risk.append((weight * losses)[keep].sum() / weight[keep].sum())
        thresholds.append(t)
    return np.array(coverage), np.array(risk), np.array(thresholds)


def brute_risk_at(c, losses, confidence, weight):
    """Risk when a share ``c`` of the weight is kept, ties entered uniformly."""
    mass, kept, kept_loss = c * weight.sum(), 0.0, 0.0
    for t in sorted(set(confidence.tolist()), reverse=True):
        group = confidence == t
        g_weight, g_loss = weight[group].sum(), (weight * losses)[group].sum()
        if g_weight > 0 and kept + g_weight >= mass:
            return (kept_loss + (mass - kept) / g_weight * g_loss) / mass
        kept, kept_loss = kept + g_weight, kept_loss + g_loss
    return kept_loss / kept


def brute_aurc(losses, confidence, weight):
    breaks = brute_curve(losses, confidence, weight)[0]
    value, _ = integrate.quad(
        brute_risk_at,
        0.0,
        1.0,
        args=(losses, confidence, weight),
        points=breaks[:-1],
        limit=500,
        epsabs=1e-11,
    )
    return value


def random_case(rng, n, n_levels=None, ties=False, weights=False):
    y_true = rng.randint(3, size=n)
    y_pred = np.where(rng.rand(n) < 0.6, y_true, rng.randint(3, size=n))
    confidence = rng.randint(4, size=n) / 4 if ties else rng.rand(n)
    weight = rng.randint(1, 4, size=n).astype(float) if weights else None
    return y_true, y_pred, confidence, weight


# -- the curve -----------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("loss", ["zero_one", "absolute"])
def test_curve_and_area_match_brute_force(ties, weights, loss):
    rng = np.random.RandomState(0)
    for _ in range(5):
        y_true, y_pred, confidence, weight = random_case(
            rng, 30, ties=ties, weights=weights
        )
        w = np.ones(30) if weight is None else weight
        losses = (
            (y_true != y_pred).astype(float)
            if loss == "zero_one"
            else np.abs(y_true - y_pred).astype(float)
        )
        coverage, risk, thresholds = risk_coverage_curve(
            y_true, y_pred, confidence, sample_weight=weight, loss=loss
        )
        ref = brute_curve(losses, confidence, w)
        np.testing.assert_allclose(coverage, ref[0], rtol=1e-12)
        np.testing.assert_allclose(risk, ref[1], rtol=1e-12)
        np.testing.assert_array_equal(thresholds, ref[2])
        aurc = aurc_score(y_true, y_pred, confidence, sample_weight=weight, loss=loss)
        assert aurc == pytest.approx(brute_aurc(losses, confidence, w), abs=1e-8)


def test_curve_small_example_by_hand():
    coverage, risk, thresholds = risk_coverage_curve(
        ["a", "b", "b", "a", "c"],
        ["a", "b", "a", "b", "c"],
        [0.9, 0.5, 0.5, 0.1, 0.9],
    )
    # 0.9: a and c, both right; 0.5: + one right, one wrong; 0.1: + one wrong.
    np.testing.assert_allclose(coverage, [0.4, 0.8, 1.0])
    np.testing.assert_allclose(risk, [0.0, 0.25, 0.4])
    np.testing.assert_array_equal(thresholds, [0.9, 0.5, 0.1])


def test_ties_are_kept_or_rejected_together():
    # A tree's finite-difference norms: all zero, so all tied.
    y_true, y_pred = [0, 1, 1, 0, 1], [0, 1, 0, 0, 0]
    coverage, risk, thresholds = risk_coverage_curve(y_true, y_pred, np.zeros(5))
    np.testing.assert_array_equal(coverage, [1.0])
    np.testing.assert_allclose(risk, [0.4])
    # A constant confidence scores like a random ordering: the overall risk.
    assert aurc_score(y_true, y_pred, np.zeros(5)) == pytest.approx(0.4)


def test_unit_weights_and_integer_weights_replicate():
    rng = np.random.RandomState(1)
    y_true, y_pred, confidence, _ = random_case(rng, 12, ties=True)
    weight = rng.randint(0, 4, size=12)
    weight[0] = 2
    weighted = aurc_score(y_true, y_pred, confidence, sample_weight=weight)
    rep = np.repeat(np.arange(12), weight)
    replicated = aurc_score(y_true[rep], y_pred[rep], confidence[rep])
    assert weighted == pytest.approx(replicated, abs=1e-12)
    curve = risk_coverage_curve(y_true, y_pred, confidence, sample_weight=weight)
    ref = risk_coverage_curve(y_true[rep], y_pred[rep], confidence[rep])
    for got, expected in zip(curve, ref, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    ones = aurc_score(y_true, y_pred, confidence, sample_weight=np.ones(12))
    assert ones == pytest.approx(aurc_score(y_true, y_pred, confidence))


@pytest.mark.parametrize("function", [risk_coverage_curve, aurc_score, eaurc_score])
@pytest.mark.parametrize("loss", ["zero_one", "absolute"])
def test_huge_and_tiny_weights_are_only_shares(function, loss):
    y_true, y_pred, confidence = [0, 1, 2], [0, 2, 0], [0.9, 0.5, 0.1]
    unit = function(y_true, y_pred, confidence, loss=loss)
    for scale in (1e308, 1e-320):  # their sum overflows; they are subnormal
        got = function(y_true, y_pred, confidence, sample_weight=[scale] * 3, loss=loss)
        for a, b in zip(np.atleast_1d(got), np.atleast_1d(unit), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    with pytest.raises(ValueError, match="finite"):
        function(y_true, y_pred, confidence, sample_weight=[1.0, np.inf, 1.0])


def test_without_ties_the_curve_is_the_risk_of_the_top_k():
    rng = np.random.RandomState(2)
    y_true, y_pred, confidence, _ = random_case(rng, 20)
    coverage, risk, _ = risk_coverage_curve(y_true, y_pred, confidence)
    errors = (y_true != y_pred)[np.argsort(-confidence)]
    np.testing.assert_allclose(coverage, np.arange(1, 21) / 20)
    np.testing.assert_allclose(risk, np.cumsum(errors) / np.arange(1, 21))


# -- the oracle ----------------------------------------------------------------
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("loss", ["zero_one", "absolute"])
def test_oracle_is_the_minimum_over_orderings(weights, loss):
    rng = np.random.RandomState(3)
    for _ in range(3):
        y_true, y_pred, _, weight = random_case(rng, 6, weights=weights)
        if loss == "zero_one":
            losses = (y_true != y_pred).astype(float)
        else:
            losses = np.abs(y_true - y_pred).astype(float)
        kw = dict(sample_weight=weight, loss=loss)
        areas = [
            aurc_score(y_true, y_pred, np.array(order, dtype=float), **kw)
            for order in itertools.permutations(range(6))
        ]
        oracle = aurc_score(y_true, y_pred, -losses, **kw)
        assert oracle == pytest.approx(min(areas), abs=1e-12)
        assert eaurc_score(y_true, y_pred, -losses, **kw) == 0.0
        excess = [
            eaurc_score(y_true, y_pred, np.array(order, dtype=float), **kw)
            for order in itertools.permutations(range(6))
        ]
        np.testing.assert_allclose(np.array(areas) - oracle, excess, atol=1e-12)
        assert min(excess) >= 0.0


def test_oracle_aurc_is_geifmans_closed_form():
    # Geifman et al. (2019): AURC* = r + (1 - r) log(1 - r) for 0/1 loss.
    y_true = np.zeros(40, dtype=int)
    y_pred = np.r_[np.zeros(30, dtype=int), np.ones(10, dtype=int)]
    r = 0.25
    oracle = aurc_score(y_true, y_pred, -(y_true != y_pred).astype(float))
    assert oracle == pytest.approx(r + (1 - r) * np.log(1 - r))


def test_ordinal_loss_uses_positions_in_labels():
    # Labels 1, 5, 9 are ranks 0, 1, 2: predicting 9 for 1 costs 2, not 8.
    y_true, y_pred = [1, 5, 9], [9, 5, 9]
    coverage, risk, _ = risk_coverage_curve(
        y_true, y_pred, [0.1, 0.9, 0.5], loss="absolute"
    )
    np.testing.assert_allclose(risk, [0.0, 0.0, 2 / 3])
    # An explicit order (e.g. an ordinal estimator's classes_) wins.
    _, risk, _ = risk_coverage_curve(
        ["lo", "mid", "hi"],
        ["hi", "mid", "hi"],
        [0.1, 0.9, 0.5],
        loss="absolute",
        labels=["lo", "mid", "hi"],
    )
    np.testing.assert_allclose(risk, [0.0, 0.0, 2 / 3])


# -- bad input -----------------------------------------------------------------
@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        (([0, 1], [0, 1, 1], [0.1, 0.2]), {}, ValueError, "same length"),
        (([0, 1], [0, 1], [0.1, 0.2, 0.3]), {}, ValueError, "same length"),
        (([0, 1], [0, 1], [0.1, np.nan]), {}, ValueError, "NaN"),
        (([], [], []), {}, ValueError, "empty"),
        (([0, 1], [0, 1], ["high", "low"]), {}, TypeError, "numeric"),
        (([0, 1], [0, 1], [[0.1, 0.2]]), {}, ValueError, "1-d"),
        (([0, 1], [0, 1], [0.1, 0.2]), {"sample_weight": [1, -1]}, ValueError, "neg"),
        (([0, 1], [0, 1], [0.1, 0.2]), {"sample_weight": [0, 0]}, ValueError, "zero"),
        (([0, 1], [0, 1], [0.1, 0.2]), {"sample_weight": [1]}, ValueError, "length"),
        (([0, 1], [0, 1], [0.1, 0.2]), {"loss": "hinge"}, ValueError, "loss"),
        (
            ([0, 1], [0, 2], [0.1, 0.2]),
            {"loss": "absolute", "labels": [0, 1]},
            ValueError,
            "not in labels",
        ),
    ],
)
@pytest.mark.parametrize("function", [risk_coverage_curve, aurc_score, eaurc_score])
def test_bad_input_raises(function, args, kwargs, error, match):
    with pytest.raises(error, match=match):
        function(*args, **kwargs)


# -- the scorer ----------------------------------------------------------------
def test_scorer_in_cross_validate_matches_the_metric(pima):
    X, y = pima
    scoring = {
        "neg_aurc": neg_aurc_scorer,
        "neg_eaurc": make_aurc_scorer(excess=True),
    }
    result = cross_validate(
        make_pipeline(StandardScaler(), LogisticRegression()),
        X,
        y,
        cv=3,
        scoring=scoring,
        return_estimator=True,
        return_indices=True,
    )
    assert np.all(result["test_neg_aurc"] < 0)
    assert np.all(result["test_neg_eaurc"] <= 0)
    assert np.all(result["test_neg_eaurc"] >= result["test_neg_aurc"])
    for model, test, score in zip(
        result["estimator"],
        result["indices"]["test"],
        result["test_neg_aurc"],
        strict=True,
    ):
        expected = aurc_score(
            y[test], model.predict(X[test]), model.predict_proba(X[test]).max(1)
        )
        assert score == pytest.approx(-expected)


def test_scorer_with_cr_signals_and_grid_search(pima):
    X, y = pima
    X, y = X[:300], y[:300]
    search = GridSearchCV(
        CRClassifier(hidden_layer_sizes=(8,), max_iter=10, random_state=0),
        {"dreg_lambda": [0.01, 0.1]},
        scoring={
            "accuracy": "accuracy",
            "neg_aurc_sensitivity": make_aurc_scorer("input_sensitivity"),
        },
        refit="neg_aurc_sensitivity",
        cv=2,
    ).fit(X, y)
    scores = search.cv_results_["mean_test_neg_aurc_sensitivity"]
    assert np.all((scores < 0) & (scores > -1))


def test_scorer_callable_signal_and_errors(pima):
    X, y = pima
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)

    def top(estimator, X):
        return estimator.predict_proba(X).max(axis=1)

    scorer = make_aurc_scorer(top)
    assert scorer(model, X, y) == pytest.approx(neg_aurc_scorer(model, X, y))
    assert "top" in repr(scorer)
    with pytest.raises(ValueError, match="signal"):
        make_aurc_scorer("entropy")
    with pytest.raises(TypeError, match="excess"):
        make_aurc_scorer(excess="yes")
    with pytest.raises(ValueError, match="loss"):
        make_aurc_scorer(loss="hinge")
    with pytest.raises(ValueError, match="CR estimator"):
        make_aurc_scorer("input_distance")(model, X, y)


def test_absolute_loss_refuses_to_sort_strings():
    # Alphabetically "Marked" < "None" < "Some": no order of the grades.
    y_true = np.array(["None", "Marked", "Some"])
    y_pred = np.array(["Some", "Some", "Some"])
    confidence = np.array([0.9, 0.5, 0.1])
    with pytest.raises(ValueError, match=r"order.*labels="):
        aurc_score(y_true, y_pred, confidence, loss="absolute")
    given = aurc_score(
        y_true, y_pred, confidence, loss="absolute", labels=["None", "Some", "Marked"]
    )
    assert given == aurc_score(
        [0, 2, 1], [1, 1, 1], confidence, loss="absolute", labels=[0, 1, 2]
    )
