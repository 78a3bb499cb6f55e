"""A short prepared check of the CUDA path, for a machine with a GPU.

1. Correctness against the CPU: a ``CRClassifier`` fitted on ``device="cuda"``
   (exact and projected stream) gives the same decision function and
   Jacobian, within float64 round-off, as its float64 module evaluated on
   the CPU; ``CRNetwork.forward_stream`` gives the same outputs and
   Jacobians on both devices for the same weights; fits on both devices
   reach similar accuracy on Pima.
2. Epoch time at d=384, two hidden layers of width 256, batch 1024, with the
   package's training loop (as ``bench_speed.py``), for each training
   variant, on the GPU and, for the cheap variants, on the CPU.

Where CUDA is absent it says so and exits cleanly (status 0). Run::

    python benchmarks/gpu_check.py           # ~1-3 min on one GPU
    python benchmarks/gpu_check.py --out DIR # also write DIR/gpu_check.md

The Markdown report goes to ``benchmarks/results/gpu_check.md``.
"""

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_speed import (  # noqa: E402  (the sibling benchmark script)
    VARIANTS,
    _make_train_nets,
    _pima,
    _time_steps,
)

from cr_sklearn import CRClassifier  # noqa: E402
from cr_sklearn.nn import CRNetwork  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "gpu_check.md"
SHAPE = {"d": 384, "width": 256, "batch": 1024}
# Too slow on the CPU at this shape (O(d) forward passes): GPU only.
GPU_ONLY = {"stream exact"}


def _max_error(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def check_correctness():
    """Rows ``(check, value, passed)`` comparing CUDA with the CPU."""
    rows = []
    X, y = _pima()
    for n_projections in ("exact", 4):
        clf = CRClassifier(
            device="cuda", n_projections=n_projections, random_state=0
        ).fit(X, y)
        on_gpu = all(p.device.type == "cuda" for p in clf.module_.parameters())
        # The estimator predicts with a float64 copy of its fitted module_.
        module = copy.deepcopy(clf.module_).double().eval().cpu()
        x = torch.tensor(X)
        with torch.no_grad():
            error_out = _max_error(clf.decision_function(X), module(x)[:, 0])
            error_jac = _max_error(clf.jacobian(X), module.input_jacobian(x))
        proba = clf.predict_proba(X)
        ok_types = type(proba) is np.ndarray and proba.dtype == np.float64
        rows.append(
            (f"fit n_projections={n_projections}: parameters on cuda", "", on_gpu)
        )
        rows.append(("  predictions are float64 numpy", "", ok_types))
        rows.append(
            ("  decision_function, cuda vs cpu", f"{error_out:.1e}", error_out < 1e-9)
        )
        rows.append(("  jacobian, cuda vs cpu", f"{error_jac:.1e}", error_jac < 1e-9))

    # The stream itself, same weights on both devices, float64.
    torch.manual_seed(0)
    net = CRNetwork(384, 3, (256, 256)).double()
    x = torch.randn(64, 384, dtype=torch.float64)
    directions = torch.randn(1, 4, 384, dtype=torch.float64)
    for mode, spec in (("exact", "exact"), ("4 directions", directions)):
        cpu = net.forward_stream(x, spec)
        gpu_spec = spec if isinstance(spec, str) else spec.cuda()
        gpu = copy.deepcopy(net).cuda().forward_stream(x.cuda(), gpu_spec)
        error = max(
            _max_error(a.detach().cpu(), b.detach())
            for a, b in zip(
                [gpu.output, *gpu.jacobians], [cpu.output, *cpu.jacobians], strict=True
            )
        )
        rows.append(
            (f"forward_stream {mode}, cuda vs cpu", f"{error:.1e}", error < 1e-9)
        )

    # Training on both devices: different random streams, similar accuracy.
    accuracy = {}
    for device in ("cpu", "cuda"):
        clf = CRClassifier(device=device, random_state=0).fit(X[:600], y[:600])
        accuracy[device] = clf.score(X[600:], y[600:])
    gap = abs(accuracy["cuda"] - accuracy["cpu"])
    rows.append(
        (
            "Pima held-out accuracy, cuda vs cpu",
            f"{accuracy['cuda']:.3f} vs {accuracy['cpu']:.3f}",
            gap <= 0.05,
        )
    )
    return rows


def epoch_times(repeats=3, steps=4):
    """Seconds per epoch of ``steps`` batches, per device and variant."""
    d, width, batch = SHAPE["d"], SHAPE["width"], SHAPE["batch"]
    rows = steps * batch
    times = {}
    for device in ("cuda", "cpu"):
        nets, data = _make_train_nets(d, width, batch, None, device=device, rows=rows)
        for name, net in nets.items():
            if device == "cpu" and name in GPU_ONLY:
                continue
            _time_steps(net, data, 1)  # warm-up (kernels, allocator)
            per_step = [_time_steps(net, data, steps) for _ in range(repeats)]
            times[device, name] = float(np.median(per_step)) * steps
    return times


def report(correctness, times):
    lines = [
        "# CUDA check",
        "",
        f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}.",
        "",
        "| Check | Value | Passed |",
        "|---|---|---|",
    ]
    lines += [f"| {c} | {v} | {'yes' if ok else 'NO'} |" for c, v, ok in correctness]
    d, width, batch = SHAPE["d"], SHAPE["width"], SHAPE["batch"]
    lines += [
        "",
        f"Epoch of 4 batches at d={d}, width {width}x{width}, batch {batch} "
        "(median of 3; ratios against ReLU on the same device).",
        "",
        "| Variant | cuda ms | cuda / ReLU | cpu ms | cpu / cuda |",
        "|---|---|---|---|---|",
    ]
    for name in VARIANTS:
        gpu = times["cuda", name]
        cpu = times.get(("cpu", name))
        lines.append(
            f"| {name} | {gpu * 1e3:.1f} | {gpu / times['cuda', 'relu']:.2f}x | "
            + (f"{cpu * 1e3:.0f} | {cpu / gpu:.1f}x |" if cpu else "- | - |")
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="also write gpu_check.md into this folder")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(
            "CUDA is not available on this machine: nothing to check. The GPU "
            "path is covered here only by its CPU fallbacks (tests/test_device.py)."
        )
        return 0
    start = time.perf_counter()
    correctness = check_correctness()
    text = report(correctness, epoch_times())
    text += f"\nTotal {time.perf_counter() - start:.0f} s.\n"
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "gpu_check.md").write_text(text)
    return 0 if all(ok for _, _, ok in correctness) else 1


if __name__ == "__main__":
    sys.exit(main())
