"""The member axis: several networks of one shape in one module (private)."""

import math

import torch
from torch import nn

__all__ = []


def check_n_members(n_members):
    """``None`` or a positive int; a clear error otherwise."""
    if n_members is None:
        return None
    if isinstance(n_members, bool) or not isinstance(n_members, int) or n_members < 1:
        raise ValueError(f"n_members must be None or an int >= 1, got {n_members!r}.")
    return int(n_members)


def affine(bias, h, weight_t):
    """``h @ weight_t + bias`` for one network or for a member stack.

    ``weight_t`` is ``(in, out)`` or ``(M, in, out)``; ``h`` is ``(batch, in)``
    (shared by every member) or ``(M, batch, in)``.
    """
    if weight_t.dim() == 2:
        return torch.addmm(bias, h, weight_t)
    if h.dim() == 2:
        return _shared_product(h, weight_t, bias)
    return torch.baddbmm(bias.unsqueeze(-2), h, weight_t)


def _shared_product(h, weight_t, bias=None):
    """``h @ weight_t[m] (+ bias[m])`` of every member ``m``, ``h`` shared.

    One product with the members' columns side by side: ``(M, rows, out)``.
    """
    n_members, n_in, n_out = weight_t.shape
    side = weight_t.transpose(0, 1).reshape(n_in, n_members * n_out)
    out = h.mm(side) if bias is None else torch.addmm(bias.reshape(-1), h, side)
    return out.view(h.shape[0], n_members, n_out).transpose(0, 1).contiguous()


def linear(h, weight, bias):
    """``h @ weight^T + bias`` (``weight`` of shape ``(..., out, in)``)."""
    return affine(bias, h, weight.transpose(-1, -2))


def rows_product(j, weight_t):
    """``j @ weight_t`` for ``j`` of shape ``(..., batch, k, in)``, one product each.

    A ``j`` without the member axis (shared directions) is broadcast.
    """
    flat = flat_rows(j)
    if flat.dim() == 2 and weight_t.dim() == 3:
        product = _shared_product(flat, weight_t)
    else:
        product = torch.matmul(flat, weight_t)
    return product.view(*product.shape[:-2], *j.shape[-3:-1], weight_t.shape[-1])


def layer_product(j, weight_t):
    """``j @ weight_t``; ``j=None`` (the identity) gives ``weight_t`` per row.

    Contiguous: broadcasting over a transposed view is slower.
    """
    return (
        weight_t.contiguous().unsqueeze(-3) if j is None else rows_product(j, weight_t)
    )


def flat_rows(t):
    """``t`` of shape ``(..., batch, k, width)`` as ``(..., batch * k, width)``."""
    return t.reshape(*t.shape[:-3], -1, t.shape[-1])


def select_rows(t, rows):
    """Rows ``rows`` of ``t`` along its batch axis (second to last)."""
    return t if rows is None else t.index_select(-2, rows)


def make_linear(fan_in, fan_out, n_members):
    """``nn.Linear`` without a member axis, :class:`MemberLinear` with one."""
    if n_members is None:
        return nn.Linear(fan_in, fan_out)
    return MemberLinear(fan_in, fan_out, n_members)


class MemberLinear(nn.Module):
    """``M`` affine maps ``h W_m^T + b_m`` in one module, initialised as ``nn.Linear``.

    Parameters
    ----------
    in_features, out_features : int
        Shape of each member's map.
    n_members : int
        Members ``M``.

    Attributes
    ----------
    weight : torch.nn.Parameter of shape (n_members, out_features, in_features)
        Member ``m``'s matrix is ``weight[m]``.
    bias : torch.nn.Parameter of shape (n_members, out_features)
        Member ``m``'s bias is ``bias[m]``.
    """

    def __init__(self, in_features, out_features, n_members):
        super().__init__()
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.n_members = int(n_members)
        self.weight = nn.Parameter(
            torch.empty(self.n_members, self.out_features, self.in_features)
        )
        self.bias = nn.Parameter(torch.empty(self.n_members, self.out_features))
        self.reset_parameters()

    def reset_parameters(self):
        """Draw every member's weights as :class:`torch.nn.Linear` does."""
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
        with torch.no_grad():
            for weight, bias in zip(self.weight, self.bias, strict=True):
                nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
                nn.init.uniform_(bias, -bound, bound)

    def forward(self, h):
        """Every member's map: ``(n_members, batch, out_features)``.

        ``h``: ``(batch, in_features)``, shared, or ``(n_members, batch, in_features)``.
        """
        return linear(h, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"n_members={self.n_members}"
        )
