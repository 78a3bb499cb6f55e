"""Safe model files: :func:`save_model` and :func:`load_model`.

They sit above the estimators: the record they write and read is
:mod:`._state`'s (the one pickling uses), and the file is
:mod:`._model_file`'s safetensors format.
"""

import json
import os
import struct
import warnings

import torch
from sklearn.utils.validation import check_is_fitted

from . import _model_file
from ._classifier import CRClassifier
from ._model_file import MAX_HEADER_BYTES, bad, decode, encode
from ._ordinal import CROrdinalRegressor
from ._state import FORMAT_VERSION, fitted_state, restore_state
from ._utils import import_optional, is_integer
from ._version import __version__

__all__ = ["load_model", "save_model"]

_FORMAT = "cr_sklearn.safe"
_METADATA_KEY = "cr_sklearn"
#: The classes a file may name: an explicit registry.
_ESTIMATORS = {cls.__name__: cls for cls in (CRClassifier, CROrdinalRegressor)}
# The parts of a record: its header, and the plain data (what errors call an entry).
_HEADER = ("format", "format_version", "estimator", "versions")
_PLAIN_PARTS = (
    ("params", "parameter"),
    ("attributes", "attribute"),
    ("plan", "plan field"),
)


def _safetensors():
    return import_optional(
        "safetensors.torch", extra="safe", purpose="save_model and load_model"
    )


def save_model(estimator, path):
    """Save a fitted CR estimator to a file that is safe to load.

    The file is a `safetensors <https://huggingface.co/docs/safetensors>`_
    file: the network's tensors as raw arrays and, in its metadata, a JSON
    document of the estimator's class, parameters (``get_params()``: those
    of the next fit, which may differ from the fitted ones), fitted
    attributes, the fitted plan (``plan_``: it describes the network),
    training history (one row per epoch, without skorch's per-batch
    entries), a format version, the versions of cr_sklearn,
    scikit-learn, torch and numpy that wrote it, and a SHA-256 digest of the
    content. The optimizer's state (Adam moments) is not saved:
    ``warm_start`` or ``partial_fit`` after loading continue from the saved
    weights with a fresh optimizer, at the fitted plan's learning rate.

    Parameters
    ----------
    estimator : fitted CRClassifier or CROrdinalRegressor
        Any fitted cr_sklearn CR estimator (``architecture="mlp"`` or
        ``"residual"``, also after :mod:`cr_sklearn.growth` changed it).
    path : str, path-like or binary file object
        Destination file, conventionally ``*.safetensors``. A path is
        written atomically (an existing file is replaced only once the new
        one is complete) with the permissions ``open(path, "w")`` would give
        it: those of the file it replaces, else the umask's. A file object
        opened for binary writing receives the bytes.

    Raises
    ------
    TypeError
        If ``estimator`` is not a cr_sklearn CR estimator (for a pipeline,
        save its CR step), or a parameter or attribute is not plain data
        (e.g. ``callbacks`` objects or a ``numpy.random.RandomState`` as
        ``random_state``).
    ValueError
        If the model's metadata would exceed what :func:`load_model` reads
        (see its Notes), or ``path`` is a symbolic link; no file is written
        then.
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.

    See Also
    --------
    load_model : Load the file back, executing no code (unlike pickle, joblib).

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
    if hasattr(estimator, "steps") and isinstance(estimator.steps, list):
        # A Pipeline: its other steps are objects this format cannot hold safely.
        raise TypeError(
            "save_model saves one CR estimator, not a "
            f"{type(estimator).__name__}: save its CR step "
            "(save_model(pipeline[-1], path)) and rebuild the other steps in "
            "code, or save the whole pipeline with skops.io (trusting the CR "
            "estimator's class, see the persistence guide); joblib.dump also "
            "saves it, for files only ever loaded by you (joblib runs code "
            "from the file)."
        )
    if type(estimator).__name__ not in _ESTIMATORS or not hasattr(estimator, "_fit"):
        raise TypeError(
            "save_model saves cr_sklearn's CR estimators (CRClassifier, "
            f"CROrdinalRegressor); got {type(estimator).__name__}."
        )
    check_is_fitted(estimator, "module_")
    state = fitted_state(estimator)
    payload = {k: state[k] for k in _HEADER}
    for part, what in _PLAIN_PARTS:
        payload[part] = {k: encode(v, f"{what} {k}") for k, v in state[part].items()}
    payload["history"] = encode(state["history"], "net_.history")
    payload = json.dumps(payload)
    tensors = {k: torch.from_numpy(v) for k, v in state["tensors"].items()}
    # The tensor data section does not depend on the metadata: hash it from
    # a first serialisation, then write the digest next to the payload.
    draft = save_tensors(tensors, metadata={_METADATA_KEY: payload})
    (n_header,) = struct.unpack("<Q", draft[:8])
    # What load_model would refuse is not written (the digest adds < 100 B).
    if (
        n_header > MAX_HEADER_BYTES - 100
        or _model_file.parse_cost(draft[8 : 8 + n_header])
        > _model_file.MAX_PARSE_COST - 10_000
    ):
        raise ValueError(
            f"The model's metadata is too large to save ({n_header / 2**20:.1f} "
            f"MiB, with a history of {len(state['history'])} epochs): load_model "
            f"reads at most {MAX_HEADER_BYTES // 2**20} MiB of metadata. Fit "
            "with fewer epochs or fewer partial_fit calls (warm_start=False "
            "starts a new history) before saving."
        )
    sha256 = _model_file.digest(payload, draft[8 + n_header :])
    blob = _model_file.sorted_metadata(
        save_tensors(tensors, metadata={_METADATA_KEY: payload, "sha256": sha256})
    )
    if hasattr(path, "write"):
        path.write(blob)
    elif os.path.islink(path):
        # Replacing the file atomically would replace the link itself, and
        # following it would write wherever the link points.
        raise ValueError(
            f"{os.fspath(path)!r} is a symbolic link (to {os.readlink(path)!r}): "
            "save_model does not replace or follow links; save to the link's "
            "target or another path."
        )
    else:
        _model_file.write_atomically(blob, path)


def load_model(path, *, device="cpu"):
    """Load an estimator saved by :func:`save_model`, executing no code.

    The file is parsed as JSON and raw tensor bytes only (never pickle or
    ``torch.load``), through a bounded reader, and everything in it is
    checked before a network is built, as the :ref:`persistence` guide
    details: the file (a regular file or a binary file object, a header of
    at most 4 MiB, a tensor table that tiles the data, a SHA-256 digest),
    the estimator class and its parameters (validated as in ``fit``), each
    fitted attribute's type, dtype and shape, the fitted plan, and the
    tensors: exactly those of the network the fitted plan describes, all
    finite.

    Parameters
    ----------
    path : str, path-like or binary file object
        A file written by :func:`save_model`, or an object with a
        ``read`` method (opened in binary mode) positioned at its start.
    device : str, default="cpu"
        Device for the loaded network (sets ``device_``).

    Returns
    -------
    estimator : CRClassifier or CROrdinalRegressor
        The fitted estimator; its predictions equal the saved one's.

    Raises
    ------
    ValueError
        If a check above fails (the file is modified or truncated, names an
        unknown estimator, ...) or its format version is newer: every
        malformed input raises this (a subclass of it), never another type.
    OSError
        If ``path`` cannot be opened (e.g. it does not exist).

    Warns
    -----
    UserWarning
        If the file was written by another cr_sklearn version, or in format
        version 1 by a model without an input encoding (its gradient-norm
        summaries measured ``X`` in raw units; predictions are unaffected).

    See Also
    --------
    save_model : Write such a file.

    Notes
    -----
    Memory: loading a file makes the process grow by at most about three
    times the file's size plus a few tens of megabytes, whatever the file
    claims (its header is read before any data, and no network larger than
    the tensors in the file is ever built).

    The digest detects corruption and careless edits, not a deliberate
    forgery (anyone can recompute it): loading is safe by the format and
    the checks, which read plain data only and size nothing by a claim the
    file cannot back.

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
    _safetensors()  # the optional dependency, for a clear ImportError
    name, header, table, data = _model_file.read_model_file(path)
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or _METADATA_KEY not in metadata:
        raise bad(name, "it has no cr_sklearn metadata")
    text = metadata[_METADATA_KEY]
    sha256 = _model_file.digest(text, data) if isinstance(text, str) else None
    if sha256 is None or metadata.get("sha256") != sha256:
        raise bad(name, "its SHA-256 digest does not match: it was modified")
    del header, metadata
    payload = _model_file.parse_json(text, name, "metadata")
    del text
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise bad(name, "unknown format")
    cls_name = payload.get("estimator")
    if not isinstance(cls_name, str) or cls_name not in _ESTIMATORS:
        raise bad(name, f"unknown estimator class {cls_name!r:.80}")
    cls = _ESTIMATORS[cls_name]
    version, versions = payload.get("format_version"), payload.get("versions")
    if is_integer(version) and 1 <= version <= FORMAT_VERSION:
        if not isinstance(versions, dict):
            raise bad(name, "missing version information")
        if versions.get("cr_sklearn") != __version__:
            warnings.warn(
                f"{name!r} was saved with cr_sklearn "
                f"{str(versions.get('cr_sklearn')):.40}, this is {__version__}. "
                "The parameters and weights were checked against this "
                "version's network, but predictions may differ; refit the "
                "model if they matter.",
                UserWarning,
                stacklevel=2,
            )
    state = {"format_version": version, "estimator": cls_name}
    state["history"] = history = payload.get("history")
    if isinstance(history, list):
        for i, encoded in enumerate(history):
            # Decoded in place, so the encoded and decoded forms of the whole
            # history never coexist in memory.
            history[i] = decode(encoded, name)
    for part, _ in _PLAIN_PARTS:
        if isinstance(raw := payload.get(part), dict):
            state[part] = {k: decode(v, name) for k, v in raw.items()}
    if isinstance(state.get("params"), dict) and state["params"].get("callbacks"):
        raise bad(name, "it lists callbacks: callback objects are never loaded")
    del payload
    tensors = table, lambda key: _model_file.tensor_view(data, table[key], key, name)
    return restore_state(cls.__new__(cls), state, name, device=device, tensors=tensors)
