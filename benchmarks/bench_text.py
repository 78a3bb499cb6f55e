"""SST-5 and Yelp on frozen MiniLM sentence embeddings: CR heads vs baselines.

Train on (a stratified fraction of) the train split, score on the test split,
over several seeds. The embeddings are the precomputed all-MiniLM-L6-v2 vectors
(384-d, unit norm) next to each dataset (``minilm_embeddings.npz``), read with
:func:`cr_sklearn.datasets.load_sst5` / :func:`~cr_sklearn.datasets.load_yelp5`.

- SST-5: 5 classes (0..4), train 8,544 -> test 2,210. Models: CRClassifier,
  CROrdinalRegressor, LogisticRegression, SVC (RBF), MLPClassifier.
- Yelp: the balanced sample (400 reviews per star in each split), train 2,000
  -> test 2,000, stars 1..5. The same models.

Every model keeps its library defaults (CR: two layers of 64, stream DREG,
4 random projections at 384 features, early stopping on 10% of the training
data; MLPClassifier gets the same width and early stopping). The dev split of
SST-5 is not used. LogisticRegression and SVC are deterministic given the
data, so at 100% of the training data they run once (the "seeds" column says
how many runs each row averages).

Metrics: accuracy and MAE in classes (|true - predicted| on the ordered
labels). Fit times are wall seconds of one fit on one thread, measured while
other jobs share the machine: compare them within a run only.

Run::

    python benchmarks/bench_text.py              # both datasets, 5 seeds
    python benchmarks/bench_text.py --seeds 1 --fractions 0.05 1.0  # quick
"""

import argparse
import os
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
# The shared data folder beside the repository; CR_SKLEARN_DATA overrides it.
SHARED_DATA = HERE.parents[1] / "shared" / "data"
FRACTIONS = (0.05, 0.10, 0.25, 0.50, 1.0)
MODELS = ("CRClassifier", "CROrdinalRegressor", "LogisticRegression", "SVC", "MLP")
DETERMINISTIC = {"LogisticRegression", "SVC"}
# Rough relative cost per training row, to start the longest fits first.
COST = {
    "SVC": 3.0,
    "CROrdinalRegressor": 1.2,
    "CRClassifier": 1.0,
    "MLP": 0.2,
    "LogisticRegression": 0.1,
}


def _ordinal_class():
    try:
        from cr_sklearn import CROrdinalRegressor
    except ImportError:
        return None
    return CROrdinalRegressor


def load(dataset, data_home):
    from cr_sklearn.datasets import load_sst5, load_yelp5

    if dataset == "sst5":
        train = load_sst5(data_home, subset="train", embeddings=True, return_X_y=True)
        test = load_sst5(data_home, subset="test", embeddings=True, return_X_y=True)
    else:
        kw = {"embeddings": True, "balanced": True, "return_X_y": True}
        train = load_yelp5(data_home, subset="train", **kw)
        test = load_yelp5(data_home, subset="test", **kw)
    return (*train, *test)


def make_model(name, seed):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    from cr_sklearn import CRClassifier

    if name == "CRClassifier":
        return CRClassifier(random_state=seed, n_threads=1)
    if name == "CROrdinalRegressor":
        return _ordinal_class()(random_state=seed, n_threads=1)
    if name == "LogisticRegression":
        return LogisticRegression(max_iter=2000)
    if name == "SVC":
        return SVC()
    if name == "MLP":
        return MLPClassifier((64, 64), early_stopping=True, random_state=seed)
    raise ValueError(name)


def subsample(y, fraction, seed):
    """Stratified indices of ``fraction`` of the training rows."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    if fraction >= 1.0:
        return idx
    keep, _ = train_test_split(idx, train_size=fraction, stratify=y, random_state=seed)
    return np.sort(keep)


def run_one(dataset, model_name, fraction, seed, X_train, y_train, X_test, y_test):
    from threadpoolctl import threadpool_limits

    keep = subsample(y_train, fraction, seed)
    model = make_model(model_name, seed)
    with threadpool_limits(1):
        start = time.perf_counter()
        model.fit(X_train[keep], y_train[keep])
        fit_s = time.perf_counter() - start
        pred = model.predict(X_test)
    return {
        "dataset": dataset,
        "model": model_name,
        "fraction": fraction,
        "n_train": len(keep),
        "seed": seed,
        "accuracy": float(np.mean(pred == y_test)),
        "mae": float(np.mean(np.abs(pred.astype(int) - y_test.astype(int)))),
        "fit_s": fit_s,
    }


def summarise(rows, dataset):
    lines = [
        f"### {dataset}",
        "",
        "| fraction | n_train | model | accuracy (%) | MAE | seeds | fit s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    keys = sorted(
        {(r["fraction"], r["model"]) for r in rows if r["dataset"] == dataset},
        key=lambda k: (k[0], MODELS.index(k[1])),
    )
    for fraction, model in keys:
        sel = [
            r
            for r in rows
            if r["dataset"] == dataset
            and r["fraction"] == fraction
            and r["model"] == model
        ]
        acc = 100 * np.array([r["accuracy"] for r in sel])
        mae = np.array([r["mae"] for r in sel])
        fit = np.mean([r["fit_s"] for r in sel])
        lines.append(
            f"| {fraction:.0%} | {sel[0]['n_train']} | {model} | "
            f"{acc.mean():.2f} ± {acc.std():.2f} | {mae.mean():.3f} ± {mae.std():.3f}"
            f" | {len(sel)} | {fit:.1f} |"
        )
    lines.append("")
    # Accuracy at a glance: models x fractions.
    fractions = sorted({k[0] for k in keys})
    lines.append("| model | " + " | ".join(f"{f:.0%}" for f in fractions) + " |")
    lines.append("| --- |" + " --- |" * len(fractions))
    for model in MODELS:
        cells = []
        for f in fractions:
            acc = [
                100 * r["accuracy"]
                for r in rows
                if r["dataset"] == dataset
                and r["model"] == model
                and r["fraction"] == f
            ]
            cells.append(f"{np.mean(acc):.2f}" if acc else "–")
        if any(c != "–" for c in cells):
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["sst5", "yelp5"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--fractions", type=float, nargs="+", default=FRACTIONS)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--output", default=str(RESULTS / "text.md"))
    args = parser.parse_args()

    data_home = args.data_home or os.environ.get("CR_SKLEARN_DATA") or SHARED_DATA
    models = list(args.models)
    notes = []
    if "CROrdinalRegressor" in models and _ordinal_class() is None:
        models.remove("CROrdinalRegressor")
        notes.append("CROrdinalRegressor is not available in this checkout: skipped.")

    data = {d: load(d, data_home) for d in args.datasets}
    tasks = []
    for dataset in args.datasets:
        n = len(data[dataset][1])
        for model in models:
            for fraction in args.fractions:
                seeds = range(args.seeds)
                if model in DETERMINISTIC and fraction >= 1.0:
                    seeds = range(1)
                for seed in seeds:
                    cost = COST[model] * n * fraction
                    tasks.append((cost, dataset, model, fraction, seed))
    tasks.sort(key=lambda t: -t[0])
    start = time.perf_counter()
    rows = Parallel(n_jobs=args.n_jobs, verbose=5)(
        delayed(run_one)(d, m, f, s, *data[d]) for _, d, m, f, s in tasks
    )
    elapsed = time.perf_counter() - start

    lines = [
        "## Frozen MiniLM embeddings: SST-5 and Yelp (balanced sample)",
        "",
        f"{len(rows)} fits in {elapsed / 60:.1f} min with n_jobs={args.n_jobs}, "
        "one thread per fit, while the machine was shared (fit times are noisy).",
        "Test split scores; mean ± std over seeds (stratified subsample and model "
        "seed). MAE in classes.",
        "",
        *notes,
    ]
    for dataset in args.datasets:
        lines += summarise(rows, dataset)
    text = "\n".join(lines)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
