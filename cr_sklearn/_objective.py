"""The training objective of the CR estimators (private).

One object holds what a training step minimises: the per-sample data loss
(the estimator's criterion), the DREG penalty, the spread of the output-
gradient norms and the input-gradient penalty with their strengths, and the
stream plan (which rows and how many random directions carry the Jacobian
stream). The estimators build it from the fit's plan; the skorch net calls
it in ``infer`` and ``get_loss``; growth and plots call
:meth:`TrainingObjective.data_loss` instead of recomposing the loss. Sample
weights weigh every term: a weight is a repetition of the row, for the
penalties as for the data loss.
"""

import dataclasses
from dataclasses import dataclass

import torch

from ._plan import stream_rule
from .nn import PENALTIES, gradient_spread, input_gradient_penalty, random_directions

__all__ = []


@dataclass(frozen=True)
class StreamPlan:
    """Which part of a batch carries the Jacobian stream.

    Parameters
    ----------
    directions : "exact", int or None
        ``"exact"``: the full Jacobian; an int ``k``: ``k`` random directions
        per row; ``None``: no stream.
    rows : int or None
        Carry the stream on this many uniformly random rows of each batch
        (all rows when ``None`` or when the batch is not larger).
    points : {"data", "interpolated", "between_classes"}
        Carry it at the rows, or at as many points between random pairs of
        them, any pairs or pairs of rows whose labels differ (see
        :meth:`between`).
    """

    directions: object = None
    rows: int | None = None
    points: str = "data"

    @property
    def needs_labels(self):
        """Whether :meth:`between` draws its pairs from the batch's labels."""
        return self.points == "between_classes" and self.directions is not None

    def sample(self, X, width=None):
        """The rows and directions that carry the stream for the batch ``X``.

        ``width``: the columns the stream differentiates by (the module's
        ``stream_width``); ``X``'s columns when ``None``.

        Returns
        -------
        rows : torch.Tensor of int64 or None
            A uniform random subset of the rows (``None``: every row). It keeps
            the batch-mean penalty an unbiased estimate of the full batch's at
            a fraction of the stream's cost.
        directions : None, "exact" or torch.Tensor
            With ``k`` random directions, Rademacher directions scaled by
            ``1 / sqrt(k)``, one set per carried row, so that the penalty
            (a mean of squared norms) is unbiased for the exact Jacobian's.
        """
        if self.directions is None:
            return None, None
        rows = None
        if self.rows and X.shape[0] > self.rows:
            rows = torch.randperm(X.shape[0], device=X.device)[: self.rows]
        n_rows = X.shape[0] if rows is None else rows.shape[0]
        width = X.shape[1] if width is None else width
        return rows, self.directions_for(n_rows, width, X)

    def directions_for(self, n_rows, width, like):
        """``"exact"``, or ``n_rows`` sets of random directions in ``width``
        columns, of ``like``'s dtype and device (see :meth:`sample`)."""
        if self.directions == "exact":
            return "exact"
        return random_directions(
            n_rows, width, int(self.directions), dtype=like.dtype, device=like.device
        )

    def between(self, X, labels=None):
        """Points between the rows of ``X`` to carry the stream: ``(points, pairs)``.

        ``t x_i + (1 - t) x_j`` for ``k`` random pairs ``(i, j)`` of rows
        (``pairs``, shape ``(2, k)``; ``k`` the stream's rows, capped at the
        batch) and ``t ~ U[0, 1]``: a penalty at the rows alone is blind to
        the gaps between the classes, where the decision boundary runs, and
        leaves the function steep there. ``"interpolated"``: uniform pairs.
        ``"between_classes"``: ``i`` uniform and ``j`` uniform among the rows
        whose label (``labels``, one per row) differs from ``i``'s, or among
        all rows when the batch has one label: every segment then crosses the
        boundary, and the penalty acts where the steepest gradients were.
        """
        n = X.shape[0]
        k = n if not self.rows else min(n, int(self.rows))
        if self.points == "between_classes":
            if labels is None:
                raise ValueError("dreg_points='between_classes' needs the labels.")
            pairs = _pairs_across(labels, k)
        else:
            pairs = torch.randint(n, (2, k), device=X.device)
        t = torch.rand(k, 1, dtype=X.dtype, device=X.device)
        return t * X[pairs[0]] + (1.0 - t) * X[pairs[1]], pairs


@dataclass(frozen=True)
class TrainingObjective:
    """Data loss plus the DREG, spread and input-gradient penalties, each weighted.

    Parameters
    ----------
    dreg : str or None
        Name of a penalty in :data:`cr_sklearn.nn.PENALTIES`.
    dreg_lambda : float
        Strength of the DREG penalty; 0 switches it off.
    igpen_lambda : float
        Strength of the double-backprop input-gradient penalty.
    spread_lambda : float
        Strength of :func:`~cr_sklearn.nn.gradient_spread` (reads the stream).
    stream : StreamPlan
        How the Jacobian stream is carried when a penalty needs it.
    """

    dreg: str | None = None
    dreg_lambda: float = 0.0
    igpen_lambda: float = 0.0
    spread_lambda: float = 0.0
    stream: StreamPlan = StreamPlan()

    @classmethod
    def from_plan(cls, plan, stream_width):
        """The objective of a :class:`~cr_sklearn._plan.FitPlan`.

        ``stream_width``: the columns the stream differentiates by.
        """
        dreg = None if plan.dreg is None or plan.dreg_lambda == 0 else plan.dreg
        spread = float(plan.spread_lambda)
        stream = StreamPlan()
        # The registry says which penalties read the Jacobian stream.
        if spread > 0 or (dreg is not None and PENALTIES[dreg].needs == "stream"):
            directions = stream_rule(plan.n_projections, stream_width)
            stream = StreamPlan(directions, plan.stream_rows, plan.dreg_points)
        return cls(
            dreg=dreg,
            dreg_lambda=0.0 if dreg is None else float(plan.dreg_lambda),
            igpen_lambda=float(plan.igpen_lambda),
            spread_lambda=spread,
            stream=stream,
        )

    @property
    def penalty(self):
        """The registered :class:`~cr_sklearn.nn.Penalty`, or ``None``."""
        return None if self.dreg is None else PENALTIES[self.dreg]

    def forward(self, module, X, sample_weight=None, labels=None):
        """Training forward pass: ``(output, stream_result)``.

        ``stream_result`` is ``(inputs, StreamOutput, weight)``: what the
        penalties need (the stream only when a penalty reads it). With
        ``sample_weight`` (``(batch,)``, or ``(batch, M)`` for members), each
        row the stream carries is scaled by the square root of its weight,
        so the stream penalty is the weighted mean of the squared norms;
        ``weight`` is those rows' weights (members first), else ``None``.
        With the stream at points between the rows (:meth:`StreamPlan.between`),
        the points follow the rows in one pass, a point weighs the geometric
        mean of its pair's weights (0 where either is 0: a member's held-out
        rows stay held out), and the output and slopes returned are the rows'.
        ``labels``: the batch's, which ``"between_classes"`` pairs by.
        """
        penalty = self.penalty
        if self.igpen_lambda > 0:
            X = X.detach().requires_grad_(True)
        inputs, pairs = X, None
        if self.stream.points != "data" and self.stream.directions is not None:
            points, pairs = self.stream.between(X, labels)
            inputs = torch.cat([X, points])
            rows = torch.arange(len(X), len(inputs), device=X.device)
            directions = self.stream.directions_for(len(points), module.stream_width, X)
        else:
            rows, directions = self.stream.sample(X, module.stream_width)
        scale = weight = None
        if sample_weight is not None and directions is not None:
            weight = sample_weight.to(X.dtype)
            if pairs is not None:
                weight = (weight[pairs[0]] * weight[pairs[1]]).sqrt()
            elif rows is not None:
                weight = weight[rows]
            weight = weight.T if weight.dim() == 2 else weight
            scale = weight.sqrt()
        result = module.forward_stream(
            inputs,
            directions,
            derivatives=penalty is not None,
            rows=rows,
            stream_scale=scale,
        )
        if pairs is not None:
            result = _first_rows(result, len(X))
        return result.output, (X, result, weight)

    @staticmethod
    def data_loss(criterion, output, y, sample_weight=None):
        """Per-sample data losses and their (weighted) mean.

        With a member network (``output`` of shape ``(M, batch, o)``), the
        criterion gives ``(M, batch)`` losses, ``sample_weight`` is
        ``(batch, M)`` (each member's weights) and the mean is the sum over
        the members of each member's weighted batch mean.

        Returns
        -------
        per_sample : torch.Tensor of shape (batch,) or (M, batch)
        mean : torch.Tensor
            ``mean(per_sample * sample_weight)``.
        """
        per_sample = criterion(output, y.to(output.device))
        if per_sample.ndim == 2:
            weight = sample_weight.to(per_sample.device).T
            # A member's held-out rows weigh 0: never 0 * inf = nan.
            per_sample = torch.where(weight > 0, per_sample * weight, 0.0)
            return per_sample, per_sample.mean(dim=1).sum()
        if sample_weight is not None:
            per_sample = per_sample * sample_weight.to(per_sample.device)
        return per_sample, per_sample.mean()

    def loss(self, criterion, output, stream_result, y, sample_weight=None):
        """Total training loss and the penalty values, by name.

        Returns
        -------
        loss : torch.Tensor
            A scalar to differentiate.
        terms : dict
            ``{"penalty": ..., "spread": ..., "igpen": ...}`` (unscaled values,
            as floats) for the terms that are on.
        """
        per_sample, loss = self.data_loss(criterion, output, y, sample_weight)
        terms = {}
        inputs, result, stream_weight = stream_result
        penalty = self.penalty
        if penalty is not None:
            if penalty.needs != "stream" and sample_weight is not None:
                # The layer-local penalty reads the slopes: scaled rows.
                result = _weighted_slopes(result, sample_weight)
            value = penalty.function(result)
            terms["penalty"] = value.item()
            loss = loss + self.dreg_lambda * value
        if self.spread_lambda > 0:
            value = gradient_spread(result, stream_weight)
            terms["spread"] = value.item()
            loss = loss + self.spread_lambda * value
        if self.igpen_lambda > 0:
            value = input_gradient_penalty(
                criterion(output, y.to(output.device)), inputs, sample_weight
            )
            terms["igpen"] = value.item()
            loss = loss + self.igpen_lambda * value
        return loss, terms


def _pairs_across(labels, k):
    """``k`` pairs ``(i, j)`` of rows, shape ``(2, k)``: ``i`` uniform, ``j``
    uniform among the rows whose label differs from ``i``'s (any row when the
    batch has one label). ``labels``: one per row, or a row of targets each."""
    n = labels.shape[0]
    device = labels.device
    labels = labels.reshape(n, -1)
    # One label per row takes the flat path: ``unique(dim=0)`` costs 30 times more.
    flat = labels.shape[1] == 1
    _, codes, counts = torch.unique(
        labels[:, 0] if flat else labels,
        dim=None if flat else 0,
        return_inverse=True,
        return_counts=True,
    )
    # i, a uniform j for a batch of one label (no other to pair with), and the
    # uniform draw that picks j among the other labels' rows: all drawn for
    # every batch, so that the generator's later draws do not depend on the
    # batch's labels.
    pairs = torch.randint(n, (2, k), device=device)
    u = torch.rand(k, device=device, dtype=torch.float64)
    if counts.numel() == 1:
        return pairs
    # The rows sorted by label: label c's rows are order[start_c : start_c + n_c],
    # and the r-th row of the other labels is order[r], or order[r + n_c] past them.
    order = torch.argsort(codes, stable=True)
    starts = counts.cumsum(0) - counts
    c = codes[pairs[0]]
    n_c = counts[c]
    others = n - n_c
    r = (u * others).long()
    r = torch.minimum(r, others - 1)  # a product rounded up to ``others``
    pairs[1] = order[r + (r >= starts[c]) * n_c]
    return pairs


def _first_rows(result, n):
    """``result`` with the output and slopes of its first ``n`` rows only."""
    slopes = [None if d is None else d.narrow(-2, 0, n) for d in result.derivatives]
    return dataclasses.replace(
        result, output=result.output.narrow(-2, 0, n), derivatives=slopes
    )


def _weighted_slopes(result, sample_weight):
    """``result`` with each row's slopes scaled by the root of its weight."""
    scale = sample_weight.to(result.output.dtype).sqrt()
    scale = (scale.T if scale.dim() == 2 else scale).unsqueeze(-1)
    derivatives = [None if d is None else d * scale for d in result.derivatives]
    return dataclasses.replace(result, derivatives=derivatives)
