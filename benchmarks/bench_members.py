"""Cost of the member axis: M CR networks in one batched module against M networks.

Two shapes: Pima (768 x 8, the encoding of the defaults) and a synthetic
5,000 x 50 table. For M = 1, 2, 4, 8, 16, 32:

- *network*: one epoch of the default training step (batches of the
  default size, the Jacobian stream of the defaults on 64 rows per batch:
  exact up to 32 input columns, else 4 random projections; stream DREG,
  Adam) for a member stack ``CRNetwork(n_members=M)`` and for M separate
  networks trained one after the other; on the 5,000 x 50 table also with
  the exact stream (all 200 encoded columns), the heaviest step;
- *estimator* (Pima): a fit of ``CRClassifier(n_members=M)`` (cross-fitted,
  a fixed budget of epochs) against M fits of ``CRClassifier()`` with the
  same budget.

One thread; medians of ``--repeats`` runs. Writes ``results/members.md``.
The header names glibc's allocator settings (``MALLOC_*`` variables) in
effect: a stack's tensors are ``M`` times larger, and glibc returns large
freed blocks to the system and faults them back in at every step unless
told to keep them; ``members_malloc.md`` is the run that keeps them.

Usage::

    python benchmarks/bench_members.py
    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296 \
        python benchmarks/bench_members.py --members 1,4,8,16 \
        --output benchmarks/results/members_malloc.md
"""

import argparse
import copy
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import make_classification

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _suite_runner import git_commit  # noqa: E402

from cr_sklearn import CRClassifier, __version__  # noqa: E402
from cr_sklearn.datasets import load_pima  # noqa: E402
from cr_sklearn.nn import random_directions, stream_dreg  # noqa: E402

MEMBERS = (1, 2, 4, 8, 16, 32)


def shapes():
    """``{name: (X, y)}``: Pima and the synthetic 5,000 x 50 table."""
    X, y = load_pima(return_X_y=True)
    Xs, ys = make_classification(
        n_samples=5000, n_features=50, n_informative=20, random_state=0
    )
    return {"Pima 768 x 8": (X, y), "synthetic 5,000 x 50": (Xs, ys)}


def template(X, y):
    """The default network for ``(X, y)``, its batch size and stream mode.

    The mode is ``"exact"`` or the number of random projections the
    defaults carry for this input (one epoch fitted).
    """
    model = CRClassifier(max_iter=1, n_threads=1, random_state=0).fit(X, y)
    return model.module_, model.net_.batch_size, model._stream_mode(X.shape[1])


def _stack(module, n_members):
    """``module``'s configuration as ``n_members`` members (fresh weights)."""
    nets = []
    for seed in range(n_members):
        torch.manual_seed(seed)
        net = copy.deepcopy(module)
        for layer in (*net.hidden, net.output):
            layer.reset_parameters()
        nets.append(net)
    return nets, type(module).stack(nets)


def _epoch(net, optimizer, X, y, batch, n_members, mode="exact"):
    """One epoch of the default step: batches, stream DREG on 64 rows, Adam.

    ``mode``: ``"exact"`` or a number of random projections per row.
    """
    order = torch.randperm(X.shape[0])
    for start in range(0, X.shape[0], batch):
        idx = order[start : start + batch]
        xb, yb = X[idx], y[idx]
        rows = torch.randperm(xb.shape[0])[:64] if xb.shape[0] > 64 else None
        directions = mode
        if mode != "exact":
            n_rows = xb.shape[0] if rows is None else rows.shape[0]
            directions = random_directions(
                n_rows, net.stream_width, int(mode), dtype=X.dtype, device=X.device
            )
        result = net.forward_stream(xb, directions, rows=rows)
        out = result.output
        target = yb if n_members is None else yb.expand(n_members, -1)
        if out.shape[-1] == 1:  # binary: one logit
            per_row = torch.nn.functional.binary_cross_entropy_with_logits(
                out[..., 0], target.to(out.dtype), reduction="none"
            )
        else:
            per_row = torch.nn.functional.cross_entropy(
                out.reshape(-1, out.shape[-1]), target.reshape(-1), reduction="none"
            )
        # Each member's batch mean, summed over the members.
        data = per_row.sum() / xb.shape[0]
        loss = data + 0.01 * stream_dreg(result)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def network_rows(X, y, repeats, members, fitted, mode=None):
    """Seconds per epoch: the stack and the separate networks, for each M.

    ``fitted``: :func:`template`'s ``(module, batch, mode)`` for ``(X, y)``;
    ``mode``: the stream's directions; ``None``, the defaults'.
    """
    module, batch, default_mode = fitted
    mode = default_mode if mode is None else mode
    Xt = torch.tensor(X, dtype=torch.float32)
    yt = torch.tensor(np.unique(y, return_inverse=True)[1])
    rows = []
    for m in members:
        nets, stacked = _stack(module, m)
        stacked.train()
        opt = torch.optim.Adam(stacked.parameters(), lr=1e-3)
        opts = [torch.optim.Adam(n.parameters(), lr=1e-3) for n in nets]
        _epoch(stacked, opt, Xt, yt, batch, m, mode)  # warm-up
        t_stack, t_sep = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            _epoch(stacked, opt, Xt, yt, batch, m, mode)
            t_stack.append(time.perf_counter() - start)
            start = time.perf_counter()
            for net, o in zip(nets, opts, strict=True):
                net.train()
                _epoch(net, o, Xt, yt, batch, None, mode)
            t_sep.append(time.perf_counter() - start)
        rows.append((m, statistics.median(t_stack), statistics.median(t_sep)))
    return rows


def estimator_rows(X, y, repeats, members, epochs):
    """Fit seconds: ``n_members=M`` against M single fits (same epochs)."""
    rows = []
    params = dict(max_iter=epochs, early_stopping=False, n_threads=1)
    for m in members:
        t_ens, t_sep = [], []
        for r in range(repeats):
            start = time.perf_counter()
            if m > 1:
                CRClassifier(n_members=m, random_state=r, **params).fit(X, y)
            else:
                CRClassifier(random_state=r, **params).fit(X, y)
            t_ens.append(time.perf_counter() - start)
            start = time.perf_counter()
            for k in range(m):
                CRClassifier(random_state=100 * r + k, **params).fit(X, y)
            t_sep.append(time.perf_counter() - start)
        rows.append((m, statistics.median(t_ens), statistics.median(t_sep)))
    return rows


def _table(rows, unit):
    lines = [
        f"| M | one module ({unit}) | M separate ({unit}) | ratio "
        f"| per member ({unit}) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for m, a, b in rows:
        lines.append(f"| {m} | {a:.3f} | {b:.3f} | {a / b:.2f} | {a / m:.3f} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--members", default=",".join(map(str, MEMBERS)))
    parser.add_argument("--output", default=str(HERE / "results" / "members.md"))
    args = parser.parse_args(argv)
    members = [int(m) for m in args.members.split(",")]
    torch.set_num_threads(1)
    command = "python benchmarks/bench_members.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    malloc = ", ".join(
        f"`{k}={v}`" for k, v in sorted(os.environ.items()) if k.startswith("MALLOC_")
    )
    lines = [
        "# Cost of the member axis",
        "",
        f"Produced by `{command.strip()}` (cr_sklearn {__version__}, commit "
        f"{git_commit()}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"load average at the start {load}). One thread; medians of "
        f"{args.repeats} runs. *ratio*: one module over M separate. "
        f"glibc allocator: {malloc or 'its defaults (no MALLOC_* variable set)'}.",
    ]
    for name, (X, y) in shapes().items():
        fitted = template(X, y)
        mode = fitted[2]
        stream = (
            "exact Jacobian stream"
            if mode == "exact"
            else f"Jacobian stream on {mode} random projections"
        )
        lines += ["", f"## {name}", "", "### Network: one training epoch", ""]
        lines += [
            f"The default step ({stream} on 64 rows of each batch, "
            "stream DREG, Adam) on the default network and batch size; "
            "`CRNetwork(n_members=M)` against M networks one after the other.",
            "",
        ]
        lines += _table(network_rows(X, y, args.repeats, members, fitted), "s/epoch")
        if mode != "exact":
            lines += ["", "### Network: one training epoch, exact stream", ""]
            lines += [
                "The same step with the exact Jacobian stream (every column "
                'the stream differentiates by), as `n_projections="exact"` '
                "trains.",
                "",
            ]
            lines += _table(
                network_rows(X, y, args.repeats, members, fitted, "exact"),
                "s/epoch",
            )
        if name.startswith("Pima"):
            est = estimator_rows(X, y, args.repeats, members, args.epochs)
            lines += ["", f"### Estimator: a fit of {args.epochs} epochs", ""]
            lines += [
                f"`CRClassifier(n_members=M, max_iter={args.epochs}, "
                "early_stopping=False)` (M = 1: the single default network) "
                f"against M fits of `CRClassifier(max_iter={args.epochs}, "
                "early_stopping=False)`.",
                "",
            ]
            lines += _table(est, "s")
        print("\n".join(lines), flush=True)
    Path(args.output).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
