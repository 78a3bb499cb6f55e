"""
==============================
Learned polynomial activations
==============================

Every neuron of a PolyLayer has its own cubic activation
``phi_i(z) = a_0 + a_1 u + a_2 u^2 + a_3 u^3`` on the soft-bounded
pre-activation ``u = 3 tanh(z / 3)``, starting as the identity. After
training, :class:`~cr_sklearn.plotting.ActivationDisplay` draws each
neuron's curve over the range of pre-activations the training data produced,
one row per layer (like the plots of Kolmogorov-Arnold networks), and
:class:`~cr_sklearn.plotting.LossCurveDisplay` shows the fit history.

Runs in a few seconds.
"""

# %%
# A CR network on two interleaved half-moons
# ------------------------------------------
import os

import matplotlib.pyplot as plt
from sklearn.datasets import make_moons
from sklearn.inspection import DecisionBoundaryDisplay

from cr_sklearn import CRClassifier
from cr_sklearn.plotting import ActivationDisplay, LossCurveDisplay

QUICK = os.environ.get("CR_SKLEARN_EXAMPLE_QUICK") == "1"
X, y = make_moons(n_samples=500, noise=0.2, random_state=0)
clf = CRClassifier(
    (12, 12),
    learning_rate_init=1e-2,
    max_iter=10 if QUICK else 300,
    early_stopping=True,
    random_state=0,
    n_threads=1,
).fit(X, y)
print(f"training accuracy {clf.score(X, y):.3f} after {clf.n_iter_} epochs")

fig, ax = plt.subplots(figsize=(4.5, 3.5), layout="constrained")
DecisionBoundaryDisplay.from_estimator(
    clf, X, ax=ax, alpha=0.4, response_method="predict_proba"
)
ax.scatter(X[:, 0], X[:, 1], c=y, s=8, cmap="coolwarm")
ax.set_title("Decision function")

# %%
# The learned activations
# -----------------------
# The eight most nonlinear neurons of each layer (largest distance from a
# straight line over their range). Many stay close to the identity: the
# network uses only as much curvature as the data asks for.
ActivationDisplay.from_estimator(clf, X, n_neurons=8)

# %%
# The fit history
# ---------------
# Training loss (data loss + the DREG term, whose share is dashed), the
# validation loss early stopping watches, the validation accuracy on the
# right axis, and the epoch whose weights were restored.
LossCurveDisplay.from_estimator(clf)
plt.show()
