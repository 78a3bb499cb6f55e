"""CRClassifier: sklearn behaviour, training options, input validation."""

import numpy as np
import pytest
import torch
from conftest import FAST
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import recall_score
from sklearn.model_selection import (
    GridSearchCV,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from skorch.callbacks import Callback

from cr_sklearn import CRClassifier


def _feature_gradient_norms(clf, X):
    """Norms of the Jacobian with respect to ``X``, each column in units of
    its training standard deviation (through any input encoding); several
    logits' Jacobians centred over the classes first."""
    jac = clf.jacobian(X)
    if jac.shape[1] > 1:
        jac = jac - jac.mean(axis=1, keepdims=True)
    return np.linalg.norm(jac * clf.input_scale_, axis=(1, 2))


def _finite_difference_jacobian(decision, X, step=1e-5):
    """Central differences of ``decision`` (float64), one feature at a time."""
    scores = np.atleast_2d(decision(X).T).T  # (n, n_outputs)
    jac = np.empty((X.shape[0], scores.shape[1], X.shape[1]))
    for j in range(X.shape[1]):
        h = step * np.maximum(1.0, np.abs(X[:, j]))
        up, down = X.copy(), X.copy()
        up[:, j] += h
        down[:, j] -= h
        diff = np.atleast_2d(decision(up).T).T - np.atleast_2d(decision(down).T).T
        jac[:, :, j] = diff / (2 * h[:, None])
    return jac


def _linear_problem(n=200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


# -- binary / multiclass outputs ---------------------------------------------


def test_binary_outputs(fitted_pima, pima):
    clf, (X, y) = fitted_pima, pima
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    assert clf.n_features_in_ == 8
    assert not hasattr(clf, "feature_names_in_")
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 2)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X), atol=1e-10)
    scores = clf.decision_function(X)
    assert scores.shape == (len(X),)
    # The binary score is the logit of classes_[1].
    np.testing.assert_allclose(1 / (1 + np.exp(-scores)), proba[:, 1], rtol=1e-10)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
    assert clf.score(X, y) == pytest.approx(np.mean(clf.predict(X) == y))
    assert clf.score(X, y) > 0.7


def test_binary_jacobian_equals_finite_differences(fitted_pima, pima):
    clf, X = fitted_pima, pima[0][:6]
    # Off the data: Pima's integer values sit on the encoding's quantile edges,
    # kinks where central differences and the Jacobian (the mean of the
    # one-sided derivatives) agree only to the rounding of the edges.
    X = X + 0.01 * X.std(axis=0) * np.random.RandomState(0).normal(size=X.shape)
    jac = clf.jacobian(X)
    assert jac.shape == (6, 1, 8)
    expected = _finite_difference_jacobian(clf.decision_function, X)
    np.testing.assert_allclose(jac, expected, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(
        clf.input_gradient_norms(X), _feature_gradient_norms(clf, X), rtol=1e-12
    )


def test_multiclass_string_labels(fitted_multiclass, multiclass_data):
    clf, (X, y) = fitted_multiclass, multiclass_data
    np.testing.assert_array_equal(clf.classes_, ["ant", "bee", "cat"])
    pred = clf.predict(X)
    assert pred.dtype.kind == "U"
    assert set(pred) <= set(clf.classes_)
    assert clf.score(X, y) > 0.8
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X), atol=1e-10)
    scores = clf.decision_function(X)
    assert scores.shape == (len(X), 3)
    np.testing.assert_array_equal(pred, clf.classes_[scores.argmax(axis=1)])


def test_multiclass_jacobian_equals_finite_differences(fitted_multiclass):
    clf = fitted_multiclass
    X = np.random.RandomState(1).normal(size=(5, 4))
    jac = clf.jacobian(X)
    assert jac.shape == (5, 3, 4)
    expected = _finite_difference_jacobian(clf.decision_function, X)
    np.testing.assert_allclose(jac, expected, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(
        clf.input_gradient_norms(X), _feature_gradient_norms(clf, X), rtol=1e-12
    )


def test_fitted_attributes(fitted_pima):
    clf = fitted_pima
    assert clf.n_iter_ == len(clf.loss_curve_) >= 1
    assert np.isfinite(clf.loss_curve_).all()
    assert len(clf.validation_scores_) == clf.n_iter_
    assert clf.best_validation_score_ == max(clf.validation_scores_)
    # The fitted float64 network (eval mode) holds the trained layers.
    assert next(clf.module_.parameters()).dtype == torch.float64
    assert not clf.module_.training
    assert next(clf.net_.module_.parameters()).dtype == torch.float32
    assert clf.gradient_norm_quantiles_.shape == (101,)


def test_pandas_input_sets_feature_names(pima_frame):
    X, y = pima_frame
    clf = CRClassifier(**{**FAST, "max_iter": 3}).fit(X, y)
    np.testing.assert_array_equal(clf.feature_names_in_, X.columns.to_numpy())
    np.testing.assert_allclose(clf.predict_proba(X), clf.predict_proba(X.copy()))
    assert clf.jacobian(X).shape == (len(X), 1, X.shape[1])
    renamed = X.rename(columns={X.columns[0]: "something_else"})
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(renamed)


# -- seeding ---------------------------------------------------------------


def test_same_seed_same_predictions_different_seed_differs():
    X, y = _linear_problem()
    params = {**FAST, "max_iter": 5, "early_stopping": True}
    a = CRClassifier(**{**params, "random_state": 3}).fit(X, y).predict_proba(X)
    b = CRClassifier(**{**params, "random_state": 3}).fit(X, y).predict_proba(X)
    c = CRClassifier(**{**params, "random_state": 4}).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_fit_does_not_touch_global_random_state():
    import torch

    X, y = _linear_problem()
    # The legacy global numpy RNG is exactly what must stay untouched.
    torch.manual_seed(123)
    np.random.seed(123)  # noqa: NPY002
    CRClassifier(**{**FAST, "max_iter": 2}).fit(X, y)
    after = torch.rand(1), np.random.rand()  # noqa: NPY002
    torch.manual_seed(123)
    np.random.seed(123)  # noqa: NPY002
    assert (torch.rand(1), np.random.rand()) == after  # noqa: NPY002


# -- sample_weight and class_weight ---------------------------------------


def test_zero_weights_drop_the_rows():
    X, y = _linear_problem(300)
    # Append as many rows that follow the opposite rule: they spoil an
    # unweighted fit, and weight 0 removes them.
    X_all = np.vstack([X, X])
    y_all = np.concatenate([y, 1 - y])
    weight = np.r_[np.ones(len(y)), np.zeros(len(y))]
    params = {**FAST, "max_iter": 40}
    weighted = CRClassifier(**params).fit(X_all, y_all, sample_weight=weight)
    unweighted = CRClassifier(**params).fit(X_all, y_all)
    clean = CRClassifier(**params).fit(X, y)
    X_test, y_test = _linear_problem(500, seed=1)
    assert weighted.score(X_test, y_test) > 0.9
    assert clean.score(X_test, y_test) > 0.9
    assert unweighted.score(X_test, y_test) < 0.8


@pytest.mark.parametrize(
    "weight, match",
    [
        (np.ones(5), "sample_weight"),
        # scikit-learn 1.6 says "a positive sum", later versions "non-zero"
        (np.zeros(200), "non-zero|positive sum"),
        (np.r_[np.nan, np.ones(199)], "NaN"),
        (-np.ones(200), "Negative"),
    ],
)
def test_invalid_sample_weight_raises(weight, match):
    X, y = _linear_problem()
    with pytest.raises(ValueError, match=match):
        CRClassifier(max_iter=1).fit(X, y, sample_weight=weight)


def test_balanced_class_weight_raises_minority_recall():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(600, 2))
    # 10% positives that overlap the negatives: unweighted fits favour class 0.
    y = (X[:, 0] + rng.normal(scale=1.0, size=600) > 1.8).astype(int)
    assert 0.05 < y.mean() < 0.15
    params = {**FAST, "max_iter": 30}
    plain = CRClassifier(**params).fit(X, y)
    balanced = CRClassifier(**params, class_weight="balanced").fit(X, y)
    recall_plain = recall_score(y, plain.predict(X))
    recall_balanced = recall_score(y, balanced.predict(X))
    assert recall_balanced > recall_plain + 0.2


# -- training options ------------------------------------------------------


def test_partial_fit_needs_classes_first_then_learns():
    X, y = _linear_problem()
    clf = CRClassifier(**FAST)
    with pytest.raises(ValueError, match="classes"):
        clf.partial_fit(X, y)
    clf.partial_fit(X, y, classes=[0, 1])
    first = clf.score(X, y)
    assert clf.n_iter_ == 1
    for _ in range(30):
        clf.partial_fit(X, y)
    assert clf.n_iter_ == 31
    assert clf.loss_curve_[-1] < clf.loss_curve_[0]
    assert clf.score(X, y) > max(first, 0.9)
    with pytest.raises(ValueError, match="labels not in classes_"):
        clf.partial_fit(X, np.where(y == 1, 2, 0))


@pytest.mark.parametrize(
    "order",
    [
        [1, 2, 0],
        [2, 1, 0, 0, 1],
        "set",
        ["bee", "cat", "ant"],
        ["cat", "ant", "bee", "cat"],
    ],
)
def test_partial_fit_sorts_and_deduplicates_classes(order, multiclass_data, tmp_path):
    # As MLPClassifier: classes_ is the sorted unique classes, whatever the
    # order or repeats given, and the model is the one sorted classes give.
    from cr_sklearn import load_model, save_model

    X, names = multiclass_data
    codes = np.searchsorted(np.unique(names), names)
    labels = codes if order == "set" or isinstance(order[0], int) else names
    given = list(set(labels.tolist())) if order == "set" else order
    model = CRClassifier(**FAST).partial_fit(X, labels, classes=given)
    reference = CRClassifier(**FAST).partial_fit(X, labels, classes=np.unique(labels))
    np.testing.assert_array_equal(model.classes_, np.unique(labels))
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))
    model.partial_fit(X, labels, classes=given)  # the same classes again
    assert model.n_iter_ == 2
    path = tmp_path / "model.cr"
    save_model(model, path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.parametrize("fit_first", ["fit", "partial_fit"])
@pytest.mark.parametrize("classes", [["ant", "bee"], ["ant", "bee", "cat", "dog"]])
def test_partial_fit_refuses_classes_other_than_the_fitted_ones(
    multiclass_data, fit_first, classes
):
    X, y = multiclass_data
    model = CRClassifier(**FAST)
    if fit_first == "fit":
        model.fit(X, y)
    else:
        model.partial_fit(X, y, classes=np.unique(y))
    n_iter = model.n_iter_
    with pytest.raises(ValueError, match="is not the fitted classes_"):
        model.partial_fit(X[y != "cat"], y[y != "cat"], classes=classes)
    assert model.n_iter_ == n_iter
    np.testing.assert_array_equal(model.classes_, ["ant", "bee", "cat"])


@pytest.mark.parametrize(
    "classes, match",
    [
        ([0, 1], "labels not in classes_"),
        (["ant", "bee", "cat"], "labels not in classes_"),
        ([[0, 1], [2, 3]], "1-d sequence"),
        ([], "1-d sequence"),
        ([1, 1], "only one class"),
        (np.array([0, "a"], dtype=object), "cannot be sorted"),
    ],
)
def test_partial_fit_bad_classes_raise_clear_errors(classes, match):
    X, y = _linear_problem()
    y = np.where(X[:, 2] > 1, 2, y)  # labels 0, 1, 2
    model = CRClassifier(**FAST)
    with pytest.raises(ValueError, match=match):
        model.partial_fit(X, y, classes=classes)
    assert not hasattr(model, "classes_")  # a failed first call fits nothing


def test_warm_start_continues_training():
    X, y = _linear_problem()
    clf = CRClassifier(**{**FAST, "max_iter": 5, "early_stopping": False}).fit(X, y)
    first_curve = list(clf.loss_curve_)
    clf.set_params(warm_start=True).fit(X, y)
    assert clf.n_iter_ == 10
    assert clf.loss_curve_[:5] == first_curve
    assert clf.loss_curve_[-1] < first_curve[-1]
    # Without warm_start, fit starts afresh.
    clf.set_params(warm_start=False).fit(X, y)
    assert clf.n_iter_ == 5


def test_early_stopping_false_runs_max_iter_epochs():
    X, y = _linear_problem()
    clf = CRClassifier(**{**FAST, "max_iter": 7, "early_stopping": False}).fit(X, y)
    assert clf.n_iter_ == 7
    assert clf.validation_scores_ is None
    assert clf.best_validation_score_ is None


def test_early_stopping_stops_before_max_iter():
    X, y = _linear_problem()
    clf = CRClassifier(
        **{
            **FAST,
            "max_iter": 500,
            "early_stopping": True,
            "n_iter_no_change": 2,
            "tol": 0.05,
            "learning_rate_init": 0.05,
        }
    ).fit(X, y)
    assert clf.n_iter_ < 500
    assert len(clf.validation_scores_) == clf.n_iter_


def test_verbose_prints_epoch_table(capsys):
    X, y = _linear_problem()
    CRClassifier(**{**FAST, "max_iter": 2, "early_stopping": True, "verbose": 1}).fit(
        X, y
    )
    out = capsys.readouterr().out
    for column in ["epoch", "train_loss", "valid_loss", "penalty"]:
        assert column in out


def test_silent_by_default(capsys):
    X, y = _linear_problem()
    CRClassifier(**{**FAST, "max_iter": 2}).fit(X, y)
    assert capsys.readouterr().out == ""


class _EpochCounter(Callback):
    def initialize(self):
        self.epochs_ = 0
        return self

    def on_epoch_end(self, net, **kwargs):
        self.epochs_ += 1


@pytest.mark.parametrize("named", [False, True])
def test_user_callbacks_are_run(named):
    X, y = _linear_problem()
    counter = _EpochCounter()
    callbacks = [("counter", counter)] if named else [counter]
    clf = CRClassifier(
        **{**FAST, "max_iter": 4, "early_stopping": False, "callbacks": callbacks}
    ).fit(X, y)
    counted = [cb for _, cb in clf.net_.callbacks_ if isinstance(cb, _EpochCounter)]
    assert len(counted) == 1
    assert counted[0].epochs_ == clf.n_iter_ == 4


# -- the sklearn ecosystem -------------------------------------------------


def test_pipeline_grid_search_and_cross_validate_beside_other_models():
    X, y = _linear_problem(120)
    cr = make_pipeline(StandardScaler(), CRClassifier(**{**FAST, "max_iter": 20}))
    grid = GridSearchCV(
        cr,
        {"crclassifier__dreg": ["stream", "local"]},
        cv=2,
    ).fit(X, y)
    assert grid.best_params_["crclassifier__dreg"] in {"stream", "local"}
    assert grid.predict(X).shape == (120,)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    for model in [
        clone(cr),
        RandomForestClassifier(n_estimators=10, random_state=0),
        SVC(),
    ]:
        result = cross_validate(model, X, y, cv=cv, scoring="accuracy")
        assert np.isfinite(result["test_score"]).all()
        assert result["test_score"].mean() > 0.7


# -- bad input ---------------------------------------------------------------


@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda X, y: (np.where(X > 1.5, np.nan, X), y), ValueError, "NaN"),
        (lambda X, y: (np.where(X > 1.5, np.inf, X), y), ValueError, "infinity"),
        (lambda X, y: (X.astype(str).astype(object) + "a", y), ValueError, "string"),
        (lambda X, y: (X, np.zeros_like(y)), ValueError, "one class"),
        (lambda X, y: (X[:0], y[:0]), ValueError, "0 sample"),
        (lambda X, y: (X, y.astype(float) + 0.5), ValueError, "Unknown label type"),
    ],
    ids=["nan", "inf", "strings", "one_class", "empty", "continuous_y"],
)
def test_bad_training_input_raises_clear_errors(change, error, match):
    X, y = change(*_linear_problem(40))
    with pytest.raises(error, match=match):
        CRClassifier(max_iter=1).fit(X, y)


def test_bad_prediction_input_raises_clear_errors(fitted_pima, pima):
    X = pima[0][:5]
    with pytest.raises(ValueError, match="8 features"):
        fitted_pima.predict(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        fitted_pima.predict_proba(np.where(X > 50, np.nan, X))
    with pytest.raises(ValueError, match="8 features"):
        fitted_pima.jacobian(X[:, :3])


def test_unfitted_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        CRClassifier().predict(np.zeros((2, 2)))


def test_invalid_parameters_raise():
    X, y = _linear_problem(40)
    with pytest.raises(ValueError, match="activation"):
        CRClassifier(activation="softsign").fit(X, y)
    with pytest.raises(ValueError, match="dreg"):
        CRClassifier(dreg="global").fit(X, y)


# -- raw, unscaled features --------------------------------------------------


def test_raw_pima_trains_finite(fitted_pima, pima):
    # fitted_pima was trained on the raw features with the default internal
    # standardisation.
    assert np.isfinite(fitted_pima.predict_proba(pima[0])).all()
    assert np.isfinite(fitted_pima.loss_curve_).all()


def test_raw_pima_without_standardisation_stays_finite(pima):
    X, y = pima
    # Glucose ~120 and insulin up to 846 reach the cubic unscaled: the soft
    # bound on the pre-activation keeps every output finite.
    # No dropout: 20 epochs on unscaled inputs isolate the safeguard.
    clf = CRClassifier(
        hidden_layer_sizes=(16,),
        standardize=False,
        dropout=0.0,
        max_iter=20,
        early_stopping=False,
        random_state=0,
    ).fit(X, y)
    proba = clf.predict_proba(X)
    assert np.isfinite(proba).all()
    assert np.isfinite(clf.loss_curve_).all()
    assert np.isfinite(clf.jacobian(X[:20])).all()
    # It learnt something: better than the majority class (65.1%).
    assert clf.score(X, y) > 0.66


def test_raw_pima_fit_agrees_with_the_scaled_pipeline(pima):
    # Internal standardisation makes a fit on raw features the same model as
    # StandardScaler + CRClassifier, up to float rounding.
    X, y = pima
    raw = CRClassifier(**FAST).fit(X, y)
    scaled = make_pipeline(StandardScaler(), CRClassifier(**FAST)).fit(X, y)
    assert np.mean(raw.predict(X) == scaled.predict(X)) >= 0.99
    assert abs(raw.score(X, y) - scaled.score(X, y)) <= 0.01


@pytest.mark.slow
def test_raw_pima_accuracy_matches_the_scaled_pipeline(pima):
    X, y = pima
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    raw = cross_val_score(CRClassifier(random_state=0), X, y, cv=cv)
    scaled = cross_val_score(
        make_pipeline(StandardScaler(), CRClassifier(random_state=0)), X, y, cv=cv
    )
    assert np.isfinite(raw).all()
    assert abs(raw.mean() - scaled.mean()) <= 0.01


@pytest.mark.parametrize("n_samples, expect_validation", [(1999, False), (2000, True)])
def test_early_stopping_auto_switches_on_at_2000_samples(n_samples, expect_validation):
    X, y = make_classification(n_samples=n_samples, n_features=4, random_state=0)
    clf = CRClassifier(**{**FAST, "max_iter": 2}).fit(X, y)
    assert clf.early_stopping == "auto"
    assert (clf.validation_scores_ is not None) is expect_validation
