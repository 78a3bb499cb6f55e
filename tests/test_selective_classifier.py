"""SelectiveClassifier and its guaranteed-risk threshold."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, ShuffleSplit
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from cr_sklearn import (
    CRClassifier,
    CROrdinalRegressor,
    SelectiveClassifier,
    aurc_score,
    make_aurc_scorer,
)
from cr_sklearn.selective._classifier import (
    _binomial_upper_bound,
    _guaranteed_risk_threshold,
)

SMALL = dict(hidden_layer_sizes=(8,), max_iter=20, random_state=0)


# -- the guarantee, simulated ------------------------------------------------
def test_binomial_bound_is_the_clopper_pearson_upper_limit():
    from scipy import stats

    b = _binomial_upper_bound(3, 50, 0.05)
    assert stats.binom.cdf(3, 50, b) == pytest.approx(0.05)
    assert _binomial_upper_bound(50, 50, 0.05) == 1.0
    assert 0 < _binomial_upper_bound(0, 50, 0.05) < 0.1


def _true_risk_zero_one(threshold):
    # Confidence u ~ U(0, 1), P(error | u) = 0.4 (1 - u)^2.
    t = np.clip(threshold, 0.0, 1.0)
    return 0.4 * (1.0 - t) ** 2 / 3.0 if t < 1 else 0.0


def _true_risk_ordinal(threshold):
    # Loss 2 with probability 0.2 (1 - u), 1 with probability 0.5 (1 - u).
    t = np.clip(threshold, 0.0, 1.0)
    return (2 * 0.2 + 0.5) * (1.0 - t) / 2.0 if t < 1 else 0.0


@pytest.mark.parametrize(
    "kind, target, n_levels",
    [("zero_one", 0.1, 1), ("ordinal", 0.3, 2)],
)
def test_guaranteed_risk_holds_at_the_promised_rate(kind, target, n_levels):
    rng = np.random.RandomState(0)
    delta, m, n_draws = 0.1, 1000, 300
    violations, coverages = 0, []
    for _ in range(n_draws):
        u = rng.rand(m)
        if kind == "zero_one":
            losses = (rng.rand(m) < 0.4 * (1 - u) ** 2).astype(float)
        else:
            r = rng.rand(m)
            losses = np.where(r < 0.2 * (1 - u), 2.0, 0.0)
            losses[(r >= 0.2 * (1 - u)) & (r < 0.7 * (1 - u))] = 1.0
        threshold, bound = _guaranteed_risk_threshold(
            u, losses, target, delta, n_levels
        )
        true_risk = (
            _true_risk_zero_one(threshold)
            if kind == "zero_one"
            else _true_risk_ordinal(threshold)
        )
        if np.isfinite(threshold):
            assert bound < target
            violations += true_risk > bound
        coverages.append(1 - min(threshold, 1.0) if np.isfinite(threshold) else 0)
    # At most delta of the draws break the bound (3 standard errors of slack).
    assert violations / n_draws <= delta + 3 * np.sqrt(delta * (1 - delta) / n_draws)
    # ... and the threshold is not vacuous: it keeps a good share.
    assert np.mean(coverages) > 0.3


def test_guaranteed_risk_with_ties_and_unreachable_targets():
    confidence = np.repeat([0.2, 0.5, 0.9], 100)
    losses = np.r_[np.ones(50), np.zeros(250)]
    threshold, bound = _guaranteed_risk_threshold(confidence, losses, 0.1, 0.05)
    # The tied block at 0.5 comes in whole: keep the top two blocks.
    assert threshold == 0.5
    assert bound < 0.1
    assert _guaranteed_risk_threshold(confidence, np.ones(300), 0.5, 0.05)[0] == np.inf


@pytest.mark.parametrize("m", [1, 2, 3, 7, 8, 100, 1000])
def test_a_loose_target_accepts_full_coverage(m):
    rng = np.random.RandomState(m)
    confidence = rng.rand(m)
    losses = (rng.rand(m) < 0.3).astype(float)
    threshold, bound = _guaranteed_risk_threshold(confidence, losses, 1e6, 0.05)
    assert threshold == confidence.min() and bound <= 1.0
    # Every bound passes: the search ends at the lowest confidence.
    threshold, _ = _guaranteed_risk_threshold(confidence, losses, 1.0 + 1e-9, 0.05)
    assert threshold == confidence.min()


def test_the_selective_classifier_keeps_everything_at_a_loose_target():
    X, y = make_classification(n_samples=200, random_state=0)
    model = SelectiveClassifier(
        LogisticRegression(), signals="max_proba", target_risk=1e6
    ).fit(X, y)
    # On the out-of-fold predictions the threshold was chosen on.
    assert model.coverage_ == 1.0
    assert model.threshold_ == model.cv_confidence_.min()


# -- the meta-estimator --------------------------------------------------------
@pytest.fixture(scope="module")
def data():
    return make_classification(
        n_samples=400, n_features=6, flip_y=0.05, class_sep=0.8, random_state=0
    )


@pytest.fixture(scope="module")
def fitted_cr(data):
    X, y = data
    return SelectiveClassifier(
        CRClassifier(**SMALL), cv=3, target_risk=0.2, random_state=0
    ).fit(X, y)


def test_cross_fitted_attributes(fitted_cr, data):
    X, y = data
    model = fitted_cr
    assert model.signals_ == [
        "max_proba",
        "input_sensitivity",
        "input_distance",
        "mc_dropout",
    ]
    assert model.loss_ == "zero_one"
    assert model.cv_signals_.shape == (len(y), 4)
    assert model.cv_confidence_.shape == model.cv_loss_.shape == (len(y),)
    np.testing.assert_array_equal(model.classes_, np.unique(y))
    assert model.n_features_in_ == X.shape[1]
    # The refit is the base estimator fitted on everything.
    direct = CRClassifier(**SMALL).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), direct.predict_proba(X))
    np.testing.assert_array_equal(model.predict(X), direct.predict(X))
    # The threshold meets the target on the out-of-fold data it was chosen on.
    assert np.isfinite(model.threshold_)
    assert model.risk_bound_ < 0.2
    kept = model.cv_confidence_ >= model.threshold_
    assert model.coverage_ == pytest.approx(kept.mean())
    assert model.cv_risk_ == pytest.approx(model.cv_loss_[kept].mean())
    assert model.cv_risk_ <= model.risk_bound_
    # Another target without refitting: the same search on the stored data.
    assert model.threshold_for_risk(0.2) == (model.threshold_, model.risk_bound_)
    looser, bound = model.threshold_for_risk(0.3, delta=0.2)
    assert looser <= model.threshold_ and bound < 0.3
    with pytest.raises(ValueError, match="target_risk"):
        model.threshold_for_risk(0.0)
    with pytest.raises(ValueError, match="delta"):
        model.threshold_for_risk(0.2, delta=1.0)


def test_predict_selective_and_confidence(fitted_cr, data):
    X, y = data
    y_pred, accepted = fitted_cr.predict_selective(X)
    np.testing.assert_array_equal(y_pred, fitted_cr.predict(X))
    confidence = fitted_cr.confidence(X)
    assert accepted.dtype == bool
    np.testing.assert_array_equal(accepted, confidence >= fitted_cr.threshold_)
    np.testing.assert_array_equal(confidence, fitted_cr.confidence(X))
    assert np.all((confidence >= 0) & (confidence <= 1))
    assert 0 < accepted.mean() < 1
    # Accepted predictions are more accurate than rejected ones.
    correct = y_pred == y
    assert correct[accepted].mean() > correct[~accepted].mean()
    score = fitted_cr.score(X, y)
    assert score == pytest.approx(-aurc_score(y, y_pred, confidence))


def test_confidence_is_the_out_of_fold_best_of_combination_and_signals(fitted_cr):
    model = fitted_cr
    assert set(model.cv_aurc_) == {*model.signals_, "combined"}
    assert model.confidence_source_ == min(model.cv_aurc_, key=model.cv_aurc_.get)
    # Each recorded AURC is aurc_score's on the out-of-fold losses.
    wrong = model.cv_loss_.astype(int)  # zero-one loss: 1 where wrong
    never = np.zeros_like(wrong)
    for j, name in enumerate(model.signals_):
        expected = aurc_score(wrong, never, model.cv_signals_[:, j])
        assert model.cv_aurc_[name] == pytest.approx(expected)
    chosen = aurc_score(wrong, never, model.cv_confidence_)
    assert chosen == pytest.approx(model.cv_aurc_[model.confidence_source_])


def test_a_single_signal_is_used_alone_when_the_combination_cannot_beat_it(data):
    X, y = data
    # One signal: the combiner is a monotone map of it, no better out of fold,
    # so the signal itself is the confidence.
    model = SelectiveClassifier(
        CRClassifier(**SMALL), signals=["input_sensitivity"], cv=3, random_state=0
    ).fit(X, y)
    assert model.confidence_source_ == "input_sensitivity"
    from cr_sklearn import confidence_signals

    expected = confidence_signals(model.estimator_, X, ["input_sensitivity"])
    np.testing.assert_allclose(model.confidence(X), expected["input_sensitivity"])
    np.testing.assert_array_equal(model.cv_confidence_, model.cv_signals_[:, 0])


@pytest.mark.filterwarnings("ignore:No threshold meets")
def test_guarantee_end_to_end_on_fresh_data():
    # A cheap, well-specified base model, several draws: the refitted model's
    # selective risk on a large fresh sample stays under the target in most.
    rng = np.random.RandomState(0)

    def draw(n):
        X = rng.normal(size=(n, 3))
        p = 1 / (1 + np.exp(-2.5 * X[:, 0] - X[:, 1]))
        return X, (rng.rand(n) < p).astype(int)

    X_test, y_test = draw(5000)
    violations, coverages = 0, []
    for _ in range(8):
        model = SelectiveClassifier(
            LogisticRegression(),
            signals=["max_proba"],
            cv=3,
            target_risk=0.12,
            delta=0.1,
        ).fit(*draw(500))
        y_pred, accepted = model.predict_selective(X_test)
        if accepted.any():
            violations += (y_pred[accepted] != y_test[accepted]).mean() > 0.12
        coverages.append(accepted.mean())
    assert violations <= 3
    assert np.mean(coverages) > 0.3


def test_ordinal_base_uses_the_rank_error():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 4))
    latent = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=300)
    labels = np.array(["low", "mid", "high", "top"])
    y = labels[np.digitize(latent, [-1.0, 0.0, 1.0])]
    base = CROrdinalRegressor(**SMALL, learning_rate_init=1e-2, classes=labels)
    model = SelectiveClassifier(base, cv=3, target_risk=0.7, random_state=0).fit(X, y)
    assert model.loss_ == "absolute"
    np.testing.assert_array_equal(model.classes_, labels)
    ranks = {label: i for i, label in enumerate(labels)}
    y_pred = model.predict(X)
    # The loss is in ranks of the given order, not the sorted labels.
    assert set(np.unique(model.cv_loss_)) <= {0.0, 1.0, 2.0, 3.0}
    errors = np.abs([ranks[a] - ranks[b] for a, b in zip(y, y_pred, strict=True)])
    assert -model.score(X, y) == pytest.approx(
        aurc_score(y, y_pred, model.confidence(X), loss="absolute", labels=labels)
    )
    assert errors.mean() < 1.0
    # The combiner predicts the absolute error: confidence is minus it.
    assert np.all(model.confidence(X) <= 0)


def test_no_target_accepts_everything(data):
    X, y = data
    model = SelectiveClassifier(LogisticRegression(), signals="max_proba").fit(X, y)
    assert model.threshold_ == -np.inf
    assert model.coverage_ == 1.0
    assert model.risk_bound_ > model.cv_loss_.mean()
    assert model.predict_selective(X)[1].all()


def test_unreachable_target_warns_and_rejects(data):
    X, y = data
    with pytest.warns(UserWarning, match="No threshold meets"):
        model = SelectiveClassifier(
            LogisticRegression(), signals="max_proba", target_risk=1e-4
        ).fit(X, y)
    assert model.threshold_ == np.inf
    assert np.isnan(model.risk_bound_) and np.isnan(model.cv_risk_)
    assert not model.predict_selective(X)[1].any()


def test_clone_params_and_pipeline(data):
    X, y = data
    model = SelectiveClassifier(
        LogisticRegression(C=0.5), signals=["max_proba", "gradient_norm"], cv=4
    )
    params = model.get_params()
    assert params["cv"] == 4 and params["estimator__C"] == 0.5
    cloned = clone(model)
    assert cloned.get_params()["signals"] == ["max_proba", "gradient_norm"]
    assert cloned.estimator is not model.estimator
    model.set_params(estimator__C=2.0, delta=0.1)
    assert model.estimator.C == 2.0 and model.delta == 0.1
    pipe = make_pipeline(StandardScaler(), SelectiveClassifier(LogisticRegression()))
    pipe.fit(X, y)
    assert pipe.predict(X).shape == (len(y),)
    assert pipe.predict_proba(X).shape == (len(y), 2)
    assert pipe.score(X, y) < 0
    assert pipe[-1].predict_selective(pipe[0].transform(X))[1].all()
    search = GridSearchCV(
        SelectiveClassifier(LogisticRegression(), cv=3),
        {"signals": [["max_proba"], ["max_proba", "gradient_norm"]]},
        scoring={"neg_aurc": make_aurc_scorer("confidence"), "accuracy": "accuracy"},
        refit="neg_aurc",
        cv=2,
    ).fit(X, y)
    assert search.best_params_["signals"] in (
        ["max_proba"],
        ["max_proba", "gradient_norm"],
    )


def test_unfitted_and_invalid(data):
    X, y = data
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SelectiveClassifier(LogisticRegression()).predict(X)
    with pytest.raises(ValueError, match="delta"):
        SelectiveClassifier(LogisticRegression(), delta=0).fit(X, y)
    with pytest.raises(ValueError, match="target_risk"):
        SelectiveClassifier(LogisticRegression(), target_risk=-0.1).fit(X, y)
    with pytest.raises(ValueError, match="Unknown signal"):
        SelectiveClassifier(LogisticRegression(), signals=["entropy"]).fit(X, y)
    with pytest.raises(ValueError, match="partition"):
        SelectiveClassifier(
            LogisticRegression(), cv=ShuffleSplit(3, test_size=0.2, random_state=0)
        ).fit(X, y)
    with pytest.raises(ValueError, match="samples"):
        SelectiveClassifier(LogisticRegression()).fit(X, y[:-1])
    assert not hasattr(
        SelectiveClassifier(make_pipeline(StandardScaler())), "predict_proba"
    )
    model = SelectiveClassifier(LogisticRegression(), cv=KFold(3)).fit(X, y)
    assert model.cv_loss_.shape == (len(y),)


@parametrize_with_checks(
    [SelectiveClassifier(LogisticRegression(), signals=["max_proba"], cv=3)]
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
