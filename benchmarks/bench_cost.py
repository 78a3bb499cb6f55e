"""What the defaults cost: fit times of the current and the previous defaults.

The defaults issue bounds the cost of a new recipe against the defaults as
of its filing, instantiated explicitly (``PREVIOUS_DEFAULTS``): the median
fit over the benchmark suite at most 3x, a Pima fit at most 3x. Both are
measured side by side in one process with one torch thread and one BLAS
thread, the two recipes alternating (so that drifts of the machine hit both):

- **Pima**: the full bundled table, ``--repeats`` fits of each recipe;
  the median of each and their ratio.
- **Suite**: on every available table of the suite (``--split``), the
  training fold of the suite's first split, preprocessed as ``suite.py``
  does, one fit of each recipe per repeat; per table the median of each,
  then the median over the tables of each recipe and its ratio (the
  target), with the per-table ratios.

Run it with nothing else heavy running::

    python benchmarks/bench_cost.py              # suite (both halves) and Pima
    python benchmarks/bench_cost.py --split tune --repeats 1

The Markdown report goes to ``benchmarks/results/cost.md``.
"""

import argparse
import datetime
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))  # the suite's modules, as suite.py imports them

#: The CRClassifier defaults as of the defaults issue's filing, every
#: parameter that shapes a fit written out (the cost baseline).
PREVIOUS_DEFAULTS = {
    "hidden_layer_sizes": (64, 64),
    "architecture": "mlp",
    "activation": "poly",
    "degree": 3,
    "dreg": "stream",
    "dreg_lambda": 10**-2,
    "n_projections": "auto",
    "stream_rows": 64,
    "max_iter": 100,
    "batch_size": "auto",
    "learning_rate_init": 1e-3,
    "early_stopping": "auto",
    "validation_fraction": 0.1,
    "n_iter_no_change": 10,
    "tol": 1e-4,
    "class_weight": None,
    "dropout": 0.1,
    "weight_decay": 0.0,
    "spectral_norm": False,
    "igpen_lambda": 0.0,
    "standardize": True,
    "encoding_bins": None,
    # Parameters added since, at the value that reproduces the previous fit.
    "n_members": 1,
    "oob_score": False,
    "beta_1": 0.9,
    "beta_2": 0.999,
}
TARGET = 3.0


def recipes():
    """Name -> function of a seed giving an unfitted CRClassifier, one thread."""
    from cr_sklearn import CRClassifier

    return {
        "previous": lambda seed: CRClassifier(
            **PREVIOUS_DEFAULTS, random_state=seed, n_threads=1
        ),
        "current": lambda seed: CRClassifier(random_state=seed, n_threads=1),
    }


def time_fits(X, y, repeats):
    """``{recipe: [seconds per fit]}``, the recipes alternating, one thread."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    makers = recipes()
    times = {name: [] for name in makers}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(repeats):
            # Alternate which recipe goes first: neither always pays a warm-up.
            order = list(makers) if r % 2 == 0 else list(makers)[::-1]
            for name in order:
                model = makers[name](r)
                start = time.perf_counter()
                model.fit(X, y)
                times[name].append(time.perf_counter() - start)
    return times


def suite_tables(split):
    """``[(name, X_train, y_train)]``: each table's first training fold."""
    import _suite_tables as registry
    import suite

    out = []
    for table in registry.get_tables(None, split):
        if registry.why_unavailable(table, None):
            print(f"{table.name}: unavailable, skipped", file=sys.stderr)
            continue
        X, y = registry.load_table(table)
        y = np.asarray(y)
        train, _ = suite.make_splits(y, 1)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pre = suite.make_preprocessing(X).fit(X.iloc[train])
            out.append((table.name, pre.transform(X.iloc[train]), y[train]))
    return out


def summarise(per_table):
    """Medians per table and over the tables; the ratio current / previous.

    Parameters
    ----------
    per_table : dict
        Table name to ``{recipe: [seconds]}``.

    Returns
    -------
    rows : list of tuple
        ``(table, previous median, current median, ratio)`` per table.
    medians : dict
        Recipe to the median over the tables of its per-table medians.
    ratio : float
        ``medians["current"] / medians["previous"]``.
    """
    rows = []
    for name, times in per_table.items():
        before, after = np.median(times["previous"]), np.median(times["current"])
        rows.append((name, before, after, after / before))
    medians = {
        "previous": float(np.median([r[1] for r in rows])),
        "current": float(np.median([r[2] for r in rows])),
    }
    return rows, medians, medians["current"] / medians["previous"]


def report(argv, pima, suite_rows, suite_medians, suite_ratio):
    """The Markdown report of both measurements."""
    from _suite_runner import git_commit

    import cr_sklearn

    commit = git_commit()
    pima_before = np.median(pima["previous"])
    pima_after = np.median(pima["current"])
    pima_ratio = pima_after / pima_before
    lines = [
        "# What the defaults cost",
        "",
        f"Command: `python benchmarks/{shlex.join(['bench_cost.py', *argv])}`",
        "",
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"cr_sklearn {cr_sklearn.__version__}, commit {commit}. One process, "
        "one torch thread and one BLAS thread, the two recipes alternating; "
        "wall-clock seconds. `previous` is `CRClassifier(**PREVIOUS_DEFAULTS)`"
        " (the defaults as of the defaults issue's filing, in the script), "
        "`current` is `CRClassifier()`.",
        "",
        "## Targets",
        "",
        "| measure | previous (s) | current (s) | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| Pima fit (median of {len(pima['current'])}) | {pima_before:.3f} | "
        f"{pima_after:.3f} | {pima_ratio:.2f}x | <= {TARGET:g}x | "
        f"{'yes' if pima_ratio <= TARGET else 'no'} |",
        f"| median fit over {len(suite_rows)} suite tables | "
        f"{suite_medians['previous']:.3f} | {suite_medians['current']:.3f} | "
        f"{suite_ratio:.2f}x | <= {TARGET:g}x | "
        f"{'yes' if suite_ratio <= TARGET else 'no'} |",
        "",
        "## Per table",
        "",
        "Each table's first training fold of the suite's splits, median fit "
        "time of each recipe.",
        "",
        "| table | previous (s) | current (s) | ratio |",
        "| --- | --- | --- | --- |",
    ]
    for name, before, after, ratio in sorted(suite_rows, key=lambda r: r[0]):
        lines.append(f"| {name} | {before:.3f} | {after:.3f} | {ratio:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    """Run the measurements and write the report."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["tune", "confirm", "all"], default="all")
    parser.add_argument("--repeats", type=int, default=3, help="fits per recipe")
    parser.add_argument("--pima-repeats", type=int, default=7)
    parser.add_argument("--output", type=Path, default=RESULTS / "cost.md")
    args = parser.parse_args(argv)
    from cr_sklearn.datasets import load_pima

    X, y = load_pima(return_X_y=True)
    pima = time_fits(X, y, args.pima_repeats)
    per_table = {}
    for name, X_train, y_train in suite_tables(args.split):
        per_table[name] = time_fits(X_train, y_train, args.repeats)
        print(
            name, {k: round(float(np.median(v)), 3) for k, v in per_table[name].items()}
        )
    rows, medians, ratio = summarise(per_table)
    text = report(argv, pima, rows, medians, ratio)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
