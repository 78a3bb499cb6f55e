"""Piecewise-linear encoding of the inputs, with its Jacobian for the stream."""

import torch
from torch import nn

__all__ = ["PiecewiseLinearEncoding"]


def tracing():
    """Whether the pass is traced or compiled (no in-place or cached shortcuts)."""
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return torch.jit.is_tracing() or bool(compiling and compiling())


# Near an edge a ramp's slope is the mean of its one-sided ones (integer data).
_EDGE_TOLERANCE = 1e-5


def ramp_inside(free, lower, upper, tolerance):
    """Each encoded column's share of its ramp's slope: 1, 0 or 0.5 (on an edge).

    ``free`` is the unclamped affine map; copies (infinite bounds) get 1.
    """
    on_edge = ((free - lower).abs() <= tolerance) | ((upper - free).abs() <= tolerance)
    inside = ((free > lower) & (free < upper)).to(free.dtype)
    return torch.where(on_edge, 0.5, inside)


class PiecewiseLinearEncoding(nn.Module):
    """Ramps through bins of each input column, as a fixed (not learned) layer.

    Parameters
    ----------
    n_features : int
        Input columns ``d``.
    n_encoded : int
        Output columns; until :meth:`set_edges` they copy the inputs in turn.

    Attributes
    ----------
    source : torch.Tensor of int64, shape (n_encoded,)
        The input column each output column reads.
    low, inv_width : torch.Tensor of shape (n_encoded,)
        Each ramp's lower edge and ``1 / (high - low)``.
    ramp : torch.Tensor of bool, shape (n_encoded,)
        Whether the column is a ramp (else a copy).
    ramp_mean, ramp_gain : torch.Tensor of shape (n_encoded,)
        Ramps are output as ``(ramp - ramp_mean) * ramp_gain``.
    """

    def __init__(self, n_features, n_encoded):
        super().__init__()
        self.n_features, self.n_encoded = int(n_features), int(n_encoded)
        if self.n_features < 1 or self.n_encoded < 1:
            raise ValueError(
                f"n_features and n_encoded must be positive, got {n_features} "
                f"and {n_encoded}."
            )
        self.register_buffer("source", torch.arange(self.n_encoded) % self.n_features)
        self.register_buffer("low", torch.zeros(self.n_encoded))
        self.register_buffer("inv_width", torch.ones(self.n_encoded))
        self.register_buffer("ramp", torch.zeros(self.n_encoded, dtype=torch.bool))
        self.register_buffer("ramp_mean", torch.zeros(self.n_encoded))
        self.register_buffer("ramp_gain", torch.ones(self.n_encoded))

    @staticmethod
    def size(edges):
        """The output columns of ``edges`` (see :meth:`set_edges`).

        Parameters
        ----------
        edges : sequence of (array-like or None)
            One entry per input column.

        Returns
        -------
        int
            One per copied column plus one per bin.
        """
        return sum(1 if e is None else len(e) - 1 for e in edges)

    def set_edges(self, edges):
        """Set the bins: ``edges[j]`` increasing (a ramp per bin) or ``None`` (a copy).

        Parameters
        ----------
        edges : sequence of (array-like or None)
            One entry per input column, in the units the encoding sees.

        Returns
        -------
        self : PiecewiseLinearEncoding
            With its buffers set.
        """
        if len(edges) != self.n_features:
            raise ValueError(
                f"edges has {len(edges)} entries; the encoding has "
                f"{self.n_features} input columns."
            )
        source, low, high, ramp = [], [], [], []
        for j, e in enumerate(edges):
            if e is not None:
                e = torch.as_tensor(e, dtype=torch.float64).reshape(-1)
                if e.numel() < 2 or not bool(torch.isfinite(e).all()):
                    raise ValueError(f"edges[{j}] must hold two or more finite edges.")
                if not bool((e[1:] > e[:-1]).all()):
                    raise ValueError(f"edges[{j}] must be strictly increasing.")
            bounds = [0.0, 1.0] if e is None else e.tolist()  # a copy: one column
            source += [j] * (len(bounds) - 1)
            low += bounds[:-1]
            high += bounds[1:]
            ramp += [e is not None] * (len(bounds) - 1)
        if len(source) != self.n_encoded:
            raise ValueError(
                f"edges make {len(source)} columns; the encoding has {self.n_encoded}."
            )
        low = torch.tensor(low, dtype=torch.float64)
        high = torch.tensor(high, dtype=torch.float64)
        with torch.no_grad():
            self.source.copy_(torch.tensor(source))
            self.low.copy_(low.to(self.low))
            self.inv_width.copy_((1.0 / (high - low)).to(self.inv_width))
            self.ramp.copy_(torch.tensor(ramp))
        return self

    def set_ramp_scaling(self, mean, scale):
        """Standardise the ramps: output ``(ramp - mean) / scale``.

        Parameters
        ----------
        mean : array-like of shape (n_encoded,)
            Subtracted from each ramp (ignored for copies).
        scale : array-like of shape (n_encoded,)
            Divides each centred ramp; positive and finite.

        Returns
        -------
        self : PiecewiseLinearEncoding
            With ``ramp_mean`` and ``ramp_gain`` set.
        """
        mean = torch.as_tensor(mean, dtype=torch.float64).reshape(-1)
        scale = torch.as_tensor(scale, dtype=torch.float64).reshape(-1)
        if mean.numel() != self.n_encoded or scale.numel() != self.n_encoded:
            raise ValueError(
                f"mean and scale must have {self.n_encoded} entries, got "
                f"{mean.numel()} and {scale.numel()}."
            )
        finite = torch.isfinite(mean).all() & torch.isfinite(scale).all()
        if not bool(finite & (scale > 0).all()):
            raise ValueError("mean must be finite and scale finite and positive.")
        with torch.no_grad():
            self.ramp_mean.copy_(mean.to(self.ramp_mean))
            self.ramp_gain.copy_((1.0 / scale).to(self.ramp_gain))
        return self

    def _affine(self, dtype, device):
        """``(select, shift, lower, upper, slope, tolerance)`` of the columns (cached).

        Column ``c`` is ``clamp((h @ select)[c] + shift[c], lower[c], upper[c])``.
        """
        key = None
        if not tracing():
            key = (
                dtype,
                device,
                *((t.data_ptr(), t._version) for t in self._buffers.values()),
            )
        cached = self.__dict__.get("_affine_cache")
        if key is not None and cached is not None and cached[0] == key:
            return cached[1]
        with torch.inference_mode(False), torch.no_grad():
            # float64 arithmetic, then the buffers' dtype.
            inv, gain = self.inv_width.double(), self.ramp_gain.double()
            low, mean = self.low.double(), self.ramp_mean.double()
            ramp = self.ramp
            slope = torch.where(ramp, inv * gain, 1.0)
            shift = torch.where(ramp, -(low * inv + mean) * gain, 0.0)
            lower = torch.where(ramp, -mean * gain, -torch.inf)
            upper = torch.where(ramp, (1.0 - mean) * gain, torch.inf)
            # An edge's tolerance, in the map's units (copies have none).
            tolerance = torch.where(ramp, gain * _EDGE_TOLERANCE, 0.0)
            select = torch.zeros(self.n_features, self.n_encoded, dtype=torch.float64)
            select[self.source.cpu(), torch.arange(self.n_encoded)] = slope.cpu()
            found = tuple(
                t.to(dtype=dtype, device=device)
                for t in (select, shift, lower, upper, slope, tolerance)
            )
        if key is not None:
            self.__dict__["_affine_cache"] = (key, found)
        return found

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_affine_cache", None)  # derived; rebuilt on first use
        return state

    def forward(self, h):
        """Encode ``h`` of shape ``(..., n_features)`` to ``(..., n_encoded)``.

        Parameters
        ----------
        h : torch.Tensor
            Inputs.

        Returns
        -------
        torch.Tensor
            The ramps and copies.
        """
        select, shift, lower, upper = self._affine(h.dtype, h.device)[:4]
        value = torch.addmm(shift, h.reshape(-1, self.n_features), select)
        # In place when nothing records the ops (prediction): one pass less.
        if torch.is_grad_enabled() or tracing():
            value = value.clamp(lower, upper)
        else:
            value.clamp_(lower, upper)
        return value.reshape(*h.shape[:-1], self.n_encoded)

    def forward_and_slope(self, h):
        """The encoding and its derivative per output column.

        On an edge (within ``1e-5`` of the bin's width) a ramp's derivative is the
        mean of its one-sided ones, as central differences measure.

        Parameters
        ----------
        h : torch.Tensor of shape (batch, n_features)
            Inputs, 2-d here (unlike :meth:`forward`).

        Returns
        -------
        value, slope : torch.Tensor of shape (batch, n_encoded)
            The encoding and its derivative with respect to each column's input.
        """
        select, shift, lower, upper, slope, tolerance = self._affine(h.dtype, h.device)
        free = torch.addmm(shift, h, select)
        return free.clamp(lower, upper), slope * ramp_inside(
            free, lower, upper, tolerance
        )

    def jvp(self, directions, slope):
        """The encoding's Jacobian applied to ``directions``.

        Parameters
        ----------
        directions : torch.Tensor of shape (batch, k, n_features)
            Input directions, per row (or batch 1).
        slope : torch.Tensor of shape (batch, n_encoded)
            From :meth:`forward_and_slope`.

        Returns
        -------
        torch.Tensor of shape (batch, k, n_encoded)
            The directions as the encoded columns see them.
        """
        return directions[..., self.source] * slope.unsqueeze(1)

    def jacobian(self, slope):
        """The encoding's full Jacobian, input directions first.

        Parameters
        ----------
        slope : torch.Tensor of shape (batch, n_encoded)
            From :meth:`forward_and_slope`.

        Returns
        -------
        torch.Tensor of shape (batch, n_features, n_encoded)
            ``d encoded / d input`` per row.
        """
        eye = torch.eye(self.n_features, dtype=slope.dtype, device=slope.device)
        return self.jvp(eye.unsqueeze(0), slope)

    def pullback(self, grad, slope):
        """Pull ``d out / d encoded`` back to ``d out / d input``.

        Parameters
        ----------
        grad : torch.Tensor of shape (batch, n_outputs, n_encoded)
            Derivatives with respect to the encoded columns.
        slope : torch.Tensor of shape (batch, n_encoded)
            From :meth:`forward_and_slope`.

        Returns
        -------
        torch.Tensor of shape (batch, n_outputs, n_features)
            Derivatives with respect to the inputs.
        """
        weighted = grad * slope.unsqueeze(1)
        out = weighted.new_zeros(*weighted.shape[:-1], self.n_features)
        return out.index_add(-1, self.source, weighted)

    def extra_repr(self):
        return f"n_features={self.n_features}, n_encoded={self.n_encoded}"
