"""Outputs at their edges: flat networks, zero or huge norms, bad scorer settings."""

import warnings

import numpy as np
import pytest
from conftest import FAST
from sklearn.linear_model import LogisticRegression, Ridge

from cr_sklearn import CRClassifier, DREGScorer, gradient_norms, gradient_tail_ratio


# -- input_sensitivity of a flat network (item 13) -------------------------------
def test_sensitivity_of_a_network_flat_on_its_training_data():
    X = np.ones((50, 4))
    clf = CRClassifier((), max_iter=5, random_state=0).fit(X, np.arange(50) % 2)
    assert clf.gradient_norm_mean_ == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0/0 RuntimeWarning either
        sensitivity = clf.input_sensitivity(
            np.random.RandomState(0).normal(size=(7, 4))
        )
    np.testing.assert_array_equal(sensitivity, np.ones(7))
    # A slope where training saw none is beyond anything seen: inf, not nan.
    with np.errstate(all="raise"):
        clf.module_.output.weight.data[:] = 1.0
        np.testing.assert_array_equal(clf.input_sensitivity(X[:3]), np.inf)


# -- pooled tau (item 14) -----------------------------------------------------------
def test_folds_with_zero_norms_are_left_out_of_the_pooled_tau():
    with pytest.warns(UserWarning, match=r"fold\(s\) \[0\] of 2 have only zero"):
        assert gradient_tail_ratio([[0, 0, 0], [1, 1, 1]]) == 1.0
    with pytest.warns(UserWarning, match=r"fold\(s\) \[0, 1\]"):
        assert np.isnan(gradient_tail_ratio([[0.0, 0.0], [0.0, 0.0]]))
    # One array: no fold to leave out, and a nan tau says why.
    with pytest.warns(UserWarning, match="every gradient norm is 0"):
        assert np.isnan(gradient_tail_ratio([0.0, 0.0, 0.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradient_tail_ratio([[1.0, 3.0], [10.0, 30.0]], q=100) == 1.5


@pytest.mark.parametrize(
    "norms, expected",
    [
        ([1e308] * 3, 1.0),
        ([1e308, 1e308, 5e307, 5e307], 1e308 / 7.5e307),
        ([[1e308] * 3, [1.0] * 3], 1.0),
        ([1e-320, 1e-320], 1.0),
    ],
)
def test_tau_does_not_overflow(norms, expected):
    with np.errstate(over="raise"):
        assert gradient_tail_ratio(norms, q=100) == pytest.approx(expected)


# -- DREGScorer settings (item 15) --------------------------------------------------
@pytest.fixture(scope="module")
def ridge():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 3))
    return Ridge().fit(X, X @ [1.0, 2.0, 0.0]), X


@pytest.mark.parametrize("method", ["log_proba", "predict_proba"])
def test_a_probability_response_of_a_regressor_is_a_clear_error(ridge, method):
    model, X = ridge
    with pytest.raises(ValueError, match=f"response_method='{method}'.*Ridge"):
        DREGScorer(response_method=method)(model, X)
    assert DREGScorer(response_method="predict")(model, X) == pytest.approx(1.0)


@pytest.mark.parametrize("step", [np.nan, np.inf, -1e-3, 0.0, 1e-300, True, "1e-3"])
def test_finite_difference_step_must_be_finite_positive_and_not_tiny(ridge, step):
    model, X = ridge
    with pytest.raises(ValueError, match="step"):
        DREGScorer(step=step)(model, X)
    with pytest.raises(ValueError, match="step"):
        gradient_norms(model, X, step=step)


def test_settings_are_checked_for_cr_estimators_too(binary_data):
    X, y = binary_data
    clf = CRClassifier(**{**FAST, "max_iter": 2}).fit(X, y)
    with pytest.raises(ValueError, match="response_method must be one of"):
        DREGScorer(response_method="proba")(clf, X)
    with pytest.raises(ValueError, match="step"):
        DREGScorer(step=np.nan)(clf, X)
    assert np.isfinite(DREGScorer()(clf, X))
    lr = LogisticRegression().fit(X, y)
    assert np.isfinite(DREGScorer(response_method="log_proba", step=1e-6)(lr, X))
