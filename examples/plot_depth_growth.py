"""
============================================
Growing a residual CR network block by block
============================================

A residual CR classifier can be deepened after fitting without changing what
it predicts: a new residual block whose last layer is zero is the identity.
The gradient of the loss with respect to that block at zero, the
*first-order signal*, says whether (and where) one more block can help.
:class:`~cr_sklearn.DepthGrowth` turns this into a growth loop.
"""

# %%
# A shallow residual network
# --------------------------
# ``hidden_layer_sizes=(16,)`` is the stem only: one PolyLayer, no block.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split

from cr_sklearn import CRClassifier, DepthGrowth
from cr_sklearn.growth import expand_depth, first_order_signal

X, y = make_moons(n_samples=600, noise=0.25, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
params = dict(architecture="residual", max_iter=40, n_threads=1, random_state=0)
shallow = CRClassifier((16,), **params).fit(X_train, y_train)
print(f"shallow test accuracy: {shallow.score(X_test, y_test):.3f}")

# %%
# Expansion preserves the function
# --------------------------------
# The signal is measured for each insertion position (here only one: after
# the stem). Inserting a block there changes no prediction; training then
# continues with ``warm_start``.
print("first-order signal per position:", first_order_signal(shallow, X_train, y_train))
deeper = expand_depth(shallow, position=0)
gap = np.abs(deeper.predict_proba(X_test) - shallow.predict_proba(X_test)).max()
print(f"largest probability change after insertion: {gap:.1e}")
deeper.set_params(warm_start=True).fit(X_train, y_train)
print(f"after fine-tuning: {deeper.score(X_test, y_test):.3f}")

# %%
# Growing with the substitution rule
# ----------------------------------
# Each step inserts a block where the signal is strongest, fine-tunes, and
# keeps the step only if the training loss is no worse than before.
grown = DepthGrowth(
    CRClassifier((16,), **params), max_blocks=3, tol=1e-3, random_state=0
).fit(X_train, y_train)
print(f"stopped because of: {grown.stop_reason_}; blocks: {grown.n_blocks_}")
print(f"grown test accuracy: {grown.score(X_test, y_test):.3f}")

history = grown.growth_history_
steps = [h["step"] for h in history]
fig, (ax_signal, ax_loss) = plt.subplots(1, 2, figsize=(9, 3.5))
ax_signal.plot(steps[1:], [h["signal"] for h in history[1:]], "o-")
ax_signal.set(xlabel="growth step", ylabel="strongest signal", title="Signal")
ax_loss.plot(steps, [h["train_loss"] for h in history], "o-", label="train")
ax_loss.plot(steps, [h["valid_loss"] for h in history], "s-", label="validation")
ax_loss.set(xlabel="growth step", ylabel="log-loss", title="Loss")
ax_loss.legend()
fig.tight_layout()
plt.show()
