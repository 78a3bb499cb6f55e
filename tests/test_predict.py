"""Prediction from the fitted float64 network, and the numeric contract.

Whatever a fit trains in, every prediction computes the function that was
trained: the probabilities of ``predict_proba`` equal the training forward's
(the layers in the training dtype on the inputs they trained on) to float32
rounding, and the fit checks it before it returns.
"""

import warnings

import numpy as np
import pytest
import torch
from conftest import FAST

from cr_sklearn import CRClassifier, CROrdinalRegressor, _predict
from cr_sklearn._plan import MAX_DEGREE
from cr_sklearn.nn import network


def _training_proba(est, X):
    """The training forward's probabilities: the layers on float32 inputs."""
    H = est.module_.transform_input(torch.as_tensor(X, dtype=torch.float64))
    dtype = next(est.net_.module_.parameters()).dtype
    outputs = _predict.training_outputs(est.net_.module_, H.to(dtype))
    proba = est._member_proba(outputs)
    return proba.mean(axis=0) if proba.ndim == 3 else proba


def test_predictions_equal_the_networks_forward():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    clf = CRClassifier(max_iter=3, random_state=0).fit(X, y)
    assert not clf.module_.training
    with torch.no_grad():
        expected = clf.module_(torch.tensor(X)).numpy()[:, 0]
    np.testing.assert_allclose(clf.decision_function(X), expected, rtol=0, atol=1e-12)
    # One row, read-only input and a non-contiguous view give the same values.
    np.testing.assert_allclose(
        clf.decision_function(X[:1]), expected[:1], rtol=0, atol=1e-12
    )
    frozen = X.copy()
    frozen.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(
            clf.decision_function(frozen), clf.decision_function(X)
        )
    wide = np.repeat(X, 2, axis=1)[:, ::2]
    np.testing.assert_array_equal(clf.decision_function(wide), clf.decision_function(X))
    # The input is not written to.
    np.testing.assert_array_equal(frozen, X)


def test_the_folded_plan_is_checked_once_per_call_not_per_chunk(monkeypatch):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = CRClassifier(max_iter=2, random_state=0).fit(X, y)
    expected = clf.predict_proba(X)
    net_type = type(clf.module_)
    state_key = net_type._state_key
    calls = []
    monkeypatch.setattr(
        net_type, "_state_key", lambda self, *a: calls.append(1) or state_key(self, *a)
    )
    # Chunks of a few rows: many chunks, one look-up.
    monkeypatch.setattr(_predict, "CHUNK_ELEMENTS", 4 * _predict.max_width(clf.module_))
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=0, atol=1e-12)
    assert calls == [1]


CONFIGS = {
    "default": (CRClassifier, {}),
    "hold-out": (CRClassifier, {"early_stopping": True}),
    "cv": (CRClassifier, {"early_stopping": "cv"}),
    "members": (CRClassifier, {"n_members": 3}),
    "residual": (
        CRClassifier,
        {"architecture": "residual", "hidden_layer_sizes": (8, 8)},
    ),
    "spectral": (CRClassifier, {"spectral_norm": True}),
    "float64": (CRClassifier, {"dtype": "float64"}),
    "ordinal": (CROrdinalRegressor, {}),
    "ordinal members": (CROrdinalRegressor, {"n_members": 3}),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_predictions_are_the_trained_function(name):
    cls, params = CONFIGS[name]
    rng = np.random.default_rng(2)
    X = rng.normal(size=(240, 5)) * [1.0, 10.0, 1e-3, 1.0, 100.0] + [0, 5, 1e3, 0, 0]
    y = np.digitize(X[:, 0] + rng.normal(size=240) * 0.3, [-0.5, 0.5])
    est = cls(**{**FAST, **params}).fit(X, y)
    assert est._prediction_path == "folded"
    np.testing.assert_allclose(
        est.predict_proba(X), _training_proba(est, X), rtol=0, atol=1e-4
    )


def test_a_path_that_disagrees_is_replaced_by_one_that_agrees(monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    outputs = _predict.outputs

    def broken_fold(module, X, *, path="folded", **kwargs):
        out = outputs(module, X, path=path, **kwargs)
        return out + 5.0 if path == "folded" else out

    monkeypatch.setattr(_predict, "outputs", broken_fold)
    with pytest.warns(UserWarning, match="'float64' path"):
        clf = CRClassifier(**FAST).fit(X, y)
    assert clf._prediction_path == "float64"
    np.testing.assert_allclose(
        clf.predict_proba(X), _training_proba(clf, X), rtol=0, atol=1e-4
    )


def test_a_model_whose_predictions_are_not_the_trained_function_is_never_returned(
    monkeypatch,
):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    monkeypatch.setattr(
        _predict, "training_outputs", lambda layers, H: np.full((len(H), 1), 9.0)
    )
    clf = CRClassifier(**FAST)
    with pytest.raises(RuntimeError, match="differ from the trained function"):
        clf.fit(X, y)
    assert not hasattr(clf, "module_")


def _predict_in_child(model, X, queue):
    queue.put(float(model.predict_proba(X).sum()))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_child_forked_after_a_threaded_prediction_predicts(monkeypatch):
    # torch's OpenMP pool does not survive fork: without the guard, a child
    # forked after a multi-threaded predict_proba hangs in its own (R5).
    import multiprocessing

    rng = np.random.default_rng(5)
    X = rng.normal(size=(20_000, 50))
    y = (X[:, 0] > 0).astype(int)
    model = CRClassifier((64, 64), max_iter=1, random_state=0).fit(X[:300], y[:300])
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        expected = float(model.predict_proba(X).sum())
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_predict_in_child, args=(model, X, queue))
        child.start()
        child.join(60)
        hung = child.is_alive()
        if hung:
            child.kill()
        assert not hung, "the forked child hung in predict_proba"
        assert queue.get(timeout=5) == pytest.approx(expected)
    finally:
        torch.set_num_threads(threads)


def test_predictions_do_not_depend_on_the_networks_mode():
    # A client may leave module_ in training mode (an exporter restoring its
    # wrapper's mode): predictions never apply dropout.
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    clf = CRClassifier(**FAST).fit(X, y)
    expected = clf.predict_proba(X)
    clf.module_.train()
    np.testing.assert_array_equal(clf.predict_proba(X), expected)
    np.testing.assert_array_equal(clf.jacobian(X[:5]), clf.jacobian(X[:5]))
    assert clf.module_.training  # put back as the client left it


def test_a_member_models_predictions_run_in_bounded_chunks(monkeypatch):
    # 5 members and 50 classes: each chunk's outputs for every member stay
    # within the chunk bound, as for one network (R7).
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3_000, 6))
    y = np.arange(3_000) % 50
    model = CRClassifier((8,), max_iter=2, n_members=5, random_state=0).fit(X, y)
    rows = []
    original = model.module_.predictor

    def predictor(dtype, device):
        forward = original(dtype, device)

        def recorded(x):
            rows.append(x.shape[0])
            return forward(x)

        return recorded

    monkeypatch.setattr(model.module_, "predictor", predictor)
    proba = model.predict_proba(X)
    assert proba.shape == (3_000, 50)
    width = _predict.max_width(model.module_) * 5
    assert len(rows) > 1 and max(rows) * width <= _predict.CHUNK_ELEMENTS


def _autograd_jacobian(est, X):
    """``jacobian(X)`` by torch.autograd through the fitted float64 network, op
    by op (its own forward with gradients on); members combined by the head."""
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    with torch.enable_grad():
        out = est.module_(x)
        stack = out if out.dim() == 3 else out[None]
        jac = torch.stack(
            [
                torch.stack(
                    [
                        torch.autograd.grad(member[:, o].sum(), x, retain_graph=True)[0]
                        for o in range(out.shape[-1])
                    ],
                    dim=-2,
                )
                for member in stack
            ]
        )
    if out.dim() == 3:
        return est._combine_jacobian(out.detach(), jac).numpy()
    return jac[0].numpy()


def _relative_error(got, expected):
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def _norms(jacobian, scale):
    """Per-row ``||J diag(scale)||_F``, ``J`` centred over several outputs."""
    if jacobian.shape[1] > 1:
        jacobian = jacobian - jacobian.mean(axis=1, keepdims=True)
    return np.linalg.norm(jacobian * scale, axis=(1, 2))


def _jacobian_case(cls, degree, bins, members, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(160, 4))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=160), [-0.5, 0.5])
    params = {"degree": degree, "encoding_bins": bins, "n_members": members}
    est = cls(**{**FAST, "max_iter": 10, **params}).fit(X, y)
    # Fresh rows: on the encoding's edges (training quantiles) a ramp's
    # slope is the mean of its one-sided ones, not autograd's choice.
    return est, X, rng.normal(size=(80, 4))


@pytest.mark.parametrize("degree", [3, 20, 25, 30])
@pytest.mark.parametrize("cls", [CRClassifier, CROrdinalRegressor])
@pytest.mark.parametrize(("bins", "members"), [(None, 1), (4, 3)])
def test_jacobians_match_autograd_through_the_float64_network(
    degree, cls, bins, members
):
    # The folded plan's binomial expansion cancelled: relative error 0.11 at
    # degree 20, 18.7 at 25, a Jacobian of ~0 at 30.
    est, X, X_new = _jacobian_case(cls, degree, bins, members)
    expected = _autograd_jacobian(est, X_new)
    assert _relative_error(est.jacobian(X_new), expected) < 1e-6
    # The norms are those of the same Jacobians (centred over several outputs).
    norms = _norms(expected, est.input_scale_)
    assert _relative_error(est.input_gradient_norms(X_new), norms) < 1e-6
    if bins is None:  # the stored summaries: by the same columns
        mean = _norms(_autograd_jacobian(est, X), est.input_scale_).mean()
        assert abs(est.gradient_norm_mean_ - mean) < 1e-6 * mean
        sensitivity = norms / est.gradient_norm_mean_
        assert _relative_error(est.input_sensitivity(X_new), sensitivity) < 1e-6


def test_inexact_folded_jacobians_move_the_model_to_the_float64_path(monkeypatch):
    # A plan that expands degree 16 in sigmoid(z) predicts to the contract's
    # tolerance but differentiates to 1e-5 only: the contract checks the
    # Jacobians too, and the derivatives come from the path that predicts.
    monkeypatch.setattr(network, "EXPANDED_MAX_DEGREE", 100)
    with pytest.warns(UserWarning, match="'float64' path.*folded Jacobian"):
        est, _, X_new = _jacobian_case(CRClassifier, 16, None, 1, seed=1)
    assert est._prediction_path == "float64"
    expected = _autograd_jacobian(est, X_new)
    assert _relative_error(est.jacobian(X_new), expected) < 1e-6


def test_degree_is_bounded_before_any_work():
    X, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    for cls in (CRClassifier, CROrdinalRegressor):
        with pytest.raises(ValueError, match="'degree' parameter.*range \\[1, 30\\]"):
            cls(degree=MAX_DEGREE + 1).fit(X, y)


def test_a_model_predicting_through_its_training_layers_differentiates_op_by_op(
    monkeypatch,
):
    outputs = _predict.outputs

    def broken(module, X, *, path="folded", **kwargs):
        out = outputs(module, X, path=path, **kwargs)
        return out if path == "training" else out + 5.0

    monkeypatch.setattr(_predict, "outputs", broken)
    with pytest.warns(UserWarning, match="'training' path"):
        est, _, X_new = _jacobian_case(CROrdinalRegressor, 20, 4, 1)
    expected = _autograd_jacobian(est, X_new)
    assert _relative_error(est.jacobian(X_new), expected) < 1e-6
