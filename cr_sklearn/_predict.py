"""Prediction from the fitted float64 network: outputs, Jacobians, the contract.

Every prediction of a fitted CR estimator (``predict``, ``predict_proba``,
``decision_function``, ``jacobian``, the gradient norms, the members' and
the out-of-fold predictions) runs here, on ``module_``: the float64 network
that holds the input transform and the trained layers. In float64 the
outputs do not depend on the batch they are computed in (to ``1e-12``).

:func:`contract_path` is the check every fit ends with: on up to 1,000
training rows, the prediction path against the training forward (the
layers in the training dtype on the inputs they trained on), and the
folded path's Jacobians against the float64 network's, op by op. The
derivatives come from the path the predictions come from: the folded plan,
or the float64 network op by op. (Private.)
"""

import contextlib
import os
import threading

import numpy as np
import torch

from ._utils import check_finite_rows
from .nn.network import op_by_op

__all__ = []

# Rows x (directions or outputs) x width elements per chunk: small enough
# (1 MiB of float64) for the activation's elementwise chain to stay in
# cache, and memory stays bounded.
CHUNK_ELEMENTS = 2**17
#: Largest difference in probability the contract allows.
CONTRACT_TOLERANCE = 1e-4
#: Largest difference of the folded path's Jacobians from the float64
#: network's (op by op) the contract allows, relative to the largest entry.
JACOBIAN_TOLERANCE = 1e-7
#: Training rows the contract check compares.
CONTRACT_ROWS = 1000
# MKL picks its kernels by the threads it finds free, so concurrent calls can
# differ from serial ones in the last bit: one evaluation at a time keeps
# threaded predictions bit-identical to serial ones.
_LOCK = threading.Lock()


# torch's OpenMP thread pool does not survive a fork: in a child, the first
# parallel op would wait for the parent's threads forever. One thread runs no
# parallel region (the child may raise it again).
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: torch.set_num_threads(1))

#: How a fitted model computes its outputs, in the order a fit tries them:
#: the folded plan (one product per layer), the float64 network op by op,
#: and the training layers in the training dtype.
PATHS = ("folded", "float64", "training")


@contextlib.contextmanager
def inference_context(module=None):
    """One evaluation at a time, without autograd, ``module`` in eval mode.

    A client may leave the fitted network in training mode (an exporter
    restoring its own wrapper's mode, say): predictions never apply
    dropout, and the mode is put back afterwards.
    """
    # torch applies set_num_threads to a new thread's OpenMP/MKL settings
    # lazily; get_num_threads() applies it to the calling thread.
    torch.get_num_threads()
    with _LOCK, torch.inference_mode():
        training = module is not None and module.training
        if training:
            module.eval()
        try:
            yield
        finally:
            if training:
                module.train()


def chunks(n_rows, per_row):
    """Slices of at most ``CHUNK_ELEMENTS // per_row`` rows."""
    size = max(1, CHUNK_ELEMENTS // max(1, per_row))
    for start in range(0, n_rows, size):
        yield slice(start, start + size)


def max_width(module):
    """The widest layer of a fitted network (sets the chunk size)."""
    sizes = (module.n_outputs, module.n_features, module.input_width)
    return max(*module.hidden_layer_sizes, *sizes)


def outputs(module, X, *, device, path="folded", layers=None, combine=None):
    """The network's outputs for float64 ``X``, as float64 numpy, in chunks.

    ``(n_samples, n_outputs)``; a member stack's ``(M, n_samples, n_outputs)``.
    ``path`` is one of :data:`PATHS`; ``"training"`` needs ``layers``, the
    training network. ``combine(out)`` turns each chunk's outputs into the
    ``(..., rows, k)`` array kept in their place (the members' averaged
    log-probabilities, say): the outputs of every row never exist at once.
    """
    width = max_width(module)
    X = np.ascontiguousarray(X, dtype=np.float64)
    # A view of X where numpy allows it: the network does not write to it.
    as_tensor = torch.from_numpy if X.flags.writeable else torch.tensor
    n_members = getattr(module, "n_members", None)
    finite = np.empty(X.shape[0], dtype=bool)
    result = None
    with inference_context(module):
        predictor = getattr(module, "predictor", None)
        if path == "folded" and predictor is not None:
            forward = predictor(torch.float64, torch.device(device))
        elif path in ("folded", "float64"):
            forward = module
        else:
            dtype = next(layers.parameters()).dtype
            layers.eval()

            def forward(x):
                return layers(module.transform_input(x).to(dtype)).double()

        for sl in chunks(X.shape[0], width * (n_members or 1)):
            out = forward(as_tensor(X[sl]).to(device)).cpu().numpy()
            rows = np.isfinite(out).all(axis=-1)  # (rows,) or (M, rows)
            finite[sl] = rows.reshape(-1, out.shape[-2]).all(axis=0)
            out = out if combine is None else combine(out)
            if result is None:
                result = np.empty((*out.shape[:-2], X.shape[0], out.shape[-1]))
            result[..., sl, :] = out
    # The rows whose outputs (of any member) are not all finite.
    check_finite_rows(np.where(finite, 0.0, np.nan), "network output")
    return result


def jacobians(
    module, X, *, device, path="folded", combine=None, scale=None, features=False
):
    """``d output / d X`` per sample, float64, in chunks.

    From the folded plan on the ``"folded"`` path, else op by op (the
    float64 network's closed-form derivatives). ``combine(out, jac)`` turns
    a member stack's outputs and Jacobians into those of the function its
    predictions come from. With ``scale``, the per-sample norms
    ``||J diag(scale)||_F`` instead; with ``features``, the norms of the
    Jacobian by the encoded columns the first layer reads. The norms of
    several outputs are those of the Jacobian centred over the outputs.
    """
    n_out, d = module.n_outputs, module.n_features
    n_members = getattr(module, "n_members", None)
    width = max_width(module)
    # The norms of several outputs (logits): centred over the outputs first,
    # what probabilities depend on (softmax ignores a common shift).
    centre = n_out > 1 and (features or scale is not None)
    per_row = min(n_out, d) * width * 2 * (n_members or 1)
    if scale is not None:
        scale_t = torch.as_tensor(scale, dtype=torch.float64, device=device)
    result = None
    unfolded = op_by_op() if path != "folded" else contextlib.nullcontext()
    with inference_context(module), unfolded:
        for sl in chunks(X.shape[0], per_row):
            xb = torch.tensor(X[sl], dtype=torch.float64, device=device)
            function = module.feature_jacobian if features else module.input_jacobian
            jac = function(xb)
            if n_members is not None:
                forward = getattr(module, "predict_values", None) or module
                jac = combine(forward(xb), jac)
            if centre:
                jac = jac - jac.mean(dim=1, keepdim=True)
            if features:
                jac = torch.linalg.vector_norm(jac, dim=(1, 2))
            elif scale is not None:
                jac = torch.linalg.vector_norm(jac * scale_t, dim=(1, 2))
            jac = jac.cpu().numpy()
            if result is None:
                result = np.empty((X.shape[0], *jac.shape[1:]))
            result[sl] = jac
    return check_finite_rows(result, "Jacobian")


def contract_rows(n_samples):
    """The training rows the contract check reads: evenly spaced, at most 1,000."""
    spaced = np.linspace(0, n_samples - 1, min(n_samples, CONTRACT_ROWS))
    return np.unique(spaced.round().astype(np.int64))


def training_outputs(layers, H):
    """The training forward: ``layers`` in eval mode on their training inputs."""
    with inference_context(layers):
        return layers(H).double().cpu().numpy()


def jacobian_error(module, X, *, device):
    """Largest difference of the folded Jacobians from the op-by-op ones, relative.

    The network's own Jacobians (a member stack's per member) on float64
    rows ``X``, against the largest op-by-op entry; ``inf`` where either is
    not finite.
    """
    n_members = getattr(module, "n_members", None)
    per_row = min(module.n_outputs, module.n_features) * max_width(module) * 2
    worst = largest = 0.0
    with inference_context(module):
        for sl in chunks(X.shape[0], per_row * (n_members or 1)):
            xb = torch.tensor(X[sl], dtype=torch.float64, device=device)
            folded = module.input_jacobian(xb)
            with op_by_op():
                exact = module.input_jacobian(xb)
            difference = float((folded - exact).abs().max())
            size = float(exact.abs().max())
            if not (np.isfinite(difference) and np.isfinite(size)):
                return np.inf
            worst, largest = max(worst, difference), max(largest, size)
    if largest == 0:
        return 0.0 if worst == 0 else np.inf
    return worst / largest


def contract_path(module, layers, X, H, proba, *, device):
    """The first prediction path that computes the trained function.

    Compares the probabilities (``proba(outputs)``) of each path of
    :data:`PATHS` on float64 rows ``X`` with the training forward of
    ``layers`` on ``H`` (the same rows as trained on); the first within
    :data:`CONTRACT_TOLERANCE` is returned, with the largest difference of
    each path tried. The folded path must also give the float64 network's
    Jacobians, to :data:`JACOBIAN_TOLERANCE` of the largest entry (else
    ``tried["folded Jacobian (relative)"]`` holds its difference); the others
    compute them op by op. A path that fails to run (a non-finite output)
    counts as a disagreement.
    """
    expected = proba(training_outputs(layers, H))
    tried = {}
    for path in PATHS:
        try:
            got = proba(outputs(module, X, device=device, path=path, layers=layers))
        except ValueError:
            tried[path] = np.inf
            continue
        tried[path] = float(np.max(np.abs(got - expected), initial=0.0))
        if tried[path] > CONTRACT_TOLERANCE:
            continue
        if path == "folded" and getattr(module, "predictor", None) is not None:
            error = jacobian_error(module, X, device=device)
            if error > JACOBIAN_TOLERANCE:
                tried["folded Jacobian (relative)"] = error
                continue
        return path, tried
    return None, tried
