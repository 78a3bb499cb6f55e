"""
===========================================================================
Comparing CR with RF, SVC and XGBoost on a pandas table: accuracy and tau
===========================================================================

The comparison this package exists for: a table as it arrives, with string
categories and missing values, one preprocessing pipeline shared by every
model, and two numbers per model from :func:`~sklearn.model_selection.cross_validate`:
accuracy, and the gradient tail ratio tau (:class:`~cr_sklearn.DREGScorer`),
how uneven the model's input gradients are on the held-out fold (1 for a
linear model, larger when a few samples see much steeper gradients than the
rest).

tau is measured by one rule for every model (the user guide's page on tau
states it): the gradient with respect to the input of the pipeline's final
step, the columns the model reads, each in units of its standard deviation.
The CR network's gradient is analytic, every other model's comes from
finite differences of the same kind. That makes the smooth models' taus
comparable; a random forest and XGBoost are piecewise constant, so their
difference quotients see a jump only where a split lies within the step of
a sample, and their tau reflects the finite-difference step, the trees'
depth and the ensemble's size more than the model (the page on tau says
why): read it as a property of those settings, not as the forest's
smoothness.

The example runs in about a minute on one CPU core. Setting the environment
variable ``CR_SKLEARN_EXAMPLE_QUICK=1`` shrinks it to a smoke test.
"""

# %%
# A table with categories and missing values
# ------------------------------------------
# The Pima Indians Diabetes table, as a clinic would record it: a zero
# glucose, blood pressure, skin fold, insulin or BMI means "not measured", so
# it becomes a missing value, and BMI is kept as its WHO class (a string
# category, missing where BMI was not measured), with the age band.
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import SVC

from cr_sklearn import CRClassifier, DREGScorer
from cr_sklearn.datasets import load_pima

QUICK = os.environ.get("CR_SKLEARN_EXAMPLE_QUICK") == "1"
pima = load_pima(as_frame=True).frame
measured = ["glucose", "blood_pressure", "skin_thickness", "insulin", "bmi"]
pima[measured] = pima[measured].replace(0.0, np.nan)
table = pima.drop(columns=["bmi", "age", "target"]).assign(
    bmi_class=pd.cut(
        pima["bmi"],
        [0, 18.5, 25, 30, 35, np.inf],
        labels=["under", "normal", "over", "obese I", "obese II+"],
    ).astype(object),
    age_band=pd.cut(
        pima["age"], [0, 30, 40, 50, np.inf], labels=["<30", "30s", "40s", "50+"]
    ).astype(str),
)
y = pima["target"].to_numpy()
print(table.head())
print("missing values per column:")
print(table.isna().sum().to_string())

# %%
# One pipeline, four models
# -------------------------
# Numeric columns are imputed and standardised, categories imputed and
# one-hot encoded; every model reads the same columns.
numeric = [c for c in table.columns if c not in ("bmi_class", "age_band")]


def preprocessing():
    return ColumnTransformer(
        [
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), numeric),
            (
                "cat",
                make_pipeline(
                    SimpleImputer(strategy="constant", fill_value="missing"),
                    OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                ),
                ["bmi_class", "age_band"],
            ),
        ]
    )


cr_params = dict(max_iter=5, hidden_layer_sizes=(8,)) if QUICK else {}
models = {
    "CR": CRClassifier(random_state=0, n_threads=1, **cr_params),
    "RandomForest": RandomForestClassifier(
        n_estimators=50 if QUICK else 300, random_state=0
    ),
    "SVC": SVC(),
}
try:
    from xgboost import XGBClassifier

    models["XGBoost"] = XGBClassifier(
        n_estimators=50 if QUICK else 200, max_depth=3, n_jobs=1, random_state=0
    )
except ImportError:  # the ``xgboost`` extra is optional
    print("xgboost is not installed: XGBoost is left out.")

# %%
# Accuracy and tau from the same folds
# ------------------------------------
# tau of the tree ensembles comes from finite differences of a
# piecewise-constant function: zero almost everywhere, with a jump where a
# split lies within the step of a sample. Their tau is a property of that
# step (the default, 1e-3 of each column's spread); read it with care.
cv = StratifiedKFold(n_splits=3 if QUICK else 5, shuffle=True, random_state=0)
scoring = {"accuracy": "accuracy", "tau": DREGScorer()}
results = {}
for name, model in models.items():
    scores = cross_validate(
        make_pipeline(preprocessing(), model), table, y, cv=cv, scoring=scoring
    )
    results[name] = (scores["test_accuracy"], scores["test_tau"])
    print(
        f"{name:>12}: accuracy {scores['test_accuracy'].mean():.3f} "
        f"+- {scores['test_accuracy'].std():.3f}, "
        f"tau {np.nanmedian(scores['test_tau']):.2f} (median over folds)"
    )

# %%
# Side by side
# ------------
# Accuracy on the left, tau per fold on the right (dots; the bar is the
# median), on a log scale: a tree ensemble's fold can reach tens when a few
# samples lie within the step of a split. The dotted line is a linear
# model's tau of 1.
names = list(results)
fig, (ax_acc, ax_tau) = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
acc = np.array([results[n][0] for n in names])
ax_acc.barh(names, acc.mean(axis=1), xerr=acc.std(axis=1), color="C0")
ax_acc.set(xlabel="accuracy (mean +- std over folds)", xlim=(0.5, 0.85))
for i, name in enumerate(names):
    taus = results[name][1]
    ax_tau.barh(i, np.nanmedian(taus), color="C1", alpha=0.5)
    ax_tau.plot(taus, np.full(len(taus), i), "o", color="C1", markersize=4)
ax_tau.set_yticks(range(len(names)), names)
ax_tau.axvline(1.0, color="0.4", linestyle=":")
ax_tau.set_xscale("log")
ax_tau.set(xlabel="tau = p99 / mean of gradient norms (log)")
for ax in (ax_acc, ax_tau):
    ax.invert_yaxis()  # the first model on top
plt.show()
