"""What the plain and the residual CR networks share (private module)."""

from dataclasses import dataclass

import torch
from torch import nn

from ._members import check_n_members, make_linear
from .activations import make_activation
from .input_encoding import PiecewiseLinearEncoding

__all__ = ["BaseCRNetwork", "StreamOutput", "random_directions"]


@dataclass
class StreamOutput:
    """What one forward pass through a CR network produced.

    With a member axis every tensor has it first (``squared_norms`` sum it).

    Parameters
    ----------
    output : torch.Tensor of shape (batch, n_outputs)
        The network output (logits or latent scores).
    derivatives : list of torch.Tensor of shape (batch, width_l)
        ``phi'(z_l)`` of every activated layer (times the dropout mask), or None.
    weights : list of torch.Tensor of shape (width_l, width_{l-1})
        The effective weight matrix of every activated layer, in order.
    jacobians : list of torch.Tensor of shape (batch, width_l, n_directions) or None
        Each layer output's Jacobian applied to the directions, the output
        layer's last; ``None`` without a stream.
    n_directions : int
        Directions the stream carried (0 without a stream).
    squared_norms : list of torch.Tensor or None
        ``||J||_F^2`` of each of ``jacobians`` over the batch, if computed.
    """

    output: torch.Tensor
    derivatives: list
    weights: list
    jacobians: list = None
    n_directions: int = 0
    squared_norms: list = None


def random_directions(
    batch, n_features, n_directions, *, dtype, device, generator=None
):
    """Rademacher directions, so that ``E[||J V||_F^2] = ||J||_F^2`` (Hutchinson).

    Parameters
    ----------
    batch, n_features, n_directions : int
        The result's shape is ``(batch, n_directions, n_features)``.
    dtype, device : torch.dtype, torch.device or str
        Of the result.
    generator : torch.Generator, optional
        Source of randomness; the default generator otherwise.

    Returns
    -------
    torch.Tensor of shape (batch, n_directions, n_features)
        Entries ``+-1/sqrt(n_directions)``, drawn per sample.
    """
    # Drawn as 0/1 in ``dtype`` and mapped in place: the same values as an int64
    # draw, without its 8 bytes an entry and two more temporaries.
    signs = torch.randint(
        0,
        2,
        (batch, n_directions, n_features),
        generator=generator,
        dtype=dtype,
        device=device,
    )
    return signs.mul_(2.0).sub_(1.0).div_(n_directions**0.5)


def _shared(name):
    """Whether state entry ``name`` is shared: the standardisation, the encoding."""
    return name in ("input_mean", "input_scale") or name.startswith("encoding.")


def _member_dim(name):
    """The member axis of state entry ``name``: after the polynomial's powers."""
    return 1 if name.endswith("coefficients") else 0


class BaseCRNetwork(nn.Module):
    """Base of the CR networks: standardisation, dropout, stream and Jacobians.

    A subclass builds its layers in ``_build(sizes)`` and implements
    ``forward(x)``, ``_stream_pass`` and ``_reverse_jacobian``.

    Parameters
    ----------
    n_features : int
        Input dimension ``d``.
    n_outputs : int
        Output dimension.
    hidden_layer_sizes : sequence of int, default=(64, 64)
        Widths of the activated layers.
    activation : str, default="poly"
        One of :data:`~cr_sklearn.nn.ACTIVATION_NAMES`.
    degree : int, default=3
        Polynomial degree for ``activation="poly"``.
    dropout : float, default=0.0
        Dropout probability after each activated layer (training only).
    spectral_norm : bool, default=False
        Constrain the weight matrices to spectral norm 1.
    encoded_features : int or None, default=None
        Columns of a :class:`~cr_sklearn.nn.PiecewiseLinearEncoding` after the
        standardisation (bins set with ``network.encoding.set_edges``).
    stream_space : {"input", "encoded"}, default="input"
        With an encoding, what the stream differentiates by: the standardised
        input, or the encoded columns (as fixed features).
    n_members : int or None, default=None
        ``M``: ``M`` networks of this shape in one module (the member axis).

    Attributes
    ----------
    encoding : PiecewiseLinearEncoding or None
        The input encoding, if any.
    input_width : int
        Columns the first layer reads: ``encoded_features`` or ``n_features``.
    stream_width : int
        Columns the stream differentiates by.
    no_decay_patterns : tuple of str
        :func:`fnmatch.fnmatch` patterns of parameters without weight decay.
    input_mean, input_scale : torch.Tensor of shape (n_features,)
        Buffers of the standardisation ``(x - mean) / scale``; penalties act on
        the Jacobian with respect to the standardised input.
    generator : torch.Generator or None
        Where the dropout masks are drawn from: ``None`` (the default) for
        torch's global generator, else this one (on the module's device), so
        that seeded dropout passes do not depend on other threads.
    """

    no_decay_patterns = ("*bias", "*coefficients", "*norm.gain")
    generator = None

    def __init__(
        self,
        n_features,
        n_outputs,
        hidden_layer_sizes=(64, 64),
        activation="poly",
        degree=3,
        dropout=0.0,
        spectral_norm=False,
        encoded_features=None,
        stream_space="input",
        n_members=None,
    ):
        super().__init__()
        sizes = tuple(int(w) for w in hidden_layer_sizes)
        if stream_space not in ("input", "encoded"):
            raise ValueError(
                f"stream_space must be 'input' or 'encoded', got {stream_space!r}."
            )
        # All but the sizes, which growth changes: see ``_config``.
        self._arguments = dict(
            n_features=n_features,
            n_outputs=n_outputs,
            activation=activation,
            degree=degree,
            dropout=dropout,
            spectral_norm=spectral_norm,
            encoded_features=encoded_features,
            stream_space=stream_space,
        )
        self.stream_space = stream_space
        self.n_features = int(n_features)
        self.n_outputs = int(n_outputs)
        self.dropout = float(dropout)
        self.activation_name = activation
        self.degree = degree
        self.spectral_norm = bool(spectral_norm)
        self.register_buffer("input_mean", torch.zeros(self.n_features))
        self.register_buffer("input_scale", torch.ones(self.n_features))
        self.encoding = None
        if encoded_features is not None:
            self.encoding = PiecewiseLinearEncoding(self.n_features, encoded_features)
        self.n_members = check_n_members(n_members)
        if spectral_norm and self.n_members is not None:
            raise ValueError("spectral_norm=True does not support n_members.")
        self._build(sizes)

    @property
    def _config(self):
        """The constructor's arguments of this architecture."""
        return {**self._arguments, "hidden_layer_sizes": self.hidden_layer_sizes}

    def _activation(self, width):
        return make_activation(
            self.activation_name, width, degree=self.degree, n_members=self.n_members
        )

    def _linear(self, fan_in, fan_out):
        """An affine layer (per member), with ``spectral_norm`` if set."""
        layer = make_linear(fan_in, fan_out, self.n_members)
        if self.spectral_norm:
            layer = nn.utils.parametrizations.spectral_norm(layer)
        return layer

    @classmethod
    def stack(cls, networks):
        """One member module holding ``networks`` as its members, in order.

        Parameters
        ----------
        networks : sequence of BaseCRNetwork
            Single networks of this class, alike in arguments and standardisation.

        Returns
        -------
        BaseCRNetwork
            With ``n_members=len(networks)``; member ``m`` computes ``networks[m]``.
        """
        networks = list(networks)
        if not networks:
            raise ValueError("stack needs at least one network.")
        first = networks[0]
        for net in networks:
            if type(net) is not cls or net.n_members is not None:
                raise TypeError(f"stack takes single {cls.__name__} instances.")
            if net._config != first._config:
                raise ValueError("stack needs networks built with the same arguments.")
        stacked = cls(**first._config, n_members=len(networks))
        target = stacked.state_dict()
        states = [net.state_dict() for net in networks]
        state = {}
        for name, value in states[0].items():
            if _shared(name):
                for other in states[1:]:
                    if not torch.equal(other[name], value):
                        raise ValueError(
                            f"stack needs networks that share {name!r} (the "
                            "standardisation and the encoding)."
                        )
                state[name] = value
                continue
            parts = torch.stack([s[name] for s in states], dim=_member_dim(name))
            state[name] = parts.reshape(target[name].shape)
        stacked.load_state_dict(state)
        return stacked.train(first.training)

    def member(self, index):
        """A single network holding a copy of member ``index``'s parameters.

        Parameters
        ----------
        index : int
            Which member, ``0 <= index < n_members``.

        Returns
        -------
        BaseCRNetwork
            Of this class with ``n_members=None``.
        """
        if self.n_members is None:
            raise ValueError("member needs a network built with n_members.")
        index = int(index)
        if not 0 <= index < self.n_members:
            raise IndexError(
                f"member index {index} out of range for {self.n_members} members."
            )
        # In the stack's dtype: a float64 stack's member is float64 too.
        single = type(self)(**self._config).to(self.input_mean.dtype)
        target = single.state_dict()
        state = {}
        for name, value in self.state_dict().items():
            if not _shared(name):
                value = value.select(_member_dim(name), index)
            state[name] = value.reshape(target[name].shape).clone()
        single.load_state_dict(state)
        return single.train(self.training)

    @property
    def input_width(self):
        """Columns the first layer reads (the encoding's, if any)."""
        return self.n_features if self.encoding is None else self.encoding.n_encoded

    @property
    def stream_width(self):
        """Columns the stream differentiates by (see ``stream_space``)."""
        return self.input_width if self._stream_encoded else self.n_features

    @property
    def _stream_encoded(self):
        return self.encoding is not None and self.stream_space == "encoded"

    def set_input_scaling(self, mean, scale):
        """Set the standardisation ``(x - mean) / scale`` applied to inputs.

        Parameters
        ----------
        mean : array-like of shape (n_features,)
            Subtracted from each raw input.
        scale : array-like of shape (n_features,)
            Divides each centred input; no zeros.

        Returns
        -------
        self : BaseCRNetwork
            The network, rescaled in place.
        """
        with torch.no_grad():
            self.input_mean.copy_(torch.as_tensor(mean, dtype=self.input_mean.dtype))
            self.input_scale.copy_(torch.as_tensor(scale, dtype=self.input_scale.dtype))
        return self

    def _standardise(self, x):
        return (x - self.input_mean) / self.input_scale

    def transform_input(self, x):
        """What the first layer reads: ``x`` standardised and, if set, encoded.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input, as :meth:`forward` takes it.

        Returns
        -------
        h : torch.Tensor of shape (batch, input_width)
            In ``x``'s dtype.
        """
        h = self._standardise(x)
        return h if self.encoding is None else self.encoding(h)

    def _activate(self, act, z, derivative):
        """``(phi(z), phi'(z) or None)``, times a dropout mask (drawn from ``z``)."""
        mask = self._dropout_mask(z)
        if derivative:
            return act.forward_and_derivative(z, mask)
        value = act(z)
        return (value if mask is None else value * mask), None

    def _dropped(self, h):
        """``h`` times a fresh dropout mask, in training with dropout."""
        mask = self._dropout_mask(h)
        return h if mask is None else h * mask

    def _dropout_mask(self, h):
        if not (self.training and self.dropout > 0):
            return None
        # In place: ``ge_`` writes 1s and 0s in ``h``'s dtype, two ops fewer.
        keep = torch.rand(
            h.shape, dtype=h.dtype, device=h.device, generator=self.generator
        ).ge_(self.dropout)
        return keep.div_(1.0 - self.dropout)

    def forward_stream(
        self, x, directions=None, *, derivatives=True, rows=None, stream_scale=None
    ):
        """Forward pass that also returns derivatives and, optionally, Jacobians.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input.
        directions : {None, "exact"}, int or torch.Tensor, default=None
            What the stream carries, in ``stream_width`` columns: nothing, the full
            Jacobian, ``k`` random directions (:func:`random_directions`), or a
            tensor of shape ``(batch or 1, k, stream_width)``.
        derivatives : bool, default=True
            Keep ``phi'(z_l)`` of every activated layer (for the local penalty).
        rows : torch.Tensor of int64, optional
            Carry the stream for these rows of ``x`` only.
        stream_scale : torch.Tensor, optional
            A factor per stream row multiplying its Jacobians (members first).

        Returns
        -------
        StreamOutput
            Output, derivatives, weights and (optionally) Jacobians.
        """
        return self._forward_stream(
            x,
            directions,
            derivatives=derivatives,
            rows=rows,
            encoded=self._stream_encoded,
            scale=stream_scale,
        )

    def _forward_stream(self, x, directions, *, derivatives, rows, encoded, scale=None):
        # ``encoded``: differentiate by the encoded columns, else by the input.
        h = self._standardise(x)
        if encoded:
            h = self.encoding(h)  # fixed features: the stream starts after them
        exact = isinstance(directions, str)
        if exact and directions != "exact":
            raise ValueError(
                f"directions must be None, 'exact', an int or a tensor, "
                f"got {directions!r}."
            )
        if exact:
            directions = None
        elif directions is not None and not (
            torch.is_tensor(directions) and directions.dim() == 3
        ):
            directions = random_directions(
                h.shape[0] if rows is None else rows.shape[0],
                h.shape[-1],
                int(directions),
                dtype=h.dtype,
                device=h.device,
            )
        if exact:
            n_directions = h.shape[-1]  # the columns the stream differentiates by
        else:
            n_directions = 0 if directions is None else directions.shape[1]
        if self.encoding is not None and not encoded:
            # The stream starts from the encoding's Jacobian.
            h, slope = self.encoding.forward_and_slope(h)
            if exact or directions is not None:
                slope = slope if rows is None else slope[rows]
                if exact:
                    directions = self.encoding.jacobian(slope)
                else:
                    directions = self.encoding.jvp(directions, slope)
                exact = False
        # A subclass may return the Jacobians' squared norms as a fifth item.
        out, derivs, weights, jacobians, *norms = self._stream_pass(
            h, directions, exact=exact, derivatives=derivatives, rows=rows, scale=scale
        )
        return StreamOutput(
            output=out,
            derivatives=derivs if derivatives else [None] * len(derivs),
            weights=weights,
            jacobians=jacobians,
            n_directions=n_directions,
            squared_norms=norms[0] if norms else None,
        )

    def _stream_pass(self, h, directions, *, exact, derivatives, rows, scale=None):
        """``(output, derivs, weights, jacobians[, squared_norms])`` from ``h``."""
        raise NotImplementedError

    def _reverse_jacobian(self, h):
        """``d output / d h`` by the transposed chain rule."""
        raise NotImplementedError

    def _folded_input_jacobian(self, x):
        """A cheaper reverse-mode ``input_jacobian(x)``, or ``None``."""
        return None

    def feature_jacobian(self, x, *, mode="auto"):
        """Jacobian of the output with respect to what the stream differentiates by.

        Parameters
        ----------
        x, mode : torch.Tensor and {"auto", "forward", "reverse"}
            As for :meth:`input_jacobian`.

        Returns
        -------
        torch.Tensor of shape (batch, n_outputs, width)
            ``width`` is ``stream_width`` with an encoded stream, else ``n_features``.
        """
        return self._jacobian(x, mode, encoded=self._stream_encoded)

    def input_jacobian(self, x, *, mode="auto"):
        """Jacobian of the output with respect to the raw input.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_features)
            Raw input.
        mode : {"auto", "forward", "reverse"}, default="auto"
            The exact forward stream (cost grows with ``n_features``), the
            transposed chain rule (with ``n_outputs``), or the cheaper one.

        Returns
        -------
        torch.Tensor of shape (batch, n_outputs, n_features)
            ``d output / d x`` for each sample.
        """
        return self._jacobian(x, mode, encoded=False)

    def _jacobian(self, x, mode, encoded):
        # ``encoded``: by the encoded columns (stream_space="encoded").
        width = self.input_width if encoded else self.n_features
        if mode == "auto":
            mode = "reverse" if self.n_outputs < width else "forward"
        if mode == "forward":
            jac = self._forward_stream(
                x, "exact", derivatives=False, rows=None, encoded=encoded
            ).jacobians[-1]
        elif mode != "reverse":
            raise ValueError(
                f"mode must be 'auto', 'forward' or 'reverse', got {mode!r}"
            )
        elif encoded:
            return self._reverse_jacobian(self.transform_input(x))
        else:
            folded = self._folded_input_jacobian(x)
            if folded is not None:
                return folded
            h = self._standardise(x)
            if self.encoding is None:
                jac = self._reverse_jacobian(h)
            else:
                # One encoding pass gives the layer's input and the slopes.
                h, slope = self.encoding.forward_and_slope(h)
                jac = self.encoding.pullback(self._reverse_jacobian(h), slope)
        return jac if encoded else jac / self.input_scale
