"""skorch machinery behind the CR estimators (private).

The estimators are scikit-learn estimators that *use* a skorch net inside
``fit``: skorch runs the epochs, callbacks, history and early stopping; this
module adds the pieces skorch does not have: the DREG loss composition, a
batch loader that slices tensors instead of collating single rows, a guard
against non-finite steps, and the seeding/threading context of a fit.
"""

import copy
import math
import threading
from contextlib import contextmanager

import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping

from .nn import PENALTIES, input_gradient_penalty

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


class _CRNet(NeuralNet):
    """A skorch ``NeuralNet`` whose loss is data loss + DREG (+ IGPen).

    ``get_loss`` is the one place where the loss is composed. When no penalty
    needs the Jacobian stream, the stream is not computed.
    """

    def __init__(
        self,
        *args,
        dreg=None,
        dreg_lambda=0.0,
        n_projections=None,
        stream_rows=None,
        igpen_lambda=0.0,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.dreg = dreg
        self.dreg_lambda = dreg_lambda
        self.n_projections = n_projections
        self.stream_rows = stream_rows
        self.igpen_lambda = igpen_lambda

    def _penalty(self):
        if self.dreg is None or self.dreg_lambda == 0:
            return None
        return PENALTIES[self.dreg]

    def infer(self, x, **fit_params):
        X = x["X"] if isinstance(x, dict) else x
        X = X.to(self.device)
        if not self.module_.training:
            return self.module_(X)
        penalty = self._penalty()
        if self.igpen_lambda > 0:
            X = X.detach().requires_grad_(True)
        stream = None
        if penalty is not None and penalty.needs == "stream":
            stream = self.n_projections
        rows = None
        if stream is not None and self.stream_rows and X.shape[0] > self.stream_rows:
            # A uniform random subset of rows carries the stream: the batch-mean
            # penalty stays unbiased at a fraction of the stream's cost.
            rows = torch.randperm(X.shape[0], device=X.device)[: self.stream_rows]
        result = self.module_.forward_stream(
            X, stream, derivatives=penalty is not None, rows=rows
        )
        self._train_cache = (X, result)
        return result.output

    def get_loss(self, y_pred, y_true, X=None, training=False):
        per_sample = self.criterion_(y_pred, y_true.to(y_pred.device))
        weight = X.get("sample_weight") if isinstance(X, dict) else None
        if weight is not None:
            per_sample = per_sample * weight.to(per_sample.device)
        data_loss = per_sample.mean()
        if not training:
            return data_loss
        inputs, result = self._train_cache
        self._train_cache = None
        loss = data_loss
        penalty = self._penalty()
        if penalty is not None:
            value = penalty.function(result)
            self.history.record_batch("penalty", value.item())
            loss = loss + self.dreg_lambda * value
        if self.igpen_lambda > 0:
            value = input_gradient_penalty(per_sample, inputs)
            self.history.record_batch("igpen", value.item())
            loss = loss + self.igpen_lambda * value
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
        if torch.isfinite(loss):
            loss.backward()
            if not self._gradients_finite():
                # A non-finite gradient would poison Adam's moments: skip it.
                self._zero_grad_optimizer(set_to_none=True)
                self.history.record_batch("skipped", 1)
        else:
            # No backward: every grad stays None and the optimizer skips them.
            self.history.record_batch("skipped", 1)
        return {"loss": loss.detach(), "y_pred": y_pred.detach()}


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

    @staticmethod
    def _copy(state):
        # Tensor clones: a deepcopy of the state dict costs as much as an
        # epoch of a small net.
        return {
            k: v.detach().clone() if torch.is_tensor(v) else copy.deepcopy(v)
            for k, v in state.items()
        }

    def _state(self, net):
        return {
            "module": self._copy(net.module_.state_dict()),
            "criterion": self._copy(net.criterion_.state_dict()),
        }

    def _restore(self, net, state):
        net.module_.load_state_dict(state["module"])
        net.criterion_.load_state_dict(state["criterion"])

    def on_train_begin(self, net, **kwargs):
        state = self._state(net)
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
            self.snapshots_ = [self.snapshots_[1], self._state(net)]
            self.consecutive_ = 0
            return
        self.failures_ += 1
        self.consecutive_ += 1
        net.history.record("rolled_back", True)
        if self.consecutive_ > 1:
            self.snapshots_[1] = self.snapshots_[0]
        self._restore(net, self.snapshots_[1])
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
    """skorch's early stopping, idle in epochs without validation data."""

    def on_epoch_end(self, net, **kwargs):
        if "valid_loss" in net.history[-1]:
            super().on_epoch_end(net, **kwargs)

    def on_train_end(self, net, **kwargs):
        if self.load_best and self.best_epoch_ is not None:
            super().on_train_end(net, **kwargs)


# Re-entrant: a fit may run inside another's seeded section (e.g. growth).
_GLOBAL_STATE_LOCK = threading.RLock()


@contextmanager
def _torch_context(seed, n_threads=None, device="cpu"):
    """Seed torch locally and bound its threads, restoring both afterwards.

    ``fork_rng`` saves and restores the global RNG state, so a fit neither
    depends on nor changes the caller's random streams. That state is
    process-wide: fits in concurrent threads take turns (they would otherwise
    draw from, and restore, each other's streams).
    """
    devices = []
    if str(device).startswith("cuda"):
        dev = torch.device(device)
        devices = [dev.index if dev.index is not None else torch.cuda.current_device()]
    with _GLOBAL_STATE_LOCK:
        previous = torch.get_num_threads()
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            if n_threads is not None:
                torch.set_num_threads(int(n_threads))
            try:
                yield
            finally:
                if n_threads is not None:
                    torch.set_num_threads(previous)
