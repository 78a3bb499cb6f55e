"""Rank-consistent ordinal heads on a scalar latent score (plain PyTorch).

Both heads read one latent score ``eta`` per sample and ``K - 1`` increasing
cut-points, ``P(y <= k | x) = sigmoid(theta_k - eta)``: ``"cumulative"`` is
the cumulative-link negative log-likelihood (McCullagh, 1980), ``"coral"``
the CORAL loss (Cao, Mirjalili & Raschka, 2020), ``K - 1`` binary logistic
losses for the tasks ``y > k``.
"""

import torch
from torch import nn
from torch.nn import functional as F

from ._members import check_n_members

# Smallest gap between cut-points: strictly increasing even in float32.
MIN_GAP = 1e-4

__all__ = [
    "ORDINAL_HEADS",
    "CORALLoss",
    "CumulativeLinkLoss",
    "OrdinalHead",
    "cumulative_link_log_proba",
    "ordered_cutpoints",
]


def ordered_cutpoints(first, log_gaps):
    """Strictly increasing cut-points from unconstrained parameters.

    Parameters
    ----------
    first : torch.Tensor of shape (..., 1)
        The lowest cut-point (leading axes: members, if any).
    log_gaps : torch.Tensor of shape (..., K - 2)
        Unconstrained gaps: consecutive cut-points differ by
        ``MIN_GAP + softplus(log_gaps)``.

    Returns
    -------
    torch.Tensor of shape (..., K - 1)
    """
    gaps = MIN_GAP + F.softplus(log_gaps)
    return torch.cat([first, first + torch.cumsum(gaps, -1)], -1)


def cumulative_link_log_proba(eta, cutpoints):
    """Log class probabilities of the cumulative logit model, stable for any ``eta``.

    ``P(y = k) = sigmoid(a) sigmoid(-b) (1 - e^(b-a))`` with ``a = theta_k - eta``
    and ``b = theta_{k-1} - eta``.

    Parameters
    ----------
    eta : torch.Tensor of shape (..., batch)
        Latent scores (leading axes: members, if any).
    cutpoints : torch.Tensor of shape (..., K - 1)
        Increasing cut-points, with ``eta``'s leading axes.

    Returns
    -------
    torch.Tensor of shape (..., batch, K)
    """
    diff = cutpoints.unsqueeze(-2) - eta.unsqueeze(-1)  # (..., batch, K - 1)
    first = F.logsigmoid(diff[..., :1])
    last = F.logsigmoid(-diff[..., -1:])
    if cutpoints.shape[-1] == 1:
        return torch.cat([first, last], -1)
    upper, lower = diff[..., 1:], diff[..., :-1]
    gaps = (cutpoints[..., :-1] - cutpoints[..., 1:]).unsqueeze(-2)  # b - a < 0
    middle = F.logsigmoid(upper) + F.logsigmoid(-lower) + torch.log(-torch.expm1(gaps))
    return torch.cat([first, middle, last], -1)


class OrdinalHead(nn.Module):
    """Learnable ordered cut-points and the per-sample ordinal loss.

    The training criterion: ``head(output, target) -> (batch,)``, with the
    latent score in ``output[:, 0]`` and class codes ``0..K-1`` in ``target``.

    Parameters
    ----------
    n_classes : int
        Number of ordered classes ``K >= 2``.
    init_cutpoints : array-like of shape (K - 1,), optional
        Increasing initial cut-points, e.g. the logits of the cumulative class
        frequencies; evenly spaced around 0 by default.
    n_members : int or None, default=None
        ``M``: one set of cut-points per member, for outputs of shape ``(M,
        batch, 1)`` and losses of shape ``(M, batch)``.

    Attributes
    ----------
    no_decay_patterns : tuple of str
        :func:`fnmatch.fnmatch` patterns of parameters without weight decay.
    """

    no_decay_patterns = ("*cutpoint*",)

    def __init__(self, n_classes, init_cutpoints=None, n_members=None):
        super().__init__()
        self.n_members = check_n_members(n_members)
        if n_classes < 2:
            raise ValueError(f"n_classes must be at least 2, got {n_classes}.")
        self.n_classes = int(n_classes)
        n_cuts = self.n_classes - 1
        if init_cutpoints is None:
            init = torch.linspace(-1.0, 1.0, n_cuts) if n_cuts > 1 else torch.zeros(1)
        else:
            init = torch.as_tensor(init_cutpoints, dtype=torch.float32).reshape(-1)
            if init.shape[0] != n_cuts:
                raise ValueError(
                    f"init_cutpoints must have {n_cuts} values, got {init.shape[0]}."
                )
        gaps = (torch.diff(init) - MIN_GAP).clamp_min(1e-3)
        # softplus^{-1}(g) = g + log(-expm1(-g)), stable for small g.
        log_gaps = gaps + torch.log(-torch.expm1(-gaps))
        first = init[:1]
        if self.n_members is not None:
            first = first.expand(self.n_members, -1)
            log_gaps = log_gaps.expand(self.n_members, -1)
        self.cutpoint_first = nn.Parameter(first.clone())
        self.cutpoint_log_gaps = nn.Parameter(log_gaps.clone())

    def cutpoints(self):
        """The ordered cut-points.

        Returns
        -------
        torch.Tensor of shape (K - 1,)
            Strictly increasing; ``(n_members, K - 1)`` with members.
        """
        return ordered_cutpoints(self.cutpoint_first, self.cutpoint_log_gaps)

    def log_proba(self, eta):
        """Log class probabilities of the cumulative logit model.

        Parameters
        ----------
        eta : torch.Tensor of shape (batch,)
            Latent scores; ``(n_members, batch)`` with members.

        Returns
        -------
        torch.Tensor of shape (batch, K)
            ``log P(y = k | eta)`` (``(n_members, batch, K)`` with members).
        """
        return cumulative_link_log_proba(eta, self.cutpoints().to(eta.dtype))

    def forward(self, output, target):
        """Per-sample loss of the head.

        Parameters
        ----------
        output : torch.Tensor of shape (batch, 1)
            The latent score (``(n_members, batch, 1)`` with members).
        target : torch.Tensor of shape (batch,)
            Class codes ``0..K-1``.

        Returns
        -------
        torch.Tensor of shape (batch,)
            The loss of each sample (``(n_members, batch)`` with members).
        """
        return self._loss(output[..., 0], target.long())

    def _loss(self, eta, target):
        raise NotImplementedError

    def extra_repr(self):
        members = "" if self.n_members is None else f", n_members={self.n_members}"
        return f"n_classes={self.n_classes}{members}"


class CumulativeLinkLoss(OrdinalHead):
    """Cumulative-link (proportional-odds) negative log-likelihood per sample.

    Parameters
    ----------
    n_classes, init_cutpoints, n_members : optional
        As in :class:`OrdinalHead`.
    """

    def _loss(self, eta, target):
        log_proba = self.log_proba(eta)
        index = target.unsqueeze(-1).expand(*log_proba.shape[:-1], 1)
        return -log_proba.gather(-1, index)[..., 0]


class CORALLoss(OrdinalHead):
    """CORAL loss per sample: ``sum_k BCE(sigmoid(eta - theta_k), [y > k])``.

    Parameters
    ----------
    n_classes, init_cutpoints, n_members : optional
        As in :class:`OrdinalHead` (``K - 1`` binary tasks for ``K`` classes).
    """

    def _loss(self, eta, target):
        logits = eta.unsqueeze(-1) - self.cutpoints().to(eta.dtype).unsqueeze(-2)
        ranks = torch.arange(self.n_classes - 1, device=eta.device)
        levels = (target.unsqueeze(1) > ranks.unsqueeze(0)).to(eta.dtype)
        loss = F.binary_cross_entropy_with_logits(
            logits, levels.expand_as(logits), reduction="none"
        )
        return loss.sum(-1)


#: Ordinal heads by name: the criterion class used in training.
ORDINAL_HEADS = {"cumulative": CumulativeLinkLoss, "coral": CORALLoss}
