"""Units of the training path: batch loader, seeding context, finite guard."""

import signal

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from cr_sklearn import CRClassifier
from cr_sklearn._trainer import (
    BatchLoader,
    FiniteGuard,
    TensorDataset,
    torch_context,
)


def _dataset(n=23, weights=True):
    X = torch.arange(n, dtype=torch.float32).unsqueeze(1).repeat(1, 2)
    y = torch.arange(n)
    w = torch.arange(n, dtype=torch.float32) if weights else None
    return TensorDataset(X, y, w)


def _epoch(loader):
    return [(Xb, yb) for Xb, yb in loader]


@pytest.mark.parametrize("shuffle", [False, True])
def test_batch_loader_covers_every_row_once_per_epoch(shuffle):
    loader = BatchLoader(_dataset(), batch_size=5, shuffle=shuffle)
    assert len(loader) == 5
    with torch_context(0):
        batches = _epoch(loader)
    assert [len(yb) for _, yb in batches] == [5, 5, 5, 5, 3]
    rows = torch.cat([yb for _, yb in batches])
    assert sorted(rows.tolist()) == list(range(23))
    if not shuffle:
        assert rows.tolist() == list(range(23))
    for Xb, yb in batches:
        # Features and weights are sliced with the same indices as the target.
        assert set(Xb) == {"X", "sample_weight"}
        assert torch.equal(Xb["X"][:, 0].long(), yb)
        assert torch.equal(Xb["sample_weight"].long(), yb)


def test_batch_loader_shuffles_reproducibly_under_the_seed():
    loader = BatchLoader(_dataset(weights=False), batch_size=4, shuffle=True)

    def order(seed, epochs=2):
        with torch_context(seed):
            return [torch.cat([yb for _, yb in _epoch(loader)]) for _ in range(epochs)]

    first, again, other = order(0), order(0), order(1)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], other[0])
    # Each epoch draws a new order.
    assert not torch.equal(first[0], first[1])
    assert first[0].tolist() != list(range(23))


def test_batch_loader_single_batch_when_data_is_small():
    loader = BatchLoader(_dataset(6), batch_size=10, shuffle=True)
    ((Xb, yb),) = _epoch(loader)
    assert yb.tolist() == list(range(6))
    assert len(loader) == 1


def testtorch_context_restores_rng_state_and_threads():
    threads = torch.get_num_threads()
    torch.manual_seed(7)
    state = torch.get_rng_state()
    with torch_context(123, n_threads=threads + 1):
        assert torch.get_num_threads() == threads + 1
        inside = torch.rand(3)
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.get_rng_state(), state)
    with torch_context(123):
        assert torch.get_num_threads() == threads
        assert torch.equal(torch.rand(3), inside)


def testtorch_context_restores_after_an_error():
    threads = torch.get_num_threads()
    state = torch.get_rng_state()
    with pytest.raises(RuntimeError, match="boom"):
        with torch_context(0, n_threads=threads + 1):
            torch.rand(5)
            raise RuntimeError("boom")
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.get_rng_state(), state)


class _PoisonAt(Callback):
    """Set one weight to NaN at the start of the given epochs; keep the state
    seen after each epoch (the guard runs before this callback)."""

    def __init__(self, epochs):
        self.epochs = epochs

    def initialize(self):
        self.epoch_ = 0
        self.states_ = []
        return self

    def on_epoch_begin(self, net, **kwargs):
        self.epoch_ += 1
        self.net_ = net
        if self.epoch_ in self.epochs:
            with torch.no_grad():
                net.module_.hidden[0].weight[0, 0] = float("nan")

    def on_epoch_end(self, net, **kwargs):
        state = net.module_.state_dict()
        self.states_.append({k: v.detach().clone() for k, v in state.items()})


def _data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 3))
    return X, (X[:, 0] > 0).astype(int)


def _classifier(poison, max_iter):
    return CRClassifier(
        hidden_layer_sizes=(4,),
        max_iter=max_iter,
        early_stopping=False,
        learning_rate_init=1e-2,
        callbacks=[("poison", poison)],
        random_state=0,
    )


def test_finite_guard_rolls_back_and_halves_the_learning_rate():
    poison = _PoisonAt({3})
    clf = _classifier(poison, max_iter=5).fit(*_data())
    history = clf.net_.history
    assert [row.get("rolled_back", False) for row in history] == [
        False,
        False,
        True,
        False,
        False,
    ]
    # The NaN weight made every step of epoch 3 non-finite: all skipped.
    assert all(batch.get("skipped") for batch in history[2]["batches"])
    # Epoch 3 ended on the state of epoch 2.
    for key, value in poison.states_[1].items():
        assert torch.equal(poison.states_[2][key], value), key
    assert clf.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(0.5e-2)
    # ... and training went on from there.
    assert not torch.equal(
        poison.states_[4]["hidden.0.weight"], poison.states_[2]["hidden.0.weight"]
    )
    assert np.isfinite(clf.predict_proba(_data()[0])).all()
    assert np.isfinite(clf.loss_curve_[3:]).all()


def test_finite_guard_gives_up_after_max_retries():
    guard = FiniteGuard()
    poison = _PoisonAt(set(range(1, 20)))
    clf = _classifier(poison, max_iter=guard.max_retries + 3)
    with pytest.raises(FloatingPointError, match="diverged"):
        clf.fit(*_data())
    # It gave up after max_retries roll-backs, on the first failure beyond.
    assert poison.epoch_ == guard.max_retries + 1
    # The last finite state is restored before raising.
    params = list(poison.net_.module_.parameters())
    assert all(bool(torch.isfinite(p).all()) for p in params)
    # The failed fit leaves the estimator as it was: unfitted.
    assert not hasattr(clf, "net_") and not hasattr(clf, "classes_")


def test_all_finite_checks_every_tensor_without_changing_them():
    from cr_sklearn._trainer import all_finite as _all_finite

    a = torch.ones(3)
    b = torch.arange(4, dtype=torch.float64)
    assert _all_finite([a, b])
    for bad in (float("nan"), float("inf"), -float("inf")):
        c = torch.tensor([1.0, bad])
        assert not _all_finite([a, b, c])
    torch.testing.assert_close(b, torch.arange(4, dtype=torch.float64))
    assert _all_finite([])


def _recorded_stream_batches(clf, X, y, monkeypatch):
    """Batch axis of the Jacobians of every training step of ``clf.fit``."""
    from cr_sklearn.nn import CRNetwork

    seen = []
    original = CRNetwork.forward_stream

    def spy(self, x, jacobian=None, **kwargs):
        result = original(self, x, jacobian, **kwargs)
        if result.jacobians is not None:
            seen.append((x.shape[0], result.jacobians[0].shape[0]))
        return result

    monkeypatch.setattr(CRNetwork, "forward_stream", spy)
    clf.fit(X, y)
    return seen


def test_stream_rows_carries_the_stream_on_a_random_subset(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    y = (X[:, 0] > 0).astype(int)
    params = dict(hidden_layer_sizes=(8,), max_iter=2, random_state=0)
    seen = _recorded_stream_batches(
        CRClassifier(stream_rows=16, **params), X, y, monkeypatch
    )
    assert any(batch > 16 for batch, _ in seen)
    assert all(rows == min(16, batch) for batch, rows in seen)
    seen = _recorded_stream_batches(
        CRClassifier(stream_rows=None, **params), X, y, monkeypatch
    )
    assert seen and all(rows == batch for batch, rows in seen)


def test_stream_rows_subset_fits_are_reproducible():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((150, 5))
    y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)
    params = dict(hidden_layer_sizes=(8,), max_iter=5, stream_rows=10, random_state=3)
    a = CRClassifier(**params).fit(X, y).predict_proba(X)
    b = CRClassifier(**params).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)


class _CtrlC(Callback):
    """Press Ctrl-C (SIGINT to this process) as epoch ``at`` of a fit ends."""

    def __init__(self, at):
        self.at = at

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == self.at:
            signal.raise_signal(signal.SIGINT)


def test_ctrl_c_on_a_lone_fit_returns_the_model_of_the_complete_epochs():
    # Outside a study, a real Ctrl-C still ends the fit early with a warning
    # and a usable model (a study stops instead: tests/test_study.py).
    X, y = _data()
    params = dict(hidden_layer_sizes=(4,), early_stopping=False, random_state=0)
    with pytest.warns(UserWarning, match="Training interrupted by user"):
        model = CRClassifier(**params, max_iter=10, callbacks=[_CtrlC(3)]).fit(X, y)
    assert model.n_iter_ == 3
    reference = CRClassifier(**params, max_iter=3).fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))


# A fresh interpreter: torch shows its read-only warning once per process, so
# a warning raised by an earlier test would hide this one.
_READ_ONLY_FITS = """
import warnings
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot  # its own import-time warnings are not the test's
import numpy as np
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from cr_sklearn import CRClassifier, CROrdinalRegressor, confidence_signals
from cr_sklearn.plotting import ActivationDisplay

X, y = make_classification(n_samples=120, n_features=4, n_informative=3,
                           n_redundant=0, n_classes=3, random_state=0)
w = np.linspace(0.5, 1.5, len(y))
for a in (X, y, w):
    a.flags.writeable = False
warnings.simplefilter("error")
warnings.simplefilter("ignore", ConvergenceWarning)
for model in (
    CRClassifier((8,), max_iter=2, dropout=0.1, random_state=0),
    CRClassifier((8,), max_iter=2, encoding_bins=4, n_members=2, random_state=0),
    CROrdinalRegressor((8,), max_iter=2, random_state=0),
):
    model.fit(X, y, sample_weight=w)
    model.predict(X)
    model.predict_proba(X)
    model.jacobian(X[:5])
model = CRClassifier((8,), max_iter=2, dropout=0.1, random_state=0).fit(X, y)
confidence_signals(model, X, "mc_dropout", n_passes=2, random_state=0)
ActivationDisplay.from_estimator(model, X)
print("no warning")
"""


def test_read_only_inputs_raise_no_warning():
    import subprocess
    import sys

    from conftest import ROOT

    done = subprocess.run(
        [sys.executable, "-c", _READ_ONLY_FITS],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no warning" in done.stdout
