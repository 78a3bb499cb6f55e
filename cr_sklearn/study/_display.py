"""StudyDisplay: scores against training fraction, and paired differences."""

import textwrap
from dataclasses import dataclass

import numpy as np

from ._deps import import_or_hint
from ._stats import CORRECTION_LABELS, TEST_LABELS, _check_confidence

__all__ = ["StudyDisplay"]

# Every other model in the tab10 colours (black is the reference's).
_REFERENCE_STYLE = {"color": "black", "linewidth": 2.6, "markersize": 7, "zorder": 5}
_OTHER_STYLE = {"linewidth": 1.4, "markersize": 4.5, "alpha": 0.9, "zorder": 3}
# Half the spread of the models' differences around each fraction (log x).
_DODGE = 0.1
_LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0}
# The zero of the differences' axis: the reference's colour, thinner, below.
_ZERO_LINE = {**_REFERENCE_STYLE, "linewidth": 1.6, "zorder": 2}


def _protocol(result):
    """The cross-validation of a StudyResult in words, from its records."""
    n_splits = result.n_splits
    repeats = len({r["repeat"] for r in result.records})
    folds = len({r["fold"] for r in result.records})
    if repeats > 1 and repeats * folds == n_splits:
        return f"{repeats} x {folds}-fold cross-validation ({n_splits} splits)"
    return f"cross-validation, {n_splits} splits"


def _stacked(ax, other):
    """Whether ``other`` lies below ``ax`` (a column) rather than beside it."""
    a, b = ax.get_position(), other.get_position()
    return b.y1 <= a.y0 + 1e-9 and b.x0 < a.x1


def _panels(plt, ax, draw_diff, layout, height, column_height, **row_kw):
    """``(ax, diff_ax)``: new panels of ``height`` inches, or the caller's."""
    if isinstance(ax, list | tuple | np.ndarray):
        ax, diff_ax = np.ravel(ax)
        return ax, diff_ax if draw_diff else None
    if ax is not None:
        return ax, None
    if not draw_diff:
        return plt.subplots(figsize=(7.5, height), layout="constrained")[1], None
    if layout == "row":
        shape, size = (1, 2), (11.5, height)
    else:
        shape, size, row_kw = (2, 1), (7.5, column_height), {}
    return plt.subplots(*shape, figsize=size, layout="constrained", **row_kw)[1]


def _points(style, grow=0):
    """``errorbar`` keywords of a model's points, markers ``grow`` points larger."""
    size = style["markersize"] + grow
    return dict(fmt="o", color=style["color"], markersize=size, zorder=style["zorder"])


# eq=False: hashable and equal only to itself; repr=False: no dump of the arrays.
@dataclass(kw_only=True, eq=False, repr=False)
class StudyDisplay:
    """Score against training fraction per model, and paired differences.

    Left, each model's mean score per fraction (the reference in black); right,
    the paired differences to the reference with :meth:`StudyResult.compare`'s
    intervals, ``*`` where significant after the correction. Build it with
    :meth:`from_result` (:ref:`study-statistics`).

    Parameters
    ----------
    fractions : ndarray of shape (n_fractions,)
        Training fractions (x axis).
    means, stds : dict of str to ndarray of shape (n_fractions,)
        Mean score and standard deviation over splits per model (NaN where a
        model was not run).
    metric : str
        Name of the score (y-axis label).
    reference : str, default=None
        The model the differences are taken against; drawn in bold.
    differences : dict of str to ndarray of shape (n_fractions, 3), default=None
        Per other model, the estimate of the paired difference (model minus
        reference) and the interval's bounds at every fraction.
    confidence : float, default=0.95
        Coverage of the intervals in ``differences``.
    n_train : ndarray of shape (n_fractions,), default=None
        Mean number of training rows at each fraction, under the tick labels.
    dataset, protocol : str, default=None
        Name of the data and the evaluation protocol in words, in the title.
    test : {"corrected_t", "wilcoxon"}, default="corrected_t"
        The test behind ``differences`` and ``rejected``, named in the titles.
    correction : {"holm", "bonferroni"} or None, default="holm"
        The correction behind ``rejected``, named in the title.
    rejected : dict of str to ndarray of shape (n_fractions,), default=None
        Per other model, whether the corrected test rejects (drawn as ``*``).

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure
        Axes with the scores, and their figure.
    diff_ax_ : matplotlib Axes or None
        Axes with the paired differences, when drawn.
    lines_ : dict of str to matplotlib Line2D
        The mean line of each model.
    errorbars_ : dict of str to matplotlib ErrorbarContainer
        The paired differences of each other model, when drawn.
    marks_ : dict of str to list of matplotlib Text
        The ``*`` of each other model's rejected differences.
    fill_between_ : dict of str to matplotlib PolyCollection
        The band of each model (mean +- std), with ``bands=True``.
    legend_ : matplotlib Legend or None
        The legend, right of the axes; None for a single fraction.

    See Also
    --------
    StudyResult.summary : The means and standard deviations drawn.
    StudyResult.to_markdown : The same tests as a table.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from cr_sklearn.study import StudyDisplay, data_fraction_study
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> models = {"logreg": LogisticRegression(max_iter=5000),
    ...           "tree": DecisionTreeClassifier()}
    >>> result = data_fraction_study(models, X, y, fractions=(0.1, 1.0), cv=3)
    >>> display = StudyDisplay.from_result(result, dataset="breast cancer")
    >>> list(display.lines_), list(display.errorbars_)
    (['logreg', 'tree'], ['tree'])
    """

    fractions: np.ndarray
    means: dict
    stds: dict
    metric: str
    reference: str | None = None
    differences: dict | None = None
    confidence: float = 0.95
    n_train: np.ndarray | None = None
    dataset: str | None = None
    protocol: str | None = None
    test: str = "corrected_t"
    correction: str | None = "holm"
    rejected: dict | None = None

    @classmethod
    def from_result(
        cls,
        result,
        *,
        metric=None,
        models=None,
        reference=None,
        test="corrected_t",
        correction="holm",
        confidence=0.95,
        dataset=None,
        ax=None,
        differences=True,
        layout="row",
        bands=False,
        line_kw=None,
        fill_between_kw=None,
    ):
        """Plot the means and the paired differences of a :class:`StudyResult`.

        Parameters
        ----------
        result : StudyResult
            The study.
        metric : str, default=None
            The metric; the study's first by default.
        models : list of str, default=None
            Models to show, in this order; all by default.
        reference : str, default=None
            The model the others are compared with; the first of ``models`` by
            default.
        test, correction, confidence : optional
            As in the class: the intervals and ``*`` marks (at ``1 -
            confidence``) of :meth:`StudyResult.compare`, over every comparison
            with ``reference`` (the table's family, whatever ``models`` shows).
        dataset : str, default=None
            Name of the data, for the title.
        ax : matplotlib Axes or pair of Axes, default=None
            Where to draw, see :meth:`plot`.
        differences, layout, bands, line_kw, fill_between_kw : optional
            As in :meth:`plot`.

        Returns
        -------
        display : StudyDisplay
            The drawn display.
        """
        metric = result._metric(metric)
        models = result.models if models is None else list(models)
        unknown = set(models) - set(result.models)
        if unknown:
            raise ValueError(f"Unknown models {sorted(unknown)}; have {result.models}.")
        reference = models[0] if reference is None else reference
        if reference not in models:
            raise ValueError(
                f"Unknown reference model {reference!r}; models: {models}."
            )
        _check_confidence(confidence)
        summary = result.summary(metric)

        def wide(column):
            """Models by fractions, NaN where a model was not run."""
            table = summary[column].unstack()
            return table.reindex(index=models, columns=result.fractions)

        means = dict(zip(models, wide("mean").to_numpy(float), strict=True))
        stds = dict(zip(models, wide("std").to_numpy(float), strict=True))
        # Per fraction, the training size of the last model run there.
        n_train = wide("n_train").ffill().iloc[-1].to_numpy(float)
        diffs, rejected = {}, {}
        if len(result.models) > 1:
            # The table's comparisons: the same test, intervals and marks.
            cmp = result.compare(
                reference,
                metric=metric,
                test=test,
                correction=correction,
                alpha=1 - confidence,
            )
            # compare has a row per fraction, in the order of result.fractions.
            for model in [m for m in models if m != reference]:
                rows = cmp[cmp["model"] == model]
                diffs[model] = rows[["estimate", "ci_low", "ci_high"]].to_numpy(float)
                rejected[model] = rows["reject"].to_numpy(bool)
        display = cls(
            fractions=np.asarray(result.fractions, dtype=float),
            means=means,
            stds=stds,
            metric=metric,
            reference=reference,
            differences=diffs,
            confidence=confidence,
            n_train=n_train,
            dataset=dataset,
            protocol=_protocol(result),
            test=test,
            correction=correction,
            rejected=rejected,
        )
        return display.plot(
            ax,
            differences=differences,
            layout=layout,
            bands=bands,
            line_kw=line_kw,
            fill_between_kw=fill_between_kw,
        )

    def _styles(self):
        """Line style per model: the reference in bold black, others in colour."""
        others = [m for m in self.means if m != self.reference]
        styles = {
            m: {**_OTHER_STYLE, "color": f"C{i % 10}"} for i, m in enumerate(others)
        }
        return {**styles, self.reference: dict(_REFERENCE_STYLE)}

    def _label(self, model):
        return f"{model} (reference)" if model == self.reference else model

    def _format_x(self, ax):
        from matplotlib.ticker import FixedLocator, NullLocator

        if len(self.fractions) > 1 and self.fractions.min() > 0:
            # Fractions are usually spaced geometrically (5%, 10%, 25%, ...).
            ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(self.fractions))
        ax.xaxis.set_minor_locator(NullLocator())
        labels = [f"{f:.0%}" for f in self.fractions]
        if self.n_train is not None and np.isfinite(self.n_train).all():
            labels = [
                f"{t}\n{n:.0f}" for t, n in zip(labels, self.n_train, strict=True)
            ]
            ax.set_xlabel("Fraction of the training fold (mean rows fitted)")
        else:
            ax.set_xlabel("Fraction of the training fold")
        ax.set_xticklabels(labels)
        if ax.get_xscale() == "log":
            # Room for the dodged differences at both ends.
            pad = np.exp(_DODGE + 0.1)
            ax.set_xlim(self.fractions.min() / pad, self.fractions.max() * pad)

    def plot(
        self,
        ax=None,
        *,
        differences=True,
        layout="row",
        bands=False,
        line_kw=None,
        fill_between_kw=None,
    ):
        """Draw the scores and, beside them, the paired differences.

        Parameters
        ----------
        ax : matplotlib Axes or pair of Axes, default=None
            ``None``: a new figure, with a panel of differences when there are
            any; one Axes: the scores only; a pair: both panels there.
        differences : bool, default=True
            Draw the panel of paired differences (on a new figure).
        layout : {"row", "column"}, default="row"
            On a new figure, the differences beside the scores or below them.
        bands : bool, default=False
            Shade mean +- one standard deviation over splits on the scores.
        line_kw : dict, default=None
            Extra keyword arguments of ``ax.plot`` for every model.
        fill_between_kw : dict, default=None
            Extra keyword arguments of ``ax.fill_between``.

        Returns
        -------
        self : StudyDisplay
            With ``ax_``, ``diff_ax_``, ``figure_``, ``lines_``, ``errorbars_``,
            ``fill_between_`` and ``legend_`` set.
        """
        plt = import_or_hint(
            "matplotlib.pyplot", feature="plots", purpose="StudyDisplay.plot"
        )
        if layout not in ("row", "column"):
            raise ValueError(f"layout must be 'row' or 'column', got {layout!r}.")
        draw_diff = differences and any(
            np.isfinite(d).any() for d in (self.differences or {}).values()
        )
        own_figure = ax is None
        styles = self._styles()
        self.lines_, self.fill_between_, self.errorbars_, self.marks_ = {}, {}, {}, {}
        if len(self.fractions) == 1:
            self._plot_one_fraction(plt, ax, draw_diff, layout, styles, line_kw)
        else:
            ax, diff_ax = _panels(plt, ax, draw_diff, layout, 4.4, 8.4)
            self._plot_scores(ax, styles, bands, line_kw, fill_between_kw)
            if diff_ax is not None:
                self._plot_differences(diff_ax, styles)
            # Right of the last panel of a row, of the first of a column.
            last = diff_ax if diff_ax is not None and not _stacked(ax, diff_ax) else ax
            self.legend_ = last.legend(
                handles=list(self.lines_.values()),
                fontsize="small",
                frameon=False,
                **_LEGEND,
            )
            self.ax_, self.diff_ax_ = ax, diff_ax
        if own_figure:
            width = self.ax_.figure.get_figwidth()
            self.ax_.figure.suptitle(self._title(draw_diff, width), fontsize="medium")
        self.figure_ = self.ax_.figure
        return self

    def _plot_scores(self, ax, styles, bands, line_kw, fill_between_kw):
        for model, mean in self.means.items():
            kw = {"marker": "o", **styles[model], **(line_kw or {})}
            (line,) = ax.plot(self.fractions, mean, label=self._label(model), **kw)
            self.lines_[model] = line
            if bands:
                std = np.nan_to_num(self.stds[model])
                band = {"alpha": 0.12, "color": line.get_color(), "linewidth": 0}
                band.update(fill_between_kw or {})
                self.fill_between_[model] = ax.fill_between(
                    self.fractions, mean - std, mean + std, **band
                )
        self._format_x(ax)
        ax.set_ylabel(self.metric)
        ax.set_title(
            "Mean over splits" + (" (shaded: one std either side)" if bands else ""),
            fontsize="medium",
        )
        ax.grid(True, alpha=0.3)

    def _diff_title(self, ax, sep):
        centre = "median (HL)" if self.test == "wilcoxon" else "mean"
        ax.set_title(
            f"Paired difference to {self.reference}:{sep}{centre}, "
            f"{self.confidence:.0%} {TEST_LABELS.get(self.test, self.test)} "
            "interval",
            fontsize="medium",
        )

    def _plot_differences(self, ax, styles):
        others = [m for m in self.differences if m in self.means]
        # Dodge the models sideways (in log space) so intervals do not overlap.
        offsets = (
            np.linspace(-_DODGE, _DODGE, len(others)) if len(others) > 1 else [0.0]
        )
        ax.axhline(0.0, **_ZERO_LINE)
        for model, offset in zip(others, offsets, strict=True):
            estimate, low, high = self.differences[model].T
            x = self.fractions * np.exp(offset)
            self.errorbars_[model] = ax.errorbar(
                x,
                estimate,
                yerr=[estimate - low, high - estimate],
                capsize=2.5,
                elinewidth=1.2,
                **_points(styles[model]),
            )
            self._marks(ax, model, x, estimate, high, styles[model]["color"])
        self._format_x(ax)
        ax.margins(y=0.12)  # room for the marks
        ax.set_ylabel(f"{self.metric}: model - {self.reference}")
        self._diff_title(ax, " ")
        ax.grid(True, alpha=0.3)

    def _marks(self, ax, model, at, estimate, high, color):
        """The table's ``*`` past each rejected interval's top (or its point)."""
        one = len(self.fractions) == 1  # intervals along x, a row per model
        marks = (self.rejected or {}).get(model, np.zeros(len(at), dtype=bool))
        tip = np.where(np.isfinite(high), high, estimate)
        self.marks_[model] = [
            ax.annotate(
                "*",
                (t, a) if one else (a, t),
                xytext=(4, 0) if one else (0, 1),
                textcoords="offset points",
                color=color,
                fontsize="large",
                fontweight="bold",
                ha="left" if one else "center",
                va="center" if one else "bottom",
            )
            for a, t, mark in zip(at, tip, marks, strict=True)
            if mark and np.isfinite(t)
        ]

    def _plot_one_fraction(self, plt, ax, draw_diff, layout, styles, line_kw):
        """One fraction: a row per model (mean and std), the differences beside it."""
        # The reference on top, the others below in the order given.
        models = sorted(self.means, key=lambda m: m != self.reference)
        rows = {model: len(models) - 1 - i for i, model in enumerate(models)}
        height = 1.6 + 0.42 * len(models)
        ax, diff_ax = _panels(
            plt, ax, draw_diff, layout, height, 2 * height, sharey=True
        )
        for model in models:
            style = styles[model]
            std = np.nan_to_num(self.stds[model][0])
            self.lines_[model] = ax.errorbar(
                [self.means[model][0]],
                [rows[model]],
                xerr=[[std], [std]],
                elinewidth=style["linewidth"],
                capsize=3,
                **_points(style, grow=1),
                **(line_kw or {}),
            ).lines[0]
        ax.set_yticks([rows[m] for m in models], [self._label(m) for m in models])
        ax.set_ylim(-0.6, len(models) - 0.4)
        ax.set_xlabel(self.metric)
        ax.set_title("Mean over splits, bars one std either side", fontsize="medium")
        ax.grid(True, axis="x", alpha=0.3)
        ax.margins(x=0.08)
        if diff_ax is not None:
            self._plot_one_fraction_differences(diff_ax, ax, models, rows, styles)
        self.ax_, self.diff_ax_ = ax, diff_ax
        self.legend_ = None  # the y axis names the models

    def _plot_one_fraction_differences(self, ax, scores_ax, models, rows, styles):
        shared = ax.get_shared_y_axes().joined(scores_ax, ax)
        ax.axvline(0.0, **_ZERO_LINE)
        for model in models:
            if model not in self.differences:
                continue
            estimate, low, high = self.differences[model].T
            y = [rows[model]]
            self.errorbars_[model] = ax.errorbar(
                estimate,
                y,
                xerr=[estimate - low, high - estimate],
                capsize=3,
                elinewidth=1.4,
                **_points(styles[model], grow=1),
            )
            self._marks(ax, model, y, estimate, high, styles[model]["color"])
        if not shared:  # beside the scores, the rows are theirs
            ax.set_yticks([rows[m] for m in models], models)
        ax.set_ylim(-0.6, len(models) - 0.4)
        ax.margins(x=0.12)  # room for the marks
        ax.set_xlabel(f"{self.metric}: model - {self.reference}")
        self._diff_title(ax, "\n")
        ax.grid(True, axis="x", alpha=0.3)

    def _title(self, with_differences, width):
        what = f"{self.metric} against the size of the training set"
        one = len(self.fractions) == 1
        if one:
            what = f"{self.metric} at {self.fractions[0]:.0%} of each training fold"
        first = (
            f"{self.dataset}: {what}" if self.dataset else what[0].upper() + what[1:]
        )
        details = [self.protocol] if self.protocol else []
        if not one:
            details.append("nested stratified subsamples of each training fold")
        elif self.n_train is not None and np.isfinite(self.n_train).all():
            details.append(f"{self.n_train[0]:.0f} training rows on average")
        if with_differences:
            test = TEST_LABELS.get(self.test, self.test)
            details.append(f"intervals: {test} test, unadjusted")
            alpha = f"{1 - self.confidence:.2g}"
            if self.correction is None:
                details.append(f"*: p ≤ {alpha}, no correction")
            else:
                adjusted = CORRECTION_LABELS.get(self.correction, self.correction)
                details.append(
                    f"*: {adjusted}-adjusted p ≤ {alpha} over every comparison "
                    f"with {self.reference}, as in the table"
                )
        # About 11 characters of the medium font per inch of figure.
        lines = textwrap.wrap(
            "; ".join(details), width=int(11 * width), break_on_hyphens=False
        )
        return "\n".join([first, *lines])
