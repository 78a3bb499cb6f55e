"""Speed where users feel it: the package's speed targets, side by side.

``speed`` runs its sections (``--sections``) and writes one table, targets
first; a ratio is the median over repeats of per-repeat ratios (the cases of
a repeat run back to back, so a drift in the machine's load hits both):

``fit``
    A default Pima fit (``n_threads=1``) against MLPClassifier with the same
    hidden sizes, batch 200 and 100 epochs without early stopping: the same
    optimizer steps (target <= 3.5x, issue 38), CPU time, one thread.
``predict``
    ``predict_proba`` of 1 row (target <= 1.5x MLPClassifier's) and of 100k
    rows (target <= 1x), one thread.
``threads``
    A default fit (``n_threads="auto"``) beside two busy processes against
    ``n_threads=1`` under the same load (target <= 1.1x), and idle against
    the better of one and two threads (target <= 1.15x), on Pima and two
    wider shapes.
``cli``
    ``cr-sklearn --help`` and an argument error in fresh processes (target
    < 0.5 s, torch not imported); ``import cr_sklearn`` and its estimator
    against ``import torch, sklearn`` (target <= 0.3 s more).
``study``
    The README's ``cr-sklearn study`` as written (its wall time, the figure
    the README points to).
``train``
    One epoch of plain PyTorch training steps of ``cr_sklearn.nn.CRNetwork``
    (Adam, one thread) per penalty: the local penalty against none (target
    <= 1.3x), the default stream (exact up to 32 inputs, else 4 directions,
    on 64 rows) against double back-propagation (IGPen; target <= 1x from
    batch 128) and, at 384 inputs, one direction on every row (<= 0.9x).

``threads`` (a configuration of its own): one training step with one and two
torch threads across shapes, what ``n_threads="auto"`` is chosen from.
``load``: single-row ``predict_proba`` from 8 threads: throughput, latency,
errors, agreement with serial calls and memory. ``members``: a fit of
``CRClassifier(n_members=M)`` against ``M`` fits at the same budget.
``gpu``: on a CUDA machine, fits and the stream on the GPU against the CPU.

Run::

    python benchmarks/run.py speed
    python benchmarks/run.py speed --sections predict --repeats 21
    python benchmarks/run.py threads
    python benchmarks/run.py load
    python benchmarks/run.py members
    python benchmarks/run.py gpu
"""

import contextlib
import functools
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
from harness import (
    Config,
    header,
    load_pima_arrays,
    markdown_table,
    median_ratio,
    one_thread,
    timed,
)
from rules import ROUNDS_46

SECTIONS = ("threads", "fit", "predict", "cli", "train", "study")
HIDDEN = (64, 64)
EPOCH_ROWS = 4096
COLUMNS = ("measure", "case", "against", "value", "target", "met", "threads", "load")


class Block(list):
    """The rows of one case; ``add`` appends a :func:`row`."""

    def add(self, *args, **kwargs):
        """Append ``row(*args, **kwargs)``."""
        self.append(row(*args, **kwargs))

    def absolute(self, measure, case, value):
        """Append a row of a value measured on its own, against nothing."""
        self.add(measure, case, "(absolute)", value)


class Rows:
    """The rows of a run: each with its threads and the load average around it."""

    def __init__(self):
        self.rows = []

    @contextlib.contextmanager
    def case(self, threads):
        """Rows added in the block get ``threads`` and the load before and after."""
        block, before = Block(), os.getloadavg()[0]
        yield block
        load = f"{before:.2f} / {os.getloadavg()[0]:.2f}"
        self.rows += [[*row, threads, load] for row in block]

    def table(self):
        """Targets first, then the details."""
        return markdown_table(COLUMNS, sorted(self.rows, key=lambda r: r[4] == ""))


def row(measure, case, against, value, target="", limit=None, ok=None):
    """A row, its target met when ``value <= limit`` (or as ``ok`` says)."""
    if ok is None and limit is not None:
        target, ok = target or f"<= {limit:g}", value <= limit
    cell = f"{value:.2f}x" if isinstance(value, float) else str(value)
    met = "" if ok is None else ("yes" if ok else "no")
    return [measure, case, against, cell, target, met]


def _cr(X, y, **params):
    from cr_sklearn import CRClassifier

    return CRClassifier(random_state=0, **params).fit(X, y)


def _params(params):
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _mlp(max_iter=100):
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # CR standardises inside; the MLP gets the same standardised inputs.
    mlp = MLPClassifier(
        HIDDEN,
        batch_size=200,
        max_iter=max_iter,
        tol=0,
        n_iter_no_change=10**9,
        random_state=0,
    )
    return make_pipeline(StandardScaler(), mlp)


def _rotated(names, r):
    """``names`` from the ``r``-th on: no case always runs first."""
    k = r % len(names)
    return names[k:] + names[:k]


@contextlib.contextmanager
def busy_processes(n):
    """``n`` Python processes spinning for the block."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)
    ]
    try:
        time.sleep(0.5)
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


# -- sections of ``speed`` --------------------------------------------------------


def section_fit(rec, args):
    """A default Pima fit against MLPClassifier at the same steps."""
    X, y = load_pima_arrays()
    # Where the time goes: the same fit without the penalty, with the
    # layer-local one, and with the stream on 4 directions, in the same run.
    variants = {
        "cr": {},
        "cr_none": {"dreg": None},
        "cr_local": {"dreg": "local"},
        "cr_k4": {"n_projections": 4},
    }
    # Issue 46's candidates (rules.ROUNDS_46), timed beside the defaults.
    variants |= {f"cr_{name}": params for name, params in ROUNDS_46.items()}
    times, models = {name: [] for name in [*variants, "mlp", "plain"]}, {}
    with rec.case(1) as rows, one_thread():
        encoded = _cr(X, y, n_threads=1, max_iter=2).n_encoded_features_
        _mlp(2).fit(X, y)
        # The default fit's arithmetic without the package: a CRNetwork on
        # the encoded columns, the exact stream on 64 rows of each batch.
        plain = ("poly", ("stream", "exact", 64))
        for r in range(args.repeats):
            for name in _rotated(list(times), r):
                if name == "plain":
                    epoch = epoch_time(encoded, HIDDEN[0], 200, *plain, 3, len(y))
                    times[name].append(float(np.median(epoch)))  # one epoch
                    continue
                start = time.process_time()
                if name == "mlp":
                    models[name] = _mlp().fit(X, y)
                else:
                    models[name] = _cr(X, y, n_threads=1, **variants[name])
                times[name].append(time.process_time() - start)
        cr, mlp = models["cr"], models["mlp"][-1]
        times["plain"] = [cr.n_iter_ * epoch for epoch in times["plain"]]
        ratio = functools.partial(median_ratio, times)
        # batch_size="auto" is min(200, n): the documented rule (no fitted attribute).
        per_epoch = math.ceil(len(y) / min(200, len(y)))
        cr_steps, mlp_steps = cr.n_iter_ * per_epoch, mlp.n_iter_ * per_epoch
        rows.add(
            "Pima fit",
            "CRClassifier(n_threads=1), defaults (CPU time)",
            "MLPClassifier((64, 64), batch 200, 100 epochs, no early stop)",
            ratio("cr", "mlp"),
            limit=3.5,
        )
        rows.add(
            "Pima fit",
            f"optimizer steps: CR {cr.n_iter_} epochs, MLP "
            f"{mlp.n_iter_} epochs, {per_epoch} batches each",
            "(the same work)",
            f"{cr_steps} / {mlp_steps}",
            "equal",
            ok=cr_steps == mlp_steps,
        )
        cases = {
            name: f"CRClassifier(n_threads=1, {_params(variants[name])}) (CPU time)"
            for name in variants
            if name != "cr"
        }
        cases["plain"] = (
            f"the defaults' arithmetic in a plain PyTorch loop (CRNetwork on the "
            f"{encoded} encoded columns, exact stream on 64 rows, Adam; CPU time)"
        )
        for name, case in cases.items():
            rows.add("Pima fit", case, "MLPClassifier, as above", ratio(name, "mlp"))
        rows.add(
            "Pima fit",
            "CRClassifier(n_threads=1), defaults (CPU time)",
            "the plain loop of its arithmetic, as above",
            ratio("cr", "plain"),
        )
        for name in ROUNDS_46:
            rows.add(
                "Pima fit",
                f"issue 46 candidate {name}: {cases[f'cr_{name}']}",
                "the defaults, alternating runs",
                ratio(f"cr_{name}", "cr"),
            )
        for name, label in (("cr", "CR"), ("mlp", "MLPClassifier")):
            ms = 1e3 * float(np.median(times[name])) / cr_steps
            rows.absolute("Pima fit", f"{label} ms per step (CPU time)", f"{ms:.2f} ms")


def section_predict(rec, args):
    """``predict_proba`` latency of 1 row and time of 100k rows."""
    X, y = load_pima_arrays()
    rng = np.random.default_rng(0)
    big = X[rng.integers(0, len(X), 100_000)]
    big = big + 0.1 * X.std(axis=0) * rng.standard_normal(big.shape)
    one = X[:1].copy()
    n_calls = 300
    with rec.case(1) as rows, one_thread():
        models = {"CR": _cr(X, y, n_threads=1), "MLP": _mlp().fit(X, y)}
        single, many = {n: [] for n in models}, {n: [] for n in models}
        for model in models.values():
            model.predict_proba(one)
            model.predict_proba(big[:1000])
        for _ in range(args.repeats):
            for name, model in models.items():
                start = time.process_time()
                for _ in range(n_calls):
                    model.predict_proba(one)
                single[name].append((time.process_time() - start) / n_calls)
                many[name].append(
                    timed(model.predict_proba, big, clock=time.process_time)
                )
        rows.add(
            "predict_proba 1 row",
            "CR latency (CPU time)",
            "MLPClassifier, same sizes",
            median_ratio(single, "CR", "MLP"),
            limit=1.5,
        )
        rows.add(
            "predict_proba 100k rows",
            "CR time (CPU time)",
            "MLPClassifier, same sizes",
            median_ratio(many, "CR", "MLP"),
            limit=1.0,
        )
        us = 1e6 * float(np.median(single["CR"]))
        rows.absolute("predict_proba 1 row", "CR latency", f"{us:.0f} us")


def _embedding_like(n=2000, d=384, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (X @ rng.standard_normal(d) > 0).astype(int)


def _table_like(n=5000, d=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, (X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + X[:, 3:5].sum(1) > 0).astype(int)


# The shapes of the thread rule: the default Pima fit, and fixed epochs on wider ones.
THREAD_SHAPES = {
    "Pima fit": (load_pima_arrays, {}),
    "384-column embedding, 2,000 rows, 10 epochs": (
        _embedding_like,
        {"max_iter": 10, "early_stopping": False},
    ),
    "5,000 x 50 table, 5 epochs": (
        _table_like,
        {"max_iter": 5, "early_stopping": False},
    ),
}


def section_threads(rec, args):
    """``n_threads="auto"`` beside two busy processes, and idle."""
    for shape, (data, fit) in THREAD_SHAPES.items():
        X, y = data()
        cases = {"auto": {}, "1": {"n_threads": 1}, "2": {"n_threads": 2}}
        for label, busy in (("beside 2 busy processes", 2), ("idle", 0)):
            times = {name: [] for name in cases}
            with rec.case(f"auto, 1, 2; {label}") as rows, busy_processes(busy):
                _cr(X, y, max_iter=2)
                for r in range(args.repeats):
                    for name in _rotated(list(cases), r):
                        times[name].append(timed(_cr, X, y, **fit, **cases[name]))
                if busy:
                    rows.add(
                        f"{shape}, loaded",
                        "default n_threads='auto' (wall)",
                        "n_threads=1, same load",
                        median_ratio(times, "auto", "1"),
                        limit=1.1,
                    )
                else:
                    best = min(("1", "2"), key=lambda n: np.median(times[n]))
                    rows.add(
                        f"{shape}, idle",
                        "default n_threads='auto' (wall)",
                        f"better of n_threads=1 and 2 (here {best})",
                        median_ratio(times, "auto", best),
                        limit=1.15,
                    )


def _console_script():
    """The ``cr-sklearn`` entry point beside this interpreter, else on PATH."""
    beside = Path(sys.executable).with_name("cr-sklearn")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("cr-sklearn")
    return [found] if found else [sys.executable, "-m", "cr_sklearn.cli"]


_TORCH_PROBE = """
import sys
from cr_sklearn.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print("TORCH_IMPORTED=" + str("torch" in sys.modules))
"""


def section_cli(rec, args):
    """Start-up of the command and the import time of the package."""
    script = _console_script()
    with rec.case("1 process each") as rows:
        for argv, code in ((["--help"], 0), (["study", "--no-such-flag"], 2)):
            walls = []
            for _ in range(max(3, args.repeats)):
                start = time.perf_counter()
                done = subprocess.run([*script, *argv], capture_output=True, text=True)
                walls.append(time.perf_counter() - start)
                if done.returncode != code:
                    raise RuntimeError(
                        f"{argv} exited {done.returncode}: {done.stderr[-300:]}"
                    )
            wall = float(np.median(walls))
            rows.add(
                "CLI start-up",
                f"`cr-sklearn {' '.join(argv)}`, fresh process (wall, median)",
                "(absolute)",
                f"{wall:.3f} s",
                "< 0.5 s",
                ok=wall < 0.5,
            )
            probe = subprocess.run(
                [sys.executable, "-c", _TORCH_PROBE.format(argv=argv)],
                capture_output=True,
                text=True,
            )
            imported = "TORCH_IMPORTED=True" in probe.stdout
            rows.add(
                "CLI start-up",
                f"`{' '.join(argv)}`: torch imported?",
                "(sys.modules after cli.main)",
                "yes" if imported else "no",
                "no",
                ok=not imported,
            )
        snippets = {
            "torch, sklearn": "import torch, sklearn",
            "cr_sklearn": "import cr_sklearn",
            "estimator": "import cr_sklearn; cr_sklearn.CRClassifier",
        }
        walls = {name: [] for name in snippets}
        for _ in range(max(3, args.repeats)):
            for name, code in snippets.items():
                walls[name].append(
                    timed(subprocess.run, [sys.executable, "-c", code], check=True)
                )
        base = float(np.median(walls["torch, sklearn"]))
        for name in ("cr_sklearn", "estimator"):
            more = float(np.median(walls[name])) - base
            rows.add(
                "import time",
                f"`{snippets[name]}` minus `import torch, sklearn` (wall, medians)",
                "import torch, sklearn",
                f"{more:.3f} s",
                "<= 0.3 s more",
                ok=more <= 0.3,
            )


def _train_variants(d):
    """Penalty name -> (activation, penalty) of the train section at ``d`` inputs."""
    default = "exact" if d <= 32 else 4
    variants = {
        "relu": ("relu", None),
        "poly": ("poly", None),
        "local": ("poly", "local"),
        "stream (default)": ("poly", ("stream", default, 64)),
        "IGPen": ("poly", "igpen"),
    }
    if d == 384:
        variants["stream k=1, every row"] = ("poly", ("stream", 1, None))
    return variants


def epoch_time(
    d, width, batch, activation, penalty, repeats, rows=EPOCH_ROWS, threads=1
):
    """Median seconds of one epoch of plain training steps of a ``CRNetwork``."""
    import torch
    import torch.nn.functional as F

    from cr_sklearn.nn import CRNetwork, input_gradient_penalty, local_dreg, stream_dreg

    torch.manual_seed(0)
    net = CRNetwork(d, 2, hidden_layer_sizes=(width, width), activation=activation)
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    X = torch.randn(rows, d)
    y = (X[:, 0] + 0.5 * torch.randn(rows) > 0).long()

    def step(xb, yb):
        if penalty == "igpen":
            xb = xb.requires_grad_(True)
            losses = F.cross_entropy(net(xb), yb, reduction="none")
            loss = losses.mean() + 0.01 * input_gradient_penalty(losses, xb)
        elif penalty is None:
            loss = F.cross_entropy(net(xb), yb)
        else:
            directions, stream_rows = (
                (None, None) if penalty == "local" else penalty[1:]
            )
            chosen = (
                None if stream_rows is None else torch.randperm(len(xb))[:stream_rows]
            )
            result = net.forward_stream(xb, directions, derivatives=True, rows=chosen)
            value = local_dreg(result) if penalty == "local" else stream_dreg(result)
            loss = F.cross_entropy(result.output, yb) + 0.01 * value
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    # CPU time with one thread (steadier beside neighbours), wall with more.
    clock = time.process_time if threads == 1 else time.perf_counter
    times = []
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        step(X[:batch].clone(), y[:batch])
        for _ in range(repeats):
            start = clock()
            for i in range(0, rows, batch):
                step(X[i : i + batch].clone(), y[i : i + batch])
            times.append(clock() - start)
    finally:
        torch.set_num_threads(previous)
    return times


def section_train(rec, args):
    """Per-epoch training cost of each penalty, plain loop, one thread."""
    shapes = [(8, 64, 128), (64, 64, 128), (384, 64, 128)]
    if not args.quick:
        shapes += [(8, 256, 256), (64, 256, 256), (384, 256, 256)]
    for d, width, batch in shapes:
        rows_ = EPOCH_ROWS // (8 if args.quick else 1)
        with rec.case(1) as rows:
            times = {
                name: epoch_time(d, width, batch, *spec, args.repeats, rows_)
                for name, spec in _train_variants(d).items()
            }
            shape = f"d={d} w={width}x{width} b={batch}"
            rows.add(
                "train epoch",
                f"{shape}: local",
                "poly, no penalty",
                median_ratio(times, "local", "poly"),
                limit=1.3,
            )
            rows.add(
                "train epoch",
                f"{shape}: stream (default, 64 rows)",
                "IGPen",
                median_ratio(times, "stream (default)", "IGPen"),
                limit=1.0,
            )
            if "stream k=1, every row" in times:
                rows.add(
                    "train epoch",
                    f"{shape}: stream k=1, every row",
                    "IGPen",
                    median_ratio(times, "stream k=1, every row", "IGPen"),
                    limit=0.9,
                )
            ms = 1e3 * float(np.median(times["relu"]))
            rows.absolute(
                "train epoch",
                f"{shape}: ReLU network ms per epoch (CPU)",
                f"{ms:.1f} ms",
            )


def section_study(rec, args):
    """The README's ``cr-sklearn study`` (750 fits on Pima), wall time, as written."""
    import tempfile

    with (
        tempfile.TemporaryDirectory() as out,
        rec.case("the command's defaults") as rows,
    ):
        argv = [*_console_script(), "study", "--out", out]
        wall = timed(subprocess.run, argv, capture_output=True, check=True)
        rows.absolute(
            "cr-sklearn study",
            "the README's command on Pima (750 fits; wall)",
            f"{wall:.0f} s",
        )


def run_speed(args):
    """The ``speed`` report."""
    import torch

    rec = Rows()
    seconds = {}
    for name in args.sections:
        seconds[name] = timed(globals()[f"section_{name}"], rec, args)
    note = (
        f"torch {torch.__version__}, {os.cpu_count()} CPUs; seconds per section: "
        + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items())
        + ". Targets first; timings on a shared machine."
    )
    lines = header(
        "Speed: the package's targets in one run",
        args.argv,
        {"scikit-learn": ("scikit-learn",)},
        [note],
    )
    return "\n".join([*lines, "", *rec.table()]) + "\n"


def _speed_args(parser):
    parser.add_argument(
        "--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--quick", action="store_true", help="fewer, smaller train shapes"
    )


# -- threads, load, members, gpu --------------------------------------------------

STEP_SHAPES = [
    (8, 64, 200),
    (60, 64, 200),
    (91, 64, 200),
    (384, 64, 200),
    (384, 128, 512),
    (384, 256, 256),
    (384, 256, 1024),
]


def run_threads(args):
    """One training step with one and two torch threads, per shape."""
    rows = []
    for d, width, batch in STEP_SHAPES:
        spec = ("poly", ("stream", "exact" if d <= 32 else 4, 64))
        per = {}
        for t in (1, 2):
            times = epoch_time(
                d, width, batch, *spec, args.repeats, batch * args.steps, t
            )
            per[t] = np.median(times) / args.steps
        macs = batch * (d * width + width * width + 2 * width)
        ms = [f"{1e3 * per[t]:.2f}" for t in (1, 2)]
        rows.append(
            [d, width, batch, f"{macs / 1e6:.1f}M", *ms, f"{per[2] / per[1]:.2f}"]
        )
    note = (
        f"{os.cpu_count()} CPUs, load before the run {os.getloadavg()[0]:.2f}. A step: "
        "the default stream (exact up to 32 inputs, else 4 directions, on 64 rows), "
        f"stream DREG, Adam; {args.steps} steps, median of {args.repeats} (wall "
        "with two threads)."
    )
    cols = ["features", "width", "batch", "multiply-adds per step", "1 thread (ms)"]
    cols += ["2 threads (ms)", "2 / 1"]
    lines = header("Torch threads for training", args.argv, notes=[note])
    return "\n".join([*lines, "", *markdown_table(cols, rows)]) + "\n"


def _threads_args(parser):
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)


def _rss_mib():
    """Resident set size of this process in MiB (Linux), else its peak."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def serve(model, rows, expected, n_threads, n_calls, seed):
    """Latencies (s), errors, calls that differ from serial ones, wall time."""
    from concurrent.futures import ThreadPoolExecutor

    plan = np.random.default_rng(seed).integers(0, len(rows), (n_threads, n_calls))

    def worker(t):
        latencies, errors, differ = np.empty(n_calls), [], 0
        for i, r in enumerate(plan[t]):
            start = time.perf_counter()
            try:
                proba = model.predict_proba(rows[r : r + 1])
            except Exception as exc:  # the load test counts every failure
                errors.append(f"{type(exc).__name__}: {exc}")
            else:
                differ += not np.array_equal(proba[0], expected[r])
            latencies[i] = time.perf_counter() - start
        return latencies, errors, differ

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        results = list(pool.map(worker, range(n_threads)))
    wall = time.perf_counter() - start
    errors = [e for r in results for e in r[1]]
    return (
        np.concatenate([r[0] for r in results]),
        errors,
        sum(r[2] for r in results),
        wall,
    )


def run_load(args):
    """The ``load`` report."""
    import torch

    torch.set_num_threads(1)
    rss_start = _rss_mib()
    X, y = load_pima_arrays()
    model = _cr(X, y)
    far = X.mean(0) + 100 * X.std(0) * np.random.default_rng(0).choice(
        [-1, 1], (8, X.shape[1])
    )
    rows = np.vstack([X, far])
    expected = np.vstack(
        [model.predict_proba(rows[i : i + 1]) for i in range(len(rows))]
    )
    serve(model, rows, expected, args.threads, 200, seed=1)
    rss_warm, peak, stop = _rss_mib(), [], threading.Event()

    def sample():
        while not stop.wait(0.2):
            peak.append(_rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    latencies, errors, differ, wall = serve(
        model, rows, expected, args.threads, args.calls, 0
    )
    stop.set()
    sampler.join()
    ms = 1e3 * latencies
    cells = [
        len(ms),
        f"{len(ms) / wall:,.0f}",
        *(f"{np.percentile(ms, q):.2f}" for q in (50, 99)),
        f"{ms.max():.2f}",
        len(errors),
        differ,
        f"{rss_start:.1f}",
        f"{rss_warm:.1f}",
        f"{max(peak + [_rss_mib()]):.1f}",
        f"{_rss_mib():.1f}",
    ]
    cols = ["calls", "calls/s", "p50 (ms)", "p99 (ms)", "max (ms)", "errors"]
    cols += ["differ from serial", "RSS start (MiB)", "RSS warm (MiB)"]
    cols += ["RSS peak (MiB)", "RSS after (MiB)"]
    note = (
        f"CRClassifier() fitted on Pima; {args.threads} threads x {args.calls:,} "
        "single-row `predict_proba` calls (1% of the rows 100 standard deviations "
        "out); torch threads 1; a shared machine."
    )
    lines = header(
        "Load test: single-row predict_proba from threads", args.argv, notes=[note]
    )
    lines += ["", *markdown_table(cols, [cells])]
    if errors:
        lines += ["", f"First error: `{errors[0]}`"]
    return "\n".join(lines) + "\n"


def _load_args(parser):
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--calls", type=int, default=10_000, help="per thread")


def run_members(args):
    """A fit with ``M`` members against ``M`` single fits, the same budget."""
    X, y = load_pima_arrays()
    params = {"max_iter": args.epochs, "n_threads": 1}
    rows = []
    with one_thread():
        _cr(X, y, max_iter=2, n_threads=1)
        for m in args.members:
            stacked, separate = [], []
            for _ in range(args.repeats):
                stacked.append(timed(_cr, X, y, n_members=m, **params))
                separate.append(sum(timed(_cr, X, y, **params) for _ in range(m)))
            ratio = median_ratio({"a": stacked, "b": separate}, "a", "b")
            medians = [f"{np.median(t):.2f}" for t in (stacked, separate)]
            rows.append([m, *medians, f"{ratio:.2f}"])
    note = (
        f"Pima, CRClassifier(n_members=M, max_iter={args.epochs}) (cross-fitted "
        f"members) against M fits of CRClassifier(max_iter={args.epochs}), one "
        f"thread; medians of {args.repeats}, wall seconds."
    )
    lines = header("Cost of the member axis", args.argv, notes=[note])
    cols = ["M", "one fit with M members (s)", "M single fits (s)", "ratio"]
    return "\n".join([*lines, "", *markdown_table(cols, rows)]) + "\n"


def _members_args(parser):
    parser.add_argument("--members", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)


def run_gpu(args):
    """Fits and the stream on CUDA against the CPU; status 1 when a check fails."""
    import torch

    from cr_sklearn.nn import CRNetwork

    if not torch.cuda.is_available():
        print(
            "CUDA is not available here: nothing to check (tests/test_device.py "
            "covers the CPU fallbacks)."
        )
        return None, 0
    X, y = load_pima_arrays()
    checks = []
    for n_projections in ("exact", 4):
        gpu = _cr(X, y, device="cuda", n_projections=n_projections)
        cpu = _cr(X, y, device="cpu", n_projections=n_projections)
        proba = gpu.predict_proba(X)
        checks.append(
            (
                f"fit n_projections={n_projections}: float64 numpy predictions",
                "",
                type(proba) is np.ndarray and proba.dtype == np.float64,
            )
        )
        gap = abs(gpu.score(X, y) - cpu.score(X, y))
        checks.append(
            (
                f"  training accuracy, cuda vs cpu ({n_projections})",
                f"{gap:.3f}",
                gap <= 0.05,
            )
        )
    torch.manual_seed(0)
    net = CRNetwork(384, 3, (256, 256)).double()
    x = torch.randn(64, 384, dtype=torch.float64)
    directions = torch.randn(1, 4, 384, dtype=torch.float64)
    for mode, spec in (("exact", "exact"), ("4 directions", directions)):
        on_cpu = net.forward_stream(x, spec)
        on_gpu = net.to("cuda").forward_stream(
            x.cuda(), spec if isinstance(spec, str) else spec.cuda()
        )
        net.to("cpu")
        error = max(
            float((a.detach().cpu() - b.detach()).abs().max())
            for a, b in zip(
                [on_gpu.output, *on_gpu.jacobians],
                [on_cpu.output, *on_cpu.jacobians],
                strict=True,
            )
        )
        checks.append(
            (f"forward_stream {mode}, cuda vs cpu", f"{error:.1e}", error < 1e-9)
        )
    lines = header(
        "CUDA check",
        args.argv,
        notes=[f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}."],
    )
    rows = [[c, v, "yes" if ok else "NO"] for c, v, ok in checks]
    text = "\n".join([*lines, "", *markdown_table(["check", "value", "passed"], rows)])
    return text + "\n", 0 if all(ok for *_, ok in checks) else 1


CONFIGS = [
    Config("speed", "the package's speed targets in one run", _speed_args, run_speed),
    Config(
        "threads",
        "one against two torch threads per training step",
        _threads_args,
        run_threads,
    ),
    Config("load", "single-row predictions served from threads", _load_args, run_load),
    Config(
        "members", "a fit with M members against M fits", _members_args, run_members
    ),
    Config(
        "gpu", "the CUDA path against the CPU", lambda p: None, run_gpu, "gpu_check.md"
    ),
]
