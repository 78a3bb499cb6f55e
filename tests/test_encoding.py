"""PiecewiseLinearEncoder: ramps through quantile bins, pass-through of
binary columns, names, bad input, and scikit-learn's estimator checks."""

import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from cr_sklearn import CRClassifier, PiecewiseLinearEncoder


@parametrize_with_checks([PiecewiseLinearEncoder()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _data():
    x = np.arange(9.0)  # quantile edges 0, 2, 4, 6, 8 with 4 bins
    binary = np.tile([0.0, 1.0], 5)[:9]
    constant = np.full(9, 3.0)
    return np.column_stack([x, binary, constant])


def test_numeric_columns_become_ramps_and_binary_ones_pass_through():
    encoder = PiecewiseLinearEncoder(n_bins=4).fit(_data())
    np.testing.assert_allclose(encoder.edges_[0], [0, 2, 4, 6, 8])
    assert encoder.edges_[1] is None and encoder.edges_[2] is None
    assert encoder.n_features_out_ == 6
    out = encoder.transform([[-1.0, 1.0, 3.0], [3.0, 0.0, 3.0], [9.0, 1.0, 7.0]])
    np.testing.assert_allclose(
        out,
        [
            [0, 0, 0, 0, 1, 3],  # below every bin
            [1, 0.5, 0, 0, 0, 3],  # half-way through the second bin
            [1, 1, 1, 1, 1, 7],  # above every bin; pass-through unchanged
        ],
    )


def test_tied_quantiles_merge_bins():
    # Mostly zeros: the lower quantiles tie, so fewer than n_bins ramps.
    X = np.r_[np.zeros(80), np.arange(1.0, 21.0)].reshape(-1, 1)
    encoder = PiecewiseLinearEncoder(n_bins=8).fit(X)
    edges = encoder.edges_[0]
    assert np.all(np.diff(edges) > 0)
    assert encoder.transform(X).shape[1] == edges.size - 1 < 8


def test_feature_names_name_each_bin():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(_data(), columns=["age", "smoker", "const"])
    encoder = PiecewiseLinearEncoder(n_bins=2).fit(frame)
    assert list(encoder.get_feature_names_out()) == [
        "age_bin0",
        "age_bin1",
        "smoker",
        "const",
    ]


@pytest.mark.parametrize("n_bins", [1, 0, 2.5, "4"])
def test_bad_n_bins_is_a_clear_error(n_bins):
    with pytest.raises((ValueError, TypeError), match="n_bins"):
        PiecewiseLinearEncoder(n_bins=n_bins).fit(_data())


def test_non_finite_input_is_refused():
    X = _data()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PiecewiseLinearEncoder().fit(X)
    encoder = PiecewiseLinearEncoder().fit(_data())
    with pytest.raises(ValueError, match="features"):
        encoder.transform(_data()[:, :2])


def test_in_a_pipeline_before_crclassifier():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (np.abs(X[:, 0]) > 0.7).astype(int)  # a threshold on |x0|
    model = make_pipeline(
        PiecewiseLinearEncoder(),
        CRClassifier(max_iter=30, dropout=0.3, random_state=0),
    ).fit(X, y)
    assert model[-1].n_features_in_ == model[0].n_features_out_ == 12
    assert model.score(X, y) > 0.8


def _plain_quantile_edges(column, n_bins):
    """The bins of ``n_bins`` quantiles, ties merged: nothing else dropped."""
    return np.unique(np.quantile(column, np.linspace(0.0, 1.0, n_bins + 1)))


def _ramps(column, edges):
    low, high = edges[:-1], edges[1:]
    return np.clip((column[:, None] - low) / (high - low), 0.0, 1.0)


def test_the_default_bins_are_the_plain_quantile_bins(pima):
    # The rules below drop nothing at 4 bins on tables like Pima: default
    # fits are those of the plain quantile bins.
    X, _ = pima
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoder = PiecewiseLinearEncoder(n_bins=4).fit(X)
    for column, edges in zip(X.T, encoder.edges_, strict=True):
        np.testing.assert_array_equal(edges, _plain_quantile_edges(column, 4))


def test_more_bins_than_rows_get_an_edge_on_every_value():
    # More quantiles than rows only interpolate between neighbouring rows:
    # 1,000 bins on 50 rows used to make 1,000 ramps per column.
    X = np.random.RandomState(0).normal(size=(50, 3))
    with pytest.warns(UserWarning, match="n_bins=1000 makes bins that the 50"):
        encoder = PiecewiseLinearEncoder(n_bins=1000).fit(X)
    for column, edges in zip(X.T, encoder.edges_, strict=True):
        np.testing.assert_array_equal(edges, np.unique(column))
    assert encoder.n_features_out_ == 3 * 49


@pytest.mark.parametrize("n_bins", [20, 10**5])
def test_bins_that_repeat_a_neighbour_on_the_training_rows_are_merged(n_bins):
    # An integer column of 5 values: 20 quantile bins interpolate between
    # them, and bins with no value inside repeat each other on these rows.
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.randint(0, 5, 30), rng.normal(size=30)])
    with pytest.warns(UserWarning, match=f"n_bins={n_bins} makes bins"):
        encoder = PiecewiseLinearEncoder(n_bins=n_bins).fit(X)
    column = X[:, 0]
    np.testing.assert_array_equal(encoder.edges_[0], np.unique(column))
    # Nothing the plain bins told apart on the training rows is lost.
    plain = _ramps(column, _plain_quantile_edges(column, min(n_bins, 29)))
    kept = _ramps(column, encoder.edges_[0])
    assert {tuple(c) for c in plain.T} == {tuple(c) for c in kept.T}
    assert len(plain.T) > len(kept.T) == 4
