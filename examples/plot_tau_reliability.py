"""
=========================================
tau and input sensitivity, read with care
=========================================

The gradient tail ratio tau summarises how uneven a model's input gradient
is over a data set: the 99th percentile of the per-sample norms
``||d f(x) / d x||`` (each column in units of its standard deviation)
divided by their mean. It is 1 for a linear model. Per sample,
:meth:`~cr_sklearn.CRClassifier.input_sensitivity` gives a gradient norm
relative to the training mean, taken by the columns the network reads (the
encoded columns, with the input encoding of the defaults).

This example asks two questions on Pima:

1. How does tau compare across model families? (CR network with DREG, the
   same network with ReLU and no penalty, logistic regression, RBF SVC.)
2. Is a large input sensitivity a warning sign for a single prediction?

It runs in about 20 seconds; ``CR_SKLEARN_EXAMPLE_QUICK=1`` shortens it.
"""

# %%
# Gradient-norm distributions and tau
# -----------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima
from cr_sklearn.plotting import GradientNormDisplay

QUICK = os.environ.get("CR_SKLEARN_EXAMPLE_QUICK") == "1"
X, y = load_pima(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, stratify=y, random_state=0
)
params = dict(random_state=0, n_threads=1)
if QUICK:
    params.update(max_iter=5, hidden_layer_sizes=(8,))
models = {
    "CR (poly + DREG)": CRClassifier(**params),
    "ReLU, no penalty": CRClassifier(activation="relu", dreg=None, **params),
    "LogisticRegression": make_pipeline(StandardScaler(), LogisticRegression()),
    "SVC (RBF)": make_pipeline(StandardScaler(), SVC()),
}
for name, model in models.items():
    model.fit(X_train, y_train)
    print(f"{name:>20}: test accuracy {model.score(X_test, y_test):.3f}")

# %%
# The norms are divided by their mean, so every model's mean sits at 1 and its
# dotted p99 line at tau. Every model is measured by the same rule (the
# gradient with respect to the input of a pipeline's final step, each column
# in units of its standard deviation), so a bare CR network on X and a
# scaled SVC are comparable. On Pima folds (``benchmarks/results/tau.md``)
# the CR variants, with and without DREG, are close to an MLP and an RBF SVC:
# a single split like this one does not rank them reliably.
display = GradientNormDisplay.from_estimators(models, X_test)
print({name: round(tau, 3) for name, tau in display.taus_.items()})

# %%
# Is a high sensitivity a warning sign?
# -------------------------------------
# Split the test samples into quintiles of input sensitivity and look at the
# accuracy in each. The gradient is largest near the decision boundary, where
# predictions are uncertain anyway, so compare with the confidence
# ``|p - 0.5|``: a signal that only repeats the predicted probability adds
# little. (``benchmarks/bench_reliability.py`` measures this over 25 splits.)
cr = models["CR (poly + DREG)"]
sensitivity = cr.input_sensitivity(X_test)
edges = np.percentile(sensitivity, [20, 40, 60, 80])
quintile = np.digitize(sensitivity, edges)
correct = cr.predict(X_test) == y_test
confidence = np.abs(cr.predict_proba(X_test)[:, 1] - 0.5)
acc = [correct[quintile == q].mean() for q in range(5)]
conf = [confidence[quintile == q].mean() for q in range(5)]
for q in range(5):
    print(f"Q{q + 1}: accuracy {acc[q]:.3f}, mean |p - 0.5| {conf[q]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3.5), layout="constrained")
labels = [f"Q{q + 1}" for q in range(5)]
ax.plot(labels, acc, "o-", label="accuracy")
ax.plot(labels, conf, "s--", label="mean |p - 0.5|")
ax.set(xlabel="input-sensitivity quintile (Q5 highest)", ylabel="test samples")
ax.legend()
plt.show()
