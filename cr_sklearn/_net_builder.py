"""Building the skorch net of a CR estimator from its parameters (private)."""

import copy
from dataclasses import dataclass

import numpy as np
import torch
from skorch.callbacks import PassthroughScoring
from skorch.history import History

from ._cross_fit import MemberCriterion
from ._encoding import quantile_edges
from ._training import (
    _BatchLoader,
    _CRNet,
    _EarlyStopping,
    _FiniteGuard,
    _torch_context,
    _ValidScore,
)
from ._training_output import EpochProgressBar, TrainingOutput
from .nn import ARCHITECTURES, PiecewiseLinearEncoding

__all__ = []


# What defines the built network: these cannot change under warm_start or
# partial_fit (growth changes hidden_layer_sizes together with the network).
_NETWORK_PARAMS = (
    "architecture",
    "hidden_layer_sizes",
    "activation",
    "degree",
    "dropout",
    "spectral_norm",
    "standardize",
    "encoding_bins",
    "device",
)

# Training rows per chunk when the ramps' means and scales are computed, and
# at most this many encoded values per chunk (wide encodings take fewer rows).
_RAMP_STATS_ROWS = 4096
_RAMP_STATS_ELEMENTS = 2**24


@dataclass
class _InputTransform:
    """The standardisation and the encoding fitted on the training rows."""

    mean: np.ndarray
    scale: np.ndarray
    edges: list = None
    ramp_mean: np.ndarray = None
    ramp_scale: np.ndarray = None


def _representable(edges):
    """``edges`` as the float32 network holds them, or ``None`` (a copy).

    A column whose bins collapse or whose ``1 / width`` overflows in float32
    (a column of tiny spread) passes through instead.
    """
    if edges is None:
        return None
    edges = np.unique(edges.astype(np.float32))
    with np.errstate(divide="ignore", over="ignore"):
        inverse = (1.0 / np.diff(edges)).astype(np.float32)
    if edges.size < 3 or not np.isfinite(inverse).all():
        return None
    return edges.astype(np.float64)


def _positive_scale(scale):
    # Constant columns, and scales that underflow in float32, keep scale 1.
    scale = np.array(scale, dtype=np.float64)
    scale[~(scale >= np.finfo(np.float32).tiny)] = 1.0
    return scale


def _silent(*args, **kwargs):
    pass


class NetBuilderMixin:
    """The torch module, the callbacks and the skorch net of the current parameters.

    With an encoding (``encoding_bins``) the DREG stream differentiates by
    the encoded columns (``_encoding_stream_space``): the encoding acts as
    fixed features, as :class:`~cr_sklearn.PiecewiseLinearEncoder` before the
    network would, while :meth:`jacobian` stays with respect to ``X``.

    Needs the estimator's parameters, ``_n_outputs()``, ``_make_criterion()``,
    ``_validation_score``, ``_output_bias``, ``_objective(n_features)``,
    ``_hidden_sizes()``, ``_learning_rate()`` and ``_batch_size_``.
    """

    _encoding_stream_space = "encoded"

    def _make_module(self, n_features, n_members=None):
        """Build the torch module for ``self.architecture``.

        Reads the resolved ``encoding_bins_`` and ``dropout_``; with an
        encoding, the module has ``n_encoded_features_`` encoded columns (set
        by :meth:`_fit_inputs`). ``n_members``: a member module of that many
        networks (``None``: one network).
        """
        encoded = None if self.encoding_bins_ is None else self.n_encoded_features_
        self._check_network_size(n_features if encoded is None else encoded)
        return ARCHITECTURES[self.architecture](
            n_features,
            self._n_outputs(),
            hidden_layer_sizes=self._hidden_sizes(),
            activation=self.activation,
            degree=self.degree,
            dropout=self.dropout_,
            spectral_norm=self.spectral_norm,
            encoded_features=encoded,
            stream_space=self._encoding_stream_space,
            **({} if n_members is None else {"n_members": n_members}),
        )

    def _fit_inputs(self, X):
        """Fit the standardisation and the encoding on the training rows ``X``.

        Sets ``n_encoded_features_``. The bins are quantiles of the
        standardised columns, and each ramp is standardised with its training
        mean and standard deviation, as a scaler after
        :class:`~cr_sklearn.PiecewiseLinearEncoder` would.
        """
        d = X.shape[1]
        mean, scale = np.zeros(d), np.ones(d)
        if self.standardize:
            mean = np.mean(X, axis=0, dtype=np.float64)
            scale = _positive_scale(np.std(X, axis=0, dtype=np.float64))
        transform = _InputTransform(mean, scale)
        self.n_encoded_features_ = None
        if self.encoding_bins_ is None:
            return transform
        H = (X - mean) / scale
        edges = quantile_edges(H, self.encoding_bins_, name="encoding_bins")
        edges = [_representable(e) for e in edges]
        n_encoded = PiecewiseLinearEncoding.size(edges)
        # The network's size is known now: refuse it before allocating.
        self._check_network_size(n_encoded)
        encoding = PiecewiseLinearEncoding(d, n_encoded).double().set_edges(edges)
        # Mean and variance of the ramps in chunks: bounded temporaries.
        total = np.zeros(encoding.n_encoded)
        squares = np.zeros(encoding.n_encoded)
        rows = max(1, min(_RAMP_STATS_ROWS, _RAMP_STATS_ELEMENTS // n_encoded))
        with torch.no_grad():
            for start in range(0, len(H), rows):
                ramps = encoding(torch.as_tensor(H[start : start + rows]))
                total += ramps.sum(0).numpy()
                squares += (ramps**2).sum(0).numpy()
        ramp_mean = total / len(H)
        variance = np.maximum(squares / len(H) - ramp_mean**2, 0.0)
        copies = ~encoding.ramp.numpy()
        ramp_mean[copies] = 0.0
        ramp_scale = _positive_scale(np.sqrt(variance))
        ramp_scale[copies] = 1.0
        self.n_encoded_features_ = encoding.n_encoded
        transform.edges = edges
        transform.ramp_mean, transform.ramp_scale = ramp_mean, ramp_scale
        return transform

    def _set_inputs(self, module, transform):
        """Install a fitted :class:`_InputTransform` in a fresh ``module``."""
        if self.standardize:
            module.set_input_scaling(transform.mean, transform.scale)
        if transform.edges is not None:
            module.encoding.set_edges(transform.edges)
            module.encoding.set_ramp_scaling(transform.ramp_mean, transform.ramp_scale)

    def _initialize_output(self, module, y_codes, member_rows=None):
        """Start training from the prior: zero output weights, prior bias.

        The initial model predicts the training class prior for every input,
        never worse than the majority class, and the first steps fit the
        output layer on near-linear features (the polynomials start as the
        identity), so short or small-data fits behave like a linear model.
        Spectrally normalised output layers keep their random start (a zero
        matrix has no spectral normalisation). A member module's member ``m``
        starts from the prior of ``y_codes[member_rows[m]]``.
        """
        if self.spectral_norm:
            return
        n_members = getattr(module, "n_members", None)
        with torch.no_grad():
            module.output.weight.zero_()
            if n_members is None:
                bias = self._output_bias(y_codes)
                if bias is not None:
                    module.output.bias.copy_(torch.as_tensor(bias))
                return
            # Each member starts from the prior of its own training rows.
            for m, rows in enumerate(member_rows):
                bias = self._output_bias(y_codes[rows])
                if bias is not None:
                    module.output.bias[m].copy_(torch.as_tensor(bias))

    def _callbacks(self, quiet=False, stopping=None):
        verbose = 0 if quiet else self.verbose
        if stopping is None:
            stopping = _EarlyStopping(
                monitor="valid_loss",
                patience=self.n_iter_no_change,
                threshold=self.tol,
                threshold_mode="rel",
                load_best=True,
                sink=print if verbose else _silent,
            )
        callbacks = [
            ("penalty", PassthroughScoring(name="penalty", on_train=True)),
            ("finite_guard", _FiniteGuard()),
            ("valid_score", _ValidScore(self._validation_score)),
            ("early_stopping", stopping),
        ]
        if verbose:
            note = None
            if self.dreg is not None and self.dreg_lambda:
                note = (
                    f"penalty: the DREG penalty before scaling by dreg_lambda="
                    f"{self.dreg_lambda:g}\n"
                    "train_loss: data loss + dreg_lambda * penalty"
                )
            if self._member_count() is not None:
                note = (note + "\n" if note else "") + (
                    "members: train_loss and penalty are summed over the members; "
                    "valid_loss is their pooled out-of-fold loss"
                )
            callbacks.append(("training_output", TrainingOutput(note)))
            if verbose >= 2:
                callbacks.append(("progress_bar", EpochProgressBar()))
        # Internal runs (the folds that choose the epoch count) stay silent
        # and leave the user's callbacks to the fit that is returned.
        for i, cb in enumerate([] if quiet else self.callbacks or []):
            callbacks.append(cb if isinstance(cb, tuple) else (f"user_{i}", cb))
        return callbacks

    def _build_net(self, module, criterion, n_features, *, quiet=False, stopping=None):
        """A skorch net of the current parameters around ``module``/``criterion``.

        ``quiet``: no output and no user callbacks (an internal run).
        ``stopping``: the callback in the place of the hold-out early stopping
        (a member fit's :class:`~cr_sklearn._cross_fit.MemberStopping`).
        """
        verbose = 0 if quiet else int(self.verbose)
        no_decay = {"weight_decay": 0.0}
        net = _CRNet(
            module=module,
            criterion=criterion,
            optimizer=torch.optim.AdamW,
            lr=self._learning_rate(),
            optimizer__weight_decay=self.weight_decay,
            optimizer__betas=(float(self.beta_1), float(self.beta_2)),
            # One fused kernel for all parameters: ~4x cheaper per step than
            # the per-tensor loop, which matters for small tabular nets.
            optimizer__fused=True,
            # Decay weight matrices only: biases, polynomial coefficients and
            # ordinal cut-points have their own natural scale.
            optimizer__param_groups=[
                (pattern, no_decay)
                for part in (module, criterion)
                for pattern in getattr(part, "no_decay_patterns", ())
            ]
            # Without decay one group does: one fused kernel call per step.
            if self.weight_decay > 0
            else [],
            max_epochs=getattr(self, "max_iter_", 1),
            batch_size=self._batch_size_,
            iterator_train=_BatchLoader,
            iterator_valid=_BatchLoader,
            iterator_train__shuffle=True,
            callbacks=self._callbacks(quiet, stopping),
            device=self.device_,
            verbose=verbose,
            # The stream's directions count the columns it differentiates by.
            objective=self._objective(module.stream_width),
            # skorch formats its epoch table even when silent: drop it then.
            **(
                # A member fit's per-member losses: in the history, not the table.
                {"callbacks__print_log__keys_ignored": ["member_valid_loss"]}
                if verbose
                else {"callbacks__print_log": None}
            ),
        )
        net.initialize()
        return net

    def _new_net(self, n_features):
        """A freshly initialised network (random weights) in a net.

        With ``n_members > 1``, a member module and one criterion per member.
        """
        n_members = self._member_count()
        return self._build_net(
            self._make_module(n_features, n_members),
            self._make_criteria(n_members),
            n_features,
        )

    def _make_criteria(self, n_members):
        """The criterion, or one per member in a :class:`MemberCriterion`."""
        criterion = self._make_criterion()
        if n_members is None:
            return criterion
        return MemberCriterion([copy.deepcopy(criterion) for _ in range(n_members)])

    def _member_count(self):
        """``n_members`` when above 1, else ``None`` (one network)."""
        n_members = getattr(self, "n_members", 1)
        return int(n_members) if n_members > 1 else None

    def _warm_net(self, *, keep_optimizer):
        """A net of the current parameters around copies of the fitted model.

        The module, criterion, optimizer state and history are copies: the
        fitted net stays as it is until the fit that trains the copies
        completes (an interrupted fit leaves it intact).
        """
        old = self.net_
        # One deepcopy, one memo: the copied optimizer state is keyed by the
        # copied parameters.
        module, criterion, moments = copy.deepcopy(
            (old.module_, old.criterion_, old.optimizer_.state)
        )
        net = self._build_net(module, criterion, self.n_features_in_)
        net.history = History(old.history)
        if keep_optimizer:
            # Adam's moments carry over, under the current learning rate and
            # weight decay.
            net.optimizer_.state.update(moments)
        return net

    def _rebuild_net(self):
        """A fresh net of the fitted architecture, for weights to be loaded."""
        # Initialisation draws random weights: keep the caller's RNG as it is.
        self._batch_size_ = getattr(self, "_batch_size_", 1)
        with _torch_context(0, None, self.device_):
            return self._new_net(self.n_features_in_)

    def _set_net(self, net):
        """Install a loaded or rebuilt net as the fitted one."""
        net.valid_dataset_ = None
        self.net_ = net
        self.module_ = net.module_
        self._built_network_params = self._network_params()
        self._refresh_inference_module()

    def _network_params(self):
        """The parameters that define the built network, as plain values."""
        params = {name: getattr(self, name) for name in _NETWORK_PARAMS}
        params["hidden_layer_sizes"] = tuple(self._hidden_sizes())
        if not isinstance(self.dropout, str):
            params["dropout"] = float(self.dropout)
        return params

    def _check_network_params(self):
        """Raise if a parameter that defines the network changed since it was built."""
        built = getattr(self, "_built_network_params", None)
        if built is None:
            return
        current = self._network_params()
        for name in _NETWORK_PARAMS:
            if current[name] != built[name]:
                raise ValueError(
                    f"{name}={current[name]!r} differs from the fitted network's "
                    f"{built[name]!r}: {name} cannot change under warm_start or "
                    "partial_fit. Fit with warm_start=False to rebuild the network."
                )

    def _network_changed(self, hidden_layer_sizes):
        """Adopt a network changed in place (growth) with these hidden sizes.

        Starts a fresh optimizer state, sets ``hidden_layer_sizes`` to match
        the network and refreshes the inference copy.
        """
        # Fresh optimizer state over the new parameter set: warm-start training
        # continues from the changed network.
        self.net_.initialize_optimizer()
        self.module_ = self.net_.module_
        self.hidden_layer_sizes = tuple(hidden_layer_sizes)
        self._built_network_params = self._network_params()
        self._refresh_inference_module()
