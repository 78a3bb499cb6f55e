"""Normalised residual CR network with a dual-stream forward pass.

A PolyLayer stem followed by pre-normalised residual blocks::

    h_0     = phi_0(W_0 x + b_0)                                  (stem)
    h_{l+1} = h_l + U_l phi_l(W_l RMSNorm_l(h_l) + c_l) + e_l     (block l)
    y       = W_out h_L + b_out                                   (output)

A block inserted with zero ``U_l`` and ``e_l`` is the identity. The skip
path carries the incoming Jacobian, RMSNorm its own.
"""

import torch
from torch import nn

from ._base import BaseCRNetwork
from ._members import (
    check_n_members,
    layer_product,
    linear,
    make_linear,
    rows_product,
    select_rows,
)
from .activations import PolyActivation, make_activation

__all__ = ["RMSNorm", "ResidualBlock", "ResidualCRNetwork"]


class RMSNorm(nn.Module):
    """Root-mean-square normalisation with a learnable gain.

    ``y = g * h / sqrt(mean(h**2) + eps)``.

    Parameters
    ----------
    width : int
        Size of the last axis.
    eps : float, default=1e-6
        Added to the mean square.
    n_members : int or None, default=None
        ``M``: one gain per member, for inputs of shape ``(M, batch, width)``.
    """

    def __init__(self, width, eps=1e-6, n_members=None):
        super().__init__()
        self.width = int(width)
        self.eps = float(eps)
        self.n_members = check_n_members(n_members)
        members = () if self.n_members is None else (self.n_members, 1)
        self.gain = nn.Parameter(torch.ones(*members, self.width))

    def _rms(self, h):
        return torch.sqrt(h.square().mean(dim=-1, keepdim=True) + self.eps)

    def forward(self, h):
        """Normalise the last axis.

        Parameters
        ----------
        h : torch.Tensor of shape (batch, width)
            Input.

        Returns
        -------
        torch.Tensor of shape (batch, width)
            ``RMSNorm(h)``.
        """
        return h / self._rms(h) * self.gain

    def forward_and_jvp(self, h, tangents):
        """Value and Jacobian-vector products ``J(h) u``.

        Parameters
        ----------
        h : torch.Tensor of shape (batch, width)
            The point of the Jacobian.
        tangents : torch.Tensor of shape (batch, k, width)
            ``k`` tangent vectors per sample (rows).

        Returns
        -------
        value : torch.Tensor of shape (batch, width)
            ``RMSNorm(h)``.
        jvp : torch.Tensor of shape (batch, k, width)
            One per row of ``tangents``.
        """
        # J = diag(g) (I / r - h h^T / (w r^3)), r = sqrt(mean(h^2) + eps)
        r = self._rms(h)  # (batch, 1)
        value = h / r * self.gain
        hu = torch.matmul(tangents, h.unsqueeze(-1))  # (batch, k, 1)
        rr = r.unsqueeze(-2)
        coef = hu / (self.width * rr**3)
        jvp = (tangents / rr - coef * h.unsqueeze(-2)) * self.gain.unsqueeze(-2)
        return value, jvp

    def vjp(self, h, cotangents):
        """Vector-Jacobian products ``v^T J(h)`` for rows ``v`` of ``cotangents``.

        Parameters
        ----------
        h : torch.Tensor of shape (batch, width)
            Input.
        cotangents : torch.Tensor of shape (batch, m, width)
            ``m`` cotangent vectors per sample (rows).

        Returns
        -------
        torch.Tensor of shape (batch, m, width)
            The pulled-back rows.
        """
        rr = self._rms(h).unsqueeze(-2)
        gv = cotangents * self.gain.unsqueeze(-2)
        coef = torch.matmul(gv, h.unsqueeze(-1)) / (self.width * rr**3)
        return gv / rr - coef * h.unsqueeze(-2)

    def extra_repr(self):
        return f"width={self.width}, eps={self.eps}"


class ResidualBlock(nn.Module):
    """``h -> h + proj(phi(inner(RMSNorm(h))))``: one pre-normalised block.

    Parameters
    ----------
    width : int
        Width of the residual stream.
    inner_width : int
        Width of the activated (PolyLayer) layer inside the block.
    activation, degree : optional
        As in :func:`cr_sklearn.nn.make_activation`.
    spectral_norm : bool, default=False
        Spectrally normalise the inner weight matrix (never the projection,
        which may be zero).
    zero_init : bool, default=False
        Start the projection at zero: the block is the identity.
    n_members : int or None, default=None
        With an int, one block per member of a member stack.
    """

    def __init__(
        self,
        width,
        inner_width,
        activation="poly",
        degree=3,
        spectral_norm=False,
        zero_init=False,
        n_members=None,
    ):
        super().__init__()
        n_members = check_n_members(n_members)
        if spectral_norm and n_members is not None:
            raise ValueError("spectral_norm=True does not support n_members.")
        self.norm = RMSNorm(width, n_members=n_members)
        self.inner = make_linear(width, inner_width, n_members)
        if spectral_norm:
            self.inner = nn.utils.parametrizations.spectral_norm(self.inner)
        self.activation = make_activation(
            activation, inner_width, degree=degree, n_members=n_members
        )
        self.proj = make_linear(inner_width, width, n_members)
        if zero_init:
            nn.init.zeros_(self.proj.weight)
            nn.init.zeros_(self.proj.bias)

    @property
    def inner_width(self):
        """Number of activated units in the block."""
        return self.proj.in_features


class ResidualCRNetwork(BaseCRNetwork):
    """Normalised residual network of PolyLayers with a dual-stream pass.

    Same interface as :class:`~cr_sklearn.nn.CRNetwork`.

    Parameters
    ----------
    n_features, n_outputs : int
        Input and output dimensions.
    hidden_layer_sizes : sequence of int, default=(64, 64)
        The stem's width ``w`` (the residual stream), then each block's inner
        width: ``(64, 64, 64)`` is a stem and two blocks.
    activation, degree, dropout : optional
        As in :class:`~cr_sklearn.nn.BaseCRNetwork`, for the stem and the
        blocks' inner layers.
    spectral_norm : bool, default=False
        Spectrally normalise every layer but the blocks' projections.
    encoded_features, stream_space : optional
        As in :class:`~cr_sklearn.nn.BaseCRNetwork`.
    n_members : int or None, default=None
        The member axis; the growth methods need ``None``.

    Attributes
    ----------
    stem : torch.nn.Linear
        First layer, ``d -> w``.
    stem_activation : torch.nn.Module
        Its activation.
    blocks : torch.nn.ModuleList of ResidualBlock
        The residual blocks, in order.
    output : torch.nn.Linear
        Last (linear) layer, ``w -> n_outputs``.

    Notes
    -----
    The stream's ``derivatives`` and ``weights`` list the stem, then each
    block's inner layer; its ``jacobians`` the residual stream's after the stem
    and after every block, then the output layer's.
    """

    def _build(self, sizes):
        if not sizes or min(sizes) < 1:
            raise ValueError(
                f"hidden_layer_sizes must be non-empty and positive, got {list(sizes)}."
            )
        width = sizes[0]
        self.stem = self._linear(self.input_width, width)
        self.stem_activation = self._activation(width)
        self.blocks = nn.ModuleList(self._block(width, w) for w in sizes[1:])
        self.output = self._linear(width, self.n_outputs)

    def _block(self, width, inner_width, zero_init=False):
        return ResidualBlock(
            width,
            inner_width,
            self.activation_name,
            self.degree,
            self.spectral_norm,
            zero_init=zero_init,
            n_members=self.n_members,
        )

    def _single_only(self, what):
        if self.n_members is not None:
            raise ValueError(f"{what} needs a network without n_members.")

    @property
    def width(self):
        """Width ``w`` of the residual stream."""
        return self.output.in_features

    @property
    def n_blocks(self):
        """Number of residual blocks."""
        return len(self.blocks)

    @property
    def hidden_layer_sizes(self):
        """Current widths: the stem's, then each block's inner width."""
        return (self.width, *[b.inner_width for b in self.blocks])

    def make_block(self, inner_width=None, *, seed=0):
        """A zero-initialised (identity) block that fits this network.

        Parameters
        ----------
        inner_width : int, optional
            Width of the block's PolyLayer; the stream width by default.
        seed : int, default=0
            Seeds the inner layer (the caller's random stream is left untouched).

        Returns
        -------
        ResidualBlock
            The identity block, on the network's device and dtype.
        """
        self._single_only("make_block")
        inner_width = self.width if inner_width is None else int(inner_width)
        # A forked, seeded RNG: reproducible without touching the caller's.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            block = self._block(self.width, inner_width, zero_init=True)
        return block.to(self.output.bias)  # the network's device and dtype

    def insert_blocks(self, position, blocks):
        """Insert ``blocks`` before block ``position`` (``n_blocks``: at the end).

        Parameters
        ----------
        position : int
            In ``0 .. n_blocks``.
        blocks : sequence of ResidualBlock
            Blocks of this stream width, e.g. from :meth:`make_block`.

        Returns
        -------
        self : ResidualCRNetwork
            The network, changed in place.
        """
        self._single_only("insert_blocks")
        if not 0 <= int(position) <= self.n_blocks:
            raise ValueError(
                f"position must be in [0, {self.n_blocks}], got {position}."
            )
        for offset, block in enumerate(blocks):
            self.blocks.insert(int(position) + offset, block)
        return self

    def widen_block(self, index, n_units, *, seed=0):
        """Add ``n_units`` activated units to block ``index``, function unchanged.

        The new units have zero outgoing weights (their gradient is the width
        signal).

        Parameters
        ----------
        index : int
            Block to widen.
        n_units : int
            Units to add.
        seed : int, default=0
            Seeds the new units' initialisation.

        Returns
        -------
        self : ResidualCRNetwork
            The network, changed in place.
        """
        self._single_only("widen_block")
        if self.spectral_norm:
            raise ValueError(
                "Widening a block changes its spectral norm, hence the function; "
                "it is not available with spectral_norm=True."
            )
        if not 0 <= int(index) < self.n_blocks:
            raise ValueError(f"index must be in [0, {self.n_blocks - 1}], got {index}.")
        block = self.blocks[int(index)]
        old = block.inner_width
        fresh = self.make_block(old + int(n_units), seed=seed)
        with torch.no_grad():
            fresh.norm.gain.copy_(block.norm.gain)
            fresh.inner.weight[:old] = block.inner.weight
            fresh.inner.bias[:old] = block.inner.bias
            fresh.proj.weight[:, :old] = block.proj.weight
            fresh.proj.bias.copy_(block.proj.bias)
            if isinstance(block.activation, PolyActivation):
                fresh.activation.coefficients[:, :old] = block.activation.coefficients
        self.blocks[int(index)] = fresh
        return self

    def forward(self, x):
        """Compute the output only: the cheapest pass.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input, standardised and encoded inside.

        Returns
        -------
        torch.Tensor of shape (batch, n_outputs)
            The output layer's, after the stem and the blocks.
        """
        h = self._dropped(self.stem_activation(self.stem(self.transform_input(x))))
        for block in self.blocks:
            a = self._dropped(block.activation(block.inner(block.norm(h))))
            h = h + block.proj(a)
        return self.output(h)

    def _activated(self, layer, act, h, j, stream, need_d, rows=None):
        """One PolyLayer: ``(phi(z), phi'(z) or None, J)``; ``j=None``: the identity."""
        z = linear(h, layer.weight, layer.bias)
        a, d = self._activate(act, z, stream or need_d)
        if not stream:
            return a, d, None
        zj = layer_product(j, layer.weight.transpose(-1, -2))
        return a, d, select_rows(d, rows).unsqueeze(-2) * zj

    def _stream_pass(
        self, h, directions, *, exact, derivatives, rows, scale=None, inputs=None
    ):
        """The stream from ``h``; each block's input is appended to ``inputs``."""
        stream = exact or directions is not None
        # j: the current state's Jacobian times the directions, (rows, k, width).
        j = None if exact else directions
        if j is not None:
            j = j.expand(h.shape[-2] if rows is None else rows.shape[0], *j.shape[-2:])
        derivs, weights, jacobians = [], [], []
        h, d, j = self._activated(
            self.stem, self.stem_activation, h, j, stream, derivatives, rows
        )
        if stream and scale is not None:
            # Every later Jacobian is linear in the stem's.
            j = j * scale[..., None, None]
        derivs.append(d)
        weights.append(self.stem.weight)
        if stream:
            jacobians.append(j.transpose(-1, -2))
        for block in self.blocks:
            if inputs is not None:
                inputs.append(h)
            if stream and rows is None:
                n, jn = block.norm.forward_and_jvp(h, j)
            elif stream:
                n = block.norm(h)
                _, jn = block.norm.forward_and_jvp(select_rows(h, rows), j)
            else:
                n, jn = block.norm(h), None
            a, d, ja = self._activated(
                block.inner, block.activation, n, jn, stream, derivatives, rows
            )
            derivs.append(d)
            weights.append(block.inner.weight)
            h = h + block.proj(a)
            if stream:
                # The skip path carries the incoming Jacobian unchanged.
                j = j + rows_product(ja, block.proj.weight.transpose(-1, -2))
                jacobians.append(j.transpose(-1, -2))
        out = self.output(h)
        if stream:
            out_j = rows_product(j, self.output.weight.transpose(-1, -2))
            jacobians.append(out_j.transpose(-1, -2))
        return out, derivs, weights, (jacobians if stream else None)

    def _reverse_jacobian(self, h):
        inputs = []
        _, derivs, weights, _ = self._stream_pass(
            h, None, exact=False, derivatives=True, rows=None, inputs=inputs
        )
        # Row o of g is d output_o / d h_l, pulled back block by block.
        out_weight = self.output.weight
        g = out_weight.unsqueeze(-3).expand(
            *out_weight.shape[:-2], h.shape[-2], *out_weight.shape[-2:]
        )
        blocks = list(zip(self.blocks, derivs[1:], weights[1:], inputs, strict=True))
        for block, d, weight, h in reversed(blocks):
            ga = rows_product(g, block.proj.weight) * d.unsqueeze(-2)
            g = g + block.norm.vjp(h, rows_product(ga, weight))
        return rows_product(g * derivs[0].unsqueeze(-2), weights[0])
