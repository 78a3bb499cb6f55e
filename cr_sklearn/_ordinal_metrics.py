"""Ordinal metrics and scorers on the ranks of the labels (:ref:`ordinal-order`)."""

import numpy as np
from sklearn.metrics import cohen_kappa_score

from ._label_order import (
    categorical_order,
    check_known,
    check_order,
    ranks,
    resolve_order,
)
from ._ordinal import CROrdinalRegressor
from ._tau import DREGScorer
from ._utils import final_estimator

__all__ = [
    "ORDINAL_SCORERS",
    "OrdinalScorer",
    "get_ordinal_scorer",
    "macro_averaged_mean_absolute_error",
]


def macro_averaged_mean_absolute_error(
    y_true, y_pred, *, labels=None, sample_weight=None
):
    """Mean absolute error averaged over the classes present in ``y_true``.

    Each class counts equally, as in imbalanced-learn's metric of the same name.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels: numbers (compared by value), or labels ordered by
        ``labels`` or an ordered pandas Categorical (compared by rank).
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    labels : array-like of shape (n_classes,), default=None
        Every label, lowest first; required for strings (unless ``y_true`` is
        an ordered Categorical).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights within each class.

    Returns
    -------
    mae : float
        The mean over classes of each class's mean absolute error.

    Examples
    --------
    >>> from cr_sklearn import macro_averaged_mean_absolute_error
    >>> macro_averaged_mean_absolute_error([0, 0, 0, 1], [0, 0, 0, 0])
    0.5
    >>> macro_averaged_mean_absolute_error(
    ...     ["low", "low", "high"], ["low", "mid", "mid"],
    ...     labels=["low", "mid", "high"])
    0.75
    """
    categories = categorical_order(y_true)
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError("y_true and y_pred must be 1-d arrays of the same length.")
    # Numbers without a given order are compared by value, not by rank.
    order = resolve_order(
        y_true,
        y_pred,
        labels=labels,
        categories=categories,
        who="macro_averaged_mean_absolute_error",
        param="labels",
    )
    if labels is not None or categories is not None:
        y_true, y_pred = ranks(order, y_true), ranks(order, y_pred)
    y_true, y_pred = y_true.astype(np.float64), y_pred.astype(np.float64)
    weight = np.ones_like(y_true)
    if sample_weight is not None:
        weight = np.asarray(sample_weight, dtype=np.float64)
    errors = np.abs(y_true - y_pred)
    per_class = [
        np.average(errors[y_true == c], weights=weight[y_true == c])
        for c in np.unique(y_true)
    ]
    return float(np.mean(per_class))


# The metrics read ranks 0..n_classes-1 of one order.
def _metric_qwk(true, pred, sample_weight, n_classes):
    if len(np.union1d(true, pred)) < 2:
        return 1.0
    # Every rank: the quadratic weights stay distances when a grade is absent.
    return float(
        cohen_kappa_score(
            true,
            pred,
            labels=np.arange(n_classes),
            weights="quadratic",
            sample_weight=sample_weight,
        )
    )


def _ordinal_classes(estimator):
    """``classes_`` of the CROrdinalRegressor ``estimator`` ends in, else None."""
    for _ in range(16):  # nesting depth; a cycle cannot loop forever
        estimator = final_estimator(estimator)
        if isinstance(estimator, CROrdinalRegressor):
            return getattr(estimator, "classes_", None)
        inner = getattr(estimator, "best_estimator_", None)
        if inner is None:
            inner = getattr(estimator, "estimator_", None)
        if inner is None:
            return None
        estimator = inner
    return None


class OrdinalScorer:
    """An ordinal metric as an sklearn scorer, computed on label *ranks*.

    The order: ``labels``, a :class:`CROrdinalRegressor`'s ``classes_``, an
    ordered Categorical ``y`` or sorted numbers, else a ``ValueError``
    (:ref:`ordinal-order`); accuracy without ``labels`` needs none.

    Parameters
    ----------
    metric : {"accuracy", "mean_absolute_error", \
            "macro_averaged_mean_absolute_error", "quadratic_weighted_kappa"}
        The metric.
    sign : {1, -1}, default=1
        Multiplies the metric; -1 for errors so that greater is better.
    labels : array-like of shape (n_classes,), default=None
        Every label, lowest first, used as given; must agree with the
        ``classes_`` of an ordinal estimator it scores.

    Examples
    --------
    >>> from cr_sklearn import get_ordinal_scorer
    >>> get_ordinal_scorer("neg_mean_absolute_error")
    OrdinalScorer('mean_absolute_error', sign=-1)
    >>> get_ordinal_scorer("quadratic_weighted_kappa", labels=["low", "high"])
    OrdinalScorer('quadratic_weighted_kappa', sign=1, labels=['low', 'high'])
    """

    _METRICS = {
        "accuracy": lambda t, p, w, _: float(np.average(t == p, weights=w)),
        "mean_absolute_error": lambda t, p, w, _: float(
            np.average(np.abs(t - p), weights=w)
        ),
        "macro_averaged_mean_absolute_error": lambda t, p, w, _: (
            macro_averaged_mean_absolute_error(t, p, sample_weight=w)
        ),
        "quadratic_weighted_kappa": _metric_qwk,
    }

    def __init__(self, metric, sign=1, labels=None):
        if metric not in self._METRICS:
            raise ValueError(
                f"metric must be one of {sorted(self._METRICS)}, got {metric!r}."
            )
        if sign not in (1, -1):
            raise ValueError(f"sign must be 1 or -1, got {sign!r}.")
        self.metric = metric
        self.sign = sign
        self.labels = None if labels is None else check_order(labels, "labels")

    def _order(self, estimator, y, y_pred):
        declared = _ordinal_classes(estimator)
        labels = self.labels
        if labels is not None and declared is not None:
            if labels.tolist() != np.asarray(declared).tolist():
                raise ValueError(
                    f"labels={labels.tolist()!r:.200} differ from the classes_ of "
                    f"the ordinal estimator scored, "
                    f"{np.asarray(declared).tolist()!r:.200}: the two orders "
                    "must be the same."
                )
        elif declared is not None:
            labels = declared
            check_known(labels, y, what="y", where="the estimator's classes_")
        return resolve_order(
            y,
            y_pred,
            labels=labels,
            categories=categorical_order(y),
            known=getattr(final_estimator(estimator), "classes_", None),
            who=f"OrdinalScorer({self.metric!r})",
            param="labels",
        )

    def __call__(self, estimator, X, y, sample_weight=None):
        """Score ``estimator.predict(X)`` against ``y``."""
        y_pred = np.asarray(estimator.predict(X))
        if self.metric == "accuracy" and self.labels is None:
            # Right or wrong needs no order: any labels, strings included.
            true, pred, n_classes = np.asarray(y), y_pred, None
            if true.shape != pred.shape:
                raise ValueError(
                    f"y has {true.shape[0]} labels and the predictions "
                    f"{pred.shape[0]}: they must be as many."
                )
        else:
            order = self._order(estimator, y, y_pred)
            true, pred = ranks(order, np.asarray(y)), ranks(order, y_pred)
            n_classes = len(order)
        value = self._METRICS[self.metric](true, pred, sample_weight, n_classes)
        return self.sign * value

    def __repr__(self):
        labels = "" if self.labels is None else f", labels={self.labels.tolist()!r}"
        return f"OrdinalScorer({self.metric!r}, sign={self.sign}{labels})"


#: Ordinal scorers by name (greater is better; errors are ``neg_``).
ORDINAL_SCORERS = {
    "accuracy": OrdinalScorer("accuracy"),
    "neg_mean_absolute_error": OrdinalScorer("mean_absolute_error", sign=-1),
    "neg_macro_averaged_mean_absolute_error": OrdinalScorer(
        "macro_averaged_mean_absolute_error", sign=-1
    ),
    "quadratic_weighted_kappa": OrdinalScorer("quadratic_weighted_kappa"),
}


def get_ordinal_scorer(name, *, labels=None):
    """An ordinal scorer by name.

    Parameters
    ----------
    name : str
        A key of ``ORDINAL_SCORERS`` (``"accuracy"``,
        ``"neg_mean_absolute_error"``, ``"neg_macro_averaged_mean_absolute_error"``,
        ``"quadratic_weighted_kappa"``), or ``"tau"`` and ``"neg_tau"``
        (:class:`DREGScorer`).
    labels : array-like of shape (n_classes,), default=None
        Every label, lowest first (see :class:`OrdinalScorer`); unused by the
        taus.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y) -> float``, greater is better (but ``"tau"``).

    Examples
    --------
    >>> from cr_sklearn import get_ordinal_scorer
    >>> scoring = {name: get_ordinal_scorer(name)
    ...            for name in ["accuracy", "neg_mean_absolute_error"]}
    """
    if name in ("tau", "neg_tau"):
        return DREGScorer(negate=name == "neg_tau")
    if name not in ORDINAL_SCORERS:
        raise ValueError(
            f"Unknown ordinal scorer {name!r}; choose from "
            f"{sorted([*ORDINAL_SCORERS, 'tau', 'neg_tau'])}."
        )
    scorer = ORDINAL_SCORERS[name]
    if labels is None:
        return scorer
    return OrdinalScorer(scorer.metric, sign=scorer.sign, labels=labels)
