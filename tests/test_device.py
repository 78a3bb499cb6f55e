"""Device handling: ``device="auto"``/``"cuda"`` and results back as numpy.

Without CUDA, the GPU path is tested through its CPU fallbacks (``"auto"``
resolving to the CPU, a clear error for ``"cuda"``); the tests that need a GPU
skip.
"""

import copy

import numpy as np
import pytest
import torch
from conftest import FAST

from cr_sklearn import CRClassifier
from cr_sklearn._utils import resolve_device as _resolve_device

needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="CUDA not available"
)


@pytest.fixture(scope="module")
def data(binary_data):
    return binary_data


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_auto_resolves_to_cpu_without_cuda(no_cuda, data):
    clf = CRClassifier(device="auto", **FAST).fit(*data)
    assert clf.device_ == "cpu"
    assert next(clf.module_.parameters()).device.type == "cpu"


def test_auto_resolves_to_cuda_when_available(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert _resolve_device("auto") == "cuda"


def test_auto_follows_this_machine(data):
    clf = CRClassifier(device="auto", **FAST).fit(*data)
    assert clf.device_ == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_without_cuda_raises_at_fit(no_cuda, data, device):
    clf = CRClassifier(device=device, **FAST)  # construction never fails
    with pytest.raises(ValueError, match="CUDA is not available"):
        clf.fit(*data)
    assert not hasattr(clf, "net_")


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "meta", ""])
def test_unknown_device_raises(data, device):
    with pytest.raises(ValueError, match="device must be"):
        CRClassifier(device=device, **FAST).fit(*data)


def _check_numpy_outputs(clf, X):
    n = len(X)
    outputs = {
        "predict_proba": (clf.predict_proba(X), (n, 2)),
        "decision_function": (clf.decision_function(X), (n,)),
        "jacobian": (clf.jacobian(X), (n, 1, X.shape[1])),
        "input_gradient_norms": (clf.input_gradient_norms(X), (n,)),
    }
    for name, (value, shape) in outputs.items():
        assert type(value) is np.ndarray, name
        assert value.dtype == np.float64, name
        assert value.shape == shape, name
    assert type(clf.predict(X)) is np.ndarray


def test_cpu_outputs_are_numpy(data):
    X, y = data
    clf = CRClassifier(device="cpu", **FAST).fit(X, y)
    _check_numpy_outputs(clf, X)


@needs_cuda
def test_cuda_fit_keeps_tensors_on_device_and_returns_numpy(data):
    X, y = data
    clf = CRClassifier(device="cuda", **FAST).fit(X, y)
    assert all(p.device.type == "cuda" for p in clf.module_.parameters())
    _check_numpy_outputs(clf, X)


@needs_cuda
@pytest.mark.parametrize("n_projections", ["exact", 2])
def test_cuda_matches_cpu_for_the_same_weights(data, n_projections):
    X, y = data
    clf = CRClassifier(device="cuda", n_projections=n_projections, **FAST).fit(X, y)
    module = copy.deepcopy(clf.module_).cpu()
    x = torch.tensor(X)
    with torch.no_grad():
        np.testing.assert_allclose(
            clf.decision_function(X), module(x)[:, 0].numpy(), rtol=1e-9, atol=1e-9
        )
        np.testing.assert_allclose(
            clf.jacobian(X), module.input_jacobian(x).numpy(), rtol=1e-9, atol=1e-9
        )
