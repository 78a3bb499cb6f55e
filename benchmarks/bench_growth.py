"""Depth growth of residual CR networks: the papers' claims on our data.

On Wine Quality (red and white, 7 quality classes) and SST-5 (frozen MiniLM
embeddings, 5 classes), residual CR classifiers at two widths, one seed, one
split per data set, the local DREG penalty, one thread:

1. the first-order signal against depth, along a growth path and on
   networks of each depth trained from scratch;
2. test log-loss against depth, to look for a rebound when depth grows
   without width;
3. DepthGrowth (validation-selected) against the same final size trained
   from scratch: log-loss, accuracy, MAE of the class index and fit time.

Run::

    python benchmarks/run.py growth
    python benchmarks/run.py growth --quick --output growth_smoke.md
"""

import numpy as np
from harness import (
    Config,
    header,
    load_sst5_embeddings,
    markdown_table,
    one_thread,
    timed,
)

PARAMS = {"architecture": "residual", "dreg": "local", "batch_size": 256}
PARAMS |= {"max_iter": 60, "n_iter_no_change": 8, "n_threads": 1, "random_state": 0}
#: The columns of the report's three tables, in order.
SWEEP_COLUMNS = ("data", "width", "depth", "signal_max", "signal_mean", "train_loss")
SWEEP_COLUMNS += ("log_loss", "accuracy", "mae", "epochs", "fit_s")
PATH_COLUMNS = ("data", "width", "step", "depth_before", "position", "signal")
PATH_COLUMNS += ("train_loss", "valid_loss", "kept", "epochs")
COMPARE_COLUMNS = ("data", "width", "model", "blocks", "log_loss", "accuracy", "mae")
COMPARE_COLUMNS += ("fit_s", "fit_s_rule")


def load_data(names, data_dir=None):
    """``name -> (X_train, y_train, X_test, y_test)`` of ``"wine"`` and ``"sst5"``."""
    from sklearn.model_selection import train_test_split

    from cr_sklearn.datasets import load_wine_quality

    data = {}
    if "wine" in names:
        X, y = load_wine_quality(color="both", return_X_y=True)
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.25, stratify=y, random_state=0
        )
        data["wine"] = (X_tr, y_tr, X_te, y_te)
    if "sst5" in names:
        try:
            data["sst5"] = load_sst5_embeddings(data_dir)
        except FileNotFoundError as exc:
            print(exc)
    return data


def evaluate(model, X, y):
    """Test log-loss, accuracy and MAE of the predicted class index."""
    from sklearn.metrics import log_loss

    pred = model.predict(X)
    return {
        "log_loss": log_loss(y, model.predict_proba(X), labels=model.classes_),
        "accuracy": float(np.mean(pred == y)),
        "mae": float(np.mean(np.abs(pred - y))),
    }


def depth_sweep(data, widths, depths, params):
    """Networks of each depth from scratch: signal, losses, scores."""
    from sklearn.metrics import log_loss

    from cr_sklearn import CRClassifier
    from cr_sklearn.growth import first_order_signal

    rows = []
    for name, (X_tr, y_tr, X_te, y_te) in data.items():
        for width in widths:
            for depth in depths:
                clf = CRClassifier((width,) * (depth + 1), **params)
                seconds = timed(clf.fit, X_tr, y_tr)
                signal = first_order_signal(clf, X_tr, y_tr)
                train = log_loss(y_tr, clf.predict_proba(X_tr), labels=clf.classes_)
                rows.append(
                    {
                        "data": name,
                        "width": width,
                        "depth": depth,
                        "signal_max": signal.max(),
                        "signal_mean": signal.mean(),
                        "train_loss": train,
                        **evaluate(clf, X_te, y_te),
                        "epochs": clf.n_iter_,
                        "fit_s": seconds,
                    }
                )
    return rows


def growth_vs_scratch(data, widths, max_blocks, params):
    """The growth path's steps, and growth against the same size from scratch."""
    from cr_sklearn import CRClassifier, DepthGrowth

    path, compare = [], []
    for name, (X_tr, y_tr, X_te, y_te) in data.items():
        for width in widths:
            # Forced growth (tol=0) so that the signal is seen at every depth.
            grower = DepthGrowth(
                CRClassifier((width,), **params),
                max_blocks=max_blocks,
                max_steps=max_blocks + 2,
                tol=0.0,
                n_iter_no_change=max_blocks + 2,
                random_state=0,
            )
            grow_s = timed(grower.fit, X_tr, y_tr)
            history = grower.growth_history_
            for e in history:
                path.append(
                    {
                        "data": name,
                        "width": width,
                        "step": e["step"],
                        "depth_before": e["n_blocks"] - (e["kind"] == "depth"),
                        "position": e["position"],
                        "signal": e["signal"],
                        "train_loss": e["train_loss"],
                        "valid_loss": e["valid_loss"],
                        "kept": e["kept"],
                        "epochs": e["n_epochs"],
                    }
                )
            sizes = tuple(grower.estimator_.hidden_layer_sizes)
            scratch = CRClassifier(sizes, **params)
            scratch_s = timed(scratch.fit, X_tr, y_tr)
            # What the default rule (stop at the first kept step whose
            # validation loss does not improve) would have cost.
            stop_at, best = len(history), history[0]["valid_loss"]
            for i, e in enumerate(history[1:], 1):
                if e["kept"] and e["valid_loss"] >= best:
                    stop_at = i + 1
                    break
                best = e["valid_loss"] if e["kept"] else best
            rule_s = sum(e["fit_time"] for e in history[:stop_at])
            for label, model, seconds, rule in (
                ("growth (selected)", grower, grow_s, rule_s),
                ("scratch, same size", scratch, scratch_s, scratch_s),
            ):
                compare.append(
                    {
                        "data": name,
                        "width": width,
                        "model": label,
                        "blocks": len(sizes) - 1,
                        **evaluate(model, X_te, y_te),
                        "fit_s": seconds,
                        "fit_s_rule": rule,
                    }
                )
    return path, compare


def _table(rows, columns):
    def cell(v):
        if isinstance(v, bool | np.bool_):
            return "yes" if v else "no"
        return f"{v:.4g}" if isinstance(v, float | np.floating) else str(v)

    return markdown_table(columns, [[cell(r[c]) for c in columns] for r in rows])


def run(args):
    """The ``growth`` report."""
    params, widths, depths, max_blocks = dict(PARAMS), (16, 64), (0, 1, 2, 4, 8), 6
    data = load_data(args.data, args.data_dir)
    if args.quick:
        params.update(max_iter=5, n_iter_no_change=2)
        widths, depths, max_blocks = (8, 16), (0, 2), 2
        data = {
            k: (v[0][:600], v[1][:600], v[2][:300], v[3][:300]) for k, v in data.items()
        }
    with one_thread():
        sweep = depth_sweep(data, widths, depths, params)
        path, compare = growth_vs_scratch(data, widths, max_blocks, params)
    note = (
        f"Settings: {params}; widths {widths}; depths {depths}; growth up to "
        f"{max_blocks} blocks; one seed; wall seconds on a shared machine."
    )
    lines = header("Depth growth of residual CR networks", args.argv, notes=[note])
    lines += [
        "",
        "## 1-2. Networks trained from scratch at each depth",
        "",
        "`signal_*`: the first-order signal of one more block (max and mean over "
        "positions) on the training data; losses are log-loss.",
        "",
    ]
    lines += _table(sweep, SWEEP_COLUMNS)
    lines += [
        "",
        "## 1. Along the growth path",
        "",
        "`signal`: the strongest signal at "
        "`depth_before` blocks; the block is then inserted and fine-tuned; `kept` "
        "by the substitution rule; losses on the growth-training / held-out 20%.",
        "",
    ]
    lines += _table(path, PATH_COLUMNS)
    lines += [
        "",
        "## 3. Growth against the same final size from scratch",
        "",
        "`fit_s_rule`: growth's time had it stopped at the first kept step "
        "without validation improvement (the default `n_iter_no_change=1`).",
        "",
    ]
    lines += _table(compare, COMPARE_COLUMNS)
    return "\n".join(lines) + "\n"


def add_arguments(parser):
    """The options of ``growth``."""
    parser.add_argument("--quick", action="store_true", help="a tiny smoke run")
    parser.add_argument("--data", nargs="+", default=["wine", "sst5"])
    parser.add_argument("--data-dir", default=None)


CONFIGS = [Config("growth", "depth growth of residual CR networks", add_arguments, run)]
