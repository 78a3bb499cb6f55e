"""cr_sklearn: scikit-learn estimators for polynomial-DREG (ChainzRule) networks."""

from ._classifier import CRClassifier
from ._ordinal import CROrdinalRegressor
from ._ordinal_metrics import (
    ORDINAL_SCORERS,
    OrdinalScorer,
    get_ordinal_scorer,
    macro_averaged_mean_absolute_error,
)
from ._persistence import load_model, save_model
from ._tau import DREGScorer, gradient_norms, gradient_tail_ratio
from ._version import __version__
from .growth import DepthGrowth
from .selective import (
    RiskCoverageDisplay,
    SelectiveClassifier,
    aurc_score,
    confidence_signals,
    eaurc_score,
    make_aurc_scorer,
    neg_aurc_scorer,
    risk_coverage_curve,
)

__all__ = [
    "CRClassifier",
    "CROrdinalRegressor",
    "DREGScorer",
    "DepthGrowth",
    "ORDINAL_SCORERS",
    "OrdinalScorer",
    "RiskCoverageDisplay",
    "SelectiveClassifier",
    "__version__",
    "aurc_score",
    "confidence_signals",
    "eaurc_score",
    "get_ordinal_scorer",
    "gradient_norms",
    "gradient_tail_ratio",
    "load_model",
    "macro_averaged_mean_absolute_error",
    "make_aurc_scorer",
    "neg_aurc_scorer",
    "risk_coverage_curve",
    "save_model",
]
