"""A fitted CR estimator as one record of plain data (private).

:func:`fitted_state` takes the record: the parameters (those of the next
fit), the fitted attributes, the plan the fit resolved and used, the
training history and the tensors of the fitted network; :func:`restore_state`
checks all of it before a network is built and rebuilds the estimator from
it. Pickle, ``copy.deepcopy``, joblib and skops use them through the
estimators' ``__getstate__``/``__setstate__``; :mod:`._persistence` writes
and reads the same record as a safe file. Nothing here knows an estimator
class: the estimator to rebuild is given, and its head says what it needs.
"""

import dataclasses
import math
import numbers
import sys
import warnings
from contextlib import contextmanager
from operator import itemgetter

import numpy as np
import sklearn
import torch
from sklearn.utils._param_validation import validate_parameter_constraints
from skorch.history import History

from . import _networks
from ._fit import class_weight_of, rebuild_net
from ._members import MemberCriterion
from ._model_file import NUMPY_DTYPES, bad, is_real
from ._plan import FitPlan, hidden_sizes, resolve_plan
from ._predict import PATHS
from ._summaries import STREAM_ATTRIBUTES
from ._utils import is_integer, resolve_device
from ._version import __version__

__all__ = ["FORMAT_VERSION", "MODEL_PARTS", "fitted_state", "restore_state"]

# 2: without an input encoding, the gradient-norm summaries measure each
# column of X in units of its training standard deviation; in version 1 they
# were by X in raw units (with an encoding, by the encoded columns in both).
# 3: the tensors are the float64 network predictions come from (in 1 and 2,
# the float32 network that trained, transform included).
# 4: the fitted plan is saved: it describes the network and the settings the
# fit used; the parameters are those of the next fit and may differ (in 1 to
# 3, the plan was resolved again from the parameters).
FORMAT_VERSION = 4
_SCALAR_TYPES = (bool, int, float, str, np.generic)
# Rebuilt from the record, never read as data; the running partial_fit
# summaries are not saved: a loaded model starts anew.
_DERIVED = frozenset({"net_", "module_", "_plan", "_built"} | set(STREAM_ATTRIBUTES))
#: The parts of the state whose tensors define the fitted model.
MODEL_PARTS = ("module", "criterion")
#: The plan's fields that public fitted attributes hold: in the record, each
#: value once, under the attribute's name.
PLAN_ATTRIBUTES = {
    "encoding_bins": "encoding_bins_",
    "dropout": "dropout_",
    "n_members": "n_members_",
    "stopping": "early_stopping_",
    "max_epochs": "max_iter_",
}


def _convert(value, numpy):
    """``value`` (dicts, lists, tuples) with its tensors as numpy arrays, or back."""
    if numpy and torch.is_tensor(value):
        return value.detach().cpu().numpy()
    if not numpy and isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    if isinstance(value, dict):
        return {k: _convert(v, numpy) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_convert(v, numpy) for v in value)
    return value


def _plain_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


def fitted_state(estimator, *, optimizer=False):
    """The record of a fitted ``estimator``: a dict of plain data and arrays.

    Its header (format version, class name, versions), ``params``
    (``get_params(deep=False)``: the next fit's), fitted ``attributes`` (not
    the network objects; the plan's :data:`PLAN_ATTRIBUTES` under their
    names), ``plan`` (the other fields of the fitted plan), ``history`` (a row
    per epoch), ``tensors`` as numpy arrays (``module.*``: the float64
    network, ``criterion.*``) and, with ``optimizer``, Adam's moments.
    """
    params = estimator.get_params(deep=False)
    skipped = set(params) | _DERIVED | _READ | {"_sklearn_version"}
    net, plan = estimator.net_, dataclasses.asdict(estimator._plan)
    modules = zip(MODEL_PARTS, (estimator.module_, net.criterion_), strict=True)
    attributes = {k: v for k, v in vars(estimator).items() if k not in skipped}
    attributes.update({a: plan.pop(f) for f, a in PLAN_ATTRIBUTES.items()})
    state = {
        "format": "cr_sklearn.safe",
        "format_version": FORMAT_VERSION,
        "estimator": type(estimator).__name__,
        "versions": {
            "cr_sklearn": __version__,
            "scikit-learn": sklearn.__version__,
            "torch": torch.__version__,
            "numpy": np.__version__,
        },
        "params": params,
        "attributes": attributes,
        # The device is where the model is loaded: not part of the record.
        "plan": {k: v for k, v in plan.items() if k != "device"},
        # The per-batch entries, whose number grows with the data, are left
        # out (an empty list): nothing after a fit reads them.
        "history": [
            {k: [] if k == "batches" else _plain_scalar(v) for k, v in row.items()}
            for row in net.history
        ],
        "tensors": {
            f"{part}.{key}": value.detach().cpu().numpy().copy()
            for part, module in modules
            for key, value in module.state_dict().items()
        },
    }
    if optimizer:
        state["optimizer"] = _convert(net.optimizer_.state_dict(), numpy=True)
    return state


# -- the checks of a state: checkers(value, what, file name, **options) ---------
def _finite(value):
    """Whether ``value`` is a finite float (an int is compared, not converted)."""
    if isinstance(value, numbers.Rational):
        return abs(value) <= sys.float_info.max
    return math.isfinite(value)


def _int(value, what, name, low=0, high=None):
    if not is_integer(value) or value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise bad(name, f"{what} must be an integer {bound}, got {value!r:.40}")
    return int(value)


def _float(value, what, name, low=-math.inf, high=math.inf, *, below=False):
    """A finite number in ``[low, high]`` (``[low, high)`` with ``below``)."""
    if not is_real(value) or not _finite(value):
        raise bad(name, f"{what} must be a finite number, got {value!r:.40}")
    if not low <= value <= high or (below and value == high):
        end = ")" if below or high == math.inf else "]"
        raise bad(name, f"{what} must lie in [{low:g}, {high:g}{end}")
    return float(value)


def _float_list(value, what, name, *, finite):
    if not (isinstance(value, list) and all(is_real(v) for v in value)):
        raise bad(name, f"{what} must be a list of numbers")
    if finite and not all(map(_finite, value)):
        raise bad(name, f"{what} holds non-finite values")
    try:
        return [float(v) for v in value]
    except OverflowError:
        raise bad(name, f"{what} holds numbers beyond the range of floats") from None


def _floats(value, what, name, shape, *, positive=False, nonnegative=False, order=""):
    """Finite float64s of ``shape`` (an int: a length); ``positive``: normal ones."""
    shape = (shape,) if is_integer(shape) else shape
    if not (
        isinstance(value, np.ndarray)
        and value.dtype.kind == "f"
        and value.dtype.itemsize == 8
        and value.shape == shape
    ):
        raise bad(name, f"{what} must be a float64 array of shape {shape}")
    if not np.isfinite(value).all():
        raise bad(name, f"{what} holds non-finite values")
    # A subnormal scale turns a division into an infinity.
    if positive and not (value >= np.finfo(np.float64).tiny).all():
        raise bad(name, f"{what} must be positive (and not subnormal)")
    if order:  # along the last axis
        steps = np.diff(value, axis=-1)
        if not (steps > 0 if order == "strictly increasing" else steps >= 0).all():
            raise bad(name, f"{what} must be {order}")
    if nonnegative and (value < 0).any():
        raise bad(name, f"{what} must be non-negative")
    return value.astype(np.float64)


def _feature_names(value, what, name, n_features):
    if not (
        isinstance(value, np.ndarray)
        and value.shape == (n_features,)
        and value.dtype.kind in "OU"
        and all(isinstance(v, str) for v in value)
    ):
        raise bad(name, f"{what} must be {n_features} strings (n_features_in_)")
    if len(set(value)) != n_features:
        # As fit refuses a table whose columns repeat a name.
        raise bad(name, f"{what} repeats a name")
    return value


def _string(value, what, name, choices=None):
    """A string, one of ``choices`` if given (never compares an array)."""
    if not (isinstance(value, str) and (choices is None or value in choices)):
        expected = "a string" if choices is None else f"one of {choices}"
        raise bad(name, f"{what} must be {expected}")
    return value


def _float_vector(value, what, name):
    if not (
        isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.ndim == 1
    ):
        raise bad(name, f"{what} must be None or a 1-d float array")
    return value


def _check_classes(value, cls, name):
    if not (isinstance(value, np.ndarray) and value.ndim == 1 and len(value) >= 2):
        raise bad(name, "classes_ must be a 1-d array of at least 2 labels")
    kind = value.dtype.kind
    if kind == "O":
        if not all(isinstance(v, _SCALAR_TYPES) for v in value):
            raise bad(name, "classes_ may hold numbers or strings only")
        if len({type(v) is str for v in value}) > 1:
            raise bad(name, "classes_ mixes strings and numbers")
    if kind in "fO" and not all(_finite(v) for v in value if not isinstance(v, str)):
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


_REQUIRED, _OPTIONAL, _BEFORE_4, _DROPPED = "required", "optional", "<4", "dropped"
_N_FEATURES, _N_ITER = itemgetter("n_features_in_"), itemgetter("n_iter_")
_QUANTILES = {"shape": 101, "order": "non-decreasing", "nonnegative": True}
_I64, _I32 = 2**63 - 1, 2**31 - 1
# Each fitted attribute a fit writes: name -> (presence, checker, options), checked in
# this order. An option itemgetter(attribute) is that attribute's checked value;
# "none": True allows None. Checker None: checked in _check_attributes or, with the
# fitted plan, _check_member_attributes. _BEFORE_4: written up to format 3, now
# read from the history or the tensors (dropped); _DROPPED: written by earlier
# versions, dropped.
_ATTRIBUTES = {
    "n_features_in_": (_REQUIRED, None, {}),
    "classes_": (_REQUIRED, None, {}),
    "n_iter_": (_REQUIRED, _int, {}),
    "loss_curve_": (_REQUIRED, _float_list, {"finite": False}),
    "best_epoch_": (_OPTIONAL, _int, {"low": 1, "high": _N_ITER, "none": True}),
    "validation_scores_": (_BEFORE_4, None, {}),
    "best_validation_score_": (_BEFORE_4, None, {}),
    "gradient_norm_quantiles_": (_REQUIRED, _floats, _QUANTILES),
    "gradient_norm_mean_": (_REQUIRED, _float, {"low": 0}),
    "input_distance_quantiles_": (_REQUIRED, _floats, _QUANTILES),
    "input_mean_": (_REQUIRED, _floats, {"shape": _N_FEATURES}),
    "input_scale_": (_REQUIRED, _floats, {"shape": _N_FEATURES, "positive": True}),
    "feature_names_in_": (_OPTIONAL, _feature_names, {"n_features": _N_FEATURES}),
    "_prediction_path": (_OPTIONAL, _string, {"choices": PATHS}),
    "_n_fit_calls": (_OPTIONAL, _int, {"high": _I64}),
    "_seed": (_OPTIONAL, _int, {"high": _I64}),
    "device_": (_OPTIONAL, _string, {}),
    "early_stopping_": (_OPTIONAL, _string, {"choices": ("off", "hold-out", "cv")}),
    "max_iter_": (_OPTIONAL, _int, {"low": 1}),
    "cv_validation_loss_": (_OPTIONAL, _float_vector, {"none": True}),
    "encoding_bins_": (_OPTIONAL, _int, {"low": 2, "high": _I32, "none": True}),
    "dropout_": (_OPTIONAL, _float, {"low": 0, "high": 1, "below": True}),
    "n_members_": (_OPTIONAL, _int, {"low": 1, "high": _I32}),
    "n_encoded_features_": (_OPTIONAL, _int, {"low": 1, "high": _I32, "none": True}),
    "cutpoints_": (_BEFORE_4, None, {}),
    "best_epochs_": (_OPTIONAL, None, {}),
    "oob_score_": (_OPTIONAL, None, {}),
    "oob_decision_function_": (_OPTIONAL, None, {}),
    "_batch_size_": (_DROPPED, None, {}),
    "_init_cutpoints": (_DROPPED, None, {}),
}
# Attributes read from the record's other parts: the validation scores from the
# history (properties of the estimator), the cut-points from the criterion's
# tensors (set by the head's _set_head_attributes, as a fit sets them).
_READ = frozenset(k for k, (when, *_) in _ATTRIBUTES.items() if when == _BEFORE_4)
# Parameters added after files were written: a file without one loads with
# the value that reproduces the behaviour of the version that wrote it.
_PARAMS_ADDED = {
    "dtype": "float32",
    "encoding_bins": None,
    "n_members": 1,
    "oob_score": False,
    "beta_1": 0.9,
    "beta_2": 0.999,
    "dreg_space": "encoded",
    "spread_lambda": 0.0,
    "dreg_points": "data",
}


def _check_attributes(cls, a, name, version):
    """The fitted attributes of a ``cls`` record, checked as _ATTRIBUTES says."""
    if not isinstance(a, dict):
        raise bad(name, "missing fitted attributes")
    allowed = {k for k, (when, *_) in _ATTRIBUTES.items() if when != _BEFORE_4}
    if version < 4:
        allowed |= _READ
    unknown = sorted(set(a) - allowed, key=str)
    if unknown:
        raise bad(name, f"attribute name {unknown[0]!r:.80} is not allowed")
    missing = sorted(k for k in allowed - set(a) if _ATTRIBUTES[k][0] == _REQUIRED)
    if missing:
        raise bad(name, f"missing fitted attributes {missing}")
    a = {k: v for k, v in a.items() if _ATTRIBUTES[k][0] not in (_DROPPED, _BEFORE_4)}
    n_features = a["n_features_in_"]
    if not is_integer(n_features) or n_features < 1:
        raise bad(name, f"invalid n_features_in_ {n_features!r:.40}")
    a["n_features_in_"] = int(n_features)
    a["classes_"] = _check_classes(a["classes_"], cls, name)
    for key, (_, check, options) in _ATTRIBUTES.items():
        if check is None or key not in a:
            continue
        options = {
            k: v(a) if isinstance(v, itemgetter) else v for k, v in options.items()
        }
        if not (options.pop("none", False) and a[key] is None):
            a[key] = check(a[key], key, name, **options)
    # What one attribute says of another.
    if len(a["loss_curve_"]) != a["n_iter_"]:
        raise bad(name, "loss_curve_ must have n_iter_ entries")
    # The mean of the norms lies between their smallest and largest value
    # (0 only for a network that is flat on all its training data).
    quantiles, mean = a["gradient_norm_quantiles_"], a["gradient_norm_mean_"]
    slack = 1e-9 * quantiles[100] + 1e-300
    if not quantiles[0] - slack <= mean <= quantiles[100] + slack:
        raise bad(name, "gradient_norm_mean_ lies outside its quantiles")
    return a


def _check_member_attributes(a, plan, name, *, ordinal):
    """The attributes per member and out-of-fold, as a fit of ``plan`` writes."""
    members, oob = plan.n_members, plan.n_members > 1 and plan.oob_score
    n_iter, n_classes = a["n_iter_"], len(a["classes_"])
    best = a.get("best_epochs_")
    if best is not None and not (
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
    found = {"oob_score_", "oob_decision_function_"} & set(a)
    if found and not oob:
        raise bad(name, "out-of-fold attributes need n_members > 1 and oob_score")
    if oob and len(found) != 2:
        raise bad(name, "oob_score=True without both out-of-fold attributes")
    if "oob_score_" in a:
        # The ordinal head's score is minus a mean absolute error in ranks.
        bounds = (-(n_classes - 1), 0.0) if ordinal else (0.0, 1.0)
        _float(a["oob_score_"], "oob_score_", name, *bounds)
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


def _scalars(values):
    return all(v is None or isinstance(v, _SCALAR_TYPES) for v in values)


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
                    isinstance(b, dict) and _scalars(b.values()) for b in value
                ):
                    raise bad(name, "malformed batches in the history")
            elif isinstance(value, list):  # a member fit's per-member losses
                if not _scalars(value):
                    raise bad(name, f"history value {key!r:.40} is not a scalar list")
            elif not _scalars([value]):
                raise bad(name, f"history value {key!r:.40} is not a scalar")
            elif key == "valid_score" and not (is_real(value) and _finite(value)):
                # validation_scores_ reads them.
                raise bad(name, "a validation score in its history is not finite")
    return raw


def _check_params(estimator, params, name):
    """Set ``estimator``'s parameters to ``params``, validated as in ``fit``."""
    if not isinstance(params, dict):
        raise bad(name, "missing parameters")
    valid = set(type(estimator)().get_params(deep=False))
    added = {k: v for k, v in _PARAMS_ADDED.items() if k in valid - set(params)}
    params = params | added
    if set(params) != valid:
        raise ValueError(
            f"{name!r} has parameters that do not match "
            f"{type(estimator).__name__} in this cr_sklearn version: unknown "
            f"{sorted(map(str, set(params) - valid))}, missing "
            f"{sorted(valid - set(params))}."
        )
    estimator.__dict__.update(params)
    with _invalid_parameters(name):
        estimator._validate_params()
    return params


@contextmanager
def _invalid_parameters(name):
    """The file's error for a parameter check's TypeError or ValueError."""
    try:
        yield
    except (TypeError, ValueError, OverflowError) as exc:
        raise bad(name, f"invalid parameters ({exc})") from None


def _network_attributes(a, params, version, name):
    """Complete and check ``encoding_bins_``, ``dropout_`` and ``n_members_``.

    A file written before an attribute existed holds the parameter's value
    (never ``"auto"``). Up to format 3 the parameters are those of the fit
    and must agree with the attributes; from 4 they are the next fit's.
    """
    for param in ("encoding_bins", "dropout", "n_members"):
        attribute, value = param + "_", params[param]
        if attribute in a:
            if version < 4 and value != "auto" and a[attribute] != value:
                raise bad(name, f"{attribute} differs from {param}={value!r}")
        elif value == "auto":
            raise bad(name, f"{param}='auto' without {attribute}")
        else:
            a[attribute] = value
    bins, encoded = a["encoding_bins_"], a.get("n_encoded_features_")
    if (bins is None) != (encoded is None):
        raise bad(name, "encoding_bins_ and n_encoded_features_ disagree")
    # Each column copied once or split into at most encoding_bins_ ramps.
    d = a["n_features_in_"]
    if bins is not None and not d <= encoded <= d * bins:
        raise bad(
            name,
            f"n_encoded_features_ must lie between n_features_in_ ({d}) and "
            f"n_features_in_ * encoding_bins_ ({d * bins})",
        )


# The plan's fields checked as the parameter they resolve is in fit (by its
# constraint), under the parameter's name; the others in _fitted_plan.
_PLAN_PARAMETERS = {
    "hidden": "hidden_layer_sizes",
    "learning_rate": "learning_rate_init",
}
# Fields a fit resolves to numbers ("auto" is a parameter's value, not theirs).
_PLAN_NUMBERS = ("batch_size", "learning_rate", "n_threads")
_PLAN_DATA = ("n_samples", "n_features", "n_outputs", "betas", "patience")


def _fitted_plan(estimator, raw, a, name):
    """The :class:`~cr_sklearn._plan.FitPlan` of a record of format 4, checked."""
    if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
        raise bad(name, "its fitted plan is missing or not a dict of named values")
    missing = [v for v in PLAN_ATTRIBUTES.values() if v not in a]
    if missing:
        raise bad(name, f"missing fitted attributes {missing}")
    fields = {f.name: f for f in dataclasses.fields(FitPlan)}
    expected = set(fields) - set(PLAN_ATTRIBUTES) - {"device"}
    unknown = sorted(set(raw) - expected)
    if unknown:
        raise bad(name, f"its fitted plan has an unknown field {unknown[0]!r:.80}")
    required = (k for k in expected if fields[k].default is dataclasses.MISSING)
    missing = sorted(set(required) - set(raw))
    if missing:
        raise bad(name, f"its fitted plan lacks the fields {missing}")
    plan = dict(raw)
    _int(plan["n_samples"], "plan n_samples", name, low=1, high=_I64)
    _int(plan["patience"], "plan patience", name, low=1, high=_I64)
    if plan["n_features"] != a["n_features_in_"] or not is_integer(plan["n_features"]):
        raise bad(name, "its fitted plan's n_features differs from n_features_in_")
    if plan["n_outputs"] != estimator._n_outputs() or not is_integer(plan["n_outputs"]):
        raise bad(name, "its fitted plan's n_outputs does not fit classes_")
    betas = plan["betas"]
    if not (isinstance(betas, tuple) and len(betas) == 2):
        raise bad(name, "its fitted plan's betas must be a pair")
    if any(isinstance(plan[k], str) for k in _PLAN_NUMBERS if k in plan):
        raise bad(name, f"its fitted plan holds 'auto' among {_PLAN_NUMBERS}")
    constraints = type(estimator)._parameter_constraints
    if "head" not in constraints and plan.get("head") is not None:
        raise bad(name, "its fitted plan names an ordinal head for a classifier")
    values = {_PLAN_PARAMETERS.get(k, k): v for k, v in plan.items()}
    values.update(beta_1=betas[0], beta_2=betas[1])
    try:
        checked = {k: values[k] for k in constraints.keys() & values.keys()}
        validate_parameter_constraints(constraints, checked, "the fitted plan")
        plan["hidden"] = hidden_sizes(plan["hidden"])
        for k, v in plan.items():
            if is_real(v) and not _finite(v):
                raise ValueError(f"{k} is not a finite number")
    except (TypeError, ValueError, OverflowError) as exc:
        raise bad(name, f"its fitted plan is invalid ({exc})") from None
    unchecked = set(plan) - set(_PLAN_DATA) - set(_PLAN_PARAMETERS) - set(constraints)
    unchecked -= {"head"}  # checked above for a classifier (None)
    if unchecked:  # a field nothing here knows how to check
        raise bad(name, f"its fitted plan has an unknown field {min(unchecked)!r}")
    carried = {field: a[attribute] for field, attribute in PLAN_ATTRIBUTES.items()}
    return FitPlan(**plan, **carried, device=estimator.device_)


def _check_tensors(estimator, plan, table, name, dtype):
    """``table`` (name -> (numpy dtype, shape, ...)) must be the network's tensors."""
    # A weight and a bias per layer, a slice of the output weight per member,
    # are held before the network is built on the meta device (no memory): no
    # width, depth or member count costs more than the state does.
    if 2 * (len(plan.hidden) + 1) > sum(key.startswith("module.") for key in table):
        raise bad(name, "its fitted plan describes more layers than it has tensors")
    members = plan.n_members if plan.n_members > 1 else None
    held = table.get("module.output.weight")
    if members != (held[1][0] if held is not None and len(held[1]) == 3 else None):
        raise bad(
            name,
            f"its fitted plan and attributes describe {members or 1} member(s) "
            "and its output "
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
            found = [
                estimator._make_criterion(plan, None, None) for _ in range(members or 1)
            ]
            criterion = MemberCriterion(found) if members else found[0]
            criterion = criterion.to(_networks.torch_dtype(plan.dtype))
    except (TypeError, ValueError, IndexError, RuntimeError) as exc:
        raise bad(name, f"its attributes cannot describe a network ({exc})") from None
    expected = {
        f"{part}.{key}": (tuple(tensor.shape), tensor.dtype)
        for part, found in zip(MODEL_PARTS, (module, criterion), strict=True)
        for key, tensor in found.state_dict().items()
    }
    missing = sorted(set(expected) - set(table))
    unexpected = sorted(set(table) - set(expected))
    if missing or unexpected:
        raise bad(
            name,
            "its tensors do not match the network its fitted plan describes "
            f"(missing {missing[:5]}, unexpected {unexpected[:5]})",
        )
    for key, (shape, dtype) in expected.items():
        file_dtype, file_shape = table[key][:2]
        if file_shape != shape or NUMPY_DTYPES.get(dtype) != file_dtype:
            raise bad(
                name,
                f"tensor {key} has shape {file_shape} and dtype {file_dtype}; "
                f"the network needs {shape} and {dtype}",
            )


@torch.no_grad()
def _check_loaded(estimator, name):
    """The loaded network's input scales, encoding and cut-points."""
    module, encoding = estimator.module_, estimator.module_.encoding
    if not bool((module.input_scale >= torch.finfo(torch.float64).tiny).all()):
        raise bad(
            name,
            "its network's input_scale holds zero, negative or subnormal "
            "values (a fit sets positive, normal scales)",
        )
    if encoding is not None:
        source = encoding.source
        if source.numel() and not (
            int(source.min()) >= 0 and int(source.max()) < encoding.n_features
        ):
            raise bad(name, "its encoding reads columns the input does not have")
        if not bool((source[1:] >= source[:-1]).all()):
            raise bad(name, "its encoding's columns are not in input order")
        if not bool((encoding.inv_width > 0).all() & (encoding.ramp_gain > 0).all()):
            raise bad(name, "its encoding has bins of non-positive width or scale")
    cut = getattr(estimator, "cutpoints_", None)
    if cut is not None and not (
        np.isfinite(cut).all() and (np.diff(cut, axis=-1) > 0).all()
    ):
        raise bad(name, "its cut-points are not finite and strictly increasing")


def _state_tensors(state, name):
    """The tensor table and reader of a :func:`fitted_state`'s numpy arrays."""
    raw = state.get("tensors")
    if not isinstance(raw, dict):
        raise bad(name, "it holds no tensors")
    table = {
        k: (v.dtype, v.shape) if isinstance(v, np.ndarray) else (None, ())
        for k, v in raw.items()
    }
    return table, lambda key: torch.from_numpy(np.ascontiguousarray(raw[key]))


def restore_state(estimator, state, name, *, device="cpu", tensors=None):
    """Check a :func:`fitted_state`, all of it before a network is built, and
    rebuild ``estimator`` (an empty instance of its class) from it; a ``ValueError``
    naming ``name`` on any inconsistency. ``tensors``: ``(table, reader)``, the
    table as :func:`_check_tensors` takes (by default, the state's numpy arrays)."""
    if not isinstance(state, dict):
        raise bad(name, "its state is not a dict")
    version = state.get("format_version")
    if not is_integer(version) or version < 1:
        raise bad(name, f"format_version {version!r:.40} is not a version (1, 2, ...)")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{name!r} uses model format version {version!r:.40}; this "
            f"cr_sklearn reads versions up to {FORMAT_VERSION}. Upgrade cr_sklearn."
        )
    cls = type(estimator)
    if state.get("estimator") != cls.__name__:
        raise bad(
            name, f"it holds a {state.get('estimator')!r:.80}, not a {cls.__name__}"
        )
    params = _check_params(estimator, state.get("params"), name)
    attributes = _check_attributes(cls, state.get("attributes"), name, version)
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
    _network_attributes(attributes, params, version, name)
    attributes.setdefault("n_encoded_features_", None)
    estimator.__dict__.update(
        {k: v for k, v in attributes.items() if k not in PLAN_ATTRIBUTES.values()}
    )
    with _invalid_parameters(name):
        class_weight_of(estimator, np.zeros(0, dtype=int))
    estimator.device_ = resolve_device(device)
    if version >= 4:
        plan = _fitted_plan(estimator, state.get("plan"), attributes, name)
        n_samples = plan.n_samples
    else:
        n_samples = 1000
    # The parameters, resolved as a fit would (their checks beyond the
    # constraints); up to format 3 they are those of the fit, and its plan.
    with warnings.catch_warnings(), _invalid_parameters(name):
        warnings.simplefilter("ignore")  # what a fit warns about was said then
        resolved = resolve_plan(
            estimator,
            n_samples,
            estimator.n_features_in_,
            estimator._n_outputs(),
            device=estimator.device_,
            incremental=False,
        )
    if version >= 4 and plan.head is None:
        # An ordinal plan saved before the field: the head of the file's params.
        plan = dataclasses.replace(plan, head=resolved.head)
    if version < 4:
        carried = {
            field: attributes.get(attribute, getattr(resolved, field))
            for field, attribute in PLAN_ATTRIBUTES.items()
        }
        plan = dataclasses.replace(resolved, **carried)
    dtype = torch.float64 if version >= 3 else torch.float32
    table, read = tensors or _state_tensors(state, name)
    _check_tensors(estimator, plan, table, name, dtype)
    # The state's tensors become the network's (no copy); float32 ones before 3.
    parts = {part: {} for part in MODEL_PARTS}
    for key in table:
        value = read(key)
        part, _, key = key.partition(".")
        is_float = part == "module" and value.is_floating_point()
        parts[part][key] = value.double() if is_float else value
    ordinal = cls.__name__ == "CROrdinalRegressor"
    _check_member_attributes(attributes, plan, name, ordinal=ordinal)
    # Building draws initial weights: the caller's random streams are kept.
    with torch.random.fork_rng(devices=[]):
        module = _networks.build(
            plan,
            estimator.n_features_in_,
            encoded=estimator.n_encoded_features_,
            n_members=plan.n_members if plan.n_members > 1 else None,
        )
    module.load_state_dict(parts["module"], strict=True, assign=True)
    estimator.module_ = module.to(estimator.device_).requires_grad_(False).eval()
    estimator._plan, estimator._built = plan, plan.network_values()
    estimator.net_ = rebuild_net(estimator)
    estimator.net_.criterion_.load_state_dict(parts["criterion"], strict=True)
    estimator._set_head_attributes(estimator.net_)
    estimator.net_.history = History(history)
    if "optimizer" in state:
        try:
            optimizer = _convert(state["optimizer"], numpy=False)
            estimator.net_.optimizer_.load_state_dict(optimizer)
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise bad(name, f"its optimizer state does not fit ({exc})") from None
    _check_loaded(estimator, name)
    return estimator
