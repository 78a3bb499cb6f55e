"""How the CRClassifier defaults were chosen: cross-validation on other data.

The Pima benchmark (``bench_pima.py``) is never used to choose defaults.
Candidates are compared with LogisticRegression on breast cancer, Wine
Quality red and white (binarised at quality >= 6; white subsampled to 1,500
rows) and the numeric columns of UCI Adult (1,500 rows), with
``RepeatedStratifiedKFold(5 x 2, random_state=0)``, training on a stratified
``--fraction`` of each training fold.

Run::

    python benchmarks/tune_defaults.py --fraction 0.1
    python benchmarks/tune_defaults.py --fraction 1.0

Candidates are given as JSON (name -> CRClassifier parameters) with
``--candidates``; the default compares the previous and the current defaults.
Earlier rounds compared the early-stopped defaults with the fixed budget and
``dreg_lambda`` values (see the CRClassifier Notes). A grid over
``dreg_lambda`` (10^-2.5 to 10^-1.5), widths, depth, epochs and degree
chose ``dreg_lambda=10**-2``; weight averaging, seed ensembles, stronger
weight decay and a linear skip term tied the defaults and were not adopted.
Adult is read from ``../shared/data/adult`` next to the repository.
"""

import argparse
import json
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_wine_quality

ADULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult" / "adult.csv"
CANDIDATES = {
    "previous (lambda 10^-1.5)": {"dreg_lambda": 10**-1.5},
    "stream on every row": {"stream_rows": None},
    # lambda 10^-2, the stream on 64 random rows per step.
    "current defaults": {},
    # The full-batch path for small data (not the default: sharper models).
    "full batch, scaled learning rate": {
        "batch_size": 10**6,
        "learning_rate_init": "auto",
    },
}


def datasets():
    """Name -> (X, y) of the tuning data (never Pima)."""
    out = {"breast_cancer": load_breast_cancer(return_X_y=True)}
    X, y = load_wine_quality(color="red", return_X_y=True)
    out["wine_red_binary"] = (X, (y >= 6).astype(int))
    X, y = load_wine_quality(color="white", return_X_y=True)
    idx = np.random.RandomState(0).choice(len(y), 1500, replace=False)
    out["wine_white_binary"] = (X[idx], (y[idx] >= 6).astype(int))
    if ADULT.exists():
        import pandas as pd

        df = pd.read_csv(ADULT)
        cols = ["age", "fnlwgt", "education_num", "capital_gain"]
        cols += ["capital_loss", "hours_per_week"]
        idx = np.random.RandomState(0).choice(len(df), 1500, replace=False)
        out["adult_numeric"] = (
            df[cols].to_numpy(float)[idx],
            df["target"].to_numpy()[idx],
        )
    return out


def _score(estimator, X, y, train, test, fraction, seed):
    if fraction < 1:
        train, _ = train_test_split(
            train, train_size=fraction, stratify=y[train], random_state=seed
        )
    est = clone(estimator).fit(X[train], y[train])
    return est.score(X[test], y[test])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fraction", type=float, default=1.0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--candidates", type=json.loads, default=CANDIDATES)
    args = parser.parse_args(argv)

    models = {
        "LogisticRegression": make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=2000)
        )
    }
    for name, params in args.candidates.items():
        models[name] = CRClassifier(random_state=0, n_threads=1, **params)
    table = {}
    for data_name, (X, y) in datasets().items():
        cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=0)
        splits = list(cv.split(X, y))
        for name, model in models.items():
            acc = Parallel(n_jobs=args.n_jobs)(
                delayed(_score)(model, X, y, tr, te, args.fraction, i)
                for i, (tr, te) in enumerate(splits)
            )
            table[data_name, name] = float(np.mean(acc))
            print(f"{data_name} | {name} | {100 * np.mean(acc):.2f}", flush=True)
    names = list(models)
    data_names = sorted({d for d, _ in table})
    lines = [
        f"Training fraction {args.fraction:g}, RepeatedStratifiedKFold(5 x 2)",
        "",
        "| data | " + " | ".join(names) + " |",
        "| --- " * (len(names) + 1) + "|",
    ]
    for d in data_names:
        cells = " | ".join(f"{100 * table[d, n]:.2f}" for n in names)
        lines.append(f"| {d} | {cells} |")
    means = " | ".join(
        f"{100 * np.mean([table[d, n] for d in data_names]):.2f}" for n in names
    )
    lines.append(f"| mean | {means} |")
    text = "\n".join(lines)
    print(text)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"tune_defaults_{args.fraction:g}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
