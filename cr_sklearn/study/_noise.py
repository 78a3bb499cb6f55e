"""Messy conditions: label corruption and additive Gaussian input noise."""

import numbers

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, column_or_1d

__all__ = ["add_gaussian_noise", "corrupt_labels"]


def corrupt_labels(y, rate, random_state=None):
    """Replace ``round(rate * n_samples)`` labels by another class, uniformly at random.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels, at least two classes.
    rate : float in [0, 1]
        Fraction of labels to corrupt.
    random_state : int, RandomState instance or None, default=None
        Seeds which labels change and their new classes.

    Returns
    -------
    y_corrupted : ndarray of shape (n_samples,)
        A corrupted copy of ``y``.

    Examples
    --------
    >>> import numpy as np
    >>> from cr_sklearn.study import corrupt_labels
    >>> y = np.repeat([0, 1], 50)
    >>> int((corrupt_labels(y, 0.4, random_state=0) != y).sum())
    40
    """
    if not isinstance(rate, numbers.Real) or not 0 <= rate <= 1:
        raise ValueError(f"rate must be a number in [0, 1], got {rate!r}.")
    y = column_or_1d(y, warn=True)
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError("corrupt_labels needs at least 2 classes in y.")
    rng = check_random_state(random_state)
    n_flip = int(np.floor(rate * len(y) + 0.5))
    chosen = rng.choice(len(y), size=n_flip, replace=False)
    # A shift of 1..K-1 classes modulo K draws uniformly among the other classes.
    shift = rng.randint(1, len(classes), size=n_flip)
    codes = codes.copy()
    codes[chosen] = (codes[chosen] + shift) % len(classes)
    return classes[codes]


def add_gaussian_noise(X, snr_db, random_state=None):
    """Add Gaussian noise at a given signal-to-noise ratio, per feature.

    Feature ``j`` gets noise of standard deviation ``std(X[:, j]) * 10 **
    (-snr_db / 20)``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numeric data.
    snr_db : float
        Signal-to-noise ratio in decibels.
    random_state : int, RandomState instance or None, default=None
        Seeds the noise.

    Returns
    -------
    X_noisy : ndarray of shape (n_samples, n_features)
        A noisy float64 copy of ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from cr_sklearn.study import add_gaussian_noise
    >>> X = np.random.RandomState(0).normal(size=(20000, 2))
    >>> noise = add_gaussian_noise(X, snr_db=-10, random_state=0) - X
    >>> bool(np.allclose(noise.var(axis=0), 10, rtol=0.05))
    True
    """
    if not isinstance(snr_db, numbers.Real) or not np.isfinite(snr_db):
        raise ValueError(f"snr_db must be a finite number, got {snr_db!r}.")
    X = check_array(X, dtype=np.float64, copy=True)
    rng = check_random_state(random_state)
    scale = X.std(axis=0) * 10 ** (-snr_db / 20)
    return X + rng.standard_normal(X.shape) * scale
