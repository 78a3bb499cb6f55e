"""Text on frozen sentence embeddings, and the embedding cache of a search.

``text``
    SST-5 (train 8,544 -> test 2,210) and the balanced Yelp sample (2,000 ->
    2,000) on their precomputed all-MiniLM-L6-v2 embeddings: CRClassifier,
    CROrdinalRegressor, LogisticRegression, SVC and MLPClassifier (64, 64,
    early stopping) at their defaults, trained on stratified fractions of the
    training split over several seeds (LogisticRegression and SVC once at
    100%: they are deterministic), scored by accuracy and MAE in classes.
``text-cache``
    How often GridSearchCV (4 candidates x 3 folds and a refit) over
    ``SentenceEmbedder -> CRClassifier`` on 2,000 SST-5 sentences sends each
    sentence to the real encoder, with the cache, without it, and with the
    sentences embedded once; the encoder's ``encode`` is wrapped to count.

Run::

    python benchmarks/run.py text
    python benchmarks/run.py text --models CRClassifier CROrdinalRegressor \\
        --output benchmarks/results/text_cr_current.md
    python benchmarks/run.py text-cache
"""

import os
import time
from collections import Counter

import numpy as np
from harness import (
    SHARED,
    Config,
    header,
    markdown_table,
    one_thread,
    parallel,
    subsample,
    timed,
)

FRACTIONS = (0.05, 0.10, 0.25, 0.50, 1.0)
MODELS = ("CRClassifier", "CROrdinalRegressor", "LogisticRegression", "SVC", "MLP")
DETERMINISTIC = {"LogisticRegression", "SVC"}
# Relative cost per training row, to start the longest fits first.
COST = {"SVC": 3.0, "CROrdinalRegressor": 1.2, "CRClassifier": 1.0, "MLP": 0.2}


def _data_home(args):
    return args.data_home or os.environ.get("CR_SKLEARN_DATA") or SHARED


def load(dataset, data_home):
    """``(X_train, y_train, X_test, y_test)`` of ``"sst5"`` or ``"yelp5"``."""
    from cr_sklearn.datasets import load_sst5, load_yelp5

    if dataset == "sst5":
        kw = {"embeddings": True, "return_X_y": True}
        return (
            *load_sst5(data_home, subset="train", **kw),
            *load_sst5(data_home, subset="test", **kw),
        )
    kw = {"embeddings": True, "balanced": True, "return_X_y": True}
    return (
        *load_yelp5(data_home, subset="train", **kw),
        *load_yelp5(data_home, subset="test", **kw),
    )


def make_model(name, seed):
    """An unfitted model of ``MODELS``, one thread."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    from cr_sklearn import CRClassifier, CROrdinalRegressor

    return {
        "CRClassifier": lambda: CRClassifier(random_state=seed, n_threads=1),
        "CROrdinalRegressor": lambda: CROrdinalRegressor(
            random_state=seed, n_threads=1
        ),
        "LogisticRegression": lambda: LogisticRegression(max_iter=2000),
        "SVC": SVC,
        "MLP": lambda: MLPClassifier((64, 64), early_stopping=True, random_state=seed),
    }[name]()


def _fit_one(dataset, name, fraction, seed, X_train, y_train, X_test, y_test):
    keep = subsample(np.arange(len(y_train)), y_train, float(fraction), seed)
    model = make_model(name, seed)
    with one_thread():
        seconds = timed(model.fit, X_train[keep], y_train[keep])
        pred = model.predict(X_test)
    return {
        "dataset": dataset,
        "model": name,
        "fraction": fraction,
        "n_train": len(keep),
        "accuracy": float(np.mean(pred == y_test)),
        "mae": float(np.mean(np.abs(pred.astype(int) - y_test.astype(int)))),
        "fit_s": seconds,
    }


def run_text(args):
    """The ``text`` report."""
    import pandas as pd

    data = {d: load(d, _data_home(args)) for d in args.datasets}
    jobs = []
    for dataset in args.datasets:
        for name in args.models:
            for fraction in args.fractions:
                once = name in DETERMINISTIC and fraction >= 1
                for seed in range(1 if once else args.seeds):
                    jobs.append((dataset, name, fraction, seed, *data[dataset]))
    jobs.sort(key=lambda j: -COST.get(j[1], 0.1) * len(j[5]) * j[2])
    rows = pd.DataFrame([r for _, r in parallel(_fit_one, jobs, args.n_jobs, True)])
    lines = header(
        "Frozen MiniLM embeddings: SST-5 and Yelp (balanced sample)",
        args.argv,
        notes=[
            "Test split scores; mean ± std over seeds (the "
            "subsample and the model's seed); MAE in classes; one thread per "
            "fit, wall seconds on a shared machine."
        ],
    )
    for dataset, part in rows.groupby("dataset", sort=False):
        table = []
        for (fraction, name), sel in part.groupby(["fraction", "model"]):
            acc, mae = 100 * sel["accuracy"], sel["mae"]
            table.append(
                [
                    f"{fraction:.0%}",
                    sel["n_train"].iloc[0],
                    name,
                    f"{acc.mean():.2f} ± {acc.std(ddof=0):.2f}",
                    f"{mae.mean():.3f} ± {mae.std(ddof=0):.3f}",
                    len(sel),
                    f"{sel['fit_s'].mean():.1f}",
                ]
            )
        lines += ["", f"### {dataset}", ""]
        lines += markdown_table(
            ["fraction", "n_train", "model", "accuracy (%)", "MAE", "seeds", "fit s"],
            table,
        )
    return "\n".join(lines) + "\n"


def _text_args(parser):
    parser.add_argument("--datasets", nargs="+", default=["sst5", "yelp5"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--fractions", type=float, nargs="+", default=FRACTIONS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--data-home", default=None)


GRID = {
    "cr__dreg_lambda": [10**-3.5, 10**-2.5],
    "cr__hidden_layer_sizes": [(32,), (64,)],
}


def _search(X, y, steps):
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import Pipeline

    search = GridSearchCV(
        Pipeline(steps),
        GRID,
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
        n_jobs=1,
    )
    wall = timed(search.fit, X, y)
    return search, wall


def run_text_cache(args):
    """The ``text-cache`` report."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    from cr_sklearn import CRClassifier
    from cr_sklearn.datasets import load_sst5
    from cr_sklearn.text import SentenceEmbedder

    sst = load_sst5(_data_home(args), subset="train")
    rows = np.sort(
        np.random.default_rng(0).choice(len(sst.target), args.n_sentences, False)
    )
    texts, y = [sst.texts[i] for i in rows], sst.target[rows]
    calls = []
    original = SentenceTransformer.encode

    def counting(self, sentences, *a, **kw):
        calls.extend(sentences)
        return original(self, sentences, *a, **kw)

    def cr():
        return ("cr", CRClassifier(max_iter=30, random_state=0, n_threads=1))

    results = []
    SentenceEmbedder().fit_transform(["load the encoder outside the timings"])
    SentenceTransformer.encode = counting
    try:
        with one_thread():
            for cache in (True, False):
                SentenceEmbedder.clear_cache()
                calls.clear()
                search, wall = _search(
                    texts, y, [("embed", SentenceEmbedder(cache=cache)), cr()]
                )
                results.append(
                    (f"cache={cache}", len(calls), Counter(calls), wall, search)
                )
            SentenceEmbedder.clear_cache()
            calls.clear()
            start = time.perf_counter()
            Z = SentenceEmbedder(cache=False).transform(texts)
            embed, n_once = time.perf_counter() - start, len(calls)
            search, wall = _search(np.asarray(Z), y, [cr()])
            label = "embed once + search on the array"
            results.append((label, n_once, Counter(texts), wall + embed, search))
    finally:
        SentenceTransformer.encode = original
    distinct = len(set(texts))
    table = [
        [
            label,
            n,
            f"{n / distinct:.2f}, {max(c.values())}",
            f"{wall:.1f}",
            f"{wall / results[0][3]:.2f}",
            f"{s.best_score_:.4f}",
        ]
        for label, n, c, wall, s in results
    ]
    note = (
        f"{args.n_sentences} SST-5 training sentences ({distinct} distinct), "
        "4 candidates x 3 folds + refit, n_jobs=1, one thread; "
        "CRClassifier(max_iter=30); wall seconds on a shared machine."
    )
    lines = header(
        "Encoder calls in GridSearchCV over SentenceEmbedder -> CRClassifier",
        args.argv,
        notes=[note],
    )
    cols = ["arm", "texts sent to the encoder", "per distinct sentence (mean, max)"]
    cols += ["wall s", "wall x cache=True", "best CV accuracy"]
    return "\n".join([*lines, "", *markdown_table(cols, table)]) + "\n"


def _cache_args(parser):
    parser.add_argument("--n-sentences", type=int, default=2000)
    parser.add_argument("--data-home", default=None)


CONFIGS = [
    Config(
        "text", "SST-5 and Yelp on frozen sentence embeddings", _text_args, run_text
    ),
    Config(
        "text-cache",
        "encoder calls of a grid search, with and without cache",
        _cache_args,
        run_text_cache,
        "text_cache.md",
    ),
]
