"""The Jacobian stream of a plain CR network as one autograd node (private).

Recorded op by op, each layer ``J_l = d_l * (J_{l-1} W_l^T)`` and its squared
norm cost autograd as much as the products on small networks. This node
computes the same Jacobians and writes the backward out: per layer one pass
adds the penalty's ``2 g J_l``, one reduction gives ``d_l``'s gradient and
two matrix products ``W_l``'s and ``J_{l-1}``'s.
"""

import torch

from ._members import flat_rows, layer_product, rows_product

__all__ = []


def _stream(directions, n_layers, tensors):
    """``(jacobians, products, squared_norms)`` of the stream.

    ``tensors`` are ``(*weights, *slopes, output_weight)``; ``products`` are
    ``Z_l = J_{l-1} W_l^T`` and the last Jacobian is the output layer's.
    ``directions``: ``None`` for the exact stream (``Z_1 = W_1^T`` with a unit
    batch axis) or ``(batch, k, n_in)``, shared by members. ``||J||^2`` is over
    every axis of the (contiguous) Jacobian, by a dot product.
    """
    weights, slopes = tensors[:n_layers], tensors[n_layers : 2 * n_layers]
    jacobians, products = [], []
    j = directions
    for weight, d in zip(weights, slopes, strict=True):
        z = layer_product(j, weight.transpose(-1, -2))
        j = d.unsqueeze(-2) * z
        products.append(z)
        jacobians.append(j)
    jacobians.append(rows_product(j, tensors[2 * n_layers].transpose(-1, -2)))
    norms = [torch.dot(j.reshape(-1), j.reshape(-1)) for j in jacobians]
    return jacobians, products, norms


class StreamJacobians(torch.autograd.Function):
    """The stream's Jacobians and their squared norms as one autograd node.

    ``apply(directions, n_layers, *weights, *slopes, output_weight)`` returns
    ``n_layers + 1`` Jacobians ``(batch, k, width)`` (the output layer's last),
    then their squared norms. ``directions`` is ``None`` or does not require
    gradients; ``slopes`` are ``phi'(z_l)`` of the rows carrying the stream.
    Differentiated again (``create_graph=True``), the backward recomputes the
    forward with recorded ops.
    """

    @staticmethod
    def forward(ctx, directions, n_layers, *tensors):
        jacobians, products, norms = _stream(directions, n_layers, tensors)
        ctx.n_layers = n_layers
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(directions, *tensors, *jacobians, *products)
        return (*jacobians, *norms)

    @staticmethod
    def backward(ctx, *grads):
        n = ctx.n_layers
        saved = ctx.saved_tensors
        if torch.is_grad_enabled():
            return _recorded_backward(n, saved, grads)
        directions, output_weight = saved[0], saved[2 * n + 1]
        weights, slopes = saved[1 : n + 1], saved[n + 1 : 2 * n + 1]
        jacobians, products = saved[2 * n + 2 : 3 * n + 3], saved[3 * n + 3 :]
        grad_jacobians, grad_norms = grads[: n + 1], grads[n + 1 :]
        needs = ctx.needs_input_grad
        grad_weights, grad_slopes = [None] * n, [None] * n

        def total(level, left=None, right=None):
            # From the layer above, the caller, and 2 g J_level (the beta).
            j = jacobians[level]
            g_norm, g_j = grad_norms[level], grad_jacobians[level]
            g = None
            if left is not None:
                flat = flat_rows(left)
                if g_norm is not None:
                    product = torch.addmm if right.dim() == 2 else torch.baddbmm
                    g = product(flat_rows(j), flat, right, beta=2.0 * float(g_norm))
                    g_norm = None
                else:
                    g = torch.matmul(flat, right)
                g = g.view(j.shape)
            if g_j is not None:
                g = g_j.clone() if g is None else g.add_(g_j)
            if g_norm is not None:
                scale = 2.0 * g_norm
                g = j * scale if g is None else g.addcmul_(j, scale)
            return g

        g = total(n)
        grad_output_weight = None
        left = right = None
        if g is not None:
            if needs[2 + 2 * n]:
                grad_output_weight = _weight_grad(g, jacobians[n - 1])
            left, right = g, output_weight
        for level in range(n - 1, -1, -1):
            g = total(level, left, right)
            left = right = None
            if g is None:
                continue
            if needs[2 + n + level]:
                grad_slopes[level] = (g * products[level]).sum(-2)
            gz = g.mul_(slopes[level].unsqueeze(-2))  # g is this pass's own buffer
            below = directions if level == 0 else jacobians[level - 1]
            if needs[2 + level] and below is None:
                # Exact first layer: J_1 = d_1 * W_1^T, no product.
                grad_weights[level] = gz.sum(-3).transpose(-1, -2)
            elif needs[2 + level]:
                grad_weights[level] = _weight_grad(gz, below)
            if level > 0:
                left, right = gz, weights[level]
        return None, None, *grad_weights, *grad_slopes, grad_output_weight


def _weight_grad(grad, below):
    """``d loss / d W`` of ``J = below @ W^T`` (``below`` may lack the member axis)."""
    g, b = flat_rows(grad), flat_rows(below)
    if g.dim() == 2:
        # As autograd orients it: (B^T G)^T.
        return b.t().mm(g).t()
    return torch.matmul(g.transpose(-1, -2), b)


def _recorded_backward(n, saved, grads):
    """The backward of :class:`StreamJacobians` as recorded, differentiable ops."""
    # Called with grad mode on (create_graph=True), so the ops are recorded.
    inputs = saved[1 : 2 * n + 2]
    wanted = [t for t in inputs if t.requires_grad]
    jacobians, _, norms = _stream(saved[0], n, inputs)
    outputs, seeds = [], []
    for value, grad in zip((*jacobians, *norms), grads, strict=True):
        if grad is not None:
            outputs.append(value)
            seeds.append(grad)
    found = iter(
        torch.autograd.grad(
            outputs, wanted, seeds, create_graph=True, allow_unused=True
        )
        if outputs and wanted
        else [None] * len(wanted)
    )
    return None, None, *(next(found) if t.requires_grad else None for t in inputs)
