"""DREG penalties as pure functions of a :class:`~cr_sklearn.nn.StreamOutput`."""

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = [
    "PENALTIES",
    "Penalty",
    "gradient_spread",
    "input_gradient_penalty",
    "local_dreg",
    "stream_dreg",
]


def stream_dreg(result):
    r"""Mean over layers of the batch-mean squared Frobenius norm of ``J_l``.

    .. math:: \frac{1}{L+1} \sum_{l=1}^{L+1} \frac{1}{B} \sum_b
              \lVert J_l^{(b)} \rVert_F^2

    The output layer's Jacobian is the last term; with random directions the
    value is an unbiased estimate.

    Parameters
    ----------
    result : StreamOutput
        From ``forward_stream`` with a Jacobian stream.

    Returns
    -------
    torch.Tensor
        A scalar: with a member axis, the sum of the members' penalties.
    """
    if result.jacobians is None:
        raise ValueError("stream_dreg needs a forward pass with a Jacobian stream.")
    # Sums over whole tensors (and members), divided once: fewer small ops.
    batch = result.jacobians[0].shape[-3]
    squares = result.squared_norms
    if squares is None:
        squares = [j.square().sum() for j in result.jacobians]
    # Started at the first term: a start of 0 would add an op.
    return sum(squares[1:], squares[0]) / (batch * len(result.jacobians))


def gradient_spread(result, weight=None):
    r"""The spread of the per-sample output-gradient norms (squared CV).

    .. math:: \frac{\operatorname{Var}_b s_b}{(\operatorname{mean}_b s_b)^2},
              \quad s_b = \lVert (I - \tfrac{1}{o} \mathbf{1}\mathbf{1}^\top)
              J^{(b)} \rVert_F^2

    over the rows ``b`` the stream carried, with :math:`J^{(b)}` the output
    layer's Jacobian (times the directions) centred over the ``o`` outputs (a
    common shift of the logits changes no probability). Scale-free, like the
    gradient tail ratio tau, and 0 when every row sees a gradient of the same
    norm (an Eikonal-type constraint whose target norm is left free); a
    squared-norm penalty such as :func:`stream_dreg` controls the scale
    instead. With random directions each ``s_b`` is an unbiased estimate, and
    the ratio is estimated with a bias that grows with their noise.

    Parameters
    ----------
    result : StreamOutput
        From ``forward_stream`` with a Jacobian stream.
    weight : torch.Tensor of shape (rows,) or (members, rows), optional
        The rows' weights, when the stream scaled each row's Jacobian by the
        root of its weight (``stream_scale``): the weighted mean and variance
        of the unscaled norms are then used, and rows of weight 0 drop out.

    Returns
    -------
    torch.Tensor
        A scalar: with a member axis, the sum of the members' values.
    """
    if result.jacobians is None:
        raise ValueError("gradient_spread needs a forward pass with a Jacobian stream.")
    jac = result.jacobians[-1]  # (..., rows, n_outputs, directions)
    if jac.shape[-2] > 1:
        jac = jac - jac.mean(dim=-2, keepdim=True)
    squares = jac.square().sum(dim=(-2, -1))  # (..., rows), times the weights
    if weight is None:
        weight = torch.ones_like(squares)
    weight = weight.to(squares.dtype).expand_as(squares)
    total = weight.sum(dim=-1)
    mean = squares.sum(dim=-1) / total
    # sum_b w_b s_b^2 from the scaled w_b s_b: (w_b s_b)^2 / w_b, 0 where w_b = 0
    # (divided by 1 there: a 0 / 0 would put NaN in the gradient).
    held = weight > 0
    second = torch.where(held, squares.square() / torch.where(held, weight, 1.0), 0.0)
    second = second.sum(dim=-1)
    second = second / total
    # A flat network (every norm 0) has no spread to penalise.
    tiny = torch.finfo(squares.dtype).tiny
    ratio = (second - mean.square()).clamp_min(0.0) / mean.square().clamp_min(tiny)
    return ratio.sum()


def local_dreg(result):
    r"""Layer-local DREG, :math:`\frac1L \sum_l \sum_i \phi'(z^l_i)^2 \|W^l_i\|^2`.

    The batch-mean squared norm of each layer's own Jacobian; no stream needed.

    Parameters
    ----------
    result : StreamOutput
        From ``forward_stream`` with ``derivatives=True``.

    Returns
    -------
    torch.Tensor
        A scalar: with a member axis, the sum of the members' penalties.
    """
    if not result.weights:
        # No activated layer (a linear model): no layer-local Jacobian.
        return result.output.new_zeros(())
    total = 0.0
    for d, weight in zip(result.derivatives, result.weights, strict=True):
        if d is None:
            raise ValueError("local_dreg needs a forward pass with derivatives.")
        # sum_b sum_i (d_bi ||W_i||)^2, in four ops.
        scaled = d * torch.linalg.vector_norm(weight, dim=-1).unsqueeze(-2)
        total = total + scaled.square().sum()
    # Rows: every axis but the neurons', less the members', whose penalties add.
    batch = result.derivatives[0].shape[:-1].numel()
    if result.weights[0].dim() == 3:
        batch //= result.weights[0].shape[0]
    return total / (batch * len(result.weights))


def input_gradient_penalty(per_sample_loss, inputs, sample_weight=None):
    """Batch-mean squared norm of the loss gradient w.r.t. the inputs (IGPen).

    By double backpropagation, so the penalty can be differentiated.

    Parameters
    ----------
    per_sample_loss : torch.Tensor of shape (batch,)
        Data loss of each sample (unweighted); must depend on ``inputs``.
    inputs : torch.Tensor of shape (batch, n_features)
        With ``requires_grad=True``.
    sample_weight : torch.Tensor of shape (batch,), optional
        Weights of the rows' squared norms.

    Returns
    -------
    torch.Tensor
        A scalar.
    """
    (grad,) = torch.autograd.grad(per_sample_loss.sum(), inputs, create_graph=True)
    norms = grad.square().sum(dim=1)
    if sample_weight is not None:
        norms = norms * sample_weight.to(norms.dtype)
    return norms.mean()


@dataclass(frozen=True)
class Penalty:
    """A registered penalty.

    Parameters
    ----------
    function : callable
        ``function(result) -> scalar tensor``.
    needs : {"stream", "derivatives"}
        What the forward pass must compute for it.
    """

    function: Callable
    needs: str


#: Registered DREG penalties by name.
PENALTIES = {
    "local": Penalty(local_dreg, "derivatives"),
    "stream": Penalty(stream_dreg, "stream"),
}
