"""Bayesian comparisons of two models with a region of practical equivalence.

Benavoli, Corani, Demšar and Zaffalon (JMLR 2017): the correlated t-test on
one table's cross-validation splits, and the signed-rank test across tables.
"""

import numbers
from typing import NamedTuple

import numpy as np
from scipy import stats

__all__ = ["BayesianResult", "bayesian_correlated_ttest", "bayesian_signed_rank"]

# Dirichlet samples drawn per block of the signed-rank test (bounds the memory).
_BLOCK = 2_000


class BayesianResult(NamedTuple):
    """Posterior probabilities of a Bayesian comparison of models A and B."""

    #: Probability that A is better by more than the ROPE.
    p_a_better: float
    #: Probability that the difference lies within the ROPE.
    p_equivalent: float
    #: Probability that B is better by more than the ROPE.
    p_b_better: float


def _check_rope(rope):
    if not isinstance(rope, numbers.Real) or not np.isfinite(rope) or rope < 0:
        raise ValueError(f"rope must be a finite number >= 0, got {rope!r}.")
    return float(rope)


def _differences(differences, what, minimum):
    d = np.asarray(differences, dtype=float).ravel()
    if d.size < minimum:
        raise ValueError(
            f"The {what} needs at least {minimum} differences, got {d.size}."
        )
    if not np.isfinite(d).all():
        raise ValueError(f"The {what} needs finite differences (a failed fit?).")
    return d


def bayesian_correlated_ttest(differences, rho, rope=0.0):
    """Bayesian correlated t-test of two models on one table's CV splits.

    The posterior of the mean difference is a Student t with ``k - 1`` degrees
    of freedom, location the mean difference and scale ``sqrt((1 / k + rho /
    (1 - rho)) * var)``, the variance inflated for the splits' overlap
    (Corani and Benavoli, 2015; Benavoli et al., 2017).

    Parameters
    ----------
    differences : array-like of shape (k,)
        Score of model A minus score of model B on each split (greater is
        better), at least 2.
    rho : float
        Correlation of the splits, ``n_test / (n_train + n_test)``: ``1 /
        n_folds`` for k-fold cross-validation; in ``[0, 1)``.
    rope : float, default=0.0
        Half-width of the region of practical equivalence, in score units.

    Returns
    -------
    result : BayesianResult
        ``p_a_better``, ``p_equivalent`` (0 without a ROPE), ``p_b_better``.

    Raises
    ------
    ValueError
        With fewer than 2 differences, a ``rho`` outside ``[0, 1)`` or a
        negative ``rope``.

    References
    ----------
    A. Benavoli, G. Corani, J. Demšar and M. Zaffalon, "Time for a change: a
    tutorial for comparing multiple classifiers through Bayesian analysis",
    JMLR 18, 2017.

    Examples
    --------
    >>> from cr_sklearn.study import bayesian_correlated_ttest
    >>> diff = [0.02, 0.03, 0.01, 0.04, 0.02, 0.03, 0.02, 0.01, 0.03, 0.02]
    >>> result = bayesian_correlated_ttest(diff, rho=0.2, rope=0.01)
    >>> round(result.p_a_better, 2), round(result.p_b_better, 3)
    (0.98, 0.0)
    """
    d = _differences(differences, "correlated t-test", 2)
    rope = _check_rope(rope)
    if not isinstance(rho, numbers.Real) or not 0 <= rho < 1:
        raise ValueError(f"rho must be in [0, 1), got {rho!r}.")
    k = d.size
    mean, var = float(d.mean()), float(d.var(ddof=1))
    if var == 0:  # a point mass at the mean difference
        above, below = float(mean > rope), float(mean < -rope)
        return BayesianResult(above, 1.0 - above - below, below)
    scale = np.sqrt((1.0 / k + rho / (1.0 - rho)) * var)
    posterior = stats.t(df=k - 1, loc=mean, scale=scale)
    below = float(posterior.cdf(-rope))
    above = float(posterior.sf(rope))
    return BayesianResult(above, max(0.0, 1.0 - above - below), below)


def bayesian_signed_rank(
    differences, rope=0.0, *, prior=0.5, n_samples=50_000, random_state=None
):
    """Bayesian signed-rank test of two models across tables.

    A Dirichlet process posterior over the distribution of the per-table
    differences, with a pseudo-observation at 0 of weight ``prior``; each of
    ``n_samples`` posterior draws gives the probability that a pair's mean
    difference lies above ``rope``, within it, or below ``-rope``; the result
    is how often each of the three is the largest (Benavoli et al., 2014,
    2017).

    Parameters
    ----------
    differences : array-like of shape (n_tables,)
        Mean score of model A minus that of model B on each table (greater is
        better), at least 2.
    rope : float, default=0.0
        Half-width of the region of practical equivalence, in score units.
    prior : float, default=0.5
        Weight of the pseudo-observation at 0, > 0.
    n_samples : int, default=50_000
        Monte-Carlo draws from the posterior.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    result : BayesianResult
        ``p_a_better``, ``p_equivalent`` (0 without a ROPE), ``p_b_better``.

    References
    ----------
    A. Benavoli, G. Corani, F. Mangili, M. Zaffalon and F. Ruggeri, "A
    Bayesian Wilcoxon signed-rank test based on the Dirichlet process", ICML
    2014; Benavoli et al., JMLR 18, 2017.

    Examples
    --------
    >>> from cr_sklearn.study import bayesian_signed_rank
    >>> diff = [0.02, 0.03, -0.01, 0.04, 0.02, 0.05, 0.01, 0.03]
    >>> result = bayesian_signed_rank(diff, rope=0.01, random_state=0)
    >>> result.p_a_better > 0.9
    True
    """
    d = _differences(differences, "signed-rank test", 2)
    rope = _check_rope(rope)
    if not isinstance(prior, numbers.Real) or not prior > 0:
        raise ValueError(f"prior must be a number > 0, got {prior!r}.")
    if not isinstance(n_samples, numbers.Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int, got {n_samples!r}.")
    rng = (
        random_state
        if isinstance(random_state, np.random.RandomState)
        else np.random.RandomState(random_state)
    )
    z = np.concatenate([[0.0], d])  # the pseudo-observation first
    sums = z[:, None] + z[None, :]
    # A pair's mean difference beyond the ROPE counts 1, on its edge 1/2.
    above = (sums > 2 * rope) + 0.5 * (sums == 2 * rope)
    below = (sums < -2 * rope) + 0.5 * (sums == -2 * rope)
    alpha = np.full(z.size, 1.0)
    alpha[0] = prior
    wins = np.zeros(3)
    for start in range(0, n_samples, _BLOCK):
        w = rng.dirichlet(alpha, min(_BLOCK, n_samples - start))
        p_above = np.einsum("si,ij,sj->s", w, above, w)
        p_below = np.einsum("si,ij,sj->s", w, below, w)
        if rope > 0:
            p = np.column_stack([p_above, 1.0 - p_above - p_below, p_below])
        else:  # two regions: ties at 0 split between them
            p = np.column_stack([p_above, np.zeros_like(p_above), 1.0 - p_above])
        wins += np.bincount(np.argmax(p, axis=1), minlength=3)
    a, e, b = wins / n_samples
    return BayesianResult(float(a), float(e), float(b))
