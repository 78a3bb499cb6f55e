"""Cross-fitted members: each member's own best epoch against one pooled epoch.

A :class:`~cr_sklearn.CRClassifier` with ``n_members=k`` chooses each
member's stopping epoch on the member's own fold (``"per-member"``, the
default) or one epoch for all on the pooled out-of-fold loss (``"pooled"``,
the class attribute ``_member_epoch_choice``). At 160 rows and ``k = 8`` a
member has 20 validation rows, so its own choice may be noise. Both are fitted
on the suite's 5x2 splits (repeated stratified 2-fold, the suite's shared
preprocessing), with the single default network for reference; the report
gives the mean test accuracy and log-loss per table, each mode's paired
difference to per-member with its Nadeau-Bengio corrected standard error,
the mean epochs trained (``n_iter_``: per-member stops once every member ran
out of patience) and the mean fit time (wall clock).

Run::

    PYTHONPATH=. python benchmarks/bench_member_stopping.py \\
        --tables pima crabs birthwt --members 8 [--max-iter auto] \\
        [--repeats 5] [--n-jobs 2] [--out PATH]

The report is printed and written to ``benchmarks/results/member_stopping.md``.
"""

import argparse
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.metrics import accuracy_score, log_loss

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _suite_runner import git_commit, make_preprocessing, make_splits  # noqa: E402
from _suite_tables import get_tables, load_table  # noqa: E402

from cr_sklearn import CRClassifier  # noqa: E402

RESULTS = HERE / "results"
MODES = ("per-member", "pooled", "single")
SCRIPT = "benchmarks/bench_member_stopping.py"


def _model(mode, members, max_iter, seed):
    if mode == "single":
        return CRClassifier(random_state=seed, n_threads=1)

    class Chosen(CRClassifier):
        _member_epoch_choice = mode

    return Chosen(n_members=members, max_iter=max_iter, random_state=seed, n_threads=1)


def _fit(X, y, train, test, mode, members, max_iter, seed):
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pre = make_preprocessing(X).fit(X.iloc[train])
        Z_train, Z_test = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        model = _model(mode, members, max_iter, seed)
        start = time.perf_counter()
        model.fit(Z_train, y[train])
        seconds = time.perf_counter() - start
        proba = model.predict_proba(Z_test)
    return {
        "accuracy": accuracy_score(y[test], model.classes_[proba.argmax(1)]),
        "log_loss": log_loss(y[test], proba, labels=model.classes_),
        "fit_time": seconds,
        "epochs": model.n_iter_,
        "n_train": len(train),
        "n_test": len(test),
    }


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["pima", "crabs", "birthwt"])
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument(
        "--max-iter",
        type=lambda v: v if v == "auto" else int(v),
        default=100,
        help="max_iter of the member models ('auto': a budget of optimizer steps)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--out", default=str(RESULTS / "member_stopping.md"))
    args = parser.parse_args(argv)

    lines = [
        "## Cross-fitted members: per-member against pooled stopping epochs",
        "",
        f"Command: `{shlex.join(['python', SCRIPT, *argv])}`",
        f"Commit: `{git_commit()}`",
        "",
        f"CRClassifier defaults with `n_members={args.members}` and "
        f"`max_iter={args.max_iter!r}`; `per-member`: each "
        "member keeps its best epoch on its own fold; `pooled`: one epoch for all, "
        "on the pooled out-of-fold loss; `single`: the default single network. "
        f"{args.repeats}x2 repeated stratified splits (seed 0), the suite's "
        "preprocessing, model seed 0, one thread per fit. Differences are "
        "paired by split, against per-member, with the Nadeau-Bengio corrected "
        "standard error.",
        "",
        "| table | rows | mode | accuracy | log-loss | d accuracy (se) "
        "| d log-loss (se) | epochs | fit s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for table in get_tables(args.tables):
        X, y = load_table(table)
        y = np.asarray(y)
        splits = make_splits(y, args.repeats)
        jobs = [
            (mode, i, train, test)
            for mode in MODES
            for i, (train, test) in enumerate(splits)
        ]
        results = Parallel(n_jobs=args.n_jobs)(
            delayed(_fit)(X, y, train, test, mode, args.members, args.max_iter, 0)
            for mode, _, train, test in jobs
        )
        by_mode = {mode: [] for mode in MODES}
        for (mode, _, _, _), result in zip(jobs, results, strict=True):
            by_mode[mode].append(result)
        base = by_mode["per-member"]
        ratio = base[0]["n_test"] / base[0]["n_train"]
        for mode in MODES:
            rows = by_mode[mode]
            cells = []
            for metric in ("accuracy", "log_loss"):
                diff = np.array([r[metric] for r in rows]) - np.array(
                    [b[metric] for b in base]
                )
                if mode == "per-member":
                    cells.append("")
                    continue
                # Nadeau-Bengio: the variance of the mean inflated for overlap.
                se = np.sqrt((1 / len(diff) + ratio) * diff.var(ddof=1))
                scale = 100 if metric == "accuracy" else 1
                cells.append(f"{scale * diff.mean():+.3f} ({scale * se:.3f})")
            acc = 100 * np.mean([r["accuracy"] for r in rows])
            loss = np.mean([r["log_loss"] for r in rows])
            seconds = np.mean([r["fit_time"] for r in rows])
            epochs = np.mean([r["epochs"] for r in rows])
            lines.append(
                f"| {table.name} | {len(y)} | {mode} | {acc:.2f} | {loss:.4f} "
                f"| {cells[0]} | {cells[1]} | {epochs:.0f} | {seconds:.2f} |"
            )
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
