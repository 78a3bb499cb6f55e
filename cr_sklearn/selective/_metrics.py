"""Risk-coverage curves, AURC and E-AURC (Geifman, Uziel and El-Yaniv, 2019)."""

import numpy as np

__all__ = ["aurc_score", "eaurc_score", "risk_coverage_curve"]

_LOSSES = ("zero_one", "absolute")


def _as_1d(values, name):
    try:
        array = np.asarray(values)
    except Exception as exc:  # ragged nested sequences
        raise ValueError(f"{name} must be a 1-d array-like: {exc}") from exc
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got an array of shape {array.shape}.")
    return array


def _numeric(values, name, n_samples, what=""):
    """``values`` as a 1-d float64 array of ``n_samples`` numbers."""
    array = _as_1d(values, name)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric{what}, got dtype {array.dtype}.")
    if len(array) != n_samples:
        raise ValueError(
            f"{name} has {len(array)} values for {n_samples} samples: "
            "they must have the same length."
        )
    return array.astype(np.float64)


def _check_confidence(confidence, n_samples):
    confidence = _numeric(
        confidence, "confidence", n_samples, " (higher = more confident)"
    )
    if np.isnan(confidence).any():
        raise ValueError(
            f"confidence contains {int(np.isnan(confidence).sum())} NaN value(s); "
            "every sample needs a confidence (use -inf to reject it first)."
        )
    return confidence


def _check_sample_weight(sample_weight, n_samples):
    if sample_weight is None:
        return np.ones(n_samples)
    weight = _numeric(sample_weight, "sample_weight", n_samples)
    if not np.all(np.isfinite(weight)) or np.any(weight < 0):
        raise ValueError("sample_weight must be finite and non-negative.")
    if not weight.any():
        raise ValueError("sample_weight must not sum to zero.")
    # Only shares matter; scaled to a largest weight of 1, sums cannot overflow.
    return weight / weight.max()


def _positions(labels, values):
    """Position of each of ``values`` in ``labels`` (any order)."""
    labels = np.asarray(labels)
    unknown = ~np.isin(values, labels)
    if unknown.any():
        raise ValueError(
            f"Labels {np.unique(values[unknown]).tolist()} are not in labels."
        )
    sorter = np.argsort(labels, kind="stable")
    return sorter[np.searchsorted(labels, values, sorter=sorter)]


def _sample_losses(y_true, y_pred, loss="zero_one", labels=None):
    """Per-sample loss of ``y_pred`` against ``y_true`` (validated)."""
    y_true = _as_1d(y_true, "y_true")
    y_pred = _as_1d(y_pred, "y_pred")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_true has {len(y_true)} samples and y_pred {len(y_pred)}: they "
            "must have the same length."
        )
    if len(y_true) == 0:
        raise ValueError("y_true is empty: a risk-coverage curve needs samples.")
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {list(_LOSSES)}, got {loss!r}.")
    if loss == "zero_one":
        return (y_true != y_pred).astype(np.float64)
    if labels is None:
        if not all(v.dtype.kind in "biuf" for v in (y_true, y_pred)):
            # Sorting strings (alphabetically) is no order of the grades.
            raise ValueError(
                f"loss='absolute' needs the order of the labels "
                f"{np.unique(y_true.astype(str))[:10].tolist()!r:.200}..., which "
                "are not numbers: pass it, lowest first, with labels=[...] "
                "(e.g. an ordinal estimator's classes_)."
            )
        labels = np.union1d(y_true, y_pred)
    else:
        labels = _as_1d(labels, "labels")
        if len(np.unique(labels)) != len(labels):
            raise ValueError("labels must not contain duplicates.")
    distance = _positions(labels, y_true) - _positions(labels, y_pred)
    return np.abs(distance).astype(np.float64)


def _curve(losses, confidence, weight):
    """``(coverage, loss_share, thresholds)`` at the end of each weighted tie group."""
    order = np.argsort(-confidence, kind="stable")
    conf = confidence[order]
    weight = weight[order]
    ends = np.append(np.flatnonzero(conf[1:] != conf[:-1]), len(conf) - 1)
    total = weight.sum()
    coverage = np.cumsum(weight)[ends] / total
    loss_share = np.cumsum(weight * losses[order])[ends] / total
    keep = np.diff(coverage, prepend=0.0) > 0
    return coverage[keep], loss_share[keep], conf[ends][keep]


def _area(coverage, loss_share):
    """Exact area under the risk-coverage curve of :func:`_curve`'s output.

    Inside a tie group the kept share grows at the group's mean loss ``m``: over
    ``(a, b]`` the integral of ``(L + m (c - a)) / c`` is ``m (b - a) + (L - m
    a) log(b / a)`` (``m b`` for the first group).
    """
    a = np.concatenate([[0.0], coverage[:-1]])
    before = np.concatenate([[0.0], loss_share[:-1]])
    width = coverage - a
    group_loss = loss_share - before
    mean = group_loss / width
    area = group_loss.copy()
    inner = a > 0
    area[inner] += (before[inner] - mean[inner] * a[inner]) * np.log1p(
        width[inner] / a[inner]
    )
    return float(area.sum())


def _losses_area(losses, confidence, weight=None):
    """AURC of per-sample ``losses`` ranked by ``confidence`` (ties together)."""
    if weight is None:
        weight = np.ones(len(losses))
    return _area(*_curve(losses, confidence, weight)[:2])


def _prepare(y_true, y_pred, confidence, sample_weight, loss, labels):
    losses = _sample_losses(y_true, y_pred, loss, labels)
    confidence = _check_confidence(confidence, len(losses))
    weight = _check_sample_weight(sample_weight, len(losses))
    return losses, confidence, weight


def risk_coverage_curve(
    y_true, y_pred, confidence, *, sample_weight=None, loss="zero_one", labels=None
):
    """Risk of the retained predictions at every coverage.

    The predictions with the lowest ``confidence`` are rejected first; tied
    samples are kept or rejected together (a constant confidence has a single
    point, at coverage 1).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    confidence : array-like of shape (n_samples,)
        Confidence in each prediction (higher = kept longer), without NaN.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights: coverage is a share of the total weight.
    loss : {"zero_one", "absolute"}, default="zero_one"
        The per-sample loss: 1 for a wrong label, or the distance between the
        positions of the true and predicted labels in ``labels``.
    labels : array-like of shape (n_classes,), default=None
        The order of the labels for ``loss="absolute"``, lowest first (e.g. an
        ordinal estimator's ``classes_``); by default the sorted labels, which
        must be numbers.

    Returns
    -------
    coverage : ndarray of shape (n_thresholds,)
        Share of the weight kept, increasing, the last value 1.
    risk : ndarray of shape (n_thresholds,)
        Mean loss of the kept samples at each coverage.
    thresholds : ndarray of shape (n_thresholds,)
        Decreasing: ``coverage[k]`` keeps ``confidence >= thresholds[k]``.

    See Also
    --------
    aurc_score : The area under this curve.
    eaurc_score : The area in excess of the oracle ordering's.
    RiskCoverageDisplay : Plot the curve.

    Examples
    --------
    >>> from cr_sklearn import risk_coverage_curve
    >>> coverage, risk, thresholds = risk_coverage_curve(
    ...     [0, 1, 1, 0], [0, 1, 0, 1], confidence=[0.9, 0.8, 0.8, 0.6])
    >>> coverage.tolist(), risk.tolist(), thresholds.tolist()
    ([0.25, 0.75, 1.0], [0.0, 0.3333333333333333, 0.5], [0.9, 0.8, 0.6])
    """
    losses, confidence, weight = _prepare(
        y_true, y_pred, confidence, sample_weight, loss, labels
    )
    coverage, loss_share, thresholds = _curve(losses, confidence, weight)
    return coverage, loss_share / coverage, thresholds


def aurc_score(
    y_true, y_pred, confidence, *, sample_weight=None, loss="zero_one", labels=None
):
    """Area under the risk-coverage curve (AURC); lower is better.

    Ties are scored as a random order within the group, so a constant
    confidence scores the overall risk. AURC mostly restates the risk: compare
    signals of the same predictions, or use :func:`eaurc_score`.

    Parameters
    ----------
    y_true, y_pred, confidence : array-like of shape (n_samples,)
        Labels and confidences, as in :func:`risk_coverage_curve`.
    sample_weight, loss, labels : optional
        As in :func:`risk_coverage_curve`.

    Returns
    -------
    aurc : float
        The area, between the oracle's and the maximum loss.

    See Also
    --------
    risk_coverage_curve : The curve whose area this is.
    eaurc_score : AURC minus the oracle's.
    make_aurc_scorer : AURC as a scorer for model selection.

    Examples
    --------
    >>> from cr_sklearn import aurc_score
    >>> y_true, y_pred = [0, 1, 1, 0], [0, 1, 0, 1]
    >>> aurc_score(y_true, y_pred, [0.9, 0.8, 0.2, 0.1])  # errors last
    0.1534...
    >>> aurc_score(y_true, y_pred, [0.5, 0.5, 0.5, 0.5])  # no ranking
    0.5
    """
    losses, confidence, weight = _prepare(
        y_true, y_pred, confidence, sample_weight, loss, labels
    )
    return _losses_area(losses, confidence, weight)


def eaurc_score(
    y_true, y_pred, confidence, *, sample_weight=None, loss="zero_one", labels=None
):
    """Excess AURC: :func:`aurc_score` minus the AURC of the oracle ordering.

    The oracle keeps samples in order of increasing loss, so E-AURC is 0 when
    every error is ranked after every correct prediction. Lower is better.

    Parameters
    ----------
    y_true, y_pred, confidence : array-like of shape (n_samples,)
        As in :func:`aurc_score`.
    sample_weight, loss, labels : optional
        As in :func:`aurc_score`; the oracle uses the same losses and weights.

    Returns
    -------
    eaurc : float
        Non-negative (up to rounding).

    Examples
    --------
    With the data of :func:`aurc_score`'s example, errors first:

    >>> from cr_sklearn import eaurc_score
    >>> round(eaurc_score([0, 1, 1, 0], [0, 1, 0, 1], [0.1, 0.2, 0.8, 0.9]), 3)
    0.693
    """
    losses, confidence, weight = _prepare(
        y_true, y_pred, confidence, sample_weight, loss, labels
    )
    oracle = _losses_area(losses, -losses, weight)  # by increasing loss
    # Never below the oracle in exact arithmetic: clip rounding.
    return max(_losses_area(losses, confidence, weight) - oracle, 0.0)


def _check_loss_option(loss):
    if not isinstance(loss, str) or loss not in ("auto", *_LOSSES):
        raise ValueError(f"loss must be one of {['auto', *_LOSSES]}, got {loss!r}.")
    return loss
