"""Ctrl-C during fit: training stops, a warning says so, the model is consistent.

skorch catches KeyboardInterrupt in its epoch loop (and early stopping ends
training by raising one). A real interrupt is simulated by a callback that
raises KeyboardInterrupt after a batch, as Ctrl-C would in the middle of an
epoch.
"""

import warnings

import numpy as np
import pytest
from conftest import FAST
from skorch.callbacks import Callback

from cr_sklearn import CRClassifier, CROrdinalRegressor


class _CtrlC(Callback):
    """Raise KeyboardInterrupt after the first batch of epoch ``at`` of a fit."""

    def __init__(self, at):
        self.at = at

    def on_train_begin(self, net, **kwargs):
        self.epochs_ = 0

    def on_epoch_begin(self, net, **kwargs):
        self.epochs_ += 1

    def on_batch_end(self, net, training=False, **kwargs):
        if training and self.epochs_ == self.at:
            raise KeyboardInterrupt


def _check_consistent(model, n_epochs):
    assert model.n_iter_ == n_epochs == len(model.loss_curve_)
    assert len(model.net_.history) == n_epochs
    assert all("train_loss" in row for row in model.net_.history)
    assert np.isfinite(model.gradient_norm_quantiles_).all()
    assert np.isfinite(model.input_distance_quantiles_).all()


@pytest.mark.parametrize("early_stopping", [False, True])
def test_ctrl_c_stops_warns_and_returns_the_last_complete_epoch(
    multiclass_data, early_stopping
):
    X, y = multiclass_data
    params = {**FAST, "max_iter": 30, "early_stopping": early_stopping}
    with pytest.warns(UserWarning, match="Training interrupted by user") as record:
        model = CRClassifier(**params, callbacks=[_CtrlC(at=5)]).fit(X, y)
    assert record[0].filename == __file__  # points at the fit call
    _check_consistent(model, 4)
    # The returned model is the one a fit of 4 epochs returns (with early
    # stopping: the best of those 4 epochs, restored).
    reference = CRClassifier(**{**params, "max_iter": 4}).fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))
    assert model.best_epoch_ == reference.best_epoch_
    assert model.validation_scores_ == reference.validation_scores_
    assert model.gradient_norm_mean_ == reference.gradient_norm_mean_


def test_ctrl_c_in_an_ordinal_fit_restores_the_cutpoints_too(ordinal_data):
    X, y = ordinal_data
    params = {**FAST, "max_iter": 30}  # early stopping is on by default
    with pytest.warns(UserWarning, match="Training interrupted by user"):
        model = CROrdinalRegressor(**params, callbacks=[_CtrlC(at=6)]).fit(X, y)
    _check_consistent(model, 5)
    reference = CROrdinalRegressor(**{**params, "max_iter": 5}).fit(X, y)
    np.testing.assert_array_equal(model.cutpoints_, reference.cutpoints_)
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))


def test_ctrl_c_before_any_epoch_propagates(multiclass_data):
    # No complete epoch, no model to return: the interrupt goes on.
    X, y = multiclass_data
    model = CRClassifier(**FAST, early_stopping=True, callbacks=[_CtrlC(at=1)])
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)


def test_every_interrupted_fit_of_a_loop_warns(multiclass_data):
    # As MLPClassifier: fit warns and returns, so a loop goes on; each
    # interrupted fit says so.
    X, y = multiclass_data
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for seed in range(3):
            model = CRClassifier(
                **{**FAST, "random_state": seed}, callbacks=[_CtrlC(2)]
            )
            model.fit(X, y)
            assert model.n_iter_ == 1
    assert [str(w.message).startswith("Training interrupted") for w in record] == [
        True
    ] * 3


def test_ctrl_c_during_a_warm_start_and_partial_fit(multiclass_data):
    X, y = multiclass_data
    model = CRClassifier(**{**FAST, "max_iter": 3}).fit(X, y)
    model.set_params(warm_start=True, max_iter=10, callbacks=[_CtrlC(at=3)])
    with pytest.warns(UserWarning, match="after 2 complete epoch"):
        model.fit(X, y)
    _check_consistent(model, 5)
    model.set_params(callbacks=[_CtrlC(at=1)])
    with pytest.warns(UserWarning, match="Training interrupted by user"):
        model.partial_fit(X, y)
    _check_consistent(model, 5)


def test_early_stopping_stops_without_a_warning(multiclass_data):
    X, y = multiclass_data
    params = {**FAST, "max_iter": 500, "early_stopping": True, "n_iter_no_change": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = CRClassifier(**params).fit(X, y)
    assert model.n_iter_ < 500
    assert not model.net_.interrupted_
    _check_consistent(model, model.n_iter_)


def test_ctrl_c_in_the_first_epoch_of_a_warm_start(multiclass_data):
    X, y = multiclass_data
    model = CRClassifier(**FAST).partial_fit(X, y, classes=np.unique(y))
    model.set_params(warm_start=True, early_stopping=True, callbacks=[_CtrlC(at=1)])
    with pytest.warns(UserWarning, match="after 0 complete epoch"):
        model.fit(X, y)
    _check_consistent(model, 1)
    assert model.validation_scores_ is None and model.best_epoch_ is None
