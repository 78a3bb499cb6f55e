"""Paired tests over cross-validation splits and multiple-testing corrections."""

import numpy as np
from scipy import stats

__all__ = [
    "adjust_pvalues",
    "corrected_interval",
    "corrected_ttest",
    "paired_interval",
    "paired_test",
    "wilcoxon_interval",
    "wilcoxon_test",
]

# The corrected t-test, the default, accounts for the splits' shared rows.
TESTS = ("corrected_t", "wilcoxon")
CORRECTIONS = ("holm", "bonferroni", None)
#: How tables and plots name each test and correction.
TEST_LABELS = {
    "corrected_t": "corrected t (Nadeau-Bengio)",
    "wilcoxon": "Wilcoxon signed-rank",
}
CORRECTION_LABELS = {"holm": "Holm", "bonferroni": "Bonferroni", None: "no"}


# A spread below this fraction of the differences' size is rounding noise.
_DEGENERATE_SPREAD = float(np.sqrt(np.finfo(np.float64).eps))


def _check_confidence(confidence):
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")


def _corrected_scale(differences, test_train_ratio, what):
    """``(d, sd)``: the differences and the corrected sd of their mean.

    ``sd`` is 0 when every difference is 0 and NaN for rounding noise.
    """
    d = np.asarray(differences, dtype=float)
    k = d.size
    if k < 2:
        raise ValueError(f"The corrected {what} needs at least 2 pairs, got {k}.")
    try:
        ratio = float(test_train_ratio)
    except (TypeError, ValueError):
        ratio = np.nan
    if not np.isfinite(ratio) or ratio < 0:
        raise ValueError(
            "test_train_ratio (n_test / n_train of the splits) must be a finite "
            f"number >= 0, got {test_train_ratio!r}."
        )
    if np.all(d == 0):
        return d, 0.0
    if d.std(ddof=1) <= _DEGENERATE_SPREAD * np.max(np.abs(d)):
        return d, np.nan
    return d, float(np.sqrt((1.0 / k + ratio) * d.var(ddof=1)))


def corrected_ttest(differences, test_train_ratio):
    """Nadeau-Bengio corrected resampled t-test on paired differences.

    Folds share training data, so the variance of the mean difference is
    inflated from ``var / k`` to ``(1 / k + n_test / n_train) * var``
    (Nadeau and Bengio, 2003).

    Parameters
    ----------
    differences : array-like of shape (k,)
        Paired score differences, one per split.
    test_train_ratio : float
        ``n_test / n_train`` of the splits, finite and >= 0 (0: the plain
        paired t-test).

    Returns
    -------
    statistic : float
        The corrected t statistic (``k - 1`` degrees of freedom).
    pvalue : float
        Two-sided p-value; ``(0.0, 1.0)`` when every difference is 0, ``(nan,
        nan)`` when they have no spread beyond rounding.

    Raises
    ------
    ValueError
        With fewer than 2 differences, or a ratio that is negative or not finite.

    Examples
    --------
    >>> from cr_sklearn.study import corrected_ttest
    >>> t, p = corrected_ttest([0.01, 0.03, 0.02, 0.04], 0.25)
    >>> round(t, 2), p < 0.05
    (2.74, False)
    >>> corrected_ttest([0.01, 0.01], 1.0)
    (nan, nan)
    """
    d, sd = _corrected_scale(differences, test_train_ratio, "t-test")
    if sd == 0:
        return 0.0, 1.0
    t = d.mean() / sd  # NaN for rounding noise
    return float(t), float(2 * stats.t.sf(abs(t), df=d.size - 1))


def corrected_interval(differences, test_train_ratio, confidence=0.95):
    """Nadeau-Bengio corrected confidence interval of the mean paired difference.

    It excludes 0 exactly when :func:`corrected_ttest` rejects at level ``1 -
    confidence``.

    Parameters
    ----------
    differences, test_train_ratio : array-like of shape (k,) and float
        As in :func:`corrected_ttest`.
    confidence : float, default=0.95
        Coverage of the interval, in ``(0, 1)``.

    Returns
    -------
    mean : float
        The mean difference.
    low, high : float
        The bounds; 0 when every difference is 0, NaN where
        :func:`corrected_ttest` has no p-value.

    Examples
    --------
    >>> from cr_sklearn.study import corrected_interval
    >>> mean, low, high = corrected_interval([0.01, 0.03, 0.02, 0.04], 1.0)
    >>> round(mean, 3), low < 0 < high
    (0.025, True)
    """
    _check_confidence(confidence)
    d, sd = _corrected_scale(differences, test_train_ratio, "interval")
    mean = float(d.mean())
    half = stats.t.ppf((1 + confidence) / 2, df=d.size - 1) * sd
    return mean, float(mean - half), float(mean + half)


def wilcoxon_test(differences):
    """Two-sided Wilcoxon signed-rank test on paired differences (zeros dropped).

    Parameters
    ----------
    differences : array-like of shape (k,)
        Paired score differences.

    Returns
    -------
    statistic : float
        The signed-rank statistic.
    pvalue : float
        Two-sided p-value; 1 when every difference is zero.
    """
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        raise ValueError("The Wilcoxon test needs at least 1 pair, got 0.")
    if np.all(d == 0):
        return 0.0, 1.0
    res = stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


def _signed_rank_cdf(n):
    """Exact null ``P(W+ <= w)`` for ``w = 0 .. n(n+1)/2``."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return np.cumsum(counts) / 2.0**n


def wilcoxon_interval(differences, confidence=0.95):
    """Hodges-Lehmann estimate and the signed-rank confidence interval.

    The interval inverts the signed-rank test (Hollander and Wolfe): order
    statistics of the Walsh averages ``(d_i + d_j) / 2``, exact up to 100
    pairs, normal above. With ties or zeros :func:`wilcoxon_test` may disagree
    at the margin.

    Parameters
    ----------
    differences : array-like of shape (k,)
        Paired score differences, one per split.
    confidence : float, default=0.95
        Coverage of the interval, in ``(0, 1)``.

    Returns
    -------
    estimate : float
        The Hodges-Lehmann estimate (median of the Walsh averages).
    low, high : float
        The bounds; NaN when too few pairs can ever reject (5 or fewer at 95%).

    Examples
    --------
    >>> from cr_sklearn.study import wilcoxon_interval
    >>> estimate, low, high = wilcoxon_interval([0.01, 0.03, 0.02, 0.04, 0.05, 0.02])
    >>> round(estimate, 3), 0 < low < high
    (0.03, True)
    """
    _check_confidence(confidence)
    d = np.asarray(differences, dtype=float).ravel()
    n = d.size
    if n == 0:
        raise ValueError("The Wilcoxon interval needs at least 1 pair, got 0.")
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    estimate = float(np.median(walsh))
    tail = (1.0 - confidence) / 2.0
    if n <= 100:
        # k - 1 = the largest w with P(W+ <= w) <= tail.
        k = int(np.searchsorted(_signed_rank_cdf(n), tail, side="right"))
    else:
        mean, sd = n * (n + 1) / 4.0, np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        k = int(np.floor(mean + 0.5 - stats.norm.ppf(1.0 - tail) * sd))
    if k < 1:
        return estimate, np.nan, np.nan
    return estimate, float(walsh[k - 1]), float(walsh[walsh.size - k])


def _check_test(test, test_train_ratio):
    """``test``, checked, with the ratio that ``"corrected_t"`` needs."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}.")
    if test == "corrected_t" and test_train_ratio is None:
        raise ValueError("test='corrected_t' needs the n_test / n_train ratio.")
    return test


def paired_interval(
    differences, test="corrected_t", test_train_ratio=None, confidence=0.95
):
    """Point estimate and confidence interval of the test :func:`paired_test` runs.

    Parameters
    ----------
    differences : array-like of shape (k,)
        Paired score differences, one per split.
    test : {"corrected_t", "wilcoxon"}, default="corrected_t"
        :func:`corrected_interval` or :func:`wilcoxon_interval`.
    test_train_ratio : float, default=None
        ``n_test / n_train`` of the splits; required by ``"corrected_t"``.
    confidence : float, default=0.95
        Coverage of the interval.

    Returns
    -------
    estimate : float
        The mean difference or the Hodges-Lehmann estimate.
    low, high : float
        The interval's bounds (NaN where it cannot be bounded).
    """
    if _check_test(test, test_train_ratio) == "wilcoxon":
        return wilcoxon_interval(differences, confidence)
    return corrected_interval(differences, test_train_ratio, confidence)


def paired_test(differences, test="corrected_t", test_train_ratio=None):
    """Dispatch to :func:`corrected_ttest` or :func:`wilcoxon_test`.

    Parameters
    ----------
    differences, test, test_train_ratio : optional
        As in :func:`paired_interval`.

    Returns
    -------
    statistic : float
        The test's statistic.
    pvalue : float
        Two-sided p-value.
    """
    if _check_test(test, test_train_ratio) == "wilcoxon":
        return wilcoxon_test(differences)
    return corrected_ttest(differences, test_train_ratio)


def adjust_pvalues(pvalues, method="holm"):
    """Family-wise error corrections of p-values.

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values; NaNs stay NaN and are not counted in the family.
    method : {"holm", "bonferroni"} or None, default="holm"
        Holm's step-down or Bonferroni's correction; ``None``: the raw values.

    Returns
    -------
    adjusted : ndarray of shape (m,)
        Adjusted p-values, capped at 1.

    Raises
    ------
    ValueError
        For an unknown ``method`` or a p-value outside ``[0, 1]``.

    Examples
    --------
    >>> from cr_sklearn.study import adjust_pvalues
    >>> adjust_pvalues([0.01, 0.04, 0.03]).round(2).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=float)
    outside = ~np.isnan(p) & ~((p >= 0) & (p <= 1))
    if outside.any():
        raise ValueError(
            "p-values must lie in [0, 1] (NaN for a missing one); got "
            f"{p[outside][:5].tolist()} at positions "
            f"{np.flatnonzero(outside)[:5].tolist()}."
        )
    if method is None:
        return p.copy()
    if method not in ("holm", "bonferroni"):
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {method!r}.")
    ok = ~np.isnan(p)
    q = p[ok]  # a copy: boolean indexing
    m = q.size
    if method == "bonferroni":
        q *= m
    else:
        order = np.argsort(q, kind="stable")
        q[order] = np.maximum.accumulate((m - np.arange(m)) * q[order])
    out = p.copy()
    out[ok] = np.minimum(1.0, q)
    return out
