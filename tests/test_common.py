"""scikit-learn's estimator checks over every public estimator.

The checks an estimator is expected to fail are listed, with the reason, in
``_expected_failed_checks`` below and nowhere else.
"""

import numpy as np
import pytest
from conftest import FAST
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler
from sklearn.utils import estimator_checks, shuffle
from sklearn.utils.estimator_checks import parametrize_with_checks

from cr_sklearn import CRClassifier, CROrdinalRegressor, DepthGrowth

# FAST with enough epochs to be accurate on sklearn's blobs (the 1-d latent
# of the ordinal model must fold 3 blobs onto a line).
CHECKED = {**FAST, "hidden_layer_sizes": (16,), "max_iter": 60}


# Deterministic training: float64 sums do not depend on the order of the
# rows, and without dropout or random stream directions nothing is drawn per
# row, so a sample weight equals a repetition to float64 rounding.
DETERMINISTIC = {"dtype": "float64", "dropout": 0.0, "n_projections": "exact"}


def _estimators():
    residual = {**CHECKED, "hidden_layer_sizes": (16, 16), "architecture": "residual"}
    return [
        CRClassifier(**CHECKED),
        CRClassifier(**{**CHECKED, "encoding_bins": 3}),
        CRClassifier(**residual),
        DepthGrowth(
            CRClassifier(**{**residual, "hidden_layer_sizes": (16,)}),
            max_blocks=1,
            random_state=0,
        ),
        CROrdinalRegressor(**CHECKED),
        CROrdinalRegressor(**CHECKED, prediction="mode"),
        # Cross-fitted members: the averaged probabilities, the oob attributes.
        CRClassifier(**CHECKED, n_members=3, oob_score=True),
        CROrdinalRegressor(**CHECKED, n_members=3),
        # Weights are repetitions: the check sklearn runs on MLPClassifier.
        CRClassifier(**CHECKED, **DETERMINISTIC),
        CROrdinalRegressor(**CHECKED, **DETERMINISTIC, prediction="mode"),
    ]


# The default prediction rule of the ordinal model is the median class, not
# the argmax of its class scores: the instances with prediction="mode" pass.
ORDINAL_MEDIAN_CHECKS = {
    "check_classifiers_train": (
        "prediction='median' predicts the median class, not the argmax of "
        "decision_function's class scores (which the check expects); the "
        "instance with prediction='mode' runs this check and passes."
    ),
}

# Fails by design: the check fits on string labels with no order given.
ORDINAL_ORDER_CHECKS = {
    "check_classifiers_classes": (
        "The check fits on unordered string labels ('one', 'two', 'three'): "
        "an ordinal model needs their order (classes= or an ordered pandas "
        "Categorical) and raises a ValueError rather than sort them "
        "alphabetically; test_ordinal_classes_check_with_an_order runs the "
        "check's predictions on numeric labels and on strings with classes=."
    ),
}


def _deterministic(estimator):
    params = estimator.get_params()
    return all(params.get(k) == v for k, v in DETERMINISTIC.items())


def _expected_failed_checks(estimator):
    expected = {}
    if not _deterministic(estimator):
        expected["check_sample_weight_equivalence_on_dense_data"] = (
            "float32 training sums a batch in the order of its rows, and the "
            "dropout masks and random stream directions are drawn per row: "
            "repeating a row changes them. With dtype='float64', dropout=0 and "
            "the exact stream (the DETERMINISTIC instances) a weight equals a "
            "repetition and the check passes."
        )
    if isinstance(estimator, CROrdinalRegressor):
        expected.update(ORDINAL_ORDER_CHECKS)
        if estimator.prediction == "median":
            expected.update(ORDINAL_MEDIAN_CHECKS)
    return expected


@parametrize_with_checks(_estimators(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_ordinal_classes_check_with_an_order():
    # check_classifiers_classes with the order given: integer labels, -1/1,
    # and its string labels with classes= (sorted, as the check expects).
    X, y = make_blobs(n_samples=30, random_state=0, cluster_std=0.1)
    X, y = shuffle(X, y, random_state=7)
    X = StandardScaler().fit_transform(X)
    binary = y != 2
    names = np.array(["one", "two", "three"])
    problems = [
        (X, y, None),
        (X[binary], np.array([-1, 1])[y[binary]], None),
        (X, names[y], sorted(names)),
        (X, names[y].astype(object), sorted(names)),
    ]
    for X_, y_, classes in problems:
        model = CROrdinalRegressor(**CHECKED, prediction="mode", classes=classes)
        estimator_checks.check_classifiers_predictions(
            X_, y_, "CROrdinalRegressor", model
        )
    with pytest.raises(ValueError, match="order"):
        CROrdinalRegressor(**CHECKED).fit(X, names[y])
