"""Selective prediction: which predictions to trust, and how much to reject."""

from ._classifier import SelectiveClassifier
from ._display import RiskCoverageDisplay
from ._metrics import aurc_score, eaurc_score, risk_coverage_curve
from ._scorer import make_aurc_scorer, neg_aurc_scorer
from ._signals import confidence_signals

__all__ = [
    "RiskCoverageDisplay",
    "SelectiveClassifier",
    "aurc_score",
    "confidence_signals",
    "eaurc_score",
    "make_aurc_scorer",
    "neg_aurc_scorer",
    "risk_coverage_curve",
]
