"""The gradient tail ratio tau, per-sample gradient norms and DREGScorer.

Everything here duck-types estimators (``input_gradient_norms``,
``decision_function``, ``predict_proba``) and imports none of them, so the
same scorer compares CR networks with any other model family.
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

__all__ = ["DREGScorer", "gradient_norms", "gradient_tail_ratio"]

# Rows x features per finite-difference evaluation chunk (bounded memory).
_FD_CHUNK_ELEMENTS = 2**22
_LOG_EPS = 1e-12


def gradient_tail_ratio(norms, q=99):
    """Gradient tail ratio tau: the ``q``-th percentile of norms over their mean.

    tau is 1 for a model whose input gradient has the same norm everywhere
    (e.g. a linear model) and grows when a few samples see much steeper
    gradients than the typical one.

    Parameters
    ----------
    norms : array-like of shape (n_samples,) or sequence of array-like
        Per-sample input-gradient norms, e.g. from
        ``estimator.input_gradient_norms(X)`` or :func:`gradient_norms`. A
        sequence of arrays (one per cross-validation fold) is *pooled*: each
        array is divided by its own mean (removing the scale of each fold's
        model) and the results are concatenated before taking the ratio.
        Pooling matters for small test folds: on ~150 rows the 99th
        percentile is close to the maximum and tau per fold is noisy.
    q : float, default=99
        Percentile in ``[0, 100]``.

    Returns
    -------
    tau : float
        ``percentile(norms, q) / mean(norms)``; ``nan`` if every norm is 0
        (a locally constant model, e.g. a tree ensemble between its splits).
        When pooling, a fold whose norms are all 0 has no scale to divide by:
        it is left out, with a warning, and tau is ``nan`` if no fold is
        left. The ratio is computed on norms divided by their maximum, so
        norms near the float64 limit do not overflow.

    Examples
    --------
    >>> from cr_sklearn import gradient_tail_ratio
    >>> gradient_tail_ratio([1.0, 1.0, 1.0, 1.0])
    1.0
    >>> round(gradient_tail_ratio([1.0, 1.0, 1.0, 5.0], q=100), 2)
    2.5
    >>> gradient_tail_ratio([[1.0, 3.0], [10.0, 30.0]], q=100)
    1.5
    """
    if not isinstance(q, numbers.Real) or not 0 <= q <= 100:
        raise ValueError(f"q must be a number in [0, 100], got {q!r}.")
    if _is_sequence_of_arrays(norms):
        parts = [_check_norms(part) for part in norms]
        flat = [i for i, part in enumerate(parts) if not part.max() > 0]
        if flat:
            warnings.warn(
                f"gradient_tail_ratio: fold(s) {flat} of {len(parts)} have only "
                "zero gradient norms (a locally constant model) and are left out "
                "of the pooled tau.",
                UserWarning,
                stacklevel=2,
            )
        kept = [_scaled_by_mean(p) for i, p in enumerate(parts) if i not in flat]
        if not kept:
            return float("nan")
        norms = np.concatenate(kept)
    else:
        norms = _check_norms(norms)
    top = norms.max()
    if not top > 0:
        return float("nan")
    # In [0, 1] after dividing by the maximum: the mean cannot overflow.
    scaled = norms / top
    return float(np.percentile(scaled, q) / scaled.mean())


def _is_sequence_of_arrays(norms):
    if isinstance(norms, np.ndarray):
        return norms.dtype == object
    return (
        isinstance(norms, list | tuple)
        and len(norms) > 0
        and all(np.ndim(part) == 1 for part in norms)
    )


def _check_norms(norms):
    norms = np.asarray(norms, dtype=np.float64)
    if norms.ndim != 1 or norms.size == 0:
        raise ValueError(
            f"norms must be a non-empty 1-d array, got shape {norms.shape}."
        )
    if not np.all(np.isfinite(norms)) or np.any(norms < 0):
        raise ValueError("norms must be finite and non-negative.")
    return norms


def _scaled_by_mean(norms):
    """``norms / mean(norms)`` (mean > 0), without overflow."""
    scaled = norms / norms.max()
    return scaled / scaled.mean()


def _cr_step(estimator):
    """The estimator whose analytic norms apply, and the steps before it."""
    if isinstance(estimator, Pipeline):
        last = estimator.steps[-1][1]
        if hasattr(last, "input_gradient_norms"):
            return last, estimator[:-1]
        return None, None
    if hasattr(estimator, "input_gradient_norms"):
        return estimator, None
    return None, None


def _response(estimator, response_method):
    """A function ``X -> (n_samples, n_outputs)`` to differentiate."""
    if response_method == "auto":
        if hasattr(estimator, "decision_function"):
            response_method = "decision_function"
        elif hasattr(estimator, "predict_proba"):
            response_method = "log_proba"
        else:
            response_method = "predict"
    if response_method in ("log_proba", "predict_proba") and not hasattr(
        estimator, "predict_proba"
    ):
        raise ValueError(
            f"response_method={response_method!r} differentiates predict_proba, "
            f"which {type(estimator).__name__} does not have; use 'auto', "
            "'decision_function' or 'predict'."
        )
    if response_method == "log_proba":

        def function(X):
            proba = np.clip(estimator.predict_proba(X), _LOG_EPS, 1.0)
            logp = np.log(proba)
            if logp.shape[1] == 2:
                return (logp[:, 1] - logp[:, 0])[:, None]
            return logp - logp.mean(axis=1, keepdims=True)

        return function
    if response_method == "predict_proba":

        def function(X):
            proba = estimator.predict_proba(X)
            return proba[:, 1:] if proba.shape[1] == 2 else proba

        return function
    method = getattr(estimator, response_method, None)
    if method is None:
        raise ValueError(
            f"{type(estimator).__name__} has no {response_method!r} method to "
            "differentiate."
        )

    def function(X):
        out = np.asarray(method(X), dtype=np.float64)
        return out.reshape(out.shape[0], -1)

    return function


def gradient_norms(estimator, X, *, response_method="auto", step=1e-3):
    """Per-sample norm of the input gradient of a fitted estimator's output.

    - CR estimators (anything with ``input_gradient_norms``): analytic, the
      Frobenius norm of :meth:`~cr_sklearn.CRClassifier.jacobian` (logits,
      or the latent score of :class:`~cr_sklearn.CROrdinalRegressor`).
    - A :class:`~sklearn.pipeline.Pipeline` ending in a CR estimator: ``X``
      goes through the preceding steps and the analytic gradient is taken
      with respect to the *last step's input* (the transformed features), not
      the raw ``X``.
    - Any other fitted estimator (including other pipelines): central finite
      differences ``(f(x + h_j e_j) - f(x - h_j e_j)) / (2 h_j)`` per feature
      ``j``, with ``h_j = step * std_j`` (``std_j`` the standard deviation of
      column ``j`` of ``X``, or 1 for a constant column), evaluated in
      batches of ``2 * n_features`` perturbed copies.

    Parameters
    ----------
    estimator : fitted estimator
        The model.
    X : array-like of shape (n_samples, n_features)
        Points at which the gradient is taken.
    response_method : {"auto", "decision_function", "log_proba", \
            "predict_proba", "predict"}, default="auto"
        What is differentiated for non-CR estimators. ``"auto"``:
        ``decision_function`` if the estimator has one, else ``"log_proba"``
        (the log-odds for two classes, centred log-probabilities otherwise,
        so that tau is on the logit scale like a CR network's), else
        ``predict``. ``"predict_proba"`` uses the probability of the positive
        class for two classes, all columns otherwise. Ignored for CR
        estimators.
    step : float, default=1e-3
        Relative finite-difference step (see above): finite, at least 1e-12.

    Returns
    -------
    norms : ndarray of shape (n_samples,)
        The Frobenius norm of each sample's Jacobian of the output.

    Raises
    ------
    ValueError
        If ``response_method`` is not one of the above, asks for
        ``predict_proba`` of an estimator without one, or ``step`` is not a
        finite number of at least 1e-12 (checked for every estimator).

    Notes
    -----
    Piecewise-constant models (tree ensembles) have zero gradient almost
    everywhere and jumps elsewhere, so their finite-difference norms depend
    on ``step``; read their tau as a property of that step.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from cr_sklearn import gradient_norms
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]])
    >>> lr = LogisticRegression().fit(X, [0, 0, 1, 1])
    >>> bool(np.allclose(gradient_norms(lr, X), np.linalg.norm(lr.coef_)))
    True
    """
    # Checked for every estimator, also where they are not used (CR ones):
    # a typo or a NaN step should not pass silently.
    _check_response_method(response_method)
    step = _check_step(step)
    check_is_fitted(estimator)
    cr, before = _cr_step(estimator)
    if cr is not None:
        Xt = X if before is None else before.transform(X)
        return np.asarray(cr.input_gradient_norms(Xt), dtype=np.float64)
    return _finite_difference_norms(
        _response(estimator, response_method), X, float(step)
    )


_RESPONSE_METHODS = (
    "auto",
    "decision_function",
    "log_proba",
    "predict_proba",
    "predict",
)
# Relative steps below this drown the difference f(x + h) - f(x - h) in
# float64 rounding (and tiny ones underflow to h = 0).
_MIN_STEP = 1e-12


def _check_response_method(response_method):
    if not isinstance(response_method, str) or response_method not in (
        _RESPONSE_METHODS
    ):
        raise ValueError(
            f"response_method must be one of {list(_RESPONSE_METHODS)}, got "
            f"{response_method!r}."
        )


def _check_step(step):
    if (
        not isinstance(step, numbers.Real)
        or isinstance(step, bool)
        or not math.isfinite(step)
        or step <= 0
    ):
        raise ValueError(f"step must be a finite number > 0, got {step!r}.")
    if step < _MIN_STEP:
        raise ValueError(
            f"step={step!r} is below {_MIN_STEP:g}: the finite differences "
            "would be lost in float64 rounding. Use a relative step such as "
            "1e-3 (the default)."
        )
    return float(step)


def _finite_difference_norms(function, X, step):
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d, got shape {X.shape}.")
    n, d = X.shape
    scale = X.std(axis=0)
    scale[~np.isfinite(scale) | (scale == 0)] = 1.0
    h = step * scale
    squared = np.zeros(n)
    # Perturb a block of features at a time: 2 * n * block rows per call.
    block = max(1, _FD_CHUNK_ELEMENTS // max(1, 2 * n * d))
    for start in range(0, d, block):
        feats = np.arange(start, min(d, start + block))
        k = len(feats)
        shifts = np.zeros((2 * k, d))
        shifts[np.arange(k), feats] = h[feats]
        shifts[k + np.arange(k), feats] = -h[feats]
        batch = (X[None, :, :] + shifts[:, None, :]).reshape(2 * k * n, d)
        out = function(batch).reshape(2 * k, n, -1)
        grad = (out[:k] - out[k:]) / (2 * h[feats])[:, None, None]
        squared += np.square(grad).sum(axis=(0, 2))
    return np.sqrt(squared)


class DREGScorer:
    """Scorer of the gradient tail ratio tau, following sklearn's protocol.

    ``scorer(estimator, X, y=None) -> float`` computes per-sample
    input-gradient norms on ``X`` with :func:`gradient_norms` (analytic for
    CR estimators and pipelines ending in one, finite differences for any
    other model) and returns :func:`gradient_tail_ratio`. It works wherever
    sklearn accepts a scoring callable: ``cross_validate(scoring=...)``,
    ``GridSearchCV(scoring={...})`` and the study tables.

    Parameters
    ----------
    q : float, default=99
        Percentile of the tail; ``q=99`` is the paper's tau (p99/mean). On
        small test folds (~150 rows) p99 is close to the maximum: prefer
        ``q=95``, or pool norms across folds (see Notes).
    negate : bool, default=False
        ``False`` returns tau itself, for reporting. ``True`` returns
        ``-tau`` so that greater is better, for *selecting* models with a
        low tau (sklearn's ``neg_`` convention), e.g. as a ``refit`` metric.
    response_method : str, default="auto"
        What is differentiated for non-CR estimators; see
        :func:`gradient_norms`.
    step : float, default=1e-3
        Relative finite-difference step for non-CR estimators (finite, at
        least 1e-12); see :func:`gradient_norms`.

    See Also
    --------
    gradient_tail_ratio : Tau from norms, with pooling across folds.
    gradient_norms : The per-sample norms this scorer summarises.

    Notes
    -----
    Pooling across folds: ``cross_validate(..., return_estimator=True,
    return_indices=True)``, then ``gradient_tail_ratio([gradient_norms(est,
    X[test]) for est, test in ...])`` pools the folds' norms, each scaled by
    its own mean.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> from cr_sklearn import DREGScorer
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> search = GridSearchCV(
    ...     LogisticRegression(), {"C": [0.1, 1.0]},
    ...     scoring={"accuracy": "accuracy", "tau": DREGScorer(),
    ...              "neg_tau": DREGScorer(negate=True)},
    ...     refit="accuracy", cv=3).fit(X, y)
    >>> [float(round(t, 6)) for t in search.cv_results_["mean_test_tau"]]
    [1.0, 1.0]
    """

    def __init__(self, q=99, *, negate=False, response_method="auto", step=1e-3):
        self.q = q
        self.negate = negate
        self.response_method = response_method
        self.step = step

    def __call__(self, estimator, X, y=None, **kwargs):
        """Tau (or ``-tau`` with ``negate=True``) of ``estimator`` on ``X``.

        Parameters
        ----------
        estimator : fitted estimator
            The model to score.
        X : array-like of shape (n_samples, n_features)
            Samples at which the gradients are taken.
        y : array-like, default=None
            Ignored; accepted for the scorer protocol.
        **kwargs : dict
            Ignored (e.g. ``sample_weight``).

        Returns
        -------
        score : float
        """
        norms = gradient_norms(
            estimator, X, response_method=self.response_method, step=self.step
        )
        tau = gradient_tail_ratio(norms, q=self.q)
        return -tau if self.negate else tau

    def __repr__(self):
        sign = ", negate=True" if self.negate else ""
        return f"DREGScorer(q={self.q}{sign})"


# -- ordinal metrics and scorers -------------------------------------------
