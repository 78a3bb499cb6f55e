"""Persistence: pickle/joblib round-trips and the safe safetensors + JSON format."""

import copy
import io
import json
import pickle
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import joblib
import numpy as np
import pytest
import torch
from conftest import FAST, ROOT
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError

import cr_sklearn
from cr_sklearn import CRClassifier, _networks, load_model, save_model
from cr_sklearn._model_file import decode as _decode
from cr_sklearn._model_file import digest as _digest
from cr_sklearn._model_file import split_file as _split_file
from cr_sklearn._ordinal import CROrdinalRegressor
from cr_sklearn.growth import expand_depth

pytest.importorskip("safetensors", reason="safe persistence needs safetensors")


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=120,
        n_features=5,
        n_informative=4,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    return X, y


def _cases(X, y):
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"col{i}" for i in range(X.shape[1])])
    return {
        "binary-bool": (CRClassifier(**FAST), X, y > 0),
        "multiclass-strings-frame": (
            CRClassifier(**{**FAST, "hidden_layer_sizes": (8, 8)}),
            frame,
            np.array(["low", "mid", "high"], dtype=object)[y],
        ),
        "residual-spectral": (
            CRClassifier(
                **{
                    **FAST,
                    "hidden_layer_sizes": (8, 6),
                    "architecture": "residual",
                    "spectral_norm": True,
                }
            ),
            X,
            y,
        ),
        "class-weight-dict": (
            CRClassifier(**FAST, class_weight={0: 2.0, 1: 1.0, 2: 0.5}),
            X,
            y,
        ),
        "ordinal": (CROrdinalRegressor(**FAST), X, y),
        # classes_ in the order given, not sorted: kept by the file.
        "ordinal-given-order": (
            CROrdinalRegressor(**FAST, classes=["low", "mid", "high"]),
            X,
            np.array(["low", "mid", "high"])[y],
        ),
        # Cross-fitted members, with their out-of-fold attributes.
        "members": (
            CRClassifier(**FAST, n_members=3, oob_score=True),
            X,
            y,
        ),
        "ordinal-members": (
            CROrdinalRegressor(**FAST, n_members=3, oob_score=True),
            X,
            y,
        ),
        "ordinal-categorical": (
            CROrdinalRegressor(**FAST),
            X,
            pd.Categorical(
                np.array(["none", "some", "marked"])[y],
                categories=["none", "some", "marked"],
                ordered=True,
            ),
        ),
    }


CASES = ["binary-bool", "multiclass-strings-frame", "residual-spectral",
         "class-weight-dict", "ordinal", "ordinal-given-order",
         "ordinal-categorical", "members", "ordinal-members"]  # fmt: skip


def _same_predictions(a, b, X):
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    np.testing.assert_array_equal(a.input_gradient_norms(X), b.input_gradient_norms(X))


@pytest.mark.parametrize("case", CASES)
def test_safe_round_trip_is_exact(case, data, tmp_path):
    est, X, y = _cases(*data)[case]
    est.fit(X, y)
    path = tmp_path / "model.safetensors"
    save_model(est, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load_model(path)
    assert type(loaded) is type(est)
    assert loaded.get_params() == est.get_params()
    assert loaded.classes_.dtype == est.classes_.dtype
    np.testing.assert_array_equal(loaded.classes_, est.classes_)
    assert loaded.n_features_in_ == est.n_features_in_
    if hasattr(est, "feature_names_in_"):
        np.testing.assert_array_equal(loaded.feature_names_in_, est.feature_names_in_)
    assert loaded.loss_curve_ == est.loss_curve_
    np.testing.assert_array_equal(
        loaded.gradient_norm_quantiles_, est.gradient_norm_quantiles_
    )
    assert len(loaded.net_.history) == len(est.net_.history)
    for name in ("best_epochs_", "oob_decision_function_", "cutpoints_"):
        np.testing.assert_array_equal(
            getattr(loaded, name, None), getattr(est, name, None)
        )
    assert getattr(loaded, "oob_score_", None) == getattr(est, "oob_score_", None)
    _same_predictions(loaded, est, X)


def test_the_same_model_saves_to_the_same_bytes(data, tmp_path):
    # safetensors writes its metadata map in an order that varies between
    # calls: with two keys, eight saves agree by chance once in 128.
    X, y = data
    labels = np.array(["ä", "b\\", 'c"'])[y]  # escapes and UTF-8 in the payload
    est = CRClassifier(**FAST).fit(X, labels)
    blobs = set()
    for _ in range(8):
        buffer = io.BytesIO()
        save_model(est, buffer)
        blobs.add(buffer.getvalue())
    assert len(blobs) == 1
    (blob,) = blobs
    header, _ = _split_file(blob, "model.safetensors")
    assert list(header["__metadata__"]) == ["cr_sklearn", "sha256"]
    path = tmp_path / "model.safetensors"
    path.write_bytes(blob)
    _same_predictions(load_model(path), est, X)


@pytest.mark.parametrize("case", ["ordinal-given-order", "ordinal-categorical"])
def test_loaded_ordinal_model_keeps_the_order(case, data, tmp_path):
    est, X, y = _cases(*data)[case]
    est.fit(X, y)
    order = list(np.asarray(y.categories if hasattr(y, "categories") else est.classes))
    save_model(est, tmp_path / "model.safetensors")
    loaded = load_model(tmp_path / "model.safetensors")
    assert loaded.classes_.tolist() == order
    assert loaded.score(X, y) == est.score(X, y)
    # Training on keeps the order, and refuses another.
    loaded.partial_fit(X, y, classes=order)
    with pytest.raises(ValueError, match="differ from the fitted classes_"):
        loaded.partial_fit(X, y, classes=order[::-1])


@pytest.mark.parametrize("case", ["binary-bool", "ordinal", "residual-spectral"])
def test_pickle_and_joblib_round_trips_are_exact(case, data, tmp_path):
    est, X, y = _cases(*data)[case]
    est.fit(X, y)
    _same_predictions(pickle.loads(pickle.dumps(est)), est, X)
    joblib.dump(est, tmp_path / "model.joblib")
    _same_predictions(joblib.load(tmp_path / "model.joblib"), est, X)


def test_grown_residual_network_round_trips(data, tmp_path):
    X, y = data
    est = CRClassifier(**FAST, architecture="residual").fit(X, y)
    grown = expand_depth(est, position=0, n_blocks=2)
    save_model(grown, tmp_path / "grown.safetensors")
    loaded = load_model(tmp_path / "grown.safetensors")
    assert loaded.hidden_layer_sizes == grown.hidden_layer_sizes == (8, 8, 8)
    _same_predictions(loaded, grown, X)


def test_loaded_model_keeps_training_and_global_rng(data, tmp_path):
    X, y = data
    est = CRClassifier(**FAST).fit(X, y)
    save_model(est, tmp_path / "m.safetensors")
    torch_state = torch.get_rng_state()
    np_state = np.random.get_state()[1].copy()  # noqa: NPY002
    loaded = load_model(tmp_path / "m.safetensors")
    assert torch.equal(torch.get_rng_state(), torch_state)
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)  # noqa: NPY002
    # Warm-started training continues from the loaded weights and history.
    loaded.set_params(warm_start=True, max_iter=2).fit(X, y)
    assert loaded.n_iter_ == est.n_iter_ + 2
    assert np.isfinite(loaded.predict_proba(X)).all()


def test_save_rejects_what_is_not_plain_data(data, tmp_path):
    X, y = data
    path = tmp_path / "m.safetensors"
    with pytest.raises(NotFittedError):
        save_model(CRClassifier(), path)
    with pytest.raises(TypeError, match="CR estimators"):
        save_model(object(), path)
    est = CRClassifier(**{**FAST, "random_state": np.random.RandomState(0)})
    est.fit(X, y)
    with pytest.raises(TypeError, match="parameter random_state"):
        save_model(est, path)
    from skorch.callbacks import Callback

    est = CRClassifier(**FAST, callbacks=[Callback()]).fit(X, y)
    with pytest.raises(TypeError, match="parameter callbacks"):
        save_model(est, path)
    assert list(tmp_path.iterdir()) == []


def test_failed_save_leaves_existing_file_intact(data, tmp_path):
    X, y = data
    path = tmp_path / "m.safetensors"
    save_model(CRClassifier(**FAST).fit(X, y), path)
    before = path.read_bytes()
    est = CRClassifier(**{**FAST, "random_state": np.random.RandomState(0)})
    with pytest.raises(TypeError):
        save_model(est.fit(X, y), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]


# -- tampered and malicious files ------------------------------------------
@pytest.fixture(scope="module")
def saved(data, tmp_path_factory):
    X, y = data
    path = tmp_path_factory.mktemp("saved") / "model.safetensors"
    save_model(CRClassifier(**FAST).fit(X, y), path)
    return path


def _rewrite(src, dst, edit_payload=None, edit_tensors=None):
    """Copy ``src`` to ``dst`` with edits and a *valid* recomputed digest."""
    from safetensors.torch import load, save

    blob = src.read_bytes()
    header, _ = _split_file(blob, src)
    payload = json.loads(header["__metadata__"]["cr_sklearn"])
    tensors = load(blob)
    if edit_payload:
        edit_payload(payload)
    if edit_tensors:
        edit_tensors(tensors)
    text = json.dumps(payload)
    data = _split_file(save(tensors, metadata={"cr_sklearn": text}), dst)[1]
    dst.write_bytes(
        save(tensors, metadata={"cr_sklearn": text, "sha256": _digest(text, data)})
    )
    return dst


class _Exploit:
    """Pickling this object makes unpickling call ``marker.touch()``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (type(self.marker).touch, (self.marker,))


def test_malicious_pickle_is_rejected_without_running_it(saved, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.safetensors"
    path.write_bytes(pickle.dumps(_Exploit(marker)))
    with pytest.raises(ValueError, match="not a valid cr_sklearn model file"):
        load_model(path)
    buffer = io.BytesIO()
    torch.save({"x": _Exploit(marker)}, buffer)
    path.write_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="not a valid cr_sklearn model file"):
        load_model(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda b: b[:-10],  # truncated
        lambda b: b[:-1] + bytes([b[-1] ^ 0xFF]),  # a weight byte flipped
        lambda b: b"",
        lambda b: struct.pack("<Q", 10**12) + b[8:],  # absurd header length
        lambda b: b.replace(b"CRClassifier", b"CRClassifiex"),  # edited JSON
    ],
    ids=["truncated", "flipped-weight", "empty", "header-length", "edited-json"],
)
def test_tampered_bytes_are_rejected(saved, tmp_path, corrupt):
    path = tmp_path / "tampered.safetensors"
    blob = corrupt(saved.read_bytes())
    assert blob != saved.read_bytes()
    path.write_bytes(blob)
    with pytest.raises(ValueError, match="not a valid cr_sklearn model file"):
        load_model(path)


def _set(key, value):
    def edit(payload):
        payload[key] = value

    return edit


def _set_attr(name, value):
    def edit(payload):
        payload["attributes"][name] = value

    return edit


@pytest.mark.parametrize(
    "edit, match",
    [
        (_set("estimator", "builtins.eval"), "unknown estimator class"),
        (_set("estimator", "BaseCR"), "unknown estimator class"),
        (_set("format", "pickle"), "unknown format"),
        (_set_attr("predict", 1), "attribute name 'predict' is not allowed"),
        (_set_attr("__class__", 1), "is not allowed"),
        (_set_attr("net_", 1), "is not allowed"),
        (_set_attr("classes_", {"__type__": "pickle", "data": "x"}), "unknown encoded"),
        (
            _set_attr(
                "classes_",
                {
                    "__type__": "ndarray",
                    "dtype": "O",
                    "shape": [1],
                    "data": [{"__type__": "dict", "items": []}],
                },
            ),
            "object arrays may only hold scalars",
        ),  # fmt: skip
        (
            _set_attr(
                "classes_",
                {"__type__": "ndarray", "dtype": "<M8[ns]", "shape": [1], "data": [0]},
            ),
            "unsupported dtype",
        ),  # fmt: skip
        (_set_attr("n_features_in_", -3), "invalid n_features_in_"),
        (
            lambda p: p["params"].update(callbacks=[["os.system", "rm"]]),
            "callback objects are never loaded",
        ),
    ],
)
def test_crafted_payloads_are_rejected(saved, tmp_path, edit, match):
    path = _rewrite(saved, tmp_path / "crafted.safetensors", edit_payload=edit)
    with pytest.raises(ValueError, match=match):
        load_model(path)


def test_weights_must_match_the_network_the_fitted_plan_describes(saved, tmp_path):
    # The fitted plan describes the network (the parameters are the next fit's).
    def wider(payload):
        payload["plan"]["hidden"] = {"__type__": "tuple", "items": [9]}

    path = _rewrite(saved, tmp_path / "a.safetensors", edit_payload=wider)
    with pytest.raises(ValueError, match="shape"):
        load_model(path)

    def extra(tensors):
        tensors["module.extra"] = torch.zeros(2)

    path = _rewrite(saved, tmp_path / "b.safetensors", edit_tensors=extra)
    with pytest.raises(ValueError, match="unexpected"):
        load_model(path)

    def poison(tensors):
        tensors["module.output.weight"][0, 0] = float("nan")

    path = _rewrite(saved, tmp_path / "c.safetensors", edit_tensors=poison)
    with pytest.raises(ValueError, match="non-finite"):
        load_model(path)

    def as_single(tensors):
        tensors["module.output.bias"] = tensors["module.output.bias"].float()

    path = _rewrite(saved, tmp_path / "d.safetensors", edit_tensors=as_single)
    with pytest.raises(ValueError, match="dtype"):
        load_model(path)


def test_invalid_parameters_are_rejected(saved, tmp_path):
    def bad_degree(payload):
        payload["params"]["degree"] = -1

    path = _rewrite(saved, tmp_path / "a.safetensors", edit_payload=bad_degree)
    with pytest.raises(ValueError, match="degree"):
        load_model(path)

    def unknown(payload):
        payload["params"]["exec"] = "print(1)"

    path = _rewrite(saved, tmp_path / "b.safetensors", edit_payload=unknown)
    with pytest.raises(ValueError, match=r"unknown \['exec'\]"):
        load_model(path)


def test_other_versions_warn_or_raise(saved, tmp_path):
    def older(payload):
        payload["versions"]["cr_sklearn"] = "0.0.1"

    path = _rewrite(saved, tmp_path / "old.safetensors", edit_payload=older)
    with pytest.warns(UserWarning, match=r"saved with cr_sklearn 0\.0\.1"):
        load_model(path)

    path = _rewrite(
        saved, tmp_path / "new.safetensors", edit_payload=_set("format_version", 99)
    )
    with pytest.raises(ValueError, match="format version 99.*Upgrade"):
        load_model(path)


def test_file_records_versions(saved):
    header, _ = _split_file(saved.read_bytes(), saved)
    payload = json.loads(header["__metadata__"]["cr_sklearn"])
    assert payload["format_version"] == 4
    assert payload["versions"]["cr_sklearn"] == cr_sklearn.__version__
    assert {"scikit-learn", "torch", "numpy"} <= set(payload["versions"])


def test_files_saved_by_release_0_1_0_still_load():
    # Written by cr_sklearn 0.1.0 (before the estimators' internals moved);
    # the parameter names and the file format are the same.
    data = Path(__file__).parent / "data"
    expected = np.load(data / "saved_0.1.0_predictions.npz")
    clf = load_model(data / "crclassifier_0.1.0.safetensors")
    # The format promises the same predictions to rounding, not to the bit:
    # vectorised float64 kernels differ in the last place between CPUs.
    close = {"rtol": 1e-12, "atol": 1e-15}
    np.testing.assert_allclose(
        clf.predict_proba(expected["X"]), expected["clf"], **close
    )
    reg = load_model(data / "crordinal_residual_0.1.0.safetensors")
    np.testing.assert_allclose(
        reg.predict_proba(expected["Xo"]), expected["reg"], **close
    )
    # A loaded model trains on: a warm start reads its current parameters.
    reg.set_params(warm_start=True, max_iter=2).fit(
        expected["Xo"], reg.predict(expected["Xo"])
    )
    assert reg.n_iter_ == 7


FORMAT_3_MODELS = [
    "classifier_defaults",
    "ordinal",
    "members",
    "ordinal_encoded_members",
]


@pytest.mark.parametrize("name", FORMAT_3_MODELS)
def test_files_of_format_3_still_load_to_the_same_predictions(name):
    # Format 3 files (tests/data/make_format3.py): the defaults, an ordinal
    # model, cross-fitted members with out-of-fold fields, and an input
    # encoding with members. They hold no fitted plan: it is resolved again
    # from the parameters that fitted them.
    data = Path(__file__).parent / "data"
    expected = np.load(data / "format3_predictions.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # another cr_sklearn version wrote them
        model = load_model(data / f"{name}_format3.safetensors")
    close = {"rtol": 1e-12, "atol": 1e-15}
    X = expected["X"]
    np.testing.assert_allclose(
        model.predict_proba(X), expected[f"{name}_proba"], **close
    )
    np.testing.assert_allclose(model.jacobian(X), expected[f"{name}_jacobian"], **close)
    # Every attribute the file stored reads the same, those the record now
    # reads from the history, the plan or the tensors included.
    path = data / f"{name}_format3.safetensors"
    header, _ = _split_file(path.read_bytes(), path)
    payload = json.loads(header["__metadata__"]["cr_sklearn"])
    for key, value in payload["attributes"].items():
        np.testing.assert_equal(getattr(model, key), _decode(value, path), key)


# -- pipelines, links, format versions and the network's own scaling -----------
def test_a_pipeline_is_refused_with_what_to_do_instead(data, tmp_path):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = data
    pipe = make_pipeline(StandardScaler(), CRClassifier(**FAST)).fit(X, y)
    path = tmp_path / "pipe.safetensors"
    with pytest.raises(TypeError, match=r"save its CR step.*joblib"):
        save_model(pipe, path)
    assert not path.exists()
    save_model(pipe[-1], path)  # the advice works
    np.testing.assert_allclose(
        load_model(path).predict_proba(pipe[:-1].transform(X)), pipe.predict_proba(X)
    )


def test_save_model_refuses_a_symbolic_link(data, tmp_path):
    X, y = data
    target = tmp_path / "target.safetensors"
    target.write_bytes(b"kept")
    link = tmp_path / "link.safetensors"
    link.symlink_to(target)
    clf = CRClassifier(**FAST).fit(X, y)
    with pytest.raises(ValueError, match="is a symbolic link"):
        save_model(clf, link)
    with pytest.raises(ValueError, match="is a symbolic link"):
        save_model(clf, str(link))
    assert link.is_symlink() and target.read_bytes() == b"kept"
    dangling = tmp_path / "dangling.safetensors"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="is a symbolic link"):
        save_model(clf, dangling)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("version", [0, -1, True, "1", 1.0, None])
def test_format_versions_no_release_wrote_are_rejected(saved, tmp_path, version):
    path = _rewrite(
        saved, tmp_path / "v.safetensors", edit_payload=_set("format_version", version)
    )
    with pytest.raises(ValueError, match="not a valid .* format_version") as exc:
        load_model(path)
    assert "Upgrade" not in str(exc.value)


@pytest.mark.parametrize("value", [0.0, -1.0, 1e-320])  # 1e-320: subnormal float64
def test_the_networks_input_scale_is_checked(saved, tmp_path, value):
    def edit(tensors):
        tensors["module.input_scale"][1] = value

    path = _rewrite(saved, tmp_path / "s.safetensors", edit_tensors=edit)
    with pytest.raises(ValueError, match="network's input_scale"):
        load_model(path)


@pytest.mark.parametrize("value", [1e-320, 0.0])
def test_a_subnormal_input_scale_attribute_is_rejected(saved, tmp_path, value):
    from cr_sklearn._model_file import encode

    scale = encode(np.full(5, value), "input_scale_")
    path = _rewrite(
        saved,
        tmp_path / "a.safetensors",
        edit_payload=_set_attr("input_scale_", scale),
    )
    with pytest.raises(ValueError, match="input_scale_ must be positive"):
        load_model(path)


def test_format_1_files_say_their_gradient_summaries_are_dated():
    # Release 0.1.0 wrote format 1, whose gradient-norm summaries were
    # measured by X in raw units without an encoding (as in this file).
    data = Path(__file__).parent / "data"
    with pytest.warns(UserWarning, match="format version 1: without an input"):
        load_model(data / "crclassifier_0.1.0.safetensors")


@pytest.fixture(scope="module")
def saved_members(data, tmp_path_factory):
    X, y = data
    path = tmp_path_factory.mktemp("members") / "members.safetensors"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CRClassifier(**FAST, n_members=3, oob_score=True).fit(X, y)
    save_model(model, path)
    return path


def _encoded(array):
    array = np.asarray(array)
    return {
        "__type__": "ndarray",
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "data": array.ravel().tolist(),
    }


@pytest.mark.parametrize(
    "edit, match",
    [
        (_set_attr("best_epochs_", _encoded([1, 2, 10**6])), "best_epochs_"),
        (_set_attr("best_epochs_", _encoded([0.5, 1.0, 2.0])), "best_epochs_"),
        (
            _set_attr("oob_decision_function_", _encoded(np.full((4, 2), 0.5))),
            "oob_decision_function_",
        ),
        (
            _set_attr("oob_decision_function_", _encoded(np.full((4, 3), 2.0))),
            "oob_decision_function_",
        ),
        # Issue 36, R11: attributes a fit of these parameters never writes.
        (_set_attr("best_epochs_", _encoded([1, 2])), "one per member"),
        (_set_attr("oob_score_", 5.0), "oob_score_ must lie in"),
        (
            _set_attr("oob_decision_function_", _encoded(np.full((4, 2), 0.4))),
            "oob_decision_function_",
        ),
    ],
    ids=[
        "epoch-beyond-n_iter",
        "float-epochs",
        "columns",
        "not-probabilities",
        "epochs-of-two-members",
        "score-out-of-range",
        "rows-not-summing-to-one",
    ],
)
def test_crafted_member_attributes_are_rejected(saved_members, tmp_path, edit, match):
    path = _rewrite(saved_members, tmp_path / "m.safetensors", edit_payload=edit)
    with pytest.raises(ValueError, match=match):
        load_model(path)


def test_out_of_fold_attributes_need_members_and_oob_score(
    saved, saved_members, tmp_path
):
    # A one-network file with out-of-fold fields, and a member file that
    # claims oob_score without them (R11).
    def oob_fields(payload):
        payload["attributes"]["oob_score_"] = 0.5

    path = _rewrite(saved, tmp_path / "a.safetensors", edit_payload=oob_fields)
    with pytest.raises(ValueError, match="need n_members > 1 and oob_score"):
        load_model(path)

    def without_oob(payload):
        del payload["attributes"]["oob_score_"]

    path = _rewrite(saved_members, tmp_path / "b.safetensors", edit_payload=without_oob)
    with pytest.raises(ValueError, match="without both out-of-fold attributes"):
        load_model(path)


def test_member_tensors_must_match_n_members(saved_members, tmp_path):
    def one_network(payload):
        payload["params"]["n_members"] = 1
        payload["params"]["oob_score"] = False

    # The parameter alone is the next fit's: the members load as fitted ...
    path = _rewrite(saved_members, tmp_path / "m.safetensors", one_network)
    loaded = load_model(path)
    assert (loaded.n_members, loaded.n_members_) == (1, 3)
    assert loaded.module_.n_members == 3

    def one_resolved_network(payload):
        one_network(payload)
        payload["attributes"]["n_members_"] = 1

    # ... and both together disagree with the tensors.
    path = _rewrite(saved_members, tmp_path / "m.safetensors", one_resolved_network)
    with pytest.raises(ValueError, match="describe 1 member"):
        load_model(path)


@pytest.mark.parametrize("n_members", [4, 10**9])
def test_a_claimed_member_count_is_checked_before_any_member_is_built(
    saved_members, tmp_path, n_members, monkeypatch
):
    # Members are built one at a time (a billion would take days): a forged
    # count must be rejected from the file's own tensors, before any build.
    def more_members(payload):
        payload["params"]["n_members"] = n_members
        payload["attributes"]["n_members_"] = n_members

    def no_build(*args, **kwargs):
        raise AssertionError("a network was built for a forged member count")

    path = _rewrite(saved_members, tmp_path / "m.safetensors", more_members)
    monkeypatch.setattr(_networks, "build", no_build)
    with pytest.raises(ValueError, match=f"describe {n_members} member"):
        load_model(path)


# -- a fitted model is one record: the parameters are the next fit's ------------
# Each parameter that defines the network, changed after fit to a value that
# builds another network.
CHANGED_AFTER_FIT = {
    "hidden_layer_sizes": (16, 4),
    "degree": 5,
    "activation": "relu",
    "architecture": "residual",
    "encoding_bins": 3,
    "dropout": 0.5,
    "n_members": 3,
    "spectral_norm": True,
    "dtype": "float64",
}


def _skops_round_trip(model):
    sio = pytest.importorskip("skops.io", reason="skops is not installed")
    return sio.loads(sio.dumps(model), trusted=[f"cr_sklearn.{type(model).__name__}"])


def _file_round_trip(model):
    buffer = io.BytesIO()
    save_model(model, buffer)
    buffer.seek(0)
    return load_model(buffer)


def _joblib_round_trip(model):
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    return joblib.load(buffer)


ROUTES = {
    "save_model": _file_round_trip,
    "pickle": lambda model: pickle.loads(pickle.dumps(model)),
    "deepcopy": copy.deepcopy,
    "joblib": _joblib_round_trip,
    "skops": _skops_round_trip,
}


@pytest.fixture(scope="module")
def changed_after_fit(data):
    """``(estimator class, parameter) -> (model with the parameter changed,
    its predict_proba and jacobian before the change)``, fitted once each."""
    X, y = data
    models = {}

    def get(cls, param):
        if (cls, param) not in models:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = cls((8,), max_iter=2, random_state=0).fit(X, y)
            before = model.predict_proba(X), model.jacobian(X), dict(model.plan_)
            model.set_params(**{param: CHANGED_AFTER_FIT[param]})
            models[cls, param] = model, before
        return models[cls, param]

    return get


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("param", sorted(CHANGED_AFTER_FIT))
@pytest.mark.parametrize("cls", [CRClassifier, CROrdinalRegressor])
def test_a_model_round_trips_whatever_its_parameters_say(
    changed_after_fit, data, cls, param, route
):
    # F1: the network is described by what was fitted; the parameters
    # configure the next fit (as in scikit-learn) and travel as they are.
    X, _ = data
    model, (proba, jacobian, plan) = changed_after_fit(cls, param)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = ROUTES[route](model)
    assert loaded.get_params()[param] == CHANGED_AFTER_FIT[param]
    assert loaded.get_params() == model.get_params()
    assert dict(loaded.plan_) == plan
    np.testing.assert_array_equal(loaded.predict_proba(X), proba)
    np.testing.assert_array_equal(loaded.jacobian(X), jacobian)
    # The original is untouched by being copied or saved.
    np.testing.assert_array_equal(model.predict_proba(X), proba)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_an_ordinal_model_keeps_the_head_it_was_fitted_with(data, route):
    # The head is fitted state: its loss on the same outputs is the fitted
    # one's after set_params(head=...), which is for the next fit.
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CROrdinalRegressor((8,), head="cumulative", max_iter=2, random_state=0)
        model.fit(X, y)
    eta = torch.linspace(-3, 3, 12, dtype=torch.float64)[:, None]
    codes = torch.as_tensor(np.arange(12) % len(model.classes_))
    with torch.no_grad():
        fitted_loss = model.net_.criterion_(eta, codes)
    model.set_params(head="coral")
    loaded = ROUTES[route](model)
    assert loaded.get_params()["head"] == "coral"
    assert loaded.plan_["head"] == model.plan_["head"] == "cumulative"
    with torch.no_grad():
        torch.testing.assert_close(loaded.net_.criterion_(eta, codes), fitted_loss)
    np.testing.assert_array_equal(loaded.cutpoints_, model.cutpoints_)


def test_the_next_fit_reads_the_changed_parameters(changed_after_fit, data):
    X, y = data
    model, _ = changed_after_fit(CRClassifier, "degree")
    loaded = pickle.loads(pickle.dumps(model))
    # A warm start continues the fitted network: its parameters cannot change.
    with pytest.raises(ValueError, match="degree=5 differs from the fitted"):
        copy.deepcopy(loaded).set_params(warm_start=True).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded.fit(X, y)
    assert loaded.plan_["degree"] == loaded.module_.degree == 5


def test_a_loaded_model_keeps_the_plan_that_was_fitted(data, tmp_path):
    # F7: the plan is saved, not resolved again for a made-up row count; here
    # 120 rows cap the batch at 120 (1,000 rows would give 500 and another
    # learning rate).
    X, y = data
    model = CRClassifier(
        (8,), max_iter=2, batch_size=500, learning_rate_init="auto", random_state=0
    ).fit(X, y)
    assert (model.plan_["batch_size"], model.plan_["n_samples"]) == (120, 120)
    lr = model.net_.optimizer_.param_groups[0]["lr"]
    assert lr == model.plan_["learning_rate"] == pytest.approx(1e-3)
    for route in ("save_model", "pickle", "deepcopy"):
        loaded = ROUTES[route](model)
        assert dict(loaded.plan_) == dict(model.plan_), route
        assert loaded.net_.optimizer_.param_groups[0]["lr"] == lr, route


def test_the_resolved_plan_is_readable_and_read_only(data):
    X, y = data
    model = CRClassifier((8,), max_iter=3, random_state=0).fit(X, y)
    plan = model.plan_
    assert plan["max_epochs"] == model.max_iter_ == model.n_iter_ == 3
    assert plan["encoding_bins"] == model.encoding_bins_ == 4
    assert (plan["n_members"], plan["stopping"]) == (model.n_members_, "off")
    assert plan["batch_size"] == 120 and plan["hidden"] == (8,)
    with pytest.raises(TypeError):
        plan["batch_size"] = 1
    with pytest.raises(AttributeError):
        model.max_iter_ = 5
    assert not hasattr(CRClassifier(), "plan_")


def test_the_saved_state_code_imports_no_estimator():
    # The estimators pickle through cr_sklearn._state; save_model and
    # load_model (cr_sklearn._persistence) sit above the estimators.
    code = (
        "import sys, cr_sklearn._state; "
        "print(sorted(m for m in sys.modules if m in "
        "('cr_sklearn._classifier', 'cr_sklearn._ordinal', "
        "'cr_sklearn._persistence')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_next_fit_too_large_to_run_does_not_stop_a_round_trip(data):
    # The parameters are validated as fit validates them, but the network
    # they would build is never built: only the fitted plan's is.
    X, y = data
    model = CRClassifier((8,), max_iter=2, random_state=0).fit(X, y)
    proba = model.predict_proba(X)
    model.set_params(hidden_layer_sizes=(10**6,), degree=30)
    for route in ("save_model", "pickle"):
        loaded = ROUTES[route](model)
        assert loaded.hidden_layer_sizes == (10**6,)
        np.testing.assert_array_equal(loaded.predict_proba(X), proba)


def test_out_of_fold_fields_follow_the_fit_not_the_parameter(saved_members, tmp_path):
    # oob_score after fit is the next fit's: the fitted plan says whether the
    # out-of-fold fields belong to the model, and both ways are checked.
    model = load_model(saved_members)
    model.set_params(oob_score=False)
    loaded = _file_round_trip(model)
    assert loaded.oob_score is False and loaded.plan_["oob_score"] is True
    np.testing.assert_array_equal(
        loaded.oob_decision_function_, model.oob_decision_function_
    )

    def fitted_without(payload):
        payload["plan"]["oob_score"] = False

    path = _rewrite(saved_members, tmp_path / "m.safetensors", fitted_without)
    with pytest.raises(ValueError, match="need n_members > 1 and oob_score"):
        load_model(path)
