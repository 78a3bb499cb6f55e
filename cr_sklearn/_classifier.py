"""CRClassifier: a scikit-learn classifier on a polynomial-DREG network."""

import math

import numpy as np
import torch
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from torch import nn

from ._base import BaseCR, partial_fit_available

__all__ = ["CRClassifier"]


class _BinaryLogitLoss(nn.Module):
    """Per-sample logistic loss of a single logit."""

    def forward(self, output, target):
        return nn.functional.binary_cross_entropy_with_logits(
            output[:, 0], target.to(output.dtype), reduction="none"
        )


class _CrossEntropyLoss(nn.Module):
    """Per-sample softmax cross-entropy."""

    def forward(self, output, target):
        return nn.functional.cross_entropy(output, target, reduction="none")


def _sorted_classes(classes):
    """``classes`` of ``partial_fit`` as ``classes_``: sorted, each label once.

    As :class:`~sklearn.neural_network.MLPClassifier`: the order given does
    not matter, repeats count once.
    """
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


class CRClassifier(ClassifierMixin, BaseCR):
    """Polynomial-DREG network classifier (ChainzRule network).

    A feed-forward network of PolyLayers: a linear map followed by a learnable
    cubic polynomial per neuron. Training minimises the log-loss plus
    ``dreg_lambda`` times a DREG penalty on the Jacobians of every layer with
    respect to the input, carried by a dual-stream forward pass. skorch runs
    the training loop (early stopping, history, progress display).

    Parameters
    ----------
    hidden_layer_sizes : array-like of int, default=(64, 64)
        Width of each activated layer: an int or a flat sequence of ints
        >= 1 (floats and bools raise a ``ValueError`` naming the entry). A
        network of more than 10**9 learnable parameters (with ``degree``
        and the encoded columns) raises a ``ValueError`` before it is built.
    architecture : {"mlp", "residual"}, default="mlp"
        ``"mlp"``: a plain stack of PolyLayers. ``"residual"``: normalised
        residual blocks (see :mod:`cr_sklearn.growth`), which can be deepened
        after fitting without changing the function.
    activation : {"poly", "relu", "gelu", "tanh", "swish"}, default="poly"
        ``"poly"`` is the learnable polynomial (PolyLayer); the others are
        fixed activations with closed-form derivatives.
    degree : int, default=3
        Degree of the polynomial activation.
    dreg : {"stream", "local"} or None, default="stream"
        DREG penalty. ``"stream"``: mean over the :math:`L` layers of the
        squared Frobenius norm of each layer's Jacobian with respect to the
        (standardised) input, :math:`\\frac{1}{L} \\sum_l \\lVert J_l(x)
        \\rVert_F^2`, from the forward stream. ``"local"``:
        :math:`\\frac{1}{L} \\sum_l \\sum_i \\phi'(z_{l,i})^2 \\lVert W_{l,i}
        \\rVert^2` over the neurons :math:`i` of layer :math:`l` (pre-activation
        :math:`z_{l,i}`, weight row :math:`W_{l,i}`), no stream needed.
        ``None``: no penalty, and no stream is computed.
    dreg_lambda : float, default=10**-2
        Strength of the DREG penalty: the training loss is the data loss
        plus ``dreg_lambda`` times the penalty.
    n_projections : "auto", "exact" or int, default="auto"
        How the stream is carried: ``"exact"`` carries the full Jacobian
        (cost grows with ``n_features``), an int ``k`` carries ``k`` random
        directions (an unbiased estimate of the squared norm); a ``k``
        above ``n_features`` is capped, with a warning: the exact stream is
        used (as cheap, and exact). ``"auto"`` is exact up to 32 features
        and 4 directions above.
    stream_rows : int or None, default=64
        Rows of each training batch that carry the Jacobian stream of
        ``dreg="stream"``: a uniformly random subset drawn per step, so the
        penalty is an unbiased estimate of its batch mean at a fraction of
        the stream's cost. ``None`` carries every row.
    max_iter : int or "auto", default=100
        Maximum number of epochs (the number of epochs when
        early stopping is off). ``"auto"`` is 100 epochs, or with
        ``early_stopping="cv"`` a search budget of 2,000 optimizer steps
        (``max_iter_`` is the resolved value).
    batch_size : int or "auto", default="auto"
        Minibatch size; ``"auto"`` is ``min(200, n_samples)``.
    learning_rate_init : float or "auto", default=1e-3
        Adam(W) learning rate. ``"auto"`` is ``1e-3 * max(1, batch / 200)``:
        a larger batch takes fewer, proportionally larger steps per epoch
        (the linear scaling rule). With ``batch_size=n_samples`` it is a fast
        path for small data (see the user guide's training page).
    beta_1 : float, default=0.9
        Adam(W)'s decay rate of its first-moment (mean gradient) estimate,
        in ``[0, 1)``, as in :class:`~sklearn.neural_network.MLPClassifier`.
    beta_2 : float, default=0.999
        Adam(W)'s decay rate of its second-moment (squared gradient)
        estimate, in ``[0, 1)``. Lower values (RealMLP's default is one)
        adapt the step sizes to recent gradients faster.
    early_stopping : bool, "auto" or "cv", default="auto"
        ``"auto"`` enables early stopping when ``fit`` gets at least 2,000
        samples and trains the full ``max_iter`` epochs below that. ``True``:
        hold out ``validation_fraction`` of the training data (stratified),
        stop when the validation loss stops improving and restore the best
        epoch's weights. ``"cv"``: choose the number of epochs by internal
        3-fold cross-validation (the epoch of least pooled out-of-fold loss,
        the folds training as the members of one batched fit as with
        ``n_members``, each starting from the network the fit starts from,
        with a patience of at least 50 optimizer steps), then train on
        all samples for that many epochs (the resolved mode is
        ``early_stopping_``). With ``n_members > 1``, every value but
        ``False`` chooses each member's epoch on its own fold (see
        ``n_members``). With early stopping on, a best epoch among the
        last ``n_iter_no_change`` of ``max_iter_`` (the validation loss was
        still improving) raises a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    validation_fraction : float, default=0.1
        Fraction held out for early stopping. A fraction that leaves no
        validation row, or fewer training rows than classes, raises a
        ``ValueError``.
    n_iter_no_change : int, default=10
        Epochs without improvement of more than ``tol`` (relative) before
        stopping.
    tol : float, default=1e-4
        Relative improvement threshold for early stopping.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes in the loss, as in
        :class:`~sklearn.linear_model.LogisticRegression`: finite numbers
        >= 0 (0 leaves a class out of the loss); classes missing from the
        dict weigh 1, and keys that are not classes raise a ``ValueError``.
    dropout : float or "auto", default="auto"
        Dropout probability after each activated layer (training only; the
        stream then carries the Jacobian of the thinned network). ``"auto"``:
        0.3 with an input encoding (see ``encoding_bins``), else 0.1. The
        value used is ``dropout_``.
    weight_decay : float, default=0.0
        Decoupled weight decay (AdamW) on the weight matrices.
    spectral_norm : bool, default=False
        Spectrally normalise every weight matrix.
    igpen_lambda : float, default=0.0
        Strength of the input-gradient penalty computed by double
        backpropagation (a baseline regulariser for comparisons with DREG).
    standardize : bool, default=True
        Standardise features inside the network with the training mean and
        standard deviation. Jacobians are still reported with respect to the
        raw ``X``.
    encoding_bins : int, "auto" or None, default="auto"
        With an int (at least 2), every standardised column with more than two
        distinct training values is encoded inside the network as ramps through
        ``encoding_bins`` quantile bins of the training rows (as
        :class:`PiecewiseLinearEncoder`), each ramp standardised; binary and
        constant columns pass through. The bins are fitted by the fit that
        builds the network and kept under ``warm_start`` and
        :meth:`partial_fit`. DREG's stream then differentiates by the encoded
        columns (the encoding acts as fixed features), while :meth:`jacobian`,
        :meth:`input_gradient_norms` and tau are taken with respect to ``X``,
        through the encoding; :meth:`input_sensitivity` alone reads the
        encoded columns (its docstring says why). ``"auto"``:
        4 bins when ``X`` has at most 100 columns, no encoding above (sentence
        embeddings, for instance); the user guide's page on the defaults has
        the measurements. ``None``: no encoding. The value used is
        ``encoding_bins_``. Bins the training rows cannot tell apart are
        dropped, with a warning, as in :class:`PiecewiseLinearEncoder`: a
        column gets at most an edge on every distinct value.
    dtype : {"float32", "float64"}, default="float32"
        The dtype the network's layers train in. The input transform
        (standardisation and encoding) is fitted and applied in float64
        either way, and predictions are computed in float64 from the
        trained weights: they are the trained function to float32
        rounding, checked at the end of every fit on up to 1,000 training
        rows (see the user guide's page on the network). ``"float64"``
        trains at about half the speed; its fits do not depend on the order
        of the rows within a batch, so a sample weight of ``k`` equals ``k``
        repeated rows to float64 rounding (scikit-learn's
        ``check_sample_weight_equivalence_on_dense_data`` passes with it,
        without dropout and with the exact stream).
    n_threads : int, "auto" or None, default="auto"
        Torch threads used while fitting (restored afterwards), at most the
        CPUs the process may use (more are clamped, with a warning).
        ``"auto"``: one thread unless a training step's arithmetic (batch
        rows times the network's weights) is large enough for more to pay,
        then at most four; small networks lose time to a second thread, and
        lose much more when the cores are shared (a grid search with
        ``n_jobs``, a laptop, CI). It depends on the data's shape and the
        usable CPUs only, so seeded fits stay reproducible. ``None`` leaves
        torch's setting. Prediction uses torch's setting.
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, shuffling, validation split, dropout and
        projections. Fits with the same seed give identical predictions.
    device : str, default="cpu"
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``. On CPU, fits with
        the same ``random_state`` and torch thread count are bit-identical.
        On CUDA they are not guaranteed to be (cuBLAS may choose
        non-deterministic kernels: set ``CUBLAS_WORKSPACE_CONFIG=:4096:8``
        and ``torch.use_deterministic_algorithms(True)`` to require
        determinism), and they differ from CPU fits in the last bits.
    verbose : int, default=0
        1 prints a table per epoch (losses, validation score, and the
        penalty before scaling by ``dreg_lambda``), in colour only on a
        terminal or in a notebook; 2 adds a per-batch progress bar naming
        the epoch.
    warm_start : bool, default=False
        Continue training the fitted network on the next ``fit``: the
        weights and the history carry over, the optimizer starts afresh (as
        in :class:`~sklearn.neural_network.MLPClassifier`), and every other
        parameter is read anew. Parameters that define the network cannot
        change (see :meth:`partial_fit`).
    callbacks : list of skorch callbacks or (name, callback) tuples, default=None
        Extra skorch callbacks (instances or classes); any other entry
        raises a ``TypeError`` naming it.
    n_members : int, default=1
        ``1``: one network. ``k > 1``: a cross-fitted ensemble of ``k`` members
        trained as one batched network. The rows are split into ``k``
        stratified folds (plain folds when a class has fewer than ``k`` rows;
        fewer than ``k`` rows raise a ``ValueError``), and member ``m`` trains
        on the rows outside fold ``m``. Unless ``early_stopping`` is ``False``,
        each member keeps the parameters of its best epoch on its own fold, its
        out-of-fold rows (``early_stopping_`` is ``"cv"``, with the patience
        and the ``max_iter="auto"`` budget of ``early_stopping="cv"``;
        ``validation_fraction`` is not used); with ``False`` every member
        trains ``max_iter`` epochs. This is the mechanism of
        ``early_stopping="cv"``, whose folds train the same way: ``"cv"`` keeps
        only their epoch count and refits one network on all rows, while
        ``n_members > 1`` keeps the members as the model, with no refit.
        :meth:`predict_proba` averages the members' probabilities
        (:meth:`decision_function` is their logit, or their logarithm with more
        than two classes). ``partial_fit`` is not available, and ``warm_start``
        and :class:`~cr_sklearn.DepthGrowth` raise a ``ValueError``: the folds
        belong to the data of one ``fit``. ``igpen_lambda`` must be 0.
    oob_score : bool, default=False
        With ``n_members > 1``, set ``oob_decision_function_`` and
        ``oob_score_`` from the out-of-fold predictions (as
        :class:`~sklearn.ensemble.RandomForestClassifier`'s). Each row is
        out of fold for exactly one member, so every row gets one honest
        prediction; the estimate is optimistic where the members also chose
        their stopping epoch on those rows. ``True`` with ``n_members=1``
        raises a ``ValueError``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` has string column names.
    n_iter_ : int
        Number of epochs run.
    loss_curve_ : list of float
        Training loss (data loss + penalty) per epoch.
    validation_scores_ : list of float or None
        Validation accuracy per epoch, with early stopping.
    best_validation_score_ : float or None
        Best validation accuracy, with early stopping.
    best_epoch_ : int or None
        With early stopping, the epoch (counted like ``n_iter_``) whose
        model was kept: the last one that improved the validation loss by
        more than ``tol`` (relative); with ``early_stopping="cv"``, the
        epoch count chosen by the internal folds. ``None`` otherwise.
    best_epochs_ : ndarray of shape (n_members,) or None
        The epoch each member kept (one entry for one network: ``best_epoch_``);
        ``None`` when no epoch was chosen. With ``n_members > 1``,
        ``best_epoch_`` is the latest of them and ``n_iter_`` the epochs
        trained, the most of any member.
    oob_score_ : float
        With ``oob_score=True``: the accuracy of the out-of-fold predictions.
    oob_decision_function_ : ndarray of shape (n_samples, n_classes)
        With ``oob_score=True``: each training row's class probabilities
        from the member that did not train on it.
    early_stopping_ : {"off", "hold-out", "cv"}
        How the last fit chose its length (see ``early_stopping``).
    max_iter_ : int
        The epoch budget ``max_iter`` resolved to in the last fit.
    cv_validation_loss_ : ndarray of shape (n_epochs,) or None
        With ``early_stopping="cv"``: the pooled out-of-fold loss of the
        internal folds per epoch; the model trained for its argmin + 1
        epochs. With ``n_members > 1``: the members' pooled out-of-fold loss
        per epoch. ``None`` otherwise.
    gradient_norm_mean_ : float
        Mean input-gradient norm on the training data,
        in the space of :meth:`input_sensitivity`, which divides by it.
    gradient_norm_quantiles_ : ndarray of shape (101,)
        Percentiles 0..100 of the training input-gradient norms.
    input_mean_ : ndarray of shape (n_features,)
        Training mean of each feature (for :meth:`input_distance`).
    input_scale_ : ndarray of shape (n_features,)
        Training standard deviation of each feature (1 where constant).
    n_encoded_features_ : int or None
        Columns of the input encoding, which the first layer reads; ``None``
        without an encoding.
    encoding_bins_ : int or None
        The bins per column the network was built with (``encoding_bins``
        resolved).
    dropout_ : float
        The dropout rate the network was built with (``dropout`` resolved).
    input_distance_quantiles_ : ndarray of shape (101,)
        Percentiles 0..100 of the training samples' :meth:`input_distance`.
    net_ : skorch.NeuralNet
        The fitted skorch net (history, callbacks).
    module_ : torch.nn.Module
        The fitted network.
    device_ : str
        The device used.

    See Also
    --------
    sklearn.neural_network.MLPClassifier : A ReLU/tanh network classifier.

    Notes
    -----
    The network starts from the class prior (zero output weights, prior
    log-odds as bias) with identity polynomials, i.e. close to a linear
    model; training switches curvature on where it lowers the loss.

    The training loss of a minibatch is its mean log-loss plus
    ``dreg_lambda`` times the DREG penalty. With ``dreg="stream"`` the
    penalty is the batch mean of the squared Frobenius norms of every
    layer's Jacobian with respect to the input, carried forward next to the
    values on ``stream_rows`` random rows of the batch, an unbiased estimate
    of that mean whose cost does not grow with the batch. Dropout after each
    activated layer thins the network during training; the stream then
    differentiates the thinned network.

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
        super().__init__(
            hidden_layer_sizes,
            architecture=architecture,
            activation=activation,
            degree=degree,
            dreg=dreg,
            dreg_lambda=dreg_lambda,
            n_projections=n_projections,
            stream_rows=stream_rows,
            max_iter=max_iter,
            batch_size=batch_size,
            learning_rate_init=learning_rate_init,
            beta_1=beta_1,
            beta_2=beta_2,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change,
            tol=tol,
            class_weight=class_weight,
            dropout=dropout,
            weight_decay=weight_decay,
            spectral_norm=spectral_norm,
            igpen_lambda=igpen_lambda,
            standardize=standardize,
            encoding_bins=encoding_bins,
            dtype=dtype,
            n_threads=n_threads,
            random_state=random_state,
            device=device,
            verbose=verbose,
            warm_start=warm_start,
            callbacks=callbacks,
            n_members=n_members,
            oob_score=oob_score,
        )

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

    def _make_criterion(self, codes, weight):
        return _BinaryLogitLoss() if len(self.classes_) == 2 else _CrossEntropyLoss()

    def _output_bias(self, codes, weight):
        # The training rows' class frequencies (weights count as repeated
        # rows), smoothed by one row per class.
        # In units of the largest weight: huge weights cannot overflow.
        top = weight.max() if len(weight) else 1.0
        counts = np.bincount(codes, weights=weight / top, minlength=len(self.classes_))
        counts = counts + 1.0 / top
        log_prior = np.log(counts / counts.sum())
        if len(self.classes_) == 2:
            return log_prior[1:] - log_prior[:1]
        return log_prior - log_prior.mean()

    def _validation_score(self, net, output, y_codes):
        if output.shape[1] == 1:
            pred = (output[:, 0] > 0).long()
        else:
            pred = output.argmax(dim=1)
        return (pred.cpu() == y_codes.cpu()).double().mean().item()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the network to ``X`` and ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels (numbers or strings).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the data loss.

        Returns
        -------
        self : CRClassifier
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    @available_if(partial_fit_available)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Run one epoch over ``X`` and ``y`` without early stopping.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.
        classes : array-like of shape (n_classes,), default=None
            All classes; required on the first call. They are sorted and
            each is kept once (``classes_``), as in
            :class:`~sklearn.neural_network.MLPClassifier`; on a later call
            they must be the fitted ``classes_`` (in any order), else a
            ``ValueError`` is raised. Labels of ``y`` outside them raise a
            ``ValueError``.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the data loss.

        Returns
        -------
        self : CRClassifier
            The updated estimator.

        Notes
        -----
        The network, the criterion (the ordinal cut-points), the optimizer
        state (Adam's moments) and the training history carry over from the
        previous call; the learning rate, weight decay, penalties, batch size
        and callbacks are read from the current parameters at every call.
        Parameters that define the network (``architecture``,
        ``hidden_layer_sizes``, ``activation``, ``degree``, ``dropout``,
        ``spectral_norm``, ``standardize``, ``encoding_bins``, ``device``)
        cannot change: a ``ValueError`` names the one that did. The fitted
        summaries (``gradient_norm_mean_``, ``gradient_norm_quantiles_``,
        ``input_mean_``, ``input_scale_``, ``input_distance_quantiles_``)
        describe every row passed to ``partial_fit`` since the last
        :meth:`fit`: exact running feature moments, and quantiles computed with
        the current network on a uniform sample of at most 2048 of those rows.
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

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            The logit of ``classes_[1]`` for binary problems, else one logit
            per class.
        """
        out = self._outputs(self._check_X(X))
        if out.ndim == 3:
            logp = self._averaged_log_proba(out).numpy()
            return logp[:, 1] - logp[:, 0] if out.shape[2] == 1 else logp
        return out[:, 0] if out.shape[1] == 1 else out

    @staticmethod
    def _log_proba_of(out):
        """Log class probabilities of network outputs (a leading member axis kept)."""
        out = torch.as_tensor(out)
        if out.shape[-1] == 1:
            return torch.nn.functional.logsigmoid(torch.cat([-out, out], dim=-1))
        return torch.log_softmax(out, dim=-1)

    def _averaged_log_proba(self, out):
        """Log of the members' averaged probabilities, from ``(M, n, o)`` outputs."""
        logp = self._log_proba_of(out)
        return torch.logsumexp(logp, dim=0) - math.log(logp.shape[0])

    def _member_proba(self, outputs):
        """Class probabilities of network outputs, a leading member axis kept."""
        return np.exp(self._log_proba_of(outputs).numpy())

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
            z = out[..., 0]
            up, down = (
                torch.nn.functional.logsigmoid(z),
                torch.nn.functional.logsigmoid(-z),
            )
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

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns follow ``classes_``.
        """
        return np.exp(self.predict_log_proba(X))

    def predict_log_proba(self, X):
        """Logarithm of the class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Computed stably from the logits.
        """
        out = self._outputs(self._check_X(X))
        if out.ndim == 3:
            return self._averaged_log_proba(out).numpy()
        return self._log_proba_of(out).numpy()

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        out = self._outputs(self._check_X(X))
        if out.ndim == 3:
            codes = self._averaged_log_proba(out).numpy().argmax(1)
        elif out.shape[1] == 1:
            codes = (out[:, 0] > 0).astype(int)
        else:
            codes = out.argmax(1)
        return self.classes_[codes]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


# Its public name: pickles, skops files and their trusted-type lists read
# ``cr_sklearn.CRClassifier``, whatever the private module.
CRClassifier.__module__ = "cr_sklearn"
