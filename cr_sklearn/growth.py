r"""Function-preserving growth of residual CR networks; see :ref:`growth`.

A block inserted with a zero projection ``U`` leaves the function unchanged;
the loss gradient's norm at ``U = 0`` (the *first-order signal*) says whether
it helps. The expansions update ``hidden_layer_sizes`` for ``clone``.
"""

import copy
import numbers
import time

import numpy as np
import torch
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils import check_random_state, get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import BaseCR, init_arguments
from ._docs import fill_methods
from ._utils import validation_split
from .nn.residual import ResidualCRNetwork

__all__ = ["DepthGrowth", "expand_depth", "expand_width", "first_order_signal"]

_SEED_MAX = 2**31 - 1
# What DepthGrowth._candidates returns, by growth_history_'s names.
_CHOICE = ("kind", "position", "signal", "signals")


def _residual_network(module):
    """The ResidualCRNetwork inside ``module`` (itself or a submodule)."""
    return next((m for m in module.modules() if isinstance(m, ResidualCRNetwork)), None)


def _check_residual(estimator):
    """Validate a fitted residual CR estimator; return its residual network."""
    if not isinstance(estimator, BaseCR):
        raise TypeError(
            "Expected a cr_sklearn estimator (CRClassifier, CROrdinalRegressor), "
            f"got {type(estimator).__name__}."
        )
    check_is_fitted(estimator, "module_")
    if getattr(estimator.module_, "n_members", None) is not None:
        raise ValueError(
            "Growth changes one network: a model of n_members > 1 cross-fitted "
            "members cannot be grown. Fit with n_members=1."
        )
    network = _residual_network(estimator.module_)
    if network is None:
        raise ValueError(
            "Growth needs a residual network: fit the estimator with "
            "architecture='residual'."
        )
    return network


def _block_seed(estimator, network, kind, index, random_state):
    """Seed of a new block from the estimator's seed and the site."""
    if random_state is None:
        base = int(getattr(estimator, "_seed", 0))
    else:
        base = int(check_random_state(random_state).randint(_SEED_MAX))
    site = (network.n_blocks * 1009 + int(index)) * 2 + (kind == "width")
    return (base + 7919 * site) % _SEED_MAX


def _float64_copies(estimator):
    module = copy.deepcopy(estimator.module_).eval().requires_grad_(False)
    criterion = copy.deepcopy(estimator.net_.criterion_).double().eval()
    return module, criterion.requires_grad_(False)


def _data_loss(estimator, X, y):
    """Weighted mean data loss (no penalty), in float64, of a fitted estimator."""
    module, criterion = _float64_copies(estimator)
    with torch.no_grad():
        data = estimator._training_data(X, y)
        return float(estimator._data_loss(module, criterion, data))


def _check_index(name, value, high):
    if not isinstance(value, numbers.Integral) or not 0 <= value <= high:
        raise ValueError(f"{name} must be an integer in [0, {high}], got {value!r}.")
    return int(value)


def _check_positive(name, value, optional=True):
    if optional and value is None:
        return
    if not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def first_order_signal(
    estimator, X, y, *, kind="depth", n_units=None, random_state=None
):
    """Norm of the loss gradient at a zero-initialised expansion, per site.

    Parameters
    ----------
    estimator : fitted CR estimator with ``architecture="residual"``
        It is not modified.
    X : array-like of shape (n_samples, n_features)
        Training data.
    y : array-like of shape (n_samples,)
        Targets.
    kind : {"depth", "width"}, default="depth"
        A block inserted before block ``p``, for ``p`` in ``0 .. n_blocks``, or
        ``n_units`` units with zero outgoing weights added to each block.
    n_units : int, optional
        Units added per block for ``kind="width"``; the stream width by default.
    random_state : int, RandomState instance or None, default=None
        Seeds the new block; ``None`` derives it as :func:`expand_depth` does.

    Returns
    -------
    signal : ndarray of shape (n_blocks + 1,) for depth, (n_blocks,) for width
        The gradient norm of the data loss in the new parameters, per site.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> from cr_sklearn import CRClassifier
    >>> from cr_sklearn.growth import first_order_signal
    >>> clf = CRClassifier((16, 16), architecture="residual", max_iter=20,
    ...                    random_state=0).fit(X, y)
    >>> first_order_signal(clf, X, y).shape
    (2,)
    """
    if kind not in ("depth", "width"):
        raise ValueError(f"kind must be 'depth' or 'width', got {kind!r}.")
    network = _check_residual(estimator)
    data = estimator._training_data(X, y)
    n_sites = network.n_blocks + 1 if kind == "depth" else network.n_blocks
    signal = np.zeros(n_sites)
    for site in range(n_sites):
        module, criterion = _float64_copies(estimator)
        net = _residual_network(module)
        seed = _block_seed(estimator, network, kind, site, random_state)
        if kind == "depth":
            block = net.make_block(seed=seed)
            net.insert_blocks(site, [block])
            params = list(block.requires_grad_(True).parameters())
        else:
            old = net.blocks[site].inner_width
            net.widen_block(site, n_units or net.width, seed=seed)
            params = [net.blocks[site].proj.weight.requires_grad_(True)]
        with torch.enable_grad():
            loss = estimator._data_loss(module, criterion, data)
            grads = torch.autograd.grad(loss, params, allow_unused=True)
        if kind == "width":
            grads = [grads[0][:, old:]]
        signal[site] = float(
            torch.sqrt(sum(g.square().sum() for g in grads if g is not None))
        )
    return signal


def expand_depth(
    estimator, *, position, n_blocks=1, inner_width=None, random_state=None
):
    """Insert zero-initialised (identity) residual blocks into a fitted estimator.

    Predictions are unchanged (up to rounding); continue training with
    ``expanded.set_params(warm_start=True).fit(X, y)``.

    Parameters
    ----------
    estimator : fitted CR estimator with ``architecture="residual"``
        It is not modified.
    position : int
        Insert before block ``position``, in ``0 .. n_blocks``.
    n_blocks : int, default=1
        Number of blocks inserted there.
    inner_width : int, optional
        Inner width of the new blocks; the stream width by default.
    random_state : int, RandomState instance or None, default=None
        Seeds the new blocks; ``None`` derives the seed from the estimator's.

    Returns
    -------
    expanded : estimator
        A deep copy with the new blocks, a fresh optimizer and the new
        ``hidden_layer_sizes``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from cr_sklearn import CRClassifier
    >>> from cr_sklearn.growth import expand_depth
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = CRClassifier((16,), architecture="residual", max_iter=20,
    ...                    random_state=0).fit(X, y)
    >>> deeper = expand_depth(clf, position=0)
    >>> deeper.hidden_layer_sizes
    (16, 16)
    >>> bool(np.abs(deeper.predict_proba(X) - clf.predict_proba(X)).max() < 1e-6)
    True
    """
    network = _check_residual(estimator)
    position = _check_index("position", position, network.n_blocks)
    _check_positive("n_blocks", n_blocks, optional=False)
    _check_positive("inner_width", inner_width)
    seed = _block_seed(estimator, network, "depth", position, random_state)
    expanded = copy.deepcopy(estimator)
    net = _residual_network(expanded.module_)
    seeds = ((seed + i) % _SEED_MAX for i in range(n_blocks))
    net.insert_blocks(position, [net.make_block(inner_width, seed=s) for s in seeds])
    expanded._network_changed(net.hidden_layer_sizes)
    return expanded


def expand_width(estimator, *, block, n_units=None, random_state=None):
    """Add zero-initialised units to one block of a fitted residual estimator.

    Their outgoing weights are zero, so predictions are unchanged.

    Parameters
    ----------
    estimator : fitted CR estimator with ``architecture="residual"``
        It is not modified; not with ``spectral_norm=True``.
    block : int
        The block to widen, in ``0 .. n_blocks - 1``.
    n_units : int, optional
        Units to add; the stream width by default.
    random_state : int, RandomState instance or None, default=None
        Seeds the new units; ``None`` derives the seed from the estimator's.

    Returns
    -------
    expanded : estimator
        A deep copy with the wider block and a fresh optimizer.
    """
    network = _check_residual(estimator)
    if network.n_blocks == 0:
        raise ValueError("The network has no residual block to widen.")
    block = _check_index("block", block, network.n_blocks - 1)
    _check_positive("n_units", n_units)
    seed = _block_seed(estimator, network, "width", block, random_state)
    expanded = copy.deepcopy(estimator)
    net = _residual_network(expanded.module_)
    net.widen_block(block, n_units or net.width, seed=seed)
    expanded._network_changed(net.hidden_layer_sizes)
    return expanded


def _estimator_has(attr):
    return lambda self: hasattr(getattr(self, "estimator_", self.estimator), attr)


def _delegated(method, summary, returns):
    """``DepthGrowth.<method>(X)``: the selected model's, where it has one."""

    def delegate(self, X):
        return self._delegate(method, X)

    delegate.__name__ = method
    delegate.__qualname__ = f"DepthGrowth.{method}"
    delegate.__doc__ = f"{summary}\n\n%(Parameters_X_Returns)s\n{returns}\n"
    return available_if(_estimator_has(method))(delegate)


@fill_methods
class DepthGrowth(MetaEstimatorMixin, BaseEstimator):
    """Grow a residual CR network block by block, guided by the first-order signal.

    Each step expands where :func:`first_order_signal` is strongest, fine-tunes
    and is kept if the training loss is no worse; the kept model of lowest
    validation loss answers the prediction methods (:ref:`growth`).

    Parameters
    ----------
    estimator : CR estimator with ``architecture="residual"``
        The starting (shallow) model; cloned, not modified. Growth changes
        one network: ``n_members="auto"`` trains one (``n_members_`` is 1).
    max_blocks : int, default=4
        Largest number of residual blocks.
    max_steps : int, default=8
        Largest number of growth steps (kept or rejected).
    tol : float, default=1e-3
        Stop when the strongest signal is below ``tol``; with ``grow="auto"``,
        a depth signal below ``tol`` switches to width.
    grow : {"depth", "width", "auto"}, default="depth"
        What a step expands: ``"width"`` widens existing blocks (it needs one);
        ``"auto"`` deepens while the depth signal and budget allow, else widens.
    width_step : int, optional
        Units added to a block by a width step; the stream width by default.
    n_iter_no_change : int, default=1
        Kept steps without a lower validation loss before growth stops.
    validation_fraction : float, default=0.2
        Fraction of the training data held out (stratified for discrete
        targets) for each step's validation loss.
    random_state : int, RandomState instance or None, default=None
        Seeds the hold-out split, and the networks when the wrapped estimator
        has no ``random_state``.
    verbose : int, default=0
        Print one line per step.

    Attributes
    ----------
    estimator_ : estimator
        The selected fitted model.
    growth_history_ : list of dict
        One entry per step, the starting model first: ``step``, ``kind``
        ("initial", "depth" or "width"), ``position``, ``signal`` (the
        strongest), ``signals``, ``n_blocks``, ``hidden_layer_sizes``,
        ``train_loss``, ``valid_loss``, ``kept``, ``n_epochs``, ``fit_time``.
    stop_reason_ : str
        ``"signal"``, ``"validation"``, ``"budget"`` or ``"exhausted"``.
    n_blocks_ : int
        Number of residual blocks of ``estimator_``.
    classes_ : ndarray of shape (n_classes,)
        Class labels, when the wrapped estimator has them.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` has string column names.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from cr_sklearn import CRClassifier, DepthGrowth
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> base = CRClassifier((16,), architecture="residual", max_iter=30,
    ...                     random_state=0)
    >>> grown = DepthGrowth(base, max_blocks=2, random_state=0).fit(X, y)
    >>> grown.predict(X[:3]).shape
    (3,)
    >>> len(grown.growth_history_) >= 1
    True
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "max_blocks": [Interval(numbers.Integral, 0, None, closed="left")],
        "max_steps": [Interval(numbers.Integral, 0, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "grow": [StrOptions({"depth", "width", "auto"})],
        "width_step": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator,
        *,
        max_blocks=4,
        max_steps=8,
        tol=1e-3,
        grow="depth",
        width_step=None,
        n_iter_no_change=1,
        validation_fraction=0.2,
        random_state=None,
        verbose=0,
    ):
        for name, value in init_arguments(locals()).items():
            setattr(self, name, value)

    def _candidates(self, model, X, y, excluded):
        """Best ``(kind, site, signal, signals)`` under the growth rule, or None."""
        network = _residual_network(model.module_)

        def strongest(kind):
            signals = first_order_signal(
                model, X, y, kind=kind, n_units=self.width_step
            )
            allowed = [s for s in range(len(signals)) if (kind, s) not in excluded]
            if not allowed:
                return None
            site = max(allowed, key=lambda s: signals[s])
            return kind, site, float(signals[site]), signals.tolist()

        depth = None
        if self.grow != "width" and network.n_blocks < self.max_blocks:
            depth = strongest("depth")
        if self.grow == "depth" or (depth is not None and depth[2] >= self.tol):
            return depth
        # Width, or auto with a weak depth signal (width makes it observable).
        width = strongest("width") if network.n_blocks > 0 else None
        return width if width is not None else depth

    def fit(self, X, y):
        """Grow the network on ``X`` and ``y``.

        %(Parameters_X_train)s
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : DepthGrowth
            The fitted meta-estimator.
        """
        self._validate_params()
        X, y = validate_data(
            self, X, y, dtype=[np.float64, np.float32], multi_output=False
        )
        if getattr(self.estimator, "architecture", None) != "residual":
            raise ValueError(
                "DepthGrowth needs an estimator with architecture='residual', got "
                f"architecture={getattr(self.estimator, 'architecture', None)!r}."
            )
        members = getattr(self.estimator, "n_members", 1)
        if members != "auto" and members > 1:
            raise ValueError(
                "DepthGrowth grows one network through warm-started fits; "
                f"n_members={self.estimator.n_members} trains cross-fitted "
                "members, which do not warm start. Use n_members=1."
            )
        if (
            self.grow == "width"
            and len(np.atleast_1d(self.estimator.hidden_layer_sizes)) < 2
        ):
            raise ValueError(
                "grow='width' widens existing blocks: start from an estimator with "
                "at least one block (two hidden_layer_sizes entries)."
            )
        rng = check_random_state(self.random_state)
        base = clone(self.estimator)
        if base.get_params().get("random_state") is None:
            base.set_params(random_state=int(rng.randint(_SEED_MAX)))
        warm_start = base.warm_start
        # Growth warm-starts one network from the first fit on (so
        # n_members="auto" trains one); the kept model gets the user's back.
        base.set_params(warm_start=True)
        _, codes = np.unique(y, return_inverse=True)
        # The estimators' early-stopping split (random, or none, on tiny data).
        split = validation_split(
            codes, self.validation_fraction, int(rng.randint(_SEED_MAX)), strict=False
        )
        fit, val = (slice(None), None) if split is None else split
        X_fit, y_fit = X[fit], y[fit]
        X_val, y_val = (None, None) if val is None else (X[val], y[val])

        def record(step, choice, model, train_loss, kept, tic):
            valid_loss = None if X_val is None else _data_loss(model, X_val, y_val)
            entry = {
                "step": step,
                **dict(zip(_CHOICE, choice, strict=True)),
                "n_blocks": _residual_network(model.module_).n_blocks,
                "hidden_layer_sizes": tuple(model.hidden_layer_sizes),
                "train_loss": train_loss,
                "valid_loss": valid_loss,
                "kept": kept,
                "n_epochs": int(model.n_iter_),
                "fit_time": time.perf_counter() - tic,
            }
            history.append(entry)
            if self.verbose:
                print(
                    f"[DepthGrowth] step {step}: {entry['kind']} "
                    f"at {entry['position']} signal={entry['signal']} "
                    f"train={train_loss:.4f} valid={valid_loss} kept={kept}"
                )
            return entry

        history = []
        tic = time.perf_counter()
        current = base.fit(X_fit, y_fit)
        _check_residual(current)
        current_train = _data_loss(current, X_fit, y_fit)
        initial = ("initial", None, None, None)
        entry = record(0, initial, current, current_train, True, tic)
        best_model, best_valid = current, entry["valid_loss"]
        excluded, misses, stop = set(), 0, "budget"
        for step in range(1, self.max_steps + 1):
            choice = self._candidates(current, X_fit, y_fit, excluded)
            if choice is None:
                stop = "exhausted" if excluded else "budget"
                break
            kind, site, signal, _ = choice
            if signal < self.tol:
                stop = "signal"
                break
            tic = time.perf_counter()
            if kind == "depth":
                candidate = expand_depth(current, position=site)
            else:
                candidate = expand_width(current, block=site, n_units=self.width_step)
            epochs_before = candidate.n_iter_
            candidate.set_params(warm_start=True).fit(X_fit, y_fit)
            train_loss = _data_loss(candidate, X_fit, y_fit)
            # Substitution rule: never accept a model worse than the jumpboard.
            kept = train_loss <= current_train
            entry = record(step, choice, candidate, train_loss, kept, tic)
            entry["n_epochs"] -= epochs_before
            if not kept:
                excluded.add((kind, site))
                continue
            excluded.clear()
            current, current_train = candidate, train_loss
            if best_valid is None or entry["valid_loss"] < best_valid:
                best_model, best_valid, misses = candidate, entry["valid_loss"], 0
            else:
                misses += 1
                if misses >= self.n_iter_no_change:
                    stop = "validation"
                    break
        best_model.set_params(warm_start=warm_start)
        self.estimator_ = best_model
        self.growth_history_ = history
        self.stop_reason_ = stop
        self.n_blocks_ = _residual_network(best_model.module_).n_blocks
        if hasattr(best_model, "classes_"):
            self.classes_ = best_model.classes_
        return self

    def _delegate(self, method, X, *args, **kwargs):
        """The selected model's ``method`` of ``X``, checked as at fit."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return getattr(self.estimator_, method)(X, *args, **kwargs)

    predict = _delegated(
        "predict",
        "Predict with the selected model.",
        "y_pred : ndarray of shape (n_samples,)\n    Predicted targets.",
    )
    predict_proba = _delegated(
        "predict_proba",
        "Class probabilities of the selected model.",
        "proba : ndarray of shape (n_samples, n_classes)\n"
        "    Columns follow ``classes_``.",
    )
    predict_log_proba = _delegated(
        "predict_log_proba",
        "Log class probabilities of the selected model.",
        "log_proba : ndarray of shape (n_samples, n_classes)\n"
        "    Columns follow ``classes_``.",
    )
    decision_function = _delegated(
        "decision_function",
        "Decision function of the selected model.",
        "scores : ndarray\n    As the wrapped estimator's ``decision_function``.",
    )
    jacobian = _delegated(
        "jacobian",
        "Input Jacobian of the selected model's output.",
        "jacobian : ndarray of shape (n_samples, n_outputs, n_features)\n"
        "    ``d decision_function / d X`` per sample.",
    )

    @available_if(_estimator_has("input_gradient_norms"))
    def input_gradient_norms(self, X, *, scale=None):
        """Per-sample input-gradient norms of the selected model.

        %(Parameters_X)s
        scale : array-like of shape (n_features,), default=None
            The unit of each column; ``None``: the training standard deviations.

        Returns
        -------
        norms : ndarray of shape (n_samples,)
            Frobenius norm of :meth:`jacobian` per sample, columns times ``scale``.
        """
        return self._delegate("input_gradient_norms", X, scale=scale)

    def _gradient_estimator(self):
        # gradient_norms and DREGScorer differentiate the selected model.
        check_is_fitted(self)
        return self.estimator_

    def score(self, X, y, sample_weight=None):
        """The selected model's own score (accuracy for a classifier).

        %(Parameters_score)s

        Returns
        -------
        score : float
            Greater is better.
        """
        return self._delegate("score", X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.target_tags.required = True
        return tags
