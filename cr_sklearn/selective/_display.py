"""RiskCoverageDisplay: risk-coverage curves of several signals on one axis."""

from dataclasses import dataclass

import numpy as np

from ._metrics import _area, _check_confidence, _curve, _prepare
from ._signals import _final_step, _resolve_loss, confidence_signals

__all__ = ["RiskCoverageDisplay"]

_LABELS = {
    "max_proba": "max probability",
    "margin": "margin",
    "input_sensitivity": "input sensitivity",
    "input_distance": "input distance",
    "mc_dropout": "MC dropout",
    "member_disagreement": "member disagreement",
    "gradient_norm": "gradient norm",
    "confidence": "combined confidence",
}
_ORDINAL_LABELS = {"max_proba": "mass within one class"}
_RISK_LABELS = {
    "zero_one": "risk: error rate of the kept",
    "absolute": "risk: mean absolute error (ranks)",
}
# Coverage grid on which the exact curve is drawn (plus every group end).
_GRID = np.linspace(0.0, 1.0, 401)[1:]


def _dense(coverage, risk):
    """``(x, y)`` of the drawn curve from coverage 0 to 1: inside a tie group the
    kept loss grows linearly (at the group's mean loss), so the exact risk is the
    interpolated loss over the coverage."""
    grid = np.union1d(_GRID, coverage)
    kept = np.interp(grid, np.append(0.0, coverage), np.append(0.0, risk * coverage))
    values = kept / grid
    # At coverage 0 the risk is the limit inside the first group: its mean.
    return np.concatenate([[0.0], grid]), np.concatenate([[values[0]], values])


# eq=False: hashable and equal only to itself; repr=False: no dump of the arrays.
@dataclass(kw_only=True, eq=False, repr=False)
class RiskCoverageDisplay:
    """Risk-coverage curves: the risk of the kept predictions at each coverage.

    A lower curve (and AURC, in the legend) ranks the errors later; the oracle
    (errors last) and random orderings share the axis. Pass ``ax=display.ax_``
    to :meth:`from_estimator` to add another model.

    Parameters
    ----------
    coverage, risk : dict of str to ndarray
        Coverage and risk of each curve, by signal name, as
        :func:`~cr_sklearn.risk_coverage_curve` returns them.
    aurc : dict of str to float, default=None
        AURC of each curve, shown in the legend.
    oracle : tuple of (ndarray, ndarray), default=None
        ``(coverage, risk)`` of the oracle ordering.
    random_risk : float, default=None
        Risk at full coverage: the expected curve of a random ordering.
    estimator_name : str, default=None
        Prefix of the legend labels.
    loss : {"zero_one", "absolute"}, default="zero_one"
        The risk drawn, for the axis label.

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure
        Axes with the curves, and their figure.
    line_ : matplotlib Line2D
        The curve of the first signal.
    lines_ : dict of str to matplotlib Line2D
        The curve of each signal.
    oracle_line_, random_line_ : matplotlib Line2D or None
        The references, when drawn.

    See Also
    --------
    cr_sklearn.risk_coverage_curve : The curves drawn here.
    cr_sklearn.confidence_signals : The signals of :meth:`from_estimator`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from cr_sklearn import RiskCoverageDisplay
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LogisticRegression(max_iter=1000).fit(X, y)
    >>> display = RiskCoverageDisplay.from_estimator(clf, X, y)
    >>> list(display.lines_)
    ['max_proba', 'margin', 'gradient_norm']
    """

    coverage: dict
    risk: dict
    aurc: dict | None = None
    oracle: tuple | None = None
    random_risk: float | None = None
    estimator_name: str | None = None
    loss: str = "zero_one"

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_pred,
        confidence,
        *,
        sample_weight=None,
        loss="zero_one",
        labels=None,
        name=None,
        plot_oracle=True,
        plot_random=True,
        ax=None,
    ):
        """Plot the risk-coverage curves of given confidences.

        Parameters
        ----------
        y_true, y_pred : array-like of shape (n_samples,)
            True and predicted labels.
        confidence : array-like of shape (n_samples,) or dict of str to array-like
            One confidence per sample (higher = kept longer), or several by name.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        loss : {"zero_one", "absolute"}, default="zero_one"
            The per-sample loss; see :func:`~cr_sklearn.risk_coverage_curve`.
        labels : array-like of shape (n_classes,), default=None
            The order of the labels for ``loss="absolute"``.
        name : str, default=None
            Prefix of the legend labels (e.g. the model's name).
        plot_oracle, plot_random : bool, default=True
            Draw the oracle and the random ordering.
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure when None.

        Returns
        -------
        display : RiskCoverageDisplay
            The plotted display.
        """
        if not isinstance(confidence, dict):
            confidence = {"confidence": confidence}
        if not confidence:
            raise ValueError("confidence must not be an empty dict.")
        first = next(iter(confidence.values()))
        losses, _, weight = _prepare(y_true, y_pred, first, sample_weight, loss, labels)
        coverage, risk, aurc = {}, {}, {}
        for key, values in confidence.items():
            values = _check_confidence(values, len(losses))
            cov, share, _ = _curve(losses, values, weight)
            coverage[key], risk[key] = cov, share / cov
            aurc[key] = _area(cov, share)
        cov, share, _ = _curve(losses, -losses, weight)
        display = cls(
            coverage=coverage,
            risk=risk,
            aurc=aurc,
            oracle=(cov, share / cov),
            random_risk=float(share[-1]),
            estimator_name=name,
            loss=loss,
        )
        return display.plot(ax=ax, plot_oracle=plot_oracle, plot_random=plot_random)

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        signals="auto",
        sample_weight=None,
        loss="auto",
        name=None,
        n_passes=30,
        random_state=0,
        plot_oracle=True,
        plot_random=True,
        ax=None,
    ):
        """Plot the risk-coverage curves of a fitted estimator's signals.

        Parameters
        ----------
        estimator : fitted estimator
            A classifier, an ordinal model, a pipeline ending in one, or a
            :class:`~cr_sklearn.SelectiveClassifier`.
        X : array-like of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,)
            True labels.
        signals : "auto", str or list of str, default="auto"
            Signals of :func:`~cr_sklearn.confidence_signals`, one curve each.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        loss : {"auto", "zero_one", "absolute"}, default="auto"
            As in :func:`~cr_sklearn.confidence_signals`.
        name : str, default=None
            Prefix of the legend labels; the model's class name when ``ax``
            already holds curves.
        n_passes, random_state : optional
            Passes and seed of the ``"mc_dropout"`` signal.
        plot_oracle, plot_random, ax : optional
            As in :meth:`from_predictions`; ``ax`` may be another display's.

        Returns
        -------
        display : RiskCoverageDisplay
            The plotted display.
        """
        loss = _resolve_loss(estimator, loss)
        values = confidence_signals(
            estimator,
            X,
            signals,
            loss=loss,
            n_passes=n_passes,
            random_state=random_state,
        )
        labels = getattr(estimator, "classes_", None) if loss == "absolute" else None
        if name is None and ax is not None and ax.lines:
            name = type(_final_step(estimator)).__name__
        return cls.from_predictions(
            y,
            estimator.predict(X),
            values,
            sample_weight=sample_weight,
            loss=loss,
            labels=labels,
            name=name,
            plot_oracle=plot_oracle,
            plot_random=plot_random,
            ax=ax,
        )

    def _label(self, text):
        return f"{self.estimator_name}: {text}" if self.estimator_name else text

    def plot(self, ax=None, *, plot_oracle=True, plot_random=True, line_kw=None):
        """Draw the curves, the references and a legend beside the axes.

        Parameters
        ----------
        ax, plot_oracle, plot_random : optional
            As in :meth:`from_predictions`.
        line_kw : dict, default=None
            Extra keyword arguments of ``Axes.plot`` for the signal curves.

        Returns
        -------
        self : RiskCoverageDisplay
            With ``ax_``, ``figure_``, ``line_``, ``lines_``, ``oracle_line_`` and
            ``random_line_`` set.
        """
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:
            raise ImportError(
                "RiskCoverageDisplay.plot needs matplotlib: "
                "pip install 'cr_sklearn[study]'."
            ) from exc
        if not self.coverage:
            raise ValueError("The display has no curve to plot.")
        if ax is None:
            _, ax = plt.subplots(figsize=(8.5, 4.5), layout="constrained")
        # Reference lines already on the axes (from another model's display).
        n_before = sum(line.get_gid() == "risk_coverage_oracle" for line in ax.lines)
        names = _ORDINAL_LABELS if self.loss == "absolute" else {}
        kw = {"linewidth": 1.8, **(line_kw or {})}
        self.lines_ = {}
        for key, coverage in self.coverage.items():
            x, y = _dense(np.asarray(coverage), np.asarray(self.risk[key]))
            text = names.get(key, _LABELS.get(key, key))
            if self.aurc is not None and key in self.aurc:
                text = f"{text} (AURC {self.aurc[key]:.3g})"
            (self.lines_[key],) = ax.plot(x, y, label=self._label(text), **kw)
        self.line_ = next(iter(self.lines_.values()))
        greys = ["0.15", "0.45", "0.6", "0.75"]
        ref = {"color": greys[min(n_before, len(greys) - 1)], "linewidth": 1.2}
        self.oracle_line_ = self.random_line_ = None
        if plot_oracle and self.oracle is not None:
            cov, risk = (np.asarray(v) for v in self.oracle)
            text = self._label(f"oracle (AURC {_area(cov, risk * cov):.3g})")
            (self.oracle_line_,) = ax.plot(*_dense(cov, risk), "--", label=text, **ref)
            self.oracle_line_.set_gid("risk_coverage_oracle")
        if plot_random and self.random_risk is not None:
            text = self._label(f"random (AURC {self.random_risk:.3g})")
            self.random_line_ = ax.axhline(self.random_risk, ls=":", label=text, **ref)
            self.random_line_.set_gid("risk_coverage_random")
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(bottom=0.0)
        ax.set_xlabel("coverage: share of predictions kept")
        ax.set_ylabel(_RISK_LABELS.get(self.loss, "risk"))
        ax.grid(True, alpha=0.3)
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            frameon=False,
            fontsize="small",
        )
        self.ax_, self.figure_ = ax, ax.figure
        return self
