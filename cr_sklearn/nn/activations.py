"""Activations with closed-form derivatives, for the dual-stream pass."""

import math

import torch
from torch import nn

from ._members import check_n_members
from ._poly_function import PolyValueAndSlope, poly_value_and_slope, squash

__all__ = [
    "ACTIVATIONS",
    "ACTIVATION_NAMES",
    "FixedActivation",
    "PolyActivation",
    "make_activation",
]

_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _relu_derivative(z):
    # The kink at 0 gets derivative 0, the subgradient torch's autograd uses.
    return (z > 0).to(z.dtype)


def _tanh_derivative(z):
    return 1.0 - torch.tanh(z) ** 2


def _gelu(z):
    return 0.5 * z * (1.0 + torch.erf(z / _SQRT_2))


def _gelu_derivative(z):
    # d/dz [z Phi(z)] = Phi(z) + z phi(z), the exact (erf) GELU.
    cdf = 0.5 * (1.0 + torch.erf(z / _SQRT_2))
    pdf = _INV_SQRT_2PI * torch.exp(-0.5 * z * z)
    return cdf + z * pdf


def _swish(z):
    return z * torch.sigmoid(z)


def _swish_derivative(z):
    s = torch.sigmoid(z)
    return s * (1.0 + z * (1.0 - s))


#: Fixed activations: ``name -> (function, closed-form derivative)``.
ACTIVATIONS = {
    "relu": (torch.relu, _relu_derivative),
    "gelu": (_gelu, _gelu_derivative),
    "tanh": (torch.tanh, _tanh_derivative),
    "swish": (_swish, _swish_derivative),
}

#: Every built-in activation name: ``"poly"`` (:class:`PolyActivation`), then
#: the keys of :data:`ACTIVATIONS`, in the order studies and docs list them.
ACTIVATION_NAMES = ("poly", *ACTIVATIONS)


def _horner(terms, u, in_place=False):
    """``sum_k c_k u**k`` (``K >= 1``) by Horner's rule; ``in_place``: one buffer."""
    value = torch.addcmul(terms[-2], terms[-1], u)
    for c in reversed(terms[:-2]):
        value = torch.addcmul(c, value, u, out=value if in_place else None)
    return value


class _Activation(nn.Module):
    """An activation's value and closed-form derivative (``_value_and_slope``)."""

    def forward(self, z):
        """Apply the activation elementwise.

        Parameters
        ----------
        z : torch.Tensor
            Pre-activations; the last axis runs over neurons.

        Returns
        -------
        torch.Tensor
            ``phi(z)``, of the shape of ``z``.
        """
        return self._value(z)

    def derivative(self, z):
        """Closed-form derivative ``phi'(z)``, elementwise.

        Parameters
        ----------
        z : torch.Tensor
            As in :meth:`forward`.

        Returns
        -------
        torch.Tensor
            ``phi'(z)``, of the shape of ``z``.
        """
        return self._value_and_slope(z, None)[1]

    def forward_and_derivative(self, z, mask=None):
        """Return ``(phi(z), phi'(z))``, each times ``mask`` if given.

        Parameters
        ----------
        z : torch.Tensor
            As in :meth:`forward`.
        mask : torch.Tensor, optional
            Multiplies both outputs (a dropout mask), of the shape of ``z``.

        Returns
        -------
        value, slope : torch.Tensor
            ``phi(z)`` and ``phi'(z)``, each of the shape of ``z``.
        """
        return self._value_and_slope(z, mask)


class FixedActivation(_Activation):
    """A parameter-free activation from :data:`ACTIVATIONS`.

    Parameters
    ----------
    name : str
        A key of :data:`ACTIVATIONS`.
    """

    def __init__(self, name):
        super().__init__()
        if name not in ACTIVATIONS:
            raise ValueError(
                f"Unknown activation {name!r}; choose one of {['poly', *ACTIVATIONS]}."
            )
        self.name = name
        self._value, self._derivative = ACTIVATIONS[name]

    def _value_and_slope(self, z, mask):
        value, slope = self._value(z), self._derivative(z)
        if mask is not None:
            value, slope = value * mask, slope * mask
        return value, slope

    def extra_repr(self):
        return self.name


class PolyActivation(_Activation):
    r"""Learnable polynomial activation, one polynomial per neuron.

    .. math:: \phi_i(z) = \sum_{k=0}^{K} a_{ik} u^k, \qquad
              u = b \tanh(z / b)

    The polynomial starts as the identity and the pre-activation is
    soft-bounded, so stacked layers stay finite (:ref:`network`).

    Parameters
    ----------
    width : int
        Number of neurons; each has its own coefficients.
    degree : int, default=3
        Polynomial degree ``K``.
    bound : float or None, default=3.0
        Soft bound ``b`` on the pre-activation; ``None`` uses ``u = z``.
    n_members : int or None, default=None
        ``M``: the members' polynomials, for input of shape ``(M, batch, width)``.

    Attributes
    ----------
    coefficients : torch.nn.Parameter of shape (degree + 1, width)
        ``coefficients[k, i]`` multiplies ``u**k`` for neuron ``i``; with
        members of shape ``(degree + 1, n_members, 1, width)``.
    """

    def __init__(self, width, degree=3, bound=3.0, n_members=None):
        super().__init__()
        if degree < 1:
            raise ValueError(f"degree must be >= 1, got {degree}.")
        self.degree = int(degree)
        self.bound = None if bound is None else float(bound)
        self.n_members = check_n_members(n_members)
        members = () if self.n_members is None else (self.n_members, 1)
        coefficients = torch.zeros(self.degree + 1, *members, width)
        coefficients[1] = 1.0
        self.coefficients = nn.Parameter(coefficients)
        # The 1 of ``1 - (u / b)**2`` as a tensor, for one fused op.
        self.register_buffer("_one", torch.ones(()), persistent=False)

    def _value_and_slope(self, z, mask):
        if torch.is_grad_enabled() and (
            z.requires_grad or self.coefficients.requires_grad
        ):
            # One autograd node, not a dozen: their overhead sets the step cost.
            return PolyValueAndSlope.apply(
                z, self.coefficients, self.bound, self._one, mask
            )
        value, slope = poly_value_and_slope(z, self.coefficients, self.bound, self._one)
        if mask is not None:
            value, slope = value * mask, slope * mask
        return value, slope

    def _value(self, z):
        u, _ = squash(z, self.bound, self._one, slope=False)
        return _horner(self.coefficients.unbind(0), u)

    def _forward_overwrite(self, z):
        """``forward(z)`` in ``z``'s memory (a scratch tensor), for inference only."""
        u = z
        if self.bound is not None:
            torch.sigmoid(z.mul_(2.0 / self.bound), out=z)
            u = z.mul_(2.0 * self.bound).sub_(self.bound)
        terms = self.coefficients.unbind(0)  # degree >= 1: two terms at least
        value = torch.addcmul(terms[-2], terms[-1], u)
        for c in reversed(terms[:-2]):
            value.mul_(u).add_(c)
        return value

    def extra_repr(self):
        members = "" if self.n_members is None else f", n_members={self.n_members}"
        return (
            f"width={self.coefficients.shape[-1]}, degree={self.degree}, "
            f"bound={self.bound}{members}"
        )


def make_activation(name, width, *, degree=3, n_members=None):
    """Build the activation module called ``name`` for ``width`` neurons.

    Parameters
    ----------
    name : str
        One of :data:`ACTIVATION_NAMES`.
    width : int
        Number of neurons.
    degree : int, default=3
        Polynomial degree (``"poly"`` only).
    n_members : int or None, default=None
        Members of a member stack (``"poly"`` only).

    Returns
    -------
    torch.nn.Module
        A module with ``forward``, ``derivative`` and ``forward_and_derivative``.
    """
    if name == "poly":
        return PolyActivation(width, degree=degree, n_members=n_members)
    return FixedActivation(name)
