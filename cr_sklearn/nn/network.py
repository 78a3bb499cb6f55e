"""The CR network and its dual-stream (value + Jacobian) forward pass.

Next to the hidden values the stream carries each layer's Jacobian with
respect to the input, by the chain rule in forward mode::

    J_0 = V                         (identity, or random directions)
    J_l = diag(phi'(z_l)) W_l J_{l-1}
"""

import contextlib
import contextvars
import functools
import math

import torch
from torch import nn
from torch.nn.modules import module as _module

from ._base import BaseCRNetwork, StreamOutput, random_directions
from ._members import affine, layer_product, rows_product, select_rows
from ._stream_function import StreamJacobians
from .activations import FixedActivation, PolyActivation, _horner
from .input_encoding import ramp_inside, tracing

# StreamOutput and random_directions live in ._base; importable from here too.
__all__ = ["CRNetwork", "StreamOutput", "op_by_op", "random_directions"]

#: Highest degree whose polynomial is folded into one in ``sigmoid(z)`` by
#: binomial expansion. The expansion multiplies the rounding error by up to
#: ``3 ** degree`` (the terms' sizes against the values' for ``|u| <= b``):
#: 3e-11 of the largest derivative of trained networks at degree 10 (1e-9 with
#: random coefficients), 5e-7 at 14. Above, the folded plan evaluates the
#: polynomial at ``u = 2 b s - b`` as the network does.
EXPANDED_MAX_DEGREE = 10

_OP_BY_OP = contextvars.ContextVar("op_by_op", default=False)


@contextlib.contextmanager
def op_by_op():
    """Within it, no folded plan: every pass of a :class:`CRNetwork` runs op by op.

    :meth:`CRNetwork.predict_values`, :meth:`CRNetwork.predictor` and the
    reverse-mode :meth:`~cr_sklearn.nn.BaseCRNetwork.input_jacobian` then
    compute what :meth:`CRNetwork.forward` and its closed-form derivatives do,
    in the calling thread (other threads keep their folded plans).

    Yields
    ------
    None
    """
    token = _OP_BY_OP.set(True)
    try:
        yield
    finally:
        _OP_BY_OP.reset(token)


def _plain_call(module):
    """Whether ``module`` has an in-place inference path and no forward hook."""
    return (
        hasattr(module, "_forward_overwrite")
        and not module._forward_hooks
        and not module._forward_pre_hooks
        and not _module._global_forward_hooks
        and not _module._global_forward_pre_hooks
    )


def _in_sigmoid(p, bound):
    """Coefficients of ``q(s) = p(2 b s - b)`` by binomial expansion (float64)."""
    q = torch.zeros_like(p)
    for k in range(p.shape[0]):
        for j in range(k + 1):
            q[j] += p[k] * math.comb(k, j) * (2.0 * bound) ** j * (-bound) ** (k - j)
    return q


def _derivative(coefficients):
    """Coefficient rows of the derivative of ``sum_k c_k s**k`` (``k c_k``)."""
    powers = torch.arange(1, coefficients.shape[0], dtype=coefficients.dtype)
    return coefficients[1:] * powers.reshape(-1, *[1] * (coefficients.dim() - 1))


def _run_plan(plan, x):
    """:meth:`CRNetwork.predict_values` from a folded ``plan``."""
    with torch.no_grad():
        first, layers, (out_weight_t, out_bias) = plan
        h = x
        if first is not None:  # the encoding, standardisation folded in
            select, shift, lower, upper, _ = first
            h = torch.addmm(shift, x, select).clamp_(lower, upper)
        for weight_t, bias, fixed, coefficients, squash, _, _, to_u in layers:
            z = affine(bias, h, weight_t)
            if fixed is not None:
                h = fixed(z)
            else:
                # z is this pass's own scratch tensor: reuse its memory.
                s = torch.sigmoid_(z) if squash else z
                if to_u is not None:  # u = 2 b s - b
                    s = s.mul_(to_u[0]).add_(to_u[1])
                h = _horner(coefficients, s, in_place=True)
        return affine(out_bias, h, out_weight_t)


def _cast_plan(plan, dtype, device):
    """Every tensor of a nested tuple plan cast to ``dtype`` on ``device``."""
    if torch.is_tensor(plan):
        return plan.to(dtype=dtype, device=device).contiguous()
    if isinstance(plan, tuple | list):
        return type(plan)(_cast_plan(p, dtype, device) for p in plan)
    return plan


class CRNetwork(BaseCRNetwork):
    """Feed-forward network of PolyLayers with a dual-stream forward pass.

    A PolyLayer is ``h = phi(W h_prev + b)`` with a learnable cubic ``phi`` per
    neuron (or a fixed activation); the last layer is linear.

    Parameters
    ----------
    n_features, n_outputs : int
        Input and output dimensions.
    hidden_layer_sizes : sequence of int, default=(64, 64)
        Widths of the activated layers.
    activation, degree, dropout, spectral_norm, encoded_features, stream_space : \
            optional
        As in :class:`~cr_sklearn.nn.BaseCRNetwork`.
    n_members : int or None, default=None
        ``M``: ``M`` independent networks in one module, every parameter with a
        leading member axis and the outputs member-first (the stream's squared
        norms summed over the members); see :ref:`member-axis`.

    Attributes
    ----------
    hidden : torch.nn.ModuleList of torch.nn.Linear
        The activated layers' affine maps, in order.
    activations : torch.nn.ModuleList
        Their activations.
    output : torch.nn.Linear
        Last (linear) layer.
    """

    def _build(self, sizes):
        sizes = [self.input_width, *sizes]
        self.hidden = nn.ModuleList()
        self.activations = nn.ModuleList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            self.hidden.append(self._linear(fan_in, fan_out))
            self.activations.append(self._activation(fan_out))
        self.output = self._linear(sizes[-1], self.n_outputs)

    @property
    def hidden_layer_sizes(self):
        """Widths of the activated layers."""
        return tuple(layer.out_features for layer in self.hidden)

    def forward(self, x):
        """Compute the values only: the cheapest pass.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input.

        Returns
        -------
        torch.Tensor of shape (batch, n_outputs)
            The network output (member-first with a member axis).
        """
        h = self.transform_input(x)
        overwrite = not (torch.is_grad_enabled() or tracing())
        for layer, act in zip(self.hidden, self.activations, strict=True):
            z = layer(h)
            # z is this pass's own scratch tensor: reuse its memory.
            in_place = overwrite and _plain_call(act)
            h = self._dropped(act._forward_overwrite(z) if in_place else act(z))
        return self.output(h)

    def predict_values(self, x):
        """:meth:`forward` without gradients, from folded parameters.

        The standardisation, the soft bounds and the polynomials are folded into
        each layer (a matrix product, a sigmoid and one fused pass per
        coefficient), cached until a parameter or buffer changes; equal to
        :meth:`forward` to rounding. Hooks and training mode take :meth:`forward`.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input, of any dtype and device.

        Returns
        -------
        torch.Tensor of shape (batch, n_outputs)
            What :meth:`forward` returns, without a graph.
        """
        return self.predictor(x.dtype, x.device)(x)

    def predictor(self, dtype, device):
        """:meth:`predict_values` with the folded plan looked up once (chunked input).

        The function must not outlive a change to the module (a parameter update, a
        hook, training mode).

        Parameters
        ----------
        dtype : torch.dtype
            The dtype of the inputs the function will receive.
        device : torch.device
            Their device.

        Returns
        -------
        callable
            ``f(x)``, equal to ``predict_values(x)``.
        """
        plan = None if self.training else self._folded(dtype, device)
        if plan is None:

            def forward(x):
                with torch.no_grad():
                    return self(x)

            return forward
        return functools.partial(_run_plan, plan)

    def _folded(self, dtype, device):
        """The cached plan of :meth:`predict_values`, or ``None`` (no fold)."""
        if _OP_BY_OP.get():
            return None
        key = self._state_key(dtype, device)
        if key is None:
            return None
        cached = self.__dict__.get("_folded_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        if not all(
            isinstance(a, PolyActivation | FixedActivation) for a in self.activations
        ) or any(
            nn.utils.parametrize.is_parametrized(m) for m in (*self.hidden, self.output)
        ):
            return None
        with torch.inference_mode(False), torch.no_grad():
            plan = _cast_plan(self._fold(), dtype, device)
        self.__dict__["_folded_cache"] = (key, plan)
        return plan

    def _state_key(self, dtype, device):
        """Each parameter's and buffer's storage and version; ``None`` with hooks."""
        if _module._global_forward_hooks or _module._global_forward_pre_hooks:
            return None
        # The modules' own dicts: on one row, parameters() costs as much as a pass.
        key = [dtype, device]
        append = key.append
        stack = [self]
        while stack:
            m = stack.pop()
            if m._forward_hooks or m._forward_pre_hooks:
                return None
            for tensors in (m._parameters, m._buffers):
                for t in tensors.values():
                    if t is not None:
                        append(t.data_ptr())
                        append(t._version)
            stack.extend(c for c in m._modules.values() if c is not None)
        return tuple(key)

    def _fold(self):
        # In float64, whatever the module's dtype.
        mean = self.input_mean.double()
        inv_scale = 1.0 / self.input_scale.double()
        # Standardising is an affine map: x -> x * inv_scale - mean * inv_scale.
        scale_in, shift_in = inv_scale, -mean * inv_scale
        maps = [
            (m.weight.double().transpose(-1, -2), m.bias.double())
            for m in (*self.hidden, self.output)
        ]
        first = None
        if self.encoding is not None:
            affine_map = self.encoding._affine(torch.float64, "cpu")
            select, shift, lower, upper = (t.double() for t in affine_map[:4])
            first = (
                select * scale_in.unsqueeze(1),
                shift + shift_in @ select,
                lower,
                upper,
                affine_map[5].double(),
            )
        else:  # into the first affine map, a layer's or the output's
            weight_t, bias = maps[0]
            maps[0] = (weight_t * scale_in.unsqueeze(1), bias + shift_in @ weight_t)
        layers = []
        for (weight_t, bias), act in zip(maps[:-1], self.activations, strict=True):
            # (weight_t, bias, fixed, coefficient rows, squash, fixed_slope,
            # derivative rows, to_u): the rows are split once, not at every
            # call; to_u, (2 b, -b) or None, maps s = sigmoid(z') to u.
            if isinstance(act, FixedActivation):
                fixed, slope = act.forward, act.forward_and_derivative
                layers.append((weight_t, bias, fixed, None, False, slope, None, None))
                continue
            poly, squash = act.coefficients.double(), act.bound is not None
            slope_rows, to_u = _derivative(poly), None
            if squash:
                b = act.bound
                # z' = 2 z / b, s = sigmoid(z') and u = 2 b s - b: p(u) = q(s).
                weight_t, bias = weight_t * (2.0 / b), bias * (2.0 / b)
                if act.degree <= EXPANDED_MAX_DEGREE:
                    poly = _in_sigmoid(poly, b)
                    slope_rows = _derivative(poly)
                else:  # du / ds = 2 b
                    slope_rows, to_u = slope_rows * (2.0 * b), (2.0 * b, -b)
            rows, slope_rows = poly.unbind(0), slope_rows.unbind(0)
            layers.append((weight_t, bias, None, rows, squash, None, slope_rows, to_u))
        return first, layers, maps[-1]

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_folded_cache", None)  # derived; rebuilt on first use
        return state

    def _folded_input_jacobian(self, x):
        """Reverse-mode ``input_jacobian(x)`` from the folded plan, or ``None``."""
        if self.training or torch.is_grad_enabled():
            return None
        plan = self._folded(x.dtype, x.device)
        if plan is None:
            return None
        first, layers, (out_weight_t, _) = plan
        h, inside = x, None
        if first is not None:
            select, shift, lower, upper, tolerance = first
            free = torch.addmm(shift, x, select)
            inside = ramp_inside(free, lower, upper, tolerance)
            h = free.clamp_(lower, upper)
        slopes = []
        for i, layer in enumerate(layers):
            weight_t, bias, _, coefficients, squash, fixed, dq, to_u = layer
            z = affine(bias, h, weight_t)
            if fixed is not None:
                h, d = fixed(z)
            else:
                s = torch.sigmoid_(z) if squash else z
                u = s if to_u is None else torch.mul(s, to_u[0]).add_(to_u[1])
                d = dq[0] if len(dq) == 1 else _horner(dq, u, in_place=True)
                if squash:  # d sigmoid(z') / d z' = s (1 - s)
                    d = torch.addcmul(s, s, s, value=-1.0).mul_(d)
                if i < len(layers) - 1:
                    h = _horner(coefficients, u, in_place=True)
            slopes.append(d)
        # Row o of g: d output_o / d (what each layer reads), from the end.
        g = out_weight_t.transpose(-1, -2).unsqueeze(-3)
        for d, (weight_t, *_) in zip(reversed(slopes), reversed(layers), strict=True):
            g = rows_product(g * d.unsqueeze(-2), weight_t.transpose(-1, -2))
        if inside is not None:
            g = rows_product(g * inside.unsqueeze(-2), select.t())
        if g.shape[-3] != x.shape[0]:  # no activated layer and no encoding
            g = g.expand(*g.shape[:-3], x.shape[0], *g.shape[-2:]).contiguous()
        return g

    def _stream_pass(self, h, directions, *, exact, derivatives, rows, scale=None):
        batch = h.shape[0] if rows is None else rows.shape[0]
        if directions is None:
            fused = exact
        else:
            fused = directions.shape[0] == batch and not directions.requires_grad
        if fused and self.hidden:
            return self._fused_stream_pass(h, directions, rows, scale)
        return self._recorded_stream_pass(
            h, directions, exact=exact, derivatives=derivatives, rows=rows, scale=scale
        )

    def _recorded_stream_pass(
        self, h, directions, *, exact, derivatives, rows, scale=None
    ):
        # Op by op (any directions, no activated layer). Values and Jacobians
        # take separate products: stacking [h; J] copies J (slower on CPU).
        batch = h.shape[0] if rows is None else rows.shape[0]
        stream = exact or directions is not None
        # j: the Jacobian times the directions, (batch, k, width).
        j = directions
        derivs, weights, jacobians = [], [], []
        for layer, act in zip(self.hidden, self.activations, strict=True):
            weight = layer.weight
            weights.append(weight)
            # One transpose (an autograd node) for both products.
            weight_t = weight.transpose(-1, -2)
            z = affine(layer.bias, h, weight_t)
            h, d = self._activate(act, z, stream or derivatives)
            derivs.append(d)
            if stream:
                zj = layer_product(j, weight_t)
                slope = select_rows(d, rows)
                if scale is not None and not jacobians:  # the first layer
                    slope = slope * scale.unsqueeze(-1)
                j = slope.unsqueeze(-2) * zj
                jacobians.append(j.transpose(-1, -2))
        weight_t = self.output.weight.transpose(-1, -2)
        out = affine(self.output.bias, h, weight_t)
        if stream:
            # j is None without an activated layer: one Jacobian for every row.
            oj = weight_t.unsqueeze(-3) if j is None else rows_product(j, weight_t)
            if oj.shape[-3] != batch:
                oj = oj.expand(*oj.shape[:-3], batch, *oj.shape[-2:])
            if scale is not None and j is None:  # no activated layer
                oj = oj * scale[..., None, None]
            jacobians.append(oj.transpose(-1, -2))
        return out, derivs, weights, (jacobians if stream else None)

    def _fused_stream_pass(self, h, directions, rows, scale=None):
        # The values, then the stream as one autograd node (StreamJacobians).
        derivs, weights = [], []
        for layer, act in zip(self.hidden, self.activations, strict=True):
            weight = layer.weight
            weights.append(weight)
            z = affine(layer.bias, h, weight.transpose(-1, -2))
            h, d = self._activate(act, z, True)
            derivs.append(d)
        output_weight = self.output.weight
        out = affine(self.output.bias, h, output_weight.transpose(-1, -2))
        slopes = derivs if rows is None else [select_rows(d, rows) for d in derivs]
        if scale is not None:
            # Scaling the first layer's slopes scales every later Jacobian.
            slopes = [slopes[0] * scale.unsqueeze(-1), *slopes[1:]]
        n = len(weights)
        found = StreamJacobians.apply(directions, n, *weights, *slopes, output_weight)
        jacobians = [j.transpose(-1, -2) for j in found[: n + 1]]
        return out, derivs, weights, jacobians, list(found[n + 1 :])

    def _reverse_jacobian(self, h):
        _, derivs, weights, _ = self._stream_pass(
            h, None, exact=False, derivatives=True, rows=None
        )
        # Row o of G is d output_o / d h_l, pulled back layer by layer.
        out_weight = self.output.weight
        g = out_weight.unsqueeze(-3).expand(
            *out_weight.shape[:-2], h.shape[-2], *out_weight.shape[-2:]
        )
        for d, weight in zip(reversed(derivs), reversed(weights), strict=True):
            g = rows_product(g * d.unsqueeze(-2), weight)
        return g
