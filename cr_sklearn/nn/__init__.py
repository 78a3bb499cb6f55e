"""Plain PyTorch building blocks of CR networks (no scikit-learn imports)."""

from .activations import ACTIVATIONS, FixedActivation, PolyActivation, make_activation
from .network import CRNetwork, StreamOutput, random_directions
from .ordinal import ORDINAL_HEADS, CORALLoss, CumulativeLinkLoss, OrdinalHead
from .penalties import (
    PENALTIES,
    Penalty,
    input_gradient_penalty,
    local_dreg,
    stream_dreg,
)
from .residual import ResidualCRNetwork

__all__ = [
    "ACTIVATIONS",
    "CORALLoss",
    "CRNetwork",
    "CumulativeLinkLoss",
    "FixedActivation",
    "ORDINAL_HEADS",
    "OrdinalHead",
    "PENALTIES",
    "Penalty",
    "PolyActivation",
    "ResidualCRNetwork",
    "StreamOutput",
    "input_gradient_penalty",
    "local_dreg",
    "make_activation",
    "random_directions",
    "stream_dreg",
]
