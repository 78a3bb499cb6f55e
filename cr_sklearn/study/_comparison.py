"""ComparisonResult: the records of compare_study and the statistics over tables."""

import warnings

import numpy as np

from ._bayes import bayesian_correlated_ttest, bayesian_signed_rank
from ._multi_stats import friedman_test, holm_test, nemenyi_test
from ._records import _format_p, _import_pandas, _markdown_table, _Records
from ._stats import TEST_LABELS, TESTS, paired_interval, paired_test, wilcoxon_interval
from ._stats import wilcoxon_test as _wilcoxon

__all__ = ["ComparisonResult"]

#: Default edges (rows) of the size bands of ``by="size"``.
SIZE_EDGES = (1_000, 10_000)


def _size_label(n, edges):
    bounds = [0, *edges, np.inf]
    for low, high in zip(bounds[:-1], bounds[1:], strict=True):
        if low <= n < high:
            if high == np.inf:
                return f">= {low:,} rows"
            return f"< {high:,} rows" if low == 0 else f"{low:,}-{high - 1:,} rows"
    raise AssertionError(n)  # pragma: no cover - bounds cover [0, inf)


class ComparisonResult(_Records):
    """Results of :func:`compare_study`: tidy records and statistics over tables.

    Each statistic works on the mean score of every model on every table
    (over its splits), per training fraction, and optionally per group of
    tables (``by``: a size band, or any labels): ranks and Friedman's test
    are never pooled across fractions. Building, pickling and ``to_csv`` need
    neither pandas nor matplotlib; the statistics return pandas objects.

    Parameters
    ----------
    records : list of dict
        One dict per (table, model, fraction, split, metric) with the keys
        ``table, model, fraction, split, repeat, fold, n_train, n_test, metric,
        value, greater_is_better, fit_time, score_time, error``.
    tables : list of str
        Table names, in the order given to the study.
    models : list of str
        Model names, in order.
    fractions : list of float
        Training fractions, ascending.
    metrics : list of str
        Metric names; the first is the default everywhere.
    table_info : list of dict, default=None
        Per table: ``table``, ``n_samples``, ``n_features``, ``n_classes``
        (estimated from the records when None).
    n_cached : int, default=0
        How many fits were read from the cache rather than fitted.

    Attributes
    ----------
    greater_is_better : dict of str to bool
        The direction each metric is ranked in.

    See Also
    --------
    compare_study : Builds it.
    CriticalDifferenceDisplay : The critical-difference diagram.
    """

    _columns = tuple(
        "table model fraction split repeat fold n_train n_test metric value "
        "greater_is_better fit_time score_time error".split()
    )

    def __init__(
        self,
        records,
        *,
        tables,
        models,
        fractions,
        metrics,
        table_info=None,
        n_cached=0,
    ):
        self.records = records
        self.tables = list(tables)
        self.models = list(models)
        self.fractions = list(fractions)
        self.metrics = list(metrics)
        if table_info is None:
            sizes = {}
            for r in records:
                n = int(round(r["n_train"] / r["fraction"])) + r["n_test"]
                sizes[r["table"]] = max(sizes.get(r["table"], 0), n)
            table_info = [{"table": t, "n_samples": sizes.get(t, 0)} for t in tables]
        self.table_info = list(table_info)
        self.n_cached = int(n_cached)

    @property
    def greater_is_better(self):
        out = {}
        for r in self.records:
            out.setdefault(r["metric"], bool(r["greater_is_better"]))
        return out

    @classmethod
    def from_frame(cls, frame):
        """Rebuild a ComparisonResult from :meth:`to_frame` output or its CSV.

        Parameters
        ----------
        frame : pandas.DataFrame
            The tidy records (e.g. ``pandas.read_csv`` of :meth:`to_csv`).

        Returns
        -------
        result : ComparisonResult
            Tables, models and metrics in order of appearance.
        """
        missing = set(cls._columns) - set(frame.columns)
        if missing:
            raise ValueError(f"The frame lacks the columns {sorted(missing)}.")
        frame = frame[list(cls._columns)].copy()
        frame["error"] = frame["error"].fillna("").astype(str)
        gib = frame["greater_is_better"]
        if gib.dtype == object:
            gib = gib.astype(str).str.lower() == "true"
        frame["greater_is_better"] = gib.astype(bool)
        types = dict.fromkeys(("split", "repeat", "fold", "n_train", "n_test"), int)
        types |= dict.fromkeys(("fraction", "value", "fit_time", "score_time"), float)
        records = frame.astype(types).to_dict("records")
        return cls(
            records,
            tables=list(dict.fromkeys(frame["table"])),
            models=list(dict.fromkeys(frame["model"])),
            fractions=sorted({float(f) for f in frame["fraction"]}),
            metrics=list(dict.fromkeys(frame["metric"])),
        )

    # --- the per-table means every statistic starts from -------------------

    def _frame(self, metric):
        frame = self.to_frame()
        return frame[frame["metric"] == metric]

    def _reference(self, reference):
        reference = self.models[0] if reference is None else reference
        if reference not in self.models:
            raise ValueError(
                f"Unknown reference model {reference!r}; models: {self.models}."
            )
        return reference

    def _groups(self, by):
        """{table: group label}: one group, size bands, or the user's labels."""
        if by is None:
            return dict.fromkeys(self.tables, "all")
        if isinstance(by, str):
            if by != "size":
                raise ValueError(
                    f"by must be None, 'size', a dict of table to label or a "
                    f"callable, got {by!r}."
                )
            return {
                i["table"]: _size_label(i["n_samples"], SIZE_EDGES)
                for i in self.table_info
            }
        if isinstance(by, dict):
            missing = [t for t in self.tables if t not in by]
            if missing:
                raise ValueError(f"by has no label for the tables {missing[:8]}.")
            return {t: str(by[t]) for t in self.tables}
        if callable(by):
            info = {i["table"]: i for i in self.table_info}
            return {t: str(by(info[t])) for t in self.tables}
        raise TypeError(
            f"by must be None, 'size', a dict or a callable, got {type(by).__name__}."
        )

    def table_scores(self, metric=None):
        """Mean score of each model on each table, over its splits.

        A table where one of a model's fits failed has NaN for that model.

        Parameters
        ----------
        metric : str, default=None
            The metric; the study's first by default.

        Returns
        -------
        scores : pandas.DataFrame
            Indexed by (fraction, table), one column per model, in natural
            units.
        """
        metric = self._metric(metric)
        frame = self._frame(metric)
        # mean(skipna=False): a failed split leaves the table unpaired.
        means = frame.groupby(["fraction", "table", "model"], sort=False)["value"].agg(
            lambda v: v.mean(skipna=False)
        )
        out = means.unstack("model")
        pd = _import_pandas("table_scores")
        index = pd.MultiIndex.from_product(
            [self.fractions, self.tables], names=["fraction", "table"]
        )
        return out.reindex(index=index, columns=self.models)

    def _goodness(self, metric):
        """Per-table means with greater better, and the sign used."""
        sign = 1.0 if self.greater_is_better[metric] else -1.0
        return self.table_scores(metric) * sign, sign

    def ranks(self, metric=None):
        """Rank of each model on each table (1 the best; ties share the mean).

        Parameters
        ----------
        metric : str, default=None
            The metric; the study's first by default.

        Returns
        -------
        ranks : pandas.DataFrame
            Indexed by (fraction, table), one column per model; NaN where a
            model has no score.
        """
        metric = self._metric(metric)
        good, _ = self._goodness(metric)
        return good.rank(axis=1, ascending=False, method="average")

    def gap_to_best(self, metric=None, *, normalize=False):
        """How far each model is from the best model of each table.

        Parameters
        ----------
        metric : str, default=None
            The metric; the study's first by default.
        normalize : bool, default=False
            Divide by the range between the table's best and worst models
            (0: the best; 1: the worst; 0 everywhere when all tie).

        Returns
        -------
        gap : pandas.DataFrame
            Indexed by (fraction, table), one column per model, >= 0, in the
            metric's units unless normalised.
        """
        metric = self._metric(metric)
        good, _ = self._goodness(metric)
        best = good.max(axis=1)
        gap = (-good).add(best, axis=0)
        if normalize:
            spread = best - good.min(axis=1)
            gap = gap.div(spread.where(spread > 0), axis=0).fillna(
                gap.where(gap.isna(), 0.0)
            )
        return gap

    def _blocks(self, metric, by):
        """``[(group, fraction, scores of the complete tables)]``, greater better."""
        good, _ = self._goodness(metric)
        groups = self._groups(by)
        out = []
        labels = list(dict.fromkeys(groups[t] for t in self.tables))
        for label in labels:
            tables = [t for t in self.tables if groups[t] == label]
            for fraction in self.fractions:
                block = good.loc[fraction].loc[tables]
                incomplete = block.index[block.isna().any(axis=1)].tolist()
                if incomplete:
                    warnings.warn(
                        f"Tables without a score for every model (a failed fit) "
                        f"are left out of the tests at fraction {fraction:g}: "
                        f"{incomplete[:8]}.",
                        UserWarning,
                        stacklevel=3,
                    )
                out.append((label, fraction, block.dropna(axis=0, how="any")))
        return out

    def summary(self, metric=None, *, by=None):
        """Mean score, mean rank and gap to the best per model.

        Parameters
        ----------
        metric : str, default=None
            The metric; the study's first by default.
        by : None, "size", dict or callable, default=None
            Groups of tables: one group, size bands (< 1,000 rows, 1,000-9,999,
            >= 10,000), a dict of table to label, or a callable of a table's
            ``table_info`` dict returning its label.

        Returns
        -------
        summary : pandas.DataFrame
            Indexed by (group, fraction, model): ``mean_score`` (over tables),
            ``mean_rank``, ``mean_gap`` and ``mean_normalized_gap`` (to the
            per-table best), ``n_best`` (tables where it ranks first, ties
            included), ``n_tables``, ``n_failed`` (failed fits) and
            ``fit_time`` (mean seconds per fit).
        """
        pd = _import_pandas("summary")
        metric = self._metric(metric)
        scores = self.table_scores(metric)
        ranks = self.ranks(metric)
        gap = self.gap_to_best(metric)
        ngap = self.gap_to_best(metric, normalize=True)
        frame = self._frame(metric)
        groups = self._groups(by)
        rows = []
        for label in dict.fromkeys(groups[t] for t in self.tables):
            tables = [t for t in self.tables if groups[t] == label]
            for fraction in self.fractions:
                sel = frame[
                    (frame["fraction"] == fraction) & frame["table"].isin(tables)
                ]
                for model in self.models:
                    mine = sel[sel["model"] == model]
                    idx = pd.MultiIndex.from_product([[fraction], tables])
                    rows.append(
                        {
                            "group": label,
                            "fraction": fraction,
                            "model": model,
                            "mean_score": scores.loc[idx, model].mean(),
                            "mean_rank": ranks.loc[idx, model].mean(),
                            "mean_gap": gap.loc[idx, model].mean(),
                            "mean_normalized_gap": ngap.loc[idx, model].mean(),
                            "n_best": int((ranks.loc[idx, model] <= 1.0).sum()),
                            "n_tables": int(scores.loc[idx, model].notna().sum()),
                            "n_failed": int((mine["error"] != "").sum()),
                            "fit_time": mine["fit_time"].mean(),
                        }
                    )
        out = pd.DataFrame(rows).set_index(["group", "fraction", "model"])
        return out if by is not None else out.droplevel("group")

    def pairwise(self, reference=None, *, metric=None, test="corrected_t", alpha=0.05):
        """Each model against ``reference`` on each table, paired over splits.

        Parameters
        ----------
        reference : str, default=None
            The reference model; the first model by default.
        metric : str, default=None
            The metric; the study's first by default.
        test : {"corrected_t", "wilcoxon"}, default="corrected_t"
            :func:`corrected_ttest` (Nadeau and Bengio) or
            :func:`wilcoxon_test` over the splits.
        alpha : float, default=0.05
            Level of each table's test; the intervals cover ``1 - alpha``.

        Returns
        -------
        pairwise : pandas.DataFrame
            One row per (fraction, table, model other than the reference):
            ``mean_diff`` (model minus reference, natural units), ``ci_low``,
            ``ci_high``, ``p_value``, ``n_pairs`` and ``outcome``: ``"win"``
            where the model is significantly better, ``"loss"`` where worse,
            else ``"tie"``.
        """
        pd = _import_pandas("pairwise")
        metric = self._metric(metric)
        reference = self._reference(reference)
        if test not in TESTS:
            raise ValueError(f"test must be one of {TESTS}, got {test!r}.")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
        sign = 1.0 if self.greater_is_better[metric] else -1.0
        values = {}
        for r in self.records:
            if r["metric"] == metric:
                key = (r["fraction"], r["table"], r["model"])
                values.setdefault(key, {})[r["split"]] = r
        rows = []
        for fraction in self.fractions:
            for table in self.tables:
                ref = values.get((fraction, table, reference), {})
                for model in self.models:
                    if model == reference:
                        continue
                    other = values.get((fraction, table, model), {})
                    splits = [
                        s
                        for s in sorted(set(ref) & set(other))
                        if np.isfinite(ref[s]["value"])
                        and np.isfinite(other[s]["value"])
                    ]
                    row = {
                        "fraction": fraction,
                        "table": table,
                        "model": model,
                        "reference": reference,
                        "mean_diff": np.nan,
                        "ci_low": np.nan,
                        "ci_high": np.nan,
                        "p_value": np.nan,
                        "n_pairs": len(splits),
                        "outcome": "tie",
                    }
                    if len(splits) >= 2:
                        d = np.array(
                            [other[s]["value"] - ref[s]["value"] for s in splits]
                        )
                        ratio = np.mean(
                            [ref[s]["n_test"] / ref[s]["n_train"] for s in splits]
                        )
                        _, p = paired_test(d, test, test_train_ratio=ratio)
                        _, low, high = paired_interval(d, test, ratio, 1 - alpha)
                        row.update(
                            mean_diff=float(d.mean()),
                            ci_low=low,
                            ci_high=high,
                            p_value=p,
                        )
                        if np.isfinite(p) and p <= alpha and d.mean() != 0:
                            better = sign * d.mean() > 0
                            row["outcome"] = "win" if better else "loss"
                    elif len(splits) == 1:
                        row["mean_diff"] = float(
                            other[splits[0]]["value"] - ref[splits[0]]["value"]
                        )
                    rows.append(row)
        return pd.DataFrame(rows)

    def wins_ties_losses(
        self, reference=None, *, metric=None, test="corrected_t", alpha=0.05, by=None
    ):
        """Wins, ties and losses against ``reference``, and the effect over tables.

        A win is a table where :meth:`pairwise`'s test finds the model
        significantly better than the reference. The effect size is the
        Hodges-Lehmann estimate of the per-table mean differences, with the
        Wilcoxon signed-rank interval and p-value across tables (Demšar, 2006).

        Parameters
        ----------
        reference, metric, test, alpha : optional
            As in :meth:`pairwise`.
        by : None, "size", dict or callable, default=None
            Groups of tables, as in :meth:`summary`.

        Returns
        -------
        wtl : pandas.DataFrame
            Indexed by (group, fraction, model): ``wins``, ``ties``, ``losses``,
            ``effect`` (model minus reference, natural units), ``effect_low``,
            ``effect_high``, ``wilcoxon_p`` and ``n_tables``.
        """
        pd = _import_pandas("wins_ties_losses")
        metric = self._metric(metric)
        reference = self._reference(reference)
        pairs = self.pairwise(reference, metric=metric, test=test, alpha=alpha)
        groups = self._groups(by)
        pairs["group"] = pairs["table"].map(groups)
        rows = []
        for (label, fraction, model), sel in pairs.groupby(
            ["group", "fraction", "model"], sort=False
        ):
            counts = sel["outcome"].value_counts()
            d = sel["mean_diff"].dropna().to_numpy()
            effect = low = high = p = np.nan
            if d.size:
                effect, low, high = wilcoxon_interval(d, 1 - alpha)
                p = _wilcoxon(d)[1]
            rows.append(
                {
                    "group": label,
                    "fraction": fraction,
                    "model": model,
                    "wins": int(counts.get("win", 0)),
                    "ties": int(counts.get("tie", 0)),
                    "losses": int(counts.get("loss", 0)),
                    "effect": effect,
                    "effect_low": low,
                    "effect_high": high,
                    "wilcoxon_p": p,
                    "n_tables": int(d.size),
                }
            )
        out = pd.DataFrame(rows).set_index(["group", "fraction", "model"])
        return out if by is not None else out.droplevel("group")

    def friedman(self, metric=None, *, by=None):
        """Test that all models perform alike over the tables (Friedman), per block.

        Parameters
        ----------
        metric : str, default=None
            The metric; the study's first by default.
        by : None, "size", dict or callable, default=None
            Groups of tables, as in :meth:`summary`.

        Returns
        -------
        friedman : pandas.DataFrame
            Indexed by (group, fraction): ``statistic`` (chi-square, corrected
            for ties), ``p_value``, ``f_statistic`` and ``f_p_value`` (Iman and
            Davenport), ``n_tables``, ``n_models``.

        Raises
        ------
        ValueError
            Naming the group, where the test cannot run: fewer than 2 tables,
            fewer than 3 models, or every table tying every model.
        """
        pd = _import_pandas("friedman")
        metric = self._metric(metric)
        rows = []
        for label, fraction, block in self._blocks(metric, by):
            try:
                res = friedman_test(block.to_numpy())
            except ValueError as exc:
                raise ValueError(f"{_where(label, fraction)}: {exc}") from None
            rows.append(
                {
                    "group": label,
                    "fraction": fraction,
                    "statistic": res.statistic,
                    "p_value": res.pvalue,
                    "f_statistic": res.f_statistic,
                    "f_p_value": res.f_pvalue,
                    "n_tables": block.shape[0],
                    "n_models": block.shape[1],
                }
            )
        out = pd.DataFrame(rows).set_index(["group", "fraction"])
        return out if by is not None else out.droplevel("group")

    def nemenyi(self, metric=None, *, by=None, alpha=0.05):
        """Test every pair of models (Nemenyi), with the critical difference.

        Parameters
        ----------
        metric : str, default=None
            The metric; the study's first by default.
        by : None, "size", dict or callable, default=None
            Groups of tables, as in :meth:`summary`.
        alpha : float, default=0.05
            Level of the critical difference and of ``significant``.

        Returns
        -------
        nemenyi : pandas.DataFrame
            One row per (group, fraction, pair): ``model_a``, ``model_b``, their
            ``rank_a``, ``rank_b`` (mean ranks), ``p_value``,
            ``critical_difference``, ``significant`` and ``n_tables``.
        """
        pd = _import_pandas("nemenyi")
        metric = self._metric(metric)
        rows = []
        for label, fraction, block in self._blocks(metric, by):
            try:
                p, cd, ranks = nemenyi_test(block.to_numpy(), alpha)
            except ValueError as exc:
                raise ValueError(f"{_where(label, fraction)}: {exc}") from None
            models = list(block.columns)
            for i in range(len(models)):
                for j in range(i + 1, len(models)):
                    rows.append(
                        {
                            "group": label,
                            "fraction": fraction,
                            "model_a": models[i],
                            "model_b": models[j],
                            "rank_a": ranks[i],
                            "rank_b": ranks[j],
                            "p_value": p[i, j],
                            "critical_difference": cd,
                            "significant": bool(abs(ranks[i] - ranks[j]) >= cd),
                            "n_tables": block.shape[0],
                        }
                    )
        out = pd.DataFrame(rows)
        return out if by is not None else out.drop(columns="group")

    def holm(self, reference=None, *, metric=None, by=None, alpha=0.05):
        """Each model's mean rank against the reference's, with Holm's correction.

        Parameters
        ----------
        reference : str, default=None
            The reference model; the first model by default.
        metric : str, default=None
            The metric; the study's first by default.
        by : None, "size", dict or callable, default=None
            Groups of tables, as in :meth:`summary`.
        alpha : float, default=0.05
            Level of ``reject``.

        Returns
        -------
        holm : pandas.DataFrame
            Indexed by (group, fraction, model other than the reference):
            ``mean_rank``, ``reference_rank``, ``z``, ``p_value``,
            ``p_adjusted`` (Holm, over the models of the block), ``reject`` and
            ``n_tables``.
        """
        pd = _import_pandas("holm")
        metric = self._metric(metric)
        reference = self._reference(reference)
        rows = []
        for label, fraction, block in self._blocks(metric, by):
            models = list(block.columns)
            ref = models.index(reference)
            try:
                z, p, adjusted = holm_test(block.to_numpy(), ref)
            except ValueError as exc:
                raise ValueError(f"{_where(label, fraction)}: {exc}") from None
            ranks = block.rank(axis=1, ascending=False).mean(axis=0).to_numpy()
            for i, model in enumerate(models):
                if i == ref:
                    continue
                rows.append(
                    {
                        "group": label,
                        "fraction": fraction,
                        "model": model,
                        "mean_rank": ranks[i],
                        "reference_rank": ranks[ref],
                        "z": z[i],
                        "p_value": p[i],
                        "p_adjusted": adjusted[i],
                        "reject": bool(adjusted[i] <= alpha),
                        "n_tables": block.shape[0],
                    }
                )
        out = pd.DataFrame(rows).set_index(["group", "fraction", "model"])
        return out if by is not None else out.droplevel("group")

    def bayesian_signed_rank(
        self,
        reference=None,
        *,
        metric=None,
        by=None,
        rope=0.01,
        prior=0.5,
        n_samples=50_000,
        random_state=0,
    ):
        """The Bayesian signed-rank test of each model against ``reference``.

        Over the tables' mean differences (:func:`bayesian_signed_rank`).

        Parameters
        ----------
        reference, metric : optional
            As in :meth:`pairwise`.
        by : None, "size", dict or callable, default=None
            Groups of tables, as in :meth:`summary`.
        rope : float, default=0.01
            Half-width of the region of practical equivalence, in the metric's
            units.
        prior, n_samples, random_state : optional
            As in :func:`bayesian_signed_rank`.

        Returns
        -------
        probabilities : pandas.DataFrame
            Indexed by (group, fraction, model): ``p_model_better``,
            ``p_equivalent``, ``p_reference_better`` and ``n_tables``.
        """
        pd = _import_pandas("bayesian_signed_rank")
        metric = self._metric(metric)
        reference = self._reference(reference)
        rows = []
        for label, fraction, block in self._blocks(metric, by):
            for model in self.models:
                if model == reference:
                    continue
                d = (block[model] - block[reference]).to_numpy()
                try:
                    res = bayesian_signed_rank(
                        d,
                        rope,
                        prior=prior,
                        n_samples=n_samples,
                        random_state=random_state,
                    )
                except ValueError as exc:
                    raise ValueError(f"{_where(label, fraction)}: {exc}") from None
                rows.append(
                    {
                        "group": label,
                        "fraction": fraction,
                        "model": model,
                        "p_model_better": res.p_a_better,
                        "p_equivalent": res.p_equivalent,
                        "p_reference_better": res.p_b_better,
                        "n_tables": d.size,
                    }
                )
        out = pd.DataFrame(rows).set_index(["group", "fraction", "model"])
        return out if by is not None else out.droplevel("group")

    def bayesian_correlated_ttest(self, reference=None, *, metric=None, rope=0.01):
        """The Bayesian correlated t-test against ``reference`` on each table.

        On the splits of each table, ``rho = n_test / (n_train + n_test)``
        (:func:`bayesian_correlated_ttest`).

        Parameters
        ----------
        reference, metric : optional
            As in :meth:`pairwise`.
        rope : float, default=0.01
            Half-width of the region of practical equivalence.

        Returns
        -------
        probabilities : pandas.DataFrame
            One row per (fraction, table, model): ``p_model_better``,
            ``p_equivalent``, ``p_reference_better``, ``n_pairs``; NaN with
            fewer than 2 scored splits.
        """
        pd = _import_pandas("bayesian_correlated_ttest")
        metric = self._metric(metric)
        reference = self._reference(reference)
        sign = 1.0 if self.greater_is_better[metric] else -1.0
        frame = self._frame(metric)
        wide = frame.pivot_table(
            index=["fraction", "table", "split"],
            columns="model",
            values="value",
            dropna=False,
        )
        sizes = frame.groupby(["fraction", "table"])[["n_train", "n_test"]].mean()
        rows = []
        for (fraction, table), block in wide.groupby(level=[0, 1], sort=False):
            n_train, n_test = sizes.loc[(fraction, table)]
            for model in self.models:
                if model == reference:
                    continue
                d = sign * (block[model] - block[reference]).dropna().to_numpy()
                row = {
                    "fraction": fraction,
                    "table": table,
                    "model": model,
                    "p_model_better": np.nan,
                    "p_equivalent": np.nan,
                    "p_reference_better": np.nan,
                    "n_pairs": d.size,
                }
                if d.size >= 2:
                    res = bayesian_correlated_ttest(
                        d, n_test / (n_train + n_test), rope
                    )
                    row.update(
                        p_model_better=res.p_a_better,
                        p_equivalent=res.p_equivalent,
                        p_reference_better=res.p_b_better,
                    )
                rows.append(row)
        return pd.DataFrame(rows)

    def to_markdown(
        self,
        reference=None,
        *,
        metric=None,
        test="corrected_t",
        alpha=0.05,
        by=None,
        rope=None,
        digits=3,
    ):
        """A report: summary, Friedman, Holm, Nemenyi, wins/ties/losses, each named.

        A test that cannot run in a block (too few tables or models) says why
        instead.

        Parameters
        ----------
        reference, metric, test, alpha : optional
            As in :meth:`pairwise`.
        by : None, "size", dict or callable, default=None
            Groups of tables, as in :meth:`summary`.
        rope : float, default=None
            Add the Bayesian signed-rank test with this ROPE.
        digits : int, default=3
            Decimals of the scores.

        Returns
        -------
        text : str
            GitHub Markdown.
        """
        metric = self._metric(metric)
        reference = self._reference(reference)
        direction = "higher" if self.greater_is_better[metric] else "lower"
        summary = self.summary(metric, by=by)
        parts = [
            f"{metric} ({direction} is better), mean over {len(self.tables)} "
            f"table{'s' * (len(self.tables) != 1)} of each model's mean over its "
            f"splits; rank 1 is a table's best model.",
            _markdown_table(
                [
                    *summary.index.names,
                    "mean score",
                    "mean rank",
                    "gap to best",
                    "best on",
                    "failed fits",
                    "fit time (s)",
                ],
                [
                    [
                        *(
                            f"{v:.0%}" if n == "fraction" else v
                            for n, v in zip(summary.index.names, k, strict=True)
                        ),
                        f"{r.mean_score:.{digits}f}",
                        f"{r.mean_rank:.2f}",
                        f"{r.mean_gap:.{digits}f}",
                        f"{r.n_best}/{r.n_tables}",
                        r.n_failed,
                        f"{r.fit_time:.3f}",
                    ]
                    for k, r in zip(summary.index, summary.itertuples(), strict=True)
                ],
            ),
        ]
        tests = [
            (
                "Friedman test over tables (chi-square corrected for ties; Iman-"
                "Davenport F)",
                lambda: self.friedman(metric, by=by),
            ),
            (
                f"Holm's step-down post-hoc test of mean ranks against {reference} "
                f"(Demšar 2006); reject at {alpha:g}",
                lambda: self.holm(reference, metric=metric, by=by, alpha=alpha),
            ),
            (
                f"Nemenyi post-hoc test, all pairs; critical difference at {alpha:g}",
                lambda: self.nemenyi(metric, by=by, alpha=alpha),
            ),
            (
                f"Wins / ties / losses against {reference}: per table, the "
                f"{TEST_LABELS[test]} test over splits at {alpha:g}; effect: "
                "Hodges-Lehmann estimate of the per-table mean differences with the "
                f"{1 - alpha:.0%} Wilcoxon signed-rank interval and p-value across "
                "tables",
                lambda: self.wins_ties_losses(
                    reference, metric=metric, by=by, test=test, alpha=alpha
                ),
            ),
        ]
        if rope is not None:
            tests.append(
                (
                    f"Bayesian signed-rank test against {reference} (Benavoli et al. "
                    f"2017), ROPE ±{rope:g}",
                    lambda: self.bayesian_signed_rank(
                        reference, metric=metric, by=by, rope=rope
                    ),
                )
            )
        for title, run in tests:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    frame = run()
            except ValueError as exc:
                parts.append(f"**{title}**: not run: {exc}")
                continue
            parts.append(f"**{title}**\n\n" + _frame_markdown(frame, digits))
        return "\n\n".join(parts)


def _where(label, fraction):
    group = "" if label == "all" else f"tables {label!r}, "
    return f"{group}fraction {fraction:g}"


_P_COLUMNS = {"p_value", "p_adjusted", "f_p_value", "wilcoxon_p"}


def _frame_markdown(frame, digits):
    """A DataFrame as Markdown: p-values as ``_format_p``, other floats rounded."""
    index_names = [n for n in frame.index.names if n is not None]
    if index_names:
        frame = frame.reset_index()
    cells = []
    for row in frame.itertuples(index=False):
        line = []
        for name, value in zip(frame.columns, row, strict=True):
            if isinstance(value, bool | np.bool_):
                line.append("*" if value else "")
            elif name == "fraction":
                line.append(f"{value:.0%}")
            elif isinstance(value, float | np.floating):
                if name in _P_COLUMNS:
                    line.append(_format_p(float(value)))
                else:
                    line.append(f"{value:.{digits}f}")
            else:
                line.append(value)
        cells.append(line)
    return _markdown_table(list(frame.columns), cells)
