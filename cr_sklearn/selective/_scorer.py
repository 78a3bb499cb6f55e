"""AURC as a scikit-learn scorer (greater is better, so negated)."""

import numbers

import numpy as np

from ._metrics import _check_loss_option, aurc_score, eaurc_score
from ._signals import SIGNALS, _is_ordinal, _resolve_loss, confidence_signals

__all__ = ["make_aurc_scorer", "neg_aurc_scorer"]


class _AURCScorer:
    """``scorer(estimator, X, y) -> -AURC`` of one confidence signal."""

    def __init__(self, signal, excess, loss, n_passes, random_state):
        self.signal = signal
        self.excess = excess
        self.loss = loss
        self.n_passes = n_passes
        self.random_state = random_state

    def _confidence(self, estimator, X):
        if callable(self.signal):
            return np.asarray(self.signal(estimator, X), dtype=np.float64)
        (values,) = confidence_signals(
            estimator,
            X,
            [self.signal],
            loss=self.loss,
            n_passes=self.n_passes,
            random_state=self.random_state,
        ).values()
        return values

    def __call__(self, estimator, X, y, sample_weight=None):
        """Minus the (excess) AURC of ``estimator`` on ``(X, y)``."""
        loss = _resolve_loss(estimator, self.loss)
        labels = getattr(estimator, "classes_", None) if loss == "absolute" else None
        if labels is not None and not _is_ordinal(estimator):
            # Another classifier's sorted classes_ are an order for numbers only.
            labels = labels if np.asarray(labels).dtype.kind in "biuf" else None
        metric = eaurc_score if self.excess else aurc_score
        value = metric(
            y,
            estimator.predict(X),
            self._confidence(estimator, X),
            sample_weight=sample_weight,
            loss=loss,
            labels=labels,
        )
        return -value

    def __repr__(self):
        signal = getattr(self.signal, "__name__", self.signal)
        excess = ", excess=True" if self.excess else ""
        return f"make_aurc_scorer(signal={signal!r}{excess})"


def make_aurc_scorer(
    signal="max_proba", *, excess=False, loss="auto", n_passes=30, random_state=0
):
    """A scorer of the AURC of a confidence signal, for model selection.

    ``scorer(estimator, X, y)`` returns minus :func:`aurc_score` (or
    :func:`eaurc_score`) of ``estimator.predict(X)`` ranked by the signal.
    ``cr_sklearn.neg_aurc_scorer`` is ``make_aurc_scorer()``.

    Parameters
    ----------
    signal : str or callable, default="max_proba"
        A signal of :func:`confidence_signals`, or a callable
        ``signal(estimator, X)`` returning one confidence per sample.
    excess : bool, default=False
        Score the excess over the oracle ordering (E-AURC).
    loss : {"auto", "zero_one", "absolute"}, default="auto"
        The per-sample loss; ``"auto"``: ``"absolute"`` for ordinal models.
    n_passes, random_state : optional
        As in :func:`confidence_signals`; the fixed seed makes scores repeatable.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None) -> float``.

    Examples
    --------
    Pass it as ``scoring`` to ``cross_validate`` or ``GridSearchCV``, or call it:

    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from cr_sklearn import make_aurc_scorer
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LogisticRegression(max_iter=1000).fit(X[::2], y[::2])
    >>> bool(make_aurc_scorer("margin", excess=True)(clf, X[1::2], y[1::2]) <= 0)
    True
    """
    if not callable(signal) and (not isinstance(signal, str) or signal not in SIGNALS):
        raise ValueError(
            f"signal must be one of {list(SIGNALS)} or a callable, got {signal!r}."
        )
    if not isinstance(excess, bool | np.bool_):
        raise TypeError(f"excess must be a bool, got {excess!r}.")
    _check_loss_option(loss)
    if not isinstance(n_passes, numbers.Integral) or n_passes < 2:
        raise ValueError(f"n_passes must be an integer >= 2, got {n_passes!r}.")
    return _AURCScorer(signal, bool(excess), loss, int(n_passes), random_state)


#: ``make_aurc_scorer()``: minus the AURC of the maximum predicted probability.
neg_aurc_scorer = make_aurc_scorer()
