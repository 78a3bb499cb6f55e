"""Shared base of the CR estimators: parameters and the life of a fit (private).

A fit composes a few objects, each in a module of its own: the
:class:`~cr_sklearn._plan.FitPlan` (every setting, resolved once), the
:class:`~cr_sklearn._transform.InputTransform` (standardisation and
encoding, fitted in float64), the members' rows
(:mod:`cr_sklearn._members`), the one training path
(:mod:`cr_sklearn._trainer`) and prediction from the fitted float64 network
(:mod:`cr_sklearn._predict`). ``docs/developers.rst`` walks through it.
"""

import dataclasses
import math
import numbers
from abc import abstractmethod
from types import MappingProxyType

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _predict
from ._docs import fill_methods
from ._fit import NO_PARTIAL_FIT, Fit, class_weight_of, rebuild_net
from ._html_repr import FittedAttributesHTMLMixin
from ._objective import TrainingObjective
from ._plan import MAX_DEGREE
from ._state import fitted_state, restore_state
from ._utils import check_numeric_columns
from .nn import ACTIVATION_NAMES, ARCHITECTURES, PENALTIES

__all__ = ["BaseCR", "init_arguments", "partial_fit_method"]

# Parameter constraints: 1, 2, ...; a real >= 0; a fraction in (0, 1).
COUNT = Interval(numbers.Integral, 1, None, closed="left")
NON_NEGATIVE = Interval(numbers.Real, 0, None, closed="left")
FRACTION = Interval(numbers.Real, 0, 1, closed="neither")


def init_arguments(local_names):
    """The arguments of an ``__init__``, from its ``locals()``."""
    return {k: v for k, v in local_names.items() if k not in ("self", "__class__")}


def partial_fit_available(estimator):
    """Whether ``partial_fit`` exists: not with ``n_members > 1``.

    Each member trains on the rows outside its fold of the data given to
    ``fit``; a stream of batches has no folds (``n_members="auto"`` trains
    one network there).
    """
    n_members = getattr(estimator, "n_members", 1)
    # An invalid value (a string, say) is left to fit's parameter validation;
    # a model that "auto" fitted with members has none either.
    asked = isinstance(n_members, numbers.Real) and n_members > 1
    if asked or getattr(estimator, "n_members_", 1) > 1:
        raise AttributeError(NO_PARTIAL_FIT)
    return True


def partial_fit_method(function):
    """Decorate a ``partial_fit``: validated once, absent with ``n_members > 1``."""
    fitted = _fit_context(prefer_skip_nested_validation=True)(function)
    return available_if(partial_fit_available)(fitted)


@fill_methods
class BaseCR(FittedAttributesHTMLMixin, BaseEstimator):
    """Base class of the CR estimators. Not meant to be used directly.

    Subclasses declare their parameters and defaults in ``__init__`` and
    define the head: how targets are encoded, the output size, the loss
    (criterion), the output layer's starting bias, the validation score and
    how outputs become probabilities.

    Every ``fit`` reads the current parameters. A warm start
    (``warm_start=True`` or ``partial_fit``) continues from the fitted
    network and its history; ``partial_fit`` also keeps the optimizer state
    (Adam's moments). Parameters that define the network (``architecture``,
    ``hidden_layer_sizes``, ``activation``, ``degree``, ``dropout``,
    ``spectral_norm``, ``standardize``, ``encoding_bins``, ``dtype``,
    ``device``) cannot change under a warm start.

    :mod:`cr_sklearn.growth` uses three methods of this class:
    :meth:`_training_data`, :meth:`_data_loss` and :meth:`_network_changed`.
    """

    _parameter_constraints = {
        "architecture": [StrOptions(set(ARCHITECTURES))],
        "hidden_layer_sizes": ["array-like", COUNT],
        "activation": [StrOptions(set(ACTIVATION_NAMES))],
        "degree": [Interval(numbers.Integral, 1, MAX_DEGREE, closed="both")],
        "dreg": [StrOptions(set(PENALTIES)), None],
        "dreg_lambda": [NON_NEGATIVE],
        "dreg_space": [StrOptions({"encoded", "input"})],
        "dreg_points": [StrOptions({"data", "interpolated", "between_classes"})],
        "n_projections": [StrOptions({"auto", "exact"}), COUNT],
        "stream_rows": [COUNT, None],
        "max_iter": [StrOptions({"auto"}), COUNT],
        "batch_size": [StrOptions({"auto"}), COUNT],
        # Above float32's range torch's optimiser fails with an overflow.
        "learning_rate_init": [
            Interval(numbers.Real, 0, 1e30, closed="neither"),
            StrOptions({"auto"}),
        ],
        "beta_1": [Interval(numbers.Real, 0, 1, closed="left")],
        "beta_2": [Interval(numbers.Real, 0, 1, closed="left")],
        "early_stopping": ["boolean", StrOptions({"auto", "cv"})],
        "validation_fraction": [FRACTION],
        "n_iter_no_change": [COUNT],
        "tol": [NON_NEGATIVE],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "dropout": [Interval(numbers.Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "weight_decay": [NON_NEGATIVE],
        "spectral_norm": ["boolean"],
        "igpen_lambda": [NON_NEGATIVE],
        "spread_lambda": [NON_NEGATIVE],
        "standardize": ["boolean"],
        "encoding_bins": [
            Interval(numbers.Integral, 2, None, closed="left"),
            StrOptions({"auto"}),
            None,
        ],
        "dtype": [StrOptions({"float32", "float64"})],
        "n_threads": [StrOptions({"auto"}), COUNT, None],
        "random_state": ["random_state"],
        "device": [str],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "callbacks": [list, None],
        "n_members": [COUNT, StrOptions({"auto"})],
        "oob_score": ["boolean"],
    }

    #: ``early_stopping="auto"`` trains a fixed budget below 2,000 samples
    #: only on inputs of at most this many columns (``None``: any input).
    _auto_fixed_budget_max_features = None
    #: ``encoding_bins="auto"``: the bins per column below 1,000 training rows
    #: and from there (up to 100 columns; ``_plan.encoding_bins_rule``).
    _auto_encoding_bins = (4, 4)

    def __init__(self, **params):
        # The subclasses list their parameters in their own ``__init__``
        # (scikit-learn reads them there) and hand them over as given.
        for name, value in params.items():
            setattr(self, name, value)

    # -- the head: hooks for subclasses ---------------------------------------
    @abstractmethod
    def _encode_targets(self, y, *, reset, classes=None):
        """Validate ``y``, set ``classes_`` when ``reset``; return int codes."""

    @abstractmethod
    def _n_outputs(self):
        """Number of network outputs."""

    @abstractmethod
    def _make_criterion(self, plan, codes, weight):
        """Per-sample loss ``criterion(output, codes) -> (batch,)``.

        ``plan``: the fit's :class:`~cr_sklearn._plan.FitPlan` (it names the
        ordinal head). ``codes`` and ``weight``: the training rows of the
        network it trains (an ordinal head starts its cut-points at their
        prior).
        """

    @abstractmethod
    def _output_bias(self, codes, weight):
        """Starting output bias: the prior of ``codes`` (weighted), or ``None``."""

    def _class_counts(self, codes, weight, smoothing):
        """Class counts of ``codes`` (weights count as repeated rows) plus
        ``smoothing`` rows each, in units of the largest weight: huge weights
        cannot overflow."""
        top = weight.max() if len(weight) else 1.0
        counts = np.bincount(codes, weights=weight / top, minlength=len(self.classes_))
        return counts + smoothing / top

    @abstractmethod
    def _validation_score(self, net, output, codes):
        """Greater-is-better score of ``output`` against ``codes``."""

    @abstractmethod
    def _log_proba_of(self, outputs):
        """Log class probabilities (a tensor) of network outputs, a member axis kept."""

    def _member_proba(self, outputs):
        return np.exp(self._log_proba_of(outputs).numpy())

    def _log_proba(self, outputs):
        """Log class probabilities of outputs (of ``(M, n, o)``: members averaged)."""
        logp = self._log_proba_of(outputs)
        if outputs.ndim == 3:
            logp = torch.logsumexp(logp, dim=0) - math.log(logp.shape[0])
        return logp.numpy()

    # -- the contract with growth ---------------------------------------------
    def _training_data(self, X, y):
        """Float64 tensors ``(X, y_codes, sample_weight)`` of validated data.

        The weights are the ``class_weight`` weights normalised to mean 1.
        """
        X = self._check_X(X)
        codes = self._encode_targets(np.asarray(y), reset=False)
        weight = class_weight_of(self, codes)
        device = self.device_
        return (
            torch.tensor(X, dtype=torch.float64, device=device),
            torch.as_tensor(codes, device=device),
            torch.tensor(weight / weight.mean(), dtype=torch.float64, device=device),
        )

    def _data_loss(self, module, criterion, data):
        """Weighted mean data loss of ``module``/``criterion`` on ``data``.

        ``data`` is the output of :meth:`_training_data`; the loss is the
        training objective's data term, without penalties.
        """
        X, codes, weight = data
        return TrainingObjective.data_loss(criterion, module(X), codes, weight)[1]

    def _network_changed(self, hidden_layer_sizes):
        """Adopt ``module_`` changed in place (growth) with these hidden sizes.

        The training net is rebuilt around it with a fresh optimizer; the
        history carries over.
        """
        self.hidden_layer_sizes = tuple(hidden_layer_sizes)
        self._plan = dataclasses.replace(self._plan, hidden=tuple(hidden_layer_sizes))
        self._built = self._plan.network_values()
        history = self.net_.history
        self.net_ = rebuild_net(self)
        self.net_.history = history

    # -- fitting -------------------------------------------------------------
    def _fit(self, X, y, sample_weight=None, *, incremental=False, classes=None):
        """Fit (:class:`~cr_sklearn._fit.Fit`), or leave the estimator as it was.

        A fit builds its model apart from the fitted one, so when it raises
        (Ctrl-C included), restoring the attributes restores the previous
        model, or an unfitted estimator.
        """
        before = dict(self.__dict__)
        try:
            fit = Fit(
                self, X, y, sample_weight, incremental=incremental, classes=classes
            )
            return fit.run()
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _set_head_attributes(self, net):
        """Head-specific fitted attributes read from the trained net (a hook)."""

    # -- prediction ----------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self, "module_")
        check_numeric_columns(X)
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _outputs(self, X, combine=None):
        """The network's outputs for validated ``X``: float64, in chunks.

        ``(n_samples, n_outputs)``; a member model's
        ``(n_members, n_samples, n_outputs)``. ``combine`` turns each chunk's
        outputs into what is kept of them (see :func:`_predict.outputs`).
        """
        path = getattr(self, "_prediction_path", "folded")
        layers = self.net_.module_ if path == "training" else None
        return _predict.outputs(
            self.module_,
            X,
            device=self.device_,
            path=path,
            layers=layers,
            combine=combine,
        )

    def _averaged(self, outputs):
        """A member model's outputs as their averaged log-probabilities, chunk
        by chunk; one network's as they are."""
        return self._log_proba(outputs) if outputs.ndim == 3 else outputs

    def _jacobian(self, X, scale=None, *, features=False):
        return _predict.jacobians(
            self.module_,
            X,
            device=self.device_,
            path=getattr(self, "_prediction_path", "folded"),
            combine=self._combine_jacobian,
            scale=scale,
            features=features,
        )

    @abstractmethod
    def _combine_jacobian(self, out, jac):
        """A member model's Jacobian from its members' outputs and Jacobians."""

    def predict_proba(self, X):
        """Class probabilities.

        %(Parameters_X_Returns)s
        proba : ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns follow ``classes_``.
        """
        return np.exp(self.predict_log_proba(X))

    def jacobian(self, X):
        """Jacobian of the network's output with respect to ``X``.

        Analytic: the closed-form derivatives of the network (forward
        stream or its transpose, whichever is cheaper), in float64, in
        bounded batches, through the standardisation and the input encoding.
        With ``n_members > 1``, the Jacobian of the function the averaged
        probabilities come from (see :meth:`decision_function`), by the
        chain rule from the members' outputs and Jacobians.

        %(Parameters_X_Returns)s
        jacobian : ndarray of shape (n_samples, n_outputs, n_features)
            ``n_outputs`` is the number of columns of the network output
            (1 for binary classification and ordinal models).
        """
        return self._jacobian(self._check_X(X))

    def input_gradient_norms(self, X, *, scale=None):
        """Per-sample norm of the input gradient, each column in units of its spread.

        ``||J_i diag(s)||_F`` with ``J_i`` the :meth:`jacobian` of sample
        ``i`` (with respect to ``X``, through the standardisation and the
        input encoding) and ``s`` a scale per column; with more than two
        classes, ``J_i`` is first centred over the classes (each class's
        logit minus their mean: what the probabilities depend on, so a shift
        that softmax ignores does not change it). It is the rule
        :func:`~cr_sklearn.gradient_norms` applies to every model, computed
        analytically.

        %(Parameters_X)s
        scale : array-like of shape (n_features,), default=None
            The unit of each column. ``None``: ``input_scale_``, the training
            standard deviation (1 where constant), so that a sample's norm does
            not depend on the batch it is computed in.
            :func:`~cr_sklearn.gradient_norms` and
            :class:`~cr_sklearn.DREGScorer` pass the standard deviation of
            the ``X`` being scored, as for every other model.

        Returns
        -------
        norms : ndarray of shape (n_samples,)
            ``||d f(x) / d x diag(scale)||_F`` for each sample.
        """
        return self._jacobian(self._check_X(X), scale=self._check_scale(scale))

    def _check_scale(self, scale):
        if scale is None:
            return self.input_scale_
        scale = np.asarray(scale, dtype=np.float64)
        if scale.shape != (self.n_features_in_,) or not np.all(
            np.isfinite(scale) & (scale >= 0)
        ):
            raise ValueError(
                f"scale must hold {self.n_features_in_} finite, non-negative "
                f"numbers (one per column of X), got shape {scale.shape}."
            )
        return scale

    def _sensitivity_norms(self, X):
        """Gradient norms by the columns the first layer reads, for validated X."""
        if self.module_.encoding is not None:
            return self._jacobian(X, features=True)
        return self._jacobian(X, scale=self.input_scale_)

    def input_sensitivity(self, X):
        """Each sample's input-gradient norm relative to the training mean.

        1.0 is typical of the training data. Values above the training tail,
        e.g. ``input_sensitivity(X) > model.gradient_norm_quantiles_[99] /
        model.gradient_norm_mean_``, flag predictions the model is unusually
        sensitive to.

        The gradient is taken with respect to the columns the network's first
        layer reads, in the network's standardised units: without an input
        encoding, ``X`` with each column in units of its training standard
        deviation (the rule of :meth:`input_gradient_norms` and tau); with
        one (``encoding_bins``), the encoded columns, the space DREG smooths.
        That is the one exception to tau's rule, because it ranks errors
        better: the derivative with respect to ``X`` passes through the
        ramps' slopes, steepest where the quantile bins are narrow, that is
        where the training data are dense, and it ranked the best-supported
        predictions among the most sensitive. ``benchmarks/results/``
        compares the two spaces.

        %(Parameters_X_Returns)s
        sensitivity : ndarray of shape (n_samples,)
            The norm described above divided by ``gradient_norm_mean_``.
            A network flat on all its training data (``gradient_norm_mean_``
            is 0, e.g. no hidden layers and constant features) gives 1.0
            where it is flat too (typical of the training data) and ``inf``
            where it has any slope (beyond anything seen in training); never
            ``nan``.
        """
        norms = self._sensitivity_norms(self._check_X(X))
        mean = self.gradient_norm_mean_
        if mean > 0:
            return norms / mean
        return np.where(norms > 0, np.inf, 1.0)

    def _input_distance(self, X):
        return np.abs((X - self.input_mean_) / self.input_scale_).max(axis=1)

    def input_distance(self, X):
        """Largest absolute z-score of each sample against the training data.

        A gradient-based signal cannot see inputs far outside the training
        range: the soft-bounded polynomials saturate there, so the gradient
        (and :meth:`input_sensitivity`) shrinks. This distance grows instead:
        ``input_distance(X) > model.input_distance_quantiles_[100]`` flags
        samples with a feature beyond anything seen in training.

        %(Parameters_X_Returns)s
        distance : ndarray of shape (n_samples,)
            ``max_j |x_j - mean_j| / std_j`` with the training mean and
            standard deviation of each feature (1 where constant).
        """
        return self._input_distance(self._check_X(X))

    # -- the fitted plan -------------------------------------------------------
    @property
    def plan_(self):
        """The settings the last fit resolved and used (a read-only mapping)."""
        return MappingProxyType(dataclasses.asdict(self._fitted_plan()))

    @property
    def max_iter_(self):
        """The epochs the last fit could train (``max_iter`` resolved)."""
        return self._fitted_plan().max_epochs

    @property
    def early_stopping_(self):
        """How the last fit stopped: ``"off"``, ``"hold-out"`` or ``"cv"``."""
        return self._fitted_plan().stopping

    @property
    def encoding_bins_(self):
        """The input encoding's bins per column (``None``: no encoding)."""
        return self._fitted_plan().encoding_bins

    @property
    def dropout_(self):
        """The network's dropout probability."""
        return self._fitted_plan().dropout

    @property
    def n_members_(self):
        """The cross-fitted members of the network (1: one network)."""
        return self._fitted_plan().n_members

    @property
    def validation_scores_(self):
        """The validation score per epoch of a hold-out fit (from the history)."""
        plan = self._fitted_plan()
        if plan.stopping != "hold-out" or plan.n_members > 1:
            return None
        rows = self.net_.history
        return [float(r["valid_score"]) for r in rows if "valid_score" in r] or None

    @property
    def best_validation_score_(self):
        """The best of ``validation_scores_`` (``None`` without them)."""
        scores = self.validation_scores_
        return None if scores is None else max(scores)

    def _fitted_plan(self):
        try:
            return self.__dict__["_plan"]
        except KeyError:
            raise AttributeError(
                f"This {type(self).__name__} instance is not fitted yet."
            ) from None

    # -- state -----------------------------------------------------------------
    def __getstate__(self):
        """The state as plain data: pickle, deepcopy, joblib and skops use it.

        A fitted estimator's torch objects (``module_``, ``net_``) are kept as
        numpy arrays and rebuilt, every part checked, on unpickling: the
        record of :func:`~cr_sklearn._state.fitted_state`, the fitted network
        and plan whatever the parameters (those of the next fit) say.
        """
        state = super().__getstate__()
        if "module_" not in state:
            return state
        return {
            "_cr_state": fitted_state(self, optimizer=True),
            "_sklearn_version": state.get("_sklearn_version"),
            **{k: v for k, v in state.items() if k.startswith("_stream_")},
        }

    def __setstate__(self, state):
        if "_cr_state" not in state:
            return super().__setstate__(state)
        state = dict(state)
        fitted = state.pop("_cr_state")
        device = fitted.get("attributes", {}).get("device_", "cpu")
        restore_state(self, fitted, type(self).__name__, device=device)
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
