"""DREG penalties against explicit Jacobians, gradchecks, and stream skipping."""

import numpy as np
import pytest
import torch
from conftest import FAST
from torch.func import functional_call, jacfwd, vmap

from cr_sklearn import CRClassifier
from cr_sklearn.nn import (
    PENALTIES,
    CRNetwork,
    gradient_spread,
    input_gradient_penalty,
    local_dreg,
    stream_dreg,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)


def _network(activation="poly", sizes=(6, 5), n_features=4, n_outputs=3, seed=0):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = CRNetwork(
            n_features, n_outputs, hidden_layer_sizes=sizes, activation=activation
        ).double()
        with torch.no_grad():
            for act in net.activations:
                if hasattr(act, "coefficients"):
                    act.coefficients.copy_(0.5 * torch.randn_like(act.coefficients))
            net.set_input_scaling(torch.randn(n_features), 1 + torch.rand(n_features))
        x = 2 * torch.randn(7, n_features, dtype=torch.float64)
    return net.eval(), x


@pytest.mark.parametrize("activation", ["poly", "tanh", "relu"])
def test_local_dreg_is_the_frobenius_norm_of_each_layer_jacobian(activation):
    net, x = _network(activation)
    res = net.forward_stream(x, None)
    # Each layer's own Jacobian d h_l / d h_{l-1} from autograd, per sample.
    h = (x - net.input_mean) / net.input_scale
    norms = []
    for layer, act in zip(net.hidden, net.activations, strict=True):
        jac = vmap(jacfwd(lambda v, layer=layer, act=act: act(layer(v))))(h)
        # ... which is diag(phi') W.
        explicit = res.derivatives[len(norms)].unsqueeze(2) * layer.weight
        torch.testing.assert_close(jac, explicit, rtol=1e-12, atol=1e-12)
        norms.append(jac.square().sum(dim=(1, 2)).mean())
        h = act(layer(h))
    expected = torch.stack(norms).mean()
    torch.testing.assert_close(local_dreg(res), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("activation", ["poly", "gelu"])
def test_stream_dreg_is_mean_frobenius_norm_of_jacfwd(activation):
    net, x = _network(activation)
    h0 = (x - net.input_mean) / net.input_scale

    def upto(index):
        def f(v):
            for i, (layer, act) in enumerate(
                zip(net.hidden, net.activations, strict=True)
            ):
                v = act(layer(v))
                if i == index:
                    return v
            return net.output(v)

        return f

    n_terms = len(net.hidden) + 1
    norms = [
        vmap(jacfwd(upto(i)))(h0).square().sum(dim=(1, 2)).mean()
        for i in range(n_terms)
    ]
    expected = torch.stack(norms).mean()
    value = stream_dreg(net.forward_stream(x, "exact"))
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=0)


class _Stream(torch.nn.Module):
    """``forward`` is the exact stream, so ``functional_call`` can swap
    parameters in for a gradcheck."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net.forward_stream(x, "exact")


def _parameters_and_call(net):
    wrapper = _Stream(net)
    names = [name for name, _ in wrapper.named_parameters()]
    params = tuple(
        p.detach().clone().requires_grad_(True) for _, p in wrapper.named_parameters()
    )

    def call(values, x):
        return functional_call(wrapper, dict(zip(names, values, strict=True)), (x,))

    return params, call


@pytest.mark.parametrize("name", sorted(PENALTIES))
@pytest.mark.parametrize("activation", ["poly", "tanh"])
def test_penalty_gradients_pass_gradcheck(name, activation):
    net, x = _network(activation, sizes=(4, 3), n_features=3, n_outputs=2)
    params, call = _parameters_and_call(net)
    penalty = PENALTIES[name].function

    def f(*values):
        return penalty(call(values, x))

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("activation", ["poly", "tanh"])
def test_input_gradient_penalty_passes_gradcheck(activation):
    # Double backprop is costly per call: a smaller net keeps the full check fast.
    net, x = _network(activation, sizes=(3,), n_features=2, n_outputs=2)
    names = [name for name, _ in net.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_(True) for p in net.parameters())
    y = torch.tensor([0, 1, 1, 0, 1, 0, 0])

    def f(*values):
        inputs = x.clone().requires_grad_(True)
        state = dict(zip(names, values, strict=True))
        logits = functional_call(net, state, (inputs,))
        per_sample = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        return input_gradient_penalty(per_sample, inputs)

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_input_gradient_penalty_is_mean_squared_input_gradient():
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64)
    x.requires_grad_(True)
    per_sample = (x**2).sum(dim=1)  # gradient 2x
    expected = (4 * x.detach() ** 2).sum(dim=1).mean()
    torch.testing.assert_close(input_gradient_penalty(per_sample, x), expected)


def test_penalties_refuse_a_pass_without_what_they_need():
    net, x = _network()
    with pytest.raises(ValueError, match="stream"):
        stream_dreg(net.forward_stream(x, None))
    with pytest.raises(ValueError, match="derivatives"):
        local_dreg(net.forward_stream(x, None, derivatives=False))
    assert PENALTIES["stream"].needs == "stream"
    assert PENALTIES["local"].needs == "derivatives"


def _spy_stream(monkeypatch):
    calls = []
    original = CRNetwork.forward_stream

    def spy(self, x, directions=None, *, derivatives=True, rows=None, **kwargs):
        if self.training:  # training batches, not the fitted-model summaries
            # Random directions arrive drawn: (rows, k, n_features).
            spec = directions.shape[1] if torch.is_tensor(directions) else directions
            calls.append((spec, derivatives))
        return original(
            self, x, directions, derivatives=derivatives, rows=rows, **kwargs
        )

    monkeypatch.setattr(CRNetwork, "forward_stream", spy)
    return calls


def _data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 3))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize(
    "params, expected",
    [
        (dict(dreg=None), {(None, False)}),
        (dict(dreg="stream", dreg_lambda=0.0), {(None, False)}),
        (dict(dreg="local"), {(None, True)}),
        (dict(dreg="stream"), {("exact", True)}),
        (dict(dreg="stream", n_projections=2), {(2, True)}),
        (dict(dreg=None, spread_lambda=0.1), {("exact", False)}),
        (dict(dreg="local", spread_lambda=0.1), {("exact", True)}),
    ],
)
def test_training_computes_the_stream_only_when_a_penalty_needs_it(
    monkeypatch, params, expected
):
    calls = _spy_stream(monkeypatch)
    CRClassifier(**FAST, **params).fit(*_data())
    assert calls
    assert set(calls) == expected


def test_local_dreg_of_a_network_without_hidden_layers_is_zero():
    from cr_sklearn.nn import CRNetwork

    net = CRNetwork(3, 2, hidden_layer_sizes=())
    result = net.forward_stream(torch.randn(5, 3), None, derivatives=True)
    penalty = local_dreg(result)
    assert penalty.shape == () and float(penalty) == 0.0


def _centred_output_norms(net, x):
    """``||J_b - mean_o J_b||_F^2`` per row by autograd (by the standardised input)."""
    h0 = (x - net.input_mean) / net.input_scale

    def f(v):
        for layer, act in zip(net.hidden, net.activations, strict=True):
            v = act(layer(v))
        return net.output(v)

    jac = vmap(jacfwd(f))(h0)
    return (jac - jac.mean(dim=1, keepdim=True)).square().sum(dim=(1, 2))


@pytest.mark.parametrize("activation", ["poly", "gelu"])
def test_gradient_spread_is_the_squared_cv_of_the_rows_norms(activation):
    net, x = _network(activation)
    norms = _centred_output_norms(net, x)
    expected = norms.var(unbiased=False) / norms.mean().square()
    value = gradient_spread(net.forward_stream(x, "exact"))
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=0)
    assert value.item() > 0.01  # a nonlinear network: the check is not 0 = 0


def test_gradient_spread_of_a_linear_network_is_zero():
    # Every row has the same gradient: no spread, and no NaN from 0 / 0.
    net = CRNetwork(3, 2, hidden_layer_sizes=()).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    assert float(gradient_spread(net.forward_stream(x, "exact"))) == pytest.approx(
        0.0, abs=1e-12
    )
    flat = CRNetwork(3, 2, hidden_layer_sizes=(4,)).double()
    with torch.no_grad():
        flat.output.weight.zero_()
    assert float(gradient_spread(flat.forward_stream(x, "exact"))) == 0.0


def test_gradient_spread_weights_are_repetitions():
    net, x = _network()
    weight = torch.tensor([2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 1.0], dtype=torch.float64)
    repeated = torch.repeat_interleave(x, weight.long(), dim=0)
    expected = gradient_spread(net.forward_stream(repeated, "exact"))
    # The stream scales each row's Jacobian by the root of its weight.
    scaled = net.forward_stream(x, "exact", stream_scale=weight.sqrt())
    torch.testing.assert_close(
        gradient_spread(scaled, weight), expected, rtol=1e-12, atol=0
    )


def test_gradient_spread_gradient_is_finite_with_zero_weights():
    net, x = _network(sizes=(4, 3), n_features=3, n_outputs=2)
    weight = torch.tensor([0.0, 1.0, 0.0, 2.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    result = net.forward_stream(x, "exact", stream_scale=weight.sqrt())
    gradient_spread(result, weight).backward()
    grads = [p.grad for p in net.parameters() if p.grad is not None]
    assert grads and all(bool(torch.isfinite(g).all()) for g in grads)


def test_gradient_spread_passes_gradcheck():
    net, x = _network("poly", sizes=(4, 3), n_features=3, n_outputs=2)
    params, call = _parameters_and_call(net)

    def f(*values):
        return gradient_spread(call(values, x))

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_spread_lambda_evens_the_reported_gradient_norms():
    # The outcome a user reads: tau of held-out rows, by the package's rule.
    from sklearn.datasets import load_breast_cancer

    from cr_sklearn import gradient_norms, gradient_tail_ratio

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    test = rng.permutation(len(y))[:200]
    train = np.setdiff1d(np.arange(len(y)), test)
    taus = {}
    for spread in (0.0, 0.1):
        model = CRClassifier(
            encoding_bins=None, spread_lambda=spread, max_iter=40, random_state=0
        ).fit(X[train], y[train])
        taus[spread] = gradient_tail_ratio(gradient_norms(model, X[test]))
        assert model.score(X[test], y[test]) > 0.9
    assert taus[0.1] < 0.7 * taus[0.0]
