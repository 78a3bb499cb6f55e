"""Piecewise-linear quantile encoding of numeric columns (a transformer)."""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import (
    _check_feature_names_in,
    check_is_fitted,
    validate_data,
)

from ._utils import find_stacklevel

__all__ = ["PiecewiseLinearEncoder"]


def _merge_repeated_bins(edges, values):
    """``edges`` without the shared edge of neighbour bins holding no training value."""
    inner = edges[1:-1]
    # Training values strictly inside the bins left and right of each inner edge.
    left = np.searchsorted(values, inner, "left") - np.searchsorted(
        values, edges[:-2], "right"
    )
    right = np.searchsorted(values, edges[2:], "left") - np.searchsorted(
        values, inner, "right"
    )
    on_value = np.isin(inner, values)
    repeated = (left <= 0) & (right <= 0) & ~on_value
    if not repeated.any():
        return edges
    return np.concatenate([edges[:1], inner[~repeated], edges[-1:]])


def weighted_quantiles(values, weights, quantiles):
    """numpy's linear quantiles of ``values``, each row repeated ``weights`` times.

    Exact for integer weights; other positive weights generalise it.
    """
    order = np.argsort(values, kind="stable")
    weights = np.asarray(weights, dtype=np.float64)[order]
    if not np.isfinite(weights.sum()):
        weights = weights / weights.max()  # the positions' scale, not overflow
    values, ends = values[order], np.cumsum(weights)
    last = max(ends[-1] - 1.0, 0.0)
    position = np.asarray(quantiles) * last
    low = np.floor(position)
    fraction = position - low
    high = np.minimum(low + 1.0, last)

    def at(k):
        # The row that covers repeated position k: the first whose end exceeds it.
        return values[np.minimum(np.searchsorted(ends, k, side="right"), len(ends) - 1)]

    below = at(low)
    return below + fraction * (at(high) - below)


def quantile_edges(X, n_bins, *, name="n_bins", sample_weight=None, names=None):
    """The bin edges of each column of ``X``: its ``n_bins`` quantile bins.

    Bins the training values cannot tell apart are dropped, with a
    ``UserWarning`` naming the parameter ``name``: beyond ``n_samples - 1`` bins
    every distinct value is an edge, and bins that repeat a neighbour are
    merged.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite training rows.
    n_bins : int
        Quantile bins per column (at least 2).
    name : str, default="n_bins"
        The parameter ``n_bins`` comes from, for the warning.
    sample_weight : ndarray of shape (n_samples,), default=None
        Positive row weights (:func:`weighted_quantiles`).
    names : sequence of str, default=None
        Column names for the warning.

    Returns
    -------
    edges : list of (ndarray or None)
        Per column, strictly increasing edges, or ``None`` (passed through)
        with at most two distinct values or a single bin left.
    """
    X = np.asarray(X)
    uniform = sample_weight is None or np.all(sample_weight == sample_weight[0])
    # Beyond n_samples - 1 bins, quantiles only interpolate between rows.
    every_value = n_bins > len(X) - 1
    quantiles = None if every_value else np.linspace(0.0, 1.0, n_bins + 1)
    edges, trimmed = [], []
    for j, column in enumerate(X.T):
        column_edges = None
        values = np.unique(column)
        if values.size > 2:
            if every_value:
                column_edges = values
                trimmed.append(j)
            elif uniform:
                column_edges = np.unique(np.quantile(column, quantiles))
            else:
                column_edges = np.unique(
                    weighted_quantiles(column, sample_weight, quantiles)
                )
            if column_edges.size > values.size:
                # As many bins as values, or more: some may repeat a neighbour.
                merged = _merge_repeated_bins(column_edges, values)
                if merged.size < column_edges.size:
                    trimmed.append(j)
                column_edges = merged
            if column_edges.size < 3:  # one bin left: nothing to encode
                column_edges = None
        edges.append(column_edges)
    if trimmed:
        shown = [j if names is None else names[j] for j in trimmed[:10]]
        more = " ..." if len(trimmed) > 10 else ""
        warnings.warn(
            f"{name}={n_bins} makes bins that the {len(X)} training rows cannot "
            f"tell apart in columns {shown}{more}: they were "
            "dropped (a column gets fewer than twice as many bins as it has "
            f"distinct values). Lower {name} to silence this warning.",
            UserWarning,
            stacklevel=find_stacklevel(),
        )
    return edges


class PiecewiseLinearEncoder(TransformerMixin, BaseEstimator):
    """Encode each numeric column as ramps through its quantile bins.

    A column with more than two distinct values becomes one column per bin
    between its training quantiles ``b_0 < ... < b_n``, ``clip((x - b_{t-1}) /
    (b_t - b_{t-1}), 0, 1)``; other columns, and columns left with a single
    bin, pass through (see :func:`quantile_edges`). :class:`CRClassifier` does
    the same inside its network (``encoding_bins``, :ref:`defaults`); this
    transformer is for other models or to inspect the encoded columns.

    Parameters
    ----------
    n_bins : int, default=4
        Quantile bins per numeric column (at least 2).

    Attributes
    ----------
    edges_ : list of ndarray or None
        The bin edges of each input column; ``None`` where it passes through.
    n_features_in_, n_features_out_ : int
        Number of input and of output columns.
    feature_names_in_ : ndarray of str
        Input column names, when ``X`` had them.

    See Also
    --------
    sklearn.preprocessing.SplineTransformer : Degree-1 quantile splines span
        the same piecewise-linear functions in a hat-function basis.
    sklearn.preprocessing.KBinsDiscretizer : Step (not ramp) encoding.

    Notes
    -----
    Gradients of a model after the encoder in a pipeline (:func:`gradient_norms`)
    are with respect to the encoded columns. :func:`save_model` stores CR
    estimators only: save such a pipeline with :mod:`joblib`.

    Examples
    --------
    >>> import numpy as np
    >>> from cr_sklearn import PiecewiseLinearEncoder
    >>> X = np.array([[0.0, 1], [1, 0], [2, 1], [3, 0], [4, 1]])
    >>> encoder = PiecewiseLinearEncoder(n_bins=2).fit(X)
    >>> encoder.transform([[1.0, 1], [5, 0]])
    array([[0.5, 0. , 1. ],
           [1. , 1. , 0. ]])
    """

    _parameter_constraints = {
        "n_bins": [Interval(numbers.Integral, 2, None, closed="left")],
    }

    def __init__(self, n_bins=4):
        self.n_bins = n_bins

    def fit(self, X, y=None):
        """Find the quantile bin edges of each numeric column.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; finite numbers.
        y : None
            Ignored.

        Returns
        -------
        self : PiecewiseLinearEncoder
            Fitted.
        """
        self._validate_params()
        X = validate_data(self, X, dtype=np.float64)
        self.edges_ = quantile_edges(X, self.n_bins)
        self.n_features_out_ = sum(1 if e is None else e.size - 1 for e in self.edges_)
        return self

    def transform(self, X):
        """Encode ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data with the training columns; finite numbers.

        Returns
        -------
        X_out : ndarray of shape (n_samples, n_features_out_)
            Each column's ramps, or the column, in the input order.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        columns = []
        for j, edges in enumerate(self.edges_):
            x = X[:, j : j + 1]
            if edges is None:
                columns.append(x)
            else:
                low, high = edges[:-1], edges[1:]
                columns.append(np.clip((x - low) / (high - low), 0.0, 1.0))
        return np.hstack(columns)

    def get_feature_names_out(self, input_features=None):
        """Get the output column names: ``<column>_bin<t>``, or the column's.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Input column names; ``feature_names_in_`` or ``x0, x1, ...`` by default.

        Returns
        -------
        names : ndarray of str
            One per output column, in order.
        """
        check_is_fitted(self)
        names = _check_feature_names_in(self, input_features)
        out = []
        for name, edges in zip(names, self.edges_, strict=True):
            if edges is None:
                out.append(name)
            else:
                out.extend(f"{name}_bin{t}" for t in range(edges.size - 1))
        return np.asarray(out, dtype=object)
