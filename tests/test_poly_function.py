"""The polynomial activation's one-node value-and-slope function: its
hand-written backward against autograd of the recorded ops, first and second
order, with and without a bound and a dropout mask."""

import pytest
import torch

from cr_sklearn.nn import PolyActivation
from cr_sklearn.nn._poly_function import PolyValueAndSlope, poly_value_and_slope

ONE = torch.ones((), dtype=torch.float64)


def _inputs(shape, degree, seed=0, masked=False):
    gen = torch.Generator().manual_seed(seed)
    z = (2.0 * torch.randn(shape, generator=gen, dtype=torch.float64)).requires_grad_()
    c = torch.randn(degree + 1, shape[-1], generator=gen, dtype=torch.float64)
    mask = None
    if masked:
        # Dropout's values: 0 or 1 / (1 - p).
        mask = (torch.rand(shape, generator=gen, dtype=torch.float64) > 0.3) / 0.7
    return z, c.requires_grad_(), mask


CASES = [
    pytest.param(
        degree, bound, shape, masked, id=f"K{degree}-b{bound}-{shape}-m{masked}"
    )
    for degree, bound in [(1, None), (1, 3.0), (2, None), (3, 3.0), (3, None), (5, 1.5)]
    for shape, masked in [((6, 4), False), ((3, 2, 4), True)]
]


@pytest.mark.parametrize("degree, bound, shape, masked", CASES)
def test_values_equal_the_recorded_ops(degree, bound, shape, masked):
    z, c, mask = _inputs(shape, degree, masked=masked)
    value, slope = PolyValueAndSlope.apply(z, c, bound, ONE, mask)
    ref_value, ref_slope = poly_value_and_slope(z, c, bound, ONE)
    if mask is not None:
        ref_value, ref_slope = ref_value * mask, ref_slope * mask
    torch.testing.assert_close(value, ref_value, rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(slope, ref_slope, rtol=1e-14, atol=1e-14)
    assert value.shape == slope.shape == z.shape


@pytest.mark.parametrize("degree, bound, shape, masked", CASES)
def test_backward_passes_gradcheck(degree, bound, shape, masked):
    z, c, mask = _inputs(shape, degree, masked=masked)
    assert torch.autograd.gradcheck(
        lambda z, c: PolyValueAndSlope.apply(z, c, bound, ONE, mask), (z, c)
    )


@pytest.mark.parametrize("degree, bound, shape, masked", CASES)
def test_backward_of_the_backward_passes_gradgradcheck(degree, bound, shape, masked):
    # The input-gradient penalty differentiates the backward (create_graph).
    z, c, mask = _inputs(shape, degree, masked=masked)
    assert torch.autograd.gradgradcheck(
        lambda z, c: PolyValueAndSlope.apply(z, c, bound, ONE, mask), (z, c)
    )


def test_gradients_reach_only_the_inputs_that_ask_for_them():
    z, c, _ = _inputs((5, 3), 3)
    z = z.detach()  # e.g. a network's input, not a parameter
    value, slope = PolyValueAndSlope.apply(z, c, 3.0, ONE, None)
    (value.sum() + slope.square().sum()).backward()
    assert z.grad is None
    assert c.grad is not None and bool(c.grad.abs().sum() > 0)


@pytest.mark.parametrize("bound", [None, 3.0])
def test_activation_takes_the_one_node_path_in_training_only(bound):
    act = PolyActivation(4, degree=3, bound=bound).double()
    z = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    value, slope = act.forward_and_derivative(z)
    assert type(value.grad_fn).__name__ == "PolyValueAndSlopeBackward"
    with torch.no_grad():
        plain_value, plain_slope = act.forward_and_derivative(z)
    assert plain_value.grad_fn is None
    torch.testing.assert_close(value.detach(), plain_value, rtol=0, atol=0)
    torch.testing.assert_close(slope.detach(), plain_slope, rtol=0, atol=0)
    torch.testing.assert_close(value, act(z), rtol=1e-14, atol=1e-14)
