"""Load test: one fitted CRClassifier serving single-row predictions from threads.

A CRClassifier fitted on the bundled Pima data answers ``--threads`` threads x
``--calls`` single-row ``predict_proba`` calls (rows drawn at random, 1% of
them 100 standard deviations out of range). Reported: throughput, p50/p99/max
latency per call, errors, results that differ from serial ones (bit for bit),
and the process's resident memory (RSS) before, after a warm-up, at its
highest during the run, and after.

Run: ``python benchmarks/bench_load.py [--threads 8] [--calls 10000]``.
With ``--compare-unlocked`` it repeats the run with the inference lock
replaced by a no-op, to measure what serialising the network evaluation costs.
Writes ``benchmarks/results/load.md`` and prints it. Timings on a shared
machine are noisy; compare ratios measured within one run.
"""

import argparse
import contextlib
import os
import platform
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

# The --compare-unlocked run swaps the private inference lock for a no-op: an
# experiment on the internals, with no public equivalent.
import cr_sklearn._inference as cr_inference
from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima

RESULTS = Path(__file__).resolve().parent / "results"


def rss_mib():
    """Resident set size of this process in MiB (Linux /proc, else peak RSS)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RSSSampler(threading.Thread):
    """Record the RSS every ``interval`` seconds until stopped."""

    def __init__(self, interval=0.2):
        super().__init__(daemon=True)
        self.interval = interval
        self.samples = []
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            self.samples.append(rss_mib())
            self.stop_event.wait(self.interval)

    def stop(self):
        self.stop_event.set()
        self.join()
        return self.samples


def serve(model, rows, expected, n_threads, n_calls, seed):
    """Run the load; return latencies (s), errors, mismatches, wall time."""
    rng = np.random.default_rng(seed)
    plan = rng.integers(0, len(rows), size=(n_threads, n_calls))

    def worker(t):
        latencies = np.empty(n_calls)
        errors, mismatches = [], 0
        for i, r in enumerate(plan[t]):
            x = rows[r : r + 1]
            tic = time.perf_counter()
            try:
                proba = model.predict_proba(x)
            except Exception as exc:  # the load test counts every failure
                errors.append(f"{type(exc).__name__}: {exc}")
                latencies[i] = time.perf_counter() - tic
                continue
            latencies[i] = time.perf_counter() - tic
            mismatches += not np.array_equal(proba[0], expected[r])
        return latencies, errors, mismatches

    tic = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        results = list(pool.map(worker, range(n_threads)))
    wall = time.perf_counter() - tic
    latencies = np.concatenate([r[0] for r in results])
    errors = [e for r in results for e in r[1]]
    mismatches = sum(r[2] for r in results)
    return latencies, errors, mismatches, wall


def run_once(label, model, rows, expected, args):
    # Warm-up: allocator pools, lazy thread initialisation, caches.
    serve(model, rows, expected, args.threads, 200, seed=1)
    rss_warm = rss_mib()
    sampler = RSSSampler()
    sampler.start()
    latencies, errors, mismatches, wall = serve(
        model, rows, expected, args.threads, args.calls, seed=0
    )
    samples = sampler.stop()
    n = latencies.size
    ms = latencies * 1e3
    return {
        "run": label,
        "calls": n,
        "throughput (calls/s)": n / wall,
        "p50 (ms)": np.percentile(ms, 50),
        "p99 (ms)": np.percentile(ms, 99),
        "max (ms)": ms.max(),
        "errors": len(errors),
        "differ from serial": mismatches,
        "RSS after warm-up (MiB)": rss_warm,
        "RSS peak during run (MiB)": max(samples + [rss_mib()]),
        "RSS after (MiB)": rss_mib(),
        "first error": errors[0] if errors else "",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--calls", type=int, default=10_000, help="per thread")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--compare-unlocked", action="store_true")
    args = parser.parse_args()

    torch.set_num_threads(args.torch_threads)
    rss_start = rss_mib()
    X, y = load_pima(return_X_y=True)
    model = CRClassifier(random_state=0).fit(X, y)
    rng = np.random.default_rng(0)
    far = X.mean(0) + 100 * X.std(0) * rng.choice([-1, 1], size=(8, X.shape[1]))
    rows = np.vstack([X, far])
    # Serial reference, one row at a time like the load itself.
    expected = np.vstack(
        [model.predict_proba(rows[i : i + 1]) for i in range(len(rows))]
    )
    tic = time.perf_counter()
    for i in range(2000):
        model.predict_proba(rows[i % len(rows) : i % len(rows) + 1])
    serial_rate = 2000 / (time.perf_counter() - tic)

    runs = [run_once("locked (shipped)", model, rows, expected, args)]
    if args.compare_unlocked:
        lock = cr_inference._INFERENCE_LOCK
        cr_inference._INFERENCE_LOCK = contextlib.nullcontext()
        try:
            runs.append(run_once("unlocked (comparison)", model, rows, expected, args))
        finally:
            cr_inference._INFERENCE_LOCK = lock

    keys = [k for k in runs[0] if k != "first error"]
    lines = [
        "# Load test: single-row predict_proba from threads",
        "",
        f"CRClassifier() fitted on Pima; {args.threads} threads x {args.calls:,} "
        f"single-row `predict_proba` calls; torch threads {args.torch_threads}; "
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"torch {torch.__version__}. Machine shared with other jobs: timings are "
        "noisy, ratios within this run are the meaningful numbers.",
        "",
        f"Serial single-thread rate before the load: {serial_rate:,.0f} calls/s. "
        f"RSS at start {rss_start:.1f} MiB.",
        "",
        "| " + " | ".join(keys) + " |",
        "|" + "---|" * len(keys),
    ]
    for r in runs:
        cells = [
            f"{v:,.2f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int)
            else str(v)
            for v in (r[k] for k in keys)
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    for r in runs:
        if r["first error"]:
            lines.append(f"\nFirst error in {r['run']}: `{r['first error']}`")
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "load.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
