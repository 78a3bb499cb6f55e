"""StudyDisplay: score against training fraction, with bands."""

import numpy as np

__all__ = ["StudyDisplay"]


class StudyDisplay:
    """Score against training fraction for each model, with bands.

    Build it with :meth:`from_result`, then call :meth:`plot`. matplotlib is
    imported only by :meth:`plot`.

    Parameters
    ----------
    fractions : ndarray of shape (n_fractions,)
        Training fractions (x axis).
    means : dict of str to ndarray of shape (n_fractions,)
        Mean score per model (NaN where a model was not run).
    stds : dict of str to ndarray of shape (n_fractions,)
        Standard deviation over splits per model.
    metric : str
        Name of the score (y-axis label).

    Attributes
    ----------
    ax_ : matplotlib Axes
        Axes with the plot.
    figure_ : matplotlib Figure
        Figure containing the plot.
    lines_ : dict of str to matplotlib Line2D
        The mean line of each model.
    fill_between_ : dict of str to matplotlib PolyCollection
        The band of each model (mean +- std), when bands are drawn.

    See Also
    --------
    StudyResult.summary : The numbers this display draws.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from cr_sklearn.study import StudyDisplay, data_fraction_study
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> result = data_fraction_study({"logreg": LogisticRegression(max_iter=5000)},
    ...                              X, y, fractions=(0.1, 1.0), cv=3)
    >>> display = StudyDisplay.from_result(result).plot()
    >>> len(display.lines_)
    1
    """

    def __init__(self, *, fractions, means, stds, metric):
        self.fractions = fractions
        self.means = means
        self.stds = stds
        self.metric = metric

    @classmethod
    def from_result(cls, result, *, metric=None, models=None):
        """Collect the means and standard deviations of a :class:`StudyResult`.

        Unlike scikit-learn's ``from_estimator``, nothing is drawn yet: call
        :meth:`plot` on the returned display.

        Parameters
        ----------
        result : StudyResult
            The study.
        metric : str, default=None
            The metric; the study's first by default.
        models : list of str, default=None
            Models to show, in this order; all by default.

        Returns
        -------
        display : StudyDisplay
            The display, not yet plotted.
        """
        metric = result._metric(metric)
        models = result.models if models is None else list(models)
        unknown = set(models) - set(result.models)
        if unknown:
            raise ValueError(f"Unknown models {sorted(unknown)}; have {result.models}.")
        summary = result.summary(metric)
        fractions = np.asarray(result.fractions, dtype=float)
        means, stds = {}, {}
        for model in models:
            mean = np.full(len(fractions), np.nan)
            std = np.full(len(fractions), np.nan)
            for i, f in enumerate(result.fractions):
                if (model, f) in summary.index:
                    mean[i], std[i] = summary.loc[(model, f), ["mean", "std"]]
            means[model], stds[model] = mean, std
        return cls(fractions=fractions, means=means, stds=stds, metric=metric)

    def plot(self, ax=None, *, bands=True, line_kw=None, fill_between_kw=None):
        """Draw the mean score of each model against the training fraction.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure when None.
        bands : bool, default=True
            Shade mean +- one standard deviation over splits.
        line_kw : dict, default=None
            Extra keyword arguments of ``ax.plot``.
        fill_between_kw : dict, default=None
            Extra keyword arguments of ``ax.fill_between``.

        Returns
        -------
        self : StudyDisplay
            With ``ax_``, ``figure_``, ``lines_`` and ``fill_between_`` set.
        """
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FixedLocator, NullLocator

        if ax is None:
            _, ax = plt.subplots()
        self.lines_, self.fill_between_ = {}, {}
        for model, mean in self.means.items():
            (line,) = ax.plot(
                self.fractions, mean, marker="o", label=model, **(line_kw or {})
            )
            self.lines_[model] = line
            if bands:
                std = np.nan_to_num(self.stds[model])
                kw = {"alpha": 0.2, "color": line.get_color(), "linewidth": 0}
                kw.update(fill_between_kw or {})
                self.fill_between_[model] = ax.fill_between(
                    self.fractions, mean - std, mean + std, **kw
                )
        if len(self.fractions) > 1 and self.fractions.min() > 0:
            # Fractions are usually spaced geometrically (5%, 10%, 25%, ...).
            ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(self.fractions))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([f"{f:.0%}" for f in self.fractions])
        ax.set_xlabel("Fraction of the training fold")
        ax.set_ylabel(self.metric)
        ax.legend(loc="best")
        self.ax_ = ax
        self.figure_ = ax.figure
        return self
