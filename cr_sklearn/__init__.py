"""cr_sklearn: scikit-learn estimators for polynomial-DREG (ChainzRule) networks."""

from ._classifier import CRClassifier
from ._ordinal import CROrdinalRegressor
from ._persistence import load_model, save_model
from ._scoring import (
    ORDINAL_SCORERS,
    DREGScorer,
    OrdinalScorer,
    get_ordinal_scorer,
    gradient_norms,
    gradient_tail_ratio,
    macro_averaged_mean_absolute_error,
)
from .growth import DepthGrowth

__version__ = "0.1.0"

__all__ = [
    "CRClassifier",
    "CROrdinalRegressor",
    "DREGScorer",
    "DepthGrowth",
    "ORDINAL_SCORERS",
    "OrdinalScorer",
    "__version__",
    "get_ordinal_scorer",
    "gradient_norms",
    "gradient_tail_ratio",
    "load_model",
    "macro_averaged_mean_absolute_error",
    "save_model",
]
