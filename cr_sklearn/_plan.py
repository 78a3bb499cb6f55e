"""The plan of a fit: every ``"auto"`` and derived setting, resolved once (private).

A fit resolves the estimator's parameters against the data's shape into one
frozen :class:`FitPlan`; everything after that (the input transform, the
trainer, the members) reads the plan, never the parameters. The rules that
turn ``"auto"`` into values are the functions of the first section, each
with its formula, and the constants they read; a reader looking for "what
does ``dropout="auto"`` mean on this data" finds it here and nowhere else.
"""

import dataclasses
import math
import numbers
import os
import warnings
from dataclasses import dataclass

import numpy as np
from skorch.callbacks import Callback

from ._utils import find_stacklevel, is_integer, usable_cpus

__all__ = []


# -- the rules: "auto" values as functions of the data's shape -----------------

#: ``encoding_bins="auto"`` encodes up to this many input columns; wider
#: inputs (sentence embeddings) are not encoded.
AUTO_ENCODING_MAX_FEATURES = 100
#: ``n_members="auto"``: this many cross-fitted members from
#: ``AUTO_LARGE_SAMPLES`` training rows, one network below
#: (benchmarks/results/ordinal_round_d_tune.md and _confirm.md).
AUTO_MEMBERS = 4
AUTO_LARGE_SAMPLES = 1000
#: ``dropout="auto"``: with an input encoding, and without one.
AUTO_DROPOUT_ENCODED = 0.3
AUTO_DROPOUT = 0.1
#: ``batch_size="auto"``: ``min(AUTO_BATCH_SIZE, n_samples)``.
AUTO_BATCH_SIZE = 200
#: ``learning_rate_init="auto"``: this step at batch ``AUTO_BATCH_SIZE``.
AUTO_LEARNING_RATE = 1e-3
#: ``early_stopping="auto"`` holds out a validation set from this size on.
AUTO_HOLD_OUT_MIN_SAMPLES = 2000
#: ``max_iter="auto"``: epochs of a fixed budget or a hold-out fit ...
AUTO_MAX_EPOCHS = 100
#: ... and optimizer steps of a fit whose epochs the out-of-fold rows choose.
AUTO_MAX_STEPS = 2000
#: Folds of ``early_stopping="cv"``.
CV_FOLDS = 3
#: Patience of out-of-fold stopping: at least this many optimizer steps.
MIN_PATIENCE_STEPS = 50
#: ``n_projections="auto"``: the exact stream up to this many columns (the
#: columns the stream differentiates by), random projections above.
EXACT_STREAM_MAX_COLUMNS = 32
AUTO_PROJECTIONS = 4
#: ``n_threads="auto"``: one thread below this many multiply-adds per step
#: (batch rows x weights), at most ``AUTO_THREADS_MAX`` above
#: (benchmarks/results/threads.md).
AUTO_THREADS_MIN_MACS = 16_000_000
AUTO_THREADS_MAX = 4
#: The largest network a fit builds, in learnable parameters, counting every
#: member and the folds of ``early_stopping="cv"``.
MAX_NETWORK_PARAMETERS = 10**9
#: The highest ``degree``. Above it the arithmetic of a trained network is not
#: accurate: its two float64 evaluations (the folded plan and the layers op
#: by op) differ by over 1e-6 of the largest derivative at degree 32 and by
#: 4e-2 at 40 (1e-8 at 30), and float32 training diverges from 33 on.
MAX_DEGREE = 30
#: The most activated layers: each costs a training step a fixed overhead,
#: however narrow (about 10 ms a layer for a fit of one epoch on 300 rows,
#: so 10,000 layers of width 2 take minutes before the first epoch ends).
MAX_LAYERS = 1000
#: The most memory a training step (with the encoded training inputs) or a
#: prediction chunk may take: 8 GiB, and half the memory available.
MAX_STEP_BYTES = 8 * 2**30
#: Values a training step keeps per row and column of the layers, and per
#: stream column more (measured on a layer 100,000 wide: 8 without the
#: stream, 14 to 37 with 2 to 30 stream columns).
STEP_COPIES = 12
#: Elements of a prediction chunk (as ``_predict.CHUNK_ELEMENTS``).
PREDICTION_CHUNK_ELEMENTS = 2**17


def encoding_bins_rule(encoding_bins, n_samples, n_features, auto):
    """``encoding_bins`` resolved; ``"auto"`` by the estimator's ``auto`` pair.

    ``auto``: the bins below 1,000 training rows and from there (the
    classifier's ``(4, 4)``, the ordinal head's ``(None, 16)``), up to 100
    columns; no encoding above.
    """
    if encoding_bins == "auto":
        if n_features > AUTO_ENCODING_MAX_FEATURES:
            return None
        return auto[n_samples >= AUTO_LARGE_SAMPLES]
    return None if encoding_bins is None else int(encoding_bins)


def members_rule(n_members, n_samples, one_network):
    """``n_members`` resolved: ``"auto"`` is 4 from 1,000 training rows, else 1.

    ``one_network``: the fit needs one network (``partial_fit``,
    ``warm_start``, ``igpen_lambda > 0``, ``spectral_norm``), and ``"auto"``
    trains one.
    """
    if n_members != "auto":
        return int(n_members)
    large = n_samples >= AUTO_LARGE_SAMPLES
    return AUTO_MEMBERS if large and not one_network else 1


def dropout_rule(dropout, encoding_bins):
    """``dropout`` resolved: 0.3 with an input encoding, 0.1 without."""
    if dropout == "auto":
        return AUTO_DROPOUT if encoding_bins is None else AUTO_DROPOUT_ENCODED
    return float(dropout)


def batch_size_rule(batch_size, n_samples):
    """``batch_size`` resolved and capped at the rows: ``min(200, n)``."""
    size = AUTO_BATCH_SIZE if batch_size == "auto" else int(batch_size)
    return max(1, min(size, n_samples))


def learning_rate_rule(learning_rate_init, batch_size):
    """``learning_rate_init``; ``"auto"`` is ``1e-3 * max(1, batch / 200)``.

    Above 200 rows a batch averages more samples and an epoch takes fewer
    steps: the step grows in proportion (the linear scaling rule).
    """
    if learning_rate_init == "auto":
        return AUTO_LEARNING_RATE * max(1.0, batch_size / AUTO_BATCH_SIZE)
    return float(learning_rate_init)


def stopping_rule(early_stopping, n_samples, n_features, n_members, widest_fixed):
    """``"off"``, ``"hold-out"`` or ``"cv"``.

    Members choose their epochs on their own folds (``"cv"``) unless
    ``early_stopping=False``. ``"auto"`` trains a fixed budget below 2,000
    rows on inputs of at most ``widest_fixed`` columns (any width when
    ``None``) and holds out a validation set otherwise.
    """
    if n_members > 1:
        return "off" if early_stopping is False else "cv"
    if early_stopping == "cv":
        return "cv"
    if early_stopping == "auto":
        small = n_samples < AUTO_HOLD_OUT_MIN_SAMPLES
        narrow = widest_fixed is None or n_features <= widest_fixed
        return "off" if small and narrow else "hold-out"
    return "hold-out" if early_stopping else "off"


def max_epochs_rule(max_iter, stopping, steps_per_epoch):
    """``max_iter`` resolved: 100 epochs, or 2,000 steps when folds stop."""
    if max_iter != "auto":
        return int(max_iter)
    if stopping == "cv":
        return max(1, math.ceil(AUTO_MAX_STEPS / steps_per_epoch))
    return AUTO_MAX_EPOCHS


def patience_rule(n_iter_no_change, stopping, steps_per_epoch):
    """Epochs without improvement before stopping (at least 50 steps with folds)."""
    if stopping == "cv":
        return max(n_iter_no_change, math.ceil(MIN_PATIENCE_STEPS / steps_per_epoch))
    return int(n_iter_no_change)


def stream_rule(n_projections, n_columns):
    """The stream's directions: ``"exact"`` or a count.

    ``"auto"``: exact up to 32 columns, 4 random directions above; a count
    above the columns is the exact stream (as cheap, and exact).
    """
    if n_projections == "exact":
        return "exact"
    if n_projections == "auto":
        return "exact" if n_columns <= EXACT_STREAM_MAX_COLUMNS else AUTO_PROJECTIONS
    return "exact" if n_projections > n_columns else int(n_projections)


def threads_rule(n_threads, n_features, hidden, n_outputs, batch_size, n_members):
    """``n_threads`` resolved: 1 unless a step is large enough for more to pay.

    It depends on the shape and the usable CPUs only, never on the machine's
    momentary load, so seeded fits stay reproducible.
    """
    if n_threads != "auto":
        return n_threads
    sizes = [n_features, *hidden, n_outputs]
    weights = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    if batch_size * weights * n_members < AUTO_THREADS_MIN_MACS:
        return 1
    return min(usable_cpus(), AUTO_THREADS_MAX)


def available_memory():
    """Bytes of memory available to a new allocation, or ``None`` if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def network_parameters(architecture, n_inputs, hidden, n_outputs, poly, degree):
    """Learnable parameters of one network, counted without building it."""
    coefficients = degree + 1 if poly else 0
    if architecture == "residual":
        width, inner = hidden[0], hidden[1:]
        count = (n_inputs + 1) * width + coefficients * width
        count += sum(
            width + (width + 1) * w + coefficients * w + (w + 1) * width for w in inner
        )
        return count + (width + 1) * n_outputs
    sizes = [n_inputs, *hidden]
    count = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    count += coefficients * sum(hidden)
    return count + (sizes[-1] + 1) * n_outputs


# -- parameter checks that need more than sklearn's constraints ---------------


def hidden_sizes(value):
    """``hidden_layer_sizes`` as a tuple of ints >= 1; floats and bools raise."""
    entries = [value] if is_integer(value) else value
    if isinstance(value, (str, bytes, bool, np.bool_)) or not hasattr(
        entries, "__iter__"
    ):
        raise ValueError(
            "hidden_layer_sizes must be an int or a flat sequence of ints >= 1, "
            f"got {value!r:.80}."
        )
    entries = list(entries)
    if len(entries) > MAX_LAYERS:
        raise ValueError(
            f"hidden_layer_sizes has {len(entries):,} layers, over the bound of "
            f"{MAX_LAYERS:,}: each layer costs every training step a fixed "
            "overhead, so the fit would take hours. Use fewer, wider layers."
        )
    for i, size in enumerate(entries):
        if not is_integer(size) or size < 1:
            raise ValueError(
                f"hidden_layer_sizes[{i}] = {size!r:.40} is not an integer >= 1: "
                "hidden_layer_sizes must be an int or a flat sequence of ints "
                f">= 1, got {value!r:.80}."
            )
    return tuple(int(size) for size in entries)


def check_callbacks(callbacks):
    """Each entry: a skorch callback (instance or class) or ``(name, callback)``."""
    for i, entry in enumerate(callbacks or []):
        name, callback = None, entry
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[0], str):
                raise TypeError(
                    f"callbacks[{i}] = {entry!r:.80} is not a (name, callback) "
                    "tuple with a str name."
                )
            name, callback = entry
        is_class = isinstance(callback, type) and issubclass(callback, Callback)
        if not (isinstance(callback, Callback) or is_class):
            where = f"callbacks[{i}]" + ("" if name is None else f"[1] ({name!r})")
            raise TypeError(
                f"{where} = {callback!r:.80} is not a skorch callback: pass "
                "skorch.callbacks.Callback instances or (name, callback) tuples."
            )


def class_weights(class_weight, classes):
    """Per-class weights aligned with ``classes`` (``None``: no weights).

    As :func:`sklearn.utils.class_weight.compute_class_weight` for a dict:
    classes missing from it weigh 1, a key that is not a class raises unless
    every class has a weight, every weight is a finite number >= 0.
    ``"balanced"`` is resolved from the data by the caller.
    """
    if not isinstance(class_weight, dict):
        return None
    for key, value in class_weight.items():
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise TypeError(f"class_weight[{key!r}] = {value!r:.40} is not a number.")
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(
                f"class_weight[{key!r}] = {value!r} must be a finite number >= 0."
            )
    per_class = np.ones(len(classes))
    unweighted = []
    for i, label in enumerate(classes):
        try:
            per_class[i] = float(class_weight[label])
        except (KeyError, TypeError):
            unweighted.append(label)
    if unweighted and len(classes) - len(unweighted) != len(class_weight):
        labels = np.asarray(unweighted).tolist()
        raise ValueError(
            f"The classes, {labels}, are not in class_weight (its keys "
            f"{list(class_weight)[:10]} include labels that are not classes)."
        )
    return per_class


# -- the plan ------------------------------------------------------------------

#: The plan's fields that define the built network: they cannot change under
#: ``warm_start`` or ``partial_fit`` (growth changes ``hidden`` itself).
NETWORK_FIELDS = tuple(
    "architecture hidden activation degree dropout spectral_norm standardize "
    "encoding_bins dtype device".split()
)
#: The network fields whose ``"auto"`` depends on the rows of a call: a fit
#: that continues a network keeps what they resolved to when it was built.
AUTO_NETWORK_FIELDS = ("encoding_bins", "dropout")


@dataclass(frozen=True)
class FitPlan:
    """Every setting of one fit, resolved from the parameters and the data.

    The fields are plain values (a plan is saved with the model). The
    network fields (:data:`NETWORK_FIELDS`) are fixed once a network is
    built; the others are resolved anew by every fit.
    """

    # The data.
    n_samples: int
    n_features: int
    n_outputs: int
    # The network.
    architecture: str
    hidden: tuple
    activation: str
    degree: int
    dropout: float
    spectral_norm: bool
    standardize: bool
    encoding_bins: int | None
    dtype: str
    device: str
    n_members: int
    # Training.
    stopping: str
    validation_fraction: float
    batch_size: int
    learning_rate: float
    betas: tuple
    weight_decay: float
    max_epochs: int
    patience: int
    tol: float
    dreg: str | None
    dreg_lambda: float
    igpen_lambda: float
    n_projections: object
    stream_rows: int | None
    n_threads: int | None
    verbose: int
    # What the stream and IGPen differentiate by, with an input encoding
    # (a default, so that plans saved before the field existed load).
    dreg_space: str = "encoded"
    # The output-gradient spread penalty's strength (0 in older plans).
    spread_lambda: float = 0.0
    # The parameters as given that the fit's checks read: the convergence
    # check's window, early_stopping (False: max_epochs is the user's cap, not
    # a tuned budget, and a loss still falling warns) and oob_score.
    n_iter_no_change: int = 10
    early_stopping: object = "auto"
    oob_score: bool = False
    # Where the stream is carried: the rows, or points between them.
    dreg_points: str = "data"
    # The ordinal head's loss ("cumulative" or "coral"); None for the
    # classifier, and in ordinal plans saved before the field existed.
    head: str | None = None

    @property
    def cv_folds(self):
        """Members the fit trains: its members, or the folds that choose epochs."""
        if self.n_members > 1:
            return self.n_members
        return CV_FOLDS if self.stopping == "cv" else 1

    def continuing(self, built, params):
        """This plan for a fit continuing a network (``built``: its network values).

        An ``"auto"`` in ``params`` (the estimator's) for a field of
        :data:`AUTO_NETWORK_FIELDS` keeps the value the network was built with.
        """
        kept = {
            name: built[name]
            for name in AUTO_NETWORK_FIELDS
            if name in built and params[name] == "auto"
        }
        return dataclasses.replace(self, **kept)

    def network_values(self):
        """The network fields, by name."""
        return {name: getattr(self, name) for name in NETWORK_FIELDS}

    def check_same_network(self, built):
        """Raise if a network field differs from the network ``built`` with."""
        for name in NETWORK_FIELDS:
            if name in built and getattr(self, name) != built[name]:
                param = "hidden_layer_sizes" if name == "hidden" else name
                raise ValueError(
                    f"{param}={getattr(self, name)!r} differs from the fitted "
                    f"network's {built[name]!r}: {param} cannot change under "
                    "warm_start or partial_fit. Fit with warm_start=False to "
                    "rebuild the network."
                )

    def check_members(self, *, auto, warm_start, built_members):
        """Raise where members are asked of a fit that cannot have them.

        ``auto``: ``n_members="auto"`` chose; ``warm_start``: the fit continues
        a fitted model; ``built_members``: that model has members.
        """
        members = self.n_members > 1
        if not members and self.oob_score:
            chose = " (n_members='auto' chose one network)" if auto else ""
            raise ValueError(
                f"oob_score=True needs n_members > 1{chose}: the out-of-fold "
                "predictions come from the cross-fitted members (one network "
                "trains on every row, and no row is out of fold)."
            )
        if members and self.igpen_lambda > 0:
            raise ValueError(
                "igpen_lambda > 0 is not available with n_members > 1: the "
                "input-gradient penalty of a sum of the members' losses is not "
                "the sum of their penalties. Use dreg, or n_members=1."
            )
        # partial_fit does not exist on members (partial_fit_available).
        if warm_start and (members or built_members):
            raise ValueError(
                "warm_start=True is not available with n_members > 1 (or on a "
                "fitted member model): the folds belong to the data of the fit "
                "that built the members. Fit with warm_start=False (with "
                "n_members=1 for one network that later fits can warm-start)."
            )

    def check_memory(self, available=None):
        """Raise before any work when a step would not fit in memory.

        Estimated peak bytes of a training step (the batch of every member
        and fold through the layers' columns, times the values each keeps
        and the stream's columns) with the training inputs (encoded once;
        each column makes at most ``min(encoding_bins, n_samples - 1)``
        ramps), and of a prediction chunk (the rows of
        ``PREDICTION_CHUNK_ELEMENTS`` through every layer, at least one):
        over ``min(MAX_STEP_BYTES, available / 2)`` raises a ``ValueError``
        naming the parameters. ``available``: bytes (default: the memory
        available now).
        """
        if available is None:
            available = available_memory()
        bound = MAX_STEP_BYTES
        if available is not None:
            bound = min(bound, available // 2)
        itemsize = 4 if self.dtype == "float32" else 8
        d = self.n_features
        encoded = d
        if self.encoding_bins is not None:
            encoded = d * min(self.encoding_bins, max(1, self.n_samples - 1))
        widths = encoded + sum(self.hidden) + self.n_outputs
        columns = 0
        if self.dreg == "stream" or self.igpen_lambda > 0 or self.spread_lambda:
            by = encoded if self.dreg_space == "encoded" else d
            k = stream_rule(self.n_projections, by)
            columns = by if k == "exact" else k
            if self.stream_rows is not None:
                columns *= min(1.0, self.stream_rows / self.batch_size)
        rows = self.batch_size * self.cv_folds
        step = rows * widths * (STEP_COPIES + columns) * itemsize
        inputs = self.n_samples * encoded * itemsize
        # A prediction chunk: Jacobian rows through every layer, its rows set
        # by the widest layer (at least one).
        per_row = min(self.n_outputs, d) * 2 * self.n_members
        widest = max(*self.hidden, self.n_outputs, encoded)
        chunk_rows = max(1, PREDICTION_CHUNK_ELEMENTS // (per_row * widest))
        chunk = chunk_rows * per_row * widths * 8
        need = max(step + inputs, chunk)
        if need <= bound:
            return
        # The parameters to lower, the largest part first.
        names = ["hidden_layer_sizes", "batch_size"]
        if columns:
            names.append("n_projections")
        if self.encoding_bins is not None:
            first = encoded > sum(self.hidden)
            names.insert(0 if first else len(names), "encoding_bins")
        where = (
            f"the training inputs, {self.n_samples:,} rows x {encoded:,} columns"
            f"{' after the encoding' if self.encoding_bins else ''}, and a "
            f"training step, {rows:,} rows x {widths:,} columns of the layers "
            f"x {STEP_COPIES + columns:.0f} values"
            if step + inputs >= chunk
            else f"a prediction chunk, {chunk_rows:,} rows x {widths:,} columns "
            f"x {per_row} values"
        )
        value = self.encoding_bins if names[0] == "encoding_bins" else self.hidden
        raise ValueError(
            f"{names[0]}={value!r:.60} makes the fit need about "
            f"{need / 2**30:.3g} GiB for {where} ({self.dtype}), over the bound "
            f"of {bound / 2**30:.3g} GiB (8 GiB, and half the memory available). "
            f"Lower {', '.join(names[:-1])} or {names[-1]}."
        )

    def check_size(self, n_inputs):
        """Raise before building networks of over ``MAX_NETWORK_PARAMETERS``."""
        members = self.cv_folds
        one = network_parameters(
            self.architecture,
            int(n_inputs),
            self.hidden,
            self.n_outputs,
            self.activation == "poly",
            self.degree,
        )
        if one * members > MAX_NETWORK_PARAMETERS:
            what = f" x {members} networks" if members > 1 else ""
            raise ValueError(
                f"The network would have {one * members:.3g} learnable "
                f"parameters ({one:.3g}{what}: hidden_layer_sizes="
                f"{self.hidden!r:.60}, degree={self.degree}, {n_inputs} input "
                f"columns{' after the encoding' if self.encoding_bins else ''}), "
                f"over the bound of {MAX_NETWORK_PARAMETERS:.0e}. Use fewer or "
                "narrower layers, fewer members, a lower degree or fewer "
                "encoding_bins."
            )


def resolve_plan(estimator, n_samples, n_features, n_outputs, *, device, incremental):
    """The :class:`FitPlan` of ``estimator``'s parameters on this data.

    ``n_samples``: the rows that carry weight (rows of weight 0 are removed
    rows, so they count toward no rule). ``incremental``: a ``partial_fit``
    call (one epoch, no stopping). The
    estimator's class says what two ``"auto"`` values mean for its head:
    ``_auto_fixed_budget_max_features`` bounds ``early_stopping="auto"``'s
    fixed budget, and ``_auto_encoding_bins`` is ``encoding_bins="auto"``
    below and from 1,000 rows.
    """
    params = estimator.get_params(deep=False)
    widest_fixed = estimator._auto_fixed_budget_max_features
    hidden = hidden_sizes(params["hidden_layer_sizes"])
    check_callbacks(params["callbacks"])
    one_network = (
        incremental
        or params["warm_start"]
        or params["igpen_lambda"] > 0
        or params["spectral_norm"]
    )
    n_members = members_rule(params["n_members"], n_samples, one_network)
    bins = encoding_bins_rule(
        params["encoding_bins"], n_samples, n_features, estimator._auto_encoding_bins
    )
    stopping = "off"
    if not incremental:
        stopping = stopping_rule(
            params["early_stopping"], n_samples, n_features, n_members, widest_fixed
        )
    # The rows one optimizer step reads: a hold-out fit trains on the rest.
    train_rows = n_samples
    if stopping == "hold-out":
        train_rows = n_samples - int(np.ceil(params["validation_fraction"] * n_samples))
    batch = batch_size_rule(params["batch_size"], train_rows)
    steps = max(1, math.ceil(train_rows / batch))
    max_epochs = (
        1 if incremental else max_epochs_rule(params["max_iter"], stopping, steps)
    )
    if stopping == "cv" and n_members == 1 and n_samples < 2 * CV_FOLDS:
        # Too few rows for the folds: a fixed budget.
        stopping = "off"
        max_epochs = max_epochs_rule(params["max_iter"], stopping, 1)
    k = params["n_projections"]
    if not isinstance(k, str) and k > n_features:
        warnings.warn(
            f"n_projections={k} is more than the {n_features} features: capped, "
            "the exact stream (n_features directions, no estimation noise, no "
            "more cost) is used.",
            UserWarning,
            stacklevel=find_stacklevel(),
        )
    # Threads by the batch over every row (the folds' and the members'), as
    # the step that costs the most.
    full_batch = batch_size_rule(params["batch_size"], n_samples)
    return FitPlan(
        n_samples=int(n_samples),
        n_features=int(n_features),
        n_outputs=int(n_outputs),
        architecture=params["architecture"],
        hidden=hidden,
        activation=params["activation"],
        degree=int(params["degree"]),
        dropout=dropout_rule(params["dropout"], bins),
        spectral_norm=bool(params["spectral_norm"]),
        standardize=bool(params["standardize"]),
        encoding_bins=bins,
        dtype=params["dtype"],
        device=device,
        n_members=n_members,
        stopping=stopping,
        validation_fraction=float(params["validation_fraction"]),
        batch_size=batch,
        learning_rate=learning_rate_rule(params["learning_rate_init"], batch),
        betas=(float(params["beta_1"]), float(params["beta_2"])),
        weight_decay=float(params["weight_decay"]),
        max_epochs=max_epochs,
        patience=patience_rule(params["n_iter_no_change"], stopping, steps),
        tol=float(params["tol"]),
        dreg=params["dreg"],
        dreg_lambda=float(params["dreg_lambda"]) if params["dreg"] else 0.0,
        igpen_lambda=float(params["igpen_lambda"]),
        n_projections=k,
        stream_rows=params["stream_rows"],
        n_threads=threads_rule(
            params["n_threads"], n_features, hidden, n_outputs, full_batch, n_members
        ),
        verbose=int(params["verbose"]),
        dreg_space=params["dreg_space"],
        dreg_points=params["dreg_points"],
        spread_lambda=float(params["spread_lambda"]),
        n_iter_no_change=int(params["n_iter_no_change"]),
        early_stopping=params["early_stopping"],
        oob_score=bool(params["oob_score"]),
        head=params.get("head"),
    )
