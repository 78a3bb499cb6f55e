"""gradient_tail_ratio, gradient_norms, DREGScorer and the ordinal scorers."""

import numpy as np
import pytest
from conftest import FAST
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cr_sklearn import (
    ORDINAL_SCORERS,
    CRClassifier,
    CROrdinalRegressor,
    DREGScorer,
    get_ordinal_scorer,
    gradient_norms,
    gradient_tail_ratio,
    macro_averaged_mean_absolute_error,
)


@pytest.fixture(scope="module")
def data(binary_data):
    return binary_data


@pytest.fixture(scope="module")
def cr(data):
    X, y = data
    return CRClassifier(**FAST).fit(X, y)


class _NoGradient(ClassifierMixin, BaseEstimator):
    """Exposes a CR model's outputs only, so finite differences are used."""

    def __init__(self, model=None):
        self.model = model

    def fit(self, X, y):
        self.classes_ = self.model.classes_
        return self

    def decision_function(self, X):
        return self.model.decision_function(X)

    def predict(self, X):
        return self.model.predict(X)


# -- gradient_tail_ratio ---------------------------------------------------
def test_gradient_tail_ratio_values_and_pooling():
    assert gradient_tail_ratio(np.full(50, 3.0)) == 1.0
    norms = np.r_[np.ones(99), 101.0]
    assert gradient_tail_ratio(norms, q=100) == pytest.approx(101 / 2)
    assert gradient_tail_ratio(norms, q=50) == pytest.approx(0.5)
    # Pooling rescales each fold by its mean: two folds with different
    # scales but the same shape pool to that shape.
    fold = np.array([1.0, 1.0, 1.0, 5.0])
    assert gradient_tail_ratio([fold, 10 * fold], q=100) == pytest.approx(
        gradient_tail_ratio(fold, q=100)
    )
    with pytest.warns(UserWarning, match="every gradient norm is 0"):
        assert np.isnan(gradient_tail_ratio(np.zeros(5)))


@pytest.mark.parametrize(
    "norms, q, message",
    [
        ([1.0, -1.0], 99, "non-negative"),
        ([[1.0, 2.0]], 120, "q must"),
        ([], 99, "non-empty"),
    ],
)
def test_gradient_tail_ratio_rejects_bad_input(norms, q, message):
    with pytest.raises(ValueError, match=message):
        gradient_tail_ratio(np.asarray(norms) if norms == [] else norms, q=q)


# -- gradient_norms ----------------------------------------------------------
def test_finite_differences_are_exact_for_a_linear_model(data):
    X, y = data
    lr = LogisticRegression().fit(X, y)
    # Each column in units of its standard deviation in X.
    expected = np.full(len(X), np.linalg.norm(lr.coef_ * X.std(axis=0)))
    np.testing.assert_allclose(gradient_norms(lr, X), expected, rtol=1e-6)
    # Log-odds from predict_proba are the same function for a logistic model.
    np.testing.assert_allclose(
        gradient_norms(lr, X, response_method="log_proba"), expected, rtol=1e-5
    )
    assert DREGScorer()(lr, X) == pytest.approx(1.0)


def test_multiclass_finite_differences_use_every_output():
    X, y = make_classification(
        n_samples=120,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    lr = LogisticRegression().fit(X, y)
    expected = np.linalg.norm(lr.coef_ * X.std(axis=0))
    np.testing.assert_allclose(gradient_norms(lr, X), expected, rtol=1e-6)


def test_finite_differences_match_the_analytic_cr_gradient(data):
    X, y = data
    cr = CRClassifier(**{**FAST, "encoding_bins": None}).fit(X, y)
    analytic = cr.input_gradient_norms(X[:40], scale=X[:40].std(axis=0))
    wrapped = _NoGradient(cr).fit(X, None)
    numeric = gradient_norms(wrapped, X[:40], step=1e-4)
    np.testing.assert_allclose(numeric, analytic, rtol=1e-4)
    np.testing.assert_allclose(gradient_norms(cr, X[:40]), analytic)


def test_pipeline_uses_the_last_step_input(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), CRClassifier(**FAST)).fit(X, y)
    last, Xt = pipe[-1], pipe[0].transform(X)
    expected = last.input_gradient_norms(Xt, scale=Xt.std(axis=0))
    np.testing.assert_allclose(gradient_norms(pipe, X), expected)


def test_pipeline_without_cr_uses_the_last_step_input_too(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    # The scaled input has unit spread: the norm is that of the coefficients.
    coef = pipe[-1].coef_[0]
    np.testing.assert_allclose(gradient_norms(pipe, X), np.linalg.norm(coef), rtol=1e-6)


def test_tree_ensemble_and_bad_options(data):
    X, y = data
    rf = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, y)
    norms = gradient_norms(rf, X)
    assert norms.shape == (len(X),) and np.all(norms >= 0)
    with pytest.raises(ValueError, match="step"):
        gradient_norms(rf, X, step=0)
    with pytest.raises(ValueError, match="response_method"):
        gradient_norms(rf, X, response_method="margin")
    with pytest.raises(ValueError, match="no 'decision_function'"):
        gradient_norms(rf, X, response_method="decision_function")


# -- DREGScorer in sklearn's model selection -----------------------------------
def test_dreg_scorer_in_grid_search_and_cross_validate(data):
    X, y = data
    search = GridSearchCV(
        CRClassifier(**FAST),
        {"dreg": ["stream", None]},
        scoring={
            "accuracy": "accuracy",
            "tau": DREGScorer(),
            "neg_tau": DREGScorer(q=95, negate=True),
        },
        refit="accuracy",
        cv=2,
    ).fit(X, y)
    taus = search.cv_results_["mean_test_tau"]
    assert np.all(np.isfinite(taus)) and np.all(taus >= 1.0)
    assert np.all(search.cv_results_["mean_test_neg_tau"] <= -1.0)
    cv = cross_validate(
        LogisticRegression(), X, y, cv=3, scoring={"tau": get_ordinal_scorer("tau")}
    )
    np.testing.assert_allclose(cv["test_tau"], 1.0)
    assert "negate=True" in repr(get_ordinal_scorer("neg_tau"))


# -- ordinal scorers --------------------------------------------------------
def test_ordinal_scorers_use_ranks_in_the_estimator_order():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 3))
    codes = np.digitize(X[:, 0], [-0.5, 0.5])
    names = np.array(["low", "mid", "high"])
    model = CROrdinalRegressor(**FAST, classes=list(names)).fit(X, names[codes])
    pred = np.array([{"low": 0, "mid": 1, "high": 2}[p] for p in model.predict(X)])
    scores = {name: s(model, X, names[codes]) for name, s in ORDINAL_SCORERS.items()}
    assert scores["accuracy"] == pytest.approx(np.mean(pred == codes))
    assert scores["neg_mean_absolute_error"] == pytest.approx(
        -np.mean(np.abs(pred - codes))
    )
    assert scores["neg_mean_absolute_error"] == pytest.approx(
        model.score(X, names[codes])
    )
    assert scores["quadratic_weighted_kappa"] == pytest.approx(
        cohen_kappa_score(codes, pred, labels=[0, 1, 2], weights="quadratic")
    )
    assert scores["neg_macro_averaged_mean_absolute_error"] == pytest.approx(
        -macro_averaged_mean_absolute_error(codes, pred)
    )


def test_macro_mae_and_unknown_names():
    assert macro_averaged_mean_absolute_error([0, 0, 0, 2], [0, 0, 0, 0]) == 1.0
    with pytest.raises(ValueError, match="Unknown ordinal scorer"):
        get_ordinal_scorer("mae")
    scorer = get_ordinal_scorer("neg_mean_absolute_error")
    lr = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [1, 1, 5, 5])
    # Ranks in classes_ (1 -> 0, 5 -> 1), not label values.
    assert scorer(lr, [[0.0], [3.0]], [5, 1]) == -1.0
    # Numbers rank by value, with the labels the classifier was fitted on.
    assert scorer(lr, [[0.0]], [3]) == -1.0
