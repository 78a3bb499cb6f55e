"""The recipe search of the defaults issue: training recipes beyond parameters.

``suite.py --candidate`` compares CRClassifier parameter sets. Some recipes
tried while choosing the defaults are not a parameter set: a hold-out probe
that picks the epoch count and a refit on every row, a batch size derived
from the data, a fixed budget of optimizer steps. They are written here as
functions ``recipe(X, y, seed, params) -> (model, info)`` and run on the
tuning half of the suite (never the confirmation half), with the suite's
tables, splits and preprocessing, one thread per fit, tables in parallel.

Rounds (``--round``; each also runs the package's defaults as ``default``;
the rounds' recipes build on the defaults before the input encoding,
``PREVIOUS_DEFAULTS``):

- ``refit``: hold-out probe (20%), best epoch, refit on all rows, at batch
  200 and 32; batch 32 alone; early stopping at batch 32.
- ``batch``: the probe and refit with a batch of an eighth of the rows
  (16 to 200) and patience counted in epochs or in steps.
- ``steps``: a fixed budget of 200, 500 or 1,000 optimizer steps below
  2,000 rows (batch at most 200 or 64).
- ``regularise``: the 500-step budget with 10x or 100x ``dreg_lambda``,
  weight decay 1 or dropout 0.3.
- ``encoded``: around the encoded defaults, 8 bins, dropout 0.5, 3x
  ``dreg_lambda``, weight decay 0.1.
- ``encoded_budget``: the encoded defaults trained longer (200 or 300
  epochs, or batches of 64), with more dropout or a stronger penalty.
- ``schedule``: the encoded defaults with a cosine learning-rate schedule
  to 0 over ``max_iter`` epochs: as they are, with a 3x first step (also
  over 50 epochs), or over 200 epochs.
- ``encoded_width``: the encoded defaults with hidden layers of (32, 32),
  (128, 128), (256,) or (64, 64, 64).
- ``encoded_form``: the encoded defaults with residual blocks, the GELU
  activation, quadratic polynomials, or the layer-local penalty.
- ``smoothing``: the encoded defaults trained on labels smoothed by 0.05
  or 0.1 (RealMLP-TD's value).
- ``encoded_cv``: the encoded defaults with ``early_stopping="cv"``,
  searching up to 2,000 optimizer steps (``max_iter="auto"``), 100 or 200
  epochs.
- ``scaled_penalty``: the encoded defaults with ``dreg_lambda`` scaled as
  ``1e-2 * (1000 / n) ** 0.5`` (stronger on small tables) or its inverse.
- ``additive``: the encoding with no hidden layer (4 or 8 bins), an
  additive model of piecewise-linear functions of the columns.
- ``cv``: ``early_stopping="cv"`` (internal 3-fold CV picks the epoch count,
  then a refit), at batch 200 and 64.
- ``encode``: the defaults on a piecewise-linear encoding of the numeric
  columns (4 or 8 quantile bins each; with the standardised column kept;
  with dropout 0.3; scikit-learn's degree-1 quantile splines instead, with
  dropout 0.3; and inside the network, ``encoding_bins=4``, its stream
  differentiating by the input (``in4``) or by the encoded columns
  (``in4e``, the estimators' way), each also with dropout 0.3). tau is by
  the one rule of ``cr_sklearn.gradient_norms``: with respect to the
  network's input, each column in units of its spread in the test fold; so
  that of the pipelines is taken on the encoded columns, that of ``in4``
  and ``in4e`` on the table's.

Run::

    python benchmarks/explore_recipes.py --round steps --repeats 1

The Markdown report goes to ``results/suite_<split>_exploration_<round>.md``.
``--split confirm`` runs the confirmation half instead: once, for a finished
candidate chosen on the tuning half.
With ``--repeats 1`` (one 2-fold split) a difference in mean accuracy under
about one point is within the noise of the splits.
"""

import argparse
import datetime
import importlib.util
import json
import math
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
LARGE = 2000  # rows from which the step-budget recipes keep the defaults
# The rounds were explored from the defaults before the input encoding
# became one: every recipe of a round states them, so that it stays what was
# measured; ``default`` is the package's current defaults.
PREVIOUS_DEFAULTS = {"encoding_bins": None, "dropout": 0.1}
# The encoded defaults, stated by the rounds that explore around them.
ENCODED = {"encoding_bins": 4, "dropout": 0.3}


def _load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def plain(X, y, seed, params):
    """CRClassifier with ``params``."""
    from cr_sklearn import CRClassifier

    model = CRClassifier(random_state=seed, n_threads=1, **params).fit(X, y)
    return model, {"epochs": model.n_iter_}


def input_space(X, y, seed, params):
    """CRClassifier with ``params``, its stream differentiating by the input.

    With ``encoding_bins`` the estimators' stream differentiates by the
    encoded columns; here it starts from the encoding's Jacobian instead, so
    DREG penalises the Jacobian with respect to the table's columns.
    """
    from cr_sklearn import CRClassifier

    class InputSpace(CRClassifier):
        _encoding_stream_space = "input"

    model = InputSpace(random_state=seed, n_threads=1, **params).fit(X, y)
    return model, {"epochs": model.n_iter_}


def hold_out_refit(X, y, seed, params):
    """A hold-out probe picks the epoch count; a refit on every row follows.

    ``batch_divisor`` sets the batch to ``ceil(n_probe / batch_divisor)``
    clipped to [16, 200]; ``patience_steps`` counts patience in optimizer
    steps rather than epochs.
    """
    from cr_sklearn import CRClassifier

    p = dict(params)
    fraction = p.pop("validation_fraction", 0.2)
    max_steps = p.pop("max_steps", None)
    patience = p.pop("n_iter_no_change", 10)
    divisor = p.pop("batch_divisor", None)
    patience_steps = p.pop("patience_steps", None)
    max_iter = p.pop("max_iter", 300)
    n_probe = int(len(y) * (1 - fraction))
    if divisor is not None:
        p["batch_size"] = int(min(200, max(16, math.ceil(n_probe / divisor))))
    per_epoch = math.ceil(n_probe / min(p.get("batch_size", 200), n_probe))
    if patience_steps is not None:
        patience = max(patience, math.ceil(patience_steps / per_epoch))
    if max_steps is not None:
        max_iter = max(1, math.ceil(max_steps / per_epoch))
    common = {"random_state": seed, "n_threads": 1, **p}
    probe = CRClassifier(
        early_stopping=True,
        validation_fraction=fraction,
        max_iter=max_iter,
        n_iter_no_change=patience,
        **common,
    ).fit(X, y)
    epochs = max(1, probe.best_epoch_ or probe.n_iter_)
    model = CRClassifier(early_stopping=False, max_iter=epochs, **common).fit(X, y)
    return model, {"epochs": epochs}


def step_budget(X, y, seed, params):
    """A fixed number of optimizer steps below ``LARGE`` rows (else defaults)."""
    from cr_sklearn import CRClassifier

    p = dict(params)
    steps = p.pop("steps")
    batch_max = p.pop("batch_max", 200)
    if len(y) >= LARGE:
        return plain(X, y, seed, p)
    batch = min(batch_max, len(y))
    epochs = max(1, math.ceil(steps / math.ceil(len(y) / batch)))
    model = CRClassifier(
        random_state=seed, n_threads=1, max_iter=epochs, batch_size=batch, **p
    ).fit(X, y)
    return model, {"epochs": epochs}


def scheduled(X, y, seed, params):
    """CRClassifier with ``params`` and a cosine learning-rate schedule.

    The step decays from ``learning_rate_init`` to 0 over ``max_iter``
    epochs (torch's ``CosineAnnealingLR``, stepped per epoch, through
    skorch's ``LRScheduler`` in ``callbacks``); early stopping, where it is
    on, still ends training first.
    """
    from skorch.callbacks import LRScheduler

    from cr_sklearn import CRClassifier

    p = dict(params)
    epochs = p.get("max_iter", 100)
    schedule = LRScheduler(policy="CosineAnnealingLR", T_max=epochs)
    model = CRClassifier(
        random_state=seed, n_threads=1, callbacks=[("lr_schedule", schedule)], **p
    ).fit(X, y)
    return model, {"epochs": model.n_iter_}


def smoothed(X, y, seed, params):
    """CRClassifier with ``params``, trained on labels smoothed by ``eps``.

    The training targets put ``1 - eps`` on the observed class and spread
    ``eps`` evenly over all classes (torch's ``label_smoothing``; for one
    logit the target ``y (1 - eps) + eps / 2``); predictions are the
    network's probabilities as they are.
    """
    import torch

    from cr_sklearn import CRClassifier

    p = dict(params)
    eps = p.pop("eps")

    class Smoothed(torch.nn.Module):
        def __init__(self, n_classes):
            super().__init__()
            self.n_classes = n_classes

        def forward(self, output, target):
            if self.n_classes == 2:
                soft = target.to(output.dtype) * (1 - eps) + eps / 2
                return torch.nn.functional.binary_cross_entropy_with_logits(
                    output[:, 0], soft, reduction="none"
                )
            return torch.nn.functional.cross_entropy(
                output, target, reduction="none", label_smoothing=eps
            )

    class LabelSmoothing(CRClassifier):
        def _make_criterion(self):
            return Smoothed(len(self.classes_))

    model = LabelSmoothing(random_state=seed, n_threads=1, **p).fit(X, y)
    return model, {"epochs": model.n_iter_}


def scaled_penalty(X, y, seed, params):
    """CRClassifier with ``dreg_lambda`` scaled with the training rows.

    ``dreg_lambda = 1e-2 * (n_ref / n) ** power``: with ``power > 0`` the
    penalty is stronger below ``n_ref`` rows and weaker above, as a prior's
    weight is against more data; ``power < 0`` the other way round.
    """
    p = dict(params)
    power, n_ref = p.pop("power"), p.pop("n_ref", 1000)
    p["dreg_lambda"] = 1e-2 * (n_ref / len(y)) ** power
    model, info = plain(X, y, seed, p)
    return model, {**info, "dreg_lambda": p["dreg_lambda"]}


class _Ramps:
    """:class:`cr_sklearn.PiecewiseLinearEncoder`, optionally keeping each
    encoded column's standardised value before its ramps."""

    def __init__(self, n_bins=4, keep_raw=False):
        self.n_bins, self.keep_raw = n_bins, keep_raw

    def fit(self, X):
        from cr_sklearn import PiecewiseLinearEncoder

        self.encoder_ = PiecewiseLinearEncoder(n_bins=self.n_bins).fit(X)
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        out = self.encoder_.transform(X)
        if not self.keep_raw:
            return out
        pieces, start = [], 0
        for j, edges in enumerate(self.encoder_.edges_):
            width = 1 if edges is None else len(edges) - 1
            if edges is not None:
                pieces.append(X[:, j : j + 1])
            pieces.append(out[:, start : start + width])
            start += width
        return np.hstack(pieces)


class _Encoded:
    """A CR model on encoded inputs, with the methods ``run_one`` calls.

    The encoding is an earlier step of a pipeline: by the one rule its
    gradient norms (and so its tau) are taken with respect to the encoded
    columns, the network's input.
    """

    def __init__(self, encoding, model):
        self.encoding, self.model = encoding, model
        self.classes_ = model.classes_

    def predict_proba(self, X):
        return self.model.predict_proba(self.encoding.transform(X))

    def gradient_norms(self, X):
        from cr_sklearn import gradient_norms

        return gradient_norms(self.model, self.encoding.transform(X))


def _gradient_norms(model, X):
    """The test fold's gradient norms by ``cr_sklearn.gradient_norms``.

    The one rule of ``DREGScorer``: with respect to the model's input (the
    encoded columns for an ``_Encoded`` recipe), each column in units of its
    standard deviation in ``X``.
    """
    if isinstance(model, _Encoded):
        return model.gradient_norms(X)
    from cr_sklearn import gradient_norms

    return gradient_norms(model, X)


class _SplineEncoding:
    """scikit-learn's degree-1 quantile splines on the non-binary columns.

    ``SplineTransformer(degree=1, knots="quantile")`` spans the same
    piecewise-linear functions as :class:`cr_sklearn.PiecewiseLinearEncoder` with
    ``n_bins = n_knots - 1`` (a hat-function basis instead of ramps).
    """

    def __init__(self, n_bins=4):
        self.n_bins = n_bins

    def fit(self, X):
        from sklearn.compose import ColumnTransformer
        from sklearn.preprocessing import SplineTransformer

        X = np.asarray(X, dtype=float)
        numeric = [j for j in range(X.shape[1]) if len(np.unique(X[:, j])) > 2]
        spline = SplineTransformer(
            n_knots=self.n_bins + 1,
            degree=1,
            knots="quantile",
            extrapolation="constant",
        )
        self.transformer_ = ColumnTransformer(
            [("spline", spline, numeric)], remainder="passthrough"
        ).fit(X)
        return self

    def transform(self, X):
        return self.transformer_.transform(np.asarray(X, dtype=float))


def encoded(X, y, seed, params):
    """CRClassifier on the piecewise-linear encoding of ``X`` (fit on ``X``)."""
    p = dict(params)
    n_bins, keep_raw = p.pop("n_bins", 4), p.pop("keep_raw", False)
    if p.pop("splines", False):
        encoding = _SplineEncoding(n_bins).fit(X)
    else:
        encoding = _Ramps(n_bins, keep_raw).fit(X)
    model, info = plain(encoding.transform(X), y, seed, p)
    return _Encoded(encoding, model), {**info, "columns": model.n_features_in_}


ROUNDS = {
    "refit": {
        "batch32": (plain, {"batch_size": 32}),
        "refit200": (hold_out_refit, {}),
        "refit32": (hold_out_refit, {"batch_size": 32}),
        "early-stop32 (no refit)": (
            plain,
            {
                "batch_size": 32,
                "early_stopping": True,
                "validation_fraction": 0.2,
                "max_iter": 300,
            },
        ),
    },
    "batch": {
        "refit_b8_p10": (hold_out_refit, {"batch_divisor": 8}),
        "refit_b8_p20": (hold_out_refit, {"batch_divisor": 8, "n_iter_no_change": 20}),
        "refit_b200_ps50": (hold_out_refit, {"patience_steps": 50}),
        "refit_b8_ps50": (hold_out_refit, {"batch_divisor": 8, "patience_steps": 50}),
    },
    "steps": {
        "s200": (step_budget, {"steps": 200}),
        "s500": (step_budget, {"steps": 500}),
        "s1000": (step_budget, {"steps": 1000}),
        "s500_b64": (step_budget, {"steps": 500, "batch_max": 64}),
    },
    "regularise": {
        "s500_l0.1": (step_budget, {"steps": 500, "dreg_lambda": 0.1}),
        "s500_l1": (step_budget, {"steps": 500, "dreg_lambda": 1.0}),
        "s500_wd1": (step_budget, {"steps": 500, "weight_decay": 1.0}),
        "s500_do0.3": (step_budget, {"steps": 500, "dropout": 0.3}),
    },
    "encode": {
        "ple4": (encoded, {"n_bins": 4}),
        "ple8": (encoded, {"n_bins": 8}),
        "ple4_raw": (encoded, {"n_bins": 4, "keep_raw": True}),
        "ple4_do0.3": (encoded, {"n_bins": 4, "dropout": 0.3}),
        "spline4_do0.3": (encoded, {"n_bins": 4, "splines": True, "dropout": 0.3}),
        # The encoding inside the network (encoding_bins); tau stays with
        # respect to the table's columns. DREG on the Jacobians with respect
        # to the columns (in4) or to the encoded ones (in4e, the estimators').
        "in4": (input_space, {"encoding_bins": 4}),
        "in4_do0.3": (input_space, ENCODED),
        "in4e": (plain, {"encoding_bins": 4}),
        "in4e_do0.3": (plain, ENCODED),
    },
    # Around the encoded defaults: more bins, more dropout, a stronger
    # penalty, weight decay (each states the encoding and dropout it uses).
    "encoded": {
        "in8e_do0.3": (plain, {"encoding_bins": 8, "dropout": 0.3}),
        "in4e_do0.5": (plain, {"encoding_bins": 4, "dropout": 0.5}),
        "in4e_do0.3_l0.03": (plain, {**ENCODED, "dreg_lambda": 0.03}),
        "in4e_do0.3_wd0.1": (plain, {**ENCODED, "weight_decay": 0.1}),
    },
    # The encoded defaults trained longer: more epochs or smaller batches,
    # with more regularisation against the near-linear tables' overfitting.
    "encoded_budget": {
        "in4e_do0.3_e200": (plain, {**ENCODED, "max_iter": 200}),
        "in4e_do0.3_b64": (plain, {**ENCODED, "batch_size": 64}),
        "in4e_do0.3_e300_l0.03": (
            plain,
            {**ENCODED, "max_iter": 300, "dreg_lambda": 0.03},
        ),
        "in4e_do0.5_e300": (
            plain,
            {"encoding_bins": 4, "dropout": 0.5, "max_iter": 300},
        ),
    },
    # The encoded defaults with a cosine learning-rate schedule: the same
    # budget, a larger first step, or a longer run annealed to 0.
    "schedule": {
        "in4e_do0.3_cos": (scheduled, ENCODED),
        "in4e_do0.3_cos_lr3e-3": (scheduled, {**ENCODED, "learning_rate_init": 3e-3}),
        "in4e_do0.3_cos_lr3e-3_e50": (
            scheduled,
            {**ENCODED, "learning_rate_init": 3e-3, "max_iter": 50},
        ),
        "in4e_do0.3_cos_e200": (scheduled, {**ENCODED, "max_iter": 200}),
    },
    # The encoded defaults at other widths and depths.
    "encoded_width": {
        "in4e_do0.3_h32": (plain, {**ENCODED, "hidden_layer_sizes": (32, 32)}),
        "in4e_do0.3_h128": (plain, {**ENCODED, "hidden_layer_sizes": (128, 128)}),
        "in4e_do0.3_h256x1": (plain, {**ENCODED, "hidden_layer_sizes": (256,)}),
        "in4e_do0.3_h64x3": (plain, {**ENCODED, "hidden_layer_sizes": (64, 64, 64)}),
    },
    # The encoded defaults with another network form or penalty.
    "encoded_form": {
        "in4e_do0.3_residual": (plain, {**ENCODED, "architecture": "residual"}),
        "in4e_do0.3_gelu": (plain, {**ENCODED, "activation": "gelu"}),
        "in4e_do0.3_deg2": (plain, {**ENCODED, "degree": 2}),
        "in4e_do0.3_local": (plain, {**ENCODED, "dreg": "local"}),
    },
    # The encoded defaults trained on smoothed labels (RealMLP-TD's 0.1).
    "smoothing": {
        "in4e_do0.3_ls0.05": (smoothed, {**ENCODED, "eps": 0.05}),
        "in4e_do0.3_ls0.1": (smoothed, {**ENCODED, "eps": 0.1}),
    },
    # The encoded defaults with the epoch count chosen by internal 3-fold CV
    # (then a refit on every row), searched up to 2,000 steps, 100 or 200
    # epochs.
    "encoded_cv": {
        "in4e_do0.3_cv3": (
            plain,
            {**ENCODED, "early_stopping": "cv", "max_iter": "auto"},
        ),
        "in4e_do0.3_cv3_e100": (
            plain,
            {**ENCODED, "early_stopping": "cv", "max_iter": 100},
        ),
        "in4e_do0.3_cv3_e200": (
            plain,
            {**ENCODED, "early_stopping": "cv", "max_iter": 200},
        ),
    },
    # The encoded defaults with the penalty's strength scaled with the rows.
    "scaled_penalty": {
        "in4e_do0.3_lam_n^-0.5": (scaled_penalty, {**ENCODED, "power": 0.5}),
        "in4e_do0.3_lam_n^+0.5": (scaled_penalty, {**ENCODED, "power": -0.5}),
    },
    # No hidden layer: a linear map of the encoded columns, an additive model
    # of the table's columns (each a piecewise-linear function).
    "additive": {
        "in4e_additive": (plain, {**ENCODED, "hidden_layer_sizes": ()}),
        "in8e_additive": (
            plain,
            {"encoding_bins": 8, "dropout": 0.3, "hidden_layer_sizes": ()},
        ),
    },
    "cv": {
        "cv3": (plain, {"early_stopping": "cv", "max_iter": "auto"}),
        "cv3_b64": (
            plain,
            {"early_stopping": "cv", "max_iter": "auto", "batch_size": 64},
        ),
    },
}


def with_defaults(chosen):
    """The recipes to run: the package's defaults, then ``chosen``.

    Each of ``chosen`` builds on ``PREVIOUS_DEFAULTS`` (its own parameters
    win), so a round stays what it measured when the defaults change.

    Parameters
    ----------
    chosen : dict
        Name to ``(recipe, params)``, from :data:`ROUNDS`.

    Returns
    -------
    recipes : dict
        ``{"default": (plain, {}), **chosen}`` with the previous defaults
        merged into each chosen recipe's parameters.
    """
    return {
        "default": (plain, {}),
        **{
            name: (recipe, {**PREVIOUS_DEFAULTS, **params})
            for name, (recipe, params) in chosen.items()
        },
    }


def run_one(suite, recipe, params, X, y, train, test, seed, fraction=1.0):
    """Fit one recipe on one split; accuracy, log-loss, fit time and tau.

    With ``fraction`` below 1 the recipe trains on the suite's stratified
    subsample of the training fold (the same rows as ``suite.py
    --fraction``).
    """
    import torch
    from sklearn.metrics import accuracy_score, log_loss
    from threadpoolctl import threadpool_limits

    from cr_sklearn import gradient_tail_ratio

    torch.set_num_threads(1)
    train = _load("_suite_runner").subsample(train, y, fraction, seed)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pre = suite.make_preprocessing(X).fit(X.iloc[train])
        X_train, X_test = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        start = time.perf_counter()
        model, info = recipe(X_train, y[train], seed, params)
        seconds = time.perf_counter() - start
        proba = model.predict_proba(X_test)
        return {
            "acc": accuracy_score(y[test], model.classes_[proba.argmax(1)]),
            "ll": log_loss(y[test], proba, labels=model.classes_),
            "time": seconds,
            "tau": gradient_tail_ratio(_gradient_norms(model, X_test)),
            **info,
        }


def evaluate(recipes, tables, repeats, n_jobs, exclude, split="tune", fraction=1.0):
    """``{recipe: {table: [scores per split]}}`` on one half of the suite.

    With ``fraction`` below 1, on the tables the suite runs fractions on.
    """
    suite, registry = _load("suite"), _load("_suite_tables")
    small = _load("_suite_runner").MIN_ROWS_FRACTION if fraction < 1 else 0
    data = []
    for table in registry.get_tables(tables, split):
        if table.name in exclude or registry.why_unavailable(table, None):
            continue
        if table.n_rows < small:
            continue
        X, y = registry.load_table(table)
        y = np.asarray(y)
        data.append((table.name, X, y, suite.make_splits(y, repeats)))
    tasks = [
        (name, t, X, y, i, split)
        for name in recipes
        for t, X, y, splits in data
        for i, split in enumerate(splits)
    ]
    scores = Parallel(n_jobs=n_jobs)(
        delayed(run_one)(suite, *recipes[name], X, y, *split, i, fraction)
        for name, _, X, y, i, split in tasks
    )
    rows = {}
    for (name, table, *_), score in zip(tasks, scores, strict=True):
        rows.setdefault(name, {}).setdefault(table, []).append(score)
    return rows


HALVES = {
    "tune": "the tuning half",
    "confirm": "the confirmation half",
    "all": "both halves",
}


def report(rows, argv, split="tune"):
    """The Markdown report: per table mean accuracy / log-loss, then summaries."""
    names = list(rows)
    tables = list(rows[names[0]])

    def mean(name, table, key):
        return np.mean([s[key] for s in rows[name][table]])

    lines = [
        f"# Recipe exploration on {HALVES[split]}",
        "",
        f"Command: `python benchmarks/{shlex.join(['explore_recipes.py', *argv])}`",
        "",
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"commit {_load('_suite_runner').git_commit()}. "
        "Accuracy (%) / log-loss, means over the splits; one thread per fit.",
        "",
        "| table | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for t in tables:
        cells = [
            f"{100 * mean(n, t, 'acc'):.2f} / {mean(n, t, 'll'):.3f}" for n in names
        ]
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    summary = {
        "mean": lambda n: (
            f"{100 * np.mean([mean(n, t, 'acc') for t in tables]):.2f} / "
            f"{np.mean([mean(n, t, 'll') for t in tables]):.3f}"
        ),
        "median fit (s)": lambda n: (
            f"{np.median([mean(n, t, 'time') for t in tables]):.2f}"
        ),
        "median tau": lambda n: f"{np.median([mean(n, t, 'tau') for t in tables]):.2f}",
    }
    for label, cell in summary.items():
        lines.append(f"| **{label}** | " + " | ".join(cell(n) for n in names) + " |")
    return "\n".join(lines) + "\n"


def against_baselines(rows, split, repeats, argv, fraction=1.0):
    """The suite's report of the recipes beside the suite's cached baselines.

    The recipes ran on the suite's tables and splits, so the baselines'
    results of ``suite.py`` on the same half (its cache, filled by a full
    run) pair with them split by split: the summary, wins and Nadeau-Bengio
    intervals are the suite's own. A baseline is left out unless it is
    cached for every table and split.
    """
    import pandas as pd

    suite, runner, registry = (
        _load("suite"),
        _load("_suite_runner"),
        _load("_suite_tables"),
    )
    task = suite.TASK
    names = list(rows)
    model = {name: "CR" if name == "default" else f"CR {name}" for name in names}
    tables = registry.get_tables(list(rows[names[0]]), split)
    records = [
        {
            "table": table,
            "model": model[name],
            "split": i,
            "accuracy": score["acc"],
            "log_loss": score["ll"],
            "fit_time": score["time"],
            "tau": score["tau"],
            "cached": False,
        }
        for name in names
        for table, scores in rows[name].items()
        for i, score in enumerate(scores)
    ]
    baselines = [s for s in runner.model_specs(task, task.models, []) if not s.is_cr]
    specs = [runner.ModelSpec(model[name], "cr") for name in names]
    for spec in baselines:
        cached = [
            (
                table,
                i,
                runner.read_cache(task, task.cache_dir, table, spec, i, fraction),
            )
            for table in tables
            for i in range(runner.N_SPLITS * repeats)
        ]
        if any(scores is None for *_, scores in cached):
            print(f"{spec.name}: not cached for every split, left out", file=sys.stderr)
            continue
        specs.append(spec)
        records += [
            {
                "table": table.name,
                "model": spec.name,
                "split": i,
                **scores,
                "cached": True,
            }
            for table, i, scores in cached
        ]
    header = [
        f"# Recipe exploration against the suite's baselines, {HALVES[split]}",
        "",
        f"Command: `python benchmarks/{shlex.join(['explore_recipes.py', *argv])}`",
        "",
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"commit {_load('_suite_runner').git_commit()}. "
        "The recipes' fits of this run beside the baselines' cached fits of "
        "`suite.py` on the same splits"
        + (
            "."
            if fraction >= 1
            else f", trained on {fraction:g} of each training fold (tables of at "
            "least 1,000 rows)."
        ),
    ]
    return runner.report(task, pd.DataFrame(records), specs, {}, header)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--round", choices=sorted(ROUNDS), required=True)
    parser.add_argument("--tables", type=lambda s: s.split(","), default=None)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument(
        "--exclude", type=lambda s: s.split(","), default=["adult"], help="a,b,c"
    )
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--only",
        type=lambda s: s.split(","),
        default=None,
        help="run these recipes of the round only (a,b,c); the defaults always run",
    )
    parser.add_argument(
        "--against-baselines",
        action="store_true",
        help="report with the suite's cached baselines on the same splits",
    )
    parser.add_argument(
        "--from-scores",
        type=Path,
        default=None,
        help="report the scores an earlier run wrote with --scores (no fits)",
    )
    parser.add_argument(
        "--scores", type=Path, default=None, help="also write every split's scores"
    )
    parser.add_argument(
        "--split",
        choices=sorted(HALVES),
        default="tune",
        help="confirm (or all): once, for a finished candidate chosen on the "
        "tuning half",
    )
    parser.add_argument(
        "--fraction",
        type=float,
        default=1.0,
        help="train on this stratified fraction of each training fold, on the "
        "tables of at least 1,000 rows (as suite.py --fraction)",
    )
    args = parser.parse_args(argv)
    chosen = ROUNDS[args.round]
    if args.only is not None:
        unknown = sorted(set(args.only) - set(chosen))
        if unknown:
            parser.error(
                f"--only: {unknown} not in round {args.round!r}: {sorted(chosen)}"
            )
        chosen = {name: chosen[name] for name in args.only}
    recipes = with_defaults(chosen)
    if args.from_scores is not None:
        # A report of an earlier run's scores (--scores), without refitting.
        rows = json.loads(args.from_scores.read_text())
    else:
        rows = evaluate(
            recipes,
            args.tables,
            args.repeats,
            args.n_jobs,
            set(args.exclude),
            args.split,
            args.fraction,
        )
    text = report(rows, argv, args.split)
    if args.against_baselines:
        text = against_baselines(rows, args.split, args.repeats, argv, args.fraction)
    if args.scores is not None:
        args.scores.write_text(json.dumps(rows, default=float))
    fraction = "" if args.fraction >= 1 else f"_fraction{args.fraction:g}"
    name = f"suite_{args.split}_exploration_{args.round}{fraction}.md"
    output = args.output or RESULTS / name
    output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
