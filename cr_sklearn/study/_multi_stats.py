"""Tests over several tables: ranks, Friedman, Nemenyi and Holm (Demšar, 2006).

Every function takes a score matrix of shape ``(n_tables, n_models)`` where
greater is better (negate a loss first); rank 1 is the best model of a table.
"""

from typing import NamedTuple

import numpy as np
from scipy import stats

from ._stats import adjust_pvalues

__all__ = [
    "FriedmanResult",
    "friedman_test",
    "holm_test",
    "nemenyi_test",
    "table_ranks",
]


def _check_scores(scores, *, min_models=2, min_tables=2):
    """``scores`` as a 2-D float array, with enough tables and models."""
    try:
        s = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"scores must be a 2-D array of numbers (tables x models): {exc}"
        ) from None
    if s.ndim != 2:
        raise ValueError(
            f"scores must be 2-D (tables x models), got {s.ndim} dimension(s)."
        )
    n, k = s.shape
    if n < min_tables:
        raise ValueError(f"A test over tables needs at least 2 tables (rows), got {n}.")
    if k < min_models:
        raise ValueError(
            f"This test needs at least {min_models} models (columns), got {k}"
            + (": compare two models with a paired test." if k == 2 else ".")
        )
    if not np.isfinite(s).all():
        rows = np.flatnonzero(~np.isfinite(s).all(axis=1))
        raise ValueError(
            "scores must be finite; tables (rows) "
            f"{rows[:8].tolist()} hold NaN or infinite values (a failed fit?): "
            "drop them first."
        )
    return s


def table_ranks(scores):
    """Rank of each model on each table, 1 the best, ties sharing the mean rank.

    Parameters
    ----------
    scores : array-like of shape (n_tables, n_models)
        Scores where greater is better.

    Returns
    -------
    ranks : ndarray of shape (n_tables, n_models)
        Ranks from 1 to ``n_models``.

    Examples
    --------
    >>> from cr_sklearn.study import table_ranks
    >>> table_ranks([[0.9, 0.8, 0.8], [0.7, 0.9, 0.6]]).tolist()
    [[1.0, 2.5, 2.5], [2.0, 1.0, 3.0]]
    """
    s = _check_scores(scores, min_models=1, min_tables=1)
    return stats.rankdata(-s, axis=1)


class FriedmanResult(NamedTuple):
    """Friedman's test over tables (see :func:`friedman_test`)."""

    #: The chi-square statistic, corrected for ties.
    statistic: float
    #: Its p-value (``n_models - 1`` degrees of freedom).
    pvalue: float
    #: Iman and Davenport's F statistic.
    f_statistic: float
    #: Its p-value (``k - 1`` and ``(k - 1)(n - 1)`` degrees of freedom).
    f_pvalue: float
    #: Mean rank of each model (1 the best).
    mean_ranks: np.ndarray


def friedman_test(scores):
    """Test that all models perform alike over the tables (Friedman's test).

    Models are ranked within each table; the chi-square statistic of their mean
    ranks is corrected for ties (as :func:`scipy.stats.friedmanchisquare`), and
    Iman and Davenport's F form is given too (Demšar, 2006).

    Parameters
    ----------
    scores : array-like of shape (n_tables, n_models)
        Scores where greater is better; at least 2 tables and 3 models.

    Returns
    -------
    result : FriedmanResult
        ``statistic``, ``pvalue``, ``f_statistic``, ``f_pvalue``, ``mean_ranks``.

    Raises
    ------
    ValueError
        With fewer than 2 tables or 3 models, missing scores, or when every
        table ties every model (no ranks to test).

    References
    ----------
    J. Demšar, "Statistical comparisons of classifiers over multiple data
    sets", JMLR 7, 2006.

    Examples
    --------
    >>> from cr_sklearn.study import friedman_test
    >>> scores = [[0.9, 0.8, 0.7], [0.8, 0.75, 0.7], [0.95, 0.9, 0.6],
    ...           [0.7, 0.72, 0.6]]
    >>> result = friedman_test(scores)
    >>> round(result.statistic, 2), result.mean_ranks.tolist()
    (6.5, [1.25, 1.75, 3.0])
    """
    s = _check_scores(scores, min_models=3)
    n, k = s.shape
    ranks = stats.rankdata(-s, axis=1)
    ties = 0.0
    for row in ranks:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts**3 - counts))
    correction = 1.0 - ties / (n * k * (k * k - 1))
    if correction <= 0:
        raise ValueError("Every table ties every model: there are no ranks to test.")
    sums = ranks.sum(axis=0)
    chi2 = (12.0 / (n * k * (k + 1)) * np.sum(sums**2) - 3.0 * n * (k + 1)) / correction
    p = float(stats.chi2.sf(chi2, k - 1))
    denom = n * (k - 1) - chi2
    if denom > 0:
        f = (n - 1) * chi2 / denom
        f_p = float(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))
    else:  # every table ranks the models alike
        f, f_p = np.inf, 0.0
    return FriedmanResult(float(chi2), p, float(f), f_p, sums / n)


def _rank_scale(n, k):
    """Standard error of a difference of two mean ranks (Demšar, 2006)."""
    return np.sqrt(k * (k + 1) / (6.0 * n))


def nemenyi_test(scores, alpha=0.05):
    """Test every pair of models by Nemenyi's post-hoc test; the critical difference.

    Two models differ where their mean ranks differ by at least the critical
    difference ``q_alpha * sqrt(k (k + 1) / (6 n))``, ``q_alpha`` the
    studentized range quantile over ``sqrt(2)`` (Demšar, 2006).

    Parameters
    ----------
    scores : array-like of shape (n_tables, n_models)
        Scores where greater is better; at least 2 tables and 2 models.
    alpha : float, default=0.05
        Level of the critical difference.

    Returns
    -------
    pvalues : ndarray of shape (n_models, n_models)
        The p-value of each pair (1 on the diagonal), adjusted for all pairs by
        the studentized range.
    critical_difference : float
        The critical difference of the mean ranks at ``alpha``.
    mean_ranks : ndarray of shape (n_models,)
        Mean rank of each model.

    Examples
    --------
    >>> import numpy as np
    >>> from cr_sklearn.study import nemenyi_test
    >>> scores = np.tile([0.9, 0.8, 0.7, 0.6, 0.5], (10, 1))
    >>> pvalues, cd, ranks = nemenyi_test(scores)
    >>> round(cd, 3)
    1.929
    """
    s = _check_scores(scores)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    n, k = s.shape
    mean_ranks = stats.rankdata(-s, axis=1).mean(axis=0)
    scale = _rank_scale(n, k)
    q = np.abs(mean_ranks[:, None] - mean_ranks[None, :]) / scale
    pvalues = stats.studentized_range.sf(q * np.sqrt(2.0), k, np.inf)
    pvalues = np.clip(pvalues, 0.0, 1.0)
    np.fill_diagonal(pvalues, 1.0)
    cd = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2.0) * scale
    return pvalues, float(cd), mean_ranks


def holm_test(scores, reference=0):
    """Each model's mean rank against a reference's, with Holm's correction.

    ``z = (R_i - R_ref) / sqrt(k (k + 1) / (6 n))``, two-sided normal p-values
    adjusted by Holm's step-down over the ``k - 1`` comparisons (Demšar, 2006).

    Parameters
    ----------
    scores : array-like of shape (n_tables, n_models)
        Scores where greater is better; at least 2 tables and 2 models.
    reference : int, default=0
        Column of the reference model.

    Returns
    -------
    z : ndarray of shape (n_models,)
        The statistic, positive where a model ranks worse than the reference;
        NaN for the reference.
    pvalues : ndarray of shape (n_models,)
        Unadjusted two-sided p-values (NaN for the reference).
    adjusted : ndarray of shape (n_models,)
        Holm-adjusted p-values (NaN for the reference).

    Examples
    --------
    >>> from cr_sklearn.study import holm_test
    >>> scores = [[0.9, 0.8, 0.7], [0.8, 0.75, 0.7], [0.95, 0.9, 0.6],
    ...           [0.7, 0.72, 0.6]]
    >>> z, p, adjusted = holm_test(scores)
    >>> [round(float(v), 3) for v in z[1:]]
    [0.707, 2.475]
    """
    s = _check_scores(scores)
    n, k = s.shape
    if not isinstance(reference, int | np.integer) or not 0 <= reference < k:
        raise ValueError(
            f"reference must be a column index in [0, {k}), got {reference!r}."
        )
    mean_ranks = stats.rankdata(-s, axis=1).mean(axis=0)
    z = (mean_ranks - mean_ranks[reference]) / _rank_scale(n, k)
    z[reference] = np.nan
    p = 2.0 * stats.norm.sf(np.abs(z))
    return z, p, adjust_pvalues(p, "holm")
