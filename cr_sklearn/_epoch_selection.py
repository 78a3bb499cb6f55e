"""How long a CR estimator trains: early stopping and epochs chosen by CV (private).

``early_stopping`` resolves to one of three modes (the fitted attribute
``early_stopping_``):

- ``"off"``: train ``max_iter`` epochs on all samples;
- ``"hold-out"``: hold out a stratified ``validation_fraction``, stop when the
  validation loss stops improving and keep the best epoch;
- ``"cv"``: choose the number of epochs by internal k-fold cross-validation
  (the pooled out-of-fold loss, every fold starting from the network the fit
  starts from; the folds train as the members of one batched fit, the
  mechanism of ``n_members``), then train on all samples for that many
  epochs. Every sample trains the returned model, and every sample helps
  choose its length: on small data a single hold-out set is too small to
  pick the epoch reliably. With ``n_members > 1`` (any ``early_stopping``
  but ``False``) the members are the model, each keeping the epoch chosen
  on its own fold (or the pooled one), with no refit.

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

from ._cross_fit import MemberCriterion, member_folds, member_weights

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
        if self._member_count() is not None:
            # The members' out-of-fold rows choose the epoch: no hold-out.
            return "off" if self.early_stopping is False else "cv"
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
        """Epochs that minimise the pooled out-of-fold loss of internal folds.

        The ``CV_SPLITS`` fold networks are the members of one batched fit
        (:mod:`cr_sklearn._cross_fit`, the mechanism of ``n_members``), each a
        copy of ``module``/``criterion`` (the network the final fit starts
        from) trained on the rows outside its fold; the pooled loss of every
        row under the member that did not train on it is recorded per epoch,
        and training stops when it has not improved for the patience.
        Returns ``(n_epochs, pooled_curve)``, or ``None`` when the data is too
        small to split.
        """
        n = len(y_codes)
        if n < 2 * CV_SPLITS:
            return None
        fold = member_folds(y_codes, CV_SPLITS, seed)
        weight = np.ones(n) if weight is None else weight
        train_weight, held_weight = member_weights(fold, weight, CV_SPLITS)
        stacked = type(module).stack([module] * CV_SPLITS)
        criteria = MemberCriterion([copy.deepcopy(criterion) for _ in range(CV_SPLITS)])
        steps = steps_per_epoch(n, self._batch_size_)
        # Only the curve is needed, not the folds' best weights.
        stopping = self._member_stopping(
            X, y_codes, held_weight, steps, "pooled", load_best=False
        )
        net = self._build_net(
            stacked, criteria, X.shape[1], quiet=True, stopping=stopping
        )
        net.train_split = None
        net.valid_dataset_ = None
        net.partial_fit(
            self._dataset(X, y_codes, train_weight, np.arange(n)),
            None,
            epochs=self._max_epochs("cv", steps),
        )
        if getattr(net, "interrupted_", False):
            # Ctrl-C in the folds: skorch returned the epochs so far, but no
            # epoch count can be chosen from them; the fit stops.
            raise KeyboardInterrupt
        curve = np.asarray(net.history[:, "valid_loss"], dtype=float)
        finite = np.where(np.isfinite(curve), curve, np.inf)
        return int(np.argmin(finite)) + 1, curve
