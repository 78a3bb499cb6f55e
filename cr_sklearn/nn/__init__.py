"""Plain PyTorch building blocks of CR networks (no scikit-learn imports)."""

from .activations import ACTIVATIONS, FixedActivation, PolyActivation, make_activation
from .network import CRNetwork, StreamOutput, random_directions
from .penalties import (
    PENALTIES,
    Penalty,
    input_gradient_penalty,
    local_dreg,
    stream_dreg,
)

__all__ = [
    "ACTIVATIONS",
    "CRNetwork",
    "FixedActivation",
    "PENALTIES",
    "Penalty",
    "PolyActivation",
    "StreamOutput",
    "input_gradient_penalty",
    "local_dreg",
    "make_activation",
    "random_directions",
    "stream_dreg",
]
