"""
==========================================================================
Tuning a CR classifier against RF, SVC and XGBoost, with tau in the scores
==========================================================================

A :class:`~cr_sklearn.CRClassifier` is a scikit-learn classifier, so it is
tuned with :class:`~sklearn.model_selection.GridSearchCV` like any other.
Here it competes with a random forest, an RBF support vector machine and (if
installed) XGBoost on the bundled Pima Indians Diabetes data. Every search
records two scores per candidate: accuracy, which selects the model, and the
gradient tail ratio tau (:class:`~cr_sklearn.DREGScorer`), which reports how
uneven the model's input gradients are on the held-out fold: 1 for a linear
model, larger when a few samples see much steeper gradients than the rest.

The example runs in about a minute on one CPU core. Setting the environment
variable ``CR_SKLEARN_EXAMPLE_QUICK=1`` shrinks every search to a smoke test.
"""

# %%
# Data and models
# ---------------
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from cr_sklearn import CRClassifier, DREGScorer
from cr_sklearn.datasets import load_pima

QUICK = os.environ.get("CR_SKLEARN_EXAMPLE_QUICK") == "1"
X, y = load_pima(return_X_y=True)

cr_params = dict(max_iter=5, hidden_layer_sizes=(8,)) if QUICK else {}
searches = {
    "CR": (
        CRClassifier(random_state=0, n_threads=1, **cr_params),
        {"dreg_lambda": [10**-2.5] if QUICK else [1e-3, 1e-2]},
    ),
    "RandomForest": (
        RandomForestClassifier(n_estimators=50 if QUICK else 300, random_state=0),
        {"min_samples_leaf": [1] if QUICK else [1, 5]},
    ),
    "SVC": (
        make_pipeline(StandardScaler(), SVC()),
        {"svc__C": [1.0] if QUICK else [0.3, 1.0, 3.0]},
    ),
}
try:
    from xgboost import XGBClassifier

    searches["XGBoost"] = (
        XGBClassifier(n_estimators=50 if QUICK else 200, n_jobs=1, random_state=0),
        {"max_depth": [2] if QUICK else [2, 4]},
    )
except ImportError:  # the ``xgboost`` extra is optional
    pass

# %%
# One grid search per model, scored by accuracy and tau
# -----------------------------------------------------
# ``refit="accuracy"`` selects by accuracy; ``tau`` is only reported. The
# same folds are used for every model. tau of the tree ensembles comes from
# finite differences of a piecewise-constant function: their gradient is zero
# almost everywhere, so their tau says more about the step size than about the
# model (it may even be undefined, NaN). It is shown, but read it with care.
cv = StratifiedKFold(n_splits=3 if QUICK else 5, shuffle=True, random_state=0)
scoring = {"accuracy": "accuracy", "tau": DREGScorer()}
rows = []
for name, (estimator, grid) in searches.items():
    search = GridSearchCV(estimator, grid, scoring=scoring, refit="accuracy", cv=cv)
    search.fit(X, y)
    best = search.best_index_
    results = search.cv_results_
    rows.append(
        (
            name,
            results["mean_test_accuracy"][best],
            results["std_test_accuracy"][best],
            results["mean_test_tau"][best],
            search.best_params_,
        )
    )
    print(
        f"{name:>12}: accuracy {rows[-1][1]:.3f} +- {rows[-1][2]:.3f}, "
        f"tau {rows[-1][3]:.2f}, best {search.best_params_}"
    )

# %%
# On this small table, the models are within a few points of each other:
# none is clearly best, and a plain logistic regression (not shown) is as
# accurate as any of them. tau is measured by one rule for every model (the
# gradient with respect to the final step's input, each column in units of
# its standard deviation), so the bars compare; the CR network and the RBF
# SVC are close (``benchmarks/results/tau.md`` has the spread over folds),
# and the tree ensembles' finite-difference values say little (see above).
names = [r[0] for r in rows]
fig, (ax_acc, ax_tau) = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
ax_acc.barh(names, [r[1] for r in rows], xerr=[r[2] for r in rows], color="C0")
ax_acc.set(xlabel="accuracy (mean +- std over folds)", xlim=(0.5, 0.85))
taus = np.array([r[3] for r in rows], dtype=float)
ax_tau.barh(names, np.nan_to_num(taus), color="C1")
ax_tau.axvline(1.0, color="0.4", linestyle=":")
ax_tau.set(xlabel="tau = p99 / mean of input-gradient norms")
plt.show()
