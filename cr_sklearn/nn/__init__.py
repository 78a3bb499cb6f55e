"""Plain PyTorch building blocks of CR networks (no scikit-learn imports).

:data:`ARCHITECTURES`, :data:`ACTIVATION_NAMES`, :data:`PENALTIES` and
:data:`ORDINAL_HEADS` are the registries the estimators' parameters name.
"""

from ._base import BaseCRNetwork, StreamOutput, random_directions
from .activations import (
    ACTIVATION_NAMES,
    ACTIVATIONS,
    FixedActivation,
    PolyActivation,
    make_activation,
)
from .input_encoding import PiecewiseLinearEncoding
from .network import CRNetwork
from .ordinal import ORDINAL_HEADS, CORALLoss, CumulativeLinkLoss, OrdinalHead
from .penalties import (
    PENALTIES,
    Penalty,
    gradient_spread,
    input_gradient_penalty,
    local_dreg,
    stream_dreg,
)
from .residual import ResidualCRNetwork

#: Network classes by architecture name. Each takes ``(n_features, n_outputs)``
#: and the keywords ``hidden_layer_sizes``, ``activation``, ``degree``,
#: ``dropout`` and ``spectral_norm``, and is a :class:`BaseCRNetwork`.
ARCHITECTURES = {"mlp": CRNetwork, "residual": ResidualCRNetwork}

__all__ = [
    "ACTIVATIONS",
    "ACTIVATION_NAMES",
    "ARCHITECTURES",
    "BaseCRNetwork",
    "CORALLoss",
    "CRNetwork",
    "CumulativeLinkLoss",
    "FixedActivation",
    "ORDINAL_HEADS",
    "OrdinalHead",
    "PENALTIES",
    "Penalty",
    "PiecewiseLinearEncoding",
    "PolyActivation",
    "ResidualCRNetwork",
    "StreamOutput",
    "gradient_spread",
    "input_gradient_penalty",
    "local_dreg",
    "make_activation",
    "random_directions",
    "stream_dreg",
]
