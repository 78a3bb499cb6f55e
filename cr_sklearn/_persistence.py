"""The fitted state of a CR estimator as plain data, and safe files of it.

A fitted estimator's state is plain data: its parameters, its fitted
attributes (numbers, strings, lists, numpy arrays), its training history
and its tensors (the float64 network ``module_`` and the loss's, as numpy
arrays). :func:`fitted_state` makes it and :func:`restore_state` checks it,
every part, before anything is built from it, then rebuilds the estimator.
The estimators' ``__getstate__``/``__setstate__`` go through them (pickle,
``copy.deepcopy``, joblib, and skops, which then needs to trust only the
estimator's class); ``save_model`` writes the same state as one
``.safetensors`` file (the tensors as raw arrays, the rest as JSON in its
metadata) and ``load_model`` reads it back without pickle or
``torch.load``, through a bounded reader. No code from a file is ever
executed, and the memory a file can make the loader use is bounded by the
file's size.
"""

import dataclasses
import json
import math
import os
import struct
import warnings

import numpy as np
import sklearn
import torch
from sklearn.utils.validation import check_is_fitted
from skorch.history import History

from . import _networks
from ._fit import class_weight_of, rebuild_net
from ._model_file import (
    MAX_HEADER_BYTES,
    MAX_PARSE_COST,
    TENSOR_DTYPES,
    TORCH_DTYPE_NAMES,
    bad,
    decode,
    digest,
    encode,
    is_int,
    is_real,
    parse_cost,
    parse_json,
    read_model_file,
    tensor_view,
    write_atomically,
)
from ._plan import hidden_sizes, resolve_plan
from ._predict import PATHS
from ._summaries import STREAM_ATTRIBUTES
from ._utils import import_optional, resolve_device
from ._version import __version__

__all__ = ["fitted_state", "load_model", "restore_state", "save_model"]

_FORMAT = "cr_sklearn.safe"
# 2: without an input encoding, the gradient-norm summaries measure each
# column of X in units of its training standard deviation; in version 1 they
# were by X in raw units (with an encoding, by the encoded columns in both).
# 3: the tensors are the float64 network predictions come from (in 1 and 2,
# the float32 network that trained, transform included).
_FORMAT_VERSION = 3
_METADATA_KEY = "cr_sklearn"
# Rebuilt from the parameters, the attributes and the tensors, never read as
# data. The running partial_fit summaries are not saved: a loaded model
# starts anew.
_DERIVED = frozenset({"net_", "module_", "_plan", "_built"} | set(STREAM_ATTRIBUTES))
#: The parts of the state whose tensors define the fitted model.
MODEL_PARTS = ("module", "criterion")


def _estimators():
    """The estimator classes a state may name: an explicit list."""
    from ._classifier import CRClassifier
    from ._ordinal import CROrdinalRegressor

    return {cls.__name__: cls for cls in (CRClassifier, CROrdinalRegressor)}


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


def _history_rows(history):
    """The per-epoch rows of a skorch history, as plain Python scalars.

    The per-batch entries are left out (kept as an empty ``batches`` list):
    their number grows with the data, and nothing after a fit reads them.
    """
    rows = []
    for row in history:
        rows.append(
            {
                key: [] if key == "batches" else _plain_scalar(value)
                for key, value in row.items()
            }
        )
    return rows


def _plain_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


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
    fresh optimizer. The training history keeps one row per epoch; the
    per-batch entries of skorch's history are not saved.

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
        save its CR step), or a parameter or
        attribute is not plain data (e.g. ``callbacks`` objects or a
        ``numpy.random.RandomState`` as ``random_state``).
    ValueError
        If the model's metadata would exceed what :func:`load_model` reads
        (see its Notes), or ``path`` is a symbolic link; no file is written
        then.
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
    if hasattr(estimator, "steps") and isinstance(estimator.steps, list):
        # A Pipeline (or a pipeline-like composite): its other steps are
        # arbitrary objects that this format cannot hold safely.
        raise TypeError(
            "save_model saves one CR estimator, not a "
            f"{type(estimator).__name__}: save its CR step "
            "(save_model(pipeline[-1], path)) and rebuild the other steps in "
            "code, or save the whole pipeline with skops.io (trusting the CR "
            "estimator's class, see the persistence guide); joblib.dump also "
            "saves it, for files only ever loaded by you (joblib runs code "
            "from the file)."
        )
    if type(estimator).__name__ not in _estimators() or not hasattr(estimator, "_fit"):
        raise TypeError(
            "save_model saves cr_sklearn's CR estimators (CRClassifier, "
            f"CROrdinalRegressor); got {type(estimator).__name__}."
        )
    check_is_fitted(estimator, "module_")
    state = fitted_state(estimator)
    encoded_params = {
        k: encode(v, f"parameter {k}") for k, v in state["params"].items()
    }
    attributes = {
        name: encode(value, f"attribute {name}")
        for name, value in state["attributes"].items()
    }
    history = encode(state["history"], "net_.history")
    tensors = {k: torch.from_numpy(v) for k, v in state["tensors"].items()}
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
    n_epochs = len(state["history"])
    # The tensor data section does not depend on the metadata: hash it from
    # a first serialisation, then write the digest next to the payload.
    draft = save_tensors(tensors, metadata={_METADATA_KEY: payload})
    (n_header,) = struct.unpack("<Q", draft[:8])
    # What load_model would refuse is not written (the digest adds < 100 B).
    if (
        n_header > MAX_HEADER_BYTES - 100
        or parse_cost(draft[8 : 8 + n_header]) > MAX_PARSE_COST - 10_000
    ):
        raise ValueError(
            f"The model's metadata is too large to save ({n_header / 2**20:.1f} "
            f"MiB, with a history of {n_epochs} epochs): load_model "
            f"reads at most {MAX_HEADER_BYTES // 2**20} MiB of metadata. Fit "
            "with fewer epochs or fewer partial_fit calls (warm_start=False "
            "starts a new history) before saving."
        )
    data = draft[8 + n_header :]
    metadata = {_METADATA_KEY: payload, "sha256": digest(payload, data)}
    blob = save_tensors(tensors, metadata=metadata)
    if hasattr(path, "write"):
        path.write(blob)
    else:
        if os.path.islink(path):
            # Replacing the file atomically would replace the link itself,
            # and following it would write wherever the link points.
            raise ValueError(
                f"{os.fspath(path)!r} is a symbolic link (to "
                f"{os.readlink(path)!r}): save_model does not replace or "
                "follow links; save to the link's target or another path."
            )
        write_atomically(blob, path)


# -- loading -----------------------------------------------------------------
def _estimator_class(value, name):
    estimators = _estimators()
    if not isinstance(value, str) or value not in estimators:
        raise bad(name, f"unknown estimator class {value!r:.80}")
    return estimators[value]


def _check_versions(versions, name):
    if not isinstance(versions, dict):
        raise bad(name, "missing version information")
    saved = versions.get("cr_sklearn")
    if saved != __version__:
        warnings.warn(
            f"{name!r} was saved with cr_sklearn {str(saved):.40}, this is "
            f"{__version__}. The parameters and weights were checked against "
            "this version's network, but predictions may differ; refit the "
            "model if they matter.",
            UserWarning,
            stacklevel=3,
        )


# -- what a fitted estimator's attributes may be -----------------------------
def _float_vector(value, length, what, name, *, positive=False, sorted_=False):
    """A float64 vector of ``length`` finite values.

    ``positive`` asks for normal positive numbers: a subnormal scale turns a
    division into an infinity.
    """
    if not (
        isinstance(value, np.ndarray)
        and value.dtype.kind == "f"
        and value.dtype.itemsize == 8
        and value.shape == (length,)
    ):
        raise bad(name, f"{what} must be a float64 array of shape ({length},)")
    if not np.isfinite(value).all():
        raise bad(name, f"{what} holds non-finite values")
    if positive and not (value >= np.finfo(np.float64).tiny).all():
        raise bad(name, f"{what} must be positive (and not subnormal)")
    if sorted_ and not (np.diff(value) >= 0).all():
        raise bad(name, f"{what} must be non-decreasing")
    return value.astype(np.float64)


def _check_quantiles(value, what, name):
    value = _float_vector(value, 101, what, name, sorted_=True)
    if value[0] < 0:
        raise bad(name, f"{what} must be non-negative")
    return value


def _check_int(value, what, name, low=0, high=None):
    if not is_int(value) or value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise bad(name, f"{what} must be an integer {bound}, got {value!r:.40}")
    return int(value)


def _check_classes(value, cls, name):
    if not (isinstance(value, np.ndarray) and value.ndim == 1 and len(value) >= 2):
        raise bad(name, "classes_ must be a 1-d array of at least 2 labels")
    kind = value.dtype.kind
    if kind == "O":
        if not all(isinstance(v, (str, bool, int, float, np.generic)) for v in value):
            raise bad(name, "classes_ may hold numbers or strings only")
        if len({type(v) is str for v in value}) > 1:
            raise bad(name, "classes_ mixes strings and numbers")
    if kind == "f" or kind == "O":
        numbers_ = [v for v in value if not isinstance(v, str)]
        if numbers_ and not np.isfinite(np.asarray(numbers_, dtype=float)).all():
            raise bad(name, "classes_ holds non-finite labels")
    try:
        unique = np.unique(value)
    except TypeError:
        raise bad(name, "classes_ cannot be compared (mixed types)") from None
    if len(unique) != len(value):
        raise bad(name, "classes_ holds repeated labels")
    # CRClassifier encodes labels by their sorted position; the ordinal
    # model keeps the order the user gave.
    if cls.__name__ == "CRClassifier" and not np.array_equal(unique, value):
        raise bad(name, "classes_ must be sorted for CRClassifier")
    return value


def _check_feature_names(value, n_features, name):
    if not (
        isinstance(value, np.ndarray)
        and value.shape == (n_features,)
        and value.dtype.kind in "OU"
        and all(isinstance(v, str) for v in value)
    ):
        raise bad(
            name, f"feature_names_in_ must be {n_features} strings (n_features_in_)"
        )
    return value


def _check_float(value, what, name, *, optional=False, nonnegative=False):
    if optional and value is None:
        return None
    if not is_real(value) or not math.isfinite(value):
        raise bad(name, f"{what} must be a finite number, got {value!r:.40}")
    if nonnegative and value < 0:
        raise bad(name, f"{what} must be non-negative, got {value!r:.40}")
    return float(value)


def _check_float_list(value, what, name, *, finite):
    if not (isinstance(value, list) and all(is_real(v) for v in value)):
        raise bad(name, f"{what} must be a list of numbers")
    if finite and not all(math.isfinite(v) for v in value):
        raise bad(name, f"{what} holds non-finite values")
    return [float(v) for v in value]


_REQUIRED_ATTRIBUTES = frozenset(
    {
        "n_features_in_",
        "classes_",
        "n_iter_",
        "loss_curve_",
        "gradient_norm_mean_",
        "gradient_norm_quantiles_",
        "input_mean_",
        "input_scale_",
        "input_distance_quantiles_",
    }
)
_OPTIONAL_ATTRIBUTES = frozenset(
    {
        "_prediction_path",
        "feature_names_in_",
        "best_epoch_",
        "validation_scores_",
        "best_validation_score_",
        "_batch_size_",
        "_n_fit_calls",
        "_seed",
        "device_",
        "early_stopping_",
        "max_iter_",
        "cv_validation_loss_",
        "n_encoded_features_",
        "encoding_bins_",
        "dropout_",
        "best_epochs_",
        "oob_score_",
        "oob_decision_function_",
    }
)
# Parameters added after files were written: a file without one loads with
# the value that reproduces the behaviour of the version that wrote it.
_PARAMS_ADDED = {
    "dtype": "float32",
    "encoding_bins": None,
    "n_members": 1,
    "oob_score": False,
    "beta_1": 0.9,
    "beta_2": 0.999,
}
_EARLY_STOPPING_MODES = ("off", "hold-out", "cv")
_ORDINAL_ATTRIBUTES = frozenset({"cutpoints_"})
# Written by earlier versions, read and dropped: a fit no longer keeps them.
_DROPPED_ATTRIBUTES = frozenset({"_batch_size_", "_init_cutpoints"})


def _check_attributes(cls, a, name):
    """Validate the (decoded) fitted attributes of a ``cls`` state.

    Only the attributes the estimators write are accepted, each with the
    type, dtype and shape they have after ``fit``.
    """
    if not isinstance(a, dict):
        raise bad(name, "missing fitted attributes")
    ordinal = cls.__name__ == "CROrdinalRegressor"
    required = _REQUIRED_ATTRIBUTES | (_ORDINAL_ATTRIBUTES if ordinal else set())
    allowed = required | _OPTIONAL_ATTRIBUTES | _DROPPED_ATTRIBUTES
    allowed |= _ORDINAL_ATTRIBUTES if ordinal else set()
    unknown = sorted(set(a) - allowed, key=str)
    if unknown:
        raise bad(name, f"attribute name {unknown[0]!r:.80} is not allowed")
    missing = sorted(required - set(a))
    if missing:
        raise bad(name, f"missing fitted attributes {missing}")
    a = {k: v for k, v in a.items() if k not in _DROPPED_ATTRIBUTES}
    n_features = a["n_features_in_"]
    if not is_int(n_features) or n_features < 1:
        raise bad(name, f"invalid n_features_in_ {n_features!r:.40}")
    n_features = a["n_features_in_"] = int(n_features)
    a["classes_"] = classes = _check_classes(a["classes_"], cls, name)
    n_iter = a["n_iter_"] = _check_int(a["n_iter_"], "n_iter_", name)
    a["loss_curve_"] = _check_float_list(
        a["loss_curve_"], "loss_curve_", name, finite=False
    )
    if len(a["loss_curve_"]) != n_iter:
        raise bad(name, "loss_curve_ must have n_iter_ entries")
    if "best_epoch_" in a and a["best_epoch_"] is not None:
        a["best_epoch_"] = _check_int(
            a["best_epoch_"], "best_epoch_", name, low=1, high=n_iter
        )
    scores = a.get("validation_scores_")
    best = a.get("best_validation_score_")
    if scores is not None:
        scores = a["validation_scores_"] = _check_float_list(
            scores, "validation_scores_", name, finite=True
        )
        if not 0 < len(scores) <= n_iter or _check_float(
            best, "best_validation_score_", name
        ) != max(scores):
            raise bad(name, "validation_scores_ and best_validation_score_ differ")
    elif best is not None:
        raise bad(name, "best_validation_score_ without validation_scores_")
    quantiles = a["gradient_norm_quantiles_"] = _check_quantiles(
        a["gradient_norm_quantiles_"], "gradient_norm_quantiles_", name
    )
    mean = a["gradient_norm_mean_"] = _check_float(
        a["gradient_norm_mean_"], "gradient_norm_mean_", name, nonnegative=True
    )
    # The mean of the norms lies between their smallest and largest value
    # (0 only for a network that is flat on all its training data).
    slack = 1e-9 * quantiles[100] + 1e-300
    if not quantiles[0] - slack <= mean <= quantiles[100] + slack:
        raise bad(name, "gradient_norm_mean_ lies outside its quantiles")
    a["input_distance_quantiles_"] = _check_quantiles(
        a["input_distance_quantiles_"], "input_distance_quantiles_", name
    )
    a["input_mean_"] = _float_vector(a["input_mean_"], n_features, "input_mean_", name)
    a["input_scale_"] = _float_vector(
        a["input_scale_"], n_features, "input_scale_", name, positive=True
    )
    if "feature_names_in_" in a:
        _check_feature_names(a["feature_names_in_"], n_features, name)
    if "_prediction_path" in a and a["_prediction_path"] not in PATHS:
        raise bad(name, f"_prediction_path must be one of {PATHS}")
    for key, low in (("_n_fit_calls", 0), ("_seed", 0)):
        if key in a:
            a[key] = _check_int(a[key], key, name, low=low, high=2**63 - 1)
    if "device_" in a and not isinstance(a["device_"], str):
        raise bad(name, "device_ must be a string")
    if "early_stopping_" in a and a["early_stopping_"] not in _EARLY_STOPPING_MODES:
        raise bad(name, f"early_stopping_ must be one of {_EARLY_STOPPING_MODES}")
    if "max_iter_" in a:
        a["max_iter_"] = _check_int(a["max_iter_"], "max_iter_", name, low=1)
    cv_loss = a.get("cv_validation_loss_")
    if cv_loss is not None and not (
        isinstance(cv_loss, np.ndarray)
        and cv_loss.dtype.kind == "f"
        and cv_loss.ndim == 1
    ):
        raise bad(name, "cv_validation_loss_ must be None or a 1-d float array")
    if a.get("encoding_bins_") is not None:
        a["encoding_bins_"] = _check_int(
            a["encoding_bins_"], "encoding_bins_", name, low=2, high=2**31 - 1
        )
    if "dropout_" in a:
        dropout = a["dropout_"] = _check_float(a["dropout_"], "dropout_", name)
        if not 0 <= dropout < 1:
            raise bad(name, "dropout_ must lie in [0, 1)")
    encoded = a.get("n_encoded_features_")
    if encoded is not None:
        a["n_encoded_features_"] = _check_int(
            encoded, "n_encoded_features_", name, low=1, high=2**31 - 1
        )
    if ordinal:
        k = len(classes) - 1
        cut = a["cutpoints_"]
        if isinstance(cut, np.ndarray) and cut.ndim == 2:  # one row per member
            rows = [_float_vector(c, k, "cutpoints_", name) for c in cut]
            cut = a["cutpoints_"] = np.array(rows).reshape(len(cut), k)
        else:
            cut = a["cutpoints_"] = _float_vector(cut, k, "cutpoints_", name)
        if not (np.diff(cut, axis=-1) > 0).all():
            raise bad(name, "cutpoints_ must be strictly increasing")
    return a


def _check_member_attributes(estimator, a, name):
    """``best_epochs_``, ``oob_score_``, ``oob_decision_function_`` and cut-points.

    Each must be what a fit with the estimator's ``n_members`` and
    ``oob_score`` writes: one best epoch per member, out-of-fold fields only
    with ``oob_score`` and members, an out-of-fold score in the range of
    its metric, one row of cut-points per member.
    """
    n_iter, n_classes = a["n_iter_"], len(a["classes_"])
    members = int(estimator.n_members)
    best = a.get("best_epochs_")
    if best is not None:
        if not (
            isinstance(best, np.ndarray)
            and best.shape == (members,)
            and best.dtype.kind in "iu"
            and ((best >= 1) & (best <= n_iter)).all()
        ):
            raise bad(
                name,
                f"best_epochs_ must be None or {members} epoch(s) within n_iter_ "
                "(one per member)",
            )
        a["best_epochs_"] = best.astype(int)
    oob = {"oob_score_", "oob_decision_function_"} & set(a)
    if oob and not (members > 1 and estimator.oob_score):
        raise bad(name, "out-of-fold attributes need n_members > 1 and oob_score")
    if members > 1 and estimator.oob_score and len(oob) != 2:
        raise bad(name, "oob_score=True without both out-of-fold attributes")
    if "oob_score_" in a:
        score = a["oob_score_"] = _check_float(a["oob_score_"], "oob_score_", name)
        ordinal = "cutpoints_" in a
        low, high = (-(n_classes - 1), 0.0) if ordinal else (0.0, 1.0)
        if not low <= score <= high:
            raise bad(name, f"oob_score_ must lie in [{low:g}, {high:g}]")
    proba = a.get("oob_decision_function_")
    if "oob_decision_function_" in a and not (
        isinstance(proba, np.ndarray)
        and proba.dtype.kind == "f"
        and proba.ndim == 2
        and proba.shape[1] == n_classes
        and np.isfinite(proba).all()
        and ((proba >= 0) & (proba <= 1)).all()
        and np.allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    ):
        raise bad(
            name, "oob_decision_function_ must hold probabilities, one column a class"
        )
    cut = a.get("cutpoints_")
    if cut is not None and (cut.ndim == 2) != (members > 1):
        raise bad(name, "cutpoints_ must have one row per member (n_members > 1)")
    if cut is not None and cut.ndim == 2 and len(cut) != members:
        raise bad(name, f"cutpoints_ must have {members} rows (n_members)")


def _check_history(raw, n_iter, name):
    """A list of ``n_iter`` epoch rows: dicts of scalars (and batch lists)."""
    if not isinstance(raw, list) or len(raw) != n_iter:
        raise bad(name, "its history must be a list of n_iter_ epochs")
    for row in raw:
        if not isinstance(row, dict) or not all(isinstance(k, str) for k in row):
            raise bad(name, "a history entry is not a dict of named values")
        for key, value in row.items():
            if key == "batches":
                if not isinstance(value, list) or not all(
                    isinstance(b, dict)
                    and all(_is_history_scalar(v) for v in b.values())
                    for b in value
                ):
                    raise bad(name, "malformed batches in the history")
            elif isinstance(value, list):
                # A member fit's per-member losses.
                if not all(_is_history_scalar(v) for v in value):
                    raise bad(name, f"history value {key!r:.40} is not a scalar list")
            elif not _is_history_scalar(value):
                raise bad(name, f"history value {key!r:.40} is not a scalar")
    return raw


def _is_history_scalar(value):
    return value is None or isinstance(value, (bool, int, float, str, np.generic))


def _check_params(estimator, params, name):
    """Set ``estimator``'s parameters to ``params``, validated as in ``fit``."""
    if not isinstance(params, dict):
        raise bad(name, "missing parameters")
    params = dict(params)
    valid = set(type(estimator)().get_params(deep=False))
    for key, value in _PARAMS_ADDED.items():
        params.setdefault(key, value)
    if set(params) != valid:
        raise ValueError(
            f"{name!r} has parameters that do not match "
            f"{type(estimator).__name__} in this cr_sklearn version: unknown "
            f"{sorted(map(str, set(params) - valid))}, missing "
            f"{sorted(valid - set(params))}."
        )
    estimator.__dict__.update(params)
    try:
        estimator._validate_params()
        hidden_sizes(estimator.hidden_layer_sizes)
    except (TypeError, ValueError) as exc:
        raise bad(name, f"invalid parameters ({exc})") from None
    return estimator


def _plan_of(estimator, name):
    """The plan of the fitted network the parameters and attributes describe.

    Only its network fields describe the model; the training fields are
    resolved from the parameters, for the next fit's optimizer to start from.
    """
    with warnings.catch_warnings():
        # What a fit would warn about was said when it ran.
        warnings.simplefilter("ignore")
        plan = resolve_plan(
            estimator.get_params(deep=False),
            1000,
            estimator.n_features_in_,
            estimator._n_outputs(),
            device=estimator.device_,
            incremental=False,
            widest_fixed=estimator._auto_fixed_budget_max_features,
        )
    return dataclasses.replace(
        plan,
        encoding_bins=estimator.encoding_bins_,
        dropout=estimator.dropout_,
        stopping=getattr(estimator, "early_stopping_", plan.stopping),
    )


def _expected_tensors(estimator, plan, table, name, dtype):
    """Names, shapes and dtypes of the tensors the parameters describe.

    Built on torch's ``meta`` device, which allocates no memory, after
    checking that the state holds a tensor for every layer and a slice of
    its output weight for every member: neither huge widths, many layers
    nor many members can make this cost more than the state does.
    ``table`` maps each tensor's name to ``(dtype name, shape, ...)``.
    """
    n_module = sum(key.startswith("module.") for key in table)
    # Every layer, the output one included, has a weight and a bias.
    if 2 * (len(plan.hidden) + 1) > n_module:
        raise bad(name, "its parameters describe more layers than it has tensors")
    # Members are built one by one: their count must be the state's own (the
    # leading axis of its output weight), not a number the parameters claim.
    members = plan.n_members if plan.n_members > 1 else None
    held = table.get("module.output.weight")
    held_members = held[1][0] if held is not None and len(held[1]) == 3 else None
    if members != held_members:
        raise bad(
            name,
            f"its parameters describe {members or 1} member(s) and its output "
            "weight holds another number",
        )
    try:
        with torch.device("meta"):
            module = _networks.build(
                plan,
                estimator.n_features_in_,
                encoded=getattr(estimator, "n_encoded_features_", None),
                n_members=members,
                dtype=dtype,
            )
            criterion = estimator._make_criterion(None, None)
            if members is not None:
                from ._members import MemberCriterion

                criterion = MemberCriterion(
                    [estimator._make_criterion(None, None) for _ in range(members)]
                )
            criterion = criterion.to(_networks.torch_dtype(plan.dtype))
    except (TypeError, ValueError, IndexError, RuntimeError) as exc:
        raise bad(name, f"its attributes cannot describe a network ({exc})") from None
    expected = {}
    for part, found in (("module", module), ("criterion", criterion)):
        for key, tensor in found.state_dict().items():
            expected[f"{part}.{key}"] = (tuple(tensor.shape), tensor.dtype)
    return expected


def _check_table(table, expected, name):
    """The file's tensors must be exactly the ones the parameters describe."""
    missing = sorted(set(expected) - set(table))
    unexpected = sorted(set(table) - set(expected))
    if missing or unexpected:
        raise bad(
            name,
            "its tensors do not match the network its parameters describe "
            f"(missing {missing[:5]}, unexpected {unexpected[:5]})",
        )
    for key, (shape, dtype) in expected.items():
        file_dtype, file_shape, _, _ = table[key]
        wanted = TORCH_DTYPE_NAMES.get(dtype)
        if file_shape != shape or TENSOR_DTYPES.get(wanted) != file_dtype:
            raise bad(
                name,
                f"tensor {key} has shape {file_shape} and dtype {file_dtype}; "
                f"the network needs {shape} and {dtype}",
            )


def _resolved_network_params(estimator, name):
    """Set ``encoding_bins_`` and ``dropout_``; check they describe one network.

    A file from before these attributes existed has neither and no ``"auto"``
    values: the parameters are the resolved values. The encoding's width must
    be one a fit can make: each column copied once or split into at most
    ``encoding_bins_`` ramps.
    """
    for param in ("encoding_bins", "dropout"):
        attribute = param + "_"
        value = getattr(estimator, param)
        if hasattr(estimator, attribute):
            fixed = value != "auto"
            if fixed and getattr(estimator, attribute) != value:
                raise bad(name, f"{attribute} differs from {param}={value!r}")
        elif value == "auto":
            raise bad(name, f"{param}='auto' without {attribute}")
        else:
            setattr(estimator, attribute, value)
    bins = estimator.encoding_bins_
    encoded = getattr(estimator, "n_encoded_features_", None)
    if (bins is None) != (encoded is None):
        raise bad(name, "encoding_bins_ and n_encoded_features_ disagree")
    d = estimator.n_features_in_
    if bins is not None and not d <= encoded <= d * bins:
        raise bad(
            name,
            f"n_encoded_features_ must lie between n_features_in_ ({d}) and "
            f"n_features_in_ * encoding_bins_ ({d * bins})",
        )


def _check_encoding(module, name):
    """The loaded encoding reads existing columns, in order, with real bins."""
    encoding = module.encoding
    if encoding is None:
        return
    with torch.no_grad():
        source = encoding.source
        if source.numel() and not (
            int(source.min()) >= 0 and int(source.max()) < encoding.n_features
        ):
            raise bad(name, "its encoding reads columns the input does not have")
        if not bool((source[1:] >= source[:-1]).all()):
            raise bad(name, "its encoding's columns are not in input order")
        if not bool((encoding.inv_width > 0).all() & (encoding.ramp_gain > 0).all()):
            raise bad(name, "its encoding has bins of non-positive width or scale")


def _check_input_scaling(module, name):
    """The network's standardisation divides by positive, normal scales."""
    scale = module.input_scale
    if not bool((scale >= torch.finfo(torch.float64).tiny).all()):
        raise bad(
            name,
            "its network's input_scale holds zero, negative or subnormal "
            "values (a fit sets positive, normal scales)",
        )


def _check_loaded(estimator, name):
    """Invariants that need the loaded network: scaling, encoding, cut-points."""
    _check_input_scaling(estimator.module_, name)
    _check_encoding(estimator.module_, name)
    if hasattr(estimator, "cutpoints_"):
        with torch.no_grad():
            cut = estimator.net_.criterion_.cutpoints().double().cpu().numpy()
        same_shape = cut.shape == np.shape(estimator.cutpoints_)
        if not same_shape or not np.allclose(
            cut, estimator.cutpoints_, rtol=1e-6, atol=1e-6
        ):
            raise bad(name, "cutpoints_ differ from the cut-points of its tensors")


def _plain_tensors(value):
    """Tensors anywhere in ``value`` (dicts, lists) as numpy arrays."""
    if torch.is_tensor(value):
        return value.detach().cpu().numpy()
    if isinstance(value, dict):
        return {k: _plain_tensors(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain_tensors(v) for v in value)
    return value


def _torch_tensors(value):
    """The inverse of :func:`_plain_tensors` for an optimizer state."""
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    if isinstance(value, dict):
        return {k: _torch_tensors(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_torch_tensors(v) for v in value)
    return value


def fitted_state(estimator, *, optimizer=False):
    """The fitted state of a CR estimator as plain data and numpy arrays.

    A dict: the format, the class name, the versions, ``params``
    (``get_params(deep=False)``), ``attributes`` (the fitted ones, not the
    derived network objects), ``history`` (one row per epoch) and
    ``tensors`` (``module.*``: the float64 network; ``criterion.*``: the
    loss's, e.g. ordinal cut-points). With ``optimizer``, also the
    optimizer's state (Adam's moments), for ``partial_fit`` to continue.
    """
    params = estimator.get_params(deep=False)
    attributes = {
        name: value
        for name, value in vars(estimator).items()
        if name not in params and name not in _DERIVED and name != "_sklearn_version"
    }
    tensors = {}
    for part, module in (
        ("module", estimator.module_),
        ("criterion", estimator.net_.criterion_),
    ):
        for key, value in module.state_dict().items():
            tensors[f"{part}.{key}"] = value.detach().cpu().numpy().copy()
    state = {
        "format": _FORMAT,
        "format_version": _FORMAT_VERSION,
        "estimator": type(estimator).__name__,
        "versions": _versions(),
        "params": params,
        "attributes": attributes,
        "history": _history_rows(estimator.net_.history),
        "tensors": tensors,
    }
    if optimizer:
        state["optimizer"] = _plain_tensors(estimator.net_.optimizer_.state_dict())
    return state


def _array_table(tensors):
    """``{name: (dtype, shape, 0, 0)}`` of numpy arrays, as a file's table reads."""
    table = {}
    for key, value in tensors.items():
        if not isinstance(value, np.ndarray):
            table[key] = (None, (), 0, 0)
            continue
        table[key] = (value.dtype, tuple(value.shape), 0, 0)
    return table


def _state_tensors(state, name):
    """The reader of a :func:`fitted_state`'s numpy arrays (see restore_state)."""

    def read(estimator, plan, dtype):
        raw = state.get("tensors")
        if not isinstance(raw, dict):
            raise bad(name, "it holds no tensors")
        table = _array_table(raw)
        _check_table(
            table, _expected_tensors(estimator, plan, table, name, dtype), name
        )
        return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in raw.items()}

    return read


def restore_state(estimator, state, name, *, device="cpu", read_tensors=None):
    """Check a :func:`fitted_state` and rebuild ``estimator`` from it.

    ``estimator`` is an empty instance of the state's class. Everything is
    checked before a network is built (see :func:`load_model`).
    ``read_tensors(estimator, plan, dtype)`` returns the tensors by name
    once it has checked them against the network the parameters describe;
    by default, the state's own numpy arrays. Raises a ``ValueError``
    naming ``name`` on any inconsistency.
    """
    if not isinstance(state, dict):
        raise bad(name, "its state is not a dict")
    version = state.get("format_version")
    if not is_int(version) or version < 1:
        raise bad(name, f"format_version {version!r:.40} is not a version (1, 2, ...)")
    if version > _FORMAT_VERSION:
        raise ValueError(
            f"{name!r} uses model format version {version!r:.40}; this "
            f"cr_sklearn reads versions up to {_FORMAT_VERSION}. Upgrade cr_sklearn."
        )
    if state.get("estimator") != type(estimator).__name__:
        raise bad(
            name,
            f"it holds a {state.get('estimator')!r:.80}, not a "
            f"{type(estimator).__name__}",
        )
    cls = type(estimator)
    _check_params(estimator, state.get("params"), name)
    attributes = _check_attributes(cls, state.get("attributes"), name)
    if version < 2 and attributes.get("encoding_bins_") is None:
        warnings.warn(
            f"{name!r} uses model format version {version}: without an input "
            "encoding, its gradient-norm summaries (gradient_norm_mean_, "
            "gradient_norm_quantiles_, and input_sensitivity, which divides "
            "by the mean) were measured by X in raw units, not with each "
            "column in units of its training standard deviation as this "
            "version measures them. Predictions are unaffected; refit the "
            "model to compare these summaries with a current model's.",
            UserWarning,
            stacklevel=3,
        )
    history = _check_history(state.get("history"), attributes["n_iter_"], name)
    for key, value in attributes.items():
        setattr(estimator, key, value)
    try:
        class_weight_of(estimator, np.zeros(0, dtype=int))
    except (TypeError, ValueError) as exc:
        raise bad(name, f"invalid parameters ({exc})") from None
    estimator.device_ = resolve_device(device)
    _resolved_network_params(estimator, name)
    estimator.n_encoded_features_ = getattr(estimator, "n_encoded_features_", None)
    plan = _plan_of(estimator, name)
    # Before format 3, the file held the float32 network that trained.
    dtype = torch.float64 if version >= 3 else torch.float32
    read_tensors = read_tensors or _state_tensors(state, name)
    tensors = read_tensors(estimator, plan, dtype)
    _check_member_attributes(estimator, attributes, name)
    # Building draws initial weights: the caller's random streams stay as
    # they are.
    with torch.random.fork_rng(devices=[]):
        module = _networks.build(
            plan,
            estimator.n_features_in_,
            encoded=estimator.n_encoded_features_,
            n_members=plan.n_members if plan.n_members > 1 else None,
        ).to(estimator.device_)
    given = {
        k[len("module.") :]: v for k, v in tensors.items() if k.startswith("module.")
    }
    module.load_state_dict(given, strict=True)
    for p in module.parameters():
        p.requires_grad_(False)
    estimator.module_ = module.eval()
    estimator._plan = plan
    estimator._built = plan.network_values()
    estimator.net_ = rebuild_net(estimator)
    given = {
        k[len("criterion.") :]: v
        for k, v in tensors.items()
        if k.startswith("criterion.")
    }
    estimator.net_.criterion_.load_state_dict(given, strict=True)
    estimator.net_.history = History(history)
    if "optimizer" in state:
        try:
            estimator.net_.optimizer_.load_state_dict(
                _torch_tensors(state["optimizer"])
            )
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise bad(name, f"its optimizer state does not fit ({exc})") from None
    _check_loaded(estimator, name)
    return estimator


def load_model(path, *, device="cpu"):
    """Load an estimator saved by :func:`save_model`, executing no code.

    The file is parsed as JSON and raw tensor bytes only (never pickle or
    ``torch.load``), through a bounded reader, and everything in it is
    checked before a network is built:

    - the file: a regular file (never a device or a FIFO) or a binary file
      object, a JSON header of at most 4 MiB, a tensor table whose byte
      ranges tile the data section exactly and whose total matches the
      file's size (read before the data), a SHA-256 digest over the
      content;
    - the estimator: one of cr_sklearn's CR estimator classes, with the
      parameters of this version, validated as in ``fit``;
    - the fitted attributes: only those the estimators write, each with its
      type, dtype and shape (``classes_`` unique, sorted for
      :class:`CRClassifier`, in the saved order for
      :class:`CROrdinalRegressor`; finite summaries; positive feature
      scales; strictly increasing cut-points; one feature name per
      feature), and a history of one row per epoch;
    - the tensors: exactly the names, shapes and dtypes of the network the
      parameters and attributes describe (worked out without allocating
      it), all finite. Only then is the network built and loaded; an input
      encoding (``encoding_bins_``) must read existing columns, in order,
      through bins of positive width and scale.

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
        If the file is not a cr_sklearn model file, was modified or
        truncated, has a newer format version, names an unknown estimator,
        or holds invalid parameters, attributes or tensors. Every malformed
        input raises this (a subclass of it), never another exception type.
    OSError
        If ``path`` cannot be opened (e.g. it does not exist).

    Warns
    -----
    UserWarning
        If the file was written by another cr_sklearn version, or in format
        version 1 by a model without an input encoding: its
        ``gradient_norm_mean_`` and ``gradient_norm_quantiles_`` (and so
        ``input_sensitivity``, which divides by the mean) were measured by
        ``X`` in its raw units, not in units of the training standard
        deviation; predictions are unaffected. Refit to measure them as this
        version does.

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
    forgery (anyone can recompute it). What makes loading safe is the
    format and the checks: plain data is read and checked, nothing is
    executed, and nothing is sized by a claim the file cannot back.

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
    name, header, table, data = read_model_file(path)
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or _METADATA_KEY not in metadata:
        raise bad(name, "it has no cr_sklearn metadata")
    payload_text = metadata[_METADATA_KEY]
    if not isinstance(payload_text, str) or metadata.get("sha256") != digest(
        payload_text, data
    ):
        raise bad(name, "its SHA-256 digest does not match: it was modified")
    del header, metadata
    payload = parse_json(payload_text, name, "metadata")
    del payload_text
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise bad(name, "unknown format")
    cls = _estimator_class(payload.get("estimator"), name)
    version = payload.get("format_version")
    if is_int(version) and 1 <= version <= _FORMAT_VERSION:
        _check_versions(payload.get("versions"), name)
    raw_params = payload.get("params")
    raw_attributes = payload.get("attributes")
    history = payload.get("history")
    if isinstance(history, list):
        for i, encoded in enumerate(history):
            # Decoded in place, so the encoded and decoded forms of the whole
            # history never coexist in memory.
            history[i] = decode(encoded, name)
    state = {
        "format_version": version,
        "estimator": payload.get("estimator"),
        "params": None
        if not isinstance(raw_params, dict)
        else {k: decode(v, name) for k, v in raw_params.items()},
        "attributes": None
        if not isinstance(raw_attributes, dict)
        else {k: decode(v, name) for k, v in raw_attributes.items()},
        "history": history,
    }
    if isinstance(state["params"], dict) and state["params"].get("callbacks"):
        raise bad(name, "it lists callbacks: callback objects are never loaded")
    del payload
    estimator = cls.__new__(cls)

    def read_tensors(found, plan, dtype):
        _check_table(table, _expected_tensors(found, plan, table, name, dtype), name)
        return {
            key: tensor_view(data, entry, key, name) for key, entry in table.items()
        }

    return restore_state(
        estimator, state, name, device=device, read_tensors=read_tensors
    )
