"""The member axis: a member stack computes what its members compute."""

import itertools

import pytest
import torch

from cr_sklearn.nn import (
    CORALLoss,
    CRNetwork,
    CumulativeLinkLoss,
    ResidualCRNetwork,
    local_dreg,
    stream_dreg,
)
from cr_sklearn.nn._members import MemberLinear


def _perturbed_networks(n, cls=CRNetwork, **kwargs):
    torch.manual_seed(0)
    nets = [cls(5, 3, **kwargs) for _ in range(n)]
    for net in nets:
        if net.encoding is not None:
            net.encoding.set_edges([torch.linspace(-2, 2, 5)] * 5)
        with torch.no_grad():
            for p in net.parameters():
                p.add_(0.1 * torch.randn_like(p))
    return nets


CASES = list(
    itertools.product(
        [CRNetwork, ResidualCRNetwork],
        ["poly", "gelu"],
        [None, 20],
        [None, torch.tensor([0, 3, 7])],
        ["exact", 3],
    )
)


@pytest.mark.parametrize(("cls", "activation", "encoded", "rows", "directions"), CASES)
def test_stack_matches_members(cls, activation, encoded, rows, directions):
    nets = _perturbed_networks(
        3,
        cls,
        hidden_layer_sizes=(7, 6, 5),
        activation=activation,
        encoded_features=encoded,
    )
    stacked = cls.stack(nets)
    assert stacked.n_members == 3
    x = torch.randn(11, 5)
    if directions != "exact":
        n_rows = 11 if rows is None else len(rows)
        directions = torch.randn(n_rows, 3, nets[0].stream_width)
    result = stacked.forward_stream(x, directions, rows=rows)
    total = 0.0
    for m, net in enumerate(nets):
        single = net.forward_stream(x, directions, rows=rows)
        torch.testing.assert_close(result.output[m], single.output)
        for a, b in zip(result.jacobians, single.jacobians, strict=True):
            torch.testing.assert_close(a[m], b)
        for a, b in zip(result.derivatives, single.derivatives, strict=True):
            torch.testing.assert_close(a[m], b)
        loss = single.output.square().mean() + stream_dreg(single) + local_dreg(single)
        loss.backward()
        total += loss.item()
    # Penalties and per-member losses add up over the member axis.
    loss = (
        result.output.square().mean(dim=(1, 2)).sum()
        + stream_dreg(result)
        + local_dreg(result)
    )
    assert loss.item() == pytest.approx(total, rel=1e-5)
    loss.backward()
    for name, p in stacked.named_parameters():
        for m, net in enumerate(nets):
            grad = p.grad[:, m, 0] if name.endswith("coefficients") else p.grad[m]
            expected = dict(net.named_parameters())[name].grad
            torch.testing.assert_close(
                grad.reshape(expected.shape), expected, atol=1e-5, rtol=1e-4
            )


@pytest.mark.parametrize("cls", [CRNetwork, ResidualCRNetwork])
@pytest.mark.parametrize("encoded", [None, 20])
def test_inference_paths_match_members(cls, encoded):
    nets = _perturbed_networks(
        4, cls, hidden_layer_sizes=(8, 8), encoded_features=encoded
    )
    stacked = cls.stack(nets).eval()
    x = torch.randn(9, 5, dtype=torch.float64)
    stacked.double()
    with torch.no_grad():
        values = stacked(x)
    assert values.shape == (4, 9, 3)
    if hasattr(stacked, "predict_values"):
        torch.testing.assert_close(stacked.predict_values(x), values)
    for m, net in enumerate(nets):
        net.double().eval()
        if hasattr(net, "predict_values"):
            torch.testing.assert_close(values[m], net.predict_values(x))
        for mode in ("forward", "reverse"):
            torch.testing.assert_close(
                stacked.input_jacobian(x, mode=mode)[m],
                net.input_jacobian(x, mode=mode),
            )
        # Without gradients, the reverse Jacobian of the folded plan.
        with torch.no_grad():
            torch.testing.assert_close(
                stacked.input_jacobian(x, mode="reverse")[m],
                net.input_jacobian(x, mode="reverse"),
            )


def test_member_round_trip_and_stack_checks():
    nets = _perturbed_networks(2, hidden_layer_sizes=(6,), encoded_features=20)
    stacked = CRNetwork.stack(nets)
    x = torch.randn(4, 5)
    for m, net in enumerate(nets):
        torch.testing.assert_close(stacked.member(m)(x), net(x), rtol=0, atol=0)
    with pytest.raises(IndexError, match="out of range"):
        stacked.member(2)
    with pytest.raises(ValueError, match="n_members"):
        nets[0].member(0)
    other = CRNetwork(5, 3, hidden_layer_sizes=(7,))
    with pytest.raises(ValueError, match="same arguments"):
        CRNetwork.stack([nets[0], other])
    with pytest.raises(TypeError, match="single"):
        CRNetwork.stack([stacked])
    shifted = _perturbed_networks(1, hidden_layer_sizes=(6,), encoded_features=20)[0]
    shifted.set_input_scaling(torch.ones(5), torch.ones(5))
    with pytest.raises(ValueError, match="share"):
        CRNetwork.stack([nets[0], shifted])


def test_no_hidden_layer_and_encoded_stream():
    for kwargs in (
        {"hidden_layer_sizes": ()},
        {"hidden_layer_sizes": (6,), "encoded_features": 20, "stream_space": "encoded"},
    ):
        nets = _perturbed_networks(2, **kwargs)
        stacked = CRNetwork.stack(nets)
        x = torch.randn(6, 5)
        result = stacked.forward_stream(x, "exact")
        for m, net in enumerate(nets):
            single = net.forward_stream(x, "exact")
            for a, b in zip(result.jacobians, single.jacobians, strict=True):
                torch.testing.assert_close(a[m], b)
        assert stream_dreg(result).item() == pytest.approx(
            sum(stream_dreg(n.forward_stream(x, "exact")).item() for n in nets),
            rel=1e-5,
        )


def test_dropout_masks_differ_between_members():
    torch.manual_seed(0)
    net = CRNetwork(5, 2, hidden_layer_sizes=(32,), dropout=0.5, n_members=2).train()
    with torch.no_grad():
        net.hidden[0].weight[1].copy_(net.hidden[0].weight[0])
        net.hidden[0].bias[1].copy_(net.hidden[0].bias[0])
        net.output.weight[1].copy_(net.output.weight[0])
        net.output.bias[1].copy_(net.output.bias[0])
    out = net(torch.randn(8, 5))
    assert not torch.equal(out[0], out[1])
    net.eval()
    out = net(torch.randn(8, 5))
    torch.testing.assert_close(out[0], out[1])


def test_member_linear_initialises_each_member_like_linear():
    torch.manual_seed(0)
    layer = MemberLinear(50, 40, 3)
    assert layer.weight.shape == (3, 40, 50) and layer.bias.shape == (3, 40)
    bound = 1 / 50**0.5
    assert layer.weight.abs().max() <= bound and layer.bias.abs().max() <= bound
    assert not torch.equal(layer.weight[0], layer.weight[1])
    assert "n_members=3" in repr(layer)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_n_members(bad):
    with pytest.raises(ValueError, match="n_members"):
        CRNetwork(3, 2, n_members=bad)


@pytest.mark.parametrize("cls", [CRNetwork, ResidualCRNetwork])
def test_spectral_norm_with_members_raises(cls):
    with pytest.raises(ValueError, match="spectral_norm"):
        cls(3, 2, spectral_norm=True, n_members=2)


def test_residual_growth_needs_single_network():
    net = ResidualCRNetwork(3, 2, hidden_layer_sizes=(6, 6), n_members=2)
    for call in (
        lambda: net.make_block(),
        lambda: net.insert_blocks(0, []),
        lambda: net.widen_block(0, 2),
    ):
        with pytest.raises(ValueError, match="without n_members"):
            call()


def test_residual_member_round_trip():
    nets = _perturbed_networks(2, ResidualCRNetwork, hidden_layer_sizes=(6, 4))
    stacked = ResidualCRNetwork.stack(nets)
    x = torch.randn(4, 5)
    for m, net in enumerate(nets):
        torch.testing.assert_close(stacked.member(m)(x), net(x), rtol=0, atol=0)


@pytest.mark.parametrize("head", [CumulativeLinkLoss, CORALLoss])
def test_ordinal_head_members(head):
    torch.manual_seed(0)
    single = [head(4, init_cutpoints=[-1.0, 0.0, 1.5]) for _ in range(2)]
    stacked = head(4, init_cutpoints=[-1.0, 0.0, 1.5], n_members=2)
    with torch.no_grad():
        for m, h in enumerate(single):
            h.cutpoint_first.add_(0.1 * m)
            stacked.cutpoint_first[m].copy_(h.cutpoint_first)
    output = torch.randn(2, 7, 1)
    target = torch.tensor([0, 1, 2, 3, 3, 2, 0])
    loss = stacked(output, target)
    assert loss.shape == (2, 7)
    for m, h in enumerate(single):
        torch.testing.assert_close(loss[m], h(output[m], target))
        torch.testing.assert_close(
            stacked.log_proba(output[:, :, 0])[m], h.log_proba(output[m, :, 0])
        )
    assert "n_members=2" in repr(stacked)
