"""The dual-stream forward pass against ``torch.func.jacfwd`` (float64), and
what the plain and residual networks share."""

import threading
from fnmatch import fnmatch

import numpy as np
import pytest
import torch
from torch.func import jacfwd, vmap

from cr_sklearn.nn import (
    ACTIVATION_NAMES,
    ARCHITECTURES,
    BaseCRNetwork,
    CRNetwork,
    OrdinalHead,
    PiecewiseLinearEncoding,
    ResidualCRNetwork,
    random_directions,
    stream_dreg,
)
from cr_sklearn.nn.network import EXPANDED_MAX_DEGREE, op_by_op

ALL_ACTIVATIONS = list(ACTIVATION_NAMES)
# torch.func loads its forward-mode decompositions through torch.jit.script.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)

N_FEATURES, N_OUTPUTS, HIDDEN = 5, 3, (7, 6)


def _network(activation="poly", seed=0, **kwargs):
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = CRNetwork(
            N_FEATURES,
            N_OUTPUTS,
            hidden_layer_sizes=HIDDEN,
            activation=activation,
            **kwargs,
        ).double()
    with torch.no_grad():
        for act in net.activations:
            if hasattr(act, "coefficients"):
                # Random polynomials, not the identity they start as.
                act.coefficients.copy_(
                    0.5 * torch.randn(act.coefficients.shape, generator=gen).double()
                )
        net.set_input_scaling(
            torch.randn(N_FEATURES, generator=gen).double(),
            0.5 + torch.rand(N_FEATURES, generator=gen).double(),
        )
    return net


def _inputs(n=9, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return 2.0 * torch.randn(n, N_FEATURES, generator=gen, dtype=torch.float64)


def _layer_function(net, index, masks=None):
    """Output of activated layer ``index`` (or the output layer) of one sample,
    as a function of the *standardised* input."""

    def f(h, *sample_masks):
        h = h.unsqueeze(0)
        for i, (layer, act) in enumerate(zip(net.hidden, net.activations, strict=True)):
            h = act(layer(h))
            if sample_masks:
                h = h * sample_masks[i]
            if i == index:
                return h[0]
        return net.output(h)[0]

    return f


def _relative_error(actual, expected):
    return float(((actual - expected).norm() / expected.norm()).detach())


def _standardised(net, x):
    return (x - net.input_mean) / net.input_scale


@pytest.mark.parametrize("activation", ALL_ACTIVATIONS)
def test_exact_stream_equals_jacfwd_for_every_layer(activation):
    net = _network(activation).eval()
    x = _inputs()
    res = net.forward_stream(x, "exact")
    assert res.n_directions == N_FEATURES
    assert len(res.jacobians) == len(HIDDEN) + 1
    h0 = _standardised(net, x)
    for index, jac in enumerate(res.jacobians):
        expected = vmap(jacfwd(_layer_function(net, index)))(h0)
        assert jac.shape == expected.shape
        assert _relative_error(jac, expected) < 1e-10, index
    torch.testing.assert_close(res.output, net(x), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("activation", ALL_ACTIVATIONS)
def test_input_jacobian_modes_equal_jacfwd_on_raw_input(activation):
    net = _network(activation).eval()
    x = _inputs()
    # d output / d raw x, scaling included.
    expected = vmap(jacfwd(lambda xi: net(xi.unsqueeze(0))[0]))(x)
    for mode in ["forward", "reverse", "auto"]:
        jac = net.input_jacobian(x, mode=mode)
        assert jac.shape == (len(x), N_OUTPUTS, N_FEATURES)
        assert _relative_error(jac, expected) < 1e-10, mode


def test_input_jacobian_rejects_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        _network().input_jacobian(_inputs(), mode="sideways")


def test_stream_without_jacobian_computes_values_and_derivatives_only():
    net = _network().eval()
    x = _inputs()
    res = net.forward_stream(x, None)
    assert res.jacobians is None
    assert res.n_directions == 0
    torch.testing.assert_close(res.output, net(x), rtol=1e-13, atol=1e-13)
    assert [d.shape for d in res.derivatives] == [(len(x), w) for w in HIDDEN]
    res = net.forward_stream(x, None, derivatives=False)
    assert res.derivatives == [None] * len(HIDDEN)


@pytest.mark.parametrize("activation", ["poly", "relu"])
def test_stream_with_dropout_matches_the_masked_function(activation, monkeypatch):
    net = _network(activation, dropout=0.3).train()
    x = _inputs(n=16)
    masks = []
    draw = net._dropout_mask

    def recording_mask(h):
        mask = draw(h)
        masks.append(mask)
        return mask

    monkeypatch.setattr(net, "_dropout_mask", recording_mask)
    with torch.random.fork_rng():
        torch.manual_seed(3)
        res = net.forward_stream(x, "exact")
        torch.manual_seed(3)
        plain = net(x)
    masks = masks[: len(HIDDEN)]
    assert all(m is not None for m in masks)
    # Some units dropped, so the test sees the mask at all.
    assert any(bool((m == 0).any()) for m in masks)
    # Same seed, same masks: the value stream is the plain forward pass.
    torch.testing.assert_close(res.output, plain, rtol=1e-13, atol=1e-13)
    h0 = _standardised(net, x)
    for index, jac in enumerate(res.jacobians):
        f = _layer_function(net, index, masks)
        expected = vmap(jacfwd(f), in_dims=(0,) * (1 + len(masks)))(h0, *masks)
        assert _relative_error(jac, expected) < 1e-10, index
    # The derivatives carry the mask, so masked units add no local penalty.
    for d, m in zip(res.derivatives, masks, strict=True):
        assert bool((d[m == 0] == 0).all())


def test_dropout_is_off_in_eval_mode():
    net = _network(dropout=0.5).eval()
    x = _inputs()
    torch.testing.assert_close(net(x), net(x), rtol=0, atol=0)


def test_spectral_norm_works_with_the_stream():
    net = _network(spectral_norm=True)
    x = _inputs()
    net.train()
    for _ in range(20):  # power iterations converge in training mode
        net(x)
    net.eval()
    res = net.forward_stream(x, "exact")
    for weight in [*res.weights, net.output.weight]:
        sigma = float(torch.linalg.matrix_norm(weight.detach(), ord=2))
        assert sigma == pytest.approx(1.0, rel=1e-3)
    h0 = _standardised(net, x)
    for index, jac in enumerate(res.jacobians):
        expected = vmap(jacfwd(_layer_function(net, index)))(h0)
        assert _relative_error(jac, expected) < 1e-10, index
    # The penalty reaches the unconstrained parameters through the stream.
    net.train()
    stream_dreg(net.forward_stream(x, "exact")).backward()
    original = net.hidden[0].parametrizations.weight.original
    assert original.grad is not None
    assert float(original.grad.abs().sum()) > 0


@pytest.mark.parametrize("activation", ["poly", "tanh"])
def test_projection_estimate_is_unbiased_per_layer(activation):
    net = _network(activation).eval().requires_grad_(False)
    x = _inputs(n=8)
    exact = net.forward_stream(x, "exact").jacobians
    exact_norms = [j.square().sum(dim=(1, 2)).mean() for j in exact]
    repeats, k = 600, 3
    with torch.random.fork_rng():
        torch.manual_seed(0)
        estimated = net.forward_stream(x.repeat(repeats, 1), k)
    assert estimated.n_directions == k
    for index, (jac, norm) in enumerate(
        zip(estimated.jacobians, exact_norms, strict=True)
    ):
        assert jac.shape[2] == k
        # A single draw is noisy, so the check is on the mean only.
        estimate = jac.square().sum(dim=(1, 2)).mean()
        assert float(estimate / norm) == pytest.approx(1.0, abs=0.02), index
    assert float(stream_dreg(estimated) / torch.stack(exact_norms).mean()) == (
        pytest.approx(1.0, abs=0.02)
    )


def test_explicit_directions_give_jacobian_vector_products():
    net = _network().eval()
    x = _inputs()
    gen = torch.Generator().manual_seed(5)
    v = torch.randn(1, 2, N_FEATURES, generator=gen, dtype=torch.float64)
    res = net.forward_stream(x, v)
    assert res.n_directions == 2
    exact = net.forward_stream(x, "exact").jacobians
    for jac, full in zip(res.jacobians, exact, strict=True):
        torch.testing.assert_close(jac, full @ v[0].T, rtol=1e-12, atol=1e-12)


def test_random_directions_shape_scale_and_reproducibility():
    gen = torch.Generator().manual_seed(0)
    v = random_directions(4, 6, 9, dtype=torch.float64, device="cpu", generator=gen)
    assert v.shape == (4, 9, 6)
    assert v.dtype == torch.float64
    torch.testing.assert_close(v.abs(), torch.full_like(v, 1 / 3))
    assert bool((v > 0).any()) and bool((v < 0).any())
    # Each direction set has squared norm n_features: E[V^T V] = I per sample.
    torch.testing.assert_close(
        v.square().sum(dim=(1, 2)), torch.full((4,), 6.0).double()
    )
    again = random_directions(
        4,
        6,
        9,
        dtype=torch.float64,
        device="cpu",
        generator=torch.Generator().manual_seed(0),
    )
    assert torch.equal(v, again)
    other = random_directions(
        4,
        6,
        9,
        dtype=torch.float32,
        device="cpu",
        generator=torch.Generator().manual_seed(1),
    )
    assert other.dtype == torch.float32
    assert not torch.equal(v.float(), other)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_random_directions_keep_the_draws_of_earlier_versions(dtype):
    # Seeded fits stay bit-identical across versions: the signs are the ones
    # an int64 draw gave, mapped to +-1/sqrt(k) with the same arithmetic.
    shape = (5, 7, 300)
    signs = torch.randint(0, 2, shape, generator=torch.Generator().manual_seed(3))
    earlier = (2.0 * signs.to(dtype) - 1.0) / (7**0.5)
    now = random_directions(
        5, 300, 7, dtype=dtype, device="cpu", generator=torch.Generator().manual_seed(3)
    )
    assert now.dtype == dtype and torch.equal(now, earlier)


def test_set_input_scaling_standardises_inputs():
    net = CRNetwork(2, 1, hidden_layer_sizes=(3,)).double()
    x = torch.tensor([[1.0, 10.0], [3.0, 30.0]], dtype=torch.float64)
    before = net(x)
    net.set_input_scaling([1.0, 10.0], [2.0, 20.0])
    shifted = CRNetwork(2, 1, hidden_layer_sizes=(3,)).double()
    shifted.load_state_dict(net.state_dict())
    shifted.set_input_scaling([0.0, 0.0], [1.0, 1.0])
    torch.testing.assert_close(
        net(x),
        shifted((x - torch.tensor([1.0, 10.0])) / torch.tensor([2.0, 20.0]).double()),
    )
    assert not torch.allclose(before, net(x))


@pytest.mark.parametrize("activation", ["poly", "relu"])
def test_inference_pass_without_grad_equals_the_graph_pass(activation):
    # Without grad, forward overwrites its own scratch tensors; the input and
    # the result must be as with the graph.
    net = _network(activation)
    x = _inputs(40)
    before = x.clone()
    expected = net(x)
    with torch.no_grad():
        got = net(x)
    torch.testing.assert_close(got, expected.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(x, before, rtol=0, atol=0)


def test_inference_pass_runs_forward_hooks_of_activations():
    # The in-place path must not bypass hooks registered on the activations.
    net = _network("poly")
    seen = []
    handle = net.activations[0].register_forward_hook(
        lambda mod, args, out: seen.append(out.shape)
    )
    with torch.no_grad():
        net(_inputs(4))
    handle.remove()
    assert seen == [(4, HIDDEN[0])]


@pytest.mark.parametrize("activation", ["poly", "tanh"])
def test_stream_on_a_subset_of_rows_matches_those_rows(activation):
    net = _network(activation)
    x = _inputs(12)
    rows = torch.tensor([7, 0, 3, 11])
    full = net.forward_stream(x, "exact")
    part = net.forward_stream(x, "exact", rows=rows)
    # Values and derivatives for every row; Jacobians for the chosen ones.
    torch.testing.assert_close(part.output, full.output, rtol=0, atol=0)
    for d_part, d_full in zip(part.derivatives, full.derivatives, strict=True):
        torch.testing.assert_close(d_part, d_full, rtol=0, atol=0)
    for j_part, j_full in zip(part.jacobians, full.jacobians, strict=True):
        assert j_part.shape[0] == len(rows)
        torch.testing.assert_close(j_part, j_full[rows], rtol=1e-12, atol=1e-12)


def test_row_subsets_average_to_the_full_stream_penalty():
    # Over a partition of the batch into equal subsets, the subset penalties
    # average to the full batch's: the subset estimate is unbiased.
    from cr_sklearn.nn import stream_dreg

    net = _network("poly")
    x = _inputs(12)
    full = stream_dreg(net.forward_stream(x, "exact"))
    parts = torch.randperm(12, generator=torch.Generator().manual_seed(0)).view(3, 4)
    estimates = [stream_dreg(net.forward_stream(x, "exact", rows=r)) for r in parts]
    torch.testing.assert_close(torch.stack(estimates).mean(), full, rtol=1e-12, atol=0)


# -- the shared base and the registries ----------------------------------------

SHARED = [
    "set_input_scaling",
    "_standardise",
    "_dropout_mask",
    "forward_stream",
    "input_jacobian",
    "no_decay_patterns",
]


def _built(architecture, **kwargs):
    torch.manual_seed(0)
    return ARCHITECTURES[architecture](
        N_FEATURES,
        N_OUTPUTS,
        hidden_layer_sizes=HIDDEN,
        activation="poly",
        degree=3,
        dropout=0.0,
        spectral_norm=False,
        **kwargs,
    ).double()


def test_both_networks_inherit_the_shared_parts_from_one_base():
    assert set(ARCHITECTURES) == {"mlp", "residual"}
    assert ARCHITECTURES["mlp"] is CRNetwork
    assert ARCHITECTURES["residual"] is ResidualCRNetwork
    for cls in ARCHITECTURES.values():
        assert issubclass(cls, BaseCRNetwork)
        for name in SHARED:
            # Inherited, not borrowed or redefined.
            assert name not in vars(cls), (cls.__name__, name)
            assert name in vars(BaseCRNetwork)


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_every_architecture_takes_the_same_keywords(architecture):
    net = _built(architecture).eval()
    assert net.hidden_layer_sizes == HIDDEN
    x = _inputs()
    assert net(x).shape == (len(x), N_OUTPUTS)
    forward = net.input_jacobian(x, mode="forward")
    reverse = net.input_jacobian(x, mode="reverse")
    torch.testing.assert_close(forward, reverse, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
@pytest.mark.parametrize("spectral_norm", [False, True])
def test_no_decay_patterns_spare_every_parameter_but_the_weight_matrices(
    architecture, spectral_norm
):
    net = ARCHITECTURES[architecture](
        N_FEATURES, N_OUTPUTS, hidden_layer_sizes=(4, 4), spectral_norm=spectral_norm
    )
    spared, decayed = set(), set()
    for name, _ in net.named_parameters():
        matched = any(fnmatch(name, p) for p in net.no_decay_patterns)
        (spared if matched else decayed).add(name)
    # A weight matrix (or its spectral-norm original) is decayed, nothing else.
    assert decayed and all(n.endswith(("weight", "original")) for n in decayed)
    assert any(n.endswith("bias") for n in spared)
    assert any(n.endswith("coefficients") for n in spared)
    if architecture == "residual":
        assert any(n.endswith("norm.gain") for n in spared)
    head = OrdinalHead(4)
    assert all(
        any(fnmatch(name, p) for p in head.no_decay_patterns)
        for name, _ in head.named_parameters()
    )


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_directions_is_none_exact_a_count_or_a_tensor(architecture):
    net = _built(architecture).eval()
    x = _inputs()
    assert net.forward_stream(x).jacobians is None
    assert net.forward_stream(x, "exact").n_directions == N_FEATURES
    for count in (3, np.int64(3)):
        with torch.random.fork_rng():
            torch.manual_seed(0)
            drawn = net.forward_stream(x, count)
            torch.manual_seed(0)
            v = random_directions(len(x), N_FEATURES, 3, dtype=x.dtype, device=x.device)
        assert drawn.n_directions == 3
        # An int draws its directions from the default generator, first thing.
        given = net.forward_stream(x, v)
        for a, b in zip(drawn.jacobians, given.jacobians, strict=True):
            assert torch.equal(a, b)
    with pytest.raises(ValueError, match="directions"):
        net.forward_stream(x, "approximate")


def _random_network(kwargs):
    """A float64 CRNetwork in eval mode with random parameters and scaling.

    With ``encoded_features=9``, four columns in 4 bins (edges -1, 0, 1 in
    the standardised units) and one copy. Also returns a generator for the
    inputs.
    """
    params = {"hidden_layer_sizes": HIDDEN, **kwargs}
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = CRNetwork(N_FEATURES, N_OUTPUTS, **params).double().eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(0.7 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    net.set_input_scaling(
        torch.randn(N_FEATURES, generator=gen),
        torch.rand(N_FEATURES, generator=gen) + 0.5,
    )
    if net.encoding is not None:
        edges = [np.array([-1.0, 0.0, 1.0])] * 4 + [None]
        assert PiecewiseLinearEncoding.size(edges) == 9
        net.encoding.set_edges(edges)
    return net, gen


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"activation": "relu"},
        {"activation": "gelu", "hidden_layer_sizes": (4,)},
        {"hidden_layer_sizes": ()},
        {"encoded_features": 9},
        {"encoded_features": 9, "hidden_layer_sizes": ()},
        # Above EXPANDED_MAX_DEGREE the plan evaluates the polynomials in u.
        {"degree": 20},
        {"degree": 30, "encoded_features": 9},
    ],
)
def test_predict_values_equal_forward_to_float64_rounding(kwargs):
    net, gen = _random_network(kwargs)
    x = 2 * torch.randn(50, N_FEATURES, generator=gen, dtype=torch.float64)
    # Rounding relative to the outputs' scale (random cubics grow large).
    with torch.no_grad():
        expected = net(x)
    tol = 1e-12 * float(expected.abs().max())
    torch.testing.assert_close(net.predict_values(x), expected, rtol=0, atol=tol)
    # A parameter changed in place: the folded values follow.
    with torch.no_grad():
        net.output.weight.mul_(2)
    with torch.no_grad():
        expected = net(x)
    torch.testing.assert_close(net.predict_values(x), expected, rtol=0, atol=2 * tol)


def test_predictor_equals_predict_values_and_checks_the_plan_once(monkeypatch):
    net, gen = _random_network({"encoded_features": 9})
    x = torch.randn(30, N_FEATURES, generator=gen, dtype=torch.float64)
    calls = []
    state_key = type(net)._state_key
    monkeypatch.setattr(
        type(net),
        "_state_key",
        lambda self, *a: calls.append(1) or state_key(self, *a),
    )
    forward = net.predictor(torch.float64, x.device)
    assert calls == [1]
    for rows in (x[:7], x[7:], x):
        torch.testing.assert_close(
            forward(rows), net.predict_values(rows), rtol=0, atol=0
        )
    assert len(calls) == 4  # one per predict_values, none per predictor call
    # Training mode (dropout) takes the module's own forward.
    net.train()
    with torch.no_grad():
        expected = net(x)
    torch.testing.assert_close(
        net.predictor(torch.float64, x.device)(x), expected, rtol=0, atol=0
    )


def test_predict_values_take_forward_with_hooks_training_or_unbounded():
    net = _network()
    x = torch.randn(4, N_FEATURES, dtype=torch.float64)
    for act in net.activations:
        act.bound = None  # the polynomial in z itself
    torch.testing.assert_close(
        net.predict_values(x), net.eval()(x), rtol=1e-12, atol=1e-12
    )
    seen = []
    handle = net.hidden[0].register_forward_hook(lambda *a: seen.append(1))
    net.predict_values(x)
    handle.remove()
    assert seen == [1]
    assert net._folded(torch.float64, x.device) is not None
    net.train()
    net.dropout = 0.5
    with torch.random.fork_rng():
        torch.manual_seed(0)
        got = net.predict_values(x)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        with torch.no_grad():
            expected = net(x)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"activation": "relu"},
        {"activation": "gelu", "hidden_layer_sizes": (4,)},
        {"hidden_layer_sizes": ()},
        {"degree": 1},
        {"degree": 2, "n_outputs": 1},
        {"encoded_features": 9},
        {"encoded_features": 9, "hidden_layer_sizes": ()},
        {"encoded_features": 9, "n_outputs": 1},
        {"bound": None},
        {"n_members": 2},
        {"n_members": 2, "encoded_features": 9, "activation": "tanh"},
        # Above EXPANDED_MAX_DEGREE the plan evaluates the polynomials in u.
        # (One layer: random polynomials of degree 30 stacked round the next
        # layer's pre-activations of 1e14 to nothing.)
        {"degree": 20, "hidden_layer_sizes": (7,)},
        {
            "degree": 30,
            "encoded_features": 9,
            "n_outputs": 1,
            "hidden_layer_sizes": (7,),
        },
        {"degree": 30, "n_members": 2, "hidden_layer_sizes": (7,)},
    ],
)
def test_reverse_jacobian_without_gradients_comes_from_the_folded_plan(kwargs):
    kwargs = dict(kwargs)
    n_outputs, bound = kwargs.pop("n_outputs", N_OUTPUTS), kwargs.pop("bound", 3.0)
    net, gen = _random_network(kwargs)
    if n_outputs != N_OUTPUTS:
        net.output = torch.nn.Linear(net.output.in_features, n_outputs).double()
        net.n_outputs = n_outputs
    for act in net.activations:
        if hasattr(act, "bound"):
            act.bound = bound
    x = 2 * torch.randn(40, N_FEATURES, generator=gen, dtype=torch.float64)
    # A row on the encoding's middle edges (the standardised 0): half slopes.
    x[0] = net.input_mean
    recorded = net.input_jacobian(x, mode="reverse").detach()  # gradients recorded
    assert net._folded_input_jacobian(x) is None
    with torch.no_grad():
        folded = net._folded_input_jacobian(x)
        assert folded is not None
        torch.testing.assert_close(net.input_jacobian(x, mode="reverse"), folded)
    members = () if net.n_members is None else (net.n_members,)
    assert folded.shape == (*members, 40, n_outputs, N_FEATURES)
    # Rounding relative to the Jacobians' scale (random cubics grow large).
    tol = 1e-12 * float(recorded.abs().max())
    torch.testing.assert_close(folded, recorded, rtol=0, atol=tol)
    # Training mode (dropout) takes the recorded path.
    with torch.no_grad():
        assert net.train()._folded_input_jacobian(x) is None


@pytest.mark.parametrize("degree", [3, 8, EXPANDED_MAX_DEGREE, 11, 16, 24, 30])
def test_folded_jacobians_keep_their_accuracy_at_every_degree(degree):
    # The binomial expansion of p(2 b s - b) cancelled catastrophically from
    # degree ~14 on (derivatives off by 0.1 at 20, by more than their size
    # at 25): the plan expands only where it stays exact.
    net, gen = _random_network({"degree": degree, "hidden_layer_sizes": (16,)})
    x = 2 * torch.randn(60, N_FEATURES, generator=gen, dtype=torch.float64)
    recorded = net.input_jacobian(x, mode="reverse").detach()
    with torch.no_grad():
        folded = net.input_jacobian(x)
        values = net.predict_values(x)
        expected = net(x)
    error = float((folded - recorded).abs().max() / recorded.abs().max())
    assert error < 1e-8
    tol = 1e-10 * float(expected.abs().max())
    torch.testing.assert_close(values, expected, rtol=0, atol=tol)


def test_op_by_op_computes_without_the_folded_plan_in_its_thread_only():
    net, gen = _random_network({"encoded_features": 9})
    x = 2 * torch.randn(20, N_FEATURES, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        expected = net(x)
        jacobian = net.input_jacobian(x)  # folded
    with op_by_op(), torch.no_grad():
        # The module's own forward and the recorded chain rule, bit for bit.
        torch.testing.assert_close(net.predict_values(x), expected, rtol=0, atol=0)
        unfolded = net.input_jacobian(x)
        other = []

        def folded():
            with torch.no_grad():
                other.append(net._folded_input_jacobian(x))

        thread = threading.Thread(target=folded)
        thread.start()
        thread.join()
    recorded = net.input_jacobian(x).detach()  # gradients on: never folded
    torch.testing.assert_close(unfolded, recorded, rtol=0, atol=0)
    assert other[0] is not None  # another thread keeps the folded plan
    torch.testing.assert_close(other[0], jacobian, rtol=0, atol=0)
    tol = 1e-12 * float(recorded.abs().max())
    torch.testing.assert_close(jacobian, recorded, rtol=0, atol=tol)
