"""Confidence signals of fitted estimators (duck-typed): higher means more trusted."""

import copy
import functools
import numbers

import numpy as np
import torch
from sklearn.pipeline import Pipeline
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted

from cr_sklearn._tau import gradient_norms

from ._metrics import _check_loss_option, _positions

__all__ = ["confidence_signals"]

#: Names of the signals :func:`confidence_signals` computes.
SIGNALS = tuple(
    "max_proba margin input_sensitivity input_distance mc_dropout "
    "member_disagreement gradient_norm confidence".split()
)
_CR_SIGNALS = SIGNALS[2:6]  # input_sensitivity to member_disagreement
_MC_CHUNK_ROWS = 4096  # rows per block of the dropout passes and members


def _final_step(estimator):
    return estimator[-1] if isinstance(estimator, Pipeline) else estimator


def _innermost(estimator):
    """The model that decides the task: through pipelines and meta-estimators."""
    for _ in range(10):
        estimator = _final_step(estimator)
        if hasattr(estimator, "predict_cumulative_proba"):
            return estimator
        inner = getattr(estimator, "estimator_", None)
        if inner is None:
            inner = getattr(estimator, "estimator", None)
        if inner is None or isinstance(inner, str):
            return estimator
        estimator = inner
    return estimator


def _is_ordinal(estimator):
    """Whether ``estimator`` (fitted or not) is an ordinal model like CR's."""
    return hasattr(_innermost(estimator), "predict_cumulative_proba")


def _resolve_loss(estimator, loss):
    """``"auto"``: the absolute (rank) error for ordinal models, else zero-one."""
    _check_loss_option(loss)
    if loss != "auto":
        return loss
    return "absolute" if _is_ordinal(estimator) else "zero_one"


def _is_cr(estimator):
    return all(hasattr(estimator, m) for m in ("input_sensitivity", "input_distance"))


def _has_dropout(estimator):
    # The rate the network was built with (``"auto"`` resolved), if fitted.
    dropout = getattr(estimator, "dropout_", getattr(estimator, "dropout", 0))
    return isinstance(dropout, numbers.Real) and dropout > 0


def _n_members(estimator):
    """Members of a fitted CR estimator's network (1 without a member axis)."""
    module = getattr(estimator, "module_", None)
    return getattr(module, "n_members", None) or 1


def _auto_signals(estimator, loss):
    final = _final_step(estimator)
    names = []
    if hasattr(estimator, "confidence"):
        names.append("confidence")
    if hasattr(estimator, "predict_proba"):
        names.append("max_proba")
        # With two classes the margin 2 p - 1 ranks exactly like p.
        if loss == "absolute" or len(getattr(estimator, "classes_", ())) != 2:
            names.append("margin")
    if _is_cr(final):
        names += ["input_sensitivity", "input_distance"]
        if _has_dropout(final):
            names.append("mc_dropout")
        if _n_members(final) > 1:
            names.append("member_disagreement")
    elif "confidence" not in names:
        names.append("gradient_norm")
    return names


def _check_signals(signals, estimator=None, loss="auto"):
    """A list of signal names (``"auto"`` needs the fitted ``estimator``)."""
    if isinstance(signals, str):
        if signals == "auto":
            if estimator is None:
                raise ValueError("signals='auto' needs a fitted estimator.")
            return _auto_signals(estimator, _resolve_loss(estimator, loss))
        signals = [signals]
    try:
        signals = list(signals)
    except TypeError:
        raise TypeError(
            f"signals must be 'auto', a signal name or a list of names, got "
            f"{signals!r}."
        ) from None
    if not signals:
        raise ValueError("signals must not be empty.")
    for name in signals:
        if not isinstance(name, str) or name not in SIGNALS:
            raise ValueError(
                f"Unknown signal {name!r}; choose from {list(SIGNALS)} or 'auto'."
            )
    if len(set(signals)) != len(signals):
        raise ValueError(f"signals has duplicates: {signals}.")
    return signals


def _probability_signals(proba, pred, loss, median):
    """``(max_proba, margin)`` of the predicted positions ``pred``."""
    n, k = proba.shape
    rows = np.arange(n)
    p_pred = proba[rows, pred]
    others = proba.copy()
    others[rows, pred] = -np.inf
    runner_up = others.max(axis=1) if k > 1 else np.zeros(n)
    if loss == "zero_one":
        return p_pred, p_pred - runner_up
    padded = np.pad(proba, ((0, 0), (1, 1)))
    within_one = padded[rows, pred] + padded[rows, pred + 1] + padded[rows, pred + 2]
    if not median:
        return within_one, p_pred - runner_up
    cumulative = np.cumsum(proba, axis=1)
    below = np.where(pred > 0, cumulative[rows, np.maximum(pred - 1, 0)], 0.0)
    at = np.where(pred < k - 1, cumulative[rows, pred], 1.0)
    return within_one, np.minimum(at - 0.5, 0.5 - below)


def _mc_dropout(final, X, pred, loss, median, n_passes, random_state):
    """Minus the spread of the probability signal over dropout passes."""
    if not _has_dropout(final):
        raise ValueError(
            f"signal 'mc_dropout' needs dropout > 0; {type(final).__name__} was "
            f"fitted with dropout={getattr(final, 'dropout_', None)!r}."
        )
    check_is_fitted(final, "module_")
    X = check_array(X, dtype=np.float64)
    # A copy in training mode: the fitted module (and its mode) stay as they
    # are. Its masks come from a generator of its own, seeded: reproducible,
    # whatever other threads draw, and the caller's streams untouched.
    module = copy.deepcopy(final.module_).train()
    param = next(module.parameters())
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    module.generator = torch.Generator(param.device).manual_seed(seed)
    values = np.empty((n_passes, len(pred)))
    # A view of X where numpy allows it; a copy of a read-only chunk.
    as_tensor = torch.as_tensor if X.flags.writeable else torch.tensor
    with torch.no_grad():
        for start in range(0, X.shape[0], _MC_CHUNK_ROWS):
            sl = slice(start, start + _MC_CHUNK_ROWS)
            xb = as_tensor(X[sl], dtype=param.dtype, device=param.device)
            for t in range(n_passes):
                out = module(xb).double().cpu().numpy()
                # The estimator's own probabilities (members averaged).
                proba = np.exp(final._log_proba(out))
                values[t, sl] = _probability_signals(proba, pred[sl], loss, median)[0]
    return -values.std(axis=0)


def _member_disagreement(final, X, pred, loss, median):
    """Minus the spread of the probability signal over the members."""
    n_members = _n_members(final)
    if n_members < 2:
        raise ValueError(
            "signal 'member_disagreement' needs a CR estimator fitted with "
            f"n_members > 1; {type(final).__name__} has one network."
        )
    X = final._check_X(X)
    values = np.empty((n_members, len(pred)))
    # In blocks of rows: every member's probabilities, for a block at a time.
    for start in range(0, X.shape[0], _MC_CHUNK_ROWS):
        sl = slice(start, start + _MC_CHUNK_ROWS)
        proba = final._member_proba(final._outputs(X[sl]))  # (members, rows, k)
        for m in range(n_members):
            values[m, sl] = _probability_signals(proba[m], pred[sl], loss, median)[0]
    return -values.std(axis=0)


def _tie_rounding_noise(norms):
    """Norms rounded to 9 significant digits of the largest, so constant norms tie."""
    norms = np.asarray(norms, dtype=np.float64)
    scale = np.max(np.abs(norms)) if norms.size else 0.0
    if not scale > 0:
        return norms
    step = scale * 1e-9
    return np.round(norms / step) * step


def confidence_signals(
    estimator, X, signals="auto", *, loss="auto", n_passes=30, random_state=None
):
    """Per-sample confidence signals of a fitted estimator (higher = trust more).

    Each signal is oriented so that a larger value is a prediction to keep
    longer, ready for :func:`~cr_sklearn.risk_coverage_curve`:

    - ``"max_proba"``: the probability of the predicted class; for an ordinal
      model (``loss="absolute"``) the predicted mass within one class of the
      prediction, ``P(|rank(y) - rank(y_pred)| <= 1)``.
    - ``"margin"``: that probability minus the largest other one; for an ordinal
      model predicting the median, the distance to 0.5 of the cumulative
      probabilities on either side of the prediction.
    - ``"input_sensitivity"``, ``"input_distance"`` (CR estimators): minus
      :meth:`~cr_sklearn.CRClassifier.input_sensitivity` and
      :meth:`~cr_sklearn.CRClassifier.input_distance`.
    - ``"mc_dropout"`` (CR, ``dropout > 0``): minus the standard deviation of
      ``"max_proba"`` over ``n_passes`` passes with dropout on.
    - ``"member_disagreement"`` (CR, ``n_members > 1``): minus the standard
      deviation of ``"max_proba"`` over the members.
    - ``"gradient_norm"`` (any model): minus :func:`~cr_sklearn.gradient_norms`
      of the final step's input in raw units (``scale=1.0``), so that a linear
      model's constant norm is a tie.
    - ``"confidence"``: the estimator's own ``confidence(X)``.

    Parameters
    ----------
    estimator : fitted estimator
        A classifier, an ordinal model, or a pipeline ending in one (the CR
        signals are taken on the last step's input).
    X : array-like of shape (n_samples, n_features)
        Samples.
    signals : "auto", str or list of str, default="auto"
        The signals to compute. ``"auto"``: ``"confidence"`` if available, the
        probability signals (no ``"margin"`` for two classes), the CR signals
        the model supports, or ``"gradient_norm"`` for other models.
    loss : {"auto", "zero_one", "absolute"}, default="auto"
        The risk the probability signals rank for; ``"auto"``: ``"absolute"``
        for ordinal models, else ``"zero_one"``.
    n_passes, random_state : optional
        Forward passes of ``"mc_dropout"`` and the seed of their masks (drawn
        from a generator of their own: the same from any thread).

    Returns
    -------
    signals : dict of str to ndarray of shape (n_samples,)
        Each signal by name, in the order requested.

    See Also
    --------
    risk_coverage_curve : Rank predictions by one of these signals.
    SelectiveClassifier : A learned combination of the signals.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from cr_sklearn import CRClassifier, confidence_signals
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = CRClassifier((8,), max_iter=20, random_state=0).fit(X, y)
    >>> list(confidence_signals(clf, X, random_state=0))
    ['max_proba', 'input_sensitivity', 'input_distance', 'mc_dropout']
    """
    check_is_fitted(estimator)
    loss = _resolve_loss(estimator, loss)
    names = _check_signals(signals, estimator, loss)
    if not isinstance(n_passes, numbers.Integral) or n_passes < 2:
        raise ValueError(f"n_passes must be an integer >= 2, got {n_passes!r}.")
    final = _final_step(estimator)
    needs_cr = set(_CR_SIGNALS) & set(names)

    if needs_cr and not _is_cr(final):
        raise ValueError(
            f"signals {sorted(needs_cr)} need a CR estimator (or a pipeline ending "
            f"in one); {type(final).__name__} has no input_sensitivity."
        )
    Xt = X
    if needs_cr and isinstance(estimator, Pipeline):
        Xt = estimator[:-1].transform(X)
    median = getattr(_innermost(estimator), "prediction", None) == "median"

    # Computed once, by the first signal that needs them.
    @functools.cache
    def predicted_positions():
        return _positions(estimator.classes_, estimator.predict(X))

    @functools.cache
    def probability_signals():
        if not hasattr(estimator, "predict_proba"):
            raise ValueError(
                f"{type(final).__name__} has no predict_proba: the signals "
                "'max_proba' and 'margin' are not available (try "
                "'gradient_norm')."
            )
        proba = np.asarray(estimator.predict_proba(X), dtype=np.float64)
        return _probability_signals(proba, predicted_positions(), loss, median)

    out = {}
    for name in names:
        if name == "max_proba":
            out[name] = probability_signals()[0]
        elif name == "margin":
            out[name] = probability_signals()[1]
        elif name in ("input_sensitivity", "input_distance"):
            out[name] = -np.asarray(getattr(final, name)(Xt), dtype=np.float64)
        elif name == "mc_dropout":
            out[name] = _mc_dropout(
                final, Xt, predicted_positions(), loss, median, n_passes, random_state
            )
        elif name == "member_disagreement":
            out[name] = _member_disagreement(
                final, Xt, predicted_positions(), loss, median
            )
        elif name == "gradient_norm":
            # Raw units: a sample's signal must not depend on its batch.
            out[name] = -_tie_rounding_noise(gradient_norms(estimator, X, scale=1.0))
        else:  # "confidence"
            if not hasattr(estimator, "confidence"):
                raise ValueError(
                    f"{type(final).__name__} has no confidence method: the "
                    "signal 'confidence' is not available."
                )
            out[name] = np.asarray(estimator.confidence(X), dtype=np.float64)
    return out
