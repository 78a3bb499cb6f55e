"""Paired tests over cross-validation splits and multiple-testing corrections."""

import numpy as np

__all__ = ["adjust_pvalues", "corrected_ttest", "paired_test", "wilcoxon_test"]

TESTS = ("wilcoxon", "corrected_t")
CORRECTIONS = ("holm", "bonferroni", None)


def corrected_ttest(differences, test_train_ratio):
    """Nadeau-Bengio corrected resampled t-test on paired differences.

    Cross-validation folds share training data, so the differences of two
    models over splits are positively correlated and the plain paired t-test
    is anti-conservative. Nadeau and Bengio (2003) inflate the variance of
    the mean difference from ``var / k`` to ``(1 / k + n_test / n_train) * var``.

    Parameters
    ----------
    differences : array-like of shape (k,)
        Paired score differences, one per split.
    test_train_ratio : float
        ``n_test / n_train`` of the splits.

    Returns
    -------
    statistic : float
        The corrected t statistic (``k - 1`` degrees of freedom).
    pvalue : float
        Two-sided p-value.
    """
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    k = d.size
    if k < 2:
        raise ValueError(f"The corrected t-test needs at least 2 pairs, got {k}.")
    mean = d.mean()
    var = d.var(ddof=1)
    denom = np.sqrt((1.0 / k + test_train_ratio) * var)
    if denom == 0:
        # Identical differences on every split: no variance to test against.
        return (0.0, 1.0) if mean == 0 else (float(np.copysign(np.inf, mean)), 0.0)
    t = mean / denom
    return float(t), float(2 * stats.t.sf(abs(t), df=k - 1))


def wilcoxon_test(differences):
    """Two-sided Wilcoxon signed-rank test on paired differences.

    Zero differences are dropped (``zero_method="wilcox"``); when all
    differences are zero the p-value is 1.

    Parameters
    ----------
    differences : array-like of shape (k,)
        Paired score differences.

    Returns
    -------
    statistic : float
        The signed-rank statistic.
    pvalue : float
        Two-sided p-value.
    """
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        raise ValueError("The Wilcoxon test needs at least 1 pair, got 0.")
    if np.all(d == 0):
        return 0.0, 1.0
    res = stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


def paired_test(differences, test="wilcoxon", test_train_ratio=None):
    """Dispatch to :func:`wilcoxon_test` or :func:`corrected_ttest`."""
    if test == "wilcoxon":
        return wilcoxon_test(differences)
    if test == "corrected_t":
        if test_train_ratio is None:
            raise ValueError("test='corrected_t' needs the n_test / n_train ratio.")
        return corrected_ttest(differences, test_train_ratio)
    raise ValueError(f"test must be one of {TESTS}, got {test!r}.")


def adjust_pvalues(pvalues, method="holm"):
    """Family-wise error corrections of p-values.

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values; NaNs are kept as NaN and do not count in the family.
    method : {"holm", "bonferroni"} or None, default="holm"
        Holm's step-down or Bonferroni's single-step correction; ``None``
        returns the raw p-values.

    Returns
    -------
    adjusted : ndarray of shape (m,)
        Adjusted p-values, capped at 1.
    """
    p = np.asarray(pvalues, dtype=float)
    if method is None:
        return p.copy()
    if method not in ("holm", "bonferroni"):
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {method!r}.")
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    if method == "bonferroni":
        out[ok] = np.minimum(1.0, q * m)
        return out
    order = np.argsort(q, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * q[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, stepped)
    out[ok] = adjusted
    return out
