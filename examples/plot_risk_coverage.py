"""
=====================================
Which predictions to trust: rejection
=====================================

A classifier that may abstain keeps the predictions it trusts most and
defers the others. The **risk-coverage curve** shows what that buys: the
error rate of the kept predictions against the share kept (the coverage),
when the least trusted are rejected first. A lower curve, and a lower area
under it (AURC), means the confidence ranks the errors last.

Here the signals of a :class:`~cr_sklearn.CRClassifier` (its predicted
probability, :meth:`~cr_sklearn.CRClassifier.input_sensitivity`,
:meth:`~cr_sklearn.CRClassifier.input_distance` and the spread of its
predictions under its own dropout) are compared, on one axis, with those of
a logistic regression, on the breast cancer data. Then
:class:`~cr_sklearn.SelectiveClassifier` learns a combination of the CR
signals and picks a rejection threshold with a guaranteed risk.

Runs in seconds on one core; ``CR_SKLEARN_EXAMPLE_QUICK=1`` makes it a
smoke test.
"""

# %%
# Two models and their signals
# ----------------------------
import os

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cr_sklearn import (
    CRClassifier,
    RiskCoverageDisplay,
    SelectiveClassifier,
    aurc_score,
    confidence_signals,
)

QUICK = os.environ.get("CR_SKLEARN_EXAMPLE_QUICK") == "1"
X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.4, stratify=y, random_state=0
)
params = dict(random_state=0, n_threads=1)
if QUICK:
    params.update(max_iter=5, hidden_layer_sizes=(8,))
cr = CRClassifier(**params).fit(X_train, y_train)
logreg = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
for name, model in {"CR": cr, "LogisticRegression": logreg}.items():
    print(f"{name:>18}: test accuracy {model.score(X_test, y_test):.3f}")

# %%
# The curves on one axis
# ----------------------
# Each model brings its own references: the oracle (every error rejected
# first, the lowest possible curve) and a random ordering (a flat line at the
# model's error rate). For a linear model the input gradient is the same
# everywhere, so its gradient norm cannot rank anything: its curve is the
# random one.
display = RiskCoverageDisplay.from_estimator(cr, X_test, y_test, name="CR")
RiskCoverageDisplay.from_estimator(
    logreg,
    X_test,
    y_test,
    signals=["max_proba", "gradient_norm"],
    name="LogReg",
    ax=display.ax_,
)
# The errors are few, and all the curves stay at 0 below the high coverages.
display.ax_.set_xlim(0.5, 1.0)
display.ax_.set_title("Breast cancer, test set")

# %%
# AURC mostly restates the error rate, so each signal is best read against
# the same model's maximum probability: a ratio below 1 means the signal
# ranks the errors better than the probability does.
signals = confidence_signals(cr, X_test, random_state=0)
y_pred = cr.predict(X_test)
reference = aurc_score(y_test, y_pred, signals["max_proba"])
for name, values in signals.items():
    ratio = aurc_score(y_test, y_pred, values) / max(reference, 1e-12)
    print(f"{name:>18}: AURC / AURC(max_proba) = {ratio:.2f}")

# %%
# A learned combination and a guaranteed risk
# -------------------------------------------
# :class:`~cr_sklearn.SelectiveClassifier` cross-fits the CR network, learns
# from the out-of-fold signals which predictions are right, and chooses the
# lowest threshold whose upper confidence bound on the error rate of the kept
# predictions (at level ``1 - delta``) is below ``target_risk``. Too few
# training rows for the target: it rejects everything and says so.
selective = SelectiveClassifier(
    CRClassifier(**params),
    cv=3 if QUICK else 5,
    target_risk=0.05,
    delta=0.1,
    random_state=0,
).fit(X_train, y_train)
y_pred, accepted = selective.predict_selective(X_test)
print(f"signals combined: {selective.signals_}")
print(
    f"out-of-fold coverage {selective.coverage_:.2f}, "
    f"risk bound {selective.risk_bound_:.3f}"
)
if accepted.any():
    error = np.mean(y_pred[accepted] != y_test[accepted])
    print(f"test: kept {accepted.mean():.2f} of the predictions, error {error:.3f}")
RiskCoverageDisplay.from_estimator(
    selective, X_test, y_test, signals=["confidence", "max_proba"]
)
