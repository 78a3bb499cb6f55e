"""Pima benchmark of the CRClassifier defaults against the usual baselines.

Protocol: bundled Pima, ``RepeatedStratifiedKFold(n_splits=5, n_repeats=5,
random_state=0)``, accuracy mean +- std over the 25 test folds and mean fit
time. CR estimators are fitted with one torch thread each; ``--n-jobs``
folds run in parallel. A second table pairs CR (raw X) with each baseline
fold by fold: the mean accuracy difference, its Nadeau-Bengio corrected
standard error and the corrected t-test's p-value (folds share training
data, so the plain paired t-test would be anti-conservative).

Run::

    python benchmarks/bench_pima.py [--n-jobs 2] [--repeats 5]

The table is printed and written to ``benchmarks/results/pima.md``.
"""

import argparse
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima
from cr_sklearn.study import corrected_ttest

RESULTS = Path(__file__).resolve().parent / "results"


def models():
    """Name -> unfitted estimator, CR defaults first."""
    out = {
        "CRClassifier (raw X)": CRClassifier(random_state=0, n_threads=1),
        "StandardScaler + CRClassifier": make_pipeline(
            StandardScaler(), CRClassifier(random_state=0, n_threads=1)
        ),
        "LogisticRegression": make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=1000)
        ),
        "SVC (RBF)": make_pipeline(StandardScaler(), SVC()),
        "RandomForest (500)": RandomForestClassifier(
            n_estimators=500, random_state=0, n_jobs=1
        ),
        "MLPClassifier (64, 64)": make_pipeline(
            StandardScaler(),
            MLPClassifier((64, 64), max_iter=1000, random_state=0),
        ),
    }
    try:
        from xgboost import XGBClassifier

        out["XGBoost"] = XGBClassifier(n_jobs=1, random_state=0)
    except ImportError:
        pass
    return out


def _fit_score(estimator, X, y, train, test):
    est = clone(estimator)
    start = time.perf_counter()
    est.fit(X[train], y[train])
    elapsed = time.perf_counter() - start
    return est.score(X[test], y[test]), elapsed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    X, y = load_pima(return_X_y=True)
    cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=args.repeats, random_state=0)
    splits = list(cv.split(X, y))
    rows, per_fold = [], {}
    for name, estimator in models().items():
        out = Parallel(n_jobs=args.n_jobs)(
            delayed(_fit_score)(estimator, X, y, tr, te) for tr, te in splits
        )
        acc = np.array([o[0] for o in out])
        fit = np.array([o[1] for o in out])
        rows.append((name, acc.mean(), acc.std(), fit.mean()))
        per_fold[name] = acc
        print(f"{name}: {100 * acc.mean():.2f} +- {100 * acc.std():.2f}", flush=True)

    lines = [
        f"Pima, RepeatedStratifiedKFold(5 x {args.repeats}, random_state=0)",
        "",
        "| model | accuracy (%) | fit time (s) |",
        "| --- | --- | --- |",
    ]
    for name, mean, std, fit in sorted(rows, key=lambda r: -r[1]):
        lines.append(f"| {name} | {100 * mean:.2f} +- {100 * std:.2f} | {fit:.3f} |")
    reference = "CRClassifier (raw X)"
    ratio = len(splits[0][1]) / len(splits[0][0])
    lines += [
        "",
        f"Paired with {reference}, fold by fold (difference = CR - baseline):",
        "",
        "| baseline | mean difference (points) | corrected SE | p (corrected t) |",
        "| --- | --- | --- | --- |",
    ]
    for name, acc in per_fold.items():
        if name == reference:
            continue
        diff = per_fold[reference] - acc
        _, p = corrected_ttest(diff, ratio)
        se = np.sqrt((1 / diff.size + ratio) * diff.var(ddof=1))
        lines.append(
            f"| {name} | {100 * diff.mean():+.2f} | {100 * se:.2f} | {p:.3f} |"
        )
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pima.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
