"""CROrdinalRegressor: ordinal regression on a polynomial-DREG network."""

import numpy as np
import torch
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from ._base import BaseCR, init_arguments, partial_fit_method
from ._docs import fill_docstring
from ._label_order import (
    categorical_order,
    check_known,
    check_order,
    is_numeric,
    no_order_error,
    ranks,
)
from .nn.ordinal import ORDINAL_HEADS, cumulative_link_log_proba

__all__ = ["CROrdinalRegressor"]

# The orders a fit call may be given, as errors name them: the keys of the
# ``{what: order or None}`` that fit and partial_fit pass as ``classes``.
_PARAMETER = "the classes parameter"
_PARTIAL_FIT = "the classes passed to partial_fit"
_CATEGORIES = "the categories of the ordered Categorical y"


def _median_codes(cumulative):
    """First ``k`` with ``cumulative[:, k] >= 0.5``, else the last class.

    As the rows are non-decreasing, the count of entries below 0.5.
    """
    return (cumulative < 0.5).sum(1)


def _check_agree(named, reference, against, advice=""):
    """Raise unless each order of ``named`` that is given equals ``reference``."""
    reference = np.asarray(reference).tolist()
    for what, order in named.items():
        if order is not None and np.asarray(order).tolist() != reference:
            raise ValueError(
                f"{what[0].upper()}{what[1:]}, "
                f"{np.asarray(order).tolist()!r:.200}, differ from {against}, "
                f"{reference!r:.200} (the order of the labels counts).{advice}"
            )


def _ordered_by(order, y):
    """Whether ``order`` (given) holds every label of ``y``: any labels go then."""
    if order is None:
        return False
    try:
        return bool(np.isin(np.asarray(y).ravel(), np.asarray(order)).all())
    except TypeError:
        return False


def _check_targets(y):
    """scikit-learn's check of classification targets, with the way out.

    Non-integer numbers (``10.5, 20.5, ...``) read as a regression target;
    listing them in ``classes`` makes them ordered labels.
    """
    try:
        check_classification_targets(y)
    except ValueError:
        if type_of_target(y) != "continuous":
            raise
        shown = list(dict.fromkeys(np.asarray(y).ravel().tolist()))[:5]
        raise ValueError(
            "Unknown label type: continuous. y holds non-integer numbers "
            f"({shown!r:.120} ...), which read as a regression target. To "
            "use them as ordered labels, list every label, lowest first, "
            "with classes=[...]."
        ) from None


@fill_docstring
class CROrdinalRegressor(ClassifierMixin, BaseCR):
    """Polynomial-DREG network for ordinal targets (ChainzRule network).

    The network of :class:`CRClassifier` with one output, the latent score
    ``eta(x)``, and ``K - 1`` learnable ordered cut-points
    ``theta_0 < ... < theta_{K-2}``:
    ``P(y <= k | x) = sigmoid(theta_k - eta(x))``. The cumulative
    probabilities are monotone in ``k`` by construction (the cut-points are a
    first value plus cumulative softplus gaps), so predictions are rank
    consistent. DREG penalises the Jacobian of the latent score.

    Parameters
    ----------
    head : {"cumulative", "coral"}, default="cumulative"
        Training loss of the ordinal head. ``"cumulative"``: the
        cumulative-link (proportional-odds) negative log-likelihood.
        ``"coral"``: the CORAL loss, a sum of ``K - 1`` binary logistic
        losses for ``y > k``. Both share the latent score and the ordered
        cut-points, so prediction is the same (see Notes).
    prediction : {"median", "mode"}, default="median"
        How :meth:`predict` turns the predictive distribution into a label:
        the median class, the Bayes decision for the absolute error in ranks
        (which :meth:`score` and the early-stopping validation score
        measure), or the most probable class, the Bayes decision for
        accuracy (what scikit-learn's classifier checks assume). See Notes.
    classes : array-like of shape (n_classes,), default=None
        Every label, lowest first (e.g. ``["low", "mid", "high"]``): the
        order used exactly as given, never sorted; labels of ``y`` must be
        among them, and a label may appear once only. ``None``: the order of
        ``y``: its categories for an ordered pandas ``Categorical``, the
        sorted values for numbers (possibly with gaps). Strings (or an
        unordered ``Categorical`` of strings) with no order given raise a
        ``ValueError``: sorting them alphabetically would rank them wrongly
        (``["Marked", "None", "Some"]``).
    dreg_lambda : float, default=10**-2.5
        Strength of the DREG penalty.
    early_stopping : bool, "auto" or "cv", default="auto"
        As :class:`CRClassifier`'s, with ``"auto"`` holding out a validation
        set also below 2,000 rows on inputs of more than 100 columns
        (sentence embeddings, where a fixed budget overfits).
    encoding_bins : int, "auto" or None, default="auto"
        As :class:`CRClassifier`'s, with ``"auto"`` sized for the ordinal
        head: no encoding below 1,000 training rows (it did not help on the
        ordinal suite's smaller tables), 16 bins from there, none above 100
        columns.
    n_members : int or "auto", default="auto"
        As :class:`CRClassifier`'s: ``"auto"`` trains 4 cross-fitted members
        from 1,000 training rows and one network below (or with
        ``partial_fit``, ``warm_start``, ``igpen_lambda > 0`` or
        ``spectral_norm``). The members' probabilities are averaged through
        the cumulative probabilities, which keeps them rank consistent
        (:meth:`predict_latent` is then the expected rank). The count used
        is ``n_members_``.
    %(parameters)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, lowest first (see ``classes``); ranks, ``predict_proba``
        columns and the cut-points follow this order.
    cutpoints_ : ndarray of shape (n_classes - 1,) or (n_members, n_classes - 1)
        The fitted, strictly increasing cut-points on the latent scale (one
        row per member with ``n_members > 1``).
    validation_scores_ : list of float or None
        Validation score per epoch (negative mean absolute error in ranks, as
        :meth:`score`), with early stopping.
    best_validation_score_ : float or None
        Best validation score, with early stopping.
    oob_score_ : float
        With ``oob_score=True``: the negative mean absolute error in ranks, as
        :meth:`score`, of the out-of-fold predictions.
    gradient_norm_mean_ : float
        Mean norm of :meth:`predict_latent`'s input gradient on the training data,
        in the space of :meth:`input_sensitivity`, which divides by it.
    net_ : skorch.NeuralNet
        The fitted skorch net; ``net_.criterion_`` holds the cut-points.
    module_ : torch.nn.Module
        The fitted network (latent score).
    %(attributes)s
    See Also
    --------
    CRClassifier : The same network with a nominal (softmax) head.
    cr_sklearn.get_ordinal_scorer : Ordinal scorers by name (MAE, QWK, ...).

    Notes
    -----
    **A classifier in scikit-learn's eyes.** The estimator type is
    ``"classifier"`` (:class:`~sklearn.base.ClassifierMixin` first), so
    :func:`~sklearn.model_selection.cross_validate`,
    :class:`~sklearn.model_selection.GridSearchCV` and the early-stopping
    split stratify by class, and string labels work once their order is
    given (``classes`` or an ordered Categorical).

    **predict: median, not mode, by default.** With the default
    ``prediction="median"``, ``predict`` returns the median class, the first
    ``k`` with ``predict_cumulative_proba(X)[:, k] >= 0.5``, i.e. the interval
    of the cut-points that contains the latent score; it minimises the
    expected absolute error under the model. Unlike most classifiers,
    ``predict`` is then *not* always the argmax of :meth:`predict_proba`:
    in the cumulative logit model a middle class whose cut-points are close
    together is rarely the most probable one, so the mode piles predictions
    onto the extreme classes. ``prediction="mode"`` targets accuracy under
    the model, and makes ``predict`` equal the argmax of
    :meth:`predict_proba` where that is required.

    **score.** Deliberately *not* accuracy: :meth:`score` returns the negative
    mean absolute error between the ranks of the true and predicted labels
    (positions in ``classes_``), greater is better, like mord's
    ``LogisticAT``. For contiguous integer labels it equals the negative MAE
    in label units. Use ``scoring="accuracy"`` or
    :func:`cr_sklearn.get_ordinal_scorer` for other metrics.

    **Scores and Jacobians.** :meth:`decision_function` returns per-class
    scores, as a classifier's; :meth:`jacobian` and
    :meth:`input_gradient_norms` are the derivatives of the 1-d
    :meth:`predict_latent`, so tau and :meth:`input_sensitivity` read the
    latent scale, which the cut-points do not change (with members, the
    expected rank's).

    **Heads.** CORN (Shi et al., 2023) needs ``K - 1`` outputs and is not
    implemented. ``"cumulative"`` is the default: it is the likelihood of
    the model used for prediction, while CORAL fits the same score and
    cut-points through ``K - 1`` separate binary losses. The benchmarks
    page of the documentation compares the heads and the prediction rules.

    References
    ----------
    McCullagh, P. (1980). Regression models for ordinal data. JRSS B, 42(2).

    Cao, W., Mirjalili, V. & Raschka, S. (2020). Rank consistent ordinal
    regression for neural networks with application to age estimation.
    Pattern Recognition Letters, 140.

    Examples
    --------
    >>> import numpy as np
    >>> from cr_sklearn import CROrdinalRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(300, 4))
    >>> y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-1.0, 0.0, 1.0])
    >>> reg = CROrdinalRegressor(hidden_layer_sizes=(16,), random_state=0)
    >>> reg = reg.fit(X, y)
    >>> reg.classes_
    array([0, 1, 2, 3])
    >>> grades = np.array(["low", "mid", "high", "top"])[y]
    >>> reg = reg.set_params(classes=["low", "mid", "high", "top"]).fit(X, grades)
    >>> reg.classes_
    array(['low', 'mid', 'high', 'top'], dtype='<U4')
    >>> bool(np.all(np.diff(reg.predict_cumulative_proba(X[:5]), axis=1) >= 0))
    True
    >>> reg.jacobian(X[:2]).shape
    (2, 1, 4)
    """

    # early_stopping="auto": the fixed budget below 2,000 rows on tabular
    # inputs only; on sentence embeddings (384 columns) below 2,000 rows it
    # overfit, so wider inputs keep the hold-out at any size.
    _auto_fixed_budget_max_features = 100
    # encoding_bins="auto" and n_members="auto" from 1,000 training rows:
    # round C's rule set D, adopted on the ordinal suite's tuning half and
    # confirmed on its other half (benchmarks/results/ordinal_round_d_*.md).
    _auto_encoding_bins = (None, 16)

    _parameter_constraints = {
        **BaseCR._parameter_constraints,
        "head": [StrOptions(set(ORDINAL_HEADS))],
        "prediction": [StrOptions({"median", "mode"})],
        "classes": ["array-like", None],
    }

    def __init__(
        self,
        hidden_layer_sizes=(64, 64),
        *,
        head="cumulative",
        prediction="median",
        classes=None,
        architecture="mlp",
        activation="poly",
        degree=3,
        dreg="stream",
        dreg_lambda=10**-2.5,
        dreg_space="encoded",
        dreg_points="data",
        n_projections="auto",
        stream_rows=None,
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
        dropout=0.0,
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
        n_members="auto",
        oob_score=False,
    ):
        super().__init__(**init_arguments(locals()))

    # -- BaseCR hooks ------------------------------------------------------
    def _encode_targets(self, y, *, reset, classes=None):
        given = classes or {}
        order = self.classes if reset else self.classes_
        if not _ordered_by(order, y):
            _check_targets(y)
        if reset:
            self.classes_ = self._label_order(y, given)
        else:  # a warm start keeps classes_: any order passed must equal it
            _check_agree(
                {_PARAMETER: self.classes, **given},
                self.classes_,
                "the fitted classes_",
                " Fit anew (warm_start=False) to change them.",
            )
            check_known(self.classes_, y, what="y", where="the fitted classes_")
        return ranks(self.classes_, y)

    def _prior_cutpoints(self, codes, weight):
        # The logits of the (smoothed, weighted) cumulative class frequencies:
        # the untrained model predicts the class prior.
        counts = self._class_counts(codes, weight, 0.5)
        cum = np.cumsum(counts)[:-1] / counts.sum()
        return np.log(cum) - np.log1p(-cum)

    def _label_order(self, y, given):
        """``classes_`` of a new fit: the order given, never re-sorted.

        The ``classes`` parameter, else ``partial_fit``'s ``classes``, else an
        ordered Categorical's categories, else sorted numbers; strings have
        no order to read and raise. Two orders given must agree.
        """
        if self.classes is not None:
            order = check_order(self.classes, "classes")
            where = _PARAMETER
            _check_agree(given, order, where)
        elif given.get(_PARTIAL_FIT) is not None:
            order = check_order(given[_PARTIAL_FIT], "classes")
            where = _PARTIAL_FIT
        elif given.get(_CATEGORIES) is not None:
            where = _CATEGORIES
            order = given[where]
        elif is_numeric(y):
            order = np.unique(y)
            where = None
        else:
            raise no_order_error(y, who="CROrdinalRegressor", param="classes")
        if where is not None:
            check_known(order, y, what="y", where=f"{where} {order.tolist()!r:.200}")
        if len(order) < 2:
            raise ValueError(
                "CROrdinalRegressor needs samples of at least 2 classes in the "
                f"data, but the data contains only one class: {order[0]!r}."
            )
        return order

    def _n_outputs(self):
        return 1

    def _make_criterion(self, plan, codes, weight):
        # The head of the fit the plan describes: after set_params(head=...) a
        # fitted model keeps its own.
        init = None if codes is None else self._prior_cutpoints(codes, weight)
        return ORDINAL_HEADS[plan.head](len(self.classes_), init_cutpoints=init)

    def _output_bias(self, codes, weight):
        return None  # the cut-points carry the prior

    def _validation_score(self, net, output, y_codes):
        # -MAE of the codes predict would return, so early stopping tracks score.
        eta = output[:, 0].detach()
        if self.prediction == "median":
            cut = net.criterion_.cutpoints().detach()
            pred = _median_codes(torch.sigmoid(cut[None, :] - eta[:, None]))
        else:
            pred = net.criterion_.log_proba(eta).argmax(dim=1)
        return -(pred.cpu() - y_codes.cpu()).abs().double().mean().item()

    def _set_head_attributes(self, net):
        self.cutpoints_ = net.criterion_.cutpoints().detach().cpu().double().numpy()

    # -- fitting -----------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the network and the cut-points to ``X`` and ``y``.

        %(Parameters_X_train)s
        y : array-like of shape (n_samples,)
            Ordered labels: numbers (gaps allowed; ordered by value), an
            ordered pandas Categorical (ordered by its categories), or any
            labels ordered by the ``classes`` parameter. Strings with no
            order given raise a ``ValueError``.
        %(sample_weight)s

        Returns
        -------
        self : CROrdinalRegressor
            The fitted estimator.
        """
        given = {_CATEGORIES: categorical_order(y)}
        return self._fit(X, y, sample_weight, classes=given)

    @partial_fit_method
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Run one epoch over ``X`` and the ordered labels ``y`` without early stopping.

        %(Parameters_X_train)s
        y : array-like of shape (n_samples,)
            Ordered labels, as for :meth:`fit`.
        classes : array-like of shape (n_classes,), default=None
            Every label, lowest first: their order, used exactly as given
            (never sorted), on the first call unless the ``classes`` parameter
            is set or ``y`` is an ordered pandas Categorical. Repeated labels,
            labels of ``y`` missing from it, a first call's ``classes`` that
            differ from the ``classes`` parameter and a later call's that
            differ from ``classes_`` raise a ``ValueError``.
        %(sample_weight)s

        Returns
        -------
        self : CROrdinalRegressor
            The updated estimator.

        %(partial_fit_notes)s
        """
        given = {_PARTIAL_FIT: classes, _CATEGORIES: categorical_order(y)}
        unordered = all(order is None for order in given.values())
        if not hasattr(self, "net_") and unordered and self.classes is None:
            raise ValueError(
                "classes must be passed on the first call to partial_fit: every "
                "label, lowest first (or set the classes parameter, or give y as "
                "an ordered pandas Categorical)."
            )
        return self._fit(X, y, sample_weight, incremental=True, classes=given)

    # -- prediction ----------------------------------------------------------
    def predict_latent(self, X):
        """Latent score ``eta(x)``: higher means a higher class.

        With ``n_members > 1`` the members' latent scores live on scales of
        their own (each member has its cut-points); the score is then the
        expected rank under the averaged distribution,
        ``sum_k (1 - P(y <= classes_[k]))`` over the first ``n_classes - 1``
        classes. :meth:`jacobian` and tau differentiate this score.

        %(Parameters_X_Returns)s
        latent : ndarray of shape (n_samples,)
            One network's latent score, with
            ``P(y <= k) = sigmoid(cutpoints_[k] - latent)``; with
            ``n_members > 1``, the expected rank (between 0 and
            ``n_classes - 1``).
        """
        eta = self._latent(X)
        if eta.ndim == 2:
            return (1.0 - self._cumulative(eta)).sum(axis=1)
        return eta

    def decision_function(self, X):
        """Per-class scores, as a scikit-learn classifier's: log-probabilities.

        With two classes, the log-odds of ``classes_[1]``,
        ``latent - cutpoints_[0]`` for one network (positive where the upper
        class is predicted); with more, ``log P(y = classes_[k] | x)`` minus
        its mean over the classes, one column per class (its argmax is the
        most probable class). Calibration (:class:`~sklearn.calibration.
        CalibratedClassifierCV`), ``top_k_accuracy`` and other clients that
        read per-class scores work with it; the latent score itself is
        :meth:`predict_latent`.

        .. versionchanged:: 0.2
           The 1-d latent score moved to :meth:`predict_latent`.

        %(Parameters_X_Returns)s
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            The log-odds of ``classes_[1]`` with two classes, else one
            centred log-probability per class.
        """
        logp = self.predict_log_proba(X)
        if logp.shape[1] == 2:
            return logp[:, 1] - logp[:, 0]
        return logp - logp.mean(axis=1, keepdims=True)

    def _latent(self, X):
        # A member model's: (n_members, n_samples).
        return self._outputs(self._check_X(X))[..., 0]

    def _cumulative(self, eta):
        """``P(y <= classes_[k])`` for ``k < K - 1`` (a member model's averaged)."""
        cut = self.cutpoints_[..., None, :]
        cum = 1.0 / (1.0 + np.exp(-(cut - eta[..., None])))
        return cum.mean(axis=0) if eta.ndim == 2 else cum

    def _log_proba_of(self, outputs):
        eta = torch.as_tensor(np.asarray(outputs)[..., 0])
        cut = torch.as_tensor(self.cutpoints_)
        if eta.dim() == 1:
            return cumulative_link_log_proba(eta, cut)
        return torch.stack(
            [cumulative_link_log_proba(e, c) for e, c in zip(eta, cut, strict=True)]
        )

    def _codes_from_proba(self, proba):
        if self.prediction == "median":
            return _median_codes(np.cumsum(proba, axis=1)[:, :-1])
        return proba.argmax(axis=1)

    def _oob_score(self, proba, y_codes):
        return -float(np.mean(np.abs(self._codes_from_proba(proba) - y_codes)))

    def _combine_jacobian(self, out, jac):
        """Jacobian of the expected rank from the members' (chain rule).

        ``d/dx sum_k (1 - mean_m s_mk) = mean_m (sum_k s_mk (1 - s_mk)) d eta_m``
        with ``s_mk = sigmoid(cutpoints_[m, k] - eta_m)``.
        """
        cut = torch.as_tensor(self.cutpoints_, dtype=out.dtype, device=out.device)
        s = torch.sigmoid(cut[:, None, :] - out)  # (M, batch, K - 1)
        slope = (s * (1 - s)).sum(dim=-1)
        return (slope[..., None, None] * jac).mean(dim=0)

    def predict_cumulative_proba(self, X):
        """Cumulative probabilities ``P(y <= classes_[k] | x)``.

        %(Parameters_X_Returns)s
        cumulative_proba : ndarray of shape (n_samples, n_classes)
            Non-decreasing along each row; the last column is 1.
        """
        # A member model's averaged chunk by chunk.
        cum = self._outputs(
            self._check_X(X), combine=lambda out: self._cumulative(out[..., 0])
        )
        return np.hstack([cum, np.ones((len(cum), 1))])

    def predict_log_proba(self, X):
        """Logarithm of the class probabilities.

        %(Parameters_X_Returns)s
        log_proba : ndarray of shape (n_samples, n_classes)
            Computed stably from the latent score and the cut-points.
        """
        return self._outputs(self._check_X(X), combine=self._log_proba)

    def predict(self, X):
        """Median (default) or most probable label, as set by ``prediction``.

        %(Parameters_X_Returns)s
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``: with ``prediction="median"`` the first
            ``classes_[k]`` with ``P(y <= classes_[k] | x) >= 0.5``, with
            ``"mode"`` the argmax of :meth:`predict_proba`.
        """
        if self.prediction == "median":
            codes = _median_codes(self.predict_cumulative_proba(X))
        else:
            codes = self.predict_log_proba(X).argmax(axis=1)
        return self.classes_[codes]

    def score(self, X, y, sample_weight=None):
        """Negative mean absolute error in ranks (greater is better).

        The error of a prediction is the distance between the positions of
        the true and the predicted label in ``classes_``; for contiguous
        integer labels this is the usual MAE. See the Notes of the class.

        %(Parameters_score)s

        Returns
        -------
        score : float
            ``-MAE``; 0 is perfect.
        """
        check_known(self.classes_, y, what="y", where="classes_")
        pred = ranks(self.classes_, self.predict(X))
        true = ranks(self.classes_, y)
        return -float(np.average(np.abs(true - pred), weights=sample_weight))


# Its public name: pickles, skops files and their trusted-type lists read
# ``cr_sklearn.CROrdinalRegressor``, whatever the private module.
CROrdinalRegressor.__module__ = "cr_sklearn"
