"""The defaults' tuning script (``benchmarks/tune_defaults.py``, imported by path)."""

import numpy as np
import pytest
from conftest import load_benchmark, narrow_test_fold
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from cr_sklearn import CRClassifier, gradient_norms, gradient_tail_ratio

tune = load_benchmark("tune_defaults")


def test_tau_is_by_the_one_rule_of_gradient_norms():
    X, y, train, test = narrow_test_fold()
    model = CRClassifier(max_iter=3, random_state=0, n_threads=1)
    accuracy, tau = tune._score(model, X, y, train, test, 1.0, 0)
    fitted = clone(model).fit(X[train], y[train])
    assert accuracy == fitted.score(X[test], y[test])
    expected = gradient_tail_ratio(gradient_norms(fitted, X[test]))
    assert tau == pytest.approx(expected, rel=1e-9)
    # By the training fold's spreads (the estimator's default scale) tau
    # differs on this table: the check above tells the two apart.
    by_training = gradient_tail_ratio(fitted.input_gradient_norms(X[test]))
    assert abs(by_training - expected) > 1e-3


def test_tau_is_for_the_cr_models_only():
    X, y, train, test = narrow_test_fold()
    _, tau = tune._score(LogisticRegression(), X, y, train, test, 1.0, 0)
    assert np.isnan(tau)
