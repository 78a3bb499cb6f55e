"""Write the format-3 model files of tests/data and their predictions."""

import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification

from cr_sklearn import CRClassifier, CROrdinalRegressor, save_model

out = Path(sys.argv[1])
X, y = make_classification(
    n_samples=150,
    n_features=5,
    n_informative=4,
    n_redundant=0,
    n_classes=3,
    random_state=0,
)
models = {
    "classifier_defaults": CRClassifier(random_state=0),
    "ordinal": CROrdinalRegressor((16,), max_iter=20, random_state=0),
    "members": CRClassifier(
        (8,), max_iter=10, n_members=3, oob_score=True, random_state=0
    ),
    "ordinal_encoded_members": CROrdinalRegressor(
        (8,), max_iter=10, encoding_bins=5, n_members=2, random_state=0
    ),
}
expected = {"X": X[:40]}
for name, model in models.items():
    model.fit(X, y)
    save_model(model, out / f"{name}_format3.safetensors")
    expected[f"{name}_proba"] = model.predict_proba(X[:40])
    expected[f"{name}_jacobian"] = model.jacobian(X[:40])
np.savez_compressed(out / "format3_predictions.npz", **expected)
