"""Which predictions to trust? Risk-coverage of CR's signals on the suite tables.

For every table of the classification suite (``suite_tables.py``) and every
split (``--folds`` x ``--repeats``, the suite's splits), with the suite's
preprocessing fitted on the training fold:

- CR: ``SelectiveClassifier(CRClassifier(), cv=--inner-cv)``; on the test
  fold the AURC of each of its signals (``confidence_signals``) relative to
  its max-probability AURC, the best single signal chosen on the training
  fold's out-of-fold data, and ``SelectiveClassifier.confidence``.
- Baselines (``default_baselines``, SVC with probabilities): E-AURC of their
  probability, and the AURC of their finite-difference gradient norm
  relative to their probability's, on ``--max-gradient-rows`` test rows.
- Flips: the share of test predictions that change under Gaussian noise of
  ``--sigmas`` training standard deviations on the numeric columns, against
  each model's tau, with Spearman's rho across the models of a table.
- The guaranteed-risk threshold for ``--target-ratio`` times the out-of-fold
  risk at ``--delta``: test coverage, risk and how often it is exceeded.

Tables named by ``--ordinal`` also run as ordinal tasks (CROrdinalRegressor,
the absolute error in ranks). Signals and flips use at most
``--max-test-rows`` rows of a test fold (stratified). Run::

    python benchmarks/run.py selective --repeats 1 --max-test-rows 1000 \\
        --n-jobs 2 --tables breast_cancer,digits,iris,...
    python benchmarks/run.py selective --tables sst5,yelp5 --repeats 1 \\
        --max-test-rows 1000 --output benchmarks/results/selective_text.md
"""

import numpy as np
import pandas as pd
import suite_tables
from harness import (
    Config,
    comma_names,
    fmt,
    header,
    make_preprocessing,
    make_splits,
    markdown_table,
    one_thread,
    parallel,
    select_tables,
    subsample,
)

BASELINES = ("LogisticRegression", "SVC", "RandomForest", "XGBoost", "MLP")
CR_SIGNALS = ("max_proba", "margin", "input_sensitivity", "input_distance")
CR_SIGNALS += ("mc_dropout",)
QUICK_CR = {"hidden_layer_sizes": (8,), "max_iter": 5}


def cr_signals(n_members=1):
    """CR's signals in the report's order; members add their disagreement."""
    return CR_SIGNALS + (("member_disagreement",) if n_members > 1 else ())


def _baseline(name, seed):
    from cr_sklearn.study import default_baselines

    model = default_baselines(random_state=seed, n_jobs=1)[name]
    probability = [k for k in model.get_params() if k.endswith("probability")]
    return model.set_params(**{probability[0]: True}) if probability else model


def _ranks_error(y, pred, labels):
    position = {label: i for i, label in enumerate(labels)}
    return np.abs(np.array([position[v] for v in y]) - [position[v] for v in pred])


def evaluate(table, kind, train, test, seed, args):
    """Every number of one table, task kind and split: a flat dict."""
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

    X, y = suite_tables.load_table(table, args.data_dir)
    pre = make_preprocessing(X)
    with one_thread():
        Z_train, y_train = pre.fit_transform(X.iloc[train]), y[train]
        keep = subsample(np.asarray(test), y, int(args.max_test_rows), seed)
        Z_test, y_test = pre.transform(X.iloc[keep]), y[keep]
        n_numeric = len(X.select_dtypes("number").columns)
        rng = np.random.RandomState(seed)
        scale = Z_train.std(axis=0)
        noises = []
        for sigma in args.sigmas:
            for _ in range(args.draws):
                noise = np.zeros_like(Z_test)
                noise[:, :n_numeric] = (
                    sigma
                    * scale[:n_numeric]
                    * rng.normal(size=(len(Z_test), n_numeric))
                )
                noises.append(noise)
        grad_rows = np.arange(len(y_test))
        if len(y_test) > args.max_gradient_rows:
            grad_rows = np.sort(rng.choice(len(y_test), args.max_gradient_rows, False))
        ordinal = kind == "ordinal"
        loss = "absolute" if ordinal else "zero_one"
        kw = {"loss": loss}
        params = {
            "random_state": seed,
            "n_threads": 1,
            # Always set: the ordinal defaults train members from 1,000 rows.
            "n_members": args.n_members,
            **(QUICK_CR if args.quick else {}),
        }
        base = (CROrdinalRegressor if ordinal else CRClassifier)(**params)
        selective = SelectiveClassifier(
            base, cv=args.inner_cv, n_passes=args.n_passes, random_state=seed
        ).fit(Z_train, y_train)
        cr = selective.estimator_
        if ordinal:
            kw["labels"] = cr.classes_
        out = {"n_test": len(y_test)}

        def scores(prefix, model, names, **extra):
            pred = model.predict(Z_test)
            out[f"{prefix}_risk"] = aurc_score(
                y_test, pred, np.zeros(len(y_test)), **kw
            )
            values = confidence_signals(model, Z_test, names, loss=loss, **extra)
            for name, v in values.items():
                out[f"{prefix}_aurc_{name}"] = aurc_score(y_test, pred, v, **kw)
            out[f"{prefix}_eaurc_max_proba"] = eaurc_score(
                y_test, pred, values["max_proba"], **kw
            )
            flips = [np.mean(model.predict(Z_test + n) != pred) for n in noises]
            for s, f in zip(
                args.sigmas, np.reshape(flips, (len(args.sigmas), -1)), strict=True
            ):
                out[f"flip_{prefix}_{s}"] = float(f.mean())
            return pred, values

        pred, _ = scores(
            "CR", cr, selective.signals_, n_passes=args.n_passes, random_state=seed
        )
        # The best single signal, chosen on the training fold's out-of-fold data.
        levels = np.arange(int(selective.cv_loss_.max()) + 1)
        inner = {
            name: aurc_score(
                selective.cv_loss_,
                np.zeros_like(selective.cv_loss_),
                selective.cv_signals_[:, j],
                loss="absolute",
                labels=levels,
            )
            for j, name in enumerate(selective.signals_)
        }
        out["CR_best_signal"] = best = min(inner, key=inner.get)
        out["CR_aurc_best"] = out[f"CR_aurc_{best}"]
        confidence = selective.confidence(Z_test)
        out["CR_aurc_combined"] = aurc_score(y_test, pred, confidence, **kw)
        out["CR_eaurc_combined"] = eaurc_score(y_test, pred, confidence, **kw)
        out["CR_source"] = selective.confidence_source_
        by_x = cr.input_gradient_norms(Z_test) / cr.input_gradient_norms(Z_train).mean()
        out["CR_aurc_sensitivity_x"] = aurc_score(y_test, pred, -by_x, **kw)
        out["tau_CR"] = gradient_tail_ratio(gradient_norms(cr, Z_test))
        out["target"] = target = args.target_ratio * float(selective.cv_loss_.mean())
        if target > 0:
            threshold, _ = selective.threshold_for_risk(target, delta=args.delta)
            accepted = confidence >= threshold
            out["guarantee_coverage"] = float(accepted.mean())
            if accepted.any():
                errors = (
                    _ranks_error(y_test[accepted], pred[accepted], cr.classes_)
                    if ordinal
                    else y_test[accepted] != pred[accepted]
                )
                out["guarantee_risk"] = risk = float(np.mean(errors))
                out["guarantee_violation"] = float(risk > target)
        for name in args.baselines:
            try:
                model = _baseline(name, seed).fit(Z_train, y_train)
            except (KeyError, ValueError):
                continue
            pred, values = scores(name, model, ["max_proba"])
            g = grad_rows
            grad = confidence_signals(model, Z_test[g], ["gradient_norm"], loss=loss)
            by_proba = aurc_score(y_test[g], pred[g], values["max_proba"][g], **kw)
            by_grad = aurc_score(y_test[g], pred[g], grad["gradient_norm"], **kw)
            out[f"{name}_grad_ratio"] = by_grad / by_proba if by_proba > 0 else np.nan
            out[f"tau_{name}"] = gradient_tail_ratio(gradient_norms(model, Z_test[g]))
    return out


def _mean(rows, key):
    values = [r[key] for r in rows if isinstance(r.get(key), float | int)]
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else np.nan


def _ratio(rows, key, reference):
    """Mean over splits of ``key / reference``."""
    ratios = [
        r[key] / r[reference] for r in rows if key in r and r.get(reference, 0) > 0
    ]
    return float(np.mean(ratios)) if ratios else np.nan


def _counts(values):
    return ", ".join(f"{k} {v}" for k, v in pd.Series(values).value_counts().items())


def report(results, args, skipped, head):
    """The four sections: CR's signals, E-AURC, flips against tau, the guarantee."""
    from scipy import stats

    ran = {key for rows in results.values() for r in rows for key in r}
    models = ["CR", *(b for b in args.baselines if f"{b}_risk" in ran)]
    signals = cr_signals(args.n_members)
    ref = "CR_aurc_max_proba"
    lines = [
        *head,
        "",
        "## CR's signals: AURC relative to its max-probability AURC",
        "",
        "Below 1: the signal ranks the errors later than the probability. *best "
        "single*: the signal with the lowest out-of-fold AURC on the training fold "
        "(how often each was chosen); *selective*: SelectiveClassifier's confidence "
        "(its source); *by X*: input sensitivity with respect to X in units of its "
        "training spread. Means over the splits.",
        "",
    ]
    rows, n_best, n_combined = [], 0, 0
    for table, splits in results.items():
        ratios = [_ratio(splits, f"CR_aurc_{s}", ref) for s in signals[1:3]]
        ratios.append(_ratio(splits, "CR_aurc_sensitivity_x", ref))
        ratios += [_ratio(splits, f"CR_aurc_{s}", ref) for s in signals[3:]]
        best, combined = (
            _ratio(splits, f"CR_aurc_{k}", ref) for k in ("best", "combined")
        )
        n_best, n_combined = n_best + (best < 1), n_combined + (combined < 1)
        rows.append(
            [
                table,
                splits[0]["n_test"],
                fmt(_mean(splits, "CR_risk"), 3),
                fmt(_mean(splits, ref), 4),
                *(fmt(v) for v in ratios),
                f"{fmt(best)} ({_counts([r['CR_best_signal'] for r in splits])})",
                f"{fmt(combined)} ({_counts([r['CR_source'] for r in splits])})",
            ]
        )
    cols = ["table", "test rows", "CR risk", "CR AURC max_proba", *signals[1:3]]
    cols += ["input_sensitivity by X", *signals[3:], "best single", "selective"]
    lines += markdown_table(cols, rows)
    lines += [
        "",
        f"Beating the max probability: best single signal on {n_best} of "
        f"{len(rows)} tables, SelectiveClassifier's confidence on {n_combined}.",
        "",
        "## E-AURC of the probability signal (lower is better), and the risk",
        "",
        "The risk is the error (MAE in ranks for ordinal tasks) at full "
        "coverage; grad/proba: the AURC of the finite-difference gradient norm "
        f"over the probability's, on at most {args.max_gradient_rows} test rows.",
        "",
    ]
    rows = []
    for table, splits in results.items():
        row = [
            table,
            f"{fmt(_mean(splits, 'CR_eaurc_max_proba'), 4)} "
            f"({fmt(_mean(splits, 'CR_risk'), 3)})",
            fmt(_mean(splits, "CR_eaurc_combined"), 4),
        ]
        for m in models[1:]:
            row.append(
                f"{fmt(_mean(splits, f'{m}_eaurc_max_proba'), 4)} "
                f"({fmt(_mean(splits, f'{m}_risk'), 3)}; grad/proba "
                f"{fmt(_mean(splits, f'{m}_grad_ratio'))})"
            )
        rows.append(row)
    lines += markdown_table(["table", "CR", "CR selective", *models[1:]], rows)
    lines += [
        "",
        "## Flip rates under Gaussian input noise against tau",
        "",
        "Per model: tau / the flip rate at each sigma "
        f"({', '.join(map(str, args.sigmas))} training standard deviations of the "
        "numeric columns); rho: Spearman's correlation across the models between "
        "tau and the flip rate (models without a finite tau left out).",
        "",
    ]
    rows, positive = [], {s: [0, 0] for s in args.sigmas}
    for table, splits in results.items():
        taus = {m: _mean(splits, f"tau_{m}") for m in models}
        row = [table] + [
            f"{fmt(taus[m])} / "
            + "/".join(fmt(_mean(splits, f"flip_{m}_{s}"), 3) for s in args.sigmas)
            for m in models
        ]
        for s in args.sigmas:
            pairs = [(taus[m], _mean(splits, f"flip_{m}_{s}")) for m in models]
            pairs = [p for p in pairs if np.isfinite(p).all()]
            rho = (
                stats.spearmanr(*zip(*pairs, strict=True)).statistic
                if len(pairs) >= 3
                else np.nan
            )
            if np.isfinite(rho):
                positive[s][0] += rho > 0
                positive[s][1] += 1
            row.append(fmt(rho))
        rows.append(row)
    lines += markdown_table(
        ["table", *models, *(f"rho (sigma {s})" for s in args.sigmas)], rows
    )
    lines += [""] + [
        f"- sigma {s}: rho > 0 on {p} of {n} tables." for s, (p, n) in positive.items()
    ]
    lines += [
        "",
        "## The guaranteed-risk threshold on the test folds",
        "",
        f"Target: {args.target_ratio} x the training fold's out-of-fold risk, delta "
        f"= {args.delta}: test coverage, selective risk, splits above the target.",
        "",
    ]
    rows, n_over, n_runs = [], 0, 0
    for table, splits in results.items():
        done = [r for r in splits if "guarantee_violation" in r]
        over = int(sum(r["guarantee_violation"] for r in done))
        n_over, n_runs = n_over + over, n_runs + len(done)
        rows.append(
            [
                table,
                fmt(_mean(splits, "target"), 3),
                fmt(_mean(splits, "guarantee_coverage")),
                fmt(_mean(done, "guarantee_risk"), 3),
                f"{over} of {len(done)}",
            ]
        )
    lines += markdown_table(
        ["table", "target", "test coverage", "test risk", "above target"], rows
    )
    lines += [
        "",
        f"Above the target on {n_over} of {n_runs} test folds (promised: at most "
        f"{100 * args.delta:g}%, up to the refit on the whole training fold).",
    ]
    if skipped:
        lines += ["", "Skipped:", "", *(f"- {n}: {why}" for n, why in skipped.items())]
    return "\n".join(lines) + "\n"


def run(args):
    """The ``selective`` report."""
    tables, skipped = select_tables(
        suite_tables, args.tables, args.split, args.data_dir
    )
    jobs, labels = [], []
    for table in tables:
        _, y = suite_tables.load_table(table, args.data_dir)
        splits = make_splits(y, args.repeats, args.folds)
        for kind in (
            "classification",
            *(["ordinal"] if table.name in args.ordinal else []),
        ):
            for i, (train, test) in enumerate(splits):
                jobs.append((table, kind, train, test, i, args))
                labels.append(table.name + (" (ordinal)" if kind == "ordinal" else ""))
    print(f"{len(jobs)} tasks on {len(tables)} tables; skipped: {sorted(skipped)}")
    results = {label: [] for label in labels}
    for i, out in sorted(
        parallel(evaluate, jobs, args.n_jobs, progress=True), key=lambda r: r[0]
    ):
        results[labels[i]].append(out)
    note = (
        f"{args.folds}-fold x {args.repeats} repeats, inner cv {args.inner_cv}"
        + (", quick CR settings" if args.quick else "")
        + (f", CR with n_members={args.n_members}" if args.n_members > 1 else "")
        + "."
    )
    head = header(
        "Which predictions to trust: risk-coverage of CR's signals",
        args.argv,
        notes=[note],
    )
    return report(results, args, skipped, head)


def add_arguments(parser):
    """The options of ``selective``."""
    parser.add_argument("--split", choices=["all", "tune", "confirm"], default="all")
    parser.add_argument("--tables", type=comma_names, default=None)
    parser.add_argument(
        "--ordinal",
        type=comma_names,
        default=["sst5"],
        help="tables also run as ordinal tasks ('' for none)",
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
    parser.add_argument("--max-gradient-rows", type=int, default=300)
    parser.add_argument("--baselines", type=comma_names, default=list(BASELINES))
    parser.add_argument("--quick", action="store_true", help="tiny CR fits (smoke)")
    parser.add_argument("--n-members", type=int, default=1)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--data-dir", default=None)


CONFIGS = [
    Config(
        "selective",
        "risk-coverage of CR's signals on the suite tables",
        add_arguments,
        run,
    )
]
