"""Which predictions to trust? Risk-coverage of CR's signals, per suite table.

For every table of the benchmark suite (the registry ``_suite_tables.py``;
without it, two of scikit-learn's bundled tables) and every outer split
(``RepeatedStratifiedKFold(n_splits=--folds, n_repeats=--repeats,
random_state=0)``, the suite's 5x2 protocol by default at ``--repeats 5``),
with the suite's preprocessing fitted on the training fold:

- CR: ``SelectiveClassifier(CRClassifier(), cv=--inner-cv)`` is fitted on
  the training fold. Its refitted ``estimator_`` is the CR network at its
  defaults; on the test fold we report the AURC of each of its signals
  (``confidence_signals``: max probability, margin for more than two
  classes, input sensitivity, input distance, MC dropout) **relative to the
  same model's max-probability AURC** (raw AURC mostly restates accuracy),
  the AURC of the best single signal *chosen on the out-of-fold data of the
  training fold* (never on the test fold), and that of
  ``SelectiveClassifier.confidence``: the learned combination, unless a
  single signal had the lower out-of-fold AURC on the training fold
  (``confidence_source_``).
- Baselines (``cr_sklearn.study.default_baselines``, SVC with
  ``probability=True``): E-AURC of their probability signal, beside CR's,
  and the AURC of their finite-difference gradient norm relative to their
  probability's.
- Flip rates: the share of test predictions that change under Gaussian
  noise of ``sigma`` training standard deviations on the numeric columns
  (``--draws`` draws, the same noise for every model), against each model's
  tau (``gradient_tail_ratio`` of the test fold's gradient norms), with the
  Spearman correlation across the models of a table: the papers' claim that
  a lower tau means fewer flips makes it positive.
- The guaranteed-risk threshold: a target of ``--target-ratio`` times the
  out-of-fold error of the training fold, at ``--delta``
  (``SelectiveClassifier.threshold_for_risk``); we report the test fold's
  coverage and selective risk and how often it exceeds the target.

Tables named by ``--ordinal`` (SST-5 by default) also run as ordinal tasks:
``CROrdinalRegressor`` and the absolute error in ranks, the probability
signal being the mass within one class of the prediction.

Signals and flips are evaluated on at most ``--max-test-rows`` rows of each
test fold (a stratified subsample); the baselines' finite-difference
gradient norms (``2 * n_features`` predictions per row) and their tau on a
random ``--max-gradient-rows`` of those. Tasks (table x split) run in parallel
processes with one thread each (``--n-jobs``).

Run::

    python benchmarks/bench_selective.py --split tune --repeats 5
    python benchmarks/bench_selective.py --tables breast_cancer --repeats 1 \\
        --quick --output selective_smoke.md    # a smoke test

The Markdown report goes to ``benchmarks/results/selective.md``.
"""

import argparse
import datetime
import importlib.util
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy import stats
from sklearn.model_selection import RepeatedStratifiedKFold, train_test_split

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "selective.md"
CV_SEED = 0
BASELINES = ("LogisticRegression", "SVC", "RandomForest", "XGBoost", "MLP")
CR_SIGNALS = (
    "max_proba",
    "margin",
    "input_sensitivity",
    "input_distance",
    "mc_dropout",
)
QUICK_CR = dict(hidden_layer_sizes=(8,), max_iter=5)


def cr_signals(n_members=1):
    """CR's signals in the report's order; members add their disagreement."""
    return CR_SIGNALS + (("member_disagreement",) if n_members > 1 else ())


# -- tables ---------------------------------------------------------------------
def _registry():
    """The suite's table registry, imported by path; None when absent."""
    path = HERE / "_suite_tables.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("_suite_tables", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_suite_tables", module)
    spec.loader.exec_module(module)
    return module


def _bundled(loader_name):
    def load():
        from sklearn import datasets

        bunch = getattr(datasets, loader_name)(as_frame=True)
        return bunch.data.astype(float), bunch.target.to_numpy()

    return load


FALLBACK = {
    "breast_cancer": _bundled("load_breast_cancer"),
    "wine": _bundled("load_wine"),
}


def select_tables(names, split, data_dir):
    """``(name -> loader, skipped name -> reason)``; loaders return ``(X, y)``."""
    registry = _registry()
    if registry is None:
        print("benchmarks/_suite_tables.py not found: using scikit-learn tables.")
        chosen = names or list(FALLBACK)
        unknown = sorted(set(chosen) - set(FALLBACK))
        if unknown:
            raise SystemExit(f"Unknown tables {unknown}; known: {sorted(FALLBACK)}.")
        return {n: FALLBACK[n] for n in chosen}, {}
    loaders, skipped = {}, {}
    for table in registry.get_tables(names, split):
        reason = registry.why_unavailable(table, data_dir)
        if reason is None:
            loaders[table.name] = (registry.load_table, table, data_dir)
        else:
            skipped[table.name] = reason
    return loaders, skipped


def load(loader):
    if callable(loader):
        return loader()
    function, table, data_dir = loader
    return function(table, data_dir)


def make_preprocessing(X):
    """The suite's preprocessing: impute and scale numbers, one-hot the rest."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = list(X.select_dtypes("number").columns)
    categorical = [c for c in X.columns if c not in numeric]
    encoder = OneHotEncoder(
        drop="if_binary", handle_unknown="ignore", sparse_output=False
    )
    numbers = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
    others = make_pipeline(
        SimpleImputer(strategy="constant", fill_value="missing"), encoder
    )
    transformer = ColumnTransformer(
        [("numeric", numbers, numeric), ("categorical", others, categorical)],
        sparse_threshold=0.0,
    )
    return transformer, len(numeric)


# -- one split ------------------------------------------------------------------
def _aurc_of_losses(losses, confidence):
    from cr_sklearn import aurc_score

    levels = np.arange(int(losses.max()) + 1)
    return aurc_score(
        losses, np.zeros_like(losses), confidence, loss="absolute", labels=levels
    )


def _baseline(name, seed):
    from cr_sklearn.study import default_baselines

    model = default_baselines(random_state=seed, n_jobs=1)[name]
    probability = [k for k in model.get_params() if k.endswith("probability")]
    if probability:
        model.set_params(**{probability[0]: True})
    return model


def _flips(model, X, noises):
    pred = model.predict(X)
    return [float(np.mean(model.predict(X + noise) != pred)) for noise in noises]


def evaluate(task, loader, train, test, seed, args):
    """Every number of one (table, split): a flat dict."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch

        torch.set_num_threads(1)
        return _evaluate(task, loader, train, test, seed, args)


def _evaluate(task, loader, train, test, seed, args):
    from cr_sklearn import (
        CRClassifier,
        CROrdinalRegressor,
        SelectiveClassifier,
        aurc_score,
        confidence_signals,
        eaurc_score,
        gradient_norms,
        gradient_tail_ratio,
    )

    X, y = load(loader)
    X = X if isinstance(X, pd.DataFrame) else pd.DataFrame(X)
    y = np.asarray(y)
    pre, n_numeric = make_preprocessing(X)
    X_train = pre.fit_transform(X.iloc[train])
    X_test, y_test = pre.transform(X.iloc[test]), y[test]
    y_train = y[train]
    if len(y_test) > args.max_test_rows:
        keep, _ = train_test_split(
            np.arange(len(y_test)),
            train_size=args.max_test_rows,
            stratify=y_test,
            random_state=seed,
        )
        X_test, y_test = X_test[np.sort(keep)], y_test[np.sort(keep)]
    ordinal = task == "ordinal"
    loss = "absolute" if ordinal else "zero_one"
    rng = np.random.RandomState(seed)
    scale = X_train.std(axis=0)
    noises = []
    for sigma in args.sigmas:
        for _ in range(args.draws):
            noise = np.zeros_like(X_test)
            noise[:, :n_numeric] = (
                rng.normal(size=(len(X_test), n_numeric)) * sigma * scale[:n_numeric]
            )
            noises.append(noise)

    def flip_means(model):
        flips = np.array(_flips(model, X_test, noises)).reshape(len(args.sigmas), -1)
        return flips.mean(axis=1)

    out = {"n_test": len(y_test)}
    grad_rows = np.arange(len(y_test))
    if len(y_test) > args.max_gradient_rows:
        grad_rows = np.sort(
            rng.choice(len(y_test), args.max_gradient_rows, replace=False)
        )
    params = dict(random_state=seed, n_threads=1, **(QUICK_CR if args.quick else {}))
    if args.n_members > 1:
        params["n_members"] = args.n_members
    base = CROrdinalRegressor(**params) if ordinal else CRClassifier(**params)
    start = time.perf_counter()
    selective = SelectiveClassifier(
        base, cv=args.inner_cv, n_passes=args.n_passes, random_state=seed
    ).fit(X_train, y_train)
    out["cr_fit_s"] = time.perf_counter() - start
    cr = selective.estimator_
    labels = cr.classes_
    kw = dict(loss=loss, labels=labels if ordinal else None)
    pred = cr.predict(X_test)
    signals = confidence_signals(
        cr,
        X_test,
        selective.signals_,
        loss=loss,
        n_passes=args.n_passes,
        random_state=seed,
    )
    out["cr_risk"] = aurc_score(y_test, pred, np.zeros(len(y_test)), **kw)
    for name, values in signals.items():
        out[f"cr_aurc_{name}"] = aurc_score(y_test, pred, values, **kw)
    out["cr_eaurc_max_proba"] = eaurc_score(y_test, pred, signals["max_proba"], **kw)
    # The best single signal, chosen on the training fold's out-of-fold data.
    inner = {
        name: _aurc_of_losses(selective.cv_loss_, selective.cv_signals_[:, j])
        for j, name in enumerate(selective.signals_)
    }
    best = min(inner, key=inner.get)
    out["cr_best_signal"] = best
    out["cr_aurc_best"] = out[f"cr_aurc_{best}"]
    confidence = selective.confidence(X_test)
    out["cr_aurc_combined"] = aurc_score(y_test, pred, confidence, **kw)
    out["cr_source"] = selective.confidence_source_
    out["cr_eaurc_combined"] = eaurc_score(y_test, pred, confidence, **kw)
    # The guaranteed-risk threshold for a target below the out-of-fold risk.
    target = args.target_ratio * float(selective.cv_loss_.mean())
    out["target"] = target
    if target > 0:
        threshold, _ = selective.threshold_for_risk(target, delta=args.delta)
        accepted = confidence >= threshold
        out["guarantee_coverage"] = float(accepted.mean())
        if accepted.any():
            if ordinal:
                positions = {label: i for i, label in enumerate(labels)}
                errors = np.abs(
                    np.array([positions[v] for v in y_test[accepted]])
                    - np.array([positions[v] for v in pred[accepted]])
                )
            else:
                errors = y_test[accepted] != pred[accepted]
            risk = float(np.mean(errors))
            out["guarantee_risk"] = risk
            out["guarantee_violation"] = float(risk > target)
    # input_sensitivity reads the encoded columns; the same ratio by X in
    # units of its training spread (tau's rule) beside it.
    by_x = cr.input_gradient_norms(X_test) / cr.input_gradient_norms(X_train).mean()
    out["cr_aurc_sensitivity_x"] = aurc_score(y_test, pred, -by_x, **kw)
    out["tau_CR"] = gradient_tail_ratio(gradient_norms(cr, X_test))
    out.update(
        {f"flip_CR_{s}": f for s, f in zip(args.sigmas, flip_means(cr), strict=True)}
    )
    for name in args.baselines:
        try:
            model = _baseline(name, seed)
        except KeyError:
            continue
        model.fit(X_train, y_train)
        pred = model.predict(X_test)
        values = confidence_signals(model, X_test, ["max_proba"], loss=loss)
        # Finite differences cost 2 * n_features predictions per row: on a
        # subsample, with the probability's AURC on the same rows beside it.
        grad = confidence_signals(
            model, X_test[grad_rows], ["gradient_norm"], loss=loss
        )
        out[f"{name}_risk"] = float(
            aurc_score(y_test, pred, np.zeros(len(y_test)), **kw)
        )
        out[f"{name}_aurc_max_proba"] = aurc_score(
            y_test, pred, values["max_proba"], **kw
        )
        out[f"{name}_aurc_gradient_norm"] = aurc_score(
            y_test[grad_rows], pred[grad_rows], grad["gradient_norm"], **kw
        )
        out[f"{name}_aurc_max_proba_grad_rows"] = aurc_score(
            y_test[grad_rows], pred[grad_rows], values["max_proba"][grad_rows], **kw
        )
        out[f"{name}_eaurc_max_proba"] = eaurc_score(
            y_test, pred, values["max_proba"], **kw
        )
        out[f"tau_{name}"] = gradient_tail_ratio(
            gradient_norms(model, X_test[grad_rows])
        )
        out.update(
            {
                f"flip_{name}_{s}": f
                for s, f in zip(args.sigmas, flip_means(model), strict=True)
            }
        )
    return out


# -- report ---------------------------------------------------------------------
def _fmt(value, digits=2):
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def _counts(series):
    return ", ".join(f"{k} {v}" for k, v in series.items())


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _mean(rows, key):
    values = [r[key] for r in rows if key in r and r[key] is not None]
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else np.nan


def _ratio(rows, key, reference):
    """Mean over splits of ``key / reference`` (per split)."""
    ratios = [
        r[key] / r[reference]
        for r in rows
        if key in r and r.get(reference, 0) > 0 and np.isfinite(r[key])
    ]
    return float(np.mean(ratios)) if ratios else np.nan


def report(results, args, skipped, header):
    lines = [*header, ""]
    ran = {key for rows in results.values() for r in rows for key in r}
    models = ["CR", *[b for b in args.baselines if f"{b}_risk" in ran]]
    signals = cr_signals(args.n_members)
    # 1. CR's signals against its own max probability.
    lines += [
        "## CR's signals: AURC relative to its max-probability AURC",
        "",
        "Below 1: the signal ranks the errors later than the predicted "
        "probability. *best single*: the signal with the lowest out-of-fold AURC "
        "on the training fold (chosen there, its test ratio reported), with how "
        "often each was chosen; *selective*: SelectiveClassifier's confidence, "
        "the learned combination unless a single signal ranked the training "
        "fold's out-of-fold errors better (its source, how often). Means over "
        "the splits. *input_sensitivity* takes the gradient with respect to the "
        "columns the network's first layer reads (the input encoding's); *by "
        "X*: the same ratio with respect to X, each column in units of its "
        "training standard deviation (the rule tau uses for every model), "
        "for comparison.",
        "",
    ]
    rows, n_best, n_combined, n_tables = [], 0, 0, 0
    for table, splits in results.items():
        ref = "cr_aurc_max_proba"
        ratios = [_ratio(splits, f"cr_aurc_{s}", ref) for s in signals[1:3]]
        ratios.append(_ratio(splits, "cr_aurc_sensitivity_x", ref))
        ratios += [_ratio(splits, f"cr_aurc_{s}", ref) for s in signals[3:]]
        best = _ratio(splits, "cr_aurc_best", ref)
        combined = _ratio(splits, "cr_aurc_combined", ref)
        chosen = pd.Series([r["cr_best_signal"] for r in splits]).value_counts()
        source = pd.Series([r["cr_source"] for r in splits]).value_counts()
        n_tables += 1
        n_best += bool(best < 1)
        n_combined += bool(combined < 1)
        rows.append(
            [
                table,
                str(splits[0]["n_test"]),
                _fmt(_mean(splits, "cr_risk"), 3),
                _fmt(_mean(splits, ref), 4),
                *[_fmt(v) for v in ratios],
                f"{_fmt(best)} ({_counts(chosen)})",
                f"{_fmt(combined)} ({_counts(source)})",
            ]
        )
    lines += _table(
        [
            "table",
            "test rows",
            "CR risk",
            "CR AURC max_proba",
            *signals[1:3],
            "input_sensitivity by X",
            *signals[3:],
            "best single (chosen)",
            "selective (source)",
        ],
        rows,
    )
    share = n_combined / n_tables if n_tables else np.nan
    lines += [
        "",
        f"Beating the max probability (ratio below 1): best single signal on "
        f"{n_best} of {n_tables} tables, SelectiveClassifier's confidence on "
        f"{n_combined} of {n_tables} ({_fmt(100 * share, 0)}%; the goal is 60%).",
        "",
    ]
    # 2. E-AURC of every model's probability signal.
    lines += [
        "## E-AURC of the probability signal (lower is better), and the risk",
        "",
        "E-AURC is the AURC in excess of the oracle ordering's; the risk is the "
        "error (the mean absolute error in ranks for ordinal tasks) at full "
        "coverage. *grad/proba*: the AURC of the model's finite-difference "
        "gradient norm over its probability's, both on the same subsample of "
        f"at most {args.max_gradient_rows} test rows (the baselines' tau too).",
        "",
    ]
    rows = []
    for table, splits in results.items():
        row = [
            table,
            f"{_fmt(_mean(splits, 'cr_eaurc_max_proba'), 4)} "
            f"({_fmt(_mean(splits, 'cr_risk'), 3)})",
            _fmt(_mean(splits, "cr_eaurc_combined"), 4),
        ]
        for model in models[1:]:
            eaurc = _mean(splits, f"{model}_eaurc_max_proba")
            risk = _mean(splits, f"{model}_risk")
            grad = _ratio(
                splits,
                f"{model}_aurc_gradient_norm",
                f"{model}_aurc_max_proba_grad_rows",
            )
            row.append(f"{_fmt(eaurc, 4)} ({_fmt(risk, 3)}; grad/proba {_fmt(grad)})")
        rows.append(row)
    lines += _table(["table", "CR", "CR selective", *models[1:]], rows)
    lines += [""]
    # 3. Flip rates against tau.
    lines += [
        "## Flip rates under Gaussian input noise against tau",
        "",
        "Per model: tau / the share of test predictions that flip at each "
        f"sigma ({', '.join(str(s) for s in args.sigmas)} training standard "
        "deviations of the numeric columns). rho: Spearman correlation across "
        "the models of the table between tau and the flip rate (positive when "
        "a lower tau goes with fewer flips; models with an undefined tau, "
        "such as tree ensembles, are left out).",
        "",
    ]
    rows, positive = [], {s: [0, 0] for s in args.sigmas}
    for table, splits in results.items():
        row = [table]
        taus = {m: _mean(splits, f"tau_{m}") for m in models}
        for model in models:
            flips = "/".join(
                _fmt(_mean(splits, f"flip_{model}_{s}"), 3) for s in args.sigmas
            )
            row.append(f"{_fmt(taus[model])} / {flips}")
        for sigma in args.sigmas:
            pairs = [
                (taus[m], _mean(splits, f"flip_{m}_{sigma}"))
                for m in models
                if np.isfinite(taus[m])
                and np.isfinite(_mean(splits, f"flip_{m}_{sigma}"))
            ]
            rho = np.nan
            if len(pairs) >= 3:
                rho = stats.spearmanr(*zip(*pairs, strict=True)).statistic
            if np.isfinite(rho):
                positive[sigma][0] += rho > 0
                positive[sigma][1] += 1
            row.append(_fmt(rho))
        rows.append(row)
    lines += _table(
        ["table", *models, *[f"rho (sigma {s})" for s in args.sigmas]], rows
    )
    lines += [""]
    for sigma, (n_pos, n) in positive.items():
        lines.append(f"- sigma {sigma}: rho > 0 on {n_pos} of {n} tables.")
    lines += [""]
    # 4. The guarantee.
    lines += [
        "## The guaranteed-risk threshold on the test folds",
        "",
        f"Target: {args.target_ratio} x the training fold's out-of-fold risk, "
        f"delta = {args.delta}. Test coverage and selective risk (means over "
        "the splits that accept anything) and the share of splits whose test "
        "selective risk exceeds the target.",
        "",
    ]
    rows, n_violations, n_runs = [], 0, 0
    for table, splits in results.items():
        ran = [r for r in splits if "guarantee_violation" in r]
        n_violations += sum(r["guarantee_violation"] for r in ran)
        n_runs += len(ran)
        rows.append(
            [
                table,
                _fmt(_mean(splits, "target"), 3),
                _fmt(_mean(splits, "guarantee_coverage")),
                _fmt(_mean(ran, "guarantee_risk"), 3),
                f"{int(sum(r['guarantee_violation'] for r in ran))} of {len(ran)}",
            ]
        )
    lines += _table(
        ["table", "target", "test coverage", "test risk", "above target"], rows
    )
    rate = n_violations / n_runs if n_runs else np.nan
    lines += [
        "",
        f"Above the target on {int(n_violations)} of {n_runs} test folds "
        f"({_fmt(100 * rate, 1)}%; promised: at most {100 * args.delta:g}%, up "
        "to the refit on the whole training fold).",
    ]
    if skipped:
        lines += ["", "Skipped:", ""]
        lines += [f"- {name}: {reason}" for name, reason in skipped.items()]
    return "\n".join(lines) + "\n"


def _commit():
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=HERE,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# -- main -----------------------------------------------------------------------
def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["all", "tune", "confirm"], default="all")
    parser.add_argument("--tables", type=lambda s: s.split(","), default=None)
    parser.add_argument(
        "--ordinal",
        type=lambda s: [n for n in s.split(",") if n],
        default=["sst5"],
        help="tables also run as ordinal tasks (empty string for none)",
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--inner-cv", type=int, default=3)
    parser.add_argument("--n-passes", type=int, default=30)
    parser.add_argument("--target-ratio", type=float, default=0.5)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument(
        "--sigmas", type=lambda s: [float(v) for v in s.split(",")], default=[0.1, 0.3]
    )
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--max-test-rows", type=int, default=2000)
    parser.add_argument(
        "--max-gradient-rows",
        type=int,
        default=300,
        help="test rows for the baselines' finite-difference gradient norms",
    )
    parser.add_argument(
        "--baselines",
        type=lambda s: [n for n in s.split(",") if n],
        default=list(BASELINES),
    )
    parser.add_argument("--quick", action="store_true", help="tiny CR fits (smoke)")
    parser.add_argument(
        "--n-members",
        type=int,
        default=1,
        help="CR's n_members (above 1 adds the member_disagreement signal)",
    )
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    loaders, skipped = select_tables(args.tables, args.split, args.data_dir)
    tasks = []
    for name, loader in loaders.items():
        kinds = ["classification"] + (["ordinal"] if name in args.ordinal else [])
        _, y = load(loader)
        cv = RepeatedStratifiedKFold(
            n_splits=args.folds, n_repeats=args.repeats, random_state=CV_SEED
        )
        splits = list(cv.split(np.zeros(len(y)), y))
        for kind in kinds:
            label = name if kind == "classification" else f"{name} (ordinal)"
            for i, (train, test) in enumerate(splits):
                tasks.append((label, kind, loader, train, test, i))
    print(f"{len(tasks)} tasks on {len(loaders)} tables; skipped: {sorted(skipped)}")
    start = time.perf_counter()
    jobs = (
        delayed(evaluate)(kind, loader, train, test, seed, args)
        for _, kind, loader, train, test, seed in tasks
    )
    outputs = Parallel(n_jobs=args.n_jobs, return_as="generator")(jobs)
    results = {}
    for (label, *_), out in zip(tasks, outputs, strict=True):
        results.setdefault(label, []).append(out)
        elapsed = time.perf_counter() - start
        print(f"[{elapsed:7.1f}s] {label}: CR fit {out['cr_fit_s']:.1f}s", flush=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    header = [
        "# Which predictions to trust: risk-coverage of CR's signals",
        "",
        f"Produced by `python benchmarks/bench_selective.py {shlex.join(argv)}` "
        f"(commit {_commit()}, {when}; {args.folds}-fold x {args.repeats} "
        f"repeats, inner cv {args.inner_cv}"
        f"{', quick CR settings' if args.quick else ''}"
        f"{f', CR with n_members={args.n_members}' if args.n_members > 1 else ''}).",
    ]
    text = report(results, args, skipped, header)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
