"""The CR network and its dual-stream (value + Jacobian) forward pass.

The stream carries, next to the hidden values ``h_l``, the Jacobian of each
layer with respect to the network input, by the chain rule in forward mode::

    J_0 = V                         (identity, or random directions)
    J_l = diag(phi'(z_l)) W_l J_{l-1}

Values and Jacobians share each weight matrix. Stacking them (``[h; J]``, one
product per layer) was measured slower on CPU than two products, because the
stacking copies ``J`` every layer; the exact stream also skips the first
layer's product with the identity (``J_1 = diag(phi'(z_1)) W_1``).
"""

import torch
from torch import nn
from torch.nn.modules import module as _module

from ._base import BaseCRNetwork, StreamOutput, random_directions
from .activations import make_activation

# StreamOutput and random_directions live in ._base, shared with the residual
# network; they stay importable from here.
__all__ = ["CRNetwork", "StreamOutput", "random_directions"]


def _plain_call(module):
    """Whether ``module`` has an in-place inference path and no hooks to run.

    Calling ``_forward_overwrite`` directly skips ``nn.Module.__call__``, so it
    is only taken when no forward hook (the module's or a global one) would
    be skipped with it.
    """
    return (
        hasattr(module, "_forward_overwrite")
        and not module._forward_hooks
        and not module._forward_pre_hooks
        and not _module._global_forward_hooks
        and not _module._global_forward_pre_hooks
    )


class CRNetwork(BaseCRNetwork):
    """Feed-forward network of PolyLayers with a dual-stream forward pass.

    A PolyLayer is ``h = phi(W h_prev + b)`` with a learnable cubic ``phi``
    per neuron (or a fixed activation). The last layer is linear.

    Parameters
    ----------
    n_features : int
        Input dimension ``d``.
    n_outputs : int
        Output dimension.
    hidden_layer_sizes : sequence of int, default=(64, 64)
        Widths of the activated layers.
    activation : str, default="poly"
        One of :data:`~cr_sklearn.nn.ACTIVATION_NAMES`; see
        :func:`cr_sklearn.nn.make_activation`.
    degree : int, default=3
        Polynomial degree for ``activation="poly"``.
    dropout : float, default=0.0
        Dropout probability after each activated layer (training only).
    spectral_norm : bool, default=False
        Constrain every weight matrix to spectral norm 1
        (:func:`torch.nn.utils.parametrizations.spectral_norm`).
    encoded_features : int or None, default=None
        Columns of a :class:`~cr_sklearn.nn.PiecewiseLinearEncoding` after
        the standardisation (see :class:`~cr_sklearn.nn.BaseCRNetwork`).
    stream_space : {"input", "encoded"}, default="input"
        With an encoding, whether the stream differentiates by the input or
        by the encoded columns (see :class:`~cr_sklearn.nn.BaseCRNetwork`).

    Attributes
    ----------
    hidden : torch.nn.ModuleList of torch.nn.Linear
        The activated layers' affine maps, in order.
    activations : torch.nn.ModuleList
        Their activations.
    output : torch.nn.Linear
        Last (linear) layer.

    Notes
    -----
    Inputs are standardised inside the module with the buffers
    ``input_mean`` and ``input_scale`` (identity until
    :meth:`set_input_scaling` is called). Penalties act on the Jacobian with
    respect to the standardised input; :meth:`input_jacobian` returns the
    Jacobian with respect to the raw input.
    """

    def __init__(
        self,
        n_features,
        n_outputs,
        hidden_layer_sizes=(64, 64),
        activation="poly",
        degree=3,
        dropout=0.0,
        spectral_norm=False,
        encoded_features=None,
        stream_space="input",
    ):
        super().__init__(
            n_features,
            n_outputs,
            dropout=dropout,
            encoded_features=encoded_features,
            stream_space=stream_space,
        )
        sizes = [self.input_width, *[int(w) for w in hidden_layer_sizes]]
        wrap = nn.utils.parametrizations.spectral_norm if spectral_norm else None
        self.hidden = nn.ModuleList()
        self.activations = nn.ModuleList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            layer = nn.Linear(fan_in, fan_out)
            self.hidden.append(wrap(layer) if wrap else layer)
            self.activations.append(make_activation(activation, fan_out, degree=degree))
        out = nn.Linear(sizes[-1], self.n_outputs)
        self.output = wrap(out) if wrap else out

    @property
    def hidden_layer_sizes(self):
        """Widths of the activated layers."""
        return tuple(layer.out_features for layer in self.hidden)

    def forward(self, x):
        """Compute the values only: the cheapest pass, used for prediction.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input.

        Returns
        -------
        torch.Tensor of shape (batch, n_outputs)
            The network output.
        """
        h = self._inputs(x)
        overwrite = not torch.is_grad_enabled()
        for layer, act in zip(self.hidden, self.activations, strict=True):
            z = layer(h)
            if overwrite and _plain_call(act):
                # z is this pass's own scratch tensor: reuse its memory.
                h = act._forward_overwrite(z)
            else:
                h = act(z)
            mask = self._dropout_mask(h)
            if mask is not None:
                h = h * mask
        return self.output(h)

    def _stream_pass(self, h, directions, *, exact, derivatives, rows):
        batch = h.shape[0] if rows is None else rows.shape[0]
        stream = exact or directions is not None
        # j holds the Jacobian applied to the directions, (batch, k, width):
        # rows are directions, so ``j @ W.T`` is one product per layer.
        j = directions
        derivs, weights, jacobians = [], [], []
        for layer, act in zip(self.hidden, self.activations, strict=True):
            weight = layer.weight
            weights.append(weight)
            # One transpose for the value and the stream products (each
            # ``.t()`` is an autograd node).
            weight_t = weight.t()
            z = torch.addmm(layer.bias, h, weight_t)
            # Drawn from z, of h's shape: the same random numbers.
            mask = self._dropout_mask(z)
            if stream or derivatives:
                h, d = act.forward_and_derivative(z, mask)
            else:
                h, d = act(z), None
                if mask is not None:
                    h = h * mask
            derivs.append(d)
            if stream:
                # The exact stream starts from the identity: I W^T = W^T, no
                # product needed in the first layer.
                # (A contiguous W^T: broadcasting over a transposed view is
                # several times slower.)
                zj = weight_t.contiguous() if j is None else j @ weight_t
                j = (d if rows is None else d[rows]).unsqueeze(1) * zj
                jacobians.append(j.transpose(1, 2))
        weight_t = self.output.weight.t()
        out = torch.addmm(self.output.bias, h, weight_t)
        if stream:
            oj = weight_t if j is None else torch.matmul(j, weight_t)
            if oj.dim() == 2 or oj.shape[0] != batch:
                # No activated layer: the same Jacobian for every row. (An
                # expand to the shape it has would add an autograd node.)
                oj = oj.expand(batch, *oj.shape[-2:])
            jacobians.append(oj.transpose(1, 2))
        return out, derivs, weights, (jacobians if stream else None)

    def _reverse_jacobian(self, x):
        res = self.forward_stream(x, None, derivatives=True)
        # Row o of G is d output_o / d h_l, pulled back layer by layer.
        g = self.output.weight.unsqueeze(0).expand(x.shape[0], -1, -1)
        for d, weight in zip(
            reversed(res.derivatives), reversed(res.weights), strict=True
        ):
            g = torch.matmul(g * d.unsqueeze(1), weight)
        return g
