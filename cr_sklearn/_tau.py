"""The gradient tail ratio tau, per-sample gradient norms and DREGScorer."""

import math
import numbers
import warnings

import numpy as np
from scipy import sparse
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

__all__ = ["DREGScorer", "gradient_norms", "gradient_tail_ratio"]

# Rows x features per finite-difference evaluation chunk (bounded memory).
_FD_CHUNK_ELEMENTS = 2**22
_LOG_EPS = 1e-12
# Smaller relative steps drown f(x + h) - f(x - h) in float64 rounding.
_MIN_STEP = 1e-12
# float32: the step balancing rounding (eps / h) and truncation (h ** 2).
_FLOAT32_STEP = float(np.finfo(np.float32).eps) ** (1.0 / 3.0)
_RESPONSE_METHODS = "auto decision_function log_proba predict_proba predict".split()


def gradient_tail_ratio(norms, q=99):
    """Gradient tail ratio tau: the ``q``-th percentile of norms over their mean.

    tau is 1 when the input gradient has the same norm everywhere (a linear
    model) and grows when a few samples see much steeper gradients; see
    :ref:`tau`.

    Parameters
    ----------
    norms : array-like of shape (n_samples,) or sequence of array-like
        Per-sample input-gradient norms, e.g. from :func:`gradient_norms`. A
        sequence of arrays (one per fold) is *pooled*: each is divided by its
        own mean, then they are concatenated.
    q : float, default=99
        Percentile in ``[0, 100]``.

    Returns
    -------
    tau : float
        ``percentile(norms, q) / mean(norms)``; ``nan``, with a warning, if
        every norm is 0. A pooled fold of zero norms is left out, with a warning.

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
        # Each fold over its own mean; over its maximum first, so no overflow.
        kept = [p / p.max() for i, p in enumerate(parts) if i not in flat]
        if not kept:
            return float("nan")
        norms = np.concatenate([p / p.mean() for p in kept])
    else:
        norms = _check_norms(norms)
    top = norms.max()
    if not top > 0:
        warnings.warn(
            "gradient_tail_ratio: every gradient norm is 0 (a locally constant "
            "model, e.g. a tree ensemble whose splits lie farther than the "
            "finite-difference step from every sample); tau is nan.",
            UserWarning,
            stacklevel=2,
        )
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


def _resolve(estimator):
    """The fitted model differentiated for ``estimator`` (search, meta-estimator)."""
    for _ in range(32):
        inner = getattr(estimator, "best_estimator_", None)
        if inner is None and hasattr(estimator, "_gradient_estimator"):
            inner = estimator._gradient_estimator()
        if inner is None:
            return estimator
        estimator = inner
    return estimator


def _final_input(estimator, X):
    """``(model, X_model)``: the final step of pipelines and what it reads."""
    estimator = _resolve(estimator)
    while isinstance(estimator, Pipeline):
        if len(estimator.steps) > 1:
            X = estimator[:-1].transform(X)
        estimator = _resolve(estimator.steps[-1][1])
    return estimator, X


def _column_scale(X):
    """Each column's standard deviation, or 1 without spread: the norms' unit."""
    with warnings.catch_warnings():
        # An all-missing column has no scale: it gets 1 below.
        warnings.simplefilter("ignore", RuntimeWarning)
        if sparse.issparse(X):
            X = X.tocsc().astype(np.float64)
            top = np.asarray(abs(X).max(axis=0).todense()).ravel()
            unit = np.where(top > 0, top, 1.0)
            Xs = X @ sparse.diags(1.0 / unit)
            mean = np.asarray(Xs.mean(axis=0)).ravel()
            squares = np.asarray(Xs.multiply(Xs).mean(axis=0)).ravel()
            scale = np.sqrt(np.maximum(squares - mean**2, 0.0)) * unit
        else:
            X = np.asarray(_numeric(X), dtype=np.float64)
            top = np.nanmax(np.abs(X), axis=0) if X.shape[0] else np.ones(X.shape[1])
            unit = np.where(np.isfinite(top) & (top > 0), top, 1.0)
            scale = np.nanstd(X / unit, axis=0) * unit
    scale = np.array(scale, dtype=np.float64)
    scale[~(np.isfinite(scale) & (scale > 0))] = 1.0
    return scale


def _numeric(X):
    """``X`` as a 2-d float array: float32 kept as such, anything else float64."""
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    dtype = np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64
    try:
        X = np.asarray(X, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            "gradient_norms needs numeric input to differentiate by, and the "
            f"model's input is not ({exc}). Put the model last in a Pipeline "
            "whose earlier steps encode the non-numeric columns (e.g. a "
            "ColumnTransformer with a OneHotEncoder): the gradient is then "
            "taken with respect to the final step's numeric input."
        ) from None
    if X.ndim != 2:
        raise ValueError(f"X must be a 2D array, got shape {X.shape}.")
    return X


def _response(estimator, response_method):
    """A function ``X -> (n_samples, n_outputs)`` to differentiate."""
    if response_method == "auto":
        if hasattr(estimator, "decision_function"):
            response_method = "decision_function"
        elif hasattr(estimator, "predict_proba"):
            response_method = "log_proba"
        else:
            response_method = "predict"
    proba = response_method in ("log_proba", "predict_proba")
    method = getattr(estimator, "predict_proba" if proba else response_method, None)
    if method is None and proba:
        raise ValueError(
            f"response_method={response_method!r} differentiates predict_proba, "
            f"which {type(estimator).__name__} does not have; use 'auto', "
            "'decision_function' or 'predict'."
        )
    if method is None:
        raise ValueError(
            f"{type(estimator).__name__} has no {response_method!r} method to "
            "differentiate."
        )

    def function(X):
        out = method(X)
        if response_method == "log_proba":
            logp = np.log(np.clip(out, _LOG_EPS, 1.0))
            if logp.shape[1] == 2:
                return (logp[:, 1] - logp[:, 0])[:, None]
            return logp - logp.mean(axis=1, keepdims=True)
        if response_method == "predict_proba":
            return out[:, 1:] if out.shape[1] == 2 else out
        out = np.asarray(out, dtype=np.float64)
        out = out.reshape(out.shape[0], -1)
        if response_method == "decision_function" and out.shape[1] > 1:
            # Centred, as the log-probabilities: a shared shift is ignored.
            out = out - out.mean(axis=1, keepdims=True)
        return out

    return function


def gradient_norms(estimator, X, *, response_method="auto", step=1e-3, scale=None):
    """Per-sample input-gradient norm of a fitted estimator, one rule for all.

    ``||J_i diag(s)||_F``: ``J_i`` the Jacobian of the output in what the model
    reads (a pipeline's final step's input), ``s_j`` column ``j``'s standard
    deviation; analytic for CR estimators, central differences (``h_j = step *
    s_j``) for any other. See :ref:`tau`.

    Parameters
    ----------
    estimator : fitted estimator
        The model, a pipeline ending in one, or a meta-estimator.
    X : array-like of shape (n_samples, n_features)
        Points at which the gradient is taken (what ``predict`` takes).
    response_method : {"auto", "decision_function", "log_proba", \
            "predict_proba", "predict"}, default="auto"
        What is differentiated for non-CR estimators. ``"auto"``:
        ``decision_function`` if there is one (several scores centred), else
        ``"log_proba"`` (the log-odds, or centred log-probabilities), else
        ``predict``. ``"predict_proba"``: the positive class's probability for
        two classes, all columns otherwise.
    step : float, default=1e-3
        Relative finite-difference step: finite, at least 1e-12.
    scale : float or array-like of shape (n_final_features,), default=None
        The unit of each column of the final step's input; ``None``: its
        standard deviation in ``X``. ``1.0`` (raw units) makes a sample's norm
        independent of the batch.

    Returns
    -------
    norms : ndarray of shape (n_samples,)
        The Frobenius norm of each sample's Jacobian, columns in units of
        ``scale``.

    Raises
    ------
    ValueError
        For a bad ``response_method``, ``step`` or ``scale``, non-numeric model
        input, or a column's step lost in rounding or overflowing.

    See Also
    --------
    cr_sklearn.CRClassifier.input_gradient_norms : The analytic norms, with
        the training standard deviations as the default scale.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from cr_sklearn import gradient_norms
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]])
    >>> lr = LogisticRegression().fit(X, [0, 0, 1, 1])
    >>> expected = np.linalg.norm(lr.coef_ * X.std(axis=0))
    >>> bool(np.allclose(gradient_norms(lr, X), expected))
    True
    """
    # Checked also for CR estimators, which do not use them.
    if not isinstance(response_method, str) or response_method not in _RESPONSE_METHODS:
        raise ValueError(
            f"response_method must be one of {_RESPONSE_METHODS}, got "
            f"{response_method!r}."
        )
    step = _check_step(step)
    check_is_fitted(estimator)
    model, Xt = _final_input(estimator, X)
    scale = _check_scale(scale, Xt)
    if hasattr(model, "input_gradient_norms"):
        return np.asarray(model.input_gradient_norms(Xt, scale=scale), dtype=np.float64)
    function = _response(model, response_method)
    names = getattr(model, "feature_names_in_", None)
    if names is not None and len(names) != Xt.shape[1]:
        names = None
    return _finite_difference_norms(function, Xt, step, scale, names)


def _check_scale(scale, Xt):
    """``scale`` as one positive unit per column of ``Xt`` (its spread if None)."""
    if scale is None:
        return _column_scale(Xt)
    n_features = np.shape(Xt)[1]
    try:
        values = np.broadcast_to(np.asarray(scale, dtype=np.float64), (n_features,))
    except (TypeError, ValueError):
        values = None
    if values is None or not np.all(np.isfinite(values) & (values >= 0)):
        raise ValueError(
            "scale must be None, a number or one number per column of the "
            f"final step's input ({n_features}), finite and non-negative; got "
            f"{scale!r:.80}."
        )
    return np.array(values)


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


def _finite_difference_norms(function, X, step, scale, names=None):
    """``||J diag(s)||_F`` per row by central differences over the rounded steps."""
    is_sparse = sparse.issparse(X)
    if is_sparse:
        fmt = X.format
        X = X.tocsr().astype(np.float32 if X.dtype == np.float32 else np.float64)
    else:
        X = _numeric(X)
    if names is not None:
        try:
            import pandas as pd
        except ImportError:  # a model fitted on another frame library: names lost
            names = None
    n, d = X.shape
    # float64 first unless the input is float32; float32 if float64 is refused.
    dtypes = [np.float32] if X.dtype == np.float32 else [np.float64, np.float32]
    norms = np.empty(n)
    # Chunks of rows (and for wide inputs blocks of columns) bound the memory.
    rows = max(1, _FD_CHUNK_ELEMENTS // max(1, 2 * d * d))
    block = max(1, _FD_CHUNK_ELEMENTS // max(1, 2 * min(rows, n) * d))

    def evaluate(batch):
        if is_sparse:
            batch = sparse.csr_matrix(batch).asformat(fmt)
        elif names is not None:
            batch = pd.DataFrame(batch, columns=names, copy=False)
        return np.asarray(function(batch), dtype=np.float64)

    for r0 in range(0, n, rows):
        chunk = X[r0 : r0 + rows]
        chunk = chunk.toarray() if is_sparse else chunk
        m = chunk.shape[0]
        total = np.zeros(m)
        for start in range(0, d, block):
            args = (evaluate, chunk, np.arange(start, min(d, start + block)), step)
            try:
                grad = _block_differences(*args, scale, dtypes[0])
            except (RuntimeError, TypeError, ValueError) as exc:
                if len(dtypes) == 1 or isinstance(exc, _StepError):
                    raise
                try:  # the model may accept float32 only
                    grad = _block_differences(*args, scale, dtypes[1])
                except (RuntimeError, TypeError, ValueError):
                    raise exc from None
                dtypes = dtypes[1:]
            total = np.hypot(total, _row_norms(grad))
        norms[r0 : r0 + m] = total
    return norms


def _row_norms(grad):
    """Per row ``m`` the norm of ``grad[:, m, :]``, scaled so squares never overflow."""
    peak = np.abs(grad).max(axis=(0, 2))
    safe = np.where(peak > 0, peak, 1.0)
    return peak * np.sqrt(np.square(grad / safe[None, :, None]).sum(axis=(0, 2)))


class _StepError(ValueError):
    """A finite-difference step that rounding or overflow makes meaningless."""


def _block_differences(evaluate, chunk, feats, step, scale, dtype):
    """Scaled difference quotients ``d f / d x_j * s_j``: (k, m, n_outputs)."""
    if dtype == np.float32:
        step = max(step, _FLOAT32_STEP)
    h = (step * scale).astype(dtype)
    k, m, d = len(feats), chunk.shape[0], chunk.shape[1]
    shifts = np.zeros((2 * k, d), dtype=dtype)
    shifts[np.arange(k), feats] = h[feats]
    shifts[k + np.arange(k), feats] = -h[feats]
    with np.errstate(over="ignore", invalid="ignore"):
        batch = chunk.astype(dtype, copy=False)[None, :, :] + shifts[:, None, :]
        # The step as rounded in this dtype, per row and column.
        realised = (
            batch[np.arange(k), :, feats] - batch[k + np.arange(k), :, feats]
        ).astype(np.float64)
    given = np.isfinite(chunk[:, feats].T)  # missing values: no derivative
    stepped = h[feats].astype(np.float64)[:, None] > 0
    bad = given & stepped & ~(np.isfinite(realised) & (realised > 0))
    if bad.any():
        j = int(feats[np.argwhere(bad)[0, 0]])
        top = float(np.nanmax(np.abs(chunk[:, j])))
        raise _StepError(
            f"gradient_norms: the finite-difference step of column {j} "
            f"({float(h[j]):.3g}, {step:g} times its scale) is lost in "
            f"{np.dtype(dtype).name} rounding or overflows at its values (up to "
            f"{top:.3g} in magnitude). Standardise the column (e.g. a "
            "StandardScaler before the model) or pass a larger step."
        )
    out = evaluate(batch.reshape(2 * k * m, d)).reshape(2 * k, m, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(given & stepped, scale[feats, None] / realised, 0.5 / step)
    # 0 for a column of scale 0 (no step, no difference) and missing values.
    factor = np.where(stepped, factor, 0.0)
    return (out[:k] - out[k:]) * factor[:, :, None]


class DREGScorer:
    """Scorer of the gradient tail ratio tau, following sklearn's protocol.

    ``scorer(estimator, X, y=None)`` returns :func:`gradient_tail_ratio` of
    :func:`gradient_norms` on ``X``, wherever sklearn accepts a scoring callable.

    Parameters
    ----------
    q : float, default=99
        Percentile of the tail (the paper's tau is p99/mean); on small test
        folds prefer ``q=95``, or pool norms across folds (see Notes).
    negate : bool, default=False
        Return ``-tau``, so that greater is better (sklearn's ``neg_``).
    response_method, step : optional
        For non-CR estimators, as in :func:`gradient_norms`.

    Notes
    -----
    To pool across folds: ``cross_validate(..., return_estimator=True,
    return_indices=True)``, then ``gradient_tail_ratio([gradient_norms(est,
    X[test]) for est, test in ...])``.

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
        """Tau (or ``-tau`` with ``negate=True``) of ``estimator`` on ``X``."""
        norms = gradient_norms(
            estimator, X, response_method=self.response_method, step=self.step
        )
        tau = gradient_tail_ratio(norms, q=self.q)
        return -tau if self.negate else tau

    def __repr__(self):
        sign = ", negate=True" if self.negate else ""
        return f"DREGScorer(q={self.q}{sign})"
