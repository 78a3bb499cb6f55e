"""The piecewise-linear input encoding of the CR networks: its values against
the transformer's, and the stream, the reverse-mode Jacobian and the
penalties' gradients of an encoded network against autograd (float64)."""

import pickle

import numpy as np
import pytest
import torch
from torch.func import functional_call, jacfwd, vmap

from cr_sklearn import PiecewiseLinearEncoder
from cr_sklearn.nn import (
    CRNetwork,
    PiecewiseLinearEncoding,
    ResidualCRNetwork,
    stream_dreg,
)

# torch.func loads its forward-mode decompositions through torch.jit.script.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)

D, OUTPUTS = 3, 2
# Column 0: 3 bins, column 1: a copy, column 2: 2 bins.
EDGES = [np.array([-1.0, 0.0, 0.5, 1.5]), None, np.array([-0.5, 0.2, 1.0])]


def _network(cls, seed=0, stream_space="input"):
    torch.manual_seed(seed)
    n_encoded = PiecewiseLinearEncoding.size(EDGES)
    net = cls(
        D,
        OUTPUTS,
        hidden_layer_sizes=(5, 4),
        encoded_features=n_encoded,
        stream_space=stream_space,
    )
    net = net.double()
    net.encoding.set_edges(EDGES)
    gen = torch.Generator().manual_seed(seed)
    # Standardised ramps, as the estimators fit them (copies ignore these).
    net.encoding.set_ramp_scaling(
        torch.rand(n_encoded, generator=gen).double(),
        0.2 + torch.rand(n_encoded, generator=gen).double(),
    )
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
        net.set_input_scaling(
            torch.randn(D, generator=gen).double(),
            0.5 + torch.rand(D, generator=gen).double(),
        )
    return net.eval()


def _inputs(n=11, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return 1.5 * torch.randn(n, D, generator=gen, dtype=torch.float64)


NETWORKS = [CRNetwork, ResidualCRNetwork]


def test_values_are_the_transformers_ramps():
    X = np.random.default_rng(0).normal(size=(200, 2))
    X[:, 1] = X[:, 1] > 0  # binary: a copy
    encoder = PiecewiseLinearEncoder(n_bins=4).fit(X)
    encoding = PiecewiseLinearEncoding(2, encoder.n_features_out_).double()
    encoding.set_edges(encoder.edges_)
    X_new = np.random.default_rng(1).normal(size=(50, 2)) * 2
    out = encoding(torch.as_tensor(X_new))
    np.testing.assert_allclose(out.numpy(), encoder.transform(X_new), atol=1e-12)


def test_ramp_scaling_standardises_the_ramps_only():
    n_encoded = PiecewiseLinearEncoding.size(EDGES)
    encoding = PiecewiseLinearEncoding(D, n_encoded).double().set_edges(EDGES)
    h = _inputs()
    plain = encoding(h)
    mean, scale = torch.linspace(0.1, 0.6, n_encoded), torch.linspace(0.5, 2, n_encoded)
    scaled = encoding.set_ramp_scaling(mean, scale)(h)
    ramp = encoding.ramp
    expected = (plain[:, ramp] - mean[ramp].double()) / scale[ramp].double()
    torch.testing.assert_close(scaled[:, ramp], expected)
    torch.testing.assert_close(scaled[:, ~ramp], h[:, [1]])
    with pytest.raises(ValueError, match="entries"):
        encoding.set_ramp_scaling(mean[:-1], scale)
    with pytest.raises(ValueError, match="positive"):
        encoding.set_ramp_scaling(mean, 0 * scale)
    with pytest.raises(ValueError, match="finite"):
        encoding.set_ramp_scaling(mean * np.nan, scale)


def test_on_an_edge_the_slope_is_the_mean_of_the_one_sided_ones():
    encoding = PiecewiseLinearEncoding(D, PiecewiseLinearEncoding.size(EDGES)).double()
    encoding.set_edges(EDGES)
    # Column 0 on its inner edge 0.0 (between bins 0 and 1) and, within the
    # tolerance, on its top edge 1.5; column 2 on its bottom edge -0.5.
    h = torch.tensor([[0.0, 0.3, -0.5], [1.5 + 1e-7, 0.3, 0.6]], dtype=torch.float64)
    _, slope = encoding.forward_and_slope(h)
    column0 = slope[:, :3] / encoding.inv_width[:3]
    torch.testing.assert_close(column0[0], torch.tensor([0.5, 0.5, 0.0]).double())
    torch.testing.assert_close(column0[1], torch.tensor([0.0, 0.0, 0.5]).double())
    torch.testing.assert_close(
        slope[0, 4:] / encoding.inv_width[4:], torch.tensor([0.5, 0.0]).double()
    )

    def column_slope(x, side):
        shifted = h[:1].clone()
        shifted[0, 0] = x + side * 1e-9
        return (encoding(shifted)[0, :3] - encoding(h[:1])[0, :3]) / (side * 1e-9)

    left, right = column_slope(0.0, -1), column_slope(0.0, 1)
    torch.testing.assert_close(slope[0, :3], (left + right) / 2, rtol=1e-5, atol=1e-5)


def test_slope_is_the_derivative_of_the_values():
    n_encoded = PiecewiseLinearEncoding.size(EDGES)
    encoding = PiecewiseLinearEncoding(D, n_encoded).double()
    encoding.set_edges(EDGES)
    encoding.set_ramp_scaling(torch.full((n_encoded,), 0.3), torch.arange(1, 7) / 4)
    h = _inputs()
    _, slope = encoding.forward_and_slope(h)
    expected = vmap(jacfwd(encoding))(h)  # (batch, n_encoded, D)
    torch.testing.assert_close(encoding.jacobian(slope), expected.transpose(1, 2))


@pytest.mark.parametrize("cls", NETWORKS)
def test_jacobians_are_with_respect_to_the_raw_input(cls):
    net = _network(cls)
    x = _inputs()
    expected = vmap(jacfwd(lambda xi: net(xi.unsqueeze(0))[0]))(x)
    for mode in ["forward", "reverse"]:
        jac = net.input_jacobian(x, mode=mode)
        assert jac.shape == (len(x), OUTPUTS, D)
        torch.testing.assert_close(jac, expected, rtol=1e-10, atol=1e-12)
        # With the stream in the input's space, the features are the input.
        torch.testing.assert_close(net.feature_jacobian(x, mode=mode), jac)


@pytest.mark.parametrize("cls", NETWORKS)
def test_stream_carries_directions_and_row_subsets_of_the_raw_input(cls):
    net = _network(cls)
    x = _inputs()
    h0 = net._standardise(x)

    def of_standardised(hi):
        return net((hi * net.input_scale + net.input_mean).unsqueeze(0))[0]

    exact = vmap(jacfwd(of_standardised))(h0)  # (batch, outputs, D)
    res = net.forward_stream(x, "exact")
    assert res.n_directions == D
    torch.testing.assert_close(res.jacobians[-1], exact, rtol=1e-10, atol=1e-12)
    directions = torch.randn(len(x), 2, D, dtype=torch.float64)
    projected = net.forward_stream(x, directions).jacobians[-1]
    torch.testing.assert_close(projected, exact @ directions.transpose(1, 2))
    rows = torch.tensor([0, 4, 7])
    subset = net.forward_stream(x, "exact", rows=rows).jacobians[-1]
    torch.testing.assert_close(subset, exact[rows])


@pytest.mark.parametrize("cls", NETWORKS)
def test_the_stream_can_differentiate_by_the_encoded_columns(cls):
    net = _network(cls, stream_space="encoded")
    assert net.stream_width == net.input_width == PiecewiseLinearEncoding.size(EDGES)
    x = _inputs()
    encoded = net.encoding(net._standardise(x))
    # The same network as a function of the encoded columns.
    twin = _network(cls)
    twin.encoding = None

    def of_encoded(ei):
        return twin._stream_pass(
            ei.unsqueeze(0), None, exact=False, derivatives=False, rows=None
        )[0][0]

    expected = vmap(jacfwd(of_encoded))(encoded)
    res = net.forward_stream(x, "exact")
    assert res.n_directions == net.input_width
    torch.testing.assert_close(res.jacobians[-1], expected, rtol=1e-10, atol=1e-12)
    directions = torch.randn(len(x), 2, net.input_width, dtype=torch.float64)
    projected = net.forward_stream(x, directions).jacobians[-1]
    torch.testing.assert_close(projected, expected @ directions.transpose(1, 2))
    assert net.forward_stream(x, 3).n_directions == 3
    for mode in ["forward", "reverse"]:
        torch.testing.assert_close(
            net.feature_jacobian(x, mode=mode), expected, rtol=1e-10, atol=1e-12
        )
    # input_jacobian stays with respect to the raw input in both modes.
    raw = vmap(jacfwd(lambda xi: net(xi.unsqueeze(0))[0]))(x)
    for mode in ["forward", "reverse"]:
        torch.testing.assert_close(
            net.input_jacobian(x, mode=mode), raw, rtol=1e-10, atol=1e-12
        )
    with pytest.raises(ValueError, match="stream_space"):
        cls(D, OUTPUTS, hidden_layer_sizes=(5,), stream_space="raw")


class _Stream(torch.nn.Module):
    """The exact stream as ``forward``, for ``functional_call``."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net.forward_stream(x, "exact")


@pytest.mark.parametrize("cls", NETWORKS)
def test_stream_penalty_gradients_pass_gradcheck(cls):
    wrapper = _Stream(_network(cls).train())
    names = [name for name, _ in wrapper.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in wrapper.parameters())
    x = _inputs(n=5)

    def f(*values):
        state = dict(zip(names, values, strict=True))
        return stream_dreg(functional_call(wrapper, state, (x,)))

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_set_edges_refuses_what_does_not_fit():
    encoding = PiecewiseLinearEncoding(D, PiecewiseLinearEncoding.size(EDGES))
    with pytest.raises(ValueError, match="entries"):
        encoding.set_edges(EDGES[:2])
    with pytest.raises(ValueError, match="increasing"):
        encoding.set_edges([np.array([0.0, 0.0, 1.0]), None, EDGES[2]])
    with pytest.raises(ValueError, match="columns"):
        encoding.set_edges([None, None, None])
    with pytest.raises(ValueError, match="finite"):
        encoding.set_edges([np.array([0.0, np.inf]), None, EDGES[2]])


@pytest.mark.parametrize("cls", NETWORKS)
def test_the_encoding_is_part_of_the_state(cls):
    net = _network(cls)
    state = net.state_dict()
    assert {"encoding.source", "encoding.low", "encoding.inv_width"} <= set(state)
    copy = cls(D, OUTPUTS, hidden_layer_sizes=(5, 4), encoded_features=net.input_width)
    copy.double().load_state_dict(state)
    x = _inputs()
    torch.testing.assert_close(copy.eval()(x), net(x), rtol=0, atol=0)


def _ramps_step_by_step(encoding, h):
    # The encoding op by op, as it was written before it became one map.
    t = h[..., encoding.source]
    u = (t - encoding.low) * encoding.inv_width
    ramps = (u.clamp(0.0, 1.0) - encoding.ramp_mean) * encoding.ramp_gain
    return torch.where(encoding.ramp, ramps, t)


def test_the_fused_map_equals_the_ramps_step_by_step():
    n_encoded = PiecewiseLinearEncoding.size(EDGES)
    encoding = PiecewiseLinearEncoding(D, n_encoded).double().set_edges(EDGES)
    gen = torch.Generator().manual_seed(0)
    encoding.set_ramp_scaling(
        torch.rand(n_encoded, generator=gen), 0.2 + torch.rand(n_encoded, generator=gen)
    )
    # Inputs inside, outside and on the edges of every bin.
    edges = torch.tensor([-1.0, 0.0, 0.5, 1.5, -0.5, 0.2, 1.0], dtype=torch.float64)
    h = torch.cat([_inputs(n=200), edges.repeat(D, 1).t()[:, :D]])
    expected = _ramps_step_by_step(encoding, h)
    value, slope = encoding.forward_and_slope(h)
    torch.testing.assert_close(encoding(h), expected, rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(value, expected, rtol=1e-14, atol=1e-14)
    # A copy is its input exactly; one matrix product and one clamp.
    assert torch.equal(encoding(h)[:, ~encoding.ramp], h[:, [1]])
    select, shift, lower, upper = encoding._affine(torch.float64, h.device)[:4]
    assert select.shape == (D, n_encoded)
    # In float32, within a rounding of the step-by-step values.
    encoding32 = encoding.float()
    torch.testing.assert_close(
        encoding32(h.float()), expected.float(), rtol=1e-6, atol=1e-6
    )


def test_the_map_follows_every_change_of_the_buffers():
    n_encoded = PiecewiseLinearEncoding.size(EDGES)
    encoding = PiecewiseLinearEncoding(D, n_encoded).double()
    h = _inputs()
    torch.testing.assert_close(encoding(h), _ramps_step_by_step(encoding, h))
    encoding.set_edges(EDGES)
    torch.testing.assert_close(encoding(h), _ramps_step_by_step(encoding, h))
    encoding.set_ramp_scaling(
        torch.full((n_encoded,), 0.2), torch.full((n_encoded,), 2)
    )
    torch.testing.assert_close(encoding(h), _ramps_step_by_step(encoding, h))
    other = PiecewiseLinearEncoding(D, n_encoded).double()
    other(h)  # caches the copies' map, then loads the ramps
    other.load_state_dict(encoding.state_dict())
    torch.testing.assert_close(other(h), encoding(h), rtol=0, atol=0)
    with torch.no_grad():
        other.low.add_(0.1)
    torch.testing.assert_close(other(h), _ramps_step_by_step(other, h))
    assert "_affine_cache" not in pickle.loads(pickle.dumps(other)).__dict__
