"""StudyResult: the tidy records of a data-fraction study, summaries and tests."""

import numpy as np

from ._records import _format_p, _import_pandas, _markdown_table, _Records
from ._stats import adjust_pvalues, paired_test

__all__ = ["StudyResult"]


class StudyResult(_Records):
    """Results of :func:`data_fraction_study`: tidy records, summaries, tests.

    Plain data: building, pickling and ``to_csv`` need neither pandas nor
    matplotlib; ``to_frame``, ``summary`` and ``compare`` return pandas
    objects.

    Parameters
    ----------
    records : list of dict
        One dict per (model, fraction, split, metric) with the keys
        ``model, fraction, split, repeat, fold, n_train, n_test, metric,
        value, fit_time, score_time``.
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
    data_fraction_study : Produces a StudyResult.
    StudyDisplay : Plots a StudyResult.
    """

    _columns = (
        "model",
        "fraction",
        "split",
        "repeat",
        "fold",
        "n_train",
        "n_test",
        "metric",
        "value",
        "fit_time",
        "score_time",
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
            The tidy records (for example ``pandas.read_csv`` of
            :meth:`to_csv`).

        Returns
        -------
        result : StudyResult
            Models and metrics in order of appearance, fractions ascending.
        """
        missing = set(cls._columns) - set(frame.columns)
        if missing:
            raise ValueError(f"The frame lacks the columns {sorted(missing)}.")
        records = []
        for row in frame[list(cls._columns)].itertuples(index=False):
            rec = dict(zip(cls._columns, row, strict=True))
            for key in ("split", "repeat", "fold", "n_train", "n_test"):
                rec[key] = int(rec[key])
            for key in ("fraction", "value", "fit_time", "score_time"):
                rec[key] = float(rec[key])
            records.append(rec)
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
                key = (r["model"], r["fraction"])
                table.setdefault(key, {})[r["split"]] = (
                    r["value"],
                    r["n_train"],
                    r["n_test"],
                )
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
            Indexed by (model, fraction), with columns ``mean``, ``std``
            (ddof=1), ``n_splits``, ``n_train`` (mean training size),
            ``fit_time`` (mean seconds per fit).
        """
        pd = _import_pandas("summary")
        metric = self._metric(metric)
        frame = self.to_frame()
        frame = frame[frame["metric"] == metric]
        grouped = frame.groupby(["model", "fraction"], sort=False)
        out = pd.DataFrame(
            {
                "mean": grouped["value"].mean(),
                "std": grouped["value"].std(ddof=1),
                "n_splits": grouped["value"].size(),
                "n_train": grouped["n_train"].mean(),
                "fit_time": grouped["fit_time"].mean(),
            }
        )
        order = pd.MultiIndex.from_product(
            [self.models, self.fractions], names=["model", "fraction"]
        )
        return out.reindex(order.intersection(out.index, sort=False))

    def compare(
        self, reference=None, *, metric=None, test="wilcoxon", correction="holm"
    ):
        """Paired tests of each model against ``reference`` at every fraction.

        The pairs are the splits both models were scored on: the same test
        fold and the same training subsample.

        Parameters
        ----------
        reference : str, default=None
            The model the others are compared with; the first model by
            default.
        metric : str, default=None
            The metric; the study's first by default.
        test : {"wilcoxon", "corrected_t"}, default="wilcoxon"
            ``"wilcoxon"``: the Wilcoxon signed-rank test.
            ``"corrected_t"``: the Nadeau-Bengio corrected resampled t-test,
            whose variance term ``1/k + n_test/n_train`` accounts for the
            overlap of training sets across cross-validation splits
            (``n_train`` is the mean size of the subsample actually fitted, so
            the test is very conservative at small fractions).
        correction : {"holm", "bonferroni"} or None, default="holm"
            Correction over the whole table (every model and fraction).

        Returns
        -------
        comparison : pandas.DataFrame
            One row per (model, fraction) with ``reference``, ``mean_diff``
            (model minus reference), ``statistic``, ``p_value``,
            ``p_adjusted`` and ``n_pairs``.
        """
        pd = _import_pandas("compare")
        metric = self._metric(metric)
        reference = self.models[0] if reference is None else reference
        if reference not in self.models:
            raise ValueError(
                f"Unknown reference model {reference!r}; models: {self.models}."
            )
        values = self._values(metric)
        rows = []
        for model in self.models:
            if model == reference:
                continue
            for fraction in self.fractions:
                ref = values.get((reference, fraction), {})
                other = values.get((model, fraction), {})
                splits = sorted(set(ref) & set(other))
                row = {
                    "model": model,
                    "fraction": fraction,
                    "reference": reference,
                    "mean_diff": np.nan,
                    "statistic": np.nan,
                    "p_value": np.nan,
                    "n_pairs": len(splits),
                }
                if splits:
                    diff = np.array([other[s][0] - ref[s][0] for s in splits])
                    ratio = np.mean([ref[s][2] / ref[s][1] for s in splits])
                    row["mean_diff"] = float(diff.mean())
                    if len(splits) >= 2 or test == "wilcoxon":
                        stat, p = paired_test(diff, test, test_train_ratio=ratio)
                        row["statistic"], row["p_value"] = stat, p
                rows.append(row)
        out = pd.DataFrame.from_records(
            rows,
            columns=[
                "model",
                "fraction",
                "reference",
                "mean_diff",
                "statistic",
                "p_value",
                "n_pairs",
            ],
        )
        out["p_adjusted"] = adjust_pvalues(out["p_value"].to_numpy(), correction)
        return out

    def to_markdown(
        self,
        reference=None,
        *,
        metric=None,
        test="wilcoxon",
        correction="holm",
        digits=3,
        details=False,
    ):
        """Markdown table: mean +- std per model and fraction, with p-values.

        Parameters
        ----------
        reference : str, default=None
            Model the p-values compare with (the first model by default).
        metric : str, default=None
            The metric; the study's first by default.
        test : {"wilcoxon", "corrected_t"}, default="wilcoxon"
            The paired test, see :meth:`compare`.
        correction : {"holm", "bonferroni"} or None, default="holm"
            The multiple-testing correction, see :meth:`compare`.
        digits : int, default=3
            Decimals of the scores.
        details : bool, default=False
            Append a second table with every comparison: the mean
            difference to ``reference``, raw and corrected p-values.

        Returns
        -------
        table : str
            Rows are models, columns fractions; other models' cells carry
            the corrected p-value against ``reference``; the last column is
            the mean fit time in seconds at the largest fraction.
        """
        metric = self._metric(metric)
        reference = self.models[0] if reference is None else reference
        summary = self.summary(metric)
        pvalues = {}
        if len(self.models) > 1:
            cmp = self.compare(
                reference, metric=metric, test=test, correction=correction
            )
            pvalues = {
                (m, f): p
                for m, f, p in zip(
                    cmp["model"], cmp["fraction"], cmp["p_adjusted"], strict=True
                )
            }
        header = ["model", *(f"{f:.0%}" for f in self.fractions), "fit time (s)"]
        rows = []
        for model in self.models:
            cells = [f"{model} (reference)" if model == reference else model]
            for fraction in self.fractions:
                if (model, fraction) not in summary.index:
                    cells.append("")
                    continue
                mean, std = summary.loc[(model, fraction), ["mean", "std"]]
                cell = f"{mean:.{digits}f} ± {std:.{digits}f}"
                if (model, fraction) in pvalues:
                    cell += f" (p={_format_p(pvalues[(model, fraction)])})"
                cells.append(cell)
            last = (model, self.fractions[-1])
            fit = summary.loc[last, "fit_time"] if last in summary.index else np.nan
            cells.append(f"{fit:.2f}")
            rows.append(cells)
        text = _markdown_table(header, rows)
        if not pvalues:
            return text
        label = {"wilcoxon": "Wilcoxon signed-rank", "corrected_t": "corrected t"}
        text += (
            f"\n\n{metric}, mean ± std over {self.n_splits} splits; p: "
            f"{label.get(test, test)} test against {reference}, paired over "
            f"splits, {correction or 'no'} correction over the table."
        )
        if details:
            detail_rows = [
                [
                    r.model,
                    f"{r.fraction:.0%}",
                    f"{r.mean_diff:+.{digits}f}",
                    _format_p(r.p_value),
                    _format_p(r.p_adjusted),
                    r.n_pairs,
                ]
                for r in cmp.itertuples()
            ]
            header2 = ["model", "fraction", f"model − {reference}", "p", "p adj.", "n"]
            text += "\n\n" + _markdown_table(header2, detail_rows)
        return text
