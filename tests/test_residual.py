"""Tests of the normalised residual CR network and its dual stream."""

import numpy as np
import pytest
import torch
from conftest import FAST
from sklearn.datasets import make_classification

from cr_sklearn import CRClassifier
from cr_sklearn.nn import ACTIVATION_NAMES, local_dreg, stream_dreg
from cr_sklearn.nn.residual import ResidualCRNetwork, RMSNorm

ALL_ACTIVATIONS = list(ACTIVATION_NAMES)
N_FEATURES, N_OUTPUTS = 5, 3


def _random_network(activation, sizes=(7, 6, 4), seed=0, **kwargs):
    """A float64 network with every parameter random (no identity blocks)."""
    gen = torch.Generator().manual_seed(seed)
    net = ResidualCRNetwork(
        N_FEATURES, N_OUTPUTS, sizes, activation=activation, **kwargs
    ).double()
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.4 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    net.set_input_scaling(
        torch.randn(N_FEATURES, generator=gen),
        torch.rand(N_FEATURES, generator=gen) + 0.5,
    )
    return net.eval()


def _states(net, z):
    """Oracle: the stream's states from plain module calls on standardised z."""
    h = net.stem_activation(net.stem(z))
    states = [h]
    for block in net.blocks:
        h = h + block.proj(block.activation(block.inner(block.norm(h))))
        states.append(h)
    states.append(net.output(h))
    return states


def _rel_err(a, b):
    return float(((a - b).abs().max() / b.abs().max()).detach())


@pytest.mark.parametrize("activation", ALL_ACTIVATIONS)
def test_stream_matches_jacfwd(activation):
    net = _random_network(activation)
    x = torch.randn(
        9, N_FEATURES, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    z = (x - net.input_mean) / net.input_scale
    result = net.forward_stream(x, "exact")
    assert len(result.jacobians) == net.n_blocks + 2
    for layer, stream_jac in enumerate(result.jacobians):
        ref = torch.vmap(
            torch.func.jacfwd(lambda v, i=layer: _states(net, v[None])[i][0])
        )(z)
        assert _rel_err(stream_jac, ref) < 1e-10, layer
    raw = torch.vmap(torch.func.jacfwd(lambda v: net(v[None])[0]))(x)
    for mode in ("forward", "reverse", "auto"):
        assert _rel_err(net.input_jacobian(x, mode=mode), raw) < 1e-10
    torch.testing.assert_close(result.output, net(x), rtol=1e-12, atol=1e-12)


def test_projected_stream_is_jacobian_times_directions():
    net = _random_network("poly")
    x = torch.randn(4, N_FEATURES, dtype=torch.float64)
    v = torch.randn(4, 2, N_FEATURES, dtype=torch.float64)
    exact = net.forward_stream(x, "exact").jacobians
    projected = net.forward_stream(x, directions=v).jacobians
    for j_exact, j_proj in zip(exact, projected, strict=True):
        torch.testing.assert_close(j_proj, j_exact @ v.transpose(1, 2))
    assert net.forward_stream(x, 3).n_directions == 3


def test_rmsnorm_closed_forms_match_autograd():
    norm = RMSNorm(6).double()
    with torch.no_grad():
        norm.gain.copy_(torch.linspace(0.5, 2.0, 6))
    h = torch.randn(3, 6, dtype=torch.float64)
    ref = torch.vmap(torch.func.jacfwd(lambda v: norm(v[None])[0]))(h)
    u = torch.randn(3, 4, 6, dtype=torch.float64)
    value, jvp = norm.forward_and_jvp(h, u)
    torch.testing.assert_close(value, norm(h))
    torch.testing.assert_close(jvp, u @ ref.transpose(1, 2))
    torch.testing.assert_close(norm.vjp(h, u), u @ ref)


def test_penalties_work_and_local_matches_definition():
    net = _random_network("poly")
    x = torch.randn(8, N_FEATURES, dtype=torch.float64)
    result = net.forward_stream(x, "exact")
    # One derivative and weight per activated layer: the stem and each block.
    assert len(result.derivatives) == len(result.weights) == net.n_blocks + 1
    expected = torch.stack(
        [
            (d.square() * w.square().sum(1)).sum(1).mean()
            for d, w in zip(result.derivatives, result.weights, strict=True)
        ]
    ).mean()
    torch.testing.assert_close(local_dreg(result), expected)
    penalty = stream_dreg(result) + local_dreg(result)
    penalty.backward()
    # The penalties reach every parameter the Jacobians depend on: all but
    # the biases that only shift the output affinely.
    last = f"blocks.{net.n_blocks - 1}.proj.bias"
    for name, p in net.named_parameters():
        if name not in ("output.bias", last):
            assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert net.blocks[0].norm.gain.grad.abs().sum() > 0


def test_new_block_and_wider_block_keep_the_function():
    net = _random_network("poly")
    x = torch.randn(10, N_FEATURES, dtype=torch.float64)
    before = net(x)
    state = torch.get_rng_state()
    block = net.make_block(seed=3)
    assert torch.equal(torch.get_rng_state(), state)  # caller's RNG untouched
    assert block.proj.weight.dtype == torch.float64
    net.insert_blocks(1, [block])
    net.widen_block(0, 5, seed=4)
    assert net.hidden_layer_sizes == (7, 11, 7, 4)
    torch.testing.assert_close(net(x), before, rtol=0, atol=1e-12)
    # Same seed, same block.
    torch.testing.assert_close(
        net.make_block(seed=3).inner.weight, net.make_block(seed=3).inner.weight
    )


def test_architecture_errors():
    net = ResidualCRNetwork(3, 1, (4, 4))
    with pytest.raises(ValueError, match="position"):
        net.insert_blocks(3, [net.make_block()])
    with pytest.raises(ValueError, match="index"):
        net.widen_block(1, 2)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        ResidualCRNetwork(3, 1, ())
    with pytest.raises(ValueError, match="spectral"):
        ResidualCRNetwork(3, 1, (4, 4), spectral_norm=True).widen_block(0, 2)
    with pytest.raises(ValueError, match="mode"):
        net.input_jacobian(torch.zeros(2, 3), mode="sideways")


def test_spectral_norm_zero_block_is_finite():
    torch.manual_seed(0)
    # Eval mode: in training mode every forward pass runs a power iteration
    # that updates the spectral-norm estimate, so two passes differ anyway.
    net = ResidualCRNetwork(3, 2, (4,), spectral_norm=True).eval()
    x = torch.randn(5, 3)
    before = net(x)
    net.insert_blocks(0, [net.make_block()])
    torch.testing.assert_close(net(x), before)


def test_dropout_masks_derivatives_in_training():
    net = ResidualCRNetwork(3, 2, (8, 8), dropout=0.5).train()
    torch.manual_seed(0)
    result = net.forward_stream(torch.randn(16, 3), "exact")
    assert (result.derivatives[1] == 0).any()
    assert all(torch.isfinite(j).all() for j in result.jacobians)


@pytest.mark.parametrize("dreg", ["stream", "local", None])
def test_residual_classifier_fits_and_jacobian_is_exact(dreg):
    X, y = make_classification(
        n_samples=120, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    params = {**FAST, "hidden_layer_sizes": (8, 8, 8), "max_iter": 30}
    clf = CRClassifier(**params, architecture="residual", dreg=dreg).fit(X, y)
    assert clf.score(X, y) > 0.6
    assert isinstance(clf.module_, ResidualCRNetwork) and clf.module_.n_blocks == 2
    xb = torch.tensor(X[:4])
    module = clf.module_
    ref = torch.vmap(torch.func.jacfwd(lambda v: module(v[None])[0]))(xb)
    np.testing.assert_allclose(clf.jacobian(X[:4]), ref.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("explicit", [False, True])
def test_stream_on_a_subset_of_rows_matches_those_rows(explicit):
    net = _random_network("poly")
    x = torch.randn(10, net.n_features, dtype=torch.float64)
    rows = torch.tensor([9, 2, 5])
    directions = part_directions = "exact"
    if explicit:
        gen = torch.Generator().manual_seed(1)
        directions = torch.randn(10, 3, net.n_features, generator=gen).double()
        part_directions = directions[rows]
    full = net.forward_stream(x, directions)
    part = net.forward_stream(x, part_directions, rows=rows)
    torch.testing.assert_close(part.output, full.output, rtol=0, atol=0)
    for j_part, j_full in zip(part.jacobians, full.jacobians, strict=True):
        assert j_part.shape[0] == len(rows)
        torch.testing.assert_close(j_part, j_full[rows], rtol=1e-12, atol=1e-12)
