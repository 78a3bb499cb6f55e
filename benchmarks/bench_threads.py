"""Torch threads for training: one against two, idle and beside busy processes.

Two measurements, one run, one process at a time:

1. The time of one training step (forward stream with the DREG penalty,
   backward, AdamW) of a two-layer ``CRNetwork`` with one and with two torch
   threads, at the shapes of the benchmarks (Pima-like tables, one-hot
   tables, 384-feature sentence embeddings, wide layers and large batches).
   This is what ``n_threads="auto"`` is chosen from: one thread below the
   multiply-add count where a second thread starts to pay.
2. A default ``CRClassifier`` fit on Pima with ``n_threads="auto"`` (the
   default), ``None`` (torch's setting: one thread per core) and ``1``,
   idle and with two processes keeping the cores busy.

Run::

    python benchmarks/bench_threads.py

The Markdown tables go to ``benchmarks/results/threads.md``. Run it with
nothing else heavy on the machine.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima
from cr_sklearn.nn import CRNetwork

RESULTS = Path(__file__).resolve().parent / "results" / "threads.md"
SHAPES = [
    (8, 64, 200),
    (60, 64, 200),
    (91, 64, 200),
    (384, 64, 200),
    (384, 128, 512),
    (384, 256, 256),
    (384, 256, 1024),
]


def step_time(n_features, width, batch, threads, steps=30):
    """Median-free mean seconds per training step after five warm-up steps."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = CRNetwork(n_features, 2, hidden_layer_sizes=(width, width))
    optimizer = torch.optim.AdamW(net.parameters(), 1e-3)
    x = torch.randn(batch, n_features)
    y = torch.randint(0, 2, (batch,))
    directions = 4 if n_features > 32 else "exact"
    rows = torch.arange(min(64, batch))
    for i in range(steps + 5):
        if i == 5:
            start = time.perf_counter()
        result = net.forward_stream(x, directions, derivatives=True, rows=rows)
        loss = torch.nn.functional.cross_entropy(result.output, y)
        loss = loss + 0.01 * sum(j.square().sum() for j in result.jacobians)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps


def fit_time(X, y, repeats=3, **params):
    """Median seconds of a default Pima fit with ``params``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        CRClassifier(random_state=0, **params).fit(X, y)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    previous = torch.get_num_threads()
    lines = [
        "# Torch threads for training",
        "",
        f"Command: `python benchmarks/bench_threads.py`; {os.cpu_count()} CPUs; "
        f"torch {torch.__version__}; load before the run "
        f"{os.getloadavg()[0]:.2f}.",
        "",
        "## One training step (three repeats, median), 1 against 2 threads",
        "",
        "| features | width | batch | multiply-adds per step | 1 thread (ms) "
        "| 2 threads (ms) | 2 / 1 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for d, width, batch in SHAPES:
        one = np.median([step_time(d, width, batch, 1) for _ in range(3)])
        two = np.median([step_time(d, width, batch, 2) for _ in range(3)])
        macs = batch * (d * width + width * width + 2 * width)
        lines.append(
            f"| {d} | {width} | {batch} | {macs / 1e6:.1f}M | {1e3 * one:.2f} "
            f"| {1e3 * two:.2f} | {two / one:.2f} |"
        )
    torch.set_num_threads(previous)
    X, y = load_pima(return_X_y=True)
    settings = {
        "auto (default)": {},
        "None": {"n_threads": None},
        "1": {"n_threads": 1},
    }
    idle = {name: fit_time(X, y, **p) for name, p in settings.items()}
    busy_procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)
    ]
    try:
        busy = {name: fit_time(X, y, **p) for name, p in settings.items()}
    finally:
        for proc in busy_procs:
            proc.kill()
    lines += [
        "",
        "## A default Pima fit (768 rows; median of three fits, seconds)",
        "",
        "| n_threads | idle | two busy processes beside it | busy / n_threads=1 busy |",
        "| --- | --- | --- | --- |",
    ]
    for name in settings:
        lines.append(
            f"| {name} | {idle[name]:.2f} | {busy[name]:.2f} "
            f"| {busy[name] / busy['1']:.2f} |"
        )
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
