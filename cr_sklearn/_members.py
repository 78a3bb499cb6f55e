"""Members: the rows each network of a fit trains and is validated on (private).

Every fit trains ``M >= 1`` networks as the members of one module, with one
weight per row and member: ``M = 1`` for one network (validated on a
hold-out set, or not at all), ``M = n_members`` cross-fitted members, and
the ``CV_FOLDS`` folds of ``early_stopping="cv"``, which only choose the
epoch count of a refit. Member ``m`` trains on the rows where its training
weight is positive and is validated on the rows where its held-out weight
is, its out-of-fold rows; each member's training weights have mean 1 over
the rows, so its data loss is the weighted batch mean a single fit has, and
the training loss is the sum of the members' (they share no parameter).

The one-network layout (no member axis) is the case ``M = 1`` throughout:
its outputs are read with a member axis of one.
"""

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.model_selection import KFold, StratifiedKFold
from skorch.callbacks import Callback
from torch import nn

from ._utils import validation_split

__all__ = []

#: Rows per chunk when held-out losses are evaluated.
_EVAL_ROWS = 4096


def snapshot(net):
    """A copy of the model's tensors (module and criterion)."""
    parts = {"module": net.module_, "criterion": net.criterion_}
    return {
        part: {k: v.detach().clone() for k, v in obj.state_dict().items()}
        for part, obj in parts.items()
    }


def restore(net, state):
    """Load a :func:`snapshot` back into ``net``."""
    net.module_.load_state_dict(state["module"])
    net.criterion_.load_state_dict(state["criterion"])


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


@dataclass
class MemberRows:
    """Each member's training and held-out weight of every row.

    Attributes
    ----------
    train : ndarray of shape (n_samples, M)
        Training weights, each column of mean 1 over the rows some member
        trains on (:attr:`used`).
    held : ndarray of shape (n_samples, M) or None
        Held-out weights (``None``: no validation).
    fold : ndarray of shape (n_samples,) or None
        The member each row is held out for (cross-fitted members and folds).
    raw : ndarray of shape (n_samples,)
        The rows' sample weights as given (times ``class_weight``): they
        count repetitions, for the priors a network starts from.
    """

    train: np.ndarray
    held: np.ndarray = None
    fold: np.ndarray = None
    raw: np.ndarray = None

    @property
    def used(self):
        """The rows some member trains on: the training data."""
        return self.train.max(axis=1) > 0

    @property
    def n_members(self):
        """Members ``M``."""
        return self.train.shape[1]


def _normalised(train, n_members):
    # Mean 1 over the rows that train some member: a weight is a repetition
    # (rows of weight 0 are left out, as if removed).
    used = train.max(axis=1) > 0
    means = train[used].mean(axis=0) if used.any() else np.zeros(train.shape[1])
    if not np.all(means > 0):
        raise ValueError(
            "Every member needs training rows of positive weight: with "
            f"n_members={n_members}, the rows outside member(s) "
            f"{np.flatnonzero(~(means > 0)).tolist()}'s fold all have "
            "sample_weight 0."
        )
    return train / means


def member_rows(kind, y_codes, raw, seed, *, n_members=1, validation_fraction=0.1):
    """The :class:`MemberRows` of a fit.

    ``kind``: ``"all"`` (one member on every row), ``"hold-out"`` (one
    member, a stratified ``validation_fraction`` held out) or ``"folds"``
    (``n_members`` cross-fitted members). ``raw`` holds the rows' sample
    weights (non-negative, a positive sum).
    """
    n = len(y_codes)
    raw = np.asarray(raw, dtype=np.float64)
    # In units of the largest weight: huge weights cannot overflow the means.
    weight = raw / raw.max()
    if kind == "all":
        return MemberRows(_normalised(weight[:, None], 1), raw=raw)
    fold = None
    if kind == "hold-out":
        train_idx, _ = validation_split(y_codes, validation_fraction, seed)
        inside = np.zeros((n, 1), dtype=bool)
        inside[train_idx] = True
    else:
        fold = member_folds(y_codes, n_members, seed)
        inside = fold[:, None] != np.arange(n_members)[None, :]
    train = _normalised(weight[:, None] * inside, n_members)
    held = weight[:, None] * ~inside
    if fold is not None and not np.all(held.sum(axis=0) > 0):
        raise ValueError(
            "Every member needs held-out rows of positive weight to choose "
            "its stopping epoch: a fold has only rows of sample_weight 0."
        )
    return MemberRows(train, held, fold, raw=raw)


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


def member_losses(module, criterion, X, y, held):
    """Each member's and the pooled weighted loss on its held-out rows.

    ``held``: ``(M, n)`` held-out weights. Evaluated in eval mode (no dropout),
    without gradients, in chunks of rows; a one-network module is member 0.
    """
    was_training = module.training
    module.eval()
    total = torch.zeros(held.shape[0], dtype=torch.float64, device=held.device)
    try:
        with torch.no_grad():
            for start in range(0, X.shape[0], _EVAL_ROWS):
                sl = slice(start, start + _EVAL_ROWS)
                losses = criterion(module(X[sl]), y[sl]).double()
                losses = losses.reshape(-1, losses.shape[-1])
                # 0 * inf would be nan: rows a member trains on count 0.
                weighted = torch.where(held[:, sl] > 0, losses * held[:, sl], 0.0)
                total += weighted.sum(dim=1)
    finally:
        module.train(was_training)
    mass = held.sum(dim=1)
    per_member = (total / mass).cpu().numpy()
    pooled = float(total.sum() / mass.sum())
    return per_member, pooled


class MemberStopping(Callback):
    """Held-out validation, stopping and best-epoch restore of every member.

    At every epoch's end, records ``valid_loss`` (the pooled held-out loss)
    and, with more than one member, ``member_valid_loss`` in the history;
    with ``score`` (one network), ``valid_score`` too. With
    ``mode="per-member"`` each member keeps the parameters of its own best
    epoch and training stops once every member went ``patience`` epochs
    without improving by more than ``tol`` (relative); ``"pooled"`` chooses
    one epoch for all on the pooled loss; ``None`` only records.
    ``load_best=False`` stops without restoring (the folds of
    ``early_stopping="cv"`` only need the curve).

    Attributes set at the end of training: ``best_epochs_`` (each member's
    kept epoch, or ``None``) and ``restored_epoch_`` (the latest of them).
    """

    def __init__(
        self, data, *, mode, patience, tol, load_best=True, score=None, sink=None
    ):
        self.data = data
        self.mode = mode
        self.patience = patience
        self.tol = tol
        self.load_best = load_best
        self.score = score
        self.sink = sink

    def on_train_begin(self, net, **kwargs):
        size = 1 if self.mode == "pooled" else self.data[2].shape[0]
        self.thresholds_ = np.full(size, np.inf)
        self.misses_ = np.zeros(size, dtype=int)
        self.best_epoch_ = [None] * size
        self.best_state_ = [None] * size
        self.best_epochs_ = None
        self.restored_epoch_ = None
        self.stopped_ = False

    def on_epoch_end(self, net, **kwargs):
        X, y, held = self.data
        per_member, pooled = member_losses(net.module_, net.criterion_, X, y, held)
        net.history.record("valid_loss", pooled)
        if len(per_member) > 1:
            net.history.record("member_valid_loss", [float(v) for v in per_member])
        if self.score is not None:
            net.history.record("valid_score", float(self.score(net, X, y)))
        if self.mode is None:
            return
        values = [pooled] if self.mode == "pooled" else per_member
        epoch = net.history[-1, "epoch"]
        state = None
        for m, value in enumerate(values):
            value = float(value)
            if math.isfinite(value) and value < self.thresholds_[m]:
                self.thresholds_[m] = value * (1 - self.tol)
                self.misses_[m] = 0
                self.best_epoch_[m] = epoch
                if self.load_best:
                    # One copy per epoch, shared by the members it improved.
                    state = snapshot(net) if state is None else state
                    self.best_state_[m] = state
            else:
                self.misses_[m] += 1
        if np.all(self.misses_ >= self.patience):
            self.stopped_ = True
            net.request_stop()

    def on_train_end(self, net, **kwargs):
        if self.mode is None:
            return
        say = self.sink if self.sink is not None and net.verbose else None
        if say is not None and self.stopped_:
            say(
                "Stopping since valid_loss has not improved in the last "
                f"{self.patience} epochs."
            )
        n_members = self.data[2].shape[0]
        epochs = self.best_epoch_ * (n_members if self.mode == "pooled" else 1)
        if any(e is None for e in epochs):
            return
        self.best_epochs_ = np.asarray(epochs, dtype=int)
        self.restored_epoch_ = int(self.best_epochs_.max())
        last = net.history[-1, "epoch"]
        if self.load_best:
            if self.mode == "pooled" or n_members == 1:
                if self.best_epoch_[0] != last:
                    restore(net, self.best_state_[0])
                    if say is not None:
                        say(f"Restoring best model from epoch {self.best_epoch_[0]}.")
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
    criterion = {
        key: value
        for m, state in enumerate(states)
        for key, value in state["criterion"].items()
        if key.startswith(f"members.{m}.")
    }
    return {"module": merged_module.state_dict(), "criterion": criterion}
