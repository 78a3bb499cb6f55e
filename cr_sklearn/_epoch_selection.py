"""How long a CR estimator trains: early stopping and epochs chosen by CV (private).

``early_stopping`` resolves to one of three modes (the fitted attribute
``early_stopping_``):

- ``"off"``: train ``max_iter`` epochs on all samples;
- ``"hold-out"``: hold out a stratified ``validation_fraction``, stop when the
  validation loss stops improving and keep the best epoch;
- ``"cv"``: choose the number of epochs by internal k-fold cross-validation
  (the mean validation loss over the folds, every fold starting from the
  network the fit starts from), then train on all samples for that many
  epochs. Every sample trains the returned model, and every sample helps
  choose its length: on small data a single hold-out set is too small to
  pick the epoch reliably.

``"auto"`` is ``"off"`` below ``AUTO_HOLD_OUT_MIN_SAMPLES`` samples and
``"hold-out"`` from there on; an estimator whose
``_auto_fixed_budget_max_features`` is set also holds out on inputs wider
than that, at any size. With internal CV, ``max_iter="auto"`` counts
the search budget in optimizer steps: a table of a hundred rows takes one
step an epoch, a table of ten thousand fifty, so a budget in epochs gives
the first far too few steps and the second too many.
"""

import copy
import math

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold
from skorch.helper import predefined_split

__all__ = []

#: ``early_stopping="auto"`` holds out a validation set from this size on.
AUTO_HOLD_OUT_MIN_SAMPLES = 2000
#: Folds of the internal cross-validation.
CV_SPLITS = 3
#: ``max_iter="auto"`` with internal CV: at most this many optimizer steps.
AUTO_MAX_STEPS = 2000
#: ``max_iter="auto"`` otherwise (a fixed budget, or a hold-out set).
AUTO_MAX_EPOCHS = 100
#: Patience of the internal CV runs: at least this many optimizer steps.
MIN_PATIENCE_STEPS = 50


def steps_per_epoch(n_samples, batch_size):
    """Optimizer steps in one epoch over ``n_samples`` in batches of ``batch_size``."""
    return max(1, math.ceil(n_samples / batch_size))


def _cv_folds(y_codes, seed):
    """Stratified folds when every class can be split, else plain ones; or None."""
    n = len(y_codes)
    if n < 2 * CV_SPLITS:
        return None
    counts = np.bincount(y_codes)
    counts = counts[counts > 0]
    if counts.min() >= CV_SPLITS:
        splitter = StratifiedKFold(CV_SPLITS, shuffle=True, random_state=seed)
    else:
        splitter = KFold(CV_SPLITS, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros((n, 1)), y_codes))


class EpochSelectionMixin:
    """Resolve ``early_stopping`` and ``max_iter``; choose epochs by internal CV.

    Needs ``_build_net``, ``_batch_size``, ``_dataset`` and the estimator's
    parameters.
    """

    #: ``early_stopping="auto"`` trains a fixed budget below
    #: ``AUTO_HOLD_OUT_MIN_SAMPLES`` samples only on inputs of at most this
    #: many columns (``None``: on any input).
    _auto_fixed_budget_max_features = None

    def _early_stopping_mode(self, n_samples, n_features, *, incremental):
        """``"cv"``, ``"hold-out"`` or ``"off"`` for a fit on this data."""
        if incremental:
            return "off"
        if self.early_stopping == "cv":
            return "cv"
        if isinstance(self.early_stopping, str):  # "auto"
            widest = self._auto_fixed_budget_max_features
            small = n_samples < AUTO_HOLD_OUT_MIN_SAMPLES
            narrow = widest is None or n_features <= widest
            return "off" if small and narrow else "hold-out"
        return "hold-out" if self.early_stopping else "off"

    def _max_epochs(self, mode, steps_per_epoch):
        """The epoch budget ``max_iter`` resolves to."""
        if self.max_iter != "auto":
            return int(self.max_iter)
        if mode == "cv":
            return max(1, math.ceil(AUTO_MAX_STEPS / steps_per_epoch))
        return AUTO_MAX_EPOCHS

    def _cv_epochs(self, module, criterion, X, y_codes, weight, seed):
        """Epochs that minimise the mean validation loss over internal folds.

        Every fold trains a copy of ``module``/``criterion`` (the network the
        final fit starts from) on the other folds, with patience, and records
        its validation loss per epoch. Returns ``(n_epochs, mean_curve)``, or
        ``None`` when the data is too small to split.
        """
        folds = _cv_folds(y_codes, seed)
        if folds is None:
            return None
        curves = []
        for train, valid in folds:
            net = self._build_net(
                copy.deepcopy(module), copy.deepcopy(criterion), X.shape[1], quiet=True
            )
            batch = net.batch_size = self._batch_size(len(train))
            steps = steps_per_epoch(len(train), batch)
            stopping = dict(net.callbacks_)["early_stopping"]
            stopping.patience = max(
                self.n_iter_no_change, math.ceil(MIN_PATIENCE_STEPS / steps)
            )
            # Only the curve is needed, not the fold's best weights.
            stopping.load_best = False
            valid_ds = self._dataset(X, y_codes, weight, valid)
            net.train_split = predefined_split(valid_ds)
            net.valid_dataset_ = valid_ds
            net.partial_fit(
                self._dataset(X, y_codes, weight, train),
                None,
                epochs=self._max_epochs("cv", steps),
            )
            if getattr(net, "interrupted_", False):
                # Ctrl-C in a fold: skorch returned the fold's epochs so far,
                # but no epoch count can be chosen from them; the fit stops.
                raise KeyboardInterrupt
            curves.append(np.asarray(net.history[:, "valid_loss"], dtype=float))
        # Each fold stopped by its own patience; after it stopped, its loss is
        # taken to stay at its last value (it had stopped improving).
        length = max(len(c) for c in curves)
        mean = np.mean(
            [np.pad(c, (0, length - len(c)), mode="edge") for c in curves], axis=0
        )
        finite = np.where(np.isfinite(mean), mean, np.inf)
        return int(np.argmin(finite)) + 1, mean
