"""data_fraction_study: cross-validated learning curves on nested subsamples."""

import contextlib
import numbers
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring, get_scorer
from sklearn.model_selection import RepeatedStratifiedKFold, check_cv
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_consistent_length, column_or_1d
from threadpoolctl import threadpool_limits

from ._result import StudyResult

__all__ = ["data_fraction_study"]


def _check_estimators(estimators):
    if not isinstance(estimators, dict) or not estimators:
        raise TypeError(
            "estimators must be a non-empty dict of name to estimator, got "
            f"{type(estimators).__name__}."
        )
    for name, est in estimators.items():
        if not isinstance(name, str):
            raise TypeError(f"Estimator names must be strings, got {name!r}.")
        if not hasattr(est, "fit"):
            raise TypeError(f"Estimator {name!r} has no fit method: {est!r}.")
    return estimators


def _check_fractions(fractions):
    try:
        values = np.asarray(fractions, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise TypeError(f"fractions must be numbers, got {fractions!r}.") from exc
    if values.size == 0 or np.any(~np.isfinite(values)):
        raise ValueError(f"fractions must be finite numbers, got {fractions!r}.")
    if np.any((values <= 0) | (values > 1)):
        raise ValueError(f"fractions must lie in (0, 1], got {values.tolist()}.")
    return sorted({float(v) for v in values})


def _check_scorers(scoring):
    """Normalise ``scoring`` to a dict of name to scorer callable."""
    if scoring is None or isinstance(scoring, str):
        name = "score" if scoring is None else scoring
        return {name: None if scoring is None else get_scorer(scoring)}
    if callable(scoring):
        return {getattr(scoring, "__name__", None) or "score": scoring}
    if isinstance(scoring, dict):
        if not scoring:
            raise ValueError("scoring must not be an empty dict.")
        return {
            str(k): get_scorer(v) if isinstance(v, str) else v
            for k, v in scoring.items()
        }
    if isinstance(scoring, (list, tuple)):
        if not scoring or not all(isinstance(s, str) for s in scoring):
            raise ValueError("A list of scorings must be non-empty strings.")
        return {s: get_scorer(s) for s in scoring}
    raise TypeError(
        "scoring must be a string, a callable scorer(estimator, X, y), a list of "
        f"strings or a dict of name to scorer; got {type(scoring).__name__}."
    )


def nested_subsamples(y, fractions, rng):
    """Stratified, nested subsamples of ``range(len(y))``, one per fraction.

    Each class's indices are shuffled once; the subsample for fraction ``f``
    takes the first ``max(1, round(f * n_class))`` of every class, so smaller
    fractions are subsets of larger ones and every class is present.
    """
    orders = [rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)]
    out = {}
    for f in fractions:
        parts = [
            o[: min(len(o), max(1, int(np.floor(f * len(o) + 0.5))))] for o in orders
        ]
        out[f] = np.sort(np.concatenate(parts))
    return out


def _derived_seed(base, *keys):
    """A 31-bit seed from the study seed and task keys (e.g. the split)."""
    state = np.random.SeedSequence([base, *keys]).generate_state(1)[0]
    return int(state) & 0x7FFFFFFF


def prepare_estimator(estimator, seed, n_threads):
    """Clone, fill ``random_state=None`` with ``seed`` and bound ``n_threads``.

    Nested parameters (``step__random_state`` in pipelines) are included.
    """
    est = clone(estimator)
    params = est.get_params(deep=True)
    updates = {}
    for key, value in params.items():
        leaf = key.rsplit("__", 1)[-1]
        if leaf == "random_state" and value is None:
            updates[key] = seed
        elif leaf == "n_threads" and n_threads is not None:
            updates[key] = n_threads
    if updates:
        est.set_params(**updates)
    return est


def fit_and_score(estimator, X, y, train, test, scorers, n_threads=None):
    """Fit on ``train``, score on ``test``: (scores dict, fit_time, score_time).

    With ``n_threads``, BLAS and OpenMP pools are limited to that many threads
    during the task (loky does this for its workers; Dask and the sequential
    backend do not).
    """
    X_train, y_train = _safe_indexing(X, train), y[train]
    X_test, y_test = _safe_indexing(X, test), y[test]
    limits = (
        threadpool_limits(limits=n_threads)
        if n_threads is not None
        else contextlib.nullcontext()
    )
    with limits, warnings.catch_warnings():
        # Small subsamples make iterative baselines stop before converging;
        # that is part of the experiment, not a problem to report per fit.
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        estimator.fit(X_train, y_train)
        fit_time = time.perf_counter() - start
        start = time.perf_counter()
        scores = {}
        for name, scorer in scorers.items():
            if scorer is None:
                scorer = check_scoring(estimator)
            scores[name] = float(scorer(estimator, X_test, y_test))
        score_time = time.perf_counter() - start
    return scores, fit_time, score_time


def run_tasks(tasks, *, n_jobs, verbose, progress, desc):
    """Run ``delayed`` tasks with joblib, in order, with an optional tqdm bar."""
    parallel = Parallel(n_jobs=n_jobs, verbose=verbose, return_as="generator")
    results = parallel(tasks)
    if progress:
        from tqdm.auto import tqdm

        results = tqdm(results, total=len(tasks), desc=desc, unit="fit")
    return list(results)


def data_fraction_study(
    estimators,
    X,
    y,
    *,
    fractions=(0.05, 0.1, 0.25, 0.5, 1.0),
    cv=None,
    scoring="accuracy",
    n_jobs=None,
    random_state=0,
    n_threads=1,
    verbose=0,
    progress=False,
):
    """Cross-validated scores of several classifiers on nested training subsamples.

    For every cross-validation split, the training fold is subsampled,
    stratified by class, to each fraction; the subsamples are nested
    (5% is inside 10%, inside 25%, ...) and every model is fitted on the
    same subsample. The test fold is never subsampled. Each
    (model, fraction, split) is one joblib task.

    Parameters
    ----------
    estimators : dict of str to estimator
        The classifiers to compare, by name. They are cloned per task.
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Class labels.
    fractions : sequence of float in (0, 1], default=(0.05, 0.1, 0.25, 0.5, 1.0)
        Fractions of each training fold to fit on.
    cv : int, cross-validation generator or None, default=None
        ``None``: ``RepeatedStratifiedKFold(n_splits=5, n_repeats=5,
        random_state=random_state)``. An int ``k``: ``StratifiedKFold(k)``.
        Splitters with an ``n_repeats`` attribute give the ``repeat`` and
        ``fold`` columns of the records.
    scoring : str, callable, list of str or dict, default="accuracy"
        Any scikit-learn scoring: a scorer name, a callable
        ``scorer(estimator, X, y) -> float`` (such as
        :class:`cr_sklearn.DREGScorer`), a list of names or a dict of name
        to scorer or name. ``None`` uses each estimator's ``score``.
    n_jobs : int, default=None
        Parallel tasks (joblib; ``-1`` for all cores). The backend is
        joblib's current one: wrap the call in
        ``joblib.parallel_config(backend="dask")`` to run on a Dask cluster.
    random_state : int, default=0
        Seeds the default splitter, the subsamples (from ``(random_state,
        split)``) and every estimator parameter ``random_state`` left at
        ``None`` (the same seed for every model and fraction of a split).
        Results do not depend on ``n_jobs`` or the joblib backend.
    n_threads : int or None, default=1
        Value given to every estimator parameter named ``n_threads`` (also
        nested, such as ``step__n_threads`` in a pipeline): CR estimators then
        fit with that many torch threads. BLAS and OpenMP thread pools are
        limited to the same number during each task (``threadpoolctl``), so
        parallel workers do not oversubscribe the cores whatever the joblib
        backend. ``None`` leaves estimators and thread pools as they are.
    verbose : int, default=0
        Verbosity of joblib.
    progress : bool, default=False
        Show a tqdm progress bar over tasks (needs ``tqdm``).

    Returns
    -------
    result : StudyResult
        Tidy records with one row per (model, fraction, split, metric).

    Notes
    -----
    Fits write nothing to disk. ``ConvergenceWarning`` is silenced inside
    the fits: small subsamples routinely stop iterative solvers early.
    To use a Dask cluster::

        from dask.distributed import Client
        import joblib

        client = Client("tcp://scheduler:8786")
        with joblib.parallel_config(backend="dask"):
            result = data_fraction_study(models, X, y, n_jobs=-1)

    Start the workers with one thread each (``dask worker ADDRESS
    --nthreads 1``) and install cr_sklearn on them.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from cr_sklearn.study import data_fraction_study
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> models = {"logreg": LogisticRegression(max_iter=5000),
    ...           "tree": DecisionTreeClassifier()}
    >>> result = data_fraction_study(models, X, y, fractions=(0.1, 1.0), cv=3)
    >>> result.summary().shape
    (4, 5)
    """
    estimators = _check_estimators(estimators)
    fractions = _check_fractions(fractions)
    scorers = _check_scorers(scoring)
    if n_threads is not None and (
        not isinstance(n_threads, numbers.Integral) or n_threads < 1
    ):
        raise ValueError(
            f"n_threads must be a positive int or None, got {n_threads!r}."
        )
    y = column_or_1d(y, warn=True)
    check_consistent_length(X, y)
    if type_of_target(y) not in ("binary", "multiclass"):
        raise ValueError(
            "data_fraction_study needs class labels (binary or multiclass) to "
            f"stratify; y is {type_of_target(y)!r}."
        )
    if isinstance(random_state, numbers.Integral):
        base_seed = int(random_state)
    else:
        base_seed = int(check_random_state(random_state).randint(2**31 - 1))
    if cv is None:
        cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=5, random_state=base_seed)
    else:
        cv = check_cv(cv, y, classifier=True)
    splits = list(cv.split(np.zeros((len(y), 1)), y))
    n_repeats = int(getattr(cv, "n_repeats", 1) or 1)
    per_repeat = max(1, len(splits) // n_repeats)

    tasks, keys = [], []
    for s, (train, test) in enumerate(splits):
        rng = np.random.default_rng([base_seed, s, 0])
        subsamples = nested_subsamples(y[train], fractions, rng)
        seed = _derived_seed(base_seed, s, 1)
        for fraction in fractions:
            sub = train[subsamples[fraction]]
            for name, est in estimators.items():
                est = prepare_estimator(est, seed, n_threads)
                tasks.append(
                    delayed(fit_and_score)(est, X, y, sub, test, scorers, n_threads)
                )
                keys.append((name, fraction, s, len(sub), len(test)))

    outputs = run_tasks(
        tasks, n_jobs=n_jobs, verbose=verbose, progress=progress, desc="study"
    )
    records = []
    for (name, fraction, s, n_train, n_test), out in zip(keys, outputs, strict=True):
        scores, fit_time, score_time = out
        for metric, value in scores.items():
            records.append(
                {
                    "model": name,
                    "fraction": fraction,
                    "split": s,
                    "repeat": s // per_repeat,
                    "fold": s % per_repeat,
                    "n_train": n_train,
                    "n_test": n_test,
                    "metric": metric,
                    "value": value,
                    "fit_time": fit_time,
                    "score_time": score_time,
                }
            )
    return StudyResult(
        records, models=list(estimators), fractions=fractions, metrics=list(scorers)
    )
