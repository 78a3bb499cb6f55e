"""The stream as one autograd node against the stream recorded op by op
(float64): the same Jacobians, squared norms and parameter gradients."""

import numpy as np
import pytest
import torch

from cr_sklearn.nn import CRNetwork, stream_dreg
from cr_sklearn.nn._stream_function import StreamJacobians

D, HIDDEN = 4, (6, 5)


def _network(n_outputs, dropout=0.0, seed=0):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = CRNetwork(D, n_outputs, hidden_layer_sizes=HIDDEN, dropout=dropout)
    net = net.double()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return net.train()


def _recorded(net, x, directions, rows):
    exact = directions is None
    h = net._standardise(x)
    out, derivs, weights, jacobians = net._recorded_stream_pass(
        h, directions, exact=exact, derivatives=True, rows=rows
    )
    return out, jacobians


def _loss_and_grads(net, out, jacobians, squared_norms=None):
    # A data term on the output, the penalty, and a use of the Jacobians
    # themselves (as feature_jacobian's callers would).
    penalty = sum(j.square().sum() for j in jacobians)
    if squared_norms is not None:
        penalty = sum(squared_norms)
    loss = out.sin().sum() + 0.3 * penalty + jacobians[-1].cos().sum()
    return torch.autograd.grad(loss, list(net.parameters()), allow_unused=True)


@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("directions", ["exact", 2])
@pytest.mark.parametrize("rows", [None, [0, 2, 5]])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_fused_stream_equals_the_recorded_one(n_outputs, directions, rows, dropout):
    net = _network(n_outputs, dropout)
    x = torch.randn(7, D, generator=torch.Generator().manual_seed(1)).double()
    rows = None if rows is None else torch.tensor(rows)
    k = None
    if directions != "exact":
        gen = torch.Generator().manual_seed(2)
        n = 7 if rows is None else len(rows)
        k = torch.randn(n, directions, D, generator=gen, dtype=torch.float64)
    with torch.random.fork_rng():
        torch.manual_seed(3)  # the same dropout masks in both passes
        fused = net.forward_stream(x, "exact" if k is None else k, rows=rows)
    with torch.random.fork_rng():
        torch.manual_seed(3)
        out, jacobians = _recorded(net, x, k, rows)
    assert fused.squared_norms is not None
    # One node behind every Jacobian (each a transposed view of its output).
    node = fused.jacobians[0].grad_fn.next_functions[0][0]
    assert "StreamJacobians" in node.name()
    torch.testing.assert_close(fused.output, out, rtol=0, atol=0)
    for a, b in zip(fused.jacobians, jacobians, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-13, atol=1e-13)
    for norm, j in zip(fused.squared_norms, jacobians, strict=True):
        torch.testing.assert_close(norm, j.square().sum(), rtol=1e-13, atol=1e-13)
    carried = x.shape[0] if rows is None else len(rows)
    torch.testing.assert_close(
        stream_dreg(fused),
        sum(j.square().sum() for j in jacobians) / (len(jacobians) * carried),
    )
    got = _loss_and_grads(net, fused.output, fused.jacobians, fused.squared_norms)
    expected = _loss_and_grads(net, out, jacobians)
    for a, b in zip(got, expected, strict=True):
        if b is None:
            assert a is None or not a.any()
            continue
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_gradcheck_and_second_derivatives():
    gen = torch.Generator().manual_seed(0)
    weights = [
        torch.randn(5, 3, generator=gen, dtype=torch.float64),
        torch.randn(4, 5, generator=gen, dtype=torch.float64),
    ]
    slopes = [
        torch.rand(2, 5, generator=gen, dtype=torch.float64),
        torch.rand(2, 4, generator=gen, dtype=torch.float64),
    ]
    output_weight = torch.randn(2, 4, generator=gen, dtype=torch.float64)
    inputs = [t.requires_grad_() for t in (*weights, *slopes, output_weight)]
    for directions in (None, torch.randn(2, 3, 3, generator=gen, dtype=torch.float64)):

        def f(*tensors, directions=directions):
            found = StreamJacobians.apply(directions, 2, *tensors)
            # Jacobians and squared norms both reach the result.
            return found[2].sum() + found[1].sin().sum() + sum(found[3:])

        assert torch.autograd.gradcheck(f, inputs, atol=1e-8)
        # create_graph=True (as the input-gradient penalty asks) is exact too.
        assert torch.autograd.gradgradcheck(f, inputs, atol=1e-7)


def test_a_seeded_fit_with_the_fused_stream_equals_the_recorded_one(monkeypatch):
    # The default estimator on Pima, seeded, with the stream fused and
    # recorded op by op: the same model to float32 rounding.
    from cr_sklearn import CRClassifier
    from cr_sklearn.datasets import load_pima

    X, y = load_pima(return_X_y=True)
    fused = CRClassifier(max_iter=30, random_state=0, n_threads=1).fit(X, y)

    def recorded(self, h, directions, rows, scale=None):
        return self._recorded_stream_pass(
            h,
            directions,
            exact=directions is None,
            derivatives=True,
            rows=rows,
            scale=scale,
        )

    monkeypatch.setattr(CRNetwork, "_fused_stream_pass", recorded)
    reference = CRClassifier(max_iter=30, random_state=0, n_threads=1).fit(X, y)
    assert fused.n_iter_ == reference.n_iter_
    np.testing.assert_allclose(
        fused.predict_proba(X), reference.predict_proba(X), rtol=0, atol=1e-5
    )
