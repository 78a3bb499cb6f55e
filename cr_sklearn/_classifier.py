"""CRClassifier: a scikit-learn classifier on a polynomial-DREG network."""

import math

import numpy as np
import torch
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from torch import nn

from ._base import BaseCR, init_arguments, partial_fit_method
from ._docs import fill_docstring

__all__ = ["CRClassifier"]


class _LogLoss(nn.Module):
    """Per-sample log-loss: logistic of a single logit, else softmax cross-entropy."""

    def forward(self, output, target):
        if output.shape[1] == 1:
            return nn.functional.binary_cross_entropy_with_logits(
                output[:, 0], target.to(output.dtype), reduction="none"
            )
        return nn.functional.cross_entropy(output, target, reduction="none")


def _sorted_classes(classes):
    """``classes`` of ``partial_fit`` as ``classes_``: sorted, each label once
    (as :class:`~sklearn.neural_network.MLPClassifier`)."""
    array = np.asarray(classes)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(
            f"classes must be a non-empty 1-d sequence of labels, got {classes!r:.100}."
        )
    try:
        np.unique(array)
    except TypeError:  # labels that cannot be ordered: strings and numbers
        raise ValueError(
            f"classes mixes labels that cannot be sorted: {classes!r:.100}."
        ) from None
    check_classification_targets(array)
    return unique_labels(array)


@fill_docstring
class CRClassifier(ClassifierMixin, BaseCR):
    """Polynomial-DREG network classifier (ChainzRule network).

    A feed-forward network of PolyLayers: a linear map followed by a learnable
    cubic polynomial per neuron. Training minimises the log-loss plus
    ``dreg_lambda`` times a DREG penalty on the Jacobians of every layer with
    respect to the input, carried by a dual-stream forward pass. skorch runs
    the training loop (early stopping, history, progress display).

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s
    See Also
    --------
    sklearn.neural_network.MLPClassifier : A ReLU/tanh network classifier.

    Notes
    -----
    The network starts from the class prior (zero output weights, prior
    log-odds as bias) with identity polynomials, i.e. close to a linear
    model; training switches curvature on where it lowers the loss.

    Dropout after each activated layer thins the network during training;
    the DREG stream then differentiates the thinned network.

    ``early_stopping="auto"`` trains the full ``max_iter`` epochs on fewer
    than 2,000 samples, where a ``validation_fraction`` hold-out of a few
    hundred rows is too small to pick the epoch, and stops early on larger
    data, where a fixed budget overfits: the same kind of rule as
    :class:`~sklearn.ensemble.HistGradientBoostingClassifier`'s.

    The defaults were chosen by cross-validation on data sets other than
    the benchmarks; the user guide's page on the defaults describes how,
    with the scripts and result files.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from cr_sklearn import CRClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = CRClassifier(random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> clf.jacobian(X[:2]).shape
    (2, 1, 20)
    """

    def __init__(
        self,
        hidden_layer_sizes=(64, 64),
        *,
        architecture="mlp",
        activation="poly",
        degree=3,
        dreg="stream",
        dreg_lambda=10**-2,
        dreg_space="encoded",
        dreg_points="data",
        n_projections="auto",
        stream_rows=64,
        max_iter=100,
        batch_size="auto",
        learning_rate_init=1e-3,
        beta_1=0.9,
        beta_2=0.999,
        early_stopping="auto",
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-4,
        class_weight=None,
        dropout="auto",
        weight_decay=0.0,
        spectral_norm=False,
        igpen_lambda=0.0,
        spread_lambda=0.0,
        standardize=True,
        encoding_bins="auto",
        dtype="float32",
        n_threads="auto",
        random_state=None,
        device="cpu",
        verbose=0,
        warm_start=False,
        callbacks=None,
        n_members=1,
        oob_score=False,
    ):
        super().__init__(**init_arguments(locals()))

    def _encode_targets(self, y, *, reset, classes=None):
        check_classification_targets(y)
        if classes is not None:
            classes = _sorted_classes(classes)
        if reset:
            labels = unique_labels(y) if classes is None else classes
            if len(labels) < 2:
                source = "the data contains" if classes is None else "classes holds"
                raise ValueError(
                    "CRClassifier needs samples of at least 2 classes in the data, "
                    f"but {source} only one class: {labels[0]!r}."
                )
            self.classes_ = labels
        elif classes is not None and not np.array_equal(classes, self.classes_):
            raise ValueError(
                f"classes={classes.tolist()!r:.200} is not the fitted classes_ "
                f"{self.classes_.tolist()!r:.200}: partial_fit cannot change the "
                "classes. Fit anew (fit, or partial_fit on an unfitted clone) to "
                "change them."
            )
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if len(unseen):
            raise ValueError(f"y contains labels not in classes_: {unseen.tolist()}.")
        return np.searchsorted(self.classes_, y).astype(np.int64)

    def _n_outputs(self):
        return 1 if len(self.classes_) == 2 else len(self.classes_)

    def _make_criterion(self, plan, codes, weight):
        return _LogLoss()

    def _output_bias(self, codes, weight):
        # The training rows' class frequencies, smoothed by one row per class.
        counts = self._class_counts(codes, weight, 1.0)
        log_prior = np.log(counts / counts.sum())
        if len(self.classes_) == 2:
            return log_prior[1:] - log_prior[:1]
        return log_prior - log_prior.mean()

    def _validation_score(self, net, output, y_codes):
        pred = (output[:, 0] > 0).long() if output.shape[1] == 1 else output.argmax(1)
        return (pred.cpu() == y_codes.cpu()).double().mean().item()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the network to ``X`` and ``y``.

        %(Parameters_X_train)s
        y : array-like of shape (n_samples,)
            Class labels (numbers or strings).
        %(sample_weight)s

        Returns
        -------
        self : CRClassifier
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    @partial_fit_method
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Run one epoch over ``X`` and ``y`` without early stopping.

        %(Parameters_X_train)s
        y : array-like of shape (n_samples,)
            Class labels.
        classes : array-like of shape (n_classes,), default=None
            All classes; required on the first call. They are sorted and
            each is kept once (``classes_``), as in
            :class:`~sklearn.neural_network.MLPClassifier`; on a later call
            they must be the fitted ``classes_`` (in any order), else a
            ``ValueError`` is raised. Labels of ``y`` outside them raise a
            ``ValueError``.
        %(sample_weight)s

        Returns
        -------
        self : CRClassifier
            The updated estimator.

        %(partial_fit_notes)s
        """
        if not hasattr(self, "net_") and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        return self._fit(X, y, sample_weight, incremental=True, classes=classes)

    def decision_function(self, X):
        """Network output (logits).

        With ``n_members > 1``, the logit of the members' averaged
        probability of ``classes_[1]`` (binary), else the logarithm of the
        averaged class probabilities: :meth:`predict_proba` is their sigmoid
        or softmax, as for one network.

        %(Parameters_X_Returns)s
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            The logit of ``classes_[1]`` for binary problems, else one logit
            per class.
        """
        out = self._outputs(self._check_X(X), combine=self._averaged)
        if self.module_.n_members is not None:  # the averaged log-probabilities
            return out[:, 1] - out[:, 0] if len(self.classes_) == 2 else out
        return out[:, 0] if out.shape[1] == 1 else out

    def _log_proba_of(self, outputs):
        out = torch.as_tensor(outputs)
        if out.shape[-1] == 1:
            return torch.nn.functional.logsigmoid(torch.cat([-out, out], dim=-1))
        return torch.log_softmax(out, dim=-1)

    def _oob_score(self, proba, y_codes):
        return float(np.mean(proba.argmax(axis=1) == y_codes))

    def _combine_jacobian(self, out, jac):
        """Jacobian of :meth:`decision_function` from the members' (chain rule).

        ``out``: the members' outputs ``(M, batch, o)``, ``jac``: their
        Jacobians ``(M, batch, o, d)``.
        """
        n_members = out.shape[0]
        if out.shape[-1] == 1:
            # d logit(mean p) = mean(p_m (1 - p_m) dz_m) / (p (1 - p)), in logs.
            up = torch.nn.functional.logsigmoid(out[..., 0])
            down = torch.nn.functional.logsigmoid(-out[..., 0])
            log_mean = torch.logsumexp(up, 0) + torch.logsumexp(down, 0)
            log_mean = log_mean - 2 * math.log(n_members)
            weight = torch.exp(up + down - log_mean) / n_members
            return (weight[..., None, None] * jac).sum(0)
        # d log(mean_m p_mc) = sum_m p_mc / (M mean p_c) d log p_mc.
        logp = torch.log_softmax(out, dim=-1)
        dlogp = jac - (logp.exp()[..., None] * jac).sum(dim=-2, keepdim=True)
        log_mean = torch.logsumexp(logp, 0) - math.log(n_members)
        weight = torch.exp(logp - math.log(n_members) - log_mean)
        return (weight[..., None] * dlogp).sum(0)

    def predict_log_proba(self, X):
        """Logarithm of the class probabilities.

        %(Parameters_X_Returns)s
        log_proba : ndarray of shape (n_samples, n_classes)
            Computed stably from the logits.
        """
        return self._outputs(self._check_X(X), combine=self._log_proba)

    def predict(self, X):
        """Predicted class labels.

        %(Parameters_X_Returns)s
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        out = self._outputs(self._check_X(X), combine=self._averaged)
        if self.module_.n_members is not None:  # the averaged log-probabilities
            codes = out.argmax(1)
        elif out.shape[1] == 1:
            codes = (out[:, 0] > 0).astype(int)
        else:
            codes = out.argmax(1)
        return self.classes_[codes]


# Its public name: pickles, skops files and their trusted-type lists read
# ``cr_sklearn.CRClassifier``, whatever the private module.
CRClassifier.__module__ = "cr_sklearn"
