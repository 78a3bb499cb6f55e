"""Displays of fitted CR networks: learned activations, gradient norms, loss curves.

As scikit-learn's Displays: ``from_estimator`` computes the arrays drawn and
calls ``plot``, which imports matplotlib and sets ``ax_`` and ``figure_``.
"""

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted, validate_data

from ._tau import gradient_norms, gradient_tail_ratio
from ._utils import final_estimator, import_optional
from .nn import FixedActivation, PolyActivation

__all__ = ["ActivationDisplay", "GradientNormDisplay", "LossCurveDisplay"]

# eq=False: hashable and equal only to itself; repr=False: no dump of the arrays.
_display = dataclass(kw_only=True, eq=False, repr=False)


def _cr_estimator(estimator, X=None):
    """The fitted CR estimator in ``estimator`` and ``X`` as it sees it."""
    if isinstance(estimator, Pipeline):
        if X is not None:
            X = estimator[:-1].transform(X)
        estimator = estimator.steps[-1][1]
    check_is_fitted(estimator)
    if not hasattr(estimator, "net_") and hasattr(estimator, "estimator_"):
        estimator = estimator.estimator_
    if not hasattr(estimator, "net_"):
        raise TypeError(
            f"{type(estimator).__name__} is not a fitted CR estimator (no net_ "
            "attribute): pass a CRClassifier, CROrdinalRegressor, a pipeline "
            "ending in one, or a DepthGrowth."
        )
    return estimator, X


def _pyplot():
    return import_optional(
        "matplotlib.pyplot", extra="study", purpose="The plotting Displays"
    )


def _pre_activations(module, X):
    """``(module, z_min, z_max)`` per activation module, from one pass on ``X``."""
    acts = [
        m for m in module.modules() if isinstance(m, PolyActivation | FixedActivation)
    ]
    seen = {m: [] for m in acts}

    def hook(mod, args):
        seen[mod].append(args[0].detach())

    handles = [m.register_forward_pre_hook(hook) for m in acts]
    try:
        # torch.tensor copies: X may be read-only.
        module(torch.tensor(np.asarray(X, dtype=np.float64)))
    finally:
        for handle in handles:
            handle.remove()
    out = []
    for m, inputs in seen.items():
        if inputs:
            z = torch.cat(inputs).reshape(-1, inputs[0].shape[-1])
            out.append((m, z.min(0).values.numpy(), z.max(0).values.numpy()))
    return out


def _nonlinearity(grid, values):
    """Per column: RMS distance of ``values`` from their straight-line fit."""
    scores = np.zeros(grid.shape[1])  # a constant column is its own line
    for i, (x, y) in enumerate(zip(grid.T, values.T, strict=True)):
        if np.ptp(x):
            scores[i] = np.sqrt(np.mean((y - np.polyval(np.polyfit(x, y, 1), x)) ** 2))
    return scores


@_display
class ActivationDisplay:
    """Learned activation of each neuron, per layer: a grid of small curves.

    A row per activated layer, a column per neuron: ``phi_i(z)`` over the range
    of pre-activations of the data passed to :meth:`from_estimator`.

    Parameters
    ----------
    grids : list of ndarray of shape (n_points, n_shown)
        Pre-activation values per layer, one column per neuron shown.
    values : list of ndarray of shape (n_points, n_shown)
        The activation at ``grids``.
    neurons : list of ndarray of int
        Indices of the neurons shown, per layer.
    layer_names : list of str
        Row labels.

    Attributes
    ----------
    ax_, axes_, figure_ : ndarray of matplotlib Axes, and their Figure
        The grid of axes (unused cells off), shape (n_layers, n_columns).
    lines_ : list of list of matplotlib Line2D
        The curve of each neuron shown, per layer.

    See Also
    --------
    cr_sklearn.nn.PolyActivation : The learnable polynomial drawn here.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from cr_sklearn import CRClassifier
    >>> from cr_sklearn.plotting import ActivationDisplay
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = CRClassifier((8, 8), max_iter=20, random_state=0).fit(X, y)
    >>> display = ActivationDisplay.from_estimator(clf, X, n_neurons=4)
    >>> display.ax_.shape
    (2, 4)
    """

    grids: list
    values: list
    neurons: list
    layer_names: list

    @classmethod
    def from_estimator(
        cls, estimator, X, *, n_neurons=8, order="nonlinear", n_points=100, ax=None
    ):
        """Compute the activations of a fitted CR network and plot them.

        Parameters
        ----------
        estimator : fitted estimator
            A CR estimator, a pipeline ending in one, or a
            :class:`~cr_sklearn.DepthGrowth`.
        X : array-like of shape (n_samples, n_features)
            Data whose forward pass sets each neuron's pre-activation range.
        n_neurons : int, default=8
            Neurons shown per layer (at most the layer's width).
        order : {"nonlinear", "index"}, default="nonlinear"
            The most nonlinear neurons (largest RMS distance from a straight line),
            or the first ``n_neurons``.
        n_points : int, default=100
            Points per curve.
        ax : ndarray of matplotlib Axes, default=None
            A grid of at least ``(n_layers, n_neurons)`` axes; None: a new figure.

        Returns
        -------
        display : ActivationDisplay
            The plotted display.
        """
        if order not in ("nonlinear", "index"):
            raise ValueError(f"order must be 'nonlinear' or 'index', got {order!r}.")
        if int(n_neurons) < 1 or int(n_points) < 2:
            raise ValueError("n_neurons must be >= 1 and n_points >= 2.")
        cr, Xt = _cr_estimator(estimator, X)
        check_is_fitted(cr, "module_")
        Xt = validate_data(cr, Xt, reset=False, dtype=np.float64)
        module = cr.module_
        if getattr(module, "n_members", None) is not None:
            raise ValueError(
                "ActivationDisplay plots the activations of one network; this "
                f"model has n_members={module.n_members} cross-fitted members. "
                "Fit with n_members=1 to plot them."
            )
        grids, values, neurons, names = [], [], [], []
        with torch.inference_mode():
            for layer, (act, lo, hi) in enumerate(_pre_activations(module, Xt)):
                t = np.linspace(0.0, 1.0, int(n_points))[:, None]
                grid = lo + t * (hi - lo)
                value = act(torch.as_tensor(grid, dtype=torch.float64)).numpy()
                if order == "nonlinear":
                    chosen = np.argsort(-_nonlinearity(grid, value), kind="stable")
                else:
                    chosen = np.arange(grid.shape[1])
                chosen = np.sort(chosen[: int(n_neurons)])
                grids.append(grid[:, chosen])
                values.append(value[:, chosen])
                neurons.append(chosen)
                names.append(f"layer {layer + 1}")
        display = cls(grids=grids, values=values, neurons=neurons, layer_names=names)
        return display.plot(ax=ax)

    def plot(self, ax=None, *, line_kw=None):
        """Draw one small curve per neuron, one row per layer.

        Parameters
        ----------
        ax : ndarray of matplotlib Axes, default=None
            As in :meth:`from_estimator`.
        line_kw : dict, default=None
            Extra keyword arguments of ``Axes.plot``.

        Returns
        -------
        self : ActivationDisplay
            With ``ax_``, ``axes_``, ``figure_`` and ``lines_`` set.
        """
        n_rows = len(self.grids)
        n_cols = max([len(n) for n in self.neurons] + [1])
        if ax is None:
            _, ax = _pyplot().subplots(
                max(n_rows, 1),
                n_cols,
                figsize=(1.6 * n_cols + 0.6, 1.5 * max(n_rows, 1) + 0.5),
                squeeze=False,
                layout="constrained",
            )
        ax = np.asarray(ax, dtype=object).reshape(-1, np.shape(ax)[-1])
        if ax.shape[0] < n_rows or ax.shape[1] < n_cols:
            raise ValueError(
                f"ax must hold at least ({n_rows}, {n_cols}) axes, got {ax.shape}."
            )
        kw = {"linewidth": 1.2, **(line_kw or {})}
        self.lines_ = [[] for _ in range(n_rows)]
        for (row, col), cell in np.ndenumerate(ax):
            if row >= n_rows or col >= len(self.neurons[row]):
                cell.set_axis_off()
                continue
            (line,) = cell.plot(self.grids[row][:, col], self.values[row][:, col], **kw)
            self.lines_[row].append(line)
            cell.set_title(f"neuron {self.neurons[row][col]}", fontsize=7)
            cell.tick_params(labelsize=6)
            if col == 0:
                cell.set_ylabel(self.layer_names[row], fontsize=8)
            if row == n_rows - 1:
                cell.set_xlabel("pre-activation z", fontsize=7)
        self.ax_ = self.axes_ = ax
        self.figure_ = ax[0, 0].figure
        return self


@_display
class GradientNormDisplay:
    """Distribution of per-sample input-gradient norms, with tau.

    One histogram per estimator of the norms of
    :func:`~cr_sklearn.gradient_norms` (over their mean by default), its mean
    (dashed) and ``q``-th percentile (dotted) marked, tau in the legend.

    Parameters
    ----------
    norms : dict of str to ndarray of shape (n_samples,)
        Per-sample input-gradient norms, by model name (unnormalised).
    q : float, default=99
        Percentile of the tail.
    normalize : bool, default=True
        Divide each model's norms by their mean before drawing.

    Attributes
    ----------
    taus_ : dict of str to float
        tau of each model.
    ax_, figure_ : matplotlib Axes and Figure
        Axes with the histograms, and their figure.
    patches_ : dict of str to list of matplotlib Patch
        The histogram of each model.
    lines_ : dict of str to tuple of matplotlib Line2D
        ``(mean line, percentile line)`` of each model.

    See Also
    --------
    cr_sklearn.DREGScorer : Tau as a scikit-learn scorer.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from cr_sklearn.plotting import GradientNormDisplay
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> logreg = LogisticRegression().fit(X, y)
    >>> display = GradientNormDisplay.from_estimator(logreg, X)
    >>> round(display.taus_["LogisticRegression"], 6)
    1.0
    """

    norms: dict
    q: float = 99
    normalize: bool = True

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        *,
        name=None,
        q=99,
        normalize=True,
        response_method="auto",
        ax=None,
        **hist_kw,
    ):
        """Plot the gradient-norm distribution of one fitted estimator.

        Parameters
        ----------
        estimator : fitted estimator
            Any fitted model or pipeline.
        X : array-like of shape (n_samples, n_features)
            Samples at which the gradients are taken, e.g. a test set.
        name : str, default=None
            Legend label; the class name (of a pipeline's last step) by default.
        q, normalize, response_method, ax, **hist_kw : optional
            As in :meth:`from_estimators`.

        Returns
        -------
        display : GradientNormDisplay
            The plotted display.
        """
        return cls.from_estimators(
            {name or _model_name(estimator): estimator},
            X,
            q=q,
            normalize=normalize,
            response_method=response_method,
            ax=ax,
            **hist_kw,
        )

    @classmethod
    def from_estimators(
        cls,
        estimators,
        X,
        *,
        q=99,
        normalize=True,
        response_method="auto",
        ax=None,
        **hist_kw,
    ):
        """Plot the gradient-norm distributions of several fitted estimators.

        Parameters
        ----------
        estimators : dict of str to estimator, or list of estimators
            Fitted models by name (a list is named by class names).
        X : array-like of shape (n_samples, n_features)
            Samples at which the gradients are taken, the same for all.
        q, normalize : optional
            As in :class:`GradientNormDisplay`.
        response_method : str, default="auto"
            For non-CR estimators, as in :func:`~cr_sklearn.gradient_norms`.
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure when None.
        **hist_kw : dict
            Passed to ``Axes.hist``.

        Returns
        -------
        display : GradientNormDisplay
            The plotted display.
        """
        if not isinstance(estimators, dict):
            estimators = {_model_name(e): e for e in estimators}
        if not estimators:
            raise ValueError("estimators must not be empty.")
        norms = {
            name: gradient_norms(est, X, response_method=response_method)
            for name, est in estimators.items()
        }
        return cls(norms=norms, q=q, normalize=normalize).plot(ax=ax, **hist_kw)

    def plot(self, ax=None, **hist_kw):
        """Draw a histogram per model, its mean and its ``q``-th percentile.

        Parameters
        ----------
        ax, **hist_kw : optional
            As in :meth:`from_estimators`.

        Returns
        -------
        self : GradientNormDisplay
            With ``ax_``, ``figure_``, ``patches_``, ``lines_`` and ``taus_``.
        """
        if ax is None:
            # Constrained layout makes room for the legend beside the axes.
            _, ax = _pyplot().subplots(layout="constrained")
        self.taus_, self.patches_, self.lines_, scaled = {}, {}, {}, {}
        for name, norms in self.norms.items():
            norms = np.asarray(norms, dtype=np.float64)
            self.taus_[name] = gradient_tail_ratio(norms, q=self.q)
            mean = norms.mean()
            scaled[name] = norms / mean if self.normalize and mean > 0 else norms
        kw = {"histtype": "stepfilled", "alpha": 0.35, **hist_kw}
        # Shared bins: the same bar width for every model keeps heights comparable.
        kw["bins"] = np.histogram_bin_edges(
            np.concatenate(list(scaled.values())), bins=kw.get("bins", 30)
        )
        for i, (name, shown) in enumerate(scaled.items()):
            label, color = f"{name} (tau={self.taus_[name]:.2f})", f"C{i}"
            self.patches_[name] = list(
                ax.hist(shown, color=color, label=label, **kw)[2]
            )
            self.lines_[name] = (
                ax.axvline(shown.mean(), color=color, linestyle="--", linewidth=1),
                ax.axvline(np.percentile(shown, self.q), color=color, ls=":", lw=1.5),
            )
        ax.set_xlabel("input-gradient norm" + (" / mean" if self.normalize else ""))
        ax.set_ylabel("samples")
        if len(self.taus_) == 1:
            (tau,) = self.taus_.values()
            ax.set_title(f"tau = p{self.q:g}/mean = {tau:.3f}")
        else:
            ax.set_title(f"tau = p{self.q:g}/mean (dashed: mean, dotted: p{self.q:g})")
        # Outside the axes: the histograms fill the data area.
        right = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0}
        ax.legend(fontsize="small", **right)
        self.ax_, self.figure_ = ax, ax.figure
        return self


def _model_name(estimator):
    return type(final_estimator(estimator)).__name__


@_display
class LossCurveDisplay:
    """Training and validation loss per epoch, and the validation score.

    Losses on the left axis, the validation score on a twin right axis, the
    DREG term of the training loss and the epoch early stopping restored marked
    when recorded.

    Parameters
    ----------
    epochs : ndarray of shape (n_epochs,)
        Epoch numbers, from 1.
    train_loss : ndarray of shape (n_epochs,)
        Training loss (data loss + lambda * penalty) per epoch.
    valid_loss : ndarray of shape (n_epochs,) or None
        Validation (data) loss per epoch, with early stopping.
    valid_score : ndarray of shape (n_epochs,) or None
        Validation score per epoch.
    penalty : ndarray of shape (n_epochs,) or None
        ``dreg_lambda`` times the mean DREG penalty per epoch.
    best_epoch : int or None
        The epoch restored by early stopping.

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure
        Axes with the losses, and their figure.
    score_ax_ : matplotlib Axes or None
        Twin axes with the validation score.
    lines_ : dict of str to matplotlib Line2D
        Those drawn of ``"train_loss"``, ``"valid_loss"``, ``"penalty"``,
        ``"valid_score"`` and ``"best_epoch"``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from cr_sklearn import CRClassifier
    >>> from cr_sklearn.plotting import LossCurveDisplay
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = CRClassifier((8,), max_iter=15, early_stopping=True, random_state=0)
    >>> display = LossCurveDisplay.from_estimator(clf.fit(X, y))
    >>> sorted(display.lines_)
    ['best_epoch', 'penalty', 'train_loss', 'valid_loss', 'valid_score']
    """

    epochs: np.ndarray
    train_loss: np.ndarray
    valid_loss: np.ndarray | None = None
    valid_score: np.ndarray | None = None
    penalty: np.ndarray | None = None
    best_epoch: int | None = None

    @classmethod
    def from_estimator(cls, estimator, *, ax=None):
        """Plot the fit history of a fitted CR estimator.

        Parameters
        ----------
        estimator : fitted estimator
            A CR estimator, a pipeline ending in one, or a
            :class:`~cr_sklearn.DepthGrowth` (its final model's last fit).
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure when None.

        Returns
        -------
        display : LossCurveDisplay
            The plotted display.
        """
        cr, _ = _cr_estimator(estimator)
        history = cr.net_.history

        def column(key, scale=1.0):
            values = [row.get(key) for row in history]
            if all(v is None for v in values):
                return None
            return np.array([np.nan if v is None else scale * float(v) for v in values])

        lam = cr.dreg_lambda if cr.dreg is not None else 0.0
        display = cls(
            epochs=np.arange(1, len(history) + 1),
            train_loss=column("train_loss"),
            valid_loss=column("valid_loss"),
            valid_score=column("valid_score"),
            penalty=column("penalty", lam) if lam else None,
            best_epoch=getattr(cr, "best_epoch_", None),
        )
        return display.plot(ax=ax)

    def plot(self, ax=None):
        """Draw the loss curves and the validation score.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes for the losses (the score goes on a twin axis); None: a new figure.

        Returns
        -------
        self : LossCurveDisplay
            With ``ax_``, ``score_ax_``, ``figure_`` and ``lines_`` set.
        """
        if ax is None:
            # Constrained layout keeps the right label and the legend in the figure.
            _, ax = _pyplot().subplots(figsize=(7, 4.5), layout="constrained")
        self.lines_ = {}
        labels = {
            "train_loss": "train loss",
            "valid_loss": "validation loss",
            "penalty": "dreg_lambda x penalty (in the train loss)",
        }
        for i, (key, label) in enumerate(labels.items()):
            if getattr(self, key) is not None:
                ls = "--" if key == "penalty" else "-"
                (self.lines_[key],) = ax.plot(
                    self.epochs, getattr(self, key), color=f"C{i}", ls=ls, label=label
                )
        if self.best_epoch is not None:
            label = f"restored epoch ({self.best_epoch})"
            self.lines_["best_epoch"] = ax.axvline(
                self.best_epoch, color="0.5", linestyle=":", label=label
            )
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss")
        self.score_ax_ = None
        if self.valid_score is not None:
            self.score_ax_ = ax.twinx()
            label = "validation score (right axis)"
            (self.lines_["valid_score"],) = self.score_ax_.plot(
                self.epochs, self.valid_score, color="C3", label=label
            )
            self.score_ax_.set_ylabel("validation score")
        # Above the axes, never over the curves.
        handles = list(self.lines_.values())
        ax.legend(
            handles=handles,
            loc="lower left",
            bbox_to_anchor=(0.0, 1.02, 1.0, 0.1),
            mode="expand",
            ncols=2 if len(handles) > 1 else 1,
            borderaxespad=0.0,
            fontsize="small",
            frameon=False,
        )
        self.ax_, self.figure_ = ax, ax.figure
        return self
