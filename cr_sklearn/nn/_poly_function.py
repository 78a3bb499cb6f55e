"""The polynomial activation's value and slope as one autograd node (private)."""

import torch

__all__ = []


def squash(z, bound, one, slope=True):
    """``(u, du/dz)`` for ``u = b tanh(z / b) = 2b sigmoid(2z / b) - b``.

    (torch's CPU ``sigmoid`` is faster than its ``tanh``.) ``one`` is a 0-d
    tensor holding 1, for one fused op; the slope is ``None`` without a bound
    (``u = z``) or ``slope``.
    """
    if bound is None:
        return z, None
    s = torch.sigmoid(z * (2.0 / bound))
    u = s * (2.0 * bound) - bound
    if not slope:
        return u, None
    return u, torch.addcmul(one, u, u, value=-1.0 / bound**2)


def _horner_with_derivatives(coefficients, u, curvature=True):
    """``(p(u), p'(u), p''(u) / 2)`` by one joint Horner pass (no third: ``None``)."""
    terms = coefficients.unbind(0)
    value, slope, half_curvature = terms[-1], None, None
    for c in reversed(terms[:-1]):
        if curvature and half_curvature is not None:
            half_curvature = torch.addcmul(slope, half_curvature, u)
        elif curvature and slope is not None:
            half_curvature = slope
        slope = value if slope is None else torch.addcmul(value, slope, u)
        value = torch.addcmul(c, value, u)
    if curvature and half_curvature is None:  # degree 1: p'' = 0
        half_curvature = torch.zeros_like(u)
    return value, slope, half_curvature


def poly_value_and_slope(z, coefficients, bound, one):
    """``(phi(z), phi'(z))`` with ops recorded one by one (differentiable twice)."""
    u, du = squash(z, bound, one)
    value, p1, _ = _horner_with_derivatives(coefficients, u, curvature=False)
    slope = p1 if du is None else p1 * du
    if slope.shape != value.shape:
        slope = slope.expand_as(value)
    return value, slope


class PolyValueAndSlope(torch.autograd.Function):
    """``(phi(z), phi'(z))`` of :class:`PolyActivation` as one autograd node.

    ``apply(z, coefficients, bound, one, mask)``: ``z`` of shape ``(..., width)``
    (``(members, batch, width)`` with coefficients ``(degree + 1, members, 1,
    width)``), ``bound`` a float or ``None``, ``one`` as in :func:`squash`,
    ``mask`` ``None`` or a tensor of ``z``'s shape multiplying both outputs.
    The backward is closed form:

    .. math::
        \\bar z = u' (\\bar v\\, p' + \\bar s\\,(p'' u' - 2 u p' / b^2)), \\quad
        \\bar a_k = \\sum (\\bar v\\, u^k + \\bar s\\, u' k u^{k-1})

    with ``u' = 1 - (u/b)^2``. Differentiated again (``create_graph=True``) it
    recomputes the pass with recorded ops, so higher derivatives are exact.
    """

    @staticmethod
    def forward(ctx, z, coefficients, bound, one, mask):
        u, du = squash(z, bound, one)
        value, p1, half_p2 = _horner_with_derivatives(coefficients, u)
        slope = p1 if du is None else p1 * du
        if slope.shape != value.shape:
            # Degree 1 without a bound: a view of the coefficients, copied.
            slope = slope.expand_as(value).contiguous()
        ctx.bound, ctx.one = bound, one
        ctx.save_for_backward(z, coefficients, u, du, p1, half_p2, mask)
        if mask is not None:
            value, slope = value * mask, slope * mask
        return value, slope

    @staticmethod
    def backward(ctx, grad_value, grad_slope):
        z, coefficients, u, du, p1, half_p2, mask = ctx.saved_tensors
        bound, one = ctx.bound, ctx.one
        if mask is not None:
            grad_value, grad_slope = grad_value * mask, grad_slope * mask
        if torch.is_grad_enabled():
            # create_graph=True: differentiate the recorded pass instead.
            inputs = (z, coefficients)
            outputs = poly_value_and_slope(z, coefficients, bound, one)
            wanted = [t for t in inputs if t.requires_grad]
            seeds = (grad_value, grad_slope)
            found = iter(torch.autograd.grad(outputs, wanted, seeds, create_graph=True))
            grads = [next(found) if t.requires_grad else None for t in inputs]
            return *grads, None, None, None
        # d slope / dz = p'' u'^2 + p' u'' with u'' = -2 u u' / b^2.
        if du is None:
            grad_z = torch.addcmul(grad_value * p1, grad_slope, half_p2, value=2.0)
            weighted_slope = grad_slope
        else:
            # (p'' u' - 2 u p' / b^2) / 2
            curvature = torch.addcmul(half_p2 * du, u, p1, value=-1.0 / bound**2)
            grad_z = torch.addcmul(grad_value * p1, grad_slope, curvature, value=2.0)
            grad_z = grad_z.mul_(du)
            weighted_slope = grad_slope * du
        grad_coefficients = None
        if ctx.needs_input_grad[1]:
            # d value / d a_k = u^k, d slope / d a_k = k u^(k-1) u', per row.
            row = coefficients.shape[1:]
            by_value, by_slope = grad_value, weighted_slope
            rows = [by_value.sum_to_size(row)]
            for k in range(1, coefficients.shape[0]):
                if k > 1:
                    by_slope = by_slope * u
                by_value = by_value * u
                rows.append(by_value.sum_to_size(row) + k * by_slope.sum_to_size(row))
            grad_coefficients = torch.stack(rows)
        if not ctx.needs_input_grad[0]:
            grad_z = None
        return grad_z, grad_coefficients, None, None, None
