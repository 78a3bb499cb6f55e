"""The CR network and its dual-stream (value + Jacobian) forward pass.

The stream carries, next to the hidden values ``h_l``, the Jacobian of each
layer with respect to the network input, by the chain rule in forward mode::

    J_0 = V                         (identity, or k random directions)
    J_l = diag(phi'(z_l)) W_l J_{l-1}

Values and Jacobians share each weight matrix. Stacking them (``[h; J]``, one
product per layer) was measured slower on CPU than two products, because the
stacking copies ``J`` every layer; the exact stream also skips the first
layer's product with the identity (``J_1 = diag(phi'(z_1)) W_1``).
"""

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.modules import module as _module

from .activations import make_activation

__all__ = ["CRNetwork", "StreamOutput", "random_directions"]


@dataclass
class StreamOutput:
    """What one forward pass through a CR network produced.

    The fields are the constructor's parameters and the attributes alike.

    Parameters
    ----------
    output : torch.Tensor of shape (batch, n_outputs)
        The network output (logits or latent scores).
    derivatives : list of torch.Tensor of shape (batch, width_l)
        ``phi'(z_l)`` of every activated layer (times the dropout mask in
        training), or ``None`` entries when not requested.
    weights : list of torch.Tensor of shape (width_l, width_{l-1})
        The effective weight matrix of every activated layer, in order.
    jacobians : list of torch.Tensor of shape (batch, width_l, k) or None
        Jacobian of each layer output with respect to the (standardised)
        network input, applied to ``k`` directions; the last entry belongs to
        the output layer. ``None`` when the stream was not requested.
    n_directions : int
        ``k``: ``n_features`` for the exact stream, else the projections used.
    """

    output: torch.Tensor
    derivatives: list
    weights: list
    jacobians: list = None
    n_directions: int = 0


def random_directions(batch, n_features, k, *, dtype, device, generator=None):
    """Rademacher directions scaled for unbiased Frobenius-norm estimates.

    Each of the ``k`` directions has entries ``+-1/sqrt(k)``, drawn per sample,
    so that ``E[||J V||_F^2] = ||J||_F^2`` (Hutchinson's estimator averaged over
    ``k`` draws).

    Parameters
    ----------
    batch, n_features, k : int
        Shape of the result is ``(batch, k, n_features)``.
    dtype : torch.dtype
        Of the result.
    device : torch.device or str
        Of the result.
    generator : torch.Generator, optional
        Source of randomness; the default generator otherwise.

    Returns
    -------
    torch.Tensor of shape (batch, k, n_features)
        Entries ``+-1/sqrt(k)``.
    """
    signs = torch.randint(
        0, 2, (batch, k, n_features), generator=generator, device=device
    )
    return (2.0 * signs.to(dtype) - 1.0) / (k**0.5)


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


class CRNetwork(nn.Module):
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
        See :func:`cr_sklearn.nn.make_activation`.
    degree : int, default=3
        Polynomial degree for ``activation="poly"``.
    dropout : float, default=0.0
        Dropout probability after each activated layer (training only).
    spectral_norm : bool, default=False
        Constrain every weight matrix to spectral norm 1
        (:func:`torch.nn.utils.parametrizations.spectral_norm`).

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
    ):
        super().__init__()
        self.n_features = int(n_features)
        self.n_outputs = int(n_outputs)
        self.dropout = float(dropout)
        sizes = [self.n_features, *[int(w) for w in hidden_layer_sizes]]
        wrap = nn.utils.parametrizations.spectral_norm if spectral_norm else None
        self.hidden = nn.ModuleList()
        self.activations = nn.ModuleList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            layer = nn.Linear(fan_in, fan_out)
            self.hidden.append(wrap(layer) if wrap else layer)
            self.activations.append(make_activation(activation, fan_out, degree=degree))
        out = nn.Linear(sizes[-1], self.n_outputs)
        self.output = wrap(out) if wrap else out
        self.register_buffer("input_mean", torch.zeros(self.n_features))
        self.register_buffer("input_scale", torch.ones(self.n_features))

    def set_input_scaling(self, mean, scale):
        """Set the standardisation ``(x - mean) / scale`` applied to inputs.

        Parameters
        ----------
        mean : array-like of shape (n_features,)
            Subtracted from each raw input.
        scale : array-like of shape (n_features,)
            Divides each centred input; no zeros.

        Returns
        -------
        self : CRNetwork
            The network, rescaled in place.
        """
        with torch.no_grad():
            self.input_mean.copy_(torch.as_tensor(mean, dtype=self.input_mean.dtype))
            self.input_scale.copy_(torch.as_tensor(scale, dtype=self.input_scale.dtype))
        return self

    def _dropout_mask(self, h):
        if not (self.training and self.dropout > 0):
            return None
        keep = torch.rand_like(h) >= self.dropout
        return keep.to(h.dtype) / (1.0 - self.dropout)

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
        h = (x - self.input_mean) / self.input_scale
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

    def forward_stream(
        self, x, jacobian=None, *, derivatives=True, directions=None, rows=None
    ):
        """Forward pass that also returns derivatives and, optionally, Jacobians.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input.
        jacobian : {None, "exact"} or int, default=None
            ``None``: no Jacobian stream. ``"exact"``: the full Jacobian
            (``k = n_features`` directions, the identity). An int ``k``: ``k``
            random Rademacher directions per sample, scaled so that the
            expected squared Frobenius norm equals the exact one.
        derivatives : bool, default=True
            Keep ``phi'(z_l)`` of every layer (needed by the local penalty).
        directions : torch.Tensor of shape (batch or 1, k, n_features), optional
            Explicit directions; overrides ``jacobian``. With ``rows``, one
            per selected row (or 1).
        rows : torch.Tensor of int64, optional
            Carry the Jacobian stream for these rows of ``x`` only (values and
            derivatives are computed for every row). The Jacobians then have
            ``len(rows)`` on their batch axis; a uniformly random subset makes
            a batch-mean penalty an unbiased estimate of the full one.

        Returns
        -------
        StreamOutput
            Output, derivatives, weights and (optionally) Jacobians.
        """
        h = (x - self.input_mean) / self.input_scale
        batch = h.shape[0] if rows is None else rows.shape[0]
        exact = directions is None and jacobian == "exact"
        if directions is None and jacobian is not None and not exact:
            directions = random_directions(
                batch,
                self.n_features,
                int(jacobian),
                dtype=h.dtype,
                device=h.device,
            )
        stream = exact or directions is not None
        # j holds the Jacobian applied to the directions, (batch, k, width):
        # rows are directions, so ``j @ W.T`` is one product per layer.
        j = directions
        derivs, weights, jacobians = [], [], []
        for layer, act in zip(self.hidden, self.activations, strict=True):
            weight = layer.weight
            weights.append(weight)
            z = torch.nn.functional.linear(h, weight, layer.bias)
            if stream or derivatives:
                h, d = act.forward_and_derivative(z)
            else:
                h, d = act(z), None
            mask = self._dropout_mask(h)
            if mask is not None:
                h = h * mask
                d = None if d is None else d * mask
            derivs.append(d if derivatives else None)
            if stream:
                # The exact stream starts from the identity: I W^T = W^T, no
                # product needed in the first layer.
                # (A contiguous W^T: broadcasting over a transposed view is
                # several times slower.)
                zj = weight.t().contiguous() if j is None else j @ weight.t()
                j = (d if rows is None else d[rows]).unsqueeze(1) * zj
                jacobians.append(j.transpose(1, 2))
        weight = self.output.weight
        out = torch.nn.functional.linear(h, weight, self.output.bias)
        if stream:
            oj = weight.t() if j is None else torch.matmul(j, weight.t())
            jacobians.append(oj.expand(batch, *oj.shape[-2:]).transpose(1, 2))
        return StreamOutput(
            output=out,
            derivatives=derivs,
            weights=weights,
            jacobians=jacobians if stream else None,
            n_directions=(self.n_features if exact else directions.shape[1])
            if stream
            else 0,
        )

    def input_jacobian(self, x, *, mode="auto"):
        """Jacobian of the output with respect to the raw input.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input.
        mode : {"auto", "forward", "reverse"}, default="auto"
            ``"forward"`` carries the exact stream (cost grows with
            ``n_features``); ``"reverse"`` pulls each output back through the
            transposed chain rule with the same closed-form derivatives (cost
            grows with ``n_outputs``). ``"auto"`` picks the cheaper one.

        Returns
        -------
        torch.Tensor of shape (batch, n_outputs, n_features)
            ``d output / d x`` for each sample.
        """
        if mode == "auto":
            mode = "reverse" if self.n_outputs < self.n_features else "forward"
        if mode == "forward":
            res = self.forward_stream(x, "exact", derivatives=False)
            jac = res.jacobians[-1]  # (batch, n_outputs, d)
        elif mode == "reverse":
            res = self.forward_stream(x, None, derivatives=True)
            # Row o of G is d output_o / d h_l, pulled back layer by layer.
            g = self.output.weight.unsqueeze(0).expand(x.shape[0], -1, -1)
            for d, weight in zip(
                reversed(res.derivatives), reversed(res.weights), strict=True
            ):
                g = torch.matmul(g * d.unsqueeze(1), weight)
            jac = g
        else:
            raise ValueError(
                f"mode must be 'auto', 'forward' or 'reverse', got {mode!r}"
            )
        return jac / self.input_scale
