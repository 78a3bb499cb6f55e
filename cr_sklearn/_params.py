"""Parameters of the CR estimators resolved and checked against the data (private).

``"auto"`` values and data-dependent checks: hidden sizes, the stream's
directions, the batch size and step, class weights and the training
objective the parameters describe.
"""

import numbers
import warnings

import numpy as np
from skorch.callbacks import Callback

from ._objective import TrainingObjective
from ._utils import find_stacklevel, is_integer, usable_cpus

__all__ = []

# Below this many input features the exact stream is cheap enough; above, the
# "auto" stream uses random projections (O(k) instead of O(d) passes).
_EXACT_STREAM_MAX_FEATURES = 32
_AUTO_PROJECTIONS = 4


# n_threads="auto": below this many multiply-adds per optimizer step (batch
# rows x weights) a second thread gains little when the cores are idle and
# costs several times over when they are shared; above it, more threads pay
# (benchmarks/bench_threads.py, results/threads.md).
_AUTO_THREADS_MIN_MACS = 16_000_000
_AUTO_THREADS_MAX = 4


# encoding_bins="auto": the piecewise-linear encoding with 4 bins, chosen on
# the benchmark suite's tuning half, whose widest table has 91 columns; wider
# inputs (sentence embeddings have 384 and more) stay unencoded: the encoding
# was not tuned there, and the first layer's inputs grow with bins x columns.
_AUTO_ENCODING_BINS = 4
_AUTO_ENCODING_MAX_FEATURES = 100
# dropout="auto": chosen on the tuning half with the encoding; without it,
# the rate the earlier defaults were tuned with (benchmarks/tune_defaults.py).
_AUTO_DROPOUT_ENCODED = 0.3
_AUTO_DROPOUT = 0.1
# CROrdinalRegressor's early_stopping="auto": a fixed budget below 2,000
# samples on tabular inputs only. On sentence embeddings (384 columns) below
# 2,000 rows the fixed budget overfit (benchmarks/results/
# text_ordinal_rejected.md), so wider inputs keep the hold-out at any size.
_AUTO_FIXED_BUDGET_MAX_FEATURES_ORDINAL = 100


# The largest network a fit builds, in learnable parameters: in float32 that
# is 4 GB of weights, and training holds as much again in gradients, twice as
# much in Adam's moments and a float64 copy for prediction.
MAX_NETWORK_PARAMETERS = 10**9


def network_parameters(architecture, n_inputs, hidden_sizes, n_outputs, poly, degree):
    """Learnable parameters of a network, counted without building it.

    ``n_inputs`` is the width the first layer reads (the encoded columns with
    an encoding); ``poly``: whether the activations are polynomials of
    ``degree`` (``degree + 1`` coefficients per unit).
    """
    coefficients = degree + 1 if poly else 0
    if architecture == "residual":
        width, inner = hidden_sizes[0], hidden_sizes[1:]
        count = (n_inputs + 1) * width + coefficients * width
        # Each block: a gain, the inner layer, its activation, the projection.
        count += sum(
            width + (width + 1) * w + coefficients * w + (w + 1) * width for w in inner
        )
        return count + (width + 1) * n_outputs
    sizes = [n_inputs, *hidden_sizes]
    count = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    count += coefficients * sum(hidden_sizes)
    return count + (sizes[-1] + 1) * n_outputs


class ResolvedParamsMixin:
    """Resolve the estimator's parameters for a fit on given data."""

    def _class_sample_weight(self, y_codes):
        """Per-sample weights implied by ``class_weight`` (ones if ``None``)."""
        if self.class_weight is None:
            return np.ones(len(y_codes))
        n_classes = len(self.classes_)
        if isinstance(self.class_weight, str):
            counts = np.bincount(y_codes, minlength=n_classes).astype(float)
            per_class = len(y_codes) / (n_classes * np.maximum(counts, 1))
        else:
            per_class = self._check_class_weight()
        return per_class[y_codes]

    def _hidden_sizes(self):
        """``hidden_layer_sizes`` as a list of ints, validated.

        An int (one layer) or a flat sequence of ints, each >= 1. Floats and
        bools are rejected, not truncated: ``(2.7,)`` is not 2 units.
        """
        sizes = self.hidden_layer_sizes
        entries = [sizes] if is_integer(sizes) else sizes
        if isinstance(sizes, (str, bytes, bool, np.bool_)) or not hasattr(
            entries, "__iter__"
        ):
            raise ValueError(
                "hidden_layer_sizes must be an int or a flat sequence of ints "
                f">= 1, got {sizes!r:.80}."
            )
        entries = list(entries)
        for i, size in enumerate(entries):
            if not is_integer(size) or size < 1:
                raise ValueError(
                    f"hidden_layer_sizes[{i}] = {size!r:.40} is not an integer "
                    ">= 1: hidden_layer_sizes must be an int or a flat sequence "
                    f"of ints >= 1, got {sizes!r:.80}."
                )
        return [int(size) for size in entries]

    def _resolve_network(self, n_features):
        """``(encoding_bins_, dropout_)``: the ``"auto"`` values for this data.

        ``encoding_bins="auto"`` encodes with 4 bins up to 100 input columns
        and not above; ``dropout="auto"`` is 0.3 with an encoding, else 0.1.
        """
        bins = self.encoding_bins
        if bins == "auto":
            encode = n_features <= _AUTO_ENCODING_MAX_FEATURES
            bins = _AUTO_ENCODING_BINS if encode else None
        dropout = self.dropout
        if dropout == "auto":
            dropout = _AUTO_DROPOUT if bins is None else _AUTO_DROPOUT_ENCODED
        return (None if bins is None else int(bins)), float(dropout)

    def _stream_mode(self, n_features):
        if self.n_projections == "exact":
            return "exact"
        if self.n_projections == "auto":
            if n_features <= _EXACT_STREAM_MAX_FEATURES:
                return "exact"
            return _AUTO_PROJECTIONS
        if self.n_projections > n_features:
            # Capped: the exact stream carries n_features directions, costs
            # no more than more random ones and has no estimation noise.
            return "exact"
        return int(self.n_projections)

    def _batch_size(self, n_samples):
        if self.batch_size == "auto":
            return min(200, n_samples)
        return min(int(self.batch_size), n_samples)

    def _learning_rate(self):
        """``learning_rate_init``; ``"auto"`` scales 1e-3 with the batch.

        Above 200 rows a batch averages more samples per step, so there are
        fewer steps per epoch: the step grows in proportion (the linear
        scaling rule), keeping the per-epoch progress of batch 200.
        """
        if self.learning_rate_init == "auto":
            return 1e-3 * max(1.0, self._batch_size_ / 200)
        return float(self.learning_rate_init)

    def _objective(self, n_features):
        """The training objective of the current parameters."""
        return TrainingObjective.from_params(
            dreg=self.dreg,
            dreg_lambda=self.dreg_lambda,
            igpen_lambda=self.igpen_lambda,
            directions=self._stream_mode(n_features),
            stream_rows=self.stream_rows,
        )

    def _check_fit_params(self, n_features):
        """Check the parameters against data with ``n_features`` columns.

        ``hidden_layer_sizes`` must be ints >= 1 and ``callbacks`` skorch
        callbacks; an ``n_projections`` above ``n_features`` is capped (the
        exact stream is used), with a warning.
        """
        self._hidden_sizes()
        self._check_callbacks()
        k = self.n_projections
        if not isinstance(k, str) and k > n_features:
            warnings.warn(
                f"n_projections={k} is more than the {n_features} features: "
                "capped, the exact stream (n_features directions, no estimation "
                "noise, no more cost) is used.",
                UserWarning,
                stacklevel=find_stacklevel(),
            )

    def _check_network_size(self, n_inputs):
        """Raise before building a network of over ``MAX_NETWORK_PARAMETERS``.

        ``n_inputs``: the columns the first layer reads.
        """
        count = network_parameters(
            self.architecture,
            int(n_inputs),
            self._hidden_sizes(),
            self._n_outputs(),
            self.activation == "poly",
            int(self.degree),
        )
        if count > MAX_NETWORK_PARAMETERS:
            raise ValueError(
                f"The network would have {count:.3g} learnable parameters "
                f"(hidden_layer_sizes={self.hidden_layer_sizes!r:.60}, "
                f"degree={self.degree!r:.30}, {n_inputs} input columns"
                f"{' after the encoding' if self.encoding_bins_ else ''}), over "
                f"the bound of {MAX_NETWORK_PARAMETERS:.0e}. Use fewer or "
                "narrower layers, a lower degree or fewer encoding_bins."
            )

    def _check_callbacks(self):
        """Each entry of ``callbacks``: a skorch callback or ``(name, callback)``."""
        for i, entry in enumerate(self.callbacks or []):
            name, callback = (None, entry)
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
                    "skorch.callbacks.Callback instances or (name, callback) "
                    "tuples."
                )

    def _check_class_weight(self):
        """Per-class weights of a dict ``class_weight``, aligned with ``classes_``.

        As :func:`sklearn.utils.class_weight.compute_class_weight`: classes
        missing from the dict weigh 1, and a key that is not a class raises
        unless every class has a weight. Every weight must be a finite
        number >= 0 (0 removes the class from the loss). ``None`` when
        ``class_weight`` is not a dict.
        """
        weights = self.class_weight
        if not isinstance(weights, dict):
            return None
        for key, value in weights.items():
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                raise TypeError(
                    f"class_weight[{key!r}] = {value!r:.40} is not a number."
                )
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(
                    f"class_weight[{key!r}] = {value!r} must be a finite number >= 0."
                )
        per_class = np.ones(len(self.classes_))
        unweighted = []
        for i, label in enumerate(self.classes_):
            try:
                per_class[i] = float(weights[label])
            except (KeyError, TypeError):
                unweighted.append(label)
        if unweighted and len(self.classes_) - len(unweighted) != len(weights):
            labels = np.asarray(unweighted).tolist()
            raise ValueError(
                f"The classes, {labels}, are not in class_weight (its keys "
                f"{list(weights)[:10]} include labels that are not classes)."
            )
        return per_class

    def _fit_threads(self, n_features, n_samples, n_members=1):
        """Torch threads for a fit: ``n_threads``, with ``"auto"`` resolved.

        ``"auto"`` is one thread unless a step's arithmetic (batch rows times
        the network's weights) is large enough for more to pay, then at most
        four of the CPUs this process may use (``n_members`` networks do
        that many times the arithmetic). It depends on the problem's
        shape and the usable CPUs only, never on the machine's momentary
        load, so seeded fits stay reproducible.
        """
        if self.n_threads != "auto":
            return self.n_threads
        sizes = [n_features, *self._hidden_sizes(), self._n_outputs()]
        weights = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        macs = self._batch_size(n_samples) * weights * n_members
        if macs < _AUTO_THREADS_MIN_MACS:
            return 1
        return min(usable_cpus(), _AUTO_THREADS_MAX)
