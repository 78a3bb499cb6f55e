"""The study engine: argument checks, subsamples, tasks and the joblib loop."""

import contextlib
import re
import signal
import sys
import threading
import time
import warnings

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring, get_scorer
from sklearn.utils import _safe_indexing
from threadpoolctl import threadpool_limits

from ._deps import _installed, check_dependencies

__all__ = []


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

    Each class is shuffled once and fraction ``f`` takes its first ``max(1,
    round(f * n_class))``: smaller fractions are subsets of larger ones.
    """
    orders = [rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)]
    out = {}
    for f in fractions:
        parts = [o[: max(1, int(np.floor(f * len(o) + 0.5)))] for o in orders]
        out[f] = np.sort(np.concatenate(parts))
    return out


def _derived_seed(base, *keys):
    """A 31-bit seed from the study seed and task keys (e.g. the split)."""
    state = np.random.SeedSequence([base, *keys]).generate_state(1)[0]
    return int(state) & 0x7FFFFFFF


def prepare_estimator(estimator, seed, n_threads):
    """Clone, fill (nested) ``random_state=None`` with ``seed``, set ``n_threads``."""
    est = clone(estimator)
    updates = {}
    for key, value in est.get_params(deep=True).items():
        leaf = key.rsplit("__", 1)[-1]
        if leaf == "random_state" and value is None:
            updates[key] = seed
        elif leaf == "n_threads" and n_threads is not None:
            updates[key] = n_threads
    if updates:
        est.set_params(**updates)
    return est


@contextlib.contextmanager
def _ctrl_c_noted():
    """Yield a list that records each Ctrl-C (SIGINT) while the block runs.

    The handler in place (Python's: ``KeyboardInterrupt``) still runs. A fit
    may catch that ``KeyboardInterrupt`` and return what it has (skorch's
    loop, and so the CR estimators, do: a lone fit ends early with a usable
    model); the list still says that the user pressed Ctrl-C. Signal
    handlers belong to the main thread: elsewhere nothing is recorded.
    """
    noted = []
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(
        previous
    ):
        yield noted
        return

    def handler(signum, frame):
        noted.append(signum)
        previous(signum, frame)

    signal.signal(signal.SIGINT, handler)
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, previous)


def fit_and_score(estimator, X, y, train, test, scorers, n_threads=None):
    """Fit on ``train``, score on ``test``: ``(scores, fit_time, score_time, raised)``.

    ``raised``: the distinct warnings as ``(category, message)``. With
    ``n_threads``, BLAS and OpenMP pools are limited during the task. A
    Ctrl-C during the fit raises ``KeyboardInterrupt``, even when the fit
    caught it and returned early: a study stops, and never scores a fit cut
    short.
    """
    # _safe_indexing keeps a pandas Categorical y (and its order).
    X_train, y_train = _safe_indexing(X, train), _safe_indexing(y, train)
    X_test, y_test = _safe_indexing(X, test), _safe_indexing(y, test)
    limits = contextlib.nullcontext()
    if n_threads is not None:
        limits = threadpool_limits(limits=n_threads)
    with limits, warnings.catch_warnings(record=True) as caught:
        # Small subsamples stop iterative baselines early by design.
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        with _ctrl_c_noted() as interrupted:
            estimator.fit(X_train, y_train)
        if interrupted:
            raise KeyboardInterrupt
        fit_time = time.perf_counter() - start
        start = time.perf_counter()
        scores = {}
        for name, scorer in scorers.items():
            if scorer is None:
                scorer = check_scoring(estimator)
            scores[name] = float(scorer(estimator, X_test, y_test))
        score_time = time.perf_counter() - start
    raised = list(dict.fromkeys((w.category, str(w.message)) for w in caught))
    return scores, fit_time, score_time, raised


# A number on its own (not part of a name such as float64 or x0), with its
# decimals and exponent; a full stop after it ends the sentence.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w|\.\d)")


def merged_warnings(raised):
    """One ``(category, text, count)`` per kind of warning of several fits.

    ``raised`` holds each fit's distinct ``(category, message)`` pairs.
    Messages of a category that differ only in their numbers are one kind:
    its text shows each number that varies as its range (``27-28 training
    rows``); ``count`` is the number of fits that raised it.
    """
    kinds = {}  # (category, template): [numbers of each message, fits]
    for fit, found in enumerate(raised):
        for category, message in found:
            escaped = message.replace("{", "{{").replace("}", "}}")
            key = (category, _NUMBER.sub("{}", escaped))
            numbers, fits = kinds.setdefault(key, [[], set()])
            numbers.append(_NUMBER.findall(message))
            fits.add(fit)
    merged = []
    for (category, template), (numbers, fits) in kinds.items():
        shown = []
        for values in zip(*numbers, strict=True):
            low, high = min(values, key=float), max(values, key=float)
            shown.append(low if float(low) == float(high) else f"{low}-{high}")
        merged.append((category, template.format(*shown), len(fits)))
    return merged


def warn_merged(raised, n_fits, stacklevel=2):
    """Show each kind of warning of :func:`merged_warnings` once, with its count.

    ``stacklevel`` as in :func:`warnings.warn`, counted from the caller.
    """
    for category, message, count in merged_warnings(raised):
        text = f"{message} (in {count} of {n_fits} fits)"
        if not (isinstance(category, type) and issubclass(category, Warning)):
            category = UserWarning
        try:
            warnings.warn(text, category, stacklevel=stacklevel + 1)
        except TypeError:  # a category that takes other arguments
            warnings.warn(text, UserWarning, stacklevel=stacklevel + 1)


def run_records(tasks, keys, columns, **run):
    """One record per task and metric from :func:`run_tasks`.

    Each kind of warning of the tasks (:func:`fit_and_score`) is shown once,
    with its count, pointing at the caller of the study function.
    """
    outputs = run_tasks(tasks, **run)
    warn_merged([raised for *_, raised in outputs], len(outputs), stacklevel=3)
    return [
        dict(zip(columns, (*key, metric, value, *times)[: len(columns)], strict=True))
        for key, (scores, *times, _) in zip(keys, outputs, strict=True)
        for metric, value in scores.items()
    ]


def _interactive():
    """Whether standard error is a terminal or this is a Jupyter (IPython) kernel."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):  # replaced or closed streams
        pass
    ipython = sys.modules.get("IPython")
    try:
        shell = ipython.get_ipython() if ipython is not None else None
    except Exception:  # pragma: no cover - a broken IPython install
        return False
    return getattr(shell, "kernel", None) is not None


def resolve_progress(progress, purpose):
    """What to show: True (a bar), False (nothing) or ``"lines"``.

    ``"auto"``: a bar in a terminal or notebook with tqdm, else nothing. Called
    before any fit, so that ``progress=True`` without tqdm fails at once.
    """
    if isinstance(progress, str) and progress in ("auto", "lines"):
        if progress == "lines":
            return "lines"
        return _interactive() and _installed("tqdm")
    if not isinstance(progress, bool | np.bool_):
        raise ValueError(
            f"progress must be a bool, 'auto' or 'lines', got {progress!r}."
        )
    if progress:
        check_dependencies("progress", purpose=f"{purpose}(progress=True)")
    return bool(progress)


def _timed(index, func, args, kwargs):
    """Run one task: ``(index, seconds, result)`` (the index restores the order)."""
    start = time.perf_counter()
    out = func(*args, **kwargs)
    return index, time.perf_counter() - start, out


class _TimeLeft:
    """Time left of a run, from the completed fits' mean duration, then throughput."""

    def __init__(self, total, workers):
        self.total = total
        self.workers = max(1, min(int(workers), total))
        self.durations = 0.0
        self.first = None
        self.done = 0

    def update(self, seconds):
        """Count one completed fit of ``seconds``; return the seconds left."""
        now = time.perf_counter()
        self.durations += seconds
        self.done += 1
        if self.first is None:
            self.first = now
        if self.done >= 2 * self.workers and now > self.first:
            rate = (self.done - 1) / (now - self.first)
        else:
            rate = self.workers * self.done / max(self.durations, 1e-9)
        return (self.total - self.done) / rate


def _format_interval(seconds):
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:" * bool(hours) + f"{minutes:02d}:{seconds:02d}"


class _ProgressBar:
    """A tqdm bar whose time left is estimated by :class:`_TimeLeft`."""

    def __init__(self, total, desc, workers):
        from tqdm.auto import tqdm

        self.left = _TimeLeft(total, workers)
        self.bar = tqdm(
            total=total,
            desc=desc,
            unit="fit",
            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} fits [{elapsed}{postfix}]",
            postfix="time left: after the first fit",
        )

    def update(self, seconds):
        left = self.left.update(seconds)
        self.bar.set_postfix_str(f"time left ~{_format_interval(left)}", refresh=False)
        self.bar.update(1)

    def close(self):
        self.bar.set_postfix_str("", refresh=False)
        self.bar.close()


#: Seconds between two plain progress lines (``progress="lines"``).
PROGRESS_LINE_INTERVAL_S = 30.0


class _ProgressLines:
    """Plain progress lines on standard error: after the first fit, then every 30 s."""

    def __init__(self, total, desc, workers):
        self.left = _TimeLeft(total, workers)
        self.desc = desc
        self.start = time.perf_counter()
        self.last = float("-inf")  # when the last line was printed

    def _print(self, text):
        if sys.stderr is not None:
            print(text, file=sys.stderr, flush=True)

    def update(self, seconds):
        left = self.left.update(seconds)
        now = time.perf_counter()
        done, total = self.left.done, self.left.total
        if done < total and now - self.last >= PROGRESS_LINE_INTERVAL_S:
            self.last = now
            self._print(
                f"{self.desc}: {done}/{total} fits ({done / total:.0%}), "
                f"{_format_interval(now - self.start)} elapsed, "
                f"time left ~{_format_interval(left)}"
            )

    def close(self):
        done, total = self.left.done, self.left.total
        elapsed = _format_interval(time.perf_counter() - self.start)
        self._print(f"{self.desc}: {done}/{total} fits in {elapsed}")


def run_tasks(tasks, *, n_jobs, verbose, progress, desc, on_result=None):
    """Run ``delayed`` tasks with joblib, as they complete; results in task order.

    ``on_result(index, result)`` runs in this process as each task completes.
    """
    timed = [delayed(_timed)(i, *task) for i, task in enumerate(tasks)]
    bar = None
    if progress and tasks:
        kind = _ProgressLines if progress == "lines" else _ProgressBar
        bar = kind(len(tasks), desc, effective_n_jobs(n_jobs))
    results = [None] * len(tasks)
    try:
        try:
            outputs = Parallel(
                n_jobs=n_jobs, verbose=verbose, return_as="generator_unordered"
            )(timed)
        except ValueError as exc:
            if "does not support return_as" not in str(exc):
                raise
            # multiprocessing and threading: one list at the end.
            outputs = Parallel(n_jobs=n_jobs, verbose=verbose)(timed)
        for index, seconds, out in outputs:
            results[index] = out
            if on_result is not None:
                on_result(index, out)
            if bar is not None:
                bar.update(seconds)
    finally:
        if bar is not None:
            bar.close()
    return results
