"""Ctrl-C during fit: training stops, a warning says so, the model is consistent.

skorch catches KeyboardInterrupt in its epoch loop (and early stopping ends
training by raising one). A real interrupt is simulated by a callback that
raises KeyboardInterrupt after a batch, as Ctrl-C would in the middle of an
epoch. After complete epochs the fit warns and returns their model; with
none, in the internal CV folds, or after training, the interrupt propagates
and the estimator is exactly as it was before the call.
"""

import warnings

import numpy as np
import pytest
import torch
from conftest import FAST
from sklearn.exceptions import NotFittedError
from skorch.callbacks import Callback

from cr_sklearn import CRClassifier, CROrdinalRegressor, load_model, save_model
from cr_sklearn._trainer import CRNet


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


# -- an interrupt that propagates leaves the estimator as it was ------------


def _ctrl_c_at_step(monkeypatch, step):
    """Raise KeyboardInterrupt in the ``step``-th training step from now on."""
    original = CRNet.train_step_single
    calls = []

    def train_step_single(self, batch, **fit_params):
        calls.append(step)
        if len(calls) == step:
            raise KeyboardInterrupt
        return original(self, batch, **fit_params)

    monkeypatch.setattr(CRNet, "train_step_single", train_step_single)


def _assert_unfitted(model, X):
    # Only the parameters: not one fitted attribute of the interrupted fit.
    assert set(vars(model)) == set(model.get_params())
    with pytest.raises(NotFittedError):
        model.predict(X)


def _fitted_state(model, X):
    return {
        "net": model.net_,
        "module": model.module_,
        "history": len(model.net_.history),
        "n_iter": model.n_iter_,
        "proba": model.predict_proba(X),
        "weights": {k: v.clone() for k, v in model.module_.state_dict().items()},
        "attributes": set(vars(model)),
    }


def _assert_unchanged(model, X, before, tmp_path):
    after = _fitted_state(model, X)
    assert after["net"] is before["net"] and after["module"] is before["module"]
    assert after["history"] == before["history"] and after["n_iter"] == before["n_iter"]
    assert after["attributes"] == before["attributes"]
    np.testing.assert_array_equal(after["proba"], before["proba"])
    for name, value in before["weights"].items():
        torch.testing.assert_close(after["weights"][name], value, rtol=0, atol=0)
    # What is left saves and loads.
    path = tmp_path / "model.cr"
    save_model(model.set_params(callbacks=None), path)
    np.testing.assert_array_equal(load_model(path).predict_proba(X), before["proba"])


@pytest.mark.parametrize("early_stopping", [False, True, "cv"])
def test_ctrl_c_in_the_first_epoch_of_a_first_fit_leaves_it_unfitted(
    multiclass_data, early_stopping
):
    X, y = multiclass_data
    model = CRClassifier(
        **FAST, early_stopping=early_stopping, callbacks=[_CtrlC(at=1)]
    )
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    _assert_unfitted(model, X)
    with pytest.raises(KeyboardInterrupt):
        model.partial_fit(X, y, classes=np.unique(y))
    _assert_unfitted(model, X)


@pytest.mark.parametrize("early_stopping", [False, True, "cv"])
def test_ctrl_c_in_the_first_epoch_of_a_refit_keeps_the_previous_model(
    multiclass_data, early_stopping, tmp_path
):
    X, y = multiclass_data
    model = CRClassifier(**FAST).fit(X, y)
    before = _fitted_state(model, X)
    model.set_params(early_stopping=early_stopping, callbacks=[_CtrlC(at=1)])
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    _assert_unchanged(model, X, before, tmp_path)


@pytest.mark.parametrize("fitted", ["no", "refit", "warm_start"])
def test_ctrl_c_in_the_internal_cv_folds_propagates(
    multiclass_data, monkeypatch, fitted, tmp_path
):
    # skorch swallows the interrupt inside a fold's epochs; the fit used to
    # carry on with a shortened fold and end normally, without a word.
    X, y = multiclass_data
    model = CRClassifier(**{**FAST, "early_stopping": "cv"})
    if fitted != "no":
        model.fit(X, y)
        model.set_params(warm_start=fitted == "warm_start")
        before = _fitted_state(model, X)
    # Three steps: the third epoch of the first fold (one batch an epoch).
    _ctrl_c_at_step(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    if fitted == "no":
        _assert_unfitted(model, X)
    else:
        _assert_unchanged(model, X, before, tmp_path)


@pytest.mark.parametrize("how", ["refit", "warm_start", "partial_fit"])
def test_ctrl_c_while_the_fit_finishes_keeps_the_previous_model(
    multiclass_data, monkeypatch, how, tmp_path
):
    # After training, while the fitted attributes are computed: they are
    # installed together or not at all.
    import cr_sklearn._fit

    X, y = multiclass_data
    model = CRClassifier(**FAST).partial_fit(X, y, classes=np.unique(y))
    model.set_params(warm_start=how == "warm_start")
    before = _fitted_state(model, X)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(cr_sklearn._fit, "set_summaries", interrupted)
        with pytest.raises(KeyboardInterrupt):
            model.partial_fit(X, y) if how == "partial_fit" else model.fit(X, y)
    _assert_unchanged(model, X, before, tmp_path)
    # The interrupted call left no trace: the next call trains as it would
    # have without it.
    reference = CRClassifier(**FAST).partial_fit(X, y, classes=np.unique(y))
    model.set_params(warm_start=False).partial_fit(X, y)
    reference.partial_fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ctrl_c_in_a_member_fit_returns_the_members_of_the_complete_epochs(
    multiclass_data,
):
    X, y = multiclass_data
    params = {**FAST, "max_iter": 30, "n_members": 3}
    with pytest.warns(UserWarning, match="Training interrupted by user"):
        model = CRClassifier(**params, callbacks=[_CtrlC(at=5)]).fit(X, y)
    _check_consistent(model, 4)
    assert np.all(model.best_epochs_ <= 4)
    np.testing.assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)
    # In the first epoch: no member model to return, the estimator unfitted.
    model = CRClassifier(**params, callbacks=[_CtrlC(at=1)])
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    _assert_unfitted(model, X)
