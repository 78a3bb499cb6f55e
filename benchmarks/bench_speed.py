"""Speed of cr_sklearn on CPU, as ratios measured side by side in one run.

Five measures, each at 1 and 2 torch/BLAS threads:

1. ``train``: training cost per epoch of the package's own loop (a fitted
   ``CRClassifier``'s skorch net, ``run_single_epoch`` with its batch loader,
   ``_CRNet.infer``/``get_loss``/``train_step_single`` and fused AdamW) for a
   ReLU network (the baseline), the poly network with ``dreg=None``,
   ``"local"``, ``"stream"`` exact and with k = 1 and 4 projections, and the
   input-gradient penalty by double backprop (IGPen), over d in {8, 64, 384},
   two hidden layers of width {64, 256} and batch {64, 256}. An epoch is
   4096 rows; expensive cases time fewer steps and scale per step (the ratio
   of per-step times is the ratio of per-epoch times at a fixed batch).
2. ``fit``: ``CRClassifier.fit`` on Pima against ``MLPClassifier`` (in a
   pipeline with ``StandardScaler``; CR standardises inside) with the same
   hidden sizes, fixed epochs (early stopping off on both), batch size and
   Adam.
3. ``predict``: single-row ``predict_proba`` latency and 100k-row throughput
   against MLPClassifier and XGBoost.
4. ``gradients``: ``input_gradient_norms`` against ``predict_proba`` on 100k
   rows; ``DREGScorer`` (finite differences) on a RandomForest and
   (analytic) on CR.
5. ``memory``: peak RSS of ``predict_proba`` and ``input_gradient_norms`` on
   1,000,000 x 8 rows, each in a fresh subprocess (``VmHWM``; ``ru_maxrss``
   would include the parent's peak, inherited through fork and exec).

Every repeat times all compared cases back to back; a ratio is the median
over repeats of the per-repeat ratio. Wall-clock timings on a shared machine
are noisy: the load average is printed with the table.

Run::

    python benchmarks/bench_speed.py            # the full run (~15 min, 2 cores)
    python benchmarks/bench_speed.py --quick    # a smoke run (~2 min)
    python benchmarks/bench_speed.py --sections train --threads 1

The Markdown table goes to ``benchmarks/results/speed.md``.
"""

import argparse
import itertools
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.dataset import Dataset
from threadpoolctl import threadpool_limits

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima

try:
    from xgboost import XGBClassifier
except ImportError:  # optional: the rows against XGBoost are then skipped
    XGBClassifier = None

try:
    from cr_sklearn import DREGScorer
except ImportError:  # written separately; the rows say so when absent
    DREGScorer = None

RESULTS = Path(__file__).resolve().parent / "results" / "speed.md"
SECTIONS = ("train", "fit", "predict", "gradients", "memory")
EPOCH_ROWS = 4096
HIDDEN = (64, 64)
# The timer: wall clock by default; ``--clock cpu`` uses the process CPU time,
# steadier on a loaded machine (fair with 1 thread; with 2 it adds both).
CLOCK = [time.perf_counter]

# name -> CRClassifier parameters of each training variant.
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


class Row:
    """One line of the table: a ratio (or value) per thread count."""

    def __init__(self, measure, case, against, target=None, limit=None, unit="x"):
        self.measure, self.case, self.against = measure, case, against
        self.target, self.limit, self.unit = target, limit, unit
        self.values = {}

    def cell(self, threads):
        value = self.values.get(threads)
        if value is None:
            return "-"
        if self.unit != "x":
            return (
                f"{value:.1f} {self.unit}"
                if value < 100
                else f"{value:.0f} {self.unit}"
            )
        return f"{value:.2f}x" if value < 100 else f"{value:.0f}x"

    def met(self):
        if self.limit is None:
            return ""
        values = [v for v in self.values.values() if v is not None]
        if not values:
            return "not run"
        ok = [v <= self.limit for v in values]
        return "yes" if all(ok) else ("no" if not any(ok) else "partly")


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


# -- 1. training cost per epoch ------------------------------------------------
def _make_train_nets(d, width, batch, threads, *, device="cpu", rows=EPOCH_ROWS):
    """The skorch nets of ``VARIANTS``, each a CRClassifier fitted one step.

    Returns the nets and ``rows`` training rows (tensors on ``device``).
    """
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, d))
    y = (X[:, 0] + 0.5 * rng.standard_normal(rows) > 0).astype(int)
    nets = {}
    for name, params in VARIANTS.items():
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


def _time_steps(net, data, n_steps):
    """Wall time of one epoch of ``n_steps`` batches, per step."""
    X, y = data
    rows = n_steps * net.batch_size
    # The estimator's batch loader slices the dataset's X dict and y tensors.
    iterator = net.get_iterator(Dataset({"X": X[:rows]}, y[:rows]), training=True)
    net.history.new_epoch()
    synchronize = torch.cuda.synchronize if X.is_cuda else (lambda: None)
    synchronize()
    start = CLOCK[0]()
    net.run_single_epoch(
        iterator, training=True, prefix="train", step_fn=net.train_step
    )
    synchronize()
    return (CLOCK[0]() - start) / n_steps


def _multiply_adds(d, width, n_out=1):
    """Forward multiply-adds per row: ``(network, exact stream)``.

    Two hidden layers of ``width``: the network costs ``N = d w + w w + w o``;
    the exact stream adds ``S = d (w w + w o)`` (``d`` directions through the
    hidden-to-hidden and output matrices).
    """
    network = d * width + width * width + width * n_out
    return network, d * (width * width + width * n_out)


def _flop_row(shape, d, width, threads_list):
    """Multiply-adds of an exact-stream step over an IGPen step (an estimate).

    A training step is about three forward passes (forward and backward), so
    the stream step costs ``3 (N + S)`` (see :func:`_multiply_adds`); double
    backpropagation costs about twice a plain step, ``6 N``. The ratio
    ``(1 + S / N) / 2`` is what compute-bound shapes approach, whatever the
    implementation.
    """
    network, stream = _multiply_adds(d, width)
    row = Row(
        "train epoch",
        f"{shape}: multiply-adds, stream exact / IGPen",
        "(analytic estimate)",
    )
    row.values = dict.fromkeys(threads_list, (1 + stream / network) / 2)
    return row


def bench_train(rows, threads_list, quick):
    shapes = (
        [(8, 64, 64), (384, 64, 256)]
        if quick
        else list(itertools.product((8, 64, 384), (64, 256), (64, 256)))
    )
    repeats = 3 if quick else 5
    budget = 0.1 if quick else 0.3  # seconds of timed steps per case and repeat
    for d, width, batch in shapes:
        shape = f"d={d} w={width}x{width} b={batch}"
        steps_per_epoch = EPOCH_ROWS // batch
        per_shape = {
            name: Row("train epoch", f"{shape}: {name}", "ReLU MLP")
            for name in VARIANTS
            if name != "relu"
        }
        local = Row(
            "train epoch", f"{shape}: local", "poly dreg=None", "<= 1.3", limit=1.3
        )
        exact = exact_rows = k1 = k4 = None
        if d == 8:
            exact = Row(
                "train epoch", f"{shape}: stream exact", "IGPen", "< 1", limit=1.0
            )
            exact_rows = Row(
                "train epoch", f"{shape}: stream exact, 64 rows (default)", "IGPen"
            )
        if d == 384:
            k1 = Row("train epoch", f"{shape}: stream k=1", "IGPen", "< 1", limit=1.0)
            k4 = Row("train epoch", f"{shape}: stream k=4", "IGPen")
        reference = Row("train epoch", f"{shape}: ReLU ms/epoch", "(absolute)")
        reference.unit = "ms"
        for threads in threads_list:
            torch.set_num_threads(threads)
            nets, data = _make_train_nets(d, width, batch, threads)
            steps = {}
            for name, net in nets.items():
                one = _time_steps(net, data, 1)  # warm-up and cost estimate
                steps[name] = int(np.clip(budget // max(one, 1e-6), 1, steps_per_epoch))
            times = {name: [] for name in nets}
            for _ in range(repeats):
                for name, net in nets.items():
                    times[name].append(_time_steps(net, data, steps[name]))
            for name, row in per_shape.items():
                row.values[threads] = _median_ratio(times, name, "relu")
            local.values[threads] = _median_ratio(times, "local", "poly")
            if exact is not None:
                exact.values[threads] = _median_ratio(times, "stream exact", "IGPen")
                exact_rows.values[threads] = _median_ratio(
                    times, "stream exact, 64 rows", "IGPen"
                )
            if k1 is not None:
                k1.values[threads] = _median_ratio(times, "stream k=1", "IGPen")
                k4.values[threads] = _median_ratio(times, "stream k=4", "IGPen")
            reference.values[threads] = (
                float(np.median(times["relu"])) * steps_per_epoch * 1e3
            )
            print(f"  train {shape} threads={threads} done", file=sys.stderr)
        rows["targets"] += [
            r for r in (local, exact, exact_rows, k1, k4) if r is not None
        ]
        rows["details"] += [reference, *per_shape.values()]
        if d == 8:
            rows["details"].append(_flop_row(shape, d, width, threads_list))


# -- 2. CRClassifier.fit on Pima -------------------------------------------------
def _mlp(batch, epochs):
    return make_pipeline(
        StandardScaler(),
        MLPClassifier(
            HIDDEN,
            solver="adam",
            batch_size=batch,
            max_iter=epochs,
            early_stopping=False,
            # No stop on a loss plateau: exactly ``epochs`` epochs.
            n_iter_no_change=epochs + 1,
            tol=0.0,
            random_state=0,
        ),
    )


def _cr(batch, epochs, threads, **params):
    return CRClassifier(
        HIDDEN,
        batch_size=batch,
        max_iter=epochs,
        early_stopping=False,
        n_threads=threads,
        random_state=0,
        **params,
    )


def bench_fit(rows, threads_list, quick):
    X, y = _pima()
    epochs = 30 if quick else 100
    repeats = 2 if quick else 3
    full = len(y)
    # (label, CR batch, MLPClassifier batch, CR parameters). The fast path
    # takes the whole set per step; it is compared with MLPClassifier at its
    # own default batch (200) and at the same batch.
    previous = {"stream_rows": None}
    fast = {"learning_rate_init": "auto"}
    cases = [
        ("defaults: batch 200, stream on 64 rows", 200, 200, {}),
        ("fast path: full batch, lr auto, stream on 64 rows", full, 200, fast),
        ("fast path: full batch, lr auto, stream on 64 rows", full, full, fast),
        ("batch 200, stream on every row (previous defaults)", 200, 200, previous),
        ("batch 200, dreg=None", 200, 200, {"dreg": None}),
        ("batch 200, dreg=local", 200, 200, {"dreg": "local"}),
        (
            "batch 200, stream k=1 on every row",
            200,
            200,
            {**previous, "n_projections": 1},
        ),
        ("full batch, dreg=None", full, full, {**fast, "dreg": None}),
    ]
    for label, batch, mlp_batch, params in cases:
        against = "batch 200 (its default)" if mlp_batch == 200 else "full batch"
        row = Row(
            "Pima fit",
            f"{epochs} epochs, {label}",
            f"MLPClassifier, {against}",
            "<= 2",
            limit=2.0,
        )
        for threads in threads_list:
            torch.set_num_threads(threads)
            with threadpool_limits(threads):
                _cr(batch, 2, threads, **params).fit(X, y)  # warm-up
                times = {"cr": [], "mlp": []}
                for _ in range(repeats):
                    start = CLOCK[0]()
                    _mlp(mlp_batch, epochs).fit(X, y)
                    times["mlp"].append(CLOCK[0]() - start)
                    start = CLOCK[0]()
                    _cr(batch, epochs, threads, **params).fit(X, y)
                    times["cr"].append(CLOCK[0]() - start)
            row.values[threads] = _median_ratio(times, "cr", "mlp")
        rows["targets"].append(row)
    # Why the exact stream cannot reach 2x: multiply-adds per row and epoch of
    # the Jacobian stream (d directions through every hidden-to-hidden and the
    # output matrix) over those of the network itself (forward and backward
    # scale alike, so the ratio holds for training).
    network, stream = _multiply_adds(X.shape[1], HIDDEN[0])
    row = Row("Pima fit", "multiply-adds per row: exact stream / network", "(analytic)")
    row.values = dict.fromkeys(threads_list, stream / network)
    rows["details"].append(row)
    if quick:
        return
    # Does the fast path keep the accuracy? 5-fold CV on Pima against the
    # defaults.
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    acc = {}
    for name, params in (("defaults", {}), ("fast", {**fast, "batch_size": full})):
        model = CRClassifier(n_threads=1, random_state=0, **params)
        acc[name] = cross_val_score(model, X, y, cv=cv).mean()
    row = Row(
        "Pima accuracy",
        f"5-fold CV, fast path {acc['fast']:.3f} vs defaults {acc['defaults']:.3f}",
        "defaults (accuracy ratio)",
    )
    row.values[1] = acc["fast"] / acc["defaults"]
    rows["details"].append(row)


# -- 3. prediction -----------------------------------------------------------------
def _fitted_models(threads):
    X, y = _pima()
    models = {
        "CR": CRClassifier(HIDDEN, n_threads=threads, random_state=0).fit(X, y),
        "MLPClassifier": _mlp(200, 200).fit(X, y),
    }
    if XGBClassifier is not None:
        models["XGBoost"] = XGBClassifier(
            n_estimators=100, n_jobs=threads, random_state=0
        ).fit(X, y)
    return X, models


def _time_call(function, *args, n_calls=1):
    start = CLOCK[0]()
    for _ in range(n_calls):
        function(*args)
    return (CLOCK[0]() - start) / n_calls


def bench_predict(rows, threads_list, quick):
    repeats = 3 if quick else 7
    n_single = 50 if quick else 200
    n_big = 100_000
    single = {
        name: Row("predict_proba 1 row", "latency", name, "<= 2", limit=2.0)
        if name == "MLPClassifier"
        else Row("predict_proba 1 row", "latency", name)
        for name in ("MLPClassifier", "XGBoost")
    }
    big = {
        name: Row(
            "predict_proba 100k rows", "time (inverse throughput)", name, "<= 1", 1.0
        )
        if name == "MLPClassifier"
        else Row("predict_proba 100k rows", "time (inverse throughput)", name)
        for name in ("MLPClassifier", "XGBoost")
    }
    absolute = Row("predict_proba 1 row", "CR latency in us", "(absolute)")
    absolute.unit = "us"
    for threads in threads_list:
        torch.set_num_threads(threads)
        with threadpool_limits(threads):
            X, models = _fitted_models(threads)
            one = X[:1].copy()
            X_big = _big_rows(X, n_big)
            t_single = {name: [] for name in models}
            t_big = {name: [] for name in models}
            for model in models.values():
                model.predict_proba(one)
                model.predict_proba(X_big[:1000])
            for _ in range(repeats):
                for name, model in models.items():
                    t_single[name].append(
                        _time_call(model.predict_proba, one, n_calls=n_single)
                    )
                    t_big[name].append(_time_call(model.predict_proba, X_big))
        for name in single:
            if name in models:
                single[name].values[threads] = _median_ratio(t_single, "CR", name)
                big[name].values[threads] = _median_ratio(t_big, "CR", name)
        absolute.values[threads] = float(np.median(t_single["CR"])) * 1e6
    rows["targets"] += [single["MLPClassifier"], big["MLPClassifier"]]
    rows["details"] += [absolute, single["XGBoost"], big["XGBoost"]]


# -- 4. per-sample gradient norms ----------------------------------------------------
def bench_gradients(rows, threads_list, quick):
    repeats = 3 if quick else 5
    n_rows = 100_000
    n_fd = 2_000 if quick else 10_000
    norms = Row(
        "input_gradient_norms",
        "100k rows",
        "CR predict_proba, same rows",
        "<= 3",
        limit=3.0,
    )
    fd = Row(
        "DREGScorer",
        f"finite differences, RandomForest(100), {n_fd // 1000}k rows",
        "RF predict_proba, same rows",
    )
    analytic = Row(
        "DREGScorer",
        f"analytic, CR, {n_fd // 1000}k rows",
        "CR predict_proba, same rows",
    )
    X, y = _pima()
    X_big = _big_rows(X, n_rows)
    for threads in threads_list:
        torch.set_num_threads(threads)
        with threadpool_limits(threads):
            cr = CRClassifier(HIDDEN, n_threads=threads, random_state=0).fit(X, y)
            rf = RandomForestClassifier(100, n_jobs=threads, random_state=0).fit(X, y)
            cr.input_gradient_norms(X_big[:1000])
            times = {k: [] for k in ("norms", "proba", "fd", "rf", "dreg", "crp")}
            for _ in range(repeats):
                times["norms"].append(_time_call(cr.input_gradient_norms, X_big))
                times["proba"].append(_time_call(cr.predict_proba, X_big))
                if DREGScorer is not None:
                    X_fd = X_big[:n_fd]
                    scorer = DREGScorer()
                    times["fd"].append(_time_call(scorer, rf, X_fd))
                    times["rf"].append(_time_call(rf.predict_proba, X_fd))
                    times["dreg"].append(_time_call(scorer, cr, X_fd))
                    times["crp"].append(_time_call(cr.predict_proba, X_fd))
        norms.values[threads] = _median_ratio(times, "norms", "proba")
        if DREGScorer is not None:
            fd.values[threads] = _median_ratio(times, "fd", "rf")
            analytic.values[threads] = _median_ratio(times, "dreg", "crp")
    if DREGScorer is None:
        fd.case += " (DREGScorer not available: not run)"
        analytic.case += " (DREGScorer not available: not run)"
    rows["targets"].append(norms)
    rows["details"] += [fd, analytic]


# -- 5. peak memory ------------------------------------------------------------------
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


def bench_memory(rows, threads_list, quick):
    for method in ("predict_proba", "input_gradient_norms"):
        row = Row(
            "peak RSS",
            f"{method}, 1,000,000 x 8 (fresh process)",
            "(absolute; 1 thread)",
            "< 2048 MB",
            limit=2048,
            unit="MB",
        )
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
        row.values[1] = peak
        row.case += f", {before:.0f} MB before the call"
        rows["targets"].append(row)


# -- the table -------------------------------------------------------------------------
def _table(rows, threads_list):
    head = ["Measure", "Case", "Against"]
    head += [f"{t} thread{'s' if t > 1 else ''}" for t in threads_list]
    head += ["Target", "Met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows["targets"] + rows["details"]:
        cells = [row.measure, row.case, row.against]
        for threads in threads_list:
            cells.append(row.cell(threads))
        cells += [row.target or "", row.met()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=SECTIONS)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall clock, or process CPU time (steadier on a loaded machine)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="Markdown file")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        _memory_child(args.memory_child)
        return
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    CLOCK[0] = time.perf_counter if args.clock == "wall" else time.process_time
    load_before = os.getloadavg()
    start = time.perf_counter()
    rows = {"targets": [], "details": []}
    benches = {
        "train": bench_train,
        "fit": bench_fit,
        "predict": bench_predict,
        "gradients": bench_gradients,
        "memory": bench_memory,
    }
    for section in args.sections:
        print(f"[{section}]", file=sys.stderr)
        benches[section](rows, args.threads, args.quick)
    load_after = os.getloadavg()
    command = "python benchmarks/bench_speed.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    header = [
        "# Speed: ratios measured side by side in one run",
        "",
        f"Command: `{command.strip()}`  ",
        f"torch {torch.__version__}, scikit-learn {sklearn.__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs; "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
        f"{time.perf_counter() - start:.0f} s.  ",
        f"Timer: {'wall clock' if args.clock == 'wall' else 'process CPU time'}. "
        "Ratios are CR's time over the time of the case it is compared against "
        "(below 1: CR is faster); medians over repeats of per-repeat ratios. "
        "Target rows first, then details.",
        "",
    ]
    text = "\n".join(header) + _table(rows, args.threads) + "\n"
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)


if __name__ == "__main__":
    main()
