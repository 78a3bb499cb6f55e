"""Ordinal regression: CROrdinalRegressor against nominal and classical models.

1. Wine Quality red and white, repeated stratified 5-fold CV: MAE, accuracy,
   QWK (and macro-averaged MAE) for CROrdinalRegressor with the cumulative
   and the CORAL head (median prediction, the default), the cumulative head
   predicting the mode (argmax of predict_proba; the same seed fits the same
   network, so that row isolates the prediction rule), CRClassifier
   (nominal), LogisticRegression,
   RandomForestClassifier and mord's LogisticAT (if installed).
2. The Yelp 5-star sample on frozen MiniLM embeddings
   (``../shared/data/yelp5/minilm_embeddings.npz``), train -> test, several
   seeds, the same metrics.

Metrics are computed on label ranks by ``cr_sklearn.ORDINAL_SCORERS``; for
the integer labels here MAE is in grade/star units. Every model sees
standardised features (inside a pipeline or the network).

Run::

    python benchmarks/bench_ordinal.py                       # 5x5 CV, 5 seeds
    python benchmarks/bench_ordinal.py --repeats 1 --seeds 2 # a shorter run
    python benchmarks/bench_ordinal.py --skip wine --out benchmarks/results/x.md
    python benchmarks/bench_ordinal.py --colors red --models CROrdinal

The Markdown tables go to ``benchmarks/results/ordinal.md`` (or ``--out``).
"""

import argparse
import datetime
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cr_sklearn import ORDINAL_SCORERS, CRClassifier, CROrdinalRegressor
from cr_sklearn.datasets import load_wine_quality

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the suite's helpers
from _suite_runner import git_commit  # noqa: E402

YELP = ROOT.parent / "shared" / "data" / "yelp5" / "minilm_embeddings.npz"
RESULTS = ROOT / "benchmarks" / "results" / "ordinal.md"
METRICS = {
    "MAE": ("neg_mean_absolute_error", -1),
    "macro-MAE": ("neg_macro_averaged_mean_absolute_error", -1),
    "accuracy": ("accuracy", 1),
    "QWK": ("quadratic_weighted_kappa", 1),
}


class MordAT(ClassifierMixin, BaseEstimator):
    """mord's LogisticAT on any sortable labels (mord needs codes 0..K-1)."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        import mord

        self.classes_, codes = np.unique(y, return_inverse=True)
        self.model_ = mord.LogisticAT(alpha=self.alpha).fit(X, codes)
        return self

    def predict(self, X):
        return self.classes_[self.model_.predict(X)]


def models(seed, n_features, only=None):
    """The compared models by name; ``only``: keep names containing any of these."""
    cr = dict(random_state=seed, n_threads=1)
    if n_features > 32:
        cr["hidden_layer_sizes"] = (64,)
    found = {
        "CROrdinal (cumulative)": CROrdinalRegressor(head="cumulative", **cr),
        "CROrdinal (cumulative, mode)": CROrdinalRegressor(
            head="cumulative", prediction="mode", **cr
        ),
        "CROrdinal (coral)": CROrdinalRegressor(head="coral", **cr),
        "CRClassifier (nominal)": CRClassifier(**cr),
        "LogisticRegression": make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=3000)
        ),
        "RandomForest(300)": RandomForestClassifier(
            n_estimators=300, random_state=seed, n_jobs=1
        ),
    }
    try:
        import mord  # noqa: F401

        found["mord LogisticAT"] = make_pipeline(StandardScaler(), MordAT())
    except ImportError:
        print("mord is not installed (pip install mord): LogisticAT skipped.")
    if only:
        found = {k: v for k, v in found.items() if any(o in k for o in only)}
    return found


def table(rows, title, note):
    names = list(METRICS)
    lines = [f"### {title}", "", note, ""]
    lines.append("| model | " + " | ".join(names) + " | fit s |")
    lines.append("|---|" + "---|" * (len(names) + 1))
    for name, res in rows.items():
        cells = [f"{np.mean(res[m]):.3f} ± {np.std(res[m]):.3f}" for m in names]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {res['time']:.1f} |")
    return "\n".join(lines) + "\n"


def wine(color, repeats, n_jobs, only=None):
    X, y = load_wine_quality(color=color, return_X_y=True)
    cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=repeats, random_state=0)
    scoring = {m: ORDINAL_SCORERS[s] for m, (s, _) in METRICS.items()}
    rows = {}
    for name, model in models(0, X.shape[1], only).items():
        start = time.perf_counter()
        res = cross_validate(model, X, y, cv=cv, scoring=scoring, n_jobs=n_jobs)
        out = {m: sign * res[f"test_{m}"] for m, (_, sign) in METRICS.items()}
        out["time"] = float(np.mean(res["fit_time"]))
        rows[name] = out
        print(f"  wine-{color} {name}: {time.perf_counter() - start:.0f} s", flush=True)
    note = (
        f"{len(X)} wines, {len(np.unique(y))} grades; RepeatedStratifiedKFold"
        f"(5 x {repeats}); mean ± std over the {5 * repeats} test folds; fit s "
        "= mean fit time per fold."
    )
    return table(rows, f"Wine Quality ({color})", note)


def yelp(seeds, balanced, only=None):
    npz = np.load(YELP)
    X_tr, y_tr, X_te, y_te = (
        npz[k] for k in ["X_train", "y_train", "X_test", "y_test"]
    )
    if balanced:
        tr, te = npz["balanced_train"] == 1, npz["balanced_test"] == 1
        X_tr, y_tr, X_te, y_te = X_tr[tr], y_tr[tr], X_te[te], y_te[te]
    rows = {}
    for name in models(0, X_tr.shape[1], only):
        out = {m: [] for m in METRICS}
        times = []
        for seed in range(seeds):
            model = clone(models(seed, X_tr.shape[1])[name])
            start = time.perf_counter()
            model.fit(X_tr, y_tr)
            times.append(time.perf_counter() - start)
            for m, (s, sign) in METRICS.items():
                out[m].append(sign * ORDINAL_SCORERS[s](model, X_te, y_te))
        out["time"] = float(np.mean(times))
        rows[name] = out
        print(f"  yelp {name}: {sum(times):.0f} s", flush=True)
    subset = "balanced subset (400 per star)" if balanced else "all reviews"
    note = (
        f"Train {len(y_tr)} -> test {len(y_te)} reviews ({subset}), MiniLM "
        f"384-d embeddings; mean ± std over {seeds} seeds (LogisticRegression "
        "is deterministic)."
    )
    return table(rows, "Yelp 5-star sample", note)


def provenance(argv):
    """Header lines: the command, date, commit and the CR models' defaults."""
    from cr_sklearn import __version__

    shown = (
        "dreg_lambda",
        "dropout",
        "encoding_bins",
        "stream_rows",
        "early_stopping",
        "max_iter",
        "prediction",
    )
    defaults = [
        f"{type(est).__name__} "
        + ", ".join(f"`{k}={v!r}`" for k, v in est.get_params().items() if k in shown)
        for est in (CROrdinalRegressor(), CRClassifier())
    ]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = shlex.join(["python", "benchmarks/bench_ordinal.py", *argv])
    return [
        f"Command: `{command}`",
        "",
        f"Date: {date}, cr_sklearn {__version__}, commit {git_commit()}. Defaults: "
        + "; ".join(defaults)
        + ". Timings are wall-clock on a shared 2-core machine, noisy; compare "
        "ratios within this run.",
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="CV repeats (wine)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds (Yelp)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--all-yelp", action="store_true", help="not only balanced")
    parser.add_argument("--skip", nargs="*", default=[], choices=["wine", "yelp"])
    parser.add_argument(
        "--colors", nargs="+", default=["red", "white"], choices=["red", "white"]
    )
    parser.add_argument(
        "--models", nargs="+", default=None, help="keep models whose name contains"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="Markdown output")
    args = parser.parse_args()
    parts = ["## Ordinal benchmark", "", *provenance(sys.argv[1:]), ""]
    if "wine" not in args.skip:
        for color in args.colors:
            parts.append(wine(color, args.repeats, args.n_jobs, args.models))
    if "yelp" not in args.skip:
        if YELP.exists():
            parts.append(yelp(args.seeds, not args.all_yelp, args.models))
        else:
            parts.append(f"Yelp embeddings not found at {YELP}; skipped.\n")
    text = "\n".join(parts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
