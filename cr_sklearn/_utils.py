"""Small helpers shared by the estimators, scorers, plots and growth (private)."""

import contextlib
import importlib
import math
import numbers
import os
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

__all__ = []

# Larger inputs overflow the standardisation's squares or float32 layers.
MAX_ABS_TRAINING_INPUT = 1e30


def resolve_device(device):
    """Validate a device string; ``"auto"`` picks CUDA when available."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    message = f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}."
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as exc:
        raise ValueError(message) from exc
    if kind not in ("cpu", "cuda"):
        raise ValueError(message)
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was requested but CUDA is not available.")
    return device


def import_optional(name, *, extra, purpose):
    """Import ``name``, or raise an ImportError naming ``purpose`` and ``extra``."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(
            f"{purpose} need{'' if purpose.endswith('s') else 's'} "
            f"{name.split('.')[0]}: pip install 'cr_sklearn[{extra}]'."
        ) from exc


def final_estimator(estimator):
    """The last step of a :class:`~sklearn.pipeline.Pipeline`, else ``estimator``."""
    from sklearn.pipeline import Pipeline

    while isinstance(estimator, Pipeline):
        estimator = estimator.steps[-1][1]
    return estimator


def validation_split(y_codes, fraction, seed, *, strict=True):
    """Indices ``(train, valid)`` of a hold-out split, stratified where possible.

    ``strict`` raises a ValueError naming the counts when the training side
    cannot hold every class or the validation side would be empty; without it
    such data gets ``None`` or a random split.
    """
    n = len(y_codes)
    n_valid = int(np.ceil(fraction * n))
    n_train = n - n_valid
    counts = np.bincount(y_codes)
    counts = counts[counts > 0]
    k = len(counts)

    def too_small():
        return ValueError(
            f"validation_fraction={fraction} leaves {n_train} training and "
            f"{n_valid} validation rows of these {n} samples of {k} classes: "
            "early stopping needs a validation row and every class in the "
            "training rows. Change validation_fraction, or set "
            "early_stopping=False."
        )

    if strict and (n_valid < 1 or n_train < k):
        raise too_small()
    if counts.min() >= 2 and n_valid >= k and n_train >= k:
        splitter = StratifiedShuffleSplit(
            n_splits=1, test_size=n_valid, random_state=seed
        )
        train, valid = next(splitter.split(np.zeros((n, 1)), y_codes))
        # Rounding per class may leave a small class no training row.
        if strict and len(np.unique(y_codes[train])) < k:
            raise too_small()
        return train, valid
    if n_valid < 1 or n_train < 2:
        return None
    splitter = ShuffleSplit(n_splits=1, test_size=n_valid, random_state=seed)
    return next(splitter.split(np.zeros((n, 1)), y_codes))


def is_integer(value):
    """Whether ``value`` is an integer (Python or numpy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(
        value, (bool, np.bool_)
    )


def find_stacklevel():
    """The ``stacklevel`` that points a warning at the user's code.

    Frames of cr_sklearn, scikit-learn, skorch and ``contextlib`` are skipped.
    """
    import sklearn
    import skorch

    skip = tuple(
        os.path.dirname(os.path.abspath(module.__file__))
        for module in (sys.modules[__package__], sklearn, skorch)
    ) + (os.path.abspath(contextlib.__file__),)
    frame = sys._getframe(1)
    level = 1
    while frame and os.path.abspath(frame.f_code.co_filename).startswith(skip):
        frame = frame.f_back
        level += 1
    return level


def _cgroup_cpu_limit():
    """CPUs the cgroup quota allows (cgroup v2, then v1), or ``None``."""
    root = Path("/sys/fs/cgroup")
    with contextlib.suppress(OSError, ValueError):
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    with contextlib.suppress(OSError, ValueError):
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        if quota > 0 and period > 0:
            return quota / period
    return None


def usable_cpus():
    """CPUs this process may run on: its affinity, bounded by a cgroup quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    limit = _cgroup_cpu_limit()
    if limit is not None:
        n = min(n, max(1, math.ceil(limit)))
    return max(1, n)


def clamp_threads(n_threads):
    """``n_threads`` bounded by :func:`usable_cpus`, with a warning; None stays None."""
    if n_threads is None:
        return None
    limit = usable_cpus()
    if n_threads > limit:
        warnings.warn(
            f"n_threads={n_threads} is more than the {limit} CPUs this process "
            f"may use: {limit} threads are used.",
            UserWarning,
            stacklevel=find_stacklevel(),
        )
        return limit
    return int(n_threads)


def check_finite_rows(values, what):
    """Raise a ValueError naming the rows whose ``values`` are not all finite."""
    bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(
            f"The {what} is not finite for {len(rows)} of {len(values)} samples "
            f"(rows {rows[:10].tolist()}): their features lie too far outside "
            "the range the model was trained on."
        )
    return values


def _is_numeric_column(dtype):
    """Whether a DataFrame column's dtype holds numbers (bools included)."""
    is_numeric = getattr(dtype, "is_numeric", None)
    if callable(is_numeric):  # polars
        return bool(is_numeric()) or str(dtype) == "Boolean"
    try:
        from pandas.api.types import is_bool_dtype, is_numeric_dtype
    except ImportError:  # no pandas: let numpy's conversion decide
        return True
    return is_numeric_dtype(dtype) or is_bool_dtype(dtype)


def check_numeric_columns(X):
    """Refuse a DataFrame with non-numeric columns, naming them (numpy would not)."""
    columns, dtypes = getattr(X, "columns", None), getattr(X, "dtypes", None)
    if columns is None or dtypes is None:
        return
    bad = [
        str(name)
        for name, dtype in zip(list(columns), list(dtypes), strict=False)
        if not _is_numeric_column(dtype)
    ]
    if bad:
        shown = ", ".join(repr(b) for b in bad[:10]) + (" ..." if len(bad) > 10 else "")
        raise ValueError(
            f"X has non-numeric columns ({shown}): CR estimators read numbers. "
            "Encode them first, e.g. with a ColumnTransformer holding a "
            "OneHotEncoder for these columns, in a Pipeline before the estimator."
        )


def check_training_range(X):
    """Reject features too large for float32 training, naming the columns."""
    max_abs = np.abs(X).max(axis=0) if X.size else np.zeros(X.shape[1])
    cols = np.flatnonzero(max_abs > MAX_ABS_TRAINING_INPUT)
    if len(cols):
        raise ValueError(
            f"X contains values too large to train on: |x| up to "
            f"{max_abs[cols].max():.3g} in column(s) {cols[:10].tolist()} "
            f"(limit {MAX_ABS_TRAINING_INPUT:.0e}). "
            "Rescale these features, e.g. with np.log1p or "
            "sklearn.preprocessing.RobustScaler."
        )


def warn_if_unstandardized(X):
    """Warn, naming columns, when features are far from zero mean, unit scale."""
    if X.shape[0] < 2:
        return
    mean = np.mean(X, axis=0)
    std = np.std(X, axis=0)
    # Loose bounds: only scales that slow or destabilise training are flagged.
    off = (
        (np.abs(mean) > 3 * np.maximum(std, 1.0))
        | (std > 10)
        | ((std > 0) & (std < 0.1))
    )
    cols = np.flatnonzero(off)
    if len(cols):
        warnings.warn(
            f"Features are not standardised (column(s) {cols[:10].tolist()} have "
            "a mean or standard deviation far from 0 and 1) and "
            "standardize=False. Set standardize=True (the default), or scale "
            "X first, e.g. make_pipeline(StandardScaler(), CRClassifier(...)).",
            UserWarning,
            stacklevel=find_stacklevel(),
        )
