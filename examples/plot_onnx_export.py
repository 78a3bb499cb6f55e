"""
===================================================
Exporting a fitted CR network to ONNX
===================================================

skl2onnx has no converter for :class:`~cr_sklearn.CRClassifier`, and needs
none: the fitted network is a plain PyTorch module, ``module_``, which reads
the raw features (its standardisation and input encoding are inside it) and
returns the logits of :meth:`~cr_sklearn.CRClassifier.decision_function`.
Export it with :func:`torch.onnx.export`, followed by the output activation
that :meth:`~cr_sklearn.CRClassifier.predict_proba` applies:

- two classes: one logit per row, the probability of the second class is
  its sigmoid;
- more classes: one logit per class, a softmax over them;
- ``n_members > 1``: the module returns one output per member (a first axis
  of ``n_members``), and ``predict_proba`` averages the members'
  probabilities.

The module is the float64 network ``predict_proba`` itself runs (in
evaluation mode after ``fit``: dropout off), so the ONNX graph takes
float64 input and computes what ``predict_proba`` computes. The graph is
evaluated here with onnxruntime when it is installed, else with the
reference evaluator of the ``onnx`` package, and compared with
``predict_proba``. The export itself needs the ``onnx`` package
(``pip install onnx``; the ``integration`` and ``docs`` extras hold it).

The example runs in seconds on one CPU core.
"""

# %%
# A fitted classifier
# -------------------
import importlib.util
import io
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split

from cr_sklearn import CRClassifier

QUICK = os.environ.get("CR_SKLEARN_EXAMPLE_QUICK") == "1"
X, y = load_wine(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, stratify=y, random_state=0)
clf = CRClassifier(max_iter=10 if QUICK else 100, random_state=0)
clf.fit(X_train, y_train)
print(f"test accuracy: {clf.score(X_test, y_test):.3f}")


# %%
# The module and its output activation
# ------------------------------------
# One small wrapper turns the module's logits into probabilities, for any
# number of classes and members.
class Probabilities(torch.nn.Module):
    """``module_`` followed by the activation of ``predict_proba``.

    The shape of the module's output decides the activation once, here, so
    that the exported graph has no branch.
    """

    def __init__(self, module, example):
        super().__init__()
        self.module = module.eval()  # dropout off
        with torch.no_grad():
            out = module(example)
        self.binary = out.shape[-1] == 1
        self.members = out.dim() == 3

    def forward(self, x):
        logits = self.module(x)
        if self.binary:  # P(second class) = sigmoid of the one logit
            p = torch.sigmoid(logits)
            proba = torch.cat([1 - p, p], dim=-1)
        else:
            proba = torch.softmax(logits, dim=-1)
        if self.members:  # members first: their mean
            proba = proba.mean(dim=0)
        return proba


example = torch.tensor(X_test[:2], dtype=torch.float64)
# In eval mode: exporters restore the mode of the module they are given.
model = Probabilities(clf.module_, example).eval()
buffer = io.BytesIO()
# The TorchScript exporter (dynamo=False) traces the module as it runs;
# torch.export, behind the default dynamo=True, does not trace the module's
# own kernels yet.
torch.onnx.export(
    model,
    (example,),
    buffer,
    dynamo=False,
    input_names=["x"],
    output_names=["probabilities"],
    dynamic_axes={"x": {0: "rows"}, "probabilities": {0: "rows"}},
)
print(f"ONNX graph: {len(buffer.getvalue()) / 1024:.0f} KiB")

# %%
# Evaluating the graph
# --------------------
# onnxruntime where it is installed; otherwise the reference evaluator of
# the ``onnx`` package (slower, plain Python, the same graph).
inputs = {"x": X_test.astype(np.float64)}
if importlib.util.find_spec("onnxruntime") is not None:
    import onnxruntime

    session = onnxruntime.InferenceSession(buffer.getvalue())
    (proba_onnx,) = session.run(None, inputs)
    runner = "onnxruntime"
else:
    import onnx
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(onnx.load_from_string(buffer.getvalue()))
    (proba_onnx,) = evaluator.run(None, inputs)
    runner = "onnx.reference"

proba = clf.predict_proba(X_test)
gap = np.abs(proba_onnx - proba).max()
print(f"{runner}: largest difference from predict_proba {gap:.1e}")

# %%
# The two agree to float64 rounding.
fig, ax = plt.subplots(figsize=(5, 4.5), layout="constrained")
for k, name in enumerate(clf.classes_):
    ax.scatter(proba[:, k], proba_onnx[:, k], s=14, label=f"class {name}")
ax.plot([0, 1], [0, 1], color="black", linewidth=0.8)
ax.set_xlabel("predict_proba")
ax.set_ylabel(f"ONNX graph ({runner})")
ax.set_title(f"Exported probabilities, largest difference {gap:.1e}")
ax.legend(frameon=False)
plt.show()
