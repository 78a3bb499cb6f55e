"""The life of one ``fit`` or ``partial_fit`` call of a CR estimator (private).

:meth:`Fit.run` runs the seven steps that ``docs/developers.rst`` ("The
life of a fit") describes, numbered as there, each reading the
:class:`FitPlan` (:mod:`cr_sklearn._plan`) and the objects of its own module.

The estimator supplies the head: target codes, criterion, prior, validation
score and probabilities.
"""

import copy
import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, validate_data

from . import _networks, _predict
from ._members import MemberCriterion, MemberStopping, member_rows
from ._objective import TrainingObjective
from ._plan import CV_FOLDS, class_weights, resolve_plan
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

__all__ = []

NO_PARTIAL_FIT = (
    "partial_fit is not available on cross-fitted members (n_members > 1, or "
    "'auto' from 1,000 rows): each member trains on "
    "the rows outside its fold of the data given to fit, and a stream of "
    "batches has no folds. Use fit, or n_members=1."
)


def class_weight_of(estimator, codes):
    """Per-sample weights implied by ``class_weight`` (ones if ``None``)."""
    if estimator.class_weight is None:
        return np.ones(len(codes))
    if isinstance(estimator.class_weight, str):  # "balanced"
        n_classes = len(estimator.classes_)
        counts = np.bincount(codes, minlength=n_classes).astype(float)
        per_class = len(codes) / (n_classes * np.maximum(counts, 1))
    else:
        per_class = class_weights(estimator.class_weight, estimator.classes_)
    return per_class[codes]


def _make_net(plan, layers, criteria, **options):
    """The net that trains ``layers`` with one criterion per member."""
    criterion = criteria[0]
    if getattr(layers, "n_members", None) is not None:
        criterion = MemberCriterion(criteria)
    objective = TrainingObjective.from_plan(plan, layers.stream_width)
    return make_net(plan, layers, criterion, objective, **options)


def rebuild_net(estimator):
    """A skorch net around the layers of ``estimator.module_`` (after load, growth).

    Its optimizer starts afresh; the caller sets the history.
    """
    plan = estimator._plan
    # Building draws initial weights: the caller's random streams stay.
    with torch_context(0, None, estimator.device_):
        layers = _networks.training_layers(
            estimator.module_, _networks.torch_dtype(plan.dtype), plan.dreg_space
        )
        members = getattr(layers, "n_members", None) or 1
        criteria = [estimator._make_criterion(plan, None, None) for _ in range(members)]
        return _make_net(plan, layers, criteria, quiet=True)


class Fit:
    """One call of ``fit`` (``incremental=False``) or ``partial_fit``."""

    def __init__(self, estimator, X, y, sample_weight, *, incremental, classes):
        self.est = estimator
        self.X, self.y, self.sample_weight = X, y, sample_weight
        self.incremental, self.classes = incremental, classes

    def run(self):
        est = self.est
        # 1. The data (fit's and partial_fit's decorators validated the
        # parameters, once).
        fitted = hasattr(est, "module_")
        self.reset = not (fitted and (self.incremental or est.warm_start))
        X, codes, weight = self._data()
        # 2. Seed the fit and resolve its plan.
        if self.reset:
            rng = check_random_state(est.random_state)
            est._seed = int(rng.randint(np.iinfo(np.int32).max))
            est.device_ = resolve_device(est.device)
            est._n_fit_calls = 0
            # Attributes a later fit may not set: a new fit drops them.
            for name in ("oob_score_", "oob_decision_function_"):
                est.__dict__.pop(name, None)
        seed = est._seed + est._n_fit_calls
        est._n_fit_calls += 1
        # The rules count the rows that carry weight (weight 0 removes a row).
        plan = resolve_plan(
            est,
            int(np.count_nonzero(weight)),
            X.shape[1],
            est._n_outputs(),
            device=est.device_,
            incremental=self.incremental,
        )
        plan.check_members(
            auto=est.n_members == "auto",
            warm_start=fitted and est.warm_start,
            built_members=fitted and getattr(est.module_, "n_members", None),
        )
        if not self.reset:
            plan = plan.continuing(est._built, est.get_params(deep=False))
            plan.check_same_network(est._built)
        plan.check_memory()
        with torch_context(seed, plan.n_threads, est.device_):
            # 3. The rows each member trains and is validated on.
            rows = self._rows(plan, codes, weight, seed)
            # 4. The network to start from, and its layers' inputs, once.
            if self.reset:
                network = self._new_network(plan, X, codes, rows)
            else:
                network = est.module_
            H = _networks.transformed(
                network,
                X,
                _networks.torch_dtype(plan.dtype),
                est.device_,
                plan.dreg_space,
            )
            # 5. Train the layers.
            net, plan, cv_curve = self._train(plan, network, H, codes, rows, seed)
            # 6. The fitted network, and the numeric contract.
            module = _networks.adopt(network, net.module_)
            est._set_head_attributes(net)
            est._prediction_path = self._contract(module, net.module_, X, H)
            # 7. The fitted attributes and the summaries (a Jacobian pass:
            #    under the fit's thread bound too).
            est.module_, est.net_, est._plan = module, net, plan
            est._built = plan.network_values()
            self._attributes(plan, rows, cv_curve, X, codes, seed)
        return est

    # -- 1. the data ---------------------------------------------------------
    def _data(self):
        """Validated float64 ``X``, target codes and weights (times class weights)."""
        est = self.est
        check_numeric_columns(self.X)
        X, y = validate_data(
            est,
            self.X,
            self.y,
            reset=self.reset,
            dtype=[np.float64, np.float32],
            y_numeric=False,
            multi_output=False,
        )
        X = np.asarray(X, dtype=np.float64)
        check_training_range(X)
        if self.reset and not est.standardize:
            warn_if_unstandardized(X)
        codes = est._encode_targets(y, reset=self.reset, classes=self.classes)
        weight = class_weight_of(est, codes)
        if self.sample_weight is not None:
            weight = weight * _check_sample_weight(
                self.sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
        if not weight.max() > 0:
            raise ValueError("sample_weight must have a positive sum.")
        if weight.max() < np.finfo(np.float64).tiny:
            raise ValueError(
                f"sample_weight's largest value, {weight.max():.3g}, is subnormal "
                "(below 2.2e-308): the weights' sums and ratios lose their "
                "precision. Scale sample_weight up (weights count repetitions)."
            )
        return X, codes, weight

    # -- 3. and 4. the rows and the starting network --------------------------
    @staticmethod
    def _rows(plan, codes, weight, seed):
        if plan.n_members > 1:
            return member_rows("folds", codes, weight, seed, n_members=plan.n_members)
        kind = "hold-out" if plan.stopping == "hold-out" else "all"
        fraction = plan.validation_fraction
        return member_rows(kind, codes, weight, seed, validation_fraction=fraction)

    def _new_network(self, plan, X, codes, rows):
        """The float64 network a fresh fit starts from.

        The transform is fitted on the rows some member trains on; the
        layers are drawn at random; the output layer starts at each member's
        prior: zero weights and the prior's logits as bias, so the untrained
        model predicts the training prior and the first steps fit the output
        layer on near-linear features (the polynomials start as the
        identity). A spectrally normalised output keeps its random start.
        """
        est = self.est
        names = getattr(est, "feature_names_in_", None)
        transform = InputTransform.fit(
            X[rows.used],
            rows.raw[rows.used],
            standardize=plan.standardize,
            bins=plan.encoding_bins,
            names=None if names is None else list(names),
        )
        plan.check_size(transform.width)
        members = plan.n_members if plan.n_members > 1 else None
        network = _networks.build(
            plan, transform.n_features, encoded=transform.n_encoded, n_members=members
        )
        network = transform.install(network).eval()
        est.n_encoded_features_ = transform.n_encoded
        if plan.spectral_norm:
            return network
        with torch.no_grad():
            network.output.weight.zero_()
            for m, keep in enumerate((rows.train > 0).T):
                bias = est._output_bias(codes[keep], rows.raw[keep])
                if bias is not None:
                    target = network.output.bias
                    target = target if members is None else target[m]
                    target.copy_(torch.as_tensor(bias))
        return network

    # -- 5. training -----------------------------------------------------------
    def _train(self, plan, network, H, codes, rows, seed):
        """Train the layers of ``network``: ``(net, plan, cv_curve)``."""
        est = self.est
        layers = _networks.training_layers(
            network, _networks.torch_dtype(plan.dtype), plan.dreg_space
        )
        y = torch.as_tensor(codes, device=est.device_)
        warm = {}
        if not self.reset:
            warm["history"] = est.net_.history
            if self.incremental:
                warm["moments"] = optimizer_moments(est.net_)
        epochs, cv_curve, stopping = plan.max_epochs, None, None
        if plan.stopping == "cv" and plan.n_members == 1:
            epochs, cv_curve = self._cv_epochs(plan, layers, H, y, codes, rows, seed)
        else:
            stopping = self._stopping(plan, H, y, rows)
        criteria = [
            est._make_criterion(plan, codes[keep], rows.raw[keep])
            for keep in (rows.train > 0).T
        ]
        net = _make_net(
            plan,
            layers,
            criteria,
            stopping=stopping,
            user_callbacks=est.callbacks,
            note=_penalty_note(plan),
        )
        labels = net.objective.stream.needs_labels
        train(net, self._dataset(H, y, rows, labels), epochs, **warm)
        return net, plan, cv_curve

    def _cv_epochs(self, plan, layers, H, y, codes, rows, seed):
        """Epochs of the folds' least pooled out-of-fold loss: ``(epochs, curve)``.

        The folds are members that each start from ``layers``, the network
        the refit starts from.
        """
        folds = member_rows("folds", codes, rows.raw, seed, n_members=CV_FOLDS)
        stacked = type(layers).stack([layers] * CV_FOLDS)
        stopping = MemberStopping(
            self._held(H, y, folds),
            mode="pooled",
            patience=plan.patience,
            tol=plan.tol,
            load_best=False,
        )
        criterion = self.est._make_criterion(
            plan, codes[rows.used], rows.raw[rows.used]
        )
        criteria = [copy.deepcopy(criterion) for _ in range(CV_FOLDS)]
        net = _make_net(plan, stacked, criteria, stopping=stopping, quiet=True)
        labels = net.objective.stream.needs_labels
        train(net, self._dataset(H, y, folds, labels), plan.max_epochs)
        if net.interrupted_:
            # Ctrl-C in the folds: no epoch count can be chosen; the fit stops.
            raise KeyboardInterrupt
        curve = np.asarray(net.history[:, "valid_loss"], dtype=float)
        return int(np.argmin(np.where(np.isfinite(curve), curve, np.inf))) + 1, curve

    @staticmethod
    def _held(H, y, rows):
        """``(X, y, weights (M, n))`` of the rows some member is validated on."""
        held = np.flatnonzero(rows.held.max(axis=1) > 0)
        weight = torch.as_tensor(rows.held[held].T, dtype=torch.float64)
        idx = torch.as_tensor(held, device=H.device)
        return H[idx], y[idx], weight.to(H.device)

    def _stopping(self, plan, H, y, rows):
        """The held-out validation callback (``None``: no held-out rows)."""
        if rows.held is None:
            return None
        est, score = self.est, None
        if rows.n_members == 1:

            def score(net, X, codes):
                with torch.no_grad():
                    return est._validation_score(net, net.module_(X), codes)

        return MemberStopping(
            self._held(H, y, rows),
            mode=None if plan.stopping == "off" else "per-member",
            patience=plan.patience,
            tol=plan.tol,
            score=score,
            sink=print if rows.n_members == 1 else None,
        )

    @staticmethod
    def _dataset(H, y, rows, labels):
        """The rows some member trains on, with their weights (``None``: all 1),
        and with their labels in the batches when ``labels`` (a stream that
        pairs rows by them)."""
        keep = rows.used
        weight = rows.train[keep]
        weight = weight[:, 0] if weight.shape[1] == 1 else weight
        if not keep.all():
            idx = torch.as_tensor(np.flatnonzero(keep), device=H.device)
            H, y = H[idx], y[idx]
        if np.all(weight == 1.0):
            return TensorDataset(H, y, labels=labels)
        weight = torch.as_tensor(weight, dtype=H.dtype).to(H.device)
        return TensorDataset(H, y, weight, labels=labels)

    # -- 6. the numeric contract -------------------------------------------------
    def _contract(self, module, layers, X, H):
        """The prediction path that computes the trained function.

        On up to 1,000 training rows, the fitted float64 network's
        probabilities against the training forward's. A path other than the
        folded plan warns; none agreeing raises: a model whose predictions
        are not the trained function is never returned.
        """
        est = self.est
        rows = _predict.contract_rows(len(X))
        path, tried = _predict.contract_path(
            module,
            layers,
            X[rows],
            H[torch.as_tensor(rows, device=H.device)],
            est._member_proba,
            device=est.device_,
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

    # -- 7. the fitted attributes ----------------------------------------------
    def _attributes(self, plan, rows, cv_curve, X, codes, seed):
        """The attributes that summarise the training run, then the summaries."""
        est = self.est
        net = est.net_
        if net.interrupted_:
            done = len(net.history) - net.rows_at_train_begin_
            warnings.warn(
                "Training interrupted by user: the fit stopped after "
                f"{done} complete epoch(s) of this call and returns that model.",
                UserWarning,
                stacklevel=find_stacklevel(),
            )
        history = net.history
        est.n_iter_ = len(history)
        est.loss_curve_ = [float(v) for v in history[:, "train_loss"]]
        stopping = dict(net.callbacks_).get("early_stopping")
        members = plan.n_members > 1
        est.best_epoch_ = getattr(stopping, "restored_epoch_", None)
        if cv_curve is not None:
            # The chosen number of epochs is the one the model trained for.
            est.best_epoch_ = est.n_iter_
        est.cv_validation_loss_ = cv_curve
        if members:
            est.best_epochs_ = stopping.best_epochs_
            est.cv_validation_loss_ = np.asarray(history[:, "valid_loss"], dtype=float)
        else:
            best = est.best_epoch_
            est.best_epochs_ = None if best is None else np.array([best])
        if members and est.oob_score:
            proba = est._member_proba(est._outputs(X))
            est.oob_decision_function_ = proba[rows.fold, np.arange(len(X))]
            est.oob_score_ = est._oob_score(est.oob_decision_function_, codes)
        if not net.interrupted_:
            self._warn_if_unconverged(plan)
        set_summaries(est, X, incremental=self.incremental, seed=seed)

    def _warn_if_unconverged(self, plan):
        """A ``ConvergenceWarning`` when training stopped while still improving.

        With early stopping: the chosen epoch is among the last
        ``n_iter_no_change``; with ``early_stopping=False`` (as
        ``MLPClassifier``): the training loss still fell by more than ``tol``
        (relative) an epoch. ``"auto"``'s fixed budget is tuned, not cut short.
        """
        est = self.est
        start = est.net_.rows_at_train_begin_
        patience = plan.n_iter_no_change
        if plan.stopping == "off":
            curve = np.asarray(est.loss_curve_[start:], dtype=float)
            window = min(patience, len(curve) - 1)
            if plan.early_stopping is not False or window < 1:
                return
            drop = (curve[-window - 1] - curve[-1]) / window
            if np.isfinite(drop) and drop > plan.tol * max(abs(curve[-1]), 1e-12):
                warnings.warn(
                    f"The training loss was still falling after max_iter_="
                    f"{plan.max_epochs} epochs ({drop:.3g} per epoch over the "
                    f"last {window}, above tol={plan.tol:g} relative): the fit "
                    "did not converge. Increase max_iter, or use early stopping.",
                    ConvergenceWarning,
                    stacklevel=find_stacklevel(),
                )
            return
        best = None if est.best_epoch_ is None else est.best_epoch_ - start
        if best is None or best <= plan.max_epochs - patience:
            return
        if plan.n_members > 1:
            chosen = "the latest member's best out-of-fold epoch"
        elif plan.stopping == "cv":
            chosen = "the internal folds' best epoch count"
        else:
            chosen = "the best validation epoch"
        warnings.warn(
            f"Early stopping did not converge: {chosen}, {best}, is among the "
            f"last n_iter_no_change={patience} of max_iter_={plan.max_epochs} "
            "epochs, so the validation loss was still improving. Increase max_iter.",
            ConvergenceWarning,
            stacklevel=find_stacklevel(),
        )


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
