"""cr_sklearn: scikit-learn estimators for polynomial-DREG (ChainzRule) networks.

The public names load on first use (PEP 562), so that ``import cr_sklearn``
and the ``cr-sklearn`` command's ``--help`` do not import torch.
"""

import importlib
from typing import TYPE_CHECKING

from ._version import __version__

# Public name -> the module that defines it.
_EXPORTS = {
    "CRClassifier": "._classifier",
    "CROrdinalRegressor": "._ordinal",
    "DREGScorer": "._tau",
    "DepthGrowth": ".growth",
    "ORDINAL_SCORERS": "._ordinal_metrics",
    "OrdinalScorer": "._ordinal_metrics",
    "PiecewiseLinearEncoder": "._encoding",
    "RiskCoverageDisplay": ".selective",
    "SelectiveClassifier": ".selective",
    "aurc_score": ".selective",
    "confidence_signals": ".selective",
    "eaurc_score": ".selective",
    "get_ordinal_scorer": "._ordinal_metrics",
    "gradient_norms": "._tau",
    "gradient_tail_ratio": "._tau",
    "load_model": "._persistence",
    "macro_averaged_mean_absolute_error": "._ordinal_metrics",
    "make_aurc_scorer": ".selective",
    "neg_aurc_scorer": ".selective",
    "risk_coverage_curve": ".selective",
    "save_model": "._persistence",
}
_SUBPACKAGES = set("cli datasets growth nn plotting selective study text".split())

__all__ = [
    "CRClassifier",
    "CROrdinalRegressor",
    "DREGScorer",
    "DepthGrowth",
    "ORDINAL_SCORERS",
    "OrdinalScorer",
    "PiecewiseLinearEncoder",
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


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'cr_sklearn' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__, *_SUBPACKAGES})


if TYPE_CHECKING:  # pragma: no cover - for static analysis only
    from ._classifier import CRClassifier
    from ._encoding import PiecewiseLinearEncoder
    from ._ordinal import CROrdinalRegressor
    from ._ordinal_metrics import (
        ORDINAL_SCORERS,
        OrdinalScorer,
        get_ordinal_scorer,
        macro_averaged_mean_absolute_error,
    )
    from ._persistence import load_model, save_model
    from ._tau import DREGScorer, gradient_norms, gradient_tail_ratio
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
