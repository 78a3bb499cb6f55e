"""PiecewiseLinearEncoder: ramps through quantile bins, pass-through of
binary columns, names, bad input, and scikit-learn's estimator checks."""

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
