"""The one training path of the CR estimators: a skorch net, extended (private).

:func:`train` runs skorch's own loop over a network and its criterion, on
inputs already transformed and cast to the training dtype, with one weight
per row and member (:mod:`cr_sklearn._members`). skorch is extended through
its extension points only: ``infer`` and ``get_loss`` hand the batch to the
:class:`~cr_sklearn._objective.TrainingObjective`, the iterator slices
tensors already on the device, and callbacks do the rest: held-out
validation and stopping (:class:`~cr_sklearn._members.MemberStopping`), a
guard that skips non-finite steps and rolls diverging epochs back, the
epoch log. Every fit (one network, members, the folds of
``early_stopping="cv"`` and their refit) goes through :func:`train`.
"""

import math
import threading
from contextlib import contextmanager

import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, EpochTimer, PassthroughScoring, PrintLog
from skorch.history import History

from ._members import restore, snapshot
from ._training_output import EpochProgressBar, TrainingOutput
from ._utils import clamp_threads

__all__ = []


class TensorDataset(torch.utils.data.Dataset):
    """Tensors held whole; :class:`BatchLoader` slices them batch by batch."""

    def __init__(self, X, y, sample_weight=None, *, labels=False):
        self.X = {"X": X}
        if sample_weight is not None:
            self.X["sample_weight"] = sample_weight
        if labels:  # for a stream that pairs rows by their labels
            self.X["labels"] = y
        self.y = y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {k: v[i] for k, v in self.X.items()}, self.y[i]


class BatchLoader:
    """Yield ``(X_dict, y)`` batches by slicing tensors (skorch's iterator).

    A ``DataLoader`` fetches and collates one row at a time; for small
    tabular networks that per-row Python work would dominate the epoch.
    """

    def __init__(self, dataset, batch_size=128, shuffle=False, **kwargs):
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = shuffle

    def __len__(self):
        return math.ceil(len(self.dataset) / self.batch_size)

    def __iter__(self):
        n = len(self.dataset)
        X, y = self.dataset.X, self.dataset.y
        order = None
        if self.shuffle and n > self.batch_size:
            order = torch.randperm(n, device=y.device)
        for start in range(0, n, self.batch_size):
            idx = slice(start, start + self.batch_size)
            idx = idx if order is None else order[idx]
            yield {k: v[idx] for k, v in X.items()}, y[idx]


def all_finite(tensors):
    """Whether every entry of every floating-point tensor is finite.

    One fused pass per (device, dtype) group, the check ``GradScaler`` uses,
    instead of a reduction and a host sync per tensor.
    """
    by_kind = {}
    for t in tensors:
        by_kind.setdefault((t.device, t.dtype), []).append(t.detach())
    for (device, _), group in by_kind.items():
        found = torch.zeros(1, device=device, dtype=torch.float32)
        try:
            torch._amp_foreach_non_finite_check_and_unscale_(
                group, found, torch.ones(1, device=device, dtype=torch.float32)
            )
        except (AttributeError, NotImplementedError, RuntimeError):
            # A torch build without that kernel for this device or dtype.
            found = torch.stack([torch.isfinite(t).all() for t in group]).logical_not()
        if found.any().item():
            return False
    return True


class CRNet(NeuralNet):
    """skorch's ``NeuralNet`` minimising a :class:`TrainingObjective`.

    In training, ``infer`` returns ``(output, stream_result)`` and
    ``get_loss`` hands both to the objective, the one place where the loss
    is composed. Callbacks ask the net to stop with :meth:`request_stop`;
    the stop takes effect once every callback has seen the epoch.
    """

    def __init__(self, *args, objective=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.objective = objective

    def get_default_callbacks(self):
        # The epoch log comes after the held-out validation, which records
        # valid_loss at the epoch's end (see callbacks()).
        return [
            ("epoch_timer", EpochTimer()),
            ("train_loss", PassthroughScoring(name="train_loss", on_train=True)),
        ]

    def request_stop(self):
        """Stop training after the current epoch's callbacks have run."""
        self.stop_requested_ = True

    def infer(self, x, **fit_params):
        X = (x["X"] if isinstance(x, dict) else x).to(self.device)
        if not self.module_.training:
            return self.module_(X)
        if not isinstance(x, dict):
            return self.objective.forward(self.module_, X)
        return self.objective.forward(
            self.module_, X, x.get("sample_weight"), x.get("labels")
        )

    def get_loss(self, y_pred, y_true, X=None, training=False):
        weight = X.get("sample_weight") if isinstance(X, dict) else None
        if not training:
            output = y_pred[0] if isinstance(y_pred, tuple) else y_pred
            return self.objective.data_loss(self.criterion_, output, y_true, weight)[1]
        output, stream_result = y_pred
        loss, terms = self.objective.loss(
            self.criterion_, output, stream_result, y_true, weight
        )
        for name, value in terms.items():
            self.history.record_batch(name, value)
        return loss


class FiniteGuard(Callback):
    """Skip non-finite steps; roll diverging epochs back and halve the step.

    A step whose loss or gradient is not finite is skipped (its gradients
    are dropped before the optimizer sees them: Adam's moments stay clean).
    An epoch diverged when a learnable parameter is NaN/inf, when every
    training batch was skipped or when the validation loss is not finite:
    the state saved after the last good epoch is restored (after two
    failures in a row, the one before it), every learning rate is halved and
    Adam's moments are cleared. After ``max_retries`` roll-backs,
    ``FloatingPointError``: a fit never returns non-finite parameters.
    ``last_good_`` is the state at the end of the last complete epoch.
    """

    def __init__(self, max_retries=8):
        self.max_retries = max_retries

    def on_train_begin(self, net, **kwargs):
        state = snapshot(net)
        self.snapshots_ = [state, state]
        self.failures_ = 0
        self.consecutive_ = 0
        # The optimizer's parameters, listed once: walking the module tree
        # at every step costs as much as a small network's step.
        self.params_ = [p for g in net.optimizer_.param_groups for p in g["params"]]

    @property
    def last_good_(self):
        return self.snapshots_[1]

    def on_grad_computed(self, net, **kwargs):
        grads = [p.grad for p in self.params_ if p.grad is not None]
        if not all_finite(grads):
            # No update from this step: the optimizer skips gradient-less
            # parameters.
            for p in self.params_:
                p.grad = None
            net.history.record_batch("skipped", 1)

    def _divergence(self, net):
        if not all_finite(self.params_):
            return "non-finite parameters"
        row = net.history[-1]
        train = [b for b in row["batches"] if "train_loss" in b]
        if train and all(b.get("skipped") for b in train):
            return "a non-finite loss or gradient in every batch"
        valid_loss = row.get("valid_loss")
        if valid_loss is not None and not math.isfinite(valid_loss):
            return "a non-finite validation loss"
        return None

    def on_epoch_end(self, net, **kwargs):
        reason = self._divergence(net)
        if reason is None:
            self.snapshots_ = [self.snapshots_[1], snapshot(net)]
            self.consecutive_ = 0
            return
        self.failures_ += 1
        self.consecutive_ += 1
        net.history.record("rolled_back", True)
        if self.consecutive_ > 1:
            self.snapshots_[1] = self.snapshots_[0]
        restore(net, self.snapshots_[1])
        if self.failures_ > self.max_retries:
            raise FloatingPointError(
                f"Training diverged ({reason}) even after {self.max_retries} "
                "roll-backs with halved learning rates. Standardise the "
                "features or lower learning_rate_init."
            )
        for group in net.optimizer_.param_groups:
            group["lr"] *= 0.5
        net.optimizer_.state.clear()


class StopRequests(Callback):
    """End the loop once a stop was requested, after the epoch was logged.

    skorch's loop ends on ``KeyboardInterrupt``, and skorch runs its epoch
    log after every other callback: the interrupt is raised as the next
    epoch begins, whose empty row :func:`train` drops.
    """

    def on_epoch_begin(self, net, **kwargs):
        if getattr(net, "stop_requested_", False):
            raise KeyboardInterrupt


def callbacks(stopping, verbose, user, note):
    """The callbacks of a training run, in the order they run."""
    found = [("penalty", PassthroughScoring(name="penalty", on_train=True))]
    # The held-out loss first: the guard reads it.
    if stopping is not None:
        found.append(("early_stopping", stopping))
    found.append(("finite_guard", FiniteGuard()))
    if verbose:
        found.append(("print_log", PrintLog(keys_ignored=["member_valid_loss"])))
        found.append(("training_output", TrainingOutput(note)))
        if verbose >= 2:
            found.append(("progress_bar", EpochProgressBar()))
    for i, cb in enumerate(user or []):
        found.append(cb if isinstance(cb, tuple) else (f"user_{i}", cb))
    found.append(("stop", StopRequests()))
    return found


def _fused_available(device, dtype):
    """Whether torch's fused AdamW runs on this device and dtype."""
    probe = torch.zeros(1, device=device, dtype=dtype, requires_grad=True)
    try:
        torch.optim.AdamW([probe], fused=True)
    except (RuntimeError, TypeError, ValueError):
        return False
    return True


def make_net(
    plan,
    module,
    criterion,
    objective,
    *,
    stopping=None,
    quiet=False,
    user_callbacks=None,
    note=None,
):
    """A skorch net of the plan around ``module`` and ``criterion`` (initialised)."""
    no_decay = {"weight_decay": 0.0}
    dtype = next(module.parameters()).dtype
    # The loss's own parameters (ordinal cut-points) train in the same dtype.
    criterion = criterion.to(dtype)
    # Internal runs (the folds that choose the epoch count) stay silent and
    # leave the user's callbacks to the fit that is returned.
    verbose = 0 if quiet else plan.verbose
    user = None if quiet else user_callbacks
    net = CRNet(
        module=module,
        criterion=criterion,
        optimizer=torch.optim.AdamW,
        lr=plan.learning_rate,
        optimizer__weight_decay=plan.weight_decay,
        optimizer__betas=plan.betas,
        # One fused kernel for all parameters where torch has one: several
        # times cheaper per step than the per-tensor loop on small networks.
        optimizer__fused=_fused_available(plan.device, dtype),
        # Decay weight matrices only: biases, polynomial coefficients and
        # ordinal cut-points have their own natural scale. Without decay one
        # group does: one fused kernel call per step.
        optimizer__param_groups=[
            (pattern, no_decay)
            for part in (module, criterion)
            for pattern in getattr(part, "no_decay_patterns", ())
        ]
        if plan.weight_decay > 0
        else [],
        max_epochs=plan.max_epochs,
        batch_size=plan.batch_size,
        iterator_train=BatchLoader,
        iterator_valid=BatchLoader,
        iterator_train__shuffle=True,
        train_split=None,
        callbacks=callbacks(stopping, verbose, user, note),
        device=plan.device,
        verbose=verbose,
        objective=objective,
    )
    net.initialize()
    return net


def _copied(state):
    return {k: v.clone() if torch.is_tensor(v) else v for k, v in state.items()}


def optimizer_moments(net):
    """The optimizer's per-parameter state (Adam's moments), by parameter name."""
    state = net.optimizer_.state
    return {
        name: _copied(state[p])
        for name, p in net.get_all_learnable_params()
        if p in state
    }


def train(net, dataset, epochs, *, history=None, moments=None):
    """Train ``net`` for at most ``epochs`` epochs on ``dataset``; return it.

    ``history`` (a warm start's) continues; ``moments`` (a ``partial_fit``'s,
    from :func:`optimizer_moments`) are loaded first. A Ctrl-C (``KeyboardInterrupt``
    that no callback requested) ends training at the last complete epoch:
    ``net.interrupted_`` is set, the unfinished epoch is dropped and its
    model is the last complete epoch's (or the best one, if the stopping
    callback restored it); with no complete epoch in the history (no model
    at all), the interrupt propagates.
    """
    if history is not None:
        net.history = History(history)
    if moments is not None:
        # By name: the learning rate, the weight decay and its parameter
        # groups are the current parameters', only the moments carry over.
        for name, p in net.get_all_learnable_params():
            if name in moments:
                net.optimizer_.state[p] = _copied(moments[name])
    net.stop_requested_ = False
    start = len(net.history)
    net.rows_at_train_begin_ = start
    net.partial_fit(dataset, None, epochs=epochs)
    complete = len(net.history) - start
    if complete and "dur" not in net.history[-1]:
        # An epoch that did not end (stopped or interrupted as it ran).
        complete -= 1
        del net.history[start + complete :]
    net.interrupted_ = not net.stop_requested_ and complete < epochs
    if net.interrupted_:
        guard = dict(net.callbacks_)["finite_guard"]
        stopping = dict(net.callbacks_).get("early_stopping")
        if getattr(stopping, "restored_epoch_", None) is None:
            restore(net, guard.last_good_)
        if not len(net.history):
            raise KeyboardInterrupt
    return net


# Re-entrant: a fit may run inside another's seeded section (e.g. growth).
_GLOBAL_STATE_LOCK = threading.RLock()


@contextmanager
def torch_context(seed, n_threads=None, device="cpu"):
    """Seed torch locally and bound its threads, restoring both afterwards.

    ``fork_rng`` saves and restores the global RNG state, so a fit neither
    depends on nor changes the caller's random streams. That state is
    process-wide: fits in concurrent threads take turns.
    """
    devices = []
    if str(device).startswith("cuda"):
        dev = torch.device(device)
        devices = [dev.index if dev.index is not None else torch.cuda.current_device()]
    n_threads = clamp_threads(n_threads)
    with _GLOBAL_STATE_LOCK:
        previous = torch.get_num_threads()
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            if n_threads is not None:
                torch.set_num_threads(n_threads)
            try:
                yield
            finally:
                if n_threads is not None:
                    torch.set_num_threads(previous)
