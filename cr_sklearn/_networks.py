"""The fitted network and the layers a fit trains (private).

A fitted CR model is one float64 network, ``module_``: the input transform
(standardisation and encoding, as buffers) and the layers. A fit trains the
layers, in the training dtype, on the transform's output computed once:
:func:`training_layers` takes them out of a network, :func:`adopt` puts
trained ones back. With ``dreg_space="input"`` the training layers keep the
encoding (a fixed layer) and read the standardised input, so that the
stream differentiates by the columns tau reads; otherwise they read the
encoded columns. Both directions copy parameters exactly (float32
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


def keeps_encoding(network, space):
    """Whether the training layers of ``network`` keep its encoding (``space``)."""
    return space == "input" and network.encoding is not None


def training_layers(network, dtype, space="encoded"):
    """The layers of ``network`` as a network of their own, cast to ``dtype``.

    It reads what :func:`transformed` returns for ``space``; its
    standardisation is the identity. With :func:`keeps_encoding`, it holds
    the encoding and its stream differentiates by the standardised input;
    else it has no encoding. Built from the network's own configuration
    (growth may have changed it since the plan).
    """
    keep = keeps_encoding(network, space)
    config = {
        **network._config,
        "n_features": network.n_features if keep else network.input_width,
        "encoded_features": network.input_width if keep else None,
        "stream_space": "input",
        "n_members": network.n_members,
    }
    layers = type(network)(**config).to(dtype)
    state = layers.state_dict()
    for key, value in network.state_dict().items():
        if not _is_transform(key) or (keep and key.startswith("encoding.")):
            # The encoding's integer and boolean buffers keep their dtype.
            cast = dtype if value.is_floating_point() else value.dtype
            state[key] = value.to(cast, copy=True)
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


def transformed(network, X, dtype, device, space="encoded"):
    """The training layers' inputs: float64, in chunks, cast to ``dtype``.

    ``network.transform_input(X)``, or with :func:`keeps_encoding` the
    standardised ``X`` alone. ``X`` is a float64 numpy array; the result a
    tensor on ``device``.
    """
    keep = keeps_encoding(network, space)
    function = network._standardise if keep else network.transform_input
    n = X.shape[0]
    width = network.n_features if keep else network.input_width
    out = torch.empty((n, width), dtype=dtype, device=device)
    rows = max(1, min(4096, 2**22 // max(1, width)))
    # A view of X where numpy allows it; a copy of a read-only chunk.
    as_tensor = torch.as_tensor if X.flags.writeable else torch.tensor
    with torch.no_grad():
        for start in range(0, n, rows):
            sl = slice(start, start + rows)
            h = function(as_tensor(X[sl], device=device))
            out[sl] = h.to(dtype)
    return out
