"""Ordinal metrics and scorers, computed on the ranks of the labels.

They duck-type estimators (``predict``, ``classes_``), so the same scorer
compares ordinal CR networks with any classifier or ordinal model.
"""

import numpy as np
from sklearn.metrics import cohen_kappa_score

from ._tau import DREGScorer
from ._utils import final_estimator, label_ranks

__all__ = [
    "ORDINAL_SCORERS",
    "OrdinalScorer",
    "get_ordinal_scorer",
    "macro_averaged_mean_absolute_error",
]


def macro_averaged_mean_absolute_error(y_true, y_pred, *, sample_weight=None):
    """Mean absolute error averaged over the classes present in ``y_true``.

    Each class counts equally, so errors on rare grades are not drowned by
    the frequent ones (as in imbalanced-learn's metric of the same name).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True values (numbers or ranks).
    y_pred : array-like of shape (n_samples,)
        Predicted values.
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
    """
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError("y_true and y_pred must be 1-d arrays of the same length.")
    weight = np.ones_like(y_true)
    if sample_weight is not None:
        weight = np.asarray(sample_weight, dtype=np.float64)
    errors = np.abs(y_true - y_pred)
    per_class = [
        np.average(errors[y_true == c], weights=weight[y_true == c])
        for c in np.unique(y_true)
    ]
    return float(np.mean(per_class))


def _metric_accuracy(true, pred, sample_weight):
    return float(np.average(true == pred, weights=sample_weight))


def _metric_mae(true, pred, sample_weight):
    return float(np.average(np.abs(true - pred), weights=sample_weight))


def _metric_macro_mae(true, pred, sample_weight):
    return macro_averaged_mean_absolute_error(true, pred, sample_weight=sample_weight)


def _metric_qwk(true, pred, sample_weight):
    labels = np.union1d(true, pred)
    if len(labels) < 2:
        return 1.0
    return float(
        cohen_kappa_score(
            true, pred, labels=labels, weights="quadratic", sample_weight=sample_weight
        )
    )


def _classes_of(estimator):
    return getattr(final_estimator(estimator), "classes_", None)


class OrdinalScorer:
    """An ordinal metric as an sklearn scorer, computed on label *ranks*.

    Labels are mapped to their position in the estimator's ``classes_``
    (the order given by ``CROrdinalRegressor(classes=...)``, or the sorted
    labels of any classifier), so string labels and integer labels with gaps
    are scored by their order, not their values. Without ``classes_``, the
    sorted union of the true and predicted labels is the order.

    Parameters
    ----------
    metric : {"accuracy", "mean_absolute_error", \
            "macro_averaged_mean_absolute_error", "quadratic_weighted_kappa"}
        The metric.
    sign : {1, -1}, default=1
        Multiplies the metric; -1 for errors so that greater is better.

    Examples
    --------
    >>> from cr_sklearn import get_ordinal_scorer
    >>> get_ordinal_scorer("neg_mean_absolute_error")
    OrdinalScorer('mean_absolute_error', sign=-1)
    """

    _METRICS = {
        "accuracy": _metric_accuracy,
        "mean_absolute_error": _metric_mae,
        "macro_averaged_mean_absolute_error": _metric_macro_mae,
        "quadratic_weighted_kappa": _metric_qwk,
    }

    def __init__(self, metric, sign=1):
        if metric not in self._METRICS:
            raise ValueError(
                f"metric must be one of {sorted(self._METRICS)}, got {metric!r}."
            )
        if sign not in (1, -1):
            raise ValueError(f"sign must be 1 or -1, got {sign!r}.")
        self.metric = metric
        self.sign = sign

    def __call__(self, estimator, X, y, sample_weight=None):
        """Score ``estimator.predict(X)`` against ``y``.

        Parameters
        ----------
        estimator : fitted estimator
            A classifier or ordinal regressor.
        X : array-like of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            Greater is better.
        """
        y_pred = np.asarray(estimator.predict(X))
        y = np.asarray(y)
        classes = _classes_of(estimator)
        if classes is None:
            classes = np.union1d(y, y_pred)
        true, pred = label_ranks(classes, y), label_ranks(classes, y_pred)
        value = self._METRICS[self.metric](true, pred, sample_weight)
        return self.sign * value

    def __repr__(self):
        return f"OrdinalScorer({self.metric!r}, sign={self.sign})"


#: Ordinal scorers by name (greater is better; errors are ``neg_``).
ORDINAL_SCORERS = {
    "accuracy": OrdinalScorer("accuracy"),
    "neg_mean_absolute_error": OrdinalScorer("mean_absolute_error", sign=-1),
    "neg_macro_averaged_mean_absolute_error": OrdinalScorer(
        "macro_averaged_mean_absolute_error", sign=-1
    ),
    "quadratic_weighted_kappa": OrdinalScorer("quadratic_weighted_kappa"),
}


def get_ordinal_scorer(name):
    """An ordinal scorer by name.

    Parameters
    ----------
    name : str
        One of ``"accuracy"``, ``"neg_mean_absolute_error"``,
        ``"neg_macro_averaged_mean_absolute_error"``,
        ``"quadratic_weighted_kappa"``; also ``"tau"`` and ``"neg_tau"``
        (:class:`DREGScorer` with ``q=99``).

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y) -> float``, greater is better (except
        ``"tau"``, which reports tau itself).

    Examples
    --------
    >>> from cr_sklearn import get_ordinal_scorer
    >>> scoring = {name: get_ordinal_scorer(name)
    ...            for name in ["accuracy", "neg_mean_absolute_error"]}
    """
    if name == "tau":
        return DREGScorer()
    if name == "neg_tau":
        return DREGScorer(negate=True)
    if name not in ORDINAL_SCORERS:
        raise ValueError(
            f"Unknown ordinal scorer {name!r}; choose from "
            f"{sorted([*ORDINAL_SCORERS, 'tau', 'neg_tau'])}."
        )
    return ORDINAL_SCORERS[name]
