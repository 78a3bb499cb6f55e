"""Repeated rows: how much of a model's test accuracy is recall of a training row.

Some of the suite's tables hold rows that repeat exactly, features and label
alike (Wine Quality most of all). Under the suite's random 2-fold splits a
repeated row often has a copy in the training fold, and a model that
memorises training rows (a random forest, whose fully grown trees reproduce
them) is scored on recall there. This script splits each test fold into
the rows whose raw features equal a training row's ("seen") and the others
("unseen"), and reports per table the share of seen rows and the accuracy
of CRClassifier at its defaults, RandomForest and LogisticRegression (as in
``suite.py``, the same splits, preprocessing, seeds and one thread) on each
part, pooled over the splits. It changes no table and no split: it says
where a gap to the trees is a gap in recall.

Run::

    python benchmarks/suite_duplicates.py                # the tuning half
    python benchmarks/suite_duplicates.py --split all --n-jobs 2

The Markdown report goes to ``benchmarks/results/suite_duplicates_<split>.md``.
"""

import argparse
import datetime
import shlex
import sys
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))  # the suite's modules, as suite.py imports them

import _suite_runner as _runner  # noqa: E402
import _suite_tables  # noqa: E402
import suite  # noqa: E402

MODELS = ("CR", "RandomForest", "LogisticRegression")


def seen_in_training(X, train, test):
    """Which test rows equal some training row exactly (features only).

    Parameters
    ----------
    X : DataFrame
        The raw features (before preprocessing); missing values compare equal
        to missing values.
    train, test : ndarray of int
        Row indices of the two folds.

    Returns
    -------
    seen : ndarray of bool, shape (len(test),)
    """
    import pandas as pd

    keys = pd.util.hash_pandas_object(X, index=False).to_numpy()
    return np.isin(keys[test], keys[train])


def _one_split(name, X, y, train, test, seed):
    from threadpoolctl import threadpool_limits

    seen = seen_in_training(X, train, test)
    out = {"seen": seen}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch

        torch.set_num_threads(1)
        pre = suite.make_preprocessing(X).fit(X.iloc[train])
        Z_train, Z_test = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        specs = {s.name: s for s in _runner.model_specs(suite.TASK, MODELS, [])}
        for model_name in MODELS:
            model = suite.build_model(specs[model_name], seed).fit(Z_train, y[train])
            out[model_name] = model.predict(Z_test) == y[test]
    return name, out


def evaluate(tables, repeats, n_jobs):
    """Per table: seen share and pooled accuracies on seen and unseen rows.

    Parameters
    ----------
    tables : list of Table
        Tables of the suite's registry.
    repeats : int
        Repeats of the suite's 2-fold split.
    n_jobs : int
        Parallel processes (one thread each).

    Returns
    -------
    rows : dict
        ``{table: {"rows", "seen", model: (acc_seen, acc_unseen, acc_all)}}``,
        accuracies in percent, ``nan`` where a part is empty.
    """
    tasks = []
    for table in tables:
        X, y = _suite_tables.load_table(table)
        y = np.asarray(y)
        for i, (train, test) in enumerate(suite.make_splits(y, repeats)):
            tasks.append((table.name, X, y, train, test, i))
    done = Parallel(n_jobs=n_jobs)(delayed(_one_split)(*task) for task in tasks)
    rows = {}
    for table in tables:
        parts = [out for name, out in done if name == table.name]
        seen = np.concatenate([p["seen"] for p in parts])
        row = {"rows": table.n_rows, "seen": 100 * seen.mean()}
        for model_name in MODELS:
            right = np.concatenate([p[model_name] for p in parts])
            row[model_name] = tuple(
                100 * right[mask].mean() if mask.any() else float("nan")
                for mask in (seen, ~seen, np.ones_like(seen))
            )
        rows[table.name] = row
    return rows


def report(rows, command):
    """The Markdown report of :func:`evaluate`'s rows."""
    header = ["table", "rows", "seen test rows (%)"]
    for model_name in MODELS:
        header += [f"{model_name} seen", f"{model_name} unseen"]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]

    def cell(value):
        return "-" if np.isnan(value) else f"{value:.1f}"

    for name, row in rows.items():
        cells = [name, str(row["rows"]), f"{row['seen']:.1f}"]
        for model_name in MODELS:
            cells += [cell(row[model_name][0]), cell(row[model_name][1])]
        lines.append("| " + " | ".join(cells) + " |")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            "# Repeated rows in the suite's test folds",
            "",
            f"Command: `{command}`",
            "",
            f"Date: {date}, commit {_runner.git_commit()}.",
            "",
            "A test row is *seen* when its raw features equal a row of the "
            "training fold. Accuracy (%) of each model on the seen and the "
            "unseen test rows, pooled over the splits ('-' where a part is "
            "empty); the models as in `suite.py` (CR at its defaults).",
            "",
            *lines,
            "",
        ]
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="tune", choices=["tune", "confirm", "all"])
    parser.add_argument("--tables", default=None, help="comma-separated names")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    names = None if args.tables is None else args.tables.split(",")
    tables = [
        t
        for t in _suite_tables.get_tables(names, args.split)
        if not _suite_tables.why_unavailable(t, None)
    ]
    rows = evaluate(tables, args.repeats, args.n_jobs)
    argv_text = sys.argv[1:] if argv is None else argv
    command = shlex.join(["python", "benchmarks/suite_duplicates.py", *argv_text])
    output = args.output or RESULTS / f"suite_duplicates_{args.split}.md"
    output.write_text(report(rows, command))
    print(output.read_text())


if __name__ == "__main__":
    main()
