"""Shared base of the CR estimators: parameters and the life of a fit (private).

A fit composes a few objects, each in a module of its own: the
:class:`~cr_sklearn._plan.FitPlan` (every setting, resolved once), the
:class:`~cr_sklearn._transform.InputTransform` (standardisation and
encoding, fitted in float64), the members' rows
(:mod:`cr_sklearn._members`), the one training path
(:mod:`cr_sklearn._trainer`) and prediction from the fitted float64 network
(:mod:`cr_sklearn._predict`). ``docs/developers.rst`` walks through it.
"""

import copy
import dataclasses
import numbers
import warnings
from abc import abstractmethod

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from . import _networks, _predict
from ._html_repr import FittedAttributesHTMLMixin
from ._members import MemberCriterion, MemberStopping, member_rows
from ._objective import TrainingObjective
from ._plan import CV_FOLDS, class_weights, max_epochs_rule, resolve_plan
from ._summaries import set_summaries
from ._trainer import TensorDataset, make_net, optimizer_moments, torch_context, train
from ._transform import InputTransform
from ._utils import (
    check_numeric_columns,
    check_training_range,
    find_stacklevel,
    resolve_device,
    warn_if_unstandardized,
)
from .nn import ACTIVATION_NAMES, ARCHITECTURES, PENALTIES

__all__ = ["BaseCR", "partial_fit_available"]

# Fitted attributes of one fit that a later fit may not set: a new fit drops them.
_MEMBER_ATTRIBUTES = ("oob_score_", "oob_decision_function_")


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
        "dtype": [StrOptions({"float32", "float64"})],
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

    #: ``early_stopping="auto"`` trains a fixed budget below 2,000 samples
    #: only on inputs of at most this many columns (``None``: any input).
    _auto_fixed_budget_max_features = None

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
        dtype,
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
        self.dtype = dtype
        self.n_threads = n_threads
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.warm_start = warm_start
        self.callbacks = callbacks
        self.n_members = n_members
        self.oob_score = oob_score

    # -- the head: hooks for subclasses ---------------------------------------
    @abstractmethod
    def _encode_targets(self, y, *, reset, classes=None):
        """Validate ``y``, set ``classes_`` when ``reset``; return int codes."""

    @abstractmethod
    def _n_outputs(self):
        """Number of network outputs."""

    @abstractmethod
    def _make_criterion(self, codes, weight):
        """Per-sample loss ``criterion(output, codes) -> (batch,)``.

        ``codes`` and ``weight``: the training rows of the network it trains
        (an ordinal head starts its cut-points at their prior).
        """

    @abstractmethod
    def _output_bias(self, codes, weight):
        """Starting output bias: the prior of ``codes`` (weighted), or ``None``."""

    @abstractmethod
    def _validation_score(self, net, output, codes):
        """Greater-is-better score of ``output`` against ``codes``."""

    @abstractmethod
    def _member_proba(self, outputs):
        """Class probabilities of network outputs, a member axis kept."""

    # -- the contract with growth ---------------------------------------------
    def _training_data(self, X, y):
        """Float64 tensors ``(X, y_codes, sample_weight)`` of validated data.

        The weights are the ``class_weight`` weights normalised to mean 1.
        """
        X = self._check_X(X)
        codes = self._encode_targets(np.asarray(y), reset=False)
        weight = self._class_weight_of(codes)
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
        self._built = {**self._built, "hidden": tuple(hidden_layer_sizes)}
        history = self.net_.history
        self.net_ = self._rebuild_net()
        self.net_.history = history

    # -- fitting -------------------------------------------------------------
    # -- fitting -------------------------------------------------------------
    def _fit(self, X, y, sample_weight=None, *, incremental=False, classes=None):
        """Fit, or leave the estimator exactly as it was.

        A fit builds its model apart from the fitted one, so when it raises
        (Ctrl-C included), restoring the attributes restores the previous
        model, or an unfitted estimator.
        """
        before = dict(self.__dict__)
        try:
            return self._fit_model(X, y, sample_weight, incremental, classes)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _fit_model(self, X, y, sample_weight, incremental, classes):
        # 1. Validate the parameters and the data (targets and weights).
        self._validate_params()
        fitted = hasattr(self, "module_")
        reset = not (fitted and (incremental or self.warm_start))
        self._check_member_params(fitted, incremental)
        X, codes, weight = self._prepare_data(
            X, y, sample_weight, reset=reset, classes=classes
        )
        if reset:
            rng = check_random_state(self.random_state)
            self._seed = int(rng.randint(np.iinfo(np.int32).max))
            self.device_ = resolve_device(self.device)
            self._n_fit_calls = 0
            for name in _MEMBER_ATTRIBUTES:
                self.__dict__.pop(name, None)
        seed = self._seed + self._n_fit_calls
        self._n_fit_calls += 1
        # 2. The plan: every setting of this fit, resolved once.
        plan = resolve_plan(
            self.get_params(deep=False),
            *X.shape,
            self._n_outputs(),
            device=self.device_,
            incremental=incremental,
            widest_fixed=self._auto_fixed_budget_max_features,
        )
        if not reset:
            plan.check_same_network(self._built)
        with torch_context(seed, plan.n_threads, self.device_):
            # 3. The rows each member trains and is validated on.
            rows = self._member_rows(plan, codes, weight, seed)
            # 4. The float64 network to start from (a fresh one: the input
            #    transform fitted on the training rows, the output at the
            #    prior), and its layers' inputs, computed once.
            network = self._new_network(plan, X, codes, rows) if reset else self.module_
            H = _networks.transformed(
                network, X, _networks.torch_dtype(plan.dtype), self.device_
            )
            # 5. Train the layers, through the one training path.
            warm = None if reset else ("optimizer" if incremental else "history")
            net, plan, cv_curve = self._train(plan, network, H, codes, rows, warm, seed)
            # 6. The fitted network: the trained layers in the float64 one;
            #    its predictions checked against the training forward.
            module = _networks.adopt(network, net.module_)
            self._set_head_attributes(net)
            self._prediction_path = self._check_contract(module, net.module_, X, H)
            # 7. The fitted attributes and the summaries of the training data
            #    (a Jacobian pass: under the fit's thread bound too).
            self.module_, self.net_, self._plan = module, net, plan
            self._built = plan.network_values()
            self._set_fit_attributes(plan, rows, cv_curve, X, codes, incremental, seed)
        return self

    def _prepare_data(self, X, y, sample_weight, *, reset, classes):
        """Validated ``X``, target codes and sample weights (with class weights)."""
        check_numeric_columns(X)
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            dtype=[np.float64, np.float32],
            y_numeric=False,
            multi_output=False,
        )
        X = np.asarray(X, dtype=np.float64)
        check_training_range(X)
        if reset and not self.standardize:
            warn_if_unstandardized(X)
        codes = self._encode_targets(y, reset=reset, classes=classes)
        weight = self._class_weight_of(codes)
        if sample_weight is not None:
            weight = weight * _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
        if not weight.max() > 0:
            raise ValueError("sample_weight must have a positive sum.")
        return X, codes, weight

    def _class_weight_of(self, codes):
        """Per-sample weights implied by ``class_weight`` (ones if ``None``)."""
        if self.class_weight is None:
            return np.ones(len(codes))
        if isinstance(self.class_weight, str):  # "balanced"
            n_classes = len(self.classes_)
            counts = np.bincount(codes, minlength=n_classes).astype(float)
            per_class = len(codes) / (n_classes * np.maximum(counts, 1))
        else:
            per_class = class_weights(self.class_weight, self.classes_)
        return per_class[codes]

    def _check_member_params(self, fitted, incremental):
        """Refuse ``oob_score``, ``igpen_lambda``, warm starts where invalid."""
        members = self.n_members > 1
        if not members and self.oob_score:
            raise ValueError(
                "oob_score=True needs n_members > 1: the out-of-fold predictions "
                "come from the cross-fitted members (n_members=1 trains one "
                "network on every row, and no row is out of fold)."
            )
        if members and self.igpen_lambda > 0:
            raise ValueError(
                "igpen_lambda > 0 is not available with n_members > 1: the "
                "input-gradient penalty of a sum of the members' losses is not "
                "the sum of their penalties. Use dreg, or n_members=1."
            )
        fitted_members = fitted and getattr(self.module_, "n_members", None)
        if not (members or fitted_members):
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

    def _member_rows(self, plan, codes, weight, seed):
        """The rows of every member the plan trains (:mod:`._members`)."""
        if plan.n_members > 1:
            return member_rows("folds", codes, weight, seed, n_members=plan.n_members)
        if plan.stopping == "hold-out":
            fraction = plan.validation_fraction
            return member_rows(
                "hold-out", codes, weight, seed, validation_fraction=fraction
            )
        return member_rows("all", codes, weight, seed)

    def _new_network(self, plan, X, codes, rows):
        """The float64 network a fresh fit starts from.

        The transform is fitted on the rows some member trains on; the
        layers are drawn at random; the output layer starts at each
        member's prior: zero weights and the prior's logits as bias, so the
        untrained model predicts the training prior, and the first steps fit
        the output layer on near-linear features (the polynomials start as
        the identity). A spectrally normalised output keeps its random start.
        """
        trained = rows.used
        names = getattr(self, "feature_names_in_", None)
        transform = InputTransform.fit(
            X[trained],
            rows.raw[trained],
            standardize=plan.standardize,
            bins=plan.encoding_bins,
            names=None if names is None else list(names),
        )
        plan.check_size(transform.width)
        members = plan.n_members if plan.n_members > 1 else None
        network = _networks.fitted_network(plan, transform, members)
        self.n_encoded_features_ = transform.n_encoded
        if plan.spectral_norm:
            return network
        with torch.no_grad():
            network.output.weight.zero_()
            for m in range(rows.n_members):
                keep = rows.train[:, m] > 0
                bias = self._output_bias(codes[keep], rows.raw[keep])
                if bias is not None:
                    target = network.output.bias
                    (target if members is None else target[m]).copy_(
                        torch.as_tensor(bias)
                    )
        return network

    def _train(self, plan, network, H, codes, rows, warm, seed):
        """Train the layers of ``network``: ``(net, plan, cv_curve)``.

        ``early_stopping="cv"`` trains the folds first, as members that start
        from ``network``, then one network on every row for the epoch count
        of the folds' least pooled out-of-fold loss.
        """
        layers = _networks.training_layers(network, _networks.torch_dtype(plan.dtype))
        y = torch.as_tensor(codes, device=self.device_)
        state = {}
        if warm is not None:
            state["history"] = self.net_.history
        if warm == "optimizer":
            state["moments"] = optimizer_moments(self.net_)
        epochs, cv_curve, stopping = plan.max_epochs, None, None
        if plan.stopping == "cv" and plan.n_members == 1:
            if len(codes) < 2 * CV_FOLDS:
                # Too few rows for the folds: a fixed budget.
                epochs = max_epochs_rule(self.max_iter, "off", 1)
                plan = dataclasses.replace(plan, stopping="off", max_epochs=epochs)
                epochs = plan.max_epochs
            else:
                epochs, cv_curve = self._cv_epochs(
                    plan, layers, H, y, codes, rows, seed
                )
        else:
            stopping = self._stopping(plan, H, y, rows)
        net = self._make_net(plan, layers, codes, rows, stopping)
        train(net, self._dataset(H, y, rows), epochs, **state)
        return net, plan, cv_curve

    def _cv_epochs(self, plan, layers, H, y, codes, rows, seed):
        """Epochs of least pooled out-of-fold loss: ``(n_epochs, curve)``."""
        folds = member_rows("folds", codes, rows.raw, seed, n_members=CV_FOLDS)
        stacked = type(layers).stack([layers] * CV_FOLDS)
        stopping = MemberStopping(
            self._held_data(H, y, folds),
            mode="pooled",
            patience=plan.patience,
            tol=plan.tol,
            load_best=False,
        )
        criterion = self._make_criterion(codes[rows.used], rows.raw[rows.used])
        net = make_net(
            plan,
            stacked,
            MemberCriterion([copy.deepcopy(criterion) for _ in range(CV_FOLDS)]),
            TrainingObjective.from_plan(plan, stacked.stream_width),
            stopping=stopping,
            quiet=True,
        )
        train(net, self._dataset(H, y, folds), plan.max_epochs)
        if net.interrupted_:
            # Ctrl-C in the folds: no epoch count can be chosen; the fit stops.
            raise KeyboardInterrupt
        curve = np.asarray(net.history[:, "valid_loss"], dtype=float)
        return int(np.argmin(np.where(np.isfinite(curve), curve, np.inf))) + 1, curve

    def _held_data(self, H, y, rows):
        """``(X, y, weights (M, n))`` of the rows some member is validated on."""
        held = np.flatnonzero(rows.held.max(axis=1) > 0)
        idx = torch.as_tensor(held, device=H.device)
        weight = torch.as_tensor(
            rows.held[held].T, dtype=torch.float64, device=H.device
        )
        return H[idx], y[idx], weight

    def _stopping(self, plan, H, y, rows):
        """The held-out validation callback of a fit (``None``: no held rows)."""
        if rows.held is None:
            return None
        score = None
        if rows.n_members == 1:

            def score(net, X, codes):
                with torch.no_grad():
                    return self._validation_score(net, net.module_(X), codes)

        return MemberStopping(
            self._held_data(H, y, rows),
            mode=None if plan.stopping == "off" else "per-member",
            patience=plan.patience,
            tol=plan.tol,
            score=score,
            sink=print if rows.n_members == 1 else None,
        )

    def _make_net(self, plan, layers, codes, rows, stopping):
        """The skorch net that trains ``layers``, one criterion per member."""
        criteria = [
            self._make_criterion(codes[keep], rows.raw[keep])
            for keep in (rows.train > 0).T
        ]
        single = getattr(layers, "n_members", None) is None
        return make_net(
            plan,
            layers,
            criteria[0] if single else MemberCriterion(criteria),
            TrainingObjective.from_plan(plan, layers.stream_width),
            stopping=stopping,
            user_callbacks=self.callbacks,
            note=_penalty_note(plan),
        )

    def _dataset(self, H, y, rows):
        """The rows some member trains on, with their weights (``None``: all 1)."""
        keep = rows.used
        weight = rows.train[keep]
        weight = weight[:, 0] if weight.shape[1] == 1 else weight
        if not keep.all():
            idx = torch.as_tensor(np.flatnonzero(keep), device=H.device)
            H, y = H[idx], y[idx]
        uniform = np.all(weight == 1.0)
        return TensorDataset(
            H,
            y,
            None if uniform else torch.as_tensor(weight, dtype=H.dtype).to(H.device),
        )

    def _check_contract(self, module, layers, X, H):
        """The prediction path that computes the trained function (see _predict).

        On up to 1,000 training rows, the fitted float64 network's
        probabilities against the training forward's. A path other than
        the folded plan warns; none agreeing raises: a model whose
        predictions are not the trained function is never returned.
        """
        rows = _predict.contract_rows(len(X))
        idx = torch.as_tensor(rows, device=H.device)
        path, tried = _predict.contract_path(
            module,
            layers,
            X[rows],
            H[idx],
            self._member_proba,
            device=self.device_,
            width=self._max_width(module),
        )
        found = ", ".join(f"{p} {v:.3g}" for p, v in tried.items())
        if path is None:
            raise RuntimeError(
                "The fitted network's predictions differ from the trained "
                f"function by more than {_predict.CONTRACT_TOLERANCE:g} in "
                f"probability on the training rows (largest differences: {found}). "
                "This is a bug in cr_sklearn: please report it with the data's shape."
            )
        if path != "folded":
            warnings.warn(
                f"The fitted network predicts through the {path!r} path: the "
                "faster paths differ from the trained function on the training "
                f"rows (largest differences in probability: {found}).",
                UserWarning,
                stacklevel=find_stacklevel(),
            )
        return path

    def _set_head_attributes(self, net):
        """Head-specific fitted attributes read from the trained net (a hook)."""

    def _set_fit_attributes(self, plan, rows, cv_curve, X, codes, incremental, seed):
        """The attributes that summarise the training run, then the summaries."""
        net = self.net_
        if net.interrupted_:
            done = len(net.history) - net.rows_at_train_begin_
            warnings.warn(
                "Training interrupted by user: the fit stopped after "
                f"{done} complete epoch(s) of this call and returns that model.",
                UserWarning,
                stacklevel=find_stacklevel(),
            )
        history = net.history
        self.n_iter_ = len(history)
        self.loss_curve_ = [float(v) for v in history[:, "train_loss"]]
        self.max_iter_ = plan.max_epochs
        self.early_stopping_ = plan.stopping
        self.encoding_bins_, self.dropout_ = plan.encoding_bins, plan.dropout
        stopping = dict(net.callbacks_).get("early_stopping")
        members = plan.n_members > 1
        self.best_epoch_ = getattr(stopping, "restored_epoch_", None)
        if cv_curve is not None:
            # The chosen number of epochs is the one the model trained for.
            self.best_epoch_ = self.n_iter_
        self.cv_validation_loss_ = cv_curve
        if members:
            self.best_epochs_ = stopping.best_epochs_
            self.cv_validation_loss_ = np.asarray(history[:, "valid_loss"], dtype=float)
        else:
            best = self.best_epoch_
            self.best_epochs_ = None if best is None else np.array([best])
        self.validation_scores_ = self.best_validation_score_ = None
        if plan.stopping == "hold-out" and not members:
            scores = [row.get("valid_score") for row in history]
            self.validation_scores_ = [float(v) for v in scores if v is not None]
            if self.validation_scores_:
                self.best_validation_score_ = max(self.validation_scores_)
            else:
                self.validation_scores_ = None
        if members and self.oob_score:
            proba = self._member_proba(self._outputs(X))
            self.oob_decision_function_ = proba[rows.fold, np.arange(len(X))]
            self.oob_score_ = self._oob_score(self.oob_decision_function_, codes)
        if not net.interrupted_:
            self._warn_if_unconverged(plan)
        set_summaries(self, X, incremental=incremental, seed=seed)

    def _warn_if_unconverged(self, plan):
        """A ``ConvergenceWarning`` when training stopped while still improving.

        With early stopping, when the chosen epoch is among the last
        ``n_iter_no_change`` of the budget (the validation loss was still
        improving); with a fixed budget, as
        :class:`~sklearn.neural_network.MLPClassifier` warns at ``max_iter``,
        when the training loss of the last ``n_iter_no_change`` epochs is
        still falling by more than ``tol`` (relative) per epoch on average.
        """
        start = self.net_.rows_at_train_begin_
        if plan.stopping == "off" and self.early_stopping is False:
            curve = np.asarray(self.loss_curve_[start:], dtype=float)
            window = min(self.n_iter_no_change, len(curve) - 1)
            if window < 1 or not np.isfinite(curve[-window - 1 :]).all():
                return
            drop = (curve[-window - 1] - curve[-1]) / window
            if drop > self.tol * max(abs(curve[-1]), 1e-12):
                warnings.warn(
                    f"The training loss was still falling after max_iter_="
                    f"{plan.max_epochs} epochs ({drop:.3g} per epoch over the "
                    f"last {window}, above tol={self.tol:g} relative): the fit "
                    "did not converge. Increase max_iter, or use early stopping.",
                    ConvergenceWarning,
                    stacklevel=find_stacklevel(),
                )
            return
        if self.best_epoch_ is None or plan.stopping == "off":
            return
        best = self.best_epoch_ - start
        if best <= plan.max_epochs - self.n_iter_no_change:
            return
        if plan.n_members > 1:
            chosen = "the latest member's best out-of-fold epoch"
        elif plan.stopping == "cv":
            chosen = "the internal folds' best epoch count"
        else:
            chosen = "the best validation epoch"
        warnings.warn(
            f"Early stopping did not converge: {chosen}, {best}, is among the "
            f"last n_iter_no_change={self.n_iter_no_change} of max_iter_="
            f"{plan.max_epochs} epochs, so the validation loss was still "
            "improving. Increase max_iter.",
            ConvergenceWarning,
            stacklevel=find_stacklevel(),
        )

    def _rebuild_net(self):
        """A skorch net around the layers of ``module_`` (after load or growth)."""
        plan = self._plan
        # Building draws initial weights: the caller's random streams stay.
        with torch_context(0, None, self.device_):
            layers = _networks.training_layers(
                self.module_, _networks.torch_dtype(plan.dtype)
            )
            members = getattr(layers, "n_members", None)
            criterion = self._make_criterion(None, None)
            if members is not None:
                criterion = MemberCriterion(
                    [copy.deepcopy(criterion) for _ in range(members)]
                )
            return make_net(
                plan,
                layers,
                criterion,
                TrainingObjective.from_plan(plan, layers.stream_width),
                quiet=True,
            )

    # -- prediction ----------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self, "module_")
        check_numeric_columns(X)
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _max_width(self, module=None):
        module = self.module_ if module is None else module
        return max(
            *module.hidden_layer_sizes,
            module.n_outputs,
            module.n_features,
            module.input_width,
        )

    def _outputs(self, X):
        """The network's outputs for validated ``X``: float64, in chunks.

        ``(n_samples, n_outputs)``; a member model's
        ``(n_members, n_samples, n_outputs)``.
        """
        path = getattr(self, "_prediction_path", "folded")
        return _predict.outputs(
            self.module_,
            X,
            device=self.device_,
            width=self._max_width(),
            path=path,
            layers=self.net_.module_ if path == "training" else None,
        )

    def _jacobian(self, X, scale=None, *, features=False):
        return _predict.jacobians(
            self.module_,
            X,
            device=self.device_,
            width=self._max_width(),
            combine=self._combine_jacobian,
            scale=scale,
            features=features,
        )

    @abstractmethod
    def _combine_jacobian(self, out, jac):
        """A member model's Jacobian from its members' outputs and Jacobians."""

    def jacobian(self, X):
        """Jacobian of the network's output with respect to ``X``.

        Analytic: the closed-form derivatives of the network (forward
        stream or its transpose, whichever is cheaper), in float64, in
        bounded batches, through the standardisation and the input encoding.
        With ``n_members > 1``, the Jacobian of the function the averaged
        probabilities come from (see :meth:`decision_function`), by the
        chain rule from the members' outputs and Jacobians.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
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

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.
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
        X = self._check_X(X)
        return self._jacobian(X, scale=self._check_scale(scale))

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

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
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

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        distance : ndarray of shape (n_samples,)
            ``max_j |x_j - mean_j| / std_j`` with the training mean and
            standard deviation of each feature (1 where constant).
        """
        return self._input_distance(self._check_X(X))

    # -- state -----------------------------------------------------------------
    def __getstate__(self):
        """The state as plain data: pickle, deepcopy, joblib and skops use it.

        A fitted estimator's torch objects (``module_``, ``net_``) are kept as
        numpy arrays and rebuilt, every part checked, on unpickling
        (:func:`~cr_sklearn._persistence.fitted_state`).
        """
        state = super().__getstate__()
        if "module_" not in state:
            return state
        from ._persistence import fitted_state

        return {
            "_cr_state": fitted_state(self, optimizer=True),
            "_sklearn_version": state.get("_sklearn_version"),
            **{k: v for k, v in state.items() if k.startswith("_stream_")},
        }

    def __setstate__(self, state):
        if "_cr_state" not in state:
            return super().__setstate__(state)
        from ._persistence import restore_state

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


def _penalty_note(plan):
    """What ``verbose`` prints before the epoch table about its columns."""
    notes = []
    if plan.dreg is not None and plan.dreg_lambda:
        notes.append(
            "penalty: the DREG penalty before scaling by dreg_lambda="
            f"{plan.dreg_lambda:g}\ntrain_loss: data loss + dreg_lambda * penalty"
        )
    if plan.n_members > 1:
        notes.append(
            "members: train_loss and penalty are summed over the members; "
            "valid_loss is their pooled out-of-fold loss"
        )
    return "\n".join(notes) or None
