"""The gradient tail ratio tau on Pima across model families.

Repeated stratified 5-fold CV on Pima (standardised features for every
model). On each test fold, per-sample input-gradient norms come from
``cr_sklearn.gradient_norms``: analytic (logit) for the CR networks, central
finite differences (step 1e-3 x feature std) of ``decision_function`` or of
the log-odds from ``predict_proba`` for the others. Reported:

- tau (q=99) per fold: median and interquartile range over folds;
- tau (q=95) per fold, and q=95 / q=99 pooled over all folds (each fold's
  norms scaled by its mean, ``gradient_tail_ratio([...])``);
- test accuracy.

The paper states that CR networks stay in [1.01, 1.02] and usual activations
at 1.07-1.09; this script reports what is measured here.

Run::

    python benchmarks/bench_tau.py              # 5x5 CV
    python benchmarks/bench_tau.py --repeats 1  # a shorter run

The Markdown table goes to ``benchmarks/results/tau.md``.
"""

import argparse
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from cr_sklearn import CRClassifier, gradient_norms, gradient_tail_ratio
from cr_sklearn.datasets import load_pima

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "tau.md"


def models():
    cr = dict(random_state=0, n_threads=1)
    found = {
        'CR poly, dreg="stream"': CRClassifier(dreg="stream", **cr),
        # The same network without the input encoding of the defaults: its
        # norms are in the standardised inputs' space, as the other families'.
        'CR poly, dreg="stream", no encoding': CRClassifier(
            dreg="stream", encoding_bins=None, dropout=0.1, **cr
        ),
        'CR poly, dreg="local"': CRClassifier(dreg="local", **cr),
        "CR poly, dreg=None": CRClassifier(dreg=None, **cr),
        'GELU net, dreg="local"': CRClassifier(activation="gelu", dreg="local", **cr),
        "MLPClassifier(64,64)": MLPClassifier((64, 64), max_iter=1000, random_state=0),
        "SVC (RBF)": SVC(),
        "RandomForest(300)": RandomForestClassifier(n_estimators=300, random_state=0),
    }
    try:
        from xgboost import XGBClassifier

        found["XGBoost"] = XGBClassifier(n_estimators=200, n_jobs=1, random_state=0)
    except ImportError:
        print("xgboost is not installed: skipped.")
    return found


def one_fold(model, X, y, train, test):
    model = make_pipeline(StandardScaler(), clone(model)).fit(X[train], y[train])
    # Norms with respect to the standardised input for every family: the
    # pipeline hands CR models the scaled X; the others get it explicitly.
    Xs = model[0].transform(X[test])
    last = model[-1]
    norms = gradient_norms(last, Xs)
    return norms, float(np.mean(last.predict(Xs) == y[test]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    X, y = load_pima(return_X_y=True)
    splits = list(
        RepeatedStratifiedKFold(
            n_splits=5, n_repeats=args.repeats, random_state=0
        ).split(X, y)
    )
    lines = [
        "## tau on Pima",
        "",
        f"RepeatedStratifiedKFold(5 x {args.repeats}, random_state=0); test folds of "
        f"~{len(y) // 5} rows; gradients w.r.t. standardised inputs; CR: analytic "
        "logit gradient, with the input encoding of the defaults w.r.t. the "
        "encoded columns (the norms the CR estimators report; the 'no encoding' "
        "row is in the standardised inputs' space); others: central finite "
        "differences (step 1e-3 x std) of "
        "decision_function (SVC) or of the log-odds from predict_proba. Median "
        "[IQR] over folds; pooled = all folds' norms, each scaled by its mean.",
        "",
        "| model | tau q=99 per fold | tau q=95 per fold | pooled q=99 | "
        "pooled q=95 | accuracy | s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, model in models().items():
        start = time.perf_counter()
        results = Parallel(n_jobs=args.n_jobs)(
            delayed(one_fold)(model, X, y, tr, te) for tr, te in splits
        )
        norms = [r[0] for r in results]
        acc = np.mean([r[1] for r in results])

        def per_fold(q, norms=norms):
            taus = np.array([gradient_tail_ratio(n, q=q) for n in norms])
            taus = taus[np.isfinite(taus)]
            if taus.size == 0:
                return "nan"
            lo, med, hi = np.percentile(taus, [25, 50, 75])
            return f"{med:.3f} [{lo:.3f}, {hi:.3f}]"

        nonzero = [n for n in norms if n.mean() > 0]
        pooled = [
            gradient_tail_ratio(nonzero, q=q) if nonzero else np.nan for q in (99, 95)
        ]
        elapsed = time.perf_counter() - start
        lines.append(
            f"| {name} | {per_fold(99)} | {per_fold(95)} | {pooled[0]:.3f} | "
            f"{pooled[1]:.3f} | {acc:.3f} | {elapsed:.0f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "s = wall-clock for all folds on a shared 2-core machine (noisy).",
        "",
    ]
    text = "\n".join(lines)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
