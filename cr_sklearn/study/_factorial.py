"""factorial_study: activations x regularisers x datasets x seeds x conditions."""

import numbers
import zlib
from itertools import product

import numpy as np
from joblib import delayed
from sklearn.base import clone
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.utils.validation import column_or_1d

from cr_sklearn.nn import ACTIVATION_NAMES

from ._datasets import load_study_dataset
from ._engine import (
    _check_scorers,
    _derived_seed,
    fit_and_score,
    prepare_estimator,
    resolve_progress,
    run_records,
)
from ._noise import add_gaussian_noise, corrupt_labels
from ._records import _format_p, _frame_table, _import_pandas, _markdown_table, _Records
from ._stats import adjust_pvalues, paired_test

__all__ = ["FactorialResult", "factorial_study"]

# Every cell sets all of them, so each regulariser is alone in its cell.
_OFF = {
    "dreg": None,
    "dropout": 0.0,
    "weight_decay": 0.0,
    "spectral_norm": False,
    "igpen_lambda": 0.0,
}
REGULARIZERS = {
    "none": _OFF,
    "dreg": {**_OFF, "dreg": "stream"},
    "dropout": {**_OFF, "dropout": 0.2},
    "weight_decay": {**_OFF, "weight_decay": 0.1},
    "spectral_norm": {**_OFF, "spectral_norm": True},
    "igpen": {**_OFF, "igpen_lambda": 10**-2.5},
}

# label_noise: the training labels only; snr_db: all rows, before the split.
CONDITIONS = {
    "clean": {},
    "label_noise_40": {"label_noise": 0.4},
    "snr_-10dB": {"snr_db": -10.0},
}

# Both presets run every regulariser and condition.
_EVERY = {"regularizers": tuple(REGULARIZERS), "conditions": tuple(CONDITIONS)}
PRESETS = {
    "quick": {
        "datasets": ("pima", "breast-cancer"),
        "activations": ("poly", "relu"),
        **_EVERY,
        "seeds": (0, 1),
    },
    "paper": {
        "datasets": ("pima", "wine-red", "breast-cancer", "digits"),
        "activations": ACTIVATION_NAMES,
        **_EVERY,
        "seeds": (0, 1, 2, 3, 4),
    },
}


def _named(value, defaults, what):
    """Resolve None / list of names / dict into a dict of name to spec."""
    if value is None:
        value = defaults
    elif not isinstance(value, dict):
        names = [value] if isinstance(value, str) else list(value)
        for name in names:
            if name not in defaults:
                raise ValueError(
                    f"Unknown {what} {name!r}; choose from {list(defaults)}."
                )
        value = {name: defaults[name] for name in names}
    if not value:
        raise ValueError(f"{what} must not be empty.")
    return dict(value)


def _name_key(name):
    return zlib.crc32(str(name).encode("utf-8"))


def _condition_data(X, y, spec, seed, test_size, keys):
    """Apply one messy condition and split: (X_train, y_train, X_test, y_test)."""
    unknown = set(spec) - {"label_noise", "snr_db"}
    if unknown:
        raise ValueError(
            f"Unknown condition settings {sorted(unknown)}; use label_noise, snr_db."
        )
    if spec.get("snr_db") is not None:
        X = add_gaussian_noise(X, spec["snr_db"], _derived_seed(seed, *keys, 2))
    splitter = StratifiedShuffleSplit(
        n_splits=1, test_size=test_size, random_state=_derived_seed(seed, *keys, 3)
    )
    train, test = next(splitter.split(np.zeros((len(y), 1)), y))
    y_train = y[train]
    if spec.get("label_noise"):
        y_train = corrupt_labels(
            y_train, spec["label_noise"], _derived_seed(seed, *keys, 4)
        )
    return X[train], y_train, X[test], y[test]


def factorial_study(
    datasets,
    *,
    activations=ACTIVATION_NAMES,
    regularizers=None,
    conditions=None,
    seeds=(0, 1, 2),
    estimator=None,
    test_size=0.25,
    scoring="accuracy",
    n_jobs=None,
    n_threads=1,
    verbose=0,
    progress="auto",
):
    """Fit every activation x regulariser on each dataset, seed and condition.

    For every dataset, condition and seed the data is split once (stratified);
    every (activation, regulariser) is fitted and scored on the same split with
    the same seed.

    Parameters
    ----------
    datasets : list of str or dict of str to (X, y)
        Names of :func:`load_study_dataset` or arrays.
    activations : sequence of str, default=("poly", "relu", "gelu", "tanh", "swish")
        Values of the estimator's ``activation``.
    regularizers : list of str or dict of str to dict, default=None
        Built-in names or a dict of name to estimator parameters. Built in:
        ``"none"``, ``"dreg"`` (``dreg="stream"``), ``"dropout"`` (0.2),
        ``"weight_decay"`` (0.1), ``"spectral_norm"`` and ``"igpen"``
        (``igpen_lambda=10**-2.5``), each with the others off. ``None``: all.
    conditions : list of str or dict of str to dict, default=None
        Built-in names or a dict of name to ``{"label_noise": rate, "snr_db":
        snr}``. Built in: ``"clean"``, ``"label_noise_40"`` (40% of the
        training labels corrupted) and ``"snr_-10dB"`` (noise on all features).
        ``None``: all three.
    seeds : sequence of int, default=(0, 1, 2)
        One train/test split, noise draw and model seed per value.
    estimator : estimator, default=None
        The network to vary (``CRClassifier()`` by default); it must accept
        ``activation`` and the regulariser parameters. ``n_members="auto"``
        trains one network in every cell.
    test_size : float, default=0.25
        Test share of each split.
    scoring, n_jobs, n_threads, verbose, progress : optional
        As in :func:`data_fraction_study`.

    Returns
    -------
    result : FactorialResult
        One record per (dataset, condition, activation, regulariser, seed,
        metric).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from cr_sklearn import CRClassifier
    >>> from cr_sklearn.study import factorial_study
    >>> data = {"cancer": load_breast_cancer(return_X_y=True)}
    >>> result = factorial_study(data, activations=["relu"],
    ...                          regularizers=["none", "dreg"],
    ...                          conditions=["clean"], seeds=[0],
    ...                          estimator=CRClassifier(max_iter=5))
    >>> len(result)
    2
    """
    show_progress = resolve_progress(progress, "factorial_study")
    if estimator is None:
        from cr_sklearn import CRClassifier

        estimator = CRClassifier()
    if estimator.get_params().get("n_members") == "auto":
        # Members would train in some cells only (spectral_norm and igpen
        # need one network): one network in every cell keeps them comparable.
        estimator = clone(estimator).set_params(n_members=1)
    if isinstance(datasets, str):
        datasets = [datasets]
    if not isinstance(datasets, dict):
        datasets = {name: load_study_dataset(name) for name in datasets}
    if not datasets:
        raise ValueError("datasets must not be empty.")
    activations = list(activations)
    if not activations:
        raise ValueError("activations must not be empty.")
    regularizers = _named(regularizers, REGULARIZERS, "regularizer")
    conditions = _named(conditions, CONDITIONS, "condition")
    seeds = list(seeds)
    if not seeds or not all(isinstance(s, numbers.Integral) for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of ints, got {seeds!r}.")
    seeds = [int(s) for s in seeds]
    scorers = _check_scorers(scoring)

    tasks, keys = [], []
    for ds_name, (X, y) in datasets.items():
        X = np.asarray(X, dtype=np.float64)
        y = column_or_1d(y)
        for (cond_name, spec), seed in product(conditions.items(), seeds):
            block = (_name_key(ds_name), _name_key(cond_name))
            X_tr, y_tr, X_te, y_te = _condition_data(X, y, spec, seed, test_size, block)
            X_all = np.concatenate([X_tr, X_te])
            y_all = np.concatenate([y_tr, y_te])
            train = np.arange(len(y_tr))
            test = np.arange(len(y_tr), len(y_all))
            model_seed = _derived_seed(seed, *block, 1)
            for act, (reg_name, params) in product(activations, regularizers.items()):
                est = clone(estimator).set_params(activation=act, **params)
                est = prepare_estimator(est, model_seed, n_threads)
                tasks.append(
                    delayed(fit_and_score)(
                        est, X_all, y_all, train, test, scorers, n_threads
                    )
                )
                key = (ds_name, cond_name, act, reg_name, seed)
                keys.append((*key, len(train), len(test)))
    records = run_records(
        tasks,
        keys,
        FactorialResult._columns,
        n_jobs=n_jobs,
        verbose=verbose,
        progress=show_progress,
        desc="factorial",
    )

    return FactorialResult(
        records,
        datasets=list(datasets),
        conditions=list(conditions),
        activations=activations,
        regularizers=list(regularizers),
        metrics=list(scorers),
    )


class FactorialResult(_Records):
    """Results of :func:`factorial_study`: cells, mean ranks, paired tests.

    Parameters
    ----------
    records : list of dict
        One dict per (dataset, condition, activation, regularizer, seed,
        metric) with ``n_train``, ``n_test``, ``value`` and ``fit_time``.
    datasets, conditions, activations, regularizers : list of str
        The factor levels, in study order.
    metrics : list of str
        Metric names; the first is the default.
    """

    _columns = tuple(
        "dataset condition activation regularizer seed n_train n_test metric value "
        "fit_time".split()
    )
    _block = ["dataset", "condition", "activation", "seed"]

    def __init__(
        self, records, *, datasets, conditions, activations, regularizers, metrics
    ):
        self.records = records
        self.datasets = list(datasets)
        self.conditions = list(conditions)
        self.activations = list(activations)
        self.regularizers = list(regularizers)
        self.metrics = list(metrics)

    def _metric_frame(self, metric):
        frame = self.to_frame()
        return frame[frame["metric"] == self._metric(metric)]

    def cells(self, metric=None):
        """Mean score over seeds of every (dataset, condition, activation) cell.

        Parameters
        ----------
        metric : str, default=None
            The metric; the first by default.

        Returns
        -------
        cells : pandas.DataFrame
            Indexed by (dataset, condition, activation), a column per regulariser.
        """
        table = self._metric_frame(metric).pivot_table(
            index=["dataset", "condition", "activation"],
            columns="regularizer",
            values="value",
            aggfunc="mean",
            sort=False,
        )
        return table.reindex(columns=self.regularizers)

    def ranks(self, metric=None, by=None):
        """Mean rank of each regulariser (1 is best) within the blocks.

        A block is one (dataset, condition, activation, seed); ties share a rank.

        Parameters
        ----------
        metric : str, default=None
            The metric; the first by default.
        by : {"condition", "dataset", "activation"} or None, default=None
            Also give the mean rank per level of this factor.

        Returns
        -------
        ranks : pandas.Series or pandas.DataFrame
            By regulariser; with ``by`` a column per level plus ``"all"``.
        """
        pd = _import_pandas("ranks")
        frame = self._metric_frame(metric).copy()
        frame["rank"] = frame.groupby(self._block)["value"].rank(
            ascending=False, method="average"
        )
        overall = frame.groupby("regularizer")["rank"].mean().reindex(self.regularizers)
        if by is None:
            return overall.rename("mean_rank")
        if by not in ("condition", "dataset", "activation"):
            raise ValueError(
                f"by must be condition, dataset or activation; got {by!r}."
            )
        table = frame.pivot_table(
            index="regularizer", columns=by, values="rank", aggfunc="mean", sort=False
        ).reindex(self.regularizers)
        return pd.concat([overall.rename("all"), table], axis=1)

    def compare(
        self,
        reference="dreg",
        *,
        metric=None,
        test="wilcoxon",
        correction="holm",
        by=None,
    ):
        """Paired tests of ``reference`` against every other regulariser.

        Pairs are blocks: the same dataset, condition, activation and seed.

        Parameters
        ----------
        reference : str, default="dreg"
            The regulariser compared with the others.
        metric : str, default=None
            As in :meth:`cells`.
        test : {"wilcoxon", "corrected_t"}, default="wilcoxon"
            The paired test; a rank test by default, as differences on different
            data sets share no scale.
        correction : {"holm", "bonferroni"} or None, default="holm"
            Correction over all rows of the returned table.
        by : {"condition", "dataset", "activation"} or None, default=None
            Test separately per level of this factor.

        Returns
        -------
        comparison : pandas.DataFrame
            One row per (other regulariser[, level]): ``mean_diff`` (reference
            minus other), ``wins``, ``losses``, ``statistic``, ``p_value``,
            ``p_adjusted``, ``n_pairs``.
        """
        pd = _import_pandas("compare")
        if reference not in self.regularizers:
            raise ValueError(
                f"Unknown reference {reference!r}; regularizers: {self.regularizers}."
            )
        frame = self._metric_frame(metric)
        wide = frame.pivot_table(
            index=self._block, columns="regularizer", values="value", aggfunc="mean"
        )
        ratio = float((frame["n_test"] / frame["n_train"]).mean())
        groups = [(None, wide)] if by is None else wide.groupby(level=by, sort=False)
        others = [r for r in self.regularizers if r != reference]
        rows = []
        for (level, sub), other in product(groups, others):
            pair = sub[[reference, other]].dropna()
            diff = (pair[reference] - pair[other]).to_numpy()
            row = {"regularizer": other, **({} if by is None else {by: level})}
            row.update(
                mean_diff=float(diff.mean()) if diff.size else np.nan,
                wins=int((diff > 0).sum()),
                losses=int((diff < 0).sum()),
                statistic=np.nan,
                p_value=np.nan,
                n_pairs=int(diff.size),
            )
            if diff.size >= 2:
                row["statistic"], row["p_value"] = paired_test(
                    diff, test, test_train_ratio=ratio
                )
            rows.append(row)
        out = pd.DataFrame.from_records(rows)
        out["p_adjusted"] = adjust_pvalues(out["p_value"].to_numpy(), correction)
        out.insert(0, "reference", reference)
        return out

    def to_markdown(self, reference="dreg", *, metric=None, digits=3):
        """Markdown report: cells, mean score and rank per condition, tests.

        Parameters
        ----------
        reference, metric : optional
            As in :meth:`compare`, tested with its defaults (Wilcoxon, Holm).
        digits : int, default=3
            Decimals of the scores.

        Returns
        -------
        report : str
            Four Markdown tables separated by headings.
        """
        metric = self._metric(metric)
        regs, conditions = self.regularizers, self.conditions
        means = self._metric_frame(metric).pivot_table(
            index="regularizer", columns="condition", values="value", aggfunc="mean"
        )
        ranks = self.ranks(metric, by="condition")
        score = f".{digits}f"
        parts = [
            f"### {metric} per cell (mean over seeds)",
            _frame_table(self.cells(metric), score),
            f"### Mean {metric} per condition (over datasets, activations)",
            _frame_table(means.reindex(index=regs, columns=conditions), score),
            "### Mean rank (1 = best) within each dataset/condition/activation/seed",
            _frame_table(ranks[["all", *conditions]], ".2f"),
        ]
        if reference in regs and len(regs) > 1:
            cmp = self.compare(reference, metric=metric)
            parts.append(f"### {reference} against each regulariser (Wilcoxon, Holm)")
            parts.append(
                _markdown_table(
                    ["other", "mean diff", "wins/losses", "p", "p (Holm)", "pairs"],
                    [
                        [
                            r.regularizer,
                            f"{r.mean_diff:+{score}}",
                            f"{r.wins}/{r.losses}",
                            _format_p(r.p_value),
                            _format_p(r.p_adjusted),
                            r.n_pairs,
                        ]
                        for r in cmp.itertuples()
                    ],
                )
            )
        return "\n\n".join(parts)
