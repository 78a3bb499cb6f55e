"""Safe persistence of fitted CR estimators: safetensors weights + JSON.

``save_model`` writes one ``.safetensors`` file: the network's (and the
loss's) tensors, and in the file's metadata a JSON document with the
estimator's class name, parameters, fitted attributes, training history and
the versions that wrote it. ``load_model`` reads it back without pickle or
``torch.load``: it parses JSON and raw tensor bytes, rebuilds the network from
the parameters and checks that every tensor matches it by name, shape and
dtype. No code from the file is ever executed.
"""

import hashlib
import json
import numbers
import os
import re
import struct
import tempfile
import warnings
from pathlib import Path

import numpy as np
import sklearn
import torch
from sklearn.utils.validation import check_is_fitted
from skorch.history import History

from ._base import BaseCR
from ._classifier import CRClassifier
from ._net_state import MODEL_PARTS, model_state
from ._ordinal import CROrdinalRegressor
from ._summaries import STREAM_ATTRIBUTES
from ._utils import import_optional, resolve_device
from ._version import __version__

__all__ = ["load_model", "save_model"]

_FORMAT = "cr_sklearn.safe"
_FORMAT_VERSION = 1
_METADATA_KEY = "cr_sklearn"
# Rebuilt on load from the parameters and the tensors, never read as data.
# The running partial_fit summaries are not saved: a loaded model starts anew.
_DERIVED = frozenset(
    {"net_", "module_", "_inference_module", "_built_network_params"}
    | set(STREAM_ATTRIBUTES)
)
#: The estimator classes a model file may name (an explicit list: a file
#: names a class, and only these are ever instantiated).
ESTIMATORS = {cls.__name__: cls for cls in (CRClassifier, CROrdinalRegressor)}
# Safetensors caps its JSON header at 100 MB; a longer claim is corrupt.
_MAX_HEADER_BYTES = 100_000_000
_SCALAR_KINDS = "biufU"
_ATTRIBUTE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _FormatError(ValueError):
    """A file that is not a valid, untampered cr_sklearn model file."""


def _bad(path, reason):
    return _FormatError(
        f"{os.fspath(path)!r} is not a valid cr_sklearn model file: {reason}"
    )


# -- a JSON codec for plain data only ----------------------------------------
def _encode(value, where):
    """Plain data -> JSON-able; anything else is a TypeError naming ``where``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic):
        if value.dtype.kind not in _SCALAR_KINDS:
            raise _unsafe(where, value)
        return {"__type__": "scalar", "dtype": value.dtype.str, "value": value.item()}
    if type(value) in (int, float):
        return value
    if isinstance(value, tuple):
        items = [_encode(v, where) for v in value]
        return {"__type__": "tuple", "items": items}
    if isinstance(value, list):
        return [_encode(v, where) for v in value]
    if isinstance(value, dict):
        items = [[_encode(k, where), _encode(v, where)] for k, v in value.items()]
        return {"__type__": "dict", "items": items}
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
        if kind in _SCALAR_KINDS:
            data, dtype = value.ravel().tolist(), value.dtype.str
        elif kind == "O":
            data, dtype = [_encode_object_item(v, where) for v in value.ravel()], "O"
        else:
            raise _unsafe(where, value)
        return {
            "__type__": "ndarray",
            "dtype": dtype,
            "shape": list(value.shape),
            "data": data,
        }
    raise _unsafe(where, value)


def _encode_object_item(value, where):
    if isinstance(value, np.generic) or type(value) in (int, float, bool, str):
        return _encode(value, where)
    if value is None:
        return None
    raise _unsafe(where, value)


def _unsafe(where, value):
    return TypeError(
        f"{where} = {value!r:.80} (type {type(value).__name__}) cannot be saved "
        "safely: save_model stores plain data only (None, bool, int, float, "
        "str, lists, tuples, dicts and numeric or string numpy arrays)."
    )


def _decode(value, path):
    """Inverse of :func:`_encode`; rejects anything it did not produce."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [_decode(v, path) for v in value]
    if not isinstance(value, dict):
        raise _bad(path, f"unexpected JSON value {value!r:.80}")
    kind = value.get("__type__")
    if kind == "tuple" and set(value) == {"__type__", "items"}:
        return tuple(_decode(v, path) for v in _as_list(value["items"], path))
    if kind == "dict" and set(value) == {"__type__", "items"}:
        pairs = _as_list(value["items"], path)
        if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise _bad(path, "malformed dict entry")
        return {_decode(k, path): _decode(v, path) for k, v in pairs}
    if kind == "scalar" and set(value) == {"__type__", "dtype", "value"}:
        dtype = _dtype(value["dtype"], path, allow_object=False)
        return dtype.type(value["value"])
    if kind == "ndarray" and set(value) == {"__type__", "dtype", "shape", "data"}:
        return _decode_array(value, path)
    raise _bad(path, f"unknown encoded value {value!r:.80}")


def _as_list(value, path):
    if not isinstance(value, list):
        raise _bad(path, f"expected a list, got {value!r:.80}")
    return value


def _dtype(spec, path, *, allow_object):
    if allow_object and spec == "O":
        return np.dtype(object)
    if not isinstance(spec, str) or not re.fullmatch(r"[<>|=][biufU]\d{1,6}", spec):
        raise _bad(path, f"unsupported dtype {spec!r:.40}")
    return np.dtype(spec)


def _decode_array(value, path):
    dtype = _dtype(value["dtype"], path, allow_object=True)
    shape = _as_list(value["shape"], path)
    if not all(type(s) is int and s >= 0 for s in shape):
        raise _bad(path, f"invalid array shape {shape!r:.80}")
    data = _as_list(value["data"], path)
    if len(data) != int(np.prod(shape, dtype=np.int64)):
        raise _bad(path, "array data does not match its shape")
    if dtype.kind == "O":
        array = np.empty(len(data), dtype=object)
        for i, item in enumerate(data):
            item = _decode(item, path)
            if not (item is None or isinstance(item, (bool, int, float, str))):
                raise _bad(path, "object arrays may only hold scalars")
            array[i] = item
        return array.reshape(shape)
    try:
        return np.array(data, dtype=dtype).reshape(shape)
    except (TypeError, ValueError, OverflowError) as exc:
        raise _bad(path, f"array data does not match dtype {dtype}: {exc}") from None


# -- file layout -------------------------------------------------------------
def _digest(payload, data):
    """SHA-256 over the JSON document and the raw tensor bytes."""
    h = hashlib.sha256()
    h.update(payload.encode("utf-8"))
    h.update(data)
    return h.hexdigest()


def _split_file(blob, path):
    """``(header dict, tensor data bytes)`` of a safetensors byte string."""
    if len(blob) < 8:
        raise _bad(path, "the file is too short")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > min(_MAX_HEADER_BYTES, len(blob) - 8):
        raise _bad(path, "the header length is invalid")
    try:
        header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(path, f"the header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _bad(path, "the header is not a JSON object")
    return header, blob[8 + n :]


def _versions():
    return {
        "cr_sklearn": __version__,
        "scikit-learn": sklearn.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
    }


def _safetensors():
    return import_optional(
        "safetensors.torch", extra="safe", purpose="save_model and load_model"
    )


def _tensor_dict(prefix, state):
    return {
        f"{prefix}.{k}": v.detach().to("cpu").contiguous().clone()
        for k, v in state.items()
    }


def save_model(estimator, path):
    """Save a fitted CR estimator to a file that is safe to load.

    The file is a `safetensors <https://huggingface.co/docs/safetensors>`_
    file: the network's tensors as raw arrays, and in its metadata a JSON
    document with the estimator's class, parameters (``get_params()``),
    fitted attributes, training history, a format version, the versions of
    cr_sklearn, scikit-learn, torch and numpy that wrote it, and a SHA-256
    digest of the content. Loading it (:func:`load_model`) executes no code
    from the file, unlike pickle or joblib.

    The optimizer's state (Adam moments) is not saved: ``warm_start`` or
    ``partial_fit`` after loading continue from the saved weights with a
    fresh optimizer.

    Parameters
    ----------
    estimator : fitted CRClassifier or CROrdinalRegressor
        Any fitted cr_sklearn CR estimator (``architecture="mlp"`` or
        ``"residual"``, also after :mod:`cr_sklearn.growth` changed it).
    path : str or path-like
        Destination file, conventionally ``*.safetensors``. Written
        atomically: an existing file is replaced only once the new one is
        complete.

    Raises
    ------
    TypeError
        If ``estimator`` is not a cr_sklearn CR estimator, or a parameter or
        attribute is not plain data (e.g. ``callbacks`` objects or a
        ``numpy.random.RandomState`` as ``random_state``).
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.

    See Also
    --------
    load_model : Load the file back.

    Examples
    --------
    >>> import tempfile, os
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from cr_sklearn import CRClassifier, load_model, save_model
    >>> X, y = make_classification(n_samples=100, random_state=0)
    >>> clf = CRClassifier((8,), max_iter=5, random_state=0).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "model.safetensors")
    ...     save_model(clf, path)
    ...     loaded = load_model(path)
    >>> bool(np.array_equal(loaded.predict_proba(X), clf.predict_proba(X)))
    True
    """
    save_tensors = _safetensors().save
    if not isinstance(estimator, BaseCR):
        raise TypeError(
            "save_model saves cr_sklearn's CR estimators (CRClassifier, "
            f"CROrdinalRegressor); got {type(estimator).__name__}."
        )
    check_is_fitted(estimator, "net_")
    params = estimator.get_params(deep=False)
    encoded_params = {k: _encode(v, f"parameter {k}") for k, v in params.items()}
    attributes = {
        name: _encode(value, f"attribute {name}")
        for name, value in vars(estimator).items()
        if name not in params and name not in _DERIVED
    }
    net = estimator.net_
    history = _encode([dict(row) for row in net.history], "net_.history")
    tensors = {}
    for part, state in model_state(net).items():
        tensors.update(_tensor_dict(part, state))
    payload = json.dumps(
        {
            "format": _FORMAT,
            "format_version": _FORMAT_VERSION,
            "estimator": type(estimator).__name__,
            "versions": _versions(),
            "params": encoded_params,
            "attributes": attributes,
            "history": history,
        }
    )
    # The tensor data section does not depend on the metadata: hash it from
    # a first serialisation, then write the digest next to the payload.
    draft = save_tensors(tensors, metadata={_METADATA_KEY: payload})
    data = _split_file(draft, path)[1]
    metadata = {_METADATA_KEY: payload, "sha256": _digest(payload, data)}
    blob = save_tensors(tensors, metadata=metadata)
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _estimator_class(name, path):
    if not isinstance(name, str) or name not in ESTIMATORS:
        raise _bad(path, f"unknown estimator class {name!r:.80}")
    return ESTIMATORS[name]


def _check_versions(versions, path):
    if not isinstance(versions, dict):
        raise _bad(path, "missing version information")
    saved = versions.get("cr_sklearn")
    if saved != __version__:
        warnings.warn(
            f"{os.fspath(path)!r} was saved with cr_sklearn {saved}, this is "
            f"{__version__}. The parameters and weights were checked against "
            "this version's network, but predictions may differ; refit the "
            "model if they matter.",
            UserWarning,
            stacklevel=3,
        )


def _load_state(module, tensors, prefix, path):
    """Load ``prefix.*`` tensors into ``module``, names/shapes/dtypes checked."""
    expected = module.state_dict()
    given = {
        k[len(prefix) + 1 :]: v
        for k, v in tensors.items()
        if k.startswith(prefix + ".")
    }
    missing = sorted(set(expected) - set(given))
    unexpected = sorted(set(given) - set(expected))
    if missing or unexpected:
        raise _bad(
            path,
            f"its {prefix} tensors do not match the network its parameters "
            f"describe (missing {missing[:5]}, unexpected {unexpected[:5]})",
        )
    for name, ref in expected.items():
        t = given[name]
        if t.shape != ref.shape or t.dtype != ref.dtype:
            raise _bad(
                path,
                f"tensor {prefix}.{name} has shape {tuple(t.shape)} and dtype "
                f"{t.dtype}; the network needs {tuple(ref.shape)} and {ref.dtype}",
            )
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise _bad(path, f"tensor {prefix}.{name} holds non-finite values")
    module.load_state_dict({k: given[k] for k in expected}, strict=True)


def load_model(path, *, device="cpu"):
    """Load an estimator saved by :func:`save_model`, executing no code.

    The file is parsed as JSON and raw tensor bytes only (never pickle or
    ``torch.load``). The estimator class must be one of cr_sklearn's CR
    estimators; its parameters are validated like in ``fit``; the network is
    rebuilt from them and every saved tensor must match it by name, shape and
    dtype; attributes may not shadow methods; a SHA-256 digest detects
    modified or truncated files.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save_model`.
    device : str, default="cpu"
        Device for the loaded network (sets ``device_``).

    Returns
    -------
    estimator : CRClassifier or CROrdinalRegressor
        The fitted estimator; its predictions equal the saved one's.

    Raises
    ------
    ValueError
        If the file is not a cr_sklearn model file, was modified or
        truncated, has a newer format version, names an unknown estimator,
        or holds invalid parameters, attributes or tensors.

    Warns
    -----
    UserWarning
        If the file was written by another cr_sklearn version.

    See Also
    --------
    save_model : Write such a file.

    Notes
    -----
    The digest detects corruption and careless edits, not a deliberate
    forgery (anyone can recompute it). What makes loading safe is the
    format: plain data is read and checked, nothing is executed.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn.datasets import make_classification
    >>> from cr_sklearn import CROrdinalRegressor, load_model, save_model
    >>> X, y = make_classification(
    ...     n_samples=100, n_classes=3, n_informative=4, random_state=0)
    >>> model = CROrdinalRegressor((8,), max_iter=5, random_state=0).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "ordinal.safetensors")
    ...     save_model(model, path)
    ...     loaded = load_model(path)
    >>> loaded.classes_
    array([0, 1, 2])
    """
    load_tensors = _safetensors().load

    blob = Path(path).read_bytes()
    header, data = _split_file(blob, path)
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or _METADATA_KEY not in metadata:
        raise _bad(path, "it has no cr_sklearn metadata")
    payload_text = metadata[_METADATA_KEY]
    if not isinstance(payload_text, str) or metadata.get("sha256") != _digest(
        payload_text, data
    ):
        raise _bad(path, "its SHA-256 digest does not match: it was modified")
    try:
        payload = json.loads(payload_text)
    except json.JSONDecodeError as exc:
        raise _bad(path, f"its metadata is not JSON ({exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise _bad(path, "unknown format")
    version = payload.get("format_version")
    if not isinstance(version, numbers.Integral) or version > _FORMAT_VERSION:
        raise ValueError(
            f"{os.fspath(path)!r} uses model format version {version!r}; this "
            f"cr_sklearn reads versions up to {_FORMAT_VERSION}. Upgrade cr_sklearn."
        )
    _check_versions(payload.get("versions"), path)
    cls = _estimator_class(payload.get("estimator"), path)

    raw_params = payload.get("params")
    if not isinstance(raw_params, dict):
        raise _bad(path, "missing parameters")
    params = {k: _decode(v, path) for k, v in raw_params.items()}
    estimator = cls()
    valid = set(estimator.get_params(deep=False))
    if set(params) != valid:
        raise ValueError(
            f"{os.fspath(path)!r} has parameters that do not match "
            f"{cls.__name__} in this cr_sklearn version: unknown "
            f"{sorted(set(params) - valid)}, missing {sorted(valid - set(params))}."
        )
    if params.get("callbacks"):
        raise _bad(path, "it lists callbacks: callback objects are never loaded")
    estimator.set_params(**params)
    estimator._validate_params()

    raw_attributes = payload.get("attributes")
    if not isinstance(raw_attributes, dict) or "n_features_in_" not in raw_attributes:
        raise _bad(path, "missing fitted attributes")
    for name, value in raw_attributes.items():
        if (
            not _ATTRIBUTE_NAME.match(name)
            or name.startswith("__")
            or name in valid
            or name in _DERIVED
            or hasattr(cls, name)
        ):
            raise _bad(path, f"attribute name {name!r:.80} is not allowed")
        setattr(estimator, name, _decode(value, path))
    n_features = estimator.n_features_in_
    if type(n_features) is not int or n_features < 1:
        raise _bad(path, f"invalid n_features_in_ {n_features!r:.40}")
    estimator.device_ = resolve_device(device)

    try:
        tensors = load_tensors(blob)
    except Exception as exc:  # safetensors raises its own error type
        raise _bad(path, f"its tensors cannot be read ({exc})") from None
    try:
        net = estimator._rebuild_net()
    except (AttributeError, TypeError, ValueError, IndexError) as exc:
        raise _bad(path, f"its attributes cannot rebuild the network ({exc})") from None
    for part in MODEL_PARTS:
        _load_state(getattr(net, part + "_"), tensors, part, path)
    net.history = History(_decode(payload.get("history") or [], path))
    estimator._set_net(net)
    return estimator
