"""The two benchmark suites: CR against the strongest defaults, by size band.

``suite``: CRClassifier at its defaults (``CR``) against the baselines of
``cr_sklearn.study.default_baselines()`` (LogisticRegression, SVC,
RandomForest, XGBoost, MLP), HistGradientBoostingClassifier, LightGBM and
CatBoost at their defaults and pytabkit's RealMLP-TD, each seeded with the
split's index and one thread (LightGBM ``n_jobs=1``, CatBoost
``thread_count=1``); a model whose package is missing is named and skipped.
SVC and RealMLP-TD train on at most ``suite_tables.SVC_MAX_ROWS`` and
``suite_tables.REALMLP_MAX_ROWS`` rows of a training fold.
Scores: accuracy, log-loss, fit time and tau for the CR models,
LogisticRegression, SVC, MLP and RealMLP-TD (the trees have none: '-').

``ordinal``: CROrdinalRegressor (``CR``) against LogisticRegression,
RandomForest and mord's LogisticAT, by MAE on the ranks and accuracy; tau
for the CR models.

Tau, the one rule: ``gradient_tail_ratio(gradient_norms(model, Z))`` on the
same rows ``Z`` of each split's test fold for every model (at most 1,000,
drawn with the split's index: ``harness.tau_rows``), after the timed fit and
outside the fit time. A baseline's tau (its per-row norms) is cached apart
from its scores, under ``harness.TAU_RULE``: cached scores stay valid, and a
baseline with cached scores but no cached tau is refitted for its tau alone.

Both: the tables of ``suite_tables.py`` / ``ordinal_tables.py`` (``--list``),
the shared preprocessing fitted on each training fold, 5x2 repeated
stratified CV (fewer ``--repeats`` give the first splits), baselines cached
in ``benchmarks/.cache``; every figure overall and per size band (under
2,000 rows, 2,000 to 20,000, above 20,000). ``--candidate NAME=PARAMS`` adds
a CR variant (``encode_bins`` puts a PiecewiseLinearEncoder in front); the
report then ends with its paired differences per band and the adoption rule
of issue 39. Tune on the tuning half; run the confirmation half once per
adopted candidate.

The report's sections: the summary overall and per band; per table the mean
of each metric and the median fit time; "Tau per table": each model's tau
pooled over the splits (each split's norms over their own mean, then p99 /
mean), '-' for a model without tau, and per model the median pooled tau over
the tables, the tables where it is below both MLP's and SVC's (of those where
the three have tau) and the median of tau / min(tau_MLP, tau_SVC); each CR
model minus every other model per table; with candidates, their paired
differences by band, the adoption rule of issue 39 and, in the classification
suite, that of issue 46 (``harness.rule46``: (a) accuracy and log-loss
intervals overall and per band, (b) the lead over LogisticRegression on the
tables tagged nonlinear, (c) tau against MLP's and SVC's, (d) the fit time
under 2,000 rows; PASS/FAIL per criterion and a verdict). ``--records``
writes every fit's scores, tau of each split included (not its norms).
Commands::

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
    rule46_section,
    suite_command,
    suite_output,
    tau_section,
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
    """Accuracy and log-loss (NaN without ``predict_proba``).

    Tau is the harness's (``harness.tau_scores``), on the split's tau rows.
    """
    from sklearn.metrics import accuracy_score, log_loss

    pred = np.ravel(model.predict(Z_test))  # CatBoost answers a column
    loss = np.nan
    if hasattr(model, "predict_proba"):
        loss = log_loss(y_test, model.predict_proba(Z_test), labels=model.classes_)
    return {"accuracy": float(accuracy_score(y_test, pred)), "log_loss": float(loss)}


#: The suite's tables tagged nonlinear (rule 46 (b)).
NONLINEAR = frozenset(t.name for t in suite_tables.TABLES if t.nonlinear)


def _rule46(task, results, candidates):
    return rule46_section(task, results, candidates, nonlinear=NONLINEAR)


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
    tau_baselines=("LogisticRegression", "SVC", "MLP", "RealMLP-TD"),
    fractions=True,
    max_train_rows={
        "SVC": suite_tables.SVC_MAX_ROWS,
        "RealMLP-TD": suite_tables.REALMLP_MAX_ROWS,
    },
    per_table=tau_section,
    candidate_rules=_rule46,
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
    diagnostics=("tau",),
    per_table=tau_section,
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
