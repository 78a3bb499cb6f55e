"""The input transform: standardisation and quantile encoding, fitted in float64.

Fitted on the training rows (with their weights) and installed in the
fitted float64 network (``module_``), whose ``transform_input`` then serves
both paths of the numeric contract: the trainer casts its output to the
training dtype once, before training, and prediction reads it in float64.
Nothing of the transform is rounded to float32 before it is applied, so a
column of a huge offset and a small spread (``1e6 + 1e-3 * x``) keeps its
information, and a column without spread (scikit-learn's rule) is never
divided by its rounding noise. (Private.)
"""

from dataclasses import dataclass

import numpy as np
import torch

from ._encoding import quantile_edges
from .nn import PiecewiseLinearEncoding

__all__ = []

# Rows per chunk of the ramps' statistics, and at most this many encoded
# values per chunk: bounded temporaries whatever the table's size.
_CHUNK_ROWS = 4096
_CHUNK_ELEMENTS = 2**22


def is_constant(variance, mean, n_samples):
    """Columns whose variance is within the rounding error of their mean.

    scikit-learn's rule (``StandardScaler``): a variance below
    ``n * eps * var + (n * mean * eps) ** 2`` is the rounding noise of the
    mean's computation, not spread.
    """
    eps = np.finfo(np.float64).eps
    bound = n_samples * eps * variance + (n_samples * np.abs(mean) * eps) ** 2
    return variance <= bound


def mean_and_scale(X, sample_weight=None, *, constant=False):
    """Weighted float64 column means and standard deviations of finite ``X``.

    ``sample_weight``: non-negative, with a positive sum. The scale is 1 for
    columns without spread (as :class:`~sklearn.preprocessing.StandardScaler`
    leaves them), whose mask is returned third with ``constant=True``.
    """
    X = np.asarray(X, dtype=np.float64)
    if sample_weight is None:
        n = float(len(X))
        mean = X.mean(axis=0)
        variance = np.square(X - mean).mean(axis=0)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        w = w / w.max()  # huge weights cannot overflow the sums
        mean = (w @ X) / w.sum()
        variance = (w @ np.square(X - mean)) / w.sum()
        n = float(np.count_nonzero(w))
    scale = np.sqrt(variance)
    no_spread = is_constant(variance, mean, n) | ~(scale > 0)
    scale[no_spread] = 1.0
    return (mean, scale, no_spread) if constant else (mean, scale)


def _ramp_moments(encoding, H, weight):
    """Weighted mean and scale (1 where constant) of each encoded column.

    In chunks of rows: the encoded table is never held whole.
    """
    n_encoded = encoding.n_encoded
    total, squares = np.zeros(n_encoded), np.zeros(n_encoded)
    top = 1.0 if weight is None else weight.max()
    rows = max(1, min(_CHUNK_ROWS, _CHUNK_ELEMENTS // n_encoded))
    with torch.no_grad():
        for start in range(0, len(H), rows):
            sl = slice(start, start + rows)
            ramps = encoding(torch.as_tensor(H[sl])).numpy()
            w = None if weight is None else weight[sl] / top
            total += ramps.sum(0) if w is None else w @ ramps
            squares += np.square(ramps).sum(0) if w is None else w @ np.square(ramps)
    mass = float(len(H) if weight is None else (weight / top).sum())
    mean = total / mass
    variance = np.maximum(squares / mass - mean**2, 0.0)
    scale = np.sqrt(variance)
    n = float(len(H) if weight is None else np.count_nonzero(weight))
    scale[is_constant(variance, mean, n) | ~(scale > 0)] = 1.0
    return mean, scale


@dataclass
class InputTransform:
    """Standardisation ``(x - mean) / scale``, then optional ramp encoding.

    Parameters
    ----------
    mean, scale : ndarray of shape (n_features,)
        The standardisation (0 and 1 without it).
    edges : list of (ndarray or None) or None
        The encoding's bins per column (``None`` passes a column through),
        in standardised units; ``None``: no encoding.
    ramp_mean, ramp_scale : ndarray of shape (n_encoded,) or None
        Each encoded column's standardisation (0 and 1 for copies).
    """

    mean: np.ndarray
    scale: np.ndarray
    edges: list = None
    ramp_mean: np.ndarray = None
    ramp_scale: np.ndarray = None

    @classmethod
    def fit(cls, X, sample_weight, *, standardize, bins, names=None):
        """Fit on the training rows ``X`` (float64) with their weights.

        Rows of weight 0 are left out, as if removed; bins are quantiles of
        the standardised columns (weighted), and each ramp is standardised
        with its weighted training mean and standard deviation. A column
        without spread is not encoded (it passes through): bins of its
        rounding noise would be bins of nothing.
        """
        X = np.asarray(X, dtype=np.float64)
        weight = None
        if sample_weight is not None:
            keep = sample_weight > 0
            X, weight = X[keep], np.asarray(sample_weight, dtype=np.float64)[keep]
            if np.all(weight == weight[0]):
                weight = None
        mean, scale, no_spread = mean_and_scale(X, weight, constant=True)
        if not standardize:
            mean, scale = np.zeros_like(mean), np.ones_like(scale)
        transform = cls(mean, scale)
        if bins is None:
            return transform
        H = (X - mean) / scale
        edges = quantile_edges(
            H, bins, name="encoding_bins", sample_weight=weight, names=names
        )
        transform.edges = [
            None if e is None or flat else np.asarray(e, np.float64)
            for e, flat in zip(edges, no_spread, strict=True)
        ]
        encoding = PiecewiseLinearEncoding(len(mean), transform.n_encoded).double()
        encoding.set_edges(transform.edges)
        ramp_mean, ramp_scale = _ramp_moments(encoding, H, weight)
        copies = ~encoding.ramp.numpy()
        ramp_mean[copies], ramp_scale[copies] = 0.0, 1.0
        transform.ramp_mean, transform.ramp_scale = ramp_mean, ramp_scale
        return transform

    @property
    def n_features(self):
        """Input columns."""
        return len(self.mean)

    @property
    def n_encoded(self):
        """Encoded columns, or ``None`` without an encoding."""
        return None if self.edges is None else PiecewiseLinearEncoding.size(self.edges)

    @property
    def width(self):
        """Columns of the output: the encoded ones, else the input's."""
        return self.n_features if self.edges is None else self.n_encoded

    def install(self, network):
        """Set ``network``'s standardisation and encoding to this transform."""
        network.set_input_scaling(self.mean, self.scale)
        if self.edges is not None:
            network.encoding.set_edges(self.edges)
            network.encoding.set_ramp_scaling(self.ramp_mean, self.ramp_scale)
        return network
