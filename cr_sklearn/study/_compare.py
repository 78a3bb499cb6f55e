"""compare_study: several models on several tables, cached so that it resumes."""

import contextlib
import numbers
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import delayed
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import RepeatedStratifiedKFold, check_cv
from sklearn.pipeline import make_pipeline
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_consistent_length, column_or_1d
from threadpoolctl import ThreadpoolController

from ._comparison import ComparisonResult
from ._datasets import load_study_dataset, tabular_preprocessor
from ._engine import (
    _check_estimators,
    _check_fractions,
    _check_scorers,
    _derived_seed,
    fit_and_score,
    nested_subsamples,
    prepare_estimator,
    resolve_progress,
    run_tasks,
    warn_merged,
)
from ._fit_cache import FitCache, fit_key, table_digest

__all__ = ["compare_study"]


def _direction(scorer):
    """``(factor, greater_is_better)``: ``factor * score`` is in natural units.

    scikit-learn's scorers carry ``_sign`` (-1 for ``neg_log_loss``), ordinal
    scorers ``sign``; :class:`~cr_sklearn.DREGScorer` measures tau, lower
    better, negated with ``negate=True``; other callables: greater is better.
    """
    from cr_sklearn import DREGScorer

    if scorer is None:
        return 1, True
    if isinstance(scorer, DREGScorer):
        return (-1 if scorer.negate else 1), False
    for attr in ("_sign", "sign"):
        sign = getattr(scorer, attr, None)
        if sign in (1, -1):
            return int(sign), sign > 0
    return 1, True


def _natural_name(name, factor):
    """``neg_log_loss`` reported as ``log_loss`` (its values in natural units)."""
    return name[4:] if factor == -1 and name.startswith("neg_") else name


def _labels(y, name):
    """``(y_fit, y_plain)``: an ordered target reaches the estimators as such."""
    dtype = getattr(y, "dtype", None)
    ordered = getattr(dtype, "ordered", False) or type(dtype).__name__ == "Enum"
    y_fit = getattr(y, "array", y)
    y_plain = column_or_1d(y, warn=True)
    kind = type_of_target(y_plain)
    if kind not in ("binary", "multiclass"):
        raise ValueError(
            f"Table {name!r}: compare_study needs class labels (binary or "
            f"multiclass) to stratify; its target is {kind!r}."
        )
    return (y_fit if ordered else y_plain), y_plain


def _check_tables(tables, target, preprocess):
    """``[(name, X, y_fit, y, groups, preprocessor)]`` from tuples and CSV paths."""
    if isinstance(tables, str | os.PathLike | tuple) or not hasattr(tables, "__iter__"):
        raise TypeError(
            "tables must be a list of (name, X, y), (name, X, y, groups) tuples "
            f"or CSV paths, got {type(tables).__name__}."
        )
    out, seen = [], set()
    for item in tables:
        preprocessor = None
        if isinstance(item, str | os.PathLike):
            name = Path(item).stem
            if target is None:
                raise ValueError(
                    f"The CSV table {os.fspath(item)!r} needs target=, its label "
                    "column."
                )
            X, y = load_study_dataset(os.fspath(item), target, as_frame=preprocess)
            if preprocess:
                preprocessor = tabular_preprocessor(X)[0]
            groups = None
        elif isinstance(item, tuple) and len(item) in (3, 4):
            name, X, y, *rest = item
            groups = rest[0] if rest else None
            if not isinstance(name, str) or not name:
                raise TypeError(
                    f"A table's name must be a non-empty string, got {name!r}."
                )
        else:
            raise TypeError(
                "Each table must be a (name, X, y) or (name, X, y, groups) tuple or "
                f"a CSV path, got {type(item).__name__}."
            )
        if name in seen:
            raise ValueError(f"Two tables are named {name!r}: names must differ.")
        seen.add(name)
        y_fit, y_plain = _labels(y, name)
        check_consistent_length(X, y_plain)
        if groups is not None:
            groups = column_or_1d(groups)
            check_consistent_length(y_plain, groups)
        out.append((name, X, y_fit, y_plain, groups, preprocessor))
    if not out:
        raise ValueError("tables is empty: give at least one table.")
    return out


class _ThreadLimits:
    """BLAS and OpenMP pools limited per fit, without rescanning every time.

    ``threadpoolctl.threadpool_limits`` lists the loaded native libraries
    on each call, which costs more than a small fit; the controller is kept
    per process and rebuilt only when modules were imported since (a new
    estimator's libraries).
    """

    def __init__(self):
        self.controller, self.n_modules = None, -1

    def __call__(self, n_threads):
        if n_threads is None:
            return contextlib.nullcontext()
        if self.controller is None or len(sys.modules) != self.n_modules:
            self.controller = ThreadpoolController()
            self.n_modules = len(sys.modules)
        return self.controller.limit(limits=n_threads)


_thread_limits = _ThreadLimits()


def _fit_task(estimator, X, y, train, test, scorers, factors, n_threads, error_score):
    """One fit: ``(scores in natural units, fit_time, score_time, error, warnings)``."""
    start = time.perf_counter()
    try:
        with _thread_limits(n_threads):
            scores, fit_time, score_time, raised = fit_and_score(
                estimator, X, y, train, test, scorers
            )
    except Exception as exc:
        if isinstance(error_score, str):  # "raise"
            raise
        message = f"{type(exc).__name__}: {exc}"
        elapsed = time.perf_counter() - start
        return dict.fromkeys(scorers, float(error_score)), elapsed, np.nan, message, []
    natural = {n: factors[n] * v for n, v in scores.items()}
    return natural, fit_time, score_time, "", raised


def compare_study(
    estimators,
    tables,
    *,
    target=None,
    cv=None,
    fractions=None,
    scoring="accuracy",
    cache=None,
    error_score=np.nan,
    preprocess=True,
    n_jobs=None,
    random_state=0,
    n_threads=1,
    verbose=0,
    progress="auto",
):
    """Cross-validated scores of several models on several tables, resumable.

    Every model is fitted on every table, training fraction and split; with
    ``cache`` each finished fit is stored on disk as it completes, and a
    second call with the same arguments fits only what is missing. The
    result's statistics compare the models over the tables (mean rank,
    Friedman, Nemenyi, Holm, Bayesian tests); see :ref:`comparing`.

    Parameters
    ----------
    estimators : dict of str to estimator
        The classifiers (ordinal ones included) to compare, by name; cloned per
        fit.
    tables : list of tuple or path
        Each a ``(name, X, y)`` or ``(name, X, y, groups)`` tuple, or the path
        of a CSV file with the column ``target`` (named by its file name). An
        ordered pandas Categorical ``y`` reaches the estimators as such.
    target : str, default=None
        The label column of the CSV tables.
    cv : int, cross-validation generator or None, default=None
        Any scikit-learn splitter, called per table with the table's
        ``groups``; ``None``: ``RepeatedStratifiedKFold(n_splits=5,
        n_repeats=5)``; an int ``k``: ``StratifiedKFold(k)``. Its splits must be
        reproducible (a seeded shuffle) for the cache to find them again.
    fractions : sequence of float in (0, 1], default=None
        Fractions of each training fold to fit on, stratified and nested as in
        :func:`data_fraction_study`; ``None``: the whole fold.
    scoring : str, callable, list of str or dict, default="accuracy"
        Any scikit-learn scoring (``None``: the estimator's ``score``). Values
        are recorded in natural units (``neg_log_loss`` as ``log_loss``) with
        the direction each is ranked in.
    cache : str or path, default=None
        A folder for the finished fits (one small file each, keyed by the
        table's content, the estimator's parameters, the split's rows, the
        fraction and the scorers); ``None``: nothing is stored.
    error_score : "raise" or float, default=np.nan
        The score of a fit that raises, recorded with the error text (a
        :class:`~sklearn.exceptions.FitFailedWarning` counts them); ``"raise"``
        raises the error.
    preprocess : bool, default=True
        Fit :func:`tabular_preprocessor` inside each training fold of a CSV
        table (text columns one-hot encoded, missing numbers imputed), as
        ``cr-sklearn study`` does. Tuples are used as given.
    n_jobs : int, default=None
        Parallel fits on joblib's current backend (Dask included); the cache
        is written by this process as the results arrive.
    random_state : int, default=0
        Seeds the default splitter, the subsamples and every estimator
        parameter ``random_state`` left at ``None``.
    n_threads : int or None, default=1
        Given to estimator parameters named ``n_threads``, and the limit of the
        BLAS and OpenMP pools in each fit; ``None`` leaves both.
    verbose : int, default=0
        Verbosity of joblib.
    progress : bool, "auto" or "lines", default="auto"
        As in :func:`data_fraction_study`; fits found in the cache are not
        counted.

    Returns
    -------
    result : ComparisonResult
        One record per (table, model, fraction, split, metric).

    See Also
    --------
    ComparisonResult : The statistics over the tables.
    data_fraction_study : One table, with learning curves.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.dummy import DummyClassifier
    >>> from sklearn.linear_model import LogisticRegression
    >>> from cr_sklearn.study import compare_study
    >>> tables = [(f"t{i}", *make_classification(100, random_state=i))
    ...           for i in range(3)]
    >>> models = {"logreg": LogisticRegression(), "dummy": DummyClassifier()}
    >>> result = compare_study(models, tables, cv=3, progress=False)
    >>> result.summary()["mean_rank"].round(2).tolist()
    [1.0, 2.0]
    """
    estimators = _check_estimators(estimators)
    show_progress = resolve_progress(progress, "compare_study")
    fractions = [1.0] if fractions is None else _check_fractions(fractions)
    scorers = _check_scorers(scoring)
    directions = {n: _direction(s) for n, s in scorers.items()}
    factors = {n: f for n, (f, _) in directions.items()}
    names = {n: _natural_name(n, f) for n, f in factors.items()}
    if len(set(names.values())) < len(names):
        names = {n: n for n in names}  # "log_loss" and "neg_log_loss" both asked
    if not (
        (isinstance(error_score, str) and error_score == "raise")
        or isinstance(error_score, numbers.Real)
    ):
        raise ValueError(
            f"error_score must be 'raise' or a number, got {error_score!r}."
        )
    if n_threads is not None and (
        not isinstance(n_threads, numbers.Integral) or n_threads < 1
    ):
        raise ValueError(
            f"n_threads must be a positive int or None, got {n_threads!r}."
        )
    tables = _check_tables(tables, target, preprocess)
    store = None if cache is None else FitCache(cache)
    if isinstance(random_state, numbers.Integral):
        base_seed = int(random_state)
    else:
        base_seed = int(check_random_state(random_state).randint(2**31 - 1))

    records, pending, info = [], [], []
    for name, X, y_fit, y, groups, preprocessor in tables:
        splitter = (
            RepeatedStratifiedKFold(n_splits=5, n_repeats=5, random_state=base_seed)
            if cv is None
            else check_cv(cv, y, classifier=True)
        )
        try:
            splits = list(splitter.split(np.zeros((len(y), 1)), y, groups))
        except ValueError as exc:
            raise ValueError(
                f"Table {name!r}: {splitter!r} cannot split it: {exc}"
            ) from None
        n_repeats = int(getattr(splitter, "n_repeats", 1) or 1)
        per_repeat = max(1, len(splits) // n_repeats)
        digest = table_digest(X, y, groups) if store is not None else name
        info.append(
            {
                "table": name,
                "n_samples": len(y),
                "n_features": int(np.shape(X)[1]) if np.ndim(X) == 2 else 1,
                "n_classes": len(np.unique(y)),
            }
        )
        models = estimators
        if preprocessor is not None:
            models = {
                m: make_pipeline(clone(preprocessor), e) for m, e in estimators.items()
            }
        for s, (train, test) in enumerate(splits):
            rng = np.random.default_rng([base_seed, s, 0])
            subsamples = nested_subsamples(y[train], fractions, rng)
            seed = _derived_seed(base_seed, s, 1)
            for fraction in fractions:
                sub = train[subsamples[fraction]]
                for model, est in models.items():
                    est = prepare_estimator(est, seed, n_threads)
                    head = {
                        "table": name,
                        "model": model,
                        "fraction": fraction,
                        "split": s,
                        "repeat": s // per_repeat,
                        "fold": s % per_repeat,
                        "n_train": len(sub),
                        "n_test": len(test),
                    }
                    key = None
                    if store is not None:
                        key = fit_key(
                            digest, model, est, s, fraction, sub, test, scorers
                        )
                        hit = store.get(digest, key)
                        if hit is not None:
                            records.append((head, hit))
                            continue
                    task = delayed(_fit_task)(
                        est,
                        X,
                        y_fit,
                        sub,
                        test,
                        scorers,
                        factors,
                        n_threads,
                        error_score,
                    )
                    pending.append((task, head, digest, key))
    n_cached = len(records)

    def stored(index, out):
        if store is None:
            return
        _, head, digest, key = pending[index]
        scores, fit_time, score_time, error, _ = out
        store.put(
            digest,
            key,
            {
                "scores": scores,
                "fit_time": fit_time,
                "score_time": score_time,
                "error": error,
            },
        )

    outputs = run_tasks(
        [task for task, *_ in pending],
        n_jobs=n_jobs,
        verbose=verbose,
        progress=show_progress,
        desc="compare",
        on_result=stored,
    )
    warn_merged([raised for *_, raised in outputs], len(outputs), stacklevel=2)
    for (_, head, _, _), (scores, fit_time, score_time, error, _) in zip(
        pending, outputs, strict=True
    ):
        records.append(
            (
                head,
                {
                    "scores": scores,
                    "fit_time": fit_time,
                    "score_time": score_time,
                    "error": error,
                },
            )
        )
    failed = [fit["error"] for _, fit in records if fit["error"]]
    if failed:
        warnings.warn(
            f"{len(failed)} of {len(records)} fits failed; their scores are "
            f"error_score={error_score!r} and their errors in the 'error' column. "
            f"The first: {failed[0]}",
            FitFailedWarning,
            stacklevel=2,
        )
    rows = [
        {
            **head,
            "metric": names[metric],
            "value": float(fit["scores"][metric]),
            "greater_is_better": directions[metric][1],
            "fit_time": float(fit["fit_time"]),
            "score_time": float(fit["score_time"]),
            "error": fit["error"],
        }
        for head, fit in records
        for metric in scorers
    ]
    # The order of the tables, models, fractions and splits, cached or not.
    order = {n: i for i, (n, *_) in enumerate(tables)}
    model_order = {m: i for i, m in enumerate(estimators)}
    metric_order = {names[m]: i for i, m in enumerate(scorers)}
    rows.sort(
        key=lambda r: (
            order[r["table"]],
            r["fraction"],
            r["split"],
            model_order[r["model"]],
            metric_order[r["metric"]],
        )
    )
    return ComparisonResult(
        rows,
        tables=[t[0] for t in tables],
        models=list(estimators),
        fractions=fractions,
        metrics=[names[m] for m in scorers],
        table_info=info,
        n_cached=n_cached,
    )
