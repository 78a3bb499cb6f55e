"""SelectiveClassifier: cross-fitted confidence and a guaranteed-risk threshold."""

import math
import numbers
import warnings

import numpy as np
from joblib import Parallel, delayed
from scipy import sparse, stats
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    MetaEstimatorMixin,
    _fit_context,
    clone,
)
from sklearn.linear_model import LogisticRegression, PoissonRegressor
from sklearn.model_selection import check_cv
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import _safe_indexing, check_random_state, get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from ._metrics import _losses_area, _sample_losses, aurc_score
from ._signals import _check_signals, _resolve_loss, confidence_signals

__all__ = ["SelectiveClassifier"]


def _binomial_upper_bound(n_events, n, delta):
    """Clopper-Pearson upper bound on a rate (the ``B*`` of Geifman & El-Yaniv)."""
    if n == 0 or n_events >= n:
        return 1.0
    return float(stats.beta.ppf(1.0 - delta, n_events + 1, n - n_events))


def _risk_bound(losses, delta, n_levels):
    """Level ``1 - delta`` bound on the mean of losses in ``{0..n_levels}`` (union)."""
    n = len(losses)
    return sum(
        _binomial_upper_bound(int(np.sum(losses >= t)), n, delta / n_levels)
        for t in range(1, n_levels + 1)
    )


def _guaranteed_risk_threshold(confidence, losses, target_risk, delta, n_levels=1):
    """SGR ``(threshold, bound)`` with risk below ``target_risk``, or ``(inf, nan)``.

    Binary search at level ``delta / ceil(log2(m))`` (Geifman & El-Yaniv, 2017).
    """
    m = len(losses)
    order = np.sort(confidence)
    n_steps = max(1, math.ceil(math.log2(m))) if m > 1 else 1
    level = delta / n_steps
    # Candidates z_min < z <= z_max: all m, full coverage (z = 0) included.
    z_min, z_max = -1, m - 1
    best = (np.inf, np.nan)
    for _ in range(n_steps):
        z = math.ceil((z_min + z_max) / 2)
        threshold = order[z]
        kept = losses[confidence >= threshold]
        bound = _risk_bound(kept, level, n_levels)
        if bound < target_risk:
            best = (float(threshold), float(bound))  # z never rises: the lowest yet
            z_max = z
        else:
            z_min = z
    return best


def _fit_combiner(signals, losses, loss):
    """Fit signals -> confidence; ``None`` when the losses do not vary."""
    if np.ptp(losses) == 0:
        return None
    if loss == "zero_one":
        model, target = LogisticRegression(), losses == 0
    else:
        model, target = PoissonRegressor(alpha=1e-4, max_iter=1000), losses
    return make_pipeline(StandardScaler(), model).fit(signals, target)


def _combine(combiner, signals, reference):
    """Confidence from the combiner, or the mean standardised signal without one."""
    if combiner is None:
        scale = reference.std(axis=0)
        scale[~(scale > 0)] = 1.0
        return ((signals - reference.mean(axis=0)) / scale).mean(axis=1)
    if hasattr(combiner, "predict_proba"):
        return combiner.predict_proba(signals)[:, list(combiner.classes_).index(True)]
    return -combiner.predict(signals)


def _fold(estimator, X, y, train, test, signals, loss, n_passes, seed):
    """Fit on ``train``; predictions and signals on ``test``."""
    fitted = clone(estimator).fit(_safe_indexing(X, train), _safe_indexing(y, train))
    X_test = _safe_indexing(X, test)
    names = _check_signals(signals, fitted, loss)
    values = confidence_signals(
        fitted, X_test, names, loss=loss, n_passes=n_passes, random_state=seed
    )
    return fitted.predict(X_test), names, np.column_stack(list(values.values()))


def _estimator_has(attr):
    return lambda self: hasattr(getattr(self, "estimator_", self.estimator), attr)


class SelectiveClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Predict, and say which predictions to trust: a selective classifier.

    Around any classifier: out-of-fold :func:`confidence_signals` train a
    combiner (:meth:`confidence`), selection with guaranteed risk (Geifman &
    El-Yaniv, 2017) picks the threshold for ``target_risk``, and the base
    estimator is refitted on all the data (:ref:`reliability`).

    Parameters
    ----------
    estimator : estimator object
        A classifier with ``predict`` (and ``predict_proba`` for the
        probability signals), or a :class:`~cr_sklearn.CROrdinalRegressor`.
    signals : "auto", str or list of str, default="auto"
        The signals to combine; see :func:`confidence_signals`.
    cv : int, cross-validation generator or iterable, default=5
        The cross-fitting splits, as in ``cross_validate``.
    target_risk : float or None, default=None
        The selective risk to guarantee (an error rate, or a mean absolute
        error in ranks); ``None`` accepts every prediction.
    delta : float, default=0.05
        The guarantee holds with probability at least ``1 - delta``.
    loss : {"auto", "zero_one", "absolute"}, default="auto"
        The risk; ``"auto"``: the absolute error in ranks for ordinal models,
        the zero-one loss otherwise.
    n_passes : int, default=30
        Forward passes of the ``"mc_dropout"`` signal.
    n_jobs : int, default=None
        Folds fitted in parallel (joblib).
    random_state : int, RandomState instance or None, default=None
        Seeds the ``"mc_dropout"`` signal.

    Attributes
    ----------
    estimator_ : estimator
        The base estimator fitted on all the data.
    classes_ : ndarray of shape (n_classes,)
        The class labels (of ``estimator_``).
    signals_ : list of str
        The signals combined, in the column order of ``cv_signals_``.
    loss_ : str
        ``"zero_one"`` or ``"absolute"``.
    combiner_ : Pipeline or None
        The combiner fitted on the out-of-fold signals (a logistic regression
        of correctness, or a Poisson regression of the absolute error);
        ``None`` if every out-of-fold loss was the same.
    confidence_source_ : str
        ``"combined"`` or the signal whose out-of-fold AURC is lower.
    cv_aurc_ : dict
        Out-of-fold AURC of each signal and of ``"combined"``.
    threshold_ : float
        Predictions with ``confidence(X) >= threshold_`` are accepted; ``-inf``
        without ``target_risk``, ``inf`` (with a warning) when none meets it.
    risk_bound_, coverage_, cv_risk_ : float
        At ``threshold_``: the bound on the selective risk, and the share and
        risk of the out-of-fold predictions accepted (``nan`` when none is).
    cv_signals_, cv_confidence_, cv_loss_ : ndarray
        The out-of-fold signals, confidence and loss of each sample.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit, when ``X`` has them.

    See Also
    --------
    RiskCoverageDisplay : Plot the risk-coverage curve of the confidence.

    Notes
    -----
    The guarantee is exact for a model trained like the fold models;
    ``estimator_`` is trained on more data. For the absolute loss the bound is
    a union of binomial bounds (conservative). :meth:`score` is minus the AURC.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from cr_sklearn import SelectiveClassifier
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> selective = SelectiveClassifier(
    ...     LogisticRegression(), signals=["max_proba", "margin"], target_risk=0.1
    ... ).fit(X, y)
    >>> y_pred, accepted = selective.predict_selective(X)
    >>> bool(selective.risk_bound_ < 0.1), accepted.dtype
    (True, dtype('bool'))
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "signals": [str, list, tuple],
        "cv": ["cv_object"],
        "target_risk": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "delta": [Interval(numbers.Real, 0, 1, closed="neither")],
        "loss": [StrOptions({"auto", "zero_one", "absolute"})],
        "n_passes": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        *,
        signals="auto",
        cv=5,
        target_risk=None,
        delta=0.05,
        loss="auto",
        n_passes=30,
        n_jobs=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.signals = signals
        self.cv = cv
        self.target_risk = target_risk
        self.delta = delta
        self.loss = loss
        self.n_passes = n_passes
        self.n_jobs = n_jobs
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Cross-fit the signals, fit the combiner and the threshold, refit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, passed to the base estimator as it is.
        y : array-like of shape (n_samples,)
            Target labels.

        Returns
        -------
        self : SelectiveClassifier
            The fitted estimator.
        """
        if self.signals != "auto":
            _check_signals(self.signals)
        if not hasattr(X, "shape"):  # lists and other array-likes
            X = np.asarray(X)
        elif sparse.issparse(X) and X.format not in ("csr", "csc"):
            X = X.tocsr()  # row indexing for the folds
        validate_data(self, X, skip_check_array=True)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        check_consistent_length(X, y)
        loss = _resolve_loss(self.estimator, self.loss)
        splits = list(check_cv(self.cv, y, classifier=True).split(X, y))
        n = len(y)
        test_rows = np.concatenate([test for _, test in splits])
        if not np.array_equal(np.sort(test_rows), np.arange(n)):
            raise ValueError(
                "cv must put every sample in exactly one test fold (a partition, "
                "like KFold): the threshold is chosen on out-of-fold predictions."
            )
        seeds = check_random_state(self.random_state).randint(
            np.iinfo(np.int32).max, size=len(splits) + 1
        )
        args = (self.estimator, X, y)
        jobs = [
            delayed(_fold)(*args, train, test, self.signals, loss, self.n_passes, seed)
            for (train, test), seed in zip(splits, seeds[:-1], strict=True)
        ]
        jobs.append(delayed(clone(self.estimator).fit)(X, y))
        *folds, self.estimator_ = Parallel(n_jobs=self.n_jobs)(jobs)
        self.classes_ = self.estimator_.classes_
        self.loss_ = loss
        self._mc_seed = int(seeds[-1])
        names = {tuple(names) for _, names, _ in folds}
        if len(names) != 1:
            raise ValueError(
                f"The folds' models offer different signals ({sorted(names)}): "
                "pass signals explicitly."
            )
        self.signals_ = list(names.pop())
        inverse = np.argsort(test_rows)
        y_pred = np.concatenate([pred for pred, _, _ in folds])[inverse]
        self.cv_signals_ = np.vstack([values for _, _, values in folds])[inverse]
        labels = self.classes_ if loss == "absolute" else None
        self.cv_loss_ = _sample_losses(y, y_pred, loss, labels)
        if not np.all(np.isfinite(self.cv_signals_)):
            raise ValueError(
                "The out-of-fold signals contain non-finite values: check the "
                "base estimator's predictions."
            )
        # Each confidence from a combiner that did not see its sample.
        self.cv_confidence_ = np.empty(n)
        for _, test in splits:
            rest = np.setdiff1d(np.arange(n), test)
            combiner = _fit_combiner(self.cv_signals_[rest], self.cv_loss_[rest], loss)
            self.cv_confidence_[test] = _combine(
                combiner, self.cv_signals_[test], self.cv_signals_[rest]
            )
        self.combiner_ = _fit_combiner(self.cv_signals_, self.cv_loss_, loss)
        # A single signal that ranks the errors better is used alone.
        self.cv_aurc_ = areas = {
            name: _losses_area(self.cv_loss_, self.cv_signals_[:, j])
            for j, name in enumerate(self.signals_)
        }
        areas["combined"] = _losses_area(self.cv_loss_, self.cv_confidence_)
        self.confidence_source_ = min(areas, key=areas.get)
        if self.confidence_source_ != "combined":
            column = self.signals_.index(self.confidence_source_)
            self.cv_confidence_ = self.cv_signals_[:, column].copy()
        if self.target_risk is None:
            self.threshold_ = -np.inf
            self.risk_bound_ = _risk_bound(self.cv_loss_, self.delta, self._n_levels())
        else:
            self.threshold_, self.risk_bound_ = self.threshold_for_risk(
                self.target_risk
            )
            if not np.isfinite(self.threshold_):
                warnings.warn(
                    f"No threshold meets target_risk={self.target_risk} at "
                    f"delta={self.delta} on {len(self.cv_loss_)} out-of-fold "
                    "predictions: every prediction is rejected. Raise "
                    "target_risk or delta, or fit on more data.",
                    UserWarning,
                    stacklevel=3,
                )
        kept = self.cv_confidence_ >= self.threshold_
        self.coverage_ = float(kept.mean())
        self.cv_risk_ = float(self.cv_loss_[kept].mean()) if kept.any() else np.nan
        return self

    def _n_levels(self):
        return 1 if self.loss_ == "zero_one" else max(1, len(self.classes_) - 1)

    def threshold_for_risk(self, target_risk, *, delta=None):
        """The guaranteed-risk threshold for another target, without refitting.

        Parameters
        ----------
        target_risk : float
            The selective risk to guarantee (positive).
        delta : float, default=None
            The guarantee's failure probability; the ``delta`` parameter by default.

        Returns
        -------
        threshold : float
            Accept ``confidence(X) >= threshold``; ``inf`` when none meets the target.
        risk_bound : float
            The bound on the selective risk at ``threshold`` (``nan`` without one).
        """
        check_is_fitted(self)
        delta = self.delta if delta is None else delta
        if not isinstance(target_risk, numbers.Real) or not target_risk > 0:
            raise ValueError(f"target_risk must be positive, got {target_risk!r}.")
        if not isinstance(delta, numbers.Real) or not 0 < delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
        return _guaranteed_risk_threshold(
            self.cv_confidence_,
            self.cv_loss_,
            float(target_risk),
            float(delta),
            self._n_levels(),
        )

    def predict(self, X):
        """Predict with the refitted base estimator (rejecting none).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels; :meth:`predict_selective` says which to trust.
        """
        check_is_fitted(self)
        return self.estimator_.predict(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the refitted base estimator.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to classify.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    def _gradient_estimator(self):
        # gradient_norms and DREGScorer differentiate the refitted estimator.
        check_is_fitted(self)
        return self.estimator_

    def confidence(self, X):
        """The confidence in each prediction (higher = trust more).

        The combiner's probability that the prediction is right (minus its expected
        absolute error), or the signal ``confidence_source_`` names.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples whose predictions to judge.

        Returns
        -------
        confidence : ndarray of shape (n_samples,)
            Compare with ``threshold_``.
        """
        check_is_fitted(self)
        values = confidence_signals(
            self.estimator_,
            X,
            self.signals_,
            loss=self.loss_,
            n_passes=self.n_passes,
            random_state=self._mc_seed,
        )
        if self.confidence_source_ != "combined":
            return np.asarray(values[self.confidence_source_], dtype=float)
        signals = np.column_stack(list(values.values()))
        return _combine(self.combiner_, signals, self.cv_signals_)

    def predict_selective(self, X):
        """Predict, and tell which predictions are accepted.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as :meth:`predict` and :meth:`confidence` take them.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels (as :meth:`predict`).
        accepted : ndarray of shape (n_samples,) of bool
            ``confidence(X) >= threshold_``: the predictions the guarantee covers.
        """
        return self.predict(X), self.confidence(X) >= self.threshold_

    def score(self, X, y, sample_weight=None):
        """Return minus the AURC of :meth:`confidence` on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to score.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            ``-aurc_score`` with the loss ``loss_``: greater is better.
        """
        return -aurc_score(
            y,
            self.predict(X),
            self.confidence(X),
            sample_weight=sample_weight,
            loss=self.loss_,
            labels=self.classes_ if self.loss_ == "absolute" else None,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base = get_tags(self.estimator)
        tags.input_tags.sparse = base.input_tags.sparse
        tags.input_tags.allow_nan = base.input_tags.allow_nan
        return tags
