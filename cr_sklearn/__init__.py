"""cr_sklearn: scikit-learn estimators for polynomial-DREG (ChainzRule) networks."""

from ._classifier import CRClassifier

__version__ = "0.1.0"

__all__ = [
    "CRClassifier",
    "__version__",
]
