"""The machinery the benchmark suites share: models, splits, cache, report.

``suite.py`` (classification) and ``ordinal_suite.py`` (ordinal regression)
each describe their task with a :class:`Task`: its table registry, models,
metrics and report wording. The functions here take that task and do the
rest the same way for both: the command line, the table selection, the
5x2 repeated stratified splits, the shared preprocessing, the fits (in
joblib workers, one thread each), the baseline cache and the markdown
report.
"""

import argparse
import ast
import datetime
import hashlib
import json
import shlex
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CACHE = HERE / ".cache"
CV_SEED = 0
N_SPLITS = 2
DEFAULT_REPEATS = 5
MIN_ROWS_FRACTION = 1000
# Bump when the preprocessing changes, or the classification suite's scoring
# (it has no scoring version of its own): it is in the cache key.
PREPROCESSING = (
    "v1: numeric median impute + StandardScaler; categorical constant "
    "'missing' impute + OneHotEncoder(drop='if_binary', handle_unknown='ignore')"
)


# -- the task -------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """A score of the fits and how the report shows it.

    Parameters
    ----------
    name : str
        Its column in the results.
    label : str
        Its name in the report (``"mean <label>"``).
    higher_is_better : bool, default=True
        Its direction; the first metric of a task ranks the models.
    scale : float, default=1.0
        Factor of the reported values (100: accuracy in points).
    digits : int, default=2
        Decimals in the summary.
    difference_digits : int, default=1
        Decimals of the paired differences per table (first metric only).
    """

    name: str
    label: str
    higher_is_better: bool = True
    scale: float = 1.0
    digits: int = 2
    difference_digits: int = 1


@dataclass(frozen=True)
class Task:
    """What a benchmark suite adds to the shared runner.

    Parameters
    ----------
    name : str
        The script's stem (``"suite"``); it names the command in the results
        header, the results ``results/<name>_*.md``, the listing
        ``results/<name>_tables.md`` and the cache folder ``.cache/<name>``.
    title : str
        The title of the results, e.g. ``"Benchmark suite"``.
    description : str
        The command's one-line description (``--help``).
    registry : module
        The table registry: ``get_tables(names, split)``,
        ``why_unavailable(table, data_dir)`` and ``load_table(table, data_dir)``.
    estimator : str
        The class name of the CR models, e.g. ``"CRClassifier"``.
    models : tuple of str
        The models a run may choose, in the order of the report.
    kinds : dict of str to str
        The kind of each model of ``models`` that is not a baseline of
        ``cr_sklearn.study.default_baselines``: ``"cr"`` for the CR model at
        its defaults, a name of the task's own for the others.
    build_model : callable
        ``build_model(spec, seed)``: an unfitted estimator for the
        :class:`ModelSpec`, seeded with ``seed``, one thread.
    score : callable
        ``score(spec, model, Z_test, y_test)``: a dict with a float per
        metric and diagnostic of the fitted model on the preprocessed test
        fold.
    metrics : tuple of Metric
        The scores of the summary; the first ranks the models, counts the
        wins and gives the paired differences.
    summary_note : tuple of str
        The lines that explain the summary table.
    per_table_section : callable
        ``per_table_section(means, models, cr_models)``: the lines of the
        report under its "Per table" heading.
    differences_note : callable
        ``differences_note(model, ratio)``: the lines that explain the paired
        differences of ``model`` minus each other model.
    list_markdown : callable
        ``list_markdown(tables)``: the markdown listing of the registry.
    optional : dict of str to str, default={}
        Model kind to the package those models need; without it they are
        skipped with a message.
    versions : dict of str to tuple of str, default={}
        Package to the distributions it may be installed as; the versions
        found are in the results header and in the cache key.
    diagnostics : tuple of str, default=()
        Scores summarised by their median over the splits and left out of
        the summary (the classification suite's tau).
    fractions : bool, default=False
        Whether runs may train on a fraction of each training fold
        (``--fraction``); the fraction is then in the cache key.
    scoring : str or None, default=None
        Version of the scoring, in the cache key when given: bump it when
        the scoring changes.
    table_key : callable or None, default=None
        ``table_key(table)``: what identifies a table in the cache key;
        ``[name, shape]`` when None.
    """

    name: str
    title: str
    description: str
    registry: object
    estimator: str
    models: tuple
    kinds: dict
    build_model: Callable
    score: Callable
    metrics: tuple
    summary_note: tuple
    per_table_section: Callable
    differences_note: Callable
    list_markdown: Callable
    optional: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    diagnostics: tuple = ()
    fractions: bool = False
    scoring: str | None = None
    table_key: Callable | None = None

    @property
    def primary(self):
        """The metric that ranks the models: the first of ``metrics``."""
        return self.metrics[0]

    @property
    def score_columns(self):
        """The score columns of a fit: metrics, ``fit_time``, diagnostics."""
        return (*(m.name for m in self.metrics), "fit_time", *self.diagnostics)

    @property
    def cache_dir(self):
        """The default baseline cache folder, ``.cache/<name>``."""
        return CACHE / self.name


@dataclass(frozen=True)
class ModelSpec:
    """A model of the run: its name, kind and (for CR models) parameters."""

    name: str
    kind: str  # "cr", "baseline" or one of the task's kinds
    params: tuple = ()

    @property
    def is_cr(self):
        """Whether the model is a CR estimator (refit on every run, never cached)."""
        return self.kind == "cr"


# -- models ---------------------------------------------------------------------


def parse_candidate(text):
    """``NAME=PARAMS`` to ``(name, params)``; PARAMS is JSON or a dict literal.

    Parameters
    ----------
    text : str
        For example ``'long={"max_iter": 500}'``.

    Returns
    -------
    name : str
    params : dict
    """
    name, sep, params = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=PARAMS, got {text!r}")
    try:
        value = json.loads(params)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(params)
        except (ValueError, SyntaxError) as exc:
            raise argparse.ArgumentTypeError(
                f"PARAMS of {name!r} is neither JSON nor a Python dict: {params!r}"
            ) from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"PARAMS of {name!r} must be a dict")
    return name.strip(), value


#: A candidate parameter of either suite: a :class:`~cr_sklearn.PiecewiseLinearEncoder`
#: with this many bins in front of the CR estimator (a pipeline).
ENCODE_BINS = "encode_bins"


def build_cr(estimator, params, seed):
    """The CR estimator class ``estimator`` with ``params``, seeded, one thread.

    Parameters
    ----------
    estimator : type
        ``CRClassifier`` or ``CROrdinalRegressor``.
    params : dict
        Its parameters, and optionally :data:`ENCODE_BINS`.
    seed : int
        Its ``random_state``.

    Returns
    -------
    model : estimator
        The estimator, or a pipeline of the encoder and the estimator.
    """
    params = dict(params)
    bins = params.pop(ENCODE_BINS, None)
    model = estimator(random_state=seed, n_threads=1, **params)
    if bins is None:
        return model
    from sklearn.pipeline import make_pipeline

    from cr_sklearn import PiecewiseLinearEncoder

    return make_pipeline(PiecewiseLinearEncoder(n_bins=bins), model)


def cr_network(model):
    """The fitted CR estimator of ``model`` and the map to its inputs.

    Parameters
    ----------
    model : estimator
        From :func:`build_cr`, fitted.

    Returns
    -------
    network : estimator
        The CR estimator.
    inputs : callable
        The preprocessed test fold to the network's inputs (the encoding in
        a pipeline: its gradients are on the encoded columns).
    """
    if hasattr(model, "steps"):
        return model[-1], model[:-1].transform
    return model, lambda Z: Z


def model_specs(task, models, candidates):
    """The run's models: the chosen of ``task.models``, then the CR candidates.

    Parameters
    ----------
    task : Task
        The suite.
    models : sequence of str
        Names from ``task.models``.
    candidates : sequence of (str, dict)
        Variants of the task's CR estimator: name and parameters.

    Returns
    -------
    specs : list of ModelSpec
    """
    unknown = sorted(set(models) - set(task.models))
    if unknown:
        raise SystemExit(f"Unknown models {unknown}; choose from {list(task.models)}.")
    specs = [
        ModelSpec(name, task.kinds.get(name, "baseline"))
        for name in task.models
        if name in models
    ]
    for name, params in candidates:
        if name in task.models or name in {s.name for s in specs}:
            raise SystemExit(f"Candidate name {name!r} is already taken.")
        specs.append(ModelSpec(name, "cr", tuple(sorted(params.items()))))
    return specs


def skip_unavailable_models(task, specs):
    """Drop the models whose package is not installed, with a message.

    Parameters
    ----------
    task : Task
        The suite (``task.optional`` names the packages).
    specs : list of ModelSpec
        The run's models.

    Returns
    -------
    specs : list of ModelSpec
    """
    import importlib.util

    for kind, package in task.optional.items():
        if importlib.util.find_spec(package) is not None:
            continue
        for spec in specs:
            if spec.kind == kind:
                print(
                    f"skip {spec.name}: {package} is not installed "
                    f"(pip install {package})"
                )
        specs = [s for s in specs if s.kind != kind]
    return specs


# -- preprocessing, splits and fitting ------------------------------------------


def make_preprocessing(X):
    """The preprocessing every model shares, for the columns of ``X``.

    Parameters
    ----------
    X : DataFrame
        Features; numeric columns are imputed (median) and standardised, the
        others one-hot encoded (missing values as a ``"missing"`` level, a
        binary column as one indicator).

    Returns
    -------
    preprocessing : ColumnTransformer
        Unfitted; its output is a dense float array.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = list(X.select_dtypes("number").columns)
    categorical = [c for c in X.columns if c not in numeric]
    encoder = OneHotEncoder(
        drop="if_binary", handle_unknown="ignore", sparse_output=False
    )
    return ColumnTransformer(
        [
            (
                "numeric",
                make_pipeline(SimpleImputer(strategy="median"), StandardScaler()),
                numeric,
            ),
            (
                "categorical",
                make_pipeline(
                    SimpleImputer(strategy="constant", fill_value="missing"), encoder
                ),
                categorical,
            ),
        ],
        sparse_threshold=0.0,
    )


def make_splits(y, repeats):
    """The 5x2 (``repeats`` x 2) stratified splits, as index arrays.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Labels.
    repeats : int
        Repeats of the 2-fold split.

    Returns
    -------
    splits : list of (ndarray, ndarray)
        ``(train, test)`` indices; the first splits do not depend on
        ``repeats``.
    """
    from sklearn.model_selection import RepeatedStratifiedKFold

    cv = RepeatedStratifiedKFold(
        n_splits=N_SPLITS, n_repeats=repeats, random_state=CV_SEED
    )
    return list(cv.split(np.zeros(len(y)), y))


def subsample(train, y, fraction, seed):
    """A stratified ``fraction`` of the training indices ``train`` (sorted)."""
    from sklearn.model_selection import train_test_split

    if fraction >= 1:
        return train
    part, _ = train_test_split(
        train, train_size=fraction, stratify=y[train], random_state=seed
    )
    return np.sort(part)


def fit_and_score(task, spec, X, y, train, test, fraction, seed):
    """Fit one model on one split and score it (one thread).

    Parameters
    ----------
    task : Task
        The suite (its ``build_model`` and ``score``).
    spec : ModelSpec
        The model.
    X : DataFrame
        The table's features.
    y : ndarray
        Its labels.
    train, test : ndarray
        Indices of the split.
    fraction : float
        Fraction of the training fold to train on (stratified).
    seed : int
        Seed of the model and of the subsample.

    Returns
    -------
    scores : dict
        The task's ``score_columns`` (``fit_time`` in seconds, the model's
        fit only), ``n_train`` and ``n_test``.
    """
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    train = subsample(train, y, fraction, seed)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pre = make_preprocessing(X).fit(X.iloc[train])
        Z_train, Z_test = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        model = task.build_model(spec, seed)
        start = time.perf_counter()
        model.fit(Z_train, y[train])
        fit_time = time.perf_counter() - start
        scores = task.score(spec, model, Z_test, y[test])
    scores = {**scores, "fit_time": float(fit_time)}
    return {
        **{name: scores[name] for name in task.score_columns},
        "n_train": int(len(train)),
        "n_test": int(len(test)),
    }


# -- the baseline cache ---------------------------------------------------------


def package_versions(sources):
    """Versions of installed packages.

    Parameters
    ----------
    sources : dict of str to tuple of str
        Package to the distributions it may be installed as (the first one
        found gives its version).

    Returns
    -------
    versions : dict of str to str
        Only the packages found.
    """
    from importlib import metadata

    found = {}
    for package, distributions in sources.items():
        for distribution in distributions:
            try:
                found[package] = metadata.version(distribution)
                break
            except metadata.PackageNotFoundError:
                pass
    return found


def cache_key(task, table, spec, split, fraction=1.0):
    """A hash of everything a baseline's result depends on.

    Parameters
    ----------
    task : Task
        The suite (its table key, scoring version and package versions).
    table : table
        The registry entry (name and shape, and what ``task.table_key`` adds).
    spec : ModelSpec
        The model (its full parameters at this split's seed).
    split : int
        Index of the split (seeds the model; CV seed and folds are fixed).
    fraction : float, default=1.0
        Training fraction; in the key of the tasks with ``fractions`` only.

    Returns
    -------
    key : str
        12 hexadecimal digits.
    """
    model = task.build_model(spec, split)
    key_of_table = task.table_key or _name_and_shape
    content = {
        "table": key_of_table(table),
        "preprocessing": PREPROCESSING,
        "cv": [N_SPLITS, CV_SEED, split],
        "model": [spec.name, model.__repr__(N_CHAR_MAX=100_000)],
        "versions": package_versions(task.versions),
    }
    if task.fractions:
        content["fraction"] = fraction
    if task.scoring is not None:
        content["scoring"] = task.scoring
    text = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _name_and_shape(table):
    return [table.name, list(table.shape)]


def _cache_path(task, cache_dir, table, spec, split, fraction):
    key = cache_key(task, table, spec, split, fraction)
    return Path(cache_dir) / table.name / f"{spec.name}-{split}-{key}.json"


def read_cache(task, cache_dir, table, spec, split, fraction):
    """A cached baseline result, or None (CR models are never cached)."""
    if cache_dir is None or spec.is_cr:
        return None
    path = _cache_path(task, cache_dir, table, spec, split, fraction)
    return json.loads(path.read_text()) if path.is_file() else None


def _write_cache(task, cache_dir, table, spec, split, fraction, scores):
    """Store a baseline result (CR models are never cached)."""
    if cache_dir is None or spec.is_cr:
        return
    path = _cache_path(task, cache_dir, table, spec, split, fraction)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores, sort_keys=True) + "\n")


# -- running --------------------------------------------------------------------


def select_tables(task, names, split, data_dir, fraction=1.0):
    """The tables to run, with messages for those skipped.

    Parameters
    ----------
    task : Task
        The suite (its registry).
    names : sequence of str or None
        Table names (None: all of the half).
    split : {"tune", "confirm", "all"}
        The half of the suite.
    data_dir : path-like or None
        The shared data folder.
    fraction : float, default=1.0
        Training fraction; below 1 only tables with at least 1,000 rows run.

    Returns
    -------
    tables : list of table
    skipped : dict of str to str
        Table name to the reason it was skipped.
    """
    tables, skipped = [], {}
    for table in task.registry.get_tables(names, split):
        reason = task.registry.why_unavailable(table, data_dir)
        if reason is None and fraction < 1 and table.n_rows < MIN_ROWS_FRACTION:
            reason = f"under {MIN_ROWS_FRACTION:,} rows (--fraction runs)"
        if reason is None:
            tables.append(table)
        else:
            skipped[table.name] = reason
    return tables, skipped


def run(
    task,
    tables,
    specs,
    repeats,
    *,
    fraction=1.0,
    data_dir=None,
    n_jobs=1,
    cache_dir=None,
    progress=True,
):
    """Fit every model on every split of every table.

    Parameters
    ----------
    task : Task
        The suite.
    tables : list of table
        Tables to run (available ones).
    specs : list of ModelSpec
        Models.
    repeats : int
        Repeats of the 2-fold split.
    fraction : float, default=1.0
        Training fraction.
    data_dir : path-like or None, default=None
        The shared data folder.
    n_jobs : int, default=1
        Worker processes (joblib loky), one thread each.
    cache_dir : path-like or None, default=None
        Baseline cache folder; None disables the cache.
    progress : bool, default=True
        Show a tqdm progress bar.

    Returns
    -------
    results : DataFrame
        One row per table, model and split: the scores of
        :func:`fit_and_score`, ``cached``, and ``error`` for failed fits
        (whose scores are NaN).
    """
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    rows, tasks = [], []
    for table in tables:
        X, y = task.registry.load_table(table, data_dir)
        for split, (train, test) in enumerate(make_splits(y, repeats)):
            for spec in specs:
                key = {"table": table.name, "model": spec.name, "split": split}
                cached = read_cache(task, cache_dir, table, spec, split, fraction)
                if cached is not None:
                    rows.append({**key, **cached, "cached": True})
                    continue
                args = (spec, X, y, train, test, fraction, split)
                tasks.append((key, table, spec, args))
    # The largest tables first, so that no long fit is left for the end alone.
    tasks.sort(key=lambda job: -job[1].n_rows)
    jobs = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
        delayed(_task)(i, task, args) for i, (_, _, _, args) in enumerate(tasks)
    )
    bar = tqdm(total=len(tasks), disable=not progress or not tasks, desc="fits")
    for i, scores in jobs:
        key, table, spec, _ = tasks[i]
        if "error" in scores:
            print(f"error {key}: {scores['error']}", file=sys.stderr)
        else:
            split = key["split"]
            _write_cache(task, cache_dir, table, spec, split, fraction, scores)
        rows.append({**key, **scores, "cached": False})
        bar.update()
    bar.close()
    return _in_order(pd.DataFrame(rows), tables, specs)


def _in_order(results, tables, specs):
    """Rows sorted as the registry's tables, the run's models, the splits."""
    if results.empty:
        return results
    table_rank = {t.name: i for i, t in enumerate(tables)}
    model_rank = {s.name: i for i, s in enumerate(specs)}
    ranked = results.assign(
        _table=results["table"].map(table_rank),
        _model=results["model"].map(model_rank),
    )
    ranked = ranked.sort_values(["_table", "_model", "split"])
    return ranked.drop(columns=["_table", "_model"]).reset_index(drop=True)


def _task(i, task, args):
    """Index and scores of one fit; a failed fit gives NaN scores and an error."""
    try:
        return i, fit_and_score(task, *args)
    except Exception as exc:  # one failed fit must not end a long run
        nan = dict.fromkeys(task.score_columns, float("nan"))
        return i, {**nan, "error": f"{type(exc).__name__}: {exc}"}


# -- the summary ----------------------------------------------------------------


def per_table(task, results):
    """Mean scores per table and model (median for fit time and diagnostics).

    Parameters
    ----------
    task : Task
        The suite (its metrics and diagnostics).
    results : DataFrame
        The output of :func:`run`.

    Returns
    -------
    means : DataFrame
        Indexed by ``(table, model)``: the metrics, ``fit_time``, the
        diagnostics and ``n_splits``.
    """
    grouped = results.groupby(["table", "model"], sort=False)
    primary = task.primary.name
    means = {m.name: grouped[m.name].mean() for m in task.metrics}
    # Rounded so that equal scores over different splits tie.
    means[primary] = means[primary].round(12)
    for name in ("fit_time", *task.diagnostics):
        means[name] = grouped[name].median()
    # Splits with a score: a failed fit's are NaN.
    means["n_splits"] = grouped[primary].count()
    return pd.DataFrame(means)


def overall(task, means, models):
    """Each model's means over the tables, rank and gap to the per-table best.

    Parameters
    ----------
    task : Task
        The suite; its first metric ranks the models.
    means : DataFrame
        The output of :func:`per_table`.
    models : list of str
        Models, in the order of the report.

    Returns
    -------
    summary : DataFrame
        Indexed by model: each metric (times its scale), ``rank`` (1 is
        best, ties averaged), ``gap`` (first metric minus its per-table best,
        times its scale: <= 0 where higher is better, >= 0 where lower is),
        ``fit_time`` (median over the tables of the median fit) and
        ``tables``, over the tables where every model has the first metric.
    """
    from scipy.stats import rankdata

    primary = task.primary
    score = means[primary.name].unstack("model")[models].dropna()
    values = score.to_numpy()
    ranks = pd.DataFrame(
        rankdata(-values if primary.higher_is_better else values, axis=1),
        index=score.index,
        columns=models,
    )
    best = score.max(axis=1) if primary.higher_is_better else score.min(axis=1)
    gap = score.sub(best, axis=0)

    def on_those_tables(name):
        return means[name].unstack("model").loc[score.index, models]

    summary = {
        m.name: m.scale * (score if m is primary else on_those_tables(m.name)).mean()
        for m in task.metrics
    }
    summary["rank"] = ranks.mean()
    summary["gap"] = primary.scale * gap.mean()
    summary["fit_time"] = on_those_tables("fit_time").median()
    summary["tables"] = score.notna().sum()
    return pd.DataFrame(summary)


def paired_differences(task, results, model, other, ratio):
    """Per table: mean first metric of ``model`` minus ``other``, and interval.

    Parameters
    ----------
    task : Task
        The suite; its first metric is compared.
    results : DataFrame
        The output of :func:`run`.
    model, other : str
        The two models.
    ratio : float
        ``n_test / n_train`` for the Nadeau-Bengio correction.

    Returns
    -------
    differences : dict of str to (float, float, float)
        Table to ``(mean, low, high)`` in the metric's units times its scale
        (95% interval).
    """
    from cr_sklearn.study import corrected_interval

    primary = task.primary
    # dropna=False: a model that failed on every split keeps its (NaN)
    # column, so its tables get no difference instead of a KeyError.
    scores = results.pivot_table(
        index=["table", "split"], columns="model", values=primary.name, dropna=False
    )
    out = {}
    for table, rows in scores.groupby(level="table", sort=False):
        d = primary.scale * (rows[model] - rows[other]).dropna().to_numpy()
        if d.size >= 2:
            out[table] = corrected_interval(d, ratio, confidence=0.95)
        elif d.size == 1:
            out[table] = (float(d[0]), np.nan, np.nan)
    return out


def test_train_ratio(results):
    """``n_test / n_train`` of the fits (1.0 for 5x2 CV on full folds).

    Parameters
    ----------
    results : DataFrame
        The output of :func:`run`.

    Returns
    -------
    ratio : float
    """
    return float((results["n_test"] / results["n_train"]).mean())


def _wins(task, means, model, other):
    """Tables where ``model`` beats, ties and loses to ``other`` (first metric)."""
    primary = task.primary
    scores = means[primary.name].unstack("model")[[model, other]].dropna()
    diff = scores[model] - scores[other]
    if not primary.higher_is_better:
        diff = -diff
    return int((diff > 0).sum()), int((diff == 0).sum()), int((diff < 0).sum())


# -- the report -----------------------------------------------------------------


def format_value(value, digits=2, scale=1.0):
    """``scale * value`` with ``digits`` decimals, or ``"-"`` for None and NaN.

    Parameters
    ----------
    value : float or None
        The value.
    digits : int, default=2
        Decimals.
    scale : float, default=1.0
        Factor (100: a fraction in points).

    Returns
    -------
    text : str
    """
    return "-" if value is None or np.isnan(value) else f"{scale * value:.{digits}f}"


def markdown_table(header, rows):
    """The lines of a markdown table.

    Parameters
    ----------
    header : list of str
        Column names.
    rows : list of list
        Cells; a ``|`` in a cell is escaped.

    Returns
    -------
    lines : list of str
    """
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += [
        "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"
        for row in rows
    ]
    return lines


def score_table(means, column, models, digits, scale=1.0, best=None, splits=True):
    """One score per table and model as a markdown table, in registry order.

    Parameters
    ----------
    means : DataFrame
        The output of :func:`per_table`.
    column : str
        The score.
    models : list of str
        Models, in the order of the report.
    digits : int
        Decimals.
    scale : float, default=1.0
        Factor of the values (100: accuracy in %).
    best : {"max", "min"} or None, default=None
        Put the best value of each table in bold.
    splits : bool, default=True
        With a column of the number of splits.

    Returns
    -------
    lines : list of str
    """
    values = means[column].unstack("model")
    tables = list(dict.fromkeys(means.index.get_level_values("table")))
    rows = []
    for t in tables:
        cells = [format_value(values.loc[t, m], digits, scale) for m in models]
        if best is not None:
            top = getattr(values.loc[t, models], best)()
            cells = [
                f"**{cell}**" if values.loc[t, m] == top else cell
                for cell, m in zip(cells, models, strict=True)
            ]
        if splits:
            cells = [int(means.loc[(t, models[0]), "n_splits"]), *cells]
        rows.append([t, *cells])
    return markdown_table(["table", *(["splits"] if splits else []), *models], rows)


def _interval_cell(value, digits):
    """``mean [low, high]``, in bold where the interval excludes 0."""
    mean, low, high = value
    if np.isnan(low):
        return f"{mean:+.{digits}f}"
    cell = f"{mean:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"
    # A zero-width interval (the same difference on every split) proves nothing.
    return f"**{cell}**" if high > low and (low > 0 or high < 0) else cell


def report(task, results, specs, skipped, header):
    """The markdown summary of a run.

    Parameters
    ----------
    task : Task
        The suite.
    results : DataFrame
        The output of :func:`run`.
    specs : list of ModelSpec
        The run's models.
    skipped : dict of str to str
        Skipped tables and why.
    header : list of str
        Lines that open the report (command, date, versions, parameters).

    Returns
    -------
    text : str
    """
    lines = list(header)
    if not results.empty:
        cached = int(results["cached"].sum())
        lines += ["", f"Fits: {len(results)}, of which {cached} from the cache."]
    if skipped:
        lines += ["", "Skipped tables:", ""]
        lines += [f"- {name}: {why}" for name, why in skipped.items()]
    if results.empty:
        return "\n".join([*lines, "", "No results."]) + "\n"
    if "error" in results:
        failed = results.dropna(subset=["error"])
        lines += ["", f"Failed fits ({len(failed)}; their scores are left out):", ""]
        lines += [
            f"- {r.table}, {r.model}, split {r.split}: {r.error}"
            for r in failed.itertuples()
        ]
    models = [s.name for s in specs if s.name in set(results["model"])]
    cr_models = [s.name for s in specs if s.is_cr and s.name in models]
    means = per_table(task, results)
    lines += _summary_section(task, means, models)
    lines += _wins_section(task, means, cr_models, models)
    lines += ["", "## Per table", *task.per_table_section(means, models, cr_models)]
    lines += _differences_section(task, results, cr_models, models)
    return "\n".join(lines) + "\n"


def _summary_section(task, means, models):
    summary = overall(task, means, models)
    rows = [
        [
            name,
            *(format_value(r[m.name], m.digits) for m in task.metrics),
            format_value(r["rank"]),
            format_value(r["gap"], task.primary.digits),
            format_value(r["fit_time"]),
            int(r["tables"]),
        ]
        for name, r in summary.iterrows()
    ]
    header = ["model", *(f"mean {m.label}" for m in task.metrics), "mean rank"]
    header += ["mean gap to best", "median fit (s)", "tables"]
    intro = ["", "## Summary", "", *task.summary_note, ""]
    return intro + markdown_table(header, rows)


def _wins_section(task, means, cr_models, models):
    lines = []
    for cr in cr_models:
        others = [m for m in models if m != cr]
        if not others:
            continue
        rows = []
        for other in others:
            win, tie, loss = _wins(task, means, cr, other)
            n = win + tie + loss
            rows.append([other, win, tie, loss, f"{win + tie}/{n}"])
        lines += ["", f"## Wins of {cr} (mean {task.primary.label} per table)", ""]
        lines += markdown_table(["against", "wins", "ties", "losses", "at least"], rows)
    return lines


def _differences_section(task, results, cr_models, models):
    ratio = test_train_ratio(results)
    digits = task.primary.difference_digits
    tables = list(dict.fromkeys(results["table"]))
    lines = []
    for cr in cr_models:
        others = [m for m in models if m != cr]
        if not others:
            continue
        diffs = {o: paired_differences(task, results, cr, o, ratio) for o in others}
        lines += ["", f"## {cr} minus each model, per table", ""]
        lines += [*task.differences_note(cr, ratio), ""]
        rows = [
            [
                t,
                *(
                    _interval_cell(diffs[o][t], digits) if t in diffs[o] else "-"
                    for o in others
                ),
            ]
            for t in tables
        ]
        lines += markdown_table(["table", *others], rows)
    return lines


def git_commit():
    """``git describe --always --dirty`` of the checkout, or ``"unknown"``."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def run_header(task, argv, specs, repeats, fraction=1.0):
    """The opening lines of a results file.

    Parameters
    ----------
    task : Task
        The suite.
    argv : list of str
        The command's arguments.
    specs : list of ModelSpec
        The run's models.
    repeats : int
        Repeats of the 2-fold split.
    fraction : float, default=1.0
        Training fraction (named for the tasks with ``fractions`` only).

    Returns
    -------
    lines : list of str
    """
    import cr_sklearn

    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    versions = package_versions(task.versions)
    splits = (
        f"Splits: RepeatedStratifiedKFold(n_splits={N_SPLITS}, n_repeats={repeats}, "
        f"random_state={CV_SEED})"
    )
    if task.fractions:
        splits += f"; training fraction {fraction:g}"
        if fraction < 1:
            splits += f" (tables with >= {MIN_ROWS_FRACTION:,} rows)"
    lines = [
        f"# {task.title}",
        "",
        f"Command: `python benchmarks/{task.name}.py {shlex.join(argv)}`",
        "",
        f"Date: {date}. cr_sklearn {cr_sklearn.__version__}, commit {git_commit()}; "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + ".",
        "",
        splits + ". One thread per fit; fit times are wall-clock on a shared machine.",
    ]
    for spec in specs:
        if spec.is_cr:
            network, _ = cr_network(task.build_model(spec, 0))
            params = network.get_params()
            params["random_state"] = "the split's index"
            changed = dict(spec.params) or "the defaults"
            lines += [
                "",
                f"{spec.name}: {task.estimator} with {changed}; all: {params}",
            ]
    return lines


def default_output(task, split, repeats, fraction=1.0):
    """``results/<name>_<split>[_fraction<f>][_repeats<r>].md``.

    Parameters
    ----------
    task : Task
        The suite.
    split : str
        The half of the suite.
    repeats : int
        Repeats of the 2-fold split.
    fraction : float, default=1.0
        Training fraction.

    Returns
    -------
    path : Path
    """
    name = f"{task.name}_{split}"
    if fraction < 1:
        name += f"_fraction{fraction:g}"
    if repeats != DEFAULT_REPEATS:
        name += f"_repeats{repeats}"
    return RESULTS / f"{name}.md"


# -- listing --------------------------------------------------------------------


def list_lines(tables):
    """One line per table: ``name n_rows n_columns n_classes split``.

    Parameters
    ----------
    tables : list of table
        Registry entries.

    Returns
    -------
    lines : list of str
    """
    return [
        f"{t.name} {t.n_rows} {t.n_columns} {t.n_classes} {t.split}" for t in tables
    ]


def tables_markdown(task, tables, note, header, rows):
    """The markdown listing of a registry's tables.

    Parameters
    ----------
    task : Task
        The suite (its title).
    tables : list of table
        Registry entries.
    note : list of str
        The lines under the title: how the listing was made, what it shows.
    header : list of str
        Column names.
    rows : list of list
        One row of cells per table.

    Returns
    -------
    text : str
    """
    counts = pd.Series([t.split for t in tables]).value_counts()
    lines = [
        f"# {task.title} tables",
        "",
        *note,
        "",
        f"{counts.get('tune', 0)} tuning and {counts.get('confirm', 0)} "
        "confirmation tables.",
        "",
    ]
    return "\n".join(lines + markdown_table(header, rows)) + "\n"


def list_command(task, args):
    """``--list``: one line per table, or with ``--markdown`` the listing file.

    Parameters
    ----------
    task : Task
        The suite.
    args : Namespace
        The output of :func:`parse_args`.
    """
    registry = task.registry
    tables = registry.get_tables(args.tables, args.split)
    if args.markdown:
        text = task.list_markdown(tables)
        output = args.output or RESULTS / f"{task.name}_tables.md"
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        print(text, end="")
        return
    print("\n".join(list_lines(tables)))
    for table in tables:
        reason = registry.why_unavailable(table, args.data_dir)
        if reason:
            print(f"unavailable {table.name}: {reason}", file=sys.stderr)


# -- command line ---------------------------------------------------------------


def parse_args(task, argv):
    """The command-line options (see the suite script's docstring).

    Parameters
    ----------
    task : Task
        The suite; ``--fraction`` is an option of the tasks with
        ``fractions`` only (1 for the others).
    argv : list of str
        Arguments.

    Returns
    -------
    args : Namespace
    """
    parser = argparse.ArgumentParser(description=task.description)
    parser.add_argument("--list", action="store_true", help="list the tables")
    parser.add_argument(
        "--markdown", action="store_true", help="with --list: write the listing"
    )
    parser.add_argument(
        "--split",
        choices=["tune", "confirm", "all"],
        default=None,
        help="half of the suite (default: tune; all with --list)",
    )
    parser.add_argument("--tables", type=_names, default=None, help="a,b,c")
    parser.add_argument(
        "--models", type=_names, default=list(task.models), help="a,b,c"
    )
    parser.add_argument(
        "--candidate",
        type=parse_candidate,
        action="append",
        default=[],
        help=f"NAME=PARAMS: a {task.estimator} variant (JSON or a dict literal)",
    )
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    if task.fractions:
        parser.add_argument("--fraction", type=float, default=1.0)
    else:
        parser.set_defaults(fraction=1.0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=task.cache_dir)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if not 0 < args.fraction <= 1:
        parser.error("--fraction must be in (0, 1]")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.split is None:
        args.split = "all" if args.list else "tune"
    return args


def _names(text):
    return [name.strip() for name in text.split(",") if name.strip()]


def main(task, argv=None):
    """Run a suite (or list its tables) from the command line.

    Parameters
    ----------
    task : Task
        The suite.
    argv : list of str, default=None
        Arguments; ``sys.argv[1:]`` when None.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(task, argv)
    if args.list:
        list_command(task, args)
        return
    specs = skip_unavailable_models(
        task, model_specs(task, args.models, args.candidate)
    )
    tables, skipped = select_tables(
        task, args.tables, args.split, args.data_dir, args.fraction
    )
    for name, reason in skipped.items():
        print(f"skip {name}: {reason}")
    results = run(
        task,
        tables,
        specs,
        args.repeats,
        fraction=args.fraction,
        data_dir=args.data_dir,
        n_jobs=args.n_jobs,
        cache_dir=None if args.no_cache else args.cache_dir,
        progress=not args.no_progress,
    )
    header = run_header(task, argv, specs, args.repeats, args.fraction)
    text = report(task, results, specs, skipped, header)
    output = args.output or default_output(
        task, args.split, args.repeats, args.fraction
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text, end="")
    print(f"written to {output}")
