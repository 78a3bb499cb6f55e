"""The two benchmark suites: CR against the strongest defaults, by size band.

``suite``: CRClassifier at its defaults (``CR``) against the baselines of
``cr_sklearn.study.default_baselines()`` (LogisticRegression, SVC,
RandomForest, XGBoost, MLP), HistGradientBoostingClassifier, LightGBM and
CatBoost at their defaults and pytabkit's RealMLP-TD, each seeded with the
split's index and one thread (LightGBM ``n_jobs=1``, CatBoost
``thread_count=1``); a model whose package is missing is named and skipped.
SVC and RealMLP-TD train on at most ``suite_tables.SVC_MAX_ROWS`` and
``suite_tables.REALMLP_MAX_ROWS`` rows of a training fold.
Scores: accuracy, log-loss, fit time and, for CR models, tau
(``gradient_tail_ratio`` of ``gradient_norms`` on the test fold, the one rule).

``ordinal``: CROrdinalRegressor (``CR``) against LogisticRegression,
RandomForest and mord's LogisticAT, by MAE on the ranks and accuracy.

Both: the tables of ``suite_tables.py`` / ``ordinal_tables.py`` (``--list``),
the shared preprocessing fitted on each training fold, 5x2 repeated
stratified CV (fewer ``--repeats`` give the first splits), baselines cached
in ``benchmarks/.cache``; every figure overall and per size band (under
2,000 rows, 2,000 to 20,000, above 20,000). ``--candidate NAME=PARAMS`` adds
a CR variant (``encode_bins`` puts a PiecewiseLinearEncoder in front); the
report then ends with its paired differences per band and the adoption rule
of issue 39. Tune on the tuning half; run the confirmation half once per
adopted candidate::

    python benchmarks/run.py suite --list --markdown
    python benchmarks/run.py suite --split tune --repeats 1 --tables pima,mid
    python benchmarks/run.py suite --split tune --models CR,LogisticRegression \\
        --candidate 'wide={"hidden_layer_sizes": [256, 256]}'
    python benchmarks/run.py ordinal --split tune
"""

import numpy as np
import ordinal_tables
import suite_tables
from harness import (
    Config,
    Metric,
    Task,
    add_suite_arguments,
    build_cr,
    fmt,
    markdown_table,
    suite_command,
    suite_output,
)

BASELINES = ("LogisticRegression", "SVC", "RandomForest", "XGBoost", "MLP")
GBDT = ("HistGradientBoosting", "LightGBM", "CatBoost")
MODELS = ("CR", *BASELINES, *GBDT, "RealMLP-TD")
KINDS = {"CR": "cr", "XGBoost": "xgboost", "HistGradientBoosting": "hgb"}
KINDS |= {"LightGBM": "lightgbm", "CatBoost": "catboost", "RealMLP-TD": "realmlp"}


def build_classifier(spec, seed):
    """An unfitted classifier for ``spec``, seeded with ``seed``, one thread.

    Parameters
    ----------
    spec : harness.ModelSpec
    seed : int

    Returns
    -------
    estimator : estimator
    """
    if spec.is_cr:
        from cr_sklearn import CRClassifier

        return build_cr(CRClassifier, dict(spec.params), seed)
    if spec.kind == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(random_state=seed)
    if spec.kind == "lightgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(n_jobs=1, random_state=seed, verbose=-1)
    if spec.kind == "catboost":
        from catboost import CatBoostClassifier

        # No training files: parallel fits would write to the same folder.
        return CatBoostClassifier(
            thread_count=1, random_seed=seed, verbose=0, allow_writing_files=False
        )
    if spec.kind == "realmlp":
        from pytabkit import RealMLP_TD_Classifier

        return RealMLP_TD_Classifier(
            device="cpu", random_state=seed, n_threads=1, verbosity=0
        )
    from cr_sklearn.study import default_baselines

    return default_baselines(random_state=seed, n_jobs=1)[spec.name]


def score_classifier(spec, model, Z_test, y_test):
    """Accuracy, log-loss (NaN without ``predict_proba``) and tau (CR only)."""
    from sklearn.metrics import accuracy_score, log_loss

    from cr_sklearn import gradient_norms, gradient_tail_ratio

    pred = np.ravel(model.predict(Z_test))  # CatBoost answers a column
    loss = tau = np.nan
    if hasattr(model, "predict_proba"):
        loss = log_loss(y_test, model.predict_proba(Z_test), labels=model.classes_)
    if spec.is_cr:
        # A rule set's fitted estimator, or the model (a pipeline's steps too).
        network = getattr(model, "estimator_", model)
        tau = gradient_tail_ratio(gradient_norms(network, Z_test))
    return {
        "accuracy": float(accuracy_score(y_test, pred)),
        "log_loss": float(loss),
        "tau": float(tau),
    }


def _tau_section(means, models, cr_models):
    if not cr_models:
        return []
    tau = means["tau"].unstack("model")
    rows = [[t, *(fmt(tau.loc[t, m], 3) for m in cr_models)] for t in tau.index]
    lines = ["", "Median tau over the splits (p99 / mean of the test fold's norms"]
    lines += ["by `gradient_norms`, the one rule):", ""]
    return lines + markdown_table(["table", *cr_models], rows)


def build_ordinal(spec, seed):
    """An unfitted ordinal model for ``spec`` (LogisticAT has no seed)."""
    if spec.is_cr:
        from cr_sklearn import CROrdinalRegressor

        return build_cr(CROrdinalRegressor, dict(spec.params), seed)
    if spec.kind == "mord":
        import mord

        return mord.LogisticAT()
    from cr_sklearn.study import default_baselines

    return default_baselines(random_state=seed, n_jobs=1)[spec.name]


def score_ordinal(spec, model, Z_test, y_test):
    """MAE on the ranks and accuracy."""
    pred = np.asarray(model.predict(Z_test)).astype(int)
    return {
        "mae": float(np.mean(np.abs(pred - y_test))),
        "accuracy": float(np.mean(pred == y_test)),
    }


SUITE = Task(
    name="suite",
    config="suite",
    title="Benchmark suite",
    registry=suite_tables,
    estimator="CRClassifier",
    models=MODELS,
    kinds=KINDS,
    build_model=build_classifier,
    score=score_classifier,
    metrics=(
        Metric("accuracy", "accuracy", scale=100),
        Metric("log_loss", "log-loss", higher_is_better=False, digits=3),
    ),
    margin=0.3,
    optional={
        "xgboost": "xgboost",
        "lightgbm": "lightgbm",
        "catboost": "catboost",
        "realmlp": "pytabkit",
    },
    versions={
        "scikit-learn": ("scikit-learn",),
        "xgboost": ("xgboost", "xgboost-cpu"),
        "lightgbm": ("lightgbm",),
        "catboost": ("catboost",),
        "pytabkit": ("pytabkit",),
    },
    diagnostics=("tau",),
    fractions=True,
    max_train_rows={
        "SVC": suite_tables.SVC_MAX_ROWS,
        "RealMLP-TD": suite_tables.REALMLP_MAX_ROWS,
    },
    per_table=_tau_section,
    list_columns=lambda t: {"nonlinear": {None: "-"}.get(t.nonlinear, t.nonlinear)},
)

ORDINAL = Task(
    name="ordinal_suite",
    config="ordinal",
    title="Ordinal benchmark suite",
    registry=ordinal_tables,
    estimator="CROrdinalRegressor",
    models=("CR", "LogisticRegression", "RandomForest", "LogisticAT"),
    kinds={"CR": "cr", "LogisticAT": "mord"},
    build_model=build_ordinal,
    score=score_ordinal,
    metrics=(
        Metric("mae", "MAE", higher_is_better=False, digits=3),
        Metric("accuracy", "accuracy", scale=100),
    ),
    margin=0.005,
    optional={"mord": "mord"},
    versions={"scikit-learn": ("scikit-learn",), "mord": ("mord",)},
    scoring="v1: MAE and accuracy on ranks 0..K-1",
    list_columns=lambda t: {"ordered levels": " < ".join(t.levels)},
)


def _config(task, help_text):
    return Config(
        task.config,
        help_text,
        lambda parser: add_suite_arguments(parser, task),
        lambda args: suite_command(task, args),
        lambda args: suite_output(task, args),
    )


CONFIGS = [
    _config(SUITE, "the classification suite, by size band"),
    _config(ORDINAL, "the ordinal suite, by size band"),
]
