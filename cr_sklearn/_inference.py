"""Inference of the CR estimators: float64 forward passes and Jacobians (private).

Predictions run on a float64 copy of the fitted module, in bounded chunks, one
evaluation at a time; Jacobians are analytic (forward stream or its
transpose). The mixin needs ``net_``/``module_``, ``device_``,
``n_features_in_``, ``_n_outputs()``, ``_hidden_sizes()`` and the fitted
summaries (``gradient_norm_mean_``, ``input_mean_``, ``input_scale_``).
"""

import copy
import threading
from contextlib import contextmanager

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted, validate_data

from ._utils import check_finite_rows

__all__ = []

# Rows x (directions or outputs) x width elements per inference chunk. Small
# enough (1 MiB of float64) for the activation's elementwise chain to stay in
# cache, and memory stays bounded.
_CHUNK_ELEMENTS = 2**17
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


class InferenceMixin:
    """Forward passes, Jacobians and per-sample reliability signals."""

    def _refresh_inference_module(self):
        # Predictions run on a float64 copy: batch-size independent to 1e-12
        # (float32 matmuls can differ by batch shape) and as accurate as sklearn.
        module = copy.deepcopy(self.module_).double().eval()
        for p in module.parameters():
            p.requires_grad_(False)
        self._inference_module = module

    def _check_X(self, X):
        check_is_fitted(self, "net_")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _chunks(self, n_rows, per_row):
        size = max(1, _CHUNK_ELEMENTS // max(1, per_row))
        for start in range(0, n_rows, size):
            yield slice(start, start + size)

    def _max_width(self):
        encoded = getattr(self, "n_encoded_features_", None) or 0
        return max(
            [*self._hidden_sizes(), self._n_outputs(), self.n_features_in_, encoded]
        )

    def _n_members_fitted(self):
        """The fitted model's members, or ``None`` for one network."""
        return getattr(self._inference_module, "n_members", None)

    def _forward(self, X):
        """Network output for validated ``X`` as float64 numpy, in chunks.

        ``(n_samples, n_outputs)``; a member model's is
        ``(n_members, n_samples, n_outputs)``.
        """
        module = self._inference_module
        # The float64 copy's dtype (the training input can be float32).
        X = np.asarray(X, dtype=np.float64)
        n_members = self._n_members_fitted()
        shape = (X.shape[0], self._n_outputs())
        if n_members is not None:
            shape = (n_members, *shape)
        out = np.empty(shape)
        width = self._max_width() * (n_members or 1)
        with _inference_context():
            # From folded parameters where the network has them (the same
            # values to float64 rounding, fewer passes per layer), looked up
            # once for every chunk.
            predictor = getattr(module, "predictor", None)
            forward = (
                module
                if predictor is None
                else predictor(torch.float64, torch.device(self.device_))
            )
            for sl in self._chunks(X.shape[0], width):
                # A view of X where numpy allows it: the network does not
                # write to its input.
                rows = X[sl]
                xb = (
                    torch.from_numpy(rows)
                    if rows.flags.writeable
                    else torch.tensor(rows)
                ).to(self.device_)
                out[..., sl, :] = forward(xb).cpu().numpy()
        if n_members is not None:
            check_finite_rows(
                out.transpose(1, 0, 2).reshape(X.shape[0], -1), "network output"
            )
            return out
        return check_finite_rows(out, "network output")

    def _jacobian(self, X, scale=None, *, features=False):
        """``d output / d X``; with ``scale``, the per-sample norms
        ``||J diag(scale)||_F`` instead of the Jacobians; with ``features``,
        the norms of the Jacobian by the encoded columns the first layer
        reads (the network must have an encoded stream)."""
        module = self._inference_module
        n_out, d = self._n_outputs(), self.n_features_in_
        n_members = self._n_members_fitted()
        per_row = min(n_out, d) * self._max_width() * 2 * (n_members or 1)
        if scale is not None:
            scale_t = torch.as_tensor(scale, dtype=torch.float64, device=self.device_)
        result = None
        with _inference_context():
            for sl in self._chunks(X.shape[0], per_row):
                xb = torch.tensor(X[sl], device=self.device_)
                if features:
                    jac = self._function_jacobian(module.feature_jacobian, xb)
                    jac = torch.linalg.vector_norm(jac, dim=(1, 2))
                else:
                    jac = self._function_jacobian(module.input_jacobian, xb)
                    if scale is not None:
                        jac = torch.linalg.vector_norm(jac * scale_t, dim=(1, 2))
                jac = jac.cpu().numpy()
                if result is None:
                    result = np.empty((X.shape[0], *jac.shape[1:]))
                result[sl] = jac
        return check_finite_rows(result, "Jacobian")

    def _function_jacobian(self, jacobian, xb):
        """``jacobian(xb)``; a member model's: :meth:`decision_function`'s.

        A member model's Jacobian is that of the function its probabilities
        come from, by the chain rule from the members' outputs and Jacobians
        (:meth:`_combine_jacobian`).
        """
        jac = jacobian(xb)
        if self._n_members_fitted() is None:
            return jac
        forward = getattr(self._inference_module, "predict_values", None)
        out = (forward or self._inference_module)(xb)
        return self._combine_jacobian(out, jac)

    def jacobian(self, X):
        """Jacobian of :meth:`decision_function` with respect to ``X``.

        Analytic: computed with the closed-form derivatives of the network
        (forward stream or its transpose, whichever is cheaper), in float64,
        in bounded batches. With ``n_members > 1``, the Jacobian of the
        function the averaged probabilities come from (what
        :meth:`decision_function` returns), by the chain rule from the
        members' outputs and Jacobians.

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

    def input_gradient_norms(self, X, *, scale=None):
        """Per-sample norm of the input gradient, each column in units of its spread.

        ``||J_i diag(s)||_F`` with ``J_i`` the :meth:`jacobian` of sample
        ``i`` (with respect to ``X``, through the standardisation and, with
        ``encoding_bins``, the input encoding; not with respect to the encoded
        columns) and ``s`` a scale per column. It is the rule
        :func:`~cr_sklearn.gradient_norms` applies to every model, computed
        analytically.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.
        scale : array-like of shape (n_features,), default=None
            The unit of each column. ``None``: ``input_scale_``, the training
            standard deviation (1 where constant), so that a sample's norm does
            not depend on the batch it is computed in (without an input
            encoding, the fitted ``gradient_norm_*`` summaries and
            :meth:`input_sensitivity` are these norms).
            :func:`~cr_sklearn.gradient_norms` and
            :class:`~cr_sklearn.DREGScorer` pass the standard deviation of
            the ``X`` being scored, as for every other model.

        Returns
        -------
        norms : ndarray of shape (n_samples,)
            ``||d f(x) / d x diag(scale)||_F`` for each sample.
        """
        X = self._check_X(X)
        return self._jacobian(X, scale=self._check_scale(scale))

    def _check_scale(self, scale):
        if scale is None:
            return self.input_scale_
        scale = np.asarray(scale, dtype=np.float64)
        if scale.shape != (self.n_features_in_,) or not np.all(
            np.isfinite(scale) & (scale >= 0)
        ):
            raise ValueError(
                f"scale must hold {self.n_features_in_} finite, non-negative "
                f"numbers (one per column of X), got shape {scale.shape}."
            )
        return scale

    def _sensitivity_norms(self, X):
        """Gradient norms by the columns the first layer reads, for validated X.

        The encoded columns with an encoded stream; otherwise ``X`` in units
        of ``input_scale_``, as :meth:`input_gradient_norms` by default.
        """
        module = self._inference_module
        if module.encoding is not None and module.stream_space == "encoded":
            return self._jacobian(X, features=True)
        return self._jacobian(X, scale=self.input_scale_)

    def input_sensitivity(self, X):
        """Each sample's input-gradient norm relative to the training mean.

        1.0 is typical of the training data. Values above the training tail,
        e.g. ``input_sensitivity(X) > model.gradient_norm_quantiles_[99] /
        model.gradient_norm_mean_``, flag predictions the model is unusually
        sensitive to.

        The gradient is taken with respect to the columns the network's first
        layer reads, in the network's standardised units: without an input
        encoding, ``X`` with each column in units of its training standard
        deviation (the rule of :meth:`input_gradient_norms` and tau); with
        one (``encoding_bins``), the encoded columns, the space DREG smooths.
        That is the one exception to tau's rule, because it ranks errors
        better: the derivative with respect to ``X`` passes through the
        ramps' slopes, steepest where the quantile bins are narrow, that is
        where the training data are dense, and it ranked the best-supported
        predictions among the most sensitive. ``benchmarks/bench_selective.py``
        and ``benchmarks/bench_reliability.py`` compare the two spaces
        (``selective.md``, ``reliability.md``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        sensitivity : ndarray of shape (n_samples,)
            The norm described above divided by ``gradient_norm_mean_``.
            A network flat on all its training data (``gradient_norm_mean_``
            is 0, e.g. no hidden layers and constant features) gives 1.0
            where it is flat too (typical of the training data) and ``inf``
            where it has any slope (beyond anything seen in training); never
            ``nan``.
        """
        norms = self._sensitivity_norms(self._check_X(X))
        mean = self.gradient_norm_mean_
        if mean > 0:
            return norms / mean
        return np.where(norms > 0, np.inf, 1.0)

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
