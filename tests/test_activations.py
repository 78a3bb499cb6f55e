"""Closed-form activation derivatives against autograd, and the registry."""

import pytest
import torch

from cr_sklearn.nn import (
    ACTIVATION_NAMES,
    ACTIVATIONS,
    FixedActivation,
    PolyActivation,
    make_activation,
)
from cr_sklearn.nn.activations import _relu_derivative


def _autograd_derivative(fn, z):
    z = z.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(fn(z).sum(), z)
    return grad


def _grid(width=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    # Wide range: exercises the tails and the tanh saturation of the bound.
    return 4.0 * torch.randn(257, width, generator=gen, dtype=torch.float64)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_fixed_derivative_matches_autograd(name):
    z = _grid()
    # Keep clear of relu's kink, tested separately.
    z = torch.where(z.abs() < 1e-6, torch.full_like(z, 0.5), z)
    act = make_activation(name, z.shape[1])
    expected = _autograd_derivative(act, z)
    torch.testing.assert_close(act.derivative(z), expected, rtol=1e-12, atol=1e-12)
    value, slope = act.forward_and_derivative(z)
    torch.testing.assert_close(value, act(z), rtol=0, atol=0)
    torch.testing.assert_close(slope, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bound", [None, 3.0, 0.7])
@pytest.mark.parametrize("degree", [1, 2, 3, 5])
def test_poly_derivative_matches_autograd(degree, bound):
    width = 4
    act = PolyActivation(width, degree=degree, bound=bound).double()
    gen = torch.Generator().manual_seed(degree)
    with torch.no_grad():
        act.coefficients.copy_(
            torch.randn(degree + 1, width, generator=gen, dtype=torch.float64)
        )
    z = _grid(width)
    expected = _autograd_derivative(act, z)
    torch.testing.assert_close(act.derivative(z), expected, rtol=1e-12, atol=1e-12)
    value, slope = act.forward_and_derivative(z)
    torch.testing.assert_close(value, act(z), rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(slope, expected, rtol=1e-12, atol=1e-12)


def test_poly_has_one_polynomial_per_neuron():
    act = PolyActivation(3, degree=2, bound=None).double()
    with torch.no_grad():
        act.coefficients.copy_(
            torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        )
    z = torch.full((1, 3), 2.0, dtype=torch.float64)
    # neuron 0: z, neuron 1: 1, neuron 2: 2 + z**2
    torch.testing.assert_close(act(z), torch.tensor([[2.0, 1.0, 6.0]]).double())


def test_relu_derivative_at_zero_is_zero_like_torch():
    z = torch.zeros(3, dtype=torch.float64)
    assert torch.equal(_relu_derivative(z), torch.zeros(3, dtype=torch.float64))
    # The documented convention is torch's own subgradient at the kink.
    assert torch.equal(_autograd_derivative(torch.relu, z), _relu_derivative(z))
    act = make_activation("relu", 3)
    assert torch.equal(act.derivative(z), torch.zeros(3, dtype=torch.float64))


@pytest.mark.parametrize("bound", [None, 3.0])
def test_poly_starts_as_identity_near_zero(bound):
    act = PolyActivation(6, bound=bound).double()
    z = torch.linspace(-0.05, 0.05, 11, dtype=torch.float64).unsqueeze(1).expand(-1, 6)
    # b tanh(z / b) = z - z**3 / (3 b**2) + ...: identity to within |z|**3 / b**2.
    torch.testing.assert_close(act(z), z, rtol=0, atol=1e-4)
    torch.testing.assert_close(act.derivative(z), torch.ones_like(z), rtol=0, atol=1e-3)
    if bound is None:
        torch.testing.assert_close(act(5 * z), 5 * z, rtol=0, atol=0)


def test_poly_bound_keeps_outputs_bounded():
    act = PolyActivation(2, degree=3, bound=3.0).double()
    with torch.no_grad():
        act.coefficients.fill_(1.0)
    z = torch.tensor([[1e6, -1e6], [1e30, -1e30]], dtype=torch.float64)
    out = act(z)
    assert torch.isfinite(out).all()
    # |u| < 3, so |1 + u + u^2 + u^3| < 1 + 3 + 9 + 27.
    assert out.abs().max() <= 40.0
    assert torch.isfinite(act.derivative(z)).all()


def test_poly_rejects_degree_zero():
    with pytest.raises(ValueError, match="degree"):
        PolyActivation(3, degree=0)


def test_make_activation_builds_every_registered_name():
    assert isinstance(make_activation("poly", 4, degree=2), PolyActivation)
    assert make_activation("poly", 4, degree=2).degree == 2
    for name in ACTIVATIONS:
        act = make_activation(name, 4)
        assert isinstance(act, FixedActivation)
        assert act.name == name


def test_activation_names_list_poly_then_the_registry():
    assert ACTIVATION_NAMES == ("poly", *ACTIVATIONS)
    assert set(ACTIVATION_NAMES) == {"poly", "relu", "gelu", "tanh", "swish"}
    for name in ACTIVATION_NAMES:
        assert make_activation(name, 2) is not None


def test_make_activation_rejects_unknown_name():
    with pytest.raises(ValueError, match="Unknown activation 'softsign'") as info:
        make_activation("softsign", 4)
    # The message lists the valid choices.
    for name in [*ACTIVATIONS, "poly"]:
        assert name in str(info.value)


def test_adding_an_activation_is_one_registry_entry(monkeypatch):
    def softsign(z):
        return z / (1 + z.abs())

    def softsign_derivative(z):
        return 1 / (1 + z.abs()) ** 2

    monkeypatch.setitem(ACTIVATIONS, "softsign", (softsign, softsign_derivative))
    act = make_activation("softsign", 3)
    z = _grid(3)
    torch.testing.assert_close(act(z), softsign(z))
    torch.testing.assert_close(act.derivative(z), _autograd_derivative(act, z))


@pytest.mark.parametrize("bound", [None, 3.0, 0.7])
@pytest.mark.parametrize("degree", [1, 2, 3, 5])
def test_poly_overwriting_inference_pass_matches_forward(degree, bound):
    act = PolyActivation(6, degree=degree, bound=bound).double()
    with torch.no_grad():
        act.coefficients.normal_(generator=torch.Generator().manual_seed(degree))
    z = _grid(width=6)
    expected = act(z)
    scratch = z.clone()
    with torch.no_grad():
        out = act._forward_overwrite(scratch)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)


def test_poly_bound_is_b_tanh_z_over_b():
    # The bound is evaluated through sigmoid; it must still be b tanh(z / b).
    act = PolyActivation(5, degree=1, bound=0.7).double()
    z = _grid()
    torch.testing.assert_close(act(z), 0.7 * torch.tanh(z / 0.7), rtol=0, atol=1e-14)
