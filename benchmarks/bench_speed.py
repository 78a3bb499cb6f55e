"""Speed where users feel it: every speed target of cr_sklearn in one table.

Each section measures its cases side by side in one run; a ratio is the
median over repeats of the per-repeat ratio (the cases of a repeat run back
to back, so a drift in the machine's load hits both). Every row records the
threads it ran with and the load average before and after it.

Sections (``--sections``; the default runs the first five):

``threads``
    A default ``CRClassifier()`` fit (``n_threads="auto"``) beside two
    busy-loop processes against ``n_threads=1`` under the same load (target
    <= 1.1x), ``n_threads=2`` under that load (what choosing two threads
    for the shape would cost) and, on Pima, for contrast, ``n_threads=None``
    (torch's default); idle, against the better of ``n_threads=1`` and ``2`` (target
    <= 1.15x). On Pima (the default fit) and at a fixed number of epochs on
    a 384-column embedding-like shape and a 5,000 x 50 table. Wall clock:
    threads are about waiting.
``fit``
    A default Pima fit (``n_threads=1``) against ``MLPClassifier`` with the
    same hidden sizes, batch 200 and 100 epochs without early stopping: the
    same optimizer steps, checked (target <= 4x). Beside it, the same fit
    with parts of the default switched off (a ReLU network through the same
    loop; the polynomial without DREG; the local penalty), to show where a
    default step's time goes.
``predict``
    ``predict_proba`` on one row (target <= 1.5x MLPClassifier's) and on
    100k rows (target <= 1x), one thread.
``cli``
    ``cr-sklearn --help`` and an argument error in fresh processes (target
    < 0.5 s each, torch not imported); ``import cr_sklearn`` and
    ``import cr_sklearn; cr_sklearn.CRClassifier`` against
    ``import torch, sklearn`` (target <= 0.3 s more); the ``load_model``
    registry against the public CR estimators.
``train``
    Training cost per epoch of the package's own loop, one thread: the
    default stream (``stream_rows=64``) against the double-backprop penalty
    (IGPen) where 64 rows are at most half the batch (target <= 1x), the
    one-direction stream on every row at d=384 (target <= 0.9x) and
    ``dreg="local"`` against the plain polynomial network (target <= 1.3x).
``study`` (opt-in: the default study, then its first repeat's CR fits
three times; many minutes)
    The default ``cr-sklearn study`` (wall and CPU time), and the CPU time
    of its CR fits replayed in this process with the study's estimators and
    subsamples: with the current default threads against ``n_threads=None``
    (target <= 0.5x).
``gradients``, ``memory`` (opt-in)
    ``input_gradient_norms`` and ``DREGScorer`` against ``predict_proba``;
    peak memory of 1M-row calls in fresh processes.
``large`` (opt-in, named only: not in ``all``; many minutes)
    A default verbose fit on 1,000,000 x 10 in a fresh process: wall and
    CPU time, peak memory, and the progress it printed.

A last row says whether a CUDA device is there (``benchmarks/gpu_check.py``
is the GPU check); no GPU timings are taken here.

Run::

    python benchmarks/bench_speed.py                 # default sections (~10 min)
    python benchmarks/bench_speed.py --sections all  # + study, gradients, memory
    python benchmarks/bench_speed.py --quick         # smoke run (~1 min), with study

The Markdown table goes to ``benchmarks/results/speed.md`` (``--output``).
"""

import argparse
import contextlib
import itertools
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import Callback
from skorch.dataset import Dataset
from threadpoolctl import threadpool_limits

import cr_sklearn
from cr_sklearn import CRClassifier, _inference
from cr_sklearn.datasets import load_pima

try:
    from xgboost import XGBClassifier
except ImportError:  # optional: the rows against XGBoost are then skipped
    XGBClassifier = None

RESULTS = Path(__file__).resolve().parent / "results" / "speed.md"
SECTIONS = (
    "threads",
    "fit",
    "predict",
    "cli",
    "train",
    "study",
    "gradients",
    "memory",
    "large",
)
DEFAULT_SECTIONS = ("threads", "fit", "predict", "cli", "train")
QUICK_SECTIONS = (*DEFAULT_SECTIONS, "study")
EPOCH_ROWS = 4096
HIDDEN = (64, 64)
# The clock of the one-thread sections (``--clock``): process CPU time by
# default, which a busy neighbour disturbs less than the wall clock.
CLOCK = [time.process_time]
# torch's own thread count at start-up: sections that bound it restore it, so
# that the fits of the other sections see what a user's process would.
TORCH_THREADS = torch.get_num_threads()

# name -> CRClassifier parameters of each training variant (also used by
# gpu_check.py).
VARIANTS = {
    "relu": {"activation": "relu", "dreg": None},
    "poly": {"dreg": None},
    "local": {"dreg": "local"},
    # The stream on every row of the batch, as the penalty is defined ...
    "stream exact": {"dreg": "stream", "n_projections": "exact", "stream_rows": None},
    "stream k=1": {"dreg": "stream", "n_projections": 1, "stream_rows": None},
    "stream k=4": {"dreg": "stream", "n_projections": 4, "stream_rows": None},
    # ... and on 64 random rows per step (the default; equal at batch 64).
    "stream exact, 64 rows": {"dreg": "stream", "n_projections": "exact"},
    "IGPen": {"dreg": None, "igpen_lambda": 0.01},
}
# The variants the train section times: the default stream (exact up to 32
# features, 4 projections above) and the targets' references.
TRAIN_VARIANTS = {
    "relu": VARIANTS["relu"],
    "poly": VARIANTS["poly"],
    "local": VARIANTS["local"],
    "stream (default)": {"dreg": "stream"},
    "stream k=1": VARIANTS["stream k=1"],
    "stream exact": VARIANTS["stream exact"],
    "IGPen": VARIANTS["IGPen"],
}


class Row:
    """One line of the table.

    ``value`` is a number (printed with ``unit``) or a text; ``limit`` makes
    the row a target: met when ``value <= limit`` (or when ``ok`` says so,
    for rows whose target is not a bound).
    """

    def __init__(
        self, measure, case, against, value=None, *, unit="x", target="", limit=None
    ):
        self.measure, self.case, self.against = measure, case, against
        self.value, self.unit, self.target, self.limit = value, unit, target, limit
        self.ok = None
        self.threads = ""
        self.load = None

    def cell(self):
        value = self.value
        if value is None:
            return "not run"
        if isinstance(value, str):
            return value
        if self.unit == "x":
            return f"{value:.2f}x"
        digits = 3 if abs(value) < 1 else (1 if abs(value) < 100 else 0)
        return f"{value:.{digits}f} {self.unit}"

    def met(self):
        if self.ok is not None:
            return "yes" if self.ok else "no"
        if self.limit is None:
            return ""
        if self.value is None or isinstance(self.value, str):
            return "not run"
        return "yes" if self.value <= self.limit else "no"


class Recorder:
    """The rows of a run, each stamped with its threads and load average."""

    def __init__(self):
        self.targets, self.details = [], []

    @contextlib.contextmanager
    def case(self, threads):
        """Rows added in the block get ``threads`` and the load around it."""
        rows = []
        before = os.getloadavg()[0]
        yield rows
        after = os.getloadavg()[0]
        for row in rows:
            row.threads = row.threads or str(threads)
            row.load = (before, after)
            (
                self.details if row.limit is None and row.ok is None else self.targets
            ).append(row)

    def note(self, row):
        """A row outside any timed block (e.g. "not run")."""
        self.details.append(row)


def _median_ratio(times, case, reference):
    """Median over repeats of ``times[case][r] / times[reference][r]``."""
    ratios = np.asarray(times[case]) / np.asarray(times[reference])
    return float(np.median(ratios))


def _pima():
    X, y = load_pima(return_X_y=True)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def _big_rows(X, n, seed=0):
    """``n`` rows like Pima's: resampled and jittered by 10% of each std."""
    rng = np.random.default_rng(seed)
    rows = X[rng.integers(0, len(X), n)]
    return rows + 0.1 * X.std(axis=0) * rng.standard_normal(rows.shape)


def _timed(function, *args, clock=None, **kwargs):
    clock = clock or CLOCK[0]
    start = clock()
    function(*args, **kwargs)
    return clock() - start


def _wall_and_cpu(function, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    function(*args, **kwargs)
    return time.perf_counter() - wall, time.process_time() - cpu


@contextlib.contextmanager
def _busy_processes(n):
    """``n`` Python processes spinning ``while True: pass`` for the block."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)
    ]
    try:
        time.sleep(0.5)  # let them start spinning
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


@contextlib.contextmanager
def _torch_threads(n):
    """torch's global thread count set to ``n`` in the block, then restored."""
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _clock_name():
    return "CPU time" if CLOCK[0] is time.process_time else "wall clock"


# -- threads: n_threads="auto" under load and idle ---------------------------------
def _cr_fit(X, y, **params):
    return CRClassifier(random_state=0, **params).fit(X, y)


def _rotated(names, r):
    """``names`` starting at the ``r``-th: no case always runs first."""
    k = r % len(names)
    return names[k:] + names[:k]


class _ThreadProbe(Callback):
    """Records torch's thread count while a fit trains."""

    def on_train_begin(self, net, **kwargs):
        self.threads = torch.get_num_threads()


def _usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _embedding_like(n=2000, d=384, seed=0):
    """Sentence-embedding-like rows: unit-norm ``d``-vectors, a linear rule."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (X @ rng.standard_normal(d) > 0).astype(int)


def _table_like(n=5000, d=50, seed=0):
    """A ``n`` x ``d`` table: a nonlinear rule of five columns."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, (X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + X[:, 3:5].sum(1) > 0).astype(int)


# The shapes the thread targets hold on: name -> (data, fit parameters, the
# quick run's). Pima is the default fit (as last measured); the others a fixed
# number of epochs.
THREAD_SHAPES = {
    "Pima fit": (_pima, {}, {"max_iter": 10}),
    "384-column embedding, 2,000 rows, 10 epochs": (
        _embedding_like,
        {"max_iter": 10, "early_stopping": False},
        {"max_iter": 2, "early_stopping": False},
    ),
    "5,000 x 50 table, 5 epochs": (
        _table_like,
        {"max_iter": 5, "early_stopping": False},
        {"max_iter": 1, "early_stopping": False},
    ),
}


def bench_threads(rec, quick):
    for shape, (data, fit, quick_fit) in THREAD_SHAPES.items():
        _bench_threads_on(rec, quick, shape, *data(), quick_fit if quick else fit)


def _bench_threads_on(rec, quick, shape, X, y, fit):
    repeats = 2 if quick else 5
    pima = shape == "Pima fit"
    # The quick run fits 10 epochs: threads are oversubscribed on purpose
    # here, and n_threads=None can take 30x longer than one thread.
    label = f" ({fit['max_iter']} epochs)" if pima and fit else ""
    # What "auto" resolves to here, seen from inside a fit.
    probe = _ThreadProbe()
    _cr_fit(X, y, max_iter=1, callbacks=[probe])
    auto_threads = probe.threads
    auto = f"n_threads='auto' (= {auto_threads} here){label}"
    # n_threads=None, torch's default, only on Pima (a contrast, and slow).
    # Two threads as well: what a rule that chose them for this shape would
    # cost beside busy processes.
    cases = {"auto": {}, "1": {"n_threads": 1}, "2": {"n_threads": 2}}
    if pima:
        cases["None"] = {"n_threads": None}
    with rec.case("2 busy processes + the fit's") as rows:
        with _busy_processes(2):
            _cr_fit(X, y, max_iter=2)  # warm-up
            times = {name: [] for name in cases}
            cpu = {name: [] for name in cases}
            for r in range(repeats):
                for name in _rotated(list(cases), r):
                    wall, used = _wall_and_cpu(_cr_fit, X, y, **fit, **cases[name])
                    times[name].append(wall)
                    cpu[name].append(used)
        rows.append(
            Row(
                f"{shape}, loaded",
                f"default {auto}, beside 2 busy processes (wall)",
                "n_threads=1, same load",
                _median_ratio(times, "auto", "1"),
                target="<= 1.1",
                limit=1.1,
            )
        )
        rows.append(
            Row(
                f"{shape}, loaded",
                "n_threads=2, same load (wall)",
                "n_threads=1, same load",
                _median_ratio(times, "2", "1"),
            )
        )
        if pima:
            rows.append(
                Row(
                    f"{shape}, loaded",
                    "n_threads=None (torch's default threads), same load (wall)",
                    "n_threads=1, same load",
                    _median_ratio(times, "None", "1"),
                )
            )
            rows.append(
                Row(
                    f"{shape}, loaded",
                    "n_threads=None, same load (process CPU time)",
                    "n_threads=1, same load",
                    _median_ratio(cpu, "None", "1"),
                )
            )
        rows.append(
            Row(
                f"{shape}, loaded",
                f"default fit{label}, wall time",
                "(absolute)",
                float(np.median(times["auto"])),
                unit="s",
            )
        )
    cases = {"auto": {}, "1": {"n_threads": 1}, "2": {"n_threads": 2}}
    with rec.case("auto, 1, 2; no busy processes") as rows:
        _cr_fit(X, y, max_iter=2)
        times = {name: [] for name in cases}
        for r in range(repeats):
            for name in _rotated(list(cases), r):
                times[name].append(
                    _timed(_cr_fit, X, y, **fit, **cases[name], clock=time.perf_counter)
                )
        # The better setting by its median, then paired ratios against it (a
        # per-repeat minimum of two noisy times would bias the ratio up).
        best = min(("1", "2"), key=lambda name: np.median(times[name]))
        rows.append(
            Row(
                f"{shape}, idle",
                f"default {auto} (wall)",
                f"better of n_threads=1 and 2 (here {best})",
                _median_ratio(times, "auto", best),
                target="<= 1.15",
                limit=1.15,
            )
        )
        rows.append(
            Row(
                f"{shape}, idle",
                "n_threads=2 (wall)",
                "n_threads=1",
                _median_ratio(times, "2", "1"),
            )
        )


# -- fit: CRClassifier against MLPClassifier, the same optimizer steps -------------
def _mlp():
    # CR standardises inside; the MLP gets the same standardised inputs.
    return make_pipeline(
        StandardScaler(),
        MLPClassifier(
            HIDDEN,
            batch_size=200,
            max_iter=100,
            tol=0,
            n_iter_no_change=10**9,
            random_state=0,
        ),
    )


def _cr_steps(clf):
    """Optimizer steps of a fit: its training batches in the history."""
    return sum(
        1
        for row in clf.net_.history
        for batch in row["batches"]
        if "train_loss" in batch
    )


# What a default step is made of: the same fit with parts switched off, from a
# ReLU network through the same skorch loop to the full default.
STEP_PARTS = {
    "relu": {"activation": "relu", "dreg": None, "dropout": 0.0},
    "poly": {"dreg": None},
    "local": {"dreg": "local"},
}
STEP_PART_NAMES = {
    "relu": "ReLU, no DREG, no dropout (a plain MLP in the same loop)",
    "poly": "polynomial + dropout, dreg=None (values only)",
    "local": "dreg='local' (values and slopes, no stream)",
    "recorded": "the default with its stream recorded op by op (as before the "
    "stream became one autograd node)",
}


@contextlib.contextmanager
def _recorded_stream():
    """The plain network's stream recorded op by op, for the block."""
    from cr_sklearn.nn import CRNetwork

    fused = CRNetwork._fused_stream_pass

    def recorded(self, h, directions, rows):
        return self._recorded_stream_pass(
            h, directions, exact=directions is None, derivatives=True, rows=rows
        )

    CRNetwork._fused_stream_pass = recorded
    try:
        yield
    finally:
        CRNetwork._fused_stream_pass = fused


def stream_products_per_step(k, rows=64, hidden=HIDDEN, n_outputs=1):
    """The stream's matrix-product multiply-adds in one training step.

    ``k`` directions on ``rows`` rows: the exact stream skips the first
    layer's product, so each later layer costs ``rows k w_in w_out`` forward
    and twice that backward (the weight's and the incoming Jacobian's
    gradients), and so does the output layer.
    """
    widths = [*hidden, n_outputs]
    forward = sum(
        rows * k * a * b for a, b in zip(widths[:-1], widths[1:], strict=True)
    )
    return 3 * forward


def _gemm_seconds_per_multiply_add(k, rows=64, width=HIDDEN[0], repeats=200):
    """CPU seconds per multiply-add of the stream's own product, one thread."""
    a = torch.randn(rows * k, width)
    b = torch.randn(width, width)
    a.mm(b)
    start = CLOCK[0]()
    for _ in range(repeats):
        a.mm(b)
    return (CLOCK[0]() - start) / (repeats * rows * k * width * width)


def step_decomposition(X, y, n_epochs=50):
    """CPU ms of the parts of a default training step, one thread.

    A default fit's net after a short fit trains ``n_epochs`` more epochs on
    the fit's own batches (the default batch size over every row, the last
    batch the remainder), step by step as skorch's ``train_step_single``
    does, each part timed on its own: the forward pass (values, slopes and
    the stream's Jacobians), the loss (data loss and the penalty), the
    backward pass and the optimizer's step. Returns ``{part: ms per step}``
    with ``"step"``: the four together, as this loop measured them.
    """
    clf = _cr_fit(X, y, n_threads=1, max_iter=2)
    net = clf.net_
    module = net.module_.train()
    Xt = torch.as_tensor(X, dtype=torch.float32)
    yt = torch.as_tensor(clf.classes_.searchsorted(y))
    size = clf.net_.batch_size
    batches = [
        ({"X": Xt[i : i + size]}, yt[i : i + size]) for i in range(0, len(y), size)
    ]
    parts = dict.fromkeys(("forward", "loss", "backward", "optimizer"), 0.0)
    clock = time.process_time
    n_steps = 0
    with _torch_threads(1):
        for epoch in range(n_epochs + 2):
            for batch, target in batches:
                t0 = clock()
                y_pred = net.infer(batch)
                t1 = clock()
                loss = net.get_loss(y_pred, target, X=batch, training=True)
                t2 = clock()
                loss.backward()
                t3 = clock()
                net.optimizer_.step()
                net.optimizer_.zero_grad(set_to_none=True)
                t4 = clock()
                if epoch >= 2:  # warm-up epochs first
                    n_steps += 1
                    for name, dt in zip(
                        parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True
                    ):
                        parts[name] += dt
    module.eval()
    out = {name: 1e3 * total / n_steps for name, total in parts.items()}
    out["step"] = sum(out.values())
    return out


def bench_fit(rec, quick):
    X, y = _pima()
    repeats = 2 if quick else 5
    names = ["cr", "mlp", *STEP_PARTS, "recorded"]
    with rec.case(1) as rows, threadpool_limits(1):
        _cr_fit(X, y, n_threads=1, max_iter=2)  # warm-up
        _mlp().set_params(mlpclassifier__max_iter=2).fit(X, y)
        times = {name: [] for name in names}
        for r in range(repeats):
            for name in _rotated(names, r):
                start = CLOCK[0]()
                if name == "cr":
                    cr = _cr_fit(X, y, n_threads=1)
                elif name == "mlp":
                    mlp = _mlp().fit(X, y)
                elif name == "recorded":
                    with _recorded_stream():
                        _cr_fit(X, y, n_threads=1)
                else:
                    _cr_fit(X, y, n_threads=1, **STEP_PARTS[name])
                times[name].append(CLOCK[0]() - start)
        mlp_est = mlp[-1]
        mlp_steps = mlp_est.n_iter_ * math.ceil(len(y) / min(200, len(y)))
        cr_steps = _cr_steps(cr)
        rows.append(
            Row(
                "Pima fit",
                f"CRClassifier(n_threads=1), defaults ({_clock_name()})",
                "MLPClassifier((64, 64), batch 200, 100 epochs, no early stop)",
                _median_ratio(times, "cr", "mlp"),
                target="<= 4",
                limit=4.0,
            )
        )
        steps = Row(
            "Pima fit",
            f"optimizer steps: CR {cr.n_iter_} epochs = {cr_steps} steps, "
            f"MLP {mlp_est.n_iter_} epochs = {mlp_steps} steps",
            "(the same work)",
            f"{cr_steps} / {mlp_steps}",
            target="equal",
        )
        steps.ok = cr_steps == mlp_steps
        rows.append(steps)
        for name in (*STEP_PARTS, "recorded"):
            what = "" if name == "recorded" else "the default with parts off: "
            rows.append(
                Row(
                    "Pima fit",
                    what + STEP_PART_NAMES[name],
                    "MLPClassifier, the same steps",
                    _median_ratio(times, name, "mlp"),
                )
            )
        # What the stream cannot go below: its matrix products at this
        # machine's speed for them, on top of everything else a step does
        # (the dreg='local' fit: values, slopes, dropout, loop, optimizer).
        # Pima's default: the exact stream over the encoded columns.
        k = cr.net_.module_.stream_width
        macs = stream_products_per_step(k)
        with _torch_threads(1):
            per_mac = _gemm_seconds_per_multiply_add(k)
        bound = float(np.median(times["local"])) + cr_steps * macs * per_mac
        rows.append(
            Row(
                "Pima fit",
                f"lower bound of the default: the dreg='local' fit + the stream's "
                f"matrix products ({macs / 1e6:.1f}M multiply-adds per step: the "
                f"exact stream, {k} directions on 64 rows, at "
                f"{1e-9 / per_mac:.0f} G/s measured here)",
                "MLPClassifier, the same steps",
                bound / float(np.median(times["mlp"])),
            )
        )
        for name, label in [("cr", "CR"), ("mlp", "MLPClassifier")]:
            rows.append(
                Row(
                    "Pima fit",
                    f"{label} ms per step ({_clock_name()}, whole fit / steps)",
                    "(absolute)",
                    float(np.median(times[name])) / cr_steps * 1e3,
                    unit="ms",
                )
            )
        # Where a default step's time goes (CPU time, one thread): the parts
        # timed one by one; the rest of the fit's step is skorch's loop, its
        # callbacks and the validation pass.
        parts = step_decomposition(X, y, n_epochs=10 if quick else 50)
        per_step = float(np.median(times["cr"])) / cr_steps * 1e3
        for name in ("forward", "loss", "backward", "optimizer"):
            rows.append(
                Row(
                    "Pima step",
                    f"default step, {name} (CPU time, ms per step; "
                    f"{parts[name] / parts['step']:.0%} of the four parts)",
                    "(absolute)",
                    parts[name],
                    unit="ms",
                )
            )
        rest = per_step - parts["step"]
        note = (
            "skorch's loop, its callbacks and the validation pass"
            if rest >= 0
            else "negative: the parts, timed in their own loop, add up to more "
            "than the fit's step; the two are within noise of each other"
        )
        rows.append(
            Row(
                "Pima step",
                "default step, the rest: the fit's per-step CPU time "
                f"({per_step:.2f} ms) minus the four parts ({parts['step']:.2f} "
                f"ms); {note}",
                "(absolute)",
                rest,
                unit="ms",
            )
        )


# -- predict: latency and throughput -------------------------------------------------
def _time_calls(function, arg, n_calls):
    start = CLOCK[0]()
    for _ in range(n_calls):
        function(arg)
    return (CLOCK[0]() - start) / n_calls


def prediction_multiply_adds(model):
    """Matrix-product multiply-adds per predicted row of a fitted model.

    ``MLPClassifier``: its weight matrices. ``CRClassifier``: its layers, and
    with an input encoding the encoding's own product (``d`` inputs to the
    encoded columns, one weight each) and a first layer that reads the
    encoded columns.
    """
    if hasattr(model, "coefs_"):
        return int(sum(w.size for w in model.coefs_))
    module = model.net_.module_
    sizes = [module.input_width, *module.hidden_layer_sizes, module.n_outputs]
    macs = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    if module.encoding is not None:
        macs += module.n_features * module.input_width
    return int(macs)


def irreducible_prediction(model, n_rows, *, cubics=False):
    """A function that runs the float64 arithmetic CR's prediction cannot avoid.

    A fitted ``CRClassifier``'s forward pass, at float64 and in the chunks
    ``predict_proba`` uses, is at least its matrix products (the encoding's,
    each layer's, the output's) and one sigmoid per activated unit (the soft
    bound of each polynomial); the polynomials, the clamps and the softmax
    come on top. The returned function runs only those products and
    sigmoids on ``n_rows`` rows of random values of the same shapes (their
    cost does not depend on the values), so its time bounds any rewrite of
    the pass that keeps float64. With ``cubics``, each activated unit's cubic
    runs too, as three fused multiply-adds in place (Horner's rule; no eager
    tensor op evaluates a cubic per element in fewer passes): what a rewrite
    in eager torch ops cannot avoid.
    """
    module = model.net_.module_
    sizes = [module.input_width, *module.hidden_layer_sizes, module.n_outputs]
    if module.encoding is not None:
        sizes = [module.n_features, *sizes]
    chunk = max(1, _inference._CHUNK_ELEMENTS // model._max_width())
    gen = torch.Generator().manual_seed(0)
    weights = [
        torch.randn(a, b, generator=gen, dtype=torch.float64)
        for a, b in zip(sizes[:-1], sizes[1:], strict=True)
    ]
    biases = [torch.randn(b, generator=gen, dtype=torch.float64) for b in sizes[1:]]
    inputs = [
        torch.randn(chunk, a, generator=gen, dtype=torch.float64) for a in sizes[:-1]
    ]
    n_hidden = len(module.hidden_layer_sizes)
    activated = [
        torch.randn(chunk, b, generator=gen, dtype=torch.float64)
        for b in sizes[-1 - n_hidden : -1]
    ]
    coefficients = [
        torch.randn(b, generator=gen, dtype=torch.float64)
        for b in sizes[-1 - n_hidden : -1]
    ]
    n_chunks = -(-n_rows // chunk)

    def run(_):
        with torch.inference_mode():
            for _ in range(n_chunks):
                for h, w, b in zip(inputs, weights, biases, strict=True):
                    torch.addmm(b, h, w)
                for z, c in zip(activated, coefficients, strict=True):
                    s = torch.sigmoid_(z)  # in place, as the pass does
                    if cubics:
                        value = torch.addcmul(c, c, s)
                        torch.addcmul(c, value, s, out=value)
                        torch.addcmul(c, value, s, out=value)

    return run


def bench_predict(rec, quick):
    # 100k rows take a tenth of a second: 21 repeats keep the median's
    # spread between runs within a few percent on a shared machine.
    repeats = 3 if quick else 21
    n_single = 50 if quick else 300
    X, y = _pima()
    X_big = _big_rows(X, 100_000)
    with rec.case(1) as rows, threadpool_limits(1), _torch_threads(1):
        models = {"CR": _cr_fit(X, y, n_threads=1), "MLPClassifier": _mlp().fit(X, y)}
        if XGBClassifier is not None:
            models["XGBoost"] = XGBClassifier(
                n_estimators=100, n_jobs=1, random_state=0
            ).fit(X, y)
        one = X[:1].copy()
        for model in models.values():  # warm-up
            model.predict_proba(one)
            model.predict_proba(X_big[:1000])
        single = {name: [] for name in models}
        big = {name: [] for name in models}
        # The products and sigmoids alone: what bounds CR's time from below.
        floors = {
            "floor": irreducible_prediction(models["CR"], X_big.shape[0]),
            "floor_cubics": irreducible_prediction(
                models["CR"], X_big.shape[0], cubics=True
            ),
        }
        for name, floor in floors.items():
            floor(None)
            big[name] = []
        for _ in range(repeats):
            for name, model in models.items():
                single[name].append(_time_calls(model.predict_proba, one, n_single))
                big[name].append(_time_calls(model.predict_proba, X_big, 1))
            for name, floor in floors.items():
                big[name].append(_time_calls(floor, X_big, 1))
        clock = _clock_name()
        rows.append(
            Row(
                "predict_proba 1 row",
                f"CR latency ({clock})",
                "MLPClassifier, same sizes",
                _median_ratio(single, "CR", "MLPClassifier"),
                target="<= 1.5",
                limit=1.5,
            )
        )
        rows.append(
            Row(
                "predict_proba 100k rows",
                f"CR time ({clock})",
                "MLPClassifier, same sizes",
                _median_ratio(big, "CR", "MLPClassifier"),
                target="<= 1",
                limit=1.0,
            )
        )
        rows.append(
            Row(
                "predict_proba 100k rows",
                "CR's float64 matrix products and sigmoids alone, same shapes and "
                f"chunks ({clock}): what no rewrite of the pass at float64 removes",
                "MLPClassifier, same sizes",
                _median_ratio(big, "floor", "MLPClassifier"),
            )
        )
        rows.append(
            Row(
                "predict_proba 100k rows",
                "CR's float64 matrix products, sigmoids and cubics (three fused "
                f"multiply-adds per unit) alone ({clock}): what no rewrite in "
                "eager torch ops removes",
                "MLPClassifier, same sizes",
                _median_ratio(big, "floor_cubics", "MLPClassifier"),
            )
        )
        rows.append(
            Row(
                "predict_proba 100k rows",
                "CR time",
                "its matrix products and sigmoids alone",
                _median_ratio(big, "CR", "floor"),
            )
        )
        rows.append(
            Row(
                "predict_proba 100k rows",
                "CR time",
                "its matrix products, sigmoids and cubics alone",
                _median_ratio(big, "CR", "floor_cubics"),
            )
        )
        # Multiply-adds per row: the encoding's columns widen the first layer.
        cr_macs = prediction_multiply_adds(models["CR"])
        mlp_macs = prediction_multiply_adds(models["MLPClassifier"][-1])
        rows.append(
            Row(
                "predict_proba 100k rows",
                f"matrix-product multiply-adds per row: CR {cr_macs:,} (its input "
                f"encoding's {models['CR'].n_encoded_features_ or 0} columns feed "
                f"the first layer), MLPClassifier {mlp_macs:,}",
                "MLPClassifier's",
                cr_macs / mlp_macs,
            )
        )
        rows.append(
            Row(
                "predict_proba 1 row",
                "CR latency",
                "(absolute)",
                float(np.median(single["CR"])) * 1e6,
                unit="us",
            )
        )
        if "XGBoost" in models:
            rows.append(
                Row(
                    "predict_proba 1 row",
                    "CR latency",
                    "XGBoost(100 trees)",
                    _median_ratio(single, "CR", "XGBoost"),
                )
            )
            rows.append(
                Row(
                    "predict_proba 100k rows",
                    "CR time",
                    "XGBoost(100 trees)",
                    _median_ratio(big, "CR", "XGBoost"),
                )
            )


# -- cli: start-up, imports and the model registry -----------------------------------
def _console_script():
    """The ``cr-sklearn`` command: the entry point next to this interpreter.

    A shim on ``PATH`` (pyenv, conda) adds its own start-up; the script in the
    interpreter's ``bin`` is the installed entry point itself.
    """
    beside = Path(sys.executable).with_name("cr-sklearn")
    if beside.exists():
        return [str(beside)], "cr-sklearn"
    found = shutil.which("cr-sklearn")
    if found:
        return [found], "cr-sklearn (on PATH)"
    return [sys.executable, "-m", "cr_sklearn.cli"], "python -m cr_sklearn.cli"


def _wall_of_run(command, expect_code=0):
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != expect_code:
        raise RuntimeError(
            f"{command} exited {done.returncode}, not {expect_code}: "
            f"{done.stderr[-500:]}"
        )
    return wall, done


_TORCH_PROBE = """
import sys
from cr_sklearn.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print("TORCH_IMPORTED=" + str("torch" in sys.modules))
"""


def _torch_imported(argv):
    done = subprocess.run(
        [sys.executable, "-c", _TORCH_PROBE.format(argv=argv)],
        capture_output=True,
        text=True,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("TORCH_IMPORTED=")]
    return lines[-1].split("=", 1)[1] == "True"


def _registry_check():
    """``(round_tripped, standalone, wrappers)``: ``load_model`` on every estimator.

    The public model classes (estimators with ``predict``) that stand alone
    (built without arguments) are fitted briefly, saved and loaded back; the
    meta-estimators, which take an ``estimator``, are listed apart.
    """
    standalone, wrappers = [], []
    for name in cr_sklearn.__all__:
        cls = getattr(cr_sklearn, name)
        # Models (with predict) are what save_model stores; not transformers.
        if (
            isinstance(cls, type)
            and issubclass(cls, BaseEstimator)
            and hasattr(cls, "predict")
        ):
            try:
                cls()
            except TypeError:
                wrappers.append(name)
            else:
                standalone.append(name)
    X, y = _pima()
    round_tripped = []
    with tempfile.TemporaryDirectory() as folder:
        for name in standalone:
            model = getattr(cr_sklearn, name)(max_iter=2, random_state=0)
            model.fit(X[:200], y[:200])
            path = Path(folder) / f"{name}.model"
            cr_sklearn.save_model(model, path)
            loaded = cr_sklearn.load_model(path)
            if type(loaded) is type(model) and np.allclose(
                loaded.predict(X[:50]), model.predict(X[:50])
            ):
                round_tripped.append(name)
    return round_tripped, standalone, wrappers


def bench_cli(rec, quick):
    runs = 2 if quick else 7
    script, label = _console_script()
    with rec.case("1 process each") as rows:
        walls = {"help": [], "error": []}
        for _ in range(runs):
            walls["help"].append(_wall_of_run([*script, "--help"])[0])
            walls["error"].append(
                _wall_of_run([*script, "study", "--no-such-flag"], expect_code=2)[0]
            )
        for key, argv in (("help", ["--help"]), ("error", ["study", "--no-such-flag"])):
            row = Row(
                "CLI start-up",
                f"`{label} {' '.join(argv)}`, fresh process (wall, median of {runs})",
                "(absolute)",
                float(np.median(walls[key])),
                unit="s",
                target="< 0.5 s",
                limit=0.5,
            )
            rows.append(row)
            imported = _torch_imported(argv)
            probe = Row(
                "CLI start-up",
                f"`{' '.join(argv)}`: torch imported?",
                "(sys.modules after cli.main)",
                "yes" if imported else "no",
                target="no",
            )
            probe.ok = not imported
            rows.append(probe)
        snippets = {
            "python": "pass",
            "torch, sklearn": "import torch, sklearn",
            "cr_sklearn": "import cr_sklearn",
            "cr_sklearn.CRClassifier": "import cr_sklearn; cr_sklearn.CRClassifier",
        }
        walls = {name: [] for name in snippets}
        n_imports = runs + 1 if quick else runs + 2
        for _ in range(n_imports):
            for name, code in snippets.items():
                walls[name].append(_wall_of_run([sys.executable, "-c", code])[0])
        medians = {name: float(np.median(v)) for name, v in walls.items()}
        for name in ("cr_sklearn", "cr_sklearn.CRClassifier"):
            code = snippets[name]
            rows.append(
                Row(
                    "import time",
                    f"`{code}` minus `import torch, sklearn` "
                    f"({medians[name]:.2f} s - {medians['torch, sklearn']:.2f} s; "
                    f"wall, medians of {n_imports})",
                    "import torch, sklearn",
                    medians[name] - medians["torch, sklearn"],
                    unit="s",
                    target="<= 0.3 s more",
                    limit=0.3,
                )
            )
        rows.append(
            Row(
                "import time",
                "`python -c pass` (interpreter start-up)",
                "(absolute)",
                medians["python"],
                unit="s",
            )
        )
        found, standalone, wrappers = _registry_check()
        row = Row(
            "load_model registry",
            "save_model + load_model round trip of every public estimator "
            f"(meta-estimators {', '.join(wrappers)} take an estimator: not files)",
            ", ".join(standalone),
            f"{len(found)} of {len(standalone)}",
            target="all",
        )
        row.ok = found == standalone
        rows.append(row)


# -- train: cost per epoch of the package's training loop ----------------------------
def _make_train_nets(
    d, width, batch, threads, *, device="cpu", rows=EPOCH_ROWS, variants=VARIANTS
):
    """The skorch nets of ``variants``, each a CRClassifier fitted one step.

    Returns the nets and ``rows`` training rows (tensors on ``device``).
    """
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, d))
    y = (X[:, 0] + 0.5 * rng.standard_normal(rows) > 0).astype(int)
    nets = {}
    for name, params in variants.items():
        clf = CRClassifier(
            (width, width),
            max_iter=1,
            batch_size=batch,
            early_stopping=False,
            n_threads=threads,
            random_state=0,
            device=device,
            **params,
        ).fit(X[:batch], y[:batch])
        nets[name] = clf.net_
    data = (
        torch.tensor(X, dtype=torch.float32, device=device),
        torch.as_tensor(y, device=device),
    )
    return nets, data


def _time_steps(net, data, n_steps, clock=time.perf_counter):
    """Time of one epoch of ``n_steps`` batches, per step."""
    X, y = data
    rows = n_steps * net.batch_size
    # The estimator's batch loader slices the dataset's X dict and y tensors.
    iterator = net.get_iterator(Dataset({"X": X[:rows]}, y[:rows]), training=True)
    net.history.new_epoch()
    synchronize = torch.cuda.synchronize if X.is_cuda else (lambda: None)
    synchronize()
    start = clock()
    net.run_single_epoch(
        iterator, training=True, prefix="train", step_fn=net.train_step
    )
    synchronize()
    return (clock() - start) / n_steps


def stream_multiply_add_ratio(d, width, batch, *, directions, rows=64, layers=2):
    """The stream's cost over IGPen's that multiply-adds alone predict.

    Per row, a network with ``d`` inputs, ``layers`` hidden layers of
    ``width`` and one output costs ``N = d w + (L - 1) w^2 + w``
    multiply-adds forward. The stream carries ``k`` directions through
    every product (the exact stream, ``k = d``, skips the first: ``J_1 =
    diag(phi') W_1``) for ``rows`` of the batch, ``S`` more per batch row.
    A step is about three passes, IGPen's double back-propagation about
    twice a plain step, so the ratio is ``(1 + S / N) / 2``. ``directions``
    is ``"exact"`` or ``k``.
    """
    hidden = (layers - 1) * width * width + width
    n = d * width + hidden
    if directions == "exact":
        carried = d * hidden
    else:
        carried = int(directions) * n
    s = carried * min(rows, batch) / batch
    return (1 + s / n) / 2


def bench_train(rec, quick):
    shapes = (
        [(8, 64, 64), (8, 64, 256), (384, 64, 256)]
        if quick
        else list(itertools.product((8, 64, 384), (64, 256), (64, 128, 256)))
    )
    repeats = 3 if quick else 5
    budget = 0.05 if quick else 0.3  # seconds of timed steps per case and repeat
    for d, width, batch in shapes:
        shape = f"d={d} w={width}x{width} b={batch}"
        variants = {
            name: params
            for name, params in TRAIN_VARIANTS.items()
            # The exact stream on every row: d=8 only (O(d) passes); one
            # direction: the target's d=384.
            if not (name == "stream exact" and d != 8)
            and not (name == "stream k=1" and d != 384)
        }
        steps_per_epoch = EPOCH_ROWS // batch
        with rec.case(1) as rows, _torch_threads(1):
            nets, data = _make_train_nets(d, width, batch, 1, variants=variants)
            steps = {}
            for name, net in nets.items():
                one = _time_steps(net, data, 1, CLOCK[0])  # warm-up and estimate
                steps[name] = int(np.clip(budget // max(one, 1e-6), 1, steps_per_epoch))
            times = {name: [] for name in nets}
            for _ in range(repeats):
                for name, net in nets.items():
                    times[name].append(_time_steps(net, data, steps[name], CLOCK[0]))
            rows.append(
                Row(
                    "train epoch",
                    f"{shape}: local",
                    "poly dreg=None",
                    _median_ratio(times, "local", "poly"),
                    target="<= 1.3",
                    limit=1.3,
                )
            )
            stream = Row(
                "train epoch",
                f"{shape}: stream (default: "
                f"{'exact' if d <= 32 else '4 projections'}, 64 rows)",
                "IGPen",
                _median_ratio(times, "stream (default)", "IGPen"),
            )
            if batch >= 128:
                stream.target, stream.limit = "<= 1", 1.0
            else:
                stream.case += " (64 rows = the whole batch: no target)"
            rows.append(stream)
            rows.append(
                Row(
                    "train epoch",
                    f"{shape}: stream (default), predicted by multiply-adds alone",
                    "IGPen",
                    stream_multiply_add_ratio(
                        d, width, batch, directions="exact" if d <= 32 else 4
                    ),
                )
            )
            if "stream k=1" in nets:
                rows.append(
                    Row(
                        "train epoch",
                        f"{shape}: stream k=1, every row",
                        "IGPen",
                        _median_ratio(times, "stream k=1", "IGPen"),
                        target="<= 0.9",
                        limit=0.9,
                    )
                )
            if "stream exact" in nets:
                rows.append(
                    Row(
                        "train epoch",
                        f"{shape}: stream exact, every row",
                        "IGPen",
                        _median_ratio(times, "stream exact", "IGPen"),
                    )
                )
            rows.append(
                Row(
                    "train epoch",
                    f"{shape}: ReLU MLP ms per epoch ({_clock_name()})",
                    "(absolute)",
                    float(np.median(times["relu"])) * steps_per_epoch * 1e3,
                    unit="ms",
                )
            )
        print(f"  train {shape} done", file=sys.stderr)


# -- study: the default cr-sklearn study and its CR fits -----------------------------
# The default study's design (cr-sklearn study --help) and a reduced one.
STUDY = {"repeats": 5, "folds": 5, "fractions": (0.05, 0.1, 0.25, 0.5, 1.0)}
# The replay of its CR tasks: the first repeat, the same 25 tasks as the
# study's first 25 (RepeatedStratifiedKFold draws repeat 0 first and the
# subsamples are seeded by the split's index). n_threads=None can take 20x
# longer than one thread when the cores are shared: all 125 would take long.
STUDY_REPLAY = {**STUDY, "repeats": 1}
QUICK_STUDY = {
    "repeats": 1,
    "folds": 2,
    "fractions": (0.25,),
    "models": "CR,LogisticRegression",
}


def _study_args(design):
    return [
        "--repeats",
        str(design["repeats"]),
        "--folds",
        str(design["folds"]),
        "--fractions",
        ",".join(str(f) for f in design["fractions"]),
        *(["--models", design["models"]] if "models" in design else []),
    ]


def _run_study(design, quick):
    """Wall and CPU time (children's rusage) of ``cr-sklearn study``."""
    script, _ = _console_script()
    with tempfile.TemporaryDirectory() as out:
        command = [*script, "study", "--no-progress", "--out", out]
        if quick:
            command += _study_args(design)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall, done = _wall_of_run(command)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    n_fits = next(
        (ln for ln in done.stdout.splitlines() if " fits in " in ln), ""
    ).strip()
    return wall, cpu, n_fits


def _study_cr_fits(design, n_threads, estimator=None):
    """CPU time of the study's CR tasks, replayed here: ``(seconds, n_fits)``.

    ``data_fraction_study`` itself with the CLI's splits, seed and CR
    estimator (``CRClassifier()``), sequentially (``n_jobs=1``), timed with
    ``time.process_time`` around the call: each task's fit and its scoring
    on the test fold (a prediction, about 1% of a fit). ``n_threads="study"``
    runs what the study runs (its ``n_threads=1``: the estimator's threads
    and ``threadpool_limits(1)``); any other value is set on the estimator
    and the study leaves threads alone.
    """
    from cr_sklearn.study import data_fraction_study, load_study_dataset

    X, y = load_study_dataset("pima")
    cv = RepeatedStratifiedKFold(
        n_splits=design["folds"], n_repeats=design["repeats"], random_state=0
    )
    if estimator is None:
        estimator = CRClassifier()
    if n_threads == "study":
        study_threads = 1
    else:
        study_threads = None
        estimator = clone(estimator).set_params(n_threads=n_threads)
    start = time.process_time()
    result = data_fraction_study(
        {"CR": estimator},
        X,
        y,
        fractions=design["fractions"],
        cv=cv,
        random_state=0,
        n_jobs=1,
        n_threads=study_threads,
        progress=False,
    )
    return time.process_time() - start, len(result.records)


def bench_study(rec, quick):
    design = QUICK_STUDY if quick else STUDY
    replay = QUICK_STUDY if quick else STUDY_REPLAY
    # The study's CR tasks over those replayed.
    scale = design["repeats"] / replay["repeats"]
    # The quick replay fits 20 epochs (n_threads=None is slow under load).
    estimator = CRClassifier(max_iter=20) if quick else CRClassifier()
    epochs = ", 20 epochs" if quick else ""
    what = "default" if not quick else "reduced (" + " ".join(_study_args(design)) + ")"
    with rec.case("loky workers, 1 torch thread each") as rows:
        wall, study_cpu, fits = _run_study(design, quick)
        rows.append(
            Row(
                "cr-sklearn study",
                f"{what}, Pima: wall; {fits}",
                "(absolute)",
                wall,
                unit="s",
                **({} if quick else {"target": "<= 90 s", "limit": 90.0}),
            )
        )
        rows.append(
            Row(
                "cr-sklearn study",
                f"{what}: CPU time of the command and its workers (rusage)",
                "(absolute)",
                study_cpu,
                unit="s",
            )
        )
    # The study keeps every core busy (n_jobs=-1): each of its CR fits shares
    # the machine, here with busy processes on the other cores.
    neighbours = max(1, _usable_cpus() - 1)
    settings = {"study": "study", "auto": "auto", "None": None}
    cpu = {}
    with rec.case(f"{neighbours} busy process(es) + the fit's") as rows:
        with _busy_processes(neighbours):
            _cr_fit(*_pima(), max_iter=2)  # warm-up: a process's first fit is slow
            for name, n_threads in settings.items():
                cpu[name], n_fits = _study_cr_fits(replay, n_threads, estimator)
        rows.append(
            Row(
                "study CR fits",
                f"{n_fits} CR tasks replayed ({replay['repeats']} repeat{epochs}), "
                "default n_threads='auto' "
                f"({cpu['auto']:.1f} s CPU)",
                f"same fits, n_threads=None ({cpu['None']:.1f} s)",
                cpu["auto"] / cpu["None"],
                target="<= 0.5",
                limit=0.5,
            )
        )
        rows.append(
            Row(
                "study CR fits",
                f"the same, as the study runs them: n_threads=1 in "
                f"threadpool_limits(1) ({cpu['study']:.1f} s CPU)",
                f"same fits, n_threads=None ({cpu['None']:.1f} s)",
                cpu["study"] / cpu["None"],
            )
        )
        rows.append(
            Row(
                "study CR fits",
                "CR fits as the study runs them, share of the study's CPU time"
                + (f" (the replayed repeat x {scale:.0f})" if scale != 1 else ""),
                f"the study ({study_cpu:.1f} s CPU)",
                f"{100 * scale * cpu['study'] / study_cpu:.0f}%",
            )
        )


# -- gradients and memory (opt-in) ----------------------------------------------------
def bench_gradients(rec, quick):
    from sklearn.ensemble import RandomForestClassifier

    from cr_sklearn import DREGScorer

    repeats = 3 if quick else 5
    n_fd = 2_000 if quick else 10_000
    X, y = _pima()
    X_big = _big_rows(X, 100_000)
    with rec.case(1) as rows, threadpool_limits(1), _torch_threads(1):
        cr = _cr_fit(X, y, n_threads=1)
        rf = RandomForestClassifier(100, n_jobs=1, random_state=0).fit(X, y)
        cr.input_gradient_norms(X_big[:1000])
        times = {k: [] for k in ("norms", "proba", "fd", "rf", "dreg", "crp")}
        X_fd = X_big[:n_fd]
        scorer = DREGScorer()
        for _ in range(repeats):
            times["norms"].append(_timed(cr.input_gradient_norms, X_big))
            times["proba"].append(_timed(cr.predict_proba, X_big))
            times["fd"].append(_timed(scorer, rf, X_fd))
            times["rf"].append(_timed(rf.predict_proba, X_fd))
            times["dreg"].append(_timed(scorer, cr, X_fd))
            times["crp"].append(_timed(cr.predict_proba, X_fd))
        rows.append(
            Row(
                "input_gradient_norms",
                "100k rows",
                "CR predict_proba, same rows",
                _median_ratio(times, "norms", "proba"),
            )
        )
        rows.append(
            Row(
                "DREGScorer",
                f"finite differences, RandomForest(100), {n_fd // 1000}k rows",
                "RF predict_proba, same rows",
                _median_ratio(times, "fd", "rf"),
            )
        )
        rows.append(
            Row(
                "DREGScorer",
                f"analytic, CR, {n_fd // 1000}k rows",
                "CR predict_proba, same rows",
                _median_ratio(times, "dreg", "crp"),
            )
        )


def _peak_rss_mb():
    """Peak resident memory of this process, in MiB.

    ``VmHWM`` where Linux has it: ``ru_maxrss`` carries over the parent's
    peak through fork and exec, which would charge the benchmark's own
    memory to the child.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB


def _memory_child(method):
    """Run in a fresh process: fit on Pima, call ``method`` on 1M x 8 rows."""
    X, y = _pima()
    model = CRClassifier(HIDDEN, max_iter=5, random_state=0).fit(X, y)
    X_big = _big_rows(X, 1_000_000)
    before = _peak_rss_mb()
    result = getattr(model, method)(X_big)
    print(f"{before:.1f} {_peak_rss_mb():.1f} {result.shape[0]}")


def bench_memory(rec, quick):
    for method in ("predict_proba", "input_gradient_norms"):
        with rec.case(1) as rows:
            env = dict(os.environ, OMP_NUM_THREADS="1")
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", method],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout.split()
            before, peak, n = float(out[0]), float(out[1]), int(out[2])
            assert n == 1_000_000
            rows.append(
                Row(
                    "peak RSS",
                    f"{method}, 1,000,000 x 8 (fresh process), "
                    f"{before:.0f} MB before the call",
                    "(absolute)",
                    peak,
                    unit="MB",
                )
            )


# -- large: a default fit on 1,000,000 x 10 (opt-in, many minutes) -------------------
LARGE_ROWS = 1_000_000
LARGE_FEATURES = 10


def _large_data(n, d=LARGE_FEATURES, seed=0):
    """``n`` rows of ``d`` columns, a nonlinear rule of the first four, 10% flips."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    score = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - 0.5
    flip = rng.random(n) < 0.1
    return X, ((score > 0) ^ flip).astype(int)


def _large_child(n):
    """Run in a fresh process: a default verbose fit on ``n`` x 10; its figures."""
    X, y = _large_data(n)
    before = _peak_rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    clf = CRClassifier(verbose=1, random_state=0).fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"LARGE {wall:.1f} {cpu:.1f} {clf.n_iter_} {before:.1f} "
        f"{_peak_rss_mb():.1f} {torch.get_num_threads()}"
    )


def bench_large(rec, quick):
    n = 20_000 if quick else LARGE_ROWS
    with rec.case("default n_threads='auto'") as rows:
        # The child's progress is echoed to stderr as it trains.
        lines = []
        with subprocess.Popen(
            [sys.executable, __file__, "--large-child", str(n)],
            stdout=subprocess.PIPE,
            text=True,
        ) as child:
            for line in child.stdout:
                print(line, end="", file=sys.stderr, flush=True)
                lines.append(line.rstrip("\n"))
        if child.returncode:
            raise subprocess.CalledProcessError(child.returncode, child.args)
        figures = next(ln for ln in lines if ln.startswith("LARGE"))
        wall, cpu, epochs, before, peak, _ = (float(v) for v in figures.split()[1:])
        # What verbose showed while it trained: one line per epoch.
        shown = [ln for ln in lines if ln and ln != figures]
        case = f"default CRClassifier(verbose=1), {n:,} x {LARGE_FEATURES}"
        rows.append(
            Row(
                "large fit",
                f"{case}: wall, {epochs:.0f} epochs",
                "(absolute)",
                wall,
                unit="s",
            )
        )
        rows.append(Row("large fit", f"{case}: CPU time", "(absolute)", cpu, unit="s"))
        rows.append(
            Row(
                "large fit",
                f"{case}: peak RSS (fresh process; {before:.0f} MB with the data, "
                "before the fit)",
                "(absolute)",
                peak,
                unit="MB",
            )
        )
        progress = Row(
            "large fit",
            f"{case}: progress shown with verbose ({len(shown)} lines; the last: "
            f"`{shown[-1].strip() if shown else ''}`)",
            "(shown)",
            "yes" if len(shown) >= epochs else "no",
            target="shown",
        )
        progress.ok = len(shown) >= epochs
        rows.append(progress)


# -- the table ---------------------------------------------------------------------
def _gpu_row(rec):
    if torch.cuda.is_available():
        text = f"CUDA: {torch.cuda.get_device_name(0)}; run benchmarks/gpu_check.py"
    else:
        text = "no CUDA device"
    rec.note(Row("GPU check", "benchmarks/gpu_check.py", "", text))


def _table(rec):
    head = ["Measure", "Case", "Against", "Value", "Target", "Met", "Threads", "Load"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rec.targets + rec.details:
        load = "" if row.load is None else f"{row.load[0]:.2f} / {row.load[1]:.2f}"
        cells = [row.measure, row.case, row.against, row.cell(), row.target]
        cells += [row.met(), row.threads, load]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


NOTES = """\
Notes on the method:

- Ratios are CR's time over the time of the case in Against (below 1: CR is
  faster), medians over repeats of per-repeat ratios; cases alternate within
  a repeat. Load is the 1-minute load average before / after the row's block.
- threads: wall clock, since thread counts trade CPU time for waiting; the
  busy processes spin `while True: pass` for the whole block. torch's global
  thread count is left at its default, as in a user's process.
- threads: Pima is the default fit; the 384-column embedding-like shape
  (unit-norm rows, 2,000 of them) and the 5,000 x 50 table fit a fixed
  number of epochs without early stopping, so every setting does the same
  steps.
- fit, predict, train: one thread (`n_threads=1` or `torch.set_num_threads(1)`,
  and `threadpool_limits(1)` for NumPy/scikit-learn, which bounds torch's
  OpenMP pool too), timed with {clock}.
- fit: the rows "with parts off" decompose a default step; "recorded op by
  op" is the default with the stream as autograd records it op by op (how it
  ran before it became one autograd node), in the same run. The lower bound
  adds to the dreg='local' fit (everything a step does but the stream) the
  stream's matrix products alone, timed here on their own shape: the
  default's ratio cannot fall below it without fewer multiply-adds.
- large (opt-in, `--sections large`): a default `CRClassifier(verbose=1)` fit
  on 1,000,000 synthetic rows x 10 columns in a fresh process; peak RSS is
  the process's high-water mark, progress the lines verbose printed.
- study (when run): the command's CPU time is `RUSAGE_CHILDREN` around it
  (its loky workers included once they exit). The CR share is measured by
  running, in this process, `data_fraction_study` on the CR model alone with
  the command's splits, fractions and seed, first repeat only (the same 25
  tasks as the command's first 25 CR tasks; its share is scaled by the
  repeats), sequentially, timed with `time.process_time()` around the call
  (fits and their test-fold scoring), beside busy processes on the other
  cores as the command's parallel workers would be. "Today" is
  `n_threads=None` (torch's default threads in a bare process; in loky
  workers joblib already caps OpenMP at cores / workers, the dask and
  threading backends do not).
"""


def _commit():
    """The checkout's commit, marked when files differ from it."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" with uncommitted changes" if dirty else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="a short smoke run (~1 min)"
    )
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=(*SECTIONS, "all"),
        help=f"default: {' '.join(DEFAULT_SECTIONS)} "
        f"(--quick: {' '.join(QUICK_SECTIONS)})",
    )
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="timer of the one-thread sections (default: %(default)s)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="Markdown file")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--large-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        _memory_child(args.memory_child)
        return
    if args.large_child:
        _large_child(args.large_child)
        return
    sections = args.sections or (QUICK_SECTIONS if args.quick else DEFAULT_SECTIONS)
    if "all" in sections:
        # "large" takes many minutes: only when named.
        sections = [s for s in SECTIONS if s != "large"]
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    CLOCK[0] = time.process_time if args.clock == "cpu" else time.perf_counter
    load_before = os.getloadavg()
    commit = _commit()  # what runs: read before any file can change
    start = time.perf_counter()
    rec = Recorder()
    benches = {
        "threads": bench_threads,
        "fit": bench_fit,
        "predict": bench_predict,
        "cli": bench_cli,
        "train": bench_train,
        "study": bench_study,
        "gradients": bench_gradients,
        "memory": bench_memory,
        "large": bench_large,
    }
    seconds = {}
    for section in SECTIONS:
        if section in sections:
            print(f"[{section}]", file=sys.stderr)
            began = time.perf_counter()
            benches[section](rec, args.quick)
            seconds[section] = time.perf_counter() - began
            # A section that bounds torch's threads restores them; make sure.
            torch.set_num_threads(TORCH_THREADS)
    skipped = [s for s in SECTIONS if s not in sections]
    if skipped:
        rec.note(
            Row("(not run)", ", ".join(skipped), "", "--sections " + " ".join(skipped))
        )
    _gpu_row(rec)
    load_after = os.getloadavg()
    timings = "Seconds per section: " + ", ".join(
        f"{name} {value:.0f}" for name, value in seconds.items()
    )
    command = "python benchmarks/bench_speed.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    title = (
        "every target in one run"
        if not skipped
        else f"the {', '.join(seconds)} section{'s' * (len(seconds) > 1)} only"
    )
    header = [
        f"# Speed: {title}",
        "",
        f"Command: `{command.strip()}`  ",
        f"Commit: {commit}  ",
        f"cr_sklearn {cr_sklearn.__version__}, torch {torch.__version__}, "
        f"scikit-learn {sklearn.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, torch's default threads {TORCH_THREADS}; "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
        f"{time.perf_counter() - start:.0f} s.  ",
        "Target rows first, then details. " + timings,
        "",
        "",
    ]
    notes = NOTES.format(
        clock="process CPU time" if args.clock == "cpu" else "the wall clock"
    )
    text = "\n".join(header) + _table(rec) + "\n\n" + notes
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)


if __name__ == "__main__":
    main()
