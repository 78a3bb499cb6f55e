"""The input transform: standardisation and the encoding (``encoding_bins``)
fitted in float64 in ``fit``, kept under warm starts, growth and persistence,
with gradients still with respect to ``X``; columns without spread."""

import copy
import io

import numpy as np
import pytest
import torch
from conftest import FAST
from sklearn.base import clone
from sklearn.preprocessing import StandardScaler

from cr_sklearn import (
    CRClassifier,
    CROrdinalRegressor,
    DepthGrowth,
    PiecewiseLinearEncoder,
    load_model,
    save_model,
)
from cr_sklearn.growth import expand_depth


@pytest.fixture(scope="module")
def data():
    """Four numeric columns, one binary and one constant column, two classes."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(240, 6)) * [1.0, 3.0, 0.5, 2.0, 1.0, 1.0] + 4.0
    X[:, 4] = X[:, 4] > 4.0
    X[:, 5] = 7.0
    y = ((X[:, 0] - 4) ** 2 + X[:, 1] > 5.0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def encoded(data):
    return CRClassifier(**{**FAST, "encoding_bins": 3}).fit(*data)


def test_without_encoding_bins_there_is_no_encoding(data):
    clf = CRClassifier(**{**FAST, "encoding_bins": None}).fit(*data)
    assert clf.n_encoded_features_ is None
    assert clf.module_.encoding is None


def test_the_encoding_is_the_transformers_on_standardised_columns(encoded, data):
    X, _ = data
    # What a scaler, the encoder and a second scaler make of the training rows.
    H = StandardScaler().fit_transform(X)
    H[:, 5] = 0.0  # constant: centred, scale kept at 1
    ramps = PiecewiseLinearEncoder(n_bins=3).fit_transform(H)
    binary = ramps.std(axis=0) > 0
    expected = ramps.copy()
    is_ramp = encoded.module_.encoding.ramp.numpy()
    expected[:, is_ramp] = StandardScaler().fit_transform(ramps[:, is_ramp])
    assert encoded.n_encoded_features_ == ramps.shape[1] == 4 * 3 + 2
    assert not is_ramp[[-2, -1]].any() and binary[-2] and not binary[-1]
    with torch.no_grad():
        got = encoded.module_.transform_input(torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_jacobians_are_with_respect_to_x(encoded, data):
    X, _ = data
    rows = X[:20]
    jac = encoded.jacobian(rows)
    assert jac.shape == (20, 1, 6)
    # Central differences, each column in its own units; the ramps have kinks,
    # so compare where both sides lie in one bin (nearly everywhere).
    eps = 1e-6 * encoded.input_scale_
    fd = np.empty_like(jac)
    for j in range(6):
        step = np.zeros(6)
        step[j] = eps[j]
        up = encoded.decision_function(rows + step)
        down = encoded.decision_function(rows - step)
        fd[:, 0, j] = (up - down) / (2 * eps[j])
    close = np.isclose(jac, fd, rtol=1e-4, atol=1e-6)
    assert close.mean() > 0.95
    assert np.abs(jac[:, 0, :4]).max() > 0  # the ramps carry gradient
    # The gradient norms (tau) are with respect to X too, each column in
    # units of its training spread: not the encoded columns.
    norms = encoded.input_gradient_norms(rows)
    expected = np.linalg.norm(jac * encoded.input_scale_, axis=(1, 2))
    np.testing.assert_allclose(norms, expected, rtol=1e-12)
    module = encoded.module_
    with torch.no_grad():
        features = module.transform_input(torch.as_tensor(rows))
    after = copy.deepcopy(module)
    after.encoding = None
    after.input_mean = torch.zeros(module.input_width, dtype=torch.float64)
    after.input_scale = torch.ones(module.input_width, dtype=torch.float64)
    grads = torch.func.vmap(torch.func.jacrev(lambda e: after(e[None])[0]))(features)
    encoded_norms = torch.linalg.vector_norm(grads, dim=(1, 2)).numpy()
    assert not np.allclose(norms, encoded_norms)
    # input_sensitivity is the exception: by the encoded columns.
    np.testing.assert_allclose(
        encoded.input_sensitivity(rows), encoded_norms / encoded.gradient_norm_mean_
    )


def test_the_bins_stay_under_warm_start_and_partial_fit(encoded, data):
    X, y = data
    model = clone(encoded).fit(X, y)
    buffers = {k: v.clone() for k, v in model.module_.encoding.state_dict().items()}
    scaling = model.module_.input_mean.clone()
    model.set_params(warm_start=True, max_iter=2).fit(X + 10.0, y)
    model.partial_fit(3 * X, y)
    for key, value in model.module_.encoding.state_dict().items():
        torch.testing.assert_close(value, buffers[key], rtol=0, atol=0)
    torch.testing.assert_close(model.module_.input_mean, scaling, rtol=0, atol=0)
    with pytest.raises(ValueError, match="encoding_bins cannot change"):
        model.set_params(encoding_bins=4).fit(X, y)
    # A fresh fit re-fits the bins from the data it gets.
    fresh = model.set_params(warm_start=False).fit(X + 10.0, y)
    assert not torch.equal(fresh.module_.encoding.low, buffers["low"])


def test_partial_fit_builds_the_encoding_from_its_first_batch(data):
    X, y = data
    model = CRClassifier(**{**FAST, "encoding_bins": 2})
    model.partial_fit(X[:100], y[:100], classes=[0, 1])
    first = model.module_.encoding.low.clone()
    model.partial_fit(X[100:], y[100:])
    assert model.n_encoded_features_ == 4 * 2 + 2
    torch.testing.assert_close(model.module_.encoding.low, first, rtol=0, atol=0)


def test_seeded_fits_are_reproducible(encoded, data):
    again = clone(encoded).fit(*data)
    np.testing.assert_array_equal(
        again.predict_proba(data[0]), encoded.predict_proba(data[0])
    )


@pytest.mark.parametrize(
    "estimator",
    [
        CRClassifier(**{**FAST, "encoding_bins": 3, "dreg": "local"}),
        CRClassifier(**{**FAST, "encoding_bins": 3, "n_projections": 2}),
        CROrdinalRegressor(**{**FAST, "encoding_bins": 3, "architecture": "residual"}),
    ],
    ids=["local", "projections", "ordinal-residual"],
)
def test_encoded_models_save_and_load_exactly(estimator, data):
    X, y = data
    model = clone(estimator).fit(X, y)
    buffer = io.BytesIO()
    save_model(model, buffer)
    buffer.seek(0)
    loaded = load_model(buffer)
    assert loaded.n_encoded_features_ == model.n_encoded_features_
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(loaded.jacobian(X[:5]), model.jacobian(X[:5]))


def test_growth_keeps_the_encoding(data):
    X, y = data
    base = CRClassifier(**{**FAST, "architecture": "residual", "encoding_bins": 3})
    fitted = clone(base).fit(X, y)
    deeper = expand_depth(fitted, position=0, n_blocks=1)
    np.testing.assert_allclose(
        deeper.predict_proba(X), fitted.predict_proba(X), atol=1e-6
    )
    torch.testing.assert_close(
        deeper.module_.encoding.low, fitted.module_.encoding.low, rtol=0, atol=0
    )
    grown = DepthGrowth(base, max_blocks=1, random_state=0).fit(X, y)
    assert grown.estimator_.n_encoded_features_ == fitted.n_encoded_features_
    assert grown.jacobian(X[:2]).shape == (2, 1, 6)


def test_encoding_bins_is_validated(data):
    for bad in [1, 2.5, "four", True]:
        with pytest.raises((ValueError, TypeError), match="encoding_bins"):
            CRClassifier(**{**FAST, "encoding_bins": bad}).fit(*data)


@pytest.mark.parametrize(
    "params, n_features, expected",
    [
        ({"encoding_bins": "auto", "dropout": "auto"}, 6, (4, 0.3)),
        ({"encoding_bins": "auto", "dropout": "auto"}, 101, (None, 0.1)),
        ({"encoding_bins": "auto", "dropout": 0.2}, 6, (4, 0.2)),
        ({"encoding_bins": 8, "dropout": "auto"}, 101, (8, 0.3)),
        ({"encoding_bins": None, "dropout": "auto"}, 6, (None, 0.1)),
        ({"encoding_bins": None, "dropout": 0}, 6, (None, 0.0)),
    ],
)
def test_auto_encoding_and_dropout_resolve_on_the_width(params, n_features, expected):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, n_features))
    y = (X[:, 0] > 0).astype(int)
    model = CRClassifier(**{**FAST, "max_iter": 2, **params}).fit(X, y)
    assert (model.encoding_bins_, model.dropout_) == expected
    assert model.module_.dropout == expected[1]
    assert (model.module_.encoding is None) == (expected[0] is None)
    assert model.get_params()["encoding_bins"] == params["encoding_bins"]


def test_the_classifier_encodes_tables_by_default(data):
    clf = CRClassifier()
    assert (clf.encoding_bins, clf.dropout) == ("auto", "auto")
    fitted = clf.set_params(**FAST).fit(*data)
    assert fitted.n_encoded_features_ == 4 * 4 + 2 and fitted.dropout_ == 0.3
    # The ordinal model encodes from 1,000 rows only (below, the encoding did
    # not help on the ordinal suite), without dropout.
    ordinal = CROrdinalRegressor(**FAST).fit(*data)
    assert (ordinal.encoding_bins, ordinal.dropout) == ("auto", 0.0)
    assert len(data[0]) < 1000 and ordinal.encoding_bins_ is None


def test_encoding_bins_beyond_the_data_are_dropped_before_allocating():
    # 10,000 bins on 60 rows made 40,000 encoded columns (10**5 on 300 rows
    # took gigabytes); a column gets at most an edge on every value.
    X = np.random.RandomState(0).normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    clf = CRClassifier(**{**FAST, "encoding_bins": 10**4, "max_iter": 2})
    with pytest.warns(UserWarning, match="encoding_bins=10000 makes bins"):
        clf.fit(X, y)
    assert clf.n_encoded_features_ == 4 * (60 - 1)
    assert np.isfinite(clf.predict_proba(X)).all()


@pytest.mark.parametrize(
    "architecture, activation", [("mlp", "poly"), ("residual", "poly"), ("mlp", "tanh")]
)
@pytest.mark.parametrize("sizes", [(5,), (7, 3), (6, 4, 2)])
def test_the_parameter_count_is_the_built_networks(architecture, activation, sizes):
    from cr_sklearn._plan import network_parameters
    from cr_sklearn.nn import ARCHITECTURES

    module = ARCHITECTURES[architecture](
        9, 3, hidden_layer_sizes=sizes, activation=activation, degree=4
    )
    expected = sum(p.numel() for p in module.parameters())
    poly = activation == "poly"
    assert network_parameters(architecture, 9, sizes, 3, poly, 4) == expected


@pytest.mark.parametrize(
    ("params", "message"),
    [
        # The memory bound of a training step answers first here (issue 47 F5).
        ({"hidden_layer_sizes": 10**12}, "hidden_layer_sizes=.*GiB.*over the bound"),
        (
            {"hidden_layer_sizes": (10**5, 10**5)},
            "learnable parameters.*over the bound",
        ),
        ({"degree": 10**12}, "'degree' parameter .* in the range \\[1, 30\\]"),
        (
            {"architecture": "residual", "hidden_layer_sizes": (10**5, 10**5)},
            "learnable parameters.*over the bound",
        ),
    ],
)
def test_networks_over_the_size_bound_are_refused_before_allocating(
    data, params, message
):
    # They used to fail inside torch's allocator: each is refused, naming what
    # to change, before any network exists.
    clf = CRClassifier(**{**FAST, **params})
    with pytest.raises(ValueError, match=message):
        clf.fit(*data)
    assert not hasattr(clf, "n_features_in_")


def test_networks_over_the_bound_count_every_member_and_fold(data):
    # Each network fits the bound; 200 members of them do not (R6).
    clf = CRClassifier(**{**FAST, "hidden_layer_sizes": (3000, 3000), "n_members": 200})
    # A training step of 200 members reads 200 x 200 rows: the memory bound.
    with pytest.raises(ValueError, match=r"40,000 rows.*over the bound"):
        clf.fit(*data)
    assert not hasattr(clf, "n_features_in_")
    # The folds of early_stopping="cv" are built at once too: 4e8 each.
    wide = {"hidden_layer_sizes": (20_000, 20_000), "early_stopping": "cv"}
    with pytest.raises(ValueError, match=r"x 3 networks"):
        CRClassifier(**{**FAST, **wide}).fit(*data)


# -- columns without spread (issue 36, R1 and R8) --------------------------------


def _linear_task(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


@pytest.mark.parametrize("value", [0.1, 7.0, 1e-17, -3.3e5])
@pytest.mark.parametrize(
    ("estimator", "params"),
    [
        (CRClassifier, {}),
        (CRClassifier, {"n_members": 3}),
        (CROrdinalRegressor, {}),
    ],
)
def test_a_constant_column_is_ignored(value, estimator, params):
    # A constant column's rounding noise (7e-16 for 0.1) is no spread: it
    # keeps scale 1, as StandardScaler's, and the model learns from the rest.
    X, y = _linear_task()
    X[:, 2] = value
    model = estimator(random_state=0, **params).fit(X, y)
    assert model.input_scale_[2] == 1.0
    assert model.module_.input_scale[2].item() == 1.0
    score = model.score(X, y)
    assert score > 0.95 if estimator is CRClassifier else score > -0.06


def test_a_column_constant_only_in_the_training_rows():
    # A flag set in one row of the whole table, not in the training rows,
    # after a StandardScaler fitted on every row: constant in training.
    X, y = _linear_task()
    X[:, 3] = 0.0
    X[0, 3] = 1.0
    Xs = StandardScaler().fit_transform(X)
    model = CRClassifier(random_state=0).fit(Xs[1:], y[1:])
    assert model.score(Xs[1:], y[1:]) > 0.95
    assert np.isfinite(model.predict_proba(Xs[:1])).all()


def test_a_huge_offset_with_a_small_spread_keeps_its_information():
    # 1e6 + 1e-3 x: one distinct float32 value, standardised in float64 (R8).
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(1)
    x = rng.normal(size=600)
    X = np.column_stack([1e6 + 1e-3 * x, rng.normal(size=600)])
    y = (x > 0).astype(int)
    assert len(np.unique(X[:, 0].astype(np.float32))) <= 3
    scores = cross_val_score(CRClassifier(random_state=0), X, y, cv=3)
    assert scores.mean() > 0.95
