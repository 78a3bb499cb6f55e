"""The gradient tail ratio tau on Pima across model families, by one rule.

Repeated stratified 5-fold CV on Pima, every model last in
``make_pipeline(StandardScaler(), model)``. On each test fold, per-sample
input-gradient norms come from ``cr_sklearn.gradient_norms`` applied to the
pipeline, the one rule for every model: the gradient with respect to the
final step's input (the standardised features), each column in units of its
standard deviation in the test fold; analytic (logits, through the input
encoding of the defaults to the features) for the CR networks, central
finite differences (step 1e-3 x std) of ``decision_function`` or of the
log-odds from ``predict_proba`` for the others. Reported:

- tau (q=99) per fold: median and interquartile range over folds;
- tau (q=95) per fold, and q=95 / q=99 pooled over all folds (each fold's
  norms scaled by its mean, ``gradient_tail_ratio([...])``);
- test accuracy;
- the cost of the analytic path: ``input_gradient_norms`` against
  ``predict_proba`` of the same fitted CR network on 100k rows.

The paper states that CR networks stay in [1.01, 1.02] and usual activations
at 1.07-1.09; the report restates that claim from what is measured here.

Run::

    python benchmarks/bench_tau.py              # 5x5 CV
    python benchmarks/bench_tau.py --repeats 1  # a shorter run
    python benchmarks/bench_tau.py --repeats 2 --core  # the issue's rows only

The Markdown report goes to ``benchmarks/results/tau.md``, with its command
and commit.
"""

import argparse
import datetime
import shlex
import sys
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

from cr_sklearn import CRClassifier, __version__, gradient_norms, gradient_tail_ratio
from cr_sklearn.datasets import load_pima

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _suite_runner import git_commit  # noqa: E402

RESULTS = HERE / "results" / "tau.md"


#: Rows beyond the issue's comparison: left out by ``--core``.
EXTRA_ROWS = ('CR poly, dreg="stream", no encoding', 'GELU net, dreg="local"')


def models(core=False):
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
    if core:
        found = {k: v for k, v in found.items() if k not in EXTRA_ROWS}
    return found


def one_fold(model, X, y, train, test):
    model = make_pipeline(StandardScaler(), clone(model)).fit(X[train], y[train])
    # The one rule: gradient_norms takes the final step's input itself.
    norms = gradient_norms(model, X[test])
    return norms, float(np.mean(model.predict(X[test]) == y[test]))


def _median_time(function, X, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(X)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def cost(X, y, n_rows=100_000, repeats=5):
    """Seconds of ``predict_proba`` and ``input_gradient_norms`` on ``n_rows``."""
    import torch

    torch.set_num_threads(1)
    model = CRClassifier(random_state=0, n_threads=1).fit(X, y)
    rng = np.random.RandomState(0)
    rows = X[rng.randint(0, len(X), n_rows)]
    rows = rows + 0.01 * X.std(axis=0) * rng.normal(size=rows.shape)
    model.input_gradient_norms(rows[:1000])  # warm-up
    model.predict_proba(rows[:1000])
    proba = _median_time(model.predict_proba, rows, repeats)
    norms = _median_time(model.input_gradient_norms, rows, repeats)
    return proba, norms


def restate_claim(medians):
    """The papers' claim, restated from the per-fold median taus measured."""
    cr = {k: v for k, v in medians.items() if k.startswith("CR poly")}
    others = {k: v for k, v in medians.items() if not k.startswith("CR poly")}
    lines = [
        "The papers state that CR networks keep tau in [1.01, 1.02] against "
        "1.07-1.09 for usual activations. Measured here by the one rule "
        "(median tau q=99 per fold): CR networks "
        f"{min(cr.values()):.2f}-{max(cr.values()):.2f}; the other families "
        f"{min(others.values()):.2f}-{max(others.values()):.2f}.",
    ]
    best_other = min(others, key=others.get)
    if max(cr.values()) < min(others.values()):
        lines.append(
            "Every CR network's tau is below every other family's, as the "
            "papers say, but not at their values: none is within [1.01, 1.02]."
            if min(cr.values()) > 1.02
            else "Every CR network's tau is below every other family's."
        )
    else:
        below = sorted(k for k, v in cr.items() if v < others[best_other])
        lines.append(
            f"The ordering the papers report does not hold for every row: the "
            f"lowest other family is {best_other} ({others[best_other]:.2f}); "
            f"CR rows below it: {'; '.join(below) if below else 'none'}."
        )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument(
        "--core",
        action="store_true",
        help="only CR (stream, local, no penalty), MLP, SVC, RandomForest, XGBoost",
    )
    args = parser.parse_args()
    X, y = load_pima(return_X_y=True)
    splits = list(
        RepeatedStratifiedKFold(
            n_splits=5, n_repeats=args.repeats, random_state=0
        ).split(X, y)
    )
    command = "python " + " ".join(
        shlex.quote(a) for a in ["benchmarks/bench_tau.py", *sys.argv[1:]]
    )
    date = datetime.date.today().isoformat()
    lines = [
        "# tau on Pima, by one rule for every model",
        "",
        f"Produced by `{command}` (cr_sklearn {__version__}, commit "
        f"{git_commit()}, {date}).",
        "",
        "## tau on Pima",
        "",
        f"RepeatedStratifiedKFold(5 x {args.repeats}, random_state=0); test folds of "
        f"~{len(y) // 5} rows; every model last in "
        "make_pipeline(StandardScaler(), model), at its defaults unless named; "
        "norms by `gradient_norms` on the pipeline: the gradient with respect "
        "to the final step's input (the standardised features), each column "
        "in units of its standard deviation in the test fold. CR: analytic "
        "logit gradient (through the input encoding of the defaults, to the "
        "features); others: central finite differences (step 1e-3 x std) of "
        "decision_function (SVC) or of the log-odds from predict_proba. "
        "Median [IQR] over folds; pooled = all folds' norms, each scaled by "
        "its mean.",
        "",
        "| model | tau q=99 per fold | tau q=95 per fold | pooled q=99 | "
        "pooled q=95 | accuracy | s |",
        "|---|---|---|---|---|---|---|",
    ]
    medians = {}
    for name, model in models(core=args.core).items():
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

        taus = np.array([gradient_tail_ratio(n) for n in norms if n.max() > 0])
        medians[name] = float(np.median(taus)) if taus.size else np.nan
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
    proba, grads = cost(X, y)
    lines += [
        "",
        "s = wall-clock for all folds on a shared 2-core machine (noisy).",
        "",
        "## The papers' claim, restated",
        "",
        *restate_claim(medians),
        "",
        "## Cost of the analytic path",
        "",
        "CRClassifier at its defaults fitted on Pima (one thread); 100k rows "
        "drawn from Pima with noise of 0.01 std; median of 5 calls.",
        "",
        "| predict_proba s | input_gradient_norms s | ratio |",
        "|---|---|---|",
        f"| {proba:.3f} | {grads:.3f} | {grads / proba:.2f}x |",
        "",
    ]
    text = "\n".join(lines)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
