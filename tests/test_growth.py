"""Tests of function-preserving depth/width expansion and DepthGrowth."""

import numpy as np
import pytest
import torch
from conftest import FAST
from sklearn.base import clone, is_classifier
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from cr_sklearn import CRClassifier, DepthGrowth
from cr_sklearn.growth import (
    _data_loss,
    _residual_network,
    expand_depth,
    expand_width,
    first_order_signal,
)

# Growth needs residual networks.
RESIDUAL = {**FAST, "architecture": "residual"}


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=150, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    return X, np.array(["a", "b", "c"])[y]


@pytest.fixture(scope="module")
def fitted(data):
    return CRClassifier(**{**RESIDUAL, "hidden_layer_sizes": (8, 8)}).fit(*data)


def _grad_norm_of_block(estimator, X, y, params_of):
    """Oracle: gradient norm of the float64 data loss w.r.t. chosen parameters."""
    module = estimator.module_
    criterion = estimator.net_.criterion_.double()
    codes = torch.as_tensor(np.searchsorted(estimator.classes_, y))
    params = params_of(_residual_network(module))
    for p in params:
        p.requires_grad_(True)
    loss = criterion(module(torch.tensor(X)), codes).mean()
    grads = torch.autograd.grad(loss, params)
    return float(torch.sqrt(sum(g.square().sum() for g in grads)))


@pytest.mark.parametrize("position", [0, 1])
def test_expand_depth_keeps_predictions_and_continues(fitted, data, position):
    X, y = data
    deeper = expand_depth(fitted, position=position, n_blocks=2)
    assert _residual_network(fitted.net_.module_).n_blocks == 1  # original intact
    assert deeper.hidden_layer_sizes == (8, 8, 8, 8)
    assert np.abs(deeper.predict_proba(X) - fitted.predict_proba(X)).max() <= 1e-6
    new_proj = _residual_network(deeper.net_.module_).blocks[position].proj
    assert torch.count_nonzero(new_proj.weight) == 0
    n_before = deeper.n_iter_
    deeper.set_params(warm_start=True).fit(X, y)
    assert deeper.n_iter_ > n_before  # the same skorch history continues
    new_proj = _residual_network(deeper.net_.module_).blocks[position].proj
    assert torch.count_nonzero(new_proj.weight) > 0  # the new block trains
    assert _data_loss(deeper, X, y) < _data_loss(fitted, X, y)
    # clone() of a grown estimator builds the final architecture from scratch.
    scratch = clone(deeper).set_params(warm_start=False).fit(X, y)
    assert _residual_network(scratch.module_).n_blocks == 3


def test_expand_width_keeps_predictions(fitted, data):
    X, _ = data
    wider = expand_width(fitted, block=0, n_units=3)
    assert wider.hidden_layer_sizes == (8, 11)
    assert np.abs(wider.predict_proba(X) - fitted.predict_proba(X)).max() <= 1e-6


def test_first_order_signal_is_gradient_of_the_inserted_block(fitted, data):
    X, y = data
    signal = first_order_signal(fitted, X, y)
    assert signal.shape == (2,) and np.all(signal > 0)
    for position in range(2):
        deeper = expand_depth(fitted, position=position)
        expected = _grad_norm_of_block(
            deeper, X, y, lambda net, p=position: list(net.blocks[p].parameters())
        )
        assert signal[position] == pytest.approx(expected, rel=1e-6)
    width = first_order_signal(fitted, X, y, kind="width", n_units=3)
    wider = expand_width(fitted, block=0, n_units=3)
    expected = _grad_norm_of_block(wider, X, y, lambda net: [net.blocks[0].proj.weight])
    # Only the new columns count; the old ones sit near a trained optimum.
    assert 0 < width[0] <= expected + 1e-12
    assert first_order_signal(fitted, X, y, random_state=1)[0] != signal[0]


def test_signal_vanishes_when_the_loss_is_flat_in_the_block(fitted, data):
    # With a zero output layer no loss gradient reaches the residual stream:
    # no block can lower the loss to first order.
    X, _ = data
    y = np.tile([0, 1], len(X) // 2)
    clf = CRClassifier(**RESIDUAL).fit(X, y)
    net = clf.module_
    with torch.no_grad():
        net.output.weight.zero_()
        net.output.bias.zero_()
    assert first_order_signal(clf, X, y).max() < 1e-12


def test_expansion_errors(fitted, data):
    X, y = data
    with pytest.raises(ValueError, match="residual"):
        expand_depth(CRClassifier(**{**FAST, "max_iter": 2}).fit(X, y), position=0)
    with pytest.raises(NotFittedError):
        expand_depth(CRClassifier(**RESIDUAL), position=0)
    with pytest.raises(TypeError, match="cr_sklearn estimator"):
        first_order_signal(LogisticRegression().fit(X, y), X, y)
    with pytest.raises(ValueError, match="position"):
        expand_depth(fitted, position=2)
    with pytest.raises(ValueError, match="n_blocks"):
        expand_depth(fitted, position=0, n_blocks=0)
    with pytest.raises(ValueError, match="block"):
        expand_width(fitted, block=1)
    with pytest.raises(ValueError, match="kind"):
        first_order_signal(fitted, X, y, kind="diagonal")


def test_depth_growth_follows_its_rules(data):
    X, y = data
    base = CRClassifier(**RESIDUAL)
    grown = DepthGrowth(base, max_blocks=2, random_state=0).fit(X, y)
    assert is_classifier(grown)
    assert list(grown.classes_) == ["a", "b", "c"]
    history = grown.growth_history_
    assert history[0]["kind"] == "initial" and history[0]["kept"]
    assert grown.stop_reason_ in {"signal", "validation", "budget", "exhausted"}
    assert grown.n_blocks_ <= 2
    last_kept = history[0]["train_loss"]
    for entry in history[1:]:
        # Substitution rule: kept exactly when the training loss is no worse.
        assert entry["kept"] == (entry["train_loss"] <= last_kept)
        if entry["kept"]:
            last_kept = entry["train_loss"]
        assert entry["signal"] == pytest.approx(max(entry["signals"]))
    assert grown.predict(X).shape == (len(X),)
    assert grown.predict_proba(X).shape == (len(X), 3)
    assert grown.jacobian(X[:2]).shape == (2, 3, 6)
    assert base.hidden_layer_sizes == (8,)  # the wrapped estimator is untouched


def test_depth_growth_stops_on_weak_signal(data):
    X, y = data
    grown = DepthGrowth(CRClassifier(**RESIDUAL), tol=1e6, random_state=0)
    grown.fit(X, y)
    assert grown.stop_reason_ == "signal" and grown.n_blocks_ == 0
    assert len(grown.growth_history_) == 1


def test_depth_growth_width_and_auto(data):
    X, y = data
    wide = DepthGrowth(
        CRClassifier(**{**RESIDUAL, "hidden_layer_sizes": (8, 8)}),
        grow="width",
        width_step=4,
        max_steps=1,
        random_state=0,
    ).fit(X, y)
    step = wide.growth_history_[1]
    assert step["kind"] == "width"
    assert step["hidden_layer_sizes"] == (8, 12)
    # Auto: the depth budget is spent, so it widens.
    auto = DepthGrowth(
        CRClassifier(**{**RESIDUAL, "hidden_layer_sizes": (8, 8)}),
        grow="auto",
        max_blocks=1,
        max_steps=1,
        random_state=0,
    ).fit(X, y)
    assert auto.growth_history_[1]["kind"] == "width"
    with pytest.raises(ValueError, match="at least one block"):
        DepthGrowth(CRClassifier(**RESIDUAL), grow="width").fit(X, y)
    with pytest.raises(ValueError, match="architecture='residual'"):
        DepthGrowth(CRClassifier(**FAST)).fit(X, y)


def test_growth_works_for_the_ordinal_estimator(data):
    from cr_sklearn._ordinal import CROrdinalRegressor

    X, _ = data
    y = np.arange(len(X)) % 4  # ordered integer labels
    ordinal = CROrdinalRegressor(**{**RESIDUAL, "hidden_layer_sizes": (8, 8)}).fit(X, y)
    signal = first_order_signal(ordinal, X, y)
    assert signal.shape == (2,) and np.all(np.isfinite(signal))
    deeper = expand_depth(ordinal, position=1)
    assert np.abs(deeper.predict_proba(X) - ordinal.predict_proba(X)).max() <= 1e-6
    grown = DepthGrowth(CROrdinalRegressor(**RESIDUAL), max_blocks=1, max_steps=1)
    grown.fit(X, y)
    assert is_classifier(grown) == is_classifier(ordinal)
    assert grown.score(X, y) == ordinal.__class__.score(grown.estimator_, X, y)


def test_growth_trains_one_network_where_auto_would_train_members():
    from cr_sklearn._ordinal import CROrdinalRegressor

    # The ordinal defaults train members from 1,000 rows; growth needs one.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    estimator = CROrdinalRegressor(**{**RESIDUAL, "hidden_layer_sizes": (8, 8)})
    assert estimator.n_members == "auto"
    grown = DepthGrowth(estimator, max_blocks=2, max_steps=1).fit(X, y)
    assert grown.estimator_.n_members_ == 1
    assert estimator.n_members == "auto"  # the given estimator is not modified
