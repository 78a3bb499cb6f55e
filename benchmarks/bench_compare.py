"""Overhead of compare_study with DummyClassifier: time per fit, driver memory.

A DummyClassifier fits in microseconds, so nearly all of a study's time is
the study's own: argument checks, cloning and seeding, the cache keys and
files, joblib, the records. The same fits are timed in a plain loop
(clone, fit, the same scorer) and the study's extra time per fit is the
difference.
The driver's peak memory (``ru_maxrss`` of a fresh process) is measured at
100 and at 1,200 fits.

Run::

    python benchmarks/bench_compare.py --out benchmarks/results/compare_overhead.md
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

N_ROWS, N_FEATURES = 200, 5
# RepeatedStratifiedKFold(5 folds x 10 repeats) = 50 splits; 2 models.
N_FOLDS, N_REPEATS = 5, 10
BUDGET_MS, MEMORY_MB = 20.0, 50.0


def _setup(n_fits):
    from sklearn.datasets import make_classification
    from sklearn.dummy import DummyClassifier
    from sklearn.model_selection import RepeatedStratifiedKFold

    per_table = 2 * N_FOLDS * N_REPEATS
    if n_fits % per_table:
        raise ValueError(f"n_fits must be a multiple of {per_table}.")
    tables = [
        (f"t{i}", *make_classification(N_ROWS, n_features=N_FEATURES, random_state=i))
        for i in range(n_fits // per_table)
    ]
    models = {
        "prior": DummyClassifier(strategy="prior"),
        "stratified": DummyClassifier(strategy="stratified"),
    }
    cv = RepeatedStratifiedKFold(n_splits=N_FOLDS, n_repeats=N_REPEATS, random_state=0)
    return tables, models, cv


def _plain_loop(tables, models, cv):
    """The same fits without the study: clone, fit, the same scorer."""
    from sklearn.base import clone
    from sklearn.metrics import get_scorer

    scorer = get_scorer("accuracy")

    start = time.perf_counter()
    for _, X, y in tables:
        for train, test in cv.split(X, y):
            for est in models.values():
                scorer(clone(est).fit(X[train], y[train]), X[test], y[test])
    return time.perf_counter() - start


def _child(n_fits, cache):
    """One measurement in this (fresh) process: seconds and peak memory."""
    from cr_sklearn.study import compare_study

    tables, models, cv = _setup(n_fits)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    result = compare_study(models, tables, cv=cv, cache=cache, n_jobs=1, progress=False)
    study = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    plain = min(_plain_loop(tables, models, cv) for _ in range(3))
    assert len(result) == n_fits
    print(
        json.dumps(
            {
                "n_fits": n_fits,
                "study_s": study,
                "plain_s": plain,
                "rss_before_mb": before / 1024,
                "rss_peak_mb": peak / 1024,
                "cached": result.n_cached,
            }
        )
    )


def _measure(n_fits, cache):
    args = [sys.executable, __file__, "--child", str(n_fits)]
    if cache:
        args += ["--cache", cache]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="Markdown report to write")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child, args.cache)
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n_fits, cache in [
            (100, None),
            (1200, None),
            (100, f"{tmp}/a"),
            (1200, f"{tmp}/b"),
            (1200, f"{tmp}/b"),
        ]:
            r = _measure(n_fits, cache)
            r["cache"] = (
                "no"
                if cache is None
                else ("resumed (all cached)" if r["cached"] else "written")
            )
            rows.append(r)
            print(r, file=sys.stderr)
    lines = [
        "# compare_study overhead (DummyClassifier)",
        "",
        f"Command: `python benchmarks/bench_compare.py --out {args.out}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, load average {load:.1f} at the start "
        "(the machine is shared: timings vary with it); "
        f"`n_jobs=1`; tables of {N_ROWS} rows x "
        f"{N_FEATURES} features, 2 DummyClassifiers, RepeatedStratifiedKFold("
        f"{N_FOLDS} x {N_REPEATS}). Overhead per fit: (study time - the same "
        "fits in a plain loop of clone, fit and the same accuracy scorer, best "
        "of 3) / fits. Memory: the driver's peak resident set (ru_maxrss) of a "
        "fresh process; the study adds the difference between the peak and the "
        "resident set before it.",
        "",
        "| fits | cache | study (s) | plain loop (s) | overhead per fit (ms) | "
        "peak RSS (MB) | added by the study (MB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        overhead = f"{(r['study_s'] - r['plain_s']) / r['n_fits'] * 1e3:.2f}"
        if r["cached"] == r["n_fits"]:  # nothing fitted: the time to read one
            overhead = f"none fitted; {r['study_s'] / r['n_fits'] * 1e3:.2f} to read"
        lines.append(
            f"| {r['n_fits']:,} | {r['cache']} | {r['study_s']:.2f} | "
            f"{r['plain_s']:.2f} | {overhead} | {r['rss_peak_mb']:.0f} | "
            f"{r['rss_peak_mb'] - r['rss_before_mb']:.1f} |"
        )
    at = {(r["n_fits"], r["cache"]): r for r in rows}
    worst = max(
        (r["study_s"] - r["plain_s"]) / r["n_fits"] * 1e3
        for r in rows
        if r["cached"] < r["n_fits"]
    )
    grow = at[(1200, "written")]["rss_peak_mb"] - at[(100, "written")]["rss_peak_mb"]
    lines += [
        "",
        f"Largest overhead per fit: {worst:.2f} ms (budget {BUDGET_MS:g} ms): "
        f"{'within' if worst <= BUDGET_MS else 'ABOVE'} budget. Peak memory at "
        f"1,200 fits minus at 100 fits (cache written): {grow:.1f} MB (budget "
        f"{MEMORY_MB:g} MB): {'within' if grow <= MEMORY_MB else 'ABOVE'} budget.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
