"""Fitted-data summaries behind the reliability signals (private).

After ``fit`` they describe that fit's rows; after ``partial_fit`` every row
since the last ``fit``: exact running moments, and quantiles computed with
the current network on a reservoir sample (at most ``RESERVOIR_ROWS``).
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
        # A later row replaces an earlier one in its slot (numpy keeps the last).
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
        # A copy: the fitted reservoir must stay as it is until the fit ends.
        sample = estimator._stream_rows.copy()
    sample = _reservoir(sample, count, X, np.random.RandomState(seed))
    estimator._stream_count = count + n
    estimator._stream_mean = mean
    estimator._stream_m2 = m2
    estimator._stream_rows = sample
    return sample, mean, np.sqrt(m2 / (count + n))


def set_summaries(estimator, X, *, incremental, seed):
    """Set the ``gradient_norm_*`` and ``input_*`` summaries of the training ``X``."""
    X64 = np.asarray(X, dtype=np.float64)
    if incremental:
        rows, mean, scale = _update_stream(estimator, X64, seed)
        # Spread within the rounding error of the mean is no spread.
        constant = is_constant(scale**2, mean, estimator._stream_count)
        scale[constant | ~(scale > 0)] = 1.0
    else:
        for name in STREAM_ATTRIBUTES:
            estimator.__dict__.pop(name, None)
        rows = X64
        mean, scale = mean_and_scale(X64)
    estimator.input_mean_ = mean
    estimator.input_scale_ = scale
    # By the columns the first layer reads, as input_sensitivity divides them.
    norms = estimator._sensitivity_norms(rows)
    estimator.gradient_norm_mean_ = float(norms.mean())
    estimator.gradient_norm_quantiles_ = np.percentile(norms, np.arange(101))
    estimator.input_distance_quantiles_ = np.percentile(
        estimator._input_distance(rows), np.arange(101)
    )
