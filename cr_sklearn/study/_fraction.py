"""data_fraction_study: cross-validated learning curves on nested subsamples."""

import numbers

import numpy as np
from joblib import delayed
from sklearn.model_selection import RepeatedStratifiedKFold, check_cv
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_consistent_length, column_or_1d

from ._engine import (
    _check_estimators,
    _check_fractions,
    _check_scorers,
    _derived_seed,
    fit_and_score,
    nested_subsamples,
    prepare_estimator,
    resolve_progress,
    run_records,
)
from ._result import StudyResult

__all__ = ["data_fraction_study"]


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
    progress="auto",
):
    """Cross-validated scores of several classifiers on nested training subsamples.

    Each training fold is subsampled, stratified, to every fraction (nested: 5%
    inside 10%, ...) and every model is fitted on the same subsample and scored
    on the whole test fold; see :ref:`studies`.

    Parameters
    ----------
    estimators : dict of str to estimator
        The classifiers to compare, by name; cloned per task.
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Class labels; an ordered pandas Categorical or a polars Enum reaches
        the estimators and scorers as such.
    fractions : sequence of float in (0, 1], default=(0.05, 0.1, 0.25, 0.5, 1.0)
        Fractions of each training fold to fit on.
    cv : int, cross-validation generator or None, default=None
        ``None``: ``RepeatedStratifiedKFold(n_splits=5, n_repeats=5)``; an int
        ``k``: ``StratifiedKFold(k)``.
    scoring : str, callable, list of str or dict, default="accuracy"
        Any scikit-learn scoring, e.g. :class:`cr_sklearn.DREGScorer`; ``None``
        uses each estimator's ``score``.
    n_jobs : int, default=None
        Parallel tasks, on joblib's current backend (Dask included).
    random_state : int, default=0
        Seeds the default splitter, the subsamples and every estimator
        parameter ``random_state`` left at ``None``: results do not depend on
        ``n_jobs`` or the backend.
    n_threads : int or None, default=1
        Given to every estimator parameter named ``n_threads``, and the limit of
        the BLAS and OpenMP pools in each task; ``None`` leaves both.
    verbose : int, default=0
        Verbosity of joblib.
    progress : bool, "auto" or "lines", default="auto"
        A tqdm progress bar; ``"auto"``: in a terminal or a notebook only;
        ``"lines"``: a line on standard error about every 30 seconds.

    Returns
    -------
    result : StudyResult
        Tidy records with one row per (model, fraction, split, metric).

    Notes
    -----
    ``ConvergenceWarning`` is silenced inside the fits; each other kind of
    warning is shown once, after them, with its count (messages that differ
    only in their numbers are one kind, each number shown as its range). A
    Ctrl-C stops the study with ``KeyboardInterrupt``: a fit that caught it
    and returned early is not scored.

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
    show_progress = resolve_progress(progress, "data_fraction_study")
    fractions = _check_fractions(fractions)
    scorers = _check_scorers(scoring)
    if n_threads is not None and (
        not isinstance(n_threads, numbers.Integral) or n_threads < 1
    ):
        raise ValueError(
            f"n_threads must be a positive int or None, got {n_threads!r}."
        )
    # An ordered pandas Categorical (a Series' values keep the dtype) or a
    # polars Enum (ordered by its categories) reaches the estimators; plain
    # labels stratify.
    dtype = getattr(y, "dtype", None)
    ordered = getattr(dtype, "ordered", False) or type(dtype).__name__ == "Enum"
    y_fit = getattr(y, "array", y)
    y = column_or_1d(y, warn=True)
    if not ordered:
        y_fit = y
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
                    delayed(fit_and_score)(est, X, y_fit, sub, test, scorers, n_threads)
                )
                split = (s, s // per_repeat, s % per_repeat)
                keys.append((name, fraction, *split, len(sub), len(test)))
    records = run_records(
        tasks,
        keys,
        StudyResult._columns,
        n_jobs=n_jobs,
        verbose=verbose,
        progress=show_progress,
        desc="study",
    )
    return StudyResult(
        records, models=list(estimators), fractions=fractions, metrics=list(scorers)
    )
