"""One rule for the input-gradient norms and tau of every model.

The analytic norms of a CR estimator must equal the generic
finite-difference norms of the same fitted function, so each CR check hides
the CR methods behind a wrapper and compares the two paths.
"""

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import FAST
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from cr_sklearn import (
    CRClassifier,
    CROrdinalRegressor,
    DepthGrowth,
    DREGScorer,
    SelectiveClassifier,
    gradient_norms,
    gradient_tail_ratio,
)

SMALL = {**FAST, "hidden_layer_sizes": (8, 8)}


class _Outputs(ClassifierMixin, BaseEstimator):
    """A fitted model's outputs only: the generic finite differences see it."""

    def __init__(self, model=None):
        self.model = model

    def fit(self, X, y=None):
        self.classes_ = self.model.classes_
        return self

    def decision_function(self, X):
        # The function a CR model's analytic norms differentiate: its logits,
        # or an ordinal model's latent score.
        latent = getattr(self.model, "predict_latent", None)
        return (latent or self.model.decision_function)(X)

    def predict_proba(self, X):
        return self.model.predict_proba(X)


class _Function(ClassifierMixin, BaseEstimator):
    """``decision_function`` is a fixed function of X (for exact checks)."""

    def __init__(self, function=None):
        self.function = function

    def fit(self, X, y=None):
        self.classes_ = np.array([0, 1])
        return self

    def decision_function(self, X):
        X = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=float)
        return self.function(X)


def _task(kind, seed=0):
    X, y = make_classification(
        n_samples=240,
        n_features=5,
        n_informative=3,
        n_redundant=0,
        n_classes=3 if kind != "binary" else 2,
        random_state=seed,
    )
    X[:, 4] = X[:, 4] > 0  # a binary column: differentiated, not flipped
    X[:, 0] = 10 * X[:, 0] + 3  # columns in different units
    return X, y


def _model(kind, architecture, bins):
    params = {**SMALL, "architecture": architecture, "encoding_bins": bins}
    if kind == "ordinal":
        return CROrdinalRegressor(**params)
    return CRClassifier(**params)


def _assert_same_norms(analytic, numeric):
    # Step 1e-4: the central differences' error is O(h^2) on the smooth parts,
    # and on a ramp's kink (a quantile edge of the encoding, where training
    # rows lie) the analytic mean of the one-sided slopes is what they
    # measure, up to the edge's float rounding relative to h.
    np.testing.assert_allclose(numeric, analytic, rtol=2e-3, atol=1e-9)
    assert gradient_tail_ratio(numeric) == pytest.approx(
        gradient_tail_ratio(analytic), rel=1e-3
    )


@pytest.mark.parametrize("kind", ["binary", "multiclass", "ordinal"])
@pytest.mark.parametrize("architecture", ["mlp", "residual"])
@pytest.mark.parametrize("bins", [None, 4])
def test_analytic_norms_equal_the_generic_ones(kind, architecture, bins):
    X, y = _task(kind)
    X_new, _ = _task(kind, seed=1)
    model = _model(kind, architecture, bins).fit(X, y)
    hidden = _Outputs(model).fit(X)
    for rows in (X, X_new):  # the training rows and fresh ones
        analytic = gradient_norms(model, rows)
        _assert_same_norms(analytic, gradient_norms(hidden, rows, step=1e-4))
        # The default step, as DREGScorer uses it: tau within 5%.
        assert DREGScorer()(hidden, rows) == pytest.approx(
            DREGScorer()(model, rows), rel=0.05
        )
    # Last in a pipeline: the same, with respect to the final step's input.
    pipe = make_pipeline(StandardScaler(), _model(kind, architecture, bins))
    pipe.fit(X, y)
    hidden_pipe = make_pipeline(pipe[0], _Outputs(pipe[-1]).fit(X))
    _assert_same_norms(
        gradient_norms(pipe, X_new), gradient_norms(hidden_pipe, X_new, step=1e-4)
    )


@pytest.mark.parametrize("kind", ["binary", "multiclass", "ordinal"])
@pytest.mark.parametrize(
    ("architecture", "bins"), [("mlp", None), ("mlp", 4), ("residual", 4)]
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_member_models_differentiate_their_decision_function(kind, architecture, bins):
    # The function predict_proba's output comes from (the logit or log of the
    # averaged probabilities, the ordinal expected rank), by the chain rule.
    X, y = _task(kind)
    X_new, _ = _task(kind, seed=1)
    model = _model(kind, architecture, bins).set_params(n_members=3).fit(X, y)
    hidden = _Outputs(model).fit(X)
    for rows in (X, X_new):
        _assert_same_norms(
            gradient_norms(model, rows), gradient_norms(hidden, rows, step=1e-4)
        )
    jac = model.jacobian(X_new[:5])
    assert jac.shape == (5, 3 if kind == "multiclass" else 1, X.shape[1])


def test_the_analytic_norms_use_the_input_not_the_encoded_columns():
    X, y = _task("binary")
    model = CRClassifier(**{**SMALL, "encoding_bins": 4}).fit(X, y)
    scale = X.std(axis=0)
    expected = np.linalg.norm(model.jacobian(X) * scale, axis=(1, 2))
    np.testing.assert_allclose(gradient_norms(model, X), expected, rtol=1e-12)
    np.testing.assert_allclose(
        model.input_gradient_norms(X, scale=scale), expected, rtol=1e-12
    )


def test_stored_summaries_and_sensitivity_without_an_encoding():
    X, y = _task("binary")
    model = CRClassifier(**{**SMALL, "encoding_bins": None}).fit(X, y)
    # On the training rows, X's spread is the training spread: the summaries
    # are those of tau's rule.
    np.testing.assert_allclose(model.input_scale_, X.std(axis=0))
    train = gradient_norms(model, X)
    assert model.gradient_norm_mean_ == pytest.approx(train.mean(), rel=1e-10)
    np.testing.assert_allclose(
        model.gradient_norm_quantiles_, np.percentile(train, np.arange(101))
    )
    X_new, _ = _task("binary", seed=1)
    np.testing.assert_allclose(
        model.input_sensitivity(X_new),
        model.input_gradient_norms(X_new) / model.gradient_norm_mean_,
    )


def _encoded_norms(model, X):
    module = model.module_
    with torch.no_grad():
        jac = module.feature_jacobian(torch.as_tensor(X))
    return torch.linalg.vector_norm(jac, dim=(1, 2)).numpy()


def test_sensitivity_with_an_encoding_is_by_the_encoded_columns():
    X, y = _task("binary")
    model = CRClassifier(**{**SMALL, "encoding_bins": 4}).fit(X, y)
    # The documented exception: ranked by the encoded columns the first layer
    # reads, with the summaries in the same space; tau keeps its rule.
    train = _encoded_norms(model, X)
    assert model.gradient_norm_mean_ == pytest.approx(train.mean(), rel=1e-10)
    X_new, _ = _task("binary", seed=1)
    np.testing.assert_allclose(
        model.input_sensitivity(X_new),
        _encoded_norms(model, X_new) / model.gradient_norm_mean_,
        rtol=1e-10,
    )
    assert not np.allclose(
        model.input_sensitivity(X_new),
        model.input_gradient_norms(X_new) / model.gradient_norm_mean_,
    )
    # A sample's sensitivity does not depend on the batch it is in.
    one = np.concatenate([model.input_sensitivity(row[None]) for row in X_new[:5]])
    np.testing.assert_allclose(one, model.input_sensitivity(X_new)[:5], rtol=1e-12)


def test_scale_is_checked():
    X, y = _task("binary")
    model = CRClassifier(**SMALL).fit(X, y)
    for bad in (np.ones(3), np.full(5, np.nan), -np.ones(5)):
        with pytest.raises(ValueError, match="scale must hold 5"):
            model.input_gradient_norms(X, scale=bad)


def test_a_fixed_scale_is_batch_independent():
    X, y = _task("binary")
    lr = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(
        gradient_norms(lr, X[:1], scale=1.0), np.linalg.norm(lr.coef_), rtol=1e-6
    )
    units = np.arange(1.0, 6.0)
    np.testing.assert_allclose(
        gradient_norms(lr, X, scale=units), np.linalg.norm(lr.coef_ * units)
    )
    for bad in (np.ones(3), -1.0, np.nan, "raw"):
        with pytest.raises(ValueError, match="scale must be None"):
            gradient_norms(lr, X, scale=bad)


def test_binary_columns_get_a_derivative_not_a_flip():
    X = np.array([[0.0], [1.0], [0.0], [1.0]])
    square = _Function(lambda X: X[:, 0] ** 2).fit(X)
    # d(x^2)/dx is 0 at 0 and 2 at 1, times the column's spread (0.5); a
    # flip from 0 to 1 would give 1 at both.
    np.testing.assert_allclose(gradient_norms(square, X), [0, 1, 0, 1], atol=1e-9)


def test_constant_columns_keep_their_raw_units():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.normal(scale=4.0, size=50), np.full(50, 7.0)])
    linear = _Function(lambda X: 3 * X[:, 0] + 2 * X[:, 1]).fit(X)
    expected = np.hypot(3 * X[:, 0].std(), 2 * 1.0)
    np.testing.assert_allclose(gradient_norms(linear, X), expected, rtol=1e-8)
    # The CR analytic path takes the same scale.
    y = (X[:, 0] > 0).astype(int)
    model = CRClassifier(**SMALL).fit(X, y)
    assert model.input_scale_[1] == 1.0
    _assert_same_norms(
        gradient_norms(model, X),
        gradient_norms(_Outputs(model).fit(X), X, step=1e-4),
    )


def test_sparse_final_step_input():
    rng = np.random.RandomState(0)
    codes = rng.randint(0, 4, size=(120, 2))
    y = (codes[:, 0] >= 2).astype(int)
    X = pd.DataFrame({"a": codes[:, 0].astype(str), "b": codes[:, 1].astype(str)})
    pipe = make_pipeline(OneHotEncoder(sparse_output=True), LogisticRegression())
    pipe.fit(X, y)
    onehot = pipe[0].transform(X).toarray()
    expected = np.linalg.norm(pipe[-1].coef_[0] * onehot.std(axis=0))
    np.testing.assert_allclose(gradient_norms(pipe, X), expected, rtol=1e-6)
    # SVC trained on sparse input refuses dense input: the batches stay sparse.
    svc = make_pipeline(OneHotEncoder(sparse_output=True), SVC()).fit(X, y)
    assert np.isfinite(DREGScorer()(svc, X))


def _frame(n=400, seed=0):
    rng = np.random.RandomState(seed)
    age = rng.normal(40, 10, n)
    income = rng.lognormal(10, 0.5, n)
    city = rng.choice(["x", "y", "z"], n)
    y = ((age - 40) / 10 + (city == "x") + rng.normal(0, 0.5, n) > 0.5).astype(int)
    age[rng.rand(n) < 0.1] = np.nan
    frame = pd.DataFrame({"age": age, "income": income, "city": city})
    return frame, y


def _prep():
    numeric = make_pipeline(SimpleImputer(), StandardScaler())
    return ColumnTransformer(
        [
            ("num", numeric, ["age", "income"]),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["city"]),
        ]
    )


def _models():
    models = {
        "CR": CRClassifier(**SMALL),
        "RandomForest": RandomForestClassifier(n_estimators=100, random_state=0),
        "SVC": SVC(),
        "LogisticRegression": LogisticRegression(),
    }
    try:
        from xgboost import XGBClassifier
    except ImportError:  # optional: the four others still run
        pass
    else:
        models["XGBoost"] = XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1)
    return models


@pytest.mark.parametrize("name", list(_models()))
def test_dreg_scorer_is_finite_behind_a_column_transformer(name):
    X, y = _frame()
    pipe = make_pipeline(_prep(), _models()[name])
    scores = cross_validate(pipe, X, y, cv=3, scoring={"tau": DREGScorer()})
    assert np.all(np.isfinite(scores["test_tau"])), scores["test_tau"]


def test_a_bare_model_on_strings_gets_a_clear_error():
    X, y = _frame()
    dummy = DummyClassifier().fit(X, y)
    with pytest.raises(ValueError, match="last in a Pipeline"):
        gradient_norms(dummy, X)


def test_a_flat_model_gives_nan_with_a_warning():
    X = np.r_[np.zeros((20, 1)), np.ones((20, 1))]
    y = np.r_[np.zeros(20), np.ones(20)]
    tree = DecisionTreeClassifier().fit(X, y)
    # Every sample lies farther than the step from the split at 0.5.
    assert not np.any(gradient_norms(tree, X))
    with pytest.warns(UserWarning, match="every gradient norm is 0"):
        assert np.isnan(DREGScorer()(tree, X))


def test_meta_estimators_pass_the_rule_through():
    X, y = _frame()
    pipe = make_pipeline(_prep(), CRClassifier(**SMALL))
    search = GridSearchCV(pipe, {"crclassifier__dreg_lambda": [1e-3, 1e-2]}, cv=2)
    search.fit(X, y)
    np.testing.assert_array_equal(
        gradient_norms(search, X), gradient_norms(search.best_estimator_, X)
    )
    selective = SelectiveClassifier(pipe, cv=2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(
        gradient_norms(selective, X), gradient_norms(selective.estimator_, X)
    )
    # A calibrated model is differentiated as a whole, last in the pipeline.
    calibrated = make_pipeline(
        _prep(), CalibratedClassifierCV(LogisticRegression(), cv=2)
    ).fit(X, y)
    assert np.isfinite(DREGScorer()(calibrated, X))


def test_depth_growth_differentiates_the_selected_model():
    X, y = _task("binary")
    grown = DepthGrowth(
        CRClassifier(**{**SMALL, "architecture": "residual"}),
        max_blocks=1,
        random_state=0,
    ).fit(X, y)
    np.testing.assert_array_equal(
        gradient_norms(grown, X), gradient_norms(grown.estimator_, X)
    )
    np.testing.assert_allclose(
        grown.input_gradient_norms(X, scale=X.std(axis=0)), gradient_norms(grown, X)
    )


def test_missing_values_have_no_derivative():
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = _task("binary")
    X[::7, 1] = np.nan
    model = HistGradientBoostingClassifier(max_iter=20).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        norms = gradient_norms(model, X)
    assert np.all(np.isfinite(norms))


# -- models of other dtypes and scales (issue 37 item 1; issue 36 R9, R18) ---------
class _Float32Only(ClassifierMixin, BaseEstimator):
    """A float32 torch module that refuses float64 input, as skorch's nets do."""

    def fit(self, X, y):
        torch.manual_seed(0)
        self.classes_ = np.unique(y)
        self.module_ = torch.nn.Sequential(
            torch.nn.Linear(X.shape[1], 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)
        )
        return self

    def decision_function(self, X):
        with torch.no_grad():
            out = self.module_(torch.as_tensor(X))  # float64 in: RuntimeError
        return (out[:, 1] - out[:, 0]).numpy()


def _autograd_norms(module, X, scale):
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    double = copy.deepcopy(module).double()
    out = double(x)
    (grad,) = torch.autograd.grad((out[:, 1] - out[:, 0]).sum(), x)
    return np.linalg.norm(grad.numpy() * scale, axis=1)


def test_a_float32_only_model_is_differentiated_in_float32():
    X, y = _task("binary")
    model = _Float32Only().fit(X, y)
    with pytest.raises(RuntimeError, match="dtype"):
        model.decision_function(X)
    expected = _autograd_norms(model.module_, X, X.std(axis=0))
    norms = gradient_norms(model, X)
    # float32 differences at a step chosen for float32: close, not exact.
    np.testing.assert_allclose(norms, expected, rtol=2e-3)
    assert np.isfinite(DREGScorer()(model, X))
    # A float32 conversion step in front: the differences stay in float32.
    pipe = make_pipeline(
        FunctionTransformer(lambda a: np.asarray(a, dtype=np.float32)), model
    )
    pipe[0].fit(X)
    np.testing.assert_allclose(gradient_norms(pipe, X), expected, rtol=2e-3)


def test_a_float64_model_keeps_float64_differences():
    X, y = _task("binary")
    linear = _Function(lambda X: X @ np.array([1.0, -2.0, 0.5, 3.0, 0.0])).fit(X)
    expected = np.linalg.norm(np.array([1.0, -2.0, 0.5, 3.0, 0.0]) * X.std(axis=0))
    np.testing.assert_allclose(gradient_norms(linear, X), expected, rtol=1e-9)


def test_a_spread_near_the_float64_limit_does_not_overflow():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.normal(size=80), 1e200 * rng.normal(size=80)])
    linear = _Function(lambda X: X[:, 0] + 1e-200 * X[:, 1]).fit(X)
    expected = np.hypot(X[:, 0].std(), (1e-200 * X[:, 1]).std())
    np.testing.assert_allclose(gradient_norms(linear, X), expected, rtol=1e-6)
    assert DREGScorer()(linear, X) == pytest.approx(1.0)


def test_a_step_lost_in_rounding_is_a_clear_error():
    rng = np.random.RandomState(0)
    # A spread of 1e-9 on an offset of 1e6: a step of 1e-12 is below the
    # offset's float64 resolution.
    X = np.column_stack([1e6 + 1e-9 * rng.normal(size=50), rng.normal(size=50)])
    linear = _Function(lambda X: X[:, 1]).fit(X)
    with pytest.raises(ValueError, match="step of column 0 .* float64 rounding"):
        gradient_norms(linear, X)
    # A step from values near the float64 limit overflows.
    X[:, 0] = np.where(np.arange(50) % 2, 1.0e308, 1.79e308)
    with pytest.raises(ValueError, match="step of column 0"):
        gradient_norms(linear, X, step=0.1)


def test_a_model_fitted_on_a_frame_gets_frames_without_warnings():
    X, y = _frame()
    X = X.drop(columns="city").fillna(40.0)
    forest = RandomForestClassifier(n_estimators=20, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        norms = gradient_norms(forest, X)
        DREGScorer()(forest, X)
    assert norms.shape == (len(X),) and np.all(np.isfinite(norms))


def test_huge_gradient_norms_stay_finite():
    # A unit slope on a column of spread 1e160: norms near 1e160, whose
    # squares overflow float64 (R9).
    rng = np.random.RandomState(0)
    z = rng.normal(size=60)
    X = np.column_stack([rng.normal(size=60), 1e160 * z])
    linear = _Function(lambda X: X[:, 0] + X[:, 1]).fit(X)
    norms = gradient_norms(linear, X)
    np.testing.assert_allclose(norms, 1e160 * z.std(), rtol=1e-6)
