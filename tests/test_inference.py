"""The estimators' prediction path against the fitted network's forward."""

import warnings

import numpy as np
import torch

from cr_sklearn import CRClassifier


def test_predictions_equal_the_networks_forward():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    clf = CRClassifier(max_iter=3, random_state=0).fit(X, y)
    with torch.no_grad():
        expected = clf._inference_module(torch.tensor(X)).numpy()[:, 0]
    np.testing.assert_allclose(clf.decision_function(X), expected, rtol=0, atol=1e-12)
    # One row, read-only input and a non-contiguous view give the same values.
    np.testing.assert_allclose(
        clf.decision_function(X[:1]), expected[:1], rtol=0, atol=1e-12
    )
    frozen = X.copy()
    frozen.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(
            clf.decision_function(frozen), clf.decision_function(X)
        )
    wide = np.repeat(X, 2, axis=1)[:, ::2]
    np.testing.assert_array_equal(clf.decision_function(wide), clf.decision_function(X))
    # The input is not written to.
    np.testing.assert_array_equal(frozen, X)


def test_the_folded_plan_is_checked_once_per_call_not_per_chunk(monkeypatch):
    import cr_sklearn._inference as inference

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = CRClassifier(max_iter=2, random_state=0).fit(X, y)
    expected = clf.predict_proba(X)
    net_type = type(clf._inference_module)
    state_key = net_type._state_key
    calls = []
    monkeypatch.setattr(
        net_type, "_state_key", lambda self, *a: calls.append(1) or state_key(self, *a)
    )
    # Chunks of a few rows: many chunks, one look-up.
    monkeypatch.setattr(inference, "_CHUNK_ELEMENTS", 4 * clf._max_width())
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=0, atol=1e-12)
    assert calls == [1]
