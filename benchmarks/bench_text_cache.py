"""How often a grid search calls the sentence encoder, with and without cache.

GridSearchCV (4 candidates x 3 folds, then a refit) over a
``SentenceEmbedder -> CRClassifier`` pipeline on 2,000 SST-5 training
sentences, through the real all-MiniLM-L6-v2 encoder. The encoder's
``encode`` is wrapped to count how many times each sentence reaches it.

Arms (same search, same seeds):

- ``cache=True`` (default): the in-process content-keyed cache;
- ``cache=False``: every fit and score re-encodes its fold;
- reference: embed the 2,000 sentences once, then search on the array.

The model is loaded before timing, so load time is not in any arm. One
torch/BLAS thread, ``n_jobs=1``: the in-memory cache lives in the process
(worker processes would each have their own; a cache folder shares it).

Run::

    python benchmarks/bench_text_cache.py
"""

import argparse
import os
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.model_selection import GridSearchCV, StratifiedKFold  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from cr_sklearn import CRClassifier  # noqa: E402
from cr_sklearn.datasets import load_sst5  # noqa: E402
from cr_sklearn.text import SentenceEmbedder  # noqa: E402

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "data"
GRID = {
    "cr__dreg_lambda": [10**-3.5, 10**-2.5],
    "cr__hidden_layer_sizes": [(32,), (64,)],
}


def search(X, y, steps, cv):
    pipe = Pipeline(steps)
    grid = {k: v for k, v in GRID.items() if k.split("__")[0] in pipe.named_steps}
    gs = GridSearchCV(pipe, grid, cv=cv, n_jobs=1)
    start, cpu = time.perf_counter(), time.process_time()
    gs.fit(X, y)
    return gs, time.perf_counter() - start, time.process_time() - cpu


def cr_step():
    return ("cr", CRClassifier(max_iter=30, random_state=0, n_threads=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-sentences", type=int, default=2000)
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--output", default=str(HERE / "results" / "text_cache.md"))
    args = parser.parse_args()
    data_home = args.data_home or os.environ.get("CR_SKLEARN_DATA") or SHARED_DATA

    torch.set_num_threads(1)
    sst = load_sst5(data_home, subset="train")
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(len(sst.target), args.n_sentences, replace=False))
    texts = [sst.texts[i] for i in rows]
    y = sst.target[rows]
    n_unique = len(set(texts))
    cv = StratifiedKFold(3, shuffle=True, random_state=0)

    model = SentenceEmbedder()._get_model()  # load outside the timings
    original = model.encode
    calls = []

    def counting_encode(batch, *a, **kw):
        calls.extend(batch)
        return original(batch, *a, **kw)

    model.encode = counting_encode
    results = []
    with threadpool_limits(1):
        for label, cache in [("cache=True", True), ("cache=False", False)]:
            SentenceEmbedder.clear_cache()
            calls.clear()
            steps = [("embed", SentenceEmbedder(cache=cache)), cr_step()]
            gs, wall, cpu = search(texts, y, steps, cv)
            counts = Counter(calls)
            results.append(
                (label, len(calls), max(counts.values()), wall, cpu, gs.best_score_)
            )
            print(results[-1], flush=True)

        SentenceEmbedder.clear_cache()
        calls.clear()
        start, cpu0 = time.perf_counter(), time.process_time()
        Z = SentenceEmbedder(cache=False).transform(texts)
        encode_s = time.perf_counter() - start
        encode_cpu = time.process_time() - cpu0
        gs, wall, cpu = search(Z, y, [cr_step()], cv)
        counts = Counter(calls)
        label = f"embed once ({encode_s:.1f} s) + search on the array"
        results.append(
            (
                label,
                len(calls),
                max(counts.values()),
                encode_s + wall,
                encode_cpu + cpu,
                gs.best_score_,
            )
        )
        print(results[-1], flush=True)

    base, base_cpu = results[0][3], results[0][4]
    lines = [
        "## Encoder calls in GridSearchCV over SentenceEmbedder -> CRClassifier",
        "",
        f"{args.n_sentences} SST-5 training sentences ({n_unique} distinct), "
        f"{len(gs.cv_results_['params'])} candidates x 3 folds + refit, n_jobs=1, "
        "1 thread; CRClassifier(max_iter=30). Wall times measured on a shared "
        "machine are noisy; process CPU seconds are steadier. A sentence that "
        "occurs twice can reach the encoder twice per fold without cache (once "
        "in the training part, once in the test part).",
        "",
        "| arm | texts sent to the encoder | per distinct sentence (mean, max) "
        "| wall s | wall x cache=True | CPU s | CPU x cache=True | best CV accuracy |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, n_calls, worst, wall, cpu, best in results:
        lines.append(
            f"| {label} | {n_calls} | {n_calls / n_unique:.2f}, {worst} | "
            f"{wall:.1f} | {wall / base:.2f} | "
            f"{cpu:.1f} | {cpu / base_cpu:.2f} | {best:.4f} |"
        )
    text = "\n".join(lines)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
