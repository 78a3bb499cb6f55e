"""Property-based tests: fuzzed inputs to fit, predict, the scorers and persistence.

Every case must end in a correct result or in a ValueError/TypeError whose
message names the problem, raised by cr_sklearn or scikit-learn (never from
inside torch or skorch), and never in a silent NaN.

The default run tries ``FAST_EXAMPLES`` cases per property; ``-m slow`` runs
the same properties with ``SLOW_EXAMPLES``. ``--hypothesis-show-statistics``
prints how many cases each property ran.
"""

import math
import re
import traceback
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from conftest import FAST
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cr_sklearn import (
    CRClassifier,
    CROrdinalRegressor,
    DREGScorer,
    get_ordinal_scorer,
    load_model,
    save_model,
)
from cr_sklearn._model_file import decode as _decode
from cr_sklearn._model_file import encode as _encode
from cr_sklearn.nn import ACTIVATION_NAMES

FAST_EXAMPLES = 30
SLOW_EXAMPLES = 300


def _settings(n):
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,  # the default run is reproducible
        database=None,  # writes nothing to disk
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _properties(prop):
    """A fast test and a ``slow``-marked test running property ``prop``."""
    fast = _settings(FAST_EXAMPLES)(given(case=prop.strategy)(prop))
    slow = _settings(SLOW_EXAMPLES)(given(case=prop.strategy)(prop))
    return fast, pytest.mark.slow(slow)


def _property(strategy):
    def wrap(fn):
        def prop(case):
            fn(case)

        prop.strategy = strategy
        prop.__name__ = fn.__name__
        return prop

    return wrap


# -- building fuzzed inputs ----------------------------------------------------
# Planted hazards and the message each must produce when it is the problem.
HAZARD_MESSAGES = {
    "nan": r"NaN",
    "inf": r"infinity",
    "huge": r"too large|infinity",  # float32 inputs turn 1e300 into inf
    "sparse": r"[Ss]parse",
    "string": r"could not convert|string|[Ss]tr",
    "continuous_y": r"Unknown label type|continuous",
    "one_class": r"one class|2 classes",
    # sklearn types object arrays holding numbers as "unknown" labels.
    "mixed_y": r"[Mm]ix|Unknown label type",
    "n_features": r"features",
    "empty": r"0 sample|minimum of 1|Expected 2D|must be a 2D array",
    "ndim": r"2D|dim",
    "unknown_label": r"not in|unknown|unseen",
}

CORRUPTIONS = {
    "nan": np.nan,
    "inf": np.inf,
    "-inf": -np.inf,
    "huge": 1e300,
    "-huge": -3e38,
    "negzero": -0.0,
    "subnormal": 5e-324,
    "tiny": 1e-300,
    "big_ok": 1e29,
}


@st.composite
def matrices(draw, n_rows=None, n_features=None):
    """(X, planted hazards) with random shape, values, dtype and container."""
    n = draw(st.integers(0, 24)) if n_rows is None else n_rows
    d = draw(st.integers(1, 4)) if n_features is None else n_features
    seed = draw(st.integers(0, 2**16))
    X = np.random.default_rng(seed).standard_normal((n, d))
    for kind, i, j in draw(
        st.lists(
            st.tuples(st.sampled_from(sorted(CORRUPTIONS)), st.integers(0, 99),
                      st.integers(0, 9)),
            max_size=3,
        )
    ):  # fmt: skip
        if n:
            X[i % n, j % d] = CORRUPTIONS[kind]
    for j, how in enumerate(
        draw(
            st.lists(
                st.sampled_from(["keep", "constant", "scale_up", "scale_down"]),
                min_size=d, max_size=d,
            )
        )
    ):  # fmt: skip
        if how == "constant" and n:
            X[:, j] = X[0, j]
        elif how == "scale_up":
            X[:, j] *= 1e12
        elif how == "scale_down":
            X[:, j] *= 1e-12
    hazards = set()
    if np.isnan(X).any():
        hazards.add("nan")
    if np.isinf(X).any():
        hazards.add("inf")
    if (np.abs(X[np.isfinite(X)]) > 1e30).any():
        hazards.add("huge")
    container = draw(
        st.sampled_from(
            ["float64", "float32", "int64", "bool", "object", "object_str",
             "str", "list", "frame", "sparse", "1d", "3d"]
        )
    )  # fmt: skip
    finite = np.isfinite(X).all()
    if container == "float32":
        X = X.astype(np.float32)
    elif container == "int64" and finite and np.abs(X).max(initial=0) < 1e15:
        X = np.round(X).astype(np.int64)
        hazards -= {"huge"}
    elif container == "bool" and finite:
        X = X > 0
        hazards -= {"huge"}
    elif container == "object":
        X = X.astype(object)
    elif container == "object_str" and n:
        X = X.astype(object)
        X[0, 0] = "not a number"
        hazards.add("string")
    elif container == "str":
        X = X.astype(str)  # numeric strings: sklearn converts them
    elif container == "list":
        X = X.tolist()
    elif container == "frame":
        import pandas as pd

        X = pd.DataFrame(X, columns=[f"f{j}" for j in range(d)])
    elif container == "sparse":
        X = sp.csr_matrix(X)
        hazards = {"sparse"}
    elif container == "1d" and n:
        X = X[:, 0]
        hazards.add("ndim")
    elif container == "3d":
        X = X[:, :, None]
        hazards.add("ndim")
    if n == 0:
        hazards.add("empty")
    return X, hazards


@st.composite
def labels(draw, n):
    """(y, planted hazards, classes) for ``n`` samples."""
    kind = draw(
        st.sampled_from(
            ["int", "int_gaps", "float_integral", "float", "bool", "str", "object",
             "mixed", "one_per_class"]
        )
    )  # fmt: skip
    k = draw(st.integers(1, 4))
    codes = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    codes = codes.astype(int)
    hazards = set()
    if kind == "int":
        y = codes
    elif kind == "int_gaps":
        y = codes * 7 - 5
    elif kind == "float_integral":
        y = codes.astype(float)
    elif kind == "float":
        y = codes + 0.25 * np.arange(n)
        if n >= 2:
            hazards.add("continuous_y")
    elif kind == "bool":
        y = codes % 2 == 0
    elif kind == "str":
        y = np.array(["low", "mid", "high", "top"])[codes]
    elif kind == "object":
        y = np.array(["low", "mid", "high", "top"], dtype=object)[codes]
    elif kind == "mixed":
        y = np.array([1, "b", 2.5, "d"], dtype=object)[codes]
        if n and not all(isinstance(v, str) for v in y):
            hazards.add("mixed_y")
    else:
        y = np.arange(n)
    if len(np.unique(y.astype(str))) < 2 and "continuous_y" not in hazards:
        hazards.add("one_class")
    return y, hazards


@st.composite
def fit_cases(draw):
    X, x_hazards = draw(matrices())
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    y, y_hazards = draw(labels(n))
    return X, y, x_hazards | y_hazards


# -- the oracle ----------------------------------------------------------------
def _check_error(exc, hazards):
    """A raised error must be a clear ValueError/TypeError for a planted hazard."""
    assert isinstance(exc, (ValueError, TypeError)), repr(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    origin = frames[-1].filename.replace("\\", "/")
    assert "/torch/" not in origin and "/skorch/" not in origin, (origin, exc)
    assert hazards, f"unexpected error without a planted hazard: {exc!r}"
    pattern = "|".join(HAZARD_MESSAGES[h] for h in hazards)
    assert re.search(pattern, str(exc)), (hazards, str(exc))
    event(f"{type(exc).__name__} for {sorted(hazards)}")


def _check_fitted(est, X, y):
    classes = est.classes_
    assert sorted(map(str, np.unique(np.asarray(y, dtype=object).astype(str)))) == (
        sorted(map(str, classes))
    )
    assert all(bool(torch.isfinite(t).all()) for t in est.module_.state_dict().values())
    proba = est.predict_proba(X)
    assert proba.shape == (len(y), len(classes))
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-9)
    assert set(est.predict(X).tolist()) <= set(classes.tolist())
    norms = est.input_gradient_norms(X)
    assert norms.shape == (len(y),) and np.isfinite(norms).all() and (norms >= 0).all()
    assert 0.0 <= est.score(X, y) <= 1.0


@_property(fit_cases())
def fit_property(case):
    X, y, hazards = case
    try:
        # Few epochs: the property is about input handling, not learning.
        est = CRClassifier(**{**FAST, "max_iter": 3}).fit(X, y)
    except Exception as exc:
        _check_error(exc, hazards)
        return
    # float32 containers turn 1e300 into inf, which must have raised.
    assert not hazards, f"fit accepted {hazards}"
    _check_fitted(est, X, y)
    event("fitted")


test_fit_fuzz, test_fit_fuzz_slow = _properties(fit_property)


_FITTED = {}


def _model():
    # Module-level cache: hypothesis' @given cannot take function fixtures.
    if "clf" not in _FITTED:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((60, 3))
        y = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 1)]
        _FITTED["clf"] = CRClassifier(**FAST).fit(X, y)
        _FITTED["ordinal"] = CROrdinalRegressor(**FAST).fit(
            X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
        )
    return _FITTED


@st.composite
def predict_cases(draw):
    d = draw(st.sampled_from([3, 3, 3, 1, 2, 5]))
    X, hazards = draw(matrices(n_features=d))
    if d != 3 and "sparse" not in hazards:
        hazards.add("n_features")
    method = draw(
        st.sampled_from(
            ["predict", "predict_proba", "predict_log_proba", "decision_function",
             "input_gradient_norms", "input_sensitivity", "jacobian"]
        )
    )  # fmt: skip
    return X, hazards, method


@_property(predict_cases())
def predict_property(case):
    X, hazards, method = case
    est = _model()["clf"]
    # Far out-of-range rows may overflow the float64 network: that must be a
    # ValueError naming the rows, or a finite result.
    overflow = {"huge"} if "huge" in hazards else set()
    try:
        result = getattr(est, method)(X)
    except Exception as exc:
        if overflow and "not finite for" in str(exc):
            assert isinstance(exc, ValueError)
            event("ValueError for an overflowing row")
            return
        _check_error(exc, hazards - overflow if hazards - overflow else hazards)
        return
    assert not (hazards - overflow), f"{method} accepted {hazards}"
    event(f"result{' for huge values' if overflow else ''}")
    n = len(X)
    if method == "predict":
        assert result.shape == (n,) and set(result.tolist()) <= {"a", "b", "c"}
        return
    assert np.isfinite(result).all()
    if method == "predict_proba":
        np.testing.assert_allclose(result.sum(1), 1.0, rtol=1e-9)
    assert result.shape[0] == n


test_predict_fuzz, test_predict_fuzz_slow = _properties(predict_property)


@st.composite
def scorer_cases(draw):
    X, hazards = draw(matrices(n_features=3))
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    y = np.array(draw(st.lists(st.sampled_from([0, 1, 2, 7]), min_size=n, max_size=n)))
    scorer = draw(st.sampled_from(["tau", "neg_tau", "accuracy", "ordinal_mae", "qwk"]))
    if 7 in y.tolist() and scorer not in ("tau", "neg_tau"):
        hazards.add("unknown_label")
    return X, y.astype(int), hazards, scorer


@_property(scorer_cases())
def scorer_property(case):
    X, y, hazards, name = case
    models = _model()
    overflow = {"huge"} if "huge" in hazards else set()
    try:
        if name in ("tau", "neg_tau"):
            est = models["clf"]
            score = DREGScorer(negate=name == "neg_tau")(est, X)
        elif name == "accuracy":
            est = models["ordinal"]
            score = est.score(X, y)
        else:
            est = models["ordinal"]
            metric = {
                "ordinal_mae": "neg_mean_absolute_error",
                "qwk": "quadratic_weighted_kappa",
            }[name]
            score = get_ordinal_scorer(metric)(est, X, y)
    except Exception as exc:
        if overflow and "not finite for" in str(exc):
            return
        _check_error(exc, hazards - overflow if hazards - overflow else hazards)
        return
    assert not (hazards - overflow), f"{name} accepted {hazards}"
    event("score")
    if name in ("tau", "neg_tau") and math.isnan(score):
        # Documented: tau is nan only when every gradient norm is 0.
        assert not est.input_gradient_norms(X).any()
    else:
        assert math.isfinite(score)


test_scorer_fuzz, test_scorer_fuzz_slow = _properties(scorer_property)


# -- persistence ---------------------------------------------------------------
@st.composite
def model_params(draw):
    architecture = draw(st.sampled_from(["mlp", "residual"]))
    return dict(
        estimator=draw(st.sampled_from(["classifier", "ordinal"])),
        architecture=architecture,
        hidden_layer_sizes=tuple(
            draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
        ),
        activation=draw(st.sampled_from(ACTIVATION_NAMES)),
        degree=draw(st.integers(1, 4)),
        dreg=draw(st.sampled_from(["stream", "local", None])),
        spectral_norm=draw(st.booleans()),
        dropout=draw(st.sampled_from([0.0, 0.2])),
        standardize=draw(st.booleans()),
        n_classes=draw(st.integers(2, 4)),
        seed=draw(st.integers(0, 2**16)),
    )  # fmt: skip


@_property(model_params())
def save_load_property(case):
    import tempfile
    from pathlib import Path

    case = dict(case)
    kind, n_classes, seed = (
        case.pop("estimator"),
        case.pop("n_classes"),
        case.pop("seed"),
    )
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 3)) * rng.choice([1e-3, 1.0, 1e3], size=3)
    y = np.arange(30) % n_classes
    cls = CRClassifier if kind == "classifier" else CROrdinalRegressor
    with warnings.catch_warnings():
        # standardize=False on unscaled columns warns, by design.
        warnings.simplefilter("ignore", UserWarning)
        est = cls(**case, max_iter=2, random_state=seed).fit(X, y)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.safetensors"
        save_model(est, path)
        loaded = load_model(path)
    assert loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    np.testing.assert_array_equal(
        loaded.input_gradient_norms(X), est.input_gradient_norms(X)
    )


test_save_load_fuzz, test_save_load_fuzz_slow = _properties(save_load_property)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=8),
)
_plain = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(
            st.one_of(st.text(max_size=4), st.integers()), inner, max_size=4
        ),
    ),
    max_leaves=12,
)


@_property(_plain)
def codec_property(value):
    assert _decode(_encode(value, "value"), "file") == value


test_codec_fuzz, test_codec_fuzz_slow = _properties(codec_property)

_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                ["__type__", "items", "dtype", "shape", "data", "value", "x"]
            ),
            st.one_of(inner, st.sampled_from(
                ["tuple", "dict", "ndarray", "scalar", "<f8", "O", "|b1", "<M8"]
            )),
            max_size=5,
        ),
    ),
    max_leaves=15,
)  # fmt: skip


@_property(_json)
def decode_property(value):
    try:
        _decode(value, "file")
    except ValueError as exc:
        assert "not a valid cr_sklearn model file" in str(exc)


test_decode_fuzz, test_decode_fuzz_slow = _properties(decode_property)


def test_array_codec_round_trips_dtypes():
    arrays = [
        np.arange(6, dtype=np.int32).reshape(2, 3),
        np.array([True, False]),
        np.array(["a", "bc"]),
        np.array(["x", 1, 2.5, None, True], dtype=object),
        np.linspace(-1, 1, 5, dtype=np.float32),
        np.array([np.nan, np.inf, -0.0]),
        np.zeros((0, 3)),
    ]
    for a in arrays:
        b = _decode(_encode(a, "a"), "file")
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(b, a)
