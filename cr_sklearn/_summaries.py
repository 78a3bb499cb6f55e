"""Fitted-data summaries behind the reliability signals (private).

After ``fit``, the summaries describe the rows of that fit under the fitted
network. After ``partial_fit`` they describe every row passed to
``partial_fit`` since the last ``fit`` (or since the first call): the feature
mean and scale are exact running moments, and the quantiles of gradient
norms and input distances are computed with the current network on a
uniform reservoir sample of those rows (at most ``RESERVOIR_ROWS``).
"""

import numpy as np

from ._transform import is_constant, mean_and_scale

__all__ = []

#: Rows kept to summarise a stream of ``partial_fit`` calls.
RESERVOIR_ROWS = 2048
#: Private state of the running summaries: not saved by ``save_model`` (a
#: loaded model starts a new stream).
STREAM_ATTRIBUTES = ("_stream_count", "_stream_mean", "_stream_m2", "_stream_rows")


def _reservoir(sample, seen, X, rng):
    """Algorithm R over the rows of ``X``, after ``seen`` rows went by."""
    n_fill = max(0, min(RESERVOIR_ROWS - seen, len(X)))
    if sample is None:
        sample = X[:n_fill].copy()
    elif n_fill:
        sample = np.vstack([sample, X[:n_fill]])
    rest = X[n_fill:]
    if len(rest):
        positions = seen + n_fill + np.arange(len(rest))
        slots = rng.randint(0, positions + 1)
        keep = slots < RESERVOIR_ROWS
        # Sequential semantics: a later row replaces an earlier one in the
        # same slot (numpy keeps the last of repeated indices).
        sample[slots[keep]] = rest[keep]
    return sample


def _update_stream(estimator, X, seed):
    """Merge ``X`` into the running moments and the reservoir; return its rows."""
    count = getattr(estimator, "_stream_count", 0) or 0
    n = len(X)
    mean_x = X.mean(axis=0)
    m2_x = np.square(X - mean_x).sum(axis=0)
    if count == 0:
        mean, m2, sample = mean_x, m2_x, None
    else:
        # Chan et al.'s pairwise update of mean and sum of squared deviations.
        delta = mean_x - estimator._stream_mean
        total = count + n
        mean = estimator._stream_mean + delta * (n / total)
        m2 = estimator._stream_m2 + m2_x + np.square(delta) * (count * n / total)
        # A copy: the reservoir is replaced in place below, and the fitted
        # one must stay as it is until the fit completes.
        sample = estimator._stream_rows.copy()
    sample = _reservoir(sample, count, X, np.random.RandomState(seed))
    estimator._stream_count = count + n
    estimator._stream_mean = mean
    estimator._stream_m2 = m2
    estimator._stream_rows = sample
    return sample, mean, np.sqrt(m2 / (count + n))


def _reset_stream(estimator):
    for name in STREAM_ATTRIBUTES:
        if hasattr(estimator, name):
            delattr(estimator, name)


def set_summaries(estimator, X, *, incremental, seed):
    """Set the fitted summaries of the training data ``X`` (validated).

    Sets ``gradient_norm_mean_``, ``gradient_norm_quantiles_``,
    ``input_mean_``, ``input_scale_`` and ``input_distance_quantiles_``.
    """
    X64 = np.asarray(X, dtype=np.float64)
    if incremental:
        rows, mean, scale = _update_stream(estimator, X64, seed)
        # Spread within the rounding error of the mean is no spread.
        scale = np.array(scale, dtype=np.float64)
        constant = is_constant(scale**2, mean, estimator._stream_count)
        scale[constant | ~(scale > 0)] = 1.0
    else:
        _reset_stream(estimator)
        rows = X64
        mean, scale = mean_and_scale(X64)
    estimator.input_mean_ = mean
    estimator.input_scale_ = scale
    # The norms input_sensitivity divides: by the columns the first layer
    # reads (X in units of its training spread, or the encoded columns).
    norms = estimator._sensitivity_norms(rows)
    estimator.gradient_norm_mean_ = float(norms.mean())
    estimator.gradient_norm_quantiles_ = np.percentile(norms, np.arange(101))
    estimator.input_distance_quantiles_ = np.percentile(
        estimator._input_distance(rows), np.arange(101)
    )
