"""Shared base of the CR estimators: parameters, fitting, prediction, Jacobians."""

import copy
import numbers
import threading
import warnings
from abc import abstractmethod
from contextlib import contextmanager

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)
from skorch.callbacks import PassthroughScoring, ProgressBar
from skorch.helper import predefined_split
from skorch.history import History

from ._training import (
    _BatchLoader,
    _CRNet,
    _EarlyStopping,
    _FiniteGuard,
    _TensorDataset,
    _torch_context,
    _ValidScore,
)
from .nn import ACTIVATIONS, PENALTIES, CRNetwork

__all__ = ["BaseCR"]

# Below this many input features the exact stream is cheap enough; above, the
# "auto" stream uses random projections (O(k) instead of O(d) passes).
_EXACT_STREAM_MAX_FEATURES = 32
_AUTO_PROJECTIONS = 4
# early_stopping="auto": below this many training samples the 10% hold-out is
# too small to pick the epoch (measured: it lost about a point to a fixed
# budget on 450-1300-row folds); above it, a fixed budget overfits (SST-5,
# 8,544 rows: 34.2% with 100 fixed epochs against 44.1% early-stopped).
_AUTO_EARLY_STOPPING_MIN_SAMPLES = 2000
# Rows x (directions or outputs) x width elements per inference chunk. Small
# enough (1 MiB of float64) for the activation's elementwise chain to stay in
# cache: 4x faster on 100k rows than 2**22, and memory stays bounded.
_CHUNK_ELEMENTS = 2**17
# Training runs in float32 (max 3.4e38): larger inputs would overflow while
# centring, scaling or in the first layer.
_MAX_ABS_TRAINING_INPUT = 1e30
# MKL picks its kernels by the threads it finds free, so concurrent calls can
# differ from serial ones in the last bit: one evaluation at a time keeps
# threaded predictions bit-identical to serial ones.
_INFERENCE_LOCK = threading.Lock()


@contextmanager
def _inference_context():
    # torch applies set_num_threads to a new thread's OpenMP/MKL settings
    # lazily: a thread that only ran matmuls would keep MKL's default thread
    # count, and its results could differ from the main thread's in the last
    # bit. get_num_threads() applies the setting to the calling thread.
    torch.get_num_threads()
    with _INFERENCE_LOCK, torch.inference_mode():
        yield


def _check_finite_rows(values, what):
    """Raise a ValueError naming the rows whose ``values`` are not all finite."""
    bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(
            f"The {what} is not finite for {len(rows)} of {len(values)} samples "
            f"(rows {rows[:10].tolist()}): their features lie too far outside "
            "the range the model was trained on."
        )
    return values


def _check_training_range(X):
    """Reject features too large for float32 training, naming the columns."""
    max_abs = np.abs(X).max(axis=0) if X.size else np.zeros(X.shape[1])
    cols = np.flatnonzero(max_abs > _MAX_ABS_TRAINING_INPUT)
    if len(cols):
        raise ValueError(
            f"X contains values too large to train on: |x| up to "
            f"{max_abs[cols].max():.3g} in column(s) {cols[:10].tolist()} "
            f"(limit {_MAX_ABS_TRAINING_INPUT:.0e}; training runs in float32). "
            "Rescale these features, e.g. with np.log1p or "
            "sklearn.preprocessing.RobustScaler."
        )


def _warn_if_unstandardized(X):
    """Warn, naming columns, when features are far from zero mean, unit scale."""
    if X.shape[0] < 2:
        return
    mean = np.mean(X, axis=0)
    std = np.std(X, axis=0)
    # Loose bounds: only scales that slow or destabilise training are flagged.
    off = (
        (np.abs(mean) > 3 * np.maximum(std, 1.0))
        | (std > 10)
        | ((std > 0) & (std < 0.1))
    )
    cols = np.flatnonzero(off)
    if len(cols):
        warnings.warn(
            f"Features are not standardised (column(s) {cols[:10].tolist()} have "
            "a mean or standard deviation far from 0 and 1) and "
            "standardize=False. Set standardize=True (the default), or scale "
            "X first, e.g. make_pipeline(StandardScaler(), CRClassifier(...)).",
            UserWarning,
            stacklevel=3,
        )


def _silent(*args, **kwargs):
    pass


def _resolve_device(device):
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    message = f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}."
    try:
        kind = torch.device(device).type
    except RuntimeError as exc:
        raise ValueError(message) from exc
    if kind not in ("cpu", "cuda"):
        raise ValueError(message)
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was requested but CUDA is not available.")
    return device


class BaseCR(BaseEstimator):
    """Base class of the CR estimators. Not meant to be used directly.

    Subclasses define the output layer size, the loss (criterion), how
    targets are encoded and the validation score.
    """

    _parameter_constraints = {
        "architecture": [StrOptions({"mlp", "residual"})],
        "hidden_layer_sizes": [
            "array-like",
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "activation": [StrOptions({"poly", *ACTIVATIONS})],
        "degree": [Interval(numbers.Integral, 1, None, closed="left")],
        "dreg": [StrOptions(set(PENALTIES)), None],
        "dreg_lambda": [Interval(numbers.Real, 0, None, closed="left")],
        "n_projections": [
            StrOptions({"auto", "exact"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "stream_rows": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        # Above float32's range torch's optimiser fails with an overflow.
        "learning_rate_init": [
            Interval(numbers.Real, 0, 1e30, closed="neither"),
            StrOptions({"auto"}),
        ],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "dropout": [Interval(numbers.Real, 0, 1, closed="left")],
        "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
        "spectral_norm": ["boolean"],
        "igpen_lambda": [Interval(numbers.Real, 0, None, closed="left")],
        "standardize": ["boolean"],
        "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "device": [str],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "callbacks": [list, None],
    }

    def __init__(
        self,
        hidden_layer_sizes=(64, 64),
        *,
        architecture="mlp",
        activation="poly",
        degree=3,
        dreg="stream",
        dreg_lambda=10**-2,
        n_projections="auto",
        stream_rows=64,
        max_iter=100,
        batch_size="auto",
        learning_rate_init=1e-3,
        early_stopping="auto",
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-4,
        class_weight=None,
        dropout=0.1,
        weight_decay=0.0,
        spectral_norm=False,
        igpen_lambda=0.0,
        standardize=True,
        n_threads=None,
        random_state=None,
        device="cpu",
        verbose=0,
        warm_start=False,
        callbacks=None,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.architecture = architecture
        self.activation = activation
        self.degree = degree
        self.dreg = dreg
        self.dreg_lambda = dreg_lambda
        self.n_projections = n_projections
        self.stream_rows = stream_rows
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate_init = learning_rate_init
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.class_weight = class_weight
        self.dropout = dropout
        self.weight_decay = weight_decay
        self.spectral_norm = spectral_norm
        self.igpen_lambda = igpen_lambda
        self.standardize = standardize
        self.n_threads = n_threads
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.warm_start = warm_start
        self.callbacks = callbacks

    # -- hooks for subclasses ----------------------------------------------
    @abstractmethod
    def _encode_targets(self, y, *, reset, classes=None):
        """Validate ``y``, set ``classes_`` when ``reset``; return int codes."""

    @abstractmethod
    def _n_outputs(self):
        """Number of network outputs."""

    @abstractmethod
    def _make_criterion(self):
        """Per-sample loss module: ``criterion(output, y_codes) -> (batch,)``."""

    @abstractmethod
    def _validation_score(self, net, output, y_codes):
        """Greater-is-better score of ``output`` against ``y_codes``."""

    def _class_sample_weight(self, y_codes):
        """Per-sample weights implied by ``class_weight`` (ones if ``None``)."""
        if self.class_weight is None:
            return np.ones(len(y_codes))
        n_classes = len(self.classes_)
        if self.class_weight == "balanced":
            counts = np.bincount(y_codes, minlength=n_classes).astype(float)
            per_class = len(y_codes) / (n_classes * np.maximum(counts, 1))
        else:
            per_class = np.array([self.class_weight.get(c, 1.0) for c in self.classes_])
        return per_class[y_codes]

    # -- fitting -----------------------------------------------------------
    def _hidden_sizes(self):
        sizes = self.hidden_layer_sizes
        if isinstance(sizes, numbers.Integral):
            sizes = [sizes]
        sizes = [int(s) for s in sizes]
        if any(s < 1 for s in sizes):
            raise ValueError(f"hidden_layer_sizes must be positive, got {sizes}.")
        return sizes

    def _stream_mode(self, n_features):
        if self.n_projections == "exact":
            return "exact"
        if self.n_projections == "auto":
            if n_features <= _EXACT_STREAM_MAX_FEATURES:
                return "exact"
            return _AUTO_PROJECTIONS
        return int(self.n_projections)

    def _batch_size(self, n_samples):
        if self.batch_size == "auto":
            return min(200, n_samples)
        return min(int(self.batch_size), n_samples)

    def _learning_rate(self):
        """``learning_rate_init``; ``"auto"`` scales 1e-3 with the batch.

        Above 200 rows a batch averages more samples per step, so there are
        fewer steps per epoch: the step grows in proportion (the linear
        scaling rule), keeping the per-epoch progress of batch 200. It makes
        full-batch training on small data a fast path (see the user guide).
        """
        if self.learning_rate_init == "auto":
            return 1e-3 * max(1.0, self._batch_size_ / 200)
        return float(self.learning_rate_init)

    def _make_module(self, n_features):
        """Build the torch module for ``self.architecture``."""
        if self.architecture == "residual":
            from .nn.residual import ResidualCRNetwork

            return ResidualCRNetwork(
                n_features,
                self._n_outputs(),
                hidden_layer_sizes=self._hidden_sizes(),
                activation=self.activation,
                degree=self.degree,
                dropout=self.dropout,
                spectral_norm=self.spectral_norm,
            )
        return CRNetwork(
            n_features,
            self._n_outputs(),
            hidden_layer_sizes=self._hidden_sizes(),
            activation=self.activation,
            degree=self.degree,
            dropout=self.dropout,
            spectral_norm=self.spectral_norm,
        )

    def _output_bias(self, y_codes):
        """Initial output bias (the prior's logits); zeros by default."""
        return None

    def _initialize_output(self, module, y_codes):
        """Start training from the prior: zero output weights, prior bias.

        The initial model predicts the training class prior for every input,
        never worse than the majority class, and the first steps fit the
        output layer on near-linear features (the polynomials start as the
        identity), so short or small-data fits behave like a linear model.
        Spectrally normalised output layers keep their random start (a zero
        matrix has no spectral normalisation).
        """
        if self.spectral_norm:
            return
        bias = self._output_bias(y_codes)
        with torch.no_grad():
            module.output.weight.zero_()
            if bias is not None:
                module.output.bias.copy_(torch.as_tensor(bias))

    def _uses_early_stopping(self, n_samples):
        """Resolve ``early_stopping="auto"`` for a training set of this size."""
        if self.early_stopping == "auto":
            return n_samples >= _AUTO_EARLY_STOPPING_MIN_SAMPLES
        return bool(self.early_stopping)

    def _split_validation(self, y_codes, seed):
        """Indices (train, valid) for early stopping, or ``None`` if too small."""
        n = len(y_codes)
        n_valid = int(np.ceil(self.validation_fraction * n))
        if n_valid < 1 or n - n_valid < 2:
            return None
        counts = np.bincount(y_codes)
        counts = counts[counts > 0]
        if counts.min() >= 2 and n_valid >= len(counts) and n - n_valid >= len(counts):
            splitter = StratifiedShuffleSplit(
                n_splits=1, test_size=n_valid, random_state=seed
            )
        else:
            splitter = ShuffleSplit(n_splits=1, test_size=n_valid, random_state=seed)
        return next(splitter.split(np.zeros((n, 1)), y_codes))

    def _build_net(self, n_features):
        callbacks = [
            ("penalty", PassthroughScoring(name="penalty", on_train=True)),
            ("finite_guard", _FiniteGuard()),
            ("valid_score", _ValidScore(self._validation_score)),
            (
                "early_stopping",
                _EarlyStopping(
                    monitor="valid_loss",
                    patience=self.n_iter_no_change,
                    threshold=self.tol,
                    threshold_mode="rel",
                    load_best=True,
                    sink=print if self.verbose else _silent,
                ),
            ),
        ]
        if self.verbose >= 2:
            callbacks.append(("progress_bar", ProgressBar()))
        for i, cb in enumerate(self.callbacks or []):
            name = cb[0] if isinstance(cb, tuple) else f"user_{i}"
            callbacks.append(cb if isinstance(cb, tuple) else (name, cb))
        no_decay = {"weight_decay": 0.0}
        net = _CRNet(
            module=self._make_module(n_features),
            criterion=self._make_criterion(),
            optimizer=torch.optim.AdamW,
            lr=self._learning_rate(),
            optimizer__weight_decay=self.weight_decay,
            # One fused kernel for all parameters: ~4x cheaper per step than
            # the per-tensor loop, which matters for small tabular nets.
            optimizer__fused=True,
            # Decay weight matrices only: biases, polynomial coefficients and
            # ordinal cut-points have their own natural scale.
            optimizer__param_groups=[
                ("*bias", no_decay),
                ("*coefficients", no_decay),
                ("*cutpoint*", no_decay),
                ("*norm.gain", no_decay),
            ]
            # Without decay one group does: one fused kernel call per step.
            if self.weight_decay > 0
            else [],
            max_epochs=self.max_iter,
            batch_size=self._batch_size_,
            iterator_train=_BatchLoader,
            iterator_valid=_BatchLoader,
            iterator_train__shuffle=True,
            callbacks=callbacks,
            device=self.device_,
            verbose=int(self.verbose),
            dreg=self.dreg,
            dreg_lambda=self.dreg_lambda,
            n_projections=self._stream_mode(n_features),
            stream_rows=self.stream_rows,
            igpen_lambda=self.igpen_lambda,
            # skorch formats its epoch table even when silent: drop it then.
            **({} if self.verbose else {"callbacks__print_log": None}),
        )
        net.initialize()
        return net

    def _to_tensor(self, array, dtype=torch.float32):
        return torch.tensor(array, dtype=dtype, device=self.device_)

    def _fit(self, X, y, sample_weight=None, *, incremental=False, classes=None):
        self._validate_params()
        fitted = hasattr(self, "net_")
        reset = not (fitted and (incremental or self.warm_start))
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            dtype=[np.float64, np.float32],
            y_numeric=False,
            multi_output=False,
        )
        _check_training_range(X)
        if reset and not self.standardize:
            _warn_if_unstandardized(X)
        y_codes = self._encode_targets(y, reset=reset, classes=classes)
        weight = self._class_sample_weight(y_codes)
        if sample_weight is not None:
            weight = weight * _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
        if not weight.max() > 0:
            raise ValueError("sample_weight must have a positive sum.")
        # Dividing by the max first keeps the mean finite for huge weights.
        weight = weight / weight.max()
        weight = weight / weight.mean()
        uniform = np.all(weight == 1.0)

        rng = check_random_state(self.random_state)
        if reset:
            self._seed = int(rng.randint(np.iinfo(np.int32).max))
            self.device_ = _resolve_device(self.device)
            self._n_fit_calls = 0
        seed = self._seed + self._n_fit_calls
        self._n_fit_calls += 1

        split = None
        if self._uses_early_stopping(len(y_codes)) and not incremental:
            split = self._split_validation(y_codes, seed)
        with _torch_context(seed, self.n_threads, self.device_):
            to_x = self._to_tensor
            if split is None:
                train_idx, valid_ds = np.arange(len(y_codes)), None
            else:
                train_idx, valid_idx = split
                valid_ds = _TensorDataset(
                    to_x(X[valid_idx]),
                    torch.as_tensor(y_codes[valid_idx], device=self.device_),
                    None if uniform else to_x(weight[valid_idx]),
                )
            train_ds = _TensorDataset(
                to_x(X[train_idx]),
                torch.as_tensor(y_codes[train_idx], device=self.device_),
                None if uniform else to_x(weight[train_idx]),
            )
            if reset:
                self._batch_size_ = self._batch_size(len(train_idx))
                self.net_ = self._build_net(X.shape[1])
                if self.standardize:
                    mean = np.mean(X[train_idx], axis=0, dtype=np.float64)
                    scale = np.std(X[train_idx], axis=0, dtype=np.float64)
                    # Constant columns, and scales that underflow in float32.
                    scale[~(scale >= np.finfo(np.float32).tiny)] = 1.0
                    self.net_.module_.set_input_scaling(mean, scale)
                self._initialize_output(self.net_.module_, y_codes[train_idx])
            self.net_.train_split = (
                None if valid_ds is None else predefined_split(valid_ds)
            )
            self.net_.valid_dataset_ = valid_ds
            epochs = 1 if incremental else self.max_iter
            self.net_.partial_fit(train_ds, None, epochs=epochs)
        self._finish_fit(X)
        return self

    def _finish_fit(self, X):
        """Set the fitted attributes that summarise the training run."""
        self.module_ = self.net_.module_
        self._refresh_inference_module()
        history = self.net_.history
        self.n_iter_ = len(history)
        self.loss_curve_ = [float(v) for v in history[:, "train_loss"]]
        if self.net_.valid_dataset_ is not None:
            scores = [row.get("valid_score") for row in history]
            self.validation_scores_ = [float(v) for v in scores if v is not None]
            self.best_validation_score_ = max(self.validation_scores_)
        else:
            self.validation_scores_ = None
            self.best_validation_score_ = None
        # X is validated already (re-validating the array would warn about
        # missing feature names after a fit on a DataFrame).
        X64 = np.asarray(X, dtype=np.float64)
        norms = self._jacobian(X64, reduce="norm")
        self.gradient_norm_mean_ = float(norms.mean())
        self.gradient_norm_quantiles_ = np.percentile(norms, np.arange(101))
        self.input_mean_ = X64.mean(axis=0)
        scale = X64.std(axis=0)
        scale[~(scale > 0)] = 1.0
        self.input_scale_ = scale
        self.input_distance_quantiles_ = np.percentile(
            self._input_distance(X64), np.arange(101)
        )

    def _input_distance(self, X):
        return np.abs((X - self.input_mean_) / self.input_scale_).max(axis=1)

    def input_distance(self, X):
        """Largest absolute z-score of each sample against the training data.

        A gradient-based signal cannot see inputs far outside the training
        range: the soft-bounded polynomials saturate there, so the gradient
        (and :meth:`input_sensitivity`) shrinks. This distance grows instead:
        ``input_distance(X) > model.input_distance_quantiles_[100]`` flags
        samples with a feature beyond anything seen in training.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        distance : ndarray of shape (n_samples,)
            ``max_j |x_j - mean_j| / std_j`` with the training mean and
            standard deviation of each feature.
        """
        return self._input_distance(self._check_X(X))

    def _refresh_inference_module(self):
        # Predictions run on a float64 copy: batch-size independent to 1e-12
        # (float32 matmuls can differ by batch shape) and as accurate as sklearn.
        module = copy.deepcopy(self.module_).double().eval()
        for p in module.parameters():
            p.requires_grad_(False)
        self._inference_module = module

    def _rebuild_net(self):
        """A fresh net of the fitted architecture, for weights to be loaded."""
        # Initialisation draws random weights: keep the caller's RNG as it is.
        with _torch_context(0, None, self.device_):
            return self._build_net(self.n_features_in_)

    def _set_net(self, net):
        """Install a loaded net as the fitted one."""
        net.valid_dataset_ = None
        self.net_ = net
        self.module_ = net.module_
        self._refresh_inference_module()

    # -- pickling --------------------------------------------------------
    def __getstate__(self):
        state = super().__getstate__()
        net = state.get("net_")
        if net is not None and any(
            torch.nn.utils.parametrize.is_parametrized(m) for m in net.module_.modules()
        ):
            # torch cannot pickle parametrized (spectral-norm) modules, and
            # deepcopy and joblib pickle: keep the tensors, rebuild on load.
            derived = ("net_", "module_", "_inference_module")
            state = {k: v for k, v in state.items() if k not in derived}
            state["_net_state"] = {
                "module": net.module_.state_dict(),
                "criterion": net.criterion_.state_dict(),
                "optimizer": net.optimizer_.state_dict(),
                "history": list(net.history),
            }
        return state

    def __setstate__(self, state):
        state = dict(state)
        saved = state.pop("_net_state", None)
        super().__setstate__(state)
        if saved is not None:
            net = self._rebuild_net()
            net.module_.load_state_dict(saved["module"])
            net.criterion_.load_state_dict(saved["criterion"])
            net.optimizer_.load_state_dict(saved["optimizer"])
            net.history = History(saved["history"])
            self._set_net(net)

    # -- inference -------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self, "net_")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _chunks(self, n_rows, per_row):
        size = max(1, _CHUNK_ELEMENTS // max(1, per_row))
        for start in range(0, n_rows, size):
            yield slice(start, start + size)

    def _max_width(self):
        return max([*self._hidden_sizes(), self._n_outputs(), self.n_features_in_])

    def _forward(self, X):
        """Network output for validated ``X`` as float64 numpy, in chunks."""
        module = self._inference_module
        out = np.empty((X.shape[0], self._n_outputs()))
        with _inference_context():
            for sl in self._chunks(X.shape[0], self._max_width()):
                xb = torch.tensor(X[sl], device=self.device_)
                out[sl] = module(xb).cpu().numpy()
        return _check_finite_rows(out, "network output")

    def _jacobian(self, X, reduce=None):
        module = self._inference_module
        n_out, d = self._n_outputs(), self.n_features_in_
        per_row = min(n_out, d) * self._max_width() * 2
        result = None
        with _inference_context():
            for sl in self._chunks(X.shape[0], per_row):
                xb = torch.tensor(X[sl], device=self.device_)
                jac = module.input_jacobian(xb)
                if reduce == "norm":
                    jac = torch.linalg.vector_norm(jac, dim=(1, 2))
                jac = jac.cpu().numpy()
                if result is None:
                    result = np.empty((X.shape[0], *jac.shape[1:]))
                result[sl] = jac
        return _check_finite_rows(result, "Jacobian")

    def jacobian(self, X):
        """Jacobian of :meth:`decision_function` with respect to ``X``.

        Analytic: computed with the closed-form derivatives of the network
        (forward stream or its transpose, whichever is cheaper), in float64,
        in bounded batches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        jacobian : ndarray of shape (n_samples, n_outputs, n_features)
            ``n_outputs`` is the number of columns of the network output
            (1 for binary classification and ordinal models).
        """
        return self._jacobian(self._check_X(X))

    def input_gradient_norms(self, X):
        """Per-sample Frobenius norm of :meth:`jacobian`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        norms : ndarray of shape (n_samples,)
            ``||d f(x) / d x||_F`` for each sample.
        """
        return self._jacobian(self._check_X(X), reduce="norm")

    def input_sensitivity(self, X):
        """Each sample's input-gradient norm relative to the training mean.

        1.0 is typical of the training data. Values above the training tail,
        e.g. ``input_sensitivity(X) > model.gradient_norm_quantiles_[99] /
        model.gradient_norm_mean_``, flag predictions the model is unusually
        sensitive to.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        sensitivity : ndarray of shape (n_samples,)
            :meth:`input_gradient_norms` divided by ``gradient_norm_mean_``.
        """
        return self.input_gradient_norms(X) / self.gradient_norm_mean_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
