"""skorch machinery behind the CR estimators (private).

The estimators are scikit-learn estimators that *use* a skorch net inside
``fit``: skorch runs the epochs, callbacks, history and early stopping; this
module adds the pieces skorch does not have: the DREG loss composition, a
batch loader that slices tensors instead of collating single rows, a guard
against non-finite steps, and the seeding/threading context of a fit.
"""

import math
import threading
from contextlib import contextmanager

import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping

from ._net_state import restore, snapshot
from ._utils import clamp_threads

__all__ = []


class _TensorDataset(torch.utils.data.Dataset):
    """Tensors held whole; ``_BatchLoader`` slices them batch by batch."""

    def __init__(self, X, y, sample_weight=None):
        self.X = {"X": X}
        if sample_weight is not None:
            self.X["sample_weight"] = sample_weight
        self.y = y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {k: v[i] for k, v in self.X.items()}, self.y[i]


class _BatchLoader:
    """Yield ``(X_dict, y)`` batches by slicing tensors.

    A torch ``DataLoader`` fetches and collates one row at a time; for small
    tabular nets that per-row Python work dominates the epoch.
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
        if self.shuffle and n > self.batch_size:
            order = torch.randperm(n, device=y.device)
            for start in range(0, n, self.batch_size):
                idx = order[start : start + self.batch_size]
                yield {k: v[idx] for k, v in X.items()}, y[idx]
        else:
            for start in range(0, n, self.batch_size):
                sl = slice(start, start + self.batch_size)
                yield {k: v[sl] for k, v in X.items()}, y[sl]


def _all_finite(tensors):
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
            # The scale 1 leaves the tensors unchanged.
            torch._amp_foreach_non_finite_check_and_unscale_(
                group, found, torch.ones(1, device=device, dtype=torch.float32)
            )
        except (AttributeError, NotImplementedError, RuntimeError):
            # A torch build without that kernel for this device or dtype.
            found = torch.stack([torch.isfinite(t).all() for t in group]).logical_not()
        if found.any().item():
            return False
    return True


# The events skorch sends once or more per batch.
_BATCH_EVENTS = ("on_batch_begin", "on_batch_end", "on_grad_computed")


def _handles(callback, event):
    """Whether ``callback`` does anything on ``event`` (not skorch's no-op)."""
    method = getattr(callback, event, None)
    return getattr(method, "__func__", None) is not getattr(Callback, event)


class _CRNet(NeuralNet):
    """A skorch ``NeuralNet`` that minimises a :class:`TrainingObjective`.

    In training, ``infer`` returns skorch's tuple output ``(output,
    stream_result)`` and ``get_loss`` hands both to the objective, the one
    place where the loss is composed. Callbacks ask the net to stop with
    :meth:`request_stop`: the stop takes effect once every callback
    (including the epoch log) has seen the epoch.
    """

    def __init__(self, *args, objective=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.objective = objective

    def request_stop(self):
        """Stop training after the current epoch's callbacks have run."""
        self.stop_requested_ = True

    def notify(self, method_name, **cb_kwargs):
        listeners = getattr(self, "_batch_listeners", None)
        if listeners is not None and method_name in listeners:
            # Per-batch events reach only the callbacks that handle them: the
            # default ones do not, and three no-op calls each per step add up
            # on small networks.
            getattr(self, method_name)(self, **cb_kwargs)
            for cb in listeners[method_name]:
                getattr(cb, method_name)(self, **cb_kwargs)
            return
        if method_name == "on_train_begin":
            self.stop_requested_ = False
            self.interrupted_ = False
            self._last_complete_epoch = None
            self._rows_at_train_begin = len(self.history)
            # Fixed for the whole training call: callbacks are set up before.
            self._batch_listeners = {
                event: [cb for _, cb in self.callbacks_ if _handles(cb, event)]
                for event in _BATCH_EVENTS
            }
        super().notify(method_name, **cb_kwargs)
        if method_name == "on_train_end":
            self._batch_listeners = None
        if method_name in ("on_train_begin", "on_epoch_end"):
            self._mark_complete_epoch()
        if method_name == "on_epoch_end" and getattr(self, "stop_requested_", False):
            # skorch's way to end the epoch loop (its fit loop catches it).
            raise KeyboardInterrupt

    def _mark_complete_epoch(self):
        # The history length and the model state at the end of the last
        # complete epoch. The finite guard holds that state already (its
        # latest good snapshot, never mutated): keep a reference, no copy.
        guard = dict(self.callbacks_).get("finite_guard")
        state = None if guard is None else guard.snapshots_[1]
        self._last_complete_epoch = (len(self.history), state)

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        """skorch's epoch loop; a real interrupt rewinds to the last full epoch.

        skorch ends training on ``KeyboardInterrupt`` (and early stopping
        raises one through :meth:`request_stop`). An interrupt that no
        callback requested is the user's (Ctrl-C): it sets ``interrupted_``,
        drops the unfinished epoch from the history and restores the model
        of the last complete one, so the returned model matches its history.
        """
        try:
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
        except KeyboardInterrupt:
            if not getattr(self, "stop_requested_", False):
                self.interrupted_ = True
                self._rewind_to_complete_epoch()
            raise

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """skorch's ``partial_fit``; an interrupt before any epoch propagates.

        With no complete epoch in the history there is no model to return,
        so the ``KeyboardInterrupt`` skorch swallowed is raised again (after
        the callbacks' ``on_train_end``).
        """
        super().partial_fit(X, y, classes, **fit_params)
        if getattr(self, "interrupted_", False) and not len(self.history):
            raise KeyboardInterrupt
        return self

    def _rewind_to_complete_epoch(self):
        last = getattr(self, "_last_complete_epoch", None)
        if last is None:
            return
        n_rows, state = last
        if len(self.history) > n_rows:
            del self.history[n_rows:]
            if state is not None:
                restore(self, state)
        if len(self.history) == self._rows_at_train_begin:
            # Not one epoch of this fit completed: nothing was validated.
            self.valid_dataset_ = None

    def interrupt_message(self):
        """The warning of an interrupted fit (see :meth:`fit_loop`)."""
        done = len(self.history) - getattr(self, "_rows_at_train_begin", 0)
        return (
            "Training interrupted by user: the fit stopped after "
            f"{done} complete epoch(s) of this call and returns that model."
        )

    def infer(self, x, **fit_params):
        X = x["X"] if isinstance(x, dict) else x
        X = X.to(self.device)
        if not self.module_.training:
            return self.module_(X)
        return self.objective.forward(self.module_, X)

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

    def _set_training(self, training=True):
        # skorch sets the mode before every batch; walking the module tree each
        # time costs as much as a small net's arithmetic, so skip it when set.
        for name in self._modules + self._criteria:
            module = getattr(self, name + "_")
            if isinstance(module, torch.nn.Module) and module.training != training:
                super()._set_training(training)
                return

    def _gradients_finite(self):
        """Whether every gradient the optimizer will apply is finite."""
        return _all_finite(
            [
                p.grad
                for group in self.optimizer_.param_groups
                for p in group["params"]
                if p.grad is not None
            ]
        )

    def train_step_single(self, batch, **fit_params):
        self._set_training(True)
        Xi, yi = batch
        y_pred = self.infer(Xi, **fit_params)
        loss = self.get_loss(y_pred, yi, X=Xi, training=True)
        output = y_pred[0]
        if torch.isfinite(loss):
            loss.backward()
            if not self._gradients_finite():
                # A non-finite gradient would poison Adam's moments: skip it.
                self._zero_grad_optimizer(set_to_none=True)
                self.history.record_batch("skipped", 1)
        else:
            # No backward: every grad stays None and the optimizer skips them.
            self.history.record_batch("skipped", 1)
        return {"loss": loss.detach(), "y_pred": output.detach()}


class _FiniteGuard(Callback):
    """Roll back to the last good state and halve the step on divergence.

    An epoch diverged when a learnable parameter is NaN/inf, when every
    training batch was skipped (non-finite loss or gradient, see
    ``_CRNet.train_step_single``) or when the validation loss is not finite.
    The state saved after the last good epoch is restored (after two failures
    in a row, the one before it: the last good epoch's final step may itself
    have produced the diverging state), every learning rate is halved and
    Adam's moments are cleared. After ``max_retries`` roll-backs in one call to
    ``fit``, the last good state is restored and ``FloatingPointError`` is
    raised: a fit never returns non-finite parameters.
    """

    def __init__(self, max_retries=8):
        self.max_retries = max_retries

    def on_train_begin(self, net, **kwargs):
        state = snapshot(net)
        # [the one before, the latest] good states.
        self.snapshots_ = [state, state]
        self.failures_ = 0
        self.consecutive_ = 0

    @staticmethod
    def _divergence(net):
        """Why the epoch just run diverged, or ``None``."""
        if not _all_finite([p for _, p in net.get_all_learnable_params()]):
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
        # Adam's moments may hold non-finite values too: start them afresh.
        net.optimizer_.state.clear()


class _ValidScore(Callback):
    """Record ``valid_score`` (greater is better) on the net's validation set.

    The validation data is ``net.valid_dataset_`` (set per fit; ``None``
    skips scoring, e.g. in ``partial_fit``).
    """

    def __init__(self, score_fn):
        self.score_fn = score_fn

    def on_epoch_end(self, net, **kwargs):
        dataset = getattr(net, "valid_dataset_", None)
        if dataset is None:
            return
        X = dataset.X["X"].to(net.device)
        was_training = net.module_.training
        net.module_.eval()
        with torch.no_grad():
            output = net.module_(X)
        net.module_.train(was_training)
        score = self.score_fn(net, output, dataset.y)
        net.history.record("valid_score", float(score))


class _EarlyStopping(EarlyStopping):
    """skorch's early stopping, restoring the whole model of the best epoch.

    skorch's ``load_best`` restores ``module_`` only; the ordinal cut-points
    live in the criterion, so the best epoch's snapshot covers both
    (:func:`~cr_sklearn._net_state.snapshot`). Idle in epochs without
    validation data. The epoch whose model is returned is recorded once, as
    ``restored_epoch_`` (``None`` when nothing was restored), and the stop
    goes through :meth:`_CRNet.request_stop`, so the epoch log prints the
    last epoch too.
    """

    def on_train_begin(self, net, **kwargs):
        super().on_train_begin(net, **kwargs)
        self.best_state_ = None
        self.restored_epoch_ = None
        self.stopped_ = False

    def on_epoch_end(self, net, **kwargs):
        if "valid_loss" not in net.history[-1]:
            return
        if self._is_score_improved(net.history[-1, self.monitor]):
            self.misses_ = 0
            self.dynamic_threshold_ = self._calc_new_threshold(
                net.history[-1, self.monitor]
            )
            self.best_epoch_ = net.history[-1, "epoch"]
            if self.load_best:
                self.best_state_ = snapshot(net)
        else:
            self.misses_ += 1
        if self.misses_ == self.patience:
            self.stopped_ = True
            net.request_stop()

    def on_train_end(self, net, **kwargs):
        if getattr(self, "stopped_", False):
            # After the epoch log's last row, not before it.
            self._sink(
                f"Stopping since {self.monitor} has not improved in the last "
                f"{self.patience} epochs.",
                verbose=net.verbose,
            )
        if not self.load_best or self.best_state_ is None:
            return
        self.restored_epoch_ = self.best_epoch_
        if self.best_epoch_ != net.history[-1, "epoch"]:
            restore(net, self.best_state_)
            self._sink(
                f"Restoring best model from epoch {self.best_epoch_}.",
                verbose=net.verbose,
            )
        # The snapshot is not needed once applied (and would be pickled).
        self.best_state_ = None


# Re-entrant: a fit may run inside another's seeded section (e.g. growth).
_GLOBAL_STATE_LOCK = threading.RLock()


@contextmanager
def _torch_context(seed, n_threads=None, device="cpu"):
    """Seed torch locally and bound its threads, restoring both afterwards.

    ``n_threads`` above the CPUs this process may use is clamped to them,
    with a warning (:func:`~cr_sklearn._utils.clamp_threads`).

    ``fork_rng`` saves and restores the global RNG state, so a fit neither
    depends on nor changes the caller's random streams. That state is
    process-wide: fits in concurrent threads take turns (they would otherwise
    draw from, and restore, each other's streams).
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
