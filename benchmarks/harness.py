"""The benchmark harness: what every configuration of ``run.py`` shares.

Provenance headers, markdown tables, the shared preprocessing, repeated
stratified splits, fits in joblib workers with one thread each, and the
machinery of the two suites (``suites.py``): models, the baseline cache,
tau on shared test rows (cached apart), size bands, paired differences, the
adoption rules of issues 39 and 46 and the report. A configuration is a
:class:`Config`; ``run.py`` finds them in the modules it names and runs one
from the command line.
"""

import argparse
import ast
import contextlib
import datetime
import hashlib
import json
import shlex
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
#: ``../shared/data`` beside the repository: the data sets that are not bundled.
SHARED = HERE.parents[1] / "shared" / "data"
CACHE = HERE / ".cache"
CV_SEED = 0
N_SPLITS = 2
DEFAULT_REPEATS = 5
MIN_ROWS_FRACTION = 1000
# In the cache key: bump when the preprocessing or a suite's scoring changes.
PREPROCESSING = (
    "v1: numeric median impute + StandardScaler; categorical constant "
    "'missing' impute + OneHotEncoder(drop='if_binary', handle_unknown='ignore')"
)
#: The most test rows of a split that tau is measured on (every model the same).
TAU_ROWS = 1000
# In the tau cache key: bump when the rule or the rows of tau change.
TAU_RULE = (
    "v1: gradient_tail_ratio(gradient_norms(model, Z_test[rows])), q=99, "
    "step=1e-3, scale=the rows' spread; rows: at most 1,000 of the test fold, "
    "numpy default_rng(split index).choice without replacement, sorted"
)
#: The size bands every suite figure is reported by, smallest first.
BANDS = ("under 2,000", "2,000-20,000", "above 20,000")


def size_band(n_rows):
    """``"under 2,000"``, ``"2,000-20,000"`` (inclusive) or ``"above 20,000"``."""
    if n_rows < 2000:
        return BANDS[0]
    return BANDS[1] if n_rows <= 20_000 else BANDS[2]


# -- configurations, provenance and markdown ----------------------------------


@dataclass(frozen=True)
class Config:
    """A named configuration of ``run.py``.

    ``add_arguments(parser)`` adds its options; ``run(args)`` returns its
    markdown report (or ``(report, exit_status)``; ``args.argv`` holds the
    command's arguments); ``file`` names the report under ``results/``: a
    name, a callable of the arguments, or ``<name>.md`` when None.
    """

    name: str
    help: str
    add_arguments: Callable
    run: Callable
    file: Callable | str | None = None

    def output(self, args):
        """The default file name of the report under ``results/``."""
        if callable(self.file):
            return self.file(args)
        return self.file or f"{self.name}.md"


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


def package_versions(sources):
    """Versions of the installed distributions.

    Parameters
    ----------
    sources : dict of str to tuple of str
        Package to the distributions it may be installed as.

    Returns
    -------
    versions : dict of str to str
        The packages found.
    """
    from importlib import metadata

    found = {}
    for package, distributions in sources.items():
        for distribution in distributions:
            with contextlib.suppress(metadata.PackageNotFoundError):
                found[package] = metadata.version(distribution)
                break
    return found


def header(title, argv, versions=None, notes=()):
    """The opening lines of a report: title, command, date, commit, versions.

    Parameters
    ----------
    title : str
        The report's title.
    argv : list of str
        The arguments of ``run.py``, the configuration's name first.
    versions : dict of str to tuple of str, default=None
        Packages whose versions the header names (see :func:`package_versions`).
    notes : sequence of str, default=()
        Paragraphs under the header.

    Returns
    -------
    lines : list of str
    """
    import cr_sklearn

    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    found = package_versions(versions or {})
    extra = "".join(f", {k} {v}" for k, v in found.items())
    lines = [
        f"# {title}",
        "",
        f"Command: `python benchmarks/run.py {shlex.join(argv)}`",
        "",
        f"Date: {date}. cr_sklearn {cr_sklearn.__version__}, commit "
        f"{git_commit()}{extra}.",
    ]
    for note in notes:
        lines += ["", note]
    return lines


def fmt(value, digits=2, scale=1.0):
    """``scale * value`` with ``digits`` decimals; ``"-"`` for None and NaN."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    return f"{scale * value:.{digits}f}"


def markdown_table(header_cells, rows):
    """The lines of a markdown table, ``|`` in a cell escaped."""
    lines = ["| " + " | ".join(header_cells) + " |"]
    lines.append("|" + " --- |" * len(header_cells))
    lines += [
        "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"
        for row in rows
    ]
    return lines


# -- data, splits and one-thread fits ------------------------------------------


def load_pima_arrays():
    """The bundled Pima table as float features and labels (numpy arrays)."""
    from cr_sklearn.datasets import load_pima

    X, y = load_pima(return_X_y=True)
    return np.asarray(X, dtype=float), np.asarray(y)


def load_sst5_embeddings(data_dir=None):
    """SST-5's MiniLM embeddings: ``(X_train, y_train, X_test, y_test)``.

    Parameters
    ----------
    data_dir : str or Path, default=None
        The shared data folder; :data:`SHARED` when None.

    Returns
    -------
    arrays : tuple of ndarray

    Raises
    ------
    FileNotFoundError
        Without the file; the message names it.
    """
    path = Path(data_dir or SHARED) / "sst5" / "minilm_embeddings.npz"
    if not path.exists():
        raise FileNotFoundError(f"SST-5 embeddings not found at {path}; skipped.")
    with np.load(path) as npz:
        return tuple(npz[k] for k in ("X_train", "y_train", "X_test", "y_test"))


def make_preprocessing(X):
    """The preprocessing every suite model shares, for the columns of ``X``.

    Numeric columns are median-imputed and standardised; the others one-hot
    encoded, missing values as a ``"missing"`` level, a binary column as one
    indicator. The numeric columns come first in the output.

    Parameters
    ----------
    X : DataFrame
        Features; non-numeric columns are categorical.

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
    numbers = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
    others = make_pipeline(
        SimpleImputer(strategy="constant", fill_value="missing"), encoder
    )
    return ColumnTransformer(
        [("numeric", numbers, numeric), ("categorical", others, categorical)],
        sparse_threshold=0.0,
    )


def make_splits(y, repeats, n_splits=N_SPLITS):
    """Repeated stratified ``n_splits``-fold splits (seed 0) as index arrays.

    Fewer ``repeats`` give the first splits of a longer run.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
    repeats : int
    n_splits : int, default=2

    Returns
    -------
    splits : list of (ndarray, ndarray)
    """
    from sklearn.model_selection import RepeatedStratifiedKFold

    cv = RepeatedStratifiedKFold(
        n_splits=n_splits, n_repeats=repeats, random_state=CV_SEED
    )
    return list(cv.split(np.zeros(len(y)), y))


def subsample(train, y, size, seed):
    """A stratified, sorted part of the indices ``train``.

    Parameters
    ----------
    train : ndarray
    y : ndarray
        Labels of the whole table.
    size : float or int
        A fraction (``train`` itself from 1 on) or a number of rows
        (``train`` itself when it has no more).
    seed : int

    Returns
    -------
    part : ndarray
    """
    from sklearn.model_selection import train_test_split

    if (isinstance(size, float) and size >= 1) or (
        isinstance(size, int) and size >= len(train)
    ):
        return train
    part, _ = train_test_split(
        train, train_size=size, stratify=y[train], random_state=seed
    )
    return np.sort(part)


@contextlib.contextmanager
def one_thread():
    """One torch thread and one BLAS/OpenMP thread in the block, warnings off.

    Fits in parallel workers must not oversubscribe the cores.
    """
    import torch
    from threadpoolctl import threadpool_limits

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        torch.set_num_threads(previous)


def parallel(function, jobs, n_jobs=1, progress=False, desc="fits"):
    """Run ``function(*job)`` for each job in joblib workers, as they finish.

    Parameters
    ----------
    function : callable
    jobs : list of tuple
    n_jobs : int, default=1
        Worker processes (loky).
    progress : bool, default=False
        A tqdm bar labelled ``desc``.
    desc : str, default="fits"

    Yields
    ------
    i, result
        The job's index and what ``function`` returned.
    """
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    calls = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
        delayed(_indexed)(i, function, job) for i, job in enumerate(jobs)
    )
    with tqdm(total=len(jobs), disable=not progress or not jobs, desc=desc) as bar:
        for i, result in calls:
            bar.update()
            yield i, result


def _indexed(i, function, job):
    return i, function(*job)


def median_ratio(times, case, reference):
    """Median over repeats of ``times[case][r] / times[reference][r]``."""
    return float(np.median(np.asarray(times[case]) / np.asarray(times[reference])))


def timed(function, *args, clock=time.perf_counter, **kwargs):
    """Seconds ``function(*args, **kwargs)`` takes on ``clock``."""
    start = clock()
    function(*args, **kwargs)
    return clock() - start


# -- the suites: tasks, models, cache -------------------------------------------


@dataclass(frozen=True)
class Metric:
    """A score of the suite fits: column ``name``, ``label`` in the report,
    direction, ``scale`` of the reported values (100: points) and ``digits``.
    """

    name: str
    label: str
    higher_is_better: bool = True
    scale: float = 1.0
    digits: int = 2


@dataclass(frozen=True)
class Task:
    """A benchmark suite for the harness.

    Parameters
    ----------
    name, config, title : str
        Results ``results/<name>_*.md``, cache ``.cache/<name>``; the name
        on ``run.py``'s command line; the report's title.
    registry : module
        ``get_tables(names, split)``, ``why_unavailable(table, data_dir)``,
        ``load_table(table, data_dir)``.
    estimator : str
        The CR class of the candidates.
    models : tuple of str
        The models a run may choose, in the report's order.
    kinds : dict of str to str
        Kind of each model that is not a ``default_baselines()`` one (``"cr"``
        for the defaults).
    build_model, score : callable
        ``build_model(spec, seed)``: an unfitted estimator, one thread;
        ``score(spec, model, Z_test, y_test)``: a dict of floats.
    metrics : tuple of Metric
        The first ranks the models and gives the gaps.
    margin : float
        The adoption rule's least improvement of the mean gap.
    optional : dict of str to str
        Model kind to the package it needs (skipped, named, when absent).
    versions : dict of str to tuple of str
        Packages in the header and the cache key.
    diagnostics : tuple of str
        Scores summarised by their median; ``"tau"`` among them: tau is
        measured by the harness (:func:`tau_scores`) for the CR models and
        ``tau_baselines``, and pooled per table.
    fractions : bool
        Whether ``--fraction`` is offered.
    max_train_rows : dict of str to int
        Model to the most rows of a training fold it gets (stratified).
    scoring : str
        In the cache key: bump when the scoring changes.
    per_table, list_columns : callable or None
        Extra report lines ``per_table(means, models, cr_models)``; extra
        listing columns ``list_columns(table) -> dict``.
    tau_baselines : tuple of str
        The models other than CR's whose tau is measured (cached apart from
        their scores).
    candidate_rules : callable or None
        Report lines after the issue-39 rule when candidates ran:
        ``candidate_rules(task, results, candidates)``.
    """

    name: str
    config: str
    title: str
    registry: object
    estimator: str
    models: tuple
    kinds: dict
    build_model: Callable
    score: Callable
    metrics: tuple
    margin: float
    optional: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    diagnostics: tuple = ()
    fractions: bool = False
    max_train_rows: dict = field(default_factory=dict)
    scoring: str = "v1"
    per_table: Callable | None = None
    list_columns: Callable | None = None
    tau_baselines: tuple = ()
    candidate_rules: Callable | None = None

    @property
    def primary(self):
        """The metric that ranks the models."""
        return self.metrics[0]

    @property
    def score_columns(self):
        """The score columns of a fit: metrics, ``fit_time``, diagnostics."""
        return (*(m.name for m in self.metrics), "fit_time", *self.diagnostics)


@dataclass(frozen=True)
class ModelSpec:
    """A model of a suite run: name, kind and (CR models) parameters."""

    name: str
    kind: str
    params: tuple = ()

    @property
    def is_cr(self):
        """Whether it is a CR estimator (refit on every run, never cached)."""
        return self.kind == "cr"


def parse_candidate(text):
    """``NAME=PARAMS`` to ``(name, params)``, PARAMS JSON or a dict literal."""
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


#: A candidate parameter: a ``PiecewiseLinearEncoder`` with this many bins in
#: front of the CR estimator (a pipeline).
ENCODE_BINS = "encode_bins"
#: A candidate parameter: a rule set of ``rules.py`` that chooses parameters
#: from each training fold's shape.
RULES = "rules"


def build_cr(estimator, params, seed):
    """The CR class ``estimator`` with ``params``, seeded, one thread.

    Parameters
    ----------
    estimator : type
    params : dict
        Its parameters, and optionally :data:`ENCODE_BINS` or :data:`RULES`.
    seed : int

    Returns
    -------
    model : estimator, Pipeline or rules.ShapeRules
        With :data:`ENCODE_BINS`, the encoder and the estimator; with
        :data:`RULES`, the estimator under its rule set.
    """
    params = dict(params)
    bins = params.pop(ENCODE_BINS, None)
    rules = params.pop(RULES, None)
    model = estimator(random_state=seed, n_threads=1, **params)
    if rules is not None:
        from rules import ShapeRules

        return ShapeRules(model, rules)
    if bins is None:
        return model
    from sklearn.pipeline import make_pipeline

    from cr_sklearn import PiecewiseLinearEncoder

    return make_pipeline(PiecewiseLinearEncoder(n_bins=bins), model)


def cr_network(model):
    """``(network, inputs)``: the CR step of ``model`` and the map to its inputs."""
    if hasattr(model, "rules"):
        return getattr(model, "estimator_", model.estimator), lambda Z: Z
    if hasattr(model, "steps"):
        return model[-1], model[:-1].transform
    return model, lambda Z: Z


def model_specs(task, models, candidates):
    """The run's models: the chosen ``models`` in the task's order, then
    the ``candidates`` ``(name, params)`` as CR models.
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
    """Drop the models whose package is missing, naming it."""
    import importlib.util

    for kind, package in task.optional.items():
        if importlib.util.find_spec(package) is not None:
            continue
        for spec in specs:
            if spec.kind == kind:
                print(f"skip {spec.name}: {package} is not installed")
        specs = [s for s in specs if s.kind != kind]
    return specs


def select_tables(task, names, split, data_dir, fraction=1.0):
    """The tables to run and ``{name: reason}`` of those skipped.

    A table is skipped when its files or package are missing, and in a
    ``fraction < 1`` run when it has under 1,000 rows. ``task``: a
    :class:`Task` or a registry module.
    """
    registry = getattr(task, "registry", task)
    tables, skipped = [], {}
    for table in registry.get_tables(names, split):
        reason = registry.why_unavailable(table, data_dir)
        if reason is None and fraction < 1 and table.n_rows < MIN_ROWS_FRACTION:
            reason = f"under {MIN_ROWS_FRACTION:,} rows (--fraction runs)"
        if reason is None:
            tables.append(table)
        else:
            skipped[table.name] = reason
    return tables, skipped


def _model_text(model):
    """The model with every parameter: scikit-learn's full repr, else its params."""
    try:
        return model.__repr__(N_CHAR_MAX=100_000)
    except TypeError:  # not a scikit-learn estimator (CatBoost)
        params = sorted(model.get_params().items(), key=lambda kv: kv[0])
        return f"{type(model).__name__}({params!r})"


def cache_key(task, table, spec, split, fraction=1.0):
    """12 hex digits of everything a baseline's result depends on."""
    model = task.build_model(spec, split)
    content = {
        "table": [table.name, list(table.shape), list(getattr(table, "levels", ()))],
        "preprocessing": PREPROCESSING,
        "cv": [N_SPLITS, CV_SEED, split],
        "model": [spec.name, _model_text(model)],
        "max_train_rows": task.max_train_rows.get(spec.name),
        "fraction": fraction,
        "scoring": task.scoring,
        "versions": package_versions(task.versions),
    }
    return _digest(content)


def _digest(content):
    """12 hex digits of the SHA-256 of ``content`` as sorted JSON."""
    text = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _cache_path(task, cache_dir, table, spec, split, fraction, kind="json"):
    """A baseline's cache file: its scores (``json``) or its tau (``tau.json``)."""
    key_of = cache_key if kind == "json" else tau_key
    key = key_of(task, table, spec, split, fraction)
    return Path(cache_dir) / table.name / f"{spec.name}-{split}-{key}.{kind}"


def read_cache(task, cache_dir, table, spec, split, fraction):
    """A cached baseline result, or None (CR models are never cached)."""
    if cache_dir is None or spec.is_cr:
        return None
    path = _cache_path(task, cache_dir, table, spec, split, fraction)
    return json.loads(path.read_text()) if path.is_file() else None


def write_cache(task, cache_dir, table, spec, split, fraction, scores):
    """Store a baseline result (CR models are never cached).

    Tau and its norms are left out: they are cached apart
    (:func:`write_tau_cache`).
    """
    if cache_dir is None or spec.is_cr:
        return
    scores = {k: v for k, v in scores.items() if k not in TAU_FIELDS}
    path = _cache_path(task, cache_dir, table, spec, split, fraction)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores, sort_keys=True) + "\n")


# -- tau on shared test rows -------------------------------------------------------

#: The fields of a fit that tau gives (never in the score cache).
TAU_FIELDS = ("tau", "norms", "tau_time", "tau_error")


def has_tau(task, spec):
    """Whether ``task`` measures the tau of ``spec`` (CR models, ``tau_baselines``)."""
    return "tau" in task.diagnostics and (spec.is_cr or spec.name in task.tau_baselines)


def tau_rows(n_test, seed, max_rows=TAU_ROWS):
    """Positions in a test fold of the rows tau is measured on.

    Every model of a split gets the same rows: at most ``max_rows`` of the
    fold, drawn without replacement by ``numpy.random.default_rng(seed)``
    (``seed``: the split's index) and sorted; the whole fold when smaller.

    Parameters
    ----------
    n_test : int
        Rows of the test fold.
    seed : int
    max_rows : int, default=TAU_ROWS

    Returns
    -------
    rows : ndarray of int
    """
    if n_test <= max_rows:
        return np.arange(n_test)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_test, size=max_rows, replace=False))


def tau_scores(spec, model, Z_rows):
    """Tau of a fitted model on ``Z_rows`` by the one rule, with its norms.

    ``gradient_tail_ratio(gradient_norms(model, Z_rows))``; a rule set is
    read through its fitted estimator.

    Returns
    -------
    scores : dict
        ``tau``, ``norms`` (list of float) and ``tau_time`` (seconds, apart
        from the fit's); on failure ``tau`` NaN, ``norms`` None and
        ``tau_error``.
    """
    from cr_sklearn import gradient_norms, gradient_tail_ratio

    if spec.is_cr and hasattr(model, "rules"):
        model = model.estimator_
    start = time.perf_counter()
    try:
        norms = np.asarray(gradient_norms(model, Z_rows), dtype=float)
        tau = gradient_tail_ratio(norms)
    except Exception as exc:  # a failed tau must not lose the fit's scores
        error = f"{type(exc).__name__}: {exc}"
        return {"tau": np.nan, "norms": None, "tau_error": error}
    seconds = time.perf_counter() - start
    return {"tau": float(tau), "norms": norms.tolist(), "tau_time": seconds}


def tau_key(task, table, spec, split, fraction=1.0):
    """12 hex digits of what a baseline's tau depends on (its fit, :data:`TAU_RULE`)."""
    content = {
        "fit": cache_key(task, table, spec, split, fraction),
        "tau": TAU_RULE,
        "max_rows": TAU_ROWS,
    }
    return _digest(content)


def read_tau_cache(task, cache_dir, table, spec, split, fraction):
    """A baseline's cached tau (``tau``, ``norms``, ``tau_time``), or None."""
    if cache_dir is None or spec.is_cr:
        return None
    path = _cache_path(task, cache_dir, table, spec, split, fraction, "tau.json")
    if not path.is_file():
        return None
    stored = json.loads(path.read_text())
    return {k: stored[k] for k in ("tau", "norms", "tau_time")}


def write_tau_cache(task, cache_dir, table, spec, split, fraction, scores):
    """Store a baseline's tau and per-row norms, apart from its scores."""
    if cache_dir is None or spec.is_cr or scores.get("norms") is None:
        return
    path = _cache_path(task, cache_dir, table, spec, split, fraction, "tau.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = {"rule": TAU_RULE, **{k: scores[k] for k in ("tau", "norms", "tau_time")}}
    path.write_text(json.dumps(stored, sort_keys=True) + "\n")


def pooled_tau(norms):
    """Tau pooled over splits: ``gradient_tail_ratio`` of their norm arrays.

    Each split's norms over their own mean, then concatenated; splits
    without norms (None, NaN) are left out; NaN when none has any.
    """
    from cr_sklearn import gradient_tail_ratio

    parts = [
        np.asarray(n, dtype=float)
        for n in norms
        if isinstance(n, list | tuple | np.ndarray) and len(n)
    ]
    return gradient_tail_ratio(parts) if parts else float("nan")


# -- fits -------------------------------------------------------------------------

#: What a fit computes: the task's scores and (for the models with tau) tau.
FIT_PARTS = ("scores", "tau")


def fit_and_score(task, spec, X, y, train, test, fraction, seed, parts=FIT_PARTS):
    """Fit one model on one split and score it, one thread.

    Parameters
    ----------
    task : Task
    spec : ModelSpec
    X : DataFrame
    y : ndarray
    train, test : ndarray
        Indices of the split.
    fraction : float
        Part of the training fold to train on (stratified), before the
        model's cap of ``task.max_train_rows``.
    seed : int
        Seed of the model and of the subsamples, and of the tau rows
        (:func:`tau_rows`).
    parts : tuple of str, default=FIT_PARTS
        ``"scores"``: the task's scores and fit time; ``"tau"``: tau on the
        tau rows (:func:`has_tau` models only), after the timed fit.

    Returns
    -------
    scores : dict
        With ``"scores"``: ``task.score_columns`` (``fit_time``: the fit
        alone, seconds), ``n_train`` and ``n_test``; with ``"tau"``:
        ``tau`` and ``norms`` (see :func:`tau_scores`).
    """
    train = subsample(train, y, float(fraction), seed)
    cap = task.max_train_rows.get(spec.name)
    if cap is not None:
        train = subsample(train, y, int(cap), seed)
    out = {}
    with one_thread():
        pre = make_preprocessing(X).fit(X.iloc[train])
        Z_train, Z_test = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        model = task.build_model(spec, seed)
        fit_time = timed(model.fit, Z_train, y[train])
        if "scores" in parts:
            scores = task.score(spec, model, Z_test, y[test])
            scores = {"tau": np.nan, **scores, "fit_time": float(fit_time)}
            out = {name: scores[name] for name in task.score_columns}
            out |= {"n_train": int(len(train)), "n_test": int(len(test))}
        if "tau" in parts and has_tau(task, spec):
            out |= tau_scores(spec, model, Z_test[tau_rows(len(test), seed)])
    return out


#: The models this process has fitted once (see :func:`warm_up`).
_WARM = set()
WARM_UP_ROWS = 100


def warm_up(task, spec, X, y, train, seed):
    """Fit ``spec`` once, untimed, on a few rows, the first time in a process.

    The first fit in a worker pays one-off costs (imports, the first torch
    call): without this, the first timed fit of a run is slower than the
    same fit later, by seconds.
    """
    if (task.name, spec.name) in _WARM:
        return
    _WARM.add((task.name, spec.name))
    with contextlib.suppress(Exception), one_thread():
        rows = subsample(train, y, min(WARM_UP_ROWS, len(train)), seed)
        Z = make_preprocessing(X).fit_transform(X.iloc[rows])
        task.build_model(spec, seed).fit(Z, y[rows])


def _fit_task(task, args, parts=FIT_PARTS):
    """Scores of one fit (after :func:`warm_up`); a failed fit gives NaN
    scores and its error.
    """
    spec, X, y, train, _, _, seed = args
    warm_up(task, spec, X, y, train, seed)
    try:
        return fit_and_score(task, *args, parts=parts)
    except Exception as exc:  # one failed fit must not end a long run
        error = f"{type(exc).__name__}: {exc}"
        if "scores" not in parts:  # a refit for tau: the cached scores stand
            return {"tau": float("nan"), "norms": None, "tau_error": error}
        nan = dict.fromkeys(task.score_columns, float("nan"))
        return {**nan, "error": error}


def run_suite(
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

    A baseline whose scores are cached but whose tau (:func:`has_tau`) is
    not is refitted for its tau alone; its cached scores stand.

    Parameters
    ----------
    task : Task
    tables : list of table
    specs : list of ModelSpec
    repeats : int
        Repeats of the 2-fold split.
    fraction, data_dir, n_jobs, cache_dir, progress
        Training fraction, shared data folder, worker processes (one thread
        each), baseline cache (None: off) and a progress bar.

    Returns
    -------
    results : DataFrame
        A row per table, model and split: scores, ``band``, ``cached``
        (the scores), ``tau_refit`` (a fit for tau alone), ``norms`` (the
        per-row gradient norms of tau, or None), ``error`` for failed fits
        (their scores NaN) and ``tau_error`` for failed tau.
    """
    rows, jobs = [], []
    for table in tables:
        X, y = task.registry.load_table(table, data_dir)
        for split, (train, test) in enumerate(make_splits(y, repeats)):
            for spec in specs:
                key = {"table": table.name, "model": spec.name, "split": split}
                key["band"] = size_band(table.n_rows)
                cached = read_cache(task, cache_dir, table, spec, split, fraction)
                tau = None
                if has_tau(task, spec):
                    tau = read_tau_cache(task, cache_dir, table, spec, split, fraction)
                parts = ("scores",) if cached is None else ()
                parts += ("tau",) if has_tau(task, spec) and tau is None else ()
                if not parts:
                    rows.append({**key, **cached, **(tau or {}), "cached": True})
                else:
                    args = (spec, X, y, train, test, fraction, split)
                    jobs.append((key, table, spec, args, parts, cached, tau))
    # The largest tables first, so that no long fit is left for the end alone.
    jobs.sort(key=lambda job: -job[1].n_rows)
    calls = [(task, job[3], job[4]) for job in jobs]
    for i, scores in parallel(_fit_task, calls, n_jobs, progress):
        key, table, spec, _, parts, cached, tau = jobs[i]
        for name in ("error", "tau_error"):
            if name in scores:
                print(f"{name} {key}: {scores[name]}", file=sys.stderr)
        place = (task, cache_dir, table, spec, key["split"], fraction)
        if "scores" in parts and "error" not in scores:
            write_cache(*place, scores)
        if "tau" in parts:
            write_tau_cache(*place, scores)
        refit = "scores" not in parts
        # A cached tau (not refitted) replaces the NaN placeholder of the fit.
        row = {**key, **(cached or {}), **scores, **(tau or {}), "cached": refit}
        rows.append({**row, "tau_refit": refit})
    results = pd.DataFrame(rows)
    if results.empty:
        return results
    for name in task.score_columns:  # old cache files may lack a diagnostic
        if name not in results:
            results[name] = np.nan
    if "tau" in task.diagnostics and "norms" not in results:
        results["norms"] = None
    if "tau_refit" not in results:
        results["tau_refit"] = False
    results["tau_refit"] = results["tau_refit"].fillna(False).astype(bool)
    rank = {t.name: i for i, t in enumerate(tables)}
    model_rank = {s.name: i for i, s in enumerate(specs)}
    order = results.assign(
        _t=results["table"].map(rank), _m=results["model"].map(model_rank)
    ).sort_values(["_t", "_m", "split"])
    return order.drop(columns=["_t", "_m"]).reset_index(drop=True)


# -- summaries, bands and paired differences ------------------------------------


def per_table(task, results):
    """Mean scores per table and model; medians of fit time and diagnostics.

    Returns a DataFrame indexed by ``(table, model)``: the metrics,
    ``fit_time``, the diagnostics, ``n_splits``, ``band`` and, where the
    results have tau's norms, ``pooled_tau`` (:func:`pooled_tau` over the
    splits).
    """
    grouped = results.groupby(["table", "model"], sort=False)
    primary = task.primary.name
    means = {m.name: grouped[m.name].mean() for m in task.metrics}
    # Rounded so that equal scores over different splits tie.
    means[primary] = means[primary].round(12)
    for name in ("fit_time", *task.diagnostics):
        means[name] = grouped[name].median()
    means["n_splits"] = grouped[primary].count()
    means["band"] = grouped["band"].first()
    if "norms" in results:
        means["pooled_tau"] = grouped["norms"].agg(lambda n: pooled_tau(list(n)))
    return pd.DataFrame(means)


def overall(task, means, models, band=None):
    """Each model's means over the tables, rank and gap to the per-table best.

    Parameters
    ----------
    task : Task
    means : DataFrame
        From :func:`per_table`.
    models : list of str
    band : str or None, default=None
        Only the tables of this size band.

    Returns
    -------
    summary : DataFrame
        By model: each metric (scaled), ``rank``, ``gap`` (first metric
        minus the table's best among ``models``, scaled: <= 0 where higher
        is better), ``fit_time`` (median over the tables) and ``tables``,
        over the tables where every model has a score; empty without any.
    """
    from scipy.stats import rankdata

    primary = task.primary
    if band is not None:
        means = means[means["band"] == band]
    score = means[primary.name].unstack("model").reindex(columns=models).dropna()
    if score.empty:
        return pd.DataFrame()
    values = score.to_numpy()
    ranks = rankdata(-values if primary.higher_is_better else values, axis=1)
    best = score.max(axis=1) if primary.higher_is_better else score.min(axis=1)

    def on_those_tables(name):
        return means[name].unstack("model").reindex(columns=models).loc[score.index]

    summary = {m.name: m.scale * on_those_tables(m.name).mean() for m in task.metrics}
    summary["rank"] = pd.Series(ranks.mean(axis=0), index=models)
    summary["gap"] = primary.scale * score.sub(best, axis=0).mean()
    summary["fit_time"] = on_those_tables("fit_time").median()
    summary["tables"] = pd.Series(len(score), index=models)
    return pd.DataFrame(summary)


def test_train_ratio(results):
    """``n_test / n_train`` of the fits (1.0 for 2-fold splits of full folds)."""
    return float((results["n_test"] / results["n_train"]).mean())


def _split_differences(task, results, model, other, metric=None):
    """Per table, the per-split differences ``model - other`` (scaled)."""
    metric = metric or task.primary
    scores = results.pivot_table(
        index=["table", "split"], columns="model", values=metric.name, dropna=False
    )
    return {
        table: metric.scale * (rows[model] - rows[other]).dropna().to_numpy()
        for table, rows in scores.groupby(level="table", sort=False)
    }


def paired_differences(task, results, model, other, ratio, metric=None):
    """Per table: mean ``metric`` of ``model`` minus ``other``, 95% interval.

    Returns ``{table: (mean, low, high)}`` (scaled; the Nadeau-Bengio
    corrected interval for the test/train ``ratio``; NaN bounds from one
    split or a degenerate variance). ``metric``: the task's first when None.
    """
    from cr_sklearn.study import corrected_interval

    out = {}
    for table, d in _split_differences(task, results, model, other, metric).items():
        if d.size >= 2:
            out[table] = corrected_interval(d, ratio, confidence=0.95)
        elif d.size == 1:
            out[table] = (float(d[0]), np.nan, np.nan)
    return out


def band_differences(task, results, model, other, ratio, metric=None):
    """Per band: the paired difference ``model - other`` and its noise.

    The band's difference is the mean over its tables of each table's mean
    paired difference; its variance is the sum over the tables (independent
    data) of each table's Nadeau-Bengio corrected variance of the mean,
    ``(1 / J + n_test / n_train) s^2 / T^2`` for ``J`` splits and ``T``
    tables, and its interval the normal 95% one. Signs count the tables
    where ``model`` is better, equal and worse (in the metric's direction).

    Parameters
    ----------
    task : Task
    results : DataFrame
    model, other : str
    ratio : float
        ``n_test / n_train``.
    metric : Metric, default=None
        The score compared; the task's first metric when None.

    Returns
    -------
    bands : dict of str to dict
        For each band with tables, and ``"all"``: ``mean``, ``low``,
        ``high``, ``better``, ``equal``, ``worse`` and ``tables``.
    """
    metric = metric or task.primary
    diffs = _split_differences(task, results, model, other, metric)
    band_of = results.groupby("table")["band"].first()
    sign = 1 if metric.higher_is_better else -1
    out = {}
    for band in (*BANDS, "all"):
        ds = [d for t, d in diffs.items() if d.size and band in ("all", band_of[t])]
        if not ds:
            continue
        means = np.array([d.mean() for d in ds])
        var = (
            sum(
                (1 / d.size + ratio) * d.var(ddof=1) if d.size > 1 else np.nan
                for d in ds
            )
            / len(ds) ** 2
        )
        half = 1.959964 * np.sqrt(var)
        out[band] = {
            "mean": float(means.mean()),
            "low": float(means.mean() - half),
            "high": float(means.mean() + half),
            "better": int((sign * means > 1e-12).sum()),
            "equal": int((np.abs(means) <= 1e-12).sum()),
            "worse": int((sign * means < -1e-12).sum()),
            "tables": len(ds),
        }
    return out


# -- the adoption rule (issue 39) -----------------------------------------------

MAX_FIT_RATIO = 1.5


def adoption(task, results, candidate, reference="CR"):
    """The adoption rule of issue 39 for ``candidate`` against the defaults.

    Adopted when, over the run's tables, (1) the mean gap to the per-table
    best (every model of the run) improves on the defaults' by at least
    ``task.margin`` overall and (2) in the 2,000 to 20,000 band, (3) no band
    is worse beyond its noise (its :func:`band_differences` interval entirely
    on the wrong side of 0) and (4) the median fit time on the tables under
    2,000 rows is at most 1.5 times the defaults'.

    Returns
    -------
    checks : list of (str, str, bool)
        Each condition, the measured value, whether it holds.
    adopted : bool
    """
    means = per_table(task, results)
    models = list(dict.fromkeys(results["model"]))
    unit = "points" if task.primary.scale == 100 else task.primary.label
    checks = []
    for band, label in ((None, "overall"), (BANDS[1], "in the 2,000-20,000 band")):
        summary = overall(task, means, models, band)
        name = f"mean gap {label} improves by >= {task.margin:g} {unit}"
        if summary.empty or not summary["tables"].iloc[0]:
            checks.append((name, "none", False))
            continue
        gain = summary.loc[candidate, "gap"] - summary.loc[reference, "gap"]
        gain = gain if task.primary.higher_is_better else -gain
        measured = f"{gain:+.{task.primary.digits}f}"
        checks.append((name, measured, bool(gain >= task.margin)))
    ratio = test_train_ratio(results)
    sign = 1 if task.primary.higher_is_better else -1
    for band, d in band_differences(task, results, candidate, reference, ratio).items():
        if band == "all":
            continue
        worse = d["high"] < 0 if sign > 0 else d["low"] > 0
        name = f"band {band} not worse beyond its noise"
        checks.append((name, _band_cell(task.primary, d), not worse))
    small = means[means["band"] == BANDS[0]]["fit_time"].unstack("model")
    if small.empty:
        checks.append(("median fit under 2,000 rows <= 1.5x", "no tables", False))
    else:
        fit = small[candidate].median() / small[reference].median()
        checks.append(
            (
                f"median fit under 2,000 rows <= {MAX_FIT_RATIO:g}x the defaults'",
                f"{fit:.2f}x",
                bool(fit <= MAX_FIT_RATIO),
            )
        )
    return checks, all(ok for _, _, ok in checks)


# -- tau across the models and the adoption rule (issue 46) -------------------------

#: The models whose tau a candidate's is compared with (rule 46 (c)).
TAU_REFERENCES = ("MLP", "SVC")
#: The linear model whose gap to CR the nonlinear tables keep (rule 46 (b)).
LINEAR = "LogisticRegression"
#: Rule 46 (a): the least lower bound of the accuracy difference's interval
#: (points) and the greatest upper bound of the log-loss difference's.
RULE46_ACCURACY = -0.3
RULE46_LOG_LOSS = 0.005
#: Rule 46 (c): the least share of tables where tau is below both references',
#: and the greatest median of ``tau / min(references' tau)``.
RULE46_TAU_SHARE = 0.8
RULE46_TAU_RATIO = 0.9


def tau_comparison(means, model, references=TAU_REFERENCES):
    """``model``'s pooled tau against the lowest of ``references``'.

    Over the tables where ``model`` and every reference have a pooled tau.

    Parameters
    ----------
    means : DataFrame
        From :func:`per_table`.
    model : str
    references : tuple of str, default=TAU_REFERENCES

    Returns
    -------
    below : int
        Tables where ``model``'s tau is below every reference's.
    tables : int
    ratio : float
        Median over those tables of ``tau / min(references' tau)``; NaN
        without tables.
    """
    if "pooled_tau" not in means:
        return 0, 0, float("nan")
    tau = means["pooled_tau"].unstack("model")
    names = [model, *references]
    if any(name not in tau for name in names):
        return 0, 0, float("nan")
    tau = tau[names].dropna()
    if tau.empty:
        return 0, 0, float("nan")
    lowest = tau[list(references)].min(axis=1)
    below = int((tau[model] < lowest).sum())
    return below, len(tau), float(np.median(tau[model] / lowest))


def tau_section(means, models, cr_models=()):
    """Every model's pooled tau per table, then a summary line per model."""
    if "pooled_tau" not in means or means["pooled_tau"].isna().all():
        return []
    tau = means["pooled_tau"].unstack("model").reindex(columns=models)
    band = means["band"].groupby(level="table").first()
    tables = list(dict.fromkeys(means.index.get_level_values("table")))
    rows = [[t, band[t], *(fmt(tau.loc[t, m], 2) for m in models)] for t in tables]
    lines = [
        "",
        "## Tau per table",
        "",
        "Tau pooled over the splits: `gradient_norms` of each model on the same",
        f"rows of each test fold (at most {TAU_ROWS:,}, drawn with the split's index),",
        "each split's norms over their own mean, then p99 / mean",
        "(`gradient_tail_ratio` of the splits' norms); '-' where a model's tau",
        "is not measured (the trees; the ordinal suite's baselines) or failed.",
        "",
        *markdown_table(["table", "band", *models], rows),
    ]
    compared = all(r in models for r in TAU_REFERENCES)
    summary = []
    for m in models:
        if tau[m].isna().all():
            continue
        below = ratio = "-"
        if compared and m not in TAU_REFERENCES:
            k, n, r = tau_comparison(means, m)
            below, ratio = f"{k} of {n}", fmt(r, 2)
        summary.append([m, fmt(tau[m].median(), 2), below, ratio])
    if not compared:
        lines += ["", "Per model: the median over the tables of its pooled tau.", ""]
        summary = [row[:2] for row in summary]
        return lines + markdown_table(["model", "median pooled tau"], summary)
    references = " and ".join(f"{r}'s" for r in TAU_REFERENCES)
    lines += [
        "",
        "Per model: the median over the tables of its pooled tau, the tables",
        f"where it is below both {references} (of those where the three",
        "have tau) and the median over them of tau / min(tau of "
        f"{', '.join(TAU_REFERENCES)}).",
        "",
        *markdown_table(
            [
                "model",
                "median pooled tau",
                f"below {' and '.join(TAU_REFERENCES)}",
                f"median tau / min({', '.join(TAU_REFERENCES)})",
            ],
            summary,
        ),
    ]
    return lines


def rule46(task, results, candidate, reference="CR", nonlinear=()):
    """The adoption rule of issue 46 for ``candidate`` against ``reference``.

    Over the run's tables, paired over the same splits: (a) the corrected
    95% interval of the accuracy difference (:func:`band_differences`, all
    tables) lies above :data:`RULE46_ACCURACY` points and that of log-loss
    below :data:`RULE46_LOG_LOSS`, and no size band is worse beyond its
    interval in either; (b) on the ``nonlinear`` tables the accuracy
    difference ``candidate - reference`` (the change of the lead over
    :data:`LINEAR`) is not below 0 beyond its interval; (c) the pooled tau
    is below both :data:`TAU_REFERENCES`' on at least
    :data:`RULE46_TAU_SHARE` of the tables and the median of ``tau /
    min(theirs)`` is at most :data:`RULE46_TAU_RATIO`; (d) the ratio of the
    medians over the tables under 2,000 rows of each table's median fit time
    is at most :data:`MAX_FIT_RATIO`.

    Parameters
    ----------
    task : Task
        Its metrics include ``accuracy`` (in points) and ``log_loss``.
    results : DataFrame
        From :func:`run_suite` (``norms`` for (c)).
    candidate, reference : str
    nonlinear : collection of str, default=()
        The tables tagged nonlinear.

    Returns
    -------
    checks : list of (str, str, str, bool)
        Criterion letter, condition, the measured numbers, whether it holds.
    passed : bool
    """
    metrics = {m.name: m for m in task.metrics}
    acc, loss = metrics["accuracy"], metrics["log_loss"]
    ratio = test_train_ratio(results[results["model"].isin([candidate, reference])])
    bands = {
        m.name: band_differences(task, results, candidate, reference, ratio, m)
        for m in (acc, loss)
    }
    checks = []
    for m, bound in ((acc, RULE46_ACCURACY), (loss, RULE46_LOG_LOSS)):
        d = bands[m.name].get("all")
        above = m.higher_is_better
        side = "above" if above else "below"
        unit = " points" if m.scale == 100 else ""
        name = f"{m.label} difference's interval {side} {bound:+g}{unit}, all tables"
        if d is None:
            checks.append(("a", name, "no paired splits", False))
            continue
        ok = d["low"] > bound if above else d["high"] < bound
        checks.append(("a", name, _band_cell(m, d), bool(ok)))
    for band in BANDS:
        for m in (acc, loss):
            d = bands[m.name].get(band)
            if d is None:
                continue
            worse = d["high"] < 0 if m.higher_is_better else d["low"] > 0
            name = f"band {band}: {m.label} not worse beyond its interval"
            checks.append(("a", name, _band_cell(m, d), not worse))
    chosen = results[results["table"].isin(set(nonlinear))]
    d = band_differences(task, chosen, candidate, reference, ratio, acc).get("all")
    name = (
        f"nonlinear tables: {acc.label} lead over {LINEAR} kept "
        f"({candidate} - {reference} not below 0 beyond its interval)"
    )
    if d is None:
        checks.append(("b", name, "no nonlinear table in the run", False))
    else:
        measured = f"{_band_cell(acc, d)} on {_tables(d['tables'])}"
        if LINEAR in set(chosen["model"]):
            leads = [
                band_differences(task, chosen, m, LINEAR, ratio, acc)["all"]["mean"]
                for m in (candidate, reference)
            ]
            measured += (
                f"; mean lead over {LINEAR}: {candidate} {leads[0]:+.2f}, "
                f"{reference} {leads[1]:+.2f}"
            )
        checks.append(("b", name, measured, not d["high"] < 0))
    means = per_table(task, results)
    k, n, r = tau_comparison(means, candidate)
    k0, n0, r0 = tau_comparison(means, reference)
    refs = " and ".join(TAU_REFERENCES)
    theirs = " and ".join(f"{r}'s" for r in TAU_REFERENCES)
    share = f"pooled tau below {theirs} on >= {RULE46_TAU_SHARE:.0%} of the tables"
    middle = f"median tau / min(tau of {refs}) <= {RULE46_TAU_RATIO:g}"
    if n == 0:
        missing = f"no table with the pooled tau of {candidate}, {refs}"
        checks += [("c", share, missing, False), ("c", middle, missing, False)]
    else:
        measured = f"{k} of {n} ({k / n:.0%}); {reference}: {k0} of {n0}"
        checks.append(("c", share, measured, k / n >= RULE46_TAU_SHARE))
        measured = f"{r:.2f}; {reference}: {fmt(r0, 2)}"
        checks.append(("c", middle, measured, bool(r <= RULE46_TAU_RATIO)))
    small = means[means["band"] == BANDS[0]]["fit_time"].unstack("model")
    name = f"median fit under 2,000 rows <= {MAX_FIT_RATIO:g}x {reference}'s"
    both = small.reindex(columns=[candidate, reference]).dropna()
    if both.empty:
        checks.append(("d", name, "no tables under 2,000 rows", False))
    else:
        fit = both[candidate].median() / both[reference].median()
        measured = (
            f"{fit:.2f}x on {_tables(len(both))} (ratio of the medians over the "
            "tables of each table's median fit; timed in this run)"
        )
        checks.append(("d", name, measured, bool(fit <= MAX_FIT_RATIO)))
    return checks, all(ok for *_, ok in checks)


def _tables(n):
    return f"{n} table" + ("" if n == 1 else "s")


def rule46_section(task, results, candidates, reference="CR", nonlinear=()):
    """The report's section on the adoption rule of issue 46, per candidate."""
    if not candidates:
        return []
    refs = " and ".join(f"{r}'s" for r in TAU_REFERENCES)
    text = (
        f"Each candidate against {reference} (the defaults), paired over the same "
        "splits: (a) the 95% interval of the accuracy difference (normal, from "
        "the tables' Nadeau-Bengio corrected variances, n_test / n_train of the "
        f"two models' fits) lies above {RULE46_ACCURACY:+g} points and that of "
        f"log-loss below {RULE46_LOG_LOSS:+g}, and no size band is worse beyond "
        "its interval; (b) on the tables tagged nonlinear, the accuracy "
        f"difference (candidate - {reference}: the change of the lead over "
        f"{LINEAR}) is not below 0 beyond its interval; (c) the pooled tau is "
        f"below both {refs} on >= {RULE46_TAU_SHARE:.0%} of the tables where "
        "the three have tau, and the median of tau / min(theirs) is <= "
        f"{RULE46_TAU_RATIO:g}; (d) the median fit under 2,000 rows is <= "
        f"{MAX_FIT_RATIO:g}x {reference}'s, timed in this run (the default Pima "
        "fit, median of 5 alternating runs, is timed apart)."
    )
    wrapped = textwrap.wrap(text, 78, break_on_hyphens=False)
    lines = ["", "## Adoption rule (issue 46)", "", *wrapped]
    for name in candidates:
        checks, passed = rule46(task, results, name, reference, nonlinear)
        rows = [
            [f"({c}) {condition}", measured, "PASS" if ok else "FAIL"]
            for c, condition, measured, ok in checks
        ]
        failed = ", ".join(dict.fromkeys(f"({c})" for c, *_, ok in checks if not ok))
        verdict = "**PASS**" if passed else f"**FAIL** on {failed}"
        lines += ["", f"### {name}", ""]
        lines += markdown_table(["criterion", "measured", "result"], rows)
        lines += ["", f"Verdict, {name}: {verdict} (rule 46 on this run's tables)."]
    return lines


# -- the report -----------------------------------------------------------------


def score_table(means, column, models, digits, scale=1.0, best=None):
    """One score per table (rows, band) and model, best in bold if asked."""
    values = means[column].unstack("model")
    tables = list(dict.fromkeys(means.index.get_level_values("table")))
    rows = []
    for t in tables:
        cells = [fmt(values.loc[t, m], digits, scale) for m in models]
        if best is not None:
            top = getattr(values.loc[t, models], best)()
            cells = [
                f"**{c}**" if values.loc[t, m] == top else c
                for c, m in zip(cells, models, strict=True)
            ]
        band = means.loc[(t, models[0]), "band"]
        rows.append([t, band, int(means.loc[(t, models[0]), "n_splits"]), *cells])
    return markdown_table(["table", "band", "splits", *models], rows)


def _interval(value, digits):
    """``mean [low, high]``, bold where the interval excludes 0 (with a width)."""
    mean, low, high = value
    if not np.isfinite(low):
        return f"{mean:+.{digits}f}"
    cell = f"{mean:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"
    return f"**{cell}**" if high > low and (low > 0 or high < 0) else cell


def _summary_rows(task, summary):
    return [
        [
            name,
            *(fmt(r[m.name], m.digits) for m in task.metrics),
            fmt(r["rank"]),
            fmt(r["gap"], task.primary.digits),
            fmt(r["fit_time"]),
            int(r["tables"]),
        ]
        for name, r in summary.iterrows()
    ]


def suite_report(task, results, specs, skipped, head):
    """The markdown report of a suite run.

    Summaries overall and per size band, per-table scores, each CR model's
    paired differences against every other model and, for candidates, the
    paired differences against ``CR`` by band and the adoption rule's
    verdict, last.
    """
    lines = list(head)
    if skipped:
        lines += ["", "Skipped tables:", ""]
        lines += [f"- {name}: {why}" for name, why in skipped.items()]
    if results.empty:
        return "\n".join([*lines, "", "No results."]) + "\n"
    fits = results[results["model"] != BEFORE]  # --against rows are not fits
    cached = int(fits["cached"].sum())
    line = f"Fits: {len(fits)}, of which {cached} from the cache"
    refits = int(fits["tau_refit"].sum()) if "tau_refit" in fits else 0
    if refits:
        line += f" ({refits} of them refitted for tau alone)"
    lines += ["", line + "."]
    if "error" in results:
        failed = results.dropna(subset=["error"])
        lines += ["", f"Failed fits ({len(failed)}; their scores are left out):", ""]
        lines += [
            f"- {r.table}, {r.model}, split {r.split}: {r.error}"
            for r in failed.itertuples()
        ]
    if "tau_error" in results:
        failed = results.dropna(subset=["tau_error"])
        lines += ["", f"Failed tau ({len(failed)}; left out of the pooled tau):", ""]
        lines += [
            f"- {r.table}, {r.model}, split {r.split}: {r.tau_error}"
            for r in failed.itertuples()
        ]
    models = [s.name for s in specs if s.name in set(results["model"])]
    cr_models = [s.name for s in specs if s.is_cr and s.name in models]
    means = per_table(task, results)
    units = (
        "accuracy and gap in points"
        if task.primary.name == "accuracy"
        else f"accuracy in points, {task.primary.label} and its gap as they are"
    )
    cols = ["model", *(f"mean {m.label}" for m in task.metrics), "mean rank"]
    cols += ["mean gap to best", "median fit (s)", "tables"]
    lines += [
        "",
        "## Summary",
        "",
        "Means over the tables of each model's mean over the splits "
        f"({units}); rank 1 is the table's best model of this run; the gap is",
        "the first metric minus the table's best; '-' where a model has no",
        "such score.",
    ]
    for band in (None, *BANDS):
        summary = overall(task, means, models, band)
        if summary.empty or not summary["tables"].iloc[0]:
            continue
        lines += ["", f"### {'All tables' if band is None else band + ' rows'}", ""]
        lines += markdown_table(cols, _summary_rows(task, summary))
    primary = task.primary
    lines += ["", "## Per table", "", f"Mean {primary.label} over the splits:", ""]
    best = "max" if primary.higher_is_better else "min"
    lines += score_table(
        means, primary.name, models, 1 + primary.digits // 2, primary.scale, best=best
    )
    for m in task.metrics[1:]:
        lines += ["", f"Mean {m.label}:", ""]
        lines += score_table(means, m.name, models, 3, m.scale)
    lines += ["", "Median fit time (s):", ""]
    lines += score_table(means, "fit_time", models, 2)
    if task.per_table is not None:
        lines += task.per_table(means, models, cr_models)
    ratio = test_train_ratio(results)
    digits = 1 if primary.scale == 100 else 3
    for cr in cr_models:
        others = [m for m in models if m != cr]
        if not others:
            continue
        diffs = {o: paired_differences(task, results, cr, o, ratio) for o in others}
        lines += [
            "",
            f"## {cr} minus each model, per table",
            "",
            f"Mean paired {primary.label} difference over the splits with its",
            "Nadeau-Bengio corrected 95% interval (Student t, n_test / n_train",
            f"= {ratio:.2f}); in bold where it excludes 0.",
            "",
        ]
        rows = [
            [
                t,
                *(
                    _interval(diffs[o][t], digits) if t in diffs[o] else "-"
                    for o in others
                ),
            ]
            for t in dict.fromkeys(results["table"])
        ]
        lines += markdown_table(["table", *others], rows)
    if "CR" in cr_models:
        candidates = [c for c in cr_models if c != "CR"]
        lines += candidates_section(task, results, candidates)
        if task.candidate_rules is not None and candidates:
            lines += task.candidate_rules(task, results, candidates)
    return "\n".join(lines) + "\n"


#: The model name of the CR rows read from ``--against`` records.
BEFORE = "CR (before)"


def read_against(path, results):
    """The CR rows of earlier ``--records`` on this run's tables, as :data:`BEFORE`."""
    # round_trip: the records compare exactly (pandas < 2 parses floats inexactly)
    before = pd.read_csv(path, float_precision="round_trip")
    before = before[(before["model"] == "CR") & before["table"].isin(results["table"])]
    if before.empty:
        raise SystemExit(f"{path}: no CR rows on this run's tables")
    return before.assign(model=BEFORE, cached=True)


def against_section(task, results, path):
    """CR against the CR of earlier records: paired, by band and per table.

    For a code change at fixed defaults: the same splits and seeds, so a
    difference is the change's alone; ``identical``: every split of the
    table has the same first metric.
    """
    ratio = test_train_ratio(results[results["model"] == "CR"])
    lines = [
        "",
        f"## CR against earlier records ({Path(path).name})",
        "",
        f"Paired differences CR - {BEFORE} over the same splits and seeds: by",
        "band (mean over the tables, normal 95% interval from the tables'",
        "Nadeau-Bengio corrected variances; tables better / equal / worse),",
        "then per table with each table's corrected 95% interval.",
        "",
    ]
    rows = []
    for metric in task.metrics:
        for band, d in band_differences(
            task, results, "CR", BEFORE, ratio, metric
        ).items():
            signs = f"{d['better']} / {d['equal']} / {d['worse']}"
            rows.append([metric.label, band, d["tables"], _band_cell(metric, d), signs])
    lines += markdown_table(["metric", "band", "tables", "difference", "signs"], rows)
    per_metric = [
        paired_differences(task, results, "CR", BEFORE, ratio, m) for m in task.metrics
    ]
    split_diffs = _split_differences(task, results, "CR", BEFORE)
    band_of = results.groupby("table")["band"].first()
    rows = [
        [
            t,
            band_of[t],
            *(
                _interval(d[t], 1 if m.scale == 100 else 3) if t in d else "-"
                for m, d in zip(task.metrics, per_metric, strict=True)
            ),
            "yes" if not np.any(split_diffs.get(t, [np.nan])) else "no",
        ]
        for t in dict.fromkeys(results["table"])
        if t in split_diffs and split_diffs[t].size
    ]
    lines += [
        "",
        *markdown_table(
            ["table", "band", *(m.label for m in task.metrics), "identical"], rows
        ),
    ]
    return lines


def _band_cell(metric, d):
    """``mean [low, high]`` of a band's difference (2 decimals for points)."""
    k = 2 if metric.scale == 100 else 3
    return f"{d['mean']:+.{k}f} [{d['low']:+.{k}f}, {d['high']:+.{k}f}]"


def candidates_section(task, results, candidates, reference="CR"):
    """Paired differences by band against the defaults, then the rule's verdict."""
    if not candidates:
        return []
    ratio = test_train_ratio(results)
    lines = [
        "",
        "## Candidates against the defaults, by size band",
        "",
        f"Mean over the band's tables of the paired {task.primary.label}",
        f"difference (candidate - {reference}), with a normal 95% interval from",
        "the tables' Nadeau-Bengio corrected variances; the tables where the",
        "candidate is better / equal / worse.",
        "",
    ]
    rows = []
    for name in candidates:
        for band, d in band_differences(task, results, name, reference, ratio).items():
            signs = f"{d['better']} / {d['equal']} / {d['worse']}"
            rows.append([name, band, d["tables"], _band_cell(task.primary, d), signs])
    lines += markdown_table(
        ["candidate", "band", "tables", "difference", "signs"], rows
    )
    lines += ["", "## Adoption rule (issue 39)", ""]
    for name in candidates:
        checks, adopted = adoption(task, results, name, reference)
        lines += [f"{name}: **{'adopted' if adopted else 'not adopted'}**", ""]
        lines += markdown_table(
            ["condition", "measured", "holds"],
            [[c, v, "yes" if ok else "no"] for c, v, ok in checks],
        )
        lines.append("")
    return lines


# -- the suite command ----------------------------------------------------------


def add_suite_arguments(parser, task):
    """The options of a suite configuration (see ``suites.py``)."""
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
    parser.add_argument("--tables", type=comma_names, default=None, help="a,b,c")
    parser.add_argument("--models", type=comma_names, default=list(task.models))
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
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=CACHE / task.name)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--records", type=Path, default=None, help="write every fit's scores (CSV)"
    )
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        help="earlier --records: CR against their CR, paired (a code change)",
    )


def comma_names(text):
    """The names of a comma-separated option, stripped, empty ones dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


def suite_output(task, args):
    """``<name>_<split>[_fraction<f>][_repeats<r>].md``, or the listing's name."""
    if args.list:
        return f"{task.name}_tables.md"
    name = f"{task.name}_{args.split or 'tune'}"
    fraction = getattr(args, "fraction", 1.0)
    if fraction < 1:
        name += f"_fraction{fraction:g}"
    if args.repeats != DEFAULT_REPEATS:
        name += f"_repeats{args.repeats}"
    return f"{name}.md"


def suite_command(task, args):
    """Run a suite (or list its tables): the report, None for a plain ``--list``."""
    fraction = getattr(args, "fraction", 1.0)
    if not 0 < fraction <= 1 or args.repeats < 1:
        raise SystemExit("--fraction must be in (0, 1] and --repeats at least 1")
    split = args.split or ("all" if args.list else "tune")
    if args.list:
        return list_tables(task, args.tables, split, args.markdown, args.data_dir)
    specs = skip_unavailable_models(
        task, model_specs(task, args.models, args.candidate)
    )
    tables, skipped = select_tables(task, args.tables, split, args.data_dir, fraction)
    for name, reason in skipped.items():
        print(f"skip {name}: {reason}")
    results = run_suite(
        task,
        tables,
        specs,
        args.repeats,
        fraction=fraction,
        data_dir=args.data_dir,
        n_jobs=args.n_jobs,
        cache_dir=None if args.no_cache else args.cache_dir,
        progress=not args.no_progress,
    )
    if args.records is not None:  # per-split tau kept, its norms not
        results.drop(columns="norms", errors="ignore").to_csv(args.records, index=False)
    if args.against is not None and not results.empty:
        results = pd.concat([results, read_against(args.against, results)])
        specs = [*specs, ModelSpec(BEFORE, "records")]
    splits = f"Splits: RepeatedStratifiedKFold(n_splits={N_SPLITS}, n_repeats="
    splits += f"{args.repeats}, random_state={CV_SEED})"
    if fraction < 1:
        splits += f"; training fraction {fraction:g} (tables >= 1,000 rows)"
    splits += ". One thread per fit; fit times are wall-clock on a shared machine,"
    splits += f" after an untimed fit of each model on {WARM_UP_ROWS} rows per worker."
    notes = [splits]
    for name, cap in task.max_train_rows.items():
        if name not in {spec.name for spec in specs}:
            continue
        notes.append(
            f"{name} trains on at most {cap:,} rows of each training "
            "fold (a stratified subsample seeded by the split)."
        )
    with_tau = [s.name for s in specs if has_tau(task, s)]
    if with_tau:
        notes.append(
            f"Tau of {', '.join(with_tau)}: `gradient_tail_ratio(gradient_norms("
            f"model, Z))` on the same at most {TAU_ROWS:,} rows of each test fold "
            "for every model (drawn with the split's index), per table pooled "
            "over the splits; not in the fit time. Baselines' tau is cached "
            f"apart from their scores; rule: {TAU_RULE}."
        )
    for spec in specs:
        if spec.is_cr:
            network, _ = cr_network(task.build_model(spec, 0))
            params = {**network.get_params(), "random_state": "the split's index"}
            changed = dict(spec.params) or "the defaults"
            notes.append(f"{spec.name}: {task.estimator} with {changed}; all: {params}")
    title = task.title + (": CR against earlier records" if args.against else "")
    head = header(title, args.argv, task.versions, notes)
    report = suite_report(task, results, specs, skipped, head)
    if args.against is not None and not results.empty:
        report += "\n".join(against_section(task, results, args.against)) + "\n"
    return report


def list_tables(task, names, split, markdown, data_dir):
    """``--list``: a line per table (None returned), or the markdown listing."""
    tables = task.registry.get_tables(names, split)
    if not markdown:
        for t in tables:
            print(f"{t.name} {t.n_rows} {t.n_columns} {t.n_classes} {t.split}")
            reason = task.registry.why_unavailable(t, data_dir)
            if reason:
                print(f"unavailable {t.name}: {reason}", file=sys.stderr)
        return None
    extra = task.list_columns or (lambda t: {})
    cols = ["table", "rows", "band", "columns", "classes", "split", "group"]
    cols += [*extra(tables[0]), "target", "origin", "licence"] if tables else []
    rows = [
        [
            t.name,
            t.n_rows,
            size_band(t.n_rows),
            t.n_columns,
            t.n_classes,
            t.split,
            t.group,
            *extra(t).values(),
            t.target,
            t.origin,
            t.licence,
        ]
        for t in tables
    ]
    counts = pd.crosstab(
        pd.Series([size_band(t.n_rows) for t in tables], name="band"),
        pd.Series([t.split for t in tables], name="split"),
    ).reindex(index=list(BANDS), fill_value=0)
    count_rows = [
        [b, *(int(counts.loc[b].get(h, 0)) for h in ("tune", "confirm"))] for b in BANDS
    ]
    lines = [
        f"# {task.title} tables",
        "",
        f"Generated by `python benchmarks/run.py {task.config} --list --markdown`;",
        "the registry (how the tables were chosen and split) is",
        f"`benchmarks/{task.registry.__name__}.py`. Columns are counted after the",
        "suite's one-hot encoding; tables with files under `../shared/data` are",
        "skipped when it is absent. Nothing is redistributed.",
        "",
        *markdown_table(["band", "tune", "confirm"], count_rows),
        "",
        *markdown_table(cols, rows),
    ]
    return "\n".join(lines) + "\n"
