"""StudyResult: the tidy records of a data-fraction study, summaries and tests."""

from itertools import product

import numpy as np

from ._records import _format_p, _import_pandas, _markdown_table, _Records
from ._stats import (
    CORRECTION_LABELS,
    TEST_LABELS,
    TESTS,
    adjust_pvalues,
    paired_interval,
    paired_test,
)

__all__ = ["StudyResult"]


class StudyResult(_Records):
    """Results of :func:`data_fraction_study`: tidy records, summaries, tests.

    Building, pickling and ``to_csv`` need neither pandas nor matplotlib;
    ``to_frame``, ``summary`` and ``compare`` return pandas objects.

    Parameters
    ----------
    records : list of dict
        One dict per (model, fraction, split, metric) with the keys ``model,
        fraction, split, repeat, fold, n_train, n_test, metric, value,
        fit_time, score_time``.
    models : list of str
        Model names, in the order given to the study.
    fractions : list of float
        Training fractions, ascending.
    metrics : list of str
        Metric names; the first is the default everywhere.

    Attributes
    ----------
    n_splits : int
        Number of cross-validation splits.

    See Also
    --------
    StudyDisplay : Plots a StudyResult.
    """

    _columns = tuple(
        "model fraction split repeat fold n_train n_test metric value fit_time "
        "score_time".split()
    )

    def __init__(self, records, *, models, fractions, metrics):
        self.records = records
        self.models = list(models)
        self.fractions = list(fractions)
        self.metrics = list(metrics)

    @property
    def n_splits(self):
        return len({r["split"] for r in self.records})

    @classmethod
    def from_frame(cls, frame):
        """Rebuild a StudyResult from :meth:`to_frame` output or its CSV.

        Parameters
        ----------
        frame : pandas.DataFrame
            The tidy records (e.g. ``pandas.read_csv`` of :meth:`to_csv`).

        Returns
        -------
        result : StudyResult
            Models and metrics in order of appearance, fractions ascending.
        """
        missing = set(cls._columns) - set(frame.columns)
        if missing:
            raise ValueError(f"The frame lacks the columns {sorted(missing)}.")
        types = dict.fromkeys(("split", "repeat", "fold", "n_train", "n_test"), int)
        types |= dict.fromkeys(("fraction", "value", "fit_time", "score_time"), float)
        records = frame[list(cls._columns)].astype(types).to_dict("records")
        return cls(
            records,
            models=list(dict.fromkeys(frame["model"])),
            fractions=sorted({float(f) for f in frame["fraction"]}),
            metrics=list(dict.fromkeys(frame["metric"])),
        )

    def _values(self, metric):
        """{(model, fraction): {split: (value, n_train, n_test)}} for one metric."""
        table = {}
        for r in self.records:
            if r["metric"] == metric:
                row = (r["value"], r["n_train"], r["n_test"])
                table.setdefault((r["model"], r["fraction"]), {})[r["split"]] = row
        return table

    def summary(self, metric=None):
        """Mean and standard deviation over splits per model and fraction.

        Parameters
        ----------
        metric : str, default=None
            The metric; the study's first by default.

        Returns
        -------
        summary : pandas.DataFrame
            Indexed by (model, fraction): ``mean``, ``std`` (ddof=1), ``n_splits``,
            ``n_train`` (mean training size), ``fit_time`` (mean seconds per fit).
        """
        pd = _import_pandas("summary")
        metric = self._metric(metric)
        frame = self.to_frame()
        frame = frame[frame["metric"] == metric]
        out = frame.groupby(["model", "fraction"], sort=False).agg(
            mean=("value", "mean"),
            std=("value", "std"),  # ddof=1
            n_splits=("value", "size"),
            n_train=("n_train", "mean"),
            fit_time=("fit_time", "mean"),
        )
        order = pd.MultiIndex.from_product(
            [self.models, self.fractions], names=["model", "fraction"]
        )
        return out.reindex(order.intersection(out.index, sort=False))

    def compare(
        self,
        reference=None,
        *,
        metric=None,
        test="corrected_t",
        correction="holm",
        alpha=0.05,
    ):
        """Paired tests of each model against ``reference`` at every fraction.

        The pairs are the splits both models were scored on; :meth:`to_markdown`
        and :class:`StudyDisplay` show the same tests (:ref:`study-statistics`).

        Parameters
        ----------
        reference : str, default=None
            The model the others are compared with; the first model by default.
        metric : str, default=None
            The metric; the study's first by default.
        test : {"corrected_t", "wilcoxon"}, default="corrected_t"
            :func:`corrected_ttest` (``n_train`` the mean subsample size) or
            :func:`wilcoxon_test`, with their intervals.
        correction : {"holm", "bonferroni"} or None, default="holm"
            Family-wise correction over the whole table, for ``p_adjusted`` and
            ``reject``.
        alpha : float, default=0.05
            Level of ``reject``; the intervals cover ``1 - alpha``.

        Returns
        -------
        comparison : pandas.DataFrame
            One row per (model, fraction): ``reference``, ``mean_diff`` (model
            minus reference), the test's ``estimate``, its unadjusted ``ci_low``,
            ``ci_high``, ``statistic`` and ``p_value``, then ``p_adjusted``,
            ``reject`` and ``n_pairs``.
        """
        pd = _import_pandas("compare")
        metric = self._metric(metric)
        if test not in TESTS:
            raise ValueError(f"test must be one of {TESTS}, got {test!r}.")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
        reference = self.models[0] if reference is None else reference
        if reference not in self.models:
            raise ValueError(
                f"Unknown reference model {reference!r}; models: {self.models}."
            )
        values = self._values(metric)
        others = [m for m in self.models if m != reference]
        rows = []
        for model, fraction in product(others, self.fractions):
            ref = values.get((reference, fraction), {})
            other = values.get((model, fraction), {})
            splits = sorted(set(ref) & set(other))
            row = dict.fromkeys(_COMPARE_COLUMNS, np.nan)
            row.update(
                model=model, fraction=fraction, reference=reference, n_pairs=len(splits)
            )
            if splits:
                diff = np.array([other[s][0] - ref[s][0] for s in splits])
                ratio = np.mean([ref[s][2] / ref[s][1] for s in splits])
                row["mean_diff"] = float(diff.mean())
                if len(splits) >= 2 or test == "wilcoxon":
                    stat, p = paired_test(diff, test, test_train_ratio=ratio)
                    row["statistic"], row["p_value"] = stat, p
                    row["estimate"], row["ci_low"], row["ci_high"] = paired_interval(
                        diff, test, ratio, 1 - alpha
                    )
            rows.append(row)
        out = pd.DataFrame.from_records(rows, columns=list(_COMPARE_COLUMNS))
        out["p_adjusted"] = adjust_pvalues(out["p_value"].to_numpy(), correction)
        out["reject"] = (out["p_adjusted"] <= alpha).to_numpy()
        return out[[*_COMPARE_COLUMNS, "p_adjusted", "reject"]]

    def to_markdown(
        self,
        reference=None,
        *,
        metric=None,
        test="corrected_t",
        correction="holm",
        alpha=0.05,
        digits=3,
        details=False,
    ):
        """Markdown table: mean +- std per model and fraction, with p-values.

        Each other model's cell carries its unadjusted p-value against
        ``reference``, with ``*`` where the test rejects after the ``correction``
        over the whole table.

        Parameters
        ----------
        reference, metric, test, correction, alpha : optional
            As in :meth:`compare`; ``correction`` and ``alpha`` set the marks.
        digits : int, default=3
            Decimals of the scores.
        details : bool, default=False
            Append a table of every comparison: mean difference, interval,
            unadjusted and adjusted p-values.

        Returns
        -------
        table : str
            Models by fractions, then the mean fit time at the largest fraction,
            and a caption naming the test and correction.
        """
        metric = self._metric(metric)
        reference = self.models[0] if reference is None else reference
        summary = self.summary(metric)
        tested = {}
        if len(self.models) > 1:
            cmp = self.compare(
                reference, metric=metric, test=test, correction=correction, alpha=alpha
            )
            tested = {
                (r.model, r.fraction): (r.p_value, r.reject) for r in cmp.itertuples()
            }
        name = TEST_LABELS.get(test, test)
        adjusted = CORRECTION_LABELS.get(correction, correction)
        first = "model"
        if tested:
            adjusted_p = "p" if correction is None else f"{adjusted}-adjusted p"
            first = f"model (p: {name}; *: {adjusted_p} ≤ {alpha:g})"
        header = [first, *(f"{f:.0%}" for f in self.fractions), "fit time (s)"]
        rows = []
        for model in self.models:
            cells = [f"{model} (reference)" if model == reference else model]
            for fraction in self.fractions:
                key = (model, fraction)
                if key not in summary.index:
                    cells.append("")
                    continue
                mean, std = summary.loc[key, ["mean", "std"]]
                cell = f"{mean:.{digits}f} ± {std:.{digits}f}"
                if key in tested:
                    p, reject = tested[key]
                    cell += f" (p={_format_p(p)}{'*' if reject else ''})"
                cells.append(cell)
            last = (model, self.fractions[-1])
            fit = summary.loc[last, "fit_time"] if last in summary.index else np.nan
            cells.append(f"{fit:.2f}")
            rows.append(cells)
        text = _markdown_table(header, rows)
        at = ", at" if len(self.fractions) == 1 else " at the largest fraction,"
        fit_time = (
            f"fit time: mean seconds per fit{at} "
            f"{self.fractions[-1]:.0%} of each training fold."
        )
        if not tested:
            spread = f"{metric}, mean ± std over {self.n_splits} splits"
            return f"{text}\n\n{spread}; {fit_time}"
        family = int(np.isfinite(cmp["p_value"]).sum())
        if correction is None:
            mark = f"*: p ≤ {alpha:g} (no multiple-testing correction)"
        else:
            mark = (
                f"*: rejected at {alpha:g} after {adjusted}'s correction over the "
                f"{family} comparison{'' if family == 1 else 's'} of the table"
            )
        text += (
            f"\n\n{metric}, mean ± std over {self.n_splits} splits. p: unadjusted "
            f"two-sided {name} test against {reference}, paired over splits; "
            f"{mark}. {fit_time[0].upper()}{fit_time[1:]}"
        )
        untested = cmp["p_value"].isna() & (cmp["n_pairs"] >= 2)
        if untested.any():
            text += (
                f" p=n/a: the differences to {reference} are the same on every "
                "split (no variance to test against), so no test is made and "
                "nothing is marked."
            )
        if details:
            detail_rows = [
                [
                    r.model,
                    f"{r.fraction:.0%}",
                    f"{r.mean_diff:+.{digits}f}",
                    f"[{r.ci_low:+.{digits}f}, {r.ci_high:+.{digits}f}]"
                    if np.isfinite([r.ci_low, r.ci_high]).all()
                    else "n/a",
                    _format_p(r.p_value),
                    _format_p(r.p_adjusted),
                    "*" if r.reject else "",
                    r.n_pairs,
                ]
                for r in cmp.itertuples()
            ]
            p_label = f"p ({adjusted})" if correction else "p (unadjusted)"
            header2 = ["model", "fraction", f"model − {reference}"]
            header2 += [f"{1 - alpha:.0%} interval", "p", p_label, "*", "n"]
            text += "\n\n" + _markdown_table(header2, detail_rows)
        return text


_COMPARE_COLUMNS = tuple(
    "model fraction reference mean_diff estimate ci_low ci_high statistic p_value "
    "n_pairs".split()
)
