"""load_model against hostile files: bounded reading, strict checks, one exception.

A forger edits the JSON metadata and recomputes the SHA-256 digest (the digest
is no protection), or hands the loader something that is not a model file at
all. Every such load either raises a ValueError or returns a model that
satisfies every invariant a save_model output does; and the memory a file
can make the loader use is bounded by the file's size.
"""

import io
import json
import math
import os
import stat
import struct
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from conftest import FAST, ROOT

from cr_sklearn import CRClassifier, CROrdinalRegressor, load_model, save_model
from cr_sklearn._model_file import MAX_HEADER_BYTES, digest
from cr_sklearn._plan import class_weights, hidden_sizes

pytest.importorskip("safetensors", reason="safe persistence needs safetensors")


# -- forging -----------------------------------------------------------------
def _parts(blob):
    """``(payload dict, tensor table, data bytes)`` of a model file's bytes."""
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    payload = json.loads(header.pop("__metadata__")["cr_sklearn"])
    return payload, header, blob[8 + n :]


def _assemble(payload, table, data, *, text=None):
    """A model file of these parts, with a valid recomputed digest."""
    text = json.dumps(payload) if text is None else text
    header = {
        **table,
        "__metadata__": {"cr_sklearn": text, "sha256": digest(text, data)},
    }
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def _forge(blob, edit=None, *, text=None):
    payload, table, data = _parts(blob)
    if edit is not None:
        edit(payload)
    return _assemble(payload, table, data, text=text)


def _tuple(*items):
    return {"__type__": "tuple", "items": list(items)}


def _array(dtype, data, shape=None):
    shape = [len(data)] if shape is None else shape
    return {"__type__": "ndarray", "dtype": dtype, "shape": shape, "data": data}


def _param(key, value):
    def edit(payload):
        payload["params"][key] = value

    return edit


def _plan(key, value):
    def edit(payload):
        payload["plan"][key] = value

    return edit


def _attr(key, value):
    def edit(payload):
        payload["attributes"][key] = value

    return edit


@pytest.fixture(scope="module")
def models(multiclass_data, ordinal_data):
    """Saved bytes of a classifier (string labels), an ordinal model and an
    encoded classifier (``encoding_bins``)."""
    X, y = multiclass_data
    clf = CRClassifier(**FAST).fit(X, y)
    Xo, yo = ordinal_data
    reg = CROrdinalRegressor(**{**FAST, "early_stopping": True}).fit(Xo, yo)
    encoded = CRClassifier(**{**FAST, "encoding_bins": 3}).fit(X, y)
    blobs = {}
    for name, est in (("clf", clf), ("ordinal", reg), ("encoded", encoded)):
        buffer = io.BytesIO()
        save_model(est, buffer)
        blobs[name] = buffer.getvalue()
    return _Saved(
        clf=(clf, blobs["clf"], X),
        ordinal=(reg, blobs["ordinal"], Xo),
        encoded=(encoded, blobs["encoded"], X),
    )


class _Saved(dict):
    """``{name: (estimator, file bytes, X)}`` with a short repr (for hypothesis)."""

    def __repr__(self):
        return f"<saved models {sorted(self)}>"


def _load(blob):
    return load_model(io.BytesIO(blob))


# -- file objects, odd files and sizes (item 3) ---------------------------------
def test_paths_and_binary_file_objects_load_alike(models, tmp_path):
    clf, blob, X = models["clf"]
    path = tmp_path / "m.safetensors"
    path.write_bytes(blob)
    with open(path, "rb") as f:
        from_file = load_model(f)
    for loaded in (load_model(path), from_file, _load(blob)):
        np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    buffer = io.BytesIO()
    save_model(clf, buffer)
    assert _parts(buffer.getvalue()) == _parts(blob)  # file objects are written too
    with open(path) as text_mode, pytest.raises(TypeError, match="binary"):
        load_model(text_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_devices_fifos_and_folders_are_refused_unread(tmp_path):
    fifo = tmp_path / "fifo.safetensors"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.safetensors"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero, tmp_path):
        # A FIFO would block a plain open() forever; /dev/zero never ends.
        with pytest.raises(ValueError, match="not a regular file"):
            load_model(path)
    with open("/dev/zero", "rb") as endless, pytest.raises(ValueError, match="header"):
        load_model(endless)  # a file object: read through the same bounds


def test_a_large_file_is_rejected_from_its_header(models, tmp_path):
    _, blob, _ = models["clf"]
    path = tmp_path / "big.safetensors"
    with open(path, "wb") as f:
        f.write(blob)
        f.truncate(2**30)  # sparse: 1 GiB claimed, nothing stored
    with pytest.raises(ValueError, match=f"{2**30} bytes long"):
        load_model(path)
    claim = struct.pack("<Q", MAX_HEADER_BYTES + 1) + blob[8:]
    with pytest.raises(ValueError, match="header claims"):
        _load(claim)
    with pytest.raises(ValueError, match="past the tensors"):
        _load(blob + b"\0")


# -- every malformed value is a ValueError (item 4) --------------------------
def _text(blob):
    return json.dumps(_parts(blob)[0])


def _deep_payload(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "forge, match",
    [
        (lambda b: _forge(b, text=_deep_payload(5000)), "nested too deeply"),
        (
            lambda b: struct.pack("<Q", 10_000) + b"[" * 5000 + b"]" * 5000,
            "header",
        ),
        (lambda b: _forge(b, _attr("classes_", _array("<f3", [1.0, 2.0]))), "dtype"),
        (lambda b: _forge(b, _attr("classes_", _array("<u16", [1, 2]))), "dtype"),
        (lambda b: _forge(b, _attr("classes_", _array("|i1", [1, 1000]))), "dtype"),
        (lambda b: _forge(b, _attr("classes_", _array("<i8", [1], [2**70]))), "shape"),
        (
            lambda b: _forge(
                b,
                _param("class_weight", {"__type__": "dict", "items": [[[1, 2], 1.0]]}),
            ),
            "not hashable",
        ),
        (
            lambda b: _forge(
                b, text=_text(b).replace('"n_iter_": 20', '"n_iter_": ' + "9" * 5000)
            ),
            "not JSON",
        ),
        (
            lambda b: _forge(
                b, _attr("_seed", {"__type__": "scalar", "dtype": "|i1", "value": 999})
            ),
            "dtype",
        ),
        (lambda b: _forge(b, _attr("classes_", _array("<U2", ["abc", "d"]))), "longer"),
        (
            lambda b: _forge(b, _attr("classes_", _array("<i8", ["1", "2"]))),
            "fit dtype",
        ),
    ],
    ids=[
        "nested-payload",
        "nested-header",
        "dtype-f3",
        "dtype-u16",
        "int8-overflow",
        "shape-2**70",
        "list-as-dict-key",
        "5000-digit-int",
        "scalar-overflow",
        "string-too-long",
        "strings-as-ints",
    ],  # fmt: skip
)
def test_malformed_values_raise_value_error(models, forge, match):
    _, blob, _ = models["clf"]
    with pytest.raises(ValueError, match=match):
        _load(forge(blob))


# -- fitted attributes are validated (item 5) ------------------------------------
CLF_ATTRIBUTE_FORGERIES = {
    "classes-reversed": _attr("classes_", _array("<U3", ["cat", "bee", "ant"])),
    "classes-repeated": _attr("classes_", _array("<U3", ["ant", "ant", "cat"])),
    "classes-single": _attr("classes_", _array("<U3", ["ant"])),
    "classes-nan": _attr("classes_", _array("<f8", [0.0, 1.0, float("nan")])),
    "classes-wrong-count": _attr("classes_", _array("<U3", ["ant", "bee"])),
    "grad-mean-zero": _attr("gradient_norm_mean_", 0.0),
    "grad-mean-nan": _attr("gradient_norm_mean_", float("nan")),
    "grad-mean-negative": _attr("gradient_norm_mean_", -1.0),
    "scale-zeros": _attr("input_scale_", _array("<f8", [0.0] * 4)),
    "scale-short": _attr("input_scale_", _array("<f8", [1.0] * 3)),
    "mean-inf": _attr("input_mean_", _array("<f8", [float("inf")] * 4)),
    "quantiles-decreasing": _attr(
        "gradient_norm_quantiles_", _array("<f8", list(range(101))[::-1])
    ),
    "feature-names-short": _attr("feature_names_in_", _array("O", ["a", "b"])),
    "history-string": lambda p: p.update(history="not a history"),
    "history-too-short": lambda p: p.update(history=p["history"][:-1]),
    "loss-curve-short": lambda p: p["attributes"].update(
        loss_curve_=p["attributes"]["loss_curve_"][:-1]
    ),
    "n-iter-wrong": _attr("n_iter_", 3),
    "unknown-attribute": _attr("coef_", 1.0),
    "missing-attribute": lambda p: p["attributes"].pop("input_scale_"),
    "huge-width-string": _attr(
        "classes_", _array("<U999999", [f"c{i}" for i in range(400)])
    ),
    # Numbers beyond float range and arrays where a string belongs: the
    # file's ValueError, not an OverflowError or numpy's truth-value error.
    "grad-mean-beyond-float": _attr("gradient_norm_mean_", 10**400),
    "classes-beyond-float": _attr("classes_", _array("O", [0, 10**400, 2])),
    "tol-beyond-float": _param("tol", 10**400),
    "path-an-array": _attr("_prediction_path", _array("<U6", ["folded", "folded"])),
    "stopping-an-array": _attr("early_stopping_", _array("<U3", ["off", "off"])),
}

ORDINAL_ATTRIBUTE_FORGERIES = {
    "cutpoints-nan": _attr("cutpoints_", _array("<f8", [float("nan")] * 3)),
    "cutpoints-decreasing": _attr("cutpoints_", _array("<f8", [1.0, 0.0, -1.0])),
    "cutpoints-short": _attr("cutpoints_", _array("<f8", [0.0, 1.0])),
    "cutpoints-not-the-tensors": _attr("cutpoints_", _array("<f8", [-9.0, 0.0, 9.0])),
    "classes-repeated": _attr("classes_", _array("<i8", [0, 1, 1, 3])),
}


@pytest.mark.parametrize("forgery", sorted(CLF_ATTRIBUTE_FORGERIES))
def test_forged_classifier_attributes_are_rejected(models, forgery):
    _, blob, _ = models["clf"]
    with pytest.raises(ValueError, match="not a valid cr_sklearn model file"):
        _load(_forge(blob, CLF_ATTRIBUTE_FORGERIES[forgery]))


@pytest.mark.parametrize("forgery", sorted(ORDINAL_ATTRIBUTE_FORGERIES))
def test_forged_ordinal_attributes_are_rejected(models, forgery):
    _, blob, _ = models["ordinal"]
    with pytest.raises(ValueError, match="not a valid cr_sklearn model file"):
        _load(_forge(blob, ORDINAL_ATTRIBUTE_FORGERIES[forgery]))


def test_ordinal_models_keep_a_user_given_class_order(ordinal_data, tmp_path):
    X, y = ordinal_data
    labels = np.array(["low", "mid", "high", "top"])
    reg = CROrdinalRegressor(**FAST, classes=list(labels)).fit(X, labels[y])
    path = tmp_path / "m.safetensors"
    save_model(reg, path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.classes_, labels)  # not sorted
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))


def test_a_saved_thread_count_loads_and_is_clamped_where_used(models, ordinal_data):
    _, blob, _ = models["ordinal"]
    loaded = _load(_forge(blob, _param("n_threads", 10**9)))
    assert loaded.n_threads == 10**9  # a model from a large machine loads
    X, y = ordinal_data
    with pytest.warns(UserWarning, match="n_threads=1000000000 is more than"):
        loaded.set_params(warm_start=True, max_iter=1).fit(X, y)
    assert np.isfinite(loaded.predict_proba(X)).all()


@pytest.mark.parametrize(
    "edit, match",
    [
        (_param("hidden_layer_sizes", _tuple(8.5)), "hidden_layer_sizes"),
        (_param("hidden_layer_sizes", _tuple(True)), "hidden_layer_sizes"),
        (
            _param("class_weight", {"__type__": "dict", "items": [["ant", -1.0]]}),
            "class_weight",
        ),
        (
            _param("class_weight", {"__type__": "dict", "items": [[0, 2.0]]}),
            "not in class_weight",
        ),
    ],
    ids=["float-width", "bool-width", "negative-class-weight", "unknown-class"],
)
def test_forged_parameters_are_rejected(models, edit, match):
    _, blob, _ = models["clf"]
    with pytest.raises(ValueError, match=match):
        _load(_forge(blob, edit))


# -- the input encoding ---------------------------------------------------------
def _tensor(key, values):
    """Overwrite tensor ``key``'s bytes with ``values`` (same dtype and size)."""

    def edit(blob):
        payload, table, data = _parts(blob)
        start, end = table[key]["data_offsets"]
        dtype = {"I64": "<i8", "F32": "<f4", "F64": "<f8"}[table[key]["dtype"]]
        raw = np.asarray(values, dtype=dtype).tobytes()
        assert len(raw) == end - start
        return _assemble(payload, table, data[:start] + raw + data[end:])

    return edit


def _encoding_tensor(models, key, change):
    """The encoded model's tensor ``module.encoding.<key>``, changed."""
    clf, _, _ = models["encoded"]
    values = getattr(clf.module_.encoding, key).numpy().copy()
    change(values)
    return _tensor(f"module.encoding.{key}", values)


def _in_format_3(edit):
    """A forgery of a format-3 file, whose parameters are those of the fit.

    From format 4 the parameters are the next fit's and the fitted plan
    describes the network: they may differ (``set_params`` after ``fit``).
    """

    def forged(payload):
        payload["format_version"] = 3
        del payload["plan"]
        edit(payload)

    return forged


def _auto_without(param):
    """A forgery: ``param="auto"`` without the value it resolved to."""

    def edit(p):
        p["params"][param] = "auto"
        p["attributes"].pop(param + "_")

    return lambda m: lambda b: _forge(b, edit)


ENCODING_FORGERIES = {
    "bins-without-width": (
        lambda m: lambda b: _forge(b, _attr("n_encoded_features_", None)),
        "disagree",
    ),
    "width-without-bins": (
        lambda m: (
            lambda b: _forge(
                b,
                lambda p: (
                    p["params"].update(encoding_bins="auto"),
                    _attr("encoding_bins_", None)(p),
                ),
            )
        ),
        "disagree",
    ),
    "resolved-bins-not-the-parameter": (
        lambda m: lambda b: _forge(b, _in_format_3(_param("encoding_bins", None))),
        "differs from encoding_bins",
    ),
    "resolved-dropout-not-the-parameter": (
        lambda m: lambda b: _forge(b, _in_format_3(_param("dropout", 0.5))),
        "differs from dropout",
    ),
    "auto-without-resolved-value": (_auto_without("dropout"), "without dropout_"),
    "dropout-out-of-range": (
        lambda m: (
            lambda b: _forge(
                b,
                lambda p: (
                    p["params"].update(dropout="auto"),
                    _attr("dropout_", 1.0)(p),
                ),
            )
        ),
        r"dropout_ must lie in \[0, 1\)",
    ),
    "auto-members-without-resolved-count": (
        _auto_without("n_members"),
        "n_members='auto' without n_members_",
    ),
    "member-count-not-a-count": (
        lambda m: lambda b: _forge(b, _attr("n_members_", 0)),
        "n_members_",
    ),
    "width-beyond-the-bins": (
        lambda m: lambda b: _forge(b, _attr("n_encoded_features_", 10**6)),
        "between n_features_in_",
    ),
    "reads-a-missing-column": (
        lambda m: _encoding_tensor(m, "source", lambda v: v.__setitem__(-1, 99)),
        "columns the input does not have",
    ),
    "reads-a-negative-column": (
        lambda m: _encoding_tensor(m, "source", lambda v: v.__setitem__(0, -1)),
        "columns the input does not have",
    ),
    "columns-out-of-order": (
        lambda m: _encoding_tensor(m, "source", lambda v: v.__setitem__(0, 3)),
        "not in input order",
    ),
    "negative-bin-width": (
        lambda m: _encoding_tensor(m, "inv_width", lambda v: v.__setitem__(0, -1.0)),
        "non-positive width",
    ),
    "zero-ramp-scale": (
        lambda m: _encoding_tensor(m, "ramp_gain", lambda v: v.__setitem__(0, 0.0)),
        "non-positive width or scale",
    ),
}


@pytest.mark.parametrize("forgery", sorted(ENCODING_FORGERIES))
def test_forged_encodings_are_rejected(models, forgery):
    _, blob, _ = models["encoded"]
    make, match = ENCODING_FORGERIES[forgery]
    with pytest.raises(ValueError, match=match):
        _load(make(models)(blob))


def test_a_file_from_before_encoding_bins_loads_without_encoding(multiclass_data):
    X, y = multiclass_data
    clf = CRClassifier(**{**FAST, "encoding_bins": None, "dropout": 0.1}).fit(X, y)
    buffer = io.BytesIO()
    save_model(clf, buffer)

    def older(payload):
        # What a file written before encoding_bins existed holds.
        payload["params"].pop("encoding_bins")
        for key in ("encoding_bins_", "dropout_", "n_encoded_features_"):
            payload["attributes"].pop(key)

    loaded = _load(_forge(buffer.getvalue(), older))
    assert loaded.encoding_bins is None and loaded.module_.encoding is None
    assert (loaded.encoding_bins_, loaded.dropout_) == (None, 0.1)
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


# -- permissions (item 6) ------------------------------------------------------
@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_save_model_gives_the_permissions_open_would(models, tmp_path, umask):
    clf, _, _ = models["clf"]
    previous = os.umask(umask)
    try:
        save_model(clf, tmp_path / "model.safetensors")
        with open(tmp_path / "plain.bin", "wb"):
            pass
    finally:
        os.umask(previous)
    mode = stat.S_IMODE(os.stat(tmp_path / "model.safetensors").st_mode)
    assert mode == stat.S_IMODE(os.stat(tmp_path / "plain.bin").st_mode)
    assert mode == 0o666 & ~umask
    # Replacing a file keeps its permissions, as writing into it would.
    os.chmod(tmp_path / "model.safetensors", 0o640)
    save_model(clf, tmp_path / "model.safetensors")
    assert stat.S_IMODE(os.stat(tmp_path / "model.safetensors").st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model.safetensors",
        "plain.bin",
    ]


def test_save_refuses_metadata_load_would_refuse(models, monkeypatch):
    import cr_sklearn._persistence as persistence

    clf, _, _ = models["clf"]
    monkeypatch.setattr(persistence, "MAX_HEADER_BYTES", 2000)
    buffer = io.BytesIO()
    with pytest.raises(ValueError, match="too large to save"):
        save_model(clf, buffer)
    assert buffer.getvalue() == b""


# -- memory: bounded by the file's size (items 1-3) ------------------------------
def _long_history(n_rows):
    """A history of ``n_rows`` epochs like fit writes: valid, and big."""

    def edit(payload):
        payload["history"] = payload["history"][-1:] * n_rows
        payload["attributes"].update(
            n_iter_=n_rows, loss_curve_=[0.5] * n_rows, best_epoch_=None
        )

    return edit


def _bombs(blob, ordinal_blob):
    """Forged files that made the unbounded loader allocate gigabytes."""
    payload, table, data = _parts(blob)
    many = {f"module.x{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
            for i in range(2000)}  # fmt: skip
    return {
        "hidden-1e9": _forge(blob, _plan("hidden", _tuple(10**9))),
        "hidden-5e7": _forge(blob, _plan("hidden", _tuple(5 * 10**7))),
        "features-1e9": _forge(blob, _attr("n_features_in_", 10**9)),
        "degree-1e9": _forge(blob, _plan("degree", 10**9)),
        "classes-1e5-width-1e4": _forge(
            blob,
            lambda p: (
                p["attributes"].update(classes_=_array("<i8", list(range(100_000)))),
                p["plan"].update(hidden=_tuple(10**4), n_outputs=100_000),
            ),
        ),
        "string-dtype-400x<U999999": _forge(
            blob,
            _attr("classes_", _array("<U999999", [f"c{i}" for i in range(400)])),
        ),
        "1000-layers": _assemble(
            {**payload, "plan": {**payload["plan"], "hidden": _tuple(*[1] * 999)}},
            {**table, **many},
            data,
        ),
        "list-bomb": _forge(blob, text="[" + "[]," * 1_300_000 + "[]]"),
        "long-history": _forge(ordinal_blob, _long_history(7000)),
        "nested": struct.pack("<Q", 10_000) + b"[" * 5000 + b"]" * 5000,
    }


_RSS_SCRIPT = textwrap.dedent(
    """
    import io, json, os, resource, signal, sys, warnings
    warnings.simplefilter("ignore")
    from cr_sklearn import load_model
    folder = sys.argv[1]
    names = sorted(os.listdir(folder))
    # Library start-up (torch's first ops, the meta device) is paid once,
    # on a valid file, before anything is measured.
    load_model(os.path.join(folder, "valid"))
    results = {}
    for name in names:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            signal.alarm(60)
            pages = int(open("/proc/self/statm").read().split()[1])
            before = pages * os.sysconf("SC_PAGE_SIZE")
            try:
                load_model(os.path.join(folder, name))
                outcome = "loaded"
            except ValueError:
                outcome = "ValueError"
            except BaseException as exc:
                outcome = type(exc).__name__
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            os.write(write, json.dumps([outcome, peak - before]).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            text = f.read()
        os.waitpid(pid, 0)
        results[name] = json.loads(text) if text else ["killed", None]
    print(json.dumps(results))
    """
)


@pytest.mark.skipif(
    not (sys.platform.startswith("linux") and hasattr(os, "mkfifo")),
    reason="measures RSS of forked children through /proc",
)
def test_memory_bombs_cost_at_most_three_times_their_size(models, tmp_path):
    _, blob, _ = models["clf"]
    _, ordinal_blob, _ = models["ordinal"]
    bombs = _bombs(blob, ordinal_blob)
    for name, data in bombs.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "valid").write_bytes(blob)
    # A large valid model: its own tensors, with no slack for start-up.
    X, y = models["clf"][2], models["clf"][0].predict(models["clf"][2])
    large = CRClassifier((2048, 2048), max_iter=1, random_state=0).fit(X, y)
    save_model(large, tmp_path / "large-valid")
    # Files that are not what they claim: read nothing, or only the header.
    with open(tmp_path / "1GiB-file", "wb") as f:
        f.write(blob)
        f.truncate(2**30)  # sparse
    (tmp_path / "symlink-to-dev-zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    sizes = {"1GiB-file": 2**30, "symlink-to-dev-zero": 0, "fifo": 0}
    bombs.update({name: b"" for name in sizes})
    done = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, str(tmp_path)],
        capture_output=True,
        cwd=ROOT,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    report = {}
    for name, data in bombs.items():
        outcome, growth = results[name]
        size = sizes.get(name, len(data))
        report[name] = (outcome, growth, size)
        # A long history is no bomb, only big: it loads, within the bound.
        assert outcome == ("loaded" if name == "long-history" else "ValueError"), (
            name,
            outcome,
        )
        assert growth < 50 * 2**20 + 3 * size, (name, growth / 2**20)
    assert results["valid"][0] == "loaded"
    outcome, growth = results["large-valid"]
    size = os.path.getsize(tmp_path / "large-valid")
    assert outcome == "loaded" and size > 30 * 2**20
    assert growth < 3.25 * size, growth / size  # "about three times"
    print(
        {
            k: (o, round(g / 2**20, 1), round(n / 2**20, 2))
            for k, (o, g, n) in report.items()
        }
    )


# -- the invariants of whatever loads (the hypothesis test) ---------------------
def _assert_like_a_save_model_output(model, X):
    """Every invariant a model returned by fit (and so by save_model) satisfies."""
    model._validate_params()
    hidden_sizes(model.hidden_layer_sizes)
    class_weights(model.class_weight, model.classes_)
    classes = model.classes_
    assert classes.ndim == 1 and len(classes) >= 2
    assert len(np.unique(classes)) == len(classes)
    if isinstance(model, CRClassifier):
        np.testing.assert_array_equal(np.unique(classes), classes)
        expected_outputs = 1 if len(classes) == 2 else len(classes)
    else:
        expected_outputs = 1
        cut = model.cutpoints_
        rows = () if model.n_members_ == 1 else (model.n_members_,)
        assert cut.shape == (*rows, len(classes) - 1) and np.isfinite(cut).all()
        assert (np.diff(cut) > 0).all()
    assert model.module_.n_outputs == expected_outputs
    d = model.n_features_in_
    encoding = model.module_.encoding
    assert (encoding is None) == (model.encoding_bins_ is None)
    if encoding is not None:
        assert encoding.n_encoded == model.n_encoded_features_
        assert 0 <= int(encoding.source.min()) <= int(encoding.source.max()) < d
        assert (encoding.inv_width > 0).all() and (encoding.ramp_gain > 0).all()
    assert model.input_mean_.shape == (d,) and np.isfinite(model.input_mean_).all()
    assert model.input_scale_.shape == (d,) and (model.input_scale_ > 0).all()
    for q in (model.gradient_norm_quantiles_, model.input_distance_quantiles_):
        assert q.shape == (101,) and np.isfinite(q).all() and (np.diff(q) >= 0).all()
    assert math.isfinite(model.gradient_norm_mean_) and model.gradient_norm_mean_ >= 0
    assert model.n_iter_ == len(model.loss_curve_) == len(model.net_.history)
    if hasattr(model, "feature_names_in_"):
        assert len(model.feature_names_in_) == d
    Xd = X[:, :d] if X.shape[1] >= d else np.zeros((len(X), d))
    for values in (model.predict_proba(Xd), model.input_distance(Xd)):
        assert np.isfinite(values).all()
    # inf only for a network flat on all its training data (documented).
    sensitivity = model.input_sensitivity(Xd)
    assert not np.isnan(sensitivity).any()
    assert model.gradient_norm_mean_ == 0 or np.isfinite(sensitivity).all()
    assert set(np.unique(model.predict(Xd))) <= set(classes.tolist())


def test_unmodified_files_satisfy_the_invariants(models):
    for _, blob, X in models.values():
        _assert_like_a_save_model_output(_load(blob), X)


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
)
_dtypes = st.sampled_from(
    ["<f8", "<f4", "<i8", "|i1", "|u1", "|b1", "<U3", "<U999999", "O", "<f3",
     "<M8[ns]", ">f8", 7, None]
)  # fmt: skip
_encoded = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.builds(
            lambda items: {"__type__": "tuple", "items": items},
            st.lists(inner, max_size=4),
        ),
        st.builds(
            lambda pairs: {"__type__": "dict", "items": pairs},
            st.lists(st.lists(inner, min_size=2, max_size=2), max_size=3),
        ),
        st.builds(
            lambda dtype, shape, data: {
                "__type__": "ndarray",
                "dtype": dtype,
                "shape": shape,
                "data": data,
            },
            _dtypes,
            st.lists(st.integers(-1, 2**65), max_size=2),
            st.lists(inner, max_size=6),
        ),  # fmt: skip
        st.builds(
            lambda dtype, value: {"__type__": "scalar", "dtype": dtype, "value": value},
            _dtypes,
            inner,
        ),
    ),
    max_leaves=12,
)


def _near(value):
    """Values close to a valid one: the same encoding with its data perturbed."""
    if isinstance(value, dict) and value.get("__type__") == "ndarray":
        data = value["data"]
        return st.one_of(
            st.just({**value, "data": data[::-1]}),
            st.just({**value, "data": data[:-1], "shape": [max(0, len(data) - 1)]}),
            st.just({**value, "data": data + data[-1:], "shape": [len(data) + 1]}),
            st.just({**value, "data": [data[0]] * len(data)}),
            st.builds(lambda x: {**value, "data": [x] * len(data)}, _scalars),
            st.builds(lambda dtype: {**value, "dtype": dtype}, _dtypes),
            st.builds(
                lambda factor: {**value, "data": [_scaled(x, factor) for x in data]},
                st.sampled_from([0.5, 2.0, -1.0, 0.0, 1e300]),
            ),
        )
    if isinstance(value, dict) and value.get("__type__") == "tuple":
        return st.builds(
            lambda items: {"__type__": "tuple", "items": items},
            st.lists(st.one_of(st.integers(-2, 10**10), _scalars), max_size=4),
        )
    # Plausible values of other parameters and attributes, valid or not here.
    return st.one_of(_scalars, st.sampled_from(_PLAUSIBLE))


_PLAUSIBLE = [1, 2, 10**9, 0.5, 1e-9, "exact", "auto", "coral", "mode", "residual",
              "relu", "local", "balanced", True, False, None, [], [0.5]]  # fmt: skip


def _scaled(x, factor):
    return x * factor if isinstance(x, float) else x


@st.composite
def _forgery(draw, blobs):
    kind = draw(st.sampled_from(sorted(blobs)))
    payload, table, data = _parts(blobs[kind])
    section = draw(st.sampled_from(["attributes", "params", "history", "tensor"]))
    if section == "history":
        payload["history"] = draw(
            st.one_of(_encoded, st.just(payload["history"][:1] * 3))
        )
    elif section == "tensor":
        key = draw(st.sampled_from(sorted(table)))
        entry = dict(table[key])
        field = draw(st.sampled_from(["shape", "dtype", "data_offsets"]))
        entry[field] = draw(
            st.one_of(
                st.lists(st.integers(-1, 2**70), max_size=3),
                st.sampled_from(["F64", "F16", "I64", "BOOL", "X9", 3]),
            )
        )
        table = {**table, key: entry}
    else:
        key = draw(st.sampled_from(sorted(payload[section])))
        value = payload[section][key]
        payload[section][key] = draw(st.one_of(_near(value), _encoded))
    return kind, _assemble(payload, table, data)


@pytest.mark.filterwarnings("ignore::UserWarning")
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_forged_metadata_raises_value_error_or_loads_a_valid_model(models, data):
    blobs = {name: blob for name, (_, blob, _) in models.items()}
    kind, forged = data.draw(_forgery(blobs))
    try:
        model = _load(forged)
    except ValueError:
        hypothesis.event("rejected")
        return
    hypothesis.event("loaded")
    _assert_like_a_save_model_output(model, models[kind][2])


def test_loading_is_quiet_for_unmodified_files(models):
    for _, blob, _ in models.values():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _load(blob)


# -- the fitted plan, feature names and the tensor table ------------------------
def test_repeated_feature_names_are_refused(models):
    # F9: fit refuses a table whose columns repeat a name; so does the loader.
    clf, blob, X = models["clf"]
    names = _attr("feature_names_in_", _array("O", ["a", "b", "a", "c"]))
    with pytest.raises(ValueError, match="feature_names_in_ repeats a name"):
        _load(_forge(blob, names))
    distinct = _load(
        _forge(blob, _attr("feature_names_in_", _array("O", list("abcd"))))
    )
    np.testing.assert_array_equal(distinct.predict_proba(X), clf.predict_proba(X))


def _pop(section, key):
    return lambda payload: payload[section].pop(key)


PLAN_FORGERIES = {
    "no-plan": (lambda p: p.pop("plan"), "fitted plan is missing"),
    "plan-a-list": (lambda p: p.update(plan=[1, 2]), "fitted plan is missing"),
    "unknown-field": (_plan("exec", "print(1)"), "unknown field 'exec'"),
    "device-field": (_plan("device", "cuda"), "unknown field 'device'"),
    "missing-field": (_pop("plan", "batch_size"), "lacks the fields"),
    "no-max-iter": (_pop("attributes", "max_iter_"), r"missing fitted attr"),
    "no-stopping": (_pop("attributes", "early_stopping_"), r"missing fitted attr"),
    "n-samples-zero": (_plan("n_samples", 0), "n_samples"),
    "n-samples-a-string": (_plan("n_samples", "200"), "n_samples"),
    "n-features": (_plan("n_features", 5), "n_features differs"),
    "n-outputs": (_plan("n_outputs", 7), "n_outputs"),
    "degree-zero": (_plan("degree", 0), "degree"),
    "activation": (_plan("activation", "os.system"), "activation"),
    "architecture": (_plan("architecture", "pickle"), "architecture"),
    "hidden-float": (_plan("hidden", _tuple(8.5)), "hidden_layer_sizes"),
    "hidden-zero": (_plan("hidden", _tuple(0)), "hidden_layer_sizes"),
    "dtype": (_plan("dtype", "float16"), "dtype"),
    "learning-rate-auto": (_plan("learning_rate", "auto"), "'auto'"),
    "learning-rate-inf": (_plan("learning_rate", float("inf")), "learning_rate"),
    "batch-size-auto": (_plan("batch_size", "auto"), "'auto'"),
    "tol-beyond-float": (_plan("tol", 10**400), "tol is not a finite number"),
    "betas-one": (_plan("betas", _tuple(0.9)), "betas must be a pair"),
    "betas-out-of-range": (_plan("betas", _tuple(0.9, 2.0)), "beta_2"),
    "dreg": (_plan("dreg", "exec"), "dreg"),
    "dreg-points": (_plan("dreg_points", "exec"), "dreg_points"),
    "head-of-a-classifier": (_plan("head", "coral"), "ordinal head"),
    "patience-zero": (_plan("patience", 0), "patience must be an integer"),
    "raw-patience-zero": (_plan("n_iter_no_change", 0), "n_iter_no_change"),
    # The network the plan describes must be the one the tensors hold.
    "wider": (_plan("hidden", _tuple(9)), "shape"),
    "deeper": (_plan("hidden", _tuple(8, 8)), "tensors do not match"),
    "more-coefficients": (_plan("degree", 4), "shape"),
    "fixed-activation": (_plan("activation", "relu"), "unexpected"),
    "double-training": (_plan("dtype", "float64"), None),
}


@pytest.mark.parametrize("forgery", sorted(PLAN_FORGERIES))
def test_forged_plans_are_refused(models, forgery):
    clf, blob, X = models["clf"]
    edit, match = PLAN_FORGERIES[forgery]
    if match is None:
        # The training dtype builds the same float64 network: it loads, and
        # trains on in float64.
        loaded = _load(_forge(blob, edit))
        np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
        assert str(loaded.net_.module_.output.weight.dtype) == "torch.float64"
        return
    with pytest.raises(ValueError, match="not a valid cr_sklearn model file") as exc:
        _load(_forge(blob, edit))
    assert exc.match(match)


def _table(edit):
    """A forgery of the tensor table (the header's entries), digest recomputed."""

    def forge(blob):
        payload, table, data = _parts(blob)
        table = json.loads(json.dumps(table))
        data = edit(table, data) or data
        return _assemble(payload, table, data)

    return forge


def _entry(key, **changes):
    return _table(lambda table, data: table[key].update(changes))


def _offsets(key, shift_start, shift_end):
    def edit(table, data):
        start, end = table[key]["data_offsets"]
        table[key]["data_offsets"] = [start + shift_start, end + shift_end]

    return _table(edit)


TABLE_FORGERIES = {
    "float-as-int": _entry("module.output.weight", dtype="I64"),
    "float-as-float32": _entry("module.output.bias", dtype="F32", shape=[6]),
    "transposed": _entry("module.hidden.0.weight", shape=[16, 8]),
    "flattened": _entry("module.output.weight", shape=[24]),
    "unknown-dtype": _entry("module.output.bias", dtype="F128"),
    "shape-negative": _entry("module.output.bias", shape=[-3]),
    "extra-field": _entry("module.output.bias", note="x"),
    "offsets-reversed": _entry("module.output.bias", data_offsets=[2072, 2048]),
    "overlap": _offsets("module.output.weight", -8, -8),
    "gap": _offsets("module.output.weight", 8, 8),
    "beyond-the-data": _offsets("module.encoding.ramp", 0, 8),
    "renamed": _table(
        lambda t, d: t.update({"module.output.weights": t.pop("module.output.weight")})
    ),
    "dropped-last": _table(lambda t, d: (t.pop("module.encoding.ramp"), d[:-16])[1]),
    "member-axis": _entry("module.output.weight", shape=[1, 3, 8]),
}


@pytest.mark.parametrize("forgery", sorted(TABLE_FORGERIES))
def test_forged_tensor_tables_are_refused(models, forgery):
    _, blob, _ = models["clf"]
    forged = TABLE_FORGERIES[forgery](blob)
    assert forged != blob
    with pytest.raises(ValueError, match="not a valid cr_sklearn model file"):
        _load(forged)


@pytest.mark.filterwarnings("ignore::UserWarning")
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_forged_plans_raise_value_error_or_load_a_valid_model(models, data):
    kind = data.draw(st.sampled_from(sorted(models)))
    payload, table, blob_data = _parts(models[kind][1])
    key = data.draw(st.sampled_from(sorted(payload["plan"])))
    value = payload["plan"][key]
    payload["plan"][key] = data.draw(st.one_of(_near(value), _encoded))
    try:
        model = _load(_assemble(payload, table, blob_data))
    except ValueError:
        hypothesis.event("rejected")
        return
    hypothesis.event("loaded")
    _assert_like_a_save_model_output(model, models[kind][2])


@pytest.mark.parametrize(
    "first, gaps",
    [([3e38], [3e38, 3e38]), ([-3e38], [0.0, 0.0])],
    ids=["gaps-beyond-float32", "first-at-the-bottom"],
)
def test_cut_points_are_read_from_the_tensors_and_checked(models, first, gaps):
    # cutpoints_ is no attribute of the file: the criterion's tensors
    # determine it, and loading refuses tensors whose cut-points are not
    # finite and strictly increasing.
    reg, blob, X = models["ordinal"]
    loaded = _load(blob)
    np.testing.assert_array_equal(loaded.cutpoints_, reg.cutpoints_)
    forged = _tensor("criterion.cutpoint_log_gaps", gaps)(
        _tensor("criterion.cutpoint_first", first)(blob)
    )
    with pytest.raises(ValueError, match="cut-points are not finite and strictly"):
        _load(forged)


def test_validation_scores_are_read_from_a_checked_history(models):
    # validation_scores_ is no attribute of the file: the history holds the
    # scores, and each must be a finite number.
    reg, blob, _ = models["ordinal"]
    assert reg.early_stopping_ == "hold-out" and reg.validation_scores_
    loaded = _load(blob)
    assert loaded.validation_scores_ == reg.validation_scores_
    assert loaded.best_validation_score_ == reg.best_validation_score_

    def not_a_number(payload):
        row = payload["history"][0]["items"]  # an encoded dict: [key, value] pairs
        assert any(key == "valid_score" for key, _ in row)
        for pair in row:
            if pair[0] == "valid_score":
                pair[1] = float("nan")

    with pytest.raises(ValueError, match="validation score in its history"):
        _load(_forge(blob, not_a_number))
    with pytest.raises(ValueError, match="is not allowed"):
        _load(_forge(blob, _attr("validation_scores_", [0.5])))
