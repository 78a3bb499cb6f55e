"""The docstring entries the CR estimators share (private).

Each estimator's docstring holds ``%(parameters)s`` in its Parameters
section and ``%(attributes)s`` in its Attributes section, with its own
entries (those it adds or words differently) next to them;
:func:`fill_docstring` puts the shared entries there. Parameters follow the
order of the class's ``__init__``, and each entry's ``default=`` is read
from that signature unless the entry states it, so a default and its
documentation cannot disagree. A line ``%(name)s`` in a method's docstring
stands for ``METHOD_ENTRIES[name]`` (:func:`fill_methods`).
"""

import inspect
import re
import textwrap

__all__ = ["fill_docstring", "fill_methods"]

PARAMETERS = r"""
hidden_layer_sizes : array-like of int
    Width of each activated layer: an int or a flat sequence of ints
    >= 1 (floats and bools raise a ``ValueError`` naming the entry). A
    network of more than 10**9 learnable parameters (with ``degree``
    and the encoded columns) raises a ``ValueError`` before it is built.
architecture : {"mlp", "residual"}
    ``"mlp"``: a plain stack of PolyLayers. ``"residual"``: normalised
    residual blocks (see :mod:`cr_sklearn.growth`), which can be deepened
    after fitting without changing the function.
activation : {"poly", "relu", "gelu", "tanh", "swish"}
    ``"poly"`` is the learnable polynomial (PolyLayer); the others are
    fixed activations with closed-form derivatives.
degree : int
    Degree of the polynomial activation, from 1 to 30. Higher degrees raise a
    ``ValueError`` before any work: their arithmetic is not accurate (two
    float64 evaluations of a trained network differ by over 1e-6 of its
    derivatives from degree 32 on, and float32 training diverges from 33).
dreg : {"stream", "local"} or None
    DREG penalty. ``"stream"``: mean over the :math:`L` layers of the
    squared Frobenius norm of each layer's Jacobian with respect to the
    (standardised) input, :math:`\frac{1}{L} \sum_l \lVert J_l(x)
    \rVert_F^2`, from the forward stream. ``"local"``:
    :math:`\frac{1}{L} \sum_l \sum_i \phi'(z_{l,i})^2 \lVert W_{l,i}
    \rVert^2` over the neurons :math:`i` of layer :math:`l` (pre-activation
    :math:`z_{l,i}`, weight row :math:`W_{l,i}`), no stream needed.
    ``None``: no penalty, and no stream is computed.
dreg_lambda : float
    Strength of the DREG penalty: the training loss is the data loss
    plus ``dreg_lambda`` times the penalty.
dreg_space : {"encoded", "input"}
    With an input encoding (``encoding_bins``), the columns ``dreg="stream"``
    and ``igpen_lambda`` differentiate by. ``"encoded"``: the encoded
    columns the first layer reads, as fixed features (the stream's width is
    the encoded width). ``"input"``: the standardised input, through the
    encoding's slopes: the gradient that tau, ``input_gradient_norms`` and
    ``jacobian`` report (the stream's width is the number of columns).
    Without an encoding the two are the same. The layer-local penalty
    (``dreg="local"``) reads no stream and is unaffected.
dreg_points : {"data", "interpolated", "between_classes"}
    Where the stream (``dreg="stream"``, ``spread_lambda``) is carried.
    ``"data"``: at the batch's rows. ``"interpolated"``: at points drawn
    between them, ``t x_i + (1 - t) x_j`` for random pairs of the batch's
    rows and ``t`` uniform on [0, 1] (as many as ``stream_rows``; weights: the
    geometric mean of the pair's), so that the penalty also acts where the
    decision boundary runs between the classes, which a penalty at the rows
    alone leaves steep. ``"between_classes"``: the same, with ``x_j`` drawn
    among the batch's rows of another label than ``x_i``'s (any row when the
    batch has one label), so that every segment crosses a boundary. The data
    loss reads the rows either way.
n_projections : "auto", "exact" or int
    How the stream is carried: ``"exact"``, the full Jacobian (its cost
    grows with the columns); an int ``k``, ``k`` random directions (an
    unbiased estimate of the squared norm; above the columns, the exact
    stream, with a warning). ``"auto"``: exact up to 32 columns, 4
    directions above.
stream_rows : int or None
    Rows of each batch, drawn at random per step, that carry the stream of
    ``dreg="stream"`` (an unbiased estimate of the batch's penalty);
    ``None``: every row.
max_iter : int or "auto"
    Maximum number of epochs (the number of epochs when early stopping is
    off). ``"auto"`` is 100 epochs, or with ``early_stopping="cv"`` a search
    budget of 2,000 optimizer steps (``max_iter_`` is the resolved value).
batch_size : int or "auto"
    Minibatch size; ``"auto"`` is ``min(200, n_samples)``.
learning_rate_init : float or "auto"
    Adam(W) learning rate; ``"auto"`` is ``1e-3 * max(1, batch / 200)``
    (the linear scaling rule).
beta_1 : float
    Adam(W)'s decay rate of its first-moment estimate, in ``[0, 1)``.
beta_2 : float
    Adam(W)'s decay rate of its second-moment estimate, in ``[0, 1)``.
early_stopping : bool, "auto" or "cv"
    ``True``: hold out ``validation_fraction`` of the rows (stratified),
    stop when the validation loss stops improving and keep the best
    epoch's weights. ``"auto"``: the same from 2,000 rows on, ``max_iter``
    epochs below. ``"cv"``: the epoch count of least pooled out-of-fold
    loss over 3 internal folds (trained as members, see ``n_members``),
    then one network on every row. The mode used is ``early_stopping_``;
    a best epoch among the last ``n_iter_no_change`` raises a
    :class:`~sklearn.exceptions.ConvergenceWarning`.
validation_fraction : float
    Fraction held out for early stopping; one that leaves no validation
    row, or fewer training rows than classes, raises a ``ValueError``.
n_iter_no_change : int
    Epochs without improvement of more than ``tol`` (relative) before
    stopping.
tol : float
    Relative improvement threshold for early stopping.
class_weight : dict, "balanced" or None
    Weights of the classes in the loss, as in
    :class:`~sklearn.linear_model.LogisticRegression` (finite, >= 0;
    missing classes weigh 1; keys that are not classes raise).
dropout : float or "auto"
    Dropout probability after each activated layer (training only);
    ``"auto"``: 0.3 with an input encoding, else 0.1. The value used is
    ``dropout_``.
weight_decay : float
    Decoupled weight decay (AdamW) on the weight matrices.
spectral_norm : bool
    Spectrally normalise every weight matrix.
igpen_lambda : float
    Strength of the input-gradient penalty computed by double
    backpropagation (a baseline regulariser for comparisons with DREG).
spread_lambda : float
    Strength of a penalty on the spread of the per-sample output-gradient
    norms (:func:`~cr_sklearn.nn.gradient_spread`): the squared
    coefficient of variation of the rows' squared norms of the output
    layer's Jacobian (centred over the outputs), read from the stream (in
    ``dreg_space``, with ``n_projections`` and ``stream_rows``). Scale-free
    like tau, it evens the gradient's norm over the data where DREG shrinks
    its scale; 0 switches it off.
standardize : bool
    Standardise the features inside the network (training mean and
    standard deviation); Jacobians stay with respect to ``X``.
encoding_bins : int, "auto" or None
    Encode every column with more than two distinct values inside the
    network as standardised ramps through this many quantile bins of the
    training rows (as :class:`PiecewiseLinearEncoder`; bins the rows cannot
    tell apart are dropped, with a warning). DREG's stream differentiates
    by the encoded columns; :meth:`jacobian` and tau by ``X``. ``"auto"``:
    4 bins up to 100 columns, none above; ``None``: no encoding. The value
    used is ``encoding_bins_``.
dtype : {"float32", "float64"}
    The dtype the layers train in. The input transform and predictions run
    in float64 from the trained weights either way (checked against the
    training forward at the end of every fit). ``"float64"`` trains at
    about half the speed, and a sample weight of ``k`` then equals ``k``
    repeated rows.
n_threads : int, "auto" or None
    Torch threads while fitting (restored afterwards, clamped to the usable
    CPUs). ``"auto"``: one unless a step's arithmetic is large enough for
    more (at most four), from the data's shape only, so seeded fits stay
    reproducible. ``None``: torch's setting.
random_state : int, RandomState instance or None
    Seeds initialisation, shuffling, the validation split, dropout and the
    projections: the same seed gives the same predictions.
device : str
    ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``. Seeded CPU fits are
    bit-identical at the same thread count; CUDA fits are not guaranteed to
    be (see the user guide's training page).
verbose : int
    1: a table per epoch (losses, validation score, the unscaled penalty);
    2: also a progress bar per batch.
warm_start : bool
    Continue training the fitted network on the next ``fit`` (weights and
    history carry over, the optimizer starts afresh); parameters that
    define the network cannot change.
callbacks : list of skorch callbacks or (name, callback) tuples
    Extra skorch callbacks (instances or classes); any other entry
    raises a ``TypeError`` naming it.
n_members : int or "auto"
    ``k > 1``: a cross-fitted ensemble of ``k`` members trained as one
    batched network, member ``m`` on the rows outside stratified fold
    ``m``, each keeping its best epoch on its own fold (unless
    ``early_stopping=False``). :meth:`predict_proba` averages the members'
    probabilities. ``partial_fit``, ``warm_start`` and
    :class:`~cr_sklearn.DepthGrowth` are not available with members, and
    ``igpen_lambda`` must be 0. ``"auto"``: 4 members from 1,000 training
    rows, one network below and where members are not available. The count
    used is ``n_members_``.
oob_score : bool
    With ``n_members > 1``, set ``oob_decision_function_`` and ``oob_score_``
    from each row's prediction by the member that did not train on it.
"""

ATTRIBUTES = r"""
classes_ : ndarray of shape (n_classes,)
    Class labels.
n_features_in_ : int
    Number of features seen during fit.
feature_names_in_ : ndarray of shape (n_features_in_,)
    Feature names, when ``X`` has string column names.
n_iter_ : int
    Number of epochs run.
loss_curve_ : list of float
    Training loss (data loss + penalty) per epoch.
validation_scores_ : list of float or None
    Validation accuracy per epoch, with early stopping.
best_validation_score_ : float or None
    Best validation accuracy, with early stopping.
best_epoch_ : int or None
    With early stopping, the epoch (counted like ``n_iter_``) whose
    model was kept: the last one that improved the validation loss by
    more than ``tol`` (relative); with ``early_stopping="cv"``, the
    epoch count chosen by the internal folds. ``None`` otherwise.
best_epochs_ : ndarray of shape (n_members,) or None
    The epoch each member kept (one entry for one network: ``best_epoch_``);
    ``None`` when no epoch was chosen. With ``n_members > 1``,
    ``best_epoch_`` is the latest of them and ``n_iter_`` the epochs
    trained, the most of any member.
oob_score_ : float
    With ``oob_score=True``: the accuracy of the out-of-fold predictions.
oob_decision_function_ : ndarray of shape (n_samples, n_classes)
    With ``oob_score=True``: each training row's class probabilities
    from the member that did not train on it.
early_stopping_ : {"off", "hold-out", "cv"}
    How the last fit chose its length (see ``early_stopping``).
max_iter_ : int
    The epoch budget ``max_iter`` resolved to in the last fit.
plan_ : mapping
    The settings the last fit resolved and used, read-only: the rows
    (``n_samples``), ``batch_size``, ``learning_rate``, ``max_epochs``,
    ``patience``, ``stopping``, ``encoding_bins``, ``n_members``, the
    stream (``n_projections``, ``stream_rows``) and the network's fields
    (``hidden``, ``degree``, ``dtype``, ...). Saving, pickling and copying
    keep it; ``set_params`` after ``fit`` sets the next fit's.
cv_validation_loss_ : ndarray of shape (n_epochs,) or None
    With ``early_stopping="cv"``: the pooled out-of-fold loss of the
    internal folds per epoch; the model trained for its argmin + 1
    epochs. With ``n_members > 1``: the members' pooled out-of-fold loss
    per epoch. ``None`` otherwise.
gradient_norm_mean_ : float
    Mean input-gradient norm on the training data,
    in the space of :meth:`input_sensitivity`, which divides by it.
gradient_norm_quantiles_ : ndarray of shape (101,)
    Percentiles 0..100 of the training input-gradient norms.
input_mean_ : ndarray of shape (n_features,)
    Training mean of each feature (for :meth:`input_distance`).
input_scale_ : ndarray of shape (n_features,)
    Training standard deviation of each feature (1 where constant).
n_encoded_features_ : int or None
    Columns of the input encoding, which the first layer reads; ``None``
    without an encoding.
encoding_bins_ : int or None
    The bins per column the network was built with (``encoding_bins`` resolved).
dropout_ : float
    The dropout rate the network was built with (``dropout`` resolved).
n_members_ : int
    The members the network was built with (``n_members`` resolved; 1: one network).
input_distance_quantiles_ : ndarray of shape (101,)
    Percentiles 0..100 of the training samples' :meth:`input_distance`.
net_ : skorch.NeuralNet
    The fitted skorch net (history, callbacks).
module_ : torch.nn.Module
    The fitted network.
device_ : str
    The device used.
"""

_X = "Parameters\n----------\nX : array-like of shape (n_samples, n_features)\n    "

# The Parameters section starts with one of the "Parameters_..." entries;
# "Parameters_X_Returns" is the whole section of a method of X alone, and
# the header of the Returns section that its own entry follows.
METHOD_ENTRIES = {
    "Parameters_X_Returns": _X + "Input samples.\n\nReturns\n-------",
    "Parameters_X": _X + "Input samples.",
    "Parameters_X_train": _X + "Training data.",
    "Parameters_score": _X
    + """Test samples.
y : array-like of shape (n_samples,)
    True labels.
sample_weight : array-like of shape (n_samples,), default=None
    Sample weights.""",
    "sample_weight": """sample_weight : array-like of shape (n_samples,), default=None
    Per-sample weights of the data loss.""",
    "partial_fit_notes": """Notes
-----
The network, the cut-points of an ordinal head, Adam's moments and
the history carry over; the other parameters are read anew at every
call, and those that define the network cannot change (a
``ValueError`` names it). The fitted summaries describe every row
passed to ``partial_fit`` since the last :meth:`fit` (the quantiles
on a uniform sample of at most 2048 of them).""",
}


def _entries(text):
    """``{name: entry}`` of a numpydoc block (entries start unindented)."""
    entries = {}
    for line in textwrap.dedent(text).strip("\n").splitlines():
        if line and not line[0].isspace():
            name = line.split(" : ")[0]
            entries[name] = [line]
        else:
            entries[name].append(line)
    return {name: "\n".join(lines) for name, lines in entries.items()}


def _block(entries, indent):
    return textwrap.indent("\n".join(entries), indent) + "\n"


def fill_docstring(cls):
    """Put the shared entries in ``cls.__doc__``; return ``cls`` (a decorator).

    The class's own entries (around the markers) replace the shared ones of
    the same name; an own attribute that is not shared follows the entry
    written before it.
    """
    doc = cls.__doc__
    indent = re.search(r"^( *)%\(parameters\)s", doc, re.M).group(1)
    parts = re.split(r"^ *%\((parameters|attributes)\)s\n", doc, flags=re.M)
    # parts: [intro + own parameters, "parameters", ... + own attributes,
    # "attributes", rest]; own entries lie between a section's underline and marker.
    own_parameters = _entries(parts[0].rsplit("----------\n", 1)[1])
    own_attributes = _entries(parts[2].rsplit("----------\n", 1)[1])
    parts[0] = parts[0].rsplit("----------\n", 1)[0] + "----------\n"
    parts[2] = parts[2].rsplit("----------\n", 1)[0] + "----------\n"
    shared = _entries(PARAMETERS)
    signature = inspect.signature(cls.__init__).parameters
    parameters = []
    for name, p in signature.items():
        if name == "self":
            continue
        entry = own_parameters.get(name, shared.get(name))
        if entry is None:
            raise ValueError(f"{cls.__name__}: no docstring entry for {name!r}")
        first, _, rest = entry.partition("\n")
        if "default=" not in first:
            value = p.default  # as numpydoc writes it: strings in double quotes
            default = f'"{value}"' if isinstance(value, str) else repr(value)
            first = f"{first}, default={default}"
        parameters.append(f"{first}\n{rest}")
    attributes = dict(_entries(ATTRIBUTES))
    order = list(attributes)
    previous = None
    for name, entry in own_attributes.items():
        if name not in attributes:
            order.insert(order.index(previous) + 1 if previous else 0, name)
        attributes[name] = entry
        previous = name
    parts[1] = _block(parameters, indent)
    parts[3] = _block([attributes[name] for name in order], indent)
    cls.__doc__ = "".join(parts)
    return fill_methods(cls)


def fill_methods(obj):
    """Replace each line ``%(name)s`` of the docstrings of ``obj`` (a function,
    or a class's own methods) by ``METHOD_ENTRIES[name]``, indented as the
    marker; return ``obj`` (a decorator)."""
    members = vars(obj).values() if isinstance(obj, type) else [obj]
    for member in members:
        # An available_if descriptor keeps a copy of its function's docstring.
        for function in (member, getattr(member, "fn", None)):
            doc = getattr(function, "__doc__", None)
            if (callable(function) or hasattr(function, "fn")) and "%(" in (doc or ""):
                function.__doc__ = re.sub(
                    r"^( *)%\((\w+)\)s$",
                    lambda m: textwrap.indent(METHOD_ENTRIES[m[2]], m[1]),
                    doc,
                    flags=re.M,
                )
    return obj
