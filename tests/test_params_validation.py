"""Hostile parameters at fit: clear errors or clamps with a warning, never silence."""

import warnings

import numpy as np
import pytest
import torch
from conftest import FAST
from sklearn.utils.class_weight import compute_class_weight
from skorch.callbacks import EpochTimer

from cr_sklearn import CRClassifier, CROrdinalRegressor, DepthGrowth, _utils


# -- n_threads (item 7) -----------------------------------------------------------
def test_too_many_threads_are_clamped_with_a_warning(binary_data):
    X, y = binary_data
    before = torch.get_num_threads()
    with pytest.warns(UserWarning, match=r"n_threads=100000 is more than the \d+ CPUs"):
        clf = CRClassifier(**FAST, n_threads=100_000).fit(X, y)
    assert torch.get_num_threads() == before
    assert np.isfinite(clf.predict_proba(X)).all()


def test_usable_cpus_reads_affinity_and_cgroup_quota(monkeypatch):
    monkeypatch.setattr(_utils.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(_utils, "_cgroup_cpu_limit", lambda: None)
    assert _utils.usable_cpus() == 4
    monkeypatch.setattr(_utils, "_cgroup_cpu_limit", lambda: 1.5)
    assert _utils.usable_cpus() == 2
    assert _utils.clamp_threads(None) is None
    assert _utils.clamp_threads(2) == 2
    with pytest.warns(UserWarning, match="n_threads=64 is more than the 2 CPUs"):
        assert _utils.clamp_threads(64) == 2


def test_cgroup_quota_files(monkeypatch, tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    real_path = _utils.Path

    def fake(path):
        return tmp_path if str(path) == "/sys/fs/cgroup" else real_path(path)

    monkeypatch.setattr(_utils, "Path", fake)
    assert _utils._cgroup_cpu_limit() == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert _utils._cgroup_cpu_limit() is None


# -- n_projections (item 8) -----------------------------------------------------
def test_more_projections_than_features_are_capped_to_the_exact_stream(binary_data):
    X, y = binary_data
    with pytest.warns(UserWarning, match=r"n_projections=1000000000 .* capped"):
        clf = CRClassifier(**FAST, n_projections=10**9).fit(X, y)
    assert clf.net_.objective.stream.directions == "exact"
    exact = CRClassifier(**FAST, n_projections="exact").fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), exact.predict_proba(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k = CRClassifier(**FAST, n_projections=X.shape[1]).fit(X, y)
    assert k.net_.objective.stream.directions == X.shape[1]


# -- hidden_layer_sizes (item 9) --------------------------------------------------
@pytest.mark.parametrize(
    "sizes, entry",
    [
        ((2.7,), r"hidden_layer_sizes\[0\] = 2\.7"),
        ((8, True), r"hidden_layer_sizes\[1\] = True"),
        (((8,),), r"hidden_layer_sizes\[0\] = \(8,\)"),
        ((8, 0), r"hidden_layer_sizes\[1\] = 0"),
        ([np.float64(4.0)], r"hidden_layer_sizes\[0\]"),
        (True, "hidden_layer_sizes must be an int or a flat sequence"),
        ("64", "hidden_layer_sizes"),
    ],
)
def test_hidden_layer_sizes_must_be_flat_positive_ints(binary_data, sizes, entry):
    X, y = binary_data
    with pytest.raises(ValueError, match=entry):
        CRClassifier(**{**FAST, "hidden_layer_sizes": sizes}).fit(X, y)


@pytest.mark.parametrize("sizes", [8, (8,), [8, 4], np.array([8, 4]), ()])
def test_valid_hidden_layer_sizes(binary_data, sizes):
    X, y = binary_data
    clf = CRClassifier(**{**FAST, "hidden_layer_sizes": sizes, "max_iter": 2})
    clf.fit(X, y)
    expected = [sizes] if isinstance(sizes, int) else [int(s) for s in sizes]
    assert list(clf.module_.hidden_layer_sizes) == expected


# -- class_weight (item 10) -------------------------------------------------------
def _labels(y):
    return np.array(["a", "b"])[y]


def test_class_weight_keys_must_be_classes_as_in_sklearn(binary_data):
    X, y = binary_data
    with pytest.raises(ValueError, match=r"The classes, \['a', 'b'\], are not in"):
        compute_class_weight({0: 5.0}, classes=np.array(["a", "b"]), y=_labels(y))
    with pytest.raises(ValueError, match=r"The classes, \['a', 'b'\], are not in"):
        CRClassifier(**FAST, class_weight={0: 5.0}).fit(X, _labels(y))
    # Classes missing from the dict weigh 1; extra keys are fine when every
    # class has a weight (a cross-validation fold may lack a class).
    CRClassifier(**FAST, class_weight={"a": 2.0}).fit(X, _labels(y))
    CRClassifier(**FAST, class_weight={"a": 2.0, "b": 1.0, "c": 3.0}).fit(X, _labels(y))


@pytest.mark.parametrize(
    "weights, error, match",
    [
        ({0: -1.0, 1: 2.0}, ValueError, r"class_weight\[0\] = -1\.0 must be a finite"),
        ({0: np.inf, 1: 1.0}, ValueError, "finite"),
        ({0: np.nan, 1: 1.0}, ValueError, "finite"),
        ({0: "x", 1: 1.0}, TypeError, r"class_weight\[0\] = 'x' is not a number"),
        ({0: True, 1: 1.0}, TypeError, "is not a number"),
    ],
)
def test_class_weight_values_are_finite_non_negative_numbers(
    binary_data, weights, error, match
):
    X, y = binary_data
    for est in (CRClassifier(**FAST), CROrdinalRegressor(**FAST)):
        with pytest.raises(error, match=match):
            est.set_params(class_weight=weights).fit(X, y)


def test_a_zero_class_weight_removes_the_class_from_the_loss(binary_data):
    X, y = binary_data
    clf = CRClassifier(**{**FAST, "max_iter": 40}, class_weight={0: 0.0, 1: 1.0})
    clf.fit(X, y)
    # Only class 1 is seen in the loss: the model predicts it everywhere.
    assert (clf.predict(X) == 1).mean() > 0.95
    with pytest.raises(ValueError, match="positive sum"):
        CRClassifier(**FAST, class_weight={0: 0.0, 1: 0.0}).fit(X, y)


# -- validation_fraction (item 11) ------------------------------------------------
@pytest.mark.parametrize("fraction", [0.999, 0.995])
def test_a_hold_out_set_too_small_for_early_stopping_raises(binary_data, fraction):
    X, y = binary_data  # 200 rows, 2 classes
    for est in (CRClassifier(**FAST), CROrdinalRegressor(**FAST)):
        est.set_params(early_stopping=True, validation_fraction=fraction)
        with pytest.raises(ValueError, match=f"validation_fraction={fraction} leaves"):
            est.fit(X, y)


def test_early_stopping_still_splits_small_data(binary_data):
    X, y = binary_data
    # 20 rows, 3 classes, 2 validation rows: not stratifiable, still a split.
    X20, y20 = X[:20], np.arange(20) % 3
    reg = CROrdinalRegressor(**FAST, early_stopping=True).fit(X20, y20)
    assert reg.validation_scores_ is not None
    clf = CRClassifier(**FAST, early_stopping=True, validation_fraction=0.5)
    assert clf.fit(X, y).validation_scores_ is not None


def test_growth_keeps_its_fallback_on_small_data(binary_data):
    X, y = binary_data
    model = CRClassifier(**{**FAST, "architecture": "residual", "max_iter": 3})
    growth = DepthGrowth(model, max_blocks=1, validation_fraction=0.999, random_state=0)
    growth.fit(X[:30], y[:30])
    assert hasattr(growth, "estimator_")


@pytest.mark.parametrize(
    "callbacks, where",
    [
        ([1], r"callbacks\[0\] = 1 is not a skorch callback"),
        ([EpochTimer(), "print"], r"callbacks\[1\] = 'print' is not a skorch"),
        ([("timer", 1)], r"callbacks\[0\]\[1\] \('timer'\) = 1 is not a skorch"),
        ([(1, EpochTimer())], r"callbacks\[0\] = .* is not a \(name, callback\)"),
        ([("a", EpochTimer(), 3)], r"callbacks\[0\] = .* is not a \(name, callback\)"),
    ],
)
def test_callbacks_must_be_skorch_callbacks(binary_data, callbacks, where):
    clf = CRClassifier(**FAST, callbacks=callbacks)
    with pytest.raises(TypeError, match=where):
        clf.fit(*binary_data)


def test_callback_instances_classes_and_named_tuples_are_accepted(binary_data):
    callbacks = [EpochTimer(), EpochTimer, ("timer", EpochTimer())]
    CRClassifier(**{**FAST, "max_iter": 1}, callbacks=callbacks).fit(*binary_data)
