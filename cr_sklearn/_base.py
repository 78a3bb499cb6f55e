"""Shared base of the CR estimators: parameters and the orchestration of a fit."""

import copy
import math
import numbers
import warnings
from abc import abstractmethod

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data
from skorch.helper import predefined_split

from ._cross_fit import MemberCriterion, MemberStopping, member_folds, member_weights
from ._epoch_selection import (
    MIN_PATIENCE_STEPS,
    EpochSelectionMixin,
    steps_per_epoch,
)
from ._html_repr import FittedAttributesHTMLMixin
from ._inference import InferenceMixin
from ._net_builder import NetBuilderMixin
from ._net_state import NetStateMixin
from ._objective import TrainingObjective
from ._params import ResolvedParamsMixin
from ._summaries import set_summaries
from ._training import _TensorDataset, _torch_context
from ._utils import (
    check_training_range,
    find_stacklevel,
    resolve_device,
    validation_split,
    warn_if_unstandardized,
)
from .nn import ACTIVATION_NAMES, ARCHITECTURES, PENALTIES

__all__ = ["BaseCR", "partial_fit_available"]

# Fitted attributes of one fit that a later fit may not set: a new fit drops them.
_MEMBER_ATTRIBUTES = ("oob_score_", "oob_decision_function_", "best_epochs_")


def partial_fit_available(estimator):
    """Whether ``partial_fit`` exists: not with ``n_members > 1``.

    Each member trains on the rows outside its fold of the data given to
    ``fit``; a stream of batches has no folds.
    """
    n_members = getattr(estimator, "n_members", 1)
    # An invalid value (a string, say) is left to fit's parameter validation.
    if isinstance(n_members, numbers.Real) and n_members > 1:
        raise AttributeError(
            "partial_fit is not available with n_members > 1: each member "
            "trains on the rows outside its fold of the data given to fit, and "
            "a stream of batches has no folds. Use fit, or n_members=1."
        )
    return True


class BaseCR(
    FittedAttributesHTMLMixin,
    ResolvedParamsMixin,
    EpochSelectionMixin,
    InferenceMixin,
    NetBuilderMixin,
    NetStateMixin,
    BaseEstimator,
):
    """Base class of the CR estimators. Not meant to be used directly.

    Subclasses declare their parameters and defaults in ``__init__``, and
    define the output layer size, the loss (criterion), how targets are
    encoded and the validation score.

    Every ``fit`` and ``partial_fit`` builds the skorch net and the training
    objective from the current parameters. A warm start (``warm_start=True``
    or ``partial_fit``) keeps the fitted module and criterion and the
    training history; ``partial_fit`` also keeps the optimizer state (Adam's
    moments), with the learning rate and weight decay of the current
    parameters, while a warm-start ``fit`` starts a fresh optimizer, as
    :class:`~sklearn.neural_network.MLPClassifier` does. Parameters that
    define the network (``architecture``, ``hidden_layer_sizes``,
    ``activation``, ``degree``, ``dropout``, ``spectral_norm``,
    ``standardize``, ``encoding_bins``, ``device``) cannot change under a
    warm start; the standardisation and the encoding's bins are those of the
    fit that built the network.

    :mod:`cr_sklearn.growth` uses three methods of this class:
    :meth:`_training_data`, :meth:`_data_loss` and :meth:`_network_changed`.
    """

    #: How a fit with ``n_members > 1`` chooses its stopping epoch on the
    #: out-of-fold rows: ``"per-member"`` (each member its own best epoch) or
    #: ``"pooled"`` (one epoch for all, on the pooled out-of-fold loss). A
    #: class attribute, so that a benchmark can compare the two.
    _member_epoch_choice = "per-member"

    _parameter_constraints = {
        "architecture": [StrOptions(set(ARCHITECTURES))],
        "hidden_layer_sizes": [
            "array-like",
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "activation": [StrOptions(set(ACTIVATION_NAMES))],
        "degree": [Interval(numbers.Integral, 1, None, closed="left")],
        "dreg": [StrOptions(set(PENALTIES)), None],
        "dreg_lambda": [Interval(numbers.Real, 0, None, closed="left")],
        "n_projections": [
            StrOptions({"auto", "exact"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "stream_rows": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "max_iter": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "batch_size": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        # Above float32's range torch's optimiser fails with an overflow.
        "learning_rate_init": [
            Interval(numbers.Real, 0, 1e30, closed="neither"),
            StrOptions({"auto"}),
        ],
        "beta_1": [Interval(numbers.Real, 0, 1, closed="left")],
        "beta_2": [Interval(numbers.Real, 0, 1, closed="left")],
        "early_stopping": ["boolean", StrOptions({"auto", "cv"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "dropout": [Interval(numbers.Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
        "spectral_norm": ["boolean"],
        "igpen_lambda": [Interval(numbers.Real, 0, None, closed="left")],
        "standardize": ["boolean"],
        "encoding_bins": [
            Interval(numbers.Integral, 2, None, closed="left"),
            StrOptions({"auto"}),
            None,
        ],
        "n_threads": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
            None,
        ],
        "random_state": ["random_state"],
        "device": [str],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "callbacks": [list, None],
        "n_members": [Interval(numbers.Integral, 1, None, closed="left")],
        "oob_score": ["boolean"],
    }

    @abstractmethod
    def __init__(
        self,
        hidden_layer_sizes,
        *,
        architecture,
        activation,
        degree,
        dreg,
        dreg_lambda,
        n_projections,
        stream_rows,
        max_iter,
        batch_size,
        learning_rate_init,
        beta_1,
        beta_2,
        early_stopping,
        validation_fraction,
        n_iter_no_change,
        tol,
        class_weight,
        dropout,
        weight_decay,
        spectral_norm,
        igpen_lambda,
        standardize,
        encoding_bins,
        n_threads,
        random_state,
        device,
        verbose,
        warm_start,
        callbacks,
        n_members,
        oob_score,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.architecture = architecture
        self.activation = activation
        self.degree = degree
        self.dreg = dreg
        self.dreg_lambda = dreg_lambda
        self.n_projections = n_projections
        self.stream_rows = stream_rows
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.class_weight = class_weight
        self.dropout = dropout
        self.weight_decay = weight_decay
        self.spectral_norm = spectral_norm
        self.igpen_lambda = igpen_lambda
        self.standardize = standardize
        self.encoding_bins = encoding_bins
        self.n_threads = n_threads
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.warm_start = warm_start
        self.callbacks = callbacks
        self.n_members = n_members
        self.oob_score = oob_score

    # -- hooks for subclasses ----------------------------------------------
    @abstractmethod
    def _encode_targets(self, y, *, reset, classes=None):
        """Validate ``y``, set ``classes_`` when ``reset``; return int codes."""

    @abstractmethod
    def _n_outputs(self):
        """Number of network outputs."""

    @abstractmethod
    def _make_criterion(self):
        """Per-sample loss module: ``criterion(output, y_codes) -> (batch,)``."""

    @abstractmethod
    def _validation_score(self, net, output, y_codes):
        """Greater-is-better score of ``output`` against ``y_codes``."""

    def _output_bias(self, y_codes):
        """Initial output bias (the prior's logits); zeros by default."""
        return None

    # -- the contract with growth ---------------------------------------------
    def _training_data(self, X, y):
        """Float64 tensors ``(X, y_codes, sample_weight)`` of validated data.

        The weights are the ``class_weight`` weights normalised to mean 1.
        """
        X = self._check_X(X)
        codes = self._encode_targets(np.asarray(y), reset=False)
        weight = self._class_sample_weight(codes)
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

    # -- fitting -------------------------------------------------------------
    def _prepare_data(self, X, y, sample_weight, *, reset, classes):
        """Validated ``X``, target codes and normalised sample weights."""
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            dtype=[np.float64, np.float32],
            y_numeric=False,
            multi_output=False,
        )
        check_training_range(X)
        if reset and not self.standardize:
            warn_if_unstandardized(X)
        y_codes = self._encode_targets(y, reset=reset, classes=classes)
        weight = self._class_sample_weight(y_codes)
        if sample_weight is not None:
            weight = weight * _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
        if not weight.max() > 0:
            raise ValueError("sample_weight must have a positive sum.")
        # Dividing by the max first keeps the mean finite for huge weights.
        weight = weight / weight.max()
        weight = weight / weight.mean()
        self._check_fit_params(X.shape[1])
        return X, y_codes, weight

    def _dataset(self, X, y_codes, weight, rows):
        to_x = self._to_tensor
        return _TensorDataset(
            to_x(X[rows]),
            torch.as_tensor(y_codes[rows], device=self.device_),
            None if weight is None else to_x(weight[rows]),
        )

    def _to_tensor(self, array, dtype=torch.float32):
        return torch.tensor(array, dtype=dtype, device=self.device_)

    def _fit(self, X, y, sample_weight=None, *, incremental=False, classes=None):
        """Fit, or leave the estimator exactly as it was.

        A fit builds its model apart from the fitted one (a warm start trains
        copies of the fitted module, criterion and optimizer state), so when
        it raises, Ctrl-C (``KeyboardInterrupt``) included, restoring the
        attributes restores the previous model: never a mixture of the two,
        and an estimator that was not fitted stays unfitted.
        """
        before = dict(self.__dict__)
        try:
            return self._fit_model(
                X, y, sample_weight, incremental=incremental, classes=classes
            )
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _fit_model(self, X, y, sample_weight, *, incremental, classes):
        self._validate_params()
        fitted = hasattr(self, "net_")
        reset = not (fitted and (incremental or self.warm_start))
        n_members = self._member_count()
        self._check_member_params(fitted, incremental)
        if not reset:
            self._check_network_params()
        else:
            for name in _MEMBER_ATTRIBUTES:
                self.__dict__.pop(name, None)
        X, y_codes, weight = self._prepare_data(
            X, y, sample_weight, reset=reset, classes=classes
        )
        uniform = np.all(weight == 1.0)

        rng = check_random_state(self.random_state)
        if reset:
            self._seed = int(rng.randint(np.iinfo(np.int32).max))
            self.device_ = resolve_device(self.device)
            self._n_fit_calls = 0
        seed = self._seed + self._n_fit_calls
        self._n_fit_calls += 1

        mode = self._early_stopping_mode(
            len(y_codes), X.shape[1], incremental=incremental
        )
        if n_members is not None:
            return self._fit_members(X, y_codes, weight, seed, n_members, mode)
        split = None
        if mode == "hold-out":
            split = validation_split(y_codes, self.validation_fraction, seed)
        threads = self._fit_threads(X.shape[1], len(y_codes))
        with _torch_context(seed, threads, self.device_):
            weight = None if uniform else weight
            if split is None:
                train_idx, valid_ds = np.arange(len(y_codes)), None
            else:
                train_idx, valid_idx = split
                valid_ds = self._dataset(X, y_codes, weight, valid_idx)
            train_ds = self._dataset(X, y_codes, weight, train_idx)
            self._batch_size_ = self._batch_size(len(train_idx))
            steps = steps_per_epoch(len(train_idx), self._batch_size_)
            self.max_iter_ = self._max_epochs(mode, steps)
            if reset:
                self.encoding_bins_, self.dropout_ = self._resolve_network(X.shape[1])
                inputs = self._fit_inputs(X[train_idx])
                self.net_ = self._new_net(X.shape[1])
                self._built_network_params = self._network_params()
                self._set_inputs(self.net_.module_, inputs)
                self._initialize_output(self.net_.module_, y_codes[train_idx])
            else:
                self.net_ = self._warm_net(keep_optimizer=incremental)
            epochs = 1 if incremental else self.max_iter_
            self.cv_validation_loss_ = None
            if mode == "cv":
                # The folds start from the network this fit starts from (fresh,
                # or the warm-started one), which only the final run trains.
                chosen = self._cv_epochs(
                    self.net_.module_, self.net_.criterion_, X, y_codes, weight, seed
                )
                if chosen is not None:
                    epochs, self.cv_validation_loss_ = chosen
                else:  # Too few samples for the folds: a fixed budget.
                    mode = "off"
                    epochs = self.max_iter_ = self._max_epochs(mode, steps)
            self.early_stopping_ = mode
            self.net_.train_split = (
                None if valid_ds is None else predefined_split(valid_ds)
            )
            self.net_.valid_dataset_ = valid_ds
            self.net_.partial_fit(train_ds, None, epochs=epochs)
            # The summaries' Jacobian pass is a large step: same thread bound.
            self._finish_fit(X, incremental=incremental, seed=seed)
        return self

    def _check_member_params(self, fitted, incremental):
        """Refuse ``oob_score``, ``partial_fit``, ``warm_start`` where invalid."""
        n_members = self._member_count()
        if n_members is None and self.oob_score:
            raise ValueError(
                "oob_score=True needs n_members > 1: the out-of-fold predictions "
                "come from the cross-fitted members (n_members=1 trains one "
                "network on every row, and no row is out of fold)."
            )
        if n_members is not None and self.igpen_lambda > 0:
            raise ValueError(
                "igpen_lambda > 0 is not available with n_members > 1: the "
                "input-gradient penalty of a sum of the members' losses is not "
                "the sum of their penalties. Use dreg, or n_members=1."
            )
        fitted_members = fitted and getattr(self.net_.module_, "n_members", None)
        if n_members is None and not fitted_members:
            return
        if incremental:
            raise ValueError(
                "partial_fit is not available with n_members > 1: each member "
                "trains on the rows outside its fold of the data given to fit, "
                "and a stream of batches has no folds. Use fit, or n_members=1."
            )
        if fitted and self.warm_start:
            raise ValueError(
                "warm_start=True is not available with n_members > 1 (or on a "
                "fitted member model): the folds belong to the data of the fit "
                "that built the members. Fit with warm_start=False."
            )

    def _fit_members(self, X, y_codes, weight, seed, n_members, mode):
        """Fit ``n_members`` cross-fitted members as one batched network.

        Member ``m`` trains on the rows outside fold ``m``; with ``mode="cv"``
        its stopping epoch is chosen on its fold (see
        :mod:`cr_sklearn._cross_fit`). The members are the model: no refit.
        """
        n, d = X.shape
        fold = member_folds(y_codes, n_members, seed)
        train_weight, held_weight = member_weights(fold, weight, n_members)
        if mode == "cv" and not np.all(held_weight.sum(axis=0) > 0):
            raise ValueError(
                "Every member needs held-out rows of positive weight to choose "
                "its stopping epoch: a fold has only rows of sample_weight 0."
            )
        threads = self._fit_threads(d, n, n_members)
        with _torch_context(seed, threads, self.device_):
            self._batch_size_ = self._batch_size(n)
            steps = steps_per_epoch(n, self._batch_size_)
            self.max_iter_ = self._max_epochs(mode, steps)
            self.encoding_bins_, self.dropout_ = self._resolve_network(d)
            inputs = self._fit_inputs(X)
            rows = [np.flatnonzero(fold != m) for m in range(n_members)]
            module = self._make_module(d, n_members)
            self._set_inputs(module, inputs)
            self._initialize_output(module, y_codes, rows)
            stopping = self._member_stopping(
                X, y_codes, held_weight, steps, self._member_stopping_mode(mode)
            )
            self.net_ = self._build_net(
                module, self._member_criterion(y_codes, rows), d, stopping=stopping
            )
            self._built_network_params = self._network_params()
            self.early_stopping_ = mode
            self.net_.train_split = None
            self.net_.valid_dataset_ = None
            train = self._dataset(X, y_codes, train_weight, np.arange(n))
            self.net_.partial_fit(train, None, epochs=self.max_iter_)
            self._finish_fit(X, seed=seed)
            self.cv_validation_loss_ = np.asarray(
                self.net_.history[:, "valid_loss"], dtype=float
            )
            if self.oob_score:
                proba = self._member_proba(X)
                self.oob_decision_function_ = proba[fold, np.arange(n)]
                self.oob_score_ = self._oob_score(self.oob_decision_function_, y_codes)
        return self

    def _member_stopping_mode(self, mode):
        """The :class:`MemberStopping` mode of a member fit in ``mode``."""
        return None if mode == "off" else self._member_epoch_choice

    def _member_stopping(self, X, y_codes, held_weight, steps, mode, load_best=True):
        """The out-of-fold validation callback of a member fit."""
        data = (
            self._to_tensor(X),
            torch.as_tensor(y_codes, device=self.device_),
            self._to_tensor(held_weight.T, dtype=torch.float64),
        )
        return MemberStopping(
            data,
            mode=mode,
            patience=max(self.n_iter_no_change, math.ceil(MIN_PATIENCE_STEPS / steps)),
            tol=self.tol,
            load_best=load_best,
        )

    def _member_criterion(self, y_codes, rows):
        """One criterion per member (``rows[m]``: member ``m``'s training rows)."""
        criterion = self._make_criterion()
        return MemberCriterion([copy.deepcopy(criterion) for _ in rows])

    def _finish_fit(self, X, *, incremental=False, seed=0):
        """Set the fitted attributes that summarise the training run."""
        interrupted = getattr(self.net_, "interrupted_", False)
        if interrupted:
            warnings.warn(
                self.net_.interrupt_message(), UserWarning, stacklevel=find_stacklevel()
            )
        self.module_ = self.net_.module_
        self._refresh_inference_module()
        history = self.net_.history
        self.n_iter_ = len(history)
        self.loss_curve_ = [float(v) for v in history[:, "train_loss"]]
        stopping = dict(self.net_.callbacks_)["early_stopping"]
        self.best_epoch_ = stopping.restored_epoch_
        members = getattr(self.module_, "n_members", None) is not None
        if self.early_stopping_ == "cv" and not members:
            # The chosen number of epochs is the one the model trained for.
            self.best_epoch_ = self.n_iter_
        if members:
            self.best_epochs_ = stopping.best_epochs_
        else:
            best = self.best_epoch_
            self.best_epochs_ = None if best is None else np.array([best])
        if self.net_.valid_dataset_ is not None:
            scores = [row.get("valid_score") for row in history]
            self.validation_scores_ = [float(v) for v in scores if v is not None]
            self.best_validation_score_ = max(self.validation_scores_)
        else:
            self.validation_scores_ = None
            self.best_validation_score_ = None
        if not interrupted:
            self._warn_if_still_improving()
        set_summaries(self, X, incremental=incremental, seed=seed)

    def _warn_if_still_improving(self):
        """A ``ConvergenceWarning`` when early stopping chose an epoch near the end.

        As :class:`~sklearn.neural_network.MLPClassifier` warns when it
        reaches ``max_iter``: with early stopping on, a best epoch among the
        last ``n_iter_no_change`` of the budget means the validation loss was
        still improving when the budget ran out. A fixed budget
        (``early_stopping_ == "off"``) never warns.
        """
        if self.early_stopping_ == "off" or self.best_epoch_ is None:
            return
        # Epochs of earlier fits (a warm start) come first in the history.
        best = self.best_epoch_ - getattr(self.net_, "_rows_at_train_begin", 0)
        if best <= self.max_iter_ - self.n_iter_no_change:
            return
        if getattr(self.module_, "n_members", None) is not None:
            chosen = "the latest member's best out-of-fold epoch"
        elif self.early_stopping_ == "cv":
            chosen = "the internal folds' best epoch count"
        else:
            chosen = "the best validation epoch"
        warnings.warn(
            f"Early stopping did not converge: {chosen}, {best}, is among the "
            f"last n_iter_no_change={self.n_iter_no_change} of max_iter_="
            f"{self.max_iter_} epochs, so the validation loss was still "
            "improving. Increase max_iter.",
            ConvergenceWarning,
            stacklevel=find_stacklevel(),
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
