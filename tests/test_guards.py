"""Numerical guards: non-finite steps, divergence roll-back, extreme inputs."""

import math

import numpy as np
import pytest
import torch
from conftest import FAST
from skorch.callbacks import Callback

from cr_sklearn import CRClassifier


@pytest.fixture(scope="module")
def data(binary_data):
    return binary_data


@pytest.fixture(scope="module")
def fitted(data):
    return CRClassifier(**FAST).fit(*data)


def _params_finite(est):
    return all(bool(torch.isfinite(t).all()) for t in est.module_.state_dict().values())


class _PoisonOnce(Callback):
    """Write NaN into the first layer's weights once, inside epoch ``epoch``."""

    def __init__(self, epoch):
        self.epoch = epoch
        self.done = False

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        if training and not self.done and len(net.history) == self.epoch:
            with torch.no_grad():
                next(net.module_.parameters()).fill_(float("nan"))
            self.done = True


@pytest.mark.parametrize("early_stopping", [True, False])
def test_divergence_rolls_back_and_halves_the_step(data, early_stopping):
    X, y = data
    est = CRClassifier(
        **FAST,
        early_stopping=early_stopping,
        callbacks=[("poison", _PoisonOnce(epoch=3))],
    ).fit(X, y)
    history = est.net_.history
    rolled = [bool(row.get("rolled_back")) for row in history]
    assert rolled[2] and sum(rolled) == 1
    assert _params_finite(est)
    lrs = {g["lr"] for g in est.net_.optimizer_.param_groups}
    assert lrs == {est.learning_rate_init / 2}
    assert np.isfinite(est.predict_proba(X)).all()
    assert est.score(X, y) > 0.6


@pytest.mark.filterwarnings("ignore:Features are not standardised")
@pytest.mark.parametrize("early_stopping", [True, False])
def test_hopeless_divergence_raises_and_keeps_finite_weights(data, early_stopping):
    X, y = data
    est = CRClassifier(
        **{
            **FAST,
            "max_iter": 40,
            "learning_rate_init": 1e20,
            "standardize": False,
            "early_stopping": early_stopping,
        }
    )
    keep = _KeepNet()
    est.set_params(callbacks=[keep])
    with pytest.raises(FloatingPointError, match="Training diverged.*roll-backs"):
        est.fit(X * 1e6, y)
    # The failed fit restored the last good state of the network...
    module = keep.net_.module_
    assert all(bool(torch.isfinite(t).all()) for t in module.state_dict().values())
    # ... and left the estimator as it was: unfitted.
    assert not hasattr(est, "net_") and not hasattr(est, "n_features_in_")


class _KeepNet(Callback):
    """Keep a reference to the net being trained."""

    def on_train_begin(self, net, **kwargs):
        self.net_ = net


def _one_step(est, X, y):
    net = est.net_
    net.history.new_epoch()
    net.history.new_batch()
    before = {k: v.clone() for k, v in net.module_.state_dict().items()}
    # The layers train on the fitted transform's output, in float32.
    H = est.module_.transform_input(torch.as_tensor(X, dtype=torch.float64))
    batch = ({"X": H.float()}, torch.as_tensor(y))
    net.train_step(batch)
    after = net.module_.state_dict()
    changed = any(not torch.equal(before[k], after[k]) for k in before)
    return changed, net.history[-1, "batches", -1].get("skipped")


def test_non_finite_loss_or_gradient_skips_the_step(data):
    X, y = data
    est = CRClassifier(**FAST).fit(X, y)
    assert _one_step(est, X[:32], y[:32]) == (True, None)

    X_nan = X[:32].copy()
    X_nan[0, 0] = np.nan
    assert _one_step(est, X_nan, y[:32]) == (False, 1)

    weight = next(est.net_.module_.parameters())
    hook = weight.register_hook(lambda g: g * float("inf"))
    try:
        assert _one_step(est, X[:32], y[:32]) == (False, 1)
    finally:
        hook.remove()
    assert _params_finite(est)


def test_learning_rate_beyond_float32_is_a_parameter_error(data):
    with pytest.raises(ValueError, match="learning_rate_init"):
        CRClassifier(**{**FAST, "learning_rate_init": 1e38}).fit(*data)


@pytest.mark.parametrize("value", [1e31, 1e300, -3e38])
def test_training_values_too_large_for_float32_are_named(data, value):
    X, y = data
    X = X.copy()
    X[5, 2] = value
    with pytest.raises(ValueError, match=r"too large to train on.*column\(s\) \[2\]"):
        CRClassifier(**FAST).fit(X, y)


@pytest.mark.parametrize("scale", [1e-300, 1e-30, 0.0, 1e25])
def test_extreme_but_representable_columns_train_finitely(data, scale):
    X, y = data
    X = X.copy()
    X[:, 1] = X[:, 1] * scale
    est = CRClassifier(**FAST).fit(X, y)
    assert _params_finite(est)
    assert np.isfinite(est.predict_proba(X)).all()
    assert est.score(X, y) > 0.6


def test_sample_weights_negative_rejected_huge_fine(data):
    X, y = data
    with pytest.raises(ValueError, match="[Nn]egative"):
        CRClassifier(**FAST).fit(X, y, sample_weight=np.full(len(y), -1.0))
    est = CRClassifier(**FAST).fit(X, y, sample_weight=np.full(len(y), 1e308))
    assert _params_finite(est)
    assert est.score(X, y) > 0.6


def _far_points(X, n_std, seed=0):
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal((20, X.shape[1]))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    return X.mean(0) + n_std * X.std(0) * direction * np.sqrt(X.shape[1])


@pytest.mark.parametrize("n_std", [10, 100, 1e4])
def test_far_out_of_range_inputs_give_finite_probabilities(data, fitted, n_std):
    X, _ = data
    far = _far_points(X, n_std)
    proba = fitted.predict_proba(far)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert np.isfinite(fitted.input_sensitivity(far)).all()


@pytest.mark.parametrize("activation", ["poly", "relu"])
def test_overflowing_inputs_are_finite_or_named(data, activation):
    X, y = data
    est = CRClassifier(**FAST, activation=activation).fit(X, y)
    huge = np.full((3, X.shape[1]), 1e307)
    huge[1, ::2] = -1e307
    huge[2] = X[0]
    for method in (est.predict_proba, est.input_gradient_norms):
        try:
            result = method(huge)
        except ValueError as exc:
            assert "not finite for" in str(exc) and "rows [0" in str(exc)
        else:
            assert np.isfinite(result).all()


def test_far_inputs_are_flagged_by_distance_not_by_sensitivity(data, fitted):
    # The polynomial's soft bound u = b tanh(z / b) saturates far from the
    # data, so the input gradient (and input_sensitivity) shrinks there;
    # input_distance is the documented flag for out-of-range inputs.
    X, _ = data
    far = _far_points(X, 100)
    threshold = fitted.gradient_norm_quantiles_[99] / fitted.gradient_norm_mean_
    assert (fitted.input_sensitivity(far) > threshold).mean() < 0.5
    distance = fitted.input_distance(far)
    assert (distance > fitted.input_distance_quantiles_[100]).all()
    assert (distance >= 99).all()
    inside = fitted.input_distance(X)
    assert inside.max() == pytest.approx(fitted.input_distance_quantiles_[100])


def test_input_sensitivity_is_one_on_average_on_training_data(data, fitted):
    X, _ = data
    assert math.isclose(fitted.input_sensitivity(X).mean(), 1.0, rel_tol=1e-9)
