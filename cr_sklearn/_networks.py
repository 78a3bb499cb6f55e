"""The fitted network and the layers a fit trains (private).

A fitted CR model is one float64 network, ``module_``: the input transform
(standardisation and encoding, as buffers) and the layers. A fit trains the
layers alone, in the training dtype, on the transform's output computed
once: :func:`training_layers` takes them out of a network, :func:`adopt`
puts trained ones back. Both directions copy parameters exactly (float32
values are float64 values), so a warm start continues from exactly the
weights that were trained.
"""

import copy

import torch

from .nn import ARCHITECTURES

__all__ = []

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def torch_dtype(name):
    """The torch dtype named ``"float32"`` or ``"float64"``."""
    return _DTYPES[name]


def _is_transform(key):
    return key in ("input_mean", "input_scale") or key.startswith("encoding.")


def build(plan, n_inputs, *, encoded=None, n_members=None, dtype=torch.float64):
    """A network of the plan's architecture reading ``n_inputs`` columns.

    ``encoded``: the encoding's width (a fitted network's input encoding);
    ``n_members``: a member stack of that many networks (``None``: one).
    """
    network = ARCHITECTURES[plan.architecture](
        n_inputs,
        plan.n_outputs,
        hidden_layer_sizes=plan.hidden,
        activation=plan.activation,
        degree=plan.degree,
        dropout=plan.dropout,
        spectral_norm=plan.spectral_norm,
        encoded_features=encoded,
        # The encoding acts as fixed features: DREG differentiates by the
        # encoded columns the first layer reads.
        stream_space="encoded",
        n_members=n_members,
    )
    return network.to(dtype)


def training_layers(network, dtype):
    """The layers of ``network`` as a network of their own, cast to ``dtype``.

    It reads what ``network.transform_input`` returns; its standardisation
    is the identity and it has no encoding. Built from the network's own
    configuration (growth may have changed it since the plan).
    """
    config = {
        **network._config,
        "n_features": network.input_width,
        "encoded_features": None,
        "n_members": network.n_members,
    }
    layers = type(network)(**config).to(dtype)
    state = layers.state_dict()
    for key, value in network.state_dict().items():
        if not _is_transform(key):
            state[key] = value.to(dtype, copy=True)
    # Assigned, not copied in: the freshly drawn weights are freed at once.
    layers.load_state_dict(state, assign=True)
    return layers


def adopt(network, layers):
    """A copy of ``network`` (float64, eval) holding ``layers``' parameters."""
    adopted = copy.deepcopy(network)
    state = adopted.state_dict()
    for key, value in layers.state_dict().items():
        if not _is_transform(key):
            state[key] = value.to(torch.float64)
    adopted.load_state_dict(state)
    for p in adopted.parameters():
        p.requires_grad_(False)
    return adopted.eval()


def transformed(network, X, dtype, device):
    """``network.transform_input(X)`` in float64, in chunks, cast to ``dtype``.

    ``X`` is a float64 numpy array; the result a tensor on ``device``.
    """
    n, width = X.shape[0], network.input_width
    out = torch.empty((n, width), dtype=dtype, device=device)
    rows = max(1, min(4096, 2**22 // max(1, width)))
    with torch.no_grad():
        for start in range(0, n, rows):
            sl = slice(start, start + rows)
            h = network.transform_input(torch.as_tensor(X[sl], device=device))
            out[sl] = h.to(dtype)
    return out
