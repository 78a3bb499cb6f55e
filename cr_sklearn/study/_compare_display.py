"""Displays of a ComparisonResult: critical differences, rank curves, gap heatmap."""

import numpy as np
from scipy import stats

from ._deps import import_or_hint

__all__ = ["CriticalDifferenceDisplay", "GapHeatmapDisplay", "RankCurveDisplay"]


def _pyplot(purpose):
    return import_or_hint("matplotlib.pyplot", feature="plots", purpose=purpose)


def _fraction(result, fraction):
    fraction = result.fractions[-1] if fraction is None else float(fraction)
    if fraction not in result.fractions:
        raise ValueError(
            f"Unknown fraction {fraction!r}; the study has {result.fractions}."
        )
    return fraction


class CriticalDifferenceDisplay:
    """Critical-difference diagram: mean ranks, and groups Nemenyi cannot separate.

    Models sit on a rank axis (1, the best, at the left); a thick bar joins
    every maximal group of models whose mean ranks differ by less than the
    critical difference, drawn under the axis (Demšar, 2006). Build it with
    :meth:`from_result`.

    Parameters
    ----------
    mean_ranks : dict of str to float
        Mean rank of each model.
    critical_difference : float
        Nemenyi's critical difference at ``alpha``.
    n_tables : int
        Number of tables ranked.
    alpha : float, default=0.05
        Level of the critical difference.
    title : str, default=None
        Title of the axes.

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure
        The diagram and its figure.
    lines_ : dict of str to matplotlib Line2D
        Each model's line from its rank to its label.
    markers_ : dict of str to matplotlib Line2D
        Each model's marker on the rank axis.
    cliques_ : list of matplotlib Line2D
        The bars joining the groups not significantly different.
    cd_line_ : matplotlib Line2D
        The bar as long as the critical difference.

    See Also
    --------
    ComparisonResult.nemenyi : The test drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from cr_sklearn.study import CriticalDifferenceDisplay
    >>> display = CriticalDifferenceDisplay(
    ...     mean_ranks={"a": 1.2, "b": 2.1, "c": 2.7}, critical_difference=1.1,
    ...     n_tables=12).plot()
    >>> display.cliques()
    [('a', 'b'), ('b', 'c')]
    """

    def __init__(
        self, *, mean_ranks, critical_difference, n_tables, alpha=0.05, title=None
    ):
        self.mean_ranks = dict(mean_ranks)
        self.critical_difference = float(critical_difference)
        self.n_tables = int(n_tables)
        self.alpha = alpha
        self.title = title

    @classmethod
    def from_result(
        cls,
        result,
        *,
        metric=None,
        fraction=None,
        by=None,
        group=None,
        alpha=0.05,
        ax=None,
    ):
        """Draw the diagram of a :class:`ComparisonResult` at one fraction.

        Parameters
        ----------
        result : ComparisonResult
            The study.
        metric : str, default=None
            The metric; the study's first by default.
        fraction : float, default=None
            The training fraction; the largest by default.
        by : None, "size", dict or callable, default=None
            Groups of tables, as in :meth:`ComparisonResult.summary`.
        group : str, default=None
            With ``by``, the group drawn (required then).
        alpha : float, default=0.05
            Level of the critical difference.
        ax : matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        display : CriticalDifferenceDisplay
            The drawn display.
        """
        metric = result._metric(metric)
        fraction = _fraction(result, fraction)
        if by is not None and group is None:
            raise ValueError("With by, name the group to draw (group=...).")
        pairs = result.nemenyi(metric, by=by, alpha=alpha)
        pairs = pairs[pairs["fraction"] == fraction]
        if by is not None:
            pairs = pairs[pairs["group"] == group]
            if pairs.empty:
                raise ValueError(f"Unknown group {group!r}.")
        ranks = {}
        for r in pairs.itertuples():
            ranks[r.model_a], ranks[r.model_b] = r.rank_a, r.rank_b
        ranks = {m: ranks[m] for m in result.models if m in ranks}
        where = f", {group}" if group is not None else ""
        share = "" if len(result.fractions) == 1 else f" at {fraction:.0%} of each fold"
        title = (
            f"Mean rank on {int(pairs['n_tables'].iloc[0])} tables ({metric}"
            f"{share}{where}); bars: Nemenyi, not different at {alpha:g}"
        )
        return cls(
            mean_ranks=ranks,
            critical_difference=pairs["critical_difference"].iloc[0],
            n_tables=int(pairs["n_tables"].iloc[0]),
            alpha=alpha,
            title=title,
        ).plot(ax=ax)

    def cliques(self):
        """The maximal groups of models whose ranks differ by less than the CD.

        Returns
        -------
        cliques : list of tuple of str
            Models in rank order; a model different from all is in none.
        """
        order = sorted(self.mean_ranks, key=self.mean_ranks.get)
        ranks = [self.mean_ranks[m] for m in order]
        out, last = [], -1
        for i in range(len(order)):
            j = i
            while (
                j + 1 < len(order)
                and ranks[j + 1] - ranks[i] < self.critical_difference
            ):
                j += 1
            if j > i and j > last:
                out.append(tuple(order[i : j + 1]))
                last = j
        return out

    def plot(self, ax=None):
        """Draw the diagram.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        self : CriticalDifferenceDisplay
            With ``ax_``, ``figure_``, ``lines_``, ``markers_``, ``cliques_`` and
            ``cd_line_``.
        """
        plt = _pyplot("CriticalDifferenceDisplay.plot")
        order = sorted(self.mean_ranks, key=self.mean_ranks.get)
        k = len(order)
        half = (k + 1) // 2
        cliques = self.cliques()
        if ax is None:
            height = 1.6 + 0.32 * max(half, k - half) + 0.12 * len(cliques)
            _, ax = plt.subplots(figsize=(8, height), layout="constrained")
        low, high = 1, max(k, 2)
        ax.set_xlim(low - 0.6, high + 0.6)
        ax.hlines(0, low, high, color="black", linewidth=1.2)
        for r in range(low, high + 1):
            ax.vlines(r, 0, 0.08, color="black", linewidth=1)
            ax.text(r, 0.14, str(r), ha="center", va="bottom", fontsize="small")
        self.markers_, self.lines_ = {}, {}
        step = 0.32
        for i, model in enumerate(order):
            rank = self.mean_ranks[model]
            left = i < half
            depth = -(0.35 + step * (i if left else k - 1 - i)) - 0.12 * len(cliques)
            end = low - 0.45 if left else high + 0.45
            (self.lines_[model],) = ax.plot(
                [rank, rank, end], [0, depth, depth], color="0.3", linewidth=1
            )
            (self.markers_[model],) = ax.plot(
                [rank], [0], "o", color="black", markersize=4, zorder=3
            )
            ax.text(
                end + (-0.05 if left else 0.05),
                depth,
                f"{model} ({rank:.2f})",
                ha="right" if left else "left",
                va="center",
                fontsize="small",
            )
        self.cliques_ = []
        for c, clique in enumerate(cliques):
            y = -0.12 - 0.12 * c
            xs = [self.mean_ranks[clique[0]] - 0.03, self.mean_ranks[clique[-1]] + 0.03]
            (line,) = ax.plot(
                xs, [y, y], color="black", linewidth=3.5, solid_capstyle="round"
            )
            self.cliques_.append(line)
        cd_y = 0.55
        (self.cd_line_,) = ax.plot(
            [low, low + self.critical_difference],
            [cd_y, cd_y],
            color="firebrick",
            linewidth=1.6,
            marker="|",
            markersize=8,
        )
        ax.text(
            low + self.critical_difference / 2,
            cd_y + 0.06,
            f"CD = {self.critical_difference:.2f}",
            ha="center",
            va="bottom",
            fontsize="small",
            color="firebrick",
        )
        bottom = -(0.35 + step * max(half, k - half)) - 0.12 * len(cliques)
        ax.set_ylim(bottom - 0.1, cd_y + 0.3)
        ax.set_xlabel("mean rank (1 = best)")
        ax.set_yticks([])
        for side in ("left", "right", "top", "bottom"):
            ax.spines[side].set_visible(False)
        ax.tick_params(axis="x", bottom=False, labelbottom=False)
        ax.xaxis.set_label_position("top")
        if self.title:
            ax.set_title(self.title, fontsize="medium")
        self.ax_, self.figure_ = ax, ax.figure
        return self


class RankCurveDisplay:
    """Mean rank, and score difference to a reference, against training fraction.

    Left: each model's mean rank over the tables at every fraction. Right: each
    other model's mean difference to the reference (over the tables' mean
    differences) with a t interval across tables.

    Parameters
    ----------
    fractions : ndarray of shape (n_fractions,)
        Training fractions (x axis).
    mean_ranks : dict of str to ndarray of shape (n_fractions,)
        Mean rank of each model at each fraction.
    differences : dict of str to ndarray of shape (n_fractions, 3)
        Per other model: mean difference to the reference and the interval.
    reference : str
        The reference model.
    metric : str
        The metric's name.
    confidence : float, default=0.95
        Coverage of the intervals.

    Attributes
    ----------
    ax_, diff_ax_, figure_ : matplotlib Axes and Figure
        The two panels and their figure.
    lines_ : dict of str to matplotlib Line2D
        Each model's mean-rank line.
    errorbars_ : dict of str to matplotlib ErrorbarContainer
        Each other model's differences.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from cr_sklearn.study import RankCurveDisplay
    >>> display = RankCurveDisplay(
    ...     fractions=np.array([0.1, 1.0]),
    ...     mean_ranks={"a": np.array([1.5, 1.2]), "b": np.array([1.5, 1.8])},
    ...     differences={"b": np.array([[0.0, -0.01, 0.01], [-0.02, -0.03, -0.01]])},
    ...     reference="a", metric="accuracy").plot()
    >>> sorted(display.lines_)
    ['a', 'b']
    """

    def __init__(
        self, *, fractions, mean_ranks, differences, reference, metric, confidence=0.95
    ):
        self.fractions = np.asarray(fractions, dtype=float)
        self.mean_ranks = mean_ranks
        self.differences = differences
        self.reference = reference
        self.metric = metric
        self.confidence = confidence

    @classmethod
    def from_result(
        cls, result, *, reference=None, metric=None, confidence=0.95, ax=None
    ):
        """Draw the curves of a :class:`ComparisonResult`.

        Parameters
        ----------
        result : ComparisonResult
            The study.
        reference : str, default=None
            The reference model; the first by default.
        metric : str, default=None
            The metric; the study's first by default.
        confidence : float, default=0.95
            Coverage of the intervals across tables.
        ax : pair of matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        display : RankCurveDisplay
            The drawn display.
        """
        metric = result._metric(metric)
        reference = result._reference(reference)
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
        ranks = result.ranks(metric)
        scores = result.table_scores(metric)
        mean_ranks = {
            m: np.array([ranks.loc[f, m].mean() for f in result.fractions])
            for m in result.models
        }
        differences = {}
        for model in result.models:
            if model == reference:
                continue
            rows = []
            for f in result.fractions:
                d = (
                    (scores.loc[f, model] - scores.loc[f, reference])
                    .dropna()
                    .to_numpy()
                )
                mean = d.mean() if d.size else np.nan
                if d.size >= 2:
                    half = (
                        stats.t.ppf((1 + confidence) / 2, d.size - 1)
                        * d.std(ddof=1)
                        / np.sqrt(d.size)
                    )
                else:
                    half = np.nan
                rows.append([mean, mean - half, mean + half])
            differences[model] = np.array(rows)
        return cls(
            fractions=result.fractions,
            mean_ranks=mean_ranks,
            differences=differences,
            reference=reference,
            metric=metric,
            confidence=confidence,
        ).plot(ax=ax)

    def plot(self, ax=None):
        """Draw both panels.

        Parameters
        ----------
        ax : pair of matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        self : RankCurveDisplay
            With ``ax_``, ``diff_ax_``, ``figure_``, ``lines_``, ``errorbars_``.
        """
        plt = _pyplot("RankCurveDisplay.plot")
        if ax is None:
            _, ax = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
        ax, diff_ax = np.ravel(ax)
        self.lines_, self.errorbars_ = {}, {}
        for model, ranks in self.mean_ranks.items():
            ref = model == self.reference
            (self.lines_[model],) = ax.plot(
                self.fractions,
                ranks,
                "o-",
                label=model,
                color="black" if ref else None,
                linewidth=2.4 if ref else 1.4,
            )
        ax.set_xscale("log")
        ax.set_xlabel("training fraction")
        ax.set_ylabel("mean rank (1 = best)")
        ax.invert_yaxis()
        ax.set_title("Mean rank over tables", fontsize="medium")
        ax.legend(fontsize="small")
        diff_ax.axhline(0, color="black", linewidth=1.4)
        for i, (model, rows) in enumerate(self.differences.items()):
            shift = 1 + 0.04 * (i - (len(self.differences) - 1) / 2)
            color = self.lines_[model].get_color()
            low = rows[:, 0] - rows[:, 1]
            high = rows[:, 2] - rows[:, 0]
            self.errorbars_[model] = diff_ax.errorbar(
                self.fractions * shift,
                rows[:, 0],
                yerr=[low, high],
                fmt="o",
                color=color,
                capsize=3,
                label=model,
            )
        diff_ax.set_xscale("log")
        diff_ax.set_xlabel("training fraction")
        diff_ax.set_ylabel(f"{self.metric}: model − {self.reference}")
        diff_ax.set_title(
            f"Mean difference over tables, {self.confidence:.0%} t interval",
            fontsize="medium",
        )
        for a in (ax, diff_ax):
            a.set_xticks(self.fractions, [f"{f:.0%}" for f in self.fractions])
            a.minorticks_off()
        self.ax_, self.diff_ax_, self.figure_ = ax, diff_ax, ax.figure
        return self


class GapHeatmapDisplay:
    """Table-by-model heatmap of the gap to each table's best model.

    Parameters
    ----------
    gap : pandas.DataFrame
        Indexed by table, one column per model: the gap to the best.
    metric : str
        The metric's name.
    normalized : bool, default=False
        Whether the gap is normalised to [0, 1] per table.

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure
        The heatmap and its figure.
    image_ : matplotlib AxesImage
        The heatmap.
    colorbar_ : matplotlib Colorbar
        Its colour bar.
    texts_ : ndarray of matplotlib Text of shape (n_tables, n_models)
        The value in each cell.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from cr_sklearn.study import GapHeatmapDisplay
    >>> gap = pd.DataFrame({"a": [0.0, 0.02], "b": [0.01, 0.0]}, index=["t1", "t2"])
    >>> GapHeatmapDisplay(gap=gap, metric="accuracy").plot().texts_.shape
    (2, 2)
    """

    def __init__(self, *, gap, metric, normalized=False):
        self.gap = gap
        self.metric = metric
        self.normalized = normalized

    @classmethod
    def from_result(
        cls, result, *, metric=None, fraction=None, normalize=False, ax=None
    ):
        """Draw the gaps of a :class:`ComparisonResult` at one fraction.

        Parameters
        ----------
        result : ComparisonResult
            The study.
        metric : str, default=None
            The metric; the study's first by default.
        fraction : float, default=None
            The training fraction; the largest by default.
        normalize : bool, default=False
            As in :meth:`ComparisonResult.gap_to_best`.
        ax : matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        display : GapHeatmapDisplay
            The drawn display.
        """
        metric = result._metric(metric)
        fraction = _fraction(result, fraction)
        gap = result.gap_to_best(metric, normalize=normalize).loc[fraction]
        return cls(gap=gap, metric=metric, normalized=normalize).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the heatmap.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        self : GapHeatmapDisplay
            With ``ax_``, ``figure_``, ``image_``, ``colorbar_``, ``texts_``.
        """
        plt = _pyplot("GapHeatmapDisplay.plot")
        values = self.gap.to_numpy(dtype=float)
        n_tables, n_models = values.shape
        if ax is None:
            size = (1.6 + 1.1 * n_models, 1.2 + 0.4 * n_tables)
            _, ax = plt.subplots(figsize=size, layout="constrained")
        self.image_ = ax.imshow(values, cmap="Reds", aspect="auto", vmin=0)
        ax.set_xticks(range(n_models), list(self.gap.columns), rotation=30, ha="right")
        ax.set_yticks(range(n_tables), list(self.gap.index))
        high = np.nanmax(values) if np.isfinite(values).any() else 1.0
        self.texts_ = np.empty(values.shape, dtype=object)
        for (i, j), v in np.ndenumerate(values):
            color = "white" if np.isfinite(v) and v > 0.6 * high else "black"
            text = "n/a" if not np.isfinite(v) else f"{v:.3f}"
            self.texts_[i, j] = ax.text(
                j, i, text, ha="center", va="center", fontsize="x-small", color=color
            )
        what = "normalised gap" if self.normalized else f"gap in {self.metric}"
        self.colorbar_ = ax.figure.colorbar(self.image_, ax=ax, label=what)
        ax.set_title(
            f"Gap to each table's best model ({self.metric})", fontsize="medium"
        )
        self.ax_, self.figure_ = ax, ax.figure
        return self
