"""Determinism, global state and thread safety of fitting and prediction."""

import os
import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from joblib import Parallel, delayed
from sklearn.datasets import make_classification

from cr_sklearn import CRClassifier
from cr_sklearn._ordinal import CROrdinalRegressor

SETTINGS = {
    "mlp": (CRClassifier, dict(hidden_layer_sizes=(16, 16), dropout=0.1)),
    "residual": (
        CRClassifier,
        dict(hidden_layer_sizes=(16, 16), architecture="residual"),
    ),
    "projected-stream": (
        CRClassifier,
        dict(hidden_layer_sizes=(16,), n_projections=2, igpen_lambda=0.01),
    ),
    "ordinal": (CROrdinalRegressor, dict(hidden_layer_sizes=(16,))),
}


def _data(n_classes=3):
    return make_classification(
        n_samples=150, n_features=6, n_informative=4, n_classes=n_classes,
        random_state=0,
    )  # fmt: skip


def _fit_predict(name, seed=0, n_threads=1):
    cls, params = SETTINGS[name]
    X, y = _data()
    est = cls(**params, max_iter=8, random_state=seed, n_threads=n_threads).fit(X, y)
    return est.predict_proba(X), est.input_gradient_norms(X)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_same_seed_same_bits(name):
    a, b = _fit_predict(name), _fit_predict(name)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    c = _fit_predict(name, seed=1)
    assert not np.array_equal(a[0], c[0])


def test_same_bits_across_worker_processes():
    # Two loky workers (each pays torch's import: the slow part of this test).
    results = Parallel(n_jobs=2, backend="loky")(
        delayed(_fit_predict)("mlp") for _ in range(2)
    )
    here = _fit_predict("mlp")
    for got in results:
        np.testing.assert_array_equal(got[0], here[0])
        np.testing.assert_array_equal(got[1], here[1])


@pytest.mark.parametrize("n_threads", [None, 1])
def test_fit_and_predict_leave_global_state_and_disk_alone(
    tmp_path, monkeypatch, n_threads
):
    monkeypatch.chdir(tmp_path)
    X, y = _data()
    torch.manual_seed(123)
    np.random.seed(123)  # noqa: NPY002
    random.seed(123)
    before = (
        torch.get_rng_state().clone(),
        np.random.get_state()[1].copy(),  # noqa: NPY002
        random.getstate(),
        torch.get_num_threads(),
    )
    est = CRClassifier(
        (8,), max_iter=4, dropout=0.1, random_state=0, n_threads=n_threads, verbose=0
    ).fit(X, y)
    est.partial_fit(X, y)
    est.predict_proba(X)
    est.input_sensitivity(X)
    est.jacobian(X[:3])
    assert torch.equal(torch.get_rng_state(), before[0])
    np.testing.assert_array_equal(np.random.get_state()[1], before[1])  # noqa: NPY002
    assert random.getstate() == before[2]
    assert torch.get_num_threads() == before[3]
    assert os.listdir(tmp_path) == []


def test_threads_predict_like_serial():
    X, y = _data()
    est = CRClassifier((16, 16), max_iter=8, random_state=0).fit(X, y)
    rng = np.random.default_rng(0)
    chunks = [X[rng.choice(len(X), size=int(s))] for s in rng.integers(1, 60, 64)]
    serial = [(est.predict_proba(c), est.input_gradient_norms(c)) for c in chunks]

    def work(i):
        c = chunks[i]
        return est.predict_proba(c), est.input_gradient_norms(c)

    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(work, range(len(chunks))))
    for (p, g), (ps, gs) in zip(concurrent, serial, strict=True):
        np.testing.assert_array_equal(p, ps)
        np.testing.assert_array_equal(g, gs)


def test_fits_in_threads_are_reproducible_and_restore_global_rng():
    X, y = _data()

    def fit(seed):
        est = CRClassifier((8,), max_iter=4, dropout=0.1, random_state=seed)
        return est.fit(X, y).predict_proba(X)

    serial = [fit(seed) for seed in range(4)]
    before = torch.get_rng_state().clone()
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(fit, range(4)))
    assert torch.equal(torch.get_rng_state(), before)
    for a, b in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(a, b)
