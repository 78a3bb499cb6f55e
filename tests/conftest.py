"""Seeded fixtures shared by the test modules."""

import numpy as np
import pytest
import torch

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima

# The nets under test are tiny: extra intra-op threads only add synchronisation,
# and on a shared machine oversubscribed threads slow each op by 10-100x.
torch.set_num_threads(1)

#: Small, fast settings for tests that need a fitted estimator, not a good one.
FAST = dict(hidden_layer_sizes=(16,), max_iter=30, early_stopping=True, random_state=0)


@pytest.fixture(scope="session")
def pima():
    """The bundled Pima data as ``(X, y)`` (raw, unscaled features)."""
    return load_pima(return_X_y=True)


@pytest.fixture(scope="session")
def pima_frame():
    """The bundled Pima data as ``(DataFrame, Series)``."""
    pytest.importorskip("pandas")
    return load_pima(return_X_y=True, as_frame=True)


@pytest.fixture(scope="session")
def fitted_pima(pima):
    """A CRClassifier fitted on raw Pima with fast settings; read-only."""
    X, y = pima
    return CRClassifier(**FAST).fit(X, y)


@pytest.fixture(scope="session")
def multiclass_data():
    """A seeded three-class problem with string labels."""
    rng = np.random.RandomState(0)
    centers = np.array([[0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 1.0, 0.0], [0.0, 3.0, 0, 1.0]])
    labels = np.array(["ant", "bee", "cat"])
    codes = rng.randint(3, size=240)
    X = centers[codes] + rng.normal(size=(240, 4))
    return X, labels[codes]


@pytest.fixture(scope="session")
def fitted_multiclass(multiclass_data):
    """A CRClassifier fitted on ``multiclass_data``; read-only."""
    X, y = multiclass_data
    # 216 training rows are two batches an epoch: a larger step fits in 30 epochs.
    return CRClassifier(**FAST, learning_rate_init=1e-2).fit(X, y)
