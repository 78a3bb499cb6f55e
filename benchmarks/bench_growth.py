"""Depth growth of residual CR networks: the paper's claims on our data.

On Wine Quality (red + white, 7 quality classes) and SST-5 (frozen MiniLM
sentence embeddings, 5 classes), with residual CR classifiers at two widths:

1. the first-order signal against depth, (a) along a growth path (the
   strongest signal measured before each insertion) and (b) on networks of
   each depth trained from scratch;
2. test log-loss against depth at two widths, trained from scratch, to look
   for the rebound when depth grows without width;
3. DepthGrowth (validation-selected) against a network of the same final
   size trained from scratch: accuracy, MAE of the predicted class index,
   log-loss and fit time.

One seed, one split per dataset; timings are wall-clock on a shared machine
(ratios within one run are more meaningful than the absolute seconds).
Training uses the local DREG penalty (cheaper than the stream) and 1 thread.

Run::

    python benchmarks/bench_growth.py            # ~15-20 min on 2 cores
    python benchmarks/bench_growth.py --quick    # a smoke run (~1 min)

The Markdown tables go to ``benchmarks/results/growth.md``.
"""

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, log_loss, mean_absolute_error
from sklearn.model_selection import train_test_split

from cr_sklearn import CRClassifier, DepthGrowth
from cr_sklearn.datasets import load_wine_quality
from cr_sklearn.growth import first_order_signal

ROOT = Path(__file__).resolve().parents[1]
SST5 = ROOT.parent / "shared" / "data" / "sst5" / "minilm_embeddings.npz"
RESULTS = ROOT / "benchmarks" / "results" / "growth.md"


def load_data(names):
    """``name -> (X_train, y_train, X_test, y_test)``."""
    data = {}
    if "wine" in names:
        X, y = load_wine_quality(color="both", return_X_y=True)
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.25, stratify=y, random_state=0
        )
        data["wine"] = (X_tr, y_tr, X_te, y_te)
    if "sst5" in names:
        if not SST5.exists():
            print(f"SST-5 embeddings not found at {SST5}; skipped.")
        else:
            npz = np.load(SST5)
            data["sst5"] = (
                npz["X_train"],
                npz["y_train"],
                npz["X_test"],
                npz["y_test"],
            )
    return data


def evaluate(model, X, y):
    """Test log-loss, accuracy and MAE of the predicted class (as a number)."""
    proba = model.predict_proba(X)
    pred = model.predict(X)
    return {
        "log_loss": log_loss(y, proba, labels=model.classes_),
        "accuracy": accuracy_score(y, pred),
        "mae": mean_absolute_error(y, pred),
    }


def timed_fit(model, X, y):
    tic = time.perf_counter()
    model.fit(X, y)
    return model, time.perf_counter() - tic


def depth_sweep(data, widths, depths, params):
    rows = []
    for name, (X_tr, y_tr, X_te, y_te) in data.items():
        for width in widths:
            for depth in depths:
                clf = CRClassifier((width,) * (depth + 1), **params)
                clf, seconds = timed_fit(clf, X_tr, y_tr)
                signal = first_order_signal(clf, X_tr, y_tr)
                rows.append(
                    {
                        "data": name,
                        "width": width,
                        "depth": depth,
                        "signal_max": signal.max(),
                        "signal_mean": signal.mean(),
                        "train_loss": log_loss(
                            y_tr, clf.predict_proba(X_tr), labels=clf.classes_
                        ),
                        **evaluate(clf, X_te, y_te),
                        "epochs": clf.n_iter_,
                        "fit_s": seconds,
                    }
                )
                print("sweep", rows[-1], flush=True)
    return rows


def growth_vs_scratch(data, widths, max_blocks, params):
    path_rows, compare_rows = [], []
    for name, (X_tr, y_tr, X_te, y_te) in data.items():
        for width in widths:
            # Forced growth (tol=0, no early stop on validation) so that the
            # signal is seen at every depth; the validation-best kept model
            # is the selected one.
            grower = DepthGrowth(
                CRClassifier((width,), **params),
                max_blocks=max_blocks,
                max_steps=max_blocks + 2,
                tol=0.0,
                n_iter_no_change=max_blocks + 2,
                random_state=0,
            )
            grower, grow_s = timed_fit(grower, X_tr, y_tr)
            for entry in grower.growth_history_:
                path_rows.append(
                    {
                        "data": name,
                        "width": width,
                        "step": entry["step"],
                        "depth_before": entry["n_blocks"] - (entry["kind"] == "depth"),
                        "position": entry["position"],
                        "signal": entry["signal"],
                        "train_loss": entry["train_loss"],
                        "valid_loss": entry["valid_loss"],
                        "kept": entry["kept"],
                        "epochs": entry["n_epochs"],
                    }
                )
            sizes = tuple(grower.estimator_.hidden_layer_sizes)
            scratch, scratch_s = timed_fit(CRClassifier(sizes, **params), X_tr, y_tr)
            # What the default stopping rule (stop at the first kept step whose
            # validation loss does not improve) would have cost.
            history = grower.growth_history_
            stop_at, best = len(history), history[0]["valid_loss"]
            for i, entry in enumerate(history[1:], 1):
                if entry["kept"]:
                    if entry["valid_loss"] >= best:
                        stop_at = i + 1
                        break
                    best = entry["valid_loss"]
            early_s = sum(e["fit_time"] for e in history[:stop_at])
            for label, model, seconds in (
                ("growth (selected)", grower, grow_s),
                ("scratch, same size", scratch, scratch_s),
            ):
                compare_rows.append(
                    {
                        "data": name,
                        "width": width,
                        "model": label,
                        "blocks": len(sizes) - 1,
                        **evaluate(model, X_te, y_te),
                        "fit_s": seconds,
                        "fit_s_rule": early_s
                        if label.startswith("growth")
                        else seconds,
                    }
                )
                print("compare", compare_rows[-1], flush=True)
    return path_rows, compare_rows


def to_markdown(rows, columns):
    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (float, np.floating)):
            return f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--data", nargs="+", default=["wine", "sst5"])
    args = parser.parse_args(argv)
    params = dict(
        architecture="residual",
        dreg="local",
        batch_size=256,
        max_iter=60,
        n_iter_no_change=8,
        n_threads=1,
        random_state=0,
    )
    widths, depths, max_blocks = (16, 64), (0, 1, 2, 4, 8), 6
    data = load_data(args.data)
    if args.quick:
        params.update(max_iter=5, n_iter_no_change=2)
        widths, depths, max_blocks = (8, 16), (0, 2), 2
        data = {
            k: (v[0][:600], v[1][:600], v[2][:300], v[3][:300]) for k, v in data.items()
        }
    tic = time.perf_counter()
    sweep = depth_sweep(data, widths, depths, params)
    path, compare = growth_vs_scratch(data, widths, max_blocks, params)
    total = time.perf_counter() - tic
    report = "\n\n".join(
        [
            "# Depth growth of residual CR networks",
            f"Settings: {params}; widths {widths}; depths {depths}; growth up to "
            f"{max_blocks} blocks. One seed; wall-clock on a shared machine. "
            f"Total {total:.0f} s.",
            "## 1-2. Networks trained from scratch at each depth",
            "`signal_*`: first-order signal of one more block (max/mean over "
            "positions), training data. Losses are log-loss.",
            to_markdown(
                sweep,
                [
                    "data",
                    "width",
                    "depth",
                    "signal_max",
                    "signal_mean",
                    "train_loss",
                    "log_loss",
                    "accuracy",
                    "mae",
                    "epochs",
                    "fit_s",
                ],
            ),
            "## 1. Along the growth path",
            "`signal`: strongest signal measured at `depth_before` blocks; the "
            "block is then inserted and fine-tuned; `kept` by the substitution "
            "rule. Losses on the growth-training / held-out 20%.",
            to_markdown(
                path,
                [
                    "data",
                    "width",
                    "step",
                    "depth_before",
                    "position",
                    "signal",
                    "train_loss",
                    "valid_loss",
                    "kept",
                    "epochs",
                ],
            ),
            "## 3. Growth against the same final size from scratch",
            "`fit_s_rule`: growth time had it stopped at the first kept step "
            "without validation improvement (the default `n_iter_no_change=1`).",
            to_markdown(
                compare,
                [
                    "data",
                    "width",
                    "model",
                    "blocks",
                    "log_loss",
                    "accuracy",
                    "mae",
                    "fit_s",
                    "fit_s_rule",
                ],
            ),
        ]
    )
    if not args.quick:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report + "\n")
    print(report)


if __name__ == "__main__":
    main()
