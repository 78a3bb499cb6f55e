"""Cross-fitted members: k networks trained as one batched fit (private).

A fit with ``n_members=k > 1``, and the internal cross-validation of
``early_stopping="cv"``, train ``k`` networks as the members of one module
(:class:`~cr_sklearn.nn.CRNetwork` with ``n_members=k``). The rows are split
into ``k`` stratified folds; member ``m`` trains on the rows outside fold
``m`` and is validated on fold ``m``, its out-of-fold rows. Every batch
carries all rows: a member's weight is 0 on its held-out rows, so they never
reach its data loss, and each member's weights are normalised to mean 1 over
the rows, so its data loss is the weighted batch mean a single fit has. The
training loss is the sum over the members of their losses; the members share
no parameter, so each member's gradient is that of its own loss.

The stopping epoch is chosen on the out-of-fold rows, per member (each member
keeps the parameters of its own best epoch) or pooled (one epoch for all, on
the out-of-fold loss of every row).
"""

import copy
import math

import numpy as np
import torch
from sklearn.model_selection import KFold, StratifiedKFold
from skorch.callbacks import Callback
from torch import nn

from ._net_state import restore, snapshot

__all__ = []

#: Rows per chunk when the out-of-fold losses are evaluated.
_EVAL_ROWS = 4096
#: How a member fit chooses its stopping epoch.
STOPPING_MODES = ("per-member", "pooled")


def member_folds(y_codes, n_members, seed):
    """The fold of every row: ``(n_samples,)`` ints in ``[0, n_members)``.

    Stratified when every class present has at least ``n_members`` rows,
    else plain shuffled folds.
    """
    n = len(y_codes)
    if n < n_members:
        raise ValueError(
            f"n_members={n_members} needs at least {n_members} samples (one "
            f"held-out row per member), got {n}."
        )
    counts = np.bincount(y_codes)
    counts = counts[counts > 0]
    if counts.min() >= n_members:
        splitter = StratifiedKFold(n_members, shuffle=True, random_state=seed)
    else:
        splitter = KFold(n_members, shuffle=True, random_state=seed)
    fold = np.empty(n, dtype=np.int64)
    for m, (_, held) in enumerate(splitter.split(np.zeros((n, 1)), y_codes)):
        fold[held] = m
    return fold


def member_weights(fold, weight, n_members):
    """Training and held-out weights of the members, each ``(n_samples, M)``.

    Training weights: ``weight`` on the rows outside the member's fold, 0 on
    its fold, normalised to mean 1 over all rows. Held-out weights: ``weight``
    on the member's fold, 0 elsewhere.
    """
    inside = fold[:, None] != np.arange(n_members)[None, :]
    train = weight[:, None] * inside
    means = train.mean(axis=0)
    if not np.all(means > 0):
        raise ValueError(
            "Every member needs training rows of positive weight: with "
            f"n_members={n_members}, the rows outside member(s) "
            f"{np.flatnonzero(~(means > 0)).tolist()}'s fold all have "
            "sample_weight 0."
        )
    return train / means, weight[:, None] * ~inside


class MemberCriterion(nn.Module):
    """The per-sample losses of every member: ``(M, batch)`` from ``(M, batch, o)``.

    Holds one criterion per member (the ordinal heads have their own
    cut-points); criteria without parameters are evaluated in one call.
    """

    def __init__(self, criteria):
        super().__init__()
        self.members = nn.ModuleList(criteria)
        self.no_decay_patterns = getattr(criteria[0], "no_decay_patterns", ())
        self._shared = not any(True for _ in self.members.parameters())

    def forward(self, output, target):
        n_members, batch = output.shape[:2]
        if self._shared:
            flat = output.reshape(n_members * batch, *output.shape[2:])
            return self.members[0](flat, target.repeat(n_members)).reshape(
                n_members, batch
            )
        return torch.stack([c(output[m], target) for m, c in enumerate(self.members)])

    def cutpoints(self):
        """Every member's cut-points (ordinal heads): ``(M, K - 1)``."""
        return torch.stack([c.cutpoints() for c in self.members])

    def log_proba(self, eta):
        """Every member's log class probabilities, ``(M, batch, K)``."""
        return torch.stack([c.log_proba(eta[m]) for m, c in enumerate(self.members)])


def member_losses(net, X, y, held):
    """Each member's and the pooled weighted loss on its held-out rows.

    ``held``: ``(M, n)`` held-out weights. Evaluated in eval mode (no dropout),
    without gradients, in chunks of rows.
    """
    module, criterion = net.module_, net.criterion_
    was_training = module.training
    module.eval()
    total = torch.zeros(held.shape[0], dtype=torch.float64, device=held.device)
    try:
        with torch.no_grad():
            for start in range(0, X.shape[0], _EVAL_ROWS):
                sl = slice(start, start + _EVAL_ROWS)
                losses = criterion(module(X[sl]), y[sl]).double()
                # 0 * inf would be nan: rows a member trains on count 0.
                weighted = torch.where(held[:, sl] > 0, losses * held[:, sl], 0.0)
                total += weighted.sum(dim=1)
    finally:
        module.train(was_training)
    mass = held.sum(dim=1)
    per_member = (total / mass).cpu().numpy()
    pooled = float(total.sum() / mass.sum())
    return per_member, pooled


def _improves(value, threshold):
    return math.isfinite(value) and value < threshold


class MemberStopping(Callback):
    """Out-of-fold validation, stopping and best-epoch restore of a member fit.

    At every epoch's end, records ``valid_loss`` (the pooled out-of-fold
    loss) and ``member_valid_loss`` (each member's loss on its held-out rows)
    in the history. With ``mode="per-member"`` each member keeps the
    parameters of its own best epoch and training stops once every member
    went ``patience`` epochs without improving by more than ``tol``
    (relative); with ``mode="pooled"`` one epoch is chosen for all on the
    pooled loss. ``mode=None`` only records (a fixed budget).
    ``load_best=False`` records and stops without restoring (the internal
    cross-validation of ``early_stopping="cv"`` reads the curve only).

    Attributes set at the end of training: ``best_epochs_`` (each member's
    kept epoch, or ``None``) and ``restored_epoch_`` (the latest of them).
    """

    def __init__(self, data, *, mode, patience, tol, load_best=True):
        self.data = data
        self.mode = mode
        self.patience = patience
        self.tol = tol
        self.load_best = load_best

    def on_train_begin(self, net, **kwargs):
        n_members = self.data[2].shape[0]
        size = 1 if self.mode == "pooled" else n_members
        self.thresholds_ = np.full(size, np.inf)
        self.misses_ = np.zeros(size, dtype=int)
        self.best_epoch_ = [None] * size
        self.best_state_ = [None] * size
        self.best_epochs_ = None
        self.restored_epoch_ = None

    def on_epoch_end(self, net, **kwargs):
        X, y, held = self.data
        per_member, pooled = member_losses(net, X, y, held)
        net.history.record("valid_loss", pooled)
        net.history.record("member_valid_loss", [float(v) for v in per_member])
        if self.mode is None:
            return
        values = [pooled] if self.mode == "pooled" else per_member
        epoch = net.history[-1, "epoch"]
        state = None
        for m, value in enumerate(values):
            if _improves(float(value), self.thresholds_[m]):
                self.thresholds_[m] = float(value) * (1 - self.tol)
                self.misses_[m] = 0
                self.best_epoch_[m] = epoch
                if self.load_best:
                    # One copy per epoch, shared by the members it improved.
                    state = snapshot(net) if state is None else state
                    self.best_state_[m] = state
            else:
                self.misses_[m] += 1
        if np.all(self.misses_ >= self.patience):
            net.request_stop()

    def on_train_end(self, net, **kwargs):
        n_members = self.data[2].shape[0]
        if self.mode is None:
            return
        epochs = self.best_epoch_ * (n_members if self.mode == "pooled" else 1)
        if any(e is None for e in epochs):
            return
        self.best_epochs_ = np.asarray(epochs, dtype=int)
        self.restored_epoch_ = int(self.best_epochs_.max())
        last = net.history[-1, "epoch"]
        if self.load_best:
            if self.mode == "pooled":
                if self.best_epoch_[0] != last:
                    restore(net, self.best_state_[0])
            elif any(e != last for e in epochs):
                restore(net, merge_member_states(net, self.best_state_))
        # The snapshots are not needed once applied (and would be pickled).
        self.best_state_ = [None] * len(self.best_state_)


def merge_member_states(net, states):
    """A net state whose member ``m`` is member ``m`` of ``states[m]``.

    Goes through the network's ``member`` and ``stack``, so it does not
    depend on how a member's parameters are laid out.
    """
    module = copy.deepcopy(net.module_)
    singles = []
    for m, state in enumerate(states):
        module.load_state_dict(state["module"])
        singles.append(module.member(m))
    merged_module = (
        type(net.module_).stack(singles).to(next(net.module_.parameters()).device)
    )
    merged = {"module": merged_module.state_dict(), "criterion": {}}
    for m, state in enumerate(states):
        prefix = f"members.{m}."
        for key, value in state["criterion"].items():
            if key.startswith(prefix):
                merged["criterion"][key] = value
    return merged
